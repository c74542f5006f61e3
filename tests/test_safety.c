/* SPDX-License-Identifier: MIT */
/*
 * test_safety: the probes of global PTEs and of decisions deferred past what
 * depends on them, one per unsafe path docs/safety.md lists (numbered as its
 * findings 1-8 and questions Q1-Q9), written against the public header as a
 * host would use it, single-threaded and deterministic: every CPU is driven
 * by the test, interrupts are delivered where the probe says (or held back
 * to open the race window the probe is about), and each probe fails if the
 * engine reports a flush complete, or lets a deferred free run, while a CPU
 * may still use what the flush was for.  test_safety_states.c has the probes
 * of CPUs between states and of API hazards; support/probe.h is their host.
 */
#include "support/probe.h"

/* ------------------------------------------------------------------------ */
/* 1. Global PTEs                                                           */
/* ------------------------------------------------------------------------ */

/* CPU0 write-protects a global PTE while CPU1 is lazy and CPU2 idle: both
 * run kernel code through the global entry, and their catch-up (kind AS, a
 * CR3 write) would keep it.  Every CPU must flush it before submit returns. */
static void test_global_lazy_idle(void **state)
{
	struct probe p;

	(void)state;
	probe_init(&p, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT, 0, NULL);
	for (uint32_t c = 0; c < NCPU; c++)
		sw(&p, c, p.as1);
	sw(&p, 1, NULL);                                          /* lazy */
	assert_int_equal(tlbpol_cpu_state(p.eng, 2, TLBPOL_CPU_IDLE), 0); /* idle */
	clear_counts(&p);
	protect_kpage(&p);
	assert_int_equal(p.d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(p.d.deadline, TLBPOL_BY_NOW);
	for (uint32_t c = 0; c < NCPU; c++)
		if (!p.flushes[c])
			fail_msg("cpu %u (%s) did not flush the global page", c,
				 c == 1 ? "lazy" : c == 2 ? "idle" : "running");
	for (uint32_t c = 0; c < NCPU; c++)
		if (!p.global_flushes[c])
			fail_msg("cpu %u flushed the global page as a non-global one", c);
	probe_fini(&p);
}

/* CPU1 switches AS2 -> AS1 after the request was sent and before it takes
 * the interrupt: the switch (no retention) counts it caught up on AS1,
 * which says nothing of global entries. */
static void switch_cpu1_to_as1(struct probe *p, uint32_t cpu)
{
	(void)cpu;
	sw(p, 1, p->as1);
}

static void test_global_switch_before_serve(void **state)
{
	for (uint32_t retain = 0; retain < 2; retain++) {
		struct probe p;

		(void)state;
		probe_x86(&p, retain ? TLBPOL_CFGF_RETAIN_AS : 0, 1);
		sw(&p, 1, p.as2);
		p.deliver = 0;
		p.on_relax = switch_cpu1_to_as1;
		clear_counts(&p);
		protect_kpage(&p);
		if (!p.global_flushes[1])
			fail_msg("retain %u: cpu 1 never flushed the global page", retain);
		probe_fini(&p);
	}
}

/* The same switch on the initiator's side: after the generation was taken,
 * before the skip test (arm() flushes the initiator first). */
static void switch_cpu1_in_flush(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)cpu;
	(void)f;
	sw(p, 1, p->as1);
}

static void test_global_switch_before_skip(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 2);
	p.on_flush = switch_cpu1_in_flush;
	clear_counts(&p);
	protect_kpage(&p);
	if (!p.global_flushes[1])
		fail_msg("cpu 1 never flushed the global page");
	probe_fini(&p);
}

/* Q1: every flush of a global page says so (INVPCID type 0 would miss it). */
static void test_global_flag(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, TLBPOL_CFGF_RETAIN_AS, 2);
	clear_counts(&p);
	protect_kpage(&p);
	assert_int_equal(p.global_flushes[0], p.flushes[0]);
	assert_int_equal(p.global_flushes[1], p.flushes[1]);
	assert_true(p.flushes[1] >= 1);
	probe_fini(&p);
}

/* Q3: a global VA unmapped through AS1 (pending) and installed again
 * through AS2 must not be mapped while CPU2 may still hold the old entry. */
static void test_global_reuse_other_as(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 2);
	sw(&p, 2, p.as2);
	submit(&p, p.as1, 0, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE, KPAGE & ~D, 0);
	assert_int_equal(p.d.deadline, TLBPOL_BY_FREE); /* pending on CPU0 */
	clear_counts(&p);
	submit(&p, p.as2, 1, TLBPOL_EV_FAULT, 0, 0, KPAGE); /* the install */
	if (!p.global_flushes[2])
		fail_msg("the install completed no flush of CPU0's pending global unmap on cpu 2");
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* 2, 3, 6, 7, 8: decisions that were deferred past what depends on them   */
/* ------------------------------------------------------------------------ */

