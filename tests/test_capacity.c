/* SPDX-License-Identifier: MIT */
/*
 * test_capacity: the per-CPU queues are sized by what a CPU has in flight,
 * and a full one falls back to completing work, never to dropping it.
 *  - a full deferred-free queue (32 per CPU) completes what the CPU has
 *    pending first: every free runs, and only after the target CPU has
 *    flushed the pages it waited for;
 *  - the same with lazy work pending: the full queue completes the lazy
 *    requests in flight too (the target flushes them before any free runs);
 *  - every free queued behind one lazy request in flight, past the queue's
 *    size: each runs exactly once, none before the target's flush, and the
 *    call that finds the queue full is not refused (a queue still full
 *    after its drain must refuse, -EBUSY, never take the oldest's slot);
 *  - a receiver whose round holds fewer ranges (TLBPOL__RECV_RANGES(), 33)
 *    than a request carries (TLBPOL__RANGES(), 66) flushes the parts past
 *    them whole, and still every one of them;
 *  - a lazy request holds fewer ranges (TLBPOL__LAZY_RANGES(), 4) than a
 *    part below the ceiling may need: that part goes out as a whole-AS
 *    flush, flushed on the target.
 * (Lazy slots and request parts past their capacity: test_layout.c.)
 */
#include <errno.h>
#include <stdio.h>

#include "support/harness.h"

/* Calls past which the queue must have been found full: TLBPOL_DFREE_SLOTS
 * in lib/core/internal.h is 32; any queue of up to 63 passes. */
#define CALLS 64

struct free_probe {
	struct harness *h;
	int ran;
	int early; /* frees that ran before CPU 1 flushed anything */
};

static void probe_free(void *arg)
{
	struct free_probe *p = arg;

	p->ran++;
	if (!p->h->flushes_on[1])
		p->early++;
}

/*
 * CPU 0 changes a page (due @deadline) and queues a free behind it, again
 * and again, CPU 1 running the address space and never ticking: the free
 * queue fills, and the call that finds it full must first complete the
 * pages on CPU 1, then run every free.
 */
static void fill_free_queue(uint32_t kind, uint32_t flags, uint32_t deadline)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_as *as;
	struct free_probe p = { &h, 0, 0 };
	int queued = 0, drained = 0;

	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.rules = TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST;
	h_engine_cfg(&h, &cfg);
	as = h_as_run(&h, 1, 2);
	h_reset_log(&h);
	for (uint64_t i = 0; i < CALLS && !drained; i++) {
		struct tlbpol_decision d;
		struct tlbpol_event ev = h_event(kind, flags, 0x400000 + i * 0x2000, 1,
						 P | W | U | A, 0);
		int before;

		assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, &d), 0);
		assert_int_equal(d.deadline, deadline);
		before = tlbpol_frees_pending(h.eng, 0);
		assert_int_equal(tlbpol_defer_free(h.eng, 0, probe_free, &p), 0);
		queued++;
		if (tlbpol_frees_pending(h.eng, 0) <= before)
			drained = 1;
		else
			assert_int_equal(h.flushes_on[1], 0); /* still waiting */
	}
	printf("# %d frees queued before the queue was full\n", queued - 1);
	assert_true(drained);
	/* Every free queued ran, none before CPU 1's flush. */
	assert_int_equal(p.ran + tlbpol_frees_pending(h.eng, 0), queued);
	assert_int_equal(p.early, 0);
	assert_true(h.flushes_on[1] >= 1);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(p.ran, queued);
	assert_int_equal(p.early, 0);
	tlbpol_engine_free(h.eng);
}

static void test_dfree_full(void **state)
{
	(void)state;
	fill_free_queue(TLBPOL_EV_RECLAIM, 0, TLBPOL_BY_FREE);
}

static void test_dfree_full_lazy(void **state)
{
	(void)state;
	fill_free_queue(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE, TLBPOL_BY_LAZY);
}

/* Two CPUs running the first of @n address spaces with @rules. */
static void engine_n_as(struct harness *h, struct tlbpol_as **as, uint32_t n, uint64_t rules)
{
	struct tlbpol_config cfg;

	h_config(h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.rules = rules;
	h_engine_cfg(h, &cfg);
	for (uint32_t a = 0; a < n; a++)
		assert_int_equal(tlbpol_as_open(h->eng, a + 1, &as[a]), 0);
	assert_int_equal(tlbpol_switch(h->eng, 0, as[0], NULL), 0);
	assert_int_equal(tlbpol_switch(h->eng, 1, as[0], NULL), 0);
	h_reset_log(h);
}

/* CPU @cpu's flushes of address space @tag in the log: how many, of which
 * kind (the last), and their pages. */
static uint32_t flushes_of(const struct harness *h, uint32_t cpu, uint64_t tag, uint32_t *kind,
			   uint64_t *pages)
{
	uint32_t n = 0;

	*pages = 0;
	for (uint32_t i = 0; i < h->nr_log; i++)
		if (h->log[i].cpu == cpu && h->log[i].as_tag == tag) {
			n++;
			*kind = h->log[i].kind;
			*pages += h->log[i].pages;
		}
	return n;
}

/* Scattered pages (two apart: one range each) at @base in @as, by CPU 0. */
static void scatter(struct harness *h, struct tlbpol_as *as, uint32_t kind, uint32_t flags,
		    uint64_t base, uint32_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		struct tlbpol_decision d;
		struct tlbpol_event ev = h_event(kind, flags, base + i * 0x2000, 1, P | W | U | A, 0);

		assert_int_equal(tlbpol_submit(h->eng, as, 0, &ev, &d), 0);
	}
}

