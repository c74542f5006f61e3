/* SPDX-License-Identifier: MIT */
/*
 * test_switch_tag: an engine with a tag allocator (cfg->tags).  The switch
 * reports the tag and one flush, the allocator's and the catch-up folded
 * together; each CPU's flush names its own tag of the address space, a
 * broadcast the address space's one global tag; per-CPU slots leave
 * interrupts as the only mechanism; a CPU switching away is flushed under
 * the tag it still walks the old address space under, its slot's or,
 * with global generations, an older one a broadcast names too; CPUs moved
 * onto a global tag without a switch (ops->load_tag); the refusals.
 */
#include <errno.h>

#include "support/harness.h"

static _Alignas(64) unsigned char tmem[1 << 14];
static uint64_t bcast_tag;
static uint32_t bcasts;
/* Every tag the broadcasts (or remote actions) named, in order. */
static uint64_t bcast_tags[16];

static void h_bcast(void *ctx, uint32_t from, const struct tlbpol_flush *f)
{
	(void)ctx;
	(void)from;
	if (bcasts < 16)
		bcast_tags[bcasts] = f->as_tag;
	bcasts++;
	bcast_tag = f->as_tag;
}

static const struct tlbpol_ops bcast_ops = H_OPS_AND(.broadcast = h_bcast);

static struct tlbpol_tags *tags_global(uint32_t kind, uint32_t cpus, uint32_t bits,
				       uint32_t slots, uint32_t nr_global, uint32_t min)
{
	struct tlbpol_tags_config tc = { sizeof(tc), kind, cpus, bits, 1, slots, nr_global, min };
	struct tlbpol_tags *t = NULL;

	assert_int_equal(tlbpol_tags_init(&t, tmem, sizeof(tmem), &tc), 0);
	return t;
}

static struct tlbpol_tags *tags_for(uint32_t kind, uint32_t cpus, uint32_t bits, uint32_t slots)
{
	return tags_global(kind, cpus, bits, slots, 0, 0);
}

static void engine(struct harness *h, struct tlbpol_tags *t, uint32_t cpus,
		   const struct tlbpol_ops *ops)
{
	struct tlbpol_config cfg;

	h_config(h, &cfg, cpus, TLBPOL_ARCH_X86_64);
	cfg.ops = ops;
	cfg.tags = t;
	cfg.rules = TLBPOL_RULES_DEFAULT | TLBPOL_RULE_BROADCAST;
	/* Interrupts dear, a broadcast cheap: the broadcast wherever usable. */
	cfg.cost_ipi_ns = cfg.cost_ipi_target_ns = 100000;
	cfg.cost_broadcast_ns = 1;
	h_engine_cfg(h, &cfg);
}

static struct tlbpol_tag_use sw(struct harness *h, uint32_t cpu, struct tlbpol_as *as)
{
	struct tlbpol_tag_use u = { 0xdead, 0xdead };

	assert_int_equal(tlbpol_switch_tag(h->eng, cpu, as, &u), 0);
	return u;
}

/* The as_tag of the last flush_local on @cpu. */
static uint64_t last_tag_on(const struct harness *h, uint32_t cpu)
{
	for (uint32_t i = h->nr_log; i-- > 0;)
		if (h->log[i].cpu == cpu)
			return h->log[i].as_tag;
	fail_msg("no flush on cpu %u", cpu);
	return 0;
}

static void test_refusals(void **state)
{
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng = NULL;
	struct tlbpol_tag_use u;
	struct tlbpol_as *as;
	static _Alignas(64) unsigned char junk[256];

	(void)state;
	h_config(&h, &cfg, 4, TLBPOL_ARCH_X86_64);
	cfg.tags = tags_for(TLBPOL_TAGS_PERCPU, 2, 12, 6); /* for 2 CPUs of 4 */
	assert_int_equal(tlbpol_engine_new(&cfg, &eng), -ERANGE);
	cfg.tags = (struct tlbpol_tags *)junk;
	assert_int_equal(tlbpol_engine_new(&cfg, &eng), -EINVAL);
	assert_null(eng);

	/* Without tags: tlbpol_switch_tag() refused; with: tlbpol_switch(). */
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch_tag(h.eng, 0, as, &u), -EINVAL);
	tlbpol_engine_free(h.eng);
	engine(&h, tags_for(TLBPOL_TAGS_PERCPU, 2, 12, 6), 2, &h_ops);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(h.eng, 0, as, NULL), -EINVAL);
	assert_int_equal(tlbpol_switch_tag(h.eng, 0, as, NULL), -EINVAL);
	assert_int_equal(tlbpol_switch_tag(h.eng, 2, as, &u), -ERANGE);
	assert_int_equal(tlbpol_switch_tag(NULL, 0, as, &u), -EINVAL);
	tlbpol_engine_free(h.eng);
}

