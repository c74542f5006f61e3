/* SPDX-License-Identifier: MIT */
/*
 * test_compat: a program linked against release 0.1 still gets 0.1's
 * struct tlbpol_stats (19 reasons, 31 words) from tlbpol_stats_read, one
 * linked against 0.2 gets 0.2's (22 reasons, 37 words), and nothing is
 * written past them; one linked against this release gets the whole
 * structure.  Its tlbpol_config_init writes 0.1's configuration,
 * which the engine accepts with 0.1's ops.  Binds the old symbol versions
 * explicitly, as a binary built against 0.1 does.  A caller built against
 * a newer header is accepted only if it set nothing this release ignores.
 */
#include <errno.h>

#include "support/harness.h"

int tlbpol_stats_read_0_1(const struct tlbpol_engine *eng, int cpu, void *out);
__asm__(".symver tlbpol_stats_read_0_1, tlbpol_stats_read@TLBPOL_0.1");

#define WORDS_0_1 (12 + 19)

int tlbpol_stats_read_0_2(const struct tlbpol_engine *eng, int cpu, void *out);
__asm__(".symver tlbpol_stats_read_0_2, tlbpol_stats_read@TLBPOL_0.2");

#define WORDS_0_2 (12 + 22 + 3)

void tlbpol_config_init_0_1(void *cfg, uint32_t nr_cpus, uint32_t arch);
__asm__(".symver tlbpol_config_init_0_1, tlbpol_config_init@TLBPOL_0.1");
void tlbpol_config_init_0_2(void *cfg, uint32_t nr_cpus, uint32_t arch);
__asm__(".symver tlbpol_config_init_0_2, tlbpol_config_init@TLBPOL_0.2");

/* Release 0.1's structures: the configuration up to `reserved`, the ops up
 * to vcpu_defer. */
struct config_0_1 {
	unsigned char bytes[TLBPOL_CONFIG_SIZE_0_1];
	/* At least what this release's structure has past 0.1's, so that the
	 * accesses through struct tlbpol_config stay inside the object. */
	unsigned char canary[sizeof(struct tlbpol_config) - TLBPOL_CONFIG_SIZE_0_1];
};

struct ops_0_1 {
	uint32_t size, pad;
	void (*flush_local)(void *ctx, uint32_t cpu, const struct tlbpol_flush *f);
	void (*send_ipi)(void *ctx, uint32_t from_cpu, const struct tlbpol_cpuset *targets);
	void *broadcast, *relax, *vcpu_defer;
};

static int freed;

/*
 * A program built against 0.1: tlbpol_config_init@TLBPOL_0.1 writes 0.1's
 * size and nothing past it, and the engine accepts that configuration and
 * 0.1's shorter ops (the new fields default: no watchdog), and works.
 */
static void test_config_0_1(void **state)
{
	struct config_0_1 old;
	struct tlbpol_config *cfg = (struct tlbpol_config *)(void *)&old;
	struct harness h;
	struct ops_0_1 ops = { sizeof(ops), 0, h_flush_local, h_send_ipi, 0, 0, 0 };
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x3000, 1, P | W | U | A, P | U | A);
	struct tlbpol_event rc = h_event(TLBPOL_EV_RECLAIM, 0, 0x4000, 1, P | W | U | A, 0);
	struct tlbpol_engine *eng;
	static _Alignas(64) unsigned char mem[1 << 20];

	(void)state;
	_Static_assert(sizeof(struct ops_0_1) == TLBPOL_OPS_SIZE_0_1, "0.1's ops");
	memset(&old, 0xa5, sizeof(old));
	tlbpol_config_init_0_1(&old, 2, TLBPOL_ARCH_X86_64);
	for (size_t i = 0; i < sizeof(old.canary); i++)
		assert_int_equal(old.canary[i], 0xa5);
	assert_int_equal(cfg->size, TLBPOL_CONFIG_SIZE_0_1);
	assert_int_equal(cfg->nr_cpus, 2);
	assert_int_equal(cfg->rules, TLBPOL_RULES_DEFAULT);

	memset(&h, 0, sizeof(h));
	h.nr_cpus = 2;
	h.deliver = 1;
	cfg->ops = (const struct tlbpol_ops *)(const void *)&ops;
	cfg->ops_ctx = &h;
	/* Nothing past 0.1's size is read: the canary would be a wait_limit
	 * and a free_ticks of 0xa5a5a5a5 if it were (see the free below). */
	assert_true(tlbpol_engine_size(cfg) > 0);
	assert_true(tlbpol_engine_size(cfg) <= sizeof(mem));
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), cfg), 0);
	h.eng = eng;
	assert_int_equal(tlbpol_as_open(eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(eng, 0, as, NULL), 0);
	assert_int_equal(tlbpol_switch(eng, 1, as, NULL), 0);
	assert_int_equal(tlbpol_submit(eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(h.flushes_on[1], 1);
	/* The default free_ticks: a deferred free runs within two ticks. */
	freed = 0;
	assert_int_equal(tlbpol_submit(eng, as, 0, &rc, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_FREE);
	assert_int_equal(tlbpol_defer_free(eng, 0, h_count_free, &freed), 0);
	assert_int_equal(tlbpol_tick(eng, 0), 0);
	assert_int_equal(freed, 0);
	assert_int_equal(tlbpol_tick(eng, 0), 0);
	assert_int_equal(freed, 1);
	assert_int_equal(tlbpol_engine_new(cfg, &h.eng), 0);
	tlbpol_engine_free(h.eng);

	/* Shorter than 0.1's: refused. */
	cfg->size = TLBPOL_CONFIG_SIZE_0_1 - 4;
	assert_int_equal(tlbpol_engine_size(cfg), 0);
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), cfg), -EINVAL);
	cfg->size = TLBPOL_CONFIG_SIZE_0_1;
	ops.size = TLBPOL_OPS_SIZE_0_1 - 8;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), cfg), -EINVAL);
}

