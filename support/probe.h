/* SPDX-License-Identifier: MIT */
/*
 * probe.h - the host of the safety probes (tests/test_safety*.c): one
 * thread drives every CPU; interrupts are taken at once, or held back and
 * taken on the waiting initiator's relax turns (one CPU may be held for a
 * number of turns: a vCPU its hypervisor descheduled); flushes are counted
 * per CPU, with those that reach global entries and paging-structure caches
 * apart; hooks run once inside a relax or a flush, to make a move at the
 * exact point of a race window.
 *
 * It builds against the header of release 0.1 too (the fallbacks below), so
 * that the probes can be run against that release's library: docs/safety.md
 * shows that run.
 */
#ifndef TLBPOL_TEST_PROBE_H
#define TLBPOL_TEST_PROBE_H

#include <errno.h>

#include "support/harness.h"

/* Names release 0.1 did not have (same values as this header's). */
#ifndef TLBPOL_EVF_STAYS_MAPPED
#define TLBPOL_EVF_STAYS_MAPPED (1U << 7)
#endif
#ifndef TLBPOL_EVF_ATTRS
#define TLBPOL_EVF_ATTRS (1U << 8)
#endif
#ifndef TLBPOL_FLUSHF_GLOBAL
#define TLBPOL_FLUSHF_GLOBAL (1U << 1)
#endif

#define NCPU 8
#define VA 0x7f0000000000ULL

/* What the probes' host saw: flushes per CPU, interrupts held back. */
struct probe {
	struct tlbpol_engine *eng;
	struct tlbpol_as *as1, *as2;
	uint32_t flushes[NCPU];       /* flush_local calls on each CPU */
	uint32_t global_flushes[NCPU]; /* of them: reaching global entries */
	uint32_t table_flushes[NCPU];  /* of them: reaching paging-structure caches */
	struct tlbpol_cpuset pending; /* interrupts sent, not yet taken */
	uint32_t ipi_from[NCPU];      /* who interrupted each CPU last */
	uint32_t first_ipi_turn[NCPU]; /* turn of its first interrupt (0: none) */
	int deliver;                  /* take interrupts at once in send_ipi */
	uint32_t turn;                /* relax calls */
	void (*on_relax)(struct probe *p, uint32_t cpu);
	void (*on_flush)(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f);
	uint32_t hold;                /* a CPU that takes no interrupt (-1: none) */
	uint32_t hold_turns;          /* ... for this many turns */
	struct tlbpol_decision d;     /* the decision of the last submit() */
	int freed;                    /* the deferred free ran */
	uint32_t flushes_at_free[NCPU];
};

static inline void p_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct probe *p = ctx;

	assert_true(cpu < NCPU);
	p->flushes[cpu]++;
	if (f->kind == TLBPOL_FLUSH_ALL || (f->flags & TLBPOL_FLUSHF_GLOBAL))
		p->global_flushes[cpu]++;
	if (f->kind != TLBPOL_FLUSH_PAGES || (f->flags & TLBPOL_FLUSHF_TABLES))
		p->table_flushes[cpu]++;
	if (p->on_flush) {
		void (*fn)(struct probe *, uint32_t, const struct tlbpol_flush *) = p->on_flush;

		p->on_flush = NULL; /* once */
		fn(p, cpu, f);
	}
}

static inline void take(struct probe *p, uint32_t c)
{
	tlbpol_cpuset_clear(&p->pending, c);
	assert_true(tlbpol_handle_ipi(p->eng, c) >= 0);
}

static inline void p_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct probe *p = ctx;

	for (int c = tlbpol_cpuset_next(t, -1); c >= 0; c = tlbpol_cpuset_next(t, c)) {
		p->ipi_from[c] = from;
		if (!p->first_ipi_turn[c])
			p->first_ipi_turn[c] = p->turn + 1;
		tlbpol_cpuset_set(&p->pending, (uint32_t)c);
		if (p->deliver && (uint32_t)c != p->hold)
			take(p, (uint32_t)c);
	}
}

/* A waiting initiator's turn: the probe's move, then the CPUs take their
 * interrupts (but a held one, until its turns are up). */
static inline void p_relax(void *ctx, uint32_t cpu)
{
	struct probe *p = ctx;

	p->turn++;
	if (p->on_relax) {
		void (*fn)(struct probe *, uint32_t) = p->on_relax;

		p->on_relax = NULL;
		fn(p, cpu);
	}
	for (int c = tlbpol_cpuset_next(&p->pending, -1); c >= 0;
	     c = tlbpol_cpuset_next(&p->pending, c)) {
		if ((uint32_t)c == p->hold && p->turn < p->hold_turns)
			continue;
		take(p, (uint32_t)c);
	}
}

