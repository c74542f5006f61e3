/* SPDX-License-Identifier: MIT */
/*
 * test_rules: each rule bit switched off alone restores the behaviour Linux
 * had before the change that introduced it, and costs what that change
 * saved (counted on the same workload with the rule on and off).
 */
#include "support/harness.h"

#define DEF TLBPOL_RULES_DEFAULT
#define RW (P | W | U | A)
#define RWD (RW | D)
#define RO (P | U | A)

static struct tlbpol_decision decide(uint32_t arch, uint64_t rules, struct tlbpol_event ev)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;

	h_engine(&h, 2, arch, rules);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_decide(h.eng, as, 0, &ev, &d), 0);
	tlbpol_engine_free(h.eng);
	return d;
}

#define EXPECT(d, act, dl, why)                                                 \
	do {                                                                    \
		assert_int_equal((d).action, TLBPOL_ACT_##act);                 \
		assert_int_equal((d).deadline, TLBPOL_BY_##dl);                 \
		assert_int_equal((d).reason, TLBPOL_WHY_##why);                 \
	} while (0)

/* Linux 61c77326d1df "x86, mm: Avoid unnecessary TLB flush": before it,
 * flush_tlb_fix_spurious_fault() was flush_tlb_page(). */
static void test_spurious_off(void **s)
{
	struct tlbpol_event spur = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x1000, 1, RWD, RWD);
	struct tlbpol_event setd = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x1000, 1, RW, RWD);
	uint64_t off = DEF & ~TLBPOL_RULE_SPURIOUS_NOFLUSH;

	(void)s;
	EXPECT(decide(TLBPOL_ARCH_X86_64, DEF, spur), NONE, NOW, SPURIOUS);
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, spur), SHOOTDOWN, NOW, SPURIOUS);
	EXPECT(decide(TLBPOL_ARCH_X86_64, DEF, setd), NONE, NOW, ACCESS_FLAGS);
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, setd), SHOOTDOWN, NOW, ACCESS_FLAGS);
	EXPECT(decide(TLBPOL_ARCH_ARM64, off, spur), SHOOTDOWN, NOW, SPURIOUS);
}

/* Linux b7333b58f358 "mm/memory.c: skip spurious TLB flush for retried page
 * fault": without it, a retried fault updates the access flags; on ARM64
 * that is a flush_tlb_page() (the regression), on x86 nothing. */
static void test_retry_off(void **s)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE | TLBPOL_EVF_TRIED,
					 0x1000, 1, RW, RWD);
	uint64_t off = DEF & ~TLBPOL_RULE_RETRY_NOFLUSH;

	(void)s;
	EXPECT(decide(TLBPOL_ARCH_ARM64, DEF, ev), NONE, NOW, RETRIED);
	EXPECT(decide(TLBPOL_ARCH_ARM64, off, ev), SHOOTDOWN, NOW, ACCESS_FLAGS);
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, ev), NONE, NOW, ACCESS_FLAGS);
	/* Both seed rules off on x86: the pre-2010 flush. */
	EXPECT(decide(TLBPOL_ARCH_X86_64, off & ~TLBPOL_RULE_SPURIOUS_NOFLUSH, ev), SHOOTDOWN, NOW,
	       ACCESS_FLAGS);
}

/* Linux 72b252aed506 "mm: send one IPI per CPU to TLB flush all entries
 * after unmapping pages" (and mmu_gather before it): without batching,
 * every unmap flushes before it returns. */
static void test_batch_off(void **s)
{
	uint64_t off = DEF & ~TLBPOL_RULE_BATCH;

	(void)s;
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, h_event(TLBPOL_EV_RECLAIM, 0, 0, 1, RW, 0)),
	       SHOOTDOWN, NOW, RECLAIM_CLEAN);
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, h_event(TLBPOL_EV_RECLAIM, 0, 0, 1, RWD, 0)),
	       SHOOTDOWN, NOW, RECLAIM_DIRTY);
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, h_event(TLBPOL_EV_UNMAP, 0, 0, 1, RW, 0)),
	       SHOOTDOWN, NOW, UNMAP);
	EXPECT(decide(TLBPOL_ARCH_X86_64, off, h_event(TLBPOL_EV_MIGRATE, 0, 0, 1, RO, 0)),
	       SHOOTDOWN, NOW, MIGRATE_CLEAN);
}

