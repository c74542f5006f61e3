/* SPDX-License-Identifier: MIT */
/*
 * guest.c - the vCPU threads: each runs guest "instruction blocks" of
 * accesses through its MMU (mmu.c), has every access judged (checker.c),
 * resolves its own page faults as the guest kernel's handler would, takes
 * its interrupts between blocks, ticks the engine, and halts (IDLE) or
 * blocks in the emulator (PREEMPTED) now and then, flushing everything when
 * the engine asks on the way back.  It is a file of its own because it is
 * the vCPU side of the libtlbpol contract, the other half of what the
 * memory manager (manager.c) drives: an emulator's own vCPU loop does the
 * same things at the same points.
 */

/*
 * The vCPUs resolve their own page faults: installs of absent or swapped-out
 * pages (the install is submitted before the PTE is published), write faults
 * on write-protected pages (upgrades), spurious faults.  They halt now and
 * then (tlbpol_cpu_state() IDLE, futex sleep with a short timeout,
 * speculative walks, ticks; back to RUNNING, flushing everything when that
 * call returns 1) and block in the emulator now and then (PREEMPTED: nothing
 * runs, but a kick is still served, as a host scheduling the vCPU to deliver
 * it), so the engine meets lazy and preempted CPUs.  Running vCPUs call
 * tlbpol_tick() every TICK_BLOCKS blocks.
 */

#include "softmmu.h"

/* @r mapped to lo .. hi. */
static uint32_t between(uint64_t r, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(r % (hi - lo + 1));
}

/* ------------------------------------------------------------------------ */
/* Page faults (the guest kernel's handler, on the vCPU)                    */
/* ------------------------------------------------------------------------ */

/* Resolve a fault at @va_vpn of the running address space.  0: the page is
 * busy (locked by the manager or another vCPU, or no memory): the guest
 * retries the instruction later.  The guest kernel names the page by its
 * number across the address spaces (vpn, pg_of()). */
static int page_fault(struct cpu *c, uint32_t va_vpn, int write)
{
	struct world *w = c->w;
	uint32_t vpn = pg_of(c->space, va_vpn);
	uint32_t g = vpn >> GROUP_SHIFT, st, flags = write ? TLBPOL_EVF_WRITE : 0;
	_Atomic uint64_t *slot;
	struct table *t;
	uint64_t p, n;
	int f;

	c->n[C_FAULTS]++;
	mmu_fault(c, va_vpn);
	if (!page_trylock(w, vpn, &st))
		return 0;
	if (st == PG_MAPPED) {
		slot = sw_pte(w, vpn);
		if (!slot)
			die("vpn %#x is mapped but has no table page", vpn);
		p = atomic_load(slot);
		if (write && !(p & PTE_W)) {
			/* Write-protected (dirty tracking): make it writable.  A
			 * present PTE is changed first, then submitted. */
			uint32_t v = ++w->pver[vpn];

			do
				n = pte_make(pte_perms(p) | PTE_W | PTE_A | PTE_D, pte_frame(p), v);
			while (!atomic_compare_exchange_weak(slot, &p, n));
			submit(w, c->id, TLBPOL_EV_FAULT, flags, vpn, 1, pte_perms(p),
			       pte_perms(n));
			cv_raise(w, vpn, n);
			c->n[C_UPGRADES]++;
		} else {
			/* Already allowed: a stale, stricter entry or a race with
			 * another vCPU's install.  Nothing changes. */
			submit(w, c->id, TLBPOL_EV_FAULT, flags, vpn, 1, pte_perms(p),
			       pte_perms(p));
			c->n[C_SPURIOUS]++;
		}
		page_unlock(w, vpn, PG_MAPPED);
		return 1;
	}
	/* Absent or swapped out: install a frame. */
	t = ensure_table(w, g);
	f = t ? frame_alloc(w, c->id) : -1;
	if (f < 0) {
		page_unlock(w, vpn, st);
		return 0;
	}
	page_install(w, c->id, flags, t, vpn, (uint32_t)f,
		     st == PG_SWAPPED && w->backing_valid[vpn] ? w->backing[vpn] : NULL,
		     PTE_P | PTE_W | PTE_U | PTE_A | (write ? PTE_D : 0));
	c->n[C_INSTALLS]++;
	return 1;
}

/* ------------------------------------------------------------------------ */
/* Guest accesses                                                           */
/* ------------------------------------------------------------------------ */

