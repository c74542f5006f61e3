/* SPDX-License-Identifier: MIT */
/*
 * decide.h - an event's class and its decision, inline.
 *
 * tlbpol_submit() and tlbpol_decide() are this and little else on their hot
 * path (the spurious fault of Linux 61c77326d1df "x86, mm: Avoid unnecessary
 * TLB flush" is the most frequent event of all), so the
 * argument checks, the classification and the table lookup are inline in
 * both.  The table itself, with the hardware rule or kernel source behind
 * every cell, is in decide.c.
 */
#ifndef TLBPOL_DECIDE_H
#define TLBPOL_DECIDE_H

#include "internal.h"

/*
 * A decision in one 32-bit word: action, deadline and reason, a byte each,
 * and in the top byte the index of its counter in cnt.decided[][] (so that
 * counting it costs no multiply).  p->verdict[] keeps the table's cells so,
 * and tlbpol_submit() carries its decision so, in one register, to the end
 * and into act().
 */
_Static_assert(TLBPOL_WHY_MAX * TLBPOL_COUNTED <= 0xff && TLBPOL_WHY_MAX <= 0xff,
	       "a decision's reason and counter index fit in a byte");

static inline uint32_t decision_pack(uint32_t action, uint32_t deadline, uint32_t reason)
{
	return action | deadline << 8 | reason << 16 |
	       (reason * TLBPOL_COUNTED + (action != TLBPOL_ACT_NONE)) << 24;
}

static inline uint32_t packed_action(uint32_t v)
{
	return v & 0xff;
}

static inline uint32_t packed_deadline(uint32_t v)
{
	return (v >> 8) & 0xff;
}

static inline uint32_t packed_reason(uint32_t v)
{
	return (v >> 16) & 0xff;
}

/* @v with its deadline replaced by @deadline. */
static inline uint32_t packed_with_deadline(uint32_t v, uint32_t deadline)
{
	return (v & ~0xff00u) | deadline << 8;
}

static inline void decision_unpack(struct tlbpol_decision *out, uint32_t v)
{
	out->action = packed_action(v);
	out->deadline = packed_deadline(v);
	out->reason = packed_reason(v);
	out->pad = 0;
}

enum event_class {
	CLS_NOT_PRESENT,
	CLS_INSTALL,
	CLS_INSTALL_KERNEL,
	CLS_UNCHANGED,
	CLS_NAIVE,
	CLS_PFN_CHANGE,
	CLS_ATTRS,
	CLS_REMAP,
	CLS_DISCARD,
	CLS_UNMAP,
	CLS_UNMAP_DIRTY,
	CLS_TABLES_FREED,
	CLS_RECLAIM_CLEAN,
	CLS_RECLAIM_DIRTY,
	CLS_MIGRATE_CLEAN,
	CLS_MIGRATE_DIRTY,
	CLS_DOWNGRADE,
	CLS_CLEAR_DIRTY,
	CLS_AGING,
	CLS_RETRIED,
	CLS_SPURIOUS,
	CLS_SET_YOUNG,
	CLS_SET_DIRTY,
	CLS_UPGRADE,
	CLS_MAX
};
_Static_assert(CLS_MAX == TLBPOL_CLASSES, "struct tlbpol_params holds a verdict per class");


struct verdict {
	uint8_t action;
	uint8_t deadline;
};

struct decision_row {
	uint64_t rule;                      /* 0: the row has no rule */
	struct verdict with[TLBPOL_ARCH_MAX]; /* rule in force (or no rule) */
	struct verdict without;             /* rule off: Linux before the rule */
	uint32_t reason;
};

extern const struct decision_row tlbpol__decision_table[CLS_MAX];

/* Bits that grant access; losing any of them is a downgrade. */
#define PERM_BITS (TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_EXEC | TLBPOL_PTE_USER)
/* Bits whose change either way is a downgrade. */
#define FLIP_BITS (TLBPOL_PTE_USER | TLBPOL_PTE_GLOBAL)

