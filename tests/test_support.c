/* SPDX-License-Identifier: MIT */
/*
 * test_support: the shared test helpers themselves.  The generators' first
 * values are pinned (the tests that use them expect the same sequences run
 * after run), the mailbox's raise, take and send (and the oracle's
 * sequentially consistent raise and take) are checked on one thread, and
 * cpus.h's threads get their CPU numbers.  The mailbox's use across threads
 * is what test_threads, test_machinery_threads, test_reconfig_threads,
 * test_obligations, test_wait_irqs_off and the stress oracle do, under
 * TSan too.
 */
#define _POSIX_C_SOURCE 200809L /* timing.h's clocks under -std=c11 */
#include "support/cpus.h"
#include "support/harness.h"
#include "support/mailbox.h"
#include "support/rng.h"
#include "support/timing.h"

static void test_lcg32_sequence(void **s)
{
	uint32_t x = rng_seed32(0);

	(void)s;
	assert_int_equal(x, 0x9e3779b9u);
	assert_int_equal(rng_seed32(1), 0x3c6ef372u);
	assert_int_equal(rng_seed32(3), 0x78dde6e4u);
	assert_int_equal(rng_lcg32(&x), 0x62cb61feu);
	assert_int_equal(x, 0x62cb61feu);
	assert_int_equal(rng_lcg32(&x), 0x50e84d5fu);
	assert_int_equal(rng_lcg32(&x), 0x30f613acu);
}

static void test_xorshift64_sequence(void **s)
{
	uint64_t x = RNG_XORSHIFT64_SEED;

	(void)s;
	/* Marsaglia's first value for his seed: 8748534153485358512. */
	assert_true(rng_xorshift64(&x) == 0x79690975fbde15b0ULL);
	assert_true(x == 0x79690975fbde15b0ULL);
	assert_true(rng_xorshift64(&x) == 0x2a337357ae2cc59bULL);
	assert_true(rng_xorshift64(&x) == 0x2fef107a27529ad0ULL);
}

/*
 * The stress oracle's and softmmu's generator: their seeds' runs replay
 * only while these stay (computed independently, in Python).
 */
static void test_xorshift64star_sequence(void **s)
{
	uint64_t x = 1;

	(void)s;
	assert_true(rng_xorshift64star(&x) == 0x47e4ce4b896cdd1dULL);
	assert_true(x == 0x2000001ULL);
	assert_true(rng_xorshift64star(&x) == 0xabcfa6a8e079651dULL);
	assert_true(rng_xorshift64star(&x) == 0xb9d10d8feb731f57ULL);
	x = RNG_XORSHIFT64_SEED;
	assert_true(rng_xorshift64star(&x) == 0xe6a7a1ea317bcf2bULL);
	assert_true(x == 0x32bf949cf29152e7ULL);
}

static void test_clocks(void **s)
{
	uint64_t t0 = now_ns(), c0 = thread_cpu_ns(), t1;

	(void)s;
	sleep_ns(2000000);
	t1 = now_ns();
	assert_true(t1 - t0 >= 2000000);
	/* Asleep, not running: far less CPU time than wall time. */
	assert_true(thread_cpu_ns() - c0 < t1 - t0);
	cpu_relax();
}

/*
 * Two interrupts before the CPU polls are one take, with either pair of
 * raise and take: mbox_raise() counts each interrupt (@sent after two),
 * the oracle's seq_cst pair counts none.
 */
static void check_take(void (*raise)(struct mbox *), int (*take)(struct mbox *), uint64_t sent)
{
	struct mbox mb = { 0 };

	assert_int_equal(take(&mb), 0);
	raise(&mb);
	raise(&mb);
	assert_true(mbox_raised(&mb));
	assert_int_equal(take(&mb), 1);
	assert_false(mbox_raised(&mb));
	assert_int_equal(take(&mb), 0);
	assert_int_equal(mbox_sent(&mb), sent);
}

static void test_mailbox_take(void **s)
{
	(void)s;
	check_take(mbox_raise, mbox_take, 2);
	/* A cache line each: a CPU's polls do not touch its neighbour's. */
	assert_true(_Alignof(struct mbox) >= MBOX_CACHELINE);
}

static void test_mailbox_seq_cst(void **s)
{
	(void)s;
	check_take(mbox_raise_seq_cst, mbox_take_seq_cst, 0);
}

/* send_ipi's targets, and only they, find an interrupt. */
static void test_mailbox_send(void **s)
{
	struct mbox box[3] = { 0 };
	struct tlbpol_cpuset t;

	(void)s;
	tlbpol_cpuset_zero(&t);
	tlbpol_cpuset_set(&t, 0);
	tlbpol_cpuset_set(&t, 2);
	mbox_send(box, 3, &t);
	assert_int_equal(mbox_take(&box[0]), 1);
	assert_int_equal(mbox_take(&box[1]), 0);
	assert_int_equal(mbox_take(&box[2]), 1);
	assert_int_equal(mbox_sent(&box[1]), 0);
	assert_int_equal(mbox_sent_total(box, 3), 2);
}

static _Atomic uint32_t cpu_seen[4];

static void *note_cpu(void *arg)
{
	atomic_fetch_add(&cpu_seen[cpus_id(arg)], 1);
	return NULL;
}

/* cpus_start() gives each thread its own CPU number, and only the CPUs
 * asked for; cpus_mbox_take() counts what each CPU's interrupts served. */
static void test_cpus(void **s)
{
	pthread_t t[4];
	_Atomic uint64_t served[2] = { 0 };
	struct mbox box[2] = { 0 };
	struct cpus_mbox host = { .nr_cpus = 2, .box = box, .served = served };
	struct tlbpol_config cfg;
	struct tlbpol_cpuset one;

	(void)s;
	cpus_start(t, 1, 4, note_cpu);
	cpus_join(t, 1, 4);
	assert_int_equal(cpu_seen[0], 0);
	for (uint32_t c = 1; c < 4; c++)
		assert_int_equal(cpu_seen[c], 1);
	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = &cpus_mbox_ops;
	cfg.ops_ctx = &host;
	assert_int_equal(tlbpol_engine_new(&cfg, &host.eng), 0);
	assert_int_equal(cpus_mbox_take(&host, 1), 0); /* nothing sent */
	tlbpol_cpuset_zero(&one);
	tlbpol_cpuset_set(&one, 1);
	cpus_mbox_send_ipi(&host, 0, &one);
	cpus_mbox_take(&host, 1); /* an empty inbox: the handler serves nothing */
	assert_int_equal(served[1], 0);
	assert_int_equal(mbox_sent(&box[1]), 1);
	assert_false(mbox_raised(&box[1]));
	tlbpol_engine_free(host.eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lcg32_sequence),
		cmocka_unit_test(test_xorshift64_sequence),
		cmocka_unit_test(test_xorshift64star_sequence),
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_mailbox_take),
		cmocka_unit_test(test_mailbox_seq_cst),
		cmocka_unit_test(test_mailbox_send),
		cmocka_unit_test(test_cpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
