/* SPDX-License-Identifier: MIT */
/*
 * pagetables.c - the page-table operations of oracle.h, made as a kernel
 * makes them: under the page-table locks of the groups they touch (taken
 * with trylock: ORC_BUSY rather than block while another CPU may wait for
 * this one), each PTE changed by an exchange, the event submitted before
 * the locks are released, frames and table pages given back only through
 * deferred frees, dirty pages written back and migrated pages copied only
 * once the flush due BY_WRITEBACK is done.  Each operation is one of the
 * kernel's paths (munmap, mprotect, reclaim, migration, aging, mremap,
 * COW, MADV_DONTNEED, a table page replaced); a protect now and then
 * labels its change as another path would, since the header promises an
 * event is never flushed less than its PTE change needs, whatever its kind.
 */
#define _POSIX_C_SOURCE 200809L

#include "machine.h"

/* Is the page written back when it is unmapped?  What may have been written
 * through a TLB entry: D on x86 and ARM64 (hardware sets it before the first
 * write through an entry without it, and cannot once the PTE is not
 * present), W too on GENERIC (no hardware D). */
static int may_be_dirty(const struct orc_world *w, uint32_t perm)
{
	if (perm & B_D)
		return 1;
	return w->cfg.arch == TLBPOL_ARCH_GENERIC && (perm & B_W);
}

/* Clip [page, page + n) to the AS and to ORC_MAX_RANGE; 0 if empty. */
static int clip(const struct orc_world *w, uint32_t as, uint32_t *page, uint32_t *n)
{
	if (as >= w->cfg.nr_as || *page >= w->cfg.pages || !*n)
		return 0;
	if (*n > ORC_MAX_RANGE)
		*n = ORC_MAX_RANGE;
	if (*page + *n > w->cfg.pages)
		*n = w->cfg.pages - *page;
	return 1;
}

/*
 * Clip [*page, *page + *n) (clip()) and take the page-table locks of the
 * groups it spans, *g0 to *g1: ORC_OK with them held, ORC_SKIP for an
 * empty range, ORC_BUSY if one was held.
 */
static enum orc_result lock_range(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t *page,
				  uint32_t *n, uint32_t *g0, uint32_t *g1)
{
	if (!clip(w, as, page, n))
		return ORC_SKIP;
	*g0 = *page / w->cfg.group_pages;
	*g1 = (*page + *n - 1) / w->cfg.group_pages;
	return lock_groups(w, cpu, as, *g0, *g1) ? ORC_OK : ORC_BUSY;
}

/*
 * The first step of a reclaim or a migration: the PTE of (as, page) cleared
 * and submitted as @kind.  ORC_OK with its page-table lock still held.
 */
static enum orc_result remove_page(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				   uint32_t kind, struct change *ch)
{
	uint32_t g = page / w->cfg.group_pages;

	if (as >= w->cfg.nr_as || page >= w->cfg.pages)
		return ORC_SKIP;
	if (!lock_groups(w, cpu, as, g, g))
		return ORC_BUSY;
	if (!pte_change(w, as, page, PERM_MASK, 0, 0, 1, ch)) {
		unlock_groups(w, as, g, g);
		return ORC_SKIP;
	}
	submit(w, cpu, as, kind, 0, page, 1, ch, 1, 0);
	return ORC_OK;
}

enum orc_result orc_populate(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			     uint32_t n)
{
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0;
	enum orc_result res = lock_range(w, cpu, as, &page, &n, &g0, &g1);

	if (res != ORC_OK)
		return res;
	for (uint32_t p = page; p < page + n; p++) {
		struct orc_as *a = &w->as[as];
		uint32_t f;

		if ((pte_perm(atomic_load(&a->pte[p])) & B_P) || atomic_load(&a->quar[p]))
			continue;
		if (ensure_table(w, as, p / gp) || !(f = frame_alloc(w, as, p))) {
			res = ORC_NOMEM;
			break;
		}
		if (install_prepare(w, as, p, B_A | (atomic_load(&a->vma[p]) & (B_W | B_X | B_U)), f,
				    &ch[nch]))
			nch++;
		else
			frame_unalloc(w, f);
	}
	if (nch)
		install_run(w, cpu, as, as, 0, page, n, ch, nch);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : res == ORC_OK ? ORC_SKIP : res;
}

enum orc_result orc_protect(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			    uint32_t n, uint32_t clear, uint32_t set, int vma)
{
	uint32_t g0, g1;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	uint32_t nch = 0, kind = TLBPOL_EV_PROTECT;
	enum orc_result res = lock_range(w, cpu, as, &page, &n, &g0, &g1);

