/* SPDX-License-Identifier: MIT */
/*
 * test_free_ticks: cfg->free_ticks.  A CPU that unmaps and then goes quiet
 * (it only ticks) still runs its deferred frees, within free_ticks ticks,
 * after the one shootdown that makes them safe; TLBPOL_FREE_TICKS_NEVER
 * keeps release 0.1's behaviour (they wait for tlbpol_flush()); a batch
 * flushed by other means restarts the age; lazy requests age too, without
 * interrupting targets that tick or that went idle.  A fresh engine's tick
 * count is UINT32_MAX, so every test here queues its first work at the
 * last tick before the count wraps.
 */
#include <errno.h>

#include "support/harness.h"

static int freed;

static struct tlbpol_as *two_cpus(struct harness *h, uint32_t free_ticks)
{
	struct tlbpol_config cfg;

	h_config(h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.free_ticks = free_ticks;
	cfg.rules = TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST;
	h_engine_cfg(h, &cfg);
	return h_as_run(h, 1, 2);
}

/* CPU 0 submits @n events like @ev, a page apart from its address, each
 * due by @by, and queues a deferred free (counted in freed) behind them;
 * the log reset. */
static void queue_then_free(struct harness *h, struct tlbpol_as *as, struct tlbpol_event ev,
			    uint32_t n, uint32_t by)
{
	struct tlbpol_decision d;

	freed = 0;
	for (uint32_t i = 0; i < n; i++, ev.va += 0x1000) {
		assert_int_equal(tlbpol_submit(h->eng, as, 0, &ev, &d), 0);
		assert_int_equal(d.deadline, by);
	}
	assert_int_equal(tlbpol_defer_free(h->eng, 0, h_count_free, &freed), 0);
	h_reset_log(h);
}

/* two_cpus(@free_ticks), and CPU 0's 44 clean reclaims and one deferred
 * free, then only ticks; the address space. */
static struct tlbpol_as *unmap_then_quiet(struct harness *h, uint32_t free_ticks)
{
	struct tlbpol_as *as = two_cpus(h, free_ticks);

	queue_then_free(h, as, h_event(TLBPOL_EV_RECLAIM, 0, 0x100000, 1, P | W | U | A, 0), 44,
			TLBPOL_BY_FREE);
	return as;
}

static void test_quiet_cpu_frees(void **state)
{
	struct harness h;
	struct tlbpol_stats st;

	(void)state;
	for (uint32_t ft = 1; ft <= 5; ft++) {
		unmap_then_quiet(&h, ft);
		assert_int_equal(tlbpol_frees_pending(h.eng, 0), 1);
		assert_int_equal(tlbpol_frees_pending(h.eng, 1), 0);
		for (uint32_t t = 1; t < ft; t++) {
			h_tick(&h, 0);
			assert_int_equal(freed, 0);
			assert_int_equal(tlbpol_frees_pending(h.eng, 0), 1);
			assert_int_equal(h.flushes_on[1], 0);
		}
		h_tick(&h, 0);
		/* One shootdown for the batch, and only then the free. */
		assert_int_equal(freed, 1);
		assert_int_equal(tlbpol_frees_pending(h.eng, 0), 0);
		assert_int_equal(h.flushes_on[1], 1);
		assert_int_equal(h.ipi_calls, 1);
		assert_int_equal(tlbpol_stats_read(h.eng, 0, &st), 0);
		assert_int_equal(st.aged_flushes, 1);
		assert_int_equal(st.deferred_frees, 1);
		/* Nothing left: more ticks do nothing. */
		h_tick(&h, 0);
		h_tick(&h, 0);
		assert_int_equal(h.ipi_calls, 1);
		tlbpol_engine_free(h.eng);
	}
}

static void test_frees_pending_errors(void **state)
{
	struct harness h;

	(void)state;
	two_cpus(&h, 0);
	assert_int_equal(tlbpol_frees_pending(NULL, 0), -EINVAL);
	assert_int_equal(tlbpol_frees_pending(h.eng, 2), -ERANGE);
	tlbpol_engine_free(h.eng);
}

/* 0 takes the default. */
static void test_default(void **state)
{
	struct harness h;

	(void)state;
	unmap_then_quiet(&h, 0);
	h_ticks(&h, 0, TLBPOL_DEFAULT_FREE_TICKS - 1);
	assert_int_equal(freed, 0);
	h_tick(&h, 0);
	assert_int_equal(freed, 1);
	tlbpol_engine_free(h.eng);
}

/* NEVER: the frees wait for the host's flush, as in release 0.1. */
static void test_never(void **state)
{
	struct harness h;

	(void)state;
	unmap_then_quiet(&h, TLBPOL_FREE_TICKS_NEVER);
	h_ticks(&h, 0, 10000);
	assert_int_equal(freed, 0);
	assert_int_equal(h.flushes_on[1], 0);
	assert_true(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE) > 0);
	assert_int_equal(freed, 1);
	assert_int_equal(h.flushes_on[1], 1);
	tlbpol_engine_free(h.eng);
}

