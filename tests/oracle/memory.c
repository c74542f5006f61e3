/* SPDX-License-Identifier: MIT */
/*
 * memory.c - the model's memory: frames and page-table pages, taken from
 * pools and given back only by deferred frees, each with an owner and a
 * state (a frame's contents can be cleaned, discarded or superseded while
 * it is still mapped; a table page is live, detached or free, in one of
 * its numbered lives); and the PTE words, changed only under their table
 * page's lock by an exchange whose old value is what the engine is told
 * it replaced.  What a walk or a check needs to tell a reused frame or
 * table page from the one an entry was filled from is kept here.  Calls
 * checks.c (a page freed while still cached) and report.c.
 */
#define _POSIX_C_SOURCE 200809L

#include "machine.h"

/*
 * A stamped frame is handed out again: settle its stamp on this CPU, then
 * no CPU that the engine counts on to flush before it runs the address
 * space again (a running one) may still translate to it -- the check a
 * free behind the flush makes at the free (check_freed_frame()).  Its state
 * is still free with its old owner, so a use through a surviving entry that
 * races with the check is caught by use_check() once it is live.
 */
static void frame_settle(struct orc_world *w, uint32_t f, uint64_t stamp)
{
	struct orc_cpu *c = &w->cpus[self_cpu];
	int r;

	/* Settled by the CPU that took the stamp, or by another one; while
	 * some CPU is held (no settle may wait for it: cb_relax()). */
	if (atomic_load(&w->frame_stamper[f]) == (uint32_t)self_cpu)
		count(w, ORC_C_SETTLES_OWN, 1);
	if (atomic_load(&w->held))
		count(w, ORC_C_HELD_SETTLES, 1);
	call_begin(w, c, 0);
	c->settling = 1;
	r = tlbpol_stamp_settle(w->eng, (uint32_t)self_cpu, stamp);
	c->settling = 0;
	call_end(w, c);

	if (r < 0)
		violation(w, ORC_V_API, "tlbpol_stamp_settle(cpu %d, %#llx) = %d", self_cpu,
			  (unsigned long long)stamp, r);
	count(w, ORC_C_SETTLES, 1);
	if (r > 0)
		count(w, ORC_C_SETTLE_WAITS, 1);
	check_freed_frame(w, f, atomic_load(&w->frame[f]));
	atomic_store(&w->frame_stamp[f], 0);
}

/* The entry on top of @pool (frames or table pages, *@top of them), taken
 * under the pool lock; 0 (never a valid frame or table page) if empty. */
static uint32_t pool_pop(struct orc_world *w, uint32_t *pool, uint32_t *top)
{
	uint32_t x = 0;

	pthread_mutex_lock(&w->pool_lock);
	if (*top)
		x = pool[--*top];
	pthread_mutex_unlock(&w->pool_lock);
	return x;
}

/* A free frame, now holding (as, page)'s contents; 0 if the pool is empty.
 * The pool is a stack: the frame freed last comes first, as a kernel's
 * per-CPU free lists give it (the worst case for flush stamps). */
uint32_t frame_alloc(struct orc_world *w, uint32_t as, uint32_t page)
{
	uint32_t f = pool_pop(w, w->frame_pool, &w->frame_top);
	uint64_t stamp;

	if (!f)
		return 0;
	stamp = atomic_load(&w->frame_stamp[f]);
	if (stamp)
		frame_settle(w, f, stamp);
	atomic_store(&w->frame[f], own_make(F_LIVE, as, page, 0));
	return f;
}

int frame_stamped_of(struct orc_world *w, uint32_t f, uint64_t fo, uint32_t x, uint32_t page)
{
	return own_state(fo) == F_FREE && own_as(fo) == x && own_idx(fo) == page &&
	       atomic_load(&w->frame_stamp[f]) != 0;
}

/*
 * Frame @f, holding (x, page)'s contents, reaches @state (F_CLEANED or
 * F_GONE; a state only ever grows).  A compare-and-swap on the whole word:
 * two CPUs may mark the same frame at once (a DONTNEED that returned, an
 * install superseding it), and the frame may be freed and given to another
 * page meanwhile; a plain store would write the old owner back over the
 * new one.  Nothing happens if the frame no longer holds (x, page).
 */
