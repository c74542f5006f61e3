/* SPDX-License-Identifier: MIT */
/*
 * shootdown.c - requests, interrupts, acknowledgements.
 *
 * Initiator side.  A request (struct slot) holds one part per address space.
 * Each part takes the next flush generation of its address space after the
 * PTE changes it covers, before its targets are chosen (Linux
 * inc_mm_tlb_gen() in flush_tlb_mm_range()).  The targets are the CPUs that
 * may cache the parts (footprints), less those the rules let catch up later
 * instead: lazy CPUs (unless page tables were freed), preempted vCPUs, CPUs
 * whose generation already covers the request.  The initiator flushes itself,
 * publishes the request, sets its bit in each target's inbox and interrupts
 * them (directly, or one leader per remote NUMA node that forwards), then
 * waits, serving its own inbox meanwhile so that two CPUs shooting each other
 * down both finish.  Lazy requests (BY_LAZY) are posted the same way with no
 * interrupt and no wait: targets pick them up when they tick or switch.
 *
 * Receiver side.  tlbpol_handle_ipi() claims every request waiting for this
 * CPU from any number of initiators (no lock: each claim is one atomic RMW on
 * the request's target bitmap), merges them per address space into one
 * flush, skips what its generation already covers, escalates to one whole-AS
 * flush when it is behind by more than the claimed requests (Linux
 * flush_tlb_func(): "we're behind by more than one generation, do a full
 * flush"), and acknowledges each request.
 */
#include "internal.h"
#include "sort.h"

/*
 * Flush @f on @cpu (which is the calling CPU) and account for it.  A whole-AS
 * flush covers every change published before it: the generation read before
 * it is what this CPU has caught up to.  A range flush of generation @gen
 * advances the CPU only if it was exactly one behind.
 */
static void flush_on(struct tlbpol_engine *eng, uint32_t cpu, const struct tlbpol_flush *f,
		     uint32_t as_index, uint64_t gen, struct tlbpol_stats *st)
{
	uint64_t *mine = local_gen_of(eng, cpu, as_index);
	uint64_t now = 0;

	if (f->kind != TLBPOL_FLUSH_PAGES)
		now = prim_load_seqcst(&eng->as[as_index].gen);
	eng->ops.flush_local(eng->ops_ctx, cpu, f);
	count_flush(st, f);
	if (f->kind != TLBPOL_FLUSH_PAGES)
		gen_raise(mine, now);
	else if (gen && prim_load_relaxed(mine) + 1 == gen)
		gen_raise(mine, gen);
}

/*
 * May @cpu hold entries of this part?  Global entries live in every CPU's
 * TLB whatever it runs (they survive CR3 writes), so no footprint narrows
 * them.  A CPU outside the footprint either never walked the address space
 * since the change (it joins before it walks, see tlbpol_switch()), or left
 * it: without ASID retention its entries went with the CR3 write, with
 * retention its generation stays behind and it flushes when it comes back.
 * One that is leaving may not have written CR3 yet.
 */
static int may_cache(const struct tlbpol_engine *eng, uint32_t as_index, uint32_t global,
		     uint32_t cpu)
{
	if (!(params_of(eng)->rules & TLBPOL_RULE_FOOTPRINT) || global)
		return 1;
	return bitmap_test(eng->as[as_index].footprint, cpu) ||
	       bitmap_test(eng->as[as_index].leaving, cpu);
}

static uint32_t node_of(const struct tlbpol_engine *eng, uint32_t cpu)
{
	return eng->cpu_node ? eng->cpu_node[cpu] : 0;
}

/* ======================================================================== */
/* Receiving                                                                */
/* ======================================================================== */

static inline int recv_less(const struct recv_range *x, const struct recv_range *y)
{
	if (x->as_slot != y->as_slot)
		return x->as_slot < y->as_slot;
	if (x->page_shift != y->page_shift)
		return x->page_shift < y->page_shift;
	return x->va < y->va;
}

TLBPOL_DEFINE_HEAPSORT(sort_recv, struct recv_range, recv_less)

struct recv_round {
	uint32_t nr_as;
	uint32_t nr_ranges;
};

static uint32_t slot_ranges(const struct slot *s)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < s->nr_flushes; k++)
		if (s->flushes[k].f.kind == TLBPOL_FLUSH_PAGES)
			n += s->flushes[k].f.nr_ranges;
	return n;
}

/*
 * Interrupt the CPUs of @t, whose inboxes already name the request, and count
 * them in @cnt.  RULE_POLLING_CPUS leaves out a CPU that is spinning in
 * wait_acks(): the waiter publishes `polling`, then serves its inbox on every
 * turn; before it leaves it clears `polling`, fences and serves once more.
 * We posted to its inbox, fence, then read `polling`: either we read 1 and
 * its last serve (after its clear, after our post) finds our request, or we
 * read 0 and interrupt it (the Dekker pattern, as with set_nr_if_polling()
 * in Linux's kernel/sched/core.c).
 */
