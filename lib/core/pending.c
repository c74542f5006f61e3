/* SPDX-License-Identifier: MIT */
/*
 * pending.c - what a CPU still owes: pending entries and deferred frees.
 *
 * The bottom of the request machinery.  A batch entry stays counted in its
 * address space's span (struct pending_span) from enqueue until the request that
 * carries it is acknowledged by every target; a deferred free runs once no
 * entry older than it is pending.  What a CPU's previous call left to
 * publish (a catch-up flush done, a CR3 write after a leave) is settled here
 * too, at its next call.  Calls nothing above it.
 */
#include "internal.h"

/*
 * The span of @as_index on @cpu, narrowed to what is still pending there: the
 * hull of its batch entries and of the entries its requests still carry.
 * Without it a span only grows until its count drops to 0, and a CPU that
 * always has something in flight (stamped unmaps posted lazily, one after
 * another) comes to span its whole heap: every install anywhere in the
 * address space then looks like a reused address and costs a whole-AS
 * shootdown (node's worker threads: 247 interrupts in a replay, none of
 * them over an address still pending).
 *
 * Only the owner writes the bounds, so no reader sees them move but
 * through here and span_add(); each store only narrows (the new hull is
 * inside the old one, which covered every entry still pending), so a
 * reader that mixes an old bound with a new one still covers every entry
 * still pending: what the narrowing leaves out has completed, every target
 * flushed.
 */
static void span_narrow(struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index,
			struct pending_span *b)
{
	const struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint64_t lo = ~0ULL, hi = 0;

	for (uint32_t i = 0; i < c->nr_pending; i++)
		if (c->pending[i].as_index == as_index)
			tlbpol__hull_add(&c->pending[i], &lo, &hi);
	/* Every request that took entries from the batch and has not released
	 * them (whether armed yet or not): a part's entries drop to 0 only in
	 * tlbpol__release_entries(). */
	for (uint32_t r = 0; r < TLBPOL_REQS; r++)
		for (uint32_t k = 0; k < c->reqs[r].nr_flushes; k++) {
			const struct req_flush *rf = &c->reqs[r].flushes[k];

			if (rf->entries && rf->as_index == as_index)
				hull_widen(&lo, &hi, rf->lo, rf->hi);
		}
	if (lo > prim_load_relaxed(&b->lo))
		prim_store_relaxed(&b->lo, lo);
	if (hi < prim_load_relaxed(&b->hi))
		prim_store_relaxed(&b->hi, hi);
}

static void span_sub(struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index, uint32_t n)
{
	struct pending_span *b = span_of(eng, cpu, as_index);
	uint32_t was = prim_load_relaxed(&b->count_global);
	uint32_t left = span_count(was) - n;

	/* The global flag goes with the last entry, in the same store. */
	prim_store_release(&b->count_global, left ? was - n : 0u);
	if (left) {
		span_narrow(eng, cpu, as_index, b);
	} else {
		prim_store_relaxed(&b->lo, ~0ULL);
		prim_store_relaxed(&b->hi, 0ULL);
		if (span_global(was))
			prim_fetch_sub_release(&eng->global_pending, 1u);
		prim_fetch_sub_release(&eng->as[as_index].pending, 1u);
	}
}

/* The entries of a completed request are no longer pending in their ASes. */
void tlbpol__release_entries(struct tlbpol_engine *eng, uint32_t cpu, struct request *s)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		uint32_t n = s->flushes[k].entries;

		/* Released before the span is narrowed, which must leave them out. */
		s->flushes[k].entries = 0;
		if (n)
			span_sub(eng, cpu, s->flushes[k].as_index, n);
	}
}

/*
 * The oldest batch entry @cpu still has pending, in its batch or in a lazy
 * request not yet acknowledged by every target.
 */
uint64_t tlbpol__oldest_seq(const struct tlbpol_engine *eng, uint32_t cpu)
{
	const struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint64_t oldest = ~0ULL;

	for (uint32_t i = 0; i < c->nr_pending; i++)
		if (c->pending[i].seq < oldest)
			oldest = c->pending[i].seq;
	for (uint32_t i = 0; i < TLBPOL_REQS; i++)
		if (req_busy(c, i) && c->reqs[i].min_seq < oldest)
			oldest = c->reqs[i].min_seq;
	return oldest;
}

/*
 * Run the deferred frees whose flushes have all completed.  A free waits for
 * every entry that was pending when it was registered (seq <= after_seq);
 * entries complete out of order (BY_WRITEBACK before BY_FREE, lazy requests
 * as their targets tick), so what matters is the oldest one still pending.
 */
void tlbpol__run_dfrees(struct tlbpol_engine *eng, uint32_t cpu)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint64_t oldest;

	if (!c->dfree_count)
		return;
	oldest = tlbpol__oldest_seq(eng, cpu);
	while (c->dfree_count && c->dfree[c->dfree_head].after_seq < oldest) {
		struct dfree d = c->dfree[c->dfree_head];

		c->dfree_head = (c->dfree_head + 1) % TLBPOL_DFREE_SLOTS;
		c->dfree_count--;
		prim_count(&c->cnt.task.deferred_frees, 1);
		d.fn(d.arg);
	}
}

void tlbpol__settle(struct tlbpol_engine *eng, uint32_t cpu, int caught_up)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);

	if (caught_up && c->catchup_as) {
		gen_raise(local_gen_of(eng, cpu, c->catchup_as - 1), c->catchup_gen);
		c->catchup_as = 0;
	}
	if (c->leaving_as) {
		prim_fetch_and(&eng->as[c->leaving_as - 1].leaving[cpu / 64],
			       ~(1ULL << (cpu % 64)));
		c->leaving_as = 0;
	}
}
