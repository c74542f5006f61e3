/* SPDX-License-Identifier: MIT */
/*
 * test_tags: the tag allocators on one thread.  Per-CPU slots: a hit
 * needs no flush, a miss takes the next slot round-robin and flushes it,
 * CPUs' slots are their own, an evicted identity has no tag there any
 * more.  Global generations: the first load of each CPU flushes all, a
 * load of the current generation is free, running out of tags rolls over
 * (each CPU's next load flushes all), and what a CPU runs at a rollover
 * keeps its number.  Each configuration error, and the counters' sizes.
 */
#include <errno.h>

#include "support/harness.h"

static _Alignas(64) unsigned char mem[1 << 16];

static struct tlbpol_tags_config tcfg(uint32_t kind, uint32_t cpus, uint32_t bits, uint32_t first,
				      uint32_t slots)
{
	struct tlbpol_tags_config c = { sizeof(c), kind, cpus, bits, first, slots, 0, 0 };

	return c;
}

static struct tlbpol_tags *make(struct tlbpol_tags_config c)
{
	struct tlbpol_tags *t = NULL;

	assert_true(tlbpol_tags_size(&c) > 0 && tlbpol_tags_size(&c) <= sizeof(mem));
	assert_int_equal(tlbpol_tags_init(&t, mem, sizeof(mem), &c), 0);
	return t;
}

static struct tlbpol_tag_use load(struct tlbpol_tags *t, uint32_t cpu, struct tlbpol_tag_id *id)
{
	struct tlbpol_tag_use u = { 0xdead, 0xdead };

	assert_int_equal(tlbpol_tag_load(t, cpu, id, &u), 0);
	return u;
}

static void test_config_errors(void **state)
{
	struct tlbpol_tags *t = NULL;
	struct {
		struct tlbpol_tags_config c;
		uint32_t future;
	} big;
	struct {
		struct tlbpol_tags_config c;
		int err;
	} bad[] = {
		{ tcfg(2, 2, 12, 1, 6), -EINVAL },                       /* kind */
		{ tcfg(TLBPOL_TAGS_PERCPU, 0, 12, 1, 6), -EINVAL },      /* no CPU */
		{ tcfg(TLBPOL_TAGS_PERCPU, 2, 0, 1, 6), -EINVAL },       /* no bit */
		{ tcfg(TLBPOL_TAGS_GLOBAL, 2, 8, 1, 6), -EINVAL },       /* slots in a pool */
		{ tcfg(TLBPOL_TAGS_PERCPU, TLBPOL_MAX_CPUS + 1, 12, 1, 6), -ERANGE },
		{ tcfg(TLBPOL_TAGS_PERCPU, 2, TLBPOL_TAG_BITS_MAX + 1, 1, 6), -ERANGE },
		{ tcfg(TLBPOL_TAGS_PERCPU, 2, 12, 1, 0), -ERANGE },      /* no slot */
		{ tcfg(TLBPOL_TAGS_PERCPU, 2, 12, 1, TLBPOL_TAG_SLOTS_MAX + 1), -ERANGE },
		{ tcfg(TLBPOL_TAGS_PERCPU, 2, 3, 1, 8), -ERANGE },       /* 1..8 > 7 */
		{ tcfg(TLBPOL_TAGS_PERCPU, 2, 3, 8, 1), -ERANGE },       /* first past width */
		{ tcfg(TLBPOL_TAGS_GLOBAL, 4, 3, 4, 0), -ERANGE },       /* 4 tags, 4 CPUs */
	};
	struct tlbpol_tags_config ok = tcfg(TLBPOL_TAGS_GLOBAL, 4, 3, 3, 0); /* 5 tags > 4 */

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tlbpol_tags_size(&bad[i].c), 0);
		if (tlbpol_tags_init(&t, mem, sizeof(mem), &bad[i].c) != bad[i].err)
			fail_msg("case %zu", i);
		assert_null(t);
	}
	assert_int_equal(tlbpol_tags_size(NULL), 0);
	assert_int_equal(tlbpol_tags_init(NULL, mem, sizeof(mem), &ok), -EINVAL);
	assert_int_equal(tlbpol_tags_init(&t, NULL, sizeof(mem), &ok), -EINVAL);
	assert_int_equal(tlbpol_tags_init(&t, mem + 8, sizeof(mem) - 8, &ok), -EINVAL);
	assert_int_equal(tlbpol_tags_init(&t, mem, tlbpol_tags_size(&ok) - 1, &ok), -ENOMEM);
	ok.size = sizeof(ok) - 4;
	assert_int_equal(tlbpol_tags_init(&t, mem, sizeof(mem), &ok), -EINVAL);
	big.c = tcfg(TLBPOL_TAGS_GLOBAL, 4, 3, 3, 0);
	big.c.size = sizeof(big);
	big.future = 1;
	assert_int_equal(tlbpol_tags_init(&t, mem, sizeof(mem), &big.c), -E2BIG);
	assert_null(t);
	big.future = 0;
	assert_int_equal(tlbpol_tags_init(&t, mem, sizeof(mem), &big.c), 0);
	assert_non_null(t);
}

