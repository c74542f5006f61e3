/* SPDX-License-Identifier: MIT */
/*
 * test_errors: every entry point refuses bad input with the documented
 * negative errno, and a refused call changes nothing: no counter moves and
 * the pending flush queued before the bad calls is still there afterwards.
 */
#include <errno.h>

#include "support/harness.h"

struct ctx {
	struct harness h, other;
	struct tlbpol_engine *eng;
	struct tlbpol_as *as, *closed, *foreign;
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	struct tlbpol_event ev;
};

static struct ctx T;

static void noop_free(void *arg)
{
	(void)arg;
}

/*
 * A valid event, then one field spoilt.  The bad calls run once per valid
 * event of base_events[], one for each way tlbpol_submit() takes: a
 * downgrade (the general path), a spurious fault (the fast path, which
 * checks the event in a test of its own) and a clean reclaim (a removal,
 * classified first).
 */
static const struct tlbpol_event *base_event;

static struct tlbpol_event ev_with(int field, uint64_t v)
{
	struct tlbpol_event ev = *base_event;

	switch (field) {
	case 0: ev.size = (uint32_t)v; break;
	case 1: ev.kind = (uint32_t)v; break;
	case 2: ev.flags = (uint32_t)v; break;
	case 3: ev.page_shift = (uint32_t)v; break;
	case 4: ev.va = v; break;
	case 5: ev.nr_pages = v; break;
	case 6: ev.old_pte = (uint32_t)v; break;
	case 7: ev.new_pte = (uint32_t)v; break;
	}
	return ev;
}

#define EV_DECIDE(field, v) (T.ev = ev_with(field, v), tlbpol_decide(T.eng, T.as, 0, &T.ev, &T.d))
#define EV_SUBMIT(field, v) (T.ev = ev_with(field, v), tlbpol_submit(T.eng, T.as, 0, &T.ev, &T.d))

struct bad {
	const char *what;
	int expect;
	int (*call)(void);
};

#define BAD(name, err, expr)                                                   \
	static int call_##name(void) { return (expr); }
#define ENTRY(name, err) { #name, err, call_##name }

/* --- tlbpol_decide and tlbpol_submit share validation; both are tried --- */
#define EVENT_CASES(M)                                                          \
	M(size_small, -EINVAL, 0, sizeof(struct tlbpol_event) - 1)              \
	M(size_zero, -EINVAL, 0, 0)                                             \
	M(kind_unknown, -EINVAL, 1, TLBPOL_EV_MAX)                              \
	M(kind_huge, -EINVAL, 1, 0xffffffffu)                                   \
	M(flags_unknown, -EINVAL, 2, 1u << 20)                                  \
	M(shift_13_on_x86, -EINVAL, 3, 13)                                      \
	M(shift_14_on_x86, -EINVAL, 3, 14)                                      \
	M(shift_64, -EINVAL, 3, 64)                                             \
	M(shift_huge, -EINVAL, 3, 0xffffffffu)                                  \
	M(va_unaligned, -EINVAL, 4, 0x200001)                                   \
	M(pages_zero, -EINVAL, 5, 0)                                            \
	M(pages_wrap, -ERANGE, 5, 1ULL << 52)                                   \
	M(pages_huge, -ERANGE, 5, ~0ULL)                                        \
	M(old_pte_unknown_bit, -EINVAL, 6, 1u << 7)                             \
	M(new_pte_unknown_bit, -EINVAL, 7, 0x80000000u)

#define DEF_DECIDE(name, err, field, v) BAD(decide_##name, err, EV_DECIDE(field, v))
#define DEF_SUBMIT(name, err, field, v) BAD(submit_##name, err, EV_SUBMIT(field, v))
EVENT_CASES(DEF_DECIDE)
EVENT_CASES(DEF_SUBMIT)
#define ENT_DECIDE(name, err, field, v) ENTRY(decide_##name, err),
#define ENT_SUBMIT(name, err, field, v) ENTRY(submit_##name, err),

/* va_wraps: the last page at 0xfffffffffffff000 is fine; two pages wrap. */
BAD(decide_two_pages_wrap, -ERANGE,
    (T.ev = ev_with(4, 0xfffffffffffff000ULL), T.ev.nr_pages = 2,
     tlbpol_decide(T.eng, T.as, 0, &T.ev, &T.d)))
