/* SPDX-License-Identifier: MIT */
/*
 * test_backends.c - flush mechanisms (struct tlbpol_backend): descriptors
 * checked against the ops, the split-phase broadcast's issue and sync on
 * the issuing CPU, the cost model they feed, and lockless walkers
 * (TLBPOL_CFGF_LOCKLESS_WALKERS, ops->walker_sync), and the model from
 * measured costs (tlbpol_cost_calibrate()).
 */
#include <errno.h>

#include "support/harness.h"

/* What the broadcast hooks saw, in order: 'i' issue, 's' sync, 'b' a
 * synchronous broadcast, 'w' walker_sync; and on which CPU. */
static char calls[64];
static uint32_t ncalls, call_cpu[64];
static struct tlbpol_cpuset walker_cpus;

static void note(char what, uint32_t cpu)
{
	if (ncalls < sizeof(calls) - 1) {
		call_cpu[ncalls] = cpu;
		calls[ncalls++] = what;
		calls[ncalls] = 0;
	}
}

static void reset_calls(void)
{
	ncalls = 0;
	calls[0] = 0;
}

static void b_issue(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx;
	(void)f;
	note('i', cpu);
}

static void b_sync(void *ctx, uint32_t cpu)
{
	(void)ctx;
	note('s', cpu);
}

static void b_broadcast(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx;
	(void)f;
	note('b', cpu);
}

static struct tlbpol_cpuset remote_targets;

static void b_remote(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *targets,
		     const struct tlbpol_flush *f)
{
	struct harness *h = ctx;

	(void)f;
	assert_false(tlbpol_cpuset_test(targets, cpu));
	remote_targets = *targets;
	/* Complete on return: the hardware flushed them (as a harness
	 * flush_local would be logged, but no handler of theirs runs). */
	for (int c = tlbpol_cpuset_next(targets, -1); c >= 0; c = tlbpol_cpuset_next(targets, c))
		h->flushes_on[c]++;
	note('r', cpu);
}

static void b_walker_sync(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *cpus)
{
	(void)ctx;
	walker_cpus = *cpus;
	note('w', cpu);
}

static const struct tlbpol_ops split_ops =
	H_OPS_AND(.bcast_issue = b_issue, .bcast_sync = b_sync);
static const struct tlbpol_ops split_walker_ops =
	H_OPS_AND(.bcast_issue = b_issue, .bcast_sync = b_sync, .walker_sync = b_walker_sync);
static const struct tlbpol_ops sync_ops = H_OPS_AND(.broadcast = b_broadcast);
static const struct tlbpol_ops all_ops =
	H_OPS_AND(.broadcast = b_broadcast, .bcast_issue = b_issue, .bcast_sync = b_sync);
static const struct tlbpol_ops issue_only_ops = H_OPS_AND(.bcast_issue = b_issue);
static const struct tlbpol_ops remote_ops =
	H_OPS_AND(.remote_action = b_remote, .walker_sync = b_walker_sync);

static struct tlbpol_backend desc(uint32_t mech, uint32_t flags)
{
	struct tlbpol_backend b;

	memset(&b, 0, sizeof(b));
	b.size = sizeof(b);
	b.mech = mech;
	b.flags = flags;
	return b;
}

static int init_with(struct harness *h, struct tlbpol_config *cfg, const struct tlbpol_ops *ops,
		     const struct tlbpol_backend *const *bs, uint32_t n)
{
	static _Alignas(64) unsigned char mem[1 << 20];
	struct tlbpol_engine *eng;

	h_config(h, cfg, 4, TLBPOL_ARCH_X86_64);
	cfg->ops = ops;
	cfg->backends = bs;
	cfg->nr_backends = n;
	return tlbpol_engine_init(&eng, mem, sizeof(mem), cfg);
}

