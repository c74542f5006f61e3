/* SPDX-License-Identifier: MIT */
/*
 * shootdown.c - acting on decisions: local flushes, shootdowns with
 * acknowledgements, per-CPU batches of deferred flushes.
 *
 * Protocol.  Each CPU owns one request (struct request) and an ack counter.
 * To shoot down, the initiator fills its request, sets acks to the number of
 * targets, sets its bit in each target's inbox bitmap, calls ops->send_ipi,
 * and waits for acks to reach zero.  A target's tlbpol_handle_ipi() takes its
 * whole inbox with one exchange per word, performs each initiator's flushes
 * and decrements that initiator's acks.  The request is read only between
 * the inbox bit (set after the request is written) and the ack, and the
 * initiator does not touch it until every ack is in, so no lock is needed
 * and any number of initiators can post to one target at once.  While it
 * waits, an initiator keeps serving its own inbox, so two CPUs shooting each
 * other down both finish (the deadlock Linux avoids by running
 * flush_smp_call_function_queue() while waiting in smp_call_function_many()).
 */
#include "internal.h"

static void count_flush(struct tlbpol_stats *s, const struct tlbpol_flush *f)
{
	if (f->kind == TLBPOL_FLUSH_PAGES) {
		uint64_t pages = 0;

		for (uint32_t i = 0; i < f->nr_ranges; i++)
			pages += f->ranges[i].nr_pages;
		prim_count(&s->pages_flushed, pages);
	} else {
		prim_count(&s->full_flushes, 1);
	}
}

/*
 * May @cpu hold entries this flush removes?  Global entries live in every
 * CPU's TLB whatever address space it runs (they survive CR3 writes), so the
 * footprint cannot narrow them.  A CPU not yet in the footprint has not
 * walked the address space since the PTE changed (see tlbpol_switch()).
 */
static int may_cache(const struct tlbpol_engine *eng, const struct flush_meta *m, uint32_t cpu)
{
	if (!(eng->rules & TLBPOL_RULE_FOOTPRINT) || m->global)
		return 1;
	return bitmap_test(eng->as[m->as_index].footprint, cpu);
}

int tlbpol__serve(struct tlbpol_engine *eng, uint32_t cpu)
{
	struct tlbpol_cpu *c = &eng->cpus[cpu];
	int served = 0;

	for (uint32_t w = 0; w < eng->words; w++) {
		uint64_t bits;

		if (!prim_load_relaxed(&c->inbox[w]))
			continue;
		bits = prim_xchg_acquire(&c->inbox[w], 0ULL);
		while (bits) {
			uint32_t from = w * 64 + prim_ctz64(bits);
			struct tlbpol_cpu *init = &eng->cpus[from];

			bits &= bits - 1;
			for (uint32_t k = 0; k < init->req.nr_flushes; k++) {
				const struct tlbpol_flush *f = &init->req.flushes[k];

				if (!may_cache(eng, &init->meta[k], cpu))
					continue;
				eng->ops.flush_local(eng->ops_ctx, cpu, f);
				prim_count(&c->cnt.irq.remote_flushes, 1);
				count_flush(&c->cnt.irq, f);
			}
			prim_fetch_sub_release(&init->acks, 1u);
			served++;
		}
	}
	return served;
}

int tlbpol_handle_ipi(struct tlbpol_engine *eng, uint32_t cpu)
{
	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	return tlbpol__serve(eng, cpu);
}

static uint32_t cpu_state_of(const struct tlbpol_engine *eng, uint32_t cpu)
{
	return prim_load_seqcst(&eng->cpus[cpu].state);
}

/*
 * Perform @cpu's request (req.flushes[0 .. nr_flushes)): locally where this
 * CPU may cache the entries, remotely on every other CPU that may, and wait
 * for every acknowledgement.
 */
