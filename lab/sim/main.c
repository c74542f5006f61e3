/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
/*
 * tlbpol-sim: replay the workloads of the Linux changes on a modelled
 * machine and show, side by side, what each policy costs (docs/results.md, "tlbpol-sim, the main
 * job").  options.c reads the command line and report.c prints; this file
 * runs every (scenario, policy) pair.
 */
#include "frontend.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const sim_policy_names[SIM_NR_POLICIES] = {
	[POL_NAIVE] = "naive",	   [POL_BEFORE] = "before", [POL_LINUX] = "linux",
	[POL_DEFAULT] = "default", [POL_CUSTOM] = "custom",
};

/*
 * The policies as they run under @wl; @custom is the --rules mask.  The
 * Linux policies (naive, before, linux) wait as Linux's csd_lock_wait()
 * does: it spins with interrupts on and never looks at its own queue, so
 * a CPU waiting for its own shootdown serves another's request only when
 * that request's interrupt arrives (TLBPOL_CFGF_WAIT_IRQS).  default and
 * custom serve their inbox from the wait loop, as the library does unless
 * told otherwise.  @wait_irqs (--wait-irqs): -1 so, 0 none, 1 all.
 *
 * Linux on a machine with a flush mechanism uses it for every shootdown
 * it can, whatever the cost: INVLPGB for an mm with a global ASID (6.15,
 * arch/x86/mm/tlb.c: flush_tlb_mm_range() -> broadcast_tlb_flush()),
 * TLBI ...IS on arm64, the Hyper-V and Xen flush hypercalls
 * (flush_tlb_multi), SBI remote fences on RISC-V, RAR in its RFC.  So
 * under --backend, before and linux always take it (--fixed for them);
 * default and custom choose by the cost model.
 */
static void policies(const struct workload *wl, uint64_t custom, int wait_irqs,
		     struct policy pols[SIM_NR_POLICIES])
{
	const uint64_t rules[SIM_NR_POLICIES] = {
		[POL_NAIVE] = TLBPOL_RULES_NONE,
		[POL_BEFORE] = TLBPOL_RULES_LINUX & ~wl->before_rule,
		[POL_LINUX] = TLBPOL_RULES_LINUX,
		[POL_DEFAULT] = TLBPOL_RULES_DEFAULT,
		[POL_CUSTOM] = custom,
	};

