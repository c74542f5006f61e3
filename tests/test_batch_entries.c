/* SPDX-License-Identifier: MIT */
/*
 * test_batch_entries: a CPU's batch holds TLBPOL__ENTRIES(batch_pages,
 * ceiling) entries (136 at the defaults), not batch_pages.  Past them an
 * event widens an entry of its address space (flushed whole), or, if none
 * can take it at no cost, the batch completes first.  Each case checks what
 * is flushed, that nothing is lost, and that a widened page still counts as
 * pending for an install over it and for a deferred free.
 */
#include "support/harness.h"

#define RO (P | U | A)
#define CAP ((uint32_t)TLBPOL__ENTRIES(TLBPOL_DEFAULT_BATCH_PAGES, TLBPOL_DEFAULT_FLUSH_CEILING))
#define VA(i) (0x10000000ULL + ((uint64_t)(i) << 13)) /* pages two apart: one entry each */

/* Two x86 CPUs, CPU 0 running as[0] and CPU 1 the last of @nr_as. */
static struct tlbpol_engine *setup(struct harness *h, uint32_t nr_as, struct tlbpol_as **as)
{
	h_engine(h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	for (uint32_t a = 0; a < nr_as; a++)
		assert_int_equal(tlbpol_as_open(h->eng, 1 + a, &as[a]), 0);
	assert_int_equal(tlbpol_switch(h->eng, 0, as[0], NULL), 0);
	assert_int_equal(tlbpol_switch(h->eng, 1, as[nr_as - 1], NULL), 0);
	h_reset_log(h);
	return h->eng;
}

static void unmap(struct harness *h, struct tlbpol_as *as, uint64_t va)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, 0, va, 1, RO, 0);
	struct tlbpol_decision d;

	assert_int_equal(tlbpol_submit(h->eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_FREE);
}

/* Unmaps of pages VA(@from) .. VA(@from + @n - 1), one entry each. */
static void unmap_n(struct harness *h, struct tlbpol_as *as, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i++)
		unmap(h, as, VA(i));
}

/* The last flush of the address space of tag @tag, on whichever CPU,
 * which must be of @kind. */
static const struct h_flush *flush_kind(const struct harness *h, uint64_t tag, uint32_t kind)
{
	const struct h_flush *f = NULL;

	for (uint32_t i = 0; i < h->nr_log; i++)
		if (h->log[i].as_tag == tag)
			f = &h->log[i];
	assert_non_null(f);
	assert_int_equal(f->kind, kind);
	return f;
}

/* setup() of two address spaces, and CPU 0's batch full: CAP entries, the
 * last @nr_as1 of them as[1]'s, nothing flushed yet. */
static void full_batch(struct harness *h, struct tlbpol_as **as, uint32_t nr_as1)
{
	setup(h, 2, as);
	unmap_n(h, as[0], 0, CAP - nr_as1);
	unmap_n(h, as[1], 0, nr_as1);
	assert_int_equal(h->nr_log, 0);
}

/* After a full batch went out ahead of a newcomer: the newcomer, as[1]'s
 * page at @va, was queued alone, and completes as an exact page flush. */
static const struct h_flush *newcomer_alone(struct harness *h, uint64_t va)
{
	const struct h_flush *f;

	h_reset_log(h);
	assert_int_equal(tlbpol_flush(h->eng, 0, TLBPOL_BY_FREE), 1);
	f = flush_kind(h, 2, TLBPOL_FLUSH_PAGES);
	assert_int_equal(f->first.va, va);
	return f;
}

/* One address space: the entry after CAP widens the last; one interrupt,
 * one whole-AS flush (CAP pages are past the ceiling anyway), every event
 * done. */
static void test_widen_one_as(void **s)
{
	struct harness h;
	struct tlbpol_as *as[1];

	(void)s;
	setup(&h, 1, as);
	unmap_n(&h, as[0], 0, CAP + 10);
	assert_int_equal(h.ipi_calls, 0); /* nothing completed early */
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), CAP + 10);
	assert_int_equal(h.ipi_calls, 1);
	flush_kind(&h, 1, TLBPOL_FLUSH_AS);
	tlbpol_engine_free(h.eng);
}

/*
 * Full, and the newcomer's address space has few entries (6, under the
 * ceiling): widening would turn its page flushes into a whole-AS flush, so
 * the batch completes first (as[1] as exact pages) and the newcomer is
 * queued alone.
 */
static void test_full_small_as_completes(void **s)
{
	struct harness h;
	struct tlbpol_as *as[2];

	(void)s;
	full_batch(&h, as, 6);
	unmap(&h, as[1], VA(100));
	assert_int_equal(flush_kind(&h, 2, TLBPOL_FLUSH_PAGES)->pages, 6);
	flush_kind(&h, 1, TLBPOL_FLUSH_AS); /* 60 pages */
	newcomer_alone(&h, VA(100));
	tlbpol_engine_free(h.eng);
}

/* Full of entries of other address spaces: the batch completes first, and
 * the newcomer is queued alone, as exact page flushes. */
static void test_full_other_as(void **s)
{
	struct harness h;
	struct tlbpol_as *as[2];
	const struct h_flush *f;

	(void)s;
	full_batch(&h, as, 0);
	unmap(&h, as[1], VA(7));
	/* The full batch went out (as[0] runs on CPU 0 only: a local flush). */
	assert_int_equal(h.nr_log, 1);
	flush_kind(&h, 1, TLBPOL_FLUSH_AS);
	f = newcomer_alone(&h, VA(7));
	assert_int_equal(h.ipi_calls, 1);
	assert_int_equal(f->pages, 1);
	tlbpol_engine_free(h.eng);
}

/*
 * A widened page is pending like any other.  When CPU 1 installs a new PTE
 * at its address, CPU 0 may still cache the old translation, so the install
 * shoots the address space down.  A deferred free registered after it waits
 * for it.
 */
static void test_widened_page_still_pending(void **s)
{
	struct harness h;
	struct tlbpol_as *as[1];
	struct tlbpol_event install = h_event(TLBPOL_EV_FAULT, 0, VA(500), 1, 0, RO);
	int runs = 0;

	(void)s;
	setup(&h, 1, as);
	unmap_n(&h, as[0], 0, CAP);
	unmap(&h, as[0], VA(500)); /* widens: far from the last entry */
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &runs), 0);
	assert_int_equal(runs, 0);
	/* CPU 1 reuses VA(500): CPU 0's pending span covers it. */
	assert_int_equal(tlbpol_submit(h.eng, as[0], 1, &install, NULL), 0);
	assert_int_equal(h.ipi_calls, 1);
	assert_true(h.flushes_on[0] >= 1); /* CPU 0's stale entry went */
	assert_int_equal(runs, 0);         /* the free waits for CPU 0's batch */
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), CAP + 1);
	assert_int_equal(runs, 1);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_widen_one_as),
	cmocka_unit_test(test_full_small_as_completes),
	cmocka_unit_test(test_full_other_as),
	cmocka_unit_test(test_widened_page_still_pending));
