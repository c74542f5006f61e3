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

static void span_sub(struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index, uint32_t n)
{
	struct pending_span *b = span_of(eng, cpu, as_index);
	uint32_t left = prim_load_relaxed(&b->count) - n;

	prim_store_release(&b->count, left);
	if (!left) {
		prim_store_relaxed(&b->lo, ~0ULL);
		prim_store_relaxed(&b->hi, 0ULL);
		if (prim_load_relaxed(&b->global)) {
			prim_store_relaxed(&b->global, 0u);
			prim_fetch_sub_release(&eng->global_pending, 1u);
		}
		prim_fetch_sub_release(&eng->as[as_index].pending, 1u);
	}
}

/* The entries of a completed request are no longer pending in their ASes. */
void tlbpol__release_entries(struct tlbpol_engine *eng, uint32_t cpu, struct request *s)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		if (s->flushes[k].entries)
			span_sub(eng, cpu, s->flushes[k].as_index, s->flushes[k].entries);
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
