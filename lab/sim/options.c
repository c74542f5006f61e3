/* SPDX-License-Identifier: MIT */
/*
 * options.c - tlbpol-sim's command line, read with getopt_long().
 *
 * Scenarios and options mix in any order and are taken in the order given,
 * as they always were: `--costs` prints the cost model as the --cost before
 * it left it, and `trace FILE` takes the argument after it as the file
 * whatever it looks like.  So the option string starts with '-' (each
 * operand comes back in its place, as option 1, instead of being moved to
 * the end), which also keeps POSIXLY_CORRECT from stopping at the first
 * scenario.  Operands after "--" are read once getopt_long() is done.
 */
#include "frontend.h"
#include "support/cli.h"
#include "trace.h"

#include <getopt.h>
#include <string.h>

/*
 * Each long option once, in the order getopt_long()'s table lists them:
 * OPT_<id> (its value), its name, and what it takes: ARG a value option()
 * reads (or numeric_option(), a real number), NONE nothing (option()
 * acts), SET nothing (it sets that int field of struct sim_config to 1),
 * U32 or U64 a whole number into that field (numeric_option(), through
 * cli_number: the field's range); _ where there is no field.
 */
#define SIM_OPTIONS(X)                                             \
	X(CPUS, "cpus", U32, ncpus)                                 \
	X(NODES, "nodes", U32, nnodes)                              \
	X(EVENTS, "events", U64, events)                            \
	X(RULES, "rules", ARG, _)                                   \
	X(CSV, "csv", NONE, _)                                      \
	X(JSON, "json", NONE, _)                                    \
	X(SCALE, "scale", ARG, _)                                   \
	X(COST, "cost", ARG, _)                                     \
	X(COSTS, "costs", NONE, _)                                  \
	X(COST_FILE, "cost-file", ARG, _)                           \
	X(L1, "l1", U32, l1_entries)                                \
	X(L2, "l2", U32, l2_entries)                                \
	X(OVERCOMMIT, "overcommit", U32, overcommit)                \
	X(BROADCAST, "broadcast", SET, broadcast)                   \
	X(HYPERCALL, "hypercall", NONE, _)                          \
	X(SEED, "seed", U64, seed)                                  \
	X(FREE_TICKS, "free-ticks", U32, free_ticks)                \
	X(POLICY, "policy", ARG, _)                                 \
	X(TOPOLOGY, "topology", ARG, _)                             \
	X(IPI_DELAY, "ipi-delay-spins", ARG, _)                     \
	X(COMPUTE_SCALE, "trace-compute-scale", ARG, _)             \
	X(THREADS, "threads", U32, threads)                         \
	X(VM, "vm", SET, vm)                                        \
	X(CPU_NS, "trace-cpu-ns", ARG, _)                           \
	X(PROBE, "probe", SET, probe)                               \
	X(PCID, "pcid", SET, pcid)                                  \
	X(STAMPS, "stamps", NONE, _)                                \
	X(NO_STAMPS, "no-stamps", NONE, _)                          \
	X(STAMP_SPARE, "stamp-spare", SET, stamp_spare)             \
	X(STAMP_LOOKAHEAD, "stamp-lookahead", U32, stamp_lookahead) \
	X(BLOCK, "block-us", ARG, _)                                \
	X(PAGES, "pages", U32, pages)                               \
	X(WAIT_IRQS, "wait-irqs", ARG, _)                           \
	X(ZERO_PAGE, "zero-page", ARG, _)                           \
	X(BACKEND, "backend", ARG, _)                               \
	X(FIXED, "fixed", SET, fixed)                               \
	X(TAGS, "tags", ARG, _)

/* What getopt_long() is told each kind takes. */
#define HAS_ARG_ARG required_argument
#define HAS_ARG_NONE no_argument
#define HAS_ARG_SET no_argument
#define HAS_ARG_U32 required_argument
#define HAS_ARG_U64 required_argument

enum {
	OPT_NONE_ = 255, /* the first past every char: no long option has a short twin */
#define X(id, name, kind, field) OPT_##id,
	SIM_OPTIONS(X)
#undef X
};

