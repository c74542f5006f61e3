/* SPDX-License-Identifier: MIT */
/*
 * manager.h - what the memory manager's four files share.  Calls go one
 * way: manager.c (the thread: which operation next) -> manager_ops.c (the
 * operations: reclaim, unmap, munmap, protect, age, migrate, remap, free
 * tables) -> manager_defer.c (the pattern each follows: a deferred-free record,
 * changes submitted and tracked until complete, the flush, the release of
 * frames and table pages in the tlbpol_defer_free() callback) and
 * manager_stamp.c (the same record closed with a flush stamp instead).
 */
#ifndef SOFTMMU_MANAGER_H
#define SOFTMMU_MANAGER_H

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

/* Changes whose frames went back with a flush stamp, oldest first: each is
 * complete once its stamp settled (manager_stamp.c). */
#define STAMPQ_SIZE 4096u /* a power of 2 */
struct stampq {
	uint32_t head, tail; /* free-running; tail - head entries */
	uint64_t dropped;    /* the oldest dropped when full: checked less, not wrongly */
	struct {
		uint32_t vpn;
		uint64_t word, stamp;
	} e[STAMPQ_SIZE];
};

struct mgr {
	struct world *w;
	struct cpu *c;
	uint32_t me;
	struct dfree *df;  /* the operation in progress */
	struct stampq *sq; /* stamped changes not yet complete */
};

/* manager_defer.c */
/* Open the operation's deferred-free record (m->df). */
void df_begin(struct mgr *m);
/* Record a submitted change: complete now if its flush was (BY_NOW), else
 * when a later tlbpol_flush() or the deferred free says so. */
void note_change(struct mgr *m, uint32_t vpn, uint64_t word, const struct tlbpol_decision *d);
/* tlbpol_flush(@by): every change due by then is complete when it returns. */
void mgr_flush(struct mgr *m, uint32_t by);
/* Close the record: register it with tlbpol_defer_free() (or drop it if it
 * holds nothing). */
void df_end(struct mgr *m);
/* manager_stamp.c */
/* Close the record with flush stamps: tlbpol_stamp(), then every frame back
 * at once (@plain[0 .. @np): flushed already, poisoned; the others with the
 * stamp) and the pages unlocked.  The stamped changes go to m->sq. */
void df_end_stamped(struct mgr *m, const uint32_t *plain, uint32_t np);
/* Mark complete the stamped changes whose stamp settled. */
void stamp_poll(struct mgr *m);

/* Clear a present PTE (the atomic exchange returns what the MMU may have
 * set meanwhile: that is the old_pte to submit). */
uint64_t pte_clear(struct world *w, uint32_t vpn, uint64_t *cleared);
/* Copy a frame to the page's slot of the swap device. */
void writeback(struct world *w, uint32_t vpn, uint32_t f);

/* manager_ops.c: one operation each, over pages [@start, @start + @n). */
void op_reclaim(struct mgr *m, uint32_t start, uint32_t n);
void op_unmap(struct mgr *m, uint32_t start, uint32_t n);
void op_protect(struct mgr *m, uint32_t start, uint32_t n);
void op_aging(struct mgr *m, uint32_t start, uint32_t n);
void op_migrate(struct mgr *m, uint32_t start, uint32_t n);
/* munmap of a private range; @guard: the program relies on the fault. */
void op_munmap(struct mgr *m, uint32_t start, uint32_t n, int guard);
/* Move @n pages from @a to @b (mremap). */
void op_remap(struct mgr *m, uint32_t a, uint32_t b, uint32_t n);
/* Free the page-table page of group @g. */
void op_tables(struct mgr *m, uint32_t g);

#endif