/*
 * Per-CPU slots: a first use flushes the tag; a return to a slot that
 * missed nothing flushes nothing; one that missed a change (the CPU was
 * away, out of the footprint) flushes its tag.  Each CPU's flush names its
 * own slot's tag of the address space; no broadcast even when cheaper.
 */
static void test_percpu(void **state)
{
	struct harness h;
	struct tlbpol_as *a, *b;
	struct tlbpol_tag_use u;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A, P | U | A);

	(void)state;
	engine(&h, tags_for(TLBPOL_TAGS_PERCPU, 2, 12, 6), 2, &bcast_ops);
	assert_false(tlbpol_engine_rules(h.eng) & TLBPOL_RULE_BROADCAST);
	assert_int_equal(tlbpol_as_open(h.eng, 100, &a), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &b), 0);
	u = sw(&h, 0, a);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	u = sw(&h, 1, b);
	assert_int_equal(u.tag, 1);
	u = sw(&h, 1, a);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	/* A shootdown from CPU 0: its flush names PCID 1, CPU 1's PCID 2. */
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(last_tag_on(&h, 0), 1);
	assert_int_equal(last_tag_on(&h, 1), 2);
	assert_int_equal(bcasts, 0);
	/* CPU 1 goes to b (a stays in its slot) and back: nothing missed. */
	u = sw(&h, 1, b);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	u = sw(&h, 1, a);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	/* Away again while a changes: not interrupted, flushed at return. */
	u = sw(&h, 1, b);
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(h.flushes_on[1], 0);
	u = sw(&h, 1, a);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_TAG);
	/* Lazy: the tag stays loaded. */
	u = sw(&h, 1, NULL);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	u = sw(&h, 1, a);
	assert_int_equal(u.tag, 2);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_NONE);
	tlbpol_engine_free(h.eng);
}

/* Global generations: one tag everywhere, which a broadcast names. */
static void test_global_broadcast(void **state)
{
	struct harness h;
	struct tlbpol_as *a, *b;
	struct tlbpol_tag_use u;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A, P | U | A);

	(void)state;
	engine(&h, tags_for(TLBPOL_TAGS_GLOBAL, 4, 8, 0), 4, &bcast_ops);
	assert_true(tlbpol_engine_rules(h.eng) & TLBPOL_RULE_BROADCAST);
	assert_int_equal(tlbpol_as_open(h.eng, 100, &b), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &a), 0);
	u = sw(&h, 0, b);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	for (uint32_t c = 0; c < 4; c++) {
		u = sw(&h, c, a);
		assert_int_equal(u.tag, 2);
		assert_int_equal(u.flush, c ? TLBPOL_TAG_FLUSH_ALL : TLBPOL_TAG_FLUSH_NONE);
	}
	bcasts = 0;
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(bcasts, 1);
	assert_int_equal(bcast_tag, 2);
	tlbpol_engine_free(h.eng);
}

/*
 * Global generations: a CPU between its switch away from an address space
 * and its CR3 write may still walk that address space's tables under the
 * tag it ran it with; its tag load for the next one no longer holds that
 * tag for it, so a rollover meanwhile can give the address space another.
 * A flush of freed tables then names both: the new tag reaches the CPUs
 * that run it, the old one the CPU still switching (its walk caches would
 * keep pointers to the freed tables until its CR3 write).  @remote: by a
 * remote action instead of a broadcast.
 */
static void h_remote(void *ctx, uint32_t from, const struct tlbpol_cpuset *t,
		     const struct tlbpol_flush *f)
{
	(void)t;
	h_bcast(ctx, from, f);
}

static const struct tlbpol_ops remote_ops = H_OPS_AND(.remote_action = h_remote);

