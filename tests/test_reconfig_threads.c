/* SPDX-License-Identifier: MIT */
/*
 * test_reconfig_threads: rules flipped while two CPU threads decide and
 * shoot each other down.  Every decision must be the one of the old or the
 * new configuration — never a mix — and no replaced configuration may be
 * used after it is freed (ASan/TSan builds of this test prove that part).
 */
#include <stdatomic.h>
#include <stdio.h>

#include "support/cpus.h"
#include "support/harness.h"

#define RW (P | W | U | A)
#define RWD (RW | D)
#define RO (P | U | A)

/* Events whose decisions differ between the two masks, in more than one
 * field: a mix of configurations would show. */
static const struct tlbpol_event events[] = {
	{ sizeof(struct tlbpol_event), TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE | TLBPOL_EVF_TRIED, 12,
	  0x1000, 1, RW, RWD },
	{ sizeof(struct tlbpol_event), TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 12, 0x2000, 1, RWD, RWD },
	{ sizeof(struct tlbpol_event), TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK, 12, 0x3000, 1, RO, 0 },
	{ sizeof(struct tlbpol_event), TLBPOL_EV_CLEAR_YOUNG, 0, 12, 0x4000, 1, RW, P | W | U },
	{ sizeof(struct tlbpol_event), TLBPOL_EV_PROTECT, 0, 12, 0x5000, 1, RO, RW },
};
#define NEV (sizeof(events) / sizeof(events[0]))

static const uint64_t mask_a = TLBPOL_RULES_DEFAULT;
static const uint64_t mask_b = TLBPOL_RULES_NONE | TLBPOL_RULE_FOOTPRINT;

static struct tlbpol_decision expect[2][NEV];

struct world {
	struct cpus_mbox host; /* the engine, and box as its interrupts */
	struct mbox box[2];
	struct tlbpol_as *as;
	_Atomic int stop;
	_Atomic uint64_t seen[2], bad;
};

static struct world Wr;

static int same(const struct tlbpol_decision *a, const struct tlbpol_decision *b)
{
	return a->action == b->action && a->deadline == b->deadline && a->reason == b->reason;
}

static void *cpu_thread(void *p)
{
	uint32_t cpu = cpus_id(p);
	struct world *w = &Wr;
	uint64_t i = 0;

	tlbpol_thread_register();
	assert_int_equal(tlbpol_switch(w->host.eng, cpu, w->as, NULL), 0);
	while (!atomic_load(&w->stop)) {
		struct tlbpol_decision d;
		uint32_t k = (uint32_t)(i % NEV);
		struct tlbpol_event ev = events[k];

		cpus_mbox_take(&w->host, cpu);
		/* decide, and submit (acting on it, with shootdowns). */
		if (i & 1)
			assert_int_equal(tlbpol_decide(w->host.eng, w->as, cpu, &ev, &d), 0);
		else
			assert_int_equal(tlbpol_submit(w->host.eng, w->as, cpu, &ev, &d), 0);
		if (same(&d, &expect[0][k]))
			atomic_fetch_add(&w->seen[0], 1);
		else if (same(&d, &expect[1][k]))
			atomic_fetch_add(&w->seen[1], 1);
		else
			atomic_fetch_add(&w->bad, 1);
		if (++i % 32 == 0)
			tlbpol_tick(w->host.eng, cpu); /* a quiescent state */
	}
	/* Stay a CPU (answer interrupts) while the other finishes. */
	tlbpol_flush(w->host.eng, cpu, TLBPOL_BY_LAZY);
	atomic_fetch_add(&w->stop, 1);
	while (atomic_load(&w->stop) < 3)
		cpus_mbox_relax(&w->host, cpu);
	cpus_mbox_take(&w->host, cpu);
	tlbpol_thread_unregister();
	return NULL;
}

static void expected(void)
{
	for (int m = 0; m < 2; m++) {
		struct tlbpol_config cfg;
		struct tlbpol_engine *eng;
		struct tlbpol_as *as;

		tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_ARM64);
		cfg.rules = m ? mask_b : mask_a;
		cfg.ops = &cpus_mbox_ops;
		cfg.ops_ctx = &Wr.host;
		assert_int_equal(tlbpol_engine_new(&cfg, &eng), 0);
		assert_int_equal(tlbpol_as_open(eng, 1, &as), 0);
		for (size_t k = 0; k < NEV; k++)
			assert_int_equal(tlbpol_decide(eng, as, 0, &events[k], &expect[m][k]), 0);
		tlbpol_engine_free(eng);
	}
	for (size_t k = 0; k < NEV; k++)
		assert_false(same(&expect[0][k], &expect[1][k]));
}

static void test_flip_rules_under_load(void **s)
{
	struct tlbpol_config cfg;
	pthread_t t[2];
	int flips = 0;

	(void)s;
	expected();
	memset(&Wr, 0, sizeof(Wr));
	Wr.host.nr_cpus = 2;
	Wr.host.box = Wr.box;
	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_ARM64);
	cfg.rules = mask_a;
	cfg.ops = &cpus_mbox_ops;
	cfg.ops_ctx = &Wr.host;
	assert_int_equal(tlbpol_engine_new(&cfg, &Wr.host.eng), 0);
	assert_int_equal(tlbpol_as_open(Wr.host.eng, 1, &Wr.as), 0);
	cpus_start(t, 0, 2, cpu_thread);
	/* This thread is not a CPU: it only reconfigures. */
	while (flips < 200 || atomic_load(&Wr.seen[0]) < 100 || atomic_load(&Wr.seen[1]) < 100) {
		assert_int_equal(tlbpol_engine_set_rules(Wr.host.eng, flips & 1 ? mask_a : mask_b), 0);
		assert_int_equal(tlbpol_engine_set_flush_ceiling(Wr.host.eng, 1 + (uint32_t)flips % 40), 0);
		flips++;
		if (flips > 100000)
			break;
	}
	atomic_store(&Wr.stop, 1);
	cpus_join(t, 0, 2);
	printf("# %d reconfigurations; decisions under A %llu, under B %llu, mixed %llu\n", flips,
	       (unsigned long long)atomic_load(&Wr.seen[0]),
	       (unsigned long long)atomic_load(&Wr.seen[1]),
	       (unsigned long long)atomic_load(&Wr.bad));
	assert_int_equal(atomic_load(&Wr.bad), 0);
	assert_true(atomic_load(&Wr.seen[0]) > 0 && atomic_load(&Wr.seen[1]) > 0);
	tlbpol_engine_free(Wr.host.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_flip_rules_under_load));
