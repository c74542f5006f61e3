/* SPDX-License-Identifier: MIT */
/*
 * test_obligations: every "may" of the header's table of where each call
 * may run (include/tlbpol/tlbpol.h, "Where each call may run"), and the
 * -EBUSY of every call it forbids to nest.
 *  - tlbpol_handle_ipi() nested in a call of its own CPU, from ops->relax
 *    and from ops->flush_local, serves and the outer call completes;
 *  - tlbpol_tick() from an interrupt that lands inside tlbpol_submit() (in
 *    its wait, and in its flush): -EBUSY, nothing lost, fine afterwards;
 *  - every other call for the CPU from a callback: -EBUSY, nothing changed;
 *  - tlbpol_decide(), tlbpol_stats_read(), tlbpol_frees_pending(),
 *    tlbpol_stamp_pending() nested;
 *  - tlbpol_cpu_state() made by someone else for a CPU that cannot;
 *  - with interrupts off (no interrupt is ever taken) two CPUs that shoot
 *    each other down both finish: their waits serve their own inboxes;
 *  - TLBPOL_CFGF_WAIT_IRQS: a waiting CPU serves only when interrupted
 *    (unless it polls), needs ops->relax, and two CPUs that shoot each
 *    other down with interrupts taken in relax both finish;
 *  - tlbpol_decide(), tlbpol_stats_read(), tlbpol_frees_pending(),
 *    tlbpol_as_open()/close() from another thread while the CPUs run.
 */
#include <errno.h>
#include <stdatomic.h>

#include "support/cpus.h"
#include "support/harness.h"

struct ob {
	struct harness h; /* first: the harness callbacks take it as ctx */
	struct tlbpol_as *as;
	struct tlbpol_cpuset pending;
	void (*in_relax)(struct ob *, uint32_t);
	void (*in_flush)(struct ob *, uint32_t);
	int hold; /* relax turns during which raised interrupts stay pending */
	uint32_t relax_flushes0; /* flushes_on[0] when relax was last called */
	int ret[24];
	int nret;
};

static void ob_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct ob *o = ctx;

	h_flush_local(ctx, cpu, f);
	if (cpu == 0 && o->in_flush) {
		void (*fn)(struct ob *, uint32_t) = o->in_flush;

		o->in_flush = NULL;
		fn(o, cpu);
	}
}

/* Interrupts are raised, and taken only in relax (CPU 0 waits). */
static void ob_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct ob *o = ctx;

	(void)from;
	for (int c = tlbpol_cpuset_next(t, -1); c >= 0; c = tlbpol_cpuset_next(t, c))
		tlbpol_cpuset_set(&o->pending, (uint32_t)c);
	o->h.ipi_calls++;
}

static void ob_relax(void *ctx, uint32_t cpu)
{
	struct ob *o = ctx;

	o->relax_flushes0 = o->h.flushes_on[0];
	if (o->in_relax) {
		void (*fn)(struct ob *, uint32_t) = o->in_relax;

		o->in_relax = NULL;
		fn(o, cpu);
	}
	if (o->hold) {
		o->hold--;
		return;
	}
	for (int c = tlbpol_cpuset_next(&o->pending, -1); c >= 0;
	     c = tlbpol_cpuset_next(&o->pending, c)) {
		tlbpol_cpuset_clear(&o->pending, (uint32_t)c);
		assert_true(tlbpol_handle_ipi(o->h.eng, (uint32_t)c) >= 0);
	}
}

static const struct tlbpol_ops ob_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = ob_flush_local,
	.send_ipi = ob_send_ipi,
	.relax = ob_relax,
};

static void ob_init_with(struct ob *o, uint64_t rules, uint32_t flags)
{
	struct tlbpol_config cfg;

	memset(o, 0, sizeof(*o));
	h_config(&o->h, &cfg, 3, TLBPOL_ARCH_X86_64);
	cfg.ops = &ob_ops;
	cfg.ops_ctx = o;
	cfg.rules = rules;
	cfg.flags = flags;
	assert_int_equal(tlbpol_engine_new(&cfg, &o->h.eng), 0);
	assert_int_equal(tlbpol_as_open(o->h.eng, 1, &o->as), 0);
	for (uint32_t c = 0; c < 3; c++)
		assert_int_equal(tlbpol_switch(o->h.eng, c, o->as, NULL), 0);
	h_reset_log(&o->h);
}

static void ob_init(struct ob *o)
{
	ob_init_with(o, TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST, 0);
}