/*
 * May the page have been written through an entry some CPU still caches?
 *  x86: only if D is set.  A write through an entry without D makes the CPU
 *       set D in the PTE in memory, which it cannot do once the PTE is not
 *       present (Linux pmdp_invalidate_ad(): "once an invalid PTE is
 *       established, the PTE's access and dirty bits cannot be updated";
 *       the premise of mm/rmap.c set_tlb_ubc_flush_pending(): "if the PTE
 *       was dirty then it's best to assume it's writable").
 *  ARM64: only if D is set: with DBM the hardware update of the dirty state
 *       is an atomic update of the descriptor in memory, which fails on an
 *       invalid descriptor (Arm ARM D8.5.4).
 *  RISCV64: only if D is set: a store through an entry without D either
 *       faults (Svade) or sets D by an atomic compare-and-set of the PTE in
 *       memory that fails once the PTE changed (Svadu; priv. spec, "Virtual
 *       Address Translation Process", the A/D step).
 *  GENERIC: a writable PTE may have been written without D ever being set
 *       in memory, so writable counts as dirty.
 */
static inline int may_be_dirty(uint32_t arch, uint32_t old_pte)
{
	if (old_pte & TLBPOL_PTE_DIRTY)
		return 1;
	return arch == TLBPOL_ARCH_GENERIC && (old_pte & TLBPOL_PTE_WRITE);
}

static inline enum event_class classify_removal(const struct tlbpol_engine *eng,
					 const struct tlbpol_event *ev)
{
	int dirty = may_be_dirty(eng->arch, ev->old_pte);

	switch (ev->kind) {
	case TLBPOL_EV_RECLAIM:
		return dirty ? CLS_RECLAIM_DIRTY : CLS_RECLAIM_CLEAN;
	case TLBPOL_EV_MIGRATE:
		return dirty ? CLS_MIGRATE_DIRTY : CLS_MIGRATE_CLEAN;
	case TLBPOL_EV_UNMAP:
		/* The addresses stay mapped: a stale entry would be used. */
		if (ev->flags & TLBPOL_EVF_STAYS_MAPPED)
			return CLS_DISCARD;
		/* Private anonymous contents die with the unmap: nothing can
		 * be written back after a late write. */
		return dirty && !(ev->flags & TLBPOL_EVF_PRIVATE) ? CLS_UNMAP_DIRTY : CLS_UNMAP;
	default:
		/* Losing PRESENT outside an unmap-like event: no frame-free
		 * point is known, so treat it as the downgrade it is. */
		return CLS_DOWNGRADE;
	}
}

/* A fault's access as the PTE bits it needs: EVF_WRITE and EVF_EXEC sit
 * one bit below PTE_WRITE and PTE_EXEC. */
_Static_assert(TLBPOL_EVF_WRITE << 1 == TLBPOL_PTE_WRITE &&
		       TLBPOL_EVF_EXEC << 1 == TLBPOL_PTE_EXEC,
	       "fault_needs() shifts the access flags onto the PTE bits");

static inline uint32_t fault_needs(uint32_t flags)
{
	return TLBPOL_PTE_PRESENT | ((flags & (TLBPOL_EVF_WRITE | TLBPOL_EVF_EXEC)) << 1);
}

static inline enum event_class classify_fault(const struct tlbpol_event *ev, int first_try)
{
	uint32_t need = fault_needs(ev->flags);
	uint32_t gained = ev->new_pte & ~ev->old_pte;

	if ((ev->old_pte & need) != need) {
		/* The fault added the permission it lacked, or, unresolved
		 * (SIGSEGV), changed nothing that matters. */
		if ((ev->new_pte & need) == need || (gained & PERM_BITS))
			return CLS_UPGRADE;
		return gained ? CLS_UPGRADE : CLS_UNCHANGED;
	}
	if (gained & PERM_BITS)
		return CLS_UPGRADE;
	if (!first_try && (ev->flags & TLBPOL_EVF_TRIED))
		return CLS_RETRIED;
	if (gained & TLBPOL_PTE_DIRTY)
		return CLS_SET_DIRTY;
	if (gained & TLBPOL_PTE_ACCESSED)
		return CLS_SET_YOUNG;
	return CLS_SPURIOUS;
}

