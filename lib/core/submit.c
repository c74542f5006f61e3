/* SPDX-License-Identifier: MIT */
/*
 * submit.c - acting on decisions: tlbpol_submit() and tlbpol_flush().
 */
#include "call.h"
#include "decide.h"
#include "enqueue.h"

/*
 * Has @cpu a request in flight (armed, some target yet to acknowledge)?
 * Acquire: pairs with the seqcst store that arms it.
 */
static int requests_in_flight(const struct tlbpol_engine *eng, uint32_t cpu)
{
	const struct tlbpol_cpu *c = cpu_of(eng, cpu);

	for (uint32_t i = 0; i < TLBPOL_REQS; i++)
		if (prim_load_acquire(&c->reqs[i].acks))
			return 1;
	return 0;
}

/* Has @c's batch an entry of @as_index whose addresses an install of
 * [@first, @last] may reuse (tlbpol__hull_add())? */
static int batch_meets(const struct tlbpol_cpu *c, uint32_t as_index, uint64_t first,
		       uint64_t last)
{
	for (uint32_t i = 0; i < c->nr_pending; i++) {
		uint64_t lo = ~0ULL, hi = 0;

		if (c->pending[i].as_index != as_index)
			continue;
		tlbpol__hull_add(&c->pending[i], &lo, &hi);
		if (hull_meets(lo, hi, first, last))
			return 1;
	}
	return 0;
}

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
 * address space (struct pending_span): this CPU completes its own work early if it
 * overlaps; if another CPU's span overlaps, one whole-AS shootdown (FLUSH_ALL
 * to every CPU if a global PTE is among it) covers what cannot be seen
 * precisely.  Spans that do not overlap cost nothing: a server unmapping
 * buffers lazily does not pay for the buffers other threads map meanwhile.
 */
static void settle_reused_range(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				struct tlbpol_as *as, uint32_t cpu, const struct tlbpol_event *ev)
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
		const struct pending_span *b = span_of(eng, x, a);
		uint32_t cg = prim_load_acquire(&b->count_global);

		if (!span_count(cg))
			continue;
		if (a != as->index && !span_global(cg))
			continue;
		if (!hull_meets(prim_load_relaxed(&b->lo), prim_load_relaxed(&b->hi), first, last))
			continue;
		if (x == cpu) {
			/* Our own: complete what of it may cover the address now:
			 * the lazy requests in flight that do (each part knows
			 * its addresses), and the batch if any entry does; all of
			 * it where a global entry is among it. */
			int all = (int)span_global(cg);

			if (all)
				tlbpol__force_lazy(eng, prm, cpu);
			else
				tlbpol__force_lazy_over(eng, prm, cpu, a, first, last);
			if (all || batch_meets(cpu_of(eng, cpu), a, first, last))
				tlbpol__flush_batch(eng, prm, cpu, TLBPOL_BY_WRITEBACK,
						    TLBPOL_BY_LAZY);
			continue;
		}
		/*
		 * Another CPU's span counts what it has not released yet, and
		 * it releases only at its own next engine call: entries whose
		 * requests every target has acknowledged may still be counted
		 * (a stamp settled by the allocator on this CPU, a lazy request
		 * completed by the targets' ticks).  Nothing of it in its
		 * batch and nothing of it in flight means all of it is
		 * complete (struct pending_span, queued).  Not for global
		 * entries: they are looked for in every address space.
		 */
		if (!span_global(cg) && !prim_load_acquire(&b->queued) &&
		    !requests_in_flight(eng, x))
			continue;
		others = 1;
		global |= (int)span_global(cg);
	}
	if (others) {
		struct request *s = &cpu_of(eng, cpu)->reqs[REQ_SYNC];
		struct req_flush *rf = &s->flushes[0];

		tlbpol__single(prm, s, as, ev);
		global |= (int)rf->global;
		rf->f.kind = global ? TLBPOL_FLUSH_ALL : TLBPOL_FLUSH_AS;
		rf->f.flags |= global ? TLBPOL_FLUSHF_GLOBAL : 0;
		rf->f.nr_ranges = 0;
		rf->f.ranges = 0;
		rf->global = (uint32_t)global;
		tlbpol__shoot(eng, prm, cpu, s);
	}
}

