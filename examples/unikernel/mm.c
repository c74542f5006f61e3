/* SPDX-License-Identifier: MIT */
/*
 * mm.c - the kernel's own memory manager for the test region.
 *
 * - Page tables: one PDPT, one PD, one PT (4 KiB PTEs only) under PML4 slot 1.
 * - Frames: a pool of 4 KiB frames in identity-mapped RAM.  A frame leaves
 *   the pool by frame_alloc() and comes back only through
 *   tlbpol_defer_free(), i.e. once every flush pending when it was unmapped
 *   has completed on every CPU: the engine decides when reuse is safe.
 * - Faults: demand paging through tlbpol_submit(), with a dropped-lock retry
 *   so that spurious and retried faults really happen between CPUs.
 *
 * Locking: one spinlock per test page (Linux's PTE lock, split to the page).
 * Every PTE change is submitted before that lock is released (tlbpol.h,
 * tlbpol_submit()).  A CPU may hold a page lock while the engine waits for
 * other CPUs' acknowledgements, so nobody may spin on a page lock with
 * interrupts off: the fault handler re-enables interrupts first (as Linux's
 * do_user_addr_fault() does), or the waiter could never take the shootdown
 * interrupt the lock holder is waiting for.
 */
#include "mm.h"

static uint64_t test_pdpt[512] __attribute__((aligned(4096)));
static uint64_t test_pd[512] __attribute__((aligned(4096)));
static uint64_t test_pt_mem[512] __attribute__((aligned(4096)));
volatile uint64_t *test_pt = test_pt_mem;
struct vpage vpages[NR_TPAGES];

struct tlbpol_engine *volatile g_eng;
struct tlbpol_as *volatile g_as;

extern uint64_t pml4[512];

/* ------------------------------------------------------------------------ */
/* Frames                                                                   */
/* ------------------------------------------------------------------------ */

#define MAX_FRAMES 4096
static spinlock_t pool_lock;
static uint32_t pool[MAX_FRAMES];
static uint32_t pool_top, pool_total;
/* Beside each pool slot: the frame's flush stamp (0: none) and the page it
 * was unmapped from (+ 1), whose pending count the settle ends. */
static uint64_t pool_stamp[MAX_FRAMES];
static uint32_t pool_page1[MAX_FRAMES];

void mm_init(uint64_t pool_phys, uint32_t nframes)
{
	if (nframes > MAX_FRAMES)
		nframes = MAX_FRAMES;
	for (uint32_t i = 0; i < nframes; i++) {
		uint64_t pfn = (pool_phys >> 12) + i;
		volatile uint64_t *f = (volatile uint64_t *)(uintptr_t)(pfn << 12);

		f[0] = idw(pfn);
		pool[i] = (uint32_t)pfn;
	}
	pool_top = pool_total = nframes;

	test_pd[0] = (uint64_t)(uintptr_t)test_pt_mem | PTE_P | PTE_W;
	test_pdpt[0] = (uint64_t)(uintptr_t)test_pd | PTE_P | PTE_W;
	/* Not-present entries are never cached (SDM 4.10.2.3), so installing
	 * the slot needs no flush. */
	pml4[1] = (uint64_t)(uintptr_t)test_pdpt | PTE_P | PTE_W;
}

uint32_t mm_frames_free(void)
{
	return __atomic_load_n(&pool_top, __ATOMIC_ACQUIRE);
}

uint32_t mm_frames_total(void)
{
	return pool_total;
}

/*
 * How many of the last freed frames flush2_stamp's allocator looks at for
 * one with nothing to settle (tlbpol_stamp_pending()).  8 by default: under
 * KVM on a 2-vCPU Xeon guest (low steal) no reuse then waited, where taking
 * the last freed frame always (stamplook=0, the worst case, which the
 * unikernel-stamp-immediate test keeps under the TCG oracle) made 120 of 127
 * reuses wait a settle, 25-30 M cycles each on average.
 */
uint32_t param_stamp_lookahead = 8;

/* The unmap of page @page1 - 1 is complete (0: the frame was no page's). */
static void page_done(uint32_t page1)
{
	if (page1)
		__atomic_fetch_sub(&vpages[page1 - 1].pending, 1u, __ATOMIC_RELEASE);
}

/* Pool slot @i's stamp is settled: its page is done, the slot plain again.
 * Under pool_lock. */
static void slot_settled(uint32_t i)
{
	page_done(pool_page1[i]);
	pool_stamp[i] = 0;
	pool_page1[i] = 0;
}