static void shootdown(struct tlbpol_engine *eng, uint32_t cpu)
{
	struct tlbpol_cpu *c = &eng->cpus[cpu];
	struct tlbpol_cpuset *t = &c->targets;
	uint32_t words = eng->words, n = 0;
	uint64_t tail = eng->nr_cpus % 64 ? (1ULL << (eng->nr_cpus % 64)) - 1 : ~0ULL;
	uint64_t mybit = 1ULL << (cpu % 64);

	/*
	 * The caller changed the PTEs before calling us; order those stores
	 * before the loads of footprints and CPU states below (a CPU joining
	 * the footprint fences the other way in tlbpol_switch()).
	 */
	prim_fence();
	for (uint32_t w = 0; w < words; w++)
		t->bits[w] = 0;
	for (uint32_t k = 0; k < c->req.nr_flushes; k++) {
		const struct flush_meta *m = &c->meta[k];
		const uint64_t *fp = eng->as[m->as_index].footprint;
		int all = !(eng->rules & TLBPOL_RULE_FOOTPRINT) || m->global;

		for (uint32_t w = 0; w < words; w++)
			t->bits[w] |= all ? (w == words - 1 ? tail : ~0ULL)
					  : prim_load_relaxed(&fp[w]);
		if (may_cache(eng, m, cpu)) {
			eng->ops.flush_local(eng->ops_ctx, cpu, &c->req.flushes[k]);
			prim_count(&c->cnt.task.local_flushes, 1);
			count_flush(&c->cnt.task, &c->req.flushes[k]);
		}
	}
	t->bits[cpu / 64] &= ~mybit;

	/* An OFFLINE CPU holds nothing and takes no interrupt. */
	for (int i = tlbpol_cpuset_next(t, -1); i >= 0; i = tlbpol_cpuset_next(t, i)) {
		if (cpu_state_of(eng, (uint32_t)i) == TLBPOL_CPU_OFFLINE)
			t->bits[i / 64] &= ~(1ULL << (i % 64));
		else
			n++;
	}
	if (!n)
		return;

	prim_store_seqcst(&c->acks, n);
	for (int i = tlbpol_cpuset_next(t, -1); i >= 0; i = tlbpol_cpuset_next(t, i)) {
		uint64_t *slot = &eng->cpus[i].inbox[cpu / 64];

		prim_fetch_or(slot, mybit);
		/*
		 * The target may have gone OFFLINE after we looked: it then
		 * drains its inbox after publishing OFFLINE (tlbpol_cpu_state()).
		 * If our bit is still there, take it back and its ack with it.
		 */
		if (cpu_state_of(eng, (uint32_t)i) == TLBPOL_CPU_OFFLINE &&
		    (prim_fetch_and(slot, ~mybit) & mybit)) {
			t->bits[i / 64] &= ~(1ULL << (i % 64));
			prim_fetch_sub_release(&c->acks, 1u);
			n--;
		}
	}
	if (n) {
		eng->ops.send_ipi(eng->ops_ctx, cpu, t);
		prim_count(&c->cnt.task.ipis_sent, n);
	}
	while (prim_load_acquire(&c->acks)) {
		tlbpol__serve(eng, cpu);
		if (eng->ops.relax)
			eng->ops.relax(eng->ops_ctx, cpu);
		else
			prim_cpu_relax();
	}
}

/*
 * Past the ceiling (or with range flushing off, as before seed 001) one
 * whole-AS flush is cheaper than the invalidations it replaces (Linux
 * flush_tlb_mm_range() and tlb_single_page_flush_ceiling, 33 by default).  A
 * global entry survives a whole-AS flush (a CR3 write keeps it, SDM 4.10.4.1),
 * so it needs FLUSH_ALL.
 */
static void finalize_kind(const struct tlbpol_engine *eng, struct tlbpol_flush *f,
			  const struct flush_meta *m)
{
	if ((eng->rules & TLBPOL_RULE_RANGE_FLUSH) && m->pages <= eng->flush_ceiling)
		return;
	f->kind = m->global ? TLBPOL_FLUSH_ALL : TLBPOL_FLUSH_AS;
	f->nr_ranges = 0;
	f->ranges = 0;
}

/* Build a one-event request in @cpu's request and return its flush. */
static struct tlbpol_flush *single_request(struct tlbpol_engine *eng, uint32_t cpu,
					   const struct tlbpol_as *as,
					   const struct tlbpol_event *ev)
{
	struct tlbpol_cpu *c = &eng->cpus[cpu];
	struct tlbpol_flush *f = &c->req.flushes[0];
	struct tlbpol_range *r = &c->req.ranges[0];

	r->va = ev->va;
	r->nr_pages = ev->nr_pages;
	r->page_shift = ev->page_shift;
	r->pad = 0;
	f->as_tag = as->tag;
	f->kind = TLBPOL_FLUSH_PAGES;
	f->flags = (ev->flags & TLBPOL_EVF_TABLES_FREED) ? TLBPOL_FLUSHF_TABLES : 0;
	f->nr_ranges = 1;
	f->pad = 0;
	f->ranges = r;
	c->meta[0].pages = ev->nr_pages;
	c->meta[0].as_index = as->index;
	c->meta[0].global = !!(ev->old_pte & TLBPOL_PTE_GLOBAL);
	c->req.nr_flushes = 1;
	finalize_kind(eng, f, &c->meta[0]);
	return f;
}