/* Flush @ev's pages (or its address space, past the ceiling) on @cpu. */
static void flush_here(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
		       struct tlbpol_as *as, uint32_t cpu, const struct tlbpol_event *ev)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	struct request *s = &c->reqs[REQ_SYNC];

	tlbpol__single(prm, s, as, ev);
	if (!tlbpol__flush_local(eng, cpu, &s->flushes[0].f, as->index))
		return;
	prim_count(&c->cnt.task.local_flushes, 1);
	count_flush(&c->cnt.task, &s->flushes[0].f);
}

/* A stamped event without LAZY_OK: its CPU is flushed by the stamp's post
 * (arm()), not at its submit (flush_self_now(), submit's inline path). */
static inline int stamped_not_lazy_ok(const struct tlbpol_event *ev)
{
	return (ev->flags & (TLBPOL_EVF_STAMP | TLBPOL_EVF_LAZY_OK)) == TLBPOL_EVF_STAMP;
}

/*
 * Lazy work is deferred for the other CPUs only: the initiator drops its own
 * entries at once, as LATR does, so the address faults on this CPU as soon
 * as the unmap returns (and a caller that broke the LAZY_OK promise here
 * would fault rather than read the old frame).  Its lazy request need not
 * flush this CPU again when posted (arm()): the PTE was changed before this
 * submit, so nothing here can cache the old entry after this flush, whatever
 * the CPU runs meanwhile.  An entry not flushed here says so in
 * lazy_unflushed, and then the post flushes.
 * Not a stamped event (without LAZY_OK): the unmap returns at
 * tlbpol_stamp(), whose post flushes this CPU first (arm()), the whole pass
 * at once and past the ceiling as one whole-AS flush, as Linux's
 * tlb_finish_mmu() and arch_tlbbatch_flush() do.  Flushing each page here
 * as well cost a reclaim pass of 64 pages 64 invalidations on top of it.
 */
static void flush_self_now(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			   struct tlbpol_as *as, uint32_t cpu, const struct tlbpol_event *ev)
{
	if (stamped_not_lazy_ok(ev) ||
	    ((prm->rules & TLBPOL_RULE_FOOTPRINT) && !tlbpol__event_global(ev) &&
	     !bitmap_test(as->footprint, cpu))) {
		cpu_of(eng, cpu)->lazy_unflushed = 1;
		return;
	}
	flush_here(eng, prm, as, cpu, ev);
}

/* One decision (@v, packed) counted: cnt.decided[reason][action]. */
static inline void count_decision(struct tlbpol_cpu *c, uint32_t v)
{
	uint64_t *n = &c->cnt.decided[0][0] + (v >> 24);

	prim_count(n, 1);
}

/*
 * The rest of a submit that needs more than counting its decision (@packed),
 * in the order it must happen: lazy requests reaped (their entries no longer
 * pending), a reused address settled against what is pending, the action,
 * due deferred frees; then the call ends.  Out of line: the no-flush
 * decision (the spurious fault of Linux 61c77326d1df "x86, mm: Avoid
 * unnecessary TLB flush", the most frequent event) and the plain deferral
 * need none of it, and submit_event() makes no call for them.  With the
 * call's configuration (@prm) it takes seven arguments, so on x86-64 it is
 * reached by a call, not a tail call: every path into it flushes or
 * settles, which costs far more than the frame.
 */
