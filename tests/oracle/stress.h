/* SPDX-License-Identifier: MIT */
/*
 * stress.h - the stress driver's own declarations: what a workload profile
 * weighs, what the command line chose, and what the CPU threads share.
 * stress.c runs one world per rule mask and prints the summaries,
 * options.c reads the command line, profiles.c weighs the mixes,
 * workload.c is what each CPU thread does, vcpus.c its descheduled vCPUs.
 * They drive the model machine through oracle.h only, so that the oracle
 * checks a workload it did not write.
 */
#ifndef TLBPOL_STRESS_H
#define TLBPOL_STRESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "oracle.h"

/* How a CPU spends its steps, in parts per thousand (running) or percent. */
struct profile {
	const char *name;
	uint32_t nr_as;
	/* a running CPU's step */
	unsigned access, spec, change, tick, flush, sw, lazy, idle, preempt, offline, hvpreempt,
		audit, kaccess, compute;
	/* which change */
	unsigned populate, prot_down, prot_up, unmap, unmap_tables, unmap_big, reclaim, migrate,
		young, dirty, remap, cow, replace, dontneed, age_reclaim, kmap, kunmap, kprotect,
		attrs, retable;
	/* a lazy or idle CPU's step: speculative walk, tick, kswapd-like work,
	 * kernel access, a preemption while lazy (percent); how long it stays
	 * (steps) */
	unsigned lazy_spec, lazy_tick, lazy_work, lazy_kaccess, lazy_preempt, lazy_min, lazy_max;
	unsigned lazy_ok; /* percent of plain unmaps flagged LAZY_OK */
	/* A running CPU's step, continued: a walk through tlbpol_cpu_state()'s
	 * whole matrix (workload.c, walk_step()), a quiet spell. */
	unsigned states, quiet;
	/* A quiet spell: accesses and ticks only, no change and no flush, for
	 * quiet_min .. quiet_max steps, quiet_tick percent of them ticks --
	 * work due by a free is then left to age (liveness.c). */
	unsigned quiet_min, quiet_max, quiet_tick;
	unsigned idle_notick; /* an IDLE CPU never ticks (NO_HZ idle) */
	unsigned preempt_max; /* steps a walk stays PREEMPTED, 1 .. this (0: 6) */
	unsigned off_long;    /* percent of OFFLINE spells of 100 .. 1000 steps */
	/* tlbpol_flush() deadlines asked for: NOW, WRITEBACK, FREE, LAZY
	 * (all 0: 10, 20, 50, 20); a lazy kernel thread's flush too. */
	unsigned flush_mix[4];
	unsigned matrix; /* the run must cover every transition of the matrix */
	/* A running CPU's step, continued: a long preemption (vcpus.c,
	 * hold_step()), that lasts until every other CPU not held has made
	 * hold_min .. hold_max steps (or finished); hold_stamp percent of
	 * them right after a stamped unmap, whose lazy post another CPU is
	 * invited to be held with (and this one only half the time). */
	unsigned hold, hold_min, hold_max, hold_stamp;
};

/* The mixes --profile names, the first the default (profiles.c). */
extern const struct profile profiles[];
extern const size_t nr_profiles;

struct opts {
	uint32_t cpus;
	uint64_t events;
	uint32_t arch;
	uint64_t seed;
	int retain, wait_irqs, expect, broadcast, quiet, verbose, store_first;
	int split, walkers, walker_sync, svvptc, remote, tag_match; /* orc_config's */
	uint32_t bcast_cost, bcast_max_pages;
	uint32_t batch, kernel_pages, pages;
	uint32_t nr_as;
	uint32_t ipi_delay;
	uint32_t irqs_off, wait_limit, free_ticks; /* orc_config's irqs_off_pct, ... */
	uint32_t migrate; /* orc_config's migrate_pct */
	uint32_t tags, tag_bits, tag_slots, tag_global, tag_global_cpus; /* orc_config's */
	int tag_irq_load; /* orc_config's */
	uint32_t window_events; /* orc_config's */
	double stall_secs;
	const struct profile *prof;
	uint64_t masks[64];
	const char *mask_names[64];
	uint32_t nmasks;
};

/* Fill @o from the command line, defaults first, $TLBPOL_STRESS_SCALE
 * applied; --help exits 0, a bad option or value 2 (options.c). */
void stress_options(struct opts *o, int argc, char **argv);

/* Where the traffic of each address space is: a window of pages that every
 * CPU running it favours, drifting slowly, so that CPUs cache the same pages
 * and page-table changes hit pages others have cached. */
struct shared {
	_Atomic uint32_t hot[ORC_MAX_AS];
	/* Long preemptions (hold_step()): each CPU's steps so far, whether it
	 * finished them or is held, how many are; an invitation to be held
	 * with a stamp's lazy post, the invitations made, the latest posted. */
	_Atomic uint64_t steps[ORC_MAX_CPUS];
	_Atomic int finished[ORC_MAX_CPUS], holding[ORC_MAX_CPUS];
	_Atomic uint32_t nheld;
	_Atomic uint64_t invite, invites, posted;
};

/* One CPU thread's part. */
struct thr {
	struct orc_world *w;
	struct shared *sh;
	const struct profile *p;
	uint32_t cpu;
	uint64_t steps;
	pthread_t th;
};

/* The thread acting as CPU t->cpu, for t->steps steps (workload.c). */
void *cpu_main(void *arg);

/* The width of each address space's hot window (struct shared). */
#define HOT_PAGES 16

/* A number below @n from @cpu's generator (0 for 0). */
static inline uint64_t rnd(struct orc_world *w, uint32_t cpu, uint64_t n)
{
	return n ? orc_rand(w, cpu) % n : 0;
}

/* A page of @as, mostly in its hot window (workload.c). */
uint32_t some_page(struct orc_world *w, uint32_t cpu, struct shared *sh, uint32_t as);

/* vcpus.c: the vCPU descheduled for a few turns, the engine @told or not;
 * a long preemption step; a CPU that took an invitation to one. */
void deschedule(struct orc_world *w, uint32_t cpu, int told);
void hold_step(struct orc_world *w, uint32_t cpu, struct shared *sh, const struct profile *p);
void join_hold(struct orc_world *w, uint32_t cpu, struct shared *sh, const struct profile *p,
	       uint64_t seq);

#endif /* TLBPOL_STRESS_H */