/* Linux b13b1d2d8692 "x86/mm: In the PTE swapout page reclaim case clear
 * the accessed bit instead of flushing the TLB": before it,
 * ptep_clear_flush_young() flushed. */
static void test_aging_off(void **s)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_CLEAR_YOUNG, 0, 0, 1, RW, P | W | U);

	(void)s;
	EXPECT(decide(TLBPOL_ARCH_X86_64, DEF & ~TLBPOL_RULE_AGING_NOFLUSH, ev), SHOOTDOWN, NOW, AGING);
	EXPECT(decide(TLBPOL_ARCH_ARM64, DEF & ~TLBPOL_RULE_AGING_NOFLUSH, ev), SHOOTDOWN, NOW, AGING);
}

static void test_upgrade_off(void **s)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0, 1, RO, RW);

	(void)s;
	EXPECT(decide(TLBPOL_ARCH_X86_64, DEF & ~TLBPOL_RULE_UPGRADE_NOFLUSH, ev), SHOOTDOWN, NOW,
	       UPGRADE);
	EXPECT(decide(TLBPOL_ARCH_ARM64, DEF & ~TLBPOL_RULE_UPGRADE_NOFLUSH, ev), SHOOTDOWN, NOW,
	       UPGRADE);
}

static void test_lazy_unmap_off(void **s)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK, 0, 1, RW, 0);

	(void)s;
	EXPECT(decide(TLBPOL_ARCH_X86_64, DEF, ev), SHOOTDOWN, LAZY, UNMAP);
	EXPECT(decide(TLBPOL_ARCH_X86_64, DEF & ~TLBPOL_RULE_LAZY_UNMAP, ev), SHOOTDOWN, FREE, UNMAP);
}

/* ------------------------------------------------------------------------ */
/* Rules that act at execution: measured on the same workload.              */

/* Linux 611ae8e3f520 "x86/tlb: enable tlb flush range support for x86": an
 * 8-page munmap is 8 invalidations with the rule, one whole-AS flush
 * without it. */
static void test_range_off(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_stats st;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x10000, 8, RW, RO);

	(void)s;
	for (int on = 1; on >= 0; on--) {
		h_engine(&h, 2, TLBPOL_ARCH_X86_64, on ? DEF : DEF & ~TLBPOL_RULE_RANGE_FLUSH);
		as = h_as_run(&h, 1, 2);
		assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, NULL), 0);
		assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
		assert_int_equal(h.nr_log, 2);
		if (on) {
			assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_PAGES);
			assert_int_equal(h.log[0].pages, 8);
			assert_int_equal(h.log[0].first.va, 0x10000);
			assert_int_equal(st.pages_flushed, 16);
			assert_int_equal(st.full_flushes, 0);
		} else {
			assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_AS);
			assert_int_equal(st.pages_flushed, 0);
			assert_int_equal(st.full_flushes, 2);
		}
		tlbpol_engine_free(h.eng);
	}
}

/* Linux mm_cpumask: with FOOTPRINT, only CPUs that ran the address space
 * are interrupted. */
