/* SPDX-License-Identifier: MIT */
/*
 * submit.c - acting on decisions: tlbpol_submit() and tlbpol_flush().
 */
#include "decide.h"

/*
 * An address is being reused (a PTE installed where none was) while
 * deferred flushes are pending in its address space.  A deferred entry may be
 * exactly this address's old translation: if a CPU still caches it, that CPU
 * would keep using the old frame after the new one is mapped, and writes
 * would land in a frame the owner considers gone.  Linux has the same race
 * between batched reclaim and a parallel mprotect/munmap/fault, closed by
 * flush_tlb_batched_pending() (mm/rmap.c, commit 3ea277194daa "mm,
 * mprotect: flush TLB if potentially racing with a parallel reclaim leaving
 * stale TLB entries"), which flushes the whole mm whenever any batched flush
 * is pending.  Here each CPU publishes the span of what it has pending per
 * address space (struct pbox): this CPU completes its own work early if it
 * overlaps; if another CPU's span overlaps, one whole-AS shootdown (FLUSH_ALL
 * to every CPU if a global PTE is among it) covers what cannot be seen
 * precisely.  Spans that do not overlap cost nothing: a server unmapping
 * buffers lazily does not pay for the buffers other threads map meanwhile.
 */
static void settle_reused_range(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
				const struct tlbpol_event *ev)
{
	uint64_t first = ev->va, last = range_last(ev->va, ev->nr_pages, ev->page_shift);
	int others = 0, global = 0;
	/*
	 * A global entry is nobody's address space's: its VA may be reused
	 * through any of them (a kernel mapping, vunmap then vmap elsewhere),
	 * so pending work on a global PTE is looked for in every address
	 * space, not only in the one this install names.
	 */
	uint32_t any_global = prim_load_acquire(&eng->global_pending);

	for (uint32_t i = 0; i < eng->nr_cpus * (any_global ? eng->max_as : 1); i++) {
		uint32_t x = any_global ? i / eng->max_as : i;
		uint32_t a = any_global ? i % eng->max_as : as->index;
		const struct pbox *b = pbox_of(eng, x, a);

		if (!prim_load_acquire(&b->count))
			continue;
		if (a != as->index && !prim_load_relaxed(&b->global))
			continue;
		if (prim_load_relaxed(&b->lo) > last || first > prim_load_relaxed(&b->hi))
			continue;
		if (x == cpu) {
			/* Our own: complete it now, lazy requests in flight too. */
			tlbpol__force_lazy(eng, cpu);
			tlbpol__flush_batch(eng, cpu, TLBPOL_BY_WRITEBACK, TLBPOL_BY_LAZY);
			continue;
		}
		others = 1;
		global |= (int)prim_load_relaxed(&b->global);
	}
	if (others) {
		struct slot *s = &cpu_of(eng, cpu)->slots[SLOT_SYNC];
		struct req_flush *rf = &s->flushes[0];

		tlbpol__single(eng, s, as, ev);
		global |= (int)rf->global;
		rf->f.kind = global ? TLBPOL_FLUSH_ALL : TLBPOL_FLUSH_AS;
		rf->f.flags |= global ? TLBPOL_FLUSHF_GLOBAL : 0;
		rf->f.nr_ranges = 0;
		rf->f.ranges = 0;
		rf->global = (uint32_t)global;
		tlbpol__shoot(eng, cpu, s);
	}
}

/* Flush @ev's pages (or its address space, past the ceiling) on @cpu. */
static void flush_here(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		       const struct tlbpol_event *ev)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	struct slot *s = &c->slots[SLOT_SYNC];

	tlbpol__single(eng, s, as, ev);
	eng->ops.flush_local(eng->ops_ctx, cpu, &s->flushes[0].f);
	prim_count(&c->cnt.task.local_flushes, 1);
	count_flush(&c->cnt.task, &s->flushes[0].f);
}

/*
 * Lazy work is deferred for the other CPUs only: the initiator drops its own
 * entries at once, as LATR does, so the address faults on this CPU as soon
 * as the unmap returns (and a caller that broke the LAZY_OK promise here
 * would fault rather than read the old frame).  The lazy request flushes
 * it again when posted (see arm()).
 */
static void flush_self_now(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
			   const struct tlbpol_event *ev)
{
	if ((params_of(eng)->rules & TLBPOL_RULE_FOOTPRINT) && !tlbpol__event_global(ev) &&
	    !bitmap_test(as->footprint, cpu))
		return;
	flush_here(eng, as, cpu, ev);
}

/* The decision in one register, for the tail calls below. */
static inline uint32_t pack(const struct tlbpol_decision *d)
{
	return decision_pack(d->action, d->deadline, d->reason);
}

static inline void count_decision(struct tlbpol_cpu *c, const struct tlbpol_decision *d)
{
	prim_count(&c->cnt.decided[d->reason][d->action], 1);
}

/*
 * The rest of a submit that needs more than counting its decision (@packed),
 * in the order it must happen: lazy requests reaped (their entries no longer
 * pending), a reused address settled against what is pending, the action,
 * due deferred frees; then the call ends.  Out of line and reached by a tail
 * call: the no-flush decision (seed 000's spurious fault, the most frequent
 * event) needs none of it, and tlbpol_submit() makes no call for it.
 */
