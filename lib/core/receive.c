/* SPDX-License-Identifier: MIT */
/*
 * receive.c - the receiving side of a shootdown, and its delivery.
 *
 * tlbpol_handle_ipi() claims every request waiting for this CPU from any
 * number of initiators (no lock: each claim is one atomic RMW on the
 * request's target bitmap), merges them per address space into one flush,
 * skips what its generation already covers, flushes a range only when that
 * brings it exactly up to date and otherwise the whole address space (Linux
 * flush_tlb_func(), tlbpol__range_catches_up()), and acknowledges each
 * request.  It also holds what both sides
 * use to deliver one: a local flush that records the generation it reached
 * (tlbpol__flush_on()), whether a CPU may cache a part (tlbpol__may_cache())
 * and an interrupt that spares polling CPUs (tlbpol__kick()).  shootdown.c,
 * the initiating side, calls down into it; it calls only pending.c (the
 * settle of a leaving CPU) and ranges.c.
 */
#include "call.h"
#include "internal.h"
#include "sort.h"

/*
 * Flush @f on @cpu (which is the calling CPU) and account for it.  A whole-AS
 * flush covers every change published before it: the generation read before
 * it is what this CPU has caught up to.  A range flush of generation @gen
 * advances the CPU only if it was exactly one behind.
 */
void tlbpol__flush_on(struct tlbpol_engine *eng, uint32_t cpu, const struct tlbpol_flush *f,
		      uint32_t as_index, uint64_t gen, struct cpu_stats *st)
{
	uint64_t *mine = local_gen_of(eng, cpu, as_index);
	uint64_t now = 0;

	if (f->kind != TLBPOL_FLUSH_PAGES)
		now = prim_load_seqcst(&eng->as[as_index].gen);
	/* Nothing to flush under any tag: caught up all the same. */
	if (tlbpol__flush_local(eng, cpu, f, as_index))
		count_flush(st, f);
	if (f->kind != TLBPOL_FLUSH_PAGES)
		gen_raise(mine, now);
	else if (gen && prim_load_relaxed(mine) + 1 == gen)
		gen_raise(mine, gen);
}

/*
 * Does a range flush of generation @gen bring @cpu exactly up to date?  Only
 * then does Linux flush a range (flush_tlb_func(), b0579ade7cd8): the CPU
 * must be one generation behind, for the range is all that generation
 * changed and gen-skip trusts what the CPU's generation says, and no newer
 * flush of the address space may be on its way ("2. f->new_tlb_gen ==
 * mm_tlb_gen.  This is purely an optimization"): otherwise one whole flush
 * now catches up with those too, and their requests find nothing to do,
 * here or at their initiators, which skip this CPU by its generation
 * (under gen-targets).  In the model that is what wins a storm: tlbpol-sim
 * dontneed on 64 CPUs sent 31311 interrupts with it, 55088 without (3
 * seeds).  The load of the address space's generation
 * is a heuristic, so relaxed: the generation a whole flush reaches is read
 * again, sequentially consistent, before it (tlbpol__flush_on()).  Not for
 * global parts, which generations do not cover (skippable()).
 */