/* Every way a descriptor can be wrong, each refused with nothing built. */
static void test_descriptor_errors(void **state)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_backend b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT), b2 = b;
	struct {
		struct tlbpol_backend b;
		uint32_t extra[2];
	} big;
	const struct tlbpol_backend *one[] = { &b }, *two[] = { &b, &b2 }, *none[] = { NULL };
	const struct tlbpol_backend *bigp[] = { &big.b };

	(void)state;
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), 0);
	assert_int_equal(init_with(&h, &cfg, &split_ops, NULL, 1), -EINVAL);
	assert_int_equal(init_with(&h, &cfg, &split_ops, none, 1), -EINVAL);
	assert_int_equal(init_with(&h, &cfg, &split_ops, two, TLBPOL_MECH_MAX + 1), -ERANGE);
	assert_int_equal(init_with(&h, &cfg, &split_ops, two, 2), -EEXIST);
	b.size = sizeof(b) - 4;
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	memset(&big, 0, sizeof(big));
	big.b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT);
	big.b.size = sizeof(big);
	assert_int_equal(init_with(&h, &cfg, &split_ops, bigp, 1), 0);
	big.extra[1] = 1;
	assert_int_equal(init_with(&h, &cfg, &split_ops, bigp, 1), -E2BIG);
	b = desc(TLBPOL_MECH_MAX, 0);
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT | (TLBPOL_BKF_ALL + 1));
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	/* Interrupts are never split nor switched off. */
	b = desc(TLBPOL_MECH_IPI, TLBPOL_BKF_SPLIT);
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	b = desc(TLBPOL_MECH_IPI, TLBPOL_BKF_DISABLED);
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	b = desc(TLBPOL_MECH_IPI, TLBPOL_BKF_IMPLIES_IRQ);
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), 0);
	/* A broadcast the ops cannot carry out. */
	b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT);
	assert_int_equal(init_with(&h, &cfg, &sync_ops, one, 1), -EINVAL);
	b = desc(TLBPOL_MECH_BROADCAST, 0);
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	/* ... unless the host turned it off. */
	b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_DISABLED);
	assert_int_equal(init_with(&h, &cfg, &h_ops, one, 1), 0);
	/* A remote action without its op, or split. */
	b = desc(TLBPOL_MECH_REMOTE, 0);
	assert_int_equal(init_with(&h, &cfg, &split_ops, one, 1), -EINVAL);
	assert_int_equal(init_with(&h, &cfg, &remote_ops, one, 1), 0);
	b = desc(TLBPOL_MECH_REMOTE, TLBPOL_BKF_SPLIT);
	assert_int_equal(init_with(&h, &cfg, &remote_ops, one, 1), -EINVAL);
	/* Half a split broadcast. */
	assert_int_equal(init_with(&h, &cfg, &issue_only_ops, NULL, 0), -EINVAL);
	/* The reserved word. */
	assert_int_equal(init_with(&h, &cfg, &split_ops, NULL, 0), 0);
	cfg.reserved2 = 1;
	{
		static _Alignas(64) unsigned char mem[1 << 20];
		struct tlbpol_engine *eng;

		assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), -EINVAL);
	}
}

/* Release 0.2's configuration and ops sizes are still accepted. */
static void test_sizes_0_2(void **state)
{
	static _Alignas(64) unsigned char mem[1 << 20];
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_ops ops = h_ops;
	struct tlbpol_engine *eng;

	(void)state;
	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.size = TLBPOL_CONFIG_SIZE_0_2;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
	ops.size = TLBPOL_OPS_SIZE_0_2;
	cfg.ops = &ops;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
	/*
	 * What lies past a 0.2 caller's ops is not read: here the hooks of
	 * this release, set, which must count as absent (once they were read,
	 * turned the broadcast rule on, and a shootdown called a NULL hook).
	 */
	ops = (struct tlbpol_ops)H_OPS_AND(.bcast_issue = b_issue, .bcast_sync = b_sync,
					   .remote_action = b_remote);
	ops.size = TLBPOL_OPS_SIZE_0_2;
	cfg.size = sizeof(cfg);
	cfg.cost_broadcast_ns = 1;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
	assert_false(tlbpol_engine_rules(eng) & TLBPOL_RULE_BROADCAST);
	{
		struct tlbpol_as *as;
		struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A,
						 P | U | A);

		h.eng = eng;
		h.deliver = 1;
		reset_calls();
		assert_int_equal(tlbpol_as_open(eng, 1, &as), 0);
		assert_int_equal(tlbpol_switch(eng, 0, as, NULL), 0);
		assert_int_equal(tlbpol_switch(eng, 1, as, NULL), 0);
		assert_int_equal(tlbpol_submit(eng, as, 0, &ev, NULL), 0);
		assert_string_equal(calls, "");
		assert_int_equal(h.ipi_targets, 1);
	}
	/* A 0.2 caller's split pair past its size is no half pair either. */
	ops = (struct tlbpol_ops)H_OPS_AND(.bcast_issue = b_issue);
	ops.size = TLBPOL_OPS_SIZE_0_2;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
	cfg.size = TLBPOL_CONFIG_SIZE_0_2 + 4; /* cuts a field */
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), -EINVAL);
}