/* A batch the host flushed restarts the age: the next entry gets its own
 * free_ticks, not what was left of the last one's. */
static void test_age_restarts(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_RECLAIM, 0, 0x900000, 1, P | W | U | A, 0);

	(void)state;
	as = unmap_then_quiet(&h, 3);
	h_tick(&h, 0);
	h_tick(&h, 0);
	assert_true(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE) > 0);
	assert_int_equal(freed, 1);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, &d), 0);
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &freed), 0);
	h_reset_log(&h);
	h_tick(&h, 0);
	h_tick(&h, 0);
	assert_int_equal(freed, 1);
	assert_int_equal(h.ipi_calls, 0);
	h_tick(&h, 0);
	assert_int_equal(freed, 2);
	assert_int_equal(h.ipi_calls, 1);
	tlbpol_engine_free(h.eng);
}

/* Work due by writeback, completed by the host's own flush: the age it
 * started is spent on nothing, and no aged flush is counted. */
static void test_writeback_flushed_by_host(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_stats st;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_RECLAIM, 0, 0x600000, 1, P | W | U | A | D, 0);

	(void)state;
	as = two_cpus(&h, 2);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_WRITEBACK);
	assert_true(tlbpol_flush(h.eng, 0, TLBPOL_BY_WRITEBACK) > 0);
	h_reset_log(&h);
	h_ticks(&h, 0, 4);
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(tlbpol_stats_read(h.eng, 0, &st), 0);
	assert_int_equal(st.aged_flushes, 0);
	tlbpol_engine_free(h.eng);
}

/* two_cpus(@free_ticks), and one lazy unmap by CPU 0 (LAZY_OK: no flush
 * due before a free) and a deferred free queued behind it; the log reset. */
static void lazy_unmap(struct harness *h, uint32_t free_ticks)
{
	queue_then_free(h, two_cpus(h, free_ticks),
			h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE, 0x700000, 1,
				P | W | U | A, 0),
			1, TLBPOL_BY_LAZY);
}

/* Lazy work is posted at a tick without interrupts, and a target that
 * ticks too takes it without one (LATR). */
static void test_lazy_taken_by_ticks(void **state)
{
	struct harness h;

	(void)state;
	lazy_unmap(&h, 1);
	for (uint32_t t = 0; t < 5; t++) {
		h_tick(&h, 0);
		h_tick(&h, 1);
	}
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(h.flushes_on[1], 1);
	assert_int_equal(freed, 1);
	tlbpol_engine_free(h.eng);
}

/*
 * A target that runs but does not tick (a tickless CPU) holds the lazy
 * request: after free_ticks of the initiator's ticks it is interrupted,
 * and the free behind the request runs; not before, and never with
 * TLBPOL_FREE_TICKS_NEVER.
 */
