/* SPDX-License-Identifier: MIT */
/*
 * stress: threads acting as CPUs run a random mix of accesses, page-table
 * changes, context switches and CPU state changes on the oracle's model
 * machine (oracle.h), for one or many rule masks, and report what the oracle
 * found.
 *
 *   stress --cpus N --events M --rules SPEC --arch x86|arm64|generic
 *          --seed S [--retain] [--wait-irqs]
 *          [--profile normal|switch|planted|lazy|wide|compute|states|quiet|preempted]
 *          [--expect-violations] [--no-broadcast] [--ipi-delay SPINS] [--as K] [--quiet]
 *          [--irqs-off PCT] [--wait-limit TURNS] [--free-ticks N] [--stall-secs S]
 *          [--migrate PCT]
 *
 * --events is the number of workload steps per configuration, over all
 * CPUs, before scaling by $TLBPOL_STRESS_SCALE (default 1, 0.1 in a
 * ThreadSanitizer build).  --rules is a comma-separated list of: all (the
 * 35 masks below), none, linux, default, a number, or a rule name (e.g.
 * lazy_cpus) alone or as default-NAME.  "all" means: TLBPOL_RULES_NONE, each
 * single rule bit alone, TLBPOL_RULES_DEFAULT less each single bit,
 * TLBPOL_RULES_LINUX, TLBPOL_RULES_DEFAULT; "with-NAME" those of them that
 * have the rule (with-vcpu-defer: the 17 where preempted vCPUs are never
 * waited for, which the "preempted" profile's long preemptions need).
 *
 * One summary line per configuration.  Exit status 1 if any configuration
 * had a violation or a deferred free that did not run exactly once, or if
 * a profile that walks tlbpol_cpu_state()'s matrix ("states") left a
 * transition of it unmade over all configurations; with
 * --expect-violations (the planted-bug check) the other way round: 0 only if
 * the oracle reported violations.  Status 2 for a bad command line.
 *
 * This file runs the configurations and reports them; options.c reads the
 * command line, workload.c is what the CPU threads do (stress.h).  Lines
 * that scripts read: "total: ... violations=N" and "  violations: KIND=N"
 * (lab/mutants/run.py, scripts/stress.sh).
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stress.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct result {
	uint64_t c[ORC_C_MAX], v[ORC_V_MAX], viol;
	uint64_t tag_flushes, all_flushes, rollovers; /* --tags */
	uint64_t trans[2][4][4];
	double secs;
};