void frame_set(struct orc_world *w, uint32_t f, uint32_t x, uint32_t page, uint32_t state)
{
	uint64_t o = atomic_load(&w->frame[f]);

	do {
		if (own_state(o) == F_FREE || own_state(o) >= state || own_as(o) != x ||
		    own_idx(o) != page)
			return;
	} while (!atomic_compare_exchange_weak(&w->frame[f], &o, own_make(state, x, page, 0)));
}

/* Return a frame that was allocated but never mapped. */
void frame_unalloc(struct orc_world *w, uint32_t f)
{
	atomic_store(&w->frame[f], own_make(F_FREE, 0, 0, 0));
	pthread_mutex_lock(&w->pool_lock);
	w->frame_pool[w->frame_top++] = f;
	pthread_mutex_unlock(&w->pool_lock);
}

/*
 * Free frame @f from a deferred free.  Marked free first, then checked: a
 * CPU that publishes RUN after our check began sees the free state in its
 * resume scan, one that published before is checked here.
 */
void frame_free(struct orc_world *w, uint32_t f)
{
	uint64_t o = atomic_load(&w->frame[f]);

	atomic_store(&w->frame[f], own_make(F_FREE, own_as(o), own_idx(o), 0));
	check_freed_frame(w, f, o);
	pthread_mutex_lock(&w->pool_lock);
	w->frame_pool[w->frame_top++] = f;
	pthread_mutex_unlock(&w->pool_lock);
}

/*
 * Free frame @f at once, with @stamp (what tlbpol_stamp() for @stamper
 * gave): CPUs may still translate to it, and use it (its contents are
 * dead: the unmap was private), until it is handed out again and settled.
 * A stamp of 0 means nothing was left in flight: checked as a free behind
 * the flush.
 */
void frame_free_stamped(struct orc_world *w, uint32_t f, uint64_t stamp, uint32_t stamper)
{
	uint64_t o = atomic_load(&w->frame[f]);

	count(w, ORC_C_STAMPED, 1);
	if (!stamp) {
		frame_free(w, f);
		return;
	}
	atomic_store(&w->frame_stamper[f], stamper);
	atomic_store(&w->frame_stamp[f], stamp);
	atomic_store(&w->frame[f], own_make(F_FREE, own_as(o), own_idx(o), 0));
	pthread_mutex_lock(&w->pool_lock);
	w->frame_pool[w->frame_top++] = f;
	pthread_mutex_unlock(&w->pool_lock);
}

/* A free table page for group @group of @as, its directory word in *@dirw;
 * -1 if the pool is empty. */
int table_alloc(struct orc_world *w, uint32_t as, uint32_t group, uint64_t *dirw)
{
	uint32_t t = pool_pop(w, w->table_pool, &w->table_top);
	uint64_t gen;

	if (!t)
		return -1;
	/* A new generation per allocation: a cached pointer to an earlier life
	 * of the same table page is told apart. */
	gen = own_gen(atomic_load(&w->table[t])) + 1;
	atomic_store(&w->table[t], own_make(T_LIVE, as, group, gen));
	*dirw = dir_make(t, gen);
	return 0;
}

/* Free table page @t from a deferred free: marked free, then checked, as a
 * frame is (frame_free()). */
void table_free(struct orc_world *w, uint32_t t)
{
	uint64_t o = atomic_load(&w->table[t]);

	atomic_store(&w->table[t], own_make(T_FREE, own_as(o), own_idx(o), own_gen(o)));
	trace(w, self_cpu, TR_TFREE, own_as(o), own_idx(o), t, 0);
	check_freed_table(w, t, o);
	pthread_mutex_lock(&w->pool_lock);
	w->table_pool[w->table_top++] = t;
	pthread_mutex_unlock(&w->pool_lock);
}

/* Table page @t is unhooked for freeing (its PTEs are clear or copied
 * elsewhere): a walk through a pointer to it still cached finds nothing
 * from now on.  The deferred free that follows the flush frees it. */
void table_detach(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t g, uint32_t t)
{
	uint64_t o = atomic_load(&w->table[t]);

	atomic_store(&w->table[t], own_make(T_DETACHED, own_as(o), own_idx(o), own_gen(o)));
	trace(w, (int)cpu, TR_DETACH, as, g, t, 0);
}

