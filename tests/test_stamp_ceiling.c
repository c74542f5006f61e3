/* SPDX-License-Identifier: MIT */
/*
 * test_stamp_ceiling: a stamped unmap or reclaim pass (TLBPOL_EVF_STAMP,
 * tlbpol_stamp()) is flushed as every other batched pass is: up to the
 * flush ceiling as page ranges, past it as one whole-address-space flush,
 * on the initiator and on every receiver alike.  Linux flushes a reclaim
 * batch with one flush per CPU (arch_tlbbatch_flush(), 72b252aed506 "mm:
 * send one IPI per CPU to TLB flush all entries after unmapping pages"),
 * and a munmap past tlb_single_page_flush_ceiling (33 pages, 611ae8e3f520
 * "x86/tlb: enable tlb flush range support for x86") with one whole-mm
 * flush; a pass of 64 one-page events must not cost the unmapping CPU 64
 * page invalidations on top of that.
 *
 * The harness's flush_local records every call on every CPU (kind, ranges,
 * pages); interrupts are delivered at once.
 */
#include "support/harness.h"

#define DEF TLBPOL_RULES_DEFAULT
#define LNX TLBPOL_RULES_LINUX
#define CEIL TLBPOL_DEFAULT_FLUSH_CEILING
#define CLEAN (P | W | U | A) /* reclaim of a clean page: due by the free */
#define BASE 0x40000000ULL

/* What one CPU's flush_local calls came to since the log was reset. */
struct tally {
	uint32_t calls, whole, page_calls, ranges;
	uint64_t pages;
};

static struct tally tally(const struct harness *h, uint32_t cpu)
{
	struct tally t = { 0, 0, 0, 0, 0 };

	assert_true(h->nr_log < H_MAX_LOG); /* nothing lost */
	for (uint32_t i = 0; i < h->nr_log; i++) {
		const struct h_flush *l = &h->log[i];

		if (l->cpu != cpu)
			continue;
		t.calls++;
		if (l->kind != TLBPOL_FLUSH_PAGES) {
			t.whole++;
			continue;
		}
		t.page_calls++;
		t.ranges += l->nr_ranges;
		t.pages += l->pages;
	}
	return t;
}

static struct tlbpol_as *setup(struct harness *h, uint64_t rules)
{
	struct tlbpol_as *as;

	h_engine(h, 2, TLBPOL_ARCH_X86_64, rules);
	as = h_as_run(h, 1, 2);
	h_reset_log(h);
	return as;
}

/* CPU 0 reclaims @n clean pages, one event each, @stride pages apart
 * (2: no two adjacent, so each is its own range), stamped if @stamped. */
static void reclaim_pass(struct harness *h, struct tlbpol_as *as, uint32_t n, uint32_t stride,
			 int stamped)
{
	for (uint32_t i = 0; i < n; i++) {
		struct tlbpol_event ev = h_event(TLBPOL_EV_RECLAIM, stamped ? TLBPOL_EVF_STAMP : 0,
						 BASE + (uint64_t)i * stride * 4096, 1, CLEAN, 0);

		assert_int_equal(tlbpol_submit(h->eng, as, 0, &ev, NULL), 0);
	}
}

/* @t is exactly one whole-AS flush. */
static void assert_one_whole(struct tally t)
{
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.whole, 1);
	assert_int_equal(t.pages, 0);
}

/* @t is exactly one page flush of @n pages in @ranges ranges. */
static void assert_one_ranged(struct tally t, uint32_t n, uint32_t ranges)
{
	assert_int_equal(t.calls, 1);
	assert_int_equal(t.whole, 0);
	assert_int_equal(t.ranges, ranges);
	assert_int_equal(t.pages, n);
}

/*
 * 64 stamped reclaims, past the ceiling: tlbpol_stamp() leaves the
 * initiator with one whole-AS flush and no page flush at all (none while
 * the events were submitted either), posts the rest with no interrupt, and
 * the receiver's share is one whole-AS flush when it settles.
 */
static void test_past_ceiling_settled_by_receiver(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, DEF);
	uint64_t st;

	(void)s;
	reclaim_pass(&h, as, 64, 1, 1);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 64);
	assert_true(st != 0);
	assert_int_equal(h.ipi_calls, 0);
	assert_one_whole(tally(&h, 0));
	assert_int_equal(tally(&h, 1).calls, 0);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 1);
	/* The frame comes back on the other CPU, which serves its inbox. */
	h_reset_log(&h);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 1, st), 1);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_one_whole(tally(&h, 1));
	assert_int_equal(tally(&h, 0).calls, 0);
	tlbpol_engine_free(h.eng);
}

/* The same settled by the initiator: the receiver is interrupted once and
 * flushes once, whole; the initiator flushes nothing more. */
static void test_past_ceiling_settled_by_initiator(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, DEF);
	uint64_t st;

	(void)s;
	reclaim_pass(&h, as, 64, 2, 1);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 64);
	assert_one_whole(tally(&h, 0));
	h_reset_log(&h);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 0, st), 1);
	assert_int_equal(h.ipi_calls, 1);
	assert_one_whole(tally(&h, 1));
	assert_int_equal(tally(&h, 0).calls, 0);
	tlbpol_engine_free(h.eng);
}