	for (int p = 0; p < SIM_NR_POLICIES; p++)
		pols[p] = (struct policy){ sim_policy_names[p], rules[p],
					   wait_irqs < 0 ? p <= POL_LINUX : wait_irqs,
					   p == POL_BEFORE || p == POL_LINUX };
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The scenario's own figure: what its Linux commit measured. */
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

/*
 * Does @cfg's run stamp?  Without --stamps or --no-stamps, exactly when its
 * rules have the stamp rule: `default` then means every feature, as a
 * kernel using the library would run it, with a kernel's allocator (the
 * per-CPU list's 64 last freed frames looked at for a settled one, a spare
 * frame rather than a wait: lab/validate/validate.py stamps' "spare");
 * --stamp-lookahead still sets the first.  The policies without the rule
 * have nothing to settle a stamp early and run as Linux does.
 */
static void resolve_stamps(struct sim_config *cfg)
{
	if (cfg->stamps_mode >= 0) {
		cfg->stamps = cfg->stamps_mode;
		return;
	}
	cfg->stamps = !!(cfg->rules & TLBPOL_RULE_FLUSH_STAMP);
	if (!cfg->stamps)
		return;
	if (!cfg->stamp_lookahead_given)
		cfg->stamp_lookahead = 64;
	cfg->stamp_spare = 1;
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
	cfg.wait_irqs = pol->wait_irqs;
	cfg.broadcast = base->broadcast || wl->broadcast;
	cfg.vm = wl->vm || base->vm;
	if (cfg.broadcast && pol->rules != TLBPOL_RULES_NONE)
		cfg.rules |= TLBPOL_RULE_BROADCAST; /* arm64 Linux flushes by TLBI IS */
	if (pol->always_mech && cfg.backend > SIM_BK_IPI) {
		cfg.rules |= TLBPOL_RULE_BROADCAST;
		cfg.fixed = 1;
	}
	resolve_stamps(&cfg);
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
	sim_settle_percentiles(&s);
	sim_tags_collect(&s);
	memset(r, 0, sizeof(*r));
	r->scenario = wl->name;
	r->policy = pol->name;
	r->rules = cfg.rules;
	r->stamps = cfg.stamps;
	r->stamp_lookahead = cfg.stamp_lookahead;
	r->stamp_spare = cfg.stamp_spare;
	r->cnt = s.cnt;
	sim_tags_describe(&cfg.tags, r->tags, sizeof(r->tags));
	r->modelled_ns = sim_makespan(&s);
	r->metric = metric_of(wl, &s, r->modelled_ns);
	tlbpol_stats_read(s.eng, -1, &st);
	r->engine_ipis = st.ipis_sent;
	r->wall_s = now_s() - t0;
	sim_fini(&s);
	return 0;
}

/* --scale: the fixed policies (not custom) on one scenario, 2 to 1024 CPUs. */
static int run_scale(const struct sim_options *o, int tty)
{
	static const uint32_t sizes[] = { 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
	const struct workload *wl = o->scale;
	struct policy pols[SIM_NR_POLICIES];
	uint64_t unsafe = 0;

	policies(wl, 0, o->wait_irqs, pols);
	printf("%s: interrupts sent and modelled time (ms) by CPU count\n", wl->name);
	printf("%6s", "cpus");
	for (int p = 0; p < POL_CUSTOM; p++) {
		char head[32];

		snprintf(head, sizeof(head), "%s irq", pols[p].name);
		printf(" %12s %10s", head, "ms");
	}
	printf("\n");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct sim_config c = o->cfg;

		c.ncpus = sizes[k];
		c.topology = NULL;
		c.nnodes = o->cfg.nnodes < sizes[k] ? o->cfg.nnodes : sizes[k];
		printf("%6u", sizes[k]);
		for (int p = 0; p < POL_CUSTOM; p++) {
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

/*
 * --scale with --backend B: the default policy on one scenario, 2 to 1024
 * CPUs, on three machines: interrupts only, B always (--fixed), and both,
 * the engine choosing per request by its cost model.  The choice is worth
 * having if it is never much worse than the better fixed one and better
 * than each somewhere.
 */
static int run_scale_backend(const struct sim_options *o, int tty)
{
	static const uint32_t sizes[] = { 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
	const struct workload *wl = o->scale;
	struct policy pols[SIM_NR_POLICIES];
	const char *bk = sim_backend_name(o->cfg.backend);
	uint64_t unsafe = 0;

	policies(wl, 0, o->wait_irqs, pols);
	printf("%s, policy default, backend %s: interrupts sent, broadcasts and modelled time (ms)\n",
	       wl->name, bk);
	printf("%6s %12s %10s %12s %10s %12s %10s %10s %8s\n", "cpus", "ipi irq", "ms",
	       "fixed bcast", "ms", "choice irq", "bcast", "ms", "vs best");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct result r[3];
		double best;

		for (int m = 0; m < 3; m++) {
			struct sim_config c = o->cfg;

			c.ncpus = sizes[k];
			c.topology = NULL;
			c.nnodes = o->cfg.nnodes < sizes[k] ? o->cfg.nnodes : sizes[k];
			c.backend = m == 0 ? SIM_BK_IPI : o->cfg.backend;
			c.fixed = m == 1;
			if (tty)
				fprintf(stderr, "\r  %s %u cpus %d...   ", wl->name, sizes[k], m);
			if (run_one(&c, wl, NULL, &pols[POL_DEFAULT], &r[m]))
				return 1;
			unsafe += r[m].cnt.violations;
		}
		best = r[0].modelled_ns < r[1].modelled_ns ? r[0].modelled_ns : r[1].modelled_ns;
		printf("%6u %12llu %10.3f %12llu %10.3f %12llu %10llu %10.3f %8.3f\n", sizes[k],
		       (unsigned long long)r[0].cnt.irq_sent, r[0].modelled_ns / 1e6,
		       (unsigned long long)r[1].cnt.broadcasts, r[1].modelled_ns / 1e6,
		       (unsigned long long)r[2].cnt.irq_sent, (unsigned long long)r[2].cnt.broadcasts,
		       r[2].modelled_ns / 1e6, best > 0 ? r[2].modelled_ns / best : 1.0);
		fflush(stdout);
	}
	if (tty)
		fprintf(stderr, "\r%60s\r", "");
	return unsafe ? 1 : 0;
}

/* Every scenario of the list under every policy (or the one --policy names). */
static int run_scenarios(const struct sim_options *o, int tty)
{
	const struct sim_config *cfg = &o->cfg;
	double t_all = now_s();
	uint64_t unsafe = 0;
	int first = 1;

	if (o->fmt == FMT_TABLE)
		printf("tlbpol-sim: %u CPUs on %u nodes, TLB %u+%u entries, libtlbpol %s\n",
		       cfg->ncpus, cfg->nnodes, cfg->l1_entries, cfg->l2_entries, tlbpol_version());
	if (o->fmt == FMT_CSV)
		print_csv_header(stdout);
	if (o->fmt == FMT_JSON)
		printf("[\n");
	for (int w = 0; w < o->nlist; w++) {
		const struct workload *wl = o->list[w];
		struct policy pols[SIM_NR_POLICIES];
		struct result r[SIM_NR_POLICIES];
		int np = o->have_custom ? SIM_NR_POLICIES : POL_CUSTOM;
		/* A policy run alone has its ratios to itself. */
		int b = o->only < 0 ? POL_BEFORE : 0, l = o->only < 0 ? POL_LINUX : 0;

		policies(wl, o->custom_rules, o->wait_irqs, pols);
		if (o->only >= 0) {
			pols[0] = pols[o->only];
			np = 1;
		}
		for (int p = 0; p < np; p++) {
			if (tty)
				fprintf(stderr, "\r  [%d/%d] %s: %s...            ", w + 1,
					o->nlist, wl->name, pols[p].name);
			if (run_one(cfg, wl, o->trace, &pols[p], &r[p]))
				return 1;
			unsafe += r[p].cnt.violations;
		}
		if (tty)
			fprintf(stderr, "\r%70s\r", "");
		if (o->fmt == FMT_TABLE)
			print_table(stdout, wl, r, np, b, l);
		else if (o->fmt == FMT_CSV)
			print_csv(stdout, wl, r, np, b, l);
		else
			print_json(stdout, wl, r, np, b, l, &first);
		fflush(stdout);
	}
	if (o->fmt == FMT_JSON)
		printf("\n]\n");
	if (o->fmt == FMT_TABLE)
		printf("\nwall time %.1f s; %s\n", now_s() - t_all,
		       unsafe ? "SOME POLICY WAS UNSAFE (see above)"
			      : "0 stale-TLB violations under every policy");
	return unsafe ? 1 : 0;
}

/*
 * Exit status, which lab/mutants/run.py reads: 0; 1 if a policy was
 * UNSAFE (a stale-TLB use) or a run could not be set up; 2 for a command
 * line refused, or for a run that cannot go on: above all a CPU waiting
 * for acknowledgements with no interrupt pending (machine.c), STUCK.
 */
int main(int argc, char **argv)
{
	struct sim_options o;
	int tty = isatty(2); /* progress on stderr only for a person watching */
	int rc = sim_parse_options(argc, argv, &o);

	if (rc >= 0)
		return rc;
	if (o.scale && o.cfg.backend != SIM_BK_DEFAULT)
		return run_scale_backend(&o, tty);
	return o.scale ? run_scale(&o, tty) : run_scenarios(&o, tty);
}
