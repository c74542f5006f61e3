/* SPDX-License-Identifier: MIT */
/*
 * stress: threads acting as CPUs run a random mix of accesses, page-table
 * changes, context switches and CPU state changes on the oracle's model
 * machine (oracle.h), for one or many rule masks, and report what the oracle
 * found.
 *
 *   stress --cpus N --events M --rules SPEC --arch x86|arm64|generic
 *          --seed S [--retain] [--profile normal|switch|planted|lazy|wide|compute]
 *          [--expect-violations] [--no-broadcast] [--ipi-delay SPINS] [--as K] [--quiet]
 *
 * --events is the number of workload steps per configuration, over all
 * CPUs, before scaling by $TLBPOL_STRESS_SCALE (default 1, 0.1 in a
 * ThreadSanitizer build).  --rules is a comma-separated list of: all (the
 * 33 masks below), none, linux, default, a number, or a rule name (e.g.
 * lazy_cpus) alone or as default-NAME.  "all" means: TLBPOL_RULES_NONE, each
 * single rule bit alone, TLBPOL_RULES_DEFAULT less each single bit,
 * TLBPOL_RULES_LINUX, TLBPOL_RULES_DEFAULT.
 *
 * One summary line per configuration.  Exit status 1 if any configuration
 * had a violation or a deferred free that did not run exactly once; with
 * --expect-violations (the planted-bug check) the other way round: 0 only if
 * the oracle reported violations.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oracle.h"

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
};

static const struct profile profiles[] = {
	{
		.name = "normal",
		.nr_as = 3,
		.access = 560, .spec = 20, .change = 250, .tick = 40, .flush = 30, .sw = 15,
		.lazy = 15, .idle = 15, .preempt = 15, .offline = 2, .hvpreempt = 15, .audit = 10,
		.kaccess = 40, .compute = 3,
		.populate = 8, .prot_down = 12, .prot_up = 8, .unmap = 12, .unmap_tables = 6,
		.unmap_big = 3, .reclaim = 10, .migrate = 7, .young = 10, .dirty = 8,
		.remap = 5, .cow = 5, .replace = 3, .dontneed = 6, .age_reclaim = 10, .kmap = 3,
		.kunmap = 3, .kprotect = 3, .attrs = 3, .retable = 3,
		.lazy_spec = 30, .lazy_tick = 10, .lazy_work = 10, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 40, .lazy_ok = 25,
	},
	{
		/* Address-space switches dominate: CPUs come back to address
		 * spaces they left (with --retain, entries kept under their
		 * tag) while others change them, which is where catch-up
		 * generations race with shootdowns. */
		.name = "switch",
		.nr_as = 2,
		.access = 400, .spec = 10, .change = 300, .tick = 20, .flush = 20, .sw = 200,
		.lazy = 20, .idle = 10, .preempt = 10, .offline = 1, .hvpreempt = 10, .audit = 10,
		.kaccess = 30, .compute = 2,
		.populate = 8, .prot_down = 20, .prot_up = 10, .unmap = 12, .unmap_tables = 4,
		.unmap_big = 2, .reclaim = 8, .migrate = 4, .young = 4, .dirty = 8,
		.remap = 4, .cow = 4, .replace = 2, .dontneed = 4, .age_reclaim = 2, .kmap = 3,
		.kunmap = 3, .kprotect = 3, .attrs = 2, .retable = 2,
		.lazy_spec = 30, .lazy_tick = 10, .lazy_work = 10, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 30, .lazy_ok = 25,
	},
	{
		/* The planted bug (lazy CPUs spared the flush of freed page
		 * tables) shows only where lazy CPUs walk address spaces whose
		 * tables others free: few address spaces, long lazy spells,
		 * speculative walks, many table frees. */
		.name = "planted",
		.nr_as = 2,
		.access = 300, .spec = 30, .change = 330, .tick = 40, .flush = 30, .sw = 10,
		.lazy = 60, .idle = 60, .preempt = 5, .offline = 0, .audit = 5,
		.populate = 25, .prot_down = 3, .prot_up = 2, .unmap = 5, .unmap_tables = 40,
		.unmap_big = 5, .reclaim = 3, .migrate = 2, .young = 3, .dirty = 2,
		.remap = 2, .cow = 2, .replace = 1,
		.lazy_spec = 70, .lazy_tick = 5, .lazy_work = 0, .lazy_min = 20, .lazy_max = 120,
		.lazy_ok = 25,
	},
	{
		/* LAZY_OK work in small batches (run it with --batch): lazy
		 * requests in flight across ticks, deferred frees registered
		 * right after the tick that posted them, kernel pages purged
		 * lazily. */
		.name = "lazy",
		.nr_as = 2,
		.access = 450, .spec = 20, .change = 300, .tick = 80, .flush = 20, .sw = 10,
		.lazy = 20, .idle = 20, .preempt = 10, .offline = 1, .hvpreempt = 5, .audit = 10,
		.kaccess = 40, .compute = 3,
		.populate = 20, .prot_down = 5, .prot_up = 3, .unmap = 30, .unmap_tables = 6,
		.unmap_big = 3, .reclaim = 6, .migrate = 3, .young = 3, .dirty = 2,
		.remap = 2, .cow = 2, .replace = 1, .dontneed = 4, .age_reclaim = 2, .kmap = 4,
		.kunmap = 4, .kprotect = 1,
		.lazy_spec = 30, .lazy_tick = 20, .lazy_work = 5, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 30, .lazy_ok = 80,
	},
	{
		/* Batches past their entry capacity (TLBPOL__RANGES(), 66 at
		 * the defaults): scattered reclaims pile up between rare ticks
		 * and flushes, in address spaces larger than the hot window, so
		 * events widen entries and full batches complete early.  Run it
		 * with --pages 1024. */
		.name = "wide",
		.nr_as = 2,
		.access = 300, .spec = 10, .change = 600, .tick = 1, .flush = 1, .sw = 5,
		.lazy = 5, .idle = 5, .preempt = 5, .offline = 0, .hvpreempt = 2, .audit = 5,
		.kaccess = 10, .compute = 1,
		.populate = 3, .prot_down = 1, .prot_up = 1, .unmap = 2, .unmap_tables = 0,
		.unmap_big = 0, .reclaim = 100, .migrate = 1, .young = 2, .dirty = 1,
		.remap = 0, .cow = 1, .replace = 0, .dontneed = 1, .age_reclaim = 2, .kmap = 0,
		.kunmap = 0, .kprotect = 0, .attrs = 0,
		.lazy_spec = 30, .lazy_tick = 2, .lazy_work = 5, .lazy_kaccess = 10,
		.lazy_preempt = 1, .lazy_min = 5, .lazy_max = 20, .lazy_ok = 25,
	},
	{
		/* Liveness: long compute spells (accesses only, interrupts
		 * between them), CPUs waiting for each other's shootdowns. */
		.name = "compute",
		.nr_as = 2,
		.access = 400, .spec = 10, .change = 300, .tick = 5, .flush = 10, .sw = 5,
		.lazy = 5, .idle = 5, .preempt = 2, .offline = 0, .hvpreempt = 2, .audit = 5,
		.kaccess = 20, .compute = 40,
		.populate = 20, .prot_down = 30, .prot_up = 10, .unmap = 20, .unmap_tables = 4,
		.unmap_big = 2, .reclaim = 4, .migrate = 2, .young = 2, .dirty = 4,
		.remap = 2, .cow = 4, .replace = 2, .dontneed = 10, .age_reclaim = 1, .kmap = 2,
		.kunmap = 2, .kprotect = 4, .attrs = 2, .retable = 2,
		.lazy_spec = 30, .lazy_tick = 5, .lazy_work = 5, .lazy_kaccess = 15,
		.lazy_preempt = 1, .lazy_min = 5, .lazy_max = 20, .lazy_ok = 25,
	},
};

