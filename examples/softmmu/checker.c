/* SPDX-License-Identifier: MIT */
/*
 * checker.c - softmmu's judge of stale TLB use: it keeps each page's
 * "completed" word (the PTE of the latest change the engine reported
 * complete), judges every guest access against it with the checkers' one
 * definition of a harmful stale entry (model_stale_harmful(),
 * support/stale.h), and counts and prints the stale uses that the MMU,
 * the guest and the frame allocator find.  It is a file of its own so that
 * what the program claims about libtlbpol stands apart from the machine it
 * runs on: it calls nothing in the other files.
 */

/*
 * Why each check is sound.  Every guest access is checked, and a stale use
 * is counted only where the engine reported the relevant flush complete.
 *  - Frames.  Word 0 of each frame holds the identity it was allocated for
 *    (guest vpn and an allocation generation); a TLB entry records the
 *    identity it was filled with.  Frames are poisoned only once every flush
 *    of their unmap is done (deferred frees run only after every flush
 *    pending when they were registered; a stamped frame is poisoned when it
 *    is handed out again, after its settle), so reading poison or another
 *    identity through a TLB entry is always a stale use; so is a freed
 *    frame whose poison was overwritten (a late write through a stale
 *    entry), found when the frame is reused.
 *  - Page-table changes.  Each software change of a PTE takes the next
 *    version of that page; a TLB entry records the version it was filled
 *    from.  When the engine reports a change complete (tlbpol_submit()
 *    returns with a BY_NOW decision; tlbpol_flush(by) returns for changes due
 *    by then; an install at that address returns; a deferred free registered
 *    after it runs), the manager raises the page's "completed" word cv to the
 *    PTE that change produced.  An access through an entry older than cv
 *    that grants more than cv (support/stale.h: cv not present, another
 *    frame, a permission cv lacks, a U/S change, a cached D cv lost) is a
 *    stale use.  That is sound: before completion a vCPU may use
 *    its old entry (the kick may not have arrived), and completion is
 *    reported only once every vCPU the engine did not skip has flushed on its
 *    own thread; a skipped vCPU is idle or blocked and uses no entry before
 *    the catch-up flush.  An entry, once flushed, never comes back with its
 *    old version, so an older entry seen after completion was there at
 *    completion.
 *  - Table pages.  A table page is freed (and poisoned) only from a deferred
 *    free after its TABLES_FREED flush.  An idle vCPU keeps the address space
 *    loaded and its MMU walks speculatively through its PSC (the reason the
 *    engine interrupts idle CPUs when page tables are freed); a walk that
 *    reaches a freed table page is a stale use.
 *  - Flush stamps.  A frame freed with a stamp goes back to the free list
 *    at once, its contents dead but intact, and the change that unmapped it
 *    is complete only once the stamp settled (tlbpol_stamp_pending() says
 *    0: the manager raises cv then).  Until then a stale entry may still
 *    use the frame: its identity is still the one the entry was filled
 *    with, and cv is not raised, so the use passes -- as long as the frame
 *    was not handed out again.  A frame handed out again must have had its
 *    stamp settled (check_handout(): the allocator settled it, or the engine
 *    says it is settled) and no running vCPU caching it; it is poisoned
 *    then, so a stale entry that survived reads poison or another identity.
 *    After the settle, cv is raised and a use through an older entry that
 *    it no longer allows is counted as above.
 *  - Address spaces and tags.  An entry records the address space whose
 *    table filled it beside the hardware tag it was filled under; the MMU
 *    matches only the tag.  A tag goes to another address space only with
 *    its flush (TLBPOL_TAG_FLUSH_TAG: a per-CPU slot changed hands; _ALL: a
 *    rollover), made at the switch before any access, so a correct run
 *    never uses an entry of another owner: such a use, or a walk through a
 *    PSC entry into another address space's table page, is a stale use.
 *    The entries a vCPU keeps under another tag while it runs elsewhere are
 *    not counted by the reuse check (mmu.c, tlb_unhold_all()): they cannot
 *    be used before a switch back, whose flush the engine asks for when a
 *    change to them completed meanwhile; the checks above judge them then.
 */

#include "softmmu.h"

#include <inttypes.h>

#include "support/stale.h"

const char *const stale_names[S_MAX] = {
	"freed frame", "reused frame", "read after flush", "write after flush",
	"freed table page", "write into freed frame", "unsettled reuse", "other address space",
};