/* CPU 0 write-protects a page: a shootdown now at CPUs 1 and 2. */
static void ob_shoot(struct ob *o, uint64_t va)
{
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, va, 1, P | W | U | A, P | U | A);

	assert_int_equal(tlbpol_submit(o->h.eng, o->as, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(o->h.flushes_on[1], 1);
	assert_int_equal(o->h.flushes_on[2], 1);
}

static void record(struct ob *o, int r)
{
	o->ret[o->nret++] = r;
}

/* "tlbpol_handle_ipi nested: yes": an interrupt for CPU 0 lands inside its
 * own shootdown (in relax: its wait has served its inbox already; in
 * flush_local: before the wait, so the handler serves). */
static void cpu1_shoots(struct ob *o, uint32_t cpu)
{
	(void)cpu;
	record(o, tlbpol_handle_ipi(o->h.eng, 0));
}

static void test_handle_ipi_nested(void **state)
{
	struct ob o;
	struct tlbpol_decision d;
	struct tlbpol_event lz = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE,
					 0x8000, 1, P | W | U | A, 0);

	(void)state;
	ob_init(&o);
	o.in_relax = cpu1_shoots;
	ob_shoot(&o, 0x1000);
	assert_int_equal(o.nret, 1);
	assert_true(o.ret[0] >= 0);
	/* CPU 1 posts a lazy request (no interrupt); CPU 0's nested handler,
	 * from the flush_local of its own shootdown, serves it. */
	assert_int_equal(tlbpol_submit(o.h.eng, o.as, 1, &lz, &d), 0);
	assert_int_equal(d.deadline, TLBPOL_BY_LAZY);
	assert_int_equal(tlbpol_tick(o.h.eng, 1), 0);
	o.nret = 0;
	h_reset_log(&o.h);
	o.in_flush = cpu1_shoots;
	ob_shoot(&o, 0x2000);
	assert_int_equal(o.nret, 1);
	assert_int_equal(o.ret[0], 1);        /* served CPU 1's request */
	assert_int_equal(o.h.flushes_on[0], 2); /* its own flush, and CPU 1's */
	tlbpol_engine_free(o.h.eng);
}

/* "tlbpol_tick nested: -EBUSY": a timer interrupt inside submit's wait. */
static void timer_irq(struct ob *o, uint32_t cpu)
{
	record(o, tlbpol_tick(o->h.eng, cpu));
}

static void test_tick_inside_submit(void **state)
{
	struct ob o;
	struct tlbpol_stats st;

	(void)state;
	ob_init(&o);
	o.in_relax = timer_irq;
	ob_shoot(&o, 0x1000);
	o.in_flush = timer_irq;
	h_reset_log(&o.h);
	ob_shoot(&o, 0x2000);
	assert_int_equal(o.nret, 2);
	assert_int_equal(o.ret[0], -EBUSY);
	assert_int_equal(o.ret[1], -EBUSY);
	assert_int_equal(tlbpol_stats_read(o.h.eng, 0, &st), 0);
	assert_int_equal(st.events, 2); /* both submits counted, nothing lost */
	assert_int_equal(tlbpol_tick(o.h.eng, 0), 0); /* the next tick: fine */
	tlbpol_engine_free(o.h.eng);
}

static int freed;

/* "every other call for @cpu nested: -EBUSY, and nothing changes". */
static void every_call(struct ob *o, uint32_t cpu)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x9000, 1, P | W | U | A, P | U | A);
	struct tlbpol_event spurious = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x9000, 1,
					       P | W | U | A | D, P | W | U | A | D);
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	uint64_t m = 0;
	int nf;

	record(o, tlbpol_submit(o->h.eng, o->as, cpu, &ev, &d));
	/* A spurious fault: tlbpol_submit()'s fast path has a guard too. */
	record(o, tlbpol_submit(o->h.eng, o->as, cpu, &spurious, &d));
	record(o, tlbpol_flush(o->h.eng, cpu, TLBPOL_BY_LAZY));
	record(o, tlbpol_defer_free(o->h.eng, cpu, h_count_free, &freed));
	record(o, tlbpol_switch(o->h.eng, cpu, NULL, NULL));
	record(o, tlbpol_unload(o->h.eng, cpu));
	record(o, tlbpol_cpu_state(o->h.eng, cpu, TLBPOL_CPU_IDLE));
	record(o, tlbpol_tick(o->h.eng, cpu));
	{
		uint64_t st0 = 5;

		record(o, tlbpol_stamp(o->h.eng, cpu, &st0));
		record(o, st0 == 5 ? tlbpol_stamp_settle(o->h.eng, cpu, 0) : -1);
	}
	/* Nested and fine: pure or read-only. */
	record(o, tlbpol_decide(o->h.eng, o->as, cpu, &ev, &d) == 0 ? 1 : -1);
	record(o, tlbpol_stats_read(o->h.eng, (int)cpu, &st) == 0 ? 1 : -1);
	nf = tlbpol_frees_pending(o->h.eng, cpu);
	record(o, nf >= 0 ? 1 : -1);
	record(o, tlbpol_stamp_pending(o->h.eng, 0) == 0 ? 1 : -1);
	{
		struct tlbpol_as *x;

		record(o, tlbpol_as_open(o->h.eng, 99, &x) == 0 &&
					  tlbpol_as_tag(x) == 99 && tlbpol_as_close(o->h.eng, x) == 0
				  ? 1
				  : -1);
		record(o, tlbpol_engine_rules(o->h.eng) != 0 ? 1 : -1);
	}
	record(o, tlbpol_rules_parse("default,-batch", &m) == 0 &&
				  m == (TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BATCH) &&
				  !strcmp(tlbpol_rule_str(TLBPOL_RULE_BATCH), "batch")
			  ? 1
			  : -1);
}