/* Release 0.2's tlbpol_config_init writes 0.2's structure and no more (it
 * wrote 0.3's 112 bytes into 0.2's 96 before 0.3 had a node of its own),
 * and an engine takes it. */
static void test_config_init_0_2(void **state)
{
	struct {
		struct tlbpol_config c; /* only its first TLBPOL_CONFIG_SIZE_0_2 bytes are 0.2's */
	} old;
	const unsigned char *b = (const unsigned char *)&old;
	struct harness h;

	(void)state;
	memset(&old, 0xa5, sizeof(old));
	tlbpol_config_init_0_2(&old, 2, TLBPOL_ARCH_X86_64);
	for (size_t i = TLBPOL_CONFIG_SIZE_0_2; i < sizeof(old); i++)
		assert_int_equal(b[i], 0xa5);
	assert_int_equal(old.c.size, TLBPOL_CONFIG_SIZE_0_2);
	assert_int_equal(old.c.free_ticks, 0);
	memset(&h, 0, sizeof(h));
	h.nr_cpus = 2;
	old.c.ops = &h_ops;
	old.c.ops_ctx = &h;
	assert_int_equal(tlbpol_engine_new(&old.c, &h.eng), 0);
	tlbpol_engine_free(h.eng);
}

/* This release's tlbpol_config_init: its size, the new fields 0. */
static void test_config_0_2(void **state)
{
	struct harness h;
	struct tlbpol_config cfg;

	(void)state;
	memset(&cfg, 0xa5, sizeof(cfg));
	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64);
	assert_int_equal(cfg.size, sizeof(cfg));
	assert_int_equal(cfg.wait_limit, 0);
	assert_int_equal(cfg.free_ticks, 0);
	assert_int_equal(tlbpol_engine_new(&cfg, &h.eng), 0);
	tlbpol_engine_free(h.eng);
}

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

/* Release 0.2's tlbpol_stats_read: 0.2's 37 words (up to stuck_calls), the
 * counters 0.3 appended (here a broadcast's) not written. */
static void test_stats_0_2(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event dg = h_event(TLBPOL_EV_PROTECT, 0, 0x2000, 1, P | W | U | A, P | U | A);
	uint64_t old[WORDS_0_2 + 8];
	struct tlbpol_stats st;

	(void)state;
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT | TLBPOL_RULE_BROADCAST);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	assert_int_equal(tlbpol_switch(h.eng, 1, as, NULL), 0);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &dg, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.shoot_ipi + st.shoot_broadcast, 1);

	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		old[i] = 0xa5a5a5a5a5a5a5a5ULL;
	assert_int_equal(tlbpol_stats_read_0_2(h.eng, -1, old), 0);
	assert_int_equal(old[0], 1); /* events */
	assert_int_equal(old[12 + TLBPOL_WHY_DOWNGRADE], 1);
	assert_int_equal(old[WORDS_0_2 - 1], st.stuck_calls);
	for (size_t i = WORDS_0_2; i < sizeof(old) / sizeof(old[0]); i++)
		assert_int_equal(old[i], 0xa5a5a5a5a5a5a5a5ULL);
	assert_int_equal(tlbpol_stats_read_0_2(NULL, -1, old), -EINVAL);
	assert_int_equal(tlbpol_stats_read_0_2(h.eng, 2, old), -ERANGE);
	assert_int_equal(tlbpol_stats_read_0_2(h.eng, -1, NULL), -EINVAL);
	tlbpol_engine_free(h.eng);
}

