/* SPDX-License-Identifier: MIT */
/*
 * manager_ops.c - the memory manager's operations: reclaim of clean and
 * dirty pages, munmap of private ranges and of a table page's range (all
 * three with flush stamps when w->stamps), unmap of ranges
 * (MADV_DONTNEED), write-protection, aging, migration and remap, each in
 * the pattern of manager_defer.c (or manager_stamp.c).  Called by manager.c; calls
 * manager_defer.c, manager_stamp.c and pages.c.
 */
#include "manager.h"

/*
 * Reclaim (kswapd): unmap each mapped page of a cluster for reclaim, one
 * event per page as rmap walks them; write the dirty ones back once their
 * flush is done (BY_WRITEBACK); free all frames once every flush is done
 * (with flush stamps: at once, df_end_stamped(), the clean ones stamped).
 */
void op_reclaim(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t dirty[MAX_OP_PAGES], dframe[MAX_OP_PAGES], nd = 0, st;

	df_begin(m);
	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		struct tlbpol_decision d;
		uint64_t old, cleared;

		if (!page_trylock(w, vpn, &st))
			continue;
		if (st != PG_MAPPED) {
			page_unlock(w, vpn, st);
			continue;
		}
		old = pte_clear(w, vpn, &cleared);
		d = submit(w, m->me, TLBPOL_EV_RECLAIM, w->stamps ? TLBPOL_EVF_STAMP : 0, vpn, 1,
			   pte_perms(old), 0);
		note_change(m, vpn, cleared, &d);
		if (old & PTE_D) {
			dirty[nd] = vpn;
			dframe[nd++] = pte_frame(old);
		}
		m->df->frames[m->df->nframes++] = pte_frame(old);
		m->df->pages[m->df->npages] = vpn;
		m->df->states[m->df->npages++] = PG_SWAPPED;
		m->c->n[C_OP_PAGES]++;
	}
	/* A stale writable entry could still change a dirty page: write back
	 * only after its flush (try_to_unmap_flush_dirty() before pageout()). */
	mgr_flush(m, TLBPOL_BY_WRITEBACK);
	for (uint32_t i = 0; i < nd; i++)
		writeback(w, dirty[i], dframe[i]);
	/* A clean page's copy on the swap device (or the zero page) is still
	 * good: it goes with no writeback. */
	if (w->stamps) {
		df_end_stamped(m, dframe, nd);
		return;
	}
	mgr_flush(m, TLBPOL_BY_FREE);
	df_end(m);
}

/* One event for a run of @nr pages from @run whose PTEs were cleared (to
 * @cleared[0 ..]), as a zap gathers its pages into one TLB batch. */
static void unmap_run(struct mgr *m, uint32_t flags, uint32_t run, uint32_t nr, uint32_t perms,
		      const uint64_t *cleared)
{
	struct tlbpol_decision d = submit(m->w, m->me, TLBPOL_EV_UNMAP, flags, run, nr, perms, 0);

	for (uint32_t i = 0; i < nr; i++)
		note_change(m, run + i, cleared[i], &d);
}

/* A run of mapped pages being zapped: its first page, its length and the
 * union of their old permissions (one event each, as a zap gathers). */
struct zap_run {
	uint32_t first, n, perms;
};

/* Clear @vpn's PTE (mapped, and locked by the caller) into run @r and the
 * deferred free; its cleared word goes to @cleared. */
static void zap_page(struct mgr *m, struct zap_run *r, uint32_t vpn, uint64_t *cleared)
{
	uint64_t old = pte_clear(m->w, vpn, cleared);

	if (!r->n++)
		r->first = vpn;
	r->perms |= pte_perms(old);
	m->df->frames[m->df->nframes++] = pte_frame(old);
	m->c->n[C_OP_PAGES]++;
}

/* End run @r (a page that is not mapped, or the range's end): submit it.
 * @cleared holds the cleared words of the range from @start. */
static void zap_end(struct mgr *m, struct zap_run *r, uint32_t flags, uint32_t start,
		    const uint64_t *cleared)
{
	if (!r->n)
		return;
	unmap_run(m, flags, r->first, r->n, r->perms, &cleared[r->first - start]);
	r->n = 0;
	r->perms = 0;
}

/*
 * MADV_DONTNEED of private anonymous memory: the range stays mapped
 * (TLBPOL_EVF_STAYS_MAPPED), so the flush is complete when the call returns,
 * and from then on the old contents are gone: the frames are poisoned at
 * once (a stale read sees poison, a stale write breaks it and shows when the
 * frame is reused) and the addresses are free to fault in again as zero
 * pages; the frames themselves go back through the deferred free.  One
 * event per run of mapped pages, as a zap gathers.
 */