struct opts {
	uint32_t cpus;
	uint64_t events;
	uint32_t arch;
	uint64_t seed;
	int retain, expect, broadcast, quiet, verbose, store_first;
	uint32_t batch, kernel_pages, pages;
	uint32_t nr_as;
	uint32_t ipi_delay;
	const struct profile *prof;
	uint64_t masks[64];
	const char *mask_names[64];
	uint32_t nmasks;
};

/* Where the traffic of each address space is: a window of pages that every
 * CPU running it favours, drifting slowly, so that CPUs cache the same pages
 * and page-table changes hit pages others have cached. */
struct shared {
	_Atomic uint32_t hot[ORC_MAX_AS];
};

#define HOT_PAGES 16

struct thr {
	struct orc_world *w;
	struct shared *sh;
	const struct profile *p;
	uint32_t cpu;
	uint64_t steps;
	pthread_t th;
};

static uint64_t rnd(struct orc_world *w, uint32_t cpu, uint64_t n)
{
	return n ? orc_rand(w, cpu) % n : 0;
}

/* Pick index i with probability weights[i] / sum. */
static unsigned pick(struct orc_world *w, uint32_t cpu, const unsigned *weights, unsigned n)
{
	unsigned sum = 0, r;

	for (unsigned i = 0; i < n; i++)
		sum += weights[i];
	r = (unsigned)rnd(w, cpu, sum);
	for (unsigned i = 0; i < n; i++) {
		if (r < weights[i])
			return i;
		r -= weights[i];
	}
	return n - 1;
}