/* The access itself, through entry @e, and its check. */
static void touch(struct cpu *c, const struct tlb_entry *e, uint32_t vpn, int write, uint32_t word)
{
	_Atomic uint64_t *fw = c->w->frames[e->frame].w;
	uint64_t id = atomic_load_explicit(&fw[0], memory_order_relaxed);

	if (write)
		atomic_store_explicit(&fw[word], c->wval++, memory_order_relaxed);
	else
		c->sum += atomic_load_explicit(&fw[word], memory_order_relaxed);
	check_use(c, e, vpn, write, id);
}

static void guest_access(struct cpu *c, uint32_t vpn, int write, uint32_t word)
{
	struct tlb_entry *e = tlb_slot(c, vpn, c->htag);

	for (int tries = 0; tries < 4; tries++) {
		if (!tlb_hit(e, vpn, c->htag) && !tlb_fill(c, vpn, e)) {
			if (!page_fault(c, vpn, write))
				break;
			continue;
		}
		if (write && !(e->perms & PTE_W)) {
			/* Protection fault; it drops the entry. */
			if (!page_fault(c, vpn, write))
				break;
			continue;
		}
		if (write && !(e->perms & PTE_D) && !dirty_assist(c, e, vpn))
			continue; /* the entry is gone: walk again */
		touch(c, e, vpn, write, word);
		return;
	}
	c->n[C_RETRIES]++;
}

/* One "translation block" of guest code: BLOCK_ACCESSES accesses, 90% in
 * the working set, 30% writes. */
static void guest_block(struct cpu *c)
{
	uint32_t hot = atomic_load_explicit(&c->w->hot_base, memory_order_relaxed);

	for (int i = 0; i < BLOCK_ACCESSES; i++) {
		uint64_t r = rnd(&c->rng);
		uint32_t vpn = (r & 0xff) < 230 ? (hot + (uint32_t)(r >> 8) % HOT_PAGES) % NPAGES
						: (uint32_t)(r >> 8) % NPAGES;

		guest_access(c, vpn, (r >> 40) % 10 < 3,
			     1 + (uint32_t)(r >> 44) % (FRAME_WORDS - 1));
	}
}

/* ------------------------------------------------------------------------ */
/* The vCPU thread                                                          */
/* ------------------------------------------------------------------------ */

/*
 * A halted vCPU's MMU may still walk the loaded page tables (speculation,
 * prefetch): through its PSC, without filling its TLB.  That is why the
 * engine still interrupts idle CPUs when page tables are freed.
 */
static void speculative_walks(struct cpu *c)
{
	uint32_t hot = atomic_load_explicit(&c->w->hot_base, memory_order_relaxed);

	for (int i = 0; i < 4; i++) {
		uint32_t vpn = (uint32_t)(hot + NPAGES - GROUP_PAGES * 4 +
					  rnd(&c->rng) % (HOT_PAGES + GROUP_PAGES * 4)) % NPAGES;
		_Atomic uint64_t *slot;
		uint64_t p;

		(void)mmu_walk(c, vpn, &slot, &p, 1);
	}
}

/* Halt (IDLE) or block in the emulator (PREEMPTED) for about @us. */
static void vcpu_halt(struct cpu *c, uint32_t state, uint32_t us)
{
	struct world *w = c->w;
	double start = now_s(), end = start + us * 1e-6, left;
	int r;

	/*
	 * Excused (halted) before the engine may skip this vCPU: from
	 * tlbpol_cpu_state() on, a flush may pass it by and its frame be
	 * handed out again, and the reuse check must already know why this
	 * vCPU still caches it (it flushes before it runs guest code again).
	 * The other way round, that check could see a holder in the window
	 * and report a stale use that no guest access could make.
	 */
	vcpu_set_halted(w, c->id, 1);
	chk(tlbpol_cpu_state(w->eng, c->id, state), "tlbpol_cpu_state");
	c->halted = 1;
	c->n[state == TLBPOL_CPU_IDLE ? C_IDLE : C_PREEMPT]++;
	while ((left = end - now_s()) > 0) {
		sleep_on_kick(c, left * 1e9 < HALT_TICK_NS ? (long)(left * 1e9) + 1 : HALT_TICK_NS);
		poll_kick(c);
		if (state == TLBPOL_CPU_IDLE) {
			chk(tlbpol_tick(w->eng, c->id), "tlbpol_tick");
			speculative_walks(c);
		}
	}
	c->halted = 0;
	c->n[C_HALTED_US] += (uint64_t)((now_s() - start) * 1e6);
	/* Flushes may have been skipped meanwhile: 1 means flush everything
	 * (paging-structure caches included) before running guest code. */
	r = chk(tlbpol_cpu_state(w->eng, c->id, TLBPOL_CPU_RUNNING), "tlbpol_cpu_state");
	if (r == 1 && w->bug != BUG_NO_CATCHUP) {
		/* With tags, a flush of the tag loaded (tlbpol_switch_tag()'s
		 * word); the others are caught up on at the switch back. */
		if (w->tags)
			tlb_flush_tag(c, c->htag);
		else
			tlb_flush_all(c);
		c->n[C_CATCHUPS]++;
	}
	vcpu_set_halted(w, c->id, 0);
}

