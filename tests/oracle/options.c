/* SPDX-License-Identifier: MIT */
/*
 * options.c - the stress driver's command line, read with getopt_long():
 * long options only (and -h), each value checked, so that a typo is
 * refused (status 2) rather than run as some other configuration; --rules
 * becomes the list of rule masks to run, through tlbpol_rules_parse() like
 * every tool of the project.  Defaults are set here too, and
 * $TLBPOL_STRESS_SCALE applied last: what main() gets is the whole run.
 */
#define _POSIX_C_SOURCE 200809L

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "stress.h"

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#ifndef STRESS_TSAN
#define STRESS_TSAN 0
#endif

static void add_mask(struct opts *o, uint64_t m, const char *name)
{
	static char names[64][64];

	if (o->nmasks == 64)
		return;
	snprintf(names[o->nmasks], sizeof(names[0]), "%s", name);
	o->mask_names[o->nmasks] = names[o->nmasks];
	o->masks[o->nmasks++] = m;
}

/* One rule's bit, by its name (tlbpol_rule_str()): 0, or -1. */
static int rule_bit(const char *s, uint64_t *bit)
{
	uint64_t m;

	/* tlbpol_rules_parse() takes no bit outside TLBPOL_RULES_ALL, and
	 * each of those is a rule. */
	if (tlbpol_rules_parse(s, &m) || !m || (m & (m - 1)))
		return -1;
	*bit = m;
	return 0;
}

/* The masks of "all" that have every bit of @with (0: all of them). */
static void add_all(struct opts *o, uint64_t with)
{
	char name[48];

	if (!with)
		add_mask(o, TLBPOL_RULES_NONE, "none");
	for (int i = 0; i < 64; i++)
		if ((TLBPOL_RULES_ALL & (1ULL << i)) && !(with & ~(1ULL << i))) {
			snprintf(name, sizeof(name), "only-%s", tlbpol_rule_str(1ULL << i));
			add_mask(o, 1ULL << i, name);
		}
	for (int i = 0; i < 64; i++)
		if ((TLBPOL_RULES_ALL & (1ULL << i)) && !(with & (1ULL << i))) {
			snprintf(name, sizeof(name), "default-%s", tlbpol_rule_str(1ULL << i));
			add_mask(o, TLBPOL_RULES_DEFAULT & ~(1ULL << i), name);
		}
	if (!(with & ~TLBPOL_RULES_LINUX))
		add_mask(o, TLBPOL_RULES_LINUX, "linux");
	add_mask(o, TLBPOL_RULES_DEFAULT, "default");
}

/*
 * A comma list of configurations: "all" (none, each rule alone, default
 * less each rule, linux, default), "with-RULE" (those of them that have
 * RULE), "default-RULE", or any mask tlbpol_rules_parse() reads ("linux",
 * "0x7fff", "linux+receiver-merge"; a rule alone is named only-RULE).
 */
static int parse_rules(struct opts *o, const char *spec)
{
	char buf[512], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t bit, m;
		char name[48];

		if (!strcmp(tok, "all")) {
			add_all(o, 0);
		} else if (!strncmp(tok, "with-", 5) && !rule_bit(tok + 5, &bit)) {
			add_all(o, bit);
		} else if (!strncmp(tok, "default-", 8) && !rule_bit(tok + 8, &bit)) {
			add_mask(o, TLBPOL_RULES_DEFAULT & ~bit, tok);
		} else if (!rule_bit(tok, &bit)) {
			snprintf(name, sizeof(name), "only-%s", tlbpol_rule_str(bit));
			add_mask(o, bit, name);
		} else if (!tlbpol_rules_parse(tok, &m)) {
			add_mask(o, m, tok);
		} else {
			return -1;
		}
	}
	return o->nmasks ? 0 : -1;
}