static uint32_t some_page(struct orc_world *w, uint32_t cpu, struct shared *sh, uint32_t as)
{
	uint32_t pages = orc_world_config(w)->pages;

	if (rnd(w, cpu, 4) != 0)
		return (atomic_load(&sh->hot[as]) + (uint32_t)rnd(w, cpu, HOT_PAGES)) % pages;
	return (uint32_t)rnd(w, cpu, pages);
}

static void drift(struct orc_world *w, uint32_t cpu, struct shared *sh, uint32_t as)
{
	uint32_t pages = orc_world_config(w)->pages;

	atomic_store(&sh->hot[as], (atomic_load(&sh->hot[as]) + pages - 4 +
				    (uint32_t)rnd(w, cpu, 9)) % pages);
}

/* Changes mostly in the running address space; switches favour address
 * space 0, so that CPUs share one often. */
static uint32_t some_as(struct orc_world *w, uint32_t cpu)
{
	int cur = orc_cpu_as(w, cpu);

	if (cur >= 0 && rnd(w, cpu, 4) != 0)
		return (uint32_t)cur;
	return (uint32_t)rnd(w, cpu, orc_world_config(w)->nr_as);
}

static int switch_target(struct orc_world *w, uint32_t cpu)
{
	if (rnd(w, cpu, 2))
		return 0;
	return (int)rnd(w, cpu, orc_world_config(w)->nr_as);
}

/* A kernel page, and a kernel access (reads mostly) by any CPU that runs. */
static uint32_t some_kpage(struct orc_world *w, uint32_t cpu)
{
	uint32_t k = orc_world_config(w)->kernel_pages;

	return k ? (uint32_t)rnd(w, cpu, k) : 0;
}

static void kaccess(struct orc_world *w, uint32_t cpu)
{
	if (!orc_world_config(w)->kernel_pages)
		return;
	if (rnd(w, cpu, 4) == 0)
		orc_kspec_walk(w, cpu, some_kpage(w, cpu));
	else
		orc_kaccess(w, cpu, some_kpage(w, cpu), rnd(w, cpu, 3) ? ORC_READ : ORC_WRITE);
}