static const struct option longopts[] = {
#define X(id, name, kind, field) { name, HAS_ARG_##kind, NULL, OPT_##id },
	SIM_OPTIONS(X)
#undef X
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: tlbpol-sim [SCENARIO... | all | trace FILE] [options]\n"
		   "  scenarios:");
	for (int i = 0; sim_workloads[i]; i++)
		fprintf(f, " %s", sim_workloads[i]->name);
	fprintf(f,
		"\n"
		"             (no scenario: all of them)\n"
		"  --cpus N          CPUs (default 64, up to 1024)\n"
		"  --nodes M         NUMA nodes / sockets (default 4)\n"
		"  --events N        workload size (scenario unit; default per scenario)\n"
		"  --rules NAMES     also run policy custom: these rules, as tlbpol_rules_parse()\n"
		"                    reads them: sets (default linux none/naive all), rule names\n"
		"                    or a mask, joined by ',' or '+'; a term after '-' is removed:\n"
		"                    default,-lazy-unmap  linux+receiver-merge  0x1ff\n"
		"  --csv | --json    machine-readable output, one row per (scenario, policy)\n"
		"  --scale SCENARIO  interrupts and modelled time from 2 to 1024 CPUs\n"
		"  --cost NAME=V     override a cost-model constant (--costs lists them)\n"
		"  --cost-file F     the same from a file of NAME=V lines (# comments), e.g. a\n"
		"                    measured machine profile: lab/validate/data/machine.cost\n"
		"  --l1 N --l2 N     TLB entries (default 64 and 1536)\n"
		"  --overcommit K    vCPUs per physical CPU in `vcpu` and `hypervisor` (default 2)\n"
		"  --broadcast       give the engine a broadcast flush (INVLPGB) on x86 too\n"
		"  --hypercall       ... as a paravirtual flush hypercall (its own costs)\n"
		"  --backend B       the machine's flush mechanism: ipi, invlpgb, tlbi, hypercall,\n"
		"                    rar or sbi\n"
		"                    (interrupts too; the engine chooses per request by its cost\n"
		"                    model; before and linux use B wherever they can, as Linux\n"
		"                    does); with --scale, that choice beside each fixed one\n"
		"  --fixed           ... the engine always uses B (interrupts priced out of reach)\n"
		"  --seed S          random seed (default 1)\n"
		"  --free-ticks N    the engine's cfg.free_ticks (0: its default, 2; 4294967295: never)\n"
		"  --topology FILE   CPUs and nodes from \"cpu node\" lines (examples/topology)\n"
		"  --ipi-delay-spins N|auto  the engine's ipi_delay_spins (default auto: an IPI\n"
		"                    round trip over one wait turn, as the unikernel sizes it)\n"
		"  --threads T       dontneed: run T threads (default: one per CPU; more than CPUs\n"
		"                    share them through the run queues)\n"
		"  --block-us U      dontneed: each thread blocks U us after each operation\n"
		"  --pages N         dontneed: pages written and dropped per operation (default\n"
		"                    16, tlb_flush2's; 1 to 256; 1 is ipi_rtt -d's loop)\n"
		"  --wait-irqs auto|yes|no  whose waits take other CPUs' requests only from\n"
		"                    their interrupts, as Linux's csd_lock_wait() (the engine's\n"
		"                    TLBPOL_CFGF_WAIT_IRQS); the rest serve them from the wait\n"
		"                    loop (default auto: naive, before and linux)\n");
	fprintf(f,
		"  --pcid            switches keep the old address space's TLB entries under\n"
		"                    their tag (PCID/ASID: the engine's TLBPOL_CFGF_RETAIN_AS)\n"
		"  --tags percpu:S[+G[@M]] | global:B  the engine takes tags from the library's\n"
		"                    allocator and TLBs are keyed by them: S PCIDs per CPU (Linux\n"
		"                    x86: 6), with G global tags for address spaces on M CPUs\n"
		"                    (default 4) that broadcasts by tag reach; or ASIDs/VMIDs of\n"
		"                    B bits (1..12) in generations with rollovers (arm64)\n"
		"  flush stamps (TLBPOL_EVF_STAMP): by default a policy whose rules have\n"
		"                    flush-stamp (default) stamps: private unmaps end with\n"
		"                    tlbpol_stamp() and give their frames back at once, and the\n"
		"                    allocator is a kernel's (--stamp-lookahead 64 --stamp-spare);\n"
		"                    the others (naive, before, linux) do not\n"
		"  --no-stamps       no policy stamps (the flush-stamp rule then has nothing to do)\n"
		"  --stamps          every policy stamps, with the allocator the two options below\n"
		"                    give: frames are reused, the CPU's last freed first, each\n"
		"                    stamp settled then\n"
		"  --stamp-lookahead N  ... the allocator takes a settled frame among the N freed\n"
		"                    last if there is one (tlbpol_stamp_pending(); default 0 with\n"
		"                    --stamps, 64 without)\n"
		"  --stamp-spare     ... and when none is, a spare frame (one nobody freed\n"
		"                    lately: the zone's free memory) rather than settle one;\n"
		"                    the pending ones wait in the list until they settle\n");
	fprintf(f,
		"  --probe           checking: after each step every CPU also reads a page\n"
		"                    installed lately, so other CPUs' pages sit in its TLB\n"
		"  --vm              a guest: IPIs cost vm_ipi_factor more (vcpu always is one)\n"
		"  --trace-compute-scale F  trace replay: recorded computation times F (default\n"
		"                    1; strace slows the traced run, blocking is not scaled)\n"
		"  --trace-cpu-ns N  ... scaled so that it adds up to N ns: the CPU time (user +\n"
		"                    system) the program used when run without strace\n"
		"  --zero-page map|avoid  trace replay (version 3): a read fault of private\n"
		"                    anonymous memory maps the shared zero page, read-only, and\n"
		"                    the write after it copies it, a shootdown (map, default:\n"
		"                    Linux); or maps a fresh zeroed frame, writable, that the\n"
		"                    write then keeps, no flush (avoid: a host without the zero\n"
		"                    page, as mm_forbids_zeropage()); says on stderr how many\n"
		"                    frames that mapped and how many were never written\n"
		"  --policy NAME     run only this policy (");
	for (int p = 0; p < SIM_NR_POLICIES; p++)
		fprintf(f, "%s%s", p ? ", " : "", sim_policy_names[p]);
	fprintf(f, ")\n");
}