/* An engine of 4 CPUs all running one address space, with @ops, @bs and
 * @flags; the broadcast described as cheap unless @bs says otherwise. */
static struct tlbpol_as *setup(struct harness *h, const struct tlbpol_ops *ops,
			       const struct tlbpol_backend *const *bs, uint32_t n, uint32_t flags)
{
	struct tlbpol_config cfg;

	h_config(h, &cfg, 4, TLBPOL_ARCH_X86_64);
	cfg.ops = ops;
	cfg.backends = bs;
	cfg.nr_backends = n;
	cfg.flags = flags;
	cfg.cost_broadcast_ns = 100;
	h_engine_cfg(h, &cfg);
	reset_calls();
	return h_as_run(h, 1, 4);
}

/* One synchronous shootdown of @nr pages, its tables freed if @tables. */
static void shoot(struct harness *h, struct tlbpol_as *as, uint32_t nr, int tables)
{
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, tables ? TLBPOL_EVF_TABLES_FREED : 0,
					 0x10000, nr, P | W | U | A, 0);
	struct tlbpol_decision d;

	h_reset_log(h);
	reset_calls();
	assert_int_equal(tlbpol_submit(h->eng, as, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(tlbpol_flush(h->eng, 0, TLBPOL_BY_LAZY), 1);
}

/* Split phase: issued, then synced once, both on the initiator, no
 * interrupt; preferred over ops->broadcast when both are there. */
static void test_split_same_cpu(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_stats st;

	(void)state;
	as = setup(&h, &all_ops, NULL, 0, 0);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "is");
	assert_int_equal(call_cpu[0], 0);
	assert_int_equal(call_cpu[1], 0);
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(tlbpol_stats_read(h.eng, 0, &st), 0);
	assert_int_equal(st.broadcasts, 1);
	assert_int_equal(st.bcast_syncs, 1);
	assert_int_equal(st.shoot_broadcast, 1);
	assert_int_equal(st.shoot_ipi + st.shoot_remote + st.walker_syncs, 0);
	tlbpol_engine_free(h.eng);

	/* Described as synchronous: ops->broadcast, though both are there. */
	{
		struct tlbpol_backend b = desc(TLBPOL_MECH_BROADCAST, 0);
		const struct tlbpol_backend *bs[] = { &b };

		as = setup(&h, &all_ops, bs, 1, 0);
		shoot(&h, as, 2, 0);
		assert_string_equal(calls, "b");
		assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
		assert_int_equal(st.broadcasts, 1);
		assert_int_equal(st.bcast_syncs, 0);
		assert_int_equal(st.shoot_broadcast, 1);
		tlbpol_engine_free(h.eng);
	}
}

/* Turned off by the host (an erratum, PTI): never used, the rule dropped. */
static void test_disabled(void **state)
{
	struct harness h;
	struct tlbpol_backend b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT | TLBPOL_BKF_DISABLED);
	const struct tlbpol_backend *bs[] = { &b };
	struct tlbpol_as *as;

	(void)state;
	as = setup(&h, &split_ops, bs, 1, 0);
	assert_false(tlbpol_engine_rules(h.eng) & TLBPOL_RULE_BROADCAST);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "");
	assert_int_equal(h.ipi_targets, 3);
	tlbpol_engine_free(h.eng);
}

/*
 * The cost model reads the descriptor: with one instruction per page, 20
 * pages at 100 ns each are dearer than interrupting three CPUs (800 + 2 x
 * 70 ns); with 32 pages per instruction, one instruction is cheaper.  The
 * descriptor's IPI costs replace the config's too.
 */