/*
 * One request of two parts of 30 ranges each (each below the ceiling: page
 * flushes, 60 ranges of the request's 66), to a receiver whose round holds
 * 33: the first part's pages, the second whole.  FOOTPRINT and GEN_SKIP
 * off, so that the target takes every part as sent and flushes the second
 * whole only for want of room.
 */
static void test_receiver_full(void **state)
{
	struct harness h;
	struct tlbpol_as *as[2];
	uint32_t kind = ~0u;
	uint64_t pages;

	(void)state;
	engine_n_as(&h, as, 2,
		    TLBPOL_RULES_DEFAULT & ~(TLBPOL_RULE_BROADCAST | TLBPOL_RULE_FOOTPRINT |
					     TLBPOL_RULE_GEN_SKIP));
	scatter(&h, as[0], TLBPOL_EV_RECLAIM, 0, 0x100000, 30);
	scatter(&h, as[1], TLBPOL_EV_RECLAIM, 0, 0x100000, 30);
	h_reset_log(&h);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 60);
	assert_int_equal(h.ipi_calls, 1);
	/* The initiator's own: both exact. */
	assert_int_equal(flushes_of(&h, 0, 1, &kind, &pages), 1);
	assert_int_equal(pages, 30);
	assert_int_equal(flushes_of(&h, 0, 2, &kind, &pages), 1);
	assert_int_equal(pages, 30);
	/* The receiver's: the first exact, the second whole, none missing. */
	assert_int_equal(flushes_of(&h, 1, 1, &kind, &pages), 1);
	assert_int_equal(kind, TLBPOL_FLUSH_PAGES);
	assert_int_equal(pages, 30);
	assert_int_equal(flushes_of(&h, 1, 2, &kind, &pages), 1);
	assert_int_equal(kind, TLBPOL_FLUSH_AS);
	tlbpol_engine_free(h.eng);
}

/*
 * A lazy part of 6 scattered pages (below the ceiling, past a lazy
 * request's 4 ranges): posted as one whole-AS flush, which the target
 * flushes at its tick.
 */
static void test_lazy_ranges_full(void **state)
{
	struct harness h;
	struct tlbpol_as *as[1];
	uint32_t kind = ~0u;
	uint64_t pages;

	(void)state;
	engine_n_as(&h, as, 1, TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST);
	scatter(&h, as[0], TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE, 0x200000, 6);
	h_reset_log(&h);
	h_tick(&h, 0); /* posts it */
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(flushes_of(&h, 1, 1, &kind, &pages), 0);
	h_tick(&h, 1); /* CPU 1 takes it */
	assert_int_equal(flushes_of(&h, 1, 1, &kind, &pages), 1);
	assert_int_equal(kind, TLBPOL_FLUSH_AS);
	/* And at the capacity, still exact: 4 pages. */
	scatter(&h, as[0], TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE, 0x400000, 4);
	h_reset_log(&h);
	h_tick(&h, 0);
	h_tick(&h, 1);
	assert_int_equal(flushes_of(&h, 1, 1, &kind, &pages), 1);
	assert_int_equal(kind, TLBPOL_FLUSH_PAGES);
	assert_int_equal(pages, 4);
	tlbpol_engine_free(h.eng);
}

/* One deferred free of test_dfree_in_flight(): how often it ran, and how
 * often before CPU 1 had flushed anything. */
struct one_free {
	struct harness *h;
	int runs;
	int early;
};

static void one_free_run(void *arg)
{
	struct one_free *f = arg;

	f->runs++;
	if (!f->h->flushes_on[1])
		f->early++;
}

/*
 * CPU 0 posts one lazy request to CPU 1, which never ticks, then queues
 * CALLS frees behind it: the queue fills (every free waits for the
 * request), and the call that finds it full forces the request and runs
 * them.  Were the queue still full after that (a drain that left work
 * pending), its next slot would be its oldest free's: written over, that
 * free never runs and the ring, counting past its size, runs another one
 * twice -- a double free in the host.  So: each free accepted runs exactly
 * once and never before CPU 1's flush, one refused (-EBUSY, the only
 * failure allowed) never runs; and the full queue refuses none.
 */
static void test_dfree_in_flight(void **state)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE,
					 0x400000, 1, P | W | U | A, 0);
	struct one_free f[CALLS];
	int refused[CALLS] = { 0 }, nr_refused = 0;

	(void)state;
	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.rules = TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST;
	h_engine_cfg(&h, &cfg);
	as = h_as_run(&h, 1, 2);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_LAZY);
	h_reset_log(&h);
	h_tick(&h, 0); /* posted, nobody interrupted */
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(h.flushes_on[1], 0);
	for (int i = 0; i < CALLS; i++) {
		int ret;

		f[i] = (struct one_free){ &h, 0, 0 };
		ret = tlbpol_defer_free(h.eng, 0, one_free_run, &f[i]);
		assert_true(ret == 0 || ret == -EBUSY);
		refused[i] = ret == -EBUSY;
		nr_refused += refused[i];
	}
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(tlbpol_frees_pending(h.eng, 0), 0);
	for (int i = 0; i < CALLS; i++) {
		assert_int_equal(f[i].runs, refused[i] ? 0 : 1);
		assert_int_equal(f[i].early, 0);
	}
	/* The drain emptied the queue: the call that found it full queued. */
	assert_int_equal(nr_refused, 0);
	assert_true(h.flushes_on[1] >= 1);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_dfree_full),
	cmocka_unit_test(test_dfree_full_lazy),
	cmocka_unit_test(test_dfree_in_flight),
	cmocka_unit_test(test_receiver_full),
	cmocka_unit_test(test_lazy_ranges_full));
