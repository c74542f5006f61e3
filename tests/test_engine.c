/* SPDX-License-Identifier: MIT */
/*
 * test_engine: what tlbpol_submit, tlbpol_flush, tlbpol_defer_free, the
 * CPU-state calls and the statistics do, driven on one thread with the
 * recording callbacks of harness.h.
 */
#include <errno.h>

#include "support/harness.h"

#define DEF TLBPOL_RULES_DEFAULT
#define RW (P | W | U | A)
#define RWD (RW | D)
#define RO (P | U | A)

static struct tlbpol_as *setup(struct harness *h, uint32_t nr_cpus, uint64_t tag)
{
	h_engine(h, nr_cpus, TLBPOL_ARCH_X86_64, DEF);
	return h_as_run(h, tag, nr_cpus);
}

static void submit(struct harness *h, struct tlbpol_as *as, uint32_t cpu, struct tlbpol_event ev)
{
	assert_int_equal(tlbpol_submit(h->eng, as, cpu, &ev, NULL), 0);
}

static void test_defaults(void **s)
{
	struct tlbpol_config cfg;

	(void)s;
	tlbpol_config_init(&cfg, 8, TLBPOL_ARCH_ARM64);
	assert_int_equal(cfg.size, sizeof(cfg));
	assert_int_equal(cfg.nr_cpus, 8);
	assert_int_equal(cfg.arch, TLBPOL_ARCH_ARM64);
	assert_int_equal(cfg.rules, TLBPOL_RULES_DEFAULT);
	assert_int_equal(cfg.flush_ceiling, 33);
	assert_int_equal(cfg.batch_pages, 512);
	assert_null(cfg.ops);
	assert_null(cfg.cpu_node);
	assert_string_equal(tlbpol_version(), TLBPOL_VERSION_STRING);
	assert_int_equal(TLBPOL_MAX_CPUS >= 4096, 1);
}

/* Rules the engine cannot use are dropped: no broadcast hook, no topology. */
static void test_rules_in_force(void **s)
{
	struct harness h;

	(void)s;
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, DEF);
	assert_int_equal(tlbpol_engine_rules(h.eng),
			 DEF & ~(TLBPOL_RULE_BROADCAST | TLBPOL_RULE_NUMA_FANOUT));
	assert_int_equal(tlbpol_engine_rules(NULL), 0);
	tlbpol_engine_free(h.eng);
}

static void test_engine_in_caller_memory(void **s)
{
	static _Alignas(64) unsigned char mem[4 << 20];
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	struct harness h;
	size_t need;

	(void)s;
	memset(&h, 0, sizeof(h));
	tlbpol_config_init(&cfg, 16, TLBPOL_ARCH_X86_64);
	cfg.ops = &h_ops;
	cfg.ops_ctx = &h;
	need = tlbpol_engine_size(&cfg);
	assert_true(need > 0 && need <= sizeof(mem));
	memset(mem, 0xa5, sizeof(mem));
	assert_int_equal(tlbpol_engine_init(&eng, mem, need, &cfg), 0);
	assert_ptr_equal(eng, mem);
	/* Nothing past the size it asked for was touched. */
	for (size_t i = need; i < need + 4096; i++)
		assert_int_equal(mem[i], 0xa5);
}

/* Each CPU's state starts on its own cache line (no false sharing between
 * CPUs): observed through the size growing by whole lines per CPU. */
static void test_size_grows_by_lines(void **s)
{
	struct tlbpol_config cfg;
	size_t a, b;

	(void)s;
	tlbpol_config_init(&cfg, 4, TLBPOL_ARCH_X86_64);
	cfg.ops = &h_ops;
	a = tlbpol_engine_size(&cfg);
	cfg.nr_cpus = 5;
	b = tlbpol_engine_size(&cfg);
	assert_true(b > a);
	assert_int_equal(a % 64, 0);
	assert_int_equal(b % 64, 0);
}

