/* SPDX-License-Identifier: MIT */
/*
 * test_compat: a program linked against release 0.1 still gets 0.1's
 * struct tlbpol_stats (19 reasons, 31 words) from tlbpol_stats_read, and
 * nothing is written past it; one linked against this release gets the
 * whole structure.  Binds the old symbol version explicitly, as a binary
 * built against 0.1 does.
 */
#include <errno.h>

#include "harness.h"

int tlbpol_stats_read_0_1(const struct tlbpol_engine *eng, int cpu, void *out);
__asm__(".symver tlbpol_stats_read_0_1, tlbpol_stats_read@TLBPOL_0.1");

#define WORDS_0_1 (12 + 19)

static void test_stats_0_1(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	/* A DONTNEED: a reason 0.1 did not have, and a downgrade it had. */
	struct tlbpol_event dn = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_STAYS_MAPPED, 0x1000, 1,
					 P | W | U | A, 0);
	struct tlbpol_event dg = h_event(TLBPOL_EV_PROTECT, 0, 0x2000, 1, P | W | U | A, P | U | A);
	uint64_t old[WORDS_0_1 + 8];
	struct tlbpol_stats st;

	(void)state;
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &dn, &d), 0);
	assert_int_equal(d.reason, TLBPOL_WHY_DISCARD);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &dg, &d), 0);

	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		old[i] = 0xa5a5a5a5a5a5a5a5ULL;
	assert_int_equal(tlbpol_stats_read_0_1(h.eng, -1, old), 0);
	assert_int_equal(old[0], 2); /* events */
	assert_int_equal(old[12 + TLBPOL_WHY_DOWNGRADE], 1);
	for (size_t i = WORDS_0_1; i < sizeof(old) / sizeof(old[0]); i++)
		assert_int_equal(old[i], 0xa5a5a5a5a5a5a5a5ULL);
	assert_int_equal(tlbpol_stats_read_0_1(NULL, -1, old), -EINVAL);
	assert_int_equal(tlbpol_stats_read_0_1(h.eng, -1, NULL), -EINVAL);

	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.by_reason[TLBPOL_WHY_DISCARD], 1);
	assert_int_equal(st.by_reason[TLBPOL_WHY_DOWNGRADE], 1);
	tlbpol_engine_free(h.eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_0_1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
