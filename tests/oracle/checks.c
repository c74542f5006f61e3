/* SPDX-License-Identifier: MIT */
/*
 * checks.c - the oracle's judgement.  When the engine reports a change
 * complete, every CPU that runs its address space is checked for an entry
 * filled before it that permits what the change took away -- the question
 * asked of support/stale.h's model_stale_harmful(), the one definition
 * every checker of the project shares -- and the change becomes the page's
 * completed version (cv).  CPUs the contract lets the engine skip are
 * excused, and check themselves (scan_self()) when they start to use the
 * address space again; running CPUs check each entry they use, and every
 * write against pages already written back.  Frames and table pages are
 * checked as they are freed.  Reads caches, page tables and frame states,
 * reports; changes nothing but cv.
 */
#define _POSIX_C_SOURCE 200809L

#include "machine.h"

/* Does an entry with @eperm -> @eframe, filled from an older PTE, permit what
 * PTE word @pte does not?  The one definition, for every checker:
 * support/stale.h (B_ATTR is its MODEL_ATTR). */
int orc_harmful(uint32_t arch, uint32_t eperm, uint32_t eframe, uint64_t pte)
{
	return model_stale_harmful(arch, eperm, eframe, pte_pb(pte), pte_frame(pte));
}

/* Record @ptew as the latest completed change of (x, page), if it is. */
static void cv_raise(struct orc_world *w, uint32_t x, uint32_t page, uint64_t ptew)
{
	_Atomic uint64_t *cv = &w->as[x].cv[page];
	uint64_t old = atomic_load(cv);

	while ((!old || ver_older(pte_ver(old), pte_ver(ptew))) &&
	       !atomic_compare_exchange_weak(cv, &old, ptew))
		;
}

/* Is entry @e older than the completed change @cvw (0: none yet), and does
 * it permit what that change does not? */
static int stale(const struct orc_world *w, uint64_t e, uint64_t cvw)
{
	return cvw && ver_older(te_ver(e), pte_ver(cvw)) &&
	       orc_harmful(w->cfg.arch, te_pb(e), te_frame(e), cvw);
}

/*
 * An invalid entry of a kernel page filled before the completed change that
 * produced @cvw, which made the page present: the kernel faults on a mapped
 * page and has no spurious-fault path to recover by (GENERIC only caches
 * them).  A user page recovers (a spurious fault flushes it locally).
 */
int neg_harmful(uint32_t x, uint64_t e, uint64_t cvw)
{
	return x == ORC_KAS && te_neg(e) && (pte_perm(cvw) & B_P) &&
	       ver_older(te_ver(e), pte_ver(cvw));
}

/*
 * The change of (x, page) that produced PTE word @ptew is complete: record
 * it, then no CPU that runs @x may hold a harmful entry filled before it.
 * CPUs excused now scan themselves when they resume (scan_self()).
 */
void complete_page(struct orc_world *w, uint32_t x, uint32_t page, uint64_t ptew, const char *what)
{
	uint32_t v = pte_ver(ptew);

	cv_raise(w, x, page, ptew);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];
		uint64_t pub = atomic_load(&c->pub);
		uint32_t base;

		if (excused_tlb(pub, x)) {
			count(w, ORC_C_EXCUSED, 1);
			continue;
		}
		base = tlb_set(w, x, page);
		for (uint32_t k = 0; k < w->cfg.tlb_ways; k++) {
			uint64_t e = atomic_load(&c->tlb[base + k]);
			char ep[8], pp[8];

			if (!e || te_as(e) != x || te_page(e) != page || !ver_older(te_ver(e), v))
				continue;
			count(w, ORC_C_CHECKS, 1);
			if (neg_harmful(x, e, ptew)) {
				violation(w, ORC_V_STALE,
					  "%s complete: cpu %u still caches kernel page %u as invalid "
					  "(version %u), installed at version %u",
					  what, i, page, te_ver(e), v);
				continue;
			}
			if (!orc_harmful(w->cfg.arch, te_pb(e), te_frame(e), ptew))
				continue;
			violation(w, ORC_V_STALE,
				  "%s complete: cpu %u still holds as %u page %u -> %s frame %u "
				  "(version %u) but the change made it %s frame %u (version %u)",
				  what, i, x, page, perm_str(te_perm(e), ep), te_frame(e),
				  te_ver(e), perm_str(pte_perm(ptew), pp), pte_frame(ptew), v);
		}
	}
}