static void kick(struct tlbpol_engine *eng, uint32_t me, struct tlbpol_cpuset *t,
		 struct tlbpol_stats *cnt)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < eng->words; w++)
		n += prim_popcount64(t->bits[w]);
	if (n && (params_of(eng)->rules & TLBPOL_RULE_POLLING_CPUS)) {
		prim_fence();
		for_each_target(i, t, eng) {
			if (prim_load_relaxed(&cpu_of(eng, i)->polling)) {
				t->bits[i / 64] &= ~(1ULL << (i % 64));
				prim_count(&cnt->lazy_skipped, 1);
				n--;
			}
		}
	}
	if (!n)
		return;
	eng->ops.send_ipi(eng->ops_ctx, me, t);
	prim_count(&cnt->ipis_sent, n);
}

/* The targets of @s that have not claimed it yet, into @t.  Returns how many. */
static uint32_t unclaimed(const struct tlbpol_engine *eng, const struct slot *s,
			  struct tlbpol_cpuset *t)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < eng->words; w++) {
		t->bits[w] = prim_load_acquire(&s->targets[w]);
		n += prim_popcount64(t->bits[w]);
	}
	return n;
}

/*
 * NUMA fan-out: a leader interrupts the targets of its node that have not
 * claimed the request yet; they acknowledge to the initiator themselves.
 * The initiator publishes the targets before it posts to their inboxes, so
 * a leader that claimed early may get here before a target's inbox names
 * the initiator: post it again (idempotent), or the target would take our
 * interrupt, find nothing, and never be interrupted for it again.
 */
static void forward(struct tlbpol_engine *eng, uint32_t me, uint32_t from, const struct slot *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	const uint64_t *mask = &eng->node_mask[(size_t)node_of(eng, me) * eng->words];

	for (uint32_t w = 0; w < eng->words; w++)
		c->fwd.bits[w] = prim_load_acquire(&s->targets[w]) & mask[w];
	c->fwd.bits[me / 64] &= ~(1ULL << (me % 64));
	for_each_target(i, &c->fwd, eng)
		prim_fetch_or(&cpu_of(eng, i)->inbox[from / 64], 1ULL << (from % 64));
	kick(eng, me, &c->fwd, &c->cnt.irq);
}

static void recv_add(struct tlbpol_engine *eng, uint32_t me, struct recv_round *rr,
		     uint32_t from, uint32_t slot_index)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	const struct slot *s = &cpu_of(eng, from)->slots[slot_index];

	if (s->fanout && bitmap_test(s->leaders, me))
		forward(eng, me, from, s);
	c->claims[c->nr_claims++] = from * TLBPOL_SLOTS + slot_index;
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const struct req_flush *rf = &s->flushes[k];
		struct recv_as *ra;

		if (!c->recv_slot[rf->as_index]) {
			ra = &c->recv_as[rr->nr_as];
			prim_zero(ra, sizeof(*ra));
			ra->as_index = rf->as_index;
			ra->min_gen = ~0ULL;
			c->recv_slot[rf->as_index] = ++rr->nr_as;
		}
		ra = &c->recv_as[c->recv_slot[rf->as_index] - 1];
		ra->nreq++;
		ra->flags |= rf->f.flags;
		ra->global |= rf->global;
		if (rf->f.kind > ra->kind)
			ra->kind = rf->f.kind;
		if (rf->gen < ra->min_gen)
			ra->min_gen = rf->gen;
		if (rf->gen > ra->max_gen)
			ra->max_gen = rf->gen;
		if (rf->f.kind != TLBPOL_FLUSH_PAGES)
			continue;
		for (uint32_t i = 0; i < rf->f.nr_ranges; i++) {
			struct recv_range *r = &c->recv_ranges[rr->nr_ranges++];

			r->va = rf->f.ranges[i].va;
			r->nr_pages = rf->f.ranges[i].nr_pages;
			r->page_shift = rf->f.ranges[i].page_shift;
			r->as_slot = c->recv_slot[rf->as_index] - 1;
		}
	}
}

/* Without RULE_RECEIVER_MERGE: each claimed request's parts, one by one. */
static void recv_each(struct tlbpol_engine *eng, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	int gen_skip = !!(params_of(eng)->rules & TLBPOL_RULE_GEN_SKIP);

	for (uint32_t i = 0; i < c->nr_claims; i++) {
		const struct slot *s = &cpu_of(eng, c->claims[i] / TLBPOL_SLOTS)
						->slots[c->claims[i] % TLBPOL_SLOTS];

		for (uint32_t k = 0; k < s->nr_flushes; k++) {
			const struct req_flush *rf = &s->flushes[k];
			uint64_t mine = flushed_gen(eng, me, rf->as_index);
			struct tlbpol_flush f = rf->f;

			if (!may_cache(eng, rf->as_index, rf->global, me))
				continue;
			/* Generations count flushes of one address space;
			 * global entries outlive them (see skippable()). */
			if (gen_skip && mine >= rf->gen && !rf->global) {
				prim_count(&c->cnt.irq.gen_skipped, 1);
				continue;
			}
			if (gen_skip && rf->gen > mine + 1 && f.kind == TLBPOL_FLUSH_PAGES) {
				f.kind = rf->global ? TLBPOL_FLUSH_ALL : TLBPOL_FLUSH_AS;
				f.nr_ranges = 0;
				f.ranges = 0;
			}
			flush_on(eng, me, &f, rf->as_index, rf->gen, &c->cnt.irq);
			prim_count(&c->cnt.irq.remote_flushes, 1);
		}
	}
}

