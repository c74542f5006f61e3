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

uint32_t some_page(struct orc_world *w, uint32_t cpu, struct shared *sh, uint32_t as)
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

static void do_flush(struct orc_world *w, uint32_t cpu, const struct profile *p)
{
	static const unsigned wts[] = { 10, 20, 50, 20 }; /* NOW, WRITEBACK, FREE, LAZY */
	const unsigned *mix = p->flush_mix;

	if (!(mix[0] | mix[1] | mix[2] | mix[3]))
		mix = wts;
	orc_flush(w, cpu, pick(w, cpu, mix, 4));
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
		/* The vCPU is descheduled while lazy or idle, then runs again:
		 * an idle one back to its idle loop directly, or through
		 * RUNNING (an interrupt woke it, it found nothing to do). */
		uint32_t st = orc_cpu_state(w, cpu);

		orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED);
		sched_yield();
		if (st != TLBPOL_CPU_IDLE || rnd(w, cpu, 2))
			orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
		if (st == TLBPOL_CPU_IDLE)
			orc_set_state(w, cpu, TLBPOL_CPU_IDLE);
	} else if (r < tick) {
		/* NO_HZ idle: an idle CPU need not tick (the header asks it
		 * of running ones), and then lazy requests posted to it wait
		 * for their initiator's interrupt. */
		if (!p->idle_notick || orc_cpu_state(w, cpu) != TLBPOL_CPU_IDLE)
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
			if (p->flush_mix[0] | p->flush_mix[1] | p->flush_mix[2] | p->flush_mix[3])
				do_flush(w, cpu, p);
			else
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

/*
 * A walk through tlbpol_cpu_state()'s matrix: @left transitions, each to a
 * state drawn from all four (the one it is in included), each followed by
 * a dwell of @dwell steps in it.  Before a transition out of RUNNING or
 * IDLE the CPU may go lazy (switch to NULL) or, running, back to an
 * address space, so that every transition is made lazy and not.  OFFLINE
 * needs nothing pending on the CPU: the walk drains its own work at its
 * start, half the time, and before going OFFLINE from a state that
 * executes, half the time (a refusal, -EBUSY, is the header's answer to
 * the other half).  While it dwells others post requests to it, lazy ones
 * included, which it must serve as it goes OFFLINE.
 */
struct walk {
	unsigned left, dwell;
};

static void walk_start(struct orc_world *w, uint32_t cpu, struct walk *wk)
{
	wk->left = 3 + (unsigned)rnd(w, cpu, 6);
	wk->dwell = 0;
	if (rnd(w, cpu, 2))
		orc_flush(w, cpu, TLBPOL_BY_LAZY);
}

/* How long a walk stays in @state: PREEMPTED briefly (others may wait
 * for it), OFFLINE now and then long. */
static unsigned dwell_len(struct orc_world *w, uint32_t cpu, const struct profile *p,
			  uint32_t state)
{
	if (state == TLBPOL_CPU_PREEMPTED)
		return 1 + (unsigned)rnd(w, cpu, p->preempt_max ? p->preempt_max : 6);
	if (state == TLBPOL_CPU_OFFLINE && rnd(w, cpu, 100) < p->off_long)
		return 100 + (unsigned)rnd(w, cpu, 900);
	return 2 + (unsigned)rnd(w, cpu, 20);
}

/* One step of a walk; 0 once it is over (the CPU is running an AS again). */
static int walk_step(struct orc_world *w, uint32_t cpu, struct shared *sh,
		     const struct profile *p, struct walk *wk)
{
	uint32_t from = orc_cpu_state(w, cpu), to;

	if (wk->dwell) {
		wk->dwell--;
		if (from == TLBPOL_CPU_RUNNING && orc_cpu_as(w, cpu) >= 0 && rnd(w, cpu, 2)) {
			int as = orc_cpu_as(w, cpu);

			orc_access(w, cpu, some_page(w, cpu, sh, (uint32_t)as),
				   rnd(w, cpu, 3) ? ORC_READ : ORC_WRITE);
		} else if (from == TLBPOL_CPU_RUNNING || from == TLBPOL_CPU_IDLE) {
			lazy_step(w, cpu, sh, p); /* the lazy or idle loop */
		} else {
			sched_yield(); /* preempted or offline: nothing at all */
		}
		return 1;
	}
	if (!wk->left) {
		wake(w, cpu);
		return 0;
	}
	wk->left--;
	if (from == TLBPOL_CPU_RUNNING || from == TLBPOL_CPU_IDLE) {
		unsigned r = (unsigned)rnd(w, cpu, 4);

		if (r == 0 && orc_cpu_as(w, cpu) >= 0)
			orc_switch(w, cpu, -1);
		else if (r == 1 && from == TLBPOL_CPU_RUNNING && orc_cpu_as(w, cpu) < 0)
			orc_switch(w, cpu, switch_target(w, cpu));
	}
	to = (uint32_t)rnd(w, cpu, 4);
	if (to == TLBPOL_CPU_OFFLINE && from != TLBPOL_CPU_PREEMPTED &&
	    from != TLBPOL_CPU_OFFLINE && rnd(w, cpu, 2))
		orc_flush(w, cpu, TLBPOL_BY_LAZY);
	orc_set_state(w, cpu, to);
	wk->dwell = dwell_len(w, cpu, p, orc_cpu_state(w, cpu));
	return 1;
}

/*
 * A quiet spell: accesses and ticks only.  Work due by a free that the
 * CPU left in its batch (a tlbpol_flush(BY_WRITEBACK) takes only what is
 * due by the writeback) must complete from its ticks alone, and its
 * deferred frees run (liveness.c judges).
 */
static void quiet_step(struct orc_world *w, uint32_t cpu, struct shared *sh,
		       const struct profile *p)
{
	int as = orc_cpu_as(w, cpu);

	if (rnd(w, cpu, 100) < p->quiet_tick) {
		orc_tick(w, cpu);
	} else if (as >= 0) {
		/* The hot window only: a fault elsewhere may install over
		 * what the CPU unmapped, and the install completes its batch
		 * (the engine's own rule), which the spell must not do. */
		uint32_t page = (atomic_load(&sh->hot[as]) + (uint32_t)rnd(w, cpu, HOT_PAGES)) %
				orc_world_config(w)->pages;

		orc_access(w, cpu, page, rnd(w, cpu, 4) ? ORC_READ : ORC_WRITE);
	}
	/* Quiet in time too: the other CPUs run meanwhile (a tick counts
	 * for the bounded-free check only once they have, liveness.c). */
	sched_yield();
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
				 p->kaccess, p->compute, p->states, p->quiet, p->hold };
	uint64_t lazy_left = 0, off_left = 0, quiet_left = 0, i;
	struct walk wk = { 0, 0 };
	int walking = 0;

	orc_cpu_bind(w, cpu);
	orc_switch(w, cpu, (int)(cpu % nr_as));
	orc_barrier(w, cpu);
	if (p->quiet) {
		/* Work due by a free queued before the CPU's first tick, which
		 * wraps its count (the engine starts it just before the wrap,
		 * as Linux does jiffies), then a quiet spell: that work must
		 * age across the wrap like any other. */
		uint32_t as = cpu % nr_as, pages = orc_world_config(w)->pages;

		/* Away from the hot window, which the spell's accesses would
		 * fault back in (an install completes what covers it). */
		orc_unmap(w, cpu, as, (atomic_load(&sh->hot[as]) + pages / 2 + 8 * cpu) % pages, 4, 0,
			  0);
		quiet_left = p->quiet_max;
	}
	/* Until a deadlock or a stall ends the run (orc_stopped()). */
	for (i = 0; i < t->steps && !orc_stopped(w); i++) {
		atomic_store_explicit(&sh->steps[cpu], i, memory_order_relaxed);
		/* Interrupts between steps (none while offline or preempted:
		 * orc_poll() says), and a migrating task's stamp. */
		orc_poll(w, cpu);
		orc_serve_migration(w, cpu);
		/* Invited to a long preemption (hold_step()): before anything
		 * else, so that the lazy post is left unclaimed. */
		if (p->hold && !walking && !quiet_left && !off_left && !lazy_left &&
		    orc_cpu_as(w, cpu) >= 0 && orc_cpu_state(w, cpu) == TLBPOL_CPU_RUNNING) {
			uint64_t inv = atomic_load(&sh->invite);

			if ((inv & 0xff) == (uint64_t)orc_cpu_as(w, cpu) + 1 &&
			    atomic_compare_exchange_strong(&sh->invite, &inv, 0)) {
				join_hold(w, cpu, sh, p, inv >> 8);
				continue;
			}
		}
		/* More CPU threads than cores: give the others a turn now and
		 * then, so that they interleave finely, not a time slice apart. */
		if (rnd(w, cpu, 32) == 0)
			sched_yield();
		if (walking) {
			walking = walk_step(w, cpu, sh, p, &wk);
			continue;
		}
		if (quiet_left) {
			quiet_left--;
			quiet_step(w, cpu, sh, p);
			continue;
		}
		if (off_left) {
			/* Offline: takes no interrupts, and is sent none. */
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
		/* A lockless walk (GUP-fast) now and then, an eighth of them
		 * descheduled in the middle, told to the engine or not. */
		if (orc_world_config(w)->walkers && rnd(w, cpu, 16) == 0 &&
		    orc_cpu_as(w, cpu) >= 0) {
			uint32_t r = (uint32_t)rnd(w, cpu, 16);

			orc_lockless_walk(w, cpu, some_page(w, cpu, sh, (uint32_t)orc_cpu_as(w, cpu)),
					  1 + r % 4, r == 0 ? 1 : r == 1 ? 2 : 0);
			continue;
		}
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
			do_flush(w, cpu, p);
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
				/* Now and then long enough for others to post
				 * requests meanwhile, lazy ones and stamps. */
				off_left = rnd(w, cpu, 100) < p->off_long ? 100 + rnd(w, cpu, 900)
									  : 5 + rnd(w, cpu, 30);
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
		case 14:
			walk_start(w, cpu, &wk);
			walking = 1;
			break;
		case 15:
			quiet_left = p->quiet_min + rnd(w, cpu, p->quiet_max - p->quiet_min + 1);
			break;
		case 16:
			hold_step(w, cpu, sh, p);
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
	atomic_store(&sh->finished[cpu], 1);
	orc_note_events(w, cpu, i);
	orc_finish(w, cpu);
	return NULL;
}