/* The frame freed last (LIFO, as a per-CPU free list hands it out), or
 * with stamplook=N one of the N freed last that needs no settle. */
static uint64_t frame_get(uint64_t *stamp, uint32_t *page1)
{
	uint64_t f = spin_lock_irqsave(&pool_lock), pfn = 0;

	*stamp = 0;
	*page1 = 0;
	for (uint32_t k = 0; k < param_stamp_lookahead && k < pool_top; k++) {
		uint32_t i = pool_top - 1 - k, t = pool_top - 1;

		if (pool_stamp[i] && tlbpol_stamp_pending(g_eng, pool_stamp[i]))
			continue;
		slot_settled(i); /* (a slot without a stamp has no page either) */
		if (i != t) { /* move it to the top, the top down in its place */
			uint32_t p = pool[i];

			pool[i] = pool[t];
			pool_stamp[i] = pool_stamp[t];
			pool_page1[i] = pool_page1[t];
			pool[t] = p;
			pool_stamp[t] = 0;
			pool_page1[t] = 0;
		}
		break;
	}
	if (pool_top) {
		pfn = pool[--pool_top];
		*stamp = pool_stamp[pool_top];
		*page1 = pool_page1[pool_top];
	}
	spin_unlock_irqrestore(&pool_lock, f);
	return pfn;
}

static void frame_put_stamped(uint64_t pfn, uint64_t stamp, uint32_t page1)
{
	uint64_t f = spin_lock_irqsave(&pool_lock);

	if (pool_top >= pool_total)
		panic("frame pool overflow (double free of pfn %lx)", pfn);
	pool_stamp[pool_top] = stamp;
	pool_page1[pool_top] = page1;
	pool[pool_top++] = (uint32_t)pfn;
	spin_unlock_irqrestore(&pool_lock, f);
}

static void frame_put(uint64_t pfn)
{
	frame_put_stamped(pfn, 0, 0);
}

/*
 * A frame freed with a stamp is handed out again: settle the stamp here,
 * timed (what the allocation pays: LUF's reviewers' question).  After it,
 * no CPU that runs the address space translates to the frame any more, so
 * the page it came from is no longer pending: a later read of that page
 * that does not fault is stale (check_read()).
 */
static void frame_settle(uint32_t cpu, uint64_t stamp, uint32_t page1)
{
	uint64_t t0 = rdtsc(), dt;
	int r = tlbpol_stamp_settle(g_eng, cpu, stamp);

	dt = rdtsc() - t0;
	if (r < 0)
		panic("CPU %u: tlbpol_stamp_settle = %d", cpu, r);
	counts[cpu].settles++;
	counts[cpu].settle_waits += r > 0;
	counts[cpu].settle_cyc += dt;
	{
		uint32_t b = 0;

		while (b < SETTLE_BUCKETS - 1 && (dt >> b))
			b++;
		__atomic_fetch_add(&settle_hist[b], 1, __ATOMIC_RELAXED);
	}
	page_done(page1);
}

/* A frame, waiting for deferred frees if the pool is dry: complete this
 * CPU's own pending flushes (which runs its deferred frees), then give the
 * other CPUs time to do the same. */
static uint64_t frame_alloc(uint32_t cpu)
{
	for (uint64_t tries = 0;; tries++) {
		uint64_t stamp;
		uint32_t page1;
		uint64_t pfn = frame_get(&stamp, &page1);

		if (pfn && stamp)
			frame_settle(cpu, stamp, page1);
		if (pfn)
			return pfn;
		tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
		if (tries > 100000000ULL)
			panic("CPU %u: frame pool exhausted (%u frames)", cpu, pool_total);
		cpu_pause();
	}
}

/* The deferred free: @arg = (page index + 1) << 32 | pfn (index 0: the
 * frame was never mapped).  Runs once the engine says every flush that was
 * pending when the frame was unmapped has completed. */
static void dfree_cb(void *arg)
{
	uint64_t a = (uint64_t)(uintptr_t)arg;
	uint32_t idx1 = (uint32_t)(a >> 32);

	page_done(idx1);
	frame_put(a & 0xffffffffULL);
}

static void free_later(uint32_t cpu, uint64_t pfn, int idx)
{
	uint64_t arg = ((uint64_t)(idx + 1) << 32) | pfn;

	if (tlbpol_defer_free(g_eng, cpu, dfree_cb, (void *)(uintptr_t)arg))
		panic("tlbpol_defer_free failed");
}

/* For page tables other than the test region's (wl_tags.c): a frame, and
 * one given back once every flush pending on this CPU has completed. */