	if (res != ORC_OK)
		return res;
	clear &= B_W | B_X | B_U;
	set &= B_W | B_X | B_U;
	for (uint32_t p = page; p < page + n; p++) {
		_Atomic uint32_t *v = &w->as[as].vma[p];
		uint32_t allowed;

		if (vma)
			atomic_store(v, (atomic_load(v) & ~clear) | set);
		allowed = atomic_load(v);
		if (pte_change(w, as, p, clear, set & allowed, 0, 1, &ch[nch]))
			nch++;
	}
	/*
	 * Now and then the host's code path labels the change as something
	 * else (an unmap-like kind): the header promises that an event is
	 * never flushed less than its PTE change needs, whatever its kind,
	 * so a downgrade labelled UNMAP, RECLAIM or MIGRATE must still be one.
	 */
	if (rng_next(&w->cpus[cpu].rng) % 8 == 0) {
		static const uint32_t kinds[] = { TLBPOL_EV_UNMAP, TLBPOL_EV_RECLAIM,
						  TLBPOL_EV_MIGRATE };

		kind = kinds[rng_next(&w->cpus[cpu].rng) % 3];
	}
	submit_runs(w, cpu, as, as, kind, 0, ch, nch);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

enum orc_result orc_unmap(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			  uint32_t n, uint32_t evflags, int writeback)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	uint32_t nch = 0, dirty[ORC_MAX_RANGE], dpage[ORC_MAX_RANGE], ndirty = 0;
	struct orc_free *fr;
	int stamped = (evflags & TLBPOL_EVF_STAMP) != 0;

	evflags &= TLBPOL_EVF_TABLES_FREED | TLBPOL_EVF_LAZY_OK;
	if (stamped) {
		/* Private memory: nothing to write back, and the frames go back
		 * at once with the stamp instead of behind a deferred free. */
		evflags = (evflags & TLBPOL_EVF_TABLES_FREED) | TLBPOL_EVF_STAMP |
			  TLBPOL_EVF_PRIVATE;
		writeback = 0;
	}
	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	if (evflags & TLBPOL_EVF_TABLES_FREED) {
		/* Whole table pages only, and not more than a free can hold. */
		uint32_t end = (page + n + gp - 1) / gp * gp;

		page = page / gp * gp;
		n = end - page;
		if (n > gp * FREE_TABLES_MAX)
			n = gp * FREE_TABLES_MAX;
		while (n > ORC_MAX_RANGE)
			n -= gp;
	}
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	fr = free_new(w, c, cpu, as);
	for (uint32_t p = page; p < page + n; p++) {
		if (!pte_change(w, as, p, PERM_MASK, 0, 0, 1, &ch[nch]))
			continue;
		fr->frames[fr->nr_frames++] = pte_frame(ch[nch].old);
		if (writeback && may_be_dirty(w, pte_perm(ch[nch].old))) {
			dpage[ndirty] = p;
			dirty[ndirty++] = pte_frame(ch[nch].old);
		}
		nch++;
	}
	if (evflags & TLBPOL_EVF_TABLES_FREED) {
		/* Unhook the table pages (their PTEs are all clear now); they are
		 * freed by the deferred free, after the flush. */
		for (uint32_t g = g0; g <= g1; g++) {
			uint64_t d = atomic_exchange(&w->as[as].dir[g], 0);

			if (!d)
				continue;
			table_detach(w, cpu, as, g, dir_table(d));
			fr->tables[fr->nr_tables++] = dir_table(d);
		}
	}
	if (!nch && !fr->nr_tables) {
		unlock_groups(w, as, g0, g1);
		free_unused(c, fr);
		return ORC_SKIP;
	}
	submit(w, cpu, as, TLBPOL_EV_UNMAP, evflags, page, n, ch, nch, 0);
	if (evflags & TLBPOL_EVF_LAZY_OK)
		hold_back(w, as, page, n, fr); /* until the free below has run */
	unlock_groups(w, as, g0, g1);
	if (ndirty) {
		/*
		 * A shared page written back: by a flusher thread, on whichever
		 * CPU, once the page-table lock is dropped (the header: such an
		 * unmap is complete when the call returns, since no other CPU's
		 * tlbpol_flush() could complete it).  From here on a write
		 * through a stale entry would be lost.
		 */
		for (uint32_t i = 0; i < ndirty; i++)
			frame_set(w, dirty[i], as, dpage[i], F_CLEANED);
	}
	/* Now and then a tick between the submit and the free: it may post
	 * this CPU's lazy work and empty its batch, and the free must still
	 * wait for the request in flight. */
	if (rng_next(&c->rng) % 4 == 0)
		orc_tick(w, cpu);
	if (stamped) {
		/* The header: tlbpol_stamp() completes freed tables' flush
		 * (never deferred with the frames), so they are freed here,
		 * not behind a deferred free; the frames go back with the
		 * stamp -- asked, now and then, where the task migrated
		 * (stamp_pass()). */
		uint32_t stamper = cpu;
		uint64_t st = stamp_pass(w, cpu, &stamper);

		for (uint32_t i = 0; i < fr->nr_tables; i++)
			table_free(w, fr->tables[i]);
		for (uint32_t i = 0; i < fr->nr_frames; i++)
			frame_free_stamped(w, fr->frames[i], st, stamper);
		free_unused(c, fr);
		return ORC_OK;
	}
	free_register(w, c, cpu, fr);
	/* Now and then a host asks for a stamp where it stamped nothing (a
	 * task that migrated between its unmap and its tlb_finish_mmu()):
	 * -ENOENT, and nothing done (orc_stamp() checks). */
	if (w->cfg.stamp_pct && rng_next(&c->rng) % 16 == 0)
		orc_stamp(w, cpu);
	return ORC_OK;
}