/*
 * An option that takes a number: -1 (said) if @v is not one it takes.  The
 * whole numbers go through cli_number; the real ones, each strictly
 * between 0 and its bound, are kept times their unit.
 */
static int numeric_option(struct sim_config *cfg, int c, const char *name, const char *v)
{
	/* The U32 and U64 entries of SIM_OPTIONS. */
#define NUM_ARG(id, f)
#define NUM_NONE(id, f)
#define NUM_SET(id, f)
#define NUM_U32(id, f) CLI_U32(OPT_##id, cfg->f),
#define NUM_U64(id, f) CLI_U64(OPT_##id, cfg->f),
	const struct cli_number nums[] = {
#define X(id, name, kind, field) NUM_##kind(id, field)
		SIM_OPTIONS(X)
#undef X
	};
	const struct {
		int opt;
		double *to, hi, unit;
	} reals[] = {
		{ OPT_BLOCK, &cfg->block_ns, 1e9, 1000 }, /* given in us */
		{ OPT_COMPUTE_SCALE, &cfg->trace_compute_scale, 1e6, 1 },
		{ OPT_CPU_NS, &cfg->trace_cpu_ns, 1e18, 1 },
	};
	const struct cli_number *num = cli_number_find(nums, sizeof(nums) / sizeof(nums[0]), c);
	int bad = num && cli_number_set(num, v);

	if (c == OPT_PAGES && !bad && (cfg->pages < 1 || cfg->pages > 256))
		bad = 1; /* wl_bench.c: DN_PAGES_MAX */

	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++)
		if (reals[i].opt == c) {
			bad = cli_double(v, 0, reals[i].hi, reals[i].to);
			if (!bad)
				*reals[i].to *= reals[i].unit;
		}
	if (bad) {
		fprintf(stderr, "tlbpol-sim: bad number for --%s: %s\n", name, v);
		return -1;
	}
	return 0;
}

