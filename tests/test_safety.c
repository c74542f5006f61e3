/* SPDX-License-Identifier: MIT */
/*
 * test_safety: one probe per unsafe path of issue 10, written against the
 * public header as a host would use it, single-threaded and deterministic:
 * every CPU is driven by the test, interrupts are delivered where the probe
 * says (or held back to open the race window the probe is about), and each
 * probe fails if the engine reports a flush complete, or lets a deferred
 * free run, while a CPU may still use what the flush was for.
 *
 * It also builds against the header of release 0.1 (the fallbacks below),
 * so that running it against main at 99fd301 shows which probes failed
 * there: docs/safety.md has that run.
 */
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
	int freed;                    /* the deferred free ran */
	uint32_t flushes_at_free[NCPU];
};

static struct probe *PR;

static void p_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
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

static void take(struct probe *p, uint32_t c)
{
	tlbpol_cpuset_clear(&p->pending, c);
	assert_true(tlbpol_handle_ipi(p->eng, c) >= 0);
}

static void p_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
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
static void p_relax(void *ctx, uint32_t cpu)
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
static void probe_config(struct probe *p, struct tlbpol_config *cfg, uint32_t arch)
{
	memset(p, 0, sizeof(*p));
	p->hold = ~0u;
	p->deliver = 1;
	PR = p;
	tlbpol_config_init(cfg, NCPU, arch);
	cfg->ops = &probe_ops;
	cfg->ops_ctx = p;
}

static void probe_init(struct probe *p, uint32_t arch, uint64_t rules, uint32_t flags,
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

static void probe_fini(struct probe *p)
{
	for (uint32_t c = 0; c < NCPU; c++)
		while (tlbpol_cpuset_test(&p->pending, c))
			take(p, c);
	tlbpol_engine_free(p->eng);
	PR = NULL;
}

static void sw(struct probe *p, uint32_t cpu, struct tlbpol_as *as)
{
	assert_int_equal(tlbpol_switch(p->eng, cpu, as, NULL), 0);
}

/* The stage most probes start from: x86-64, the default rules, @flags;
 * CPU0 runs AS1 (the initiator's) and CPU1 runs AS@cpu1_as (1 or 2). */
static void probe_x86(struct probe *p, uint32_t flags, int cpu1_as)
{
	probe_init(p, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT, flags, NULL);
	sw(p, 0, p->as1);
	sw(p, 1, cpu1_as == 2 ? p->as2 : p->as1);
}

static void clear_counts(struct probe *p)
{
	memset(p->flushes, 0, sizeof(p->flushes));
	memset(p->global_flushes, 0, sizeof(p->global_flushes));
	memset(p->table_flushes, 0, sizeof(p->table_flushes));
	memset(p->first_ipi_turn, 0, sizeof(p->first_ipi_turn));
	p->turn = 0;
}

static void submit(struct probe *p, struct tlbpol_as *as, uint32_t cpu, uint32_t kind,
		   uint32_t flags, uint32_t old_pte, uint32_t new_pte, struct tlbpol_decision *d)
{
	struct tlbpol_event ev = h_event(kind, flags, VA, 1, old_pte, new_pte);

	assert_int_equal(tlbpol_submit(p->eng, as, cpu, &ev, d), 0);
}

static void on_free(void *arg)
{
	struct probe *p = arg;

	p->freed = 1;
	memcpy(p->flushes_at_free, p->table_flushes, sizeof(p->flushes_at_free));
}

#define KPAGE (P | W | A | D | G) /* a kernel page: global, not USER */

/* CPU0 write-protects the kernel page through AS1. */
static void protect_kpage(struct probe *p, struct tlbpol_decision *d)
{
	submit(p, p->as1, 0, TLBPOL_EV_PROTECT, 0, KPAGE, KPAGE & ~W, d);
}

/* CPU0 frees page tables under AS1 and defers the table page's free to
 * on_free(), which records what each CPU had flushed when it ran. */
static void free_tables(struct probe *p, struct tlbpol_decision *d)
{
	submit(p, p->as1, 0, TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0, 0, d);
	assert_int_equal(tlbpol_defer_free(p->eng, 0, on_free, p), 0);
}

/* CPU0 completes what waits for the free: the free must have run. */
static void flush_for_free(struct probe *p)
{
	assert_true(tlbpol_flush(p->eng, 0, TLBPOL_BY_FREE) >= 0);
	assert_true(p->freed);
}

/* ------------------------------------------------------------------------ */
/* 1. Global PTEs                                                           */
/* ------------------------------------------------------------------------ */

/* CPU0 write-protects a global PTE while CPU1 is lazy and CPU2 idle: both
 * run kernel code through the global entry, and their catch-up (kind AS, a
 * CR3 write) would keep it.  Every CPU must flush it before submit returns. */
static void test_global_lazy_idle(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_init(&p, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT, 0, NULL);
	for (uint32_t c = 0; c < NCPU; c++)
		sw(&p, c, p.as1);
	sw(&p, 1, NULL);                                          /* lazy */
	assert_int_equal(tlbpol_cpu_state(p.eng, 2, TLBPOL_CPU_IDLE), 0); /* idle */
	clear_counts(&p);
	protect_kpage(&p, &d);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(d.deadline, TLBPOL_BY_NOW);
	for (uint32_t c = 0; c < NCPU; c++)
		if (!p.flushes[c])
			fail_msg("cpu %u (%s) did not flush the global page", c,
				 c == 1 ? "lazy" : c == 2 ? "idle" : "running");
	for (uint32_t c = 0; c < NCPU; c++)
		if (!p.global_flushes[c])
			fail_msg("cpu %u flushed the global page as a non-global one", c);
	probe_fini(&p);
}

/* CPU1 switches AS2 -> AS1 after the request was sent and before it takes
 * the interrupt: the switch (no retention) counts it caught up on AS1,
 * which says nothing of global entries. */
static void switch_cpu1_to_as1(struct probe *p, uint32_t cpu)
{
	(void)cpu;
	sw(p, 1, p->as1);
}

static void test_global_switch_before_serve(void **state)
{
	for (uint32_t retain = 0; retain < 2; retain++) {
		struct probe p;
		struct tlbpol_decision d;

		(void)state;
		probe_x86(&p, retain ? TLBPOL_CFGF_RETAIN_AS : 0, 1);
		sw(&p, 1, p.as2);
		p.deliver = 0;
		p.on_relax = switch_cpu1_to_as1;
		clear_counts(&p);
		protect_kpage(&p, &d);
		if (!p.global_flushes[1])
			fail_msg("retain %u: cpu 1 never flushed the global page", retain);
		probe_fini(&p);
	}
}

/* The same switch on the initiator's side: after the generation was taken,
 * before the skip test (arm() flushes the initiator first). */
static void switch_cpu1_in_flush(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)cpu;
	(void)f;
	sw(p, 1, p->as1);
}