static void test_cpuset(void **s)
{
	struct tlbpol_cpuset set;

	(void)s;
	tlbpol_cpuset_zero(&set);
	assert_int_equal(tlbpol_cpuset_count(&set), 0);
	assert_int_equal(tlbpol_cpuset_next(&set, -1), -1);
	tlbpol_cpuset_set(&set, 0);
	tlbpol_cpuset_set(&set, 63);
	tlbpol_cpuset_set(&set, 64);
	tlbpol_cpuset_set(&set, 4095);
	tlbpol_cpuset_set(&set, 4096); /* ignored */
	assert_int_equal(tlbpol_cpuset_count(&set), 4);
	assert_int_equal(tlbpol_cpuset_next(&set, -1), 0);
	assert_int_equal(tlbpol_cpuset_next(&set, 0), 63);
	assert_int_equal(tlbpol_cpuset_next(&set, 63), 64);
	assert_int_equal(tlbpol_cpuset_next(&set, 64), 4095);
	assert_int_equal(tlbpol_cpuset_next(&set, 4095), -1);
	assert_int_equal(tlbpol_cpuset_next(&set, 5000), -1);
	assert_int_equal(tlbpol_cpuset_test(&set, 63), 1);
	assert_int_equal(tlbpol_cpuset_test(&set, 62), 0);
	assert_int_equal(tlbpol_cpuset_test(&set, 9999), 0);
	tlbpol_cpuset_clear(&set, 63);
	assert_int_equal(tlbpol_cpuset_test(&set, 63), 0);
	assert_int_equal(tlbpol_cpuset_count(NULL), 0);
	assert_int_equal(tlbpol_cpuset_test(NULL, 0), 0);
	assert_int_equal(tlbpol_cpuset_next(NULL, -1), -1);
}

/* A BY_NOW shootdown flushes the initiator and every footprint CPU, with one
 * send_ipi, before submit returns. */
static void test_now_shootdown(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 4, 42);
	struct tlbpol_stats st;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x7000, 1, RW, RO);

	(void)s;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, as, 2, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(h.ipi_calls, 1);
	assert_int_equal(h.ipi_targets, 3);
	assert_int_equal(tlbpol_cpuset_test(&h.last_targets, 2), 0);
	for (uint32_t c = 0; c < 4; c++)
		assert_int_equal(h.flushes_on[c], 1);
	for (uint32_t i = 0; i < h.nr_log; i++) {
		assert_int_equal(h.log[i].as_tag, 42);
		assert_int_equal(h.log[i].kind, TLBPOL_FLUSH_PAGES);
		assert_int_equal(h.log[i].first.va, 0x7000);
		assert_int_equal(h.log[i].first.page_shift, 12);
	}
	assert_int_equal(tlbpol_stats_read(h.eng, 2, &st), 0);
	assert_int_equal(st.local_flushes, 1);
	assert_int_equal(st.ipis_sent, 3);
	assert_int_equal(st.events, 1);
	assert_int_equal(st.by_reason[TLBPOL_WHY_DOWNGRADE], 1);
	assert_int_equal(tlbpol_stats_read(h.eng, 0, &st), 0);
	assert_int_equal(st.remote_flushes, 1);
	assert_int_equal(st.pages_flushed, 1);
	assert_int_equal(st.events, 0);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.pages_flushed, 4);
	tlbpol_engine_free(h.eng);
}

/* A LOCAL decision flushes only the deciding CPU. */
static void test_local(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_event ev = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x3000, 1, RWD, RWD);

	(void)s;
	h_engine(&h, 2, TLBPOL_ARCH_ARM64, DEF);
	as = h_as_run(&h, 1, 2);
	submit(&h, as, 1, ev);
	assert_int_equal(h.flushes_on[1], 1);
	assert_int_equal(h.flushes_on[0], 0);
	assert_int_equal(h.ipi_calls, 0);
	tlbpol_engine_free(h.eng);
}

/* Deferred work waits for tlbpol_flush; dirty pages go by BY_WRITEBACK,
 * clean ones only by BY_FREE; one interrupt per batch per target. */
static void test_batch_deadlines(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 3, 5);
	struct tlbpol_stats st;

	(void)s;
	h_reset_log(&h);
	for (int i = 0; i < 6; i++)
		submit(&h, as, 0, h_event(TLBPOL_EV_RECLAIM, 0, 0x100000 + (uint64_t)i * 0x1000, 1,
					  i % 2 ? RWD : RW, 0));
	assert_int_equal(h.nr_log, 0); /* nothing yet */
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_WRITEBACK), 3);
	assert_int_equal(h.ipi_calls, 1);
	assert_int_equal(h.nr_log, 3);
	assert_int_equal(h.log[0].pages, 3);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_WRITEBACK), 0);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_NOW), 0);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 3);
	assert_int_equal(h.ipi_calls, 2);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(tlbpol_stats_read(h.eng, 0, &st), 0);
	assert_int_equal(st.coalesced, 4);
	tlbpol_engine_free(h.eng);
}

