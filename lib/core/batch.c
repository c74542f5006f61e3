/* SPDX-License-Identifier: MIT */
/*
 * batch.c - per-CPU batches of deferred flushes (RULE_BATCH: Mel Gorman's
 * batching, Linux 72b252aed506 "mm: send one IPI per CPU to TLB flush all
 * entries after unmapping pages").
 *
 * A CPU queues the shootdowns its events may defer, each with its deadline
 * (BY_WRITEBACK < BY_FREE < BY_LAZY).  Completing a deadline turns every
 * entry due by then into one request: one part per address space, its pages
 * sorted, deduplicated and merged into ranges per page size (a 2 MiB page and
 * the 4 KiB pages under it are different TLB entries and are named apart, as
 * Linux's mmu_gather keeps a stride), and an address space past the ceiling
 * escalated to one whole-AS flush.  One request means one interrupt per
 * target for the whole batch, across address spaces.
 */
#include "enqueue.h"

/*
 * Past the ceiling (or with range flushing off, as before Linux 611ae8e3f520
 * "x86/tlb: enable tlb flush range support for x86") one whole-AS flush is
 * cheaper than the invalidations it replaces (Linux flush_tlb_mm_range() and
 * tlb_single_page_flush_ceiling, 33 by default).  A global entry survives
 * a whole-AS flush (a CR3 write keeps it, SDM 4.10.4.1), so it needs
 * FLUSH_ALL.
 */
static void finalize_kind(const struct tlbpol_params *prm, struct req_flush *rf)
{
	if (rf->global)
		rf->f.flags |= TLBPOL_FLUSHF_GLOBAL;
	if (rf->f.kind == TLBPOL_FLUSH_PAGES && (prm->rules & TLBPOL_RULE_RANGE_FLUSH) &&
	    rf->pages <= prm->flush_ceiling)
		return;
	if (rf->f.kind == TLBPOL_FLUSH_PAGES)
		rf->f.kind = TLBPOL_FLUSH_AS;
	if (rf->global)
		rf->f.kind = TLBPOL_FLUSH_ALL;
	rf->f.nr_ranges = 0;
	rf->f.ranges = 0;
}

static void init_part(struct req_flush *rf, const struct tlbpol_as *as)
{
	prim_zero(rf, sizeof(*rf));
	rf->f.as_tag = as->tag;
	rf->f.kind = TLBPOL_FLUSH_PAGES;
	rf->as_index = as->index;
	rf->lo = ~0ULL;
}

/* A one-event request in @s. */
void tlbpol__single(const struct tlbpol_params *prm, struct request *s, const struct tlbpol_as *as,
		    const struct tlbpol_event *ev)
{
	struct req_flush *rf = &s->flushes[0];
	struct tlbpol_range *r = &s->ranges[0];

	init_part(rf, as);
	r->va = ev->va;
	r->nr_pages = ev->nr_pages;
	r->page_shift = ev->page_shift;
	r->pad = 0;
	rf->f.flags = (ev->flags & TLBPOL_EVF_TABLES_FREED) ? TLBPOL_FLUSHF_TABLES : 0;
	rf->f.nr_ranges = 1;
	rf->f.ranges = r;
	rf->pages = ev->nr_pages;
	rf->global = tlbpol__event_global(ev);
	s->nr_flushes = 1;
	s->min_seq = ~0ULL;
	finalize_kind(prm, rf);
}

#define SELECTED(p) ((p)->deadline >= from && (p)->deadline <= to)

/*
 * Move @cpu's entries due in [from, to] into request @s.  Returns the
 * events they carry (0: @s is untouched).
 */