BAD(decide_2m_unaligned, -EINVAL,
    (T.ev = ev_with(3, 21), T.ev.va = 0x1000, tlbpol_decide(T.eng, T.as, 0, &T.ev, &T.d)))

BAD(decide_null_eng, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_decide(NULL, T.as, 0, &T.ev, &T.d)))
BAD(decide_null_as, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_decide(T.eng, NULL, 0, &T.ev, &T.d)))
BAD(decide_null_ev, -EINVAL, tlbpol_decide(T.eng, T.as, 0, NULL, &T.d))
BAD(decide_null_out, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_decide(T.eng, T.as, 0, &T.ev, NULL)))
BAD(decide_cpu_range, -ERANGE, (T.ev = ev_with(-1, 0), tlbpol_decide(T.eng, T.as, 2, &T.ev, &T.d)))
BAD(decide_cpu_huge, -ERANGE, (T.ev = ev_with(-1, 0), tlbpol_decide(T.eng, T.as, ~0u, &T.ev, &T.d)))
BAD(decide_closed_as, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_decide(T.eng, T.closed, 0, &T.ev, &T.d)))
BAD(decide_foreign_as, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_decide(T.eng, T.foreign, 0, &T.ev, &T.d)))
BAD(decide_misaligned_as, -EINVAL,
    (T.ev = ev_with(-1, 0),
     tlbpol_decide(T.eng, (struct tlbpol_as *)((char *)T.as + 8), 0, &T.ev, &T.d)))
BAD(submit_null_eng, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_submit(NULL, T.as, 0, &T.ev, &T.d)))
BAD(submit_null_as, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_submit(T.eng, NULL, 0, &T.ev, NULL)))
BAD(submit_null_ev, -EINVAL, tlbpol_submit(T.eng, T.as, 0, NULL, NULL))
BAD(submit_cpu_range, -ERANGE, (T.ev = ev_with(-1, 0), tlbpol_submit(T.eng, T.as, 5, &T.ev, NULL)))
BAD(submit_closed_as, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_submit(T.eng, T.closed, 0, &T.ev, NULL)))
BAD(submit_foreign_as, -EINVAL, (T.ev = ev_with(-1, 0), tlbpol_submit(T.eng, T.foreign, 0, &T.ev, NULL)))

BAD(flush_null, -EINVAL, tlbpol_flush(NULL, 0, TLBPOL_BY_LAZY))
BAD(flush_cpu, -ERANGE, tlbpol_flush(T.eng, 2, TLBPOL_BY_LAZY))
BAD(flush_by, -EINVAL, tlbpol_flush(T.eng, 0, TLBPOL_BY_LAZY + 1))
BAD(defer_null_eng, -EINVAL, tlbpol_defer_free(NULL, 0, noop_free, NULL))
BAD(defer_null_fn, -EINVAL, tlbpol_defer_free(T.eng, 0, NULL, NULL))
BAD(defer_cpu, -ERANGE, tlbpol_defer_free(T.eng, 2, noop_free, NULL))
BAD(ipi_null, -EINVAL, tlbpol_handle_ipi(NULL, 0))
BAD(ipi_cpu, -ERANGE, tlbpol_handle_ipi(T.eng, 2))
BAD(switch_null, -EINVAL, tlbpol_switch(NULL, 0, T.as, NULL))
BAD(switch_cpu, -ERANGE, tlbpol_switch(T.eng, 2, T.as, NULL))
BAD(switch_closed, -EINVAL, tlbpol_switch(T.eng, 1, T.closed, NULL))
BAD(switch_foreign, -EINVAL, tlbpol_switch(T.eng, 1, T.foreign, NULL))
BAD(state_null, -EINVAL, tlbpol_cpu_state(NULL, 0, TLBPOL_CPU_IDLE))
BAD(state_cpu, -ERANGE, tlbpol_cpu_state(T.eng, 2, TLBPOL_CPU_IDLE))
BAD(state_unknown, -EINVAL, tlbpol_cpu_state(T.eng, 1, TLBPOL_CPU_OFFLINE + 1))
BAD(state_offline_pending, -EBUSY, tlbpol_cpu_state(T.eng, 0, TLBPOL_CPU_OFFLINE))
BAD(tick_null, -EINVAL, tlbpol_tick(NULL, 0))
BAD(tick_cpu, -ERANGE, tlbpol_tick(T.eng, 2))
BAD(stats_null_eng, -EINVAL, tlbpol_stats_read(NULL, -1, &T.st))
BAD(stats_null_out, -EINVAL, tlbpol_stats_read(T.eng, -1, NULL))
BAD(stats_cpu, -ERANGE, tlbpol_stats_read(T.eng, 2, &T.st))
BAD(stats_cpu_neg, -ERANGE, tlbpol_stats_read(T.eng, -2, &T.st))
BAD(open_null_eng, -EINVAL, tlbpol_as_open(NULL, 9, &T.as))
BAD(open_null_out, -EINVAL, tlbpol_as_open(T.eng, 9, NULL))
BAD(open_dup_tag, -EEXIST, tlbpol_as_open(T.eng, 1, &T.closed))
BAD(close_null_eng, -EINVAL, tlbpol_as_close(NULL, T.as))
BAD(close_null_as, -EINVAL, tlbpol_as_close(T.eng, NULL))
BAD(close_closed, -EINVAL, tlbpol_as_close(T.eng, T.closed))
BAD(close_foreign, -EINVAL, tlbpol_as_close(T.eng, T.foreign))
BAD(close_pending, -EBUSY, tlbpol_as_close(T.eng, T.as))

