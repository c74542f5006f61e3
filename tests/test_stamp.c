/* SPDX-License-Identifier: MIT */
/*
 * test_stamp: flush stamps (TLBPOL_RULE_FLUSH_STAMP, tlbpol_stamp*()).  The
 * frames of a stamped unmap may be reused at once; settling the stamp
 * interrupts only the CPUs that have not flushed yet, and none after they
 * all ticked.  What the flag may not relax stays as it was.
 */
#include <errno.h>

#include "support/harness.h"

#define DEF TLBPOL_RULES_DEFAULT
#define RW (P | W | U | A)
#define RWD (P | W | U | A | D)
#define STAMP (TLBPOL_EVF_STAMP | TLBPOL_EVF_PRIVATE)

static struct tlbpol_as *setup(struct harness *h, uint32_t nr_cpus, uint64_t rules)
{
	struct tlbpol_as *as;

	h_engine(h, nr_cpus, TLBPOL_ARCH_X86_64, rules);
	as = h_as_run(h, 1, nr_cpus);
	h_reset_log(h);
	return as;
}

static struct tlbpol_decision submit(struct harness *h, struct tlbpol_as *as, uint32_t cpu,
				     struct tlbpol_event ev)
{
	struct tlbpol_decision d;

	assert_int_equal(tlbpol_submit(h->eng, as, cpu, &ev, &d), 0);
	return d;
}

/* A private unmap of @n pages at @va by @cpu, stamped: the stamp, which is
 * not 0 (its flush is posted, not done). */
static uint64_t stamped_unmap(struct harness *h, struct tlbpol_as *as, uint32_t cpu, uint64_t va,
			      uint64_t n)
{
	uint64_t st;

	submit(h, as, cpu, h_event(TLBPOL_EV_UNMAP, STAMP, va, n, RW, 0));
	assert_int_equal(tlbpol_stamp(h->eng, cpu, &st), 1);
	assert_true(st != 0);
	return st;
}

/* Did @cpu flush a range holding @va since the log was reset (or the whole
 * address space)? */
static int flushed(const struct harness *h, uint32_t cpu, uint64_t va)
{
	for (uint32_t i = 0; i < h->nr_log; i++) {
		const struct h_flush *l = &h->log[i];

		if (l->cpu != cpu)
			continue;
		if (l->kind != TLBPOL_FLUSH_PAGES)
			return 1;
		if (l->nr_ranges == 1 && l->first.va <= va &&
		    va < l->first.va + (l->first.nr_pages << l->first.page_shift))
			return 1;
	}
	return 0;
}

/* The common case: the others tick before the frame comes back, and
 * settling costs nothing.  Nothing interrupted anyone. */
static void test_settled_by_ticks(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF);
	struct tlbpol_decision d;
	uint64_t st;

	(void)s;
	d = submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, STAMP, 0x10000, 4, RWD, 0));
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(d.deadline, TLBPOL_BY_LAZY);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 1);
	assert_true(st != 0);
	assert_int_equal(h.ipi_calls, 0);
	assert_true(flushed(&h, 0, 0x10000)); /* the initiator at once */
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 1);
	for (uint32_t c = 1; c < 4; c++) {
		assert_int_equal(tlbpol_stamp_pending(h.eng, st), 1);
		h_tick(&h, c);
		assert_true(flushed(&h, c, 0x13000));
	}
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 2, st), 0);
	assert_int_equal(h.ipi_calls, 0);
	tlbpol_engine_free(h.eng);
}

/* Reused at once, on another CPU: settling interrupts the CPUs that have
 * not flushed (not itself: it serves its own inbox) and returns when all
 * have; then the stamp is settled for good. */
