/* SPDX-License-Identifier: MIT */
/*
 * decide.c - the decision table: what each page-table change needs.
 *
 * An event is first classified by what changed between its old and new PTE
 * (and, for removals, by why it was removed; decide.h, inline for the submit
 * path); the class then indexes tlbpol__decision_table[], where every row is
 * written down once with the hardware rule or kernel source that justifies
 * it.  Nothing else in the engine decides whether to flush.
 *
 * Classification looks at the PTE change before it looks at the event kind,
 * so an event never gets less than its PTE change needs: a CLEAR_YOUNG that
 * also drops the write bit is a downgrade, whatever it is called.
 */
#include "decide.h"

#define NONE_NOW { TLBPOL_ACT_NONE, TLBPOL_BY_NOW }
#define LOCAL_NOW { TLBPOL_ACT_LOCAL, TLBPOL_BY_NOW }
#define SHOOT_NOW { TLBPOL_ACT_SHOOTDOWN, TLBPOL_BY_NOW }
#define SHOOT_WB { TLBPOL_ACT_SHOOTDOWN, TLBPOL_BY_WRITEBACK }
#define SHOOT_FREE { TLBPOL_ACT_SHOOTDOWN, TLBPOL_BY_FREE }
#define SHOOT_LAZY { TLBPOL_ACT_SHOOTDOWN, TLBPOL_BY_LAZY }
/* "Classify the event again as if this row did not exist." */
#define RECLASSIFY { 0xff, 0xff }

/* Index of with[]: GENERIC, X86_64, ARM64, RISCV64 (enum tlbpol_arch order). */
#define ALL4(v) { v, v, v, v }

