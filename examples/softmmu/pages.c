/* SPDX-License-Identifier: MIT */
/*
 * pages.c - the guest's memory as its kernel keeps it: page locks and
 * states, the free lists of frames and table pages, the PTE of a page as
 * software finds it, tlbpol_submit() with this machine's event layout, and
 * the install of a page (the one change the vCPUs' fault handler and the
 * set-up both make).  It is a file of its own because both the vCPUs
 * (guest.c) and the memory manager (manager.c) change the page table
 * through it: a hypervisor or a kernel has all of this already, and
 * replaces it when it copies the manager.
 */

#include "softmmu.h"

int page_trylock(struct world *w, uint32_t vpn, uint32_t *state)
{
	uint32_t s = atomic_load_explicit(&w->pstate[vpn], memory_order_relaxed);

	if (s & PG_LOCKED)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&w->pstate[vpn], &s, s | PG_LOCKED,
						     memory_order_acquire, memory_order_relaxed))
		return 0;
	*state = s;
	return 1;
}

void page_unlock(struct world *w, uint32_t vpn, uint32_t state)
{
	atomic_store_explicit(&w->pstate[vpn], state, memory_order_release);
}

/* The PTE of @vpn as software finds it (through the directory, not a PSC).
 * The caller holds a page lock in the group, so the table cannot go. */
_Atomic uint64_t *sw_pte(struct world *w, uint32_t vpn)
{
	uint64_t d = atomic_load(&w->dir[vpn >> GROUP_SHIFT]);

	return d ? &w->tables[dir_table(d)].pte[vpn & (GROUP_PAGES - 1)] : NULL;
}

/* The last freed of @list's @n entries (LIFO: a freed frame is reused at
 * once, while a stale entry may still point to it); -1 if none. */
static int pool_pop(struct world *w, const uint32_t *list, uint32_t *n)
{
	int i = -1;

	pthread_mutex_lock(&w->pool_lock);
	if (*n)
		i = (int)list[--*n];
	pthread_mutex_unlock(&w->pool_lock);
	return i;
}

/*
 * The frame freed last, or with flush stamps one of the w->stamp_look freed
 * last whose stamp has settled (tlbpol_stamp_pending() says 0, which stays
 * true), moved to the top: a LIFO free list hands out the frame freed last,
 * whose stamp is the least likely to have settled, and settling it would
 * interrupt the vCPUs that have not flushed yet (the unikernel's allocator
 * does the same, examples/unikernel/mm.c).  -1 if none is free.
 */
static int frame_pop(struct world *w, struct cpu *c)
{
	uint32_t look = w->bug == BUG_SKIP_SETTLE ? 0 : w->stamp_look, *l = w->free_frames;
	int f = -1;

	pthread_mutex_lock(&w->pool_lock);
	for (uint32_t k = 0; k < look && k < w->nfree_frames; k++) {
		uint32_t i = w->nfree_frames - 1 - k, t = w->nfree_frames - 1, x;
		uint64_t s = atomic_load(&w->frame_stamp[l[i]]);

		if (s && tlbpol_stamp_pending(w->eng, s))
			continue;
		x = l[i];
		l[i] = l[t];
		l[t] = x;
		c->n[C_PREFERRED] += k > 0;
		break;
	}
	if (w->nfree_frames)
		f = (int)l[--w->nfree_frames];
	pthread_mutex_unlock(&w->pool_lock);
	return f;
}

/*
 * Flush stamps: a frame freed with a stamp whose flush some vCPU has not
 * done yet is settled on the CPU that takes it (tlbpol_stamp_settle(): it
 * interrupts those vCPUs and waits), and only then poisoned, as a frame
 * freed behind the flush was when it was freed: from here on a stale entry
 * that survived the settle reads poison, or this frame's new identity.
 * --bug skip-settle hands the frame freed last out unsettled.
 */
