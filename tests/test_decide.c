/* SPDX-License-Identifier: MIT */
/*
 * test_decide: the decision table, every event kind under every arch
 * profile, with the action, deadline and reason each must get and the source
 * that says so.  Expectations are written here independently of
 * lib/core/decide.c: a change to a cell of the table fails a row.
 */
#include <errno.h>

#include "support/rng.h"
#include "support/harness.h"

#define GEN TLBPOL_ARCH_GENERIC
#define X86 TLBPOL_ARCH_X86_64
#define ARM TLBPOL_ARCH_ARM64
#define RV TLBPOL_ARCH_RISCV64
#define NONE TLBPOL_ACT_NONE
#define LOCAL TLBPOL_ACT_LOCAL
#define SHOOT TLBPOL_ACT_SHOOTDOWN
#define NOW TLBPOL_BY_NOW
#define WB TLBPOL_BY_WRITEBACK
#define FREE TLBPOL_BY_FREE
#define LAZY TLBPOL_BY_LAZY
#define DEF TLBPOL_RULES_DEFAULT
#define LNX TLBPOL_RULES_LINUX
#define RNONE TLBPOL_RULES_NONE

#define EWR TLBPOL_EVF_WRITE
#define ETRY TLBPOL_EVF_TRIED
#define EPFN TLBPOL_EVF_PFN_CHANGED
#define ELAZY TLBPOL_EVF_LAZY_OK
#define ETAB TLBPOL_EVF_TABLES_FREED
#define EPRIV TLBPOL_EVF_PRIVATE
#define ESTAY TLBPOL_EVF_STAYS_MAPPED
#define EATTR TLBPOL_EVF_ATTRS

#define RW (P | W | U | A)
#define RWD (RW | D)
#define RO (P | U | A)

struct row {
	const char *what;
	uint32_t arch, kind, flags, old_pte, new_pte;
	uint64_t rules;
	uint32_t action, deadline, reason;
	const char *source;
};