/* Give group @g of @x a table page if it has none.  Under the group lock. */
int ensure_table(struct orc_world *w, uint32_t x, uint32_t g)
{
	uint64_t d;

	if (atomic_load(&w->as[x].dir[g]))
		return 0;
	if (table_alloc(w, x, g, &d))
		return -1;
	atomic_store(&w->as[x].dir[g], d);
	return 0;
}

/* Page-table locks: trylock only, so no CPU blocks while another may be
 * waiting for its acknowledgement.  Groups in ascending order. */
int lock_groups(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t g0, uint32_t g1)
{
	for (uint32_t g = g0; g <= g1; g++) {
		uint32_t expect = 0;

		if (!atomic_compare_exchange_strong(&w->as[x].lock[g], &expect, cpu + 1)) {
			while (g-- > g0)
				atomic_store(&w->as[x].lock[g], 0);
			count(w, ORC_C_BUSY, 1);
			return 0;
		}
	}
	return 1;
}

void unlock_groups(struct orc_world *w, uint32_t x, uint32_t g0, uint32_t g1)
{
	for (uint32_t g = g0; g <= g1; g++)
		atomic_store(&w->as[x].lock[g], 0);
}

/*
 * Change PTE (x, page) under its lock: clear @clr and set @set in its
 * permissions (frame @frame, or kept when 0; a PTE without P is all zero).
 * The exchange is a CAS loop because hardware sets A/D concurrently; the old
 * value is what the CAS replaced, as the header requires.  Returns 1 if it
 * changed, 0 if not (or the page's version is exhausted).
 */
int pte_change(struct orc_world *w, uint32_t x, uint32_t page, uint32_t clr, uint32_t set,
	       uint32_t frame, int only_present, struct change *ch)
{
	_Atomic uint64_t *pte = &w->as[x].pte[page];
	uint64_t old = atomic_load(pte), new;

	for (;;) {
		uint32_t np, nf;

		if (only_present && !(pte_perm(old) & B_P))
			return 0;
		np = (pte_perm(old) & ~clr) | set;
		nf = frame ? frame : pte_frame(old);
		if (!(np & B_P))
			np = nf = 0;
		if (np == pte_perm(old) && nf == pte_frame(old))
			return 0;
		if (pte_ver(old) >= VER_MAX)
			return 0;
		/* The attribute stays with a present PTE. */
		new = pte_make(np | (pte_pb(old) & B_ATTR), nf, pte_ver(old) + 1);
		if (atomic_compare_exchange_weak(pte, &old, new))
			break;
	}
	/* A removal: the frame whose contents a later install supersedes. */
	if ((pte_perm(old) & B_P) && !(pte_perm(new) & B_P))
		atomic_store(&w->as[x].prevf[page], pte_frame(old));
	ch->page = page;
	ch->old = old;
	ch->new = new;
	return 1;
}

/* The change that installs @frame at (x, page) with @perm, in @ch: an
 * install (the old PTE not present), stored later by install_commit(), in
 * the order install_run() keeps.  0 if the PTE is present or its version
 * exhausted.  Under the group lock. */
int install_prepare(struct orc_world *w, uint32_t x, uint32_t page, uint32_t perm, uint32_t frame,
		    struct change *ch)
{
	uint64_t old = atomic_load(&w->as[x].pte[page]);

	if ((pte_perm(old) & B_P) || pte_ver(old) >= VER_MAX)
		return 0;
	ch->page = page;
	ch->old = old;
	ch->new = pte_make(perm | B_P, frame, pte_ver(old) + 1);
	return 1;
}

/*
 * A new PTE for (x, page) on frame @newf is about to be stored: the frame
 * its last removal took, if it still holds the page's old contents (not yet
 * freed), is superseded from now on -- others will read and write @newf,
 * and an access through a translation to the old frame is stale data.
 */
void supersede(struct orc_world *w, uint32_t x, uint32_t page, uint32_t newf)
{
	uint32_t f = atomic_exchange(&w->as[x].prevf[page], 0u);

	if (f && f != newf)
		frame_set(w, f, x, page, F_GONE);
}

/* Store installs @ch of @x, each superseding what its page held before. */
void install_commit(struct orc_world *w, uint32_t x, const struct change *ch, uint32_t nch)
{
	for (uint32_t i = 0; i < nch; i++) {
		supersede(w, x, ch[i].page, pte_frame(ch[i].new));
		atomic_store(&w->as[x].pte[ch[i].page], ch[i].new);
	}
}
