/* SPDX-License-Identifier: MIT */
/*
 * frontend.h - tlbpol-sim's front end: its command line (options.c), the
 * policies it compares (main.c) and how it prints their runs (report.c).
 * The modelled machine itself is sim.h.
 */
#ifndef TLBPOL_SIM_FRONTEND_H
#define TLBPOL_SIM_FRONTEND_H

#include "sim.h"

/*
 * The policies, in the order of every table.  Their names are the rule
 * sets' names in tlbpol_rules_parse() where there is one ("naive",
 * "linux", "default"), so that a policy reads the same on a command line,
 * in a table and in a CSV row.  "before" is linux without the scenario's
 * own rule; "custom" is --rules, run only when given.
 */
enum { POL_NAIVE, POL_BEFORE, POL_LINUX, POL_DEFAULT, POL_CUSTOM, SIM_NR_POLICIES };

extern const char *const sim_policy_names[SIM_NR_POLICIES];

struct policy {
	const char *name;
	uint64_t rules;
	int wait_irqs; /* TLBPOL_CFGF_WAIT_IRQS: waits served only by interrupts */
	int always_mech; /* under --backend, every shootdown by it that can be (main.c) */
};

/* --- the command line (options.c) --- */

enum sim_format { FMT_TABLE, FMT_CSV, FMT_JSON };

#define SIM_MAX_SCENARIOS 16

struct sim_options {
	struct sim_config cfg;
	/* The scenarios, in the order given; one more for a trace. */
	const struct workload *list[SIM_MAX_SCENARIOS + 1];
	int nlist;
	enum sim_format fmt;
	int have_custom;      /* --rules was given */
	uint64_t custom_rules;
	int only;             /* --policy: a POL_*, or -1 for all of them */
	int wait_irqs;        /* --wait-irqs: -1 auto (the Linux policies), 0 no, 1 yes */
	const struct workload *scale; /* --scale SCENARIO */
	const char *trace;    /* trace FILE */
};

/*
 * Fill @o from the command line.  Return: -1 to go on and run, or the exit
 * status to end with at once: 0 after --help or --costs, 2 for a command
 * line it refuses (said on stderr).
 */
int sim_parse_options(int argc, char **argv, struct sim_options *o);

/* --- what is printed of each run (report.c) --- */

struct result {
	const char *scenario, *policy;
	uint64_t rules;
	int stamps, stamp_spare; /* flush stamps on, and its allocator (main.c) */
	uint32_t stamp_lookahead;
	struct sim_counters cnt;
	double modelled_ns, metric;
	uint64_t engine_ipis;
	double wall_s;
	char tags[96]; /* --tags, said (sim_tags_describe()) */
};

/*
 * The @n results of @wl, one per policy; ratios are to r[@before] and
 * r[@linux_i].  print_json() separates its objects with commas, *@first
 * telling whether one was printed yet.
 */
void print_table(FILE *f, const struct workload *wl, const struct result *r, int n, int before,
		 int linux_i);
void print_csv_header(FILE *f);
void print_csv(FILE *f, const struct workload *wl, const struct result *r, int n, int before,
	       int linux_i);
void print_json(FILE *f, const struct workload *wl, const struct result *r, int n, int before,
		int linux_i, int *first);

#endif
