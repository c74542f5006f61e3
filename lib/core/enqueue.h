/* SPDX-License-Identifier: MIT */
/*
 * enqueue.h - one event into its CPU's batch, inline.
 *
 * The part of batch.c that tlbpol_submit() runs on every deferred page (a
 * reclaim or an unmap walking a range, the most frequent deferral): inline
 * there, so that a deferral is one frame, and in batch.c for act()'s
 * deferrals.  Completing a batch (tlbpol__flush_batch()) and widening an
 * entry of a full one (tlbpol__widenable()) stay out of line in batch.c.
 */
#ifndef TLBPOL_ENQUEUE_H
#define TLBPOL_ENQUEUE_H

#include "internal.h"

/* Publish @ev, one more event pending on @cpu in @as_index (@new_entry: in
 * an entry of its own).  A LAZY_OK event's addresses are not reused before
 * it completes, so it widens no span. */
static inline void span_add(struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index,
			    const struct tlbpol_event *ev, uint32_t new_entry)
{
	struct pending_span *b = span_of(eng, cpu, as_index);

	if (!(ev->flags & TLBPOL_EVF_LAZY_OK)) {
		uint64_t lo = ev->va, hi = range_last(ev->va, ev->nr_pages, ev->page_shift);

		if (lo < prim_load_relaxed(&b->lo))
			prim_store_relaxed(&b->lo, lo);
		if (hi > prim_load_relaxed(&b->hi))
			prim_store_relaxed(&b->hi, hi);
	}
	/* The engine learns of a global entry once per span, as of a CPU. */
	if (tlbpol__event_global(ev) && !span_global(prim_load_relaxed(&b->count_global))) {
		prim_store_release(&b->count_global,
				   prim_load_relaxed(&b->count_global) | SPAN_GLOBAL);
		prim_fetch_add(&eng->global_pending, 1u);
	}
	if (new_entry) {
		uint32_t n = prim_load_relaxed(&b->count_global);

		prim_store_relaxed(&b->queued, prim_load_relaxed(&b->queued) + 1);
		prim_store_release(&b->count_global, n + 1);
		/* The address space learns of this CPU once, not per entry: a
		 * locked add per page would cost every enqueue. */
		if (!span_count(n))
			prim_fetch_add(&eng->as[as_index].pending, 1u);
	}
}

/* Work due by a free begins to wait in @c's batch: its age counts from this
 * tick, unless older work of the kind already waits (tlbpol_tick()). */
static inline void free_age_start(struct tlbpol_cpu *c)
{
	if (!c->free_aging) {
		c->free_aging = 1;
		c->free_since = c->ticks;
	}
}

/* The event bits and the PTE bit an entry's key keeps, as they are. */
#define KEY_EV_FLAGS (TLBPOL_EVF_TABLES_FREED | TLBPOL_EVF_LAZY_OK)
_Static_assert(KEY_EV_FLAGS <= 0xff && TLBPOL_PTE_GLOBAL <= 0xff,
	       "an entry keeps the bits of its event in a byte each");

/*
 * The key of an entry with these fields (@ev_flags and @pte_global masked
 * already: the bits are kept as the event has them, so that building the
 * key is a few ors).  On a little-endian CPU it is built in registers:
 * built through the union, narrow stores read back as one word cost a
 * store-forwarding stall on every enqueue.  (The layout this relies on is
 * asserted below.)
 */
static inline uint64_t pending_key(uint32_t as_index, uint32_t page_shift, uint32_t deadline,
				   uint32_t ev_flags, uint32_t pte_global)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (uint64_t)as_index | (uint64_t)page_shift << 16 | (uint64_t)deadline << 24 |
	       (uint64_t)ev_flags << 32 | (uint64_t)pte_global << 40;
#else
	struct pending p = { .key = 0 };

	p.as_index = (uint16_t)as_index;
	p.page_shift = (uint8_t)page_shift;
	p.deadline = (uint8_t)deadline;
	p.ev_flags = (uint8_t)ev_flags;
	p.pte_global = (uint8_t)pte_global;
	return p.key;
#endif
}

