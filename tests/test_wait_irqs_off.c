/* SPDX-License-Identifier: MIT */
/*
 * test_wait_irqs_off: TLBPOL_CFGF_WAIT_IRQS promises that ops->relax takes
 * the waiting CPU's interrupts, but the header lets a waiting call run with
 * interrupts off (tlbpol_tick() from the timer interrupt), where relax takes
 * none.  Two CPUs, one thread each, make the same waiting call at the same
 * moment with interrupts off, each with work that shoots the other down:
 * an aged tick, tlbpol_flush(BY_FREE), tlbpol_stamp() and a synchronous
 * tlbpol_submit().  Each must finish (the engine serves from the wait after
 * TLBPOL_WAIT_IRQS_FALLBACK_TURNS turns, or cfg->wait_limit, without an
 * acknowledgement); a wait that goes on is reported as a deadlock and the
 * program aborts, rather than hanging until the suite's timeout.  Then the
 * interrupts are taken as usual and everything completes.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/cpus.h"
#include "support/harness.h"

/* Turns of one call's waits with interrupts off: far past the fallback. */
#define DEADLOCK_TURNS 4000000U

enum call { CALL_TICK, CALL_FLUSH, CALL_STAMP, CALL_SUBMIT, NR_CALLS };
static const char *const call_names[] = { "tick", "flush", "stamp", "submit" };

static struct tlbpol_engine *eng;
static struct tlbpol_as *as;
static atomic_int irqs_off[2], ready, done;
static struct mbox box[2]; /* interrupts (support/cpus.h) */
static struct cpus_mbox host = { .nr_cpus = 2, .box = box };
static atomic_uint turns[2];
static int freed[2];

/* Interrupts on: taken here, as the flag promises.  Off: only counted. */
static void relax(void *ctx, uint32_t cpu)
{
	(void)ctx;
	if (!atomic_load(&irqs_off[cpu])) {
		cpus_mbox_take(&host, cpu);
	} else if (atomic_fetch_add(&turns[cpu], 1) == DEADLOCK_TURNS) {
		fprintf(stderr, "deadlock: cpu %u waited %u turns with interrupts off\n", cpu,
			DEADLOCK_TURNS);
		abort();
	}
	sched_yield();
}


/* Work on @cpu whose completion shoots the other CPU down, queued so that
 * @call waits for it. */
static void prepare(uint32_t cpu, enum call call)
{
	uint64_t va = 0x100000 + ((uint64_t)cpu << 20);
	struct tlbpol_event reclaim = h_event(TLBPOL_EV_RECLAIM, 0, va, 1, P | W | U | A, 0);
	struct tlbpol_event stamped = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE | TLBPOL_EVF_STAMP,
					      va + 0x1000, 1, P | W | U | A, 0);

	if (call == CALL_SUBMIT)
		return;
	assert_int_equal(tlbpol_submit(eng, as, cpu, &reclaim, NULL), 0);
	assert_int_equal(tlbpol_defer_free(eng, cpu, h_count_free, &freed[cpu]), 0);
	if (call == CALL_STAMP)
		assert_int_equal(tlbpol_submit(eng, as, cpu, &stamped, NULL), 0);
	if (call == CALL_TICK) /* the age starts; the next tick completes it */
		assert_int_equal(tlbpol_tick(eng, cpu), 0);
}

static int make(uint32_t cpu, enum call call)
{
	struct tlbpol_event protect = h_event(TLBPOL_EV_PROTECT, 0, 0x800000 + cpu * 0x1000, 1,
					      P | W | U | A, P | U | A);
	uint64_t stamp;

	switch (call) {
	case CALL_TICK:
		return tlbpol_tick(eng, cpu);
	case CALL_FLUSH:
		return tlbpol_flush(eng, cpu, TLBPOL_BY_FREE);
	case CALL_STAMP:
		return tlbpol_stamp(eng, cpu, &stamp);
	default:
		return tlbpol_submit(eng, as, cpu, &protect, NULL);
	}
}

struct arg {
	uint32_t cpu;
	enum call call;
	int ret;
};

static void *cpu_thread(void *p)
{
	struct arg *a = p;

	atomic_store(&irqs_off[a->cpu], 1);
	atomic_fetch_add(&ready, 1);
	while (atomic_load(&ready) < 2)
		;
	a->ret = make(a->cpu, a->call);
	atomic_store(&irqs_off[a->cpu], 0);
	/* Interrupts on again, until the other CPU is done too (it may still
	 * wait for us). */
	atomic_fetch_add(&done, 1);
	while (atomic_load(&done) < 2) {
		cpus_mbox_take(&host, a->cpu);
		sched_yield();
	}
	return NULL;
}

static void run(enum call call, uint32_t wait_limit)
{
	static struct tlbpol_ops ops;
	struct tlbpol_config cfg;
	struct arg args[2] = { { 0, call, -1 }, { 1, call, -1 } };
	pthread_t th[2];

	/* The mailbox host's callbacks, but a relax of its own. */
	ops = cpus_mbox_ops;
	ops.relax = relax;
	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = &ops;
	cfg.ops_ctx = &host;
	cfg.flags = TLBPOL_CFGF_WAIT_IRQS;
	/* The Linux-like policies the flag is for: no polling, no broadcast. */
	cfg.rules = TLBPOL_RULES_DEFAULT & ~(TLBPOL_RULE_POLLING_CPUS | TLBPOL_RULE_BROADCAST);
	cfg.wait_limit = wait_limit;
	assert_int_equal(tlbpol_engine_new(&cfg, &eng), 0);
	host.eng = eng;
	memset(box, 0, sizeof(box));
	assert_int_equal(tlbpol_as_open(eng, 1, &as), 0);
	for (uint32_t c = 0; c < 2; c++) {
		assert_int_equal(tlbpol_switch(eng, c, as, NULL), 0);
		atomic_store(&turns[c], 0);
		freed[c] = 0;
		prepare(c, call);
	}
	atomic_store(&ready, 0);
	atomic_store(&done, 0);
	cpus_start_args(th, 2, cpu_thread, args, sizeof(args[0]));
	cpus_join(th, 0, 2);
	for (uint32_t c = 0; c < 2; c++)
		if (args[c].ret < 0)
			fail_msg("%s on cpu %u: %d", call_names[call], c, args[c].ret);
	/* Both CPUs tick on (a stamp's lazy request completes as its target
	 * ticks): what is left completes. */
	for (uint32_t t = 0; t < 2 * TLBPOL_DEFAULT_FREE_TICKS; t++)
		for (uint32_t c = 0; c < 2; c++)
			assert_int_equal(tlbpol_tick(eng, c), 0);
	for (uint32_t c = 0; c < 2; c++)
		assert_int_equal(freed[c], call == CALL_SUBMIT ? 0 : 1);
	tlbpol_engine_free(eng);
}

static void test_both_irqs_off(void **state)
{
	(void)state;
	for (enum call call = CALL_TICK; call < NR_CALLS; call++) {
		run(call, 0);
		run(call, 300);
	}
}

H_TEST_MAIN(cmocka_unit_test(test_both_irqs_off));