void stale(struct world *w, enum stale_kind k, const char *fmt, ...)
{
	uint64_t n = atomic_fetch_add(&w->stale_total, 1);
	char msg[512];
	va_list ap;

	/* The first MAX_REPORTS, and the first of each kind. */
	if (atomic_fetch_add(&w->stale[k], 1) && n >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("STALE USE #%" PRIu64 " [%s] %s: %s\n", n + 1, w->policy, stale_names[k], msg);
}

static const char *perms_str(uint32_t p, char *buf)
{
	snprintf(buf, 16, "%s%s%s%s%s", p & PTE_P ? "P" : "-", p & PTE_W ? "W" : "-",
		 p & PTE_U ? "U" : "-", p & PTE_A ? "A" : "-", p & PTE_D ? "D" : "-");
	return buf;
}

/* The change that produced PTE word @word is complete: raise cv (never
 * lower it: completions may be learnt out of order). */
void cv_raise(struct world *w, uint32_t vpn, uint64_t word)
{
	uint64_t cur = atomic_load_explicit(&w->cv[vpn], memory_order_relaxed);

	while (pte_ver(cur) < pte_ver(word) &&
	       !atomic_compare_exchange_weak_explicit(&w->cv[vpn], &cur, word, memory_order_release,
						      memory_order_relaxed))
		;
}

/*
 * Is entry @e, used after completed PTE word @cvw (it is older), one the
 * completed flush should have removed?  The one definition, for every
 * checker: support/stale.h (softmmu's MMU is x86's).  A harmful entry
 * is a stale use whatever it is used for: a read through an entry that a
 * completed write-protect should have dropped means the flush left it.
 */
static int harmful(const struct tlb_entry *e, uint64_t cvw)
{
	return model_stale_harmful(TLBPOL_ARCH_X86_64, e->perms | PTE_P, e->frame,
				   pte_perms(cvw), pte_frame(cvw));
}

static void report_use(struct cpu *c, enum stale_kind k, const struct tlb_entry *e, uint32_t vpn,
		       int write, uint64_t id, uint64_t cvw)
{
	struct world *w = c->w;
	char b1[16], b2[16];

	stale(w, k,
	      "vCPU %u %s vpn %#x through its TLB entry {frame %u, %s, version %u, "
	      "frame generation %u}; the frame now holds %s; the page's last completed change: "
	      "version %u, %s frame %u",
	      c->id, write ? "wrote" : "read", vpn, e->frame, perms_str(e->perms, b1), e->ver,
	      (uint32_t)(e->ident >> 32),
	      id == POISON ? "poison" : id == e->ident ? "the same page" : "another page",
	      pte_ver(cvw), perms_str(pte_perms(cvw), b2), pte_frame(cvw));
}

/* Frame @f is handed out again: the reuse check, for every frame.  A vCPU
 * that the engine counts as running (it flushes before it runs again
 * otherwise) must not cache it, and a stamped frame's stamp must have been
 * settled (its flush done on every vCPU that runs the address space). */
void check_handout(struct world *w, uint32_t f, uint64_t stamp, int settled)
{
	int r;

	if (stamp && !settled && (r = tlbpol_stamp_pending(w->eng, stamp)))
		stale(w, S_UNSETTLED,
		      "frame %u handed out again before its flush stamp %#" PRIx64
		      " settled (tlbpol_stamp_pending(): %d)",
		      f, stamp, r);
	for (uint32_t k = 0; k < MAX_VCPUS / 64; k++) {
		/*
		 * Halted first, then holders (both sequentially consistent).
		 * A vCPU back from a halt flushes (its holder bits go) and only
		 * then clears its halted bit (guest.c, vcpu_halt()).  Read the
		 * other way round, holders could be read before that flush and
		 * halted after the clear, and an excused vCPU that did its
		 * catch-up flush would be reported as still caching the frame
		 * (the two loads of one expression are unsequenced in C, so
		 * the order must be written out).  In this order, a holder bit
		 * seen after a clear halted bit was there when the vCPU ran.
		 */
		uint64_t halted = atomic_load(&w->halted[k]);
		uint64_t h = atomic_load(&w->holders[f][k]) & ~halted;

		if (h)
			stale(w, S_REUSED_FRAME,
			      "frame %u handed out again while vCPU %u still caches it", f,
			      k * 64 + (uint32_t)__builtin_ctzll(h));
	}
}

/* vCPU @c just used entry @e for @vpn; its frame's word 0 read @id at the
 * access.  Judge the use. */
void check_use(struct cpu *c, const struct tlb_entry *e, uint32_t vpn, int write, uint64_t id)
{
	uint64_t cvw;

	if ((uint32_t)e->owner != c->space) {
		/* Filled by another address space under the tag now loaded:
		 * the tag changed hands without its flush. */
		stale(c->w, S_OTHER_AS,
		      "vCPU %u running address space %u %s vpn %#x through the entry address "
		      "space %u filled under tag %u {frame %u, version %u}",
		      c->id, c->space, write ? "wrote" : "read", vpn, (uint32_t)e->owner,
		      (uint32_t)e->htag, e->frame, e->ver);
		return;
	}
	vpn = pg_of(e->owner, vpn); /* the page, as the manager names it */
	cvw = atomic_load_explicit(&c->w->cv[vpn], memory_order_acquire);
	if (id == POISON)
		report_use(c, S_FREED_FRAME, e, vpn, write, id, cvw);
	else if (id != e->ident)
		report_use(c, S_REUSED_FRAME, e, vpn, write, id, cvw);
	else if (pte_ver(cvw) > e->ver && harmful(e, cvw))
		report_use(c, write ? S_WRITE_AFTER : S_READ_AFTER, e, vpn, write, id, cvw);
	else if (atomic_load_explicit(&c->w->frame_stamp[e->frame], memory_order_relaxed))
		c->n[C_DEAD_USES]++; /* freed with a stamp, not reused: allowed */
}