/* Linux x86's six PCIDs 1..6 per CPU: hits, round-robin misses. */
static void test_percpu(void **state)
{
	struct tlbpol_tags *t = make(tcfg(TLBPOL_TAGS_PERCPU, 2, 12, 1, 6));
	struct tlbpol_tag_id id[8], raw = { 0 };
	struct tlbpol_tag_use u;

	(void)state;
	for (int i = 0; i < 8; i++) {
		assert_int_equal(tlbpol_tag_id_init(t, &id[i]), 0);
		assert_int_equal(tlbpol_tag_of(t, 0, &id[i]), -ENOENT);
	}
	assert_true(id[0].word != id[1].word);
	/* Six misses fill the six slots, each flushed. */
	for (int i = 0; i < 6; i++) {
		u = load(t, 0, &id[i]);
		assert_int_equal(u.tag, 1 + i);
		assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	}
	/* Hits, in any order, flush nothing. */
	for (int i = 5; i >= 0; i--) {
		u = load(t, 0, &id[i]);
		assert_int_equal(u.tag, 1 + i);
		assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
		assert_int_equal(tlbpol_tag_of(t, 0, &id[i]), 1 + i);
	}
	/* The seventh takes slot 1 (PCID 1) from id[0], flushed. */
	u = load(t, 0, &id[6]);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	assert_int_equal(tlbpol_tag_of(t, 0, &id[0]), -ENOENT);
	u = load(t, 0, &id[0]);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	/* CPU 1's slots are its own. */
	assert_int_equal(tlbpol_tag_of(t, 1, &id[0]), -ENOENT);
	u = load(t, 1, &id[5]);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	assert_int_equal(tlbpol_tag_of(t, 0, &id[5]), 6);
	/* Refusals. */
	assert_int_equal(tlbpol_tag_load(t, 0, &raw, &u), -EINVAL);
	raw.word = id[7].word + 1; /* never handed out */
	assert_int_equal(tlbpol_tag_load(t, 0, &raw, &u), -EINVAL);
	assert_int_equal(tlbpol_tag_load(t, 2, &id[0], &u), -ERANGE);
	assert_int_equal(tlbpol_tag_load(t, 0, &id[0], NULL), -EINVAL);
	assert_int_equal(tlbpol_tag_load(NULL, 0, &id[0], &u), -EINVAL);
	assert_int_equal(tlbpol_tag_of(t, 2, &id[0]), -ERANGE);
	assert_int_equal(tlbpol_tag_id_init(t, NULL), -EINVAL);
}

/*
 * Global generations, tags 1..7 (3 bits, 0 the host's) on 2 CPUs: the
 * first load of each CPU flushes all; then loads are free until the pool
 * runs out; the eighth identity rolls over.  CPU 1 runs id[1] then, so
 * id[1] keeps tag 2 in the new generation, and nobody else gets it.
 */
