/* SPDX-License-Identifier: MIT */
/*
 * test_layout: the per-CPU arrays are sized by what one request can use,
 * not by the batch, and a batch that needs more is still flushed whole.
 *  - a batch over more address spaces than a request carries
 *    (TLBPOL__PARTS_MAX, 8) goes out as several requests, every page of it
 *    flushed on the target before its deferred free runs; lazily too, where
 *    the requests outnumber the lazy slots and the ones in flight are
 *    completed to free one;
 *  - a batch whose page parts need more ranges than a request holds
 *    (two address spaces at the ceiling, at least 64) sends the rest as
 *    whole-AS flushes, never fewer flushes than needed;
 *  - the engine at default settings stays below its per-CPU bound, with
 *    a tag allocator as Linux x86's beside it (6 PCID slots a CPU, 64
 *    global tags for INVLPGB).
 */
#include <errno.h>
#include <stdio.h>

#include "support/harness.h"

static int freed;

/* Two CPUs, both running the first of @n address spaces; FOOTPRINT off, so
 * each part of a request targets every CPU. */
static void engine_n_as(struct harness *h, struct tlbpol_as **as, uint32_t n)
{
	struct tlbpol_config cfg;

	h_config(h, &cfg, 2, TLBPOL_ARCH_X86_64);
	h->deliver = 1;
	cfg.rules = TLBPOL_RULES_DEFAULT & ~(TLBPOL_RULE_BROADCAST | TLBPOL_RULE_FOOTPRINT);
	assert_int_equal(tlbpol_engine_new(&cfg, &h->eng), 0);
	for (uint32_t a = 0; a < n; a++)
		assert_int_equal(tlbpol_as_open(h->eng, a + 1, &as[a]), 0);
	assert_int_equal(tlbpol_switch(h->eng, 0, as[0], NULL), 0);
	assert_int_equal(tlbpol_switch(h->eng, 1, as[0], NULL), 0);
}

/* More address spaces than a request carries (TLBPOL__PARTS_MAX, 8):
 * ceil(40 / 8) = 5 requests; lazily (TLBPOL__LAZY_PARTS_MAX, 1) 40, more
 * than the lazy slots (7), so that the ones in flight are completed to
 * free a slot (every seventh post, one interrupt each time). */
#define MANY_AS 40
#define MANY_REQS ((MANY_AS + TLBPOL__PARTS_MAX - 1) / TLBPOL__PARTS_MAX)
#define LAZY_SLOTS (TLBPOL__REQS_PER_CPU - 1)
#define LAZY_REQS ((MANY_AS + TLBPOL__LAZY_PARTS_MAX - 1) / TLBPOL__LAZY_PARTS_MAX)
#define LAZY_FORCED ((LAZY_REQS - 1) / LAZY_SLOTS)
_Static_assert(LAZY_REQS > LAZY_SLOTS, "more lazy requests than lazy slots");

/* engine_n_as() of MANY_AS, and CPU 0 changes one page at @va in each:
 * due @deadline. */
static void one_page_each(struct harness *h, struct tlbpol_as **as, uint32_t kind, uint32_t flags,
			  uint64_t va, uint32_t deadline)
{
	engine_n_as(h, as, MANY_AS);
	for (uint32_t a = 0; a < MANY_AS; a++) {
		struct tlbpol_decision d;
		struct tlbpol_event ev = h_event(kind, flags, va, 1, P | W | U | A, 0);

		assert_int_equal(tlbpol_submit(h->eng, as[a], 0, &ev, &d), 0);
		assert_int_equal(d.deadline, deadline);
	}
}

/* MANY_AS address spaces; FOOTPRINT off, so each part targets every CPU:
 * CPU 0 reclaims one page in each, CPU 1 must flush them all. */
static void test_many_as_batch(void **state)
{
	struct harness h;
	struct tlbpol_as *as[MANY_AS];

	(void)state;
	one_page_each(&h, as, TLBPOL_EV_RECLAIM, 0, 0x10000, TLBPOL_BY_FREE);
	freed = 0;
	assert_int_equal(tlbpol_defer_free(h.eng, 0, h_count_free, &freed), 0);
	h_reset_log(&h);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), MANY_AS);
	/* 5 requests, and CPU 1 flushed every AS's page. */
	assert_int_equal(h.ipi_calls, MANY_REQS);
	assert_int_equal(h.flushes_on[1], MANY_AS);
	assert_int_equal(freed, 1);
	tlbpol_engine_free(h.eng);
}