static void test_lazy_aged(void **state)
{
	struct harness h;

	(void)state;
	for (uint32_t ft = 1; ft <= 4; ft++) {
		lazy_unmap(&h, ft);
		h_tick(&h, 0); /* posts it */
		h_ticks(&h, 0, ft - 1);
		assert_int_equal(h.ipi_calls, 0);
		assert_int_equal(freed, 0);
		h_tick(&h, 0); /* interrupts CPU 1 */
		assert_int_equal(h.ipi_calls, 1);
		assert_int_equal(h.flushes_on[1], 1);
		h_tick(&h, 0); /* reaps, frees */
		assert_int_equal(freed, 1);
		tlbpol_engine_free(h.eng);
	}
	lazy_unmap(&h, TLBPOL_FREE_TICKS_NEVER);
	h_ticks(&h, 0, 1000);
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(freed, 0);
	tlbpol_engine_free(h.eng);
}

/*
 * A target that goes IDLE after the post (without ticking again) is taken
 * back, not interrupted: an idle CPU does not use user addresses, and it
 * catches up when it runs again (its return to RUNNING asks for the flush).
 * The request completes, the free behind it runs, and a stamp covering it
 * would no longer be pending.
 */
/* CPU 0's lazy unmap posted at its tick, then CPU 1 goes to @state. */
static void posted_then(struct harness *h, uint32_t state)
{
	lazy_unmap(h, 2);
	h_tick(h, 0); /* posts it */
	assert_int_equal(tlbpol_cpu_state(h->eng, 1, state), 0);
}

/* CPU 1 was left to catch up: never interrupted nor flushed, the free
 * behind the request ran, and its return to RUNNING asks for the flush. */
static void left_to_catch_up(struct harness *h)
{
	assert_int_equal(h->ipi_calls, 0);
	assert_int_equal(h->flushes_on[1], 0);
	assert_int_equal(freed, 1);
	assert_int_equal(tlbpol_cpu_state(h->eng, 1, TLBPOL_CPU_RUNNING), 1);
	tlbpol_engine_free(h->eng);
}

static void test_lazy_idle_target(void **state)
{
	struct harness h;

	(void)state;
	posted_then(&h, TLBPOL_CPU_IDLE);
	h_ticks(&h, 0, 3);
	left_to_catch_up(&h);
}

/*
 * Forcing a lazy request (tlbpol_flush(.., BY_LAZY)) whose target was
 * preempted after the post does not interrupt it or wait for it: the vCPU
 * catches up before it runs again.
 */
static void test_force_preempted_target(void **state)
{
	struct harness h;

	(void)state;
	posted_then(&h, TLBPOL_CPU_PREEMPTED);
	assert_true(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY) >= 0);
	left_to_catch_up(&h);
}

/*
 * Writeback work completed by the host's flush leaves the work due by the
 * free behind it still ageing: a tlbpol_flush(BY_WRITEBACK) must not restart
 * (or stop) the age of what it did not take.
 */
static void test_writeback_then_free_ages(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event dirty = h_event(TLBPOL_EV_RECLAIM, 0, 0x600000, 1,
					    P | W | U | A | D, 0);
	struct tlbpol_event clean = h_event(TLBPOL_EV_RECLAIM, 0, 0x680000, 1, P | W | U | A, 0);

	(void)state;
	as = two_cpus(&h, 2);
	freed = 0;
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &dirty, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_WRITEBACK);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &clean, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_FREE);
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &freed), 0);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_WRITEBACK), 1);
	assert_int_equal(freed, 0);
	h_tick(&h, 0);
	h_tick(&h, 0);
	assert_int_equal(freed, 1);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_quiet_cpu_frees),
	cmocka_unit_test(test_default),
	cmocka_unit_test(test_frees_pending_errors),
	cmocka_unit_test(test_never),
	cmocka_unit_test(test_age_restarts),
	cmocka_unit_test(test_writeback_flushed_by_host),
	cmocka_unit_test(test_lazy_taken_by_ticks),
	cmocka_unit_test(test_lazy_aged),
	cmocka_unit_test(test_lazy_idle_target),
	cmocka_unit_test(test_force_preempted_target),
	cmocka_unit_test(test_writeback_then_free_ages));
