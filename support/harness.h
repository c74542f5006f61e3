/* SPDX-License-Identifier: MIT */
/*
 * harness.h - single-threaded test callbacks: every flush and interrupt is
 * recorded, and send_ipi delivers at once by calling tlbpol_handle_ipi() for
 * each target (legal: the engine serves its own inbox while it waits, and the
 * target's handler only reads the initiator's published request).
 */
#ifndef TLBPOL_TEST_HARNESS_H
#define TLBPOL_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <tlbpol/tlbpol.h>

#define H_MAX_CPUS 16
#define H_MAX_LOG 256

struct h_flush {
	uint32_t cpu, kind, flags, nr_ranges;
	uint64_t as_tag, pages;
	struct tlbpol_range first;
};

struct harness {
	struct tlbpol_engine *eng;
	uint32_t nr_cpus;
	int deliver; /* 1: send_ipi calls tlbpol_handle_ipi for each target */
	uint32_t flushes_on[H_MAX_CPUS];
	uint32_t nr_log;
	struct h_flush log[H_MAX_LOG];
	uint32_t ipi_calls, ipi_targets;
	struct tlbpol_cpuset last_targets;
};

static inline void h_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct harness *h = (struct harness *)ctx;
	struct h_flush *l;

	assert_true(cpu < h->nr_cpus);
	h->flushes_on[cpu]++;
	if (h->nr_log == H_MAX_LOG)
		return;
	l = &h->log[h->nr_log++];
	memset(l, 0, sizeof(*l));
	l->cpu = cpu;
	l->kind = f->kind;
	l->flags = f->flags;
	l->nr_ranges = f->nr_ranges;
	l->as_tag = f->as_tag;
	for (uint32_t i = 0; i < f->nr_ranges; i++)
		l->pages += f->ranges[i].nr_pages;
	if (f->nr_ranges)
		l->first = f->ranges[0];
}

static inline void h_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct harness *h = (struct harness *)ctx;

	assert_false(tlbpol_cpuset_test(t, from));
	h->ipi_calls++;
	h->ipi_targets += (uint32_t)tlbpol_cpuset_count(t);
	h->last_targets = *t;
	if (!h->deliver)
		return;
	for (int c = tlbpol_cpuset_next(t, -1); c >= 0; c = tlbpol_cpuset_next(t, c))
		assert_true(tlbpol_handle_ipi(h->eng, (uint32_t)c) >= 1);
}

/* The harness's host, with a test's own further hooks:
 * `static const struct tlbpol_ops ops = H_OPS_AND(.broadcast = bcast);`
 * (a hook given here must not be one of these two: -Woverride-init). */
#define H_OPS_AND(...)                                                          \
	{                                                                       \
		.size = sizeof(struct tlbpol_ops), .flush_local = h_flush_local, \
		.send_ipi = h_send_ipi, __VA_ARGS__                              \
	}

static const struct tlbpol_ops h_ops = H_OPS_AND();

/* A fresh @h (interrupts not delivered) and the defaults in @cfg for an
 * engine of @nr_cpus CPUs for @arch with the harness's callbacks. */
static inline void h_config(struct harness *h, struct tlbpol_config *cfg, uint32_t nr_cpus,
			    uint32_t arch)
{
	memset(h, 0, sizeof(*h));
	h->nr_cpus = nr_cpus;
	tlbpol_config_init(cfg, nr_cpus, arch);
	cfg->ops = &h_ops;
	cfg->ops_ctx = h;
}

/* An engine of @nr_cpus CPUs for @arch with @rules and @ops (whose context
 * is @h), owned by @h, interrupts delivered. */
static inline struct tlbpol_engine *h_engine_ops(struct harness *h, uint32_t nr_cpus,
						 uint32_t arch, uint64_t rules,
						 const struct tlbpol_ops *ops)
{
	struct tlbpol_config cfg;

	h_config(h, &cfg, nr_cpus, arch);
	h->deliver = 1;
	cfg.rules = rules;
	cfg.ops = ops;
	assert_int_equal(tlbpol_engine_new(&cfg, &h->eng), 0);
	return h->eng;
}

/* The same with the harness's own callbacks. */
static inline struct tlbpol_engine *h_engine(struct harness *h, uint32_t nr_cpus, uint32_t arch,
					     uint64_t rules)
{
	return h_engine_ops(h, nr_cpus, arch, rules, &h_ops);
}

/* @h's engine from @cfg (h_config()'s, adjusted), interrupts delivered. */
static inline struct tlbpol_engine *h_engine_cfg(struct harness *h,
						 const struct tlbpol_config *cfg)
{
	h->deliver = 1;
	assert_int_equal(tlbpol_engine_new(cfg, &h->eng), 0);
	return h->eng;
}

/* Address space @tag opened on @h's engine, run by CPUs 0 .. @nr_cpus - 1. */
static inline struct tlbpol_as *h_as_run(struct harness *h, uint64_t tag, uint32_t nr_cpus)
{
	struct tlbpol_as *as;

	assert_int_equal(tlbpol_as_open(h->eng, tag, &as), 0);
	for (uint32_t c = 0; c < nr_cpus; c++)
		assert_int_equal(tlbpol_switch(h->eng, c, as, NULL), 0);
	return as;
}

/* CPU @cpu's timer tick (tlbpol_tick()), which must succeed.  A macro, so
 * that a failure names the test's line. */
#define h_tick(h, cpu) assert_int_equal(tlbpol_tick((h)->eng, (cpu)), 0)
/* @n of them. */
#define h_ticks(h, cpu, n)                                                      \
	do {                                                                    \
		for (uint32_t h_tick_i = 0; h_tick_i < (uint32_t)(n); h_tick_i++) \
			h_tick(h, cpu);                                         \
	} while (0)

/* A deferred free that counts its runs in the int at @arg. */
static inline void h_count_free(void *arg)
{
	(*(int *)arg)++;
}

static inline void h_reset_log(struct harness *h)
{
	memset(h->flushes_on, 0, sizeof(h->flushes_on));
	h->nr_log = 0;
	h->ipi_calls = h->ipi_targets = 0;
}

/* PTE shorthands */
#define P TLBPOL_PTE_PRESENT
#define W TLBPOL_PTE_WRITE
#define X TLBPOL_PTE_EXEC
#define U TLBPOL_PTE_USER
#define A TLBPOL_PTE_ACCESSED
#define D TLBPOL_PTE_DIRTY
#define G TLBPOL_PTE_GLOBAL

static inline struct tlbpol_event h_event(uint32_t kind, uint32_t flags, uint64_t va,
					  uint64_t nr_pages, uint32_t old_pte, uint32_t new_pte)
{
	struct tlbpol_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.kind = kind;
	ev.flags = flags;
	ev.page_shift = 12;
	ev.va = va;
	ev.nr_pages = nr_pages;
	ev.old_pte = old_pte;
	ev.new_pte = new_pte;
	return ev;
}

/*
 * The main() of a unit test: run @... (cmocka_unit_test() entries) as one
 * group.  It ends in a declaration so that the use can end in a semicolon,
 * as a statement-like macro does, without an empty declaration at file scope.
 */
#define H_TEST_MAIN(...)                                                  \
	int main(void)                                                    \
	{                                                                 \
		const struct CMUnitTest tests[] = { __VA_ARGS__ };        \
		return cmocka_run_group_tests(tests, NULL, NULL);         \
	}                                                                 \
	extern int main(void)

#endif