static void do_change(struct orc_world *w, uint32_t cpu, struct shared *sh,
		      const struct profile *p)
{
	const unsigned wts[] = { p->populate, p->prot_down, p->prot_up, p->unmap, p->unmap_tables,
				 p->unmap_big, p->reclaim, p->migrate, p->young, p->dirty,
				 p->remap, p->cow, p->replace, p->dontneed, p->age_reclaim,
				 p->kmap, p->kunmap, p->kprotect, p->attrs, p->retable };
	uint32_t via = (uint32_t)rnd(w, cpu, orc_world_config(w)->nr_as);
	uint32_t as = some_as(w, cpu), page = some_page(w, cpu, sh, as);
	uint32_t gp = orc_world_config(w)->group_pages;
	uint32_t n = 1 + (uint32_t)rnd(w, cpu, 8), bits;

	switch (pick(w, cpu, wts, sizeof(wts) / sizeof(wts[0]))) {
	case 0:
		orc_populate(w, cpu, as, page, n);
		break;
	case 1: /* downgrade: mprotect or write-protect */
		bits = rnd(w, cpu, 10) < 6 ? TLBPOL_PTE_WRITE : 0;
		if (rnd(w, cpu, 4) == 0)
			bits |= TLBPOL_PTE_EXEC;
		if (rnd(w, cpu, 8) == 0 || !bits)
			bits |= TLBPOL_PTE_USER;
		if (rnd(w, cpu, 6) == 0)
			n += 30; /* over the flush ceiling */
		orc_protect(w, cpu, as, page, n, bits, 0,
			    !(bits & TLBPOL_PTE_USER) && rnd(w, cpu, 3) == 0);
		break;
	case 2: /* upgrade */
		bits = TLBPOL_PTE_WRITE;
		if (rnd(w, cpu, 3) == 0)
			bits |= TLBPOL_PTE_EXEC;
		if (rnd(w, cpu, 3) == 0)
			bits |= TLBPOL_PTE_USER;
		orc_protect(w, cpu, as, page, n, 0, bits, rnd(w, cpu, 3) == 0);
		break;
	case 3:
		orc_unmap(w, cpu, as, page, n,
			  rnd(w, cpu, 100) < p->lazy_ok ? TLBPOL_EVF_LAZY_OK : 0,
			  rnd(w, cpu, 2) == 0);
		break;
	case 4:
		orc_unmap(w, cpu, as, page, gp * (1 + (uint32_t)rnd(w, cpu, 2)),
			  TLBPOL_EVF_TABLES_FREED | (rnd(w, cpu, 5) == 0 ? TLBPOL_EVF_LAZY_OK : 0),
			  rnd(w, cpu, 2) == 0);
		break;
	case 5:
		orc_unmap(w, cpu, as, page, 34 + (uint32_t)rnd(w, cpu, 30),
			  (rnd(w, cpu, 3) == 0 ? TLBPOL_EVF_TABLES_FREED : 0) |
				  (rnd(w, cpu, 4) == 0 ? TLBPOL_EVF_LAZY_OK : 0),
			  rnd(w, cpu, 2) == 0);
		break;
	case 6:
		orc_reclaim(w, cpu, as, page);
		break;
	case 7:
		orc_migrate(w, cpu, as, page);
		break;
	case 8:
		orc_clear_young(w, cpu, as, page, n * 2);
		break;
	case 9:
		orc_clear_dirty(w, cpu, as, page, n, (int)rnd(w, cpu, 2));
		break;
	case 10:
		orc_remap(w, cpu, as, page, some_page(w, cpu, sh, as));
		break;
	case 11:
		orc_change_frame(w, cpu, as, page, 1);
		break;
	case 12:
		orc_change_frame(w, cpu, as, page, 0);
		break;
	case 13:
		orc_dontneed(w, cpu, as, page, n);
		break;
	case 14: /* kswapd: a page aged, and reclaimed before it is used again */
		orc_clear_young(w, cpu, as, page, 1);
		orc_reclaim(w, cpu, as, page);
		break;
	case 15: /* vmap, through whichever address space */
		orc_kmap(w, cpu, via, some_kpage(w, cpu), n);
		break;
	case 16: /* vunmap, now and then lazily (vmap's lazy purge) */
		orc_kunmap(w, cpu, via, some_kpage(w, cpu), n, rnd(w, cpu, 3) == 0);
		break;
	case 17: /* set_memory_ro() / set_memory_rw() */
		orc_kprotect(w, cpu, via, some_kpage(w, cpu), n, rnd(w, cpu, 2) == 0);
		break;
	case 18: /* a memory type or protection key; a huge page split */
		orc_attrs(w, cpu, as, page, n);
		break;
	default: { /* a table page replaced by a copy, reported by one of these */
		static const uint32_t kinds[] = { TLBPOL_EV_FAULT, TLBPOL_EV_PROTECT,
						  TLBPOL_EV_CLEAR_YOUNG };

		orc_retable(w, cpu, as, page, kinds[rnd(w, cpu, 3)]);
		break;
	}
	}
}

