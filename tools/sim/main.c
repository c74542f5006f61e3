/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
/*
 * tlbpol-sim: replay the seed workloads on a modelled machine and show, side
 * by side, what each policy costs.  See tools/sim/README.md.
 */
#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

struct policy {
	const char *name;
	uint64_t rules;
};

struct result {
	const char *scenario, *policy;
	uint64_t rules;
	struct sim_counters cnt;
	double modelled_ns, metric;
	uint64_t engine_ipis;
	double wall_s;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The scenario's own figure: what its seed patch measured. */
static double metric_of(const struct workload *wl, const struct sim *s, double span)
{
	if (!strcmp(wl->name, "reclaim"))
		return span > 0 ? (double)s->cnt.irq_sent / (span / 1e9) : 0;
	if (!strcmp(wl->name, "vcpu"))
		return span > 0 ? (double)s->cnt.busy_ops / (span / 1e9) : 0;
	if (s->cnt.busy_ops)
		return s->cnt.busy_ns / (double)s->cnt.busy_ops;
	return span;
}

static const char *metric_name(const struct workload *wl)
{
	return wl->metric ? wl->metric : "modelled ns";
}

static int run_one(const struct sim_config *base, const struct workload *wl, const char *trace,
		   const struct policy *pol, struct result *r)
{
	struct sim_config cfg = *base;
	struct sim s;
	struct tlbpol_stats st;
	double t0 = now_s();

	cfg.arch = wl->arch;
	cfg.rules = pol->rules;
	cfg.broadcast = base->broadcast || wl->broadcast;
	cfg.vm = wl->vm;
	if (cfg.broadcast && pol->rules != TLBPOL_RULES_NONE)
		cfg.rules |= TLBPOL_RULE_BROADCAST; /* arm64 Linux flushes by TLBI IS */
	if (!cfg.events)
		cfg.events = wl->default_events;
	if (trace)
		cfg.events = 0;
	s.trace_path = trace;
	if (sim_init(&s, &cfg, wl)) {
		fprintf(stderr, "tlbpol-sim: %s: setup failed: %s\n", wl->name, s.error);
		return -1;
	}
	sim_run(&s);
	memset(r, 0, sizeof(*r));
	r->scenario = wl->name;
	r->policy = pol->name;
	r->rules = cfg.rules;
	r->cnt = s.cnt;
	r->modelled_ns = sim_makespan(&s);
	r->metric = metric_of(wl, &s, r->modelled_ns);
	tlbpol_stats_read(s.eng, -1, &st);
	r->engine_ipis = st.ipis_sent;
	r->wall_s = now_s() - t0;
	sim_fini(&s);
	return 0;
}

/* a / b; 1 when both are 0; infinite (printed "inf", null in JSON) when
 * only b is. */
static double ratio(double a, double b)
{
	return b > 0 ? a / b : (a > 0 ? 1.0 / 0.0 : 1.0);
}

/* A ratio as JSON: a number, or null when it is infinite. */
static const char *jr(char *buf, double v)
{
	if (v != v || v > 1e300)
		return "null";
	snprintf(buf, 32, "%.4f", v);
	return buf;
}

static void print_table(FILE *f, const struct workload *wl, const struct result *r, int n,
			int before, int linux_i)
{
	if (strcmp(wl->seed, "-"))
		fprintf(f, "\n%s — %s (seed %s)\n", wl->name, wl->what, wl->seed);
	else
		fprintf(f, "\n%s — %s\n", wl->name, wl->what);
	fprintf(f, "  %-8s %10s %10s %9s %10s %8s %10s %13s %14s %6s %9s %9s\n", "policy",
		"irq sent", "irq recv", "flushes", "pages", "full", "flush-miss", "modelled ms",
		metric_name(wl), "viol", "x before", "x linux");
	for (int i = 0; i < n; i++) {
		const struct result *x = &r[i];

		fprintf(f, "  %-8s %10llu %10llu %9llu %10llu %8llu %10llu %13.3f %14.1f %6s %9.3f %9.3f\n",
			x->policy, (unsigned long long)x->cnt.irq_sent,
			(unsigned long long)x->cnt.irq_received,
			(unsigned long long)x->cnt.local_flushes,
			(unsigned long long)x->cnt.pages_flushed,
			(unsigned long long)x->cnt.full_flushes,
			(unsigned long long)x->cnt.flush_misses, x->modelled_ns / 1e6, x->metric,
			x->cnt.violations ? "UNSAFE" : "0",
			ratio(x->modelled_ns, r[before].modelled_ns),
			ratio(x->modelled_ns, r[linux_i].modelled_ns));
		if (x->cnt.violations)
			fprintf(f, "  !!! %s/%s: %llu stale-TLB violations: this policy is UNSAFE\n",
				wl->name, x->policy, (unsigned long long)x->cnt.violations);
	}
	fprintf(f, "  interrupts vs before: ");
	for (int i = 0; i < n; i++)
		if (r[before].cnt.irq_sent)
			fprintf(f, "%s %.3f  ", r[i].policy,
				ratio((double)r[i].cnt.irq_sent, (double)r[before].cnt.irq_sent));
		else
			fprintf(f, "%s %llu  ", r[i].policy, (unsigned long long)r[i].cnt.irq_sent);
	fprintf(f, "\n");
}

static void print_csv_header(FILE *f)
{
	fprintf(f, "scenario,policy,rules,ipis,ipis_received,local_flushes,pages_flushed,"
		   "full_flushes,tlb_misses,all_tlb_misses,modelled_ns,metric,metric_name,"
		   "violations,ipis_vs_before,time_vs_before,ipis_vs_linux,time_vs_linux,"
		   "broadcasts\n");
}

static void print_csv(FILE *f, const struct workload *wl, const struct result *r, int n,
		      int before, int linux_i)
{
	for (int i = 0; i < n; i++) {
		const struct result *x = &r[i];

		fprintf(f, "%s,%s,%#llx,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.0f,%.3f,%s,%llu,%.4f,%.4f,"
			   "%.4f,%.4f,%llu\n",
			x->scenario, x->policy, (unsigned long long)x->rules,
			(unsigned long long)x->cnt.irq_sent, (unsigned long long)x->cnt.irq_received,
			(unsigned long long)x->cnt.local_flushes,
			(unsigned long long)x->cnt.pages_flushed,
			(unsigned long long)x->cnt.full_flushes,
			(unsigned long long)x->cnt.flush_misses,
			(unsigned long long)x->cnt.tlb_misses, x->modelled_ns, x->metric,
			metric_name(wl), (unsigned long long)x->cnt.violations,
			ratio((double)x->cnt.irq_sent, (double)r[before].cnt.irq_sent),
			ratio(x->modelled_ns, r[before].modelled_ns),
			ratio((double)x->cnt.irq_sent, (double)r[linux_i].cnt.irq_sent),
			ratio(x->modelled_ns, r[linux_i].modelled_ns),
			(unsigned long long)x->cnt.broadcasts);
	}
}

static void print_json(FILE *f, const struct workload *wl, const struct result *r, int n,
		       int before, int linux_i, int *first)
{
	for (int i = 0; i < n; i++) {
		const struct result *x = &r[i];
		char b1[32], b2[32], b3[32], b4[32];

		fprintf(f,
			"%s  {\"scenario\": \"%s\", \"policy\": \"%s\", \"rules\": %llu, \"ipis\": %llu, "
			"\"ipis_received\": %llu, \"local_flushes\": %llu, \"pages_flushed\": %llu, "
			"\"full_flushes\": %llu, \"tlb_misses\": %llu, \"all_tlb_misses\": %llu, "
			"\"modelled_ns\": %.0f, \"metric\": %.3f, \"metric_name\": \"%s\", "
			"\"violations\": %llu, \"ipis_vs_before\": %s, \"time_vs_before\": %s, "
			"\"ipis_vs_linux\": %s, \"time_vs_linux\": %s}",
			*first ? "" : ",\n", x->scenario, x->policy, (unsigned long long)x->rules,
			(unsigned long long)x->cnt.irq_sent, (unsigned long long)x->cnt.irq_received,
			(unsigned long long)x->cnt.local_flushes,
			(unsigned long long)x->cnt.pages_flushed,
			(unsigned long long)x->cnt.full_flushes,
			(unsigned long long)x->cnt.flush_misses,
			(unsigned long long)x->cnt.tlb_misses, x->modelled_ns, x->metric,
			metric_name(wl), (unsigned long long)x->cnt.violations,
			jr(b1, ratio((double)x->cnt.irq_sent, (double)r[before].cnt.irq_sent)),
			jr(b2, ratio(x->modelled_ns, r[before].modelled_ns)),
			jr(b3, ratio((double)x->cnt.irq_sent, (double)r[linux_i].cnt.irq_sent)),
			jr(b4, ratio(x->modelled_ns, r[linux_i].modelled_ns)));
		*first = 0;
	}
}

/*
 * "cpu node" lines, as examples/topology prints them; '#' starts a comment.
 * CPUs must be numbered 0..N-1.
 */
static uint16_t topo[1024];
static int read_topology(const char *path, struct sim_config *cfg)
{
	FILE *f = fopen(path, "r");
	char line[128];
	uint32_t n = 0, nodes = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned cpu, node;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%u %u", &cpu, &node) != 2 || cpu != n || n >= 1024 || node >= 1024) {
			fclose(f);
			return -1;
		}
		topo[n++] = (uint16_t)node;
		if (node + 1 > nodes)
			nodes = node + 1;
	}
	fclose(f);
	if (n < 2)
		return -1;
	cfg->ncpus = n;
	cfg->nnodes = nodes;
	cfg->topology = topo;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tlbpol-sim [SCENARIO... | all | trace FILE] [options]\n"
		"  scenarios: spurious munmap retry reclaim swapout dontneed lazy-unmap vcpu\n"
		"             (no scenario: all of them)\n"
		"  --cpus N          CPUs (default 64, up to 1024)\n"
		"  --nodes M         NUMA nodes / sockets (default 4)\n"
		"  --events N        workload size (scenario unit; default per scenario)\n"
		"  --rules MASK      an extra policy with this rule mask, as tlbpol_rules_parse()\n"
		"                    reads it: default,-lazy-unmap, linux+receiver-merge, 0x1ff\n"
		"  --csv | --json    machine-readable output, one row per (scenario, policy)\n"
		"  --scale SCENARIO  interrupts and modelled time from 2 to 1024 CPUs\n"
		"  --cost NAME=V     override a cost-model constant (--costs lists them)\n"
		"  --l1 N --l2 N     TLB entries (default 64 and 1536)\n"
		"  --overcommit K    vCPUs per physical CPU in `vcpu` (default 2)\n"
		"  --broadcast       give the engine a broadcast flush (INVLPGB) on x86 too\n"
		"  --hypercall       ... as a paravirtual flush hypercall (its own costs)\n"
		"  --seed S          random seed (default 1)\n"
		"  --free-ticks N    the engine's cfg.free_ticks (0: its default, 2; 4294967295: never)\n"
		"  --policy NAME     run only this policy (naive, before, linux, tlbpol, custom)\n"
		"  --topology FILE   CPUs and nodes from \"cpu node\" lines (examples/topology)\n");
}