static __attribute__((noinline)) int act(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
					 struct tlbpol_as *as, uint32_t cpu,
					 const struct tlbpol_event *ev, struct tlbpol_decision *out,
					 uint32_t packed)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint32_t action = packed_action(packed), deadline = packed_deadline(packed);

	tlbpol__reap(eng, cpu);
	if (!(ev->old_pte & TLBPOL_PTE_PRESENT) &&
	    (prim_load_acquire(&as->pending) || prim_load_relaxed(&eng->global_pending)))
		settle_reused_range(eng, prm, as, cpu, ev);
	if (action == TLBPOL_ACT_LOCAL) {
		flush_here(eng, prm, as, cpu, ev);
	} else if (action == TLBPOL_ACT_SHOOTDOWN) {
		if (deadline == TLBPOL_BY_NOW || ev->nr_pages >= prm->batch_pages) {
			struct request *s = &c->reqs[REQ_SYNC];

			tlbpol__single(prm, s, as, ev);
			tlbpol__shoot(eng, prm, cpu, s);
		} else {
			if (deadline == TLBPOL_BY_LAZY)
				flush_self_now(eng, prm, as, cpu, ev);
			tlbpol__enqueue(eng, prm, as, cpu, ev, deadline);
		}
	}
	if (c->dfree_count)
		tlbpol__run_dfrees(eng, cpu);
	/* A shootdown may have given the address space a global tag: onto it,
	 * as Linux's local flush_tlb_func() does (tag_flush.c). */
	if (action == TLBPOL_ACT_SHOOTDOWN && tlbpol__tags_movable(eng))
		tlbpol__tag_to_global(eng, cpu);
	call_leave(c);
	if (out)
		decision_unpack(out, packed);
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
	const struct tlbpol_params *prm = params_of(eng);
	uint32_t v;

	if (settle)
		tlbpol__settle(eng, cpu, 1);
	v = tlbpol__decide(eng, prm, ev);
	count_decision(cpu_of(eng, cpu), v);
	return act(eng, prm, as, cpu, ev, out, v);
}

/* Does this CPU have something to do before or after any action: lazy
 * requests to reap, deferred frees due? */
static inline int cpu_owes(const struct tlbpol_cpu *c)
{
	return lazy_in_flight(c) || c->dfree_count;
}

/*
 * The fast path's test: is @ev a valid one-page event that classify()
 * answers CLS_SPURIOUS?
 */
static inline int spurious_shape(const struct tlbpol_event *ev)
{
	return spurious_fault(ev) && valid_one_page(ev);
}

/*
 * Was the valid event @ev decided before under @p, by this CPU's last
 * classified submit (struct tlbpol_cpu's `last`)?  An unmap or a reclaim
 * walking a range submits the same event page after page: it is classified
 * once.
 */
static inline int decided_last(const struct tlbpol_cpu *c, const struct tlbpol_params *p,
			       const struct tlbpol_event *ev)
{
	return c->last.rules == p->rules && c->last.kind == ev->kind &&
	       c->last.flags == ev->flags && c->last.old_pte == ev->old_pte &&
	       c->last.new_pte == ev->new_pte;
}

static inline void remember(struct tlbpol_cpu *c, const struct tlbpol_params *p,
			    const struct tlbpol_event *ev, uint32_t v)
{
	c->last.rules = p->rules;
	c->last.kind = ev->kind;
	c->last.flags = ev->flags;
	c->last.old_pte = ev->old_pte;
	c->last.new_pte = ev->new_pte;
	c->last.packed = v;
}

/*
 * A submit whose engine, address space and CPU are checked but that the
 * fast path below does not finish: the event checked and the call entered,
 * then decided and acted on.  Its own frame, reached by a tail call: the
 * classification and the enqueue need more registers than the caller-saved
 * ones, and the spurious fault must not pay for saving them.  A plain
 * deferral (a page queued BY_WRITEBACK or BY_FREE with nothing else to do,
 * the most frequent) is queued here, without act().
 * @ev is restrict: the header says it does not change during the call, so
 * the compiler may read it again rather than keep its fields on the stack.
 */