static void test_every_call_nested(void **state)
{
	struct ob o;
	struct tlbpol_stats st;

	(void)state;
	ob_init(&o);
	freed = 0;
	o.in_flush = every_call;
	ob_shoot(&o, 0x1000);
	assert_int_equal(o.nret, 17);
	for (int i = 0; i < 10; i++)
		assert_int_equal(o.ret[i], -EBUSY);
	for (int i = 10; i < 17; i++)
		assert_int_equal(o.ret[i], 1);
	assert_int_equal(freed, 0);
	assert_int_equal(tlbpol_stats_read(o.h.eng, 0, &st), 0);
	assert_int_equal(st.events, 1); /* the nested submit changed nothing */
	assert_int_equal(tlbpol_frees_pending(o.h.eng, 0), 0);
	/* CPU 0 still runs the address space: a nested switch did nothing. */
	h_reset_log(&o.h);
	ob_shoot(&o, 0x3000);
	tlbpol_engine_free(o.h.eng);
}

/* "tlbpol_cpu_state: the CPU, or whoever acts for it while it cannot": the
 * main thread marks CPU 2 PREEMPTED and back; CPU 2 flushes on return if a
 * request skipped it. */
static void test_cpu_state_for_another(void **state)
{
	struct ob o;
	struct tlbpol_stats st;

	(void)state;
	ob_init(&o);
	assert_int_equal(tlbpol_cpu_state(o.h.eng, 2, TLBPOL_CPU_PREEMPTED), 0);
	{
		struct tlbpol_decision d;
		struct tlbpol_event ev =
			h_event(TLBPOL_EV_PROTECT, 0, 0x4000, 1, P | W | U | A, P | U | A);

		assert_int_equal(tlbpol_submit(o.h.eng, o.as, 0, &ev, &d), 0);
	}
	assert_int_equal(o.h.flushes_on[1], 1);
	assert_int_equal(o.h.flushes_on[2], 0); /* spared while it cannot run */
	assert_int_equal(tlbpol_cpu_state(o.h.eng, 2, TLBPOL_CPU_RUNNING), 1);
	assert_int_equal(tlbpol_stats_read(o.h.eng, 0, &st), 0);
	assert_int_equal(st.lazy_skipped, 1);
	tlbpol_engine_free(o.h.eng);
}

/*
 * TLBPOL_CFGF_WAIT_IRQS: a CPU waiting for the acknowledgements of its own
 * shootdown serves what others post to it only when interrupted.  While
 * CPU 0 waits, CPU 1 posts a lazy request (no interrupt) that CPU 0 is a
 * target of, and the waits' interrupts are held one turn so that CPU 0's
 * loop turns again: without the flag that turn serves the request (CPU 0
 * has flushed twice by its last relax); with it the request waits for CPU
 * 0's next interrupt, nothing lost; under RULE_POLLING_CPUS (a polling CPU
 * is not interrupted) the loop serves it whatever the flag, not only the
 * serve after the loop (its initiator would wait for this CPU's own wait).
 */
static void cpu1_posts_lazy(struct ob *o, uint32_t cpu)
{
	struct tlbpol_decision d;
	struct tlbpol_event lz = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE,
					 0x8000, 1, P | W | U | A, 0);

	(void)cpu;
	record(o, tlbpol_submit(o->h.eng, o->as, 1, &lz, &d));
	record(o, (int)d.deadline);
	record(o, tlbpol_tick(o->h.eng, 1));
	o->hold = 1;
}