/*
 * RULE_RECEIVER_MERGE: everything claimed for one address space becomes one
 * flush: the union of the ranges, merged, or one whole-AS flush past the
 * ceiling or when any request asked for one.
 */
static void recv_merged(struct tlbpol_engine *eng, uint32_t me, struct recv_round *rr)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	int gen_skip = !!(params_of(eng)->rules & TLBPOL_RULE_GEN_SKIP);
	uint32_t i = 0;

	sort_recv(c->recv_ranges, rr->nr_ranges);
	for (uint32_t a = 0; a < rr->nr_as; a++) {
		struct recv_as *ra = &c->recv_as[a];
		struct tlbpol_as *as = &eng->as[ra->as_index];
		uint64_t mine = flushed_gen(eng, me, ra->as_index), pages = 0;
		int contiguous = ra->min_gen == mine + 1 && ra->max_gen - mine == ra->nreq;
		int covered = gen_skip && mine >= ra->max_gen;
		struct tlbpol_flush f;
		uint32_t n = 0;

		/* This AS's ranges, sorted: they are the next run. */
		while (i < rr->nr_ranges && c->recv_ranges[i].as_slot == a) {
			struct tlbpol_range *o = &c->recv_out[n++];

			o->va = c->recv_ranges[i].va;
			o->nr_pages = c->recv_ranges[i].nr_pages;
			o->page_shift = c->recv_ranges[i].page_shift;
			o->pad = 0;
			i++;
		}
		if (!may_cache(eng, ra->as_index, ra->global, me))
			continue;
		/* Generations count flushes of one address space; global
		 * entries outlive them (see skippable()): flush those as asked. */
		if (covered && !ra->global) {
			prim_count(&c->cnt.irq.gen_skipped, ra->nreq);
			continue;
		}
		f.as_tag = as->tag;
		f.flags = ra->flags;
		f.pad = 0;
		f.kind = ra->kind;
		f.nr_ranges = 0;
		f.ranges = 0;
		if (f.kind == TLBPOL_FLUSH_PAGES && !(gen_skip && !contiguous && !covered)) {
			n = tlbpol__merge_sorted(c->recv_out, n, &pages);
			if ((params_of(eng)->rules & TLBPOL_RULE_RANGE_FLUSH) && pages <= params_of(eng)->flush_ceiling) {
				f.nr_ranges = n;
				f.ranges = c->recv_out;
			} else {
				f.kind = TLBPOL_FLUSH_AS;
			}
		} else if (f.kind == TLBPOL_FLUSH_PAGES) {
			f.kind = TLBPOL_FLUSH_AS; /* behind: catch up in one flush */
		}
		if (f.kind == TLBPOL_FLUSH_AS && ra->global)
			f.kind = TLBPOL_FLUSH_ALL;
		flush_on(eng, me, &f, ra->as_index, contiguous ? ra->max_gen : 0, &c->cnt.irq);
		if (f.kind == TLBPOL_FLUSH_PAGES && contiguous)
			gen_raise(local_gen_of(eng, me, ra->as_index), ra->max_gen);
		prim_count(&c->cnt.irq.remote_flushes, 1);
	}
}

/* Flush what this round claimed, then acknowledge every claimed request. */
static void recv_finish(struct tlbpol_engine *eng, uint32_t me, struct recv_round *rr)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	if (!c->nr_claims)
		return;
	if (params_of(eng)->rules & TLBPOL_RULE_RECEIVER_MERGE)
		recv_merged(eng, me, rr);
	else
		recv_each(eng, me);
	for (uint32_t a = 0; a < rr->nr_as; a++)
		c->recv_slot[c->recv_as[a].as_index] = 0;
	for (uint32_t i = 0; i < c->nr_claims; i++) {
		struct slot *s = &cpu_of(eng, c->claims[i] / TLBPOL_SLOTS)
					  ->slots[c->claims[i] % TLBPOL_SLOTS];

		prim_fetch_sub_release(&s->acks, 1u);
	}
	c->nr_claims = 0;
	rr->nr_as = 0;
	rr->nr_ranges = 0;
}

static int inbox_empty(const struct tlbpol_engine *eng, uint32_t me)
{
	for (uint32_t w = 0; w < eng->words; w++)
		if (prim_load_relaxed(&cpu_of(eng, me)->inbox[w]))
			return 0;
	return 1;
}