static void test_global_switch_before_skip(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 2);
	p.on_flush = switch_cpu1_in_flush;
	clear_counts(&p);
	protect_kpage(&p, &d);
	if (!p.global_flushes[1])
		fail_msg("cpu 1 never flushed the global page");
	probe_fini(&p);
}

/* Q1: every flush of a global page says so (INVPCID type 0 would miss it). */
static void test_global_flag(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, TLBPOL_CFGF_RETAIN_AS, 2);
	clear_counts(&p);
	protect_kpage(&p, &d);
	assert_int_equal(p.global_flushes[0], p.flushes[0]);
	assert_int_equal(p.global_flushes[1], p.flushes[1]);
	assert_true(p.flushes[1] >= 1);
	probe_fini(&p);
}

/* Q3: a global VA unmapped through AS1 (pending) and installed again
 * through AS2 must not be mapped while CPU2 may still hold the old entry. */
static void test_global_reuse_other_as(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 2);
	sw(&p, 2, p.as2);
	submit(&p, p.as1, 0, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE, KPAGE & ~D, 0, &d);
	assert_int_equal(d.deadline, TLBPOL_BY_FREE); /* pending on CPU0 */
	clear_counts(&p);
	submit(&p, p.as2, 1, TLBPOL_EV_FAULT, 0, 0, KPAGE, &d); /* the install */
	if (!p.global_flushes[2])
		fail_msg("the install completed no flush of CPU0's pending global unmap on cpu 2");
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* 2, 3, 6, 7, 8: decisions that were deferred past what depends on them   */
/* ------------------------------------------------------------------------ */