enum orc_result orc_dontneed(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			     uint32_t n)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t g0, g1, nch;
	uint32_t evflags = TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE;
	struct change ch[ORC_MAX_RANGE];
	struct orc_free *fr;
	enum orc_result res = lock_range(w, cpu, as, &page, &n, &g0, &g1);

	if (res != ORC_OK)
		return res;
	nch = clear_to_free(w, cpu, as, page, n, ch, &fr);
	if (!nch) {
		unlock_groups(w, as, g0, g1);
		return ORC_SKIP;
	}
	/* What a careless host passes for private memory: to be ignored. */
	if (rng_next(&c->rng) % 2)
		evflags |= TLBPOL_EVF_LAZY_OK;
	/*
	 * madvise() returns here: complete, whatever the engine decided.  A
	 * later access must fault and find a zero page, so from now on the old
	 * contents are gone: reading them is stale data, writing them a lost
	 * write.  The frames go back through a deferred free as usual.
	 */
	submit_via(w, cpu, as, as, TLBPOL_EV_UNMAP, evflags, page, n, ch, nch, 0, SUB_NOW);
	for (uint32_t i = 0; i < fr->nr_frames; i++)
		frame_set(w, fr->frames[i], as, ch[i].page, F_GONE);
	unlock_groups(w, as, g0, g1);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_reclaim(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page)
{
	uint32_t g = page / w->cfg.group_pages, f;
	struct change ch;
	enum orc_result res = remove_page(w, cpu, as, page, TLBPOL_EV_RECLAIM, &ch);

	if (res != ORC_OK)
		return res;
	unlock_groups(w, as, g, g);
	f = pte_frame(ch.old);
	/* pageout(): a dirty page is written back once nothing can write it
	 * any more; a clean one has nothing to write. */
	if (may_be_dirty(w, pte_perm(ch.old)))
		orc_flush(w, cpu, TLBPOL_BY_WRITEBACK);
	frame_set(w, f, as, page, F_CLEANED);
	free_frame_later(w, cpu, as, f);
	return ORC_OK;
}

enum orc_result orc_migrate(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page)
{
	uint32_t g = page / w->cfg.group_pages, f1, f2;
	struct change ch, ch2;
	/* Unmap (the migration entry keeps faults away: we hold the lock). */
	enum orc_result res = remove_page(w, cpu, as, page, TLBPOL_EV_MIGRATE, &ch);

	if (res != ORC_OK)
		return res;
	f1 = pte_frame(ch.old);
	/* Copy, once the flush due before it is done (the header: every
	 * migration is due BY_WRITEBACK). */
	orc_flush(w, cpu, TLBPOL_BY_WRITEBACK);
	frame_set(w, f1, as, page, F_CLEANED);
	/*
	 * Restore the PTE on the new frame, stored before it is submitted as
	 * Linux's remove_migration_ptes() does: the header allows that order
	 * here, after the migration's own tlbpol_flush(BY_WRITEBACK).  From
	 * the store on, the old frame's contents are stale.
	 */
	f2 = frame_alloc(w, as, page);
	if (f2 && install_prepare(w, as, page, pte_perm(ch.old), f2, &ch2)) {
		install_commit(w, as, &ch2, 1);
		submit(w, cpu, as, TLBPOL_EV_FAULT, 0, page, 1, &ch2, 1, 0);
	} else if (f2) {
		frame_unalloc(w, f2);
	}
	unlock_groups(w, as, g, g);
	free_frame_later(w, cpu, as, f1);
	return ORC_OK;
}