/*
 * Serve everything waiting for @me.  Re-entry (an interrupt arriving while
 * this CPU is already serving, e.g. from a wait loop) returns at once: the
 * outer call looks at the inbox again after it clears its guard, so what the
 * nested call declined is still served.
 */
int tlbpol__serve(struct tlbpol_engine *eng, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint64_t mybit = 1ULL << (me % 64);
	int served = 0;

	do {
		struct recv_round rr = { 0, 0 };

		if (prim_load_relaxed(&c->in_serve))
			return served;
		prim_store_relaxed(&c->in_serve, 1u);
		__asm__ __volatile__("" ::: "memory");
		for (uint32_t w = 0; w < eng->words; w++) {
			uint64_t bits;

			if (!prim_load_relaxed(&c->inbox[w]))
				continue;
			bits = prim_xchg_acquire(&c->inbox[w], 0ULL);
			while (bits) {
				uint32_t from = w * 64 + prim_ctz64(bits);

				bits &= bits - 1;
				for (uint32_t k = 0; k < TLBPOL_SLOTS; k++) {
					struct slot *s = &cpu_of(eng, from)->slots[k];
					uint64_t *tw = &s->targets[me / 64];

					if (!(prim_load_acquire(tw) & mybit))
						continue;
					if (!(prim_fetch_and(tw, ~mybit) & mybit))
						continue; /* taken back by its initiator */
					if (c->nr_claims == TLBPOL_CLAIM_MAX ||
					    rr.nr_as + s->nr_flushes > c->flush_cap ||
					    rr.nr_ranges + slot_ranges(s) > c->range_cap)
						recv_finish(eng, me, &rr);
					recv_add(eng, me, &rr, from, k);
					served++;
				}
			}
		}
		recv_finish(eng, me, &rr);
		__asm__ __volatile__("" ::: "memory");
		prim_store_relaxed(&c->in_serve, 0u);
		prim_fence();
	} while (!inbox_empty(eng, me));
	return served;
}

int tlbpol_handle_ipi(struct tlbpol_engine *eng, uint32_t cpu)
{
	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	/*
	 * Outside any engine call of this CPU's, an interrupt comes after the
	 * CR3 write that follows tlbpol_switch() (which runs with interrupts
	 * off until then): a leaving CPU has left.  Not the catch-up: a CPU
	 * back from IDLE may take an interrupt before its catch-up flush.
	 */
	if (!prim_load_relaxed(&cpu_of(eng, cpu)->in_call) && cpu_of(eng, cpu)->leaving_as)
		tlbpol__settle(eng, cpu, 0);
	return tlbpol__serve(eng, cpu);
}

/* ======================================================================== */
/* Initiating                                                               */
/* ======================================================================== */

/* TLBPOL_FLUSHF_TABLES or TLBPOL_FLUSHF_GLOBAL: does any part of @s have it? */
static int any_part(const struct slot *s, uint32_t flag)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		if (s->flushes[k].f.flags & flag)
			return 1;
	return 0;
}

/*
 * CPUs that may cache a part of the request, @me and OFFLINE CPUs (which hold
 * nothing and take no interrupt) excluded.  Returns how many.
 */
static uint32_t candidates(struct tlbpol_engine *eng, uint32_t me, const struct slot *s,
			   struct tlbpol_cpuset *t)
{
	uint32_t words = eng->words, n = 0;
	uint64_t tail = eng->nr_cpus % 64 ? (1ULL << (eng->nr_cpus % 64)) - 1 : ~0ULL;

	for (uint32_t w = 0; w < words; w++)
		t->bits[w] = 0;
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const struct req_flush *rf = &s->flushes[k];
		const uint64_t *fp = eng->as[rf->as_index].footprint;
		const uint64_t *lv = eng->as[rf->as_index].leaving;
		int all = !(params_of(eng)->rules & TLBPOL_RULE_FOOTPRINT) || rf->global;
		int tables = (rf->f.flags & TLBPOL_FLUSHF_TABLES) != 0;

		/* A CPU between leaving and its CR3 write may still walk
		 * the tables speculatively (see leave() in engine.c). */
		for (uint32_t w = 0; w < words; w++)
			t->bits[w] |= all ? (w == words - 1 ? tail : ~0ULL)
					  : prim_load_relaxed(&fp[w]) |
						    (tables ? prim_load_relaxed(&lv[w]) : 0);
	}
	t->bits[me / 64] &= ~(1ULL << (me % 64));
	for_each_target(i, t, eng) {
		if (prim_load_seqcst(&cpu_of(eng, i)->state) == TLBPOL_CPU_OFFLINE)
			t->bits[i / 64] &= ~(1ULL << (i % 64));
		else
			n++;
	}
	return n;
}

enum skip { SKIP_NO, SKIP_OFFLINE, SKIP_LAZY, SKIP_GEN };