/* 2: a clean migration completes before the copy (tlbpol_flush(BY_WRITEBACK)),
 * so that its restore may be stored first. */
static void test_migrate_clean_before_copy(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 1);
	submit(&p, p.as1, 0, TLBPOL_EV_MIGRATE, 0, P | U | A, 0, &d);
	clear_counts(&p);
	assert_true(tlbpol_flush(p.eng, 0, TLBPOL_BY_WRITEBACK) >= 0);
	if (!p.flushes[1])
		fail_msg("tlbpol_flush(BY_WRITEBACK) left cpu 1's entry for the copy (%s/%s)",
			 tlbpol_action_str(d.action), tlbpol_deadline_str(d.deadline));
	probe_fini(&p);
}

/* 3: MADV_DONTNEED, however flagged, is complete when the call returns. */
static void test_dontneed_now(void **state)
{
	static const uint32_t flags[] = { TLBPOL_EVF_PRIVATE | TLBPOL_EVF_LAZY_OK,
					  TLBPOL_EVF_PRIVATE, 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct probe p;
		struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, flags[i] | TLBPOL_EVF_STAYS_MAPPED,
						 VA, 16, P | W | U | A | D, 0);
		struct tlbpol_decision d;

		probe_x86(&p, 0, 1);
		clear_counts(&p);
		assert_int_equal(tlbpol_submit(p.eng, p.as1, 0, &ev, &d), 0);
		assert_int_equal(d.deadline, TLBPOL_BY_NOW);
		assert_true(p.flushes[0] >= 1 && p.flushes[1] >= 1);
		probe_fini(&p);
	}
}

/* 6: a dirty shared unmap is complete when the call returns: the flusher
 * that writes the page back runs on another CPU, whose tlbpol_flush()
 * cannot complete CPU0's work. */
static void test_unmap_dirty_now(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 1);
	sw(&p, 2, p.as1);
	clear_counts(&p);
	submit(&p, p.as1, 0, TLBPOL_EV_UNMAP, 0, P | W | U | A | D, 0, &d);
	assert_true(tlbpol_flush(p.eng, 2, TLBPOL_BY_WRITEBACK) >= 0); /* the flusher */
	if (!p.flushes[1])
		fail_msg("writeback on cpu 2 while cpu 1 may still write (%s/%s)",
			 tlbpol_action_str(d.action), tlbpol_deadline_str(d.deadline));
	probe_fini(&p);
}

/* 7: a huge-page split keeps the bits: only EVF_ATTRS says it happened. */
static void test_attrs_split(void **state)
{
	struct probe p;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, TLBPOL_EVF_ATTRS, 0x40000000ULL, 1,
					 P | W | U | A | D, P | W | U | A | D);
	struct tlbpol_decision d;

	(void)state;
	ev.page_shift = 21;
	probe_x86(&p, 0, 1);
	clear_counts(&p);
	assert_int_equal(tlbpol_submit(p.eng, p.as1, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(d.deadline, TLBPOL_BY_NOW);
	assert_true(p.flushes[1] >= 1);
	probe_fini(&p);
}

/* 8: GENERIC may cache invalid entries: a kernel install reaches every CPU
 * (under any tag), a user one the installing CPU. */
static void test_generic_install(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_init(&p, TLBPOL_ARCH_GENERIC, TLBPOL_RULES_DEFAULT, 0, NULL);
	sw(&p, 0, p.as1);
	sw(&p, 1, p.as2);
	clear_counts(&p);
	submit(&p, p.as1, 0, TLBPOL_EV_FAULT, 0, 0, KPAGE, &d);
	if (!p.global_flushes[0] || !p.global_flushes[1])
		fail_msg("kernel install: %s, flushes %u/%u", tlbpol_action_str(d.action),
			 p.flushes[0], p.flushes[1]);
	clear_counts(&p);
	submit(&p, p.as1, 0, TLBPOL_EV_FAULT, 0, 0, P | W | U, &d);
	assert_int_equal(d.action, TLBPOL_ACT_LOCAL);
	assert_int_equal(p.flushes[0], 1);
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* 4, 5: CPUs between states                                                */
/* ------------------------------------------------------------------------ */

/* 4, initiator side: CPU1 wakes from IDLE (its AS current) inside CPU0's
 * table-freeing shootdown, after the generation was taken, and is told to
 * flush; it does so only after the call returns.  CPU0 must not skip it
 * by a generation it has not flushed to yet. */
static void wake_cpu1(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)cpu;
	(void)f;
	assert_int_equal(tlbpol_cpu_state(p->eng, 1, TLBPOL_CPU_RUNNING), 1);
}

static void test_catch_up_initiator(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 1);
	/* A change CPU1 is spared while idle, so that it is behind. */
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_IDLE), 0);
	submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A, &d);
	free_tables(&p, &d);
	clear_counts(&p);
	p.on_flush = wake_cpu1;
	flush_for_free(&p);
	if (!p.flushes_at_free[1])
		fail_msg("the table page was freed before cpu 1 flushed its walk caches");
	probe_fini(&p);
}

