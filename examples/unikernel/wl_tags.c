/* SPDX-License-Identifier: MIT */
/*
 * wl_tags.c - the tags workload: more address spaces than tags.
 *
 * UK_NR_TAG_AS address spaces, each with page tables of its own (the
 * identity map in PML4 slot 0, shared, and in slot 2 its own PT), map the
 * same virtual pages to frames of their own.  Each frame holds its
 * identity word at offset 0 (mm.c) and, at TG_VAL, a value naming the
 * address space, the page and the generation of the mapping.  With
 * tags=percpu:2 each CPU has 2 PCIDs for 9 address spaces, so nearly every
 * switch takes a slot from another space (TLBPOL_TAG_FLUSH_TAG); with
 * tags=global:B the pool runs out and rolls over (TLBPOL_TAG_FLUSH_ALL).
 * Each round:
 *
 *  A. cycle: every CPU switches through all the spaces, each CPU in its
 *     own order, and reads every page of each: the identity must be the
 *     frame the space's PTE names, the value the space's.  Another frame's
 *     identity with no fault is a stale read: a translation left under a
 *     reused tag by its previous owner, or an old mapping not flushed.
 *  B. remap elsewhere: one CPU gives page 0 of half the spaces a new
 *     frame (unmap, submitted, the old frame freed through
 *     tlbpol_defer_free(); install, submitted, the new value), while the
 *     others hold those spaces' entries under their tags without running
 *     them: the engine flushes by tag (INVPCID type 0 on a tag not
 *     loaded) or leaves the catch-up to the next switch back (the
 *     allocator's slot hit, FLUSH_TAG).  Checked by the next cycle.
 *  C. remap in place: every CPU runs one space and reads its pages; the
 *     odd CPUs go lazy (switch to NULL: the tables and tag stay loaded);
 *     CPU 0 remaps page 1 (a shootdown of the loaded tag on the even
 *     CPUs; the lazy ones may be left to catch up); the lazy CPUs switch
 *     back (the catch-up is the switch's FLUSH_TAG) and all read again.
 *
 * Under QEMU's TCG there is no PCID (pcid.c): a switch to other tables
 * flushes everything, so A and B cannot show a tag reused without its
 * flush; C can, for a catch-up skipped on a lazy CPU's return is a switch
 * with no CR3 write at all.  Called by work.c; calls harness.c, mm.c,
 * pcid.c and the core.
 */
#include "work.h"

#define TG_SLOT 2                       /* PML4 slot: 1 TiB */
#define TG_BASE ((uint64_t)TG_SLOT << 39)
#define TG_PAGES 2                      /* pages per address space */
#define TG_VA(i) (TG_BASE + ((uint64_t)(i) << 12))
#define TG_VAL 1024                     /* the value's offset in a frame */
#define TG_AS_ID 0x100                  /* tlbpol_as_open() identities */

static uint64_t tg_pml4[UK_NR_TAG_AS][512] __attribute__((aligned(4096)));
static uint64_t tg_pdpt[UK_NR_TAG_AS][512] __attribute__((aligned(4096)));
static uint64_t tg_pd[UK_NR_TAG_AS][512] __attribute__((aligned(4096)));
static uint64_t tg_pt[UK_NR_TAG_AS][512] __attribute__((aligned(4096)));
static struct tlbpol_as *tas[UK_NR_TAG_AS];
static uint32_t tg_gen[UK_NR_TAG_AS][TG_PAGES];
static uint32_t tg_printed;

extern uint64_t pml4[512];

static uint64_t table_of(uint32_t k)
{
	return (uint64_t)(uintptr_t)tg_pml4[k];
}

static uint64_t value_of(uint32_t k, uint32_t i, uint32_t gen)
{
	return 0x7a65000000000000ULL | ((uint64_t)k << 32) | ((uint64_t)i << 24) | gen;
}

static void submit_as(uint32_t cpu, uint32_t k, uint32_t i, uint32_t kind, uint32_t old_pte,
		      uint32_t new_pte)
{
	struct tlbpol_event ev;
	int err;

	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.kind = kind;
	ev.page_shift = 12;
	ev.va = TG_VA(i);
	ev.nr_pages = 1;
	ev.old_pte = old_pte;
	ev.new_pte = new_pte;
	err = tlbpol_submit(g_eng, tas[k], cpu, &ev, 0);
	if (err)
		panic("CPU %u: tlbpol_submit(as %u, kind %u) = %d", cpu, k, kind, err);
}