static void test_global_rollover(void **state)
{
	struct tlbpol_tags *t = make(tcfg(TLBPOL_TAGS_GLOBAL, 2, 3, 1, 0));
	struct tlbpol_tag_id id[9];
	struct tlbpol_tags_stats st = { sizeof(st), 0, 0, 0, 0, 0 };
	struct tlbpol_tag_use u;

	(void)state;
	for (int i = 0; i < 9; i++)
		assert_int_equal(tlbpol_tag_id_init(t, &id[i]), 0);
	assert_int_equal(tlbpol_tag_of(t, 0, &id[0]), -ENOENT);
	u = load(t, 0, &id[0]);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	u = load(t, 1, &id[1]);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	/* One tag on every CPU. */
	u = load(t, 1, &id[0]);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	assert_int_equal(tlbpol_tag_of(t, 0, &id[0]), 1);
	assert_int_equal(tlbpol_tag_of(t, 1, &id[0]), 1);
	u = load(t, 1, &id[1]);
	for (int i = 2; i < 7; i++) {
		u = load(t, 0, &id[i]);
		assert_int_equal(u.tag, 1 + i);
		assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	}
	assert_int_equal(tlbpol_tags_stats_read(t, -1, &st), 0);
	assert_int_equal(st.rollovers, 0);
	/* The pool is empty: a rollover.  CPU 0 ran id[6] (tag 7), CPU 1
	 * id[1] (tag 2): both stay taken; id[7] gets the first free one. */
	u = load(t, 0, &id[7]);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	assert_int_equal(tlbpol_tags_stats_read(t, -1, &st), 0);
	assert_int_equal(st.rollovers, 1);
	assert_int_equal(st.all_flushes, 3);
	/* id[0] had tag 1 in the old generation: now taken, another one. */
	u = load(t, 0, &id[0]);
	assert_int_equal(u.tag, 3);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	/* id[1], reserved by CPU 1, keeps tag 2; CPU 1 flushes all first. */
	u = load(t, 1, &id[1]);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	/* id[6], reserved by CPU 0, keeps 7 wherever it runs. */
	u = load(t, 1, &id[6]);
	assert_int_equal(u.tag, 7);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	/* The per-CPU counters. */
	assert_int_equal(tlbpol_tags_stats_read(t, 1, &st), 0);
	assert_int_equal(st.loads, 5);
	assert_int_equal(st.all_flushes, 2);
	assert_int_equal(st.rollovers, 0);
}

/*
 * Per-CPU slots beside global tags (x86 PCIDs and INVLPGB's global ASIDs):
 * tags 1..3 are slots, 14 and 15 global.  A global identity is loaded
 * under its global tag on every CPU, its slot given up, each CPU's first
 * global load flushing all; given back, a global tag is handed out again
 * only once every CPU has flushed all since.
 */