/* Work of several address spaces shares one interrupt: one flush per AS,
 * each sent only where that AS may be cached. */
static void test_batch_two_as(void **s)
{
	struct harness h;
	struct tlbpol_as *a, *b;

	(void)s;
	h_engine(&h, 4, TLBPOL_ARCH_X86_64, DEF);
	assert_int_equal(tlbpol_as_open(h.eng, 100, &a), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &b), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, a, NULL), 0);
	assert_int_equal(tlbpol_switch(h.eng, 1, a, NULL), 0);
	assert_int_equal(tlbpol_switch(h.eng, 2, b, NULL), 0);
	assert_int_equal(tlbpol_switch(h.eng, 3, b, NULL), 0);
	h_reset_log(&h);
	submit(&h, a, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x1000, 2, RW, 0));
	submit(&h, b, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x9000, 1, RW, 0));
	submit(&h, a, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x5000, 1, RW, 0));
	assert_int_equal(tlbpol_as_close(h.eng, a), -EBUSY);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 3);
	assert_int_equal(h.ipi_calls, 1);
	assert_int_equal(h.ipi_targets, 3);
	assert_int_equal(h.flushes_on[0], 1); /* a */
	assert_int_equal(h.flushes_on[1], 1); /* a */
	assert_int_equal(h.flushes_on[2], 1); /* b */
	assert_int_equal(h.flushes_on[3], 1); /* b */
	for (uint32_t i = 0; i < h.nr_log; i++) {
		if (h.log[i].as_tag == 100) {
			assert_true(h.log[i].cpu <= 1);
			assert_int_equal(h.log[i].nr_ranges, 2);
			assert_int_equal(h.log[i].pages, 3);
		} else {
			assert_int_equal(h.log[i].as_tag, 200);
			assert_true(h.log[i].cpu >= 2);
			assert_int_equal(h.log[i].pages, 1);
		}
	}
	assert_int_equal(tlbpol_switch(h.eng, 0, b, NULL), 0);
	assert_int_equal(tlbpol_switch(h.eng, 1, NULL, NULL), 0);
	assert_int_equal(tlbpol_unload(h.eng, 1), 0);
	assert_int_equal(tlbpol_as_close(h.eng, a), 0);
	tlbpol_engine_free(h.eng);
}

/* A batch that reaches batch_pages flushes itself; nothing is dropped. */
static void test_batch_full(void **s)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_as *as;
	struct tlbpol_stats st;

	(void)s;
	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.batch_pages = 16;
	h_engine_cfg(&h, &cfg);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 1, as, NULL), 0);
	for (int i = 0; i < 15; i++)
		submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, (uint64_t)i << 12, 1, RW, 0));
	assert_int_equal(h.ipi_calls, 0);
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 15ULL << 12, 1, RW, 0));
	assert_int_equal(h.ipi_calls, 1); /* the 16th page filled it */
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	/* An event larger than the batch is flushed on its own, at once. */
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x100000, 40, RW, 0));
	assert_int_equal(h.ipi_calls, 2);
	assert_int_equal(h.log[h.nr_log - 1].kind, TLBPOL_FLUSH_AS);
	/* 9 + 9 pages: the second event overflows, everything is flushed. */
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x200000, 9, RW, 0));
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x300000, 9, RW, 0));
	assert_int_equal(h.ipi_calls, 3);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.events, 19);
	tlbpol_engine_free(h.eng);
}