/*
 * Clear @clr in the present PTEs of [page, page + n) (only in those with a
 * bit of @only, if @only is not 0), as one event of @kind: an aging pass,
 * or page_mkclean() of each dirty page.
 */
static enum orc_result clear_bits(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				  uint32_t n, uint32_t kind, uint32_t clr, uint32_t only)
{
	uint32_t g0, g1, nch = 0;
	struct change ch[ORC_MAX_RANGE];
	enum orc_result res = lock_range(w, cpu, as, &page, &n, &g0, &g1);

	if (res != ORC_OK)
		return res;
	for (uint32_t p = page; p < page + n; p++) {
		if (only && !(pte_perm(atomic_load(&w->as[as].pte[p])) & only))
			continue;
		if (pte_change(w, as, p, clr, 0, 0, 1, &ch[nch]))
			nch++;
	}
	if (nch)
		submit(w, cpu, as, kind, 0, page, n, ch, nch, 0);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

enum orc_result orc_clear_young(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				uint32_t n)
{
	return clear_bits(w, cpu, as, page, n, TLBPOL_EV_CLEAR_YOUNG, B_A, 0);
}

/* Only pages that are dirty: page_mkclean() of each. */
enum orc_result orc_clear_dirty(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				uint32_t n, int wrprotect)
{
	return clear_bits(w, cpu, as, page, n, TLBPOL_EV_CLEAR_DIRTY, B_D | (wrprotect ? B_W : 0),
			  B_D);
}

enum orc_result orc_remap(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t from,
			  uint32_t to)
{
	uint32_t gp = w->cfg.group_pages, ga, gb, perm, f;
	struct orc_as *a;
	struct change ch, ch2;
	enum orc_result res = ORC_OK;

	if (as >= w->cfg.nr_as || from >= w->cfg.pages || to >= w->cfg.pages || from == to)
		return ORC_SKIP;
	a = &w->as[as];
	ga = (from < to ? from : to) / gp;
	gb = (from < to ? to : from) / gp;
	/* Two locks in address order; the ones between are taken too (a
	 * simplification: the range is small). */
	if (!lock_groups(w, cpu, as, ga, gb))
		return ORC_BUSY;
	if (!(pte_perm(atomic_load(&a->pte[from])) & B_P) ||
	    (pte_perm(atomic_load(&a->pte[to])) & B_P) || atomic_load(&a->quar[to]) ||
	    ensure_table(w, as, to / gp)) {
		unlock_groups(w, as, ga, gb);
		return ORC_SKIP;
	}
	if (!pte_change(w, as, from, PERM_MASK, 0, 0, 1, &ch)) {
		unlock_groups(w, as, ga, gb);
		return ORC_SKIP;
	}
	/* move_ptes(): the old address goes, flushed before the new one can be
	 * used. */
	submit(w, cpu, as, TLBPOL_EV_REMAP, 0, from, 1, &ch, 1, 0);
	perm = pte_perm(ch.old);
	f = pte_frame(ch.old);
	atomic_store(&w->frame[f], own_make(F_LIVE, as, to, 0));
	atomic_store(&a->vma[to], atomic_load(&a->vma[from]));
	if (install_prepare(w, as, to, perm, f, &ch2)) {
		install_run(w, cpu, as, as, 0, to, 1, &ch2, 1);
	} else {
		res = ORC_SKIP; /* cannot happen: checked under the lock above */
	}
	unlock_groups(w, as, ga, gb);
	return res;
}

enum orc_result orc_attrs(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			  uint32_t n)
{
	uint32_t g0, g1, nch = 0;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	enum orc_result res = lock_range(w, cpu, as, &page, &n, &g0, &g1);