/*
 * May a CPU hold an invalid entry for a page just installed, of a kernel
 * page if @kernel?  GENERIC assumes so, as RISC-V does (priv. spec,
 * SFENCE.VMA: "permits the caching of PTEs whose V bit is clear"); with
 * Svvptc a user page's stale invalid entry only costs a spurious fault,
 * whose row flushes it, and a kernel page stays flushed (TLBPOL_CFGF_SVVPTC
 * says why).  x86 and Arm never cache a not-present entry.
 */
static inline int invalid_cached(const struct tlbpol_engine *eng, int kernel)
{
#ifdef TLBPOL_PLANTED_RISCV_NO_FENCE
	if (eng->arch == TLBPOL_ARCH_RISCV64)
		return 0;
#endif
	if (eng->arch == TLBPOL_ARCH_GENERIC)
		return 1;
	return eng->arch == TLBPOL_ARCH_RISCV64 && (kernel || !(eng->flags & TLBPOL_CFGF_SVVPTC));
}

/*
 * The order of the tests is the priority of the classes: what makes a stale
 * entry grant the most decides.  @first_try ignores FAULT_FLAG_TRIED.
 */
static inline __attribute__((always_inline)) enum event_class
classify_pte(const struct tlbpol_engine *eng, uint64_t rules, const struct tlbpol_event *ev,
	     int first_try);

/* Classes whose cell can be less than a shootdown by the time tables are
 * freed: with TLBPOL_EVF_TABLES_FREED they become CLS_TABLES_FREED. */
static inline int weaker_than_tables(enum event_class cls)
{
	switch (cls) {
	case CLS_NOT_PRESENT:
	case CLS_INSTALL:
	case CLS_UNCHANGED:
	case CLS_AGING:
	case CLS_RETRIED:
	case CLS_SPURIOUS:
	case CLS_SET_YOUNG:
	case CLS_SET_DIRTY:
	case CLS_UPGRADE:
		return 1;
	default:
		return 0;
	}
}

/*
 * classify()'s first answer, CLS_SPURIOUS under any rules but
 * TLBPOL_RULES_NONE: a first-try fault on a present PTE that already
 * allowed the access and did not change, with no table freed.  (The test
 * classify_pte() would reach for it, asked first: the spurious fault of
 * Linux 61c77326d1df is the most frequent event of all.)  Other events leave at the first
 * tests.
 */
static inline int spurious_fault(const struct tlbpol_event *ev)
{
	uint32_t need = fault_needs(ev->flags);

	return ev->kind == TLBPOL_EV_FAULT && ev->old_pte == ev->new_pte &&
	       (ev->flags & (TLBPOL_EVF_TRIED | TLBPOL_EVF_PFN_CHANGED | TLBPOL_EVF_ATTRS |
			     TLBPOL_EVF_TABLES_FREED)) == 0 &&
	       (ev->old_pte & need) == need;
}

/*
 * classify()'s second answer, classify_removal()'s class under any rules
 * but TLBPOL_RULES_NONE: a present PTE made not present by anything but a
 * remap (a reclaim, or an unmap walking a range page by page: the most
 * frequent deferral).  classify_pte() tests nothing else first for it, and
 * no class of classify_removal() is weaker than tables freed.
 */
static inline int removal(const struct tlbpol_event *ev)
{
	return ev->kind != TLBPOL_EV_REMAP && (ev->old_pte & TLBPOL_PTE_PRESENT) &&
	       !(ev->new_pte & TLBPOL_PTE_PRESENT);
}

/*
 * Inlined into tlbpol__decide(): every submit classifies once.  The two
 * most frequent kinds of event are answered first, as classify_pte() would.
 */
static inline __attribute__((always_inline)) enum event_class
classify(const struct tlbpol_engine *eng, uint64_t rules, const struct tlbpol_event *ev,
	 int first_try)
{
	enum event_class cls;

	if (rules != TLBPOL_RULES_NONE) {
		if (spurious_fault(ev))
			return CLS_SPURIOUS;
		if (removal(ev))
			return classify_removal(eng, ev);
	}
	cls = classify_pte(eng, rules, ev, first_try);
	if ((ev->flags & TLBPOL_EVF_TABLES_FREED) && weaker_than_tables(cls))
		return rules == TLBPOL_RULES_NONE ? CLS_NAIVE : CLS_TABLES_FREED;
	return cls;
}