/*
 * CPU @c may use @x now (it published RUN for @x, after its catch-up): it
 * may hold nothing that a completed change made harmful, no translation to a
 * freed frame or to contents that are gone, no pointer to a freed table
 * page.  Kernel entries are checked too, whatever @x: a CPU that executes
 * uses them.  @lazy: the CPU only keeps @x loaded (its TLB entries of @x
 * wait for its catch-up; its walk caches do not, its MMU may walk); @x < 0:
 * nothing loaded.  Also used as a periodic self-audit of a running CPU.
 */
void scan_self(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, int x, int lazy,
	       enum orc_vkind kind, const char *when)
{
	cache_lock(c);
	for (uint32_t s = 0; s < tlb_slots(w); s++) {
		uint64_t e = atomic_load(&c->tlb[s]);
		uint32_t ex;
		uint64_t cvw, fo;
		char ep[8], pp[8];

		if (!e)
			continue;
		ex = te_as(e);
		if (ex != ORC_KAS && (lazy || x < 0 || ex != (uint32_t)x))
			continue;
		cvw = atomic_load(&w->as[ex].cv[te_page(e)]);
		count(w, ORC_C_CHECKS, 1);
		if (cvw && neg_harmful(ex, e, cvw)) {
			violation(w, kind, "%s: cpu %u caches kernel page %u as invalid (version %u), "
				  "installed at version %u",
				  when, cpu, te_page(e), te_ver(e), pte_ver(cvw));
			continue;
		}
		if (te_neg(e))
			continue;
		if (stale(w, e, cvw)) {
			violation(w, kind,
				  "%s: cpu %u holds as %u page %u -> %s frame %u (version %u); a "
				  "completed change made it %s frame %u (version %u)",
				  when, cpu, ex, te_page(e), perm_str(te_perm(e), ep), te_frame(e),
				  te_ver(e), perm_str(pte_perm(cvw), pp), pte_frame(cvw),
				  pte_ver(cvw));
			continue;
		}
		fo = atomic_load(&w->frame[te_frame(e)]);
		if (frame_stamped_of(w, te_frame(e), fo, ex, te_page(e)))
			continue; /* settled when it is handed out again */
		if (own_state(fo) == F_FREE || own_state(fo) == F_GONE || own_as(fo) != ex ||
		    own_idx(fo) != te_page(e))
			violation(w, own_state(fo) == F_GONE ? ORC_V_DATA : kind,
				  "%s: cpu %u holds as %u page %u -> frame %u (version %u), which "
				  "is %s (as %u page %u)",
				  when, cpu, ex, te_page(e), te_frame(e), te_ver(e),
				  own_state(fo) == F_FREE   ? "free"
				  : own_state(fo) == F_GONE ? "discarded or superseded"
							    : "another page's",
				  own_as(fo), own_idx(fo));
	}
	for (uint32_t s = 0; x >= 0 && s < psc_slots(w); s++) {
		uint64_t e = atomic_load(&c->psc[s]);
		uint64_t to;

		if (!e || psc_as(e) != (uint32_t)x)
			continue;
		to = atomic_load(&w->table[dir_table(e)]);
		if (own_state(to) == T_FREE || own_gen(to) != dir_gen(e))
			violation(w, kind,
				  "%s: cpu %u caches as %u group %u -> table page %u, which was "
				  "freed",
				  when, cpu, x, psc_group(e), dir_table(e));
	}
	cache_unlock(c);
}

/* A running CPU uses entry @e (under its cache lock, so no flush can remove
 * it meanwhile): if a completed change made it harmful, or its frame was
 * freed or given to another page, the engine failed to flush this CPU. */