	if (res != ORC_OK)
		return res;
	for (uint32_t p = page; p < page + n; p++) {
		_Atomic uint64_t *pte = &w->as[as].pte[p];
		uint64_t old = atomic_load(pte), new = 0;

		do {
			if (!(pte_perm(old) & B_P) || pte_ver(old) >= VER_MAX)
				break;
			new = pte_make(pte_pb(old) ^ B_ATTR, pte_frame(old), pte_ver(old) + 1);
		} while (!atomic_compare_exchange_weak(pte, &old, new));
		if (!(pte_perm(old) & B_P) || pte_ver(old) >= VER_MAX)
			continue;
		ch[nch].page = p;
		ch[nch].old = old;
		ch[nch++].new = new;
	}
	/* The portable bits do not change: only the flag says what did. */
	if (nch)
		submit_runs(w, cpu, as, as, TLBPOL_EV_PROTECT, TLBPOL_EVF_ATTRS, ch, nch);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

/*
 * The table page of @page's group replaced by a copy: a hypervisor
 * rebuilding a shadow table, a kernel moving page-table pages.  No PTE
 * changes, but the old table page is freed by the deferred free, so no CPU
 * may still cache a pointer to it by then (paging-structure caches, SDM
 * 4.10.3; Arm ARM D8.13 walk caches).  The host reports it with
 * TLBPOL_EVF_TABLES_FREED under the kind of the code path that did it
 * (@kind): a fault that found its PTE already good (it looks spurious), a
 * protect or an aging pass that changed nothing.  Under the group lock.
 */
enum orc_result orc_retable(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			    uint32_t kind)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t gp = w->cfg.group_pages, g, g1, p0, n = gp, nch = 0;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	struct orc_free *fr;
	enum orc_result res;
	uint64_t d, nd;

	if (kind >= TLBPOL_EV_MAX || kind == TLBPOL_EV_REMAP)
		return ORC_SKIP;
	/* The whole group: one lock (g1 == g). */
	p0 = page / gp * gp;
	res = lock_range(w, cpu, as, &p0, &n, &g, &g1);
	if (res != ORC_OK)
		return res;
	d = atomic_load(&w->as[as].dir[g]);
	if (!d || table_alloc(w, as, g, &nd)) {
		unlock_groups(w, as, g, g);
		return d ? ORC_NOMEM : ORC_SKIP;
	}
	/* The event names the group's present PTEs, old and new alike. */
	for (uint32_t p = p0; p < p0 + n; p++) {
		uint64_t pte = atomic_load(&w->as[as].pte[p]);

		if (!(pte_perm(pte) & B_P))
			continue;
		ch[nch].page = p;
		ch[nch].old = ch[nch].new = pte;
		nch++;
	}
	atomic_store(&w->as[as].dir[g], nd);
	table_detach(w, cpu, as, g, dir_table(d));
	fr = free_new(w, c, cpu, as);
	fr->tables[fr->nr_tables++] = dir_table(d);
	submit(w, cpu, as, kind, TLBPOL_EVF_TABLES_FREED, p0, n, ch, nch, 0);
	unlock_groups(w, as, g, g);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_change_frame(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				 int cow)
{
	uint32_t g = page / w->cfg.group_pages, f1, f2, perm;
	struct change ch;
	_Atomic uint64_t *pte;
	uint64_t want;

	if (as >= w->cfg.nr_as || page >= w->cfg.pages)
		return ORC_SKIP;
	if (!lock_groups(w, cpu, as, g, g))
		return ORC_BUSY;
	pte = &w->as[as].pte[page];
	f2 = frame_alloc(w, as, page);
	if (!f2) {
		unlock_groups(w, as, g, g);
		return ORC_NOMEM;
	}
	/* Break before make: clear, submit (describing the PTE to come), and
	 * only then install the new frame. */
	if (!pte_change(w, as, page, PERM_MASK, 0, 0, 1, &ch)) {
		unlock_groups(w, as, g, g);
		frame_unalloc(w, f2);
		return ORC_SKIP;
	}
	f1 = pte_frame(ch.old);
	perm = pte_perm(ch.old) | B_A;
	if (cow && (atomic_load(&w->as[as].vma[page]) & B_W))
		perm |= B_W | B_D;
	submit(w, cpu, as, cow ? TLBPOL_EV_FAULT : TLBPOL_EV_PROTECT,
	       TLBPOL_EVF_PFN_CHANGED | (cow ? TLBPOL_EVF_WRITE : 0), page, 1, &ch, 1, perm);
	/* The copy was taken; writes to the old frame from now on are lost. */
	frame_set(w, f1, as, page, F_CLEANED);
	want = pte_make(perm, f2, pte_ver(ch.new) + 1);
	if (pte_ver(ch.new) < VER_MAX) {
		supersede(w, as, page, f2);
		atomic_store(pte, want); /* nobody else writes a not-present PTE */
	} else {
		frame_unalloc(w, f2);
	}
	unlock_groups(w, as, g, g);
	free_frame_later(w, cpu, as, f1);
	return ORC_OK;
}