static void global_leaving(int remote)
{
	struct harness h;
	struct tlbpol_as *a, *b, *c, *d;
	struct tlbpol_tag_use u;
	struct tlbpol_decision dec;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0x10000, 1,
					 P | W | U | A, 0);
	int old = 0;

	/* Two CPUs, tags 1 to 3: the fourth address space rolls over. */
	engine(&h, tags_for(TLBPOL_TAGS_GLOBAL, 2, 2, 0), 2, remote ? &remote_ops : &bcast_ops);
	assert_int_equal(tlbpol_as_open(h.eng, 100, &a), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &b), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 300, &c), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 400, &d), 0);
	assert_int_equal(sw(&h, 0, a).tag, 1);
	assert_int_equal(sw(&h, 1, c).tag, 2);
	/* CPU 0 switches to b, and makes no engine call after (its CR3
	 * write still to come): it holds a's entries under tag 1. */
	assert_int_equal(sw(&h, 0, b).tag, 3);
	/* A rollover keeps 3 (CPU 0's) and 2 (CPU 1's): d takes 1; a
	 * second one keeps 3 and 1, and a takes 2. */
	u = sw(&h, 1, d);
	assert_int_equal(u.tag, 1);
	assert_int_equal(u.flush, TLBPOL_TAG_FLUSH_ALL);
	assert_int_equal(sw(&h, 1, a).tag, 2);
	bcasts = 0;
	assert_int_equal(tlbpol_submit(h.eng, a, 1, &ev, &dec), 0);
	assert_int_equal(dec.action, TLBPOL_ACT_SHOOTDOWN);
	tlbpol_flush(h.eng, 1, TLBPOL_BY_LAZY);
	assert_int_equal(h.ipi_calls, 0);
	assert_true(bcasts >= 1 && bcasts <= 16);
	assert_int_equal(bcast_tags[0], 2);
	for (uint32_t i = 1; i < bcasts; i++)
		old += bcast_tags[i] == 1;
	assert_int_equal(old, 1);
	assert_int_equal(bcasts, 2);
	tlbpol_engine_free(h.eng);
}

static void test_global_leaving_bcast(void **state)
{
	(void)state;
	global_leaving(0);
}

static void test_global_leaving_remote(void **state)
{
	(void)state;
	global_leaving(1);
}

/*
 * Per-CPU slots, one a CPU: CPU 1 switches from a to b while CPU 0's
 * shootdown of a's freed tables waits for it (from CPU 0's relax).  b
 * takes a's slot, but until its CR3 write CPU 1 still walks a under that
 * tag: the flush it serves inside the switch names the tag, though a no
 * longer has a slot there.
 */
static struct harness *leave_h;
static struct tlbpol_as *leave_to;
static struct tlbpol_tag_use leave_use;

static void leave_relax(void *ctx, uint32_t cpu)
{
	struct tlbpol_as *to = leave_to;

	(void)ctx;
	(void)cpu;
	if (!to)
		return;
	leave_to = NULL;
	assert_int_equal(tlbpol_switch_tag(leave_h->eng, 1, to, &leave_use), 0);
}

static const struct tlbpol_ops leave_ops = H_OPS_AND(.relax = leave_relax);

static void test_percpu_leaving(void **state)
{
	struct harness h;
	struct tlbpol_as *a, *b;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, 0x10000, 1,
					 P | W | U | A, 0);

	(void)state;
	engine(&h, tags_for(TLBPOL_TAGS_PERCPU, 2, 12, 1), 2, &leave_ops);
	assert_int_equal(tlbpol_as_open(h.eng, 100, &a), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &b), 0);
	assert_int_equal(sw(&h, 0, a).tag, 1);
	assert_int_equal(sw(&h, 1, a).tag, 1);
	/* CPU 1 takes its interrupt only through its switch. */
	h.deliver = 0;
	h_reset_log(&h);
	leave_h = &h;
	leave_to = b;
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY);
	assert_null(leave_to);
	assert_int_equal(leave_use.tag, 1);
	assert_int_equal(leave_use.flush, TLBPOL_TAG_FLUSH_TAG);
	assert_int_equal(h.flushes_on[1], 1);
	assert_int_equal(last_tag_on(&h, 1), 1);
	tlbpol_engine_free(h.eng);
}