int frame_alloc(struct world *w, uint32_t cpu)
{
	struct cpu *c = &w->cpu[cpu];
	int f = frame_pop(w, c), settled = 1, r;
	uint64_t stamp;

	if (f < 0)
		return f;
	if (!(stamp = atomic_load(&w->frame_stamp[f]))) {
		check_handout(w, (uint32_t)f, 0, 1);
		return f;
	}
	c->n[C_REUSED]++;
	if (chk(tlbpol_stamp_pending(w->eng, stamp), "tlbpol_stamp_pending")) {
		c->n[C_EARLY]++;
		settled = 0;
		if (w->bug != BUG_SKIP_SETTLE) {
			r = tlbpol_stamp_settle(w->eng, cpu, stamp);
			if (r < 0)
				die("tlbpol_stamp_settle(cpu %u): %d", cpu, r);
			c->n[C_SETTLE_WAITS] += (uint64_t)r;
			settled = 1;
		}
	}
	check_handout(w, (uint32_t)f, stamp, settled);
	atomic_store(&w->frame_stamp[f], 0);
	poison_words(w->frames[f].w, FRAME_WORDS);
	return f;
}

/* Free @f at once with @stamp; without one (0: its flush is complete) it is
 * poisoned now, with one when it is handed out again (frame_alloc()): until
 * then a stale entry may still read its dead contents. */
void frame_free_stamped(struct world *w, uint32_t f, uint64_t stamp)
{
	if (!stamp)
		poison_words(w->frames[f].w, FRAME_WORDS);
	atomic_store(&w->frame_stamp[f], stamp);
	pthread_mutex_lock(&w->pool_lock);
	w->free_frames[w->nfree_frames++] = f;
	pthread_mutex_unlock(&w->pool_lock);
}

void poison_words(_Atomic uint64_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&p[i], POISON, memory_order_relaxed);
}

/*
 * Give frame @f, just allocated, its identity and contents: zeros, a copy of
 * @from_backing or of frame @from.  It must still hold the poison it was
 * freed with: anything else was written through a stale entry after free.
 */
void frame_fill(struct world *w, uint32_t f, uint32_t vpn, const uint64_t *from_backing, int from)
{
	_Atomic uint64_t *d = w->frames[f].w;
	uint32_t broken = 0;

	for (uint32_t i = 0; i < FRAME_WORDS; i++) {
		uint64_t v = 0;

		if (atomic_load_explicit(&d[i], memory_order_relaxed) != POISON)
			broken++;
		if (i == 0)
			v = frame_ident(vpn, atomic_fetch_add(&w->frame_gen, 1) + 1);
		else if (from_backing)
			v = from_backing[i];
		else if (from >= 0)
			v = atomic_load_explicit(&w->frames[from].w[i], memory_order_relaxed);
		atomic_store_explicit(&d[i], v, memory_order_relaxed);
	}
	if (broken)
		stale(w, S_LATE_WRITE,
		      "frame %u, reused for vpn %#x, had %u of %u poisoned words overwritten "
		      "while free", f, vpn, broken, FRAME_WORDS);
}

/* A table page for group @g, installed if there is none.  The caller holds a
 * page lock in @g (freeing a table page takes all of them).  NULL: none free. */
struct table *ensure_table(struct world *w, uint32_t g)
{
	uint64_t d = atomic_load(&w->dir[g]), nd;
	struct table *t;
	int ti;

	if (d)
		return &w->tables[dir_table(d)];
	ti = pool_pop(w, w->free_tables, &w->nfree_tables);
	if (ti < 0)
		return NULL;
	t = &w->tables[ti];
	for (uint32_t i = 0; i < GROUP_PAGES; i++)
		atomic_store(&t->pte[i], 0);
	atomic_store(&t->ident, table_ident(g, atomic_fetch_add(&w->table_gen, 1) + 1));
	nd = dir_make((uint32_t)ti, atomic_load(&t->ident));
	if (atomic_compare_exchange_strong(&w->dir[g], &d, nd))
		return t;
	/* Another vCPU (holding another page lock of the group) was first;
	 * ours was never visible. */
	table_free(w, (uint32_t)ti);
	return &w->tables[dir_table(d)];
}

/* Poison table page @t and put it back: no CPU can reach it any more. */
void table_free(struct world *w, uint32_t t)
{
	poison_words(&w->tables[t].ident, 1 + GROUP_PAGES);
	pthread_mutex_lock(&w->pool_lock);
	w->free_tables[w->nfree_tables++] = t;
	pthread_mutex_unlock(&w->pool_lock);
}