const struct decision_row tlbpol__decision_table[CLS_MAX] = {
	/*
	 * Old PTE not present: no TLB may hold a translation for it (x86 SDM
	 * 4.10.2.3: only present entries are cached; Arm ARM D8.13: invalid
	 * descriptors are never cached).  Never a flush, whatever the rules.
	 * (GENERIC and RISCV64 assume less: an install there is CLS_INSTALL,
	 * a user one on RISCV64 with Svvptc excepted.)
	 */
	[CLS_NOT_PRESENT] = { 0, ALL4(NONE_NOW), NONE_NOW, TLBPOL_WHY_NOT_PRESENT },

	/*
	 * GENERIC and RISCV64 (x86 and ARM64 classify an install as
	 * CLS_NOT_PRESENT): a profile that assumes nothing must assume that
	 * invalid entries may be cached, and RISC-V permits it.  RISC-V without Svvptc may keep using an invalid PTE after
	 * it was made valid (priv. spec, "Svvptc"; bao-hypervisor PR #378
	 * crashed on a SiFive P550 for the lack of a flush here), so Linux
	 * riscv flushes locally when it installs (update_mmu_cache() ->
	 * local_flush_tlb_page()).  A user page is then safe everywhere: a CPU
	 * that cached the invalid entry faults, finds the PTE valid, and the
	 * spurious-fault row flushes it locally.  A kernel page (not USER, or
	 * global) has no such path: a kernel access that faults on a valid
	 * mapping is an oops, so every CPU that may hold the invalid entry is
	 * flushed before the mapping is used (Linux riscv flush_cache_vmap()
	 * flushed the kernel range on every CPU before it learnt to fix up
	 * vmalloc faults).
	 */
	[CLS_INSTALL] = { 0, { LOCAL_NOW, NONE_NOW, NONE_NOW, LOCAL_NOW }, NONE_NOW, TLBPOL_WHY_INSTALL },
	[CLS_INSTALL_KERNEL] = { 0, { SHOOT_NOW, NONE_NOW, NONE_NOW, SHOOT_NOW }, NONE_NOW,
				 TLBPOL_WHY_INSTALL },

	/*
	 * Present PTE, nothing changed and no fault to fix (mprotect to the same
	 * protection): nothing is stale.  Linux mm/mprotect.c change_pte_range()
	 * asks pte_needs_flush(), which on x86 is false for an unchanged PTE
	 * (the asm-generic default flushes anyway).
	 */
	[CLS_UNCHANGED] = { 0, ALL4(NONE_NOW), NONE_NOW, TLBPOL_WHY_UNCHANGED },

	/*
	 * TLBPOL_RULES_NONE: the policy every rule improves on.  Every change to
	 * a present PTE is flushed everywhere before the call returns; with
	 * RULE_RANGE_FLUSH and RULE_FOOTPRINT off too, that is a whole-AS flush
	 * on every online CPU.
	 */
	[CLS_NAIVE] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_NAIVE },

	/*
	 * The PTE now points to another frame (COW break, migration done in
	 * place): a stale entry reads or writes the old frame.  Every arch must
	 * remove it everywhere before the new mapping is relied on: Linux
	 * wp_page_copy() uses ptep_clear_flush(); Arm additionally requires
	 * break-before-make for an output-address change (Arm ARM D8.14.1).
	 */
	[CLS_PFN_CHANGE] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_PFN_CHANGE },

	/*
	 * Something the portable bits cannot say changed (TLBPOL_EVF_ATTRS):
	 * the size or structure of the translation (huge-page split or
	 * collapse, block <-> table, the contiguous bit), its memory type
	 * (x86 PAT/PCD/PWT, Arm MAIR index), its protection key, or an x86
	 * shadow-stack PTE (W=0, D=1) made an ordinary one.  A stale entry
	 * keeps the old size, type or key: x86 SDM 4.10.2.3 lets the CPU use
	 * either size after a page-size change without invalidation (and AMD
	 * erratum 383 makes that a machine check, Linux
	 * __split_huge_pmd_locked() invalidates first); Arm requires
	 * break-before-make for each of these (Arm ARM D8.16.1); x86
	 * pte_flags_need_flush() puts _PAGE_PSE, _PAGE_PAT, _PAGE_PCD,
	 * _PAGE_PWT and the pkey bits in flush_on_change.  A downgrade.
	 */
	[CLS_ATTRS] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_ATTRS },

	/*
	 * mremap moved the PTEs: the old addresses must go before the move is
	 * visible, or a thread keeps using the old address.  Linux
	 * mm/mremap.c move_ptes() flushes the old range before it drops the
	 * PTE lock when a present PTE moved.
	 */
	[CLS_REMAP] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_REMAP },

	/*
	 * MADV_DONTNEED and the like (TLBPOL_EVF_STAYS_MAPPED): the PTEs are
	 * cleared but the addresses stay mapped.  A stale entry is not just
	 * kept, it is used: a store after madvise() returned goes through a
	 * stale dirty entry into the old frame, no fault, no install, and is
	 * lost when the next fault maps a zero page; a load reads old data
	 * where DONTNEED promises zeros (calloc relies on it).  So neither
	 * PRIVATE nor LAZY_OK may defer it: it completes before the call
	 * returns, as Linux's tlb_finish_mmu() does before madvise() returns
	 * (and commit 99baac21e458 "mm: fix MADV_[FREE|DONTNEED] TLB flush
	 * miss problem" fixed exactly this lost write for concurrent
	 * madvise() calls).  Submit the range as one event: one shootdown.
	 */
	[CLS_DISCARD] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_DISCARD },

	/*
	 * munmap / zap / MADV_DONTNEED of a page that cannot have been written
	 * since it was last clean: the frames are freed afterwards, and only
	 * their reuse makes a stale entry harmful.  Linux gathers the pages in
	 * an mmu_gather and flushes once before freeing them
	 * (include/asm-generic/tlb.h, tlb_flush_mmu()); page-table pages are
	 * freed after the same flush (tlb_remove_table()).  Rule off: flush
	 * before the call returns.  Linux 72b252aed506 ("mm: send one IPI per
	 * CPU to TLB flush all entries after unmapping pages") extends the same
	 * window to reclaim.
	 */
	[CLS_UNMAP] = { TLBPOL_RULE_BATCH, ALL4(SHOOT_FREE), SHOOT_NOW, TLBPOL_WHY_UNMAP },

	/*
	 * Unmap of a dirty page that is not private: a shared file page
	 * outlives the unmap and is written back, by whichever CPU the flusher
	 * thread runs on; a CPU still holding a writable, dirty entry keeps
	 * writing after writeback and the writes are lost on eviction.  Only
	 * the submitting CPU can complete its deferred work, and the writeback
	 * of a shared page does not run there, so the flush is done before
	 * the call returns, which is before the page-table lock is dropped:
	 * Linux zap_present_ptes() sets force_flush for a dirty file PTE
	 * (delay_rmap) and zap_pte_range() flushes "before dropping ptl", so
	 * that page_mkclean() on any CPU, which takes that lock, finds the
	 * flush done.  LAZY_OK does not relax it.
	 */
	[CLS_UNMAP_DIRTY] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_UNMAP_DIRTY },

	/*
	 * Page-table pages were freed, whatever the PTEs under them said: the
	 * paging-structure caches may still point at a table page, and once it
	 * is reused a walk through the cached entry reads its new contents as
	 * PTEs (SDM 4.10.3; Linux flushes with freed_tables before
	 * tlb_remove_table() frees the page, even over not-present PTEs).
	 */
	[CLS_TABLES_FREED] = { TLBPOL_RULE_BATCH, ALL4(SHOOT_FREE), SHOOT_NOW,
			       TLBPOL_WHY_TABLES_FREED },

	/*
	 * Reclaim of a page that cannot have been written since it was last
	 * clean: deferring the flush to before the frame is freed is safe
	 * (Linux 72b252aed506 "mm: send one IPI per CPU to TLB flush all entries
	 * after unmapping pages"; Linux
	 * mm/rmap.c set_tlb_ubc_flush_pending(), try_to_unmap_flush() in
	 * shrink_folio_list() before the folios are freed).  Which pages count
	 * as clean is an arch question, answered in classify_removal().
	 */
	[CLS_RECLAIM_CLEAN] = { TLBPOL_RULE_BATCH, ALL4(SHOOT_FREE), SHOOT_NOW,
				TLBPOL_WHY_RECLAIM_CLEAN },

	/*
	 * Reclaim of a dirty page: a CPU still holding a writable entry could
	 * change the page after it is written back, and the write would be
	 * lost.  The flush is due before writeback (Linux d950c9477d51 "mm:
	 * defer flush of writable TLB entries", from Mel Gorman's v3: "Immediately
	 * flush dirty PTEs to avoid corruption"; mm/rmap.c sets
	 * tlb_ubc->writable for a dirty PTE and mm/vmscan.c calls
	 * try_to_unmap_flush_dirty() before pageout()).
	 */
	[CLS_RECLAIM_DIRTY] = { TLBPOL_RULE_BATCH, ALL4(SHOOT_WB), SHOOT_NOW,
				TLBPOL_WHY_RECLAIM_DIRTY },

	/*
	 * Migration of a page that cannot be written through a stale entry.
	 * Due before the copy all the same, as Linux flushes before any copy
	 * (mm/migrate.c migrate_pages_batch(), try_to_unmap_flush() between
	 * the unmap and move loops, one flush for the whole batch): once the
	 * new PTE is visible, a CPU that still reads the old frame misses what
	 * others write to the new one (a coherence break; on Arm a
	 * break-before-make violation, Arm ARM D8.16.1).  Deferring it to the
	 * free would be safe only if every host submitted the restore before
	 * storing it, and Linux's own remove_migration_ptes() stores first.
	 */
	[CLS_MIGRATE_CLEAN] = { TLBPOL_RULE_BATCH, ALL4(SHOOT_WB), SHOOT_NOW,
				TLBPOL_WHY_MIGRATE_CLEAN },

	/*
	 * Migration of a page that may be written through a stale entry: the
	 * copy would miss the write.  Due before the copy, which is what
	 * BY_WRITEBACK means ("before the contents are written back or
	 * copied"); migrate_pages_batch() flushes before it copies any folio.
	 */
	[CLS_MIGRATE_DIRTY] = { TLBPOL_RULE_BATCH, ALL4(SHOOT_WB), SHOOT_NOW,
				TLBPOL_WHY_MIGRATE_DIRTY },

	/*
	 * A permission was removed (write, exec, present outside an unmap), or
	 * the user or global bit changed either way: a stale entry grants what
	 * the PTE no longer does, on every arch.  U/S 0->1 counts: with SMEP or
	 * SMAP it takes supervisor access away (SDM 4.10.4.3 exempts it only
	 * with CR4.SMEP = 0; Arm: EL0 access implies PXN, PAN).  x86
	 * pte_flags_need_flush() (arch/x86/include/asm/tlbflush.h) lists
	 * _PAGE_RW, _PAGE_USER, _PAGE_NX and _PAGE_GLOBAL in flush_on_change;
	 * change_protection() flushes the range before mprotect returns.
	 */
	[CLS_DOWNGRADE] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_DOWNGRADE },

	/*
	 * Dirty bit cleared (writeback, dirty logging): a CPU holding an entry
	 * with D set writes without setting D again, so the next write would be
	 * missed by whoever relies on the bit (x86 SDM 4.8: D is set only when
	 * the cached entry does not have it).  Linux page_mkclean_one() uses
	 * ptep_clear_flush(); x86 pte_needs_flush() flushes when _PAGE_DIRTY is
	 * cleared.
	 */
	[CLS_CLEAR_DIRTY] = { 0, ALL4(SHOOT_NOW), SHOOT_NOW, TLBPOL_WHY_CLEAR_DIRTY },

	/*
	 * Accessed bit cleared for aging.  A stale entry with A set only makes
	 * aging inexact; it grants nothing (the spec's "stale accessed bit"
	 * exception).
	 *  x86: no flush at all (Linux b13b1d2d8692 "x86/mm: In the PTE
	 *       swapout page reclaim case clear the accessed bit instead of
	 *       flushing the TLB", x86 ptep_clear_flush_young(): "it
	 *       will eventually be flushed by a context switch or a VM
	 *       operation anyway").
	 *  ARM64: Linux still issues a TLBI but without waiting for it
	 *       (arm64 ptep_clear_flush_young(): flush_tlb_page_nosync(),
	 *       completed by the DSB of the next context switch): a shootdown
	 *       due BY_LAZY.
	 *  GENERIC: assumes no hardware A bit handling, so it keeps a flush but
	 *       lets it wait, as ARM64.
	 * Rule off: ptep_clear_flush_young() as before b13b1d2d8692:
	 * flush_tlb_page().
	 */
	[CLS_AGING] = { TLBPOL_RULE_AGING_NOFLUSH,
			{ SHOOT_LAZY, NONE_NOW, SHOOT_LAZY, NONE_NOW },
			SHOOT_NOW,
			TLBPOL_WHY_AGING },

	/*
	 * A retried fault (FAULT_FLAG_TRIED) that finds its PTE already
	 * installed and allowing the access is not a second access: it needs
	 * no access-flag update and no flush, on any arch (Yang Shi's patch,
	 * the -mm version; mainline b7333b58f358 "mm/memory.c: skip spurious TLB flush
	 * for retried page fault" keeps the update and skips the flush).  Only
	 * accessed/dirty bits may differ here; a gained permission is the
	 * upgrade row.  Rule off: the fault is classified as if it were a first
	 * try (spurious or access-flag update, below).
	 */
	[CLS_RETRIED] = { TLBPOL_RULE_RETRY_NOFLUSH, ALL4(NONE_NOW), RECLASSIFY,
			  TLBPOL_WHY_RETRIED },

	/*
	 * A fault the PTE already allowed, with nothing to change: a stale,
	 * stricter entry in the faulting CPU's TLB caused it.
	 *  x86: the fault itself invalidated that entry (SDM 4.10.4.1: "if a
	 *       page fault occurs, the processor invalidates entries for the
	 *       faulting linear address"), so nothing is left to flush (Linux
	 *       61c77326d1df "x86, mm: Avoid unnecessary TLB flush"; x86
	 *       flush_tlb_fix_spurious_fault() is empty).
	 *  ARM64, GENERIC: a fault does not invalidate, so the faulting CPU
	 *       flushes its own entry; other CPUs' stricter entries are
	 *       harmless and fault the same way.  (Linux arm64 makes it a
	 *       no-op, counting on the broadcast TLBI of whoever upgraded the
	 *       PTE; this library's ARM64 upgrade is local, so the faulting CPU
	 *       flushes for itself.  The generic Linux default stays a remote
	 *       flush_tlb_page().)
	 * Rule off: flush_tlb_fix_spurious_fault() as asm-generic defines it,
	 * flush_tlb_page(): a shootdown (as before 61c77326d1df).
	 */
	[CLS_SPURIOUS] = { TLBPOL_RULE_SPURIOUS_NOFLUSH,
			   { LOCAL_NOW, NONE_NOW, LOCAL_NOW, LOCAL_NOW },
			   SHOOT_NOW,
			   TLBPOL_WHY_SPURIOUS },

	/*
	 * A fault the PTE allowed, resolved by setting the accessed bit.
	 *  x86: hardware sets A itself; software setting it changes no
	 *       permission (ptep_set_access_flags() on x86 never flushes).
	 *  ARM64: an entry with AF=0 is never cached (Arm ARM D8.5.1: an
	 *       access flag fault is taken instead), so nothing is stale
	 *       (arm64 __ptep_set_access_flags() flushes only when dirty).
	 *  GENERIC: asm-generic ptep_set_access_flags() calls
	 *       flush_tlb_fix_spurious_fault() (a remote flush_tlb_page() by
	 *       default); a stale entry without A is only stricter, so with the
	 *       rule the faulting CPU flushes locally (Rik van Riel, "mm,generic:
	 *       only flush the local TLB in ptep_set_access_flags").
	 * Rule off: the flush_tlb_page() of before 61c77326d1df.
	 */
	[CLS_SET_YOUNG] = { TLBPOL_RULE_SPURIOUS_NOFLUSH,
			    { LOCAL_NOW, NONE_NOW, NONE_NOW, LOCAL_NOW },
			    SHOOT_NOW,
			    TLBPOL_WHY_ACCESS_FLAGS },

	/*
	 * A write fault the PTE allowed, resolved by setting the dirty bit
	 * (the first writer of 61c77326d1df's shared page; the later ones are the
	 * spurious row).
	 *  x86: other CPUs' entries without D are harmless: before a write
	 *       through them the CPU sets D with a locked access to the PTE in
	 *       memory (SDM 4.8), so no software flush (Rik van Riel 2012,
	 *       "x86,mm: drop TLB flush from ptep_set_access_flags").
	 *  ARM64: Linux flushes every CPU: with hardware DBM a clean PTE is
	 *       cached read-only, and arm64 __ptep_set_access_flags()
	 *       "invalidate[s] a stale read-only entry" with flush_tlb_page()
	 *       when dirty.  That is the flush b7333b58f358 removes for retried
	 *       faults; the spurious rule does not cover it on ARM64.  (The
	 *       stale entry is only stricter, so the ARM64 upgrade row's local
	 *       flush would be safe too; this row keeps Linux's behaviour so
	 *       that b7333b58f358's "before" is what it measured.)
	 *  GENERIC: the local flush of a spurious fault.
	 */
	[CLS_SET_DIRTY] = { TLBPOL_RULE_SPURIOUS_NOFLUSH,
			    { LOCAL_NOW, NONE_NOW, SHOOT_NOW, LOCAL_NOW },
			    SHOOT_NOW,
			    TLBPOL_WHY_ACCESS_FLAGS },

	/*
	 * Permissions only grew (write or exec added; COW reuse, mprotect to
	 * more access).  A stale entry is stricter than the PTE: it can only
	 * cause a fault, never grant access.
	 *  x86: that fault invalidates it (SDM 4.10.4.3: R/W 0->1 and NX 1->0
	 *       need no invalidation, "no flush needed when going to more
	 *       permissive", hpa on 61c77326d1df).  No flush at all.
	 *       Linux applies this on the fault path (ptep_set_access_flags());
	 *       its mprotect still flushes (pte_flags_need_flush() puts _PAGE_RW
	 *       and _PAGE_NX in flush_on_change); this library applies the SDM
	 *       rule to both.
	 *  ARM64, GENERIC: no invalidation on a fault, so the initiating CPU
	 *       flushes its own entry; other CPUs fix theirs through the
	 *       spurious-fault path.  Linux flushes everywhere here
	 *       (asm-generic pte_needs_flush() is always true): rule off.
	 */
	[CLS_UPGRADE] = { TLBPOL_RULE_UPGRADE_NOFLUSH,
			  { LOCAL_NOW, NONE_NOW, LOCAL_NOW, LOCAL_NOW },
			  SHOOT_NOW,
			  TLBPOL_WHY_UPGRADE },
};