/* CPU 0's flushes by the last turn of its wait for a shootdown of its own,
 * CPU 1 posting meanwhile; @served_after: CPU 0's next interrupt's return. */
static uint32_t wait_irqs_flushes(uint64_t rules, uint32_t flags, int *served_after)
{
	struct ob o;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A, P | U | A);
	uint32_t n;

	ob_init_with(&o, rules, flags);
	o.in_relax = cpu1_posts_lazy;
	assert_int_equal(tlbpol_submit(o.h.eng, o.as, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(o.nret, 3);
	assert_int_equal(o.ret[0], 0);
	assert_int_equal(o.ret[1], TLBPOL_BY_LAZY);
	assert_int_equal(o.ret[2], 0);
	n = o.relax_flushes0;
	assert_int_equal(o.h.flushes_on[0], n); /* nothing after the last turn */
	/* CPU 0's next interrupt serves whatever is left. */
	*served_after = tlbpol_handle_ipi(o.h.eng, 0);
	assert_int_equal(o.h.flushes_on[0], 2);
	tlbpol_engine_free(o.h.eng);
	return n;
}

static void test_wait_irqs(void **state)
{
	const uint64_t base = TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST;
	const uint64_t nopoll = base & ~TLBPOL_RULE_POLLING_CPUS;
	int after;

	(void)state;
	assert_int_equal(wait_irqs_flushes(nopoll, 0, &after), 2);
	assert_int_equal(after, 0);
	assert_int_equal(wait_irqs_flushes(nopoll, TLBPOL_CFGF_WAIT_IRQS, &after), 1);
	assert_int_equal(after, 1);
	assert_int_equal(wait_irqs_flushes(base, TLBPOL_CFGF_WAIT_IRQS, &after), 2);
	assert_int_equal(after, 0);
	assert_int_equal(wait_irqs_flushes(nopoll, TLBPOL_CFGF_WAIT_IRQS | TLBPOL_CFGF_RETAIN_AS,
					   &after), 1);
}

/* The promise needs a relax to keep it; unknown flag bits are refused. */
static void test_wait_irqs_config(void **state)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng = NULL;

	(void)state;
	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64); /* h_ops: no relax */
	cfg.flags = TLBPOL_CFGF_WAIT_IRQS;
	assert_int_equal(tlbpol_engine_new(&cfg, &eng), -EINVAL);
	assert_int_equal(tlbpol_engine_size(&cfg), 0);
	cfg.ops = &ob_ops;
	assert_int_equal(tlbpol_engine_new(&cfg, &eng), 0);
	tlbpol_engine_free(eng);
	eng = NULL;
	cfg.flags = TLBPOL_CFGF_ALL + 1;
	assert_int_equal(tlbpol_engine_new(&cfg, &eng), -EINVAL);
}

/* --- threads ------------------------------------------------------------ */

static struct tlbpol_engine *teng;
static struct tlbpol_as *tas;
static atomic_int tdone, treaders_stop;

/*
 * Interrupts on (TLBPOL_CFGF_WAIT_IRQS's tests): an interrupt is a mailbox
 * flag (support/cpus.h) that cpus_mbox_take() turns into
 * tlbpol_handle_ipi(), in relax and between calls.  Interrupts off
 * (tirqs_on 0): nothing is ever delivered; t_send_ipi() raises nothing
 * and t_relax() takes nothing.
 */
static int tirqs_on;
static struct mbox tbox[2];
static struct cpus_mbox thost = { .nr_cpus = 2, .box = tbox };

static void t_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	if (tirqs_on)
		cpus_mbox_send_ipi(ctx, from, t);
}

static void t_relax(void *ctx, uint32_t cpu)
{
	if (tirqs_on)
		cpus_mbox_take(ctx, cpu);
	sched_yield();
}

#define TI_STUCK_TURNS 2000000U

static void ti_stuck(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *waiting, uint64_t turns)
{
	(void)ctx;
	(void)waiting;
	if (turns >= TI_STUCK_TURNS)
		fail_msg("cpu %u waited %llu turns", cpu, (unsigned long long)turns);
}

/* The threads' host, interrupts on or off (tirqs_on); the stuck hook is
 * called only where a test sets cfg->wait_limit. */
static const struct tlbpol_ops t_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = cpus_flush_nothing,
	.send_ipi = t_send_ipi,
	.relax = t_relax,
	.stuck = ti_stuck,
};