/*
 * A caller built against a newer header passes larger structures.  The
 * bytes past what this release knows are fields it would ignore: accepted
 * when they are all zero (nothing set there), refused with -E2BIG when one
 * is set, and a size past a page is refused unread; a refused call changes
 * nothing.  For the event (tlbpol_decide(), tlbpol_submit()), the
 * configuration and the ops.
 */
struct newer_event {
	struct tlbpol_event ev;
	uint64_t future;
};

struct newer_config {
	struct tlbpol_config cfg;
	uint64_t future;
};

struct newer_ops {
	struct tlbpol_ops ops;
	void *future;
};

static void test_newer_event(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	struct newer_event n = { h_event(TLBPOL_EV_PROTECT, 0, 0x3000, 1, P | W | U | A, P | U | A),
				 0 };

	(void)state;
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	n.ev.size = sizeof(n);
	assert_int_equal(tlbpol_decide(h.eng, as, 0, &n.ev, &d), 0);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &n.ev, &d), 0);
	assert_int_equal(d.reason, TLBPOL_WHY_DOWNGRADE);
	for (uint32_t byte = 0; byte < sizeof(n.future); byte++) {
		n.future = 1ULL << (8 * byte);
		assert_int_equal(tlbpol_decide(h.eng, as, 0, &n.ev, &d), -E2BIG);
		assert_int_equal(tlbpol_submit(h.eng, as, 0, &n.ev, &d), -E2BIG);
	}
	n.future = 0;
	n.ev.size = 4097;
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &n.ev, &d), -E2BIG);
	/* The event's own fields are still checked in a larger one. */
	n.ev.size = sizeof(n);
	n.ev.nr_pages = 0;
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &n.ev, &d), -EINVAL);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.events, 1);
	tlbpol_engine_free(h.eng);
}

static void test_newer_config_ops(void **state)
{
	struct harness h;
	struct newer_config c;
	struct newer_ops o = { h_ops, 0 };
	struct tlbpol_engine *eng;

	(void)state;
	h_config(&h, &c.cfg, 2, TLBPOL_ARCH_X86_64);
	c.future = 0;
	c.cfg.size = sizeof(c);
	o.ops.size = sizeof(o);
	c.cfg.ops = &o.ops;
	assert_int_equal(tlbpol_engine_new(&c.cfg, &eng), 0);
	tlbpol_engine_free(eng);
	c.future = 1;
	assert_int_equal(tlbpol_engine_new(&c.cfg, &eng), -E2BIG);
	assert_int_equal(tlbpol_engine_size(&c.cfg), 0);
	c.future = 0;
	o.future = (void *)&o;
	assert_int_equal(tlbpol_engine_new(&c.cfg, &eng), -E2BIG);
	assert_int_equal(tlbpol_engine_size(&c.cfg), 0);
	o.future = 0;
	assert_int_equal(tlbpol_engine_new(&c.cfg, &eng), 0);
	/* The live cost change reads the same size-led config. */
	assert_int_equal(tlbpol_engine_set_cost_model(eng, &c.cfg), 0);
	c.future = 1;
	assert_int_equal(tlbpol_engine_set_cost_model(eng, &c.cfg), -E2BIG);
	c.future = 0;
	tlbpol_engine_free(eng);
	c.cfg.size = 5000;
	assert_int_equal(tlbpol_engine_size(&c.cfg), 0);
}

H_TEST_MAIN(
	cmocka_unit_test(test_stats_0_1),
	cmocka_unit_test(test_stats_0_2),
	cmocka_unit_test(test_config_0_1),
	cmocka_unit_test(test_config_0_2),
	cmocka_unit_test(test_config_init_0_2),
	cmocka_unit_test(test_newer_event),
	cmocka_unit_test(test_newer_config_ops));