static void test_settle_immediate_reuse(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF);
	uint64_t st;

	(void)s;
	st = stamped_unmap(&h, as, 0, 0x10000, 1);
	h_tick(&h, 1); /* one got there already */
	h_reset_log(&h);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 2, st), 1);
	assert_int_equal(h.ipi_calls, 1);
	assert_int_equal(h.ipi_targets, 1); /* CPU 3 only */
	assert_true(tlbpol_cpuset_test(&h.last_targets, 3));
	assert_true(flushed(&h, 2, 0x10000));
	assert_true(flushed(&h, 3, 0x10000));
	assert_false(flushed(&h, 1, 0x10000));
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 3, st), 0);
	/* The initiator settling its own stamp reaps it. */
	st = stamped_unmap(&h, as, 0, 0x20000, 1);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 0, st), 1);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_int_equal(tlbpol_frees_pending(h.eng, 0), 0);
	tlbpol_engine_free(h.eng);
}

/* The rule off: the same host code, Linux's behaviour: one shootdown in
 * tlbpol_stamp(), the stamp 0, settling nothing. */
static void test_rule_off(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF & ~TLBPOL_RULE_FLUSH_STAMP);
	struct tlbpol_decision d;
	uint64_t st = 7;

	(void)s;
	d = submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, STAMP, 0x10000, 1, RW, 0));
	assert_int_equal(d.deadline, TLBPOL_BY_FREE);
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 1);
	assert_int_equal(st, 0);
	assert_int_equal(h.ipi_targets, 3);
	for (uint32_t c = 0; c < 4; c++)
		assert_true(flushed(&h, c, 0x10000));
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 1, st), 0);
	tlbpol_engine_free(h.eng);
}

/* What the flag does not relax: freed page tables and global PTEs are
 * completed by tlbpol_stamp(); a dirty reclaim still flushes before
 * writeback; DONTNEED, protections, faults, migration and mremap refuse it. */
static void test_not_relaxed(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF);
	struct tlbpol_decision d;
	struct tlbpol_event ev;
	uint64_t st = 7;

	(void)s;
	d = submit(&h, as, 0,
		   h_event(TLBPOL_EV_UNMAP, STAMP | TLBPOL_EVF_TABLES_FREED, 0x10000, 1, RW, 0));
	assert_int_equal(d.deadline, TLBPOL_BY_FREE);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 1);
	assert_int_equal(st, 0);
	assert_int_equal(h.ipi_targets, 3);
	h_reset_log(&h);
	d = submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, STAMP, 0x20000, 1, RW | G, 0));
	assert_int_not_equal(d.deadline, TLBPOL_BY_LAZY);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 1);
	assert_int_equal(st, 0);
	d = submit(&h, as, 0, h_event(TLBPOL_EV_RECLAIM, TLBPOL_EVF_STAMP, 0x30000, 1, RWD, 0));
	assert_int_equal(d.deadline, TLBPOL_BY_WRITEBACK);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_WRITEBACK), 1);
	d = submit(&h, as, 0, h_event(TLBPOL_EV_RECLAIM, TLBPOL_EVF_STAMP, 0x40000, 1, RW, 0));
	assert_int_equal(d.deadline, TLBPOL_BY_LAZY);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 1);
	assert_true(st != 0);

	{
		const struct tlbpol_event refused[] = {
			h_event(TLBPOL_EV_UNMAP, STAMP | TLBPOL_EVF_STAYS_MAPPED, 0x50000, 1, RW, 0),
			h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_STAMP, 0x50000, 1, RW, 0), /* shared */
			h_event(TLBPOL_EV_PROTECT, TLBPOL_EVF_STAMP, 0x50000, 1, RW, P | U | A),
			h_event(TLBPOL_EV_MIGRATE, TLBPOL_EVF_STAMP, 0x50000, 1, RW, 0),
			h_event(TLBPOL_EV_REMAP, TLBPOL_EVF_STAMP, 0x50000, 1, RW, 0),
			h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_STAMP, 0x50000, 1, 0, RW),
		};

		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			ev = refused[i];
			assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, NULL), -EINVAL);
			assert_int_equal(tlbpol_decide(h.eng, as, 0, &ev, &d), -EINVAL);
		}
	}
	tlbpol_engine_free(h.eng);
}

/* An install over a stamped range completes its flush everywhere before it
 * returns: the new mapping is never reached through a stale entry. */