/* The cell of @row under @rules on @arch, packed. */
static uint32_t cell(uint32_t arch, uint64_t rules, const struct decision_row *row)
{
	struct verdict v = (row->rule && !(rules & row->rule)) ? row->without : row->with[arch];

	if (v.action == 0xff)
		return VERDICT_OUT_OF_LINE;
	return verdict_pack(v, row->reason);
}

void tlbpol__resolve_verdicts(uint32_t arch, struct tlbpol_params *p)
{
	for (uint32_t cls = 0; cls < CLS_MAX; cls++)
		p->verdict[cls] = cell(arch, p->rules, &tlbpol__decision_table[cls]);
	/* Under TLBPOL_RULES_NONE no event is CLS_SPURIOUS (classify()
	 * answers CLS_NAIVE): its cell is NAIVE's, which tlbpol_submit()'s
	 * fast path, testing the cell alone, then finds. */
	if (p->rules == TLBPOL_RULES_NONE)
		p->verdict[CLS_SPURIOUS] = p->verdict[CLS_NAIVE];
}

/*
 * The row's rule is off and its cell says RECLASSIFY: the event classified
 * again as if the row did not exist.  Out of line: with the default rules
 * no row takes it.
 */
uint32_t tlbpol__decide_without(const struct tlbpol_engine *eng, uint64_t rules,
				const struct tlbpol_event *ev)
{
	/* Only CLS_RETRIED's cell is RECLASSIFY, and a first try never gets
	 * that class: this cell is a plain one. */
	const struct decision_row *row = &tlbpol__decision_table[classify(eng, rules, ev, 1)];

	return lazy_deadline(eng, cell(eng->arch, rules, row), rules, ev);
}