/*
 * May @x be left out and catch up by itself?  Called after the request's
 * generations were taken: a CPU leaving a lazy or preempted state stores its
 * new state and then reads the generation, so either we see it awake here or
 * it sees our generation and flushes (the Dekker pattern of Linux's
 * cpu_tlbstate_shared.is_lazy and switch_mm_irqs_off()).
 */
static enum skip skippable(const struct tlbpol_engine *eng, uint32_t x, const struct slot *s,
			   int tables, int global, int check_gen)
{
	uint32_t st = prim_load_seqcst(&cpu_of(eng, x)->state);

	if (st == TLBPOL_CPU_OFFLINE)
		return SKIP_OFFLINE;
	/*
	 * A global entry survives what every catch-up below relies on: a CR3
	 * write keeps it (SDM 4.10.4.1), and a lazy or idle CPU runs kernel
	 * code through it in the meantime.  Only a hypervisor's promise to
	 * flush everything (ops->vcpu_defer) may leave one out.  Linux
	 * flush_tlb_kernel_range() likewise interrupts every CPU, with no
	 * lazy skip and no tlb_gen.
	 */
	if (global) {
		if ((params_of(eng)->rules & TLBPOL_RULE_VCPU_DEFER) && !s->lazy &&
		    eng->ops.vcpu_defer && eng->ops.vcpu_defer(eng->ops_ctx, x))
			return SKIP_LAZY;
		return SKIP_NO;
	}
	/*
	 * A preempted vCPU executes nothing, not even speculative walks, and
	 * flushes before it runs again: KVM's PV TLB flush skips it even when
	 * page tables were freed (arch/x86/kernel/kvm.c kvm_flush_tlb_multi()).
	 * In a guest only the hypervisor knows, and ops->vcpu_defer asks it
	 * (and makes it promise the flush).  Not for lazy requests: they
	 * interrupt nobody, and the promise costs the vCPU a full flush.
	 */
	if ((params_of(eng)->rules & TLBPOL_RULE_VCPU_DEFER) &&
	    (st == TLBPOL_CPU_PREEMPTED ||
	     (!s->lazy && eng->ops.vcpu_defer && eng->ops.vcpu_defer(eng->ops_ctx, x))))
		return SKIP_LAZY;
	/*
	 * A lazy CPU does not touch user addresses until it switches back, but
	 * its MMU may still walk the loaded page tables speculatively: when
	 * tables were freed it must flush its paging-structure caches now
	 * (Linux flush_tlb_mm_range(): freed_tables disables the lazy skip).
	 */
#ifdef TLBPOL_PLANTED_BUG
	(void)tables;
	if ((params_of(eng)->rules & TLBPOL_RULE_LAZY_CPUS) && cpu_is_lazy(eng, x))
		return SKIP_LAZY;
#else
	if ((params_of(eng)->rules & TLBPOL_RULE_LAZY_CPUS) && !tables && cpu_is_lazy(eng, x))
		return SKIP_LAZY;
#endif
	if (check_gen && (params_of(eng)->rules & TLBPOL_RULE_GEN_SKIP)) {
		for (uint32_t k = 0; k < s->nr_flushes; k++)
			if (flushed_gen(eng, x, s->flushes[k].as_index) < s->flushes[k].gen)
				return SKIP_NO;
		return SKIP_GEN;
	}
	return SKIP_NO;
}

static void count_skip(struct tlbpol_cpu *c, enum skip why)
{
	if (why == SKIP_LAZY)
		prim_count(&c->cnt.task.lazy_skipped, 1);
	else if (why == SKIP_GEN)
		prim_count(&c->cnt.task.gen_skipped, 1);
}

/*
 * RULE_BROADCAST: interrupts cost the initiator a first-target cost, a cost
 * per further target and more per target on another node; a broadcast costs
 * a fixed wait plus one instruction per page it names.  Take the cheaper.
 */
static int broadcast_cheaper(const struct tlbpol_engine *eng, uint32_t me, const struct slot *s,
			     const struct tlbpol_cpuset *t, uint32_t n)
{
	uint64_t ipi, bc = 0;
	uint32_t remote = 0;

	if (!(params_of(eng)->rules & TLBPOL_RULE_BROADCAST) || !n)
		return 0;
	if (eng->cpu_node)
		for_each_target(i, t, eng)
			remote += node_of(eng, (uint32_t)i) != node_of(eng, me);
	ipi = params_of(eng)->cost_ipi + (uint64_t)(n - 1) * params_of(eng)->cost_ipi_target +
	      (uint64_t)remote * params_of(eng)->cost_ipi_remote;
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		bc += params_of(eng)->cost_bcast + (s->flushes[k].f.kind == TLBPOL_FLUSH_PAGES
						 ? s->flushes[k].pages * params_of(eng)->cost_bcast_page
						 : 0);
	return bc < ipi;
}