static _Noreturn void help(FILE *f, int rc)
{
	fprintf(f,
		"usage: stress --cpus N --events M --rules SPEC --arch x86|arm64|generic|riscv64\n"
		"              --seed S\n"
		"              [--retain] [--wait-irqs]\n"
		"              [--profile normal|switch|planted|lazy|wide|compute|states|quiet|preempted]\n"
		"              [--expect-violations] [--no-broadcast] [--ipi-delay SPINS] [--as K]\n"
		"              [--batch PAGES] [--pages PER_AS] [--kernel-pages N] [--store-first] [--quiet] [--verbose]\n"
		"              [--irqs-off PCT] [--wait-limit TURNS] [--free-ticks N] [--stall-secs S]\n"
		"              [--migrate PCT] [--split] [--bcast-cost NS] [--walkers] [--walker-sync]\n"
		"              [--walkers-undeclared] [--svvptc] [--remote] [--bcast-tag-match]\n"
		"              [--tags percpu|global] [--tag-bits N] [--tag-slots N] [--tag-global N]\n"
		"              [--tag-global-cpus N] [--window EVENTS]\n"
		"  --irqs-off: PCT of ticks (PCT/2 of other waiting calls) run with interrupts off\n"
		"  --stall-secs: one engine call waiting this long is a deadlock (default 10, 30 under TSan)\n"
"  --migrate: PCT of stamped unmaps ask their stamp first on another CPU (a migrated task)\n"
		"  --split: a split-phase broadcast (issue, sync) instead of a synchronous one\n"
		"  --bcast-cost: the broadcast descriptor's cost_ns (low: chosen at a few CPUs)\n"
		"  --bcast-max-pages: pages one broadcast instruction names (default 8)\n"
		"  --walkers: lockless page-table walkers (TLBPOL_CFGF_LOCKLESS_WALKERS)\n"
		"  --walkers-undeclared: the same walkers, the flag not given (must fail)\n"
		"  --svvptc: riscv64 harts with Svvptc (no invalid PTE cached; TLBPOL_CFGF_SVVPTC)\n"
		"  --remote: a targeted remote action too (ops->remote_action, as RAR)\n"
		"  --bcast-tag-match: the broadcast misses the odd CPUs, on tags of their own (must fail)\n"
		"  --walker-sync: give the engine ops->walker_sync\n"
		"  --tags: hardware tags from the engine's allocator (tlbpol_switch_tag()): per-CPU\n"
		"          slots (--tag-slots, default 3) or global generations; --tag-bits:\n"
		"          their width (default 3: tags 1..7), at most 12; --tag-global: global\n"
		"          tags beside per-CPU slots (broadcast by tag), given at --tag-global-cpus;\n"
		"          --tag-irq-load: CPUs move onto a global tag in interrupts (ops->load_tag)\n"
		"  --window: a stretched transition window (interrupts off between an engine\n"
		"          call and the CR3 write or flush after it) lasts until the other CPUs\n"
		"          have made about EVENTS steps (default: a few yields)\n"
		"  SPEC: comma list of all, with-RULE (those of all with RULE), default-RULE, or a mask\n"
		"        tlbpol_rules_parse() reads\n"
		"        (none, linux, default, RULE, 0x7fff, linux+RULE ...)\n"
		"  $TLBPOL_STRESS_SCALE scales --events (default 1, 0.1 under TSan)\n");
	exit(rc);
}

static _Noreturn void usage(void)
{
	help(stderr, 2);
}

/* A value the option @name does not take: say which, then the usage. */
static _Noreturn void bad_value(const char *name, const char *v)
{
	fprintf(stderr, "stress: bad value for --%s: '%s'\n", name, v);
	usage();
}

enum {
	OPT_HELP = 'h',
	OPT_CPUS = 256, /* long options only: values past any character */
	OPT_EVENTS,
	OPT_SEED,
	OPT_RULES,
	OPT_ARCH,
	OPT_PROFILE,
	OPT_BATCH,
	OPT_PAGES,
	OPT_KERNEL_PAGES,
	OPT_AS,
	OPT_IPI_DELAY,
	OPT_IRQS_OFF,
	OPT_WAIT_LIMIT,
	OPT_FREE_TICKS,
	OPT_STALL_SECS,
	OPT_MIGRATE,
	OPT_BCAST_COST,
	OPT_BCAST_PAGES,
	OPT_TAGS,
	OPT_TAG_BITS,
	OPT_TAG_SLOTS,
	OPT_TAG_GLOBAL,
	OPT_TAG_GLOBAL_CPUS,
	OPT_WINDOW,
};