static const struct bad bad_calls[] = {
	EVENT_CASES(ENT_DECIDE)
	EVENT_CASES(ENT_SUBMIT)
	ENTRY(decide_two_pages_wrap, -ERANGE),
	ENTRY(decide_2m_unaligned, -EINVAL),
	ENTRY(decide_null_eng, -EINVAL),
	ENTRY(decide_null_as, -EINVAL),
	ENTRY(decide_null_ev, -EINVAL),
	ENTRY(decide_null_out, -EINVAL),
	ENTRY(decide_cpu_range, -ERANGE),
	ENTRY(decide_cpu_huge, -ERANGE),
	ENTRY(decide_closed_as, -EINVAL),
	ENTRY(decide_foreign_as, -EINVAL),
	ENTRY(decide_misaligned_as, -EINVAL),
	ENTRY(submit_null_eng, -EINVAL),
	ENTRY(submit_null_as, -EINVAL),
	ENTRY(submit_null_ev, -EINVAL),
	ENTRY(submit_cpu_range, -ERANGE),
	ENTRY(submit_closed_as, -EINVAL),
	ENTRY(submit_foreign_as, -EINVAL),
	ENTRY(flush_null, -EINVAL),
	ENTRY(flush_cpu, -ERANGE),
	ENTRY(flush_by, -EINVAL),
	ENTRY(defer_null_eng, -EINVAL),
	ENTRY(defer_null_fn, -EINVAL),
	ENTRY(defer_cpu, -ERANGE),
	ENTRY(ipi_null, -EINVAL),
	ENTRY(ipi_cpu, -ERANGE),
	ENTRY(switch_null, -EINVAL),
	ENTRY(switch_cpu, -ERANGE),
	ENTRY(switch_closed, -EINVAL),
	ENTRY(switch_foreign, -EINVAL),
	ENTRY(state_null, -EINVAL),
	ENTRY(state_cpu, -ERANGE),
	ENTRY(state_unknown, -EINVAL),
	ENTRY(state_offline_pending, -EBUSY),
	ENTRY(tick_null, -EINVAL),
	ENTRY(tick_cpu, -ERANGE),
	ENTRY(stats_null_eng, -EINVAL),
	ENTRY(stats_null_out, -EINVAL),
	ENTRY(stats_cpu, -ERANGE),
	ENTRY(stats_cpu_neg, -ERANGE),
	ENTRY(open_null_eng, -EINVAL),
	ENTRY(open_null_out, -EINVAL),
	ENTRY(open_dup_tag, -EEXIST),
	ENTRY(close_null_eng, -EINVAL),
	ENTRY(close_null_as, -EINVAL),
	ENTRY(close_closed, -EINVAL),
	ENTRY(close_foreign, -EINVAL),
	ENTRY(close_pending, -EBUSY),
};