int tlbpol__flush_batch(struct tlbpol_engine *eng, uint32_t cpu, uint32_t from, uint32_t to)
{
	struct tlbpol_cpu *c = &eng->cpus[cpu];
	uint32_t nf = 0, selected = 0, kept = 0, off = 0;
	uint64_t pages = 0;

#define SELECTED(p) ((p)->deadline >= from && (p)->deadline <= to)
	/* Group the selected entries by address space: one flush each. */
	for (uint32_t i = 0; i < c->nr_pending; i++) {
		struct pending *p = &c->pending[i];
		uint32_t k;

		if (!SELECTED(p))
			continue;
		if (!c->as_slot[p->as_index]) {
			struct tlbpol_flush *f = &c->req.flushes[nf];

			f->as_tag = eng->as[p->as_index].tag;
			f->kind = TLBPOL_FLUSH_PAGES;
			f->flags = 0;
			f->nr_ranges = 0;
			f->pad = 0;
			c->meta[nf].pages = 0;
			c->meta[nf].as_index = p->as_index;
			c->meta[nf].global = 0;
			c->as_slot[p->as_index] = ++nf;
		}
		k = c->as_slot[p->as_index] - 1;
		c->req.flushes[k].flags |= p->flush_flags;
		c->req.flushes[k].nr_ranges++;
		c->meta[k].pages += p->nr_pages;
		c->meta[k].global |= p->global;
		selected++;
	}
	if (!selected) {
		tlbpol__run_dfrees(eng, c);
		return 0;
	}
	/* Lay each address space's ranges out contiguously, then fill them. */
	for (uint32_t k = 0; k < nf; k++) {
		c->req.flushes[k].ranges = &c->req.ranges[off];
		off += c->req.flushes[k].nr_ranges;
		c->req.flushes[k].nr_ranges = 0;
	}
	for (uint32_t i = 0; i < c->nr_pending; i++) {
		struct pending *p = &c->pending[i];
		struct tlbpol_flush *f;
		struct tlbpol_range *r;

		if (!SELECTED(p))
			continue;
		f = &c->req.flushes[c->as_slot[p->as_index] - 1];
		r = (struct tlbpol_range *)&f->ranges[f->nr_ranges++];
		r->va = p->va;
		r->nr_pages = p->nr_pages;
		r->page_shift = p->page_shift;
		r->pad = 0;
	}
	for (uint32_t k = 0; k < nf; k++) {
		finalize_kind(eng, &c->req.flushes[k], &c->meta[k]);
		c->as_slot[c->meta[k].as_index] = 0;
	}
	c->req.nr_flushes = nf;

	shootdown(eng, cpu);

	for (uint32_t i = 0; i < c->nr_pending; i++) {
		struct pending *p = &c->pending[i];

		if (SELECTED(p)) {
			pages += p->nr_pages;
			prim_fetch_sub_release(&eng->as[p->as_index].pending, 1u);
		} else {
			c->pending[kept++] = *p;
		}
	}
#undef SELECTED
	c->nr_pending = kept;
	c->pending_pages -= (uint32_t)pages;
	prim_count(&c->cnt.task.coalesced, selected - 1);
	tlbpol__run_dfrees(eng, c);
	return (int)selected;
}

/* Queue a deferred shootdown; a batch that fills up flushes itself. */
static void enqueue(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		    const struct tlbpol_event *ev, uint32_t deadline)
{
	struct tlbpol_cpu *c = &eng->cpus[cpu];
	struct pending *p = &c->pending[c->nr_pending++];

	p->va = ev->va;
	p->nr_pages = ev->nr_pages;
	p->seq = c->next_seq++;
	p->as_index = as->index;
	p->page_shift = (uint8_t)ev->page_shift;
	p->deadline = (uint8_t)deadline;
	p->flush_flags = (ev->flags & TLBPOL_EVF_TABLES_FREED) ? TLBPOL_FLUSHF_TABLES : 0;
	p->global = !!(ev->old_pte & TLBPOL_PTE_GLOBAL);
	c->pending_pages += (uint32_t)ev->nr_pages;
	prim_fetch_add(&as->pending, 1u);
	/* Entries hold >= 1 page each, so nr_pending <= pending_pages, and this
	 * flush keeps both within batch_pages. */
	if (c->pending_pages >= eng->batch_pages)
		tlbpol__flush_batch(eng, cpu, TLBPOL_BY_WRITEBACK, TLBPOL_BY_LAZY);
}