/*
 * Memory pressure follows the guest: the manager makes one operation per
 * accesses_per_op guest accesses.  A guest more than MAX_LAG operations ahead
 * of a manager that cannot keep up stalls, as a task under memory pressure
 * is throttled in direct reclaim, so that every policy interleaves the same
 * guest work with the same page-table changes; the stall counts in the wall
 * time of the policy that caused it.  A stalled vCPU is running (its TLB is
 * live) and takes its interrupts.
 */
static void vcpu_throttle(struct cpu *c)
{
	struct world *w = c->w;
	int stalled = 0;

	for (;;) {
		uint64_t total = 0;

		for (uint32_t i = 0; i < w->nv; i++)
			total += atomic_load_explicit(&w->cpu[i].progress, memory_order_relaxed);
		if (total <= atomic_load_explicit(&w->guest_limit, memory_order_relaxed) ||
		    atomic_load_explicit(&w->stop, memory_order_relaxed) ||
		    atomic_load_explicit(&w->abort_run, memory_order_relaxed))
			break;
		if (!stalled++)
			c->n[C_THROTTLED]++;
		sleep_on_kick(c, 20000);
		poll_kick(c);
	}
}

void *vcpu_main(void *arg)
{
	struct cpu *c = arg;
	struct world *w = c->w;
	const struct mix *m = w->mix;
	uint64_t done = 0, blocks = 0;
	double next_idle, next_preempt;

	pthread_barrier_wait(&w->start);
	next_idle = now_s() + between(rnd(&c->rng), 0, 2 * m->run_us) * 1e-6;
	next_preempt = now_s() + between(rnd(&c->rng), 0, 2 * m->preempt_every_us) * 1e-6;
	vcpu_switch(c, c->id % w->nas);
	for (;;) {
		double t;

		if (atomic_load_explicit(&w->stop, memory_order_relaxed) ||
		    atomic_load_explicit(&w->abort_run, memory_order_relaxed) ||
		    (!w->timed && done >= c->quota))
			break;
		guest_block(c);
		done += BLOCK_ACCESSES;
		atomic_store_explicit(&c->progress, done, memory_order_relaxed);
		poll_kick(c);
		if (++blocks % TICK_BLOCKS == 0)
			chk(tlbpol_tick(w->eng, c->id), "tlbpol_tick");
		/* The guest scheduler: another process now and then. */
		if (w->nas > 1 && blocks % SWITCH_BLOCKS == 0)
			vcpu_switch(c, vcpu_next_space(c));
		if (blocks % THROTTLE_BLOCKS)
			continue;
		vcpu_throttle(c);
		t = now_s();
		if (t >= next_idle) {
			vcpu_halt(c, TLBPOL_CPU_IDLE,
				  between(rnd(&c->rng), m->idle_min_us, m->idle_max_us));
			next_idle = now_s() + between(rnd(&c->rng), 0, 2 * m->run_us) * 1e-6;
		} else if (m->preempt_every_us && t >= next_preempt) {
			vcpu_halt(c, TLBPOL_CPU_PREEMPTED,
				  between(rnd(&c->rng), m->preempt_min_us, m->preempt_max_us));
			next_preempt =
				now_s() + between(rnd(&c->rng), 0, 2 * m->preempt_every_us) * 1e-6;
		}
	}
	c->n[C_ACCESSES] = done;
	atomic_store(&c->finished, 1);
	/* Done: halt, still taking interrupts, until the manager is done. */
	vcpu_set_halted(w, c->id, 1); /* first, as in vcpu_halt() */
	chk(tlbpol_cpu_state(w->eng, c->id, TLBPOL_CPU_IDLE), "tlbpol_cpu_state");
	while (!atomic_load(&w->all_done)) {
		sleep_on_kick(c, 1000000);
		poll_kick(c);
		chk(tlbpol_tick(w->eng, c->id), "tlbpol_tick");
	}
	poll_kick(c);
	return NULL;
}