/* Up to the ceiling, pages; past it, one whole-AS flush (ALL if global). */
static void test_ceiling(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 1, 1);

	(void)s;
	h_reset_log(&h);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x100000, 33, RW, RO));
	assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_PAGES);
	assert_int_equal(h.log[0].pages, 33);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x100000, 34, RW, RO));
	assert_int_equal(h.log[1].kind, TLBPOL_FLUSH_AS);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x100000, 34, RW | G, RO | G));
	assert_int_equal(h.log[2].kind, TLBPOL_FLUSH_ALL);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x100000, 2, RW | G, RO | G));
	assert_int_equal(h.log[3].kind, TLBPOL_FLUSH_PAGES);
	/* Deferred pages of one AS count together against the ceiling. */
	for (int i = 0; i < 34; i++)
		submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, (uint64_t)i << 12, 1, RW, 0));
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 34);
	assert_int_equal(h.log[4].kind, TLBPOL_FLUSH_AS);
	/* Tables freed: the flush says so. */
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0, 1, RW, 0));
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 1);
	assert_int_equal(h.log[5].flags, TLBPOL_FLUSHF_TABLES);
	tlbpol_engine_free(h.eng);
}

/* Global entries live on every CPU: the footprint does not narrow them. */
static void test_global_targets_all(void **s)
{
	struct harness h;
	struct tlbpol_as *as;

	(void)s;
	h_engine(&h, 4, TLBPOL_ARCH_X86_64, DEF);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, RW | G, RO | G));
	for (uint32_t c = 0; c < 4; c++)
		assert_int_equal(h.flushes_on[c], 1);
	tlbpol_engine_free(h.eng);
}

static int freed;
/* A deferred free runs only once the flushes pending at its registration are
 * complete; at once when nothing is pending; exactly once. */
static void test_defer_free(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 2, 1);
	struct tlbpol_stats st;
	int a = 0, b = 0, c = 0;

	(void)s;
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &a), 0);
	assert_int_equal(a, 1); /* nothing pending */
	submit(&h, as, 0, h_event(TLBPOL_EV_RECLAIM, 0, 0x1000, 1, RWD, 0)); /* writeback */
	submit(&h, as, 0, h_event(TLBPOL_EV_RECLAIM, 0, 0x2000, 1, RW, 0));  /* free */
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &b), 0);
	assert_int_equal(b, 0);
	h_tick(&h, 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	assert_int_equal(b, 0);
	/* Half the work done is not enough. */
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_WRITEBACK), 1);
	assert_int_equal(b, 0);
	/* Work queued after registration does not hold it back. */
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x9000, 1, RW, 0));
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &c), 0);
	/* Only the 0x2000 entry: complete it through a full batch flush. */
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 2);
	assert_int_equal(b, 1);
	assert_int_equal(c, 1);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(b, 1);
	assert_int_equal(c, 1);
	assert_int_equal(tlbpol_stats_read(h.eng, 0, &st), 0);
	assert_int_equal(st.deferred_frees, 3);
	/* The queue of frees is bounded: when full, the pending work is
	 * completed instead of failing. */
	freed = 0;
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 0xa000, 1, RW, 0));
	for (int i = 0; i < 200; i++)
		assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &freed), 0);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(freed, 200);
	tlbpol_engine_free(h.eng);
}

/* ARM64 aging is due BY_LAZY: the initiator's tick posts it without an
 * interrupt and flushes itself; the other CPU completes it at its own tick. */
static void test_tick_completes_lazy(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	int done = 0;

	(void)s;
	h_engine(&h, 2, TLBPOL_ARCH_ARM64, DEF);
	as = h_as_run(&h, 1, 2);
	submit(&h, as, 0, h_event(TLBPOL_EV_CLEAR_YOUNG, 0, 0x1000, 1, RW, P | W | U));
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &done), 0);
	assert_int_equal(h.nr_log, 1); /* itself, at once (LATR) */
	assert_int_equal(h.log[0].cpu, 0);
	h_tick(&h, 0);
	assert_int_equal(h.nr_log, 1); /* posted; itself not again */
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(done, 0);     /* CPU 1 has not flushed yet */
	h_tick(&h, 1);
	assert_int_equal(h.nr_log, 2);
	assert_int_equal(h.log[1].cpu, 1);
	assert_int_equal(done, 0);     /* runs on CPU 0, at its next call */
	h_tick(&h, 0);
	assert_int_equal(done, 1);
	assert_int_equal(h.ipi_calls, 0);
	tlbpol_engine_free(h.eng);
}