/*
 * Give page @i of space @k a new frame: clear the PTE (an atomic exchange:
 * late A/D bits in the old value), submit the unmap, free the old frame
 * once its flushes completed; then fill a new frame, submit the install
 * and store the PTE (tlbpol.h: an install is submitted before the store).
 * One CPU at a time changes these PTEs (the phases' barriers): no lock.
 */
static void remap(uint32_t cpu, uint32_t k, uint32_t i)
{
	uint64_t old = __atomic_exchange_n(&tg_pt[k][i], 0ULL, __ATOMIC_SEQ_CST), pfn;

	if (old & PTE_P) {
		submit_as(cpu, k, i, TLBPOL_EV_UNMAP, pte_to_tlbpol(old), 0);
		mm_frame_free_later(cpu, PTE_PFN(old));
	}
	if (i >= TG_PAGES)
		return; /* (teardown: unmap only) */
	pfn = mm_frame_alloc(cpu);
	tg_gen[k][i]++;
	((volatile uint64_t *)(uintptr_t)(pfn << 12))[TG_VAL / 8] = value_of(k, i, tg_gen[k][i]);
	submit_as(cpu, k, i, TLBPOL_EV_FAULT, 0,
		  TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_EXEC);
	__atomic_store_n(&tg_pt[k][i], (pfn << 12) | PTE_P | PTE_W, __ATOMIC_SEQ_CST);
}

static void unmap_only(uint32_t cpu, uint32_t k, uint32_t i)
{
	uint64_t old = __atomic_exchange_n(&tg_pt[k][i], 0ULL, __ATOMIC_SEQ_CST);

	if (old & PTE_P) {
		submit_as(cpu, k, i, TLBPOL_EV_UNMAP, pte_to_tlbpol(old), 0);
		mm_frame_free_later(cpu, PTE_PFN(old));
	}
}

static void tg_stale(uint32_t cpu, int m, uint32_t k, uint32_t i, const char *what, uint64_t got,
		     uint64_t want)
{
	counts[cpu].stale++;
	if (__atomic_fetch_add(&tg_printed, 1u, __ATOMIC_RELAXED) < 12)
		kprintf("STALE: CPU %u tags/%s space %u (PCID %lu) page %u va %lx: %s %lx, "
			"expected %lx\n", cpu, masks[m].name, k, (uint64_t)CR3_PCID(cur_cr3[cpu]), i, TG_VA(i),
			what, got, want);
}

/* Read page @i of space @k, which this CPU runs, through its TLB; every
 * flush of the PTE's last change has completed. */
static void check(uint32_t cpu, int m, uint32_t k, uint32_t i)
{
	uint64_t pte = __atomic_load_n(&tg_pt[k][i], __ATOMIC_ACQUIRE);
	uint64_t got = probe_read((volatile uint64_t *)(uintptr_t)TG_VA(i));
	uint64_t val = probe_read((volatile uint64_t *)(uintptr_t)(TG_VA(i) + TG_VAL));

	if ((cur_cr3[cpu] & ~0xfffULL) != table_of(k))
		panic("CPU %u: tags check of space %u under CR3 %lx", cpu, k, cur_cr3[cpu]);
	if (!(pte & PTE_P)) {
		if (got != PROBE_FAULT)
			tg_stale(cpu, m, k, i, "read of an unmapped page gave", got, PROBE_FAULT);
		return;
	}
	if (got == PROBE_FAULT)
		anomaly(cpu, WL_TAGS, m, i, "tags: read faulted on a present PTE", pte);
	else if (got != idw(PTE_PFN(pte)))
		tg_stale(cpu, m, k, i, "identity", got, idw(PTE_PFN(pte)));
	else if (val != value_of(k, i, tg_gen[k][i]))
		tg_stale(cpu, m, k, i, "value", val, value_of(k, i, tg_gen[k][i]));
}

static void visit(uint32_t cpu, int m, uint32_t k)
{
	TIMED(cpu, uk_switch(cpu, tas[k], table_of(k)));
	for (uint32_t i = 0; i < TG_PAGES; i++)
		check(cpu, m, k, i);
}