static void test_percpu_global(void **state)
{
	struct tlbpol_tags_config c = tcfg(TLBPOL_TAGS_PERCPU, 2, 4, 1, 3);
	struct tlbpol_tags *t;
	struct tlbpol_tag_id a, b, d;
	struct tlbpol_tag_use u;

	(void)state;
	c.nr_global = 13; /* 3 slots + 13 > 15 tags */
	assert_int_equal(tlbpol_tags_size(&c), 0);
	c.nr_global = 2;
	t = make(c);
	assert_int_equal(tlbpol_tag_id_init(t, &a), 0);
	assert_int_equal(tlbpol_tag_id_init(t, &b), 0);
	assert_int_equal(tlbpol_tag_id_init(t, &d), 0);
	u = load(t, 0, &a);
	assert_int_equal(u.tag, 1);
	assert_int_equal(tlbpol_tag_global_of(t, &a), -ENOENT);
	assert_int_equal(tlbpol_tag_make_global(t, &a), 14);
	assert_int_equal(tlbpol_tag_make_global(t, &a), -EEXIST);
	assert_int_equal(tlbpol_tag_global_of(t, &a), 14);
	/* CPU 0 still runs it under its slot until its next load. */
	assert_int_equal(tlbpol_tag_of(t, 0, &a), 1);
	u = load(t, 0, &a);
	assert_int_equal(u.tag, 14);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	assert_int_equal(tlbpol_tag_of(t, 0, &a), 14);
	u = load(t, 0, &a);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	u = load(t, 1, &a);
	assert_int_equal(u.tag, 14);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	/* The slot CPU 0 gave up is taken again with its flush. */
	u = load(t, 0, &b);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	assert_int_equal(tlbpol_tag_make_global(t, &b), 15);
	assert_int_equal(tlbpol_tag_make_global(t, &d), -ENOSPC);
	/* Refused with nothing given back: no flush owed for it. */
	u = load(t, 0, &b);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	/* a goes: 14 is handed out again only after a flush of all. */
	assert_int_equal(tlbpol_tag_release(t, &a), 0);
	assert_int_equal(tlbpol_tag_global_of(t, &a), -ENOENT);
	assert_int_equal(tlbpol_tag_release(t, &a), 0);
	assert_int_equal(tlbpol_tag_make_global(t, &d), 14);
	u = load(t, 1, &d);
	assert_int_equal(u.tag, 14);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	u = load(t, 1, &b);
	assert_int_equal(u.tag, 15);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	u = load(t, 0, &d);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	/* Refusals. */
	assert_int_equal(tlbpol_tag_make_global(NULL, &d), -EINVAL);
	assert_int_equal(tlbpol_tag_make_global(t, NULL), -EINVAL);
	assert_int_equal(tlbpol_tag_release(t, NULL), -EINVAL);
	assert_int_equal(tlbpol_tag_global_of(NULL, &d), -EINVAL);
	t = make(tcfg(TLBPOL_TAGS_PERCPU, 2, 4, 1, 3));
	assert_int_equal(tlbpol_tag_id_init(t, &a), 0);
	assert_int_equal(tlbpol_tag_make_global(t, &a), -EINVAL);
	t = make(tcfg(TLBPOL_TAGS_GLOBAL, 2, 4, 1, 0));
	assert_int_equal(tlbpol_tag_id_init(t, &a), 0);
	assert_int_equal(tlbpol_tag_make_global(t, &a), -EINVAL);
	assert_int_equal(tlbpol_tag_release(t, &a), 0);
	c = tcfg(TLBPOL_TAGS_GLOBAL, 2, 4, 1, 0);
	c.nr_global = 1;
	assert_int_equal(tlbpol_tags_size(&c), 0);
}

/* The counters' structure: written up to the caller's size; refusals. */
static void test_stats_sizes(void **state)
{
	struct tlbpol_tags *t = make(tcfg(TLBPOL_TAGS_PERCPU, 2, 12, 1, 6));
	struct tlbpol_tag_id id;
	struct tlbpol_tags_stats st;
	uint64_t words[8];

	(void)state;
	assert_int_equal(tlbpol_tag_id_init(t, &id), 0);
	load(t, 0, &id);
	load(t, 0, &id);
	memset(words, 0xa5, sizeof(words));
	words[0] = 16; /* size: up to loads */
	assert_int_equal(tlbpol_tags_stats_read(t, -1, (struct tlbpol_tags_stats *)words), 0);
	assert_int_equal(words[1], 2);
	assert_int_equal(words[2], 0xa5a5a5a5a5a5a5a5ULL);
	/* A size inside a field: not written at all. */
	memset(words, 0xa5, sizeof(words));
	words[0] = 12;
	assert_int_equal(tlbpol_tags_stats_read(t, -1, (struct tlbpol_tags_stats *)words), 0);
	assert_int_equal(words[1], 0xa5a5a5a5a5a5a5a5ULL);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	assert_int_equal(tlbpol_tags_stats_read(t, 0, &st), 0);
	assert_int_equal(st.size, sizeof(st));
	assert_int_equal(st.loads, 2);
	assert_int_equal(st.tag_flushes, 1);
	st.size = 4;
	assert_int_equal(tlbpol_tags_stats_read(t, 0, &st), -EINVAL);
	st.size = sizeof(st);
	assert_int_equal(tlbpol_tags_stats_read(t, 2, &st), -ERANGE);
	assert_int_equal(tlbpol_tags_stats_read(t, -2, &st), -ERANGE);
	assert_int_equal(tlbpol_tags_stats_read(NULL, 0, &st), -EINVAL);
	assert_int_equal(tlbpol_tags_stats_read(t, 0, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_percpu),
		cmocka_unit_test(test_global_rollover),
		cmocka_unit_test(test_percpu_global),
		cmocka_unit_test(test_stats_sizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
