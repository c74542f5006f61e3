/* SPDX-License-Identifier: MIT */
/*
 * test_tlbi_range: tlbpol_tlbi_range_ops(), the arm64 TLBI range operations
 * of a range.  Every count from 1 to 4096 pages and a spread of larger ones
 * up to 2^21 - 1: the operations cover the range exactly, in order, no
 * page twice, at most five, each range operation's pages what its SCALE
 * and NUM encode ((NUM + 1) << (5 x SCALE + 1)), NUM 0..31, SCALE 0..3;
 * the refusals write nothing.
 */
#include <errno.h>

#include "support/harness.h"

static void check(uint64_t va, uint64_t nr, uint32_t shift)
{
	struct tlbpol_range r = { va, nr, shift, 0 };
	struct tlbpol_tlbi_op ops[TLBPOL_TLBI_RANGE_MAX_OPS];
	int k = tlbpol_tlbi_range_ops(&r, ops, TLBPOL_TLBI_RANGE_MAX_OPS);
	uint64_t at = va, left = nr;
	uint32_t last_scale = 0;

	if (k < 1 || k > (int)TLBPOL_TLBI_RANGE_MAX_OPS)
		fail_msg("%llu pages: %d operations", (unsigned long long)nr, k);
	for (int i = 0; i < k; i++) {
		assert_int_equal(ops[i].va, at);
		assert_int_equal(ops[i].pad, 0);
		if (ops[i].range) {
			assert_true(ops[i].scale <= 3 && ops[i].num <= 31);
			assert_int_equal(ops[i].pages, (uint64_t)(ops[i].num + 1)
							       << (5 * ops[i].scale + 1));
			/* Linux's order: scales rising. */
			if (i)
				assert_true(ops[i].scale >= last_scale);
			last_scale = ops[i].scale;
		} else {
			assert_int_equal(ops[i].pages, 1);
		}
		assert_true(ops[i].pages <= left);
		at += ops[i].pages << shift;
		left -= ops[i].pages;
	}
	assert_int_equal(left, 0);
}

static void test_exact_cover(void **state)
{
	(void)state;
	for (uint64_t nr = 1; nr <= 4096; nr++)
		check(0x7f0000000000ULL, nr, 12);
	for (uint64_t nr = 4097; nr < TLBPOL_TLBI_RANGE_MAX_PAGES; nr = nr * 3 + 7)
		check(0x40000000ULL, nr, 16);
	check(0, TLBPOL_TLBI_RANGE_MAX_PAGES - 1, 12);
	check(0x200000ULL, 3, 21);
}

/* The counts Linux's loop gives: 2 pages one op, 3 two (a range and a
 * single), 64 one (SCALE 1), 65 two, 2^21 - 1 five. */
static void test_counts(void **state)
{
	struct tlbpol_tlbi_op ops[TLBPOL_TLBI_RANGE_MAX_OPS];
	static const struct { uint64_t nr; int k; } want[] = {
		{ 1, 1 }, { 2, 1 }, { 3, 2 }, { 62, 1 }, { 64, 1 }, { 65, 2 }, { 66, 2 },
		{ (1ULL << 21) - 1, 5 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct tlbpol_range r = { 0x1000, want[i].nr, 12, 0 };

		assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 5), want[i].k);
	}
}

static void test_refusals(void **state)
{
	struct tlbpol_tlbi_op ops[TLBPOL_TLBI_RANGE_MAX_OPS + 1];
	struct tlbpol_range r = { 0x1000, 3, 12, 0 };

	(void)state;
	memset(ops, 0x5a, sizeof(ops));
	assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 1), -ENOMEM);
	assert_int_equal(ops[1].va, 0x5a5a5a5a5a5a5a5aULL); /* nothing past @n */
	assert_int_equal(tlbpol_tlbi_range_ops(NULL, ops, 5), -EINVAL);
	assert_int_equal(tlbpol_tlbi_range_ops(&r, NULL, 5), -EINVAL);
	r.nr_pages = 0;
	assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 5), -EINVAL);
	r.nr_pages = TLBPOL_TLBI_RANGE_MAX_PAGES;
	assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 5), -ERANGE);
	r.nr_pages = 2;
	r.page_shift = 48;
	assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 5), -EINVAL);
	r.page_shift = 12;
	r.va = ~0ULL - 0xfff; /* the last page: two pages would wrap */
	assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 5), -ERANGE);
	r.nr_pages = 1;
	assert_int_equal(tlbpol_tlbi_range_ops(&r, ops, 5), 1);
}

H_TEST_MAIN(cmocka_unit_test(test_exact_cover), cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_refusals));
