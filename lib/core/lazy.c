/* SPDX-License-Identifier: MIT */
/*
 * lazy.c - lazy requests in flight: their slots, forcing them, ageing them,
 * and settling the flush stamps that name them.
 *
 * A lazy request (BY_LAZY work, LATR's unmaps and flush stamps) is posted
 * by shootdown.c with no interrupt and no wait; its targets serve it as they
 * tick, switch or serve their inbox.  Here the initiator completes one when
 * it must (a full set of slots, tlbpol_flush(.., BY_LAZY), an install over
 * its addresses), lets the ones its targets are slow to take age into
 * interrupts (tlbpol_tick()), and any CPU waits for those a stamp covers
 * (tlbpol_stamp_settle()).  Called by drain.c, batch.c, submit.c and
 * stamp.c; calls down into shootdown.c, skip.c and receive.c.
 */
#include "internal.h"

/* A free lazy request, completing the oldest in flight if all are busy. */
struct request *tlbpol__lazy_request(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				     uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	tlbpol__reap(eng, me);
	for (uint32_t i = 1; i < TLBPOL_REQS; i++)
		if (!req_busy(c, i))
			return &c->reqs[i];
	tlbpol__force_lazy(eng, prm, me);
	return &c->reqs[1];
}

/* Complete lazy request @s in flight: interrupt whoever has not claimed it
 * yet and may not catch up by itself, and wait. */
static void force_one(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		      struct request *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	/* Those that went preempted, idle or lazy since the post catch up by
	 * themselves (and wait_acks() keeps taking back such targets). */
	tlbpol__take_back(eng, prm, me, s, &c->targets);
	tlbpol__kick(eng, prm, me, &c->targets, &c->cnt.task);
	tlbpol__wait_acks(eng, prm, me, s, NULL, 0);
}

/* Complete every lazy request in flight (tlbpol_flush(.., BY_LAZY)). */
void tlbpol__force_lazy(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	for (uint32_t i = 1; i < TLBPOL_REQS; i++)
		if (req_busy(c, i))
			force_one(eng, prm, me, &c->reqs[i]);
	tlbpol__reap(eng, me);
}

/*
 * Complete the lazy requests in flight that carry entries of @as_index
 * whose addresses meet [@first, @last] (struct req_flush's lo and hi,
 * which this CPU wrote): an install there must not be reached through
 * another CPU's stale entry.  The others may go on completing at their
 * targets' ticks.
 */
void tlbpol__force_lazy_over(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			     uint32_t me, uint32_t as_index, uint64_t first, uint64_t last)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	for (uint32_t i = 1; i < TLBPOL_REQS; i++) {
		struct request *s = &c->reqs[i];

		if (!req_busy(c, i))
			continue;
		for (uint32_t k = 0; k < s->nr_flushes; k++) {
			const struct req_flush *rf = &s->flushes[k];

			if (rf->entries && rf->as_index == as_index &&
			    hull_meets(rf->lo, rf->hi, first, last)) {
				force_one(eng, prm, me, s);
				break;
			}
		}
	}
	tlbpol__reap(eng, me);
}

/*
 * Is lazy request @i of @owner one that stamp @seq covers and that has not
 * completed?  Read from any CPU: while `acks` is not 0 the owner writes
 * nothing in the request (struct request), so a stamp_seq read beside a
 * non-zero count is that request's, or a newer one's (which only makes the
 * answer conservative).  The acquire pairs with each target's release of
 * its acknowledgement after its flush (receive.c): an answer of 0 orders
 * the caller's reuse of the frames after every target's flush.  The
 * sequence wraps (32 bits): compared as serial numbers.
 */
static int stamp_covers(const struct request *s, uint32_t seq)
{
	return prim_load_acquire(&s->acks) != 0 &&
	       (int32_t)(prim_load_acquire(&s->stamp_seq) - seq) <= 0;
}

int tlbpol__stamp_pending(const struct tlbpol_engine *eng, uint32_t owner, uint32_t seq)
{
	const struct tlbpol_cpu *o = cpu_of(eng, owner);

	for (uint32_t i = 1; i < TLBPOL_REQS; i++)
		if (stamp_covers(&o->reqs[i], seq))
			return 1;
	return 0;
}

/*
 * Lazy requests age as work due by a free does (tlbpol_tick()): one in
 * flight for cfg->free_ticks of @me's ticks has its unclaimed targets taken
 * back if they may catch up by themselves, and the others interrupted
 * (again every free_ticks ticks).  A target that goes idle without ticking
 * would otherwise hold the request, the deferred frees queued behind it and
 * its stamp for as long as it idles.  No wait: the interrupts are served
 * as they are, and a later reap finds the request complete.
 */