static inline __attribute__((always_inline)) enum event_class
classify_pte(const struct tlbpol_engine *eng, uint64_t rules, const struct tlbpol_event *ev,
	     int first_try)
{
	uint32_t old = ev->old_pte, new = ev->new_pte;
	uint32_t lost = old & ~new;

	if (!(old & TLBPOL_PTE_PRESENT)) {
		int kernel = (new & TLBPOL_PTE_GLOBAL) || !(new & TLBPOL_PTE_USER);

		if (!(new & TLBPOL_PTE_PRESENT) || !invalid_cached(eng, kernel))
			return CLS_NOT_PRESENT;
		return kernel ? CLS_INSTALL_KERNEL : CLS_INSTALL;
	}
	if (old == new && ev->kind != TLBPOL_EV_FAULT && ev->kind != TLBPOL_EV_REMAP &&
	    !(ev->flags & (TLBPOL_EVF_PFN_CHANGED | TLBPOL_EVF_ATTRS)))
		return CLS_UNCHANGED;
	if (rules == TLBPOL_RULES_NONE)
		return CLS_NAIVE;
	if (ev->kind == TLBPOL_EV_REMAP)
		return CLS_REMAP;
	if (!(new & TLBPOL_PTE_PRESENT))
		return classify_removal(eng, ev);
	if (ev->flags & TLBPOL_EVF_PFN_CHANGED)
		return CLS_PFN_CHANGE;
	if (ev->flags & TLBPOL_EVF_ATTRS)
		return CLS_ATTRS;
	if ((lost & PERM_BITS) || ((old ^ new) & FLIP_BITS))
		return CLS_DOWNGRADE;
	if (lost & TLBPOL_PTE_DIRTY)
		return CLS_CLEAR_DIRTY;
	if (lost & TLBPOL_PTE_ACCESSED)
		return CLS_AGING;
	if (ev->kind == TLBPOL_EV_FAULT)
		return classify_fault(ev, first_try);
	return CLS_UPGRADE; /* only bits were gained */
}

/*
 * A cell of the table as p->verdict[] keeps it: action, deadline, reason.
 * VERDICT_OUT_OF_LINE: the row's rule is off and its cell says RECLASSIFY
 * (tlbpol__decide_without()).
 */
#define VERDICT_OUT_OF_LINE 0xffu

static inline uint32_t verdict_pack(struct verdict v, uint32_t reason)
{
	return decision_pack(v.action, v.deadline, reason);
}

/*
 * The decision @v (packed) for @ev.  Only BY_FREE moves: a dirty page's
 * BY_WRITEBACK protects data, not frames.
 *  - LATR: a caller that promises not to reuse the frames or addresses
 *    before a deferred free runs (EVF_LAZY_OK) turns "before the frames are
 *    freed" into "before that deferred free", which tlbpol_tick() and
 *    tlbpol_switch() complete without interrupts.
 *  - Flush stamps (EVF_STAMP): the same lazy completion, but the frames go
 *    back at once and tlbpol_stamp_settle() completes the flush for one
 *    reused too soon.  Not for freed page tables, which the host frees
 *    behind tlbpol_stamp() (their flush is due by then: a CPU's MMU may walk
 *    them speculatively, and no settle stands before their reuse), nor for
 *    a global PTE (its entry is in every CPU's TLB, lazy or not).  The
 *    entry keeps its pending span (it is not LAZY_OK): an install over the
 *    addresses completes it.
 *  - Neither, under TLBPOL_CFGF_LOCKLESS_WALKERS, for freed page tables:
 *    a lazy request leaves out a vCPU preempted since its post, which may
 *    have been descheduled inside a walk, and no settle may wait for such
 *    a vCPU (tlbpol_stamp_settle()); due by the free, the request waits
 *    for it instead, as the walkers need.
 */
