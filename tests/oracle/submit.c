/* SPDX-License-Identifier: MIT */
/*
 * submit.c - telling the engine, and taking it at its word.  Each change
 * made under the page-table locks is submitted as an event (or, where a
 * union of PTEs would hide a bit one page gained, as one event per run of
 * pages that changed alike); a change the engine decides BY_NOW is complete
 * when tlbpol_submit() returns, a deferred one is recorded on the
 * submitting CPU until a tlbpol_flush() with its deadline, or a deferred
 * free registered after it, has run.  Each completion goes to checks.c.
 * Installs are ordered here as the header requires, or as it forbids with
 * cfg.store_first.  Deferred frees hold the frames and table pages a change
 * took, and the addresses a LAZY_OK unmap holds back, until the engine
 * runs them on the CPU that registered them.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"

static const char *const kind_names[TLBPOL_EV_MAX] = {
	"fault", "protect", "unmap", "reclaim", "migrate", "clear-young", "clear-dirty", "remap",
};

/* Record a page of a deferred change on the CPU that submitted it: only
 * that CPU's tlbpol_flush() and deferred frees complete it. */
static void rec_add(struct orc_cpu *c, const struct orc_rec *r)
{
	if (c->nrec == c->caprec) {
		size_t cap = c->caprec ? c->caprec * 2 : 256;
		struct orc_rec *n = realloc(c->rec, cap * sizeof(*n));

		if (!n)
			abort();
		c->rec = n;
		c->caprec = cap;
	}
	c->rec[c->nrec++] = *r;
}

/*
 * Submit one event over pages [p0, p0 + n) of @x, whose changed pages are
 * @ch.  old_pte/new_pte are the unions over the changed pages.  That is exact
 * for changes that only remove bits (unmap, clear A/D, write-protect: a bit
 * some page lost is in the old union and not in the new one) and reads an
 * unmap as dirty if any page was; changes that may add bits go through
 * submit_runs().
 * @new_pte: the PTE to come, for a break-before-make frame change, else 0.
 * BY_NOW decisions are complete when this returns; later ones are recorded.
 * The pages are @x's (ORC_KAS: the kernel region's); the event goes
 * through user address space @via.  @mode: SUB_NOW completes the change
 * when the call returns whatever the engine decided (a DONTNEED that
 * returned promised zeros), SUB_NORECORD records nothing (the submit of a
 * GENERIC install before its store: only the one after completes it).
 */
void submit_via(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t kind,
		uint32_t evflags, uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch,
		uint32_t new_pte, enum sub_mode mode)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct tlbpol_event ev;
	struct tlbpol_decision d;
	uint32_t oldb = 0, newb = 0;
	char what[64];
	int r;

	for (uint32_t i = 0; i < nch; i++) {
		oldb |= pte_perm(ch[i].old);
		newb |= pte_perm(ch[i].new);
	}
	if (new_pte)
		newb = new_pte;
	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.kind = kind;
	ev.flags = evflags;
	ev.page_shift = ORC_PAGE_SHIFT;
	ev.va = page_va(x, p0);
	ev.nr_pages = n;
	ev.old_pte = oldb;
	ev.new_pte = newb;
	call_begin(w, c, 0);
	r = tlbpol_submit(w->eng, w->as[via].eas, cpu, &ev, &d);
	call_end(w, c);
	count(w, ORC_C_SUBMITS, 1);
	/* tlbpol_stamp() owes this CPU a stamp from now on (orc_stamp()). */
	if (evflags & TLBPOL_EVF_STAMP)
		c->stamp_owed = 1;
	if (r) {
		violation(w, ORC_V_API, "tlbpol_submit(%s, old %#x new %#x flags %#x) = %d",
			  kind_names[kind], oldb, newb, evflags, r);
		return;
	}
	if (d.action > TLBPOL_ACT_SHOOTDOWN || d.deadline > TLBPOL_BY_LAZY ||
	    (d.action != TLBPOL_ACT_SHOOTDOWN && d.deadline != TLBPOL_BY_NOW)) {
		violation(w, ORC_V_API, "decision action %u deadline %u for %s", d.action,
			  d.deadline, kind_names[kind]);
		d.deadline = TLBPOL_BY_NOW; /* check it now: the strictest reading */
	}
	trace(w, (int)cpu, TR_SUBMIT, x, p0,
	      kind | d.action << 3 | d.deadline << 5 | d.reason << 7 | evflags << 12,
	      (n > 255 ? 255 : n) | oldb << 8 | newb << 16);
	snprintf(what, sizeof(what), "%s[%s,%s,%s]", kind_names[kind], tlbpol_action_str(d.action),
		 tlbpol_deadline_str(d.deadline), tlbpol_reason_str(d.reason));
	/* Only pages this event changed complete a version (a spurious or
	 * retried fault reports the PTE as it is, changed by an earlier event
	 * whose own completion may still be pending). */
	if (mode == SUB_NORECORD)
		return;
	if (d.deadline == TLBPOL_BY_NOW || mode == SUB_NOW) {
		for (uint32_t i = 0; i < nch; i++)
			if (ch[i].new != ch[i].old)
				complete_page(w, x, ch[i].page, ch[i].new, what);
		return;
	}
	count(w, ORC_C_DEFERRED, 1);
	c->seq++;
	for (uint32_t i = 0; i < nch; i++) {
		struct orc_rec rec = { c->seq, ch[i].new, (uint16_t)ch[i].page, (uint8_t)x,
				       (uint8_t)d.deadline };

		if (ch[i].new != ch[i].old)
			rec_add(c, &rec);
	}
}