/* Or by the receiver's tick, the common case: one whole flush there. */
static void test_past_ceiling_settled_by_tick(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, DEF);
	uint64_t st;

	(void)s;
	reclaim_pass(&h, as, CEIL + 1, 2, 1);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), CEIL + 1);
	assert_one_whole(tally(&h, 0));
	h_tick(&h, 1);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_one_whole(tally(&h, 1));
	assert_int_equal(h.ipi_calls, 0);
	tlbpol_engine_free(h.eng);
}

/*
 * Up to the ceiling the pass stays page ranges, each page once: the
 * initiator's one flush names exactly the pass's pages (separate pages:
 * one range each; adjacent ones: merged into one range), and so does the
 * receiver's.  Separate pages only as many as a lazy request carries
 * ranges (TLBPOL__LAZY_RANGES(), the engine's sizing; past them a lazy
 * request flushes whole, as build() in batch.c says).
 */
#define LAZY_RANGES ((uint32_t)TLBPOL__LAZY_RANGES(TLBPOL_DEFAULT_BATCH_PAGES, CEIL))

static void below_ceiling(uint32_t n, uint32_t stride)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, DEF);
	uint32_t ranges = stride == 1 ? 1 : n;
	uint64_t st;

	reclaim_pass(&h, as, n, stride, 1);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), (int)n);
	assert_one_ranged(tally(&h, 0), n, ranges);
	h_reset_log(&h);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 1, st), 1);
	assert_one_ranged(tally(&h, 1), n, ranges);
	tlbpol_engine_free(h.eng);
}

static void test_below_ceiling_ranges(void **s)
{
	(void)s;
	below_ceiling(8, 1);
	below_ceiling(LAZY_RANGES, 2);
	below_ceiling(CEIL, 1); /* at the ceiling: still a range */
}

/*
 * The stamped pass costs what the same pass costs without the flag (a
 * reclaim completed by tlbpol_flush(.., BY_FREE), one shootdown) and what
 * it costs with the rule off (Linux's rules: tlbpol_stamp() completes it
 * with one shootdown): one whole-AS flush on each CPU past the ceiling,
 * one ranged flush of the pass's pages up to it.
 */
static void test_same_as_unstamped(void **s)
{
	static const uint32_t pass[][2] = {
		{ 8, 1 },	 { LAZY_RANGES, 2 }, { CEIL, 1 }, { CEIL + 1, 1 },
		{ CEIL + 1, 2 }, { 64, 1 },	     { 64, 2 },
	};

	(void)s;
	for (uint32_t k = 0; k < sizeof(pass) / sizeof(pass[0]); k++) {
		for (int way = 0; way < 3; way++) {
			struct harness h;
			struct tlbpol_as *as = setup(&h, way == 2 ? LNX : DEF);
			uint32_t n = pass[k][0], stride = pass[k][1];
			uint64_t st;

			reclaim_pass(&h, as, n, stride, way != 0);
			if (way == 0) {
				assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), (int)n);
			} else {
				assert_int_equal(tlbpol_stamp(h.eng, 0, &st), (int)n);
				assert_int_equal(tlbpol_stamp_settle(h.eng, 1, st), way == 1);
			}
			for (uint32_t cpu = 0; cpu < 2; cpu++) {
				if (n > CEIL)
					assert_one_whole(tally(&h, cpu));
				else
					assert_one_ranged(tally(&h, cpu), n, stride == 1 ? 1 : n);
			}
			tlbpol_engine_free(h.eng);
		}
	}
}

/*
 * Deferring the initiator's flush to tlbpol_stamp() must not lose it: a
 * pass larger than the batch holds (the batch posts lazy requests as it
 * fills) still ends, by the time tlbpol_stamp() returns, with a whole-AS
 * flush on the initiator after its last event, and in a few flushes, not
 * one per page.
 */
static void test_overfull_pass(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, DEF);
	uint32_t n = 2000, last = 0;
	uint64_t st;
	struct tally t;

	(void)s;
	reclaim_pass(&h, as, n, 2, 1);
	t = tally(&h, 0);
	assert_int_equal(t.pages, 0); /* no page-by-page flush while submitting */
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st) >= 0, 1);
	assert_true(st != 0);
	for (uint32_t i = 0; i < h.nr_log; i++)
		if (h.log[i].cpu == 0)
			last = i + 1;
	assert_true(last != 0);
	assert_int_not_equal(h.log[last - 1].kind, TLBPOL_FLUSH_PAGES);
	t = tally(&h, 0);
	assert_true(t.calls <= 16);
	assert_int_equal(t.pages, 0);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 1, st), 1);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(cmocka_unit_test(test_past_ceiling_settled_by_receiver),
	    cmocka_unit_test(test_past_ceiling_settled_by_initiator),
	    cmocka_unit_test(test_past_ceiling_settled_by_tick),
	    cmocka_unit_test(test_below_ceiling_ranges), cmocka_unit_test(test_same_as_unstamped),
	    cmocka_unit_test(test_overfull_pass));