/* 4, receiver side: CPU1 is lazy; CPU0's table-freeing request is posted
 * and its interrupt held (interrupts off); CPU1 switches back, is told to
 * flush, and its own serve inside tlbpol_switch() must not acknowledge the
 * request unflushed. */
static void cpu1_back(struct probe *p, uint32_t cpu)
{
	int nf = 0;

	(void)cpu;
	assert_int_equal(tlbpol_switch(p->eng, 1, p->as1, &nf), 0);
	/* Its catch-up flush comes after the switch returns: not modelled
	 * here, so that only what the engine flushed counts. */
}

static void test_catch_up_receiver(void **state)
{
	for (uint32_t retain = 0; retain < 2; retain++) {
		struct probe p;
		struct tlbpol_decision d;

		(void)state;
		probe_x86(&p, retain ? TLBPOL_CFGF_RETAIN_AS : 0, 1);
		sw(&p, 1, NULL); /* lazy */
		submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A, &d);
		free_tables(&p, &d);
		clear_counts(&p);
		p.deliver = 0;
		p.hold = 1;
		p.hold_turns = ~0u;
		p.on_relax = cpu1_back;
		flush_for_free(&p);
		if (!p.flushes_at_free[1])
			fail_msg("retain %u: table page freed while cpu 1, inside tlbpol_switch(), "
				 "had not flushed",
				 retain);
		p.hold = ~0u;
		probe_fini(&p);
	}
}

/* 5: a lazy vCPU marked PREEMPTED is spared a table-freeing flush; when it
 * runs again its MMU may walk the tables it keeps loaded: it must be told
 * to flush them. */
static void test_preempted_lazy(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 1);
	sw(&p, 1, NULL);
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_PREEMPTED), 0);
	clear_counts(&p);
	free_tables(&p, &d);
	flush_for_free(&p);
	if (!p.flushes_at_free[1])
		assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_RUNNING), 1);
	probe_fini(&p);
}

/* A CPU that switched away may walk the old tables until its CR3 write:
 * a table-freeing request made in that window waits until the CPU took its
 * interrupt, which it does only after the CR3 write (interrupts are off
 * from tlbpol_switch() to it). */