static __attribute__((noinline)) int act(struct tlbpol_engine *eng, struct tlbpol_as *as,
					 uint32_t cpu, const struct tlbpol_event *ev,
					 struct tlbpol_decision *out, uint32_t packed)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	struct tlbpol_decision d;

	decision_unpack(&d, packed);

	if (lazy_in_flight(c))
		tlbpol__reap(eng, cpu);
	if (!(ev->old_pte & TLBPOL_PTE_PRESENT) &&
	    (prim_load_acquire(&as->pending) || prim_load_relaxed(&eng->global_pending)))
		settle_reused_range(eng, as, cpu, ev);
	if (d.action == TLBPOL_ACT_LOCAL) {
		flush_here(eng, as, cpu, ev);
	} else if (d.action == TLBPOL_ACT_SHOOTDOWN) {
		if (d.deadline == TLBPOL_BY_NOW || ev->nr_pages >= params_of(eng)->batch_pages) {
			struct slot *s = &c->slots[SLOT_SYNC];

			tlbpol__single(eng, s, as, ev);
			tlbpol__shoot(eng, cpu, s);
		} else {
			if (d.deadline == TLBPOL_BY_LAZY)
				flush_self_now(eng, as, cpu, ev);
			tlbpol__enqueue(eng, as, cpu, ev, d.deadline);
		}
	}
	if (c->dfree_count)
		tlbpol__run_dfrees(eng, cpu);
	call_leave(c);
	if (out)
		*out = d;
	return 0;
}

/*
 * A submit entered, but that the hot path below does not finish: the
 * previous call left something to publish (@settle: see call_enter()), or
 * the event's row has its rule off.  Publish, decide and act as usual.
 */
static __attribute__((noinline)) int submit_slow(struct tlbpol_engine *eng, struct tlbpol_as *as,
						 uint32_t cpu, const struct tlbpol_event *ev,
						 struct tlbpol_decision *out, int settle)
{
	struct tlbpol_decision d;

	if (settle)
		tlbpol__settle(eng, cpu, 1);
	tlbpol__decide(eng, params_of(eng), ev, &d);
	count_decision(cpu_of(eng, cpu), &d);
	return act(eng, as, cpu, ev, out, pack(&d));
}

/*
 * The hot path makes no call but tail calls: the no-flush decision costs
 * the checks, the classification, one counter and the nesting guard (and,
 * with GCC 12 on x86-64, six saved registers: the classification needs
 * more than the caller-saved ones).
 */
int tlbpol_submit(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		  const struct tlbpol_event *ev, struct tlbpol_decision *out)
{
	const struct tlbpol_params *p;
	struct tlbpol_decision d;
	struct tlbpol_cpu *c;
	int err = tlbpol__check_event_call(eng, as, cpu, ev);

	if (err)
		return err;
	c = cpu_of(eng, cpu);
	/* call_enter(), with its settle out of line. */
	if (call_guard(c))
		return -E_BUSY;
	if (call_owes_settle(c))
		return submit_slow(eng, as, cpu, ev, out, 1);
	p = params_of(eng);
	if (tlbpol__decide_ruled(eng, p, ev, &d))
		return submit_slow(eng, as, cpu, ev, out, 0);
	count_decision(c, &d);
	if (lazy_in_flight(c) || c->dfree_count ||
	    (!(ev->old_pte & TLBPOL_PTE_PRESENT) &&
	     (prim_load_relaxed(&as->pending) || prim_load_relaxed(&eng->global_pending))))
		return act(eng, as, cpu, ev, out, pack(&d));
	/* act()'s deferral, the most frequent action, without act(). */
	if (d.action == TLBPOL_ACT_SHOOTDOWN &&
	    (d.deadline == TLBPOL_BY_WRITEBACK || d.deadline == TLBPOL_BY_FREE) &&
	    ev->nr_pages < p->batch_pages)
		return tlbpol__enqueue_and_leave(eng, as, cpu, ev, out, pack(&d));
	if (d.action != TLBPOL_ACT_NONE)
		return act(eng, as, cpu, ev, out, pack(&d));
	call_leave(c);
	if (out)
		*out = d;
	return 0;
}

int tlbpol_flush(struct tlbpol_engine *eng, uint32_t cpu, uint32_t by)
{
	struct tlbpol_cpu *c;
	int n = 0;

	if (!eng || eng->magic != TLBPOL_MAGIC || by > TLBPOL_BY_LAZY)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	c = cpu_of(eng, cpu);
	if (call_enter(eng, c, cpu))
		return -E_BUSY;
	tlbpol__serve(eng, cpu);
	tlbpol__reap(eng, cpu);
	if (by != TLBPOL_BY_NOW)
		n = tlbpol__flush_batch(eng, cpu, TLBPOL_BY_WRITEBACK, by);
	if (by == TLBPOL_BY_LAZY)
		tlbpol__force_lazy(eng, cpu);
	tlbpol__run_dfrees(eng, cpu);
	call_leave(c);
	return n;
}