/* 2: a clean migration completes before the copy (tlbpol_flush(BY_WRITEBACK)),
 * so that its restore may be stored first. */
static void test_migrate_clean_before_copy(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 1);
	submit(&p, p.as1, 0, TLBPOL_EV_MIGRATE, 0, P | U | A, 0);
	clear_counts(&p);
	assert_true(tlbpol_flush(p.eng, 0, TLBPOL_BY_WRITEBACK) >= 0);
	if (!p.flushes[1])
		fail_msg("tlbpol_flush(BY_WRITEBACK) left cpu 1's entry for the copy (%s/%s)",
			 tlbpol_action_str(p.d.action), tlbpol_deadline_str(p.d.deadline));
	probe_fini(&p);
}

/* 3: MADV_DONTNEED, however flagged, is complete when the call returns. */
static void test_dontneed_now(void **state)
{
	static const uint32_t flags[] = { TLBPOL_EVF_PRIVATE | TLBPOL_EVF_LAZY_OK,
					  TLBPOL_EVF_PRIVATE, 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct probe p;
		struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, flags[i] | TLBPOL_EVF_STAYS_MAPPED,
						 VA, 16, P | W | U | A | D, 0);

		probe_x86(&p, 0, 1);
		clear_counts(&p);
		assert_int_equal(tlbpol_submit(p.eng, p.as1, 0, &ev, &p.d), 0);
		assert_int_equal(p.d.deadline, TLBPOL_BY_NOW);
		assert_true(p.flushes[0] >= 1 && p.flushes[1] >= 1);
		probe_fini(&p);
	}
}

/* 6: a dirty shared unmap is complete when the call returns: the flusher
 * that writes the page back runs on another CPU, whose tlbpol_flush()
 * cannot complete CPU0's work. */
static void test_unmap_dirty_now(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 1);
	sw(&p, 2, p.as1);
	clear_counts(&p);
	submit(&p, p.as1, 0, TLBPOL_EV_UNMAP, 0, P | W | U | A | D, 0);
	assert_true(tlbpol_flush(p.eng, 2, TLBPOL_BY_WRITEBACK) >= 0); /* the flusher */
	if (!p.flushes[1])
		fail_msg("writeback on cpu 2 while cpu 1 may still write (%s/%s)",
			 tlbpol_action_str(p.d.action), tlbpol_deadline_str(p.d.deadline));
	probe_fini(&p);
}

/* 7: a huge-page split keeps the bits: only EVF_ATTRS says it happened. */
static void test_attrs_split(void **state)
{
	struct probe p;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, TLBPOL_EVF_ATTRS, 0x40000000ULL, 1,
					 P | W | U | A | D, P | W | U | A | D);

	(void)state;
	ev.page_shift = 21;
	probe_x86(&p, 0, 1);
	clear_counts(&p);
	assert_int_equal(tlbpol_submit(p.eng, p.as1, 0, &ev, &p.d), 0);
	assert_int_equal(p.d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(p.d.deadline, TLBPOL_BY_NOW);
	assert_true(p.flushes[1] >= 1);
	probe_fini(&p);
}

/* 8: GENERIC may cache invalid entries: a kernel install reaches every CPU
 * (under any tag), a user one the installing CPU. */
static void test_generic_install(void **state)
{
	struct probe p;

	(void)state;
	probe_init(&p, TLBPOL_ARCH_GENERIC, TLBPOL_RULES_DEFAULT, 0, NULL);
	sw(&p, 0, p.as1);
	sw(&p, 1, p.as2);
	clear_counts(&p);
	submit(&p, p.as1, 0, TLBPOL_EV_FAULT, 0, 0, KPAGE);
	if (!p.global_flushes[0] || !p.global_flushes[1])
		fail_msg("kernel install: %s, flushes %u/%u", tlbpol_action_str(p.d.action),
			 p.flushes[0], p.flushes[1]);
	clear_counts(&p);
	submit(&p, p.as1, 0, TLBPOL_EV_FAULT, 0, 0, P | W | U);
	assert_int_equal(p.d.action, TLBPOL_ACT_LOCAL);
	assert_int_equal(p.flushes[0], 1);
	probe_fini(&p);
}

H_TEST_MAIN(
	cmocka_unit_test(test_global_lazy_idle),
	cmocka_unit_test(test_global_switch_before_serve),
	cmocka_unit_test(test_global_switch_before_skip),
	cmocka_unit_test(test_global_flag),
	cmocka_unit_test(test_global_reuse_other_as),
	cmocka_unit_test(test_migrate_clean_before_copy),
	cmocka_unit_test(test_dontneed_now),
	cmocka_unit_test(test_unmap_dirty_now),
	cmocka_unit_test(test_attrs_split),
	cmocka_unit_test(test_generic_install));
