/* SPDX-License-Identifier: MIT */
/*
 * manager.c - the memory manager, the part of softmmu a hypervisor or an
 * emulator copies: a thread with an engine CPU of its own (as kswapd is a
 * kernel thread of its own) that reclaims clean and dirty pages, unmaps
 * ranges (MADV_DONTNEED), write-protects, ages, migrates and remaps pages
 * and frees page-table pages, each operation in the one pattern libtlbpol
 * asks for: a deferred-free record; each PTE cleared with an atomic
 * exchange and submitted; what must wait for the flush waiting for its
 * deadline (tlbpol_flush()); frames and table pages poisoned and handed
 * back to the free lists only from the tlbpol_defer_free() callback.  It is
 * a file of its own so that it reads, and copies, apart from the machine:
 * it reaches the page table through pages.c and the interrupt line through
 * mmu.c, is paced by the guest (vcpu_throttle() in guest.c), and tells the
 * checker when each change is complete.
 */

#include "softmmu.h"

/* A change whose flush is deferred, and what waits for it. */
struct change {
	uint32_t vpn;
	uint32_t deadline;
	uint64_t word; /* the PTE the change produced */
};

/* One operation's deferred free: frames, table page and pages to release,
 * changes to mark complete, when every flush pending before it is done. */
struct dfree {
	struct world *w;
	uint32_t nframes, npages, nchanges;
	int table;
	uint32_t frames[MAX_OP_PAGES];
	uint32_t pages[MAX_OP_PAGES];
	uint8_t states[MAX_OP_PAGES];
	struct change changes[MAX_OP_PAGES];
};

struct mgr {
	struct world *w;
	struct cpu *c;
	uint32_t me;
	struct dfree *df; /* the operation in progress */
};

static void df_begin(struct mgr *m)
{
	m->df = calloc(1, sizeof(*m->df));
	if (!m->df)
		die("out of memory");
	m->df->w = m->w;
	m->df->table = -1;
}

/* Record a submitted change: complete now if its flush was (BY_NOW), else
 * when a later tlbpol_flush() or the deferred free says so. */
static void note_change(struct mgr *m, uint32_t vpn, uint64_t word, const struct tlbpol_decision *d)
{
	if (d->deadline == TLBPOL_BY_NOW)
		cv_raise(m->w, vpn, word);
	else
		m->df->changes[m->df->nchanges++] = (struct change){ vpn, d->deadline, word };
}

/* tlbpol_flush(@by): every change due by then is complete when it returns. */
static void mgr_flush(struct mgr *m, uint32_t by)
{
	struct dfree *df = m->df;
	uint32_t kept = 0;

	chk(tlbpol_flush(m->w->eng, m->me, by), "tlbpol_flush");
	for (uint32_t i = 0; i < df->nchanges; i++) {
		if (df->changes[i].deadline <= by)
			cv_raise(m->w, df->changes[i].vpn, df->changes[i].word);
		else
			df->changes[kept++] = df->changes[i];
	}
	df->nchanges = kept;
}

/* Runs once every flush pending when it was registered has completed on
 * every CPU: only now may frames and table pages be reused. */
static void dfree_cb(void *arg)
{
	struct dfree *df = arg;
	struct world *w = df->w;

	for (uint32_t i = 0; i < df->nchanges; i++)
		cv_raise(w, df->changes[i].vpn, df->changes[i].word);
	for (uint32_t i = 0; i < df->nframes; i++)
		poison_words(w->frames[df->frames[i]].w, FRAME_WORDS);
	if (df->table >= 0)
		poison_words(&w->tables[df->table].ident, 1 + GROUP_PAGES);
	pthread_mutex_lock(&w->pool_lock);
	for (uint32_t i = 0; i < df->nframes; i++)
		w->free_frames[w->nfree_frames++] = df->frames[i];
	if (df->table >= 0)
		w->free_tables[w->nfree_tables++] = (uint32_t)df->table;
	pthread_mutex_unlock(&w->pool_lock);
	for (uint32_t i = 0; i < df->npages; i++)
		page_unlock(w, df->pages[i], df->states[i]);
	atomic_fetch_add(&w->dfree_run, 1);
	free(df);
}

static void df_end(struct mgr *m)
{
	struct dfree *df = m->df;

	m->df = NULL;
	if (!df->nframes && df->table < 0 && !df->npages && !df->nchanges) {
		free(df);
		return;
	}
	atomic_fetch_add(&m->w->dfree_reg, 1);
	chk(tlbpol_defer_free(m->w->eng, m->me, dfree_cb, df), "tlbpol_defer_free");
}

/* Clear a present PTE (the atomic exchange returns what the MMU may have
 * set meanwhile: that is the old_pte to submit). */
static uint64_t pte_clear(struct world *w, uint32_t vpn, uint64_t *cleared)
{
	_Atomic uint64_t *slot = sw_pte(w, vpn);

	if (!slot)
		die("vpn %#x is mapped but has no table page", vpn);
	*cleared = pte_make(0, 0, ++w->pver[vpn]);
	return atomic_exchange(slot, *cleared);
}