static inline uint32_t lazy_deadline(const struct tlbpol_engine *eng, uint32_t v, uint64_t rules,
				     const struct tlbpol_event *ev)
{
	if (packed_deadline(v) != TLBPOL_BY_FREE)
		return v;
	if ((ev->flags & TLBPOL_EVF_TABLES_FREED) && (eng->flags & TLBPOL_CFGF_LOCKLESS_WALKERS))
		return v;
	if ((ev->flags & TLBPOL_EVF_LAZY_OK) && (rules & TLBPOL_RULE_LAZY_UNMAP))
		return packed_with_deadline(v, TLBPOL_BY_LAZY);
	if ((ev->flags & TLBPOL_EVF_STAMP) && (rules & TLBPOL_RULE_FLUSH_STAMP) &&
	    !(ev->flags & TLBPOL_EVF_TABLES_FREED) &&
	    !((ev->old_pte | ev->new_pte) & TLBPOL_PTE_GLOBAL))
		return packed_with_deadline(v, TLBPOL_BY_LAZY);
	return v;
}

/* The decision, packed, when the first look says VERDICT_OUT_OF_LINE. */
uint32_t tlbpol__decide_without(const struct tlbpol_engine *eng, uint64_t rules,
				const struct tlbpol_event *ev);

/*
 * The decision of @ev under @p, packed, if its cell needs no second look,
 * which is every cell with the default rules.  VERDICT_OUT_OF_LINE if the
 * row's rule is off and the event must be classified again:
 * tlbpol__decide() has the answer.  For a caller whose hot path must make
 * no call (tlbpol_submit()).
 */
static inline __attribute__((always_inline)) uint32_t
tlbpol__decide_ruled(const struct tlbpol_engine *eng, const struct tlbpol_params *p,
		     const struct tlbpol_event *ev)
{
	uint32_t v = p->verdict[classify(eng, p->rules, ev, 0)];

	if (packed_action(v) == VERDICT_OUT_OF_LINE)
		return v;
	return lazy_deadline(eng, v, p->rules, ev);
}

/* The decision, packed.  @p: the configuration it is made under, read
 * once. */
static inline uint32_t tlbpol__decide(const struct tlbpol_engine *eng,
				      const struct tlbpol_params *p, const struct tlbpol_event *ev)
{
	uint32_t v = tlbpol__decide_ruled(eng, p, ev);

	if (packed_action(v) == VERDICT_OUT_OF_LINE)
		return tlbpol__decide_without(eng, p->rules, ev);
	return v;
}

/* Page sizes per arch, as bitmasks of page_shift. */
static inline uint64_t arch_page_shifts(uint32_t arch)
{
	switch (arch) {
	case TLBPOL_ARCH_X86_64:
		/* 4 KiB pages, 2 MiB and 1 GiB large pages (SDM 4.5). */
		return (1ULL << 12) | (1ULL << 21) | (1ULL << 30);
	case TLBPOL_ARCH_ARM64:
		/* Arm ARM D8.2 and D8.7 (contiguous bit): the 4K granule has
		 * pages 12 and blocks 21, 30 (contiguous runs 16, 25); the 16K
		 * granule 14 and 25, 36 (runs 21, 30); the 64K granule 16 and
		 * 29, 42 (runs 21, 34).  Each is a size one TLB entry may
		 * cover, so each is a size a flush may have to name. */
		return (1ULL << 12) | (1ULL << 14) | (1ULL << 16) | (1ULL << 21) |
		       (1ULL << 25) | (1ULL << 29) | (1ULL << 30) | (1ULL << 34) |
		       (1ULL << 36) | (1ULL << 42);
	case TLBPOL_ARCH_RISCV64:
		/* Sv39/Sv48/Sv57 leaves at each level: 4 KiB, 2 MiB, 1 GiB,
		 * 512 GiB, 256 TiB (priv. spec, "Sv39", "Sv48", "Sv57"), and
		 * 64 KiB NAPOT pages ("Svnapot"). */
		return (1ULL << 12) | (1ULL << 16) | (1ULL << 21) | (1ULL << 30) |
		       (1ULL << 39) | (1ULL << 48);
	default:
		/* Assume nothing: any power of two from 4 KiB to 128 TiB. */
		return ((1ULL << 48) - 1) & ~((1ULL << 12) - 1);
	}
}