static void test_install_over_stamp(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF);

	(void)s;
	(void)stamped_unmap(&h, as, 0, 0x10000, 1);
	h_reset_log(&h);
	submit(&h, as, 1, h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x10000, 1, 0, RW));
	for (uint32_t c = 1; c < 4; c++)
		assert_true(flushed(&h, c, 0x10000));
	tlbpol_engine_free(h.eng);
}

/*
 * Installs that reuse no pending address cost nothing.  Another CPU's work
 * that every target has acknowledged, but its owner has not yet released
 * (it releases at its own next engine call), is complete: an install under
 * its span interrupts nobody.  The installer's own lazy requests are
 * completed only where they cover the address: one far away stays in
 * flight, one over it is completed, and the new mapping is never reached
 * through a stale entry.
 */
static void test_install_precise(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF);
	uint64_t st0, st1;

	(void)s;
	/* CPU 0's unmap, acknowledged by all (ticks), not released by 0. */
	st0 = stamped_unmap(&h, as, 0, 0x10000, 8);
	for (uint32_t c = 1; c < 4; c++)
		h_tick(&h, c);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st0), 0);
	h_reset_log(&h);
	submit(&h, as, 1, h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x12000, 1, 0, RW));
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(h.nr_log, 0);

	/* CPU 1's own: one at 0x100000 in flight, one at 0x400000. */
	(void)stamped_unmap(&h, as, 1, 0x100000, 4);
	st1 = stamped_unmap(&h, as, 1, 0x400000, 4);
	h_reset_log(&h);
	/* An install between them reuses neither: nothing completes. */
	submit(&h, as, 1, h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x200000, 1, 0, RW));
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st1), 1);
	/* One over the second completes it on every other CPU first (CPU 1
	 * dropped its own entries when it unmapped; a target serves its
	 * whole inbox, the first request with it, in one flush). */
	submit(&h, as, 1, h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x402000, 1, 0, RW));
	assert_int_equal(h.ipi_calls, 1);
	for (uint32_t c = 0; c < 4; c++)
		assert_true(c == 1 || h.flushes_on[c] > 0);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st1), 0);
	tlbpol_engine_free(h.eng);
}

/* A lazy CPU is not waited for (it flushes when it comes back, and is told
 * to); a CPU that joins after the stamp cannot hold the old entry. */
static void test_lazy_cpu(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, DEF);
	uint64_t st;
	int need = 0;

	(void)s;
	assert_int_equal(tlbpol_switch(h.eng, 3, NULL, NULL), 0);
	assert_int_equal(tlbpol_cpu_state(h.eng, 3, TLBPOL_CPU_IDLE), 0);
	st = stamped_unmap(&h, as, 0, 0x10000, 1);
	h_tick(&h, 1);
	h_tick(&h, 2);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 1, st), 0);
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(tlbpol_cpu_state(h.eng, 3, TLBPOL_CPU_RUNNING), 0);
	assert_int_equal(tlbpol_switch(h.eng, 3, as, &need), 0);
	assert_int_equal(need, 1);
	tlbpol_engine_free(h.eng);
}

/* Several lazy posts: a stamp covers every earlier one still in flight,
 * and a later stamp is not settled by an earlier one's completion. */
static void test_order(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 2, DEF);
	uint64_t a, b;

	(void)s;
	a = stamped_unmap(&h, as, 0, 0x10000, 1);
	b = stamped_unmap(&h, as, 0, 0x20000, 1);
	assert_true(a != b);
	assert_int_equal(tlbpol_stamp_pending(h.eng, a), 1);
	assert_int_equal(tlbpol_stamp_pending(h.eng, b), 1);
	h_tick(&h, 1); /* serves both */
	assert_int_equal(tlbpol_stamp_pending(h.eng, a), 0);
	assert_int_equal(tlbpol_stamp_pending(h.eng, b), 0);
	/* Nothing stamped since the last stamp: -ENOENT, not "nothing to
	 * settle" (a stamp from the wrong CPU would say that of frames other
	 * CPUs still translate to). */
	h_tick(&h, 0);
	a = 7;
	assert_int_equal(tlbpol_stamp(h.eng, 0, &a), -ENOENT);
	assert_int_equal(a, 7);
	tlbpol_engine_free(h.eng);
}