/*
 * Per-CPU slots beside global tags: an address space loaded on 2 CPUs
 * gets a global tag at its next shootdown, which goes by interrupts (no
 * CPU is on the tag yet: a broadcast would not spare one).  Once one has
 * switched to it, the broadcast names it and the CPUs still under their
 * slots (the initiator's own included) are interrupted or flushed, each
 * flush naming its slot; once all have, the broadcast alone serves.
 * Closing the address space gives the tag back.
 */
static void test_percpu_global_broadcast(void **state)
{
	struct harness h;
	struct tlbpol_as *a, *b;
	struct tlbpol_tag_use u;
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A, P | U | A);
	struct tlbpol_tags *t = tags_global(TLBPOL_TAGS_PERCPU, 4, 4, 3, 2, 2);

	(void)state;
	engine(&h, t, 4, &bcast_ops);
	assert_true(tlbpol_engine_rules(h.eng) & TLBPOL_RULE_BROADCAST);
	assert_int_equal(tlbpol_as_open(h.eng, 100, &b), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &a), 0);
	sw(&h, 1, b);
	for (uint32_t c = 0; c < 3; c++) {
		u = sw(&h, c, a);
		assert_true(u.tag >= 1 && u.tag <= 3);
	}
	bcasts = 0;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(d.action, TLBPOL_ACT_SHOOTDOWN);
	assert_int_equal(bcasts, 0);
	assert_int_equal(h.ipi_targets, 2);
	/* CPU 1 moves to the global tag; CPU 2 stays on its slot. */
	sw(&h, 1, b);
	u = sw(&h, 1, a);
	assert_int_equal(u.tag, 14);
	bcasts = 0;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(bcasts, 1);
	assert_int_equal(bcast_tag, 14);
	assert_int_equal(h.ipi_targets, 1);
	assert_true(tlbpol_cpuset_test(&h.last_targets, 2));
	assert_int_equal(last_tag_on(&h, 0), 1);
	assert_int_equal(last_tag_on(&h, 2), 1);
	/* Every CPU switches to it again: on the global tag. */
	for (uint32_t c = 0; c < 3; c++) {
		sw(&h, c, b);
		u = sw(&h, c, a);
		assert_int_equal(u.tag, 14);
	}
	bcasts = 0;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(bcasts, 1);
	assert_int_equal(h.ipi_targets, 0);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.shoot_broadcast, 2);
	assert_int_equal(st.shoot_ipi, 2);
	/* Closed, its global tag goes back. */
	for (uint32_t c = 0; c < 3; c++) {
		sw(&h, c, NULL);
		assert_int_equal(tlbpol_unload(h.eng, c), 0);
	}
	assert_int_equal(tlbpol_as_close(h.eng, a), 0);
	{
		struct tlbpol_tags_stats ts = { .size = sizeof(ts) };

		assert_int_equal(tlbpol_tags_stats_read(t, -1, &ts), 0);
		assert_true(ts.loads >= 10);
	}
	tlbpol_engine_free(h.eng);
}

/*
 * ops->load_tag: CPUs move onto the global tag without a switch, the
 * targets in the interrupt of the shootdown that gave it (by interrupts:
 * no CPU was on it yet), the initiator at the end of its submit, a lazy
 * CPU not at all (it comes back under its slot and is interrupted, and
 * moves then).  From then on the broadcast alone serves.
 */
static uint32_t loads_on[4], load_tag_of[4], load_flush_of[4];

static void h_load_tag(void *ctx, uint32_t cpu, uint32_t tag, uint32_t flush)
{
	(void)ctx;
	loads_on[cpu]++;
	load_tag_of[cpu] = tag;
	load_flush_of[cpu] = flush;
}

static const struct tlbpol_ops load_ops = H_OPS_AND(.broadcast = h_bcast,
						    .load_tag = h_load_tag);