void tlbpol__age_lazy(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	if (eng->free_ticks == TLBPOL_FREE_TICKS_NEVER || !lazy_in_flight(c))
		return;
	for (uint32_t i = 1; i < TLBPOL_REQS; i++) {
		struct request *s = &c->reqs[i];

		if (!req_busy(c, i) || !prim_load_acquire(&s->acks) ||
		    c->ticks - s->aged_from < eng->free_ticks)
			continue;
		s->aged_from = c->ticks;
		if (tlbpol__take_back(eng, prm, me, s, &c->targets))
			tlbpol__kick(eng, prm, me, &c->targets, &c->cnt.task);
	}
	tlbpol__reap(eng, me);
}

/*
 * Another CPU's request @s, still the one numbered @q: are all its targets
 * that have not acknowledged yet unclaimed, and each one that may catch up
 * by itself?  Then a settler need not wait for them (it may not take them
 * back: see take_back()).  The shape and the targets are read first and
 * then the request is found still armed under @q: the owner writes both
 * only after its acks reached 0, and numbers the next request before arming
 * it, so what was read is the request's own (a seqlock's read side, with
 * the arming as the sequence).
 */
static int only_catchups_left(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			      const struct request *s, uint32_t q, struct tlbpol_cpuset *t)
{
	uint32_t shape = prim_load_acquire(&s->shape), n = tlbpol__unclaimed(eng, s, t);

	for_each_target(i, t, eng)
		if (tlbpol__skippable(eng, prm, (uint32_t)i, s, shape, 0) == SKIP_NO)
			return 0;
	prim_fence();
	return prim_load_acquire(&s->acks) == n && prim_load_acquire(&s->stamp_seq) == q;
}

/*
 * Another CPU's request @s: its unclaimed targets less those that may catch
 * up by themselves, into @t, to be interrupted.  Unvalidated (the request
 * may be completing and armed anew meanwhile): it only chooses whom to
 * interrupt, and a target left out wrongly is still waited for, served at
 * its tick or by the watchdog's interrupt.
 */
static void to_interrupt(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			 const struct request *s, struct tlbpol_cpuset *t)
{
	uint32_t shape = prim_load_acquire(&s->shape);

	tlbpol__unclaimed(eng, s, t);
	for_each_target(i, t, eng)
		if (tlbpol__skippable(eng, prm, (uint32_t)i, s, shape, 0) != SKIP_NO)
			t->bits[i / 64] &= ~(1ULL << (i % 64));
}

/*
 * Complete, from CPU @me, the lazy requests of @owner that stamp @seq
 * covers: interrupt their targets that have not claimed them (a lazy
 * request was posted without interrupts), then wait for every
 * acknowledgement, serving our own inbox (we may be a target, and a target
 * may be waiting for us).  A target that went preempted, idle or lazy after
 * the post catches up by itself before it uses the address space again, and
 * is not waited for: the owner takes it back, another settler stops waiting
 * once only such targets are left (the owner reaps the request at its
 * next call; until it completes, tlbpol_stamp_pending() still answers 1).
 * The watchdog (cfg->wait_limit) applies as in any wait.  A request that
 * completes and is replaced by the owner meanwhile (its stamp_seq changes)
 * is no longer waited for.
 */
void tlbpol__stamp_settle(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			  uint32_t me, uint32_t owner, uint32_t seq)
{
	struct tlbpol_cpu *c = cpu_of(eng, me), *o = cpu_of(eng, owner);

	for (uint32_t i = 1; i < TLBPOL_REQS; i++) {
		struct request *s = &o->reqs[i];
		uint32_t q = prim_load_acquire(&s->stamp_seq);

		if (!stamp_covers(s, seq))
			continue;
		/* We serve our own inbox below; the others are interrupted. */
		if (me == owner)
			tlbpol__take_back(eng, prm, me, s, &c->targets);
		else
			to_interrupt(eng, prm, s, &c->targets);
		c->targets.bits[me / 64] &= ~(1ULL << (me % 64));
		tlbpol__kick(eng, prm, me, &c->targets, &c->cnt.task);
		for (uint64_t turn = 1;
		     prim_load_acquire(&s->acks) && prim_load_acquire(&s->stamp_seq) == q; turn++) {
			tlbpol__serve(eng, prm, me);
			if (me == owner)
				tlbpol__take_back(eng, prm, me, s, &c->targets);
			else if (only_catchups_left(eng, prm, s, q, &c->targets))
				break;
			tlbpol__wait_turn(eng, me, s, turn);
		}
	}
	tlbpol__serve(eng, prm, me);
}