int tlbpol__range_catches_up(const struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index,
			     uint64_t gen)
{
	return prim_load_relaxed(local_gen_of(eng, cpu, as_index)) + 1 == gen &&
	       prim_load_relaxed(&eng->as[as_index].gen) == gen;
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
int tlbpol__may_cache(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
		      uint32_t as_index, uint32_t global, uint32_t cpu)
{
	if (!(prm->rules & TLBPOL_RULE_FOOTPRINT) || global)
		return 1;
	return bitmap_test(eng->as[as_index].footprint, cpu) ||
	       bitmap_test(eng->as[as_index].leaving, cpu);
}

/* A round's ranges (struct tlbpol_cpu's recv_ranges), whose pad holds
 * their recv_as index: by address space, then page size and address. */
static inline int recv_less(const struct tlbpol_range *x, const struct tlbpol_range *y)
{
	if (x->pad != y->pad)
		return x->pad < y->pad;
	if (x->page_shift != y->page_shift)
		return x->page_shift < y->page_shift;
	return x->va < y->va;
}

TLBPOL_DEFINE_HEAPSORT(sort_recv, struct tlbpol_range, recv_less)

struct recv_round {
	uint32_t nr_as;
	uint32_t nr_ranges;
};

static uint32_t req_ranges(const struct request *s)
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
void tlbpol__kick(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		  struct tlbpol_cpuset *t, struct cpu_stats *cnt)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < eng->words; w++)
		n += prim_popcount64(t->bits[w]);
	if (n && (prm->rules & TLBPOL_RULE_POLLING_CPUS)) {
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
/*
 * NUMA fan-out: a leader interrupts the targets of its node that have not
 * claimed the request yet; they acknowledge to the initiator themselves.
 * The initiator publishes the targets before it posts to their inboxes, so
 * a leader that claimed early may get here before a target's inbox names
 * the initiator: post it again (idempotent), or the target would take our
 * interrupt, find nothing, and never be interrupted for it again.
 */
static void forward(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		    uint32_t from, const struct request *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	const uint64_t *mask = &eng->node_mask[(size_t)node_of(eng, me) * eng->words];

	for (uint32_t w = 0; w < eng->words; w++)
		c->fwd->bits[w] = prim_load_acquire(&s->targets[w]) & mask[w];
	c->fwd->bits[me / 64] &= ~(1ULL << (me % 64));
	for_each_target(i, c->fwd, eng) {
		/*
		 * A target that went OFFLINE is not interrupted: the initiator
		 * published the targets before posting to their inboxes, so
		 * a CPU may have gone OFFLINE (its drain finding nothing) while
		 * still among them; the initiator's post-then-recheck in arm()
		 * sees OFFLINE and takes the request back.  Sequentially
		 * consistent, as that recheck and the store in
		 * tlbpol_cpu_state() are.
		 */
		if (prim_load_seqcst(&cpu_of(eng, i)->state) == TLBPOL_CPU_OFFLINE) {
			c->fwd->bits[i / 64] &= ~(1ULL << (i % 64));
			continue;
		}
		prim_fetch_or(&cpu_of(eng, i)->inbox[from / 64], 1ULL << (from % 64));
	}
	tlbpol__kick(eng, prm, me, c->fwd, &c->cnt.irq);
}

static void recv_add(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		     struct recv_round *rr, uint32_t from, uint32_t req_index)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	const struct request *s = &cpu_of(eng, from)->reqs[req_index];

	if (s->fanout && bitmap_test(s->leaders, me))
		forward(eng, prm, me, from, s);
	c->claims[c->nr_claims++] = from * TLBPOL_REQS + req_index;
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
		/*
		 * No room for its ranges (a request may carry more than a
		 * round holds: struct tlbpol_cpu's recv_cap): flush the address
		 * space whole, a superset, never less.  As Linux does past
		 * tlb_single_page_flush_ceiling.
		 */
		if (rr->nr_ranges + rf->f.nr_ranges > c->recv_cap) {
			if (ra->kind < TLBPOL_FLUSH_AS)
				ra->kind = TLBPOL_FLUSH_AS;
			continue;
		}
		for (uint32_t i = 0; i < rf->f.nr_ranges; i++) {
			struct tlbpol_range *r = &c->recv_ranges[rr->nr_ranges++];

			r->va = rf->f.ranges[i].va;
			r->nr_pages = rf->f.ranges[i].nr_pages;
			r->page_shift = rf->f.ranges[i].page_shift;
			r->pad = c->recv_slot[rf->as_index] - 1u;
		}
	}
}

