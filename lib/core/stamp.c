/* SPDX-License-Identifier: MIT */
/*
 * stamp.c - flush stamps (TLBPOL_RULE_FLUSH_STAMP): freed frames go back to
 * the host's allocator at once, and are flushed for only if reused before
 * every CPU got to their flush.
 *
 * Xen keeps a clock of flushes and stamps a freed page with it
 * (page->tlbflush_timestamp); when the page is allocated again,
 * tlbflush_filter() leaves out every CPU that has flushed since
 * (xen/include/asm-x86/flushtlb.h).  LUF (Byungchul Park, "mm: LUF (lazy
 * unmap flush)", LKML 2024-2025) defers an unmapped frame's flush until the
 * frame is allocated again.  Here the clock is each initiator's own: the
 * stamped events of an unmap are posted as one lazy request (no interrupt,
 * completed as its targets tick, switch or serve their inbox), numbered
 * among the initiator's lazy posts; the stamp is (initiator, number).  The
 * frames are safe to reuse once no lazy request of the initiator with a
 * number up to the stamp's is still in flight: every target has flushed
 * and acknowledged it.  Which CPUs are targets is what every deferred flush
 * uses (footprints, lazy and preempted CPUs, retained address spaces): a
 * CPU left out flushes before it uses the address space again, as
 * tlbpol_switch() and tlbpol_cpu_state() make it.
 *
 * Public calls, top layer: calls drain.c, lazy.c and shootdown.c.
 */
#include "call.h"

/* A stamp: the lazy-post number in the high word, initiator + 1 in the low
 * (0, no CPU: nothing to settle). */
static inline uint64_t stamp_make(uint32_t cpu, uint32_t seq)
{
	return ((uint64_t)seq << 32) | ((uint64_t)cpu + 1);
}

/* The lazy-post number of @stamp. */
static inline uint32_t stamp_seq(uint64_t stamp)
{
	return (uint32_t)(stamp >> 32);
}

/* The initiator of @stamp, or -1 if it names no CPU of @eng. */
static inline int64_t stamp_cpu(const struct tlbpol_engine *eng, uint64_t stamp)
{
	uint64_t cpu1 = stamp & 0xffffffffULL;

	return cpu1 >= 1 && cpu1 <= eng->nr_cpus ? (int64_t)(cpu1 - 1) : -1;
}

int tlbpol_stamp(struct tlbpol_engine *eng, uint32_t cpu, uint64_t *stamp)
{
	struct tlbpol_cpu *c;
	int n = cpu_call_enter(eng, cpu, stamp != 0, &c);

	if (n)
		return n;
	/*
	 * Nothing stamped was submitted here since the last stamp: the events
	 * were submitted on another CPU (a task that migrated between its
	 * unmap and this call), whose batch and lazy requests this stamp would
	 * not cover.  A stamp of 0 would say "nothing to settle" of frames
	 * other CPUs may still translate to.
	 */
	if (!c->stamp_owed) {
		call_leave(c);
		return -E_NOENT;
	}
	c->stamp_owed = 0;
	n = tlbpol__drain(eng, params_of(eng), cpu, TLBPOL_BY_FREE,
			  DRAIN_SERVE | DRAIN_POST_LAZY | DRAIN_REAP);
	/*
	 * Everything stamped this CPU submitted is now in a lazy request
	 * numbered up to stamp_next, or complete (a request with no target
	 * completes as it is posted, and the drain reaped after its post).
	 * Read after the frees the drain ran: they write neither `busy` nor
	 * stamp_next, and a free cannot call back in for this CPU (call.h).
	 */
	*stamp = lazy_in_flight(c) ? stamp_make(cpu, c->stamp_next) : 0;
	call_leave(c);
	return n;
}

int tlbpol_stamp_settle(struct tlbpol_engine *eng, uint32_t cpu, uint64_t stamp)
{
	const struct tlbpol_params *prm;
	struct tlbpol_cpu *c;
	int64_t owner;
	int n;

	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	owner = stamp ? stamp_cpu(eng, stamp) : 0;
	n = cpu_call_enter(eng, cpu, owner >= 0, &c);
	if (n)
		return n;
	n = 0;
	if (stamp && tlbpol__stamp_pending(eng, (uint32_t)owner, stamp_seq(stamp))) {
		prm = params_of(eng);
		tlbpol__stamp_settle(eng, prm, cpu, (uint32_t)owner, stamp_seq(stamp));
		if ((uint32_t)owner == cpu)
			tlbpol__reap(eng, cpu);
		n = 1;
	}
	call_leave(c);
	return n;
}

int tlbpol_stamp_pending(const struct tlbpol_engine *eng, uint64_t stamp)
{
	int64_t owner;

	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (!stamp)
		return 0;
	owner = stamp_cpu(eng, stamp);
	if (owner < 0)
		return -E_INVAL;
	return tlbpol__stamp_pending(eng, (uint32_t)owner, stamp_seq(stamp));
}
