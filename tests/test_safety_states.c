/* SPDX-License-Identifier: MIT */
/*
 * test_safety_states: the safety probes of CPUs between states (waking,
 * lazy, preempted, leaving an address space), of a descheduled fan-out
 * leader and of API hazards, numbered as docs/safety.md's findings and
 * questions.  Single-threaded and deterministic, like test_safety.c, on the
 * same host (support/probe.h): each probe fails if the engine reports a
 * flush complete, or lets a deferred free run, while a CPU may still use
 * what the flush was for.
 */
#include "support/probe.h"

/* ------------------------------------------------------------------------ */
/* 4, 5: CPUs between states                                                */
/* ------------------------------------------------------------------------ */

/* 4, initiator side: CPU1 wakes from IDLE (its AS current) inside CPU0's
 * table-freeing shootdown, after the generation was taken, and is told to
 * flush; it does so only after the call returns.  CPU0 must not skip it
 * by a generation it has not flushed to yet. */
static void wake_cpu1(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)cpu;
	(void)f;
	assert_int_equal(tlbpol_cpu_state(p->eng, 1, TLBPOL_CPU_RUNNING), 1);
}

static void test_catch_up_initiator(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 1);
	/* A change CPU1 is spared while idle, so that it is behind. */
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_IDLE), 0);
	submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A);
	free_tables(&p);
	clear_counts(&p);
	p.on_flush = wake_cpu1;
	flush_for_free(&p);
	if (!p.flushes_at_free[1])
		fail_msg("the table page was freed before cpu 1 flushed its walk caches");
	probe_fini(&p);
}

/* 4, receiver side: CPU1 is lazy; CPU0's table-freeing request is posted
 * and its interrupt held (interrupts off); CPU1 switches back, is told to
 * flush, and its own serve inside tlbpol_switch() must not acknowledge the
 * request unflushed. */
static void cpu1_back(struct probe *p, uint32_t cpu)
{
	int nf = 0;

	(void)cpu;
	assert_int_equal(tlbpol_switch(p->eng, 1, p->as1, &nf), 0);
	/* Its catch-up flush comes after the switch returns: not modelled
	 * here, so that only what the engine flushed counts. */
}

static void test_catch_up_receiver(void **state)
{
	for (uint32_t retain = 0; retain < 2; retain++) {
		struct probe p;

		(void)state;
		probe_x86(&p, retain ? TLBPOL_CFGF_RETAIN_AS : 0, 1);
		sw(&p, 1, NULL); /* lazy */
		submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A);
		free_tables(&p);
		clear_counts(&p);
		p.deliver = 0;
		p.hold = 1;
		p.hold_turns = ~0u;
		p.on_relax = cpu1_back;
		flush_for_free(&p);
		if (!p.flushes_at_free[1])
			fail_msg("retain %u: table page freed while cpu 1, inside tlbpol_switch(), "
				 "had not flushed",
				 retain);
		p.hold = ~0u;
		probe_fini(&p);
	}
}

/* 5: a lazy vCPU marked PREEMPTED is spared a table-freeing flush; when it
 * runs again its MMU may walk the tables it keeps loaded: it must be told
 * to flush them. */
static void test_preempted_lazy(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 1);
	sw(&p, 1, NULL);
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_PREEMPTED), 0);
	clear_counts(&p);
	free_tables(&p);
	flush_for_free(&p);
	if (!p.flushes_at_free[1])
		assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_RUNNING), 1);
	probe_fini(&p);
}

/* A CPU that switched away may walk the old tables until its CR3 write:
 * a table-freeing request made in that window waits until the CPU took its
 * interrupt, which it does only after the CR3 write (interrupts are off
 * from tlbpol_switch() to it). */