static __attribute__((noinline)) int submit_event(struct tlbpol_engine *eng, struct tlbpol_as *as,
						  uint32_t cpu, const struct tlbpol_event *restrict ev,
						  struct tlbpol_decision *out)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	const struct tlbpol_params *prm;
	uint32_t v, deadline;
	int err = validate_event(eng, ev);

	if (err)
		return err;
	/* call_enter(), with its settle out of line. */
	if (call_guard(c))
		return -E_BUSY;
	if (ev->flags & TLBPOL_EVF_STAMP)
		c->stamp_owed = 1;
	if (call_owes_settle(c))
		return submit_slow(eng, as, cpu, ev, out, 1);
	prm = params_of(eng);
	if (decided_last(c, prm, ev)) {
		v = c->last.packed;
	} else {
		v = tlbpol__decide_ruled(eng, prm, ev);
		if (packed_action(v) == VERDICT_OUT_OF_LINE)
			return submit_slow(eng, as, cpu, ev, out, 0);
		remember(c, prm, ev, v);
	}
	count_decision(c, v);
	/* act() reaps, settles a reused address, acts, runs due frees. */
	if (cpu_owes(c) ||
	    (!(ev->old_pte & TLBPOL_PTE_PRESENT) &&
	     (prim_load_relaxed(&as->pending) || prim_load_relaxed(&eng->global_pending))))
		return act(eng, prm, as, cpu, ev, out, v);
	deadline = packed_deadline(v);
	if (packed_action(v) == TLBPOL_ACT_SHOOTDOWN && ev->nr_pages < prm->batch_pages &&
	    (deadline == TLBPOL_BY_WRITEBACK || deadline == TLBPOL_BY_FREE ||
	     (deadline == TLBPOL_BY_LAZY && stamped_not_lazy_ok(ev)))) {
		/*
		 * A stamped page of a reclaim or an unmap pass is deferred here
		 * too, as act() would (flush_self_now() flushes nothing for it:
		 * the stamp's post does): it is the pass's every page, as the
		 * BY_FREE deferral is Linux's.  Through act() and the
		 * out-of-line enqueue it cost 313 instructions a page; here
		 * 229, against BY_FREE's 225 (callgrind, tlbpol_submit() of a
		 * 64-page stamped reclaim on 2 CPUs, -O2).  A batch that fills
		 * up runs its due frees as it completes.
		 */
		if (deadline == TLBPOL_BY_LAZY)
			c->lazy_unflushed = 1;
		enqueue(eng, prm, c, as, cpu, ev, deadline);
	} else if (packed_action(v) != TLBPOL_ACT_NONE)
		return act(eng, prm, as, cpu, ev, out, v);
	call_leave(c);
	if (out)
		decision_unpack(out, v);
	return 0;
}

/*
 * The hot path, in the caller-saved registers: the argument checks, the
 * event's shape, and for a spurious fault the nesting guard, the table's
 * cell and one counter.  Anything else (another event, anything owed, a
 * configuration whose cell is not "no flush now") goes on by a tail call to
 * submit_event(), which decides it as it decides every event.
 */
int tlbpol_submit(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		  const struct tlbpol_event *ev, struct tlbpol_decision *out)
{
	const struct tlbpol_params *prm;
	struct tlbpol_cpu *c;
	uint32_t v;
	int err = ev ? tlbpol__check_call(eng, as, cpu) : -E_INVAL;

	if (err)
		return err;
	if (!spurious_shape(ev))
		return submit_event(eng, as, cpu, ev, out);
	c = cpu_of(eng, cpu);
	if (call_guard(c))
		return -E_BUSY;
	prm = params_of(eng);
	v = prm->verdict[CLS_SPURIOUS];
	/*
	 * NONE and BY_NOW: lazy_deadline() would change nothing.  (Under
	 * TLBPOL_RULES_NONE the cell is CLS_NAIVE's, a shootdown: see
	 * tlbpol__resolve_verdicts().)  Otherwise, or with anything owed, the
	 * call is left and entered again by submit_event(), as if it had begun
	 * a moment later.
	 */
	if ((v & 0xffff) != decision_pack(TLBPOL_ACT_NONE, TLBPOL_BY_NOW, 0) ||
	    call_owes_settle(c) || cpu_owes(c)) {
		call_leave(c);
		return submit_event(eng, as, cpu, ev, out);
	}
	count_decision(c, v);
	call_leave(c);
	if (out)
		decision_unpack(out, v);
	return 0;
}

int tlbpol_flush(struct tlbpol_engine *eng, uint32_t cpu, uint32_t by)
{
	struct tlbpol_cpu *c;
	int n = cpu_call_enter(eng, cpu, by <= TLBPOL_BY_LAZY, &c);

	if (n)
		return n;
	/* BY_NOW: no batch entry is due; BY_LAZY: lazy work in flight too. */
	n = tlbpol__drain(eng, params_of(eng), cpu, by,
			  DRAIN_SERVE | (by == TLBPOL_BY_LAZY ? DRAIN_FORCE_LAZY : 0));
	if (tlbpol__tags_movable(eng))
		tlbpol__tag_to_global(eng, cpu);
	call_leave(c);
	return n;
}