static uint32_t build(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
		      struct request *s, uint32_t from, uint32_t to)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint32_t nf = 0, selected = 0, off = 0, kept = 0;
	/* A lazy request holds fewer (struct tlbpol_cpu): the parts past
	 * them wait for the next request, the ranges past them are whole-AS
	 * flushes, as in a synchronous one. */
	uint32_t flush_cap = s == &c->reqs[REQ_SYNC] ? c->flush_cap : c->lazy_flush_cap;
	uint32_t range_cap = s == &c->reqs[REQ_SYNC] ? c->range_cap : c->lazy_range_cap;
	uint64_t pages_in = 0;

	s->min_seq = ~0ULL;
	for (uint32_t i = 0; i < c->nr_pending; i++) {
		struct pending *p = &c->pending[i];
		struct req_flush *rf;

		if (!SELECTED(p))
			continue;
		if (!c->as_slot[p->as_index]) {
			if (nf == flush_cap)
				continue; /* the next request takes this AS */
			init_part(&s->flushes[nf], &eng->as[p->as_index]);
			c->as_slot[p->as_index] = ++nf;
		}
		rf = &s->flushes[c->as_slot[p->as_index] - 1];
		rf->f.flags |= (p->ev_flags & TLBPOL_EVF_TABLES_FREED) ? TLBPOL_FLUSHF_TABLES : 0;
		rf->f.nr_ranges++;
		rf->entries++;
		rf->global |= p->pte_global != 0;
		rf->wide |= p->wide;
		if (p->seq < s->min_seq)
			s->min_seq = p->seq;
		selected += p->events;
	}
	if (!selected)
		return 0;
	/*
	 * Room for the ranges of the parts that may stay page flushes: those
	 * with no more entries than the ceiling (each entry is at least one
	 * page), while the request's range_cap lasts.  The others carry none and
	 * are whole-AS flushes (a superset: never less safe).
	 */
	for (uint32_t k = 0; k < nf; k++) {
		struct req_flush *rf = &s->flushes[k];
		uint32_t n = rf->f.nr_ranges;

		if ((prm->rules & TLBPOL_RULE_RANGE_FLUSH) && !rf->wide &&
		    n <= prm->flush_ceiling && off + n <= range_cap) {
			rf->f.ranges = &s->ranges[off];
			off += n;
		} else {
			rf->f.ranges = 0;
		}
		rf->f.nr_ranges = 0;
	}
	for (uint32_t i = 0; i < c->nr_pending; i++) {
		struct pending *p = &c->pending[i];
		struct req_flush *rf;
		struct tlbpol_range *r;

		if (!SELECTED(p) || !c->as_slot[p->as_index]) {
			c->pending[kept++] = *p;
			continue;
		}
		rf = &s->flushes[c->as_slot[p->as_index] - 1];
		rf->pages += p->nr_pages;
		pages_in += p->nr_pages;
		tlbpol__hull_add(p, &rf->lo, &rf->hi);
		if (!rf->f.ranges)
			continue;
		r = (struct tlbpol_range *)&rf->f.ranges[rf->f.nr_ranges++];
		r->va = p->va;
		r->nr_pages = p->nr_pages;
		r->page_shift = p->page_shift;
		r->pad = 0;
	}
	c->nr_pending = kept;
	c->pending_pages -= (uint32_t)pages_in;
	for (uint32_t k = 0; k < nf; k++) {
		struct req_flush *rf = &s->flushes[k];

		/*
		 * Pages counted with their duplicates: past the ceiling even so
		 * means one whole-AS flush, and sorting would be wasted (a
		 * duplicate can only make the escalation early, never unsafe).
		 */
		if (!rf->f.ranges)
			rf->f.kind = TLBPOL_FLUSH_AS;
		else if (rf->pages <= prm->flush_ceiling &&
			 (prm->rules & TLBPOL_RULE_RANGE_FLUSH))
			rf->f.nr_ranges = tlbpol__merge_ranges((struct tlbpol_range *)rf->f.ranges,
							       rf->f.nr_ranges, &rf->pages);
		finalize_kind(prm, rf);
		c->as_slot[rf->as_index] = 0;
	}
	s->nr_flushes = nf;
	prim_count(&c->cnt.task.coalesced, selected - 1);
	return selected;
}
#undef SELECTED