uint64_t mm_frame_alloc(uint32_t cpu)
{
	return frame_alloc(cpu);
}

void mm_frame_free_later(uint32_t cpu, uint64_t pfn)
{
	free_later(cpu, pfn, -1);
}

/* ------------------------------------------------------------------------ */
/* PTEs and events                                                          */
/* ------------------------------------------------------------------------ */

/* Hardware PTE -> the engine's portable bits.  EFER.NXE is off, so every
 * present page is executable. */
uint32_t pte_to_tlbpol(uint64_t pte)
{
	uint32_t t = 0;

	if (!(pte & PTE_P))
		return 0;
	t |= TLBPOL_PTE_PRESENT | TLBPOL_PTE_EXEC;
	if (pte & PTE_W)
		t |= TLBPOL_PTE_WRITE;
	if (pte & PTE_U)
		t |= TLBPOL_PTE_USER;
	if (pte & PTE_A)
		t |= TLBPOL_PTE_ACCESSED;
	if (pte & PTE_D)
		t |= TLBPOL_PTE_DIRTY;
	if (pte & PTE_G)
		t |= TLBPOL_PTE_GLOBAL;
	return t;
}

static void submit(uint32_t cpu, uint32_t kind, uint32_t flags, uint32_t idx, uint64_t n,
		   uint32_t old_pte, uint32_t new_pte)
{
	struct tlbpol_event ev;
	int err;

	ev.size = sizeof(ev);
	ev.kind = kind;
	ev.flags = flags;
	ev.page_shift = 12;
	ev.va = TVA(idx);
	ev.nr_pages = n;
	ev.old_pte = old_pte;
	ev.new_pte = new_pte;
	err = tlbpol_submit(g_eng, g_as, cpu, &ev, 0);
	if (err)
		panic("CPU %u: tlbpol_submit(kind %u, va %lx) = %d", cpu, kind, ev.va, err);
}

int mm_unmap(uint32_t cpu, uint32_t idx, uint32_t kind, uint32_t flags)
{
	struct vpage *vp = &vpages[idx];
	uint64_t old;

	spin_lock(&vp->lock);
	/* Atomic get-and-clear: the A/D bits the hardware may still set up to
	 * this instant are in @old (tlbpol.h, "old_pte must be what the atomic
	 * get-and-clear returned"). */
	old = __atomic_exchange_n(&test_pt[idx], 0ULL, __ATOMIC_SEQ_CST);
	if (!(old & PTE_P)) {
		spin_unlock(&vp->lock);
		return 0;
	}
	__atomic_fetch_add(&vp->pending, 1u, __ATOMIC_RELAXED);
	submit(cpu, kind, flags, idx, 1, pte_to_tlbpol(old), 0);
	spin_unlock(&vp->lock);
	/* Registered after the submit, so it waits for this page's flush too. */
	free_later(cpu, PTE_PFN(old), (int)idx);
	return 1;
}

uint64_t settle_hist[SETTLE_BUCKETS];

void mm_settle_pool(uint32_t cpu)
{
	uint64_t f = spin_lock_irqsave(&pool_lock);

	for (uint32_t i = 0; i < pool_top; i++) {
		if (!pool_stamp[i])
			continue;
		if (tlbpol_stamp_pending(g_eng, pool_stamp[i]))
			panic("CPU %u: a stamp is still pending after every flush completed", cpu);
		slot_settled(i);
	}
	spin_unlock_irqrestore(&pool_lock, f);
}

/* Frames a CPU's stamped unmaps cleared, until its mm_stamp(). */
#define STASH 64
static struct {
	uint32_t n;
	uint32_t pfn[STASH], page[STASH];
} stash[UK_MAX_CPUS];

int mm_unmap_stamped(uint32_t cpu, uint32_t idx, uint32_t kind)
{
	struct vpage *vp = &vpages[idx];
	uint64_t old;

	if (stash[cpu].n == STASH)
		mm_stamp(cpu);
	spin_lock(&vp->lock);
	if (!(__atomic_load_n(&test_pt[idx], __ATOMIC_RELAXED) & PTE_P)) {
		spin_unlock(&vp->lock);
		return 0;
	}
	/* Pending before the PTE is cleared: a reader that finds the PTE
	 * clear and the page not pending knows the unmap is complete
	 * (check_read_racing()). */
	__atomic_fetch_add(&vp->pending, 1u, __ATOMIC_SEQ_CST);
	old = __atomic_exchange_n(&test_pt[idx], 0ULL, __ATOMIC_SEQ_CST);
	/* A private unmap, or a reclaim (whose contents live on elsewhere). */
	submit(cpu, kind,
	       kind == TLBPOL_EV_UNMAP ? TLBPOL_EVF_PRIVATE | TLBPOL_EVF_STAMP : TLBPOL_EVF_STAMP,
	       idx, 1, pte_to_tlbpol(old), 0);
	spin_unlock(&vp->lock);
	stash[cpu].pfn[stash[cpu].n] = (uint32_t)PTE_PFN(old);
	stash[cpu].page[stash[cpu].n++] = idx;
	return 1;
}