void op_unmap(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t st, locked[MAX_OP_PAGES], nl = 0;
	uint64_t cleared[MAX_OP_PAGES];
	struct zap_run r = { 0, 0, 0 };

	df_begin(m);
	for (uint32_t vpn = start; vpn <= start + n; vpn++) {
		int mapped = 0;

		if (vpn < start + n && page_trylock(w, vpn, &st)) {
			if (st == PG_MAPPED) {
				zap_page(m, &r, vpn, &cleared[vpn - start]);
				locked[nl++] = vpn;
				mapped = 1;
			} else {
				w->backing_valid[vpn] = 0; /* a swapped-out page: drop the slot */
				page_unlock(w, vpn, PG_ABSENT);
			}
		}
		if (!mapped)
			zap_end(m, &r, TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE, start, cleared);
	}
	/* madvise() returns: the contents are gone, the addresses usable. */
	for (uint32_t i = 0; i < m->df->nframes; i++)
		poison_words(w->frames[m->df->frames[i]].w, FRAME_WORDS);
	for (uint32_t i = 0; i < nl; i++)
		page_unlock(w, locked[i], PG_ABSENT);
	df_end(m);
}

/*
 * munmap of a private range (less than a table page's: op_tables() frees
 * those): one UNMAP + PRIVATE event per run of mapped pages, as a zap
 * gathers them.  With flush stamps the events carry TLBPOL_EVF_STAMP and
 * the frames go back at once (df_end_stamped()): until the stamp settles
 * another vCPU may still read the dead contents through its TLB, where
 * Linux's munmap() would make it fault.  A munmap whose fault the program
 * relies on (a guard page, @guard) stays unstamped, and Linux's: complete
 * when it returns (BY_FREE), the frames freed behind the flush.
 */
void op_munmap(struct mgr *m, uint32_t start, uint32_t n, int guard)
{
	struct world *w = m->w;
	uint32_t st, flags = TLBPOL_EVF_PRIVATE;
	int stamp = w->stamps && !guard;
	uint64_t cleared[MAX_OP_PAGES];
	struct zap_run r = { 0, 0, 0 };

	if (stamp)
		flags |= TLBPOL_EVF_STAMP;
	df_begin(m);
	for (uint32_t vpn = start; vpn <= start + n; vpn++) {
		int mapped = 0;

		if (vpn < start + n && page_trylock(w, vpn, &st)) {
			if (st == PG_MAPPED) {
				zap_page(m, &r, vpn, &cleared[vpn - start]);
				mapped = 1;
			}
			w->backing_valid[vpn] = 0; /* a swapped-out page's slot goes too */
			m->df->pages[m->df->npages] = vpn;
			m->df->states[m->df->npages++] = PG_ABSENT;
		}
		if (!mapped)
			zap_end(m, &r, flags, start, cleared);
	}
	if (stamp) {
		df_end_stamped(m, NULL, 0);
		return;
	}
	m->c->n[C_GUARDS] += guard;
	mgr_flush(m, TLBPOL_BY_FREE);
	/* munmap() returns: a guard page must fault from now on. */
	if (guard && m->df->nchanges)
		die("an unstamped munmap left %u changes pending past BY_FREE", m->df->nchanges);
	df_end(m);
}

/* Write-protect a range (dirty tracking): one event for the range, as
 * change_protection() flushes once; the guest's next write faults. */
void op_protect(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t locked[MAX_OP_PAGES], lstate[MAX_OP_PAGES], nl = 0, first = 0, last = 0;
	uint32_t old_perms = 0, new_perms = 0, st;
	uint64_t words[MAX_OP_PAGES] = { 0 };
	int any = 0;

	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		_Atomic uint64_t *slot;
		uint64_t p, np;
		uint32_t v;

		if (!page_trylock(w, vpn, &st))
			continue;
		locked[nl] = vpn;
		lstate[nl++] = st;
		if (st != PG_MAPPED || !((p = atomic_load(slot = sw_pte(w, vpn))) & PTE_W))
			continue;
		v = ++w->pver[vpn];
		do
			np = pte_make(pte_perms(p) & ~PTE_W, pte_frame(p), v);
		while (!atomic_compare_exchange_weak(slot, &p, np));
		words[vpn - start] = np;
		old_perms |= pte_perms(p);
		new_perms |= pte_perms(np);
		if (!any)
			first = vpn;
		last = vpn;
		any = 1;
		m->c->n[C_OP_PAGES]++;
	}
	if (any) {
		struct tlbpol_decision d = submit(w, m->me, TLBPOL_EV_PROTECT, 0, first,
						  last - first + 1, old_perms, new_perms);

		df_begin(m);
		for (uint32_t vpn = first; vpn <= last; vpn++)
			if (words[vpn - start])
				note_change(m, vpn, words[vpn - start], &d);
		df_end(m);
	}
	for (uint32_t i = 0; i < nl; i++)
		page_unlock(w, locked[i], lstate[i]);
}