static void do_flush(struct orc_world *w, uint32_t cpu)
{
	static const unsigned wts[] = { 10, 20, 50, 20 }; /* NOW, WRITEBACK, FREE, LAZY */

	orc_flush(w, cpu, pick(w, cpu, wts, 4));
}

/* Idle, lazy (switched to NULL), or both: answer interrupts, walk
 * speculatively, tick now and then; a lazy kernel thread (kswapd) also
 * reclaims and ages pages. */
static void lazy_step(struct orc_world *w, uint32_t cpu, struct shared *sh,
		      const struct profile *p)
{
	uint32_t r = (uint32_t)rnd(w, cpu, 100);
	uint32_t spec = p->lazy_spec, kacc = spec + p->lazy_kaccess, pre = kacc + p->lazy_preempt;
	uint32_t tick = pre + p->lazy_tick, work = tick + p->lazy_work;
	int loaded = orc_cpu_loaded(w, cpu);

	if (r < spec) {
		if (loaded >= 0)
			orc_spec_walk(w, cpu, some_page(w, cpu, sh, (uint32_t)loaded));
	} else if (r < kacc) {
		/* An idle loop, a kernel thread: kernel code, kernel pages. */
		kaccess(w, cpu);
	} else if (r < pre) {
		/* The vCPU is descheduled while lazy or idle, then runs again. */
		uint32_t st = orc_cpu_state(w, cpu);

		orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED);
		sched_yield();
		orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
		if (st == TLBPOL_CPU_IDLE)
			orc_set_state(w, cpu, TLBPOL_CPU_IDLE);
	} else if (r < tick) {
		orc_tick(w, cpu);
	} else if (r < work && orc_cpu_state(w, cpu) == TLBPOL_CPU_RUNNING) {
		uint32_t as = (uint32_t)rnd(w, cpu, orc_world_config(w)->nr_as);

		switch (rnd(w, cpu, 4)) {
		case 0:
			orc_reclaim(w, cpu, as, some_page(w, cpu, sh, as));
			break;
		case 1:
			orc_migrate(w, cpu, as, some_page(w, cpu, sh, as));
			break;
		case 2:
			orc_clear_young(w, cpu, as, some_page(w, cpu, sh, as), 16);
			break;
		default:
			orc_flush(w, cpu, TLBPOL_BY_FREE);
			break;
		}
	} else if (r == 99 && orc_cpu_as(w, cpu) < 0 && orc_cpu_loaded(w, cpu) >= 0) {
		orc_unload(w, cpu);
	} else {
		sched_yield();
	}
}

/* Leave a lazy spell: back to RUNNING, back to an address space. */
static void wake(struct orc_world *w, uint32_t cpu)
{
	int loaded = orc_cpu_loaded(w, cpu);

	if (orc_cpu_state(w, cpu) != TLBPOL_CPU_RUNNING)
		orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
	if (orc_cpu_as(w, cpu) < 0)
		orc_switch(w, cpu, loaded >= 0 && rnd(w, cpu, 3) != 0 ? loaded : switch_target(w, cpu));
}