/* CPU @arg write-protects pages of its own, each a shootdown at the other. */
static void *shooter(void *arg)
{
	uint32_t cpu = cpus_id(arg);

	for (uint64_t i = 0; i < 500; i++) {
		struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0,
						 ((uint64_t)cpu << 20) + (i % 32) * 0x1000, 1,
						 P | W | U | A, P | U | A);

		assert_int_equal(tlbpol_submit(teng, tas, cpu, &ev, NULL), 0);
		if (tirqs_on)
			cpus_mbox_take(&thost, cpu);
	}
	atomic_fetch_add(&tdone, 1);
	/* The other may still wait for us.  With interrupts off, a call that
	 * serves (tick) is how a CPU gets its requests. */
	while (atomic_load(&tdone) < 2) {
		if (tirqs_on) {
			cpus_mbox_take(&thost, cpu);
			sched_yield();
		} else {
			assert_int_equal(tlbpol_tick(teng, cpu), 0);
		}
	}
	return NULL;
}

/* An engine of 2 CPUs from @cfg, both running one address space. */
static void two_cpus(const struct tlbpol_config *cfg)
{
	assert_int_equal(tlbpol_engine_new(cfg, &teng), 0);
	thost.eng = teng;
	assert_int_equal(tlbpol_as_open(teng, 1, &tas), 0);
	assert_int_equal(tlbpol_switch(teng, 0, tas, NULL), 0);
	assert_int_equal(tlbpol_switch(teng, 1, tas, NULL), 0);
	atomic_store(&tdone, 0);
	memset(tbox, 0, sizeof(tbox));
}

/* Both CPUs shoot each other down, one thread each, until both are done. */
static void two_shooters(void)
{
	pthread_t s[2];

	cpus_start(s, 0, 2, shooter);
	cpus_join(s, 0, 2);
}

/*
 * TLBPOL_CFGF_WAIT_IRQS with its promise kept (relax takes the interrupts):
 * two CPUs that shoot each other down both finish, with RULE_POLLING_CPUS
 * (a polling CPU is not interrupted: its loop must serve) and without.  The
 * watchdog fails the test where a wait would last for ever.
 */
static void test_wait_irqs_mutual(void **state)
{
	const uint64_t base = TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_BROADCAST;
	struct tlbpol_config cfg;
	struct tlbpol_stats st;

	(void)state;
	tirqs_on = 1;
	for (int polling = 0; polling < 2; polling++) {
		tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
		cfg.ops = &t_ops;
		cfg.ops_ctx = &thost;
		cfg.flags = TLBPOL_CFGF_WAIT_IRQS;
		cfg.rules = polling ? base : base & ~TLBPOL_RULE_POLLING_CPUS;
		cfg.wait_limit = TI_STUCK_TURNS / 4;
		two_cpus(&cfg);
		two_shooters();
		assert_int_equal(tlbpol_stats_read(teng, -1, &st), 0);
		assert_int_equal(st.events, 1000);
		assert_int_equal(st.stuck_calls, 0);
		tlbpol_engine_free(teng);
	}
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&treaders_stop)) {
		struct tlbpol_stats st;
		struct tlbpol_decision d;
		struct tlbpol_as *x;
		struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, 0, 0x5000, 1, P | W | U | A, 0);

		assert_int_equal(tlbpol_stats_read(teng, -1, &st), 0);
		assert_true(tlbpol_frees_pending(teng, 0) >= 0);
		assert_int_equal(tlbpol_decide(teng, tas, 1, &ev, &d), 0);
		assert_int_equal(tlbpol_as_open(teng, 77, &x), 0);
		assert_int_equal(tlbpol_as_close(teng, x), 0);
	}
	return NULL;
}

/* "submit with interrupts off: yes (its wait serves its own inbox)", and the
 * "any" calls from another thread meanwhile. */
static void test_interrupts_off_mutual(void **state)
{
	struct tlbpol_config cfg;
	pthread_t r;

	(void)state;
	tirqs_on = 0;
	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = &t_ops;
	cfg.ops_ctx = &thost;
	cfg.rules = TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_POLLING_CPUS;
	two_cpus(&cfg);
	atomic_store(&treaders_stop, 0);
	cpus_start_one(&r, reader, NULL);
	two_shooters();
	atomic_store(&treaders_stop, 1);
	pthread_join(r, NULL);
	tlbpol_engine_free(teng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_handle_ipi_nested),
	cmocka_unit_test(test_tick_inside_submit),
	cmocka_unit_test(test_every_call_nested),
	cmocka_unit_test(test_cpu_state_for_another),
	cmocka_unit_test(test_wait_irqs),
	cmocka_unit_test(test_wait_irqs_config),
	cmocka_unit_test(test_interrupts_off_mutual),
	cmocka_unit_test(test_wait_irqs_mutual));