/* Copy a frame to the page's slot of the swap device. */
static void writeback(struct world *w, uint32_t vpn, uint32_t f)
{
	for (uint32_t i = 1; i < FRAME_WORDS; i++)
		w->backing[vpn][i] = atomic_load_explicit(&w->frames[f].w[i], memory_order_relaxed);
	w->backing_valid[vpn] = 1;
}

/*
 * Flush stamps (w->stamps): the end of a reclaim pass is tlbpol_stamp()
 * (try_to_unmap_flush()): what is due by the free is complete when it
 * returns, the clean pages' flushes are posted with no interrupt, and
 * every frame goes back to the free list at once (the dirty ones, flushed
 * before their writeback, poisoned; the clean ones with the stamp), the
 * pages unlocked: the guest may fault them in again at once, which
 * completes what is pending over them.  The changes the stamp covers are
 * not marked complete (the checker checks less, never wrongly).
 */
static void reclaim_stamped(struct mgr *m, const uint32_t *dframe, uint32_t nd)
{
	struct world *w = m->w;
	struct dfree *df = m->df;
	uint64_t stamp = 0;
	uint32_t kept = 0;

	m->df = NULL;
	/* A pass that found no mapped page stamped nothing: tlbpol_stamp()
	 * says so (-ENOENT), and a flush completes the rest. */
	if (df->nframes)
		chk(tlbpol_stamp(w->eng, m->me, &stamp), "tlbpol_stamp");
	else
		chk(tlbpol_flush(w->eng, m->me, TLBPOL_BY_FREE), "tlbpol_flush");
	for (uint32_t i = 0; i < df->nchanges; i++) {
		if (df->changes[i].deadline <= TLBPOL_BY_FREE || !stamp)
			cv_raise(w, df->changes[i].vpn, df->changes[i].word);
		else
			df->changes[kept++] = df->changes[i];
	}
	for (uint32_t i = 0; i < df->nframes; i++) {
		int dirty = 0;

		for (uint32_t k = 0; k < nd && !dirty; k++)
			dirty = dframe[k] == df->frames[i];
		frame_free_stamped(w, df->frames[i], dirty ? 0 : stamp);
		m->c->n[C_STAMPED] += !dirty && stamp;
	}
	for (uint32_t i = 0; i < df->npages; i++)
		page_unlock(w, df->pages[i], df->states[i]);
	free(df);
}

/*
 * Reclaim (kswapd): unmap each mapped page of a cluster for reclaim, one
 * event per page as rmap walks them; write the dirty ones back once their
 * flush is done (BY_WRITEBACK); free all frames once every flush is done
 * (with flush stamps: at once, reclaim_stamped()).
 */
static void op_reclaim(struct mgr *m, uint32_t start, uint32_t n)
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
		reclaim_stamped(m, dframe, nd);
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

/*
 * MADV_DONTNEED of private anonymous memory: the range stays mapped
 * (TLBPOL_EVF_STAYS_MAPPED), so the flush is complete when the call returns,
 * and from then on the old contents are gone: the frames are poisoned at
 * once (a stale read sees poison, a stale write breaks it and shows when the
 * frame is reused) and the addresses are free to fault in again as zero
 * pages; the frames themselves go back through the deferred free.  One
 * event per run of mapped pages, as a zap gathers.
 */
static void op_unmap(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t run = 0, run_perms = 0, nrun = 0, st, locked[MAX_OP_PAGES], nl = 0;
	uint64_t cleared[MAX_OP_PAGES];

	df_begin(m);
	for (uint32_t vpn = start; vpn <= start + n; vpn++) {
		int mapped = 0;

		if (vpn < start + n && page_trylock(w, vpn, &st)) {
			if (st == PG_MAPPED) {
				uint64_t old = pte_clear(w, vpn, &cleared[vpn - start]);

				if (!nrun++)
					run = vpn;
				run_perms |= pte_perms(old);
				m->df->frames[m->df->nframes++] = pte_frame(old);
				locked[nl++] = vpn;
				m->c->n[C_OP_PAGES]++;
				mapped = 1;
			} else {
				w->backing_valid[vpn] = 0; /* a swapped-out page: drop the slot */
				page_unlock(w, vpn, PG_ABSENT);
			}
		}
		if (!mapped && nrun) {
			unmap_run(m, TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE, run, nrun,
				  run_perms, &cleared[run - start]);
			nrun = 0;
			run_perms = 0;
		}
	}
	/* madvise() returns: the contents are gone, the addresses usable. */
	for (uint32_t i = 0; i < m->df->nframes; i++)
		poison_words(w->frames[m->df->frames[i]].w, FRAME_WORDS);
	for (uint32_t i = 0; i < nl; i++)
		page_unlock(w, locked[i], PG_ABSENT);
	df_end(m);
}

/* Write-protect a range (dirty tracking): one event for the range, as
 * change_protection() flushes once; the guest's next write faults. */