int use_check(struct orc_world *w, uint32_t cpu, uint64_t e)
{
	uint32_t x = te_as(e), page = te_page(e);
	uint64_t cvw = atomic_load(&w->as[x].cv[page]);
	uint64_t fo = atomic_load(&w->frame[te_frame(e)]);
	char ep[8], pp[8];

	if (stale(w, e, cvw)) {
		violation(w, ORC_V_USE,
			  "cpu %u used as %u page %u -> %s frame %u (version %u) after a "
			  "completed change made it %s frame %u (version %u)",
			  cpu, x, page, perm_str(te_perm(e), ep), te_frame(e), te_ver(e),
			  perm_str(pte_perm(cvw), pp), pte_frame(cvw), pte_ver(cvw));
		return 1;
	}
	/* A frame freed with a stamp and not handed out yet: its contents
	 * died with the unmap, which is not complete until its stamp is
	 * settled (the program reads what was there, as before the unmap's
	 * flush). */
	if (frame_stamped_of(w, te_frame(e), fo, x, page))
		return 0;
	if (own_state(fo) == F_FREE || own_as(fo) != x || own_idx(fo) != page) {
		violation(w, ORC_V_USE,
			  "cpu %u accessed frame %u through as %u page %u (version %u), but the "
			  "frame is %s (as %u page %u)",
			  cpu, te_frame(e), x, page, te_ver(e),
			  own_state(fo) == F_FREE ? "free" : "another page's", own_as(fo),
			  own_idx(fo));
		return 1;
	}
	/*
	 * The page's contents left this frame: discarded (a DONTNEED that
	 * returned promised zeros) or superseded (a new PTE for the page was
	 * stored: others use the new frame).  What this access reads is stale,
	 * what it writes is lost, whatever the engine reported.
	 */
	if (own_state(fo) == F_GONE) {
		uint64_t now = atomic_load(&w->as[x].pte[page]);

		violation(w, ORC_V_DATA,
			  "cpu %u accessed as %u page %u through frame %u (version %u), whose "
			  "contents were discarded or moved (PTE now %#x frame %u version %u)",
			  cpu, x, page, te_frame(e), te_ver(e), pte_perm(now), pte_frame(now),
			  pte_ver(now));
		return 1;
	}
	return 0;
}

/* A write went through entry @e: it must not reach a page already written
 * back or copied (its data would be lost). */
void write_check(struct orc_world *w, uint32_t cpu, uint64_t e)
{
	uint32_t x = te_as(e), page = te_page(e);
	uint64_t fo = atomic_load(&w->frame[te_frame(e)]);

	if (own_state(fo) == F_CLEANED && own_as(fo) == x && own_idx(fo) == page) {
		uint64_t cvw = atomic_load(&w->as[x].cv[page]);
		uint64_t now = atomic_load(&w->as[x].pte[page]);
		char ep[8], pp[8];

		violation(w, ORC_V_LOST_WRITE,
			  "cpu %u wrote frame %u through as %u page %u -> %s (version %u) after "
			  "the page was written back or copied (completed: %s frame %u version %u; "
			  "PTE now %#x frame %u version %u)",
			  cpu, te_frame(e), x, page, perm_str(te_perm(e), ep), te_ver(e),
			  perm_str(pte_perm(cvw), pp), pte_frame(cvw), pte_ver(cvw), pte_perm(now),
			  pte_frame(now), pte_ver(now));
	}
}

/* Frame @f, which held @o's page, was just marked free: no running CPU may
 * still translate to it (frame_free()). */
void check_freed_frame(struct orc_world *w, uint32_t f, uint64_t o)
{
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];
		uint64_t pub = atomic_load(&c->pub);

		for (uint32_t s = 0; s < tlb_slots(w); s++) {
			uint64_t e = atomic_load(&c->tlb[s]);

			if (!e || te_neg(e) || te_frame(e) != f || excused_tlb(pub, te_as(e)))
				continue;
			count(w, ORC_C_CHECKS, 1);
			violation(w, ORC_V_FRAME,
				  "frame %u %s (was as %u page %u) while cpu %u (mode %u) maps it "
				  "at as %u page %u (entry version %u)",
				  f, atomic_load(&w->frame_stamp[f]) ? "handed out again (stamp settled)"
								      : "freed",
				  own_as(o), own_idx(o), i, pub_mode(pub), te_as(e), te_page(e),
				  te_ver(e));
		}
	}
}

/* Table page @t, whose life @o was, was just marked free: no CPU that may
 * walk its address space may still cache a pointer to it (table_free()). */
void check_freed_table(struct orc_world *w, uint32_t t, uint64_t o)
{
	uint64_t dirw = dir_make(t, own_gen(o));

	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];
		uint64_t pub = atomic_load(&c->pub);

		for (uint32_t s = 0; s < psc_slots(w); s++) {
			uint64_t e = atomic_load(&c->psc[s]);

			if (!e || psc_dir(e) != dirw || excused_psc(pub, psc_as(e)))
				continue;
			count(w, ORC_C_CHECKS, 1);
			violation(w, ORC_V_TABLE,
				  "table page %u (as %u group %u) freed while cpu %u (mode %s, "
				  "loaded as %u) caches a pointer to it",
				  t, own_as(o), own_idx(o), i,
				  pub_mode(pub) == M_RUN ? "running" : pub_mode(pub) == M_LAZY ? "lazy"
											: "other",
				  pub_loaded(pub));
		}
	}
}