int tlbpol_decide(const struct tlbpol_engine *eng, const struct tlbpol_as *as, uint32_t cpu,
		  const struct tlbpol_event *ev, struct tlbpol_decision *out)
{
	int err = out ? tlbpol__check_event_call(eng, as, cpu, ev) : -E_INVAL;

	if (err)
		return err;
	decision_unpack(out, tlbpol__decide(eng, params_of(eng), ev));
	return 0;
}

/*
 * Every fact of a reason, in its one row: the short name tlbpol_reason_str()
 * gives, and what the reason rests on per arch (GENERIC, X86_64, ARM64, RISCV64:
 * enum tlbpol_arch order), the hardware rule or kernel source that the rows
 * of tlbpol__decision_table[] giving that reason cite (their comments say
 * why in full).  tlbpol_reason_cite() serves the citations to `python3 -m
 * tlbpol explain`, `examples/decide --cite` and the table in docs/rules.md
 * (tests/check_docs.py compares the two).  A new reason is its enumerator
 * in the header, a row here and its decision rows above; tests/test_decide.c
 * fails for a reason without a row.
 */
struct reason_row {
	const char *name;
	const char *cite[TLBPOL_ARCH_MAX];
};

#define CITE4(s) { s, s, s, s }
static const struct reason_row reasons[TLBPOL_WHY_MAX] = {
	[TLBPOL_WHY_NOT_PRESENT] = { "not-present", {
		"a PTE that was not present left no valid translation to cache (GENERIC installs are the install row's)",
		"Intel SDM 4.10.2.3: only translations of present entries are cached",
		"Arm ARM D8.13: invalid descriptors are never cached in a TLB",
		"RISC-V priv. spec, SFENCE.VMA: PTEs whose V bit is clear may be cached, so installs are the install row's; with Svvptc a user install left no translation to flush" } },
	[TLBPOL_WHY_UNCHANGED] = { "unchanged", CITE4(
		"Linux mm/mprotect.c change_pte_range(): pte_needs_flush() is false for an unchanged PTE") },
	[TLBPOL_WHY_NAIVE] = { "naive", CITE4(
		"TLBPOL_RULES_NONE: every change to a present PTE flushed on every CPU before the call returns, the policy every rule improves on") },
	[TLBPOL_WHY_SPURIOUS] = { "spurious-fault", {
		"asm-generic flush_tlb_fix_spurious_fault() flushes; a fault does not invalidate, so the faulting CPU flushes locally",
		"Intel SDM 4.10.4.1: a page fault invalidates the faulting address's entries; Linux 61c77326d1df \"x86, mm: Avoid unnecessary TLB flush\": x86 flush_tlb_fix_spurious_fault() is empty",
		"Arm ARM: a fault does not invalidate the TLB, so the faulting CPU flushes its own entry (arm64 relies on the upgrader's broadcast TLBI)",
		"RISC-V priv. spec: a page fault does not invalidate (only SFENCE.VMA does), so the faulting hart fences its own entry" } },
	[TLBPOL_WHY_RETRIED] = { "retried-fault", CITE4(
		"Linux b7333b58f358 \"mm/memory.c: skip spurious TLB flush for retried page fault\"") },
	[TLBPOL_WHY_ACCESS_FLAGS] = { "access-flags", {
		"Rik van Riel, \"mm,generic: only flush the local TLB in ptep_set_access_flags\": a stale entry without A/D is only stricter",
		"Intel SDM 4.8: the CPU sets A and D with a locked access to the PTE in memory; x86 ptep_set_access_flags() never flushes",
		"Arm ARM D8.5.1: an entry with AF=0 is never cached; arm64 __ptep_set_access_flags() flushes every CPU when it sets dirty (DBM)",
		"RISC-V priv. spec, Virtual Address Translation Process: under Svade a missing A or D faults; the faulting hart fences its entry, other harts' entries are only stricter" } },
	[TLBPOL_WHY_UPGRADE] = { "upgrade", {
		"asm-generic pte_needs_flush() is always true; a stale entry is stricter and fixed by the spurious-fault path, so a local flush",
		"Intel SDM 4.10.4.3: R/W 0->1 and NX 1->0 need no invalidation (the fault invalidates); hpa on Linux 61c77326d1df \"x86, mm: Avoid unnecessary TLB flush\"",
		"Arm ARM: no invalidation on a fault, so the initiator flushes locally; other CPUs' stricter entries fault and flush themselves",
		"RISC-V priv. spec: no invalidation on a fault, so the initiating hart fences locally; other harts' stricter entries fault and fence themselves" } },
	[TLBPOL_WHY_AGING] = { "aging", {
		"no hardware A-bit handling assumed: the flush kept but let wait, as arm64 ptep_clear_flush_young()",
		"Linux b13b1d2d8692 \"x86/mm: In the PTE swapout page reclaim case clear the accessed bit instead of flushing the TLB\": x86 ptep_clear_flush_young() does not flush",
		"arm64 ptep_clear_flush_young(): flush_tlb_page_nosync(), completed by the next context switch's DSB",
		"Linux arch/riscv/include/asm/pgtable.h ptep_clear_flush_young(): no flush, the x86 reasoning \"applies equally to RISC-V\"" } },
	[TLBPOL_WHY_UNMAP] = { "unmap", CITE4(
		"include/asm-generic/tlb.h: mmu_gather flushes once, tlb_flush_mmu() before the pages are freed; Linux 611ae8e3f520 \"x86/tlb: enable tlb flush range support for x86\"") },
	[TLBPOL_WHY_RECLAIM_CLEAN] = { "reclaim-clean", CITE4(
		"Linux 72b252aed506 \"mm: send one IPI per CPU to TLB flush all entries after unmapping pages\": try_to_unmap_flush() before shrink_folio_list() frees") },
	[TLBPOL_WHY_RECLAIM_DIRTY] = { "reclaim-dirty", CITE4(
		"Linux d950c9477d51 \"mm: defer flush of writable TLB entries\": mm/vmscan.c try_to_unmap_flush_dirty() before pageout()") },
	[TLBPOL_WHY_MIGRATE_CLEAN] = { "migrate-clean", {
		"Linux mm/migrate.c migrate_pages_batch(): try_to_unmap_flush() before any copy",
		"Linux mm/migrate.c migrate_pages_batch(): try_to_unmap_flush() before any copy",
		"Linux mm/migrate.c migrate_pages_batch(); Arm ARM D8.16.1 break-before-make",
		"Linux mm/migrate.c migrate_pages_batch(): try_to_unmap_flush() before any copy" } },
	[TLBPOL_WHY_MIGRATE_DIRTY] = { "migrate-dirty", CITE4(
		"Linux mm/migrate.c migrate_pages_batch(): flushed before the copy, which would miss a write") },
	[TLBPOL_WHY_PFN_CHANGE] = { "pfn-change", {
		"Linux wp_page_copy(): ptep_clear_flush() before the new frame is relied on",
		"Linux wp_page_copy(): ptep_clear_flush() before the new frame is relied on",
		"Linux wp_page_copy(): ptep_clear_flush(); Arm ARM D8.14.1 break-before-make for an output-address change",
		"Linux wp_page_copy(): ptep_clear_flush() before the new frame is relied on; RISC-V priv. spec, SFENCE.VMA orders the PTE store before later walks" } },
	[TLBPOL_WHY_DOWNGRADE] = { "downgrade", {
		"Linux change_protection() flushes before mprotect returns: a stale entry grants what the PTE no longer does",
		"x86 pte_flags_need_flush(): _PAGE_RW, _PAGE_USER, _PAGE_NX, _PAGE_GLOBAL in flush_on_change; Intel SDM 4.10.4.3",
		"Linux change_protection() flushes before mprotect returns; Arm ARM: EL0 access implies PXN, PAN",
		"Linux change_protection() flushes before mprotect returns; RISC-V priv. spec, SFENCE.VMA: a hart may use a cached PTE until it fences" } },
	[TLBPOL_WHY_CLEAR_DIRTY] = { "clear-dirty", {
		"Linux page_mkclean_one(): ptep_clear_flush()",
		"Intel SDM 4.8: D is set only when the cached entry lacks it; Linux page_mkclean_one(): ptep_clear_flush()",
		"Linux page_mkclean_one(): ptep_clear_flush(); with DBM a cached writable entry writes without a fault",
		"Linux page_mkclean_one(): ptep_clear_flush(); a hart caching D=1 stores without faulting or writing the PTE (priv. spec, Virtual Address Translation Process)" } },
	[TLBPOL_WHY_REMAP] = { "remap", CITE4(
		"Linux mm/mremap.c move_ptes(): the old range is flushed before the PTE lock is dropped") },
	[TLBPOL_WHY_UNMAP_DIRTY] = { "unmap-dirty", CITE4(
		"Linux zap_present_ptes(): force_flush for a dirty shared PTE, zap_pte_range() flushes before dropping the PTE lock") },
	[TLBPOL_WHY_TABLES_FREED] = { "tables-freed", {
		"Linux tlb_remove_table(): freed_tables flush before a page-table page is freed",
		"Intel SDM 4.10.3: paging-structure caches; Linux tlb_remove_table() flushes with freed_tables first",
		"Arm ARM: walk caches hold table entries; Linux tlb_remove_table() flushes with freed_tables first",
		"RISC-V priv. spec, SFENCE.VMA: after a non-leaf PTE changes, fence with rs1=x0; Linux 97cf301fa42e \"riscv: Flush the tlb when a page directory is freed\"" } },
	[TLBPOL_WHY_DISCARD] = { "discard", CITE4(
		"Linux tlb_finish_mmu() before madvise() returns; 99baac21e458 \"mm: fix MADV_[FREE|DONTNEED] TLB flush miss problem\"") },
	[TLBPOL_WHY_ATTRS] = { "attributes", {
		"a size, type or key change: x86 pte_flags_need_flush() and Arm ARM D8.16.1 both demand the flush",
		"Intel SDM 4.10.2.3: either page size may be used after a size change; x86 pte_flags_need_flush(): _PAGE_PSE, _PAGE_PAT, pkeys",
		"Arm ARM D8.16.1: break-before-make for a change of block size, memory type or contiguous bit",
		"a size, NAPOT-run or memory-type (Svpbmt) change: the old translation must go everywhere before the new one is used (priv. spec, SFENCE.VMA)" } },
	[TLBPOL_WHY_INSTALL] = { "install", {
		"RISC-V priv. spec (Svvptc): an invalid PTE may stay cached; Linux riscv update_mmu_cache() -> local_flush_tlb_page()",
		"Intel SDM 4.10.2.3: only translations of present entries are cached",
		"Arm ARM D8.13: invalid descriptors are never cached in a TLB",
		"RISC-V priv. spec, SFENCE.VMA: PTEs whose V bit is clear may be cached; Linux riscv update_mmu_cache() -> local_flush_tlb_page(); with Svvptc a kernel install only" } },
};

const char *tlbpol_reason_str(uint32_t reason)
{
	return reason < TLBPOL_WHY_MAX ? reasons[reason].name : "unknown";
}

const char *tlbpol_reason_cite(uint32_t reason, uint32_t arch)
{
	return reason < TLBPOL_WHY_MAX && arch < TLBPOL_ARCH_MAX ? reasons[reason].cite[arch]
								 : "unknown";
}

const char *tlbpol_action_str(uint32_t action)
{
	static const char *const names[] = { "none", "local", "shootdown" };
	return action < 3 ? names[action] : "unknown";
}

const char *tlbpol_deadline_str(uint32_t deadline)
{
	static const char *const names[] = { "now", "writeback", "free", "lazy" };
	return deadline < 4 ? names[deadline] : "unknown";
}