static int run_one(const struct opts *o, uint64_t mask, const char *mask_name, struct result *res)
{
	struct orc_config cfg;
	struct orc_world *w;
	struct thr thr[ORC_MAX_CPUS];
	struct shared sh;
	struct tlbpol_stats st;
	double t0 = now_s();
	int r;

	orc_config_init(&cfg, o->cpus, o->arch, mask);
	cfg.nr_as = o->nr_as ? o->nr_as : o->prof->nr_as;
	cfg.flags = (o->retain ? TLBPOL_CFGF_RETAIN_AS : 0) |
		    /* cb_relax() polls the mailbox: the promise is kept. */
		    (o->wait_irqs ? TLBPOL_CFGF_WAIT_IRQS : 0);
	cfg.broadcast = o->broadcast;
	cfg.split = o->split;
	cfg.bcast_cost = o->bcast_cost;
	cfg.bcast_max_pages = o->bcast_max_pages;
	cfg.walkers = o->walkers;
	cfg.walker_sync = o->walker_sync;
	cfg.svvptc = o->svvptc;
	cfg.remote = o->remote;
	cfg.tag_match = o->tag_match;
	cfg.tags = o->tags;
	cfg.tag_bits = o->tag_bits;
	cfg.tag_slots = o->tag_slots;
	cfg.tag_global = o->tag_global;
	cfg.tag_global_cpus = o->tag_global_cpus;
	cfg.tag_irq_load = o->tag_irq_load;
	cfg.window_events = o->window_events;
	cfg.ipi_delay_spins = o->ipi_delay;
	cfg.irqs_off_pct = o->irqs_off;
	cfg.migrate_pct = o->migrate;
	cfg.wait_limit = o->wait_limit;
	cfg.free_ticks = o->free_ticks;
	cfg.stall_secs = o->stall_secs;
	cfg.batch_pages = o->batch;
	cfg.store_first = o->store_first;
	cfg.kernel_pages = o->kernel_pages;
	if (o->pages)
		cfg.pages = o->pages;
	cfg.seed = o->seed ^ (mask * 0x9E3779B97F4A7C15ULL);
	r = orc_world_new(&cfg, &w);
	if (r) {
		fprintf(stderr, "stress: orc_world_new: %s\n", strerror(-r));
		return -1;
	}
	memset(&sh, 0, sizeof(sh));
	for (uint32_t x = 0; x < ORC_MAX_AS; x++)
		atomic_store(&sh.hot[x], x * 37 % cfg.pages);
	for (uint32_t i = 0; i < o->cpus; i++) {
		thr[i].w = w;
		thr[i].sh = &sh;
		thr[i].p = o->prof;
		thr[i].cpu = i;
		thr[i].steps = o->events / o->cpus + (i < o->events % o->cpus);
		if (pthread_create(&thr[i].th, NULL, cpu_main, &thr[i])) {
			fprintf(stderr, "stress: pthread_create failed\n");
			exit(2);
		}
	}
	for (uint32_t i = 0; i < o->cpus; i++)
		pthread_join(thr[i].th, NULL);
	res->secs = now_s() - t0;
	orc_read_counters(w, res->c, res->v);
	res->viol = orc_violations(w);
	tlbpol_stats_read(orc_engine(w), -1, &st);
	if (orc_tags(w)) {
		struct tlbpol_tags_stats ts = { .size = sizeof(ts) };

		tlbpol_tags_stats_read(orc_tags(w), -1, &ts);
		res->tag_flushes = ts.tag_flushes;
		res->all_flushes = ts.all_flushes;
		res->rollovers = ts.rollovers;
	}
	if (!o->quiet || res->viol)
		printf("cpus=%u arch=%s retain=%d wait_irqs=%d profile=%s rules=%#06" PRIx64
		       "(%s) events=%" PRIu64
		       " ipis=%" PRIu64 " flushes=%" PRIu64 " broadcasts=%" PRIu64
		       " catchups=%" PRIu64 " lazy_skipped=%" PRIu64 " checks=%" PRIu64
		       " excused=%" PRIu64 " violations=%" PRIu64 " frees=%" PRIu64 "/%" PRIu64
		       " migrated=%" PRIu64 " enoent=%" PRIu64 " holds=%" PRIu64 " time=%.2fs\n",
		       o->cpus, orc_arch_name(o->arch), o->retain, o->wait_irqs, o->prof->name, mask,
		       mask_name,
		       res->c[ORC_C_EVENTS], res->c[ORC_C_IPIS], res->c[ORC_C_FLUSHES],
		       res->c[ORC_C_BROADCASTS], res->c[ORC_C_CATCHUPS], st.lazy_skipped,
		       res->c[ORC_C_CHECKS], res->c[ORC_C_EXCUSED], res->viol,
		       res->c[ORC_C_FREES_RUN], res->c[ORC_C_FREES_REG], res->c[ORC_C_MIGRATED],
		       res->c[ORC_C_MIGR_ENOENT], res->c[ORC_C_HOLDS], res->secs);
	if (o->verbose) {
		static const char *const cn[ORC_C_MAX] = {
			"events", "accesses", "hits", "walks", "spec_walks", "faults", "segv", "submits",
			"deferred", "ipis", "ipis_taken", "flushes", "broadcasts", "catchups",
			"frees_reg", "frees_run", "busy", "checks", "excused", "warnings", "kaccesses",
			"negative", "stamped", "settles", "settle_waits", "irqs_off_calls", "aged",
			"migrated", "migr_enoent", "holds", "hold_kicks", "settles_own", "held_settles", "lockless",
			"walker_syncs", "tag_moves",
		};

		printf("  counters:");
		for (int k = 0; k < ORC_C_MAX; k++)
			printf(" %s=%" PRIu64, cn[k], res->c[k]);
		printf("\n  engine: events=%" PRIu64 " avoided=%" PRIu64 " local=%" PRIu64
		       " remote=%" PRIu64 " ipis=%" PRIu64 " broadcasts=%" PRIu64 " full=%" PRIu64
		       " coalesced=%" PRIu64 " gen_skipped=%" PRIu64 " lazy_skipped=%" PRIu64
		       " dfrees=%" PRIu64 "\n",
		       st.events, st.flushes_avoided, st.local_flushes, st.remote_flushes,
		       st.ipis_sent, st.broadcasts, st.full_flushes, st.coalesced, st.gen_skipped,
		       st.lazy_skipped, st.deferred_frees);
	}
	if (res->viol) {
		printf("  violations:");
		for (int k = 0; k < ORC_V_MAX; k++)
			if (res->v[k])
				printf(" %s=%" PRIu64, orc_vkind_name((enum orc_vkind)k), res->v[k]);
		printf("\n  reproduce (ORC_TRACE=1 also prints the last events): stress --cpus %u --events %" PRIu64
		       " --rules %#" PRIx64 " --arch %s --seed %" PRIu64 "%s%s --profile %s"
		       " --batch %u --ipi-delay %u --irqs-off %u --wait-limit %u --free-ticks %u"
		       " --migrate %u%s%s --bcast-cost %u%s%s%s%s%s\n",
		       o->cpus, o->events, mask, orc_arch_name(o->arch), o->seed,
		       o->retain ? " --retain" : "", o->wait_irqs ? " --wait-irqs" : "",
		       o->prof->name, o->batch, o->ipi_delay, o->irqs_off, o->wait_limit,
		       o->free_ticks, o->migrate, o->broadcast ? "" : " --no-broadcast",
		       o->split ? " --split" : "", o->bcast_cost, o->walkers == 1 ? " --walkers" : o->walkers ? " --walkers-undeclared" : "",
		       o->walker_sync ? " --walker-sync" : "", o->svvptc ? " --svvptc" : "",
		       o->remote ? " --remote" : "", o->tag_match ? " --bcast-tag-match" : "");
		if (o->tags)
			printf("  with --tags %s --tag-bits %u --tag-slots %u --tag-global %u"
			       " --tag-global-cpus %u%s\n",
			       o->tags == TLBPOL_TAGS_PERCPU + 1 ? "percpu" : "global", o->tag_bits,
			       o->tag_slots, o->tag_global, o->tag_global_cpus,
			       o->tag_irq_load ? " --tag-irq-load" : "");
		if (o->window_events)
			printf("  with --window %u\n", o->window_events);
	}
	fflush(stdout);
	orc_transitions(w, res->trans);
	orc_world_free(w);
	return 0;
}