/* Last byte (inclusive) of @nr pages of 1 << @shift from @va; validated
 * events and queued entries never wrap. */
static uint64_t range_last(uint64_t va, uint64_t nr, uint32_t shift)
{
	return va + ((nr - 1) << shift) + ((1ULL << shift) - 1);
}

/*
 * An address is being reused (a PTE installed where none was) while
 * deferred flushes are pending in its address space.  A deferred entry may be
 * exactly this address's old translation: if a CPU still caches it, that CPU
 * would keep using the old frame after the new one is mapped, and writes
 * would land in a frame the owner considers gone.  Linux has the same race
 * between batched reclaim and a parallel mprotect/munmap/fault, closed by
 * flush_tlb_batched_pending() (mm/rmap.c, commit 3ea277194daa "mm,
 * mprotect: flush TLB if potentially racing with a parallel reclaim leaving
 * stale TLB entries").  Here: this CPU's own overlapping entries are
 * completed early (their ranges are known); entries of other CPUs are not
 * visible, so, as Linux does, one whole-AS shootdown covers them.
 */
static void settle_reused_range(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
				const struct tlbpol_event *ev)
{
	struct tlbpol_cpu *c = &eng->cpus[cpu];
	uint64_t first = ev->va, last = range_last(ev->va, ev->nr_pages, ev->page_shift);
	uint32_t own = 0, overlap = 0;

	for (uint32_t i = 0; i < c->nr_pending; i++) {
		const struct pending *p = &c->pending[i];

		if (p->as_index != as->index)
			continue;
		own++;
		if (p->va <= last && first <= range_last(p->va, p->nr_pages, p->page_shift))
			overlap = 1;
	}
	if (overlap) {
		tlbpol__flush_batch(eng, cpu, TLBPOL_BY_WRITEBACK, TLBPOL_BY_LAZY);
		own = 0;
	}
	if (prim_load_acquire(&as->pending) > own) {
		struct tlbpol_flush *f = single_request(eng, cpu, as, ev);

		f->kind = TLBPOL_FLUSH_AS;
		f->nr_ranges = 0;
		f->ranges = 0;
		shootdown(eng, cpu);
	}
}

int tlbpol_submit(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		  const struct tlbpol_event *ev, struct tlbpol_decision *out)
{
	struct tlbpol_decision d;
	struct tlbpol_cpu *c;
	int err = tlbpol_decide(eng, as, cpu, ev, &d);

	if (err)
		return err;
	c = &eng->cpus[cpu];
	if (!(ev->old_pte & TLBPOL_PTE_PRESENT) && prim_load_acquire(&as->pending))
		settle_reused_range(eng, as, cpu, ev);
	prim_count(&c->cnt.task.events, 1);
	prim_count(&c->cnt.task.by_reason[d.reason], 1);
	if (d.action == TLBPOL_ACT_NONE && d.reason != TLBPOL_WHY_NOT_PRESENT &&
	    d.reason != TLBPOL_WHY_UNCHANGED)
		prim_count(&c->cnt.task.flushes_avoided, 1);

	if (d.action == TLBPOL_ACT_LOCAL) {
		struct tlbpol_flush *f = single_request(eng, cpu, as, ev);

		eng->ops.flush_local(eng->ops_ctx, cpu, f);
		prim_count(&c->cnt.task.local_flushes, 1);
		count_flush(&c->cnt.task, f);
	} else if (d.action == TLBPOL_ACT_SHOOTDOWN) {
		if (d.deadline == TLBPOL_BY_NOW || ev->nr_pages >= eng->batch_pages) {
			single_request(eng, cpu, as, ev);
			shootdown(eng, cpu);
		} else {
			enqueue(eng, as, cpu, ev, d.deadline);
		}
	}
	tlbpol__run_dfrees(eng, c);
	if (out)
		*out = d;
	return 0;
}

int tlbpol_flush(struct tlbpol_engine *eng, uint32_t cpu, uint32_t by)
{
	if (!eng || eng->magic != TLBPOL_MAGIC || by > TLBPOL_BY_LAZY)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	tlbpol__serve(eng, cpu);
	if (by == TLBPOL_BY_NOW) {
		tlbpol__run_dfrees(eng, &eng->cpus[cpu]);
		return 0;
	}
	return tlbpol__flush_batch(eng, cpu, TLBPOL_BY_WRITEBACK, by);
}
