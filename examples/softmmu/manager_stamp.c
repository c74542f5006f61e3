/* SPDX-License-Identifier: MIT */
/*
 * manager_stamp.c - the end of an unmap pass with flush stamps
 * (TLBPOL_RULE_FLUSH_STAMP), the other way to close an operation's record
 * than manager_defer.c's deferred free: tlbpol_stamp() where Linux calls
 * tlb_finish_mmu() or try_to_unmap_flush(), every frame back to the free
 * list at once with the stamp, the pages unlocked; and the checker's view of
 * the changes the stamp covers, complete once it settled.  It is a file of
 * its own because it is the part a host adds to the deferred-free pattern
 * to use stamps.  Called by manager_ops.c and manager.c; calls pages.c and
 * checker.c (softmmu.h).
 */
#include "manager.h"

/*
 * What is due by the free (dirty pages flushed for their writeback, events
 * the rule does not defer such as a freed table page's, everything when the
 * rule is off and the stamp is 0) is complete when tlbpol_stamp() returns.
 * The rest completes on each vCPU at its next tick, switch or interrupt;
 * the frames go back now, and a frame handed out before that is settled by
 * its allocator (frame_alloc()).
 * The addresses are free at once: a fault there submits an install, which
 * completes what is pending over them first.
 */
void df_end_stamped(struct mgr *m, const uint32_t *plain, uint32_t np)
{
	struct world *w = m->w;
	struct dfree *df = m->df;
	struct stampq *q = m->sq;
	uint64_t stamp = 0;

	m->df = NULL;
	/* A pass that found no mapped page (and freed no table page)
	 * stamped nothing: tlbpol_stamp() would say so (-ENOENT), and a
	 * flush completes the rest. */
	if (df->nframes || df->table >= 0)
		chk(tlbpol_stamp(w->eng, m->me, &stamp), "tlbpol_stamp");
	else
		chk(tlbpol_flush(w->eng, m->me, TLBPOL_BY_FREE), "tlbpol_flush");
	for (uint32_t i = 0; i < df->nchanges; i++) {
		const struct change *ch = &df->changes[i];

		if (ch->deadline <= TLBPOL_BY_FREE || !stamp) {
			cv_raise(w, ch->vpn, ch->word);
			continue;
		}
		if (q->tail - q->head == STAMPQ_SIZE) {
			q->head++;
			q->dropped++;
		}
		q->e[q->tail % STAMPQ_SIZE].vpn = ch->vpn;
		q->e[q->tail % STAMPQ_SIZE].word = ch->word;
		q->e[q->tail++ % STAMPQ_SIZE].stamp = stamp;
	}
	for (uint32_t i = 0; i < df->nframes; i++) {
		int done = 0;

		for (uint32_t k = 0; k < np && !done; k++)
			done = plain[k] == df->frames[i];
		frame_free_stamped(w, df->frames[i], done ? 0 : stamp);
		m->c->n[C_STAMPED] += !done && stamp;
	}
	/* A freed table page's flush is never deferred: it is done. */
	if (df->table >= 0)
		table_free(w, (uint32_t)df->table);
	for (uint32_t i = 0; i < df->npages; i++)
		page_unlock(w, df->pages[i], df->states[i]);
	free(df);
}

/*
 * The stamps in m->sq are all the manager's, numbered in order, so they
 * settle in order: complete the oldest while tlbpol_stamp_pending() says 0
 * (an answer that stays true).  A vCPU the flush skipped (halted) flushes
 * before it runs guest code, as for any completed change.  From now on a
 * use of an older entry that the change removed is a stale use.
 */
void stamp_poll(struct mgr *m)
{
	struct stampq *q = m->sq;

	while (q->head != q->tail) {
		uint32_t i = q->head % STAMPQ_SIZE;

		if (chk(tlbpol_stamp_pending(m->w->eng, q->e[i].stamp), "tlbpol_stamp_pending"))
			break;
		cv_raise(m->w, q->e[i].vpn, q->e[i].word);
		q->head++;
	}
}