int main(int argc, char **argv)
{
	struct sim_config cfg;
	const struct workload *list[16];
	int nlist = 0, nfmt = FMT_TABLE, have_extra = 0, first = 1;
	uint64_t extra_rules = 0;
	const char *scale = NULL, *trace = NULL, *only = NULL;
	int tty = isatty(2);
	double t_all = now_s();
	uint64_t unsafe = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ncpus = 64;
	cfg.nnodes = 4;
	cfg.l1_entries = 64;
	cfg.l1_ways = 4;
	cfg.l2_entries = 1536;
	cfg.l2_ways = 12;
	cfg.seed = 1;
	sim_cost_defaults(&cfg.cost);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

#define NUM(dst)                                                                      \
	do {                                                                          \
		char *e;                                                              \
		if (!v) {                                                             \
			usage(stderr);                                                \
			return 2;                                                     \
		}                                                                     \
		errno = 0;                                                            \
		dst = strtoull(v, &e, 0);                                             \
		if (errno || *e) {                                                    \
			fprintf(stderr, "tlbpol-sim: bad number for %s: %s\n", a, v); \
			return 2;                                                     \
		}                                                                     \
		i++;                                                                  \
	} while (0)
		if (!strcmp(a, "--cpus")) {
			uint64_t n;
			NUM(n);
			cfg.ncpus = (uint32_t)n;
		} else if (!strcmp(a, "--nodes")) {
			uint64_t n;
			NUM(n);
			cfg.nnodes = (uint32_t)n;
		} else if (!strcmp(a, "--events")) {
			NUM(cfg.events);
		} else if (!strcmp(a, "--rules")) {
			if (!v || tlbpol_rules_parse(v, &extra_rules)) {
				fprintf(stderr, "tlbpol-sim: --rules: %s: not a rule mask\n",
					v ? v : "(none)");
				return 2;
			}
			i++;
			have_extra = 1;
		} else if (!strcmp(a, "--seed")) {
			NUM(cfg.seed);
		} else if (!strcmp(a, "--free-ticks")) {
			uint64_t n;
			NUM(n);
			cfg.free_ticks = (uint32_t)n;
		} else if (!strcmp(a, "--l1")) {
			uint64_t n;
			NUM(n);
			cfg.l1_entries = (uint32_t)n;
		} else if (!strcmp(a, "--l2")) {
			uint64_t n;
			NUM(n);
			cfg.l2_entries = (uint32_t)n;
		} else if (!strcmp(a, "--overcommit")) {
			uint64_t n;
			NUM(n);
			cfg.overcommit = (uint32_t)n;
		} else if (!strcmp(a, "--csv")) {
			nfmt = FMT_CSV;
		} else if (!strcmp(a, "--json")) {
			nfmt = FMT_JSON;
		} else if (!strcmp(a, "--broadcast")) {
			cfg.broadcast = 1;
		} else if (!strcmp(a, "--hypercall")) {
			cfg.broadcast = 1;
			cfg.hypercall = 1;
		} else if (!strcmp(a, "--topology") && v) {
			if (read_topology(v, &cfg)) {
				fprintf(stderr, "tlbpol-sim: cannot read topology %s\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--policy") && v) {
			only = v;
			i++;
		} else if (!strcmp(a, "--scale") && v) {
			scale = v;
			i++;
		} else if (!strcmp(a, "--cost") && v) {
			if (sim_cost_set(&cfg.cost, v)) {
				fprintf(stderr, "tlbpol-sim: unknown cost or bad value: %s\n", v);
				return 2;
			}
			i++;
		} else if (!strcmp(a, "--costs")) {
			printf("cost model (override with --cost NAME=VALUE):\n");
			sim_cost_print(&cfg.cost, stdout);
			return 0;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "trace") && v) {
			trace = v;
			i++;
		} else if (!strcmp(a, "all")) {
			for (int k = 0; sim_workloads[k]; k++)
				list[nlist++] = sim_workloads[k];
		} else if (sim_find_workload(a) && nlist < 16) {
			list[nlist++] = sim_find_workload(a);
		} else {
			fprintf(stderr, "tlbpol-sim: unknown argument: %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (cfg.ncpus < 2 || cfg.ncpus > 1024 || !cfg.nnodes || cfg.nnodes > cfg.ncpus ||
	    cfg.l1_entries < 4 || cfg.l2_entries < 12) {
		fprintf(stderr, "tlbpol-sim: --cpus 2..1024, --nodes 1..cpus, TLB sizes too small\n");
		return 2;
	}
	cfg.l1_ways = cfg.l1_entries % 4 ? 1 : 4;
	cfg.l2_ways = cfg.l2_entries % 12 ? 1 : 12;
	if (trace) {
		extern const struct workload sim_trace_workload;

		list[nlist++] = &sim_trace_workload;
	}
	if (!nlist && !scale)
		for (int k = 0; sim_workloads[k]; k++)
			list[nlist++] = sim_workloads[k];

	if (scale) {
		const struct workload *wl = sim_find_workload(scale);
		static const uint32_t sizes[] = { 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };

		if (!wl) {
			fprintf(stderr, "tlbpol-sim: unknown scenario %s\n", scale);
			return 2;
		}
		printf("%s: interrupts sent and modelled time (ms) by CPU count\n", wl->name);
		printf("%6s", "cpus");
		printf(" %12s %10s %12s %10s %12s %10s %12s %10s\n", "naive irq", "ms", "before irq",
		       "ms", "linux irq", "ms", "tlbpol irq", "ms");
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			struct sim_config c = cfg;
			struct policy pols[4] = {
				{ "naive", TLBPOL_RULES_NONE },
				{ "before", TLBPOL_RULES_LINUX & ~wl->seed_rule },
				{ "linux", TLBPOL_RULES_LINUX },
				{ "tlbpol", TLBPOL_RULES_DEFAULT },
			};

			c.ncpus = sizes[k];
			c.topology = NULL;
			c.nnodes = cfg.nnodes < sizes[k] ? cfg.nnodes : sizes[k];
			printf("%6u", sizes[k]);
			for (int p = 0; p < 4; p++) {
				struct result r;

				if (tty)
					fprintf(stderr, "\r  %s %u cpus %s...   ", wl->name, sizes[k],
						pols[p].name);
				if (run_one(&c, wl, NULL, &pols[p], &r))
					return 1;
				unsafe += r.cnt.violations;
				printf(" %12llu %10.3f", (unsigned long long)r.cnt.irq_sent,
				       r.modelled_ns / 1e6);
				fflush(stdout);
			}
			printf("\n");
		}
		if (tty)
			fprintf(stderr, "\r%60s\r", "");
		return unsafe ? 1 : 0;
	}

	if (nfmt == FMT_TABLE)
		printf("tlbpol-sim: %u CPUs on %u nodes, TLB %u+%u entries, libtlbpol %s\n",
		       cfg.ncpus, cfg.nnodes, cfg.l1_entries, cfg.l2_entries, tlbpol_version());
	if (nfmt == FMT_CSV)
		print_csv_header(stdout);
	if (nfmt == FMT_JSON)
		printf("[\n");
	for (int w = 0; w < nlist; w++) {
		const struct workload *wl = list[w];
		struct policy pols[5] = {
			{ "naive", TLBPOL_RULES_NONE },
			{ "before", TLBPOL_RULES_LINUX & ~wl->seed_rule },
			{ "linux", TLBPOL_RULES_LINUX },
			{ "tlbpol", TLBPOL_RULES_DEFAULT },
			{ "custom", extra_rules },
		};
		int np = have_extra ? 5 : 4;
		struct result r[5];

		if (only) {
			int k = -1;

			for (int p = 0; p < 5; p++)
				if (!strcmp(pols[p].name, only))
					k = p;
			if (k < 0) {
				fprintf(stderr, "tlbpol-sim: unknown policy %s\n", only);
				return 2;
			}
			pols[0] = pols[k];
			pols[1] = pols[k];
			pols[2] = pols[k];
			np = 1;
		}
		for (int p = 0; p < np; p++) {
			if (tty)
				fprintf(stderr, "\r  [%d/%d] %s: %s...            ", w + 1, nlist,
					wl->name, pols[p].name);
			if (run_one(&cfg, wl, trace, &pols[p], &r[p]))
				return 1;
			unsafe += r[p].cnt.violations;
		}
		if (tty)
			fprintf(stderr, "\r%70s\r", "");
		{
			int b = np > 1 ? 1 : 0, l = np > 2 ? 2 : 0;

			if (nfmt == FMT_TABLE)
				print_table(stdout, wl, r, np, b, l);
			else if (nfmt == FMT_CSV)
				print_csv(stdout, wl, r, np, b, l);
			else
				print_json(stdout, wl, r, np, b, l, &first);
		}
		fflush(stdout);
	}
	if (nfmt == FMT_JSON)
		printf("\n]\n");
	if (nfmt == FMT_TABLE) {
		printf("\nwall time %.1f s; %s\n", now_s() - t_all,
		       unsafe ? "SOME POLICY WAS UNSAFE (see above)"
			      : "0 stale-TLB violations under every policy");
	}
	return unsafe ? 1 : 0;
}