/* @vpn: the page across the address spaces (pg_of()); the event names its
 * address space and its address there.  No range crosses an address space
 * (every operation's range is aligned within NPAGES). */
struct tlbpol_decision submit(struct world *w, uint32_t cpu, uint32_t kind, uint32_t flags,
			      uint32_t vpn, uint32_t nr, uint32_t old_perms, uint32_t new_perms)
{
	struct tlbpol_event ev = { sizeof(ev), kind, flags, PAGE_SHIFT,
				   VA_BASE + ((uint64_t)(vpn % NPAGES) << PAGE_SHIFT), nr,
				   old_perms & TLBPOL_PTE_ALL, new_perms & TLBPOL_PTE_ALL };
	struct tlbpol_decision d;

	if (vpn % NPAGES + nr > NPAGES)
		die("an event for pages %#x .. %#x crosses an address space", vpn, vpn + nr - 1);
	chk(tlbpol_submit(w->eng, w->as[pg_as(vpn)], cpu, &ev, &d), "tlbpol_submit");
	return d;
}

/*
 * Map @vpn, locked and not present, to frame @f (just allocated), with
 * @perms, through table page @t, and unlock it: the frame gets its identity
 * and the contents of @from_backing (or zeros).  An install is submitted
 * before the PTE is published: the engine completes any pending flush that
 * may still cover this address, so the install is complete when it is seen.
 */
void page_install(struct world *w, uint32_t cpu, uint32_t flags, struct table *t, uint32_t vpn,
		  uint32_t f, const uint64_t *from_backing, uint32_t perms)
{
	uint64_t n;

	frame_fill(w, f, vpn, from_backing, -1);
	n = pte_make(perms, f, ++w->pver[vpn]);
	submit(w, cpu, TLBPOL_EV_FAULT, flags, vpn, 1, 0, pte_perms(n));
	atomic_store(&t->pte[vpn & (GROUP_PAGES - 1)], n);
	cv_raise(w, vpn, n);
	page_unlock(w, vpn, PG_MAPPED);
}

/* Fresh memory for a run of the engine w->eng: every frame and table page
 * poisoned and free, then every page mapped (each install submitted by the
 * manager's CPU, before any vCPU runs). */
void pages_setup(struct world *w)
{
	uint32_t st;

	for (uint32_t f = 0; f < w->nframes; f++) {
		poison_words(w->frames[f].w, FRAME_WORDS);
		atomic_store(&w->frame_stamp[f], 0); /* the last run's engine's */
	}
	for (uint32_t t = 0; t < w->ntables; t++)
		poison_words(&w->tables[t].ident, 1 + GROUP_PAGES);
	w->nfree_frames = w->nfree_tables = 0;
	for (uint32_t f = w->nframes; f-- > 1;) /* frame 0 stays unused */
		w->free_frames[w->nfree_frames++] = f;
	for (uint32_t t = w->ntables; t-- > 0;)
		w->free_tables[w->nfree_tables++] = t;
	for (uint32_t g = 0; g < w->nas * NGROUPS; g++)
		atomic_store(&w->dir[g], 0);
	for (uint32_t p = 0; p < w->npages; p++) {
		atomic_store(&w->pstate[p], PG_ABSENT);
		atomic_store(&w->cv[p], 0);
	}
	memset(w->pver, 0, w->npages * sizeof(*w->pver));
	memset(w->backing_valid, 0, w->npages);
	atomic_store(&w->frame_gen, 0);
	atomic_store(&w->table_gen, 0);
	memset((void *)w->holders, 0, sizeof(w->holders));
	memset((void *)w->halted, 0, sizeof(w->halted));

	for (uint32_t vpn = 0; vpn < w->npages; vpn++) {
		struct table *t;
		int f;

		if (!page_trylock(w, vpn, &st) || !(t = ensure_table(w, vpn >> GROUP_SHIFT)) ||
		    (f = frame_alloc(w, w->mgr)) < 0)
			die("setup: cannot map vpn %#x", vpn);
		page_install(w, w->mgr, 0, t, vpn, (uint32_t)f, NULL,
			     PTE_P | PTE_W | PTE_U | PTE_A);
	}
}