/* Without RULE_RECEIVER_MERGE: each claimed request's parts, one by one. */
static void recv_each(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	int gen_skip = !!(prm->rules & TLBPOL_RULE_GEN_SKIP);

	for (uint32_t i = 0; i < c->nr_claims; i++) {
		const struct request *s = &cpu_of(eng, c->claims[i] / TLBPOL_REQS)
						->reqs[c->claims[i] % TLBPOL_REQS];

		for (uint32_t k = 0; k < s->nr_flushes; k++) {
			const struct req_flush *rf = &s->flushes[k];
			uint64_t mine = flushed_gen(eng, me, rf->as_index);
			struct tlbpol_flush f = rf->f;

			if (!tlbpol__may_cache(eng, prm, rf->as_index, rf->global, me))
				continue;
			/* Generations count flushes of one address space;
			 * global entries outlive them (see skippable()). */
			if (gen_skip && mine >= rf->gen && !rf->global) {
				prim_count(&c->cnt.irq.gen_skipped, 1);
				continue;
			}
			if (gen_skip && f.kind == TLBPOL_FLUSH_PAGES &&
			    (rf->global ? rf->gen > mine + 1
					: !tlbpol__range_catches_up(eng, me, rf->as_index, rf->gen))) {
				f.kind = rf->global ? TLBPOL_FLUSH_ALL : TLBPOL_FLUSH_AS;
				f.nr_ranges = 0;
				f.ranges = 0;
			}
			tlbpol__flush_on(eng, me, &f, rf->as_index, rf->gen, &c->cnt.irq);
			prim_count(&c->cnt.irq.remote_flushes, 1);
		}
	}
}

/*
 * RULE_RECEIVER_MERGE: everything claimed for one address space becomes one
 * flush: the union of the ranges, merged, or one whole-AS flush past the
 * ceiling or when any request asked for one.
 */
static void recv_merged(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			struct recv_round *rr)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	int gen_skip = !!(prm->rules & TLBPOL_RULE_GEN_SKIP);
	uint32_t i = 0;

	sort_recv(c->recv_ranges, rr->nr_ranges);
	for (uint32_t a = 0; a < rr->nr_as; a++) {
		struct recv_as *ra = &c->recv_as[a];
		struct tlbpol_as *as = &eng->as[ra->as_index];
		uint64_t mine = flushed_gen(eng, me, ra->as_index), pages = 0;
		int contiguous = ra->min_gen == mine + 1 && ra->max_gen - mine == ra->nreq;
		int covered = gen_skip && mine >= ra->max_gen;
		struct tlbpol_range *out = &c->recv_ranges[i];
		struct tlbpol_flush f;
		uint32_t n = 0;

		/* This AS's ranges, sorted: they are the next run, merged and
		 * flushed where they lie (the runs after it are untouched). */
		while (i < rr->nr_ranges && c->recv_ranges[i].pad == a) {
			c->recv_ranges[i++].pad = 0;
			n++;
		}
		if (!tlbpol__may_cache(eng, prm, ra->as_index, ra->global, me))
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
		if (f.kind == TLBPOL_FLUSH_PAGES &&
		    (!gen_skip || (ra->global ? contiguous || covered
					      : ra->nreq == 1 && tlbpol__range_catches_up(
						eng, me, ra->as_index, ra->max_gen)))) {
			n = tlbpol__merge_sorted(out, n, &pages);
			if ((prm->rules & TLBPOL_RULE_RANGE_FLUSH) && pages <= prm->flush_ceiling) {
				f.nr_ranges = n;
				f.ranges = out;
			} else {
				f.kind = TLBPOL_FLUSH_AS;
			}
		} else if (f.kind == TLBPOL_FLUSH_PAGES) {
			f.kind = TLBPOL_FLUSH_AS; /* behind: catch up in one flush */
		}
		if (f.kind == TLBPOL_FLUSH_AS && ra->global)
			f.kind = TLBPOL_FLUSH_ALL;
		tlbpol__flush_on(eng, me, &f, ra->as_index, contiguous ? ra->max_gen : 0, &c->cnt.irq);
		if (f.kind == TLBPOL_FLUSH_PAGES && contiguous)
			gen_raise(local_gen_of(eng, me, ra->as_index), ra->max_gen);
		prim_count(&c->cnt.irq.remote_flushes, 1);
	}
}