static void test_bad_calls_change_nothing(void **state)
{
	const struct tlbpol_event base_events[] = {
		h_event(TLBPOL_EV_PROTECT, 0, 0x200000, 1, P | W | U | A, P | U | A),
		h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x200000, 1, P | W | U | A | D,
			P | W | U | A | D),
		h_event(TLBPOL_EV_RECLAIM, 0, 0x200000, 1, P | U | A, 0),
	};
	struct tlbpol_stats before, after;
	struct tlbpol_as *keep, *closed;
	struct tlbpol_event unmap = h_event(TLBPOL_EV_UNMAP, 0, 0x10000, 1, P | W | U | A, 0);

	(void)state;
	T.eng = h_engine(&T.h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	h_engine(&T.other, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	assert_int_equal(tlbpol_as_open(T.eng, 1, &T.as), 0);
	assert_int_equal(tlbpol_as_open(T.eng, 2, &closed), 0);
	assert_int_equal(tlbpol_as_close(T.eng, closed), 0);
	assert_int_equal(tlbpol_as_open(T.other.eng, 1, &T.foreign), 0);
	keep = T.as;
	T.closed = closed;
	assert_int_equal(tlbpol_switch(T.eng, 0, T.as, NULL), 0);
	assert_int_equal(tlbpol_switch(T.eng, 1, T.as, NULL), 0);
	/* One deferred flush that no bad call may lose. */
	assert_int_equal(tlbpol_submit(T.eng, T.as, 0, &unmap, NULL), 0);
	assert_int_equal(tlbpol_stats_read(T.eng, -1, &before), 0);
	h_reset_log(&T.h);

	for (size_t b = 0; b < sizeof(base_events) / sizeof(base_events[0]); b++) {
		struct tlbpol_decision d;

		/* Each base is valid: the bad calls spoil exactly one field. */
		assert_int_equal(tlbpol_decide(T.eng, T.as, 0, &base_events[b], &d), 0);
		base_event = &base_events[b];
		for (size_t i = 0; i < sizeof(bad_calls) / sizeof(bad_calls[0]); i++) {
			int got = bad_calls[i].call();

			T.as = keep;
			T.closed = closed;
			if (got != bad_calls[i].expect)
				fail_msg("%s (event %zu): got %d, want %d", bad_calls[i].what, b,
					 got, bad_calls[i].expect);
			assert_int_equal(tlbpol_stats_read(T.eng, -1, &after), 0);
			if (memcmp(&before, &after, sizeof(before)))
				fail_msg("%s (event %zu): a counter moved", bad_calls[i].what, b);
			if (T.h.nr_log || T.h.ipi_calls)
				fail_msg("%s (event %zu): a flush or interrupt happened",
					 bad_calls[i].what, b);
		}
	}
	/* The pending flush survived every refusal. */
	assert_int_equal(tlbpol_flush(T.eng, 0, TLBPOL_BY_FREE), 1);
	assert_int_equal(T.h.flushes_on[0], 1);
	assert_int_equal(T.h.flushes_on[1], 1);
	tlbpol_engine_free(T.eng);
	tlbpol_engine_free(T.other.eng);
}

/* ------------------------------------------------------------------------ */

static void test_config_errors(void **state)
{
	static const uint16_t bad_nodes[2] = { 0, 7 };
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng = NULL;
	static _Alignas(64) unsigned char mem[1 << 20];
	static const struct tlbpol_ops no_flush = {
		.size = sizeof(struct tlbpol_ops),
		.send_ipi = h_send_ipi,
	};
	static const struct tlbpol_ops no_ipi = {
		.size = sizeof(struct tlbpol_ops),
		.flush_local = h_flush_local,
	};
	static const struct tlbpol_ops small = {
		.size = 4,
		.flush_local = h_flush_local,
		.send_ipi = h_send_ipi,
	};
	(void)state;

#define CHECK(err, stmt)                                                         \
	do {                                                                     \
		tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);                 \
		cfg.ops = &h_ops;                                                \
		stmt;                                                            \
		assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), err); \
		if (err) {                                                       \
			assert_int_equal(tlbpol_engine_size(&cfg), 0);           \
			assert_int_equal(tlbpol_engine_new(&cfg, &eng), err);    \
		}                                                                \
	} while (0)

	CHECK(0, (void)0);
	CHECK(-EINVAL, cfg.size = sizeof(cfg) - 1);
	CHECK(-EINVAL, cfg.size = TLBPOL_CONFIG_SIZE_0_1 + 4); /* cuts a field */
	CHECK(0, cfg.size = TLBPOL_CONFIG_SIZE_0_1);          /* release 0.1's */
	CHECK(0, cfg.free_ticks = TLBPOL_FREE_TICKS_NEVER);
	CHECK(0, cfg.wait_limit = 1);
	CHECK(-EINVAL, cfg.size = 0);
	CHECK(-ERANGE, cfg.nr_cpus = 0);
	CHECK(-ERANGE, cfg.nr_cpus = TLBPOL_MAX_CPUS + 1);
	CHECK(-EINVAL, cfg.arch = TLBPOL_ARCH_MAX);
	CHECK(-EINVAL, cfg.rules = 1ULL << 40);
	CHECK(-EINVAL, cfg.ops = NULL);
	CHECK(-EINVAL, cfg.ops = &no_flush);
	CHECK(-EINVAL, cfg.ops = &no_ipi);
	CHECK(-EINVAL, cfg.ops = &small);
	CHECK(-EINVAL, cfg.flush_ceiling = 0);
	CHECK(-EINVAL, cfg.reserved = 1);
	CHECK(-ERANGE, cfg.batch_pages = 0);
	CHECK(-ERANGE, cfg.batch_pages = TLBPOL_MAX_BATCH_PAGES + 1);
	CHECK(-ERANGE, cfg.max_as = 0);
	CHECK(-ERANGE, cfg.max_as = TLBPOL_MAX_AS + 1);
	CHECK(-ERANGE, cfg.cpu_node = bad_nodes);
