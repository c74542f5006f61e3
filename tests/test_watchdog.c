/* SPDX-License-Identifier: MIT */
/*
 * test_watchdog: cfg->wait_limit and ops->stuck.  A target that does not
 * serve is interrupted again every wait_limit turns and reported to the
 * hook with the CPUs still owed; the initiator never completes without its
 * acknowledgement; an interrupt lost once is recovered by the re-send.
 * Single-threaded: the relax and stuck callbacks stand in for the target.
 */
#include <errno.h>

#include "support/harness.h"

struct wd {
	struct harness h;  /* first: the harness callbacks take it as ctx */
	uint64_t turns;    /* relax calls */
	uint64_t revive_at; /* relax turn at which CPU 1 serves, 0: never */
	uint32_t stuck_calls, revive_after_stuck;
	uint64_t stuck_turns[8];
	int stuck_listed_1, stuck_other, flushed_before_revive;
	uint32_t drop_ipis; /* send_ipi calls to swallow (lost interrupts) */
	int revived;
};

static void wd_revive(struct wd *w)
{
	if (w->revived)
		return;
	w->revived = 1;
	w->flushed_before_revive = (int)w->h.flushes_on[1];
	assert_true(tlbpol_handle_ipi(w->h.eng, 1) >= 1);
}

static void wd_relax(void *ctx, uint32_t cpu)
{
	struct wd *w = ctx;

	assert_int_equal(cpu, 0);
	w->turns++;
	assert_true(w->turns < 100000); /* a watchdog that never fires: fail, not hang */
	if (w->revive_at && w->turns == w->revive_at)
		wd_revive(w);
}

static void wd_stuck(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *waiting, uint64_t turns)
{
	struct wd *w = ctx;

	assert_int_equal(cpu, 0);
	if (w->stuck_calls < 8)
		w->stuck_turns[w->stuck_calls] = turns;
	w->stuck_calls++;
	w->stuck_listed_1 += tlbpol_cpuset_test(waiting, 1);
	w->stuck_other += (int)tlbpol_cpuset_count(waiting) - tlbpol_cpuset_test(waiting, 1);
	/* Still waiting: a silent CPU 1 has not flushed.  (A delivering one
	 * took the re-send that comes just before this call.) */
	if (!w->h.deliver)
		assert_int_equal(w->h.flushes_on[1], 0);
	if (w->revive_after_stuck && w->stuck_calls == w->revive_after_stuck)
		wd_revive(w);
}

/* The harness's send_ipi, less the interrupts the test loses. */
static void wd_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct wd *w = ctx;

	if (w->drop_ipis) {
		w->drop_ipis--;
		w->h.ipi_calls++;
		return;
	}
	h_send_ipi(ctx, from, t);
	if (w->h.deliver)
		w->revived = 1;
}

static const struct tlbpol_ops wd_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = h_flush_local,
	.send_ipi = wd_send_ipi,
	.relax = wd_relax,
	.stuck = wd_stuck,
};

/* An engine of two CPUs with @ops, @wait_limit and @rules, CPU 1 silent;
 * both run the address space returned. */