/* tlbpol_flush(BY_LAZY) forces lazy work with interrupts. */
static void test_flush_lazy_forces(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 3, 1);
	int done = 0;

	(void)s;
	h_reset_log(&h);
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK, 0x1000, 1, RW, 0));
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &done), 0);
	h_tick(&h, 0); /* posted, no interrupt */
	assert_int_equal(h.ipi_calls, 0);
	assert_int_equal(done, 0);
	h_tick(&h, 1); /* CPU 1 picks it up */
	assert_int_equal(h.flushes_on[1], 1);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(h.ipi_calls, 1);            /* only CPU 2 was left */
	assert_int_equal(h.ipi_targets, 1);
	assert_int_equal(tlbpol_cpuset_test(&h.last_targets, 2), 1);
	assert_int_equal(done, 1);
	tlbpol_engine_free(h.eng);
}

/* OFFLINE CPUs are never targeted, are refused while they hold work, and
 * flush everything at their first switch when they come back. */
static void test_offline(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 3, 1);

	(void)s;
	assert_int_equal(tlbpol_cpu_state(h.eng, 2, TLBPOL_CPU_OFFLINE), 0);
	h_reset_log(&h);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, RW, RO));
	assert_int_equal(h.ipi_targets, 1);
	assert_int_equal(h.flushes_on[2], 0);
	assert_int_equal(tlbpol_cpu_state(h.eng, 2, TLBPOL_CPU_RUNNING), 0);
	assert_int_equal(tlbpol_switch(h.eng, 2, as, NULL), 0);
	assert_int_equal(h.flushes_on[2], 1);
	assert_int_equal(h.log[h.nr_log - 1].kind, TLBPOL_FLUSH_ALL);
	assert_int_equal(tlbpol_switch(h.eng, 2, as, NULL), 0);
	assert_int_equal(h.flushes_on[2], 1);
	tlbpol_engine_free(h.eng);
}

/* handle_ipi returns the number of requests served. */
static int ipi_served;
static struct harness *ipi_h;
static void count_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	(void)ctx;
	(void)from;
	for (int c = tlbpol_cpuset_next(t, -1); c >= 0; c = tlbpol_cpuset_next(t, c))
		ipi_served += tlbpol_handle_ipi(ipi_h->eng, (uint32_t)c);
}

static void test_handle_ipi_count(void **s)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops),
		.flush_local = h_flush_local,
		.send_ipi = count_ipi,
	};
	struct tlbpol_config cfg;
	struct harness h;
	struct tlbpol_as *as;

	(void)s;
	h_config(&h, &cfg, 3, TLBPOL_ARCH_X86_64);
	ipi_h = &h;
	cfg.ops = &ops;
	assert_int_equal(tlbpol_engine_new(&cfg, &h.eng), 0);
	as = h_as_run(&h, 1, 3);
	submit(&h, as, 0, h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, RW, RO));
	assert_int_equal(ipi_served, 2);
	assert_int_equal(tlbpol_handle_ipi(h.eng, 1), 0);
	tlbpol_engine_free(h.eng);
}

/* Reusing an address whose deferred flush is still pending completes it
 * first (flush_tlb_batched_pending): precisely for this CPU's own entries,
 * with one whole-AS shootdown for other CPUs' (whose ranges are not known). */