static const struct tlbpol_ops probe_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = p_flush_local,
	.send_ipi = p_send_ipi,
	.relax = p_relax,
};

/* A fresh @p (nothing held, interrupts taken at once) and the defaults in
 * @cfg for an engine of NCPU CPUs for @arch with the probe's callbacks. */
static inline void probe_config(struct probe *p, struct tlbpol_config *cfg, uint32_t arch)
{
	memset(p, 0, sizeof(*p));
	p->hold = ~0u;
	p->deliver = 1;
	tlbpol_config_init(cfg, NCPU, arch);
	cfg->ops = &probe_ops;
	cfg->ops_ctx = p;
}

static inline void probe_init(struct probe *p, uint32_t arch, uint64_t rules, uint32_t flags,
		       const uint16_t *nodes)
{
	struct tlbpol_config cfg;

	probe_config(p, &cfg, arch);
	cfg.rules = rules;
	cfg.flags = flags;
	cfg.cpu_node = nodes;
	assert_int_equal(tlbpol_engine_new(&cfg, &p->eng), 0);
	assert_int_equal(tlbpol_as_open(p->eng, 0x11, &p->as1), 0);
	assert_int_equal(tlbpol_as_open(p->eng, 0x22, &p->as2), 0);
}

static inline void probe_fini(struct probe *p)
{
	for (uint32_t c = 0; c < NCPU; c++)
		while (tlbpol_cpuset_test(&p->pending, c))
			take(p, c);
	tlbpol_engine_free(p->eng);
}

static inline void sw(struct probe *p, uint32_t cpu, struct tlbpol_as *as)
{
	assert_int_equal(tlbpol_switch(p->eng, cpu, as, NULL), 0);
}

/* The stage most probes start from: x86-64, the default rules, @flags;
 * CPU0 runs AS1 (the initiator's) and CPU1 runs AS@cpu1_as (1 or 2). */
static inline void probe_x86(struct probe *p, uint32_t flags, int cpu1_as)
{
	probe_init(p, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT, flags, NULL);
	sw(p, 0, p->as1);
	sw(p, 1, cpu1_as == 2 ? p->as2 : p->as1);
}

static inline void clear_counts(struct probe *p)
{
	memset(p->flushes, 0, sizeof(p->flushes));
	memset(p->global_flushes, 0, sizeof(p->global_flushes));
	memset(p->table_flushes, 0, sizeof(p->table_flushes));
	memset(p->first_ipi_turn, 0, sizeof(p->first_ipi_turn));
	p->turn = 0;
}

/* CPU @cpu submits a change of one page at VA through @as: p->d. */
static inline void submit(struct probe *p, struct tlbpol_as *as, uint32_t cpu, uint32_t kind,
			  uint32_t flags, uint32_t old_pte, uint32_t new_pte)
{
	struct tlbpol_event ev = h_event(kind, flags, VA, 1, old_pte, new_pte);

	assert_int_equal(tlbpol_submit(p->eng, as, cpu, &ev, &p->d), 0);
}

static inline void on_free(void *arg)
{
	struct probe *p = arg;

	p->freed = 1;
	memcpy(p->flushes_at_free, p->table_flushes, sizeof(p->flushes_at_free));
}

#define KPAGE (P | W | A | D | G) /* a kernel page: global, not USER */

/* CPU0 write-protects the kernel page through AS1. */
static inline void protect_kpage(struct probe *p)
{
	submit(p, p->as1, 0, TLBPOL_EV_PROTECT, 0, KPAGE, KPAGE & ~W);
}

/* CPU0 frees page tables under AS1 and defers the table page's free to
 * on_free(), which records what each CPU had flushed when it ran. */
static inline void free_tables(struct probe *p)
{
	submit(p, p->as1, 0, TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0, 0);
	assert_int_equal(tlbpol_defer_free(p->eng, 0, on_free, p), 0);
}

/* CPU0 completes what waits for the free: the free must have run. */
static inline void flush_for_free(struct probe *p)
{
	assert_true(tlbpol_flush(p->eng, 0, TLBPOL_BY_FREE) >= 0);
	assert_true(p->freed);
}

#endif