static void *cpu_main(void *arg)
{
	struct thr *t = arg;
	struct orc_world *w = t->w;
	struct shared *sh = t->sh;
	const struct profile *p = t->p;
	uint32_t cpu = t->cpu, nr_as = orc_world_config(w)->nr_as;
	const unsigned wts[] = { p->access, p->spec, p->change, p->tick, p->flush, p->sw,
				 p->lazy, p->idle, p->preempt, p->offline, p->hvpreempt, p->audit,
				 p->kaccess, p->compute };
	uint64_t lazy_left = 0, off_left = 0;

	orc_cpu_bind(w, cpu);
	orc_switch(w, cpu, (int)(cpu % nr_as));
	orc_barrier(w, cpu);
	for (uint64_t i = 0; i < t->steps; i++) {
		orc_poll(w, cpu);
		/* More CPU threads than cores: give the others a turn now and
		 * then, so that they interleave finely, not a time slice apart. */
		if (rnd(w, cpu, 32) == 0)
			sched_yield();
		if (off_left) {
			/* Offline: takes no interrupts (polling is harmless: the
			 * engine must not have posted any). */
			if (!--off_left) {
				orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
				orc_switch(w, cpu, (int)rnd(w, cpu, nr_as));
			} else {
				sched_yield();
			}
			continue;
		}
		if (lazy_left) {
			lazy_step(w, cpu, sh, p);
			if (!--lazy_left)
				wake(w, cpu);
			continue;
		}
		if (rnd(w, cpu, 100) == 0 && orc_cpu_as(w, cpu) >= 0)
			drift(w, cpu, sh, (uint32_t)orc_cpu_as(w, cpu));
		switch (pick(w, cpu, wts, sizeof(wts) / sizeof(wts[0]))) {
		case 0: {
			static const unsigned aw[] = { 60, 32, 8 };
			int as = orc_cpu_as(w, cpu);

			if (as >= 0)
				orc_access(w, cpu, some_page(w, cpu, sh, (uint32_t)as),
					   (enum orc_access)pick(w, cpu, aw, 3));
			break;
		}
		case 1:
			if (orc_cpu_loaded(w, cpu) >= 0)
				orc_spec_walk(w, cpu,
					      some_page(w, cpu, sh, (uint32_t)orc_cpu_loaded(w, cpu)));
			break;
		case 2:
			do_change(w, cpu, sh, p);
			break;
		case 3:
			orc_tick(w, cpu);
			break;
		case 4:
			do_flush(w, cpu);
			break;
		case 5:
			orc_switch(w, cpu, switch_target(w, cpu));
			break;
		case 6: /* a kernel thread: lazy TLB */
			orc_switch(w, cpu, -1);
			lazy_left = p->lazy_min + rnd(w, cpu, p->lazy_max - p->lazy_min + 1);
			break;
		case 7: /* idle, with or without switching to NULL first */
			if (rnd(w, cpu, 2))
				orc_switch(w, cpu, -1);
			orc_set_state(w, cpu, TLBPOL_CPU_IDLE);
			lazy_left = p->lazy_min + rnd(w, cpu, p->lazy_max - p->lazy_min + 1);
			break;
		case 8: { /* the vCPU is descheduled: nothing at all, then back */
			uint64_t k = 1 + rnd(w, cpu, 6);

			orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED);
			while (k--)
				sched_yield();
			orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
			break;
		}
		case 9:
			orc_flush(w, cpu, TLBPOL_BY_LAZY);
			if (orc_switch(w, cpu, -1) == 0 &&
			    orc_set_state(w, cpu, TLBPOL_CPU_OFFLINE) == 0)
				off_left = 5 + rnd(w, cpu, 30);
			else
				wake(w, cpu);
			break;
		case 10: { /* descheduled by the hypervisor, the engine not told */
			uint64_t k = 1 + rnd(w, cpu, 6);

			orc_hv_preempt(w, cpu);
			while (k--)
				sched_yield();
			orc_hv_resume(w, cpu);
			break;
		}
		case 11:
			orc_audit(w, cpu);
			break;
		case 12:
			kaccess(w, cpu);
			break;
		default: { /* a compute spell: accesses only, interrupts between */
			uint64_t k = 100 + rnd(w, cpu, 300);
			int as = orc_cpu_as(w, cpu);

			while (as >= 0 && k--) {
				orc_poll(w, cpu);
				orc_access(w, cpu, some_page(w, cpu, sh, (uint32_t)as),
					   rnd(w, cpu, 3) ? ORC_READ : ORC_WRITE);
			}
			break;
		}
		}
	}
	orc_note_events(w, cpu, t->steps);
	orc_finish(w, cpu);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *arch_name(uint32_t arch)
{
	return arch == TLBPOL_ARCH_X86_64 ? "x86" : arch == TLBPOL_ARCH_ARM64 ? "arm64" : "generic";
}