static void test_costs(void **state)
{
	struct harness h;
	struct tlbpol_backend b = desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT);
	struct tlbpol_backend ipi = desc(TLBPOL_MECH_IPI, 0);
	const struct tlbpol_backend *bs[] = { &b }, *both[] = { &b, &ipi };
	struct tlbpol_as *as;

	(void)state;
	b.cost_ns = 500;
	b.cost_page_ns = 100;
	as = setup(&h, &split_ops, bs, 1, 0);
	shoot(&h, as, 20, 0);
	assert_string_equal(calls, "");
	assert_int_equal(h.ipi_targets, 3);
	tlbpol_engine_free(h.eng);

	b.max_pages = 32;
	as = setup(&h, &split_ops, bs, 1, 0);
	shoot(&h, as, 20, 0);
	assert_string_equal(calls, "is");
	assert_int_equal(h.ipi_targets, 0);
	tlbpol_engine_free(h.eng);

	/* Interrupts described as nearly free: never the broadcast. */
	ipi.cost_ns = 1;
	ipi.cost_target_ns = 1;
	as = setup(&h, &split_ops, both, 2, 0);
	shoot(&h, as, 20, 0);
	assert_string_equal(calls, "");
	assert_int_equal(h.ipi_targets, 3);
	tlbpol_engine_free(h.eng);
}

/*
 * Lockless walkers: a request that frees tables goes by interrupts where
 * there is no walker_sync (the broadcast would interrupt nobody), and by
 * the broadcast then walker_sync, on the issuing CPU, naming the other
 * CPUs, where there is.  Without tables the broadcast needs neither.
 */
static void test_walkers(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_stats st;

	(void)state;
	as = setup(&h, &split_ops, NULL, 0, TLBPOL_CFGF_LOCKLESS_WALKERS);
	shoot(&h, as, 2, 1);
	assert_string_equal(calls, "");
	assert_int_equal(h.ipi_targets, 3);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "is");
	tlbpol_engine_free(h.eng);

	as = setup(&h, &split_walker_ops, NULL, 0, TLBPOL_CFGF_LOCKLESS_WALKERS);
	shoot(&h, as, 2, 1);
	assert_string_equal(calls, "isw");
	assert_int_equal(call_cpu[2], 0);
	assert_int_equal(tlbpol_cpuset_count(&walker_cpus), 3);
	assert_false(tlbpol_cpuset_test(&walker_cpus, 0));
	assert_int_equal(h.ipi_targets, 0);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "is");
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.walker_syncs, 1);
	assert_int_equal(st.shoot_broadcast, 2);
	assert_int_equal(st.bcast_syncs, 2);
	tlbpol_engine_free(h.eng);

	/* A broadcast that interrupts every CPU it reaches needs no sync. */
	{
		struct tlbpol_backend b =
			desc(TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT | TLBPOL_BKF_IMPLIES_IRQ);
		const struct tlbpol_backend *bs[] = { &b };

		as = setup(&h, &split_walker_ops, bs, 1, TLBPOL_CFGF_LOCKLESS_WALKERS);
		shoot(&h, as, 2, 1);
		assert_string_equal(calls, "is");
		tlbpol_engine_free(h.eng);
	}
}

/* A preempted vCPU is left out of a table-freeing request, unless walkers
 * are declared: it may have been descheduled inside a walk. */
static void test_walkers_preempted(void **state)
{
	struct harness h;
	struct tlbpol_as *as;

	(void)state;
	for (int walkers = 0; walkers < 2; walkers++) {
		as = setup(&h, &h_ops, NULL, 0, walkers ? TLBPOL_CFGF_LOCKLESS_WALKERS : 0);
		assert_int_equal(tlbpol_cpu_state(h.eng, 2, TLBPOL_CPU_PREEMPTED), 0);
		shoot(&h, as, 2, 1);
		assert_int_equal(h.ipi_targets, walkers ? 3 : 2);
		assert_int_equal(tlbpol_cpuset_test(&h.last_targets, 2), walkers);
		/* Without tables it is left out either way. */
		shoot(&h, as, 2, 0);
		assert_int_equal(h.ipi_targets, 2);
		tlbpol_engine_free(h.eng);
	}
}

/*
 * A remote action (RAR, an SBI fence): the targets flushed with no
 * interrupt and no handler, the initiator flushed locally, complete on
 * return; a CPU that may catch up by itself (preempted) is left out as
 * with interrupts; a table-freeing one under walkers takes walker_sync
 * over the same targets.  Described dearer than interrupts, it is not
 * used.
 */
