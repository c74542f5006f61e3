/* SPDX-License-Identifier: MIT */
/*
 * mailbox.h - the interrupt of threads acting as CPUs.
 *
 * Where threads play CPUs there is no interrupt controller: ops->send_ipi
 * raises a flag in each target's mailbox, and the target polls its own
 * mailbox between the things it does (as a CPU takes an interrupt between
 * instructions) and, when it finds the flag raised, clears it and calls
 * tlbpol_handle_ipi() for itself.  The tests that run threads as CPUs and
 * tlbpol-bench's threads rows all deliver interrupts this way, and so does
 * the stress oracle's model machine (with the sequentially consistent
 * pair below); this is the one definition.
 *
 * A machine's mailboxes are an array, one struct mbox per CPU, indexed by
 * CPU number.  Each is a cache line of its own: the owner polls its flag
 * after every operation (tlbpol-bench does, in its timed loop), and a line
 * shared with another CPU's flag or with other data would bounce between
 * the cores for nothing.
 *
 * Ordering.  The engine publishes a request in the target's inbox before
 * it calls ops->send_ipi, and the target's tlbpol_handle_ipi() reads that
 * inbox.  A real interrupt orders the two (delivery waits for the sender's
 * earlier stores); here the flag does: mbox_raise() stores it with release
 * semantics, after everything the sender did, and mbox_take() clears it
 * with an acquire exchange, before the handler runs.  A target that finds
 * the flag raised therefore sees the request that raised it (so it cannot
 * clear the flag and then miss the request, which would leave the
 * initiator spinning for an interrupt that nobody takes again).  The
 * exchange is a read-modify-write: a sender's raise lands either before it
 * (and is taken now) or after it (and stays raised for the next poll),
 * never lost in between.
 */
#ifndef TLBPOL_TESTS_COMMON_MAILBOX_H
#define TLBPOL_TESTS_COMMON_MAILBOX_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tlbpol/tlbpol.h>

#define MBOX_CACHELINE 64

struct mbox {
	/* Raised by any sender, cleared only by the CPU that owns it. */
	_Alignas(MBOX_CACHELINE) atomic_int raised;
	/*
	 * Interrupts sent to this CPU, each target of each send_ipi once
	 * (what tlbpol_stats.ipis_sent counts).  Counted before the flag is
	 * raised, so that an owner that has taken an interrupt sees it
	 * counted (the release and acquire of the flag order the count too);
	 * a count read first may run ahead of the flag, never behind it once
	 * the flag is taken.
	 */
	_Atomic uint64_t sent;
};

/* Interrupt the CPU that owns @mb. */
static inline void mbox_raise(struct mbox *mb)
{
	atomic_fetch_add_explicit(&mb->sent, 1, memory_order_relaxed);
	/* Pairs with the acquire in mbox_take(): the request the engine
	 * published before calling send_ipi is visible to the handler. */
	atomic_store_explicit(&mb->raised, 1, memory_order_release);
}

/*
 * ops->send_ipi's body: interrupt every CPU of @targets, whose mailboxes
 * are @box[0 .. @nr_cpus - 1].  A target past the array is the engine's
 * bug, and stops the program rather than write past it.
 */
static inline void mbox_send(struct mbox *box, uint32_t nr_cpus,
			     const struct tlbpol_cpuset *targets)
{
	for (int c = tlbpol_cpuset_next(targets, -1); c >= 0; c = tlbpol_cpuset_next(targets, c)) {
		if ((uint32_t)c >= nr_cpus) {
			fprintf(stderr, "mbox_send: cpu %d of %u\n", c, nr_cpus);
			abort();
		}
		mbox_raise(&box[c]);
	}
}

/*
 * Is an interrupt waiting?  Only a hint, for a CPU deciding whether to
 * poll now or later: the flag may be raised an instant after.  Orders
 * nothing: mbox_take() is what does.
 */
static inline int mbox_raised(const struct mbox *mb)
{
	return atomic_load_explicit(&mb->raised, memory_order_relaxed);
}

/*
 * Take the interrupt of @mb, by its owner only: 1 if one was waiting (the
 * flag is cleared), 0 if not.  The relaxed look first keeps the common
 * case (nothing waiting) to a plain load: an exchange is a locked
 * instruction that takes the line from the sender's core at every poll.
 */
static inline int mbox_take(struct mbox *mb)
{
	if (!atomic_load_explicit(&mb->raised, memory_order_relaxed))
		return 0;
	/* Pairs with the release in mbox_raise(). */
	return atomic_exchange_explicit(&mb->raised, 0, memory_order_acquire);
}

/*
 * Poll: if an interrupt is waiting for @cpu, take it and run its handler.
 * Return: 0 if none was waiting, else what tlbpol_handle_ipi() returned
 * (requests served, or a negative errno the caller checks).
 */
static inline int mbox_serve(struct mbox *box, struct tlbpol_engine *eng, uint32_t cpu)
{
	if (!mbox_take(&box[cpu]))
		return 0;
	return tlbpol_handle_ipi(eng, cpu);
}

/*
 * The same flag, sequentially consistent and not counted: the stress
 * oracle's (tests/oracle/interrupts.c).  The oracle keeps every word its
 * soundness argument reads across CPUs in the one total order of seq_cst
 * operations (machine.h, oracle.h), and it is the checker the engine's
 * ordering is judged by, so its interrupt is no weaker than that:
 *
 *  - mbox_raise_seq_cst() is a seq_cst store (a release, and more): it
 *    pairs with the exchange of mbox_take_seq_cst() as mbox_raise()'s
 *    release pairs with mbox_take()'s acquire, so the handler sees the
 *    request the engine published before its ops->send_ipi;
 *  - mbox_take_seq_cst() exchanges at every poll, the flag raised or not,
 *    with no relaxed look first: each poll is then a read-modify-write in
 *    the total order (on x86 a locked instruction, a full barrier between
 *    what the polling CPU did before and after), as it always was in the
 *    oracle; mbox_take()'s plain load on an empty mailbox is neither.
 *
 * Neither touches `sent`: the oracle counts the IPIs of each send_ipi
 * itself, and also raises flags that are no IPI of the engine's (its
 * stall watchdog waking everyone), which must not count.  mbox_sent() of
 * a mailbox used only through these is 0.
 */
static inline void mbox_raise_seq_cst(struct mbox *mb)
{
	/* Pairs with the exchange in mbox_take_seq_cst(). */
	atomic_store_explicit(&mb->raised, 1, memory_order_seq_cst);
}

/* Take the interrupt of @mb, by its owner only: 1 if one was waiting. */
static inline int mbox_take_seq_cst(struct mbox *mb)
{
	/* Pairs with the store in mbox_raise_seq_cst(). */
	return atomic_exchange_explicit(&mb->raised, 0, memory_order_seq_cst);
}

/* Interrupts sent to the CPU of @mb so far. */
static inline uint64_t mbox_sent(const struct mbox *mb)
{
	return atomic_load_explicit(&mb->sent, memory_order_relaxed);
}

/* Interrupts sent to any of the @nr_cpus CPUs of @box so far. */
static inline uint64_t mbox_sent_total(const struct mbox *box, uint32_t nr_cpus)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < nr_cpus; c++)
		n += mbox_sent(&box[c]);
	return n;
}

#endif