static uint32_t arch_of(const char *name, const char *v)
{
	if (!strcmp(v, "x86") || !strcmp(v, "x86_64"))
		return TLBPOL_ARCH_X86_64;
	if (!strcmp(v, "arm64"))
		return TLBPOL_ARCH_ARM64;
	if (!strcmp(v, "generic"))
		return TLBPOL_ARCH_GENERIC;
	if (!strcmp(v, "riscv64") || !strcmp(v, "riscv"))
		return TLBPOL_ARCH_RISCV64;
	bad_value(name, v);
	return 0;
}

static const struct profile *profile_of(const char *name, const char *v)
{
	for (size_t k = 0; k < nr_profiles; k++)
		if (!strcmp(v, profiles[k].name))
			return &profiles[k];
	bad_value(name, v);
	return NULL;
}

void stress_options(struct opts *o, int argc, char **argv)
{
	double scale = STRESS_TSAN ? 0.1 : 1.0;
	const char *env = getenv("TLBPOL_STRESS_SCALE");
	/* The flags set their field themselves, so the table is built here. */
	const struct option long_opts[] = {
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "events", required_argument, NULL, OPT_EVENTS },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "rules", required_argument, NULL, OPT_RULES },
		{ "arch", required_argument, NULL, OPT_ARCH },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "pages", required_argument, NULL, OPT_PAGES },
		{ "kernel-pages", required_argument, NULL, OPT_KERNEL_PAGES },
		{ "as", required_argument, NULL, OPT_AS },
		{ "ipi-delay", required_argument, NULL, OPT_IPI_DELAY },
		{ "irqs-off", required_argument, NULL, OPT_IRQS_OFF },
		{ "wait-limit", required_argument, NULL, OPT_WAIT_LIMIT },
		{ "free-ticks", required_argument, NULL, OPT_FREE_TICKS },
		{ "stall-secs", required_argument, NULL, OPT_STALL_SECS },
		{ "migrate", required_argument, NULL, OPT_MIGRATE },
		{ "retain", no_argument, &o->retain, 1 },
		{ "wait-irqs", no_argument, &o->wait_irqs, 1 },
		{ "expect-violations", no_argument, &o->expect, 1 },
		{ "store-first", no_argument, &o->store_first, 1 },
		{ "no-broadcast", no_argument, &o->broadcast, 0 },
		{ "split", no_argument, &o->split, 1 },
		{ "walkers", no_argument, &o->walkers, 1 },
		{ "walkers-undeclared", no_argument, &o->walkers, 2 },
		{ "svvptc", no_argument, &o->svvptc, 1 },
		{ "remote", no_argument, &o->remote, 1 },
		{ "bcast-tag-match", no_argument, &o->tag_match, 1 },
		{ "walker-sync", no_argument, &o->walker_sync, 1 },
		{ "tag-irq-load", no_argument, &o->tag_irq_load, 1 },
		{ "bcast-cost", required_argument, NULL, OPT_BCAST_COST },
		{ "bcast-max-pages", required_argument, NULL, OPT_BCAST_PAGES },
		{ "tags", required_argument, NULL, OPT_TAGS },
		{ "tag-bits", required_argument, NULL, OPT_TAG_BITS },
		{ "tag-slots", required_argument, NULL, OPT_TAG_SLOTS },
		{ "tag-global", required_argument, NULL, OPT_TAG_GLOBAL },
		{ "tag-global-cpus", required_argument, NULL, OPT_TAG_GLOBAL_CPUS },
		{ "window", required_argument, NULL, OPT_WINDOW },
		{ "quiet", no_argument, &o->quiet, 1 },
		{ "verbose", no_argument, &o->verbose, 1 },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	/* The options that only set a number, across its field's range. */
	const struct cli_number nums[] = {
		{ OPT_CPUS, &o->cpus, NULL },
		{ OPT_EVENTS, NULL, &o->events },
		{ OPT_SEED, NULL, &o->seed },
		{ OPT_BATCH, &o->batch, NULL },
		{ OPT_PAGES, &o->pages, NULL },
		{ OPT_KERNEL_PAGES, &o->kernel_pages, NULL },
		{ OPT_AS, &o->nr_as, NULL },
		{ OPT_IPI_DELAY, &o->ipi_delay, NULL },
		{ OPT_IRQS_OFF, &o->irqs_off, NULL },
		{ OPT_WAIT_LIMIT, &o->wait_limit, NULL },
		{ OPT_FREE_TICKS, &o->free_ticks, NULL },
		{ OPT_MIGRATE, &o->migrate, NULL },
		{ OPT_BCAST_COST, &o->bcast_cost, NULL },
		{ OPT_BCAST_PAGES, &o->bcast_max_pages, NULL },
		{ OPT_TAG_BITS, &o->tag_bits, NULL },
		{ OPT_TAG_SLOTS, &o->tag_slots, NULL },
		{ OPT_TAG_GLOBAL, &o->tag_global, NULL },
		{ OPT_TAG_GLOBAL_CPUS, &o->tag_global_cpus, NULL },
		{ OPT_WINDOW, &o->window_events, NULL },
	};
	int c, idx = 0;

	memset(o, 0, sizeof(*o));
	o->cpus = 4;
	o->events = 20000;
	o->arch = TLBPOL_ARCH_X86_64;
	o->seed = 1;
	o->broadcast = 1;
	o->kernel_pages = 32;
	o->prof = &profiles[0];
	/* "+": stop at the first operand, which is refused below. */
	while ((c = getopt_long(argc, argv, "+h", long_opts, &idx)) != -1) {
		const char *name = c >= OPT_CPUS ? long_opts[idx].name : "";
		const struct cli_number *num;

		num = cli_number_find(nums, sizeof(nums) / sizeof(nums[0]), c);
		if (num) {
			if (cli_number_set(num, optarg))
				bad_value(name, optarg);
			continue;
		}
		switch (c) {
		case 0: /* a flag: getopt_long() set it */
			break;
		case OPT_RULES:
			if (parse_rules(o, optarg))
				bad_value(name, optarg);
			break;
		case OPT_ARCH:
			o->arch = arch_of(name, optarg);
			break;
		case OPT_PROFILE:
			o->prof = profile_of(name, optarg);
			break;
		case OPT_TAGS:
			if (!strcmp(optarg, "percpu"))
				o->tags = TLBPOL_TAGS_PERCPU + 1;
			else if (!strcmp(optarg, "global"))
				o->tags = TLBPOL_TAGS_GLOBAL + 1;
			else
				bad_value(name, optarg);
			break;
		case OPT_STALL_SECS: {
			char *end;

			o->stall_secs = strtod(optarg, &end);
			if (*end || !(o->stall_secs > 0))
				bad_value(name, optarg);
			break;
		}
		case OPT_HELP:
			help(stdout, 0);
			break;
		default: /* getopt_long() said what */
			usage();
		}
	}
	if (optind < argc) {
		fprintf(stderr, "stress: unexpected argument '%s'\n", argv[optind]);
		usage();
	}
	if (!o->cpus || o->cpus > ORC_MAX_CPUS) {
		fprintf(stderr, "stress: --cpus takes 1 to %u\n", ORC_MAX_CPUS);
		usage();
	}
	if (o->irqs_off > 100 || o->migrate > 100) {
		fprintf(stderr, "stress: --irqs-off and --migrate take a percent, 0 to 100\n");
		usage();
	}
	if (o->nr_as > ORC_MAX_AS) {
		fprintf(stderr, "stress: --as takes 0 (the profile's) to %u\n", ORC_MAX_AS);
		usage();
	}
	if (o->tags) {
		o->tag_bits = o->tag_bits ? o->tag_bits : 3;
		o->tag_slots = o->tags == TLBPOL_TAGS_PERCPU + 1 ? (o->tag_slots ? o->tag_slots : 3) : 0;
		if (o->tag_bits > 12) {
			fprintf(stderr, "stress: --tag-bits takes 1 to 12\n");
			usage();
		}
	}
	if (!o->nmasks)
		parse_rules(o, "default");
	if (env && *env)
		scale = strtod(env, NULL);
	o->events = (uint64_t)((double)o->events * scale);
	if (o->events < 50ULL * o->cpus)
		o->events = 50ULL * o->cpus;
}