/* Flush what this round claimed, then acknowledge every claimed request. */
static void recv_finish(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			struct recv_round *rr)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	if (!c->nr_claims)
		return;
	if (prm->rules & TLBPOL_RULE_RECEIVER_MERGE)
		recv_merged(eng, prm, me, rr);
	else
		recv_each(eng, prm, me);
	for (uint32_t a = 0; a < rr->nr_as; a++)
		c->recv_slot[c->recv_as[a].as_index] = 0;
	for (uint32_t i = 0; i < c->nr_claims; i++) {
		struct request *s = &cpu_of(eng, c->claims[i] / TLBPOL_REQS)
					  ->reqs[c->claims[i] % TLBPOL_REQS];

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
 * nested call declined is still served.  Out of line: its frame is large,
 * and tlbpol__serve() below is the common case, an empty inbox.
 */
static __attribute__((noinline)) int serve_posted(struct tlbpol_engine *eng,
						  const struct tlbpol_params *prm, uint32_t me)
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
				for (uint32_t k = 0; k < TLBPOL_REQS; k++) {
					struct request *s = &cpu_of(eng, from)->reqs[k];
					uint64_t *tw = &s->targets[me / 64];

					if (!(prim_load_acquire(tw) & mybit))
						continue;
					if (!(prim_fetch_and(tw, ~mybit) & mybit))
						continue; /* taken back by its initiator */
					if (c->nr_claims == TLBPOL_CLAIM_MAX ||
					    rr.nr_as + s->nr_flushes > c->flush_cap ||
					    rr.nr_ranges + req_ranges(s) > c->recv_cap)
						recv_finish(eng, prm, me, &rr);
					recv_add(eng, prm, me, &rr, from, k);
					served++;
				}
			}
		}
		recv_finish(eng, prm, me, &rr);
		__asm__ __volatile__("" ::: "memory");
		prim_store_relaxed(&c->in_serve, 0u);
		prim_fence();
	} while (!inbox_empty(eng, me));
	return served;
}

/*
 * Nothing posted: every turn of a wait and every idle tick ends here, with
 * the same relaxed look at the inbox that serve_posted()'s loop begins with
 * (a caller that needs it ordered after a store of its own fences first:
 * cpu.c, shootdown.c).  The guard, its fence, an empty round and the large
 * frame were 124 of an idle tick's 391 instructions (callgrind, 2 CPUs,
 * default rules); 19 now.  A hypervisor that emulates its guest's kernel
 * (kvm-pvm) pays for each one, in every turn of every wait.
 */
int tlbpol__serve(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me)
{
	return inbox_empty(eng, me) ? 0 : serve_posted(eng, prm, me);
}

int tlbpol_handle_ipi(struct tlbpol_engine *eng, uint32_t cpu)
{
	int served;

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
	served = tlbpol__serve(eng, params_of(eng), cpu);
	/*
	 * Between engine calls (never inside one: a switch may be loading a
	 * tag), onto a global tag the address space got since this CPU
	 * loaded it: its next shootdowns can broadcast to it.  The guard
	 * keeps a nested call out meanwhile.
	 */
	if (tlbpol__tags_movable(eng) && !call_guard(cpu_of(eng, cpu))) {
		tlbpol__tag_to_global(eng, cpu);
		call_leave(cpu_of(eng, cpu));
	}
	/* For initiators' IPI delay: see struct tlbpol_cpu. */
	if (served > 0 && !prim_load_relaxed(&cpu_of(eng, cpu)->claims_by_irq))
		prim_store_relaxed(&cpu_of(eng, cpu)->claims_by_irq, 1u);
	return served;
}

/* ======================================================================== */
/* Initiating                                                               */
/* ======================================================================== */