static void test_remote_action(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_backend b = desc(TLBPOL_MECH_REMOTE, 0);
	const struct tlbpol_backend *bs[] = { &b };
	struct tlbpol_stats st;

	(void)state;
	as = setup(&h, &remote_ops, NULL, 0, TLBPOL_CFGF_LOCKLESS_WALKERS);
	assert_true(tlbpol_engine_rules(h.eng) & TLBPOL_RULE_BROADCAST);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "r");
	assert_int_equal(call_cpu[0], 0);
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(tlbpol_cpuset_count(&remote_targets), 3);
	assert_true(h.flushes_on[0] >= 1); /* the initiator's own flush */
	assert_int_equal(tlbpol_cpu_state(h.eng, 3, TLBPOL_CPU_PREEMPTED), 0);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "r");
	assert_int_equal(tlbpol_cpuset_count(&remote_targets), 2);
	assert_false(tlbpol_cpuset_test(&remote_targets, 3));
	/* Tables under walkers: the preempted vCPU too, then walker_sync. */
	shoot(&h, as, 2, 1);
	assert_string_equal(calls, "rw");
	assert_true(tlbpol_cpuset_test(&remote_targets, 3));
	assert_true(tlbpol_cpuset_test(&walker_cpus, 3));
	/* The stats say which mechanism each shootdown used: 3, 2, 3 targets. */
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.shoot_remote, 3);
	assert_int_equal(st.remote_actions, 3);
	assert_int_equal(st.remote_targets, 8);
	assert_int_equal(st.walker_syncs, 1);
	assert_int_equal(st.shoot_ipi + st.shoot_broadcast + st.ipis_sent, 0);
	tlbpol_engine_free(h.eng);

	b.cost_ns = 1u << 30;
	as = setup(&h, &remote_ops, bs, 1, 0);
	shoot(&h, as, 2, 0);
	assert_string_equal(calls, "");
	assert_int_equal(h.ipi_targets, 3);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.shoot_ipi, 1);
	assert_int_equal(st.shoot_remote + st.remote_actions, 0);
	tlbpol_engine_free(h.eng);
}

/* LAZY_OK does not make a table-freeing unmap lazy under walkers. */
static void test_walkers_not_lazy(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED | TLBPOL_EVF_LAZY_OK,
					 0x10000, 2, P | W | U | A, 0);
	struct tlbpol_event plain = ev;
	struct tlbpol_decision d;

	(void)state;
	plain.flags = TLBPOL_EVF_LAZY_OK;
	for (int walkers = 0; walkers < 2; walkers++) {
		as = setup(&h, &h_ops, NULL, 0, walkers ? TLBPOL_CFGF_LOCKLESS_WALKERS : 0);
		assert_int_equal(tlbpol_decide(h.eng, as, 0, &ev, &d), 0);
		assert_int_equal(d.deadline, walkers ? TLBPOL_BY_FREE : TLBPOL_BY_LAZY);
		assert_int_equal(tlbpol_decide(h.eng, as, 0, &plain, &d), 0);
		assert_int_equal(d.deadline, TLBPOL_BY_LAZY);
		tlbpol_engine_free(h.eng);
	}
}

/*
 * tlbpol_cost_calibrate(): Dave Hansen's Haswell figures in cycles (INVLPG
 * 250 each, a CR3 write 2283, 250 to refill an entry) with 64 entries in
 * use give a ceiling of 36 pages, near Linux's 33; the IPI costs are the
 * round trip and the send (plus the target's entry and exit if given); a broadcast
 * fills its descriptor; what is missing or malformed is refused with the
 * configuration untouched.
 */