void submit(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t kind, uint32_t evflags,
	    uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch, uint32_t new_pte)
{
	submit_via(w, cpu, x, x, kind, evflags, p0, n, ch, nch, new_pte, SUB_NORMAL);
}

/*
 * Submit @ch as one event per run of contiguous pages that changed alike.
 * For changes that may gain permissions: a union of old and new PTEs would
 * hide a bit one page gained while another already had it (a U/S flip is a
 * downgrade on x86).  Complete when the call returns, whatever the engine
 * decided: a protection change is in force when mprotect() (or
 * set_memory_ro(), or a memory-type change) returns, so a harmful entry
 * left after that is a violation, not a deferral.
 */
void submit_runs(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t kind,
		 uint32_t evflags, const struct change *ch, uint32_t nch)
{
	for (uint32_t i = 0, j; i < nch; i = j + 1) {
		for (j = i; j + 1 < nch && ch[j + 1].page == ch[j].page + 1 &&
			    pte_perm(ch[j + 1].old) == pte_perm(ch[i].old) &&
			    pte_perm(ch[j + 1].new) == pte_perm(ch[i].new);
		     j++)
			;
		submit_via(w, cpu, x, via, kind, evflags, ch[i].page, j - i + 1, &ch[i], j - i + 1,
			   0, SUB_NOW);
	}
}

/*
 * Submit and store installs @ch over [p0, p0 + n) of @x, through @via, as
 * the header orders it: submit (which completes pending flushes over the
 * addresses), then store; on GENERIC submit once more after the store (a
 * CPU may have cached the invalid PTE up to it: the flush must follow it),
 * and only that submit completes the install.  cfg.store_first: the order
 * the header forbids, store then submit.
 *
 * Why submit first: the engine may have flushes pending over these
 * addresses (an unmap, reclaim or migration batched for later), and only
 * once those are complete may a new frame appear there, or a CPU could keep
 * using the old frame's translation beside the new one (Linux calls
 * flush_tlb_batched_pending() under the PTE lock before it maps anything).
 * No CPU can cache a not-present PTE, and nobody else writes it (we hold
 * its lock; hardware does not touch it), so nothing is lost by writing it
 * after the submit.
 */
void install_run(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t evflags,
		 uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch)
{
	int generic = caches_invalid(w);

	if (w->cfg.store_first) {
		install_commit(w, x, ch, nch);
		window(w, &w->cpus[cpu]);
		submit_via(w, cpu, x, via, TLBPOL_EV_FAULT, evflags, p0, n, ch, nch, 0, SUB_NORMAL);
		return;
	}
	submit_via(w, cpu, x, via, TLBPOL_EV_FAULT, evflags, p0, n, ch, nch, 0,
		   generic ? SUB_NORECORD : SUB_NORMAL);
	install_commit(w, x, ch, nch);
	if (generic)
		submit_via(w, cpu, x, via, TLBPOL_EV_FAULT, evflags, p0, n, ch, nch, 0, SUB_NORMAL);
}

/* Install a fresh frame at (x, page) with @perm, as a fault does.  Under the
 * group lock. */
enum orc_result install(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t page, uint32_t perm,
			uint32_t evflags)
{
	struct change ch;
	uint32_t f;

	if (ensure_table(w, x, page / w->cfg.group_pages))
		return ORC_NOMEM;
	f = frame_alloc(w, x, page);
	if (!f)
		return ORC_NOMEM;
	if (!install_prepare(w, x, page, perm, f, &ch)) {
		frame_unalloc(w, f);
		return ORC_SKIP;
	}
	install_run(w, cpu, x, x, evflags, page, 1, &ch, 1);
	return ORC_OK;
}