static void test_leaving_cpu(void **state)
{
	struct probe p;

	(void)state;
	probe_x86(&p, 0, 1);
	sw(&p, 1, p.as2); /* left AS1; its CR3 write is still to come */
	free_tables(&p);
	clear_counts(&p);
	p.deliver = 0;
	p.hold = 1;
	p.hold_turns = 100;
	flush_for_free(&p);
	if (!p.first_ipi_turn[1] || p.turn < p.hold_turns)
		fail_msg("the table page was freed before cpu 1 had written CR3 (turn %u)", p.turn);
	/* It has now (it took the interrupt): left out from here on. */
	p.hold = ~0u;
	p.deliver = 1;
	submit(&p, p.as1, 0, TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0, 0);
	clear_counts(&p);
	assert_true(tlbpol_flush(p.eng, 0, TLBPOL_BY_FREE) >= 0);
	assert_int_equal(p.first_ipi_turn[1], 0);
	assert_int_equal(p.flushes[1], 0);
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* Q6: a descheduled fan-out leader                                         */
/* ------------------------------------------------------------------------ */

static void test_fanout_leader_descheduled(void **state)
{
	static const uint16_t nodes[NCPU] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	struct probe p;
	struct tlbpol_config cfg;
	uint32_t direct = 0;

	(void)state;
	probe_config(&p, &cfg, TLBPOL_ARCH_X86_64);
	p.deliver = 0; /* interrupts wait for a relax from the start */
	cfg.cpu_node = nodes;
	cfg.cost_ipi_remote_ns = 2000; /* a leader pays for node 1 */
	assert_int_equal(tlbpol_engine_new(&cfg, &p.eng), 0);
	assert_int_equal(tlbpol_as_open(p.eng, 0x11, &p.as1), 0);
	for (uint32_t c = 0; c < NCPU; c++)
		sw(&p, c, p.as1);
	p.deliver = 0;
	/* Node 1's leader (its first target) is held: in a guest, a vCPU the
	 * host has descheduled. */
	p.hold_turns = 5000;
	p.hold = 4;
	submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A);
	/* Node 1's other CPUs were interrupted by CPU0 itself well before the
	 * leader ran again. */
	for (uint32_t c = 5; c < NCPU; c++)
		if (p.first_ipi_turn[c] && p.first_ipi_turn[c] < 1000)
			direct++;
	if (tlbpol_cpuset_test(&p.pending, 4) || p.first_ipi_turn[4] == 0)
		fail_msg("cpu 4 was not the interrupted leader (turn %u)", p.first_ipi_turn[4]);
	if (direct != 3)
		fail_msg("%u of node 1's CPUs were interrupted before the leader ran", direct);
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* Q9: API hazards                                                          */
/* ------------------------------------------------------------------------ */

static void test_switch_not_running(void **state)
{
	struct probe p;

	(void)state;
	probe_init(&p, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT, 0, NULL);
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_IDLE), 0);
	assert_int_equal(tlbpol_switch(p.eng, 1, p.as1, NULL), -EBUSY);
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_PREEMPTED), 0);
	assert_int_equal(tlbpol_switch(p.eng, 1, p.as1, NULL), -EBUSY);
	assert_int_equal(tlbpol_switch(p.eng, 1, NULL, NULL), 0); /* allowed */
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_RUNNING), 0);
	assert_int_equal(tlbpol_switch(p.eng, 1, p.as1, NULL), 0);
	probe_fini(&p);
}

/* A timer tick that lands inside tlbpol_submit() on the same CPU (here:
 * from its flush_local) is refused, and the submit completes as usual. */
static int nested_ret = 1;

static void tick_inside(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)f;
	nested_ret = tlbpol_tick(p->eng, cpu);
}

static void test_nested_call(void **state)
{
	struct probe p;
	struct tlbpol_stats st;

	(void)state;
	probe_x86(&p, 0, 1);
	p.on_flush = tick_inside;
	submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A);
	assert_int_equal(nested_ret, -EBUSY);
	assert_int_equal(tlbpol_stats_read(p.eng, 0, &st), 0);
	assert_int_equal(st.events, 1);
	assert_int_equal(tlbpol_tick(p.eng, 0), 0); /* outside: fine */
	probe_fini(&p);
}

H_TEST_MAIN(
	cmocka_unit_test(test_catch_up_initiator),
	cmocka_unit_test(test_catch_up_receiver),
	cmocka_unit_test(test_preempted_lazy),
	cmocka_unit_test(test_leaving_cpu),
	cmocka_unit_test(test_fanout_leader_descheduled),
	cmocka_unit_test(test_switch_not_running),
	cmocka_unit_test(test_nested_call));