/* Age pages (clear A), one event per page as page_referenced() walks them. */
void op_aging(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t st;

	df_begin(m);
	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		_Atomic uint64_t *slot;
		struct tlbpol_decision d;
		uint64_t p, np;
		uint32_t v;

		if (!page_trylock(w, vpn, &st))
			continue;
		if (st == PG_MAPPED && ((p = atomic_load(slot = sw_pte(w, vpn))) & PTE_A)) {
			v = ++w->pver[vpn];
			do
				np = pte_make(pte_perms(p) & ~PTE_A, pte_frame(p), v);
			while (!atomic_compare_exchange_weak(slot, &p, np));
			d = submit(w, m->me, TLBPOL_EV_CLEAR_YOUNG, 0, vpn, 1, pte_perms(p),
				   pte_perms(np));
			note_change(m, vpn, np, &d);
			m->c->n[C_OP_PAGES]++;
		}
		page_unlock(w, vpn, st);
	}
	df_end(m);
}

/*
 * Migrate (compaction): unmap each page to a migration entry, copy it to a
 * new frame once a stale entry can no longer write it (BY_WRITEBACK: a clean
 * page's stale entries can only read the unchanged old copy), then restore
 * the PTE on the new frame.  The restore is an install: the engine completes
 * the pending flush for that address before it returns.
 */
void op_migrate(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t vpns[MAX_OP_PAGES], newf[MAX_OP_PAGES], np = 0, st;
	uint64_t old[MAX_OP_PAGES], cleared[MAX_OP_PAGES];

	df_begin(m);
	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		struct tlbpol_decision d;
		int f;

		if (!page_trylock(w, vpn, &st))
			continue;
		if (st != PG_MAPPED || (f = frame_alloc(w, m->me)) < 0) {
			page_unlock(w, vpn, st);
			continue;
		}
		vpns[np] = vpn;
		newf[np] = (uint32_t)f;
		old[np] = pte_clear(w, vpn, &cleared[np]);
		d = submit(w, m->me, TLBPOL_EV_MIGRATE, 0, vpn, 1, pte_perms(old[np]), 0);
		note_change(m, vpn, cleared[np], &d);
		m->df->frames[m->df->nframes++] = pte_frame(old[np]);
		np++;
		m->c->n[C_OP_PAGES]++;
	}
	mgr_flush(m, TLBPOL_BY_WRITEBACK);
	for (uint32_t i = 0; i < np; i++)
		frame_fill(w, newf[i], vpns[i], NULL, (int)pte_frame(old[i]));
	for (uint32_t i = 0; i < np; i++) {
		uint64_t nw = pte_make(pte_perms(old[i]), newf[i], ++w->pver[vpns[i]]);

		submit(w, m->me, TLBPOL_EV_MIGRATE, 0, vpns[i], 1, 0, pte_perms(nw));
		/* The install completed the removal's flush (the header's
		 * promise for reused addresses): both changes are done. */
		cv_raise(w, vpns[i], cleared[i]);
		cv_raise(w, vpns[i], nw);
		atomic_store(sw_pte(w, vpns[i]), nw);
		page_unlock(w, vpns[i], PG_MAPPED);
	}
	m->df->nchanges = 0; /* all completed by the installs */
	df_end(m);
}

/*
 * mremap of a few pages from @a to an absent range: the old addresses are
 * flushed before the move is visible (REMAP, BY_NOW); the frames then take
 * their new identity and are installed at the new addresses.
 */