static void test_footprint_off(void **s)
{
	struct harness h;
	struct tlbpol_as *as, *other;
	struct tlbpol_stats st;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x10000, 1, RW, RO);

	(void)s;
	for (int on = 1; on >= 0; on--) {
		h_engine(&h, 8, TLBPOL_ARCH_X86_64, on ? DEF : DEF & ~TLBPOL_RULE_FOOTPRINT);
		assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
		assert_int_equal(tlbpol_as_open(h.eng, 2, &other), 0);
		for (uint32_t c = 0; c < 8; c++)
			assert_int_equal(tlbpol_switch(h.eng, c, c < 3 ? as : other, NULL), 0);
		assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, NULL), 0);
		assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
		assert_int_equal(st.ipis_sent, on ? 2 : 7);
		assert_int_equal(st.remote_flushes, on ? 2 : 7);
		for (uint32_t c = 0; c < 8; c++)
			assert_int_equal(h.flushes_on[c], (on && c >= 3) ? 0 : 1);
		tlbpol_engine_free(h.eng);
	}
}

/* Linux 72b252aed506 (one IPI per CPU after unmapping pages): 64 reclaimed
 * pages mapped on 4 CPUs: one interrupt per CPU per batch with BATCH, one
 * per page per CPU without. */
static void test_batch_counts(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_stats st;
	uint64_t ipis[2];

	(void)s;
	for (int on = 1; on >= 0; on--) {
		h_engine(&h, 4, TLBPOL_ARCH_X86_64, on ? DEF : DEF & ~TLBPOL_RULE_BATCH);
		as = h_as_run(&h, 1, 4);
		for (uint64_t i = 0; i < 64; i++) {
			struct tlbpol_event ev = h_event(TLBPOL_EV_RECLAIM, 0, 0x100000 + i * 0x2000, 1, RW, 0);

			assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, NULL), 0);
		}
		assert_true(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE) >= 0);
		assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
		ipis[on] = st.ipis_sent;
		assert_int_equal(st.by_reason[TLBPOL_WHY_RECLAIM_CLEAN], 64);
		tlbpol_engine_free(h.eng);
	}
	assert_int_equal(ipis[1], 3);
	assert_int_equal(ipis[0], 64 * 3);
}

/* Linux 61c77326d1df (no flush for a spurious fault): 4 CPUs writing one
 * shared page, each fault sets D or finds it set: no interrupt at all with
 * the rule, one shootdown per fault without. */
static void test_spurious_counts(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_stats st;

	(void)s;
	for (int on = 1; on >= 0; on--) {
		h_engine(&h, 4, TLBPOL_ARCH_X86_64, on ? DEF : DEF & ~TLBPOL_RULE_SPURIOUS_NOFLUSH);
		as = h_as_run(&h, 1, 4);
		for (uint32_t c = 0; c < 4; c++) {
			struct tlbpol_event ev = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x5000, 1,
							 c ? RWD : RW, RWD);

			assert_int_equal(tlbpol_submit(h.eng, as, c, &ev, NULL), 0);
		}
		assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
		assert_int_equal(st.ipis_sent, on ? 0 : 12);
		assert_int_equal(st.flushes_avoided, on ? 4 : 0);
		tlbpol_engine_free(h.eng);
	}
}

/* RULES_NONE: full flush on every CPU, footprint or not. */
static void test_naive(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, 0, 0x10000, 1, RW, 0);

	(void)s;
	h_engine(&h, 4, TLBPOL_ARCH_X86_64, TLBPOL_RULES_NONE);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, NULL), 0);
	for (uint32_t c = 0; c < 4; c++)
		assert_int_equal(h.flushes_on[c], 1);
	for (uint32_t i = 0; i < h.nr_log; i++)
		assert_int_equal(h.log[i].kind, TLBPOL_FLUSH_AS);
	assert_int_equal(h.ipi_targets, 3);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_spurious_off),   cmocka_unit_test(test_retry_off),
	cmocka_unit_test(test_batch_off),      cmocka_unit_test(test_aging_off),
	cmocka_unit_test(test_upgrade_off),    cmocka_unit_test(test_lazy_unmap_off),
	cmocka_unit_test(test_range_off),      cmocka_unit_test(test_footprint_off),
	cmocka_unit_test(test_batch_counts),   cmocka_unit_test(test_spurious_counts),
	cmocka_unit_test(test_naive));