/* Leave out of @t the targets a leader of @s interrupts (RULE_NUMA_FANOUT). */
static void drop_led(struct tlbpol_engine *eng, uint32_t me, const struct slot *s,
		     struct tlbpol_cpuset *t)
{
	const struct tlbpol_cpu *c = cpu_of(eng, me);

	if (s->fanout) {
		/* Targets in a node with a leader are its to interrupt (unless
		 * that leader went away after publication: then we do). */
		for_each_target(i, t, eng) {
			const uint64_t *nm =
				&eng->node_mask[(size_t)node_of(eng, (uint32_t)i) * eng->words];
			int led = 0;

			if ((s->leaders[i / 64] | c->direct[i / 64]) & (1ULL << (i % 64)))
				continue;
			for (uint32_t w = 0; w < eng->words && !led; w++)
				led = (s->leaders[w] & nm[w]) != 0;
			if (led)
				t->bits[i / 64] &= ~(1ULL << (i % 64));
		}
	}
}

/* Interrupt what is left of @t: directly on our node, through one leader per
 * other node with RULE_NUMA_FANOUT. */
static void send_ipis(struct tlbpol_engine *eng, uint32_t me, struct slot *s,
		      struct tlbpol_cpuset *t)
{
	drop_led(eng, me, s, t);
	kick(eng, me, t, &cpu_of(eng, me)->cnt.task);
}

/*
 * NUMA fan-out: choose one leader among @t in each remote node where that
 * pays.  The initiator saves (k - 1) cross-node sends for a node with k
 * targets, and the others pay one more hop (the leader's interrupt and its
 * sends); with the cost model that is worth it when (k - 1) remote sends
 * cost more than one interrupt.  Returns 1 if any leader was chosen.
 */
static int choose_leaders(struct tlbpol_engine *eng, uint32_t me, struct slot *s,
			  const struct tlbpol_cpuset *t)
{
	uint32_t words = eng->words, mynode = node_of(eng, me);
	int any = 0;

	if (!(params_of(eng)->rules & TLBPOL_RULE_NUMA_FANOUT) || eng->nr_nodes < 2)
		return 0;
	for (uint32_t w = 0; w < words; w++)
		s->leaders[w] = 0;
	for_each_target(i, t, eng) {
		uint32_t node = node_of(eng, (uint32_t)i), k = 0;
		const uint64_t *nm = &eng->node_mask[(size_t)node * words];
		int taken = 0;

		if (node == mynode)
			continue;
		for (uint32_t w = 0; w < words && !taken; w++) {
			taken = (s->leaders[w] & nm[w]) != 0;
			k += prim_popcount64(t->bits[w] & nm[w]);
		}
		if (taken || (uint64_t)(k - 1) * params_of(eng)->cost_ipi_remote <= params_of(eng)->cost_ipi)
			continue;
		s->leaders[i / 64] |= 1ULL << (i % 64);
		any = 1;
	}
	return any;
}

/*
 * Take the request's generations.  This must come before the footprints and
 * CPU states are read: a CPU coming back to an address space publishes its
 * return (footprint bit, lazy flag, state) and then reads the generation, so
 * either it reads ours and catches up, or we read its return and target it
 * (Linux flush_tlb_mm_range(): inc_mm_tlb_gen() before mm_cpumask()).
 */
static void take_generations(struct tlbpol_engine *eng, struct slot *s)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		s->flushes[k].gen = prim_fetch_add(&eng->as[s->flushes[k].as_index].gen, 1ULL) + 1;
}

/*
 * Flush this CPU, choose and publish the targets, post to their inboxes, and
 * (unless @lazy, or @delay turns of the caller's wait are to pass first)
 * interrupt them.  The caller took the generations and chose the candidates
 * @t after them, and waits.
 */