static void test_calibrate(void **state)
{
	struct tlbpol_calibration m;
	struct tlbpol_config cfg, before;
	struct tlbpol_backend ipi, bc;
	struct {
		struct tlbpol_calibration m;
		uint64_t extra;
	} big;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.size = sizeof(m);
	m.ipi_round_trip = 2000;
	m.inval_page = 250;
	m.full_flush = 2283;
	m.refill = 250;
	tlbpol_config_init(&cfg, 4, TLBPOL_ARCH_X86_64);
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, &ipi, &bc), 0);
	assert_int_equal(cfg.flush_ceiling, 36);
	assert_int_equal(cfg.cost_ipi_ns, 2000);
	assert_int_equal(cfg.cost_ipi_target_ns, 200);
	assert_int_equal(cfg.cost_broadcast_ns, TLBPOL_DEFAULT_COST_BROADCAST_NS);
	assert_int_equal(ipi.size, sizeof(ipi));
	assert_int_equal(ipi.mech, TLBPOL_MECH_IPI);
	assert_int_equal(ipi.cost_ns, 2000);
	assert_int_equal(bc.size, 0); /* no broadcast measured */

	m.ipi_send = 100;
	m.irq_entry_exit = 300;
	m.bcast_issue = 50;
	m.bcast_sync = 1000;
	m.bcast_max_pages = 8;
	m.refill_entries = 8;
	m.full_flush = 10000000000ULL; /* capped at 4096 pages */
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, NULL, &bc), 0);
	assert_int_equal(cfg.flush_ceiling, 4096);
	assert_int_equal(cfg.cost_ipi_target_ns, 400);
	assert_int_equal(cfg.cost_broadcast_ns, 1050);
	assert_int_equal(cfg.cost_broadcast_page_ns, 50);
	assert_int_equal(bc.mech, TLBPOL_MECH_BROADCAST);
	assert_int_equal(bc.max_pages, 8);
	assert_int_equal(bc.cost_ns, 1050);
	/* A ceiling of at least 1: a whole flush cheaper than one page. */
	m.full_flush = 1;
	m.refill_entries = 0;
	m.refill = 1;
	m.inval_page = 1000;
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, NULL, NULL), 0);
	assert_int_equal(cfg.flush_ceiling, 1);
	/* Measurements at the top of the range saturate, never wrap (a sum
	 * of 2^64 was a division by zero). */
	m.inval_page = ~0ULL;
	m.refill = 1;
	m.full_flush = ~0ULL;
	m.ipi_send = ~0ULL;
	m.irq_entry_exit = ~0ULL;
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, NULL, NULL), 0);
	assert_int_equal(cfg.flush_ceiling, 1);
	assert_int_equal(cfg.cost_ipi_target_ns, 0xffffffffU);
	m.ipi_send = 100;
	m.irq_entry_exit = 300;
	/* The calibrated configuration builds an engine that uses the costs. */
	{
		struct harness h;
		const struct tlbpol_backend *bs[] = { &ipi };

		h_config(&h, &cfg, 4, TLBPOL_ARCH_X86_64);
		m.full_flush = 2283;
		m.refill = 250;
		m.inval_page = 250;
		assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, &ipi, NULL), 0);
		cfg.backends = bs;
		cfg.nr_backends = 1;
		h_engine_cfg(&h, &cfg);
		tlbpol_engine_free(h.eng);
	}

	/* Refused, nothing written. */
	before = cfg;
	m.inval_page = 0;
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, NULL, NULL), -EINVAL);
	m.inval_page = 250;
	m.ipi_round_trip = 0;
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, NULL, NULL), -EINVAL);
	m.ipi_round_trip = 2000;
	m.size = sizeof(m) - 8;
	assert_int_equal(tlbpol_cost_calibrate(&m, &cfg, NULL, NULL), -EINVAL);
	m.size = sizeof(m);
	assert_int_equal(tlbpol_cost_calibrate(NULL, &cfg, NULL, NULL), -EINVAL);
	assert_int_equal(tlbpol_cost_calibrate(&m, NULL, NULL, NULL), -EINVAL);
	memset(&big, 0, sizeof(big));
	big.m = m;
	big.m.size = sizeof(big);
	big.extra = 1;
	assert_int_equal(tlbpol_cost_calibrate(&big.m, &cfg, NULL, NULL), -E2BIG);
	assert_memory_equal(&before, &cfg, sizeof(cfg));
	big.extra = 0;
	assert_int_equal(tlbpol_cost_calibrate(&big.m, &cfg, NULL, NULL), 0);
}

H_TEST_MAIN(cmocka_unit_test(test_calibrate), cmocka_unit_test(test_descriptor_errors), cmocka_unit_test(test_sizes_0_2),
	    cmocka_unit_test(test_split_same_cpu), cmocka_unit_test(test_disabled),
	    cmocka_unit_test(test_costs), cmocka_unit_test(test_walkers),
	    cmocka_unit_test(test_walkers_preempted), cmocka_unit_test(test_walkers_not_lazy),
	    cmocka_unit_test(test_remote_action));