static void test_address_reuse_settles_pending(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 3, 9);
	struct tlbpol_decision d;

	(void)s;
	submit(&h, as, 0, h_event(TLBPOL_EV_UNMAP, 0, 0x10000, 4, RW, 0));
	h_reset_log(&h);
	/* Elsewhere in the AS: nothing to settle. */
	submit(&h, as, 0, h_event(TLBPOL_EV_FAULT, 0, 0x80000, 1, 0, RW));
	assert_int_equal(h.nr_log, 0);
	/* Same CPU, overlapping: its batch is flushed as ranges. */
	assert_int_equal(tlbpol_submit(h.eng, as, 0,
				       &(struct tlbpol_event){ sizeof(struct tlbpol_event),
							       TLBPOL_EV_FAULT, 0, 12, 0x12000, 1,
							       0, RW },
				       &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_NONE);
	assert_int_equal(h.nr_log, 3);
	assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_PAGES);
	assert_int_equal(h.log[0].pages, 4);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	/* Another CPU's pending work elsewhere: nothing to settle. */
	submit(&h, as, 1, h_event(TLBPOL_EV_UNMAP, 0, 0x20000, 1, RW, 0));
	h_reset_log(&h);
	submit(&h, as, 2, h_event(TLBPOL_EV_FAULT, 0, 0x90000, 1, 0, RW));
	assert_int_equal(h.nr_log, 0);
	/* ... over the reused address: a whole-AS shootdown first. */
	submit(&h, as, 2, h_event(TLBPOL_EV_FAULT, 0, 0x20000, 1, 0, RW));
	assert_int_equal(h.nr_log, 3);
	assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_AS);
	/* The pending entry itself is still completed later (never lost). */
	assert_int_equal(tlbpol_flush(h.eng, 1, TLBPOL_BY_FREE), 1);
	/* LAZY_OK work pending elsewhere: its caller promised not to reuse
	 * the addresses, so an install there settles nothing. */
	submit(&h, as, 1, h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK, 0x50000, 1, RW, 0));
	h_reset_log(&h);
	submit(&h, as, 2, h_event(TLBPOL_EV_FAULT, 0, 0x50000, 1, 0, RW));
	assert_int_equal(h.nr_log, 0);
	assert_int_equal(tlbpol_flush(h.eng, 1, TLBPOL_BY_LAZY), 1);
	/* A global PTE pending elsewhere: a whole-AS flush would keep it. */
	submit(&h, as, 1, h_event(TLBPOL_EV_UNMAP, 0, 0x30000, 1, RW | G, 0));
	h_reset_log(&h);
	submit(&h, as, 2, h_event(TLBPOL_EV_FAULT, 0, 0x30000, 1, 0, RW));
	assert_int_equal(h.nr_log, 3);
	assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_ALL);
	assert_int_equal(tlbpol_flush(h.eng, 1, TLBPOL_BY_FREE), 1);
	tlbpol_engine_free(h.eng);
}

static void test_stats_avoided(void **s)
{
	struct harness h;
	struct tlbpol_as *as = setup(&h, 2, 1);
	struct tlbpol_stats st, all;

	(void)s;
	submit(&h, as, 1, h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x1000, 1, RWD, RWD));
	submit(&h, as, 1, h_event(TLBPOL_EV_CLEAR_YOUNG, 0, 0x1000, 1, RWD, P | W | U | D));
	submit(&h, as, 1, h_event(TLBPOL_EV_FAULT, 0, 0x1000, 1, 0, RO));   /* not present */
	submit(&h, as, 1, h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, RO, RO)); /* unchanged */
	assert_int_equal(tlbpol_stats_read(h.eng, 1, &st), 0);
	assert_int_equal(st.events, 4);
	assert_int_equal(st.flushes_avoided, 2);
	assert_int_equal(st.by_reason[TLBPOL_WHY_SPURIOUS], 1);
	assert_int_equal(st.by_reason[TLBPOL_WHY_AGING], 1);
	assert_int_equal(st.by_reason[TLBPOL_WHY_NOT_PRESENT], 1);
	assert_int_equal(st.by_reason[TLBPOL_WHY_UNCHANGED], 1);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &all), 0);
	assert_memory_equal(&st, &all, sizeof(st));
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_defaults),
	cmocka_unit_test(test_rules_in_force),
	cmocka_unit_test(test_engine_in_caller_memory),
	cmocka_unit_test(test_size_grows_by_lines),
	cmocka_unit_test(test_cpuset),
	cmocka_unit_test(test_now_shootdown),
	cmocka_unit_test(test_local),
	cmocka_unit_test(test_batch_deadlines),
	cmocka_unit_test(test_batch_two_as),
	cmocka_unit_test(test_batch_full),
	cmocka_unit_test(test_ceiling),
	cmocka_unit_test(test_global_targets_all),
	cmocka_unit_test(test_defer_free),
	cmocka_unit_test(test_tick_completes_lazy),
	cmocka_unit_test(test_flush_lazy_forces),
	cmocka_unit_test(test_offline),
	cmocka_unit_test(test_handle_ipi_count),
	cmocka_unit_test(test_address_reuse_settles_pending),
	cmocka_unit_test(test_stats_avoided));