static void test_percpu_global_irq_load(void **state)
{
	struct harness h;
	struct tlbpol_as *a, *b;
	struct tlbpol_tag_use u;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A, P | U | A);

	(void)state;
	engine(&h, tags_global(TLBPOL_TAGS_PERCPU, 4, 4, 3, 2, 2), 4, &load_ops);
	h.deliver = 1;
	assert_int_equal(tlbpol_as_open(h.eng, 100, &b), 0);
	assert_int_equal(tlbpol_as_open(h.eng, 200, &a), 0);
	sw(&h, 1, b);
	/* Each switch published by a later call (until then a CPU is not
	 * moved: its CR3 write may not have happened). */
	for (uint32_t c = 0; c < 3; c++) {
		sw(&h, c, a);
		assert_int_equal(tlbpol_tick(h.eng, c), 0);
	}
	sw(&h, 2, NULL); /* lazy on a */
	bcasts = 0;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(bcasts, 0);
	assert_true(tlbpol_cpuset_test(&h.last_targets, 1));
	/* CPU 1 in its interrupt, CPU 0 at the end of its submit. */
	assert_int_equal(loads_on[0], 1);
	assert_int_equal(loads_on[1], 1);
	assert_int_equal(loads_on[2], 0);
	assert_int_equal(load_tag_of[0], 14);
	assert_int_equal(load_tag_of[1], 14);
	/* The first global tag a CPU loads: what was under it is unknown. */
	assert_int_equal(load_flush_of[1], TLBPOL_TAG_FLUSH_ALL);
	/* CPU 2 back from lazy, under its slot: the broadcast, and an
	 * interrupt for CPU 2 only (its switch not yet published: it does
	 * not move in it); its tick moves it. */
	u = sw(&h, 2, a);
	assert_true(u.tag >= 1 && u.tag <= 3);
	bcasts = 0;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(bcasts, 1);
	assert_int_equal(bcast_tag, 14);
	assert_int_equal(h.ipi_targets, 1);
	assert_true(tlbpol_cpuset_test(&h.last_targets, 2));
	assert_int_equal(last_tag_on(&h, 2), u.tag);
	assert_int_equal(loads_on[2], 0);
	assert_int_equal(tlbpol_tick(h.eng, 2), 0);
	assert_int_equal(loads_on[2], 1);
	assert_int_equal(load_tag_of[2], 14);
	/* The broadcast alone; nobody moves again; a switch back gives 14
	 * (with a catch-up flush: a broadcast leaves its targets' flushed
	 * generations where they were). */
	bcasts = 0;
	h_reset_log(&h);
	assert_int_equal(tlbpol_submit(h.eng, a, 0, &ev, &d), 0);
	assert_int_equal(bcasts, 1);
	assert_int_equal(h.ipi_targets, 0);
	assert_int_equal(loads_on[0] + loads_on[1] + loads_on[2], 3);
	sw(&h, 1, b);
	u = sw(&h, 1, a);
	assert_int_equal(u.tag, 14);
	tlbpol_engine_free(h.eng);
}

/* A switch_tag nested in another engine call for its CPU (here its
 * flush_local): -EBUSY, as tlbpol_switch() (the header's table). */
static struct harness *nest_h;
static struct tlbpol_as *nest_as;
static int nest_ret = 1;

static void nest_flush(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct tlbpol_tag_use u;

	h_flush_local(ctx, cpu, f);
	if (nest_ret == 1)
		nest_ret = tlbpol_switch_tag(nest_h->eng, cpu, nest_as, &u);
}

static const struct tlbpol_ops nest_ops = {
	.size = sizeof(struct tlbpol_ops), .flush_local = nest_flush, .send_ipi = h_send_ipi
};

static void test_nested(void **state)
{
	struct harness h;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, P | W | U | A, P | U | A);

	(void)state;
	engine(&h, tags_for(TLBPOL_TAGS_PERCPU, 2, 12, 6), 2, &nest_ops);
	nest_h = &h;
	assert_int_equal(tlbpol_as_open(h.eng, 1, &nest_as), 0);
	sw(&h, 0, nest_as);
	assert_int_equal(tlbpol_submit(h.eng, nest_as, 0, &ev, &d), 0);
	assert_int_equal(nest_ret, -EBUSY);
	tlbpol_engine_free(h.eng);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_percpu),
		cmocka_unit_test(test_percpu_leaving),
		cmocka_unit_test(test_global_broadcast),
		cmocka_unit_test(test_global_leaving_bcast),
		cmocka_unit_test(test_global_leaving_remote),
		cmocka_unit_test(test_percpu_global_broadcast),
		cmocka_unit_test(test_percpu_global_irq_load),
		cmocka_unit_test(test_nested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