/* The same lazily: all 40 leave the batch at the tick, and complete.  The
 * fourth request finds the three lazy slots busy: those in flight are
 * completed first (one interrupt, CPU 1 serves all three), never dropped;
 * and so on. */
static void test_many_as_lazy(void **state)
{
	struct harness h;
	struct tlbpol_as *as[MANY_AS];

	(void)state;
	one_page_each(&h, as, TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE, 0x20000,
		      TLBPOL_BY_LAZY);
	h_reset_log(&h);
	h_tick(&h, 0); /* posts all of them, forcing all but the last few */
	assert_int_equal(h.ipi_calls, LAZY_FORCED);
	assert_int_equal(h.flushes_on[1], LAZY_FORCED * LAZY_SLOTS * TLBPOL__LAZY_PARTS_MAX);
	h_tick(&h, 1); /* CPU 1 takes the rest */
	assert_int_equal(h.flushes_on[1], MANY_AS);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	tlbpol_engine_free(h.eng);
}

/* Three address spaces of 30 scattered pages each (each below the ceiling
 * of 33): 90 ranges, a request holds 66; the third part is a whole-AS
 * flush.  (Seen in the initiator's own flushes, which are the request's
 * parts once CPU 0 has switched to each address space and so is current
 * with it: a CPU behind by generation flushes whole anyway, as Linux's
 * flush_tlb_func() does, and so does the target, never in AS 2 and 3.) */
static void test_ranges_past_capacity(void **state)
{
	struct harness h;
	struct tlbpol_as *as[3];
	struct tlbpol_decision d;
	uint32_t pages = 0, whole = 0;

	(void)state;
	engine_n_as(&h, as, 3);
	for (uint32_t a = 3; a-- > 0;) /* a CR3 write: current with each */
		assert_int_equal(tlbpol_switch(h.eng, 0, as[a], NULL), 0);
	for (uint32_t a = 0; a < 3; a++)
		for (uint64_t i = 0; i < 30; i++) {
			struct tlbpol_event ev = h_event(TLBPOL_EV_RECLAIM, 0, 0x100000 + i * 0x2000,
							 1, P | W | U | A, 0);

			assert_int_equal(tlbpol_submit(h.eng, as[a], 0, &ev, &d), 0);
		}
	h_reset_log(&h);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_FREE), 90);
	for (uint32_t i = 0; i < h.nr_log; i++) {
		if (h.log[i].cpu != 0) /* the initiator's own flush: the request's parts */
			continue;
		if (h.log[i].kind == TLBPOL_FLUSH_PAGES)
			pages += (uint32_t)h.log[i].pages;
		else if (h.log[i].kind == TLBPOL_FLUSH_AS)
			whole++;
	}
	assert_int_equal(pages, 60);
	assert_int_equal(whole, 1);
	assert_int_equal(h.ipi_calls, 1);
	assert_int_equal(h.flushes_on[1], 3); /* the target: every AS, whatever the kind */
	tlbpol_engine_free(h.eng);
}

/* The default engine, per CPU, with a tag allocator of per-CPU slots and
 * global tags beside it (the allocator's memory is the host's, but its
 * slots are per-CPU state all the same): at most 16 KiB from 64 to 1024
 * CPUs (135 KiB before request buffers were sized by what a request can
 * use, 47-49 KiB before the per-CPU queues were sized by what a CPU has in
 * flight, 16476 bytes at 1024 CPUs before a lazy request's flushes and
 * ranges shared their cache lines).  At 2 CPUs the address spaces' own
 * state (64 of them, 128 bytes each and their masks) is most of the rest;
 * what the last CPU adds is checked there.  At 4096 the CPU masks grow with
 * the count: printed, bounded loosely. */
static size_t tags_bytes(uint32_t cpus)
{
	struct tlbpol_tags_config tc = {
		.size = sizeof(tc),
		.kind = TLBPOL_TAGS_PERCPU,
		.nr_cpus = cpus,
		.tag_bits = 12, /* x86 PCIDs */
		.first_tag = 1,
		.nr_slots = 6,  /* Linux's TLB_NR_DYN_ASIDS */
		.nr_global = 64,
	};
	size_t sz = tlbpol_tags_size(&tc);

	assert_true(sz > 0);
	return sz;
}