/* Changes of @c with seq <= @upto and deadline <= @by are complete. */
static void complete_recs(struct orc_world *w, struct orc_cpu *c, uint64_t upto, uint32_t by,
			  const char *what)
{
	size_t keep = 0;

	for (size_t i = 0; i < c->nrec; i++) {
		struct orc_rec r = c->rec[i];

		if (r.seq <= upto && r.deadline <= by)
			complete_page(w, r.as, r.page, r.pte, what);
		else
			c->rec[keep++] = r;
	}
	c->nrec = keep;
}

/* The engine runs deferred free @arg: exactly once, on the CPU that
 * registered it, and only once that CPU's changes before it are complete,
 * so they are complete now and what it frees may be reused. */
static void free_cb(void *arg)
{
	struct orc_free *fr = arg;
	struct orc_world *w = fr->w;

	if (atomic_exchange(&fr->ran, 1)) {
		violation(w, ORC_V_FREE, "deferred free of cpu %u ran twice", fr->cpu);
		return;
	}
	count(w, ORC_C_FREES_RUN, 1);
	trace(w, self_cpu, TR_DFRUN, fr->as, 0, fr->nr_frames | fr->nr_tables << 8,
	      fr->nr_tables ? fr->tables[0] : 0);
	if (self_world != w || self_cpu != (int)fr->cpu) {
		violation(w, ORC_V_FREE, "deferred free of cpu %u ran on cpu %d", fr->cpu, self_cpu);
	} else {
		/* Everything this CPU had pending when it registered the free is
		 * complete now, whatever its deadline. */
		complete_recs(w, &w->cpus[fr->cpu], fr->upto, TLBPOL_BY_LAZY, "deferred free");
	}
	for (uint32_t i = 0; i < fr->nr_tables; i++)
		table_free(w, fr->tables[i]);
	for (uint32_t i = 0; i < fr->nr_frames; i++)
		frame_free(w, fr->frames[i]);
	for (uint32_t i = 0; i < fr->qn; i++)
		atomic_fetch_sub(&w->as[fr->as].quar[fr->qpage + i], 1);
}

/* A deferred free for @cpu's change of @as, to fill, then register or give back. */
struct orc_free *free_new(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, uint32_t as)
{
	struct orc_free *fr;

	if (!c->chunks || c->chunk_used == CHUNK) {
		struct free_chunk *ch = calloc(1, sizeof(*ch));

		if (!ch)
			abort();
		ch->next = c->chunks;
		c->chunks = ch;
		c->chunk_used = 0;
	}
	fr = &c->chunks->f[c->chunk_used++];
	fr->w = w;
	fr->cpu = cpu;
	fr->as = as;
	return fr;
}

/* Give back the record free_new() just took, unused (nothing changed). */
void free_unused(struct orc_cpu *c, struct orc_free *fr)
{
	c->chunk_used--;
	memset(fr, 0, sizeof(*fr));
}

/*
 * Clear the present PTEs of [p0, p0 + n) of @x into @ch, the frames they
 * took into a new deferred free *@frp: how many changed (none: no free is
 * kept).  Under the group locks.
 */
uint32_t clear_to_free(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t p0, uint32_t n,
		       struct change *ch, struct orc_free **frp)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct orc_free *fr = free_new(w, c, cpu, x);
	uint32_t nch = 0;

	for (uint32_t p = p0; p < p0 + n; p++)
		if (pte_change(w, x, p, PERM_MASK, 0, 0, 1, &ch[nch]))
			fr->frames[fr->nr_frames++] = pte_frame(ch[nch++].old);
	if (!nch)
		free_unused(c, fr);
	*frp = fr;
	return nch;
}

/* Register @fr: it runs once every change @c has submitted so far is
 * complete (free_cb()). */
void free_register(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, struct orc_free *fr)
{
	int r;

	fr->upto = c->seq;
	count(w, ORC_C_FREES_REG, 1);
	trace(w, (int)cpu, TR_DFREG, fr->as, 0, fr->nr_frames | fr->nr_tables << 8,
	      fr->nr_tables ? fr->tables[0] : 0);
	call_begin(w, c, 0);
	r = tlbpol_defer_free(w->eng, cpu, free_cb, fr);
	call_end(w, c);
	if (r)
		violation(w, ORC_V_API, "tlbpol_defer_free(cpu %u) = %d", cpu, r);
	else
		live_free(w, c, fr); /* unless it ran already */
}

/* A deferred free of the one frame @f that @cpu's change of @as took. */
void free_frame_later(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t f)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct orc_free *fr = free_new(w, c, cpu, as);

	fr->frames[fr->nr_frames++] = f;
	free_register(w, c, cpu, fr);
}