int tlbpol__flush_batch(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
			uint32_t from, uint32_t to)
{
	struct request *s = &cpu_of(eng, cpu)->reqs[REQ_SYNC];
	uint32_t n, total = 0;

	/* One request per TLBPOL__PARTS_MAX address spaces of the batch. */
	while ((n = build(eng, prm, cpu, s, from, to))) {
		tlbpol__shoot(eng, prm, cpu, s);
		tlbpol__release_entries(eng, cpu, s);
		total += n;
	}
	/* Nothing due by the free is left waiting: the age restarts with
	 * the next such entry (tlbpol_tick(), cfg->free_ticks). */
	if (from <= TLBPOL_BY_WRITEBACK && to >= TLBPOL_BY_FREE)
		cpu_of(eng, cpu)->free_aging = 0;
	tlbpol__run_dfrees(eng, cpu);
	return (int)total;
}

/* Post this CPU's BY_LAZY entries to their targets without interrupting
 * anyone (LATR): they complete as the targets tick or switch. */
int tlbpol__post_lazy_batch(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			    uint32_t cpu)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint32_t total = 0;

	/* One lazy request per TLBPOL__PARTS_MAX address spaces: all of them
	 * leave the batch (a full batch must come out empty of them). */
	for (;;) {
		struct request *s;
		uint32_t n;
		int lazy = 0;

		for (uint32_t i = 0; i < c->nr_pending && !lazy; i++)
			lazy = c->pending[i].deadline == TLBPOL_BY_LAZY;
		if (!lazy)
			break;
		s = tlbpol__lazy_request(eng, prm, cpu);
		n = build(eng, prm, cpu, s, TLBPOL_BY_LAZY, TLBPOL_BY_LAZY);
		/* Numbered before arm() publishes it (stamp.c reads it). */
		prim_store_release(&s->stamp_seq, ++c->stamp_next);
		tlbpol__post_lazy(eng, prm, cpu, s);
		if (!n)
			break;
		total += n;
	}
	return (int)total;
}

/*
 * The batch has no entry left for an event with @key: an entry it may widen
 * instead, one of the entries that are flushed with it (same address space,
 * deadline and flags, any page size).  NULL if there is none, or if the
 * address space has no more entries pending on this CPU than the flush
 * ceiling (its pending span counts them, in O(1)): its part may still be page
 * flushes (each entry is at least a page), and a whole-AS flush there would
 * cost every CPU its TLB (tlbpol-sim's reclaim across processes had 51% more
 * TLB misses when such parts were widened).  Past the ceiling the part is
 * most likely a whole-AS flush anyway, and widening costs nothing.
 */
struct pending *tlbpol__widenable(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				  uint32_t cpu, struct tlbpol_cpu *c, uint64_t key,
				  uint32_t as_index)
{
	/* Every field but the page size and the wide mark. */
	uint64_t mask = ~(pending_key(0, 0xff, 0, 0, 0) | KEY_WIDE);
	uint32_t n = span_count(prim_load_relaxed(&span_of(eng, cpu, as_index)->count_global));
	const struct tlbpol_params *p = prm;

	/* entry_cap / 2 is never below the ceiling (TLBPOL__ENTRIES()) but
	 * in the oracle's small-batch build, which must widen too. */
	if (n <= p->flush_ceiling && n <= c->entry_cap / 2 &&
	    (p->rules & TLBPOL_RULE_RANGE_FLUSH))
		return 0;
	for (uint32_t i = c->nr_pending; i-- > 0;)
		if (!((c->pending[i].key ^ key) & mask))
			return &c->pending[i];
	return 0;
}

void tlbpol__enqueue(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
		     struct tlbpol_as *as, uint32_t cpu, const struct tlbpol_event *ev,
		     uint32_t deadline)
{
	enqueue(eng, prm, cpu_of(eng, cpu), as, cpu, ev, deadline);
}