static void test_size_per_cpu(void **state)
{
	static const uint32_t cpus[] = { 2, 64, 1024, 4096 };
	struct harness h;

	(void)state;
	for (size_t i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
		struct tlbpol_config cfg;
		size_t sz, more, tags;

		h_config(&h, &cfg, cpus[i] - 1, TLBPOL_ARCH_X86_64);
		more = tlbpol_engine_size(&cfg);
		h_config(&h, &cfg, cpus[i], TLBPOL_ARCH_X86_64);
		sz = tlbpol_engine_size(&cfg);
		more = sz - more; /* n - 1 and n CPUs: as many mask words */
		tags = tags_bytes(cpus[i]);
		/* The first line's form is what lab/results/parse.py reads. */
		printf("# %u CPUs: %zu bytes, %.1f KiB per CPU\n", cpus[i], sz,
		       (double)sz / 1024.0 / cpus[i]);
		printf("#   %zu bytes per CPU, %zu for the last one\n", sz / cpus[i], more);
		sz += tags;
		more += tags - tags_bytes(cpus[i] - 1);
		printf("#   with the tag allocator: %zu bytes per CPU, %zu for the last one\n",
		       sz / cpus[i], more);
		if (cpus[i] <= 1024)
			assert_true(more <= 16 * 1024);
		if (cpus[i] >= 64 && cpus[i] <= 1024)
			assert_true(sz / cpus[i] <= 16 * 1024);
		else
			assert_true(sz / cpus[i] <= 20 * 1024);
	}
}

/* TLBPOL_ENGINE_SIZE() equals tlbpol_engine_size() over a grid, with and
 * without a topology, and sizes a static buffer that tlbpol_engine_init()
 * accepts. */
static void test_size_macro(void **state)
{
	static const uint32_t cpus[] = { 1, 2, 3, 63, 64, 65, 128, 1000, 4096 };
	static const uint32_t ases[] = { 1, 2, 15, 16, 17, 64, 100 };
	static const uint32_t batches[] = { 1, 8, 16, 31, 100, 512, 4096 };
	static const uint32_t ceilings[] = { 1, 33, 40, 500 };
	static uint16_t node[4096];
	static _Alignas(64) unsigned char mem[TLBPOL_ENGINE_SIZE(4, TLBPOL_DEFAULT_MAX_AS,
								  TLBPOL_DEFAULT_BATCH_PAGES,
								  TLBPOL_DEFAULT_FLUSH_CEILING, 0)];
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	unsigned long checked = 0;

	(void)state;
	for (size_t a = 0; a < sizeof(cpus) / sizeof(cpus[0]); a++)
		for (size_t b = 0; b < sizeof(ases) / sizeof(ases[0]); b++)
			for (size_t c = 0; c < sizeof(batches) / sizeof(batches[0]); c++)
				for (size_t d = 0; d < sizeof(ceilings) / sizeof(ceilings[0]); d++)
					for (uint32_t nodes = 0; nodes <= 3; nodes += 3) {
						h_config(&h, &cfg, cpus[a], TLBPOL_ARCH_X86_64);
						cfg.max_as = ases[b];
						cfg.batch_pages = batches[c];
						cfg.flush_ceiling = ceilings[d];
						for (uint32_t i = 0; i < cpus[a]; i++)
							node[i] = (uint16_t)(nodes ? i % nodes : 0);
						cfg.cpu_node = nodes ? node : NULL;
						/* The largest node + 1 (fewer CPUs than nodes: fewer). */
						assert_int_equal(
							tlbpol_engine_size(&cfg),
							TLBPOL_ENGINE_SIZE(cpus[a], ases[b], batches[c], ceilings[d],
									   nodes ? (cpus[a] < nodes ? cpus[a] : nodes) : 0));
						checked++;
					}
	printf("# TLBPOL_ENGINE_SIZE == tlbpol_engine_size() for %lu configurations\n", checked);
	h_config(&h, &cfg, 4, TLBPOL_ARCH_X86_64);
	assert_int_equal(sizeof(mem), tlbpol_engine_size(&cfg));
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
}

H_TEST_MAIN(
	cmocka_unit_test(test_many_as_batch),
	cmocka_unit_test(test_many_as_lazy),
	cmocka_unit_test(test_ranges_past_capacity),
	cmocka_unit_test(test_size_per_cpu),
	cmocka_unit_test(test_size_macro));
