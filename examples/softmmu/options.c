/* SPDX-License-Identifier: MIT */
/*
 * options.c - softmmu's command line: the workload mixes --mix chooses
 * from, the options into struct opts, and --rules into one rule mask per
 * run.  A file of its own so that main.c keeps to the runs and the report.
 */

#include "options.h"

#include <getopt.h>
#include <unistd.h>

#include "support/cli.h"

static const struct mix mixes[] = {
	/* About 12% of the time halted, 1% blocked. */
	{ "mixed", "every operation",
	  /* reclaim unmap protect migrate remap tables aging munmap */
	  { 30, 15, 15, 10, 10, 5, 5, 10 },
	  4096, 4000, 100, 1000, 20000, 50, 300 },
	{ "reclaim", "reclaim-heavy: clean and dirty pages on every vCPU, 32 per batch",
	  { 90, 5, 5, 0, 0, 0, 0, 0 },
	  4096, 4000, 100, 1000, 20000, 50, 300 },
	/* About half of the time halted. */
	{ "tables", "page-table pages freed under halted vCPUs",
	  { 20, 20, 10, 0, 0, 50, 0, 0 },
	  2048, 1000, 200, 2000, 0, 0, 0 },
};
#define NR_MIXES (sizeof(mixes) / sizeof(mixes[0]))

static _Noreturn void help(FILE *f, int rc)
{
	fprintf(f,
		"usage: softmmu [--vcpus N] [--seconds S] [--mix mixed|reclaim|tables]\n"
		"               [--rules POLICY,...] [--seed N]\n"
		"               [--expect-stale]\n"
		"               [--bug lost-flush|no-catchup|skip-settle|tag-no-flush]\n"
		"               [--free-ticks N] [--no-stamps] [--stamp-look N]\n"
		"               [--as N] [--tags percpu:SLOTS|global:BITS]\n"
		"  --no-stamps: reclaim and munmap free frames behind the flush\n"
		"          (tlbpol_defer_free()), not at once with a stamp (TLBPOL_EVF_STAMP)\n"
		"  --stamp-look N: the allocator takes a settled frame among the N freed\n"
		"          last (default 8; 0: always the last, settling it if need be)\n"
		"  --bug skip-settle: hand out the frame freed last without settling it\n"
		"  --as N: N guest address spaces (1 .. %u, default 1), the vCPUs switching\n"
		"          between them every %u blocks\n"
		"  --tags percpu:SLOTS: the engine's tag allocator, SLOTS tags per vCPU\n"
		"          (x86 PCIDs); global:BITS: one pool of 2^BITS - 1 tags with\n"
		"          generations (arm64 ASIDs); default: no tags, a switch flushes all\n"
		"  --bug tag-no-flush: ignore the flush a switch's tag asks for (without\n"
		"          tags: the flush of all a switch makes)\n"
		"  POLICY: a rule mask as tlbpol_rules_parse() reads it: naive, linux,\n"
		"          default, linux+receiver-merge, 0x1ff (default: naive,linux,default)\n",
		MAX_AS, SWITCH_BLOCKS);
	exit(rc);
}

static _Noreturn void usage(void)
{
	help(stderr, 2);
}

enum {
	OPT_VCPUS = 256, OPT_SECONDS, OPT_MIX, OPT_RULES, OPT_SEED, OPT_FREE_TICKS, OPT_BUG,
	OPT_EXPECT_STALE, OPT_NO_STAMPS, OPT_STAMP_LOOK, OPT_AS, OPT_TAGS,
};