/* The wide mark's byte of the key (the last field). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KEY_WIDE (0xffULL << 56)
#else
#define KEY_WIDE 0xffULL
#endif

#define KEY_BYTE(f) (offsetof(struct pending, f) - offsetof(struct pending, key))
_Static_assert(KEY_BYTE(as_index) == 0 && KEY_BYTE(page_shift) == 2 && KEY_BYTE(deadline) == 3 &&
		       KEY_BYTE(ev_flags) == 4 && KEY_BYTE(pte_global) == 5 &&
		       KEY_BYTE(unused) == 6 && KEY_BYTE(wide) == 7,
	       "pending_key() builds the key in this layout");
#undef KEY_BYTE

/* batch.c: the entry of @cpu's full batch an event with @key may widen,
 * or NULL. */
struct pending *tlbpol__widenable(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				  uint32_t cpu, struct tlbpol_cpu *c, uint64_t key,
				  uint32_t as_index);

/*
 * Queue @ev on @cpu by @deadline.  @c: cpu_of(@cpu); @prm: the
 * configuration it was decided under (its batch_pages bounds the batch).
 * The caller has them in registers.
 */
static inline __attribute__((always_inline)) void
enqueue(struct tlbpol_engine *eng, const struct tlbpol_params *prm, struct tlbpol_cpu *c,
	struct tlbpol_as *as, uint32_t cpu, const struct tlbpol_event *restrict ev, uint32_t deadline)
{
	uint64_t key = pending_key(as->index, ev->page_shift, deadline, ev->flags & KEY_EV_FLAGS,
				   (ev->old_pte | ev->new_pte) & TLBPOL_PTE_GLOBAL);
	struct pending *p;

	if (deadline != TLBPOL_BY_LAZY)
		free_age_start(c);
	/*
	 * The common case of an unmap walking a range page by page: the page
	 * right after the last one queued, same address space, size, deadline
	 * and flags, extends that entry instead of taking a new one.  (A wide
	 * entry's key never matches: its va names only its first event.)
	 */
	if (c->nr_pending) {
		p = &c->pending[c->nr_pending - 1];
		if (p->key == key && p->va + ((uint64_t)p->nr_pages << p->page_shift) == ev->va)
			goto merge;
		/* A wide entry takes any page of its kind: it is flushed whole. */
		if (p->wide && (p->key & ~KEY_WIDE) == key)
			goto merge;
	}
	if (c->nr_pending == c->entry_cap) {
		p = tlbpol__widenable(eng, prm, cpu, c, key, as->index);
		if (p) {
			p->wide = 1;
			goto merge;
		}
		/* No entry may take it: complete the batch, then queue it. */
		tlbpol__flush_batch(eng, prm, cpu, TLBPOL_BY_WRITEBACK, TLBPOL_BY_FREE);
		tlbpol__post_lazy_batch(eng, prm, cpu);
		if (deadline != TLBPOL_BY_LAZY)
			free_age_start(c);
	}
	p = &c->pending[c->nr_pending++];
	p->va = ev->va;
	p->nr_pages = (uint32_t)ev->nr_pages;
	p->seq = c->next_seq++;
	p->events = 1;
	p->key = key;
	c->pending_pages += (uint32_t)ev->nr_pages;
	span_add(eng, cpu, as->index, ev, 1);
	goto full;
merge:
	/* Keep the entry's seq: it is as old as its oldest page, which is
	 * what a deferred free waits for. */
	p->nr_pages += (uint32_t)ev->nr_pages;
	p->events++;
	c->next_seq++;
	c->pending_pages += (uint32_t)ev->nr_pages;
	span_add(eng, cpu, as->index, ev, 0);
full:
	/* Entries hold >= 1 page each, so nr_pending <= pending_pages, and this
	 * keeps both within batch_pages: a full batch flushes itself. */
	if (c->pending_pages >= prm->batch_pages) {
		tlbpol__flush_batch(eng, prm, cpu, TLBPOL_BY_WRITEBACK, TLBPOL_BY_FREE);
		tlbpol__post_lazy_batch(eng, prm, cpu);
	}
}

#endif /* TLBPOL_ENQUEUE_H */