/* The promise LAZY_OK makes: the addresses [page, page + n) of @x are not
 * reused until deferred free @fr has run. */
void hold_back(struct orc_world *w, uint32_t x, uint32_t page, uint32_t n, struct orc_free *fr)
{
	for (uint32_t p = page; p < page + n; p++)
		atomic_fetch_add(&w->as[x].quar[p], 1);
	fr->qpage = page;
	fr->qn = n;
}

int orc_tick(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int r;

	call_begin(w, c, 1);
	r = tlbpol_tick(w->eng, cpu);
	call_end(w, c);

	trace(w, (int)cpu, TR_TICK, 0, 0, (uint32_t)r, 0);
	if (r < 0)
		violation(w, ORC_V_API, "tlbpol_tick(cpu %u) = %d", cpu, r);
	else
		live_tick(w, c, cpu);
	return r;
}

/*
 * The engine's two calls that complete @cpu's recorded changes, on its
 * thread: tlbpol_stamp() when @st is given (it completes the work due by a
 * free, as tlbpol_flush(BY_FREE) does, and writes a stamp in *@st), else
 * tlbpol_flush(@by).  A success completes what @cpu recorded due by @by
 * (nothing for BY_NOW: such a change completed in its own submit).
 * Return: the call's.
 */
static int completing_call(struct orc_world *w, uint32_t cpu, uint32_t by, uint64_t *st,
			   const char *what)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint64_t upto = c->seq;
	int r;

	call_begin(w, c, 0);
	r = st ? tlbpol_stamp(w->eng, cpu, st) : tlbpol_flush(w->eng, cpu, by);
	call_end(w, c);
	if (st)
		c->stamp_owed = 0;
	trace(w, (int)cpu, TR_EFLUSH, 0, 0, by, (uint32_t)r);
	if (r >= 0 && by != TLBPOL_BY_NOW)
		complete_recs(w, c, upto, by, what);
	return r;
}

/*
 * tlbpol_stamp() for @cpu, on its thread: the return, the stamp in *@st
 * (STAMP_UNWRITTEN if none was written).  A success completes @cpu's work
 * due by a free and posts the rest, so the oracle completes what @cpu
 * recorded due by a free, and follows the stamp until it is settled
 * (live_stamp()).  Judging the answer is the caller's.
 */
int stamp_call(struct orc_world *w, uint32_t cpu, uint64_t *st)
{
	int r;

	*st = STAMP_UNWRITTEN;
	r = completing_call(w, cpu, TLBPOL_BY_FREE, st, "stamp");
	if (r >= 0 && *st && *st != STAMP_UNWRITTEN)
		live_stamp(w, &w->cpus[cpu], *st);
	return r;
}

/*
 * tlbpol_stamp() for @cpu: its work due by a free is complete, the rest
 * posted; the stamp (0 on failure, reported).  -ENOENT says nothing
 * stamped was submitted on @cpu since its last stamp: nothing of ours to
 * stamp, so stamp 0 and nothing completed (a failed call does nothing) --
 * right when we owe no stamp (a probe), wrong after a stamped submit.
 */
uint64_t orc_stamp(struct orc_world *w, uint32_t cpu)
{
	int owed = w->cpus[cpu].stamp_owed, r;
	uint64_t st;

	r = stamp_call(w, cpu, &st);
	if (r == -ENOENT && !owed) {
		if (st != STAMP_UNWRITTEN)
			violation(w, ORC_V_API, "tlbpol_stamp(cpu %u) = -ENOENT wrote a stamp", cpu);
		return 0;
	}
	if (r < 0) {
		violation(w, ORC_V_API, "tlbpol_stamp(cpu %u) = %d after a stamped submit", cpu, r);
		return 0;
	}
	if (st == STAMP_UNWRITTEN) {
		violation(w, ORC_V_API, "tlbpol_stamp(cpu %u) = %d wrote no stamp", cpu, r);
		st = 0;
	}
	if (!owed)
		violation(w, ORC_V_API,
			  "tlbpol_stamp(cpu %u) = %d (stamp %#llx) with nothing stamped submitted "
			  "since its last stamp: -ENOENT expected",
			  cpu, r, (unsigned long long)st);
	return st;
}

int orc_flush(struct orc_world *w, uint32_t cpu, uint32_t by)
{
	const char *what = by == TLBPOL_BY_WRITEBACK ? "flush(writeback)"
			   : by == TLBPOL_BY_FREE    ? "flush(free)"
						     : "flush(lazy)";
	int r = completing_call(w, cpu, by, NULL, what);

	if (r < 0)
		violation(w, ORC_V_API, "tlbpol_flush(cpu %u, %u) = %d", cpu, by, r);
	return r;
}