/*
 * EVF_STAMP names frames that die with the mapping: a private unmap that
 * does not stay mapped, or a reclaim.  Anything else is refused: a range
 * that stays mapped (DONTNEED) is used through a stale entry, not just
 * kept; migration and mremap keep the frame alive elsewhere; a downgrade
 * or a fault is no frame's end.
 */
static inline int stamp_allowed(const struct tlbpol_event *ev)
{
	if (ev->kind == TLBPOL_EV_RECLAIM)
		return 1;
	return ev->kind == TLBPOL_EV_UNMAP &&
	       (ev->flags & (TLBPOL_EVF_PRIVATE | TLBPOL_EVF_STAYS_MAPPED)) == TLBPOL_EVF_PRIVATE;
}

/* The fields every event must have valid, whatever its size; in one
 * branch, for the common case of this release's size (validate_event()
 * looks at a larger one). */
static inline int valid_fields(const struct tlbpol_event *ev)
{
	return ev->size == sizeof(*ev) && ev->kind < TLBPOL_EV_MAX &&
	       ((ev->flags & ~TLBPOL_EVF_ALL) | ((ev->old_pte | ev->new_pte) & ~TLBPOL_PTE_ALL)) == 0 &&
	       (!(ev->flags & TLBPOL_EVF_STAMP) || stamp_allowed(ev));
}

/* The common case, in one branch: valid fields and one aligned 4 KiB page
 * (every profile has that size, and such a page cannot wrap). */
static inline int valid_one_page(const struct tlbpol_event *ev)
{
	return valid_fields(ev) && ev->page_shift == 12 && ev->nr_pages == 1 &&
	       (ev->va & 0xfff) == 0;
}

static inline int validate_event(const struct tlbpol_engine *eng, const struct tlbpol_event *ev)
{
	uint64_t size, end;

	/* The common case first: nearly every submit is one 4 KiB page. */
	if (valid_one_page(ev))
		return 0;
	if (ev->size > sizeof(*ev)) {
		/* A newer caller's event: this release's part of it, if it
		 * set nothing past that (tail_zero()). */
		struct tlbpol_event known;

		if (!tail_zero(ev, ev->size, sizeof(*ev)))
			return -E_2BIG;
		prim_copy(&known, ev, sizeof(known));
		known.size = sizeof(known);
		return validate_event(eng, &known);
	}
	if (!valid_fields(ev))
		return -E_INVAL;
	if (ev->page_shift >= 64 || !((arch_page_shifts(eng->arch) >> ev->page_shift) & 1))
		return -E_INVAL;
	if (ev->nr_pages == 0)
		return -E_INVAL;
	size = 1ULL << ev->page_shift;
	if (ev->va & (size - 1))
		return -E_INVAL;
	/* va + (nr_pages << page_shift) must stay below 2^64 (end is exclusive,
	 * so the last page may end exactly at 2^64). */
	if (ev->nr_pages > (~0ULL >> ev->page_shift))
		return -E_RANGE;
	end = ev->va + ((ev->nr_pages - 1) << ev->page_shift);
	if (end < ev->va || end > ~0ULL - (size - 1))
		return -E_RANGE;
	return 0;
}

/* The engine, address space and CPU of tlbpol_decide() and
 * tlbpol_submit(), in the order the header documents their errors (a NULL
 * event is -EINVAL with them). */
static inline int tlbpol__check_call(const struct tlbpol_engine *eng, const struct tlbpol_as *as,
				     uint32_t cpu)
{
	if (!eng || !as || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	if (!tlbpol__as_valid(eng, as))
		return -E_INVAL;
	return 0;
}

/* All their arguments. */
static inline int tlbpol__check_event_call(const struct tlbpol_engine *eng,
					   const struct tlbpol_as *as, uint32_t cpu,
					   const struct tlbpol_event *ev)
{
	int err = ev ? tlbpol__check_call(eng, as, cpu) : -E_INVAL;

	return err ? err : validate_event(eng, ev);
}

#endif /* TLBPOL_DECIDE_H */
