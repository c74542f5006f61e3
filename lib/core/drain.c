/* SPDX-License-Identifier: MIT */
/*
 * drain.c - a CPU's drain: serve, reap, flush, post, reap, run frees.
 *
 * What tlbpol_switch(), tlbpol_tick(), tlbpol_flush(), tlbpol_stamp() and a
 * full deferred-free queue (tlbpol_defer_free()) do with the work a CPU has
 * been asked for and the work it owes, in one order, the steps each caller
 * leaves out named by enum drain_step (layers.h).  Below the public calls
 * (cpu.c, submit.c, stamp.c); calls down into batch.c, lazy.c, shootdown.c,
 * receive.c and pending.c.
 */
#include "internal.h"

/*
 * Has work due by a free waited in @cpu's batch for cfg->free_ticks of its
 * ticks?  Such work waits for the host's tlbpol_flush(BY_FREE), or for the
 * batch to fill: on a CPU that unmaps and then goes quiet, neither comes,
 * and its deferred frees would wait for ever.  (Nothing is aging if
 * tlbpol_flush(BY_WRITEBACK) took it all: tlbpol__flush_batch().)
 */
static int free_work_aged(const struct tlbpol_engine *eng, const struct tlbpol_cpu *c)
{
	return c->free_aging && eng->free_ticks != TLBPOL_FREE_TICKS_NEVER &&
	       c->ticks - c->free_since >= eng->free_ticks;
}

/*
 * The batch holds no BY_LAZY entry any more: none is left that this CPU did
 * not flush when it was submitted (submit.c, flush_self_now()).  Here, never
 * in tlbpol__post_lazy_batch() itself: enqueue() posts a full batch before
 * it adds the entry of the event at hand, whose submit already said it was
 * not flushed here.
 */
static void lazy_flushed_here(struct tlbpol_cpu *c)
{
	if (!c->lazy_unflushed)
		return; /* the common case: no scan of the batch at every tick */
	for (uint32_t i = 0; i < c->nr_pending; i++)
		if (c->pending[i].deadline == TLBPOL_BY_LAZY)
			return;
	c->lazy_unflushed = 0;
}

/*
 * The order, and why:
 *
 *  1. Serve the inbox (DRAIN_SERVE): what other CPUs posted here is flushed
 *     and acknowledged before this CPU starts waits of its own (a flush or
 *     a forced lazy request waits for every target), so their initiators,
 *     and the frees queued behind their requests, do not wait for ours.
 *     Lazy requests interrupt nobody: a target's tick and switch are where
 *     they complete (LATR), through this serve.
 *  2. Reap, after the serve: the acknowledgements of this CPU's own lazy
 *     requests that came in while it served are collected, so the steps
 *     below force, age and count only what is still in flight, and a post
 *     finds the slots that completed free.
 *  3. Flush the batch's entries due BY_WRITEBACK..@upto (SYNC requests,
 *     complete when it returns), then force the lazy requests in flight
 *     (DRAIN_FORCE_LAZY), age them (DRAIN_AGE_LAZY), and post the batch's
 *     BY_LAZY entries (DRAIN_POST_LAZY).  The steps take disjoint work; the
 *     post comes last so that a request posted now is not forced or aged
 *     at once: it is to complete at its targets' ticks.
 *  4. Reap again (DRAIN_REAP): the requests that completed while this CPU
 *     flushed, forced and posted (a post with no target completes as it is
 *     posted) are collected before the frees.
 *  5. Run the deferred frees due, last.  A free waits for every entry
 *     pending when it was queued (tlbpol__oldest_seq()); an entry carried
 *     by a lazy request counts as pending until a reap has seen the
 *     request's acknowledgements all in, by an acquire that pairs with
 *     each target's release after its flush (receive.c): so a request must
 *     be reaped before the frees it holds back run, and what this call
 *     completed must be completed (flushed, forced) or reaped before
 *     step 5 for its frees to run now rather than at the next call.
 *
 * Returns the batch entries flushed and posted.  Skipping a step never
 * makes a free unsafe, only later: the frees wait for what is pending.
 */
int tlbpol__drain(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
		  uint32_t upto, uint32_t steps)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	int n = 0;

	if (steps & DRAIN_SERVE) {
		tlbpol__serve(eng, prm, cpu);
		tlbpol__reap(eng, cpu);
	}
	if (upto != TLBPOL_BY_NOW && (!(steps & DRAIN_AGED) || free_work_aged(eng, c))) {
		n = tlbpol__flush_batch(eng, prm, cpu, TLBPOL_BY_WRITEBACK, upto);
		/* One shootdown for the aged batch, counted if it had any. */
		if ((steps & DRAIN_AGED) && n > 0)
			prim_count(&c->cnt.task.aged_flushes, 1);
	}
	if (steps & DRAIN_FORCE_LAZY)
		tlbpol__force_lazy(eng, prm, cpu);
	if (steps & DRAIN_AGE_LAZY)
		tlbpol__age_lazy(eng, prm, cpu);
	if (steps & DRAIN_POST_LAZY) {
		if (c->nr_pending) /* an idle tick's batch is empty */
			n += tlbpol__post_lazy_batch(eng, prm, cpu);
		lazy_flushed_here(c);
	}
	if (steps & DRAIN_REAP)
		tlbpol__reap(eng, cpu);
	tlbpol__run_dfrees(eng, cpu);
	return n;
}