/*
 * The transitions of tlbpol_cpu_state()'s matrix a profile must cover
 * (profile.matrix): from RUNNING, IDLE and PREEMPTED to each state, with
 * an address space kept loaded while lazy and without; from OFFLINE
 * (nothing loaded) to each.  Prints the cells never visited; returns how
 * many.
 */
static int matrix_gaps(uint64_t m[2][4][4], int verbose)
{
	static const char *const sn[4] = { "RUNNING", "IDLE", "PREEMPTED", "OFFLINE" };
	int gaps = 0, cells = 0;

	for (int l = 0; l < 2; l++)
		for (int f = 0; f < 4; f++)
			for (int t = 0; t < 4; t++) {
				if (l && f == TLBPOL_CPU_OFFLINE)
					continue;
				cells++;
				if (verbose)
					printf("  transition %s%s -> %s: %" PRIu64 "\n", l ? "lazy " : "",
					       sn[f], sn[t], m[l][f][t]);
				if (!m[l][f][t]) {
					printf("  transition %s%s -> %s never made\n", l ? "lazy " : "",
					       sn[f], sn[t]);
					gaps++;
				}
			}
	printf("state transitions: %d of %d covered\n", cells - gaps, cells);
	return gaps;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct result tot;
	double t0 = now_s();
	uint64_t events = 0, lost = 0, trans[2][4][4] = { { { 0 } } };
	int gaps = 0;

	stress_options(&o, argc, argv);
	memset(&tot, 0, sizeof(tot));
	for (uint32_t m = 0; m < o.nmasks; m++) {
		struct result r;

		if (run_one(&o, o.masks[m], o.mask_names[m], &r))
			return 2;
		events += r.c[ORC_C_EVENTS];
		tot.viol += r.viol;
		tot.tag_flushes += r.tag_flushes;
		tot.all_flushes += r.all_flushes;
		tot.rollovers += r.rollovers;
		for (int k = 0; k < ORC_C_MAX; k++)
			tot.c[k] += r.c[k];
		if (r.c[ORC_C_FREES_RUN] != r.c[ORC_C_FREES_REG])
			lost++;
		for (int l = 0; l < 2; l++)
			for (int f = 0; f < 4; f++)
				for (int t = 0; t < 4; t++)
					trans[l][f][t] += r.trans[l][f][t];
	}
	if (o.prof->matrix || o.verbose)
		gaps = matrix_gaps(trans, o.verbose);
	if (!o.prof->matrix)
		gaps = 0;
	printf("total: cpus=%u arch=%s retain=%d wait_irqs=%d configs=%u events=%" PRIu64
	       " ipis=%" PRIu64
	       " flushes=%" PRIu64 " violations=%" PRIu64 " frees=%" PRIu64 "/%" PRIu64
	       " migrated=%" PRIu64 " enoent=%" PRIu64 " holds=%" PRIu64 " held_settles=%" PRIu64
	       " time=%.2fs\n",
	       o.cpus, orc_arch_name(o.arch), o.retain, o.wait_irqs, o.nmasks, events,
	       tot.c[ORC_C_IPIS],
	       tot.c[ORC_C_FLUSHES], tot.viol, tot.c[ORC_C_FREES_RUN], tot.c[ORC_C_FREES_REG],
	       tot.c[ORC_C_MIGRATED], tot.c[ORC_C_MIGR_ENOENT], tot.c[ORC_C_HOLDS],
	       tot.c[ORC_C_HELD_SETTLES], now_s() - t0);
	if (o.tags)
		printf("tags: %s, %u address spaces, tag flushes=%" PRIu64 " flushes of all=%" PRIu64
		       " rollovers=%" PRIu64 "\n",
		       o.tags == TLBPOL_TAGS_PERCPU + 1 ? "per-CPU slots" : "global generations",
		       o.nr_as ? o.nr_as : o.prof->nr_as, tot.tag_flushes, tot.all_flushes,
		       tot.rollovers);
	if (o.expect) {
		if (tot.viol) {
			printf("planted bug detected: %" PRIu64 " violations (expected)\n", tot.viol);
			return 0;
		}
		printf("planted bug NOT detected: the oracle reported no violation\n");
		return 1;
	}
	return tot.viol || lost || gaps ? 1 : 0;
}