/*
 * A target preempted after the post is not waited for: it flushes before it
 * runs again (its return asks for the catch-up).  Settled by the owner, the
 * preempted vCPU is taken back, never interrupted, and the stamp completes;
 * settled by another CPU, the wait ends once only it is left.
 */
static void test_settle_preempted_target(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 3, DEF);
	uint64_t st;

	(void)s;
	for (uint32_t settler = 0; settler < 3; settler += 2) {
		st = stamped_unmap(&h, as, 0, 0x10000 + settler * 0x10000, 1);
		assert_int_equal(tlbpol_cpu_state(h.eng, 1, TLBPOL_CPU_PREEMPTED), 0);
		h_reset_log(&h);
		assert_int_equal(tlbpol_stamp_settle(h.eng, settler, st), 1);
		assert_int_equal(h.flushes_on[1], 0);
		assert_false(tlbpol_cpuset_test(&h.last_targets, 1));
		if (settler == 0)
			assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
		assert_int_equal(tlbpol_cpu_state(h.eng, 1, TLBPOL_CPU_RUNNING), 1);
		h_tick(&h, 1);
		h_tick(&h, 0);
		assert_int_equal(tlbpol_stamp_pending(h.eng, st), 0);
	}
	tlbpol_engine_free(h.eng);
}

/* A stamp asked on a CPU other than the one that submitted the stamped
 * events (a task that migrated) is refused: -ENOENT, not the stamp 0 that
 * would say "nothing to settle"; the submitting CPU's stamp is intact. */
static void test_stamp_wrong_cpu(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 2, DEF);
	uint64_t st = 42;

	(void)s;
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, STAMP, 0x10000, 1, RW, 0));
	assert_int_equal(tlbpol_stamp(h.eng, 1, &st), -ENOENT);
	assert_int_equal(st, 42);
	assert_int_equal(tlbpol_stamp(h.eng, 0, &st), 1);
	assert_true(st != 0);
	assert_int_equal(tlbpol_stamp_pending(h.eng, st), 1);
	tlbpol_engine_free(h.eng);
}

static void test_errors(void **s)
{
	struct harness h;
	uint64_t st;

	(void)s;
	setup(&h, 2, DEF);
	assert_int_equal(tlbpol_stamp(NULL, 0, &st), -EINVAL);
	assert_int_equal(tlbpol_stamp(h.eng, 0, NULL), -EINVAL);
	assert_int_equal(tlbpol_stamp(h.eng, 2, &st), -ERANGE);
	assert_int_equal(tlbpol_stamp_settle(NULL, 0, 0), -EINVAL);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 2, 0), -ERANGE);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 0, (5ULL << 32) | 3), -EINVAL); /* CPU 2 */
	assert_int_equal(tlbpol_stamp_settle(h.eng, 0, 5ULL << 32), -EINVAL);       /* no CPU */
	assert_int_equal(tlbpol_stamp_pending(NULL, 0), -EINVAL);
	assert_int_equal(tlbpol_stamp_pending(h.eng, (5ULL << 32) | 3), -EINVAL);
	assert_int_equal(tlbpol_stamp_pending(h.eng, 0), 0);
	assert_int_equal(tlbpol_stamp_settle(h.eng, 1, 0), 0);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(cmocka_unit_test(test_settled_by_ticks), cmocka_unit_test(test_settle_immediate_reuse),
	    cmocka_unit_test(test_rule_off), cmocka_unit_test(test_not_relaxed),
	    cmocka_unit_test(test_install_over_stamp), cmocka_unit_test(test_install_precise),
	    cmocka_unit_test(test_lazy_cpu),
	    cmocka_unit_test(test_order), cmocka_unit_test(test_settle_preempted_target),
	    cmocka_unit_test(test_stamp_wrong_cpu), cmocka_unit_test(test_errors));