struct result {
	uint64_t c[ORC_C_MAX], v[ORC_V_MAX], viol;
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
	cfg.flags = o->retain ? TLBPOL_CFGF_RETAIN_AS : 0;
	cfg.broadcast = o->broadcast;
	cfg.ipi_delay_spins = o->ipi_delay;
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
	if (!o->quiet || res->viol)
		printf("cpus=%u arch=%s retain=%d profile=%s rules=%#06" PRIx64 "(%s) events=%" PRIu64
		       " ipis=%" PRIu64 " flushes=%" PRIu64 " broadcasts=%" PRIu64
		       " catchups=%" PRIu64 " lazy_skipped=%" PRIu64 " checks=%" PRIu64
		       " excused=%" PRIu64 " violations=%" PRIu64 " frees=%" PRIu64 "/%" PRIu64
		       " time=%.2fs\n",
		       o->cpus, arch_name(o->arch), o->retain, o->prof->name, mask, mask_name,
		       res->c[ORC_C_EVENTS], res->c[ORC_C_IPIS], res->c[ORC_C_FLUSHES],
		       res->c[ORC_C_BROADCASTS], res->c[ORC_C_CATCHUPS], st.lazy_skipped,
		       res->c[ORC_C_CHECKS], res->c[ORC_C_EXCUSED], res->viol,
		       res->c[ORC_C_FREES_RUN], res->c[ORC_C_FREES_REG], res->secs);
	if (o->verbose) {
		static const char *const cn[ORC_C_MAX] = {
			"events", "accesses", "hits", "walks", "spec_walks", "faults", "segv", "submits",
			"deferred", "ipis", "ipis_taken", "flushes", "broadcasts", "catchups",
			"frees_reg", "frees_run", "busy", "checks", "excused", "warnings", "kaccesses",
			"negative",
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
		       " --rules %#" PRIx64 " --arch %s --seed %" PRIu64 "%s --profile %s\n",
		       o->cpus, o->events, mask, arch_name(o->arch), o->seed,
		       o->retain ? " --retain" : "", o->prof->name);
	}
	fflush(stdout);
	orc_world_free(w);
	return 0;
}

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

/*
 * A comma list of configurations: "all" (none, each rule alone, default
 * less each rule, linux, default), "default-RULE", or any mask
 * tlbpol_rules_parse() reads ("linux", "0x7fff", "linux+receiver-merge";
 * a rule alone is named only-RULE).
 */
