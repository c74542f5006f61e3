/* SPDX-License-Identifier: MIT */
/*
 * workload.c - what each CPU thread of the stress driver does: a random
 * mix of accesses, page-table changes, switches, ticks, flushes and CPU
 * state changes, weighed by a profile, every choice drawn from the CPU's
 * own generator (orc_rand()) so that a seed names the whole workload.
 * Traffic gathers in a slowly drifting window of hot pages per address
 * space and switches favour address space 0, so that CPUs cache the same
 * pages and changes hit pages others have cached: the engine's decisions
 * matter only where the mix makes them.
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>

#include "stress.h"

const struct profile profiles[] = {
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

const size_t nr_profiles = sizeof(profiles) / sizeof(profiles[0]);

/* The width of each address space's hot window (struct shared). */
#define HOT_PAGES 16

/* A number below @n from @cpu's generator (0 for 0). */
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
			  rnd(w, cpu, 100) < orc_world_config(w)->stamp_pct ? TLBPOL_EVF_STAMP
			  : rnd(w, cpu, 100) < p->lazy_ok     ? TLBPOL_EVF_LAZY_OK
							      : 0,
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
				  (rnd(w, cpu, 4) == 0 ? TLBPOL_EVF_LAZY_OK : 0) |
				  (rnd(w, cpu, 100) < orc_world_config(w)->stamp_pct ? TLBPOL_EVF_STAMP : 0),
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

/* The vCPU is descheduled for a few turns: the engine is @told (PREEMPTED,
 * then RUNNING again), or only the hypervisor knows (orc_hv_preempt()). */
static void deschedule(struct orc_world *w, uint32_t cpu, int told)
{
	uint64_t k = 1 + rnd(w, cpu, 6);

	if (told)
		orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED);
	else
		orc_hv_preempt(w, cpu);
	while (k--)
		sched_yield();
	if (told)
		orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
	else
		orc_hv_resume(w, cpu);
}

void *cpu_main(void *arg)
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
		case 8: /* the vCPU is descheduled: nothing at all, then back */
			deschedule(w, cpu, 1);
			break;
		case 9:
			orc_flush(w, cpu, TLBPOL_BY_LAZY);
			if (orc_switch(w, cpu, -1) == 0 &&
			    orc_set_state(w, cpu, TLBPOL_CPU_OFFLINE) == 0)
				off_left = 5 + rnd(w, cpu, 30);
			else
				wake(w, cpu);
			break;
		case 10: /* descheduled by the hypervisor, the engine not told */
			deschedule(w, cpu, 0);
			break;
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