#undef CHECK

	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = &h_ops;
	assert_int_equal(tlbpol_engine_init(NULL, mem, sizeof(mem), &cfg), -EINVAL);
	assert_int_equal(tlbpol_engine_init(&eng, NULL, sizeof(mem), &cfg), -EINVAL);
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), NULL), -EINVAL);
	assert_int_equal(tlbpol_engine_init(&eng, mem + 8, sizeof(mem) - 8, &cfg), -EINVAL);
	assert_int_equal(tlbpol_engine_init(&eng, mem, tlbpol_engine_size(&cfg) - 1, &cfg), -ENOMEM);
	assert_int_equal(tlbpol_engine_init(&eng, mem, tlbpol_engine_size(&cfg), &cfg), 0);
	assert_int_equal(tlbpol_engine_new(NULL, &eng), -EINVAL);
	assert_int_equal(tlbpol_engine_new(&cfg, NULL), -EINVAL);
	assert_int_equal(tlbpol_engine_size(NULL), 0);
	tlbpol_config_init(NULL, 1, 0); /* must not crash */
	tlbpol_engine_free(NULL);
}

static void test_as_limits(void **state)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_as *as[3];

	(void)state;
	h_config(&h, &cfg, 1, TLBPOL_ARCH_GENERIC);
	cfg.max_as = 2;
	assert_int_equal(tlbpol_engine_new(&cfg, &h.eng), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 10, &as[0]), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 11, &as[1]), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 12, &as[2]), -ENOMEM);
	/* A CPU running it keeps it open. */
	assert_int_equal(tlbpol_switch(h.eng, 0, as[0], NULL), 0);
	assert_int_equal(tlbpol_as_close(h.eng, as[0]), -EBUSY);
	/* Lazy (switched to NULL) it is still loaded: still busy. */
	assert_int_equal(tlbpol_unload(h.eng, 0), -EBUSY);
	assert_int_equal(tlbpol_switch(h.eng, 0, NULL, NULL), 0);
	assert_int_equal(tlbpol_as_close(h.eng, as[0]), -EBUSY);
	assert_int_equal(tlbpol_unload(h.eng, 0), 0);
	assert_int_equal(tlbpol_as_close(h.eng, as[0]), 0);
	assert_int_equal(tlbpol_unload(NULL, 0), -EINVAL);
	assert_int_equal(tlbpol_unload(h.eng, 1), -ERANGE);
	assert_int_equal(tlbpol_as_close(h.eng, as[0]), -EINVAL);
	assert_int_equal(tlbpol_as_open(h.eng, 12, &as[2]), 0);
	assert_int_equal(tlbpol_as_tag(as[2]), 12);
	assert_int_equal(tlbpol_as_tag(NULL), 0);
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_bad_calls_change_nothing),
	cmocka_unit_test(test_config_errors),
	cmocka_unit_test(test_as_limits));