static const struct option long_options[] = {
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "mix", required_argument, NULL, OPT_MIX },
	{ "rules", required_argument, NULL, OPT_RULES },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "free-ticks", required_argument, NULL, OPT_FREE_TICKS },
	{ "bug", required_argument, NULL, OPT_BUG },
	{ "expect-stale", no_argument, NULL, OPT_EXPECT_STALE },
	{ "no-stamps", no_argument, NULL, OPT_NO_STAMPS },
	{ "stamp-look", required_argument, NULL, OPT_STAMP_LOOK },
	{ "as", required_argument, NULL, OPT_AS },
	{ "tags", required_argument, NULL, OPT_TAGS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * --tags KIND:N.  Whether the allocator fits the CPUs (a global pool must
 * hold more tags than there are CPUs) is tags_setup()'s to say, once
 * --vcpus is known.
 */
static void parse_tags(const char *arg, struct opts *o)
{
	const char *n = strchr(arg, ':');
	uint64_t v;

	if (!strcmp(arg, "off")) {
		o->tags_kind = TAGS_OFF;
		return;
	}
	if (n && (size_t)(n - arg) == 6 && !strncmp(arg, "percpu", 6) &&
	    !cli_whole(n + 1, 10, TLBPOL_TAG_SLOTS_MAX, &v) && v >= 1)
		o->tags_kind = TLBPOL_TAGS_PERCPU;
	else if (n && (size_t)(n - arg) == 6 && !strncmp(arg, "global", 6) &&
		 !cli_whole(n + 1, 10, TLBPOL_TAG_BITS_MAX, &v) && v >= 1)
		o->tags_kind = TLBPOL_TAGS_GLOBAL;
	else
		die("--tags: percpu:SLOTS (1 .. %u), global:BITS (1 .. %u) or off",
		    TLBPOL_TAG_SLOTS_MAX, TLBPOL_TAG_BITS_MAX);
	o->tags_param = (uint32_t)v;
}

/* The options into @o, or exit: 0 after --help, 2 (with a message on
 * stderr) for an unknown option, a missing or bad value, or an argument. */
void parse_options(int argc, char **argv, struct opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t n;
	int opt;

	o->nv = ncpu < 2 ? 2 : ncpu > MAX_VCPUS ? MAX_VCPUS : (uint32_t)ncpu;
	o->seconds = 5;
	o->mix = &mixes[0];
	o->rules = "naive,linux,default";
	o->seed = 1;
	o->bug = BUG_NONE;
	o->no_stamps = 0;
	o->stamp_look = 8;
	o->expect = 0;
	o->free_ticks = 0;
	o->nas = 1;
	o->tags_kind = TAGS_OFF;
	o->tags_param = 0;
	while ((opt = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			help(stdout, 0);
		case OPT_VCPUS:
			if (cli_whole(optarg, 10, MAX_VCPUS, &n) || n < 1)
				die("--vcpus: 1 .. %d", MAX_VCPUS);
			o->nv = (uint32_t)n;
			break;
		case OPT_SECONDS:
			if (cli_double(optarg, 0, 3600, &o->seconds))
				die("--seconds: a positive number");
			break;
		case OPT_MIX:
			o->mix = NULL;
			for (size_t k = 0; k < NR_MIXES; k++)
				if (!strcmp(optarg, mixes[k].name))
					o->mix = &mixes[k];
			if (!o->mix)
				die("--mix: mixed, reclaim or tables");
			break;
		case OPT_RULES:
			o->rules = optarg;
			break;
		case OPT_SEED:
			if (cli_whole(optarg, 0, UINT64_MAX, &o->seed))
				die("--seed: a whole number");
			break;
		case OPT_FREE_TICKS:
			if (cli_u32(optarg, &o->free_ticks))
				die("--free-ticks: a whole number below 2^32");
			break;
		case OPT_BUG:
			if (!strcmp(optarg, "lost-flush"))
				o->bug = BUG_LOST_FLUSH;
			else if (!strcmp(optarg, "no-catchup"))
				o->bug = BUG_NO_CATCHUP;
			else if (!strcmp(optarg, "skip-settle"))
				o->bug = BUG_SKIP_SETTLE;
			else if (!strcmp(optarg, "tag-no-flush"))
				o->bug = BUG_TAG_NO_FLUSH;
			else
				die("--bug: lost-flush, no-catchup, skip-settle or tag-no-flush");
			break;
		case OPT_EXPECT_STALE:
			o->expect = 1;
			break;
		case OPT_NO_STAMPS:
			o->no_stamps = 1;
			break;
		case OPT_STAMP_LOOK:
			if (cli_u32(optarg, &o->stamp_look))
				die("--stamp-look: a whole number below 2^32");
			break;
		case OPT_AS:
			if (cli_whole(optarg, 10, MAX_AS, &n) || n < 1)
				die("--as: 1 .. %u", MAX_AS);
			o->nas = (uint32_t)n;
			break;
		case OPT_TAGS:
			parse_tags(optarg, o);
			break;
		default: /* getopt_long() said what was wrong */
			usage();
		}
	}
	if (optind < argc) {
		fprintf(stderr, "softmmu: %s: not an option\n", argv[optind]);
		usage();
	}
}

/*
 * --rules: up to MAX_POLICIES policies, a comma list.  Each is one mask as
 * tlbpol_rules_parse() reads it ("naive", "linux", "default",
 * "linux+receiver-merge", "0x1ff"), named as given.  Returns how many, with
 * the first naive and the first linux policy (-1: none), the references of
 * the report's ratios.
 */
int parse_rules(const char *arg, struct policy *pol, int *naive_i, int *linux_i)
{
	int np = 0;

	*naive_i = *linux_i = -1;
	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ",");

		if (np == MAX_POLICIES)
			die("--rules: at most %d policies", MAX_POLICIES);
		if (len >= sizeof(pol[np].name))
			die("--rules: a policy name of at most %zu characters",
			    sizeof(pol[np].name) - 1);
		memcpy(pol[np].name, p, len);
		pol[np].name[len] = 0;
		if (tlbpol_rules_parse(pol[np].name, &pol[np].rules))
			die("--rules: %s: not a rule mask (tlbpol_rules_parse())", pol[np].name);
		if (pol[np].rules == TLBPOL_RULES_NONE && *naive_i < 0)
			*naive_i = np;
		if (pol[np].rules == TLBPOL_RULES_LINUX && *linux_i < 0)
			*linux_i = np;
		np++;
		p += len + (p[len] == ',');
	}
	if (!np)
		die("--rules: a list of naive, linux, default or rule masks");
	return np;
}