/* Every CPU through every space, each in its own order (so that the spaces
 * a CPU holds under its tags differ from the others'). */
static void cycle(uint32_t cpu, int m, uint32_t r)
{
	for (uint32_t j = 0; j < UK_NR_TAG_AS; j++)
		visit(cpu, m, (cpu * 3 + r + j) % UK_NR_TAG_AS);
}

/* Wait until every flush is complete: the remapping CPU's, then every
 * CPU's own (lazy work, deferred frees), as harness.c's teardown does. */
static void settle_all(uint32_t cpu)
{
	barrier(cpu);
	tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
	barrier(cpu);
}

static void setup(uint32_t cpu)
{
	for (uint32_t k = 0; k < UK_NR_TAG_AS; k++) {
		int err;

		memset(tg_pml4[k], 0, 4096);
		memset(tg_pdpt[k], 0, 4096);
		memset(tg_pd[k], 0, 4096);
		memset(tg_pt[k], 0, 4096);
		/* The kernel (identity map, global 2 MiB pages) in slot 0. */
		tg_pml4[k][0] = pml4[0];
		tg_pml4[k][TG_SLOT] = (uint64_t)(uintptr_t)tg_pdpt[k] | PTE_P | PTE_W;
		tg_pdpt[k][0] = (uint64_t)(uintptr_t)tg_pd[k] | PTE_P | PTE_W;
		tg_pd[k][0] = (uint64_t)(uintptr_t)tg_pt[k] | PTE_P | PTE_W;
		err = tlbpol_as_open(g_eng, TG_AS_ID + k, &tas[k]);
		if (err)
			panic("tags: tlbpol_as_open = %d", err);
		for (uint32_t i = 0; i < TG_PAGES; i++) {
			tg_gen[k][i] = 0;
			remap(cpu, k, i);
		}
	}
}

static void teardown_tags(uint32_t cpu, int m)
{
	barrier(cpu);
	if (cpu == 0) {
		for (uint32_t k = 0; k < UK_NR_TAG_AS; k++)
			for (uint32_t i = 0; i < TG_PAGES; i++)
				unmap_only(cpu, k, i);
	}
	settle_all(cpu);
	/* Unmapped and flushed: a read must fault in every space. */
	for (uint32_t k = 0; k < UK_NR_TAG_AS; k++)
		visit(cpu, m, k);
	uk_switch(cpu, g_as, kernel_cr3());
	settle_all(cpu);
	if (cpu == 0)
		for (uint32_t k = 0; k < UK_NR_TAG_AS; k++) {
			int err = tlbpol_as_close(g_eng, tas[k]);

			if (err)
				panic("tags: tlbpol_as_close(space %u) = %d", k, err);
			tas[k] = 0;
		}
	barrier(cpu);
}

void wl_tags(uint32_t cpu, int m)
{
	barrier(cpu);
	if (cpu == 0)
		setup(cpu);
	barrier(cpu);
	for (uint32_t r = 0; r < p_rounds; r++) {
		uint32_t who = r % nr_cpus, k = r % UK_NR_TAG_AS;
		int lazy = cpu % 2;

		seg_begin(cpu);
		/* A: every space, every CPU, tags reused as they go. */
		cycle(cpu, m, r);
		barrier(cpu);
		/* B: page 0 of half the spaces, while CPUs hold them under tags. */
		if (cpu == who) {
			for (uint32_t s = r % 2; s < UK_NR_TAG_AS; s += 2)
				remap(cpu, s, 0);
			tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
		}
		settle_all(cpu);
		/* C: one space on every CPU, its page 1 remapped in place. */
		visit(cpu, m, k);
		barrier(cpu);
		if (lazy)
			uk_switch(cpu, 0, 0);
		barrier(cpu);
		if (cpu == 0) {
			remap(cpu, k, 1);
			tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
		}
		barrier(cpu);
		if (!lazy)
			tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
		barrier(cpu);
		/* The lazy CPUs come back to the loaded space (its catch-up
		 * is the switch's flush); everyone reads it again. */
		visit(cpu, m, k);
		seg_end(cpu, WL_TAGS, m, (uint64_t)nr_cpus * (UK_NR_TAG_AS + 2));
	}
	/* The last round's remaps, checked in every space. */
	barrier(cpu);
	cycle(cpu, m, p_rounds);
	teardown_tags(cpu, m);
}