static void arm(struct tlbpol_engine *eng, uint32_t me, struct slot *s,
		struct tlbpol_cpuset *t, int lazy, uint32_t delay)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint64_t mybit = 1ULL << (me % 64);
	int tables = any_part(s, TLBPOL_FLUSHF_TABLES), global = any_part(s, TLBPOL_FLUSHF_GLOBAL);
	uint32_t n = 0;

	/*
	 * Lazy work was flushed here already when it was submitted, but only
	 * if this CPU was in the footprint then: one that came back since,
	 * with its entries retained, read an older generation than this
	 * request's and relies on this flush.
	 */
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const struct req_flush *rf = &s->flushes[k];

		if (!may_cache(eng, rf->as_index, rf->global, me))
			continue;
		flush_on(eng, me, &rf->f, rf->as_index, rf->gen, &c->cnt.task);
		prim_count(&c->cnt.task.local_flushes, 1);
	}
	s->lazy = (uint32_t)lazy;
	for_each_target(i, t, eng) {
		enum skip why = skippable(eng, (uint32_t)i, s, tables, global, 1);

		if (why != SKIP_NO) {
			t->bits[i / 64] &= ~(1ULL << (i % 64));
			count_skip(c, why);
		} else {
			n++;
		}
	}
	s->fanout = !lazy && n && choose_leaders(eng, me, s, t);
	c->busy |= 1u << (s - c->slots);
	for (uint32_t w = 0; w < eng->words; w++)
		c->direct[w] = 0;
	prim_store_seqcst(&s->acks, n);
	if (!n)
		return;
	/*
	 * Leaders last: a leader may claim early (our lazy requests leave our
	 * bit in its inbox, and a serve looks at all our slots), and what it
	 * forwards is what it reads of the targets then.  With more than 64
	 * CPUs the targets are several words; a leader whose bit is set only
	 * after every word is reads them all (its claim, an RMW on our last
	 * store to its word, synchronizes with it).
	 */
	for (uint32_t w = 0; w < eng->words; w++)
		prim_store_seqcst(&s->targets[w], t->bits[w] & (s->fanout ? ~s->leaders[w] : ~0ULL));
	if (s->fanout)
		for (uint32_t w = 0; w < eng->words; w++)
			if (t->bits[w] & s->leaders[w])
				prim_fetch_or(&s->targets[w], t->bits[w] & s->leaders[w]);
	for_each_target(i, t, eng) {
		uint64_t xbit = 1ULL << (i % 64);
		enum skip why;

		prim_fetch_or(&cpu_of(eng, i)->inbox[me / 64], mybit);
		/*
		 * The target may have gone offline, lazy or preempted after we
		 * looked.  Take our request back if it has not claimed it; if
		 * it has, it flushes and acknowledges as usual.
		 */
		why = skippable(eng, (uint32_t)i, s, tables, global, 0);
		if (why != SKIP_NO && (prim_fetch_and(&s->targets[i / 64], ~xbit) & xbit)) {
			t->bits[i / 64] &= ~xbit;
			prim_fetch_sub_release(&s->acks, 1u);
			count_skip(c, why);
			/* A leader that went away: its node is interrupted
			 * directly (the request is published: leave it be). */
			if (s->fanout && (s->leaders[i / 64] & xbit)) {
				const uint64_t *nm =
					&eng->node_mask[(size_t)node_of(eng, (uint32_t)i) * eng->words];

				for (uint32_t w = 0; w < eng->words; w++)
					c->direct[w] |= nm[w];
			}
		}
	}
	if (!lazy && !delay)
		send_ipis(eng, me, s, t);
}

/*
 * The end of the IPI delay: interrupt the targets of @t that we would
 * interrupt ourselves (not those a leader does) and that have not claimed
 * @s yet; count the others as served without an interrupt.
 */
static void kick_unclaimed(struct tlbpol_engine *eng, uint32_t me, struct slot *s,
			   struct tlbpol_cpuset *t)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t before = 0, after = 0;

	drop_led(eng, me, s, t);
	for (uint32_t w = 0; w < eng->words; w++) {
		before += prim_popcount64(t->bits[w]);
		t->bits[w] &= prim_load_acquire(&s->targets[w]);
		after += prim_popcount64(t->bits[w]);
	}
	prim_count(&c->cnt.task.lazy_skipped, before - after);
	kick(eng, me, t, &c->cnt.task);
}

/*
 * cfg->wait_limit turns of one wait have passed (again): interrupt the
 * targets that have not taken @s yet ourselves, whoever was to (a leader, a
 * delay, a polling flag: none of that matters now, and an interrupt lost on
 * the way is recovered), and tell the host (ops->stuck).  A target that took
 * the request is flushing and acknowledges by itself.  Never a completion:
 * the wait goes on until every acknowledgement is in.
 */
static void watchdog(struct tlbpol_engine *eng, uint32_t me, struct slot *s, uint64_t turn)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t n = unclaimed(eng, s, &c->fwd_wait);

	if (n) {
		eng->ops.send_ipi(eng->ops_ctx, me, &c->fwd_wait);
		prim_count(&c->cnt.task.ipis_sent, n);
		prim_count(&c->cnt.task.ipis_resent, n);
	}
	prim_count(&c->cnt.task.stuck_calls, 1);
	if (eng->ops.stuck)
		eng->ops.stuck(eng->ops_ctx, me, &c->fwd_wait, turn);
}

/*
 * Wait for the targets of @s, serving our own inbox meanwhile (two CPUs
 * shooting at each other must not wait for each other).  With
 * RULE_POLLING_CPUS we say so in `polling`, and kick() leaves us out: see
 * there for why the serve after clearing it is needed.  Not while this CPU
 * is already inside tlbpol__serve() (a callback that waits): our serves
 * would return at once, and the outer one runs only after we return.
 *
 * @unkicked: targets arm() has not interrupted (ipi_delay_spins), or NULL:
 * after @delay turns those that have not claimed the request by then are.
 * Polling is never a safety matter: a target acknowledges only after it
 * flushed, interrupted or not; leaving a CPU out only moves when it flushes,
 * and the initiator waits for that either way.
 */