static void op_protect(struct mgr *m, uint32_t start, uint32_t n)
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
static void op_aging(struct mgr *m, uint32_t start, uint32_t n)
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
static void op_migrate(struct mgr *m, uint32_t start, uint32_t n)
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
static void op_remap(struct mgr *m, uint32_t a, uint32_t b, uint32_t n)
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
 * CPUs too (TABLES_FREED), since their MMU may walk it -- is done.
 */
static void op_tables(struct mgr *m, uint32_t g)
{
	struct world *w = m->w;
	uint32_t base = g * GROUP_PAGES, locked = 0, st[GROUP_PAGES], nrun = 0, run = 0, perms = 0;
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
			unmap_run(m, TLBPOL_EVF_PRIVATE, run, nrun, perms, &cleared[run - base]);
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
	submit(w, m->me, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE | TLBPOL_EVF_TABLES_FREED, base,
	       GROUP_PAGES, 0, 0);
	mgr_flush(m, TLBPOL_BY_FREE);
	df_end(m);
}

/* A page-aligned start @back pages behind the working set: pages the guest
 * used recently, so most vCPUs' TLBs still hold them. */
static uint32_t behind(struct mgr *m, uint32_t align, uint32_t span)
{
	uint32_t hot = atomic_load_explicit(&m->w->hot_base, memory_order_relaxed);
	uint32_t back = align * (1 + (uint32_t)(rnd(&m->c->rng) % (span / align)));

	return ((hot + NPAGES - back) % NPAGES) & ~(align - 1);
}

static void mgr_op(struct mgr *m)
{
	struct world *w = m->w;
	const struct mix *mx = w->mix;
	unsigned total = 0, pick;
	uint32_t hot = atomic_load_explicit(&w->hot_base, memory_order_relaxed);
	int op = 0;

	for (int i = 0; i < OP_MAX; i++)
		total += mx->weight[i];
	pick = (unsigned)(rnd(&m->c->rng) % total);
	while (pick >= mx->weight[op])
		pick -= mx->weight[op++];
	switch (op) {
	case OP_RECLAIM:
		op_reclaim(m, behind(m, CLUSTER, 8 * CLUSTER), CLUSTER);
		break;
	case OP_UNMAP:
		op_unmap(m, behind(m, 16, 256), 16);
		break;
	case OP_PROTECT:
		op_protect(m, (hot + (uint32_t)(rnd(&m->c->rng) % HOT_PAGES)) % NPAGES & ~7u, 8);
		break;
	case OP_MIGRATE:
		op_migrate(m, behind(m, 16, 256), 16);
		break;
	case OP_REMAP: {
		uint32_t a = (hot + (uint32_t)(rnd(&m->c->rng) % HOT_PAGES)) % NPAGES & ~3u;
		uint32_t b = (uint32_t)(rnd(&m->c->rng) % NPAGES) & ~3u;

		op_remap(m, a, b, 4);
		break;
	}
	case OP_TABLES:
		op_tables(m, behind(m, GROUP_PAGES, 4 * GROUP_PAGES) / GROUP_PAGES);
		break;
	default:
		op_aging(m, behind(m, CLUSTER, 8 * CLUSTER), CLUSTER);
		break;
	}
	/* The working set drifts: what the manager just worked on behind it
	 * was hot a moment ago. */
	atomic_store_explicit(&w->hot_base, (hot + 2) % NPAGES, memory_order_relaxed);
}

void *mgr_main(void *arg)
{
	struct cpu *c = arg;
	struct world *w = c->w;
	struct mgr m = { w, c, w->mgr, NULL };
	uint64_t ops = 0;

	pthread_barrier_wait(&w->start);
	for (;;) {
		uint64_t total = 0;
		int vdone = 1;

		poll_kick(c);
		for (uint32_t i = 0; i < w->nv; i++) {
			total += atomic_load_explicit(&w->cpu[i].progress, memory_order_relaxed);
			vdone &= atomic_load(&w->cpu[i].finished);
		}
		if (atomic_load(&w->abort_run))
			break;
		/* Paced by the guest: operation i once the guest made
		 * i * accesses_per_op accesses. */
		if (ops * w->mix->accesses_per_op <= total && (w->timed || ops < w->mgr_quota)) {
			mgr_op(&m);
			ops++;
			/* The guest may run MAX_LAG operations ahead; once the
			 * manager made all its operations, without limit. */
			atomic_store_explicit(&w->guest_limit,
					      !w->timed && ops >= w->mgr_quota
						      ? UINT64_MAX
						      : (ops + MAX_LAG) * w->mix->accesses_per_op,
					      memory_order_relaxed);
			chk(tlbpol_tick(w->eng, w->mgr), "tlbpol_tick");
			continue;
		}
		if (vdone)
			break;
		chk(tlbpol_tick(w->eng, w->mgr), "tlbpol_tick");
		sleep_on_kick(c, 20000);
	}
	/* Complete everything still pending, lazy work included: every
	 * deferred free runs. */
	chk(tlbpol_flush(w->eng, w->mgr, TLBPOL_BY_LAZY), "tlbpol_flush");
	c->n[C_OPS] = ops;
	w->t_end = now_s();
	atomic_store(&w->all_done, 1);
	wake_all(w);
	return NULL;
}