void op_remap(struct mgr *m, uint32_t a, uint32_t b, uint32_t n)
{
	struct world *w = m->w;
	uint32_t na = 0, st, perms = 0;
	uint64_t old[4], cleared[4];
	struct tlbpol_decision d;
	struct table *t;

	for (; na < n; na++) {
		if (!page_trylock(w, a + na, &st))
			break;
		if (st != PG_MAPPED) {
			page_unlock(w, a + na, st);
			break;
		}
		if (!page_trylock(w, b + na, &st)) {
			page_unlock(w, a + na, PG_MAPPED);
			break;
		}
		if (st != PG_ABSENT) {
			page_unlock(w, b + na, st);
			page_unlock(w, a + na, PG_MAPPED);
			break;
		}
	}
	if (!na)
		return;
	t = ensure_table(w, b >> GROUP_SHIFT);
	if (!t) {
		for (uint32_t i = 0; i < na; i++) {
			page_unlock(w, a + i, PG_MAPPED);
			page_unlock(w, b + i, PG_ABSENT);
		}
		return;
	}
	df_begin(m);
	for (uint32_t i = 0; i < na; i++) {
		old[i] = pte_clear(w, a + i, &cleared[i]);
		perms |= pte_perms(old[i]);
	}
	d = submit(w, m->me, TLBPOL_EV_REMAP, 0, a, na, perms, 0);
	for (uint32_t i = 0; i < na; i++)
		note_change(m, a + i, cleared[i], &d);
	mgr_flush(m, TLBPOL_BY_NOW);
	/* No CPU translates the old addresses any more: the frames belong to
	 * the new ones. */
	for (uint32_t i = 0; i < na; i++)
		atomic_store_explicit(&w->frames[pte_frame(old[i])].w[0],
				      frame_ident(b + i, atomic_fetch_add(&w->frame_gen, 1) + 1),
				      memory_order_relaxed);
	perms = PTE_P | PTE_W | PTE_U | PTE_A | PTE_D;
	submit(w, m->me, TLBPOL_EV_REMAP, 0, b, na, 0, perms);
	for (uint32_t i = 0; i < na; i++) {
		uint64_t nw = pte_make(perms, pte_frame(old[i]), ++w->pver[b + i]);

		atomic_store(&t->pte[(b + i) & (GROUP_PAGES - 1)], nw);
		cv_raise(w, b + i, nw);
		w->backing_valid[a + i] = w->backing_valid[b + i] = 0;
		page_unlock(w, a + i, PG_ABSENT);
		page_unlock(w, b + i, PG_MAPPED);
		m->c->n[C_OP_PAGES]++;
	}
	df_end(m);
}

/*
 * munmap of a whole table page's range: unmap its pages, detach the table
 * page and free it with the frames once the flush -- which must reach idle
 * CPUs too (TABLES_FREED), since their MMU may walk it -- is done.  With
 * flush stamps every event of the munmap carries TLBPOL_EVF_STAMP, as one
 * mmu_gather would: the engine does not defer the freed table page's
 * flush, and tlbpol_stamp() completes it before it returns, so the table
 * page goes back then (df_end_stamped()).
 */
void op_tables(struct mgr *m, uint32_t g)
{
	struct world *w = m->w;
	uint32_t base = g * GROUP_PAGES, locked = 0, st[GROUP_PAGES], nrun = 0, run = 0, perms = 0;
	uint32_t flags = TLBPOL_EVF_PRIVATE | (w->stamps ? TLBPOL_EVF_STAMP : 0);
	uint64_t cleared[GROUP_PAGES], d;

	for (; locked < GROUP_PAGES; locked++)
		if (!page_trylock(w, base + locked, &st[locked]))
			break;
	d = atomic_load(&w->dir[g]);
	if (locked < GROUP_PAGES || !d) {
		for (uint32_t i = 0; i < locked; i++)
			page_unlock(w, base + i, st[i]);
		return;
	}
	df_begin(m);
	for (uint32_t i = 0; i <= GROUP_PAGES; i++) {
		int mapped = i < GROUP_PAGES && st[i] == PG_MAPPED;

		if (mapped) {
			uint64_t old = pte_clear(w, base + i, &cleared[i]);

			if (!nrun++)
				run = base + i;
			perms |= pte_perms(old);
			m->df->frames[m->df->nframes++] = pte_frame(old);
			m->c->n[C_OP_PAGES]++;
		} else if (nrun) {
			unmap_run(m, flags, run, nrun, perms, &cleared[run - base]);
			nrun = 0;
			perms = 0;
		}
		if (i < GROUP_PAGES) {
			w->backing_valid[base + i] = 0;
			m->df->pages[m->df->npages] = base + i;
			m->df->states[m->df->npages++] = PG_ABSENT;
		}
	}
	/* Detach the table page, then say so: the flush reaches every CPU that
	 * may cache a pointer to it, idle ones included. */
	atomic_store(&w->dir[g], 0);
	m->df->table = (int)dir_table(d);
	submit(w, m->me, TLBPOL_EV_UNMAP, flags | TLBPOL_EVF_TABLES_FREED, base, GROUP_PAGES, 0, 0);
	if (w->stamps) {
		df_end_stamped(m, NULL, 0);
		return;
	}
	mgr_flush(m, TLBPOL_BY_FREE);
	df_end(m);
}