static int parse_rules(struct opts *o, const char *spec)
{
	char buf[512], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t bit, m;
		char name[48];

		if (!strcmp(tok, "all")) {
			add_mask(o, TLBPOL_RULES_NONE, "none");
			for (int i = 0; i < 64; i++)
				if (TLBPOL_RULES_ALL & (1ULL << i)) {
					snprintf(name, sizeof(name), "only-%s", tlbpol_rule_str(1ULL << i));
					add_mask(o, 1ULL << i, name);
				}
			for (int i = 0; i < 64; i++)
				if (TLBPOL_RULES_ALL & (1ULL << i)) {
					snprintf(name, sizeof(name), "default-%s",
						 tlbpol_rule_str(1ULL << i));
					add_mask(o, TLBPOL_RULES_DEFAULT & ~(1ULL << i), name);
				}
			add_mask(o, TLBPOL_RULES_LINUX, "linux");
			add_mask(o, TLBPOL_RULES_DEFAULT, "default");
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

static void help(FILE *f, int rc)
{
	fprintf(f,
		"usage: stress --cpus N --events M --rules SPEC --arch x86|arm64|generic --seed S\n"
		"              [--retain] [--profile normal|switch|planted|lazy|wide|compute]\n"
		"              [--expect-violations] [--no-broadcast] [--ipi-delay SPINS] [--as K]\n"
		"              [--batch PAGES] [--pages PER_AS] [--kernel-pages N] [--store-first] [--quiet] [--verbose]\n"
		"  SPEC: comma list of all, default-RULE, or a mask tlbpol_rules_parse() reads\n"
		"        (none, linux, default, RULE, 0x7fff, linux+RULE ...)\n"
		"  $TLBPOL_STRESS_SCALE scales --events (default 1, 0.1 under TSan)\n");
	exit(rc);
}

static void usage(void)
{
	help(stderr, 2);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct result tot;
	double scale = STRESS_TSAN ? 0.1 : 1.0, t0 = now_s();
	const char *env = getenv("TLBPOL_STRESS_SCALE");
	uint64_t events = 0, lost = 0;

	memset(&o, 0, sizeof(o));
	memset(&tot, 0, sizeof(tot));
	o.cpus = 4;
	o.events = 20000;
	o.arch = TLBPOL_ARCH_X86_64;
	o.seed = 1;
	o.broadcast = 1;
	o.kernel_pages = 32;
	o.prof = &profiles[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--retain")) {
			o.retain = 1;
		} else if (!strcmp(a, "--expect-violations")) {
			o.expect = 1;
		} else if (!strcmp(a, "--store-first")) {
			o.store_first = 1;
		} else if (!strcmp(a, "--no-broadcast")) {
			o.broadcast = 0;
		} else if (!strcmp(a, "--ipi-delay")) {
			char *end;
			unsigned long d;

			if (!v)
				usage();
			d = strtoul(v, &end, 0);
			if (*end || end == v || d > UINT32_MAX)
				usage();
			o.ipi_delay = (uint32_t)d;
			i++;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help(stdout, 0);
		} else if (!strcmp(a, "--quiet")) {
			o.quiet = 1;
		} else if (!strcmp(a, "--verbose")) {
			o.verbose = 1;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--cpus")) {
			o.cpus = (uint32_t)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--events")) {
			o.events = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--seed")) {
			o.seed = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--batch")) {
			o.batch = (uint32_t)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--pages")) {
			o.pages = (uint32_t)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--kernel-pages")) {
			o.kernel_pages = (uint32_t)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--as")) {
			o.nr_as = (uint32_t)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--rules")) {
			if (parse_rules(&o, v))
				usage();
			i++;
		} else if (!strcmp(a, "--arch")) {
			if (!strcmp(v, "x86") || !strcmp(v, "x86_64"))
				o.arch = TLBPOL_ARCH_X86_64;
			else if (!strcmp(v, "arm64"))
				o.arch = TLBPOL_ARCH_ARM64;
			else if (!strcmp(v, "generic"))
				o.arch = TLBPOL_ARCH_GENERIC;
			else
				usage();
			i++;
		} else if (!strcmp(a, "--profile")) {
			o.prof = NULL;
			for (size_t k = 0; k < sizeof(profiles) / sizeof(profiles[0]); k++)
				if (!strcmp(v, profiles[k].name))
					o.prof = &profiles[k];
			if (!o.prof)
				usage();
			i++;
		} else {
			usage();
		}
	}
	if (!o.cpus || o.cpus > ORC_MAX_CPUS || o.nr_as > ORC_MAX_AS)
		usage();
	if (!o.nmasks)
		parse_rules(&o, "default");
	if (env && *env)
		scale = strtod(env, NULL);
	o.events = (uint64_t)((double)o.events * scale);
	if (o.events < 50ULL * o.cpus)
		o.events = 50ULL * o.cpus;

	for (uint32_t m = 0; m < o.nmasks; m++) {
		struct result r;

		if (run_one(&o, o.masks[m], o.mask_names[m], &r))
			return 2;
		events += r.c[ORC_C_EVENTS];
		tot.viol += r.viol;
		for (int k = 0; k < ORC_C_MAX; k++)
			tot.c[k] += r.c[k];
		if (r.c[ORC_C_FREES_RUN] != r.c[ORC_C_FREES_REG])
			lost++;
	}
	printf("total: cpus=%u arch=%s retain=%d configs=%u events=%" PRIu64 " ipis=%" PRIu64
	       " flushes=%" PRIu64 " violations=%" PRIu64 " frees=%" PRIu64 "/%" PRIu64
	       " time=%.2fs\n",
	       o.cpus, arch_name(o.arch), o.retain, o.nmasks, events, tot.c[ORC_C_IPIS],
	       tot.c[ORC_C_FLUSHES], tot.viol, tot.c[ORC_C_FREES_RUN], tot.c[ORC_C_FREES_REG],
	       now_s() - t0);
	if (o.expect) {
		if (tot.viol) {
			printf("planted bug detected: %" PRIu64 " violations (expected)\n", tot.viol);
			return 0;
		}
		printf("planted bug NOT detected: the oracle reported no violation\n");
		return 1;
	}
	return tot.viol || lost ? 1 : 0;
}