static void wait_acks(struct tlbpol_engine *eng, uint32_t me, struct slot *s,
		      struct tlbpol_cpuset *unkicked, uint32_t delay)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	int poll = prim_load_acquire(&s->acks) &&
		   (params_of(eng)->rules & TLBPOL_RULE_POLLING_CPUS) &&
		   !prim_load_relaxed(&c->in_serve);

	if (poll)
		prim_store_seqcst(&c->polling, 1u);
	for (uint32_t turn = 1; prim_load_acquire(&s->acks); turn++) {
		tlbpol__serve(eng, me);
		if (unkicked && turn >= delay) {
			kick_unclaimed(eng, me, s, unkicked);
			unkicked = NULL;
		}
		/*
		 * A fan-out leader is chosen once; in a guest it may then be
		 * descheduled, and the running vCPUs of its node would wait for
		 * it.  Past the recheck, interrupt every target that has not
		 * claimed the request yet ourselves (their inboxes already name
		 * it; one that claims meanwhile takes a spurious interrupt).
		 */
		if (s->fanout && turn == delay + TLBPOL_FANOUT_RECHECK) {
			unclaimed(eng, s, &c->fwd_wait);
			kick(eng, me, &c->fwd_wait, &c->cnt.task);
		}
		if (eng->wait_limit && turn % eng->wait_limit == 0)
			watchdog(eng, me, s, turn);
		if (eng->ops.relax)
			eng->ops.relax(eng->ops_ctx, me);
		else
			prim_cpu_relax();
	}
	if (unkicked) /* all served within the delay: counted there */
		kick_unclaimed(eng, me, s, unkicked);
	if (poll) {
		prim_store_seqcst(&c->polling, 0u);
		prim_fence();
		tlbpol__serve(eng, me);
	}
}

void tlbpol__shoot(struct tlbpol_engine *eng, uint32_t me, struct slot *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t n, delay;

	/*
	 * The caller changed the PTEs before calling us; order those stores
	 * before the loads of footprints and CPU states below (a CPU joining a
	 * footprint fences the other way in tlbpol_switch()).
	 */
	prim_fence();
	n = candidates(eng, me, s, &c->targets);
	if (n && broadcast_cheaper(eng, me, s, &c->targets, n)) {
		/*
		 * The broadcast reaches every CPU, this one included, whatever
		 * it runs or caches, and is complete when it returns: nobody
		 * has to catch up on it, so it takes no generation.
		 */
		for (uint32_t k = 0; k < s->nr_flushes; k++) {
			eng->ops.broadcast(eng->ops_ctx, me, &s->flushes[k].f);
			prim_count(&c->cnt.task.broadcasts, 1);
		}
		return;
	}
	take_generations(eng, s);
	prim_fence();
	candidates(eng, me, s, &c->targets);
	delay = params_of(eng)->rules & TLBPOL_RULE_POLLING_CPUS ? params_of(eng)->ipi_delay_spins : 0;
	arm(eng, me, s, &c->targets, 0, delay);
	wait_acks(eng, me, s, delay ? &c->targets : NULL, delay);
	c->busy &= ~(1u << (s - c->slots));
}

/* A free lazy slot, completing the oldest in flight if all are busy. */
struct slot *tlbpol__lazy_slot(struct tlbpol_engine *eng, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	tlbpol__reap(eng, me);
	for (uint32_t i = 1; i < TLBPOL_SLOTS; i++)
		if (!slot_busy(c, i))
			return &c->slots[i];
	tlbpol__force_lazy(eng, me);
	return &c->slots[1];
}

void tlbpol__post_lazy(struct tlbpol_engine *eng, uint32_t me, struct slot *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	if (!s->nr_flushes)
		return;
	take_generations(eng, s);
	prim_fence();
	candidates(eng, me, s, &c->targets);
	arm(eng, me, s, &c->targets, 1, 0);
	tlbpol__reap(eng, me);
}

/* Complete every lazy request in flight: interrupt whoever has not claimed
 * it yet, and wait (tlbpol_flush(.., BY_LAZY)). */
void tlbpol__force_lazy(struct tlbpol_engine *eng, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	for (uint32_t i = 1; i < TLBPOL_SLOTS; i++) {
		struct slot *s = &c->slots[i];

		if (!slot_busy(c, i))
			continue;
		unclaimed(eng, s, &c->targets);
		kick(eng, me, &c->targets, &c->cnt.task);
		wait_acks(eng, me, s, NULL, 0);
	}
	tlbpol__reap(eng, me);
}

void tlbpol__reap(struct tlbpol_engine *eng, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	for (uint32_t i = 1; i < TLBPOL_SLOTS; i++) {
		struct slot *s = &c->slots[i];

		if (slot_busy(c, i) && !prim_load_acquire(&s->acks)) {
			c->busy &= ~(1u << i);
			tlbpol__slot_done(eng, me, s);
		}
	}
}
