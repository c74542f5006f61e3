/* SPDX-License-Identifier: MIT */
/*
 * mm.h - the test region: 4 KiB pages the workloads map, unmap and protect,
 * every change submitted to libtlbpol.
 */
#ifndef UK_MM_H
#define UK_MM_H

#include <tlbpol/tlbpol.h>

#include "kernel.h"

/*
 * The test region: PML4 slot 1 (512 GiB), one page table of 512 4 KiB
 * PTEs, nothing else in that 512 GiB slot.  Far from the identity map's
 * 2 MiB pages (first 4 GiB): QEMU's TCG remembers one span covering every
 * large page it has cached and turns an invlpg inside that span into a full
 * flush (accel/tcg/cputlb.c tlb_flush_page_locked()); out here an invlpg
 * stays one entry, as the engine asked.
 */
#define TBASE ((uint64_t)0x0000008000000000ULL)
#define NR_TPAGES 512
#define TVA(idx) (TBASE + ((uint64_t)(idx) << 12))

/* x86 PTE bits (SDM 3A 4.5, table 4-19). */
#define PTE_P (1ULL << 0)
#define PTE_W (1ULL << 1)
#define PTE_U (1ULL << 2)
#define PTE_A (1ULL << 5)
#define PTE_D (1ULL << 6)
#define PTE_G (1ULL << 8)
#define PTE_NX (1ULL << 63)
#define PTE_PFN(p) (((p) >> 12) & 0xffffffffffULL)

/* Every test frame holds its own identity at offset 0, written once when the
 * pool is built and never again: a read through a translation says which
 * frame it reached. */
static inline uint64_t idw(uint64_t pfn)
{
	return 0x1de7000000000000ULL | pfn;
}
/* Workload writes go here, away from the identity word. */
#define SCRATCH_OFF(cpu) (256 + 8 * (cpu))

struct vpage {
	spinlock_t lock;   /* the "PTE lock" of this page */
	uint32_t pending;  /* atomic: unmaps whose deferred free has not run */
	uint32_t installs; /* atomic: PTEs stored for it (a reader's race check) */
};

extern volatile uint64_t *test_pt;
extern struct vpage vpages[NR_TPAGES];
extern struct tlbpol_engine *volatile g_eng;
extern struct tlbpol_as *volatile g_as;

void mm_init(uint64_t pool_phys, uint32_t nframes);
uint32_t mm_frames_free(void);
uint32_t mm_frames_total(void);
uint32_t pte_to_tlbpol(uint64_t pte);
/* A frame for other page tables (wl_tags.c), and its deferred free
 * (tlbpol_defer_free(): after the flushes pending on @cpu). */
uint64_t mm_frame_alloc(uint32_t cpu);
void mm_frame_free_later(uint32_t cpu, uint64_t pfn);

/* Clear the PTE of page @idx and submit @kind (UNMAP, RECLAIM...) with
 * @flags; the frame goes back through tlbpol_defer_free().  Returns 1 if a
 * page was mapped. */
int mm_unmap(uint32_t cpu, uint32_t idx, uint32_t kind, uint32_t flags);
/* Flush stamps: clear page @idx's PTE and submit a private unmap with
 * TLBPOL_EVF_STAMP; its frame waits in this CPU's stash for mm_stamp(),
 * which calls tlbpol_stamp() and puts every stashed frame back in the pool
 * at once with the stamp.  A frame taken from the pool with a stamp is
 * settled by the CPU that takes it (frame_alloc()); until then its page
 * counts as pending (a stale read of it is allowed, as its flush is).
 * Returns 1 if a page was mapped. */
int mm_unmap_stamped(uint32_t cpu, uint32_t idx, uint32_t kind);
void mm_stamp(uint32_t cpu);
/* Settle every stamped frame in the pool (CPU @cpu, once the others are
 * quiet and every flush is complete): before the engine is replaced. */
void mm_settle_pool(uint32_t cpu);
/* stamplook=N: the allocator takes a frame with nothing to settle among
 * the N freed last, if there is one (tlbpol_stamp_pending()); 0: the last
 * freed, always (the worst case for stamps). */
extern uint32_t param_stamp_lookahead;
/* Settle latencies, log2 buckets of TSC cycles (bucket b: < 2^b). */
#define SETTLE_BUCKETS 32
extern uint64_t settle_hist[SETTLE_BUCKETS];
/* Map fresh frames at the not-present pages [first, first + n) with the
 * global bit: kernel mappings, kept across CR3 writes (CR4.PGE is on). */
void mm_map_global(uint32_t cpu, uint32_t first, uint32_t n);
/* mprotect of pages [first, first + n): clear or set R/W, one PROTECT event
 * for the range (one flush, as change_protection() flushes the range once). */
void mm_protect(uint32_t cpu, uint32_t first, uint32_t n, int writable);

#endif /* UK_MM_H */