static void test_leaving_cpu(void **state)
{
	struct probe p;
	struct tlbpol_decision d;

	(void)state;
	probe_x86(&p, 0, 1);
	sw(&p, 1, p.as2); /* left AS1; its CR3 write is still to come */
	free_tables(&p, &d);
	clear_counts(&p);
	p.deliver = 0;
	p.hold = 1;
	p.hold_turns = 100;
	flush_for_free(&p);
	if (!p.first_ipi_turn[1] || p.turn < p.hold_turns)
		fail_msg("the table page was freed before cpu 1 had written CR3 (turn %u)", p.turn);
	/* It has now (it took the interrupt): left out from here on. */
	p.hold = ~0u;
	p.deliver = 1;
	submit(&p, p.as1, 0, TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0, 0, &d);
	clear_counts(&p);
	assert_true(tlbpol_flush(p.eng, 0, TLBPOL_BY_FREE) >= 0);
	assert_int_equal(p.first_ipi_turn[1], 0);
	assert_int_equal(p.flushes[1], 0);
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* Q6: a descheduled fan-out leader                                         */
/* ------------------------------------------------------------------------ */

static void test_fanout_leader_descheduled(void **state)
{
	static const uint16_t nodes[NCPU] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	struct probe p;
	struct tlbpol_config cfg;
	struct tlbpol_decision d;
	uint32_t direct = 0;

	(void)state;
	probe_config(&p, &cfg, TLBPOL_ARCH_X86_64);
	p.deliver = 0; /* interrupts wait for a relax from the start */
	cfg.cpu_node = nodes;
	cfg.cost_ipi_remote_ns = 2000; /* a leader pays for node 1 */
	assert_int_equal(tlbpol_engine_new(&cfg, &p.eng), 0);
	assert_int_equal(tlbpol_as_open(p.eng, 0x11, &p.as1), 0);
	for (uint32_t c = 0; c < NCPU; c++)
		sw(&p, c, p.as1);
	p.deliver = 0;
	/* Node 1's leader (its first target) is held: in a guest, a vCPU the
	 * host has descheduled. */
	p.hold_turns = 5000;
	p.hold = 4;
	submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A, &d);
	/* Node 1's other CPUs were interrupted by CPU0 itself well before the
	 * leader ran again. */
	for (uint32_t c = 5; c < NCPU; c++)
		if (p.first_ipi_turn[c] && p.first_ipi_turn[c] < 1000)
			direct++;
	if (tlbpol_cpuset_test(&p.pending, 4) || p.first_ipi_turn[4] == 0)
		fail_msg("cpu 4 was not the interrupted leader (turn %u)", p.first_ipi_turn[4]);
	if (direct != 3)
		fail_msg("%u of node 1's CPUs were interrupted before the leader ran", direct);
	probe_fini(&p);
}

/* ------------------------------------------------------------------------ */
/* Q9: API hazards                                                          */
/* ------------------------------------------------------------------------ */

static void test_switch_not_running(void **state)
{
	struct probe p;

	(void)state;
	probe_init(&p, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT, 0, NULL);
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_IDLE), 0);
	assert_int_equal(tlbpol_switch(p.eng, 1, p.as1, NULL), -EBUSY);
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_PREEMPTED), 0);
	assert_int_equal(tlbpol_switch(p.eng, 1, p.as1, NULL), -EBUSY);
	assert_int_equal(tlbpol_switch(p.eng, 1, NULL, NULL), 0); /* allowed */
	assert_int_equal(tlbpol_cpu_state(p.eng, 1, TLBPOL_CPU_RUNNING), 0);
	assert_int_equal(tlbpol_switch(p.eng, 1, p.as1, NULL), 0);
	probe_fini(&p);
}

/* A timer tick that lands inside tlbpol_submit() on the same CPU (here:
 * from its flush_local) is refused, and the submit completes as usual. */
static int nested_ret = 1;

static void tick_inside(struct probe *p, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)f;
	nested_ret = tlbpol_tick(p->eng, cpu);
}

static void test_nested_call(void **state)
{
	struct probe p;
	struct tlbpol_decision d;
	struct tlbpol_stats st;

	(void)state;
	probe_x86(&p, 0, 1);
	p.on_flush = tick_inside;
	submit(&p, p.as1, 0, TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A, &d);
	assert_int_equal(nested_ret, -EBUSY);
	assert_int_equal(tlbpol_stats_read(p.eng, 0, &st), 0);
	assert_int_equal(st.events, 1);
	assert_int_equal(tlbpol_tick(p.eng, 0), 0); /* outside: fine */
	probe_fini(&p);
}

H_TEST_MAIN(
	cmocka_unit_test(test_global_lazy_idle),
	cmocka_unit_test(test_global_switch_before_serve),
	cmocka_unit_test(test_global_switch_before_skip),
	cmocka_unit_test(test_global_flag),
	cmocka_unit_test(test_global_reuse_other_as),
	cmocka_unit_test(test_migrate_clean_before_copy),
	cmocka_unit_test(test_dontneed_now),
	cmocka_unit_test(test_unmap_dirty_now),
	cmocka_unit_test(test_attrs_split),
	cmocka_unit_test(test_generic_install),
	cmocka_unit_test(test_catch_up_initiator),
	cmocka_unit_test(test_catch_up_receiver),
	cmocka_unit_test(test_preempted_lazy),
	cmocka_unit_test(test_leaving_cpu),
	cmocka_unit_test(test_fanout_leader_descheduled),
	cmocka_unit_test(test_switch_not_running),
	cmocka_unit_test(test_nested_call));
