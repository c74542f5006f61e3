/* SPDX-License-Identifier: MIT */
/*
 * test_hosted: the hosted layer — topology from libnuma, address spaces by
 * tag, live reconfiguration (single-threaded behaviour; the concurrent proof
 * is test_reconfig_threads).
 */
#include <errno.h>

#include "support/harness.h"

#define RW (P | W | U | A)
#define RWD (RW | D)
#define RO (P | U | A)

static void test_topology(void **s)
{
	static const uint16_t nodes[4] = { 0, 0, 1, 1 };
	struct harness h;
	struct tlbpol_config cfg;
	uint16_t got[8];
	int n;

	(void)s;
	h_engine(&h, 8, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	n = tlbpol_engine_topology(h.eng, got, 8);
	assert_true(n >= 1);
	for (int i = 0; i < 8; i++)
		assert_true(got[i] < n);
	assert_int_equal(tlbpol_engine_topology(h.eng, NULL, 0), n);
	assert_int_equal(tlbpol_engine_topology(h.eng, NULL, 1), -EINVAL);
	assert_int_equal(tlbpol_engine_topology(NULL, got, 1), -EINVAL);
	tlbpol_engine_free(h.eng);

	/* Given a topology, it is what the engine uses. */
	h_config(&h, &cfg, 4, TLBPOL_ARCH_X86_64);
	cfg.cpu_node = nodes;
	assert_int_equal(tlbpol_engine_new(&cfg, &h.eng), 0);
	assert_int_equal(tlbpol_engine_topology(h.eng, got, 4), 2);
	assert_memory_equal(got, nodes, sizeof(nodes));
	/* A topology with two nodes keeps the fan-out rule. */
	assert_true(tlbpol_engine_rules(h.eng) & TLBPOL_RULE_NUMA_FANOUT);
	tlbpol_engine_free(h.eng);
}

static void test_lookup(void **s)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_as *as[100];

	(void)s;
	tlbpol_thread_register();
	h_config(&h, &cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.max_as = 128;
	assert_int_equal(tlbpol_engine_new(&cfg, &h.eng), 0);
	for (uint64_t t = 0; t < 100; t++)
		assert_int_equal(tlbpol_as_open(h.eng, 1000 + t * 7919, &as[t]), 0);
	for (uint64_t t = 0; t < 100; t++)
		assert_ptr_equal(tlbpol_as_lookup(h.eng, 1000 + t * 7919), as[t]);
	assert_null(tlbpol_as_lookup(h.eng, 5));
	assert_null(tlbpol_as_lookup(NULL, 1000));
	/* Closed: gone; the slot reused under another tag: found as that. */
	assert_int_equal(tlbpol_as_close(h.eng, as[3]), 0);
	assert_null(tlbpol_as_lookup(h.eng, 1000 + 3 * 7919));
	assert_int_equal(tlbpol_as_open(h.eng, 42, &as[3]), 0);
	assert_ptr_equal(tlbpol_as_lookup(h.eng, 42), as[3]);
	assert_int_equal(tlbpol_as_tag(tlbpol_as_lookup(h.eng, 42)), 42);
	tlbpol_engine_free(h.eng);
	tlbpol_thread_unregister();
}

static struct tlbpol_decision dec(struct harness *h, struct tlbpol_as *as, struct tlbpol_event ev)
{
	struct tlbpol_decision d;

	assert_int_equal(tlbpol_decide(h->eng, as, 0, &ev, &d), 0);
	return d;
}

static void test_reconfigure(void **s)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_config costs;
	struct tlbpol_event spur = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, 0x1000, 1, RWD, RWD);
	struct tlbpol_event down8 = h_event(TLBPOL_EV_PROTECT, 0, 0x10000, 8, RW, RO);

	(void)s;
	tlbpol_thread_register();
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(dec(&h, as, spur).reason, TLBPOL_WHY_SPURIOUS);
	assert_int_equal(tlbpol_engine_set_rules(h.eng, TLBPOL_RULES_NONE), 0);
	assert_int_equal(tlbpol_engine_rules(h.eng), 0);
	assert_int_equal(dec(&h, as, spur).reason, TLBPOL_WHY_NAIVE);
	assert_int_equal(tlbpol_engine_set_rules(h.eng, TLBPOL_RULES_DEFAULT), 0);
	/* Filtered as at creation: no broadcast hook, no topology. */
	assert_int_equal(tlbpol_engine_rules(h.eng),
			 TLBPOL_RULES_DEFAULT & ~(TLBPOL_RULE_BROADCAST | TLBPOL_RULE_NUMA_FANOUT));
	assert_int_equal(tlbpol_engine_set_rules(h.eng, 1ULL << 50), -EINVAL);
	assert_int_equal(tlbpol_engine_set_rules(NULL, 0), -EINVAL);

	/* tlbpol_submit() decides an event like the last one (an unmap walking
	 * a range) from what it remembers: never under rules no longer in
	 * force. */
	{
		struct tlbpol_event un = h_event(TLBPOL_EV_UNMAP, 0, 0x80000, 1, RO, 0);
		struct tlbpol_decision d;

		assert_int_equal(tlbpol_submit(h.eng, as, 0, &un, &d), 0);
		assert_int_equal(d.deadline, TLBPOL_BY_FREE);
		assert_int_equal(tlbpol_engine_set_rules(h.eng, TLBPOL_RULES_NONE), 0);
		un.va += 0x1000;
		assert_int_equal(tlbpol_submit(h.eng, as, 0, &un, &d), 0);
		assert_int_equal(d.reason, TLBPOL_WHY_NAIVE);
		assert_int_equal(d.deadline, TLBPOL_BY_NOW);
		assert_int_equal(tlbpol_engine_set_rules(h.eng, TLBPOL_RULES_DEFAULT), 0);
		un.va += 0x1000;
		assert_int_equal(tlbpol_submit(h.eng, as, 0, &un, &d), 0);
		assert_int_equal(d.reason, TLBPOL_WHY_UNMAP);
		assert_int_equal(d.deadline, TLBPOL_BY_FREE);
		assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 2);
	}

	/* The ceiling moves where an 8-page downgrade becomes a whole flush. */
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), 0);
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &down8, NULL), 0);
	assert_int_equal(h.log[0].kind, TLBPOL_FLUSH_PAGES);
	assert_int_equal(tlbpol_engine_set_flush_ceiling(h.eng, 4), 0);
	assert_int_equal(tlbpol_submit(h.eng, as, 0, &down8, NULL), 0);
	assert_int_equal(h.log[1].kind, TLBPOL_FLUSH_AS);
	assert_int_equal(tlbpol_engine_set_flush_ceiling(h.eng, 0), -EINVAL);

	/* Batch size: at most what the arrays were sized for. */
	assert_int_equal(tlbpol_engine_set_batch_pages(h.eng, TLBPOL_DEFAULT_BATCH_PAGES + 1), -ERANGE);
	assert_int_equal(tlbpol_engine_set_batch_pages(h.eng, 0), -ERANGE);
	assert_int_equal(tlbpol_engine_set_batch_pages(h.eng, 2), 0);
	h_reset_log(&h);
	assert_int_equal(tlbpol_switch(h.eng, 1, as, NULL), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(tlbpol_submit(h.eng, as, 0,
					       &(struct tlbpol_event){ sizeof(struct tlbpol_event),
								       TLBPOL_EV_UNMAP, 0, 12,
								       0x40000 + (uint64_t)i * 0x2000, 1,
								       RO, 0 },
					       NULL), 0);
	assert_int_equal(h.ipi_calls, 1); /* the second page filled the batch */

	tlbpol_config_init(&costs, 2, TLBPOL_ARCH_X86_64);
	assert_int_equal(tlbpol_engine_set_cost_model(h.eng, &costs), 0);
	costs.size = 4;
	assert_int_equal(tlbpol_engine_set_cost_model(h.eng, &costs), -EINVAL);
	assert_int_equal(tlbpol_engine_set_ipi_delay(h.eng, 1000), 0);
	assert_int_equal(tlbpol_engine_set_ipi_delay(h.eng, 0), 0);
	assert_int_equal(tlbpol_engine_set_ipi_delay(NULL, 0), -EINVAL);
	tlbpol_quiescent();
	tlbpol_thread_offline();
	tlbpol_thread_online();
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	tlbpol_engine_free(h.eng);
	tlbpol_thread_unregister();
}

/* A freestanding engine has no hosted layer: refused, not crashed. */
static void test_freestanding_refuses(void **s)
{
	static _Alignas(64) unsigned char mem[2 << 20];
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	struct harness h;

	(void)s;
	memset(&h, 0, sizeof(h));
	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	cfg.ops = &h_ops;
	cfg.ops_ctx = &h;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
	assert_int_equal(tlbpol_engine_set_rules(eng, 0), -EINVAL);
	assert_int_equal(tlbpol_engine_set_ipi_delay(eng, 10), -EINVAL);
	assert_null(tlbpol_as_lookup(eng, 1));
	tlbpol_engine_free(eng); /* not ours to free: ignored */
	assert_int_equal(tlbpol_engine_rules(eng) != 0, 1);
}

H_TEST_MAIN(
	cmocka_unit_test(test_topology),
	cmocka_unit_test(test_lookup),
	cmocka_unit_test(test_reconfigure),
	cmocka_unit_test(test_freestanding_refuses));
