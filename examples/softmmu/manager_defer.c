/* SPDX-License-Identifier: MIT */
/*
 * manager_defer.c - the one pattern every operation of the memory manager
 * follows, as libtlbpol asks: a deferred-free record opened first; each PTE
 * cleared with an atomic exchange and submitted, the change tracked until
 * the engine says it is complete (at once, after a tlbpol_flush() of its
 * deadline, or when the deferred free runs); frames and table pages
 * poisoned and handed back to the free lists only from the
 * tlbpol_defer_free() callback.  Called by manager_ops.c; calls pages.c
 * and checker.c (softmmu.h).
 */
#include "manager.h"

void df_begin(struct mgr *m)
{
	m->df = calloc(1, sizeof(*m->df));
	if (!m->df)
		die("out of memory");
	m->df->w = m->w;
	m->df->table = -1;
}

/* Record a submitted change: complete now if its flush was (BY_NOW), else
 * when a later tlbpol_flush() or the deferred free says so. */
void note_change(struct mgr *m, uint32_t vpn, uint64_t word, const struct tlbpol_decision *d)
{
	if (d->deadline == TLBPOL_BY_NOW)
		cv_raise(m->w, vpn, word);
	else
		m->df->changes[m->df->nchanges++] = (struct change){ vpn, d->deadline, word };
}

/* tlbpol_flush(@by): every change due by then is complete when it returns. */
void mgr_flush(struct mgr *m, uint32_t by)
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

void df_end(struct mgr *m)
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
uint64_t pte_clear(struct world *w, uint32_t vpn, uint64_t *cleared)
{
	_Atomic uint64_t *slot = sw_pte(w, vpn);

	if (!slot)
		die("vpn %#x is mapped but has no table page", vpn);
	*cleared = pte_make(0, 0, ++w->pver[vpn]);
	return atomic_exchange(slot, *cleared);
}

/* Copy a frame to the page's slot of the swap device. */
void writeback(struct world *w, uint32_t vpn, uint32_t f)
{
	for (uint32_t i = 1; i < FRAME_WORDS; i++)
		w->backing[vpn][i] = atomic_load_explicit(&w->frames[f].w[i], memory_order_relaxed);
	w->backing_valid[vpn] = 1;
}