/* tlb_finish_mmu(): with the stamp 0 (nothing left in flight: the rule is
 * off, or the flush is done) the pages are complete now. */
void mm_stamp(uint32_t cpu)
{
	uint64_t stamp = 0;

	/* Nothing stamped on this CPU (no page was mapped): tlbpol_stamp()
	 * would say so (-ENOENT); a flush completes the rest. */
	if (!stash[cpu].n) {
		if (tlbpol_flush(g_eng, cpu, TLBPOL_BY_FREE) < 0)
			panic("CPU %u: tlbpol_flush failed", cpu);
		return;
	}
	if (tlbpol_stamp(g_eng, cpu, &stamp) < 0)
		panic("CPU %u: tlbpol_stamp failed", cpu);
	for (uint32_t i = 0; i < stash[cpu].n; i++) {
		uint32_t idx = stash[cpu].page[i];

		if (!stamp)
			__atomic_fetch_sub(&vpages[idx].pending, 1u, __ATOMIC_RELEASE);
		else
			counts[cpu].stamped++;
		frame_put_stamped(stash[cpu].pfn[i], stamp, stamp ? idx + 1 : 0);
	}
	stash[cpu].n = 0;
}

void mm_map_global(uint32_t cpu, uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < first + n; i++) {
		struct vpage *vp = &vpages[i];
		uint64_t pfn = frame_alloc(cpu);

		spin_lock(&vp->lock);
		if (__atomic_load_n(&test_pt[i], __ATOMIC_RELAXED) & PTE_P)
			panic("mm_map_global: page %u is mapped", i);
		/* Submit, then store (an install, see mm_page_fault()). */
		submit(cpu, TLBPOL_EV_FAULT, 0, i, 1, 0,
		       TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_EXEC | TLBPOL_PTE_GLOBAL);
		__atomic_store_n(&test_pt[i], (pfn << 12) | PTE_P | PTE_W | PTE_G, __ATOMIC_SEQ_CST);
		spin_unlock(&vp->lock);
	}
}

void mm_protect(uint32_t cpu, uint32_t first, uint32_t n, int writable)
{
	uint32_t old_bits = 0, new_bits = 0;

	/* Locks in address order: one protector at a time can never deadlock
	 * with another. */
	for (uint32_t i = first; i < first + n; i++)
		spin_lock(&vpages[i].lock);
	for (uint32_t i = first; i < first + n; i++) {
		uint64_t old = __atomic_load_n(&test_pt[i], __ATOMIC_RELAXED), nw;

		if (!(old & PTE_P))
			panic("mm_protect: page %u not present", i);
		/* cmpxchg: the hardware sets A/D in this PTE concurrently. */
		do
			nw = writable ? (old | PTE_W) : (old & ~PTE_W);
		while (!__atomic_compare_exchange_n(&test_pt[i], &old, nw, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_RELAXED));
		old_bits |= pte_to_tlbpol(old);
		new_bits |= pte_to_tlbpol(nw);
	}
	/* One event for the range, its bits the union over the pages (a
	 * stricter old PTE only makes the decision more conservative). */
	submit(cpu, TLBPOL_EV_PROTECT, 0, first, n, old_bits, new_bits);
	for (uint32_t i = first + n; i-- > first;)
		spin_unlock(&vpages[i].lock);
}

/* ------------------------------------------------------------------------ */
/* Page faults                                                              */
/* ------------------------------------------------------------------------ */