static struct tlbpol_as *wd_start(struct wd *w, const struct tlbpol_ops *ops, uint32_t wait_limit,
				  uint64_t rules)
{
	struct tlbpol_config cfg;
	struct tlbpol_as *as;

	h_config(&w->h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = ops;
	cfg.ops_ctx = w;
	cfg.wait_limit = wait_limit;
	cfg.rules = rules;
	assert_int_equal(tlbpol_engine_new(&cfg, &w->h.eng), 0);
	as = h_as_run(&w->h, 1, 2);
	h_reset_log(&w->h);
	return as;
}

/* What the watchdog counted in a run: ops->stuck calls, stuck periods
 * (tlbpol_stats.stuck_calls, counted with or without the hook) and
 * interrupts sent again. */
struct wd_counts {
	uint32_t hook_calls, periods, resent;
};

/* Two CPUs in one address space, CPU 1 silent unless @deliver; CPU 0 then
 * write-protects a page: a synchronous shootdown at CPU 1, whose watchdog
 * counts must be @want; returns the engine's statistics. */
static struct tlbpol_stats wd_run(struct wd *w, const struct tlbpol_ops *ops, uint32_t wait_limit,
				  int deliver, struct wd_counts want)
{
	struct tlbpol_as *as = wd_start(w, ops, wait_limit,
					TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST);
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x5000, 1, P | W | U | A | D,
					 P | U | A | D);
	struct tlbpol_stats st;

	w->h.deliver = deliver;
	assert_int_equal(tlbpol_submit(w->h.eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(d.deadline, TLBPOL_BY_NOW);
	/* Complete only now, and only because CPU 1 flushed. */
	assert_int_equal(w->h.flushes_on[1], 1);
	assert_int_equal(tlbpol_stats_read(w->h.eng, 0, &st), 0);
	tlbpol_engine_free(w->h.eng);
	assert_int_equal(w->stuck_calls, want.hook_calls);
	assert_int_equal(st.stuck_calls, want.periods);
	assert_int_equal(st.ipis_resent, want.resent);
	return st;
}

/* A silent CPU: re-sent to and reported every wait_limit turns, listed as
 * owed, and the initiator waits until it serves. */
static void test_silent_cpu_reported(void **state)
{
	struct wd w = { .revive_after_stuck = 3 };
	struct tlbpol_stats st;

	(void)state;
	st = wd_run(&w, &wd_ops, 100, 0, (struct wd_counts){ 3, 3, 3 });
	assert_int_equal(w.stuck_turns[0], 100);
	assert_int_equal(w.stuck_turns[1], 200);
	assert_int_equal(w.stuck_turns[2], 300);
	assert_int_equal(w.stuck_listed_1, 3);
	assert_int_equal(w.stuck_other, 0);
	assert_int_equal(w.flushed_before_revive, 0);
	assert_int_equal(st.ipis_sent, 1 + 3);
	assert_int_equal(w.h.ipi_calls, 1 + 3);
}

/* No hook: the periods are counted and the re-sends made all the same. */
static void test_watchdog_without_hook(void **state)
{
	struct wd w = { .revive_at = 250 };
	struct tlbpol_ops nohook = wd_ops;

	(void)state;
	nohook.stuck = NULL;
	wd_run(&w, &nohook, 100, 0, (struct wd_counts){ 0, 2, 2 });
	assert_int_equal(w.flushed_before_revive, 0);
}

/* An interrupt lost on the way is recovered by the first re-send. */
static void test_lost_interrupt_recovered(void **state)
{
	struct wd w = { .drop_ipis = 1 };

	(void)state;
	wd_run(&w, &wd_ops, 64, 1, (struct wd_counts){ 1, 1, 1 });
	assert_int_equal(w.stuck_listed_1, 1);
	assert_true(w.turns >= 64 && w.turns < 128);
}

/* wait_limit 0: interrupts are sent once, and the hook is never called. */
static void test_no_limit(void **state)
{
	struct wd w = { .revive_at = 1000 };
	struct tlbpol_stats st;

	(void)state;
	st = wd_run(&w, &wd_ops, 0, 0, (struct wd_counts){ 0, 0, 0 });
	assert_int_equal(st.ipis_sent, 1);
	assert_int_equal(w.turns, 1000);
}

/* Lazy requests are waited for in the same loop: tlbpol_flush(BY_LAZY)
 * re-sends to a silent target too. */
static void test_lazy_wait_watched(void **state)
{
	struct wd w = { .revive_after_stuck = 2 };
	struct tlbpol_as *as = wd_start(&w, &wd_ops, 50, TLBPOL_RULES_DEFAULT);
	struct tlbpol_stats st;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE,
					 0x7000, 1, P | W | U | A, 0);

	(void)state;
	assert_int_equal(tlbpol_submit(w.h.eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_LAZY);
	assert_int_equal(tlbpol_tick(w.h.eng, 0), 0); /* posts the lazy request */
	h_reset_log(&w.h);
	assert_int_equal(tlbpol_flush(w.h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(w.stuck_calls, 2);
	assert_int_equal(w.stuck_listed_1, 2);
	assert_int_equal(w.flushed_before_revive, 0);
	assert_int_equal(w.h.flushes_on[1], 1);
	assert_int_equal(tlbpol_stats_read(w.h.eng, 0, &st), 0);
	assert_int_equal(st.ipis_resent, 2);
	tlbpol_engine_free(w.h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_silent_cpu_reported),
	cmocka_unit_test(test_watchdog_without_hook),
	cmocka_unit_test(test_lost_interrupt_recovered),
	cmocka_unit_test(test_no_limit),
	cmocka_unit_test(test_lazy_wait_watched));