#define R(what, arch, kind, fl, o, n, rules, act, dl, why, src)                 \
	{ what, arch, TLBPOL_EV_##kind, fl, o, n, rules, act, dl, TLBPOL_WHY_##why, src }
/* The same expectation on x86 and ARM64. */
#define R2(what, kind, fl, o, n, rules, act, dl, why, src)                      \
	R(what, X86, kind, fl, o, n, rules, act, dl, why, src),                 \
	R(what, ARM, kind, fl, o, n, rules, act, dl, why, src)
/* The same expectation on all three arches. */
#define R3(what, kind, fl, o, n, rules, act, dl, why, src)                      \
	R(what, GEN, kind, fl, o, n, rules, act, dl, why, src),                 \
	R(what, X86, kind, fl, o, n, rules, act, dl, why, src),                 \
	R(what, ARM, kind, fl, o, n, rules, act, dl, why, src)

static const struct row rows[] = {
	/* --- FAULT --- */
	R2("fault on not-present PTE", FAULT, 0, 0, RO, DEF, NONE, NOW, NOT_PRESENT,
	   "SDM 4.10.2.3 / Arm ARM: invalid entries are never cached"),
	R2("fault on not-present PTE, naive", FAULT, 0, 0, RO, RNONE, NONE, NOW, NOT_PRESENT,
	   "a not-present old PTE never needs a flush"),
	R("install of a user page", GEN, FAULT, 0, 0, RO, DEF, LOCAL, NOW, INSTALL,
	  "RISC-V without Svvptc caches invalid PTEs: Linux riscv update_mmu_cache flushes locally"),
	R("install of a user page, naive", GEN, FAULT, 0, 0, RO, RNONE, LOCAL, NOW, INSTALL,
	  "no rule makes a cached invalid entry go away"),
	R("install of a kernel page", GEN, PROTECT, 0, 0, P | W | A, DEF, SHOOT, NOW, INSTALL,
	  "no spurious-fault path for kernel mappings: flush every CPU"),
	R("install of a global page", GEN, FAULT, 0, 0, RO | G, DEF, SHOOT, NOW, INSTALL,
	  "kernel (global) mapping"),
	R2("install of a kernel page", PROTECT, 0, 0, P | W | A, DEF, NONE, NOW, NOT_PRESENT,
	   "x86 and Arm never cache invalid entries"),
	R("spurious write fault", X86, FAULT, EWR, RWD, RWD, DEF, NONE, NOW, SPURIOUS,
	  "61c77326d1df; SDM 4.10.4.1 a #PF invalidates the faulting address"),
	R("spurious write fault", ARM, FAULT, EWR, RWD, RWD, DEF, LOCAL, NOW, SPURIOUS,
	  "Arm: no invalidation on fault; spec: others local only"),
	R("spurious write fault", GEN, FAULT, EWR, RWD, RWD, DEF, LOCAL, NOW, SPURIOUS,
	  "GENERIC: as Arm"),
	R("write fault sets D (61c77326d1df)", X86, FAULT, EWR, RW, RWD, DEF, NONE, NOW, ACCESS_FLAGS,
	  "61c77326d1df: x86 sets D itself with a locked PTE access (SDM 4.8)"),
	R("write fault sets D", ARM, FAULT, EWR, RW, RWD, DEF, SHOOT, NOW, ACCESS_FLAGS,
	  "arm64 __ptep_set_access_flags: flush_tlb_page when dirty (DBM read-only entry)"),
	R("write fault sets D", GEN, FAULT, EWR, RW, RWD, DEF, LOCAL, NOW, ACCESS_FLAGS,
	  "asm-generic ptep_set_access_flags -> flush_tlb_fix_spurious_fault, local by rule"),
	R("read fault sets A", X86, FAULT, 0, P | U, RO, DEF, NONE, NOW, ACCESS_FLAGS,
	  "x86 ptep_set_access_flags never flushes"),
	R("read fault sets A", ARM, FAULT, 0, P | U, RO, DEF, NONE, NOW, ACCESS_FLAGS,
	  "Arm: AF=0 entries are not cached"),
	R("read fault sets A", GEN, FAULT, 0, P | U, RO, DEF, LOCAL, NOW, ACCESS_FLAGS,
	  "asm-generic: spurious-fault fix, local by rule"),
	R3("retried write fault, PTE installed", FAULT, EWR | ETRY, RW, RWD, DEF, NONE, NOW, RETRIED,
	   "b7333b58f358: mm/memory.c handle_pte_fault FAULT_FLAG_TRIED"),
	R("retried fault that must still COW", X86, FAULT, EWR | ETRY, RO, RWD, DEF, NONE, NOW,
	  UPGRADE, "b7333b58f358 keeps do_wp_page for !pte_write: the upgrade row"),
	R("retried fault that must still COW", ARM, FAULT, EWR | ETRY, RO, RWD, DEF, LOCAL, NOW,
	  UPGRADE, "b7333b58f358 keeps do_wp_page for !pte_write: the upgrade row"),
	R("retried fault that must still COW", GEN, FAULT, EWR | ETRY, RO, RWD, DEF, LOCAL, NOW,
	  UPGRADE, "b7333b58f358 keeps do_wp_page for !pte_write: the upgrade row"),
	R("upgrade RO->RW by fault (COW reuse)", X86, FAULT, EWR, RO, RWD, DEF, NONE, NOW, UPGRADE,
	  "SDM 4.10.4.3; 61c77326d1df thread (hpa); x86 pte_needs_flush"),
	R("upgrade RO->RW by fault", ARM, FAULT, EWR, RO, RWD, DEF, LOCAL, NOW, UPGRADE,
	  "stricter stale entry harmless; no invalidation on fault: local"),
	R("upgrade RO->RW by fault", GEN, FAULT, EWR, RO, RWD, DEF, LOCAL, NOW, UPGRADE,
	  "as Arm"),
	R("retried read fault that gains write", X86, FAULT, ETRY, RO, RW, DEF, NONE, NOW, UPGRADE,
	  "a gained permission is the upgrade row, TRIED or not"),
	R("retried read fault that gains write", ARM, FAULT, ETRY, RO, RW, DEF, LOCAL, NOW, UPGRADE,
	  "a gained permission is the upgrade row, TRIED or not"),
	R3("unresolved write fault (SIGSEGV)", FAULT, EWR, RO, RO, DEF, NONE, NOW, UNCHANGED,
	   "nothing changed: not an upgrade"),
	R3("COW break: new frame", FAULT, EWR | EPFN, RO, RWD, DEF, SHOOT, NOW, PFN_CHANGE,
	   "wp_page_copy: ptep_clear_flush"),
	R3("fault that removes write", FAULT, 0, RW, RO, DEF, SHOOT, NOW, DOWNGRADE,
	   "permission lost: pte_needs_flush"),
	/* A fault that looks spurious (the PTE allowed the access and did not
	 * change) but carries a flag that makes it something else: submit's
	 * fast path must not take it for 61c77326d1df's. */
	R3("spurious-looking fault, tables freed", FAULT, EWR | ETAB, RWD, RWD, DEF, SHOOT, FREE,
	   TABLES_FREED, "the tables, not the PTE, need the flush"),
	R3("spurious-looking fault, new frame", FAULT, EWR | EPFN, RWD, RWD, DEF, SHOOT, NOW,
	   PFN_CHANGE, "a frame change is flushed before the new PTE is stored"),
	R3("spurious-looking fault, attributes", FAULT, EATTR, RO, RO, DEF, SHOOT, NOW, ATTRS,
	   "a change the bits cannot express"),
	R2("spurious-looking fault, tables freed, naive", FAULT, EWR | ETAB, RWD, RWD, RNONE,
	   SHOOT, NOW, NAIVE, "RULES_NONE"),

	/* --- PROTECT --- */
	R3("mprotect read-only", PROTECT, 0, RWD, RO | D, DEF, SHOOT, NOW, DOWNGRADE,
	   "change_protection / x86 pte_needs_flush on _PAGE_RW clear"),
	R3("mprotect no-exec", PROTECT, 0, RO | X, RO, DEF, SHOOT, NOW, DOWNGRADE,
	   "NX added: pte_needs_flush"),
	R3("kernel mapping made non-global", PROTECT, 0, RO | G, RO, DEF, SHOOT, NOW, DOWNGRADE,
	   "global bit change: x86 pte_needs_flush flushes on _PAGE_GLOBAL change"),
	R3("user bit added", PROTECT, 0, P | X | A, P | X | A | U, DEF, SHOOT, NOW, DOWNGRADE,
	   "SDM 4.10.4.3 exempts U/S 0->1 only without SMEP; x86 flush_on_change has _PAGE_USER"),
	R3("user bit removed", PROTECT, 0, RO, P | A, DEF, SHOOT, NOW, DOWNGRADE,
	   "user access lost"),
	R3("mprotect to the same protection", PROTECT, 0, RW, RW, DEF, NONE, NOW, UNCHANGED,
	   "pte_needs_flush false for an unchanged PTE"),
	R("mprotect RO->RW", X86, PROTECT, 0, RO, RW, DEF, NONE, NOW, UPGRADE,
	  "x86 pte_needs_flush: permission added"),
	R("mprotect RO->RW", ARM, PROTECT, 0, RO, RW, DEF, LOCAL, NOW, UPGRADE, "Arm: local"),
	R("mprotect RO->RW", GEN, PROTECT, 0, RO, RW, DEF, LOCAL, NOW, UPGRADE, "GENERIC: local"),
	R3("protect on a not-present PTE", PROTECT, 0, 0, 0, DEF, NONE, NOW, NOT_PRESENT,
	   "nothing cached"),
	R3("huge page split (same bits)", PROTECT, EATTR, RWD, RWD, DEF, SHOOT, NOW, ATTRS,
	   "SDM 4.10.2.3; __split_huge_pmd_locked (AMD erratum 383); Arm break-before-make"),
	R3("memory type or pkey change", PROTECT, EATTR, RO, RO, LNX, SHOOT, NOW, ATTRS,
	   "x86 pte_flags_need_flush: _PAGE_PAT/PCD/PWT and pkey bits in flush_on_change"),
	R("shadow-stack PTE made writable", X86, PROTECT, EATTR, RO | D, RWD, DEF, SHOOT, NOW, ATTRS,
	  "CET: W=0,D=1 is a shadow-stack PTE; W 0->1 removes shadow-stack access"),
	R3("attribute change by a fault", FAULT, EATTR | EWR, RWD, RWD, DEF, SHOOT, NOW, ATTRS,
	   "not the spurious-fault fast path"),
	R3("attribute change with a new frame", PROTECT, EATTR | EPFN, RO, RO, DEF, SHOOT, NOW,
	   PFN_CHANGE, "the frame change names it"),

	/* --- UNMAP --- */
	R3("munmap of a read-only page", UNMAP, 0, RO, 0, DEF, SHOOT, FREE, UNMAP,
	   "mmu_gather: include/asm-generic/tlb.h tlb_flush_mmu before free"),
	R("munmap of a clean writable page", X86, UNMAP, 0, RW, 0, DEF, SHOOT, FREE, UNMAP,
	  "x86: no D without a present PTE (pmdp_invalidate_ad)"),
	R("munmap of a clean writable page", ARM, UNMAP, 0, RW, 0, DEF, SHOOT, FREE, UNMAP,
	  "Arm DBM: hardware dirty update fails on an invalid descriptor"),
	R("munmap of a clean writable page", GEN, UNMAP, 0, RW, 0, DEF, SHOOT, NOW, UNMAP_DIRTY,
	  "GENERIC: writable may be written without D: treated dirty"),
	R3("munmap of a dirty page", UNMAP, 0, RWD, 0, DEF, SHOOT, NOW, UNMAP_DIRTY,
	   "zap_present_ptes: force_flush for a dirty file PTE, flushed before the PTL is dropped"),
	R3("munmap of a dirty page, LAZY_OK", UNMAP, ELAZY, RWD, 0, DEF, SHOOT, NOW, UNMAP_DIRTY,
	   "data, not frames: LAZY_OK does not relax writeback"),
	R3("munmap of a dirty page, no batching", UNMAP, 0, RWD, 0, DEF & ~TLBPOL_RULE_BATCH, SHOOT,
	   NOW, UNMAP_DIRTY, "the same with BATCH off"),
	R3("MADV_DONTNEED of a dirty private page", UNMAP, ESTAY | EPRIV | ELAZY, RWD, 0, DEF,
	   SHOOT, NOW, DISCARD, "tlb_finish_mmu before madvise returns; commit 99baac21e458"),
	R3("MADV_DONTNEED of a clean page", UNMAP, ESTAY, RO, 0, DEF, SHOOT, NOW, DISCARD,
	   "a stale entry would read old data instead of zeros"),
	R3("MADV_DONTNEED under linux", UNMAP, ESTAY | EPRIV, RWD, 0, LNX, SHOOT, NOW, DISCARD,
	   "no rule defers it"),
	R3("MADV_DONTNEED, naive", UNMAP, ESTAY, RWD, 0, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("MADV_DONTNEED, not present", UNMAP, ESTAY, 0, 0, DEF, NONE, NOW, NOT_PRESENT,
	   "nothing cached"),
	R3("STAYS_MAPPED is ignored for reclaim", RECLAIM, ESTAY, RO, 0, DEF, SHOOT, FREE,
	   RECLAIM_CLEAN, "reclaim keeps the contents"),
	R3("munmap of a dirty private anonymous page", UNMAP, EPRIV, RWD, 0, DEF, SHOOT, FREE, UNMAP,
	   "contents die with the unmap: no writeback to race"),
	R3("munmap of a dirty private page, LAZY_OK", UNMAP, EPRIV | ELAZY, RWD, 0, DEF, SHOOT, LAZY,
	   UNMAP, "LATR: anonymous buffers of a server"),
	R3("reclaim of a dirty page flagged private", RECLAIM, EPRIV, RWD, 0, DEF, SHOOT, WB,
	   RECLAIM_DIRTY, "reclaim writes the contents back: the flag does not apply"),
	R3("munmap, tables freed", UNMAP, ETAB, RO, 0, DEF, SHOOT, FREE, UNMAP,
	   "tlb_remove_table: tables freed after the same flush"),
	R3("tables freed over not-present PTEs", UNMAP, ETAB, 0, 0, DEF, SHOOT, FREE, TABLES_FREED,
	   "paging-structure caches point at the table page: freed_tables flush"),
	R3("tables freed over not-present PTEs, no batching", UNMAP, ETAB, 0, 0,
	   DEF & ~TLBPOL_RULE_BATCH, SHOOT, NOW, TABLES_FREED, "BATCH off: now"),
	R3("tables freed over not-present PTEs, naive", UNMAP, ETAB, 0, 0, RNONE, SHOOT, NOW, NAIVE,
	   "RULES_NONE"),
	R3("tables freed under an unchanged PTE", PROTECT, ETAB, RO, RO, DEF, SHOOT, FREE,
	   TABLES_FREED, "the tables, not the PTE, need the flush"),
	R3("munmap, LAZY_OK", UNMAP, ELAZY, RO, 0, DEF, SHOOT, LAZY, UNMAP, "LATR"),
	R3("munmap, LAZY_OK under linux", UNMAP, ELAZY, RO, 0, LNX, SHOOT, FREE, UNMAP,
	   "RULE_LAZY_UNMAP is not in RULES_LINUX"),
	R3("unmap that leaves PTE present RO", UNMAP, 0, RW, RO, DEF, SHOOT, NOW, DOWNGRADE,
	   "classified by the PTE change, not by the label"),

	/* --- RECLAIM --- */
	R3("reclaim dirty page", RECLAIM, 0, RWD, 0, DEF, SHOOT, WB, RECLAIM_DIRTY,
	   "d950c9477d51; mm/rmap.c tlb_ubc->writable, try_to_unmap_flush_dirty"),
	R("reclaim clean writable page", X86, RECLAIM, 0, RW, 0, DEF, SHOOT, FREE, RECLAIM_CLEAN,
	  "72b252aed506; x86 re-checks the PTE to set D (SDM 4.8)"),
	R("reclaim clean writable page", ARM, RECLAIM, 0, RW, 0, DEF, SHOOT, FREE, RECLAIM_CLEAN,
	  "Arm DBM: hardware dirty update fails on an invalid descriptor"),
	R("reclaim clean writable page", GEN, RECLAIM, 0, RW, 0, DEF, SHOOT, WB, RECLAIM_DIRTY,
	  "GENERIC: writable may be written without D: treated dirty"),
	R3("reclaim clean read-only page", RECLAIM, 0, RO, 0, DEF, SHOOT, FREE, RECLAIM_CLEAN,
	   "72b252aed506: try_to_unmap_flush before free"),
	R3("reclaim, LAZY_OK clean", RECLAIM, ELAZY, RO, 0, DEF, SHOOT, LAZY, RECLAIM_CLEAN,
	   "LATR: BY_FREE becomes the deferred free"),
	R3("reclaim, LAZY_OK dirty", RECLAIM, ELAZY, RWD, 0, DEF, SHOOT, WB, RECLAIM_DIRTY,
	   "data, not frames: writeback deadline stays"),

	/* --- MIGRATE --- */
	R3("migrate dirty page", MIGRATE, 0, RWD, 0, DEF, SHOOT, WB, MIGRATE_DIRTY,
	   "migrate_pages_batch: try_to_unmap_flush before copy"),
	R3("migrate read-only page", MIGRATE, 0, RO, 0, DEF, SHOOT, WB, MIGRATE_CLEAN,
	   "migrate_pages_batch: try_to_unmap_flush before any copy (the restore stores first)"),
	R("migrate clean writable page", GEN, MIGRATE, 0, RW, 0, DEF, SHOOT, WB, MIGRATE_DIRTY,
	  "GENERIC: writable treated dirty"),
	R("migrate clean writable page", X86, MIGRATE, 0, RW, 0, DEF, SHOOT, WB, MIGRATE_CLEAN,
	  "x86: D re-check; still due before the copy"),
	R3("migrate read-only page, LAZY_OK", MIGRATE, ELAZY, RO, 0, DEF, SHOOT, WB, MIGRATE_CLEAN,
	   "LAZY_OK moves only BY_FREE"),

	/* --- CLEAR_YOUNG --- */
	R("clear accessed bit", X86, CLEAR_YOUNG, 0, RW, P | W | U, DEF, NONE, NOW, AGING,
	  "b13b1d2d8692: x86 ptep_clear_flush_young"),
	R("clear accessed bit", ARM, CLEAR_YOUNG, 0, RW, P | W | U, DEF, SHOOT, LAZY, AGING,
	  "arm64 ptep_clear_flush_young: flush_tlb_page_nosync"),
	R("clear accessed bit", GEN, CLEAR_YOUNG, 0, RW, P | W | U, DEF, SHOOT, LAZY, AGING,
	  "GENERIC: keeps a flush, lazily"),
	R3("clear accessed bit, A already clear", CLEAR_YOUNG, 0, P | U, P | U, DEF, NONE, NOW,
	   UNCHANGED, "ptep_clear_flush_young flushes only if young"),
	R3("clear accessed bit that also drops W", CLEAR_YOUNG, 0, RW, P | U, DEF, SHOOT, NOW,
	   DOWNGRADE, "classified by the PTE change"),

	/* --- CLEAR_DIRTY --- */
	R3("clear dirty bit", CLEAR_DIRTY, 0, RWD, RW, DEF, SHOOT, NOW, CLEAR_DIRTY,
	   "page_mkclean_one: ptep_clear_flush; x86 pte_needs_flush on _PAGE_DIRTY"),
	R3("clean + write-protect", CLEAR_DIRTY, 0, RWD, RO, DEF, SHOOT, NOW, DOWNGRADE,
	   "page_mkclean: wrprotect is a downgrade"),
	R3("clear dirty bit, not dirty", CLEAR_DIRTY, 0, RW, RW, DEF, NONE, NOW, UNCHANGED,
	   "nothing changed"),

	/* --- REMAP --- */
	R3("mremap away", REMAP, 0, RW, 0, DEF, SHOOT, NOW, REMAP,
	   "mm/mremap.c move_ptes flushes the old range"),
	R3("mremap away, not present", REMAP, 0, 0, 0, DEF, NONE, NOW, NOT_PRESENT,
	   "nothing cached"),

	/* --- RISCV64: each kind, each row citing the privileged spec ("priv.":
	 * The RISC-V Instruction Set Manual, Volume II, by section name) --- */
	R("rv: install of a user page", RV, FAULT, 0, 0, RO, DEF, LOCAL, NOW, INSTALL,
	  "priv. SFENCE.VMA: PTEs whose V bit is clear may be cached; Linux riscv update_mmu_cache()"),
	R("rv: install of a kernel page", RV, PROTECT, 0, 0, P | W | A, DEF, SHOOT, NOW, INSTALL,
	  "priv. SFENCE.VMA: another hart may cache the invalid PTE; no spurious-fault path in the kernel"),
	R("rv: install of a global page", RV, FAULT, 0, 0, RO | G, DEF, SHOOT, NOW, INSTALL,
	  "priv. SFENCE.VMA: global mappings are cached for every ASID"),
	R("rv: spurious write fault", RV, FAULT, EWR, RWD, RWD, DEF, LOCAL, NOW, SPURIOUS,
	  "priv. SFENCE.VMA: only a fence invalidates; a page fault does not"),
	R("rv: write fault sets D", RV, FAULT, EWR, RW, RWD, DEF, LOCAL, NOW, ACCESS_FLAGS,
	  "priv. Virtual Address Translation Process: Svade faults on D=0; other harts' entries only stricter"),
	R("rv: read fault sets A", RV, FAULT, 0, P | U, RO, DEF, LOCAL, NOW, ACCESS_FLAGS,
	  "priv. Virtual Address Translation Process: Svade faults on A=0; the stale entry is fenced locally"),
	R("rv: retried write fault, PTE installed", RV, FAULT, EWR | ETRY, RW, RWD, DEF, NONE, NOW,
	  RETRIED, "b7333b58f358; priv.: nothing the fault needs is left to fence"),
	R("rv: upgrade RO->RW by fault", RV, FAULT, EWR, RO, RWD, DEF, LOCAL, NOW, UPGRADE,
	  "priv. SFENCE.VMA: no invalidation on a fault, so the upgrading hart fences locally"),
	R("rv: COW break", RV, FAULT, EWR | EPFN, RO, RWD, DEF, SHOOT, NOW, PFN_CHANGE,
	  "priv. SFENCE.VMA: a hart may use its cached PTE until it fences"),
	R("rv: mprotect read-only", RV, PROTECT, 0, RWD, RO | D, DEF, SHOOT, NOW, DOWNGRADE,
	  "priv. SFENCE.VMA: a cached writable PTE keeps granting write until fenced"),
	R("rv: mprotect RO->RW", RV, PROTECT, 0, RO, RW, DEF, LOCAL, NOW, UPGRADE,
	  "priv. SFENCE.VMA: stricter stale entries fault and are fenced where they are"),
	R("rv: NAPOT or PBMT change", RV, PROTECT, EATTR, RWD, RWD, DEF, SHOOT, NOW, ATTRS,
	  "priv. Svnapot, Svpbmt: the old size or memory type must be fenced away everywhere"),
	R("rv: munmap of a clean writable page", RV, UNMAP, 0, RW, 0, DEF, SHOOT, FREE, UNMAP,
	  "priv. Virtual Address Translation Process: D=0 means no store went through (Svade faults, Svadu compares the PTE)"),
	R("rv: munmap of a dirty page", RV, UNMAP, 0, RWD, 0, DEF, SHOOT, NOW, UNMAP_DIRTY,
	  "priv.: a hart caching D=1 stores without touching the PTE; zap_pte_range flushes first"),
	R("rv: munmap, tables freed", RV, UNMAP, ETAB, 0, 0, DEF, SHOOT, FREE, TABLES_FREED,
	  "priv. SFENCE.VMA: after a non-leaf PTE changes, fence with rs1=x0; Linux 97cf301fa42e"),
	R("rv: reclaim clean writable page", RV, RECLAIM, 0, RW, 0, DEF, SHOOT, FREE, RECLAIM_CLEAN,
	  "priv. Virtual Address Translation Process: the A/D update compares the PTE, so no D after the clear"),
	R("rv: reclaim dirty page", RV, RECLAIM, 0, RWD, 0, DEF, SHOOT, WB, RECLAIM_DIRTY,
	  "priv.: stores through a cached D=1 entry; d950c9477d51"),
	R("rv: migrate clean writable page", RV, MIGRATE, 0, RW, 0, DEF, SHOOT, WB, MIGRATE_CLEAN,
	  "priv.: D=0 not written; migrate_pages_batch still flushes before the copy"),
	R("rv: clear accessed bit", RV, CLEAR_YOUNG, 0, RW, P | W | U, DEF, NONE, NOW, AGING,
	  "Linux riscv ptep_clear_flush_young(): no flush (the x86 reasoning applies equally)"),
	R("rv: clear dirty bit", RV, CLEAR_DIRTY, 0, RWD, RW, DEF, SHOOT, NOW, CLEAR_DIRTY,
	  "priv. Virtual Address Translation Process: a cached D=1 entry stores without setting D again"),
	R("rv: mremap away", RV, REMAP, 0, RW, 0, DEF, SHOOT, NOW, REMAP,
	  "priv. SFENCE.VMA: the old translation lives until fenced; move_ptes flushes"),
	R("rv: naive munmap", RV, UNMAP, 0, RW, 0, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),

	/* --- naive: every change to a present PTE, everywhere, now --- */
	R3("naive spurious fault", FAULT, EWR, RWD, RWD, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("naive munmap", UNMAP, 0, RW, 0, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("naive reclaim", RECLAIM, 0, RO, 0, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("naive aging", CLEAR_YOUNG, 0, RW, P | W | U, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("naive upgrade", PROTECT, 0, RO, RW, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("naive remap", REMAP, 0, RW, 0, RNONE, SHOOT, NOW, NAIVE, "RULES_NONE"),
	R3("naive unchanged", PROTECT, 0, RW, RW, RNONE, NONE, NOW, UNCHANGED,
	   "not a change"),
};

static void check_row(const struct row *r)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event ev = h_event(r->kind, r->flags, 0x400000, 1, r->old_pte, r->new_pte);

	h_engine(&h, 4, r->arch, r->rules);
	assert_int_equal(tlbpol_as_open(h.eng, 7, &as), 0);
	/* tlbpol_decide(), then tlbpol_submit() (whose fast path decides
	 * some events apart): both must give the row's decision. */
	for (int submit = 0; submit < 2; submit++) {
		memset(&d, 0xa5, sizeof(d));
		assert_int_equal(submit ? tlbpol_submit(h.eng, as, 1, &ev, &d)
					: tlbpol_decide(h.eng, as, 1, &ev, &d),
				 0);
		if (d.action != r->action || d.deadline != r->deadline || d.reason != r->reason ||
		    d.pad != 0)
			fail_msg("%s (arch %u, %s): got %s/%s/%s, want %s/%s/%s [%s]", r->what,
				 r->arch, submit ? "submit" : "decide",
				 tlbpol_action_str(d.action), tlbpol_deadline_str(d.deadline),
				 tlbpol_reason_str(d.reason), tlbpol_action_str(r->action),
				 tlbpol_deadline_str(r->deadline), tlbpol_reason_str(r->reason),
				 r->source);
	}
	tlbpol_engine_free(h.eng);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		check_row(&rows[i]);
}

/*
 * On one engine, the rows' events in a pseudo-random order: tlbpol_submit()
 * gives what tlbpol_decide() gives for each, whatever came before it (its
 * fast path, and the decision it remembers from the last submit, must
 * never answer for an event they do not fit).
 */
static void test_submit_in_any_order(void **state)
{
	static const uint32_t arches[] = { X86, ARM, GEN, RV };
	uint64_t x = RNG_XORSHIFT64_SEED;

	(void)state;
	for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); a++) {
		struct harness h;
		struct tlbpol_as *as;

		h_engine(&h, 4, arches[a], DEF);
		assert_int_equal(tlbpol_as_open(h.eng, 7, &as), 0);
		for (int i = 0; i < 20000; i++) {
			const struct row *r;
			struct tlbpol_decision want, got;
			struct tlbpol_event ev;

			rng_xorshift64(&x);
			r = &rows[x % (sizeof(rows) / sizeof(rows[0]))];
			if (r->arch != arches[a] || r->rules != DEF)
				continue;
			ev = h_event(r->kind, r->flags, 0x400000 + ((x >> 20) & 0xff) * 0x1000, 1,
				     r->old_pte, r->new_pte);
			assert_int_equal(tlbpol_decide(h.eng, as, 1, &ev, &want), 0);
			assert_int_equal(tlbpol_submit(h.eng, as, 1, &ev, &got), 0);
			if (memcmp(&want, &got, sizeof(want)))
				fail_msg("%s (arch %u), event %d: submit %s/%s/%s, decide %s/%s/%s",
					 r->what, arches[a], i, tlbpol_action_str(got.action),
					 tlbpol_deadline_str(got.deadline),
					 tlbpol_reason_str(got.reason),
					 tlbpol_action_str(want.action),
					 tlbpol_deadline_str(want.deadline),
					 tlbpol_reason_str(want.reason));
			if (i % 64 == 0)
				assert_true(tlbpol_flush(h.eng, 1, TLBPOL_BY_LAZY) >= 0);
		}
		tlbpol_engine_free(h.eng);
	}
}

/* Every (kind, arch) pair is covered by at least one row above. */
static void test_coverage(void **state)
{
	int seen[TLBPOL_EV_MAX][TLBPOL_ARCH_MAX] = { { 0 } };
	int reasons[TLBPOL_WHY_MAX] = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		seen[rows[i].kind][rows[i].arch] = 1;
		reasons[rows[i].reason] = 1;
	}
	for (int k = 0; k < TLBPOL_EV_MAX; k++)
		for (int a = 0; a < TLBPOL_ARCH_MAX; a++)
			if (!seen[k][a])
				fail_msg("no row for kind %d arch %d", k, a);
	for (int r = 0; r < TLBPOL_WHY_MAX; r++)
		if (!reasons[r])
			fail_msg("no row for reason %s", tlbpol_reason_str((uint32_t)r));
}

/* decide() is pure: no counter moves, nothing is queued. */
static void test_decide_is_pure(void **state)
{
	struct harness h;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	struct tlbpol_event ev = h_event(TLBPOL_EV_UNMAP, 0, 0x1000, 1, RW, 0);

	(void)state;
	h_engine(&h, 2, X86, DEF);
	assert_int_equal(tlbpol_as_open(h.eng, 1, &as), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tlbpol_decide(h.eng, as, 0, &ev, &d), 0);
	assert_int_equal(tlbpol_stats_read(h.eng, -1, &st), 0);
	assert_int_equal(st.events, 0);
	assert_int_equal(tlbpol_flush(h.eng, 0, TLBPOL_BY_LAZY), 0);
	assert_int_equal(h.flushes_on[0] + h.flushes_on[1], 0);
	tlbpol_engine_free(h.eng);
}

static void test_strings(void **state)
{
	(void)state;
	for (uint32_t r = 0; r < TLBPOL_WHY_MAX; r++) {
		assert_non_null(tlbpol_reason_str(r));
		assert_string_not_equal(tlbpol_reason_str(r), "unknown");
		for (uint32_t q = 0; q < r; q++)
			assert_string_not_equal(tlbpol_reason_str(r), tlbpol_reason_str(q));
	}
	assert_string_equal(tlbpol_reason_str(TLBPOL_WHY_MAX), "unknown");
	assert_string_equal(tlbpol_reason_str(~0u), "unknown");
	assert_string_equal(tlbpol_action_str(TLBPOL_ACT_SHOOTDOWN), "shootdown");
	assert_string_equal(tlbpol_action_str(9), "unknown");
	assert_string_equal(tlbpol_deadline_str(TLBPOL_BY_WRITEBACK), "writeback");
	assert_string_equal(tlbpol_deadline_str(9), "unknown");
}

/* Every reason cites something on every arch; where the hardware differs,
 * so does the citation; out of range is "unknown", never NULL. */
static void test_citations(void **state)
{
	(void)state;
	for (uint32_t r = 0; r < TLBPOL_WHY_MAX; r++)
		for (uint32_t a = 0; a < TLBPOL_ARCH_MAX; a++) {
			const char *c = tlbpol_reason_cite(r, a);

			assert_non_null(c);
			assert_string_not_equal(c, "unknown");
			assert_true(strlen(c) >= 20);
		}
	assert_non_null(strstr(tlbpol_reason_cite(TLBPOL_WHY_SPURIOUS, TLBPOL_ARCH_X86_64),
			       "SDM 4.10.4.1"));
	assert_null(strstr(tlbpol_reason_cite(TLBPOL_WHY_SPURIOUS, TLBPOL_ARCH_ARM64), "SDM"));
	assert_non_null(strstr(tlbpol_reason_cite(TLBPOL_WHY_AGING, TLBPOL_ARCH_ARM64), "arm64"));
	assert_non_null(strstr(tlbpol_reason_cite(TLBPOL_WHY_RETRIED, TLBPOL_ARCH_GENERIC),
			       "b7333b58f358"));
	assert_string_equal(tlbpol_reason_cite(TLBPOL_WHY_MAX, TLBPOL_ARCH_X86_64), "unknown");
	assert_string_equal(tlbpol_reason_cite(TLBPOL_WHY_UNMAP, TLBPOL_ARCH_MAX), "unknown");
	assert_string_equal(tlbpol_reason_cite(~0u, ~0u), "unknown");
}

/*
 * TLBPOL_CFGF_SVVPTC (RISCV64 only): a user install is no longer flushed (a
 * hart still caching the invalid PTE faults, and the spurious row fences
 * it), a kernel install still is on every hart; on another arch the flag
 * is refused.
 */
static void test_svvptc(void **state)
{
	static _Alignas(64) unsigned char mem[1 << 20];
	struct harness h;
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	struct tlbpol_as *as;
	struct tlbpol_decision d;
	struct tlbpol_event user = h_event(TLBPOL_EV_FAULT, 0, 0x1000, 1, 0, RO);
	struct tlbpol_event kern = h_event(TLBPOL_EV_PROTECT, 0, 0x1000, 1, 0, P | W | A);

	(void)state;
	h_config(&h, &cfg, 2, RV);
	cfg.flags = TLBPOL_CFGF_SVVPTC;
	assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), 0);
	assert_int_equal(tlbpol_as_open(eng, 1, &as), 0);
	assert_int_equal(tlbpol_decide(eng, as, 0, &user, &d), 0);
	assert_int_equal(d.action, NONE);
	assert_int_equal(d.reason, TLBPOL_WHY_NOT_PRESENT);
	assert_int_equal(tlbpol_decide(eng, as, 0, &kern, &d), 0);
	assert_int_equal(d.action, SHOOT);
	assert_int_equal(d.reason, TLBPOL_WHY_INSTALL);
	for (uint32_t a = 0; a < TLBPOL_ARCH_MAX; a++) {
		if (a == RV)
			continue;
		h_config(&h, &cfg, 2, a);
		cfg.flags = TLBPOL_CFGF_SVVPTC;
		assert_int_equal(tlbpol_engine_init(&eng, mem, sizeof(mem), &cfg), -EINVAL);
	}
}

H_TEST_MAIN(
	cmocka_unit_test(test_svvptc),
	cmocka_unit_test(test_table),
	cmocka_unit_test(test_citations),
	cmocka_unit_test(test_submit_in_any_order),
	cmocka_unit_test(test_coverage),
	cmocka_unit_test(test_decide_is_pure),
	cmocka_unit_test(test_strings));