static int policy_index(const char *name)
{
	for (int p = 0; p < SIM_NR_POLICIES; p++)
		if (!strcmp(sim_policy_names[p], name))
			return p;
	return -1;
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

static int add_scenario(struct sim_options *o, const struct workload *wl)
{
	if (o->nlist == SIM_MAX_SCENARIOS) {
		fprintf(stderr, "tlbpol-sim: more than %d scenarios\n", SIM_MAX_SCENARIOS);
		return -1;
	}
	o->list[o->nlist++] = wl;
	return 0;
}

/* An operand: a scenario, "all", or "trace" and the argument after it. */
static int operand(struct sim_options *o, const char *a, int argc, char **argv)
{
	const struct workload *wl;

	if (!strcmp(a, "trace")) {
		if (optind == argc) {
			fprintf(stderr, "tlbpol-sim: trace needs a FILE\n");
			return -1;
		}
		o->trace = argv[optind++];
		return 0;
	}
	if (!strcmp(a, "all")) {
		for (int k = 0; sim_workloads[k]; k++)
			if (add_scenario(o, sim_workloads[k]))
				return -1;
		return 0;
	}
	wl = sim_find_workload(a);
	if (wl)
		return add_scenario(o, wl);
	fprintf(stderr, "tlbpol-sim: unknown argument: %s\n", a);
	usage(stderr);
	return -1;
}

/* Option @c, called --@name, with its argument @v if it takes one. */
static int option(struct sim_options *o, int c, const char *name, const char *v)
{
	struct sim_config *cfg = &o->cfg;
	/* The SET entries of SIM_OPTIONS. */
#define SET_ARG(id, f)
#define SET_NONE(id, f)
#define SET_U32(id, f)
#define SET_U64(id, f)
#define SET_SET(id, f) { OPT_##id, &cfg->f },
	const struct {
		int opt;
		int *flag;
	} flags[] = {
#define X(id, name, kind, field) SET_##kind(id, field)
		SIM_OPTIONS(X)
#undef X
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (flags[i].opt == c) {
			*flags[i].flag = 1;
			return 0;
		}
	switch (c) {
	case OPT_RULES:
		if (tlbpol_rules_parse(v, &o->custom_rules)) {
			fprintf(stderr, "tlbpol-sim: --rules: %s: not a rule mask\n", v);
			return -1;
		}
		o->have_custom = 1;
		return 0;
	case OPT_WAIT_IRQS:
		if (!strcmp(v, "auto") || !strcmp(v, "yes") || !strcmp(v, "no")) {
			o->wait_irqs = !strcmp(v, "auto") ? -1 : !strcmp(v, "yes");
			return 0;
		}
		fprintf(stderr, "tlbpol-sim: --wait-irqs takes auto, yes or no, not %s\n", v);
		return -1;
	case OPT_ZERO_PAGE:
		if (!strcmp(v, "map") || !strcmp(v, "avoid")) {
			sim_zero_page = !strcmp(v, "map") ? ZERO_PAGE_MAP : ZERO_PAGE_AVOID;
			return 0;
		}
		fprintf(stderr, "tlbpol-sim: --zero-page takes map or avoid, not %s\n", v);
		return -1;
	case OPT_POLICY:
		o->only = policy_index(v);
		if (o->only < 0) {
			fprintf(stderr, "tlbpol-sim: unknown policy %s\n", v);
			return -1;
		}
		return 0;
	case OPT_CSV:
		o->fmt = FMT_CSV;
		return 0;
	case OPT_JSON:
		o->fmt = FMT_JSON;
		return 0;
	case OPT_SCALE:
		o->scale = sim_find_workload(v);
		if (!o->scale) {
			fprintf(stderr, "tlbpol-sim: unknown scenario %s\n", v);
			return -1;
		}
		return 0;
	case OPT_COST:
		if (sim_cost_set(&cfg->cost, v)) {
			fprintf(stderr, "tlbpol-sim: unknown cost or bad value: %s\n", v);
			return -1;
		}
		return 0;
	case OPT_COST_FILE: {
		int line;

		if (sim_cost_load(&cfg->cost, v, &line)) {
			if (line)
				fprintf(stderr, "tlbpol-sim: %s:%d: unknown cost or bad value\n", v, line);
			else
				fprintf(stderr, "tlbpol-sim: cannot read %s\n", v);
			return -1;
		}
		return 0;
	}
	case OPT_STAMPS:
	case OPT_NO_STAMPS: /* the last one given wins */
		cfg->stamps_mode = c == OPT_STAMPS;
		return 0;
	case OPT_BACKEND: {
		int bk = sim_backend_parse(v);

		if (bk < 0) {
			fprintf(stderr, "tlbpol-sim: --backend: unknown mechanism '%s' (ipi, invlpgb, "
				"tlbi, hypercall, rar, sbi)\n", v);
			return -1;
		}
		cfg->backend = bk;
		return 0;
	}
	case OPT_TAGS:
		if (sim_tags_parse(v, &cfg->tags)) {
			fprintf(stderr, "tlbpol-sim: --tags takes percpu:SLOTS[+GLOBAL[@MIN]] (1..%u "
				"slots) or global:BITS (1..12), not %s\n", TLBPOL_TAG_SLOTS_MAX, v);
			return -1;
		}
		return 0;
	case OPT_HYPERCALL:
		cfg->broadcast = 1;
		cfg->hypercall = 1;
		return 0;
	case OPT_IPI_DELAY: {
		uint64_t n;

		if (!strcmp(v, "auto")) {
			cfg->ipi_delay_spins = -1;
		} else if (cli_whole(v, 0, UINT32_MAX, &n)) {
			fprintf(stderr, "tlbpol-sim: bad number for --%s: %s\n", name, v);
			return -1;
		} else {
			cfg->ipi_delay_spins = (int64_t)n;
		}
		return 0;
	}
	case OPT_TOPOLOGY:
		if (read_topology(v, cfg)) {
			fprintf(stderr, "tlbpol-sim: cannot read topology %s\n", v);
			return -1;
		}
		return 0;
	default:
		return numeric_option(cfg, c, name, v);
	}
}

int sim_parse_options(int argc, char **argv, struct sim_options *o)
{
	struct sim_config *cfg = &o->cfg;
	int c, li;

	memset(o, 0, sizeof(*o));
	o->only = -1;
	o->wait_irqs = -1;
	cfg->ncpus = 64;
	cfg->nnodes = 4;
	cfg->l1_entries = 64;
	cfg->l2_entries = 1536;
	cfg->seed = 1;
	cfg->ipi_delay_spins = -1;
	cfg->trace_compute_scale = 1.0;
	cfg->stamps_mode = -1;
	sim_cost_defaults(&cfg->cost);

	/* getopt_long()'s own messages name the program as ours do. */
	argv[0] = (char *)"tlbpol-sim";
	while ((c = getopt_long(argc, argv, "-h", longopts, &li)) != -1) {
		switch (c) {
		case 1:
			if (operand(o, optarg, argc, argv))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_COSTS:
			printf("cost model (override with --cost NAME=VALUE):\n");
			sim_cost_print(&cfg->cost, stdout);
			return 0;
		case '?': /* getopt_long() said what */
			usage(stderr);
			return 2;
		default:
			if (c == OPT_STAMP_LOOKAHEAD)
				cfg->stamp_lookahead_given = 1;
			if (option(o, c, longopts[li].name, optarg))
				return 2;
		}
	}
	while (optind < argc)
		if (operand(o, argv[optind++], argc, argv))
			return 2;

	if (cfg->ncpus < 2 || cfg->ncpus > 1024 || !cfg->nnodes || cfg->nnodes > cfg->ncpus ||
	    cfg->l1_entries < 4 || cfg->l2_entries < 12) {
		fprintf(stderr, "tlbpol-sim: --cpus 2..1024, --nodes 1..cpus, TLB sizes too small\n");
		return 2;
	}
	/* A size the usual 4 or 12 ways do not divide is modelled direct-mapped. */
	cfg->l1_ways = cfg->l1_entries % 4 ? 1 : 4;
	cfg->l2_ways = cfg->l2_entries % 12 ? 1 : 12;
	if (o->trace)
		o->list[o->nlist++] = &sim_trace_workload;
	if (!o->nlist && !o->scale)
		for (int k = 0; sim_workloads[k]; k++)
			o->list[o->nlist++] = sim_workloads[k];
	return -1;
}