/*
 * Resolve a fault in the test region.  Returns 0 if it is not ours (the
 * caller panics).
 *
 * Every test page is logically writable, demand-allocated:
 *  - PTE not present: drop the lock, get and prepare a frame (the "I/O" a
 *    real fault waits for without holding the PTE lock), retake the lock and
 *    retry.  If another CPU installed the page meanwhile, this is a retried
 *    fault (EVF_TRIED) that finds its PTE installed: the case of Linux
 *    b7333b58f358 "mm/memory.c: skip spurious TLB flush for retried page
 *    fault".
 *  - PTE present and allowing the access: a spurious fault -- the PTE was
 *    installed (or upgraded) between this CPU's walk and its taking the
 *    lock, the case of Linux 61c77326d1df "x86, mm: Avoid unnecessary TLB
 *    flush"; on real hardware also a stale, stricter TLB entry (the
 *    fault itself removed it, SDM 4.10.4.1).
 *  - PTE present, read-only, write access: make it writable (an upgrade).
 */
int mm_page_fault(struct trap_frame *f, uint64_t cr2)
{
	uint32_t cpu, idx, tries = 0, write;
	uint64_t pfn_new = 0;
	struct vpage *vp;

	/* A probe of the stale-TLB check (here or in wl_tags.c's spaces):
	 * report "no translation" and resume after the probing instruction. */
	if (f->rip == (uint64_t)(uintptr_t)probe_read_insn) {
		f->rax = PROBE_FAULT;
		f->rip = (uint64_t)(uintptr_t)probe_read_done;
		return 1;
	}
	if (f->rip == (uint64_t)(uintptr_t)probe_write_insn) {
		f->rax = PROBE_FAULT;
		f->rip = (uint64_t)(uintptr_t)probe_write_done;
		return 1;
	}
	if (cr2 < TBASE || cr2 >= TBASE + (uint64_t)NR_TPAGES * 4096)
		return 0;
	if (!g_eng)
		return 0;
	cpu = this_cpu();
	idx = (uint32_t)((cr2 - TBASE) >> 12);
	write = (f->error & 2) != 0; /* error code bit 1: W/R */
	vp = &vpages[idx];
	/* Take shootdown interrupts while we wait for page locks (see top). */
	if (f->rflags & (1u << 9))
		irq_enable();

	for (;;) {
		uint64_t pte;

		spin_lock(&vp->lock);
		pte = __atomic_load_n(&test_pt[idx], __ATOMIC_RELAXED);
		if ((pte & PTE_P) && (!write || (pte & PTE_W))) {
			uint32_t t = pte_to_tlbpol(pte);

			submit(cpu, TLBPOL_EV_FAULT,
			       (write ? TLBPOL_EVF_WRITE : 0) | (tries ? TLBPOL_EVF_TRIED : 0), idx, 1,
			       t, t);
			spin_unlock(&vp->lock);
			if (tries)
				counts[cpu].retried++;
			else
				counts[cpu].spurious++;
			break;
		}
		if (pte & PTE_P) {
			uint64_t nw;

			do
				nw = pte | PTE_W;
			while (!__atomic_compare_exchange_n(&test_pt[idx], &pte, nw, 0, __ATOMIC_SEQ_CST,
							    __ATOMIC_RELAXED));
			submit(cpu, TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE | (tries ? TLBPOL_EVF_TRIED : 0),
			       idx, 1, pte_to_tlbpol(pte), pte_to_tlbpol(nw));
			spin_unlock(&vp->lock);
			break;
		}
		if (!pfn_new) {
			spin_unlock(&vp->lock);
			pfn_new = frame_alloc(cpu);
			/* "I/O": fill the frame (not its identity word). */
			((volatile uint64_t *)(uintptr_t)(pfn_new << 12))[SCRATCH_OFF(cpu) / 8] = cr2;
			tries = 1;
			continue;
		}
		/*
		 * Install: submitted before the PTE is stored (tlbpol.h): the
		 * submit completes any flush still pending over this address
		 * (an unmap of its old frame, here or on another CPU), so no CPU
		 * can still read the old frame once another writes the new one.
		 * A/D left clear: the hardware sets them (the engine relies on
		 * it: x86 never caches what the PTE did not allow).
		 */
		submit(cpu, TLBPOL_EV_FAULT, write ? TLBPOL_EVF_WRITE : 0, idx, 1, 0,
		       TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_EXEC);
		__atomic_store_n(&test_pt[idx], (pfn_new << 12) | PTE_P | PTE_W, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&vp->installs, 1u, __ATOMIC_SEQ_CST);
		pfn_new = 0;
		spin_unlock(&vp->lock);
		break;
	}
	/* A frame prepared for a page someone else installed: never mapped,
	 * but it goes back the same way as every other frame. */
	if (pfn_new)
		free_later(cpu, pfn_new, -1);
	counts[cpu].faults++;
	irq_disable(); /* iretq restores the interrupted RFLAGS.IF */
	return 1;
}
