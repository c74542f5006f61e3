/* SPDX-License-Identifier: MIT */
/*
 * test_cpu_states: every transition of tlbpol_cpu_state()'s 4x4 matrix
 * (RUNNING, IDLE, PREEMPTED, OFFLINE), made by CPU 1 after CPU 0 shot down
 * a change while CPU 1 was in the first state, with CPU 1 running the
 * address space or lazy in it, with page tables freed or not.  The call
 * returns 1 exactly where CPU 1 was spared a flush it must now do before it
 * executes anything: out of PREEMPTED into RUNNING or IDLE (an idle CPU
 * executes too, and its MMU walks the loaded tables), and out of IDLE into
 * RUNNING where it was spared a flush of the address space it runs.  A
 * CPU back from OFFLINE is flushed whole by the call itself.
 */
#include <errno.h>

#include "support/harness.h"

enum { RUN = TLBPOL_CPU_RUNNING, IDLE = TLBPOL_CPU_IDLE, PRE = TLBPOL_CPU_PREEMPTED,
       OFF = TLBPOL_CPU_OFFLINE };

static const char *const names[] = { "RUNNING", "IDLE", "PREEMPTED", "OFFLINE" };

/* What tlbpol_cpu_state(@from -> @to) must return after a shootdown that
 * freed tables (@tables) or not, CPU 1 lazy (@lazy) or running the AS. */
static int expected(uint32_t from, uint32_t to, int lazy, int tables)
{
	if (from == PRE && (to == RUN || to == IDLE))
		return 1;
	/* An idle CPU is spared flushes of its current address space, never
	 * freed tables; a lazy one catches up at its switch back instead. */
	if (from == IDLE && to == RUN && !lazy && !tables)
		return 1;
	return 0;
}

static struct tlbpol_as *setup(struct harness *h)
{
	h_engine(h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST);
	return h_as_run(h, 1, 2);
}

/* CPU 0 changes a PTE and shoots it down now: a table freed (an unmap that
 * empties a page table) or a write-protect. */
static void shoot(struct harness *h, struct tlbpol_as *as, int tables)
{
	struct tlbpol_decision d;
	struct tlbpol_event ev =
		tables ? h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0x400000, 1,
				 P | W | U | A, 0)
		       : h_event(TLBPOL_EV_PROTECT, 0, 0x400000, 1, P | W | U | A, P | U | A);

	assert_int_equal(tlbpol_submit(h->eng, as, 0, &ev, &d), 0);
	assert_int_equal(tlbpol_flush(h->eng, 0, TLBPOL_BY_FREE) >= 0, 1);
}

static void one(uint32_t from, uint32_t to, int lazy, int tables)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h);
	uint32_t before;
	int r, want = expected(from, to, lazy, tables);

	if (lazy)
		assert_int_equal(tlbpol_switch(h.eng, 1, NULL, NULL), 0);
	if (from != RUN)
		assert_int_equal(tlbpol_cpu_state(h.eng, 1, from), 0);
	shoot(&h, as, tables);
	before = h.flushes_on[1];
	r = tlbpol_cpu_state(h.eng, 1, to);
	if (r != want)
		fail_msg("%s -> %s (%s, %s): returned %d, expected %d", names[from], names[to],
			 lazy ? "lazy" : "running the AS", tables ? "tables freed" : "no tables", r,
			 want);
	/* Back from OFFLINE: flushed whole by the call, walk caches and
	 * global entries too. */
	if (from == OFF && to != OFF)
		assert_int_equal(h.flushes_on[1], before + 1);
	tlbpol_engine_free(h.eng);
}

static void test_matrix(void **state)
{
	(void)state;
	for (uint32_t from = RUN; from <= OFF; from++)
		for (uint32_t to = RUN; to <= OFF; to++)
			for (int lazy = 0; lazy < 2; lazy++)
				for (int tables = 0; tables < 2; tables++)
					one(from, to, lazy, tables);
}

/*
 * The path that once lost the catch-up: a lazy vCPU preempted while a page
 * table was freed, back through IDLE, then RUNNING.  The IDLE step asks for
 * the flush (as IDLE the CPU executes, and its MMU may walk the freed
 * table); the RUNNING step then has nothing left to ask.
 */
static void test_preempted_idle_running(void **state)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h);

	(void)state;
	assert_int_equal(tlbpol_switch(h.eng, 1, NULL, NULL), 0);
	assert_int_equal(tlbpol_cpu_state(h.eng, 1, PRE), 0);
	shoot(&h, as, 1);
	assert_int_equal(h.flushes_on[1], 0); /* spared: it executes nothing */
	assert_int_equal(tlbpol_cpu_state(h.eng, 1, IDLE), 1);
	assert_int_equal(tlbpol_cpu_state(h.eng, 1, RUN), 0);
	assert_int_equal(tlbpol_switch(h.eng, 1, as, NULL), 0);
	tlbpol_engine_free(h.eng);
}

/* A state the engine does not know: -EINVAL, and nothing changes. */
static void test_bad_state(void **state)
{
	struct harness h;

	(void)state;
	setup(&h);
	assert_int_equal(tlbpol_cpu_state(h.eng, 1, OFF + 1), -EINVAL);
	assert_int_equal(tlbpol_cpu_state(h.eng, 2, RUN), -ERANGE);
	assert_int_equal(tlbpol_cpu_state(NULL, 1, RUN), -EINVAL);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(cmocka_unit_test(test_matrix), cmocka_unit_test(test_preempted_idle_running),
	    cmocka_unit_test(test_bad_state));
