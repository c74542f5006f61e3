/* SPDX-License-Identifier: MIT */
/*
 * wl_unmap.c - the unmap workloads: spurious (racing write faults on one
 * page, then an unmap), tlb_flush2, flush2_lazy and flush2_stamp (a CPU
 * touches its page or ring and unmaps it, in a loop).  work.c describes
 * each and runs them; they call harness.c, mm.c and the core.
 */
#include "work.h"

void wl_spurious(uint32_t cpu, int m)
{
	for (uint32_t r = 0; r < p_rounds; r++) {
		seg_begin(cpu);
		TIMED(cpu, touch_write(cpu, IDX_SEED, r)); /* all CPUs, one page */
		check_touched(cpu, WL_SEED000, m, IDX_SEED);
		barrier(cpu);
		if (cpu == r % nr_cpus) {
			/* A shared (file) page: dirty, so due before writeback. */
			TIMED(cpu, mm_unmap(cpu, IDX_SEED, TLBPOL_EV_UNMAP, 0);
			      tlbpol_flush(g_eng, cpu, TLBPOL_BY_FREE));
		}
		seg_end(cpu, WL_SEED000, m, nr_cpus);
		check_read(cpu, WL_SEED000, m, IDX_SEED);
	}
	teardown(cpu, WL_SEED000, m, IDX_SEED, 1);
}

/* Wait, ticking, until pages [first, first + n) have no deferred free
 * outstanding; force completion only if the others take too long. */
static void wait_clear(uint32_t cpu, uint32_t first, uint32_t n)
{
	uint64_t t0 = 0;

	for (;;) {
		uint32_t busy = 0;

		for (uint32_t i = first; i < first + n; i++)
			busy |= __atomic_load_n(&vpages[i].pending, __ATOMIC_ACQUIRE);
		if (!busy)
			return;
		tlbpol_tick(g_eng, cpu);
		if (!t0)
			t0 = rdtsc();
		else if (rdtsc() - t0 > 500ULL * 1000 * 1000) {
			tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
			t0 = 0;
		}
		idle_wait();
	}
}

static void flush2(uint32_t cpu, int m, int lazy)
{
	int wl = lazy ? WL_FLUSH2_LAZY : WL_FLUSH2;
	uint32_t first = lazy ? IDX_F2L + cpu * p_ring : IDX_F2 + cpu;
	uint32_t ring = lazy ? p_ring : 1;
	/* tlb_flush2 is madvise(MADV_DONTNEED): the address stays mapped and
	 * the flush is complete when it returns.  flush2_lazy is an
	 * mmap/munmap ring whose allocator holds addresses back: LAZY_OK. */
	uint32_t flags = TLBPOL_EVF_PRIVATE |
			 (lazy ? TLBPOL_EVF_LAZY_OK : TLBPOL_EVF_STAYS_MAPPED);

	for (uint32_t r = 0; r < p_rounds; r++) {
		uint32_t s = 0;

		seg_begin(cpu);
		for (uint32_t it = 0; it < p_iters; it++) {
			uint32_t idx = first + s;
			uint64_t t = rdtsc();

			/* LATR: an address comes back only after its deferred
			 * free ran.  The whole ring is cleared before wrapping
			 * around: the engine tracks what a CPU has pending as
			 * one span per address space, and an install inside it
			 * completes the span at once (with interrupts). */
			if (lazy)
				wait_clear(cpu, s ? idx : first, s ? 1 : ring);
			touch_write(cpu, idx, it);
			check_touched(cpu, wl, m, idx);
			mm_unmap(cpu, idx, TLBPOL_EV_UNMAP, flags);
			tlbpol_flush(g_eng, cpu, TLBPOL_BY_FREE); /* madvise returns */
			if ((it + 1) % p_tick == 0)
				tlbpol_tick(g_eng, cpu);
			counts[cpu].op_cyc += rdtsc() - t;
			/* munmap has returned: can this CPU still read the page?
			 * Allowed while its lazy flush is pending (the engine
			 * defers the initiator's own flush to its tick too), an
			 * error otherwise (check_read()).  Not timed. */
			if (probe_read((volatile uint64_t *)(uintptr_t)TVA(idx)) != PROBE_FAULT) {
				if (__atomic_load_n(&vpages[idx].pending, __ATOMIC_ACQUIRE))
					counts[cpu].self_visible++;
				else
					check_read(cpu, wl, m, idx);
			}
			s = (s + 1) % ring;
		}
		seg_end(cpu, wl, m, (uint64_t)nr_cpus * p_iters);
		for (uint32_t c = 0; c < nr_cpus; c++)
			check_range(cpu, wl, m, lazy ? IDX_F2L + c * p_ring : IDX_F2 + c, ring);
	}
	barrier(cpu);
}

void wl_flush2(uint32_t cpu, int m)
{
	flush2(cpu, m, 0);
}

void wl_flush2_lazy(uint32_t cpu, int m)
{
	flush2(cpu, m, 1);
}

/*
 * flush2_stamp: the touch+unmap ring with flush stamps.  munmap() returns
 * after tlbpol_stamp(), with no interrupt under default; the frame is back
 * in the pool at once and the next fault takes it (stamplook=0: the last
 * freed, always), settling its stamp (frame_alloc(): the cycles an
 * allocation pays).  With 2 CPUs or more the last one only reads: it
 * probes every other CPU's ring in turn, so their translations sit in its
 * TLB when they unmap, and it makes no engine call but a tick now and
 * then and the interrupts it takes.  A read that does not fault is allowed
 * while the page is pending (its frame not settled yet) and stale once it
 * is: a settle that returned before the reader flushed shows here (every
 * engine call of a CPU serves its inbox, so a CPU that unmaps too would
 * flush before it read again).
 */
static _Atomic uint32_t stamp_writers_done;

/*
 * check_read() for a page that others unmap and map again at any moment.
 * What is read before the probe decides: the install count (a PTE stored
 * during the probe makes it prove nothing: read again after), the PTE, and
 * then whether the page is pending (an unmap counts as pending before it
 * clears the PTE, and stops when it is complete: mm_unmap_stamped(),
 * mm_stamp(), frame_settle()).  So a clear PTE with nothing pending means
 * an unmap that was complete before the probe began: the probe must fault.
 * A present PTE: the probe must reach its frame (an unmap during the probe
 * reaches the same frame or faults; an install completes what is pending
 * over its address first).
 */
static void check_read_racing(uint32_t cpu, int m, uint32_t idx)
{
	uint32_t g0 = __atomic_load_n(&vpages[idx].installs, __ATOMIC_SEQ_CST), g1;
	uint64_t pte = __atomic_load_n(&test_pt[idx], __ATOMIC_SEQ_CST);
	uint32_t pending = __atomic_load_n(&vpages[idx].pending, __ATOMIC_SEQ_CST);
	uint64_t got = probe_read((volatile uint64_t *)(uintptr_t)TVA(idx));

	g1 = __atomic_load_n(&vpages[idx].installs, __ATOMIC_SEQ_CST);
	if (g0 != g1 || got == PROBE_FAULT)
		return;
	if (pte & PTE_P) {
		if (got != idw(PTE_PFN(pte)))
			stale(cpu, WL_FLUSH2_STAMP, m, idx, "read", got, pte);
	} else if (!pending) {
		stale(cpu, WL_FLUSH2_STAMP, m, idx, "read without a fault", got, pte);
	}
}

void wl_flush2_stamp(uint32_t cpu, int m)
{
	uint32_t writers = nr_cpus > 1 ? nr_cpus - 1 : 1;
	int reader = nr_cpus > 1 && cpu == nr_cpus - 1;
	uint32_t first = IDX_F2L + cpu * p_ring;

	if (cpu == 0)
		for (int b = 0; b < SETTLE_BUCKETS; b++)
			__atomic_store_n(&settle_hist[b], 0, __ATOMIC_RELAXED);
	barrier(cpu);
	for (uint32_t r = 0; r < p_rounds; r++) {
		uint32_t s = 0;

		if (cpu == 0)
			__atomic_store_n(&stamp_writers_done, 0, __ATOMIC_RELEASE);
		seg_begin(cpu);
		if (reader) {
			uint64_t probes = 0;

			while (__atomic_load_n(&stamp_writers_done, __ATOMIC_ACQUIRE) < writers) {
				uint32_t idx = IDX_F2L + (uint32_t)(probes % ((uint64_t)writers * p_ring));

				check_read_racing(cpu, m, idx);
				if (++probes % (64ULL * p_tick) == 0)
					tlbpol_tick(g_eng, cpu);
			}
		} else {
			for (uint32_t it = 0; it < p_iters; it++) {
				uint32_t idx = first + s;
				uint64_t t = rdtsc();

				touch_write(cpu, idx, it);
				check_touched(cpu, WL_FLUSH2_STAMP, m, idx);
				mm_unmap_stamped(cpu, idx, TLBPOL_EV_UNMAP);
				mm_stamp(cpu); /* munmap returns */
				if ((it + 1) % p_tick == 0)
					tlbpol_tick(g_eng, cpu);
				counts[cpu].op_cyc += rdtsc() - t;
				s = (s + 1) % p_ring;
			}
			__atomic_fetch_add(&stamp_writers_done, 1, __ATOMIC_ACQ_REL);
		}
		seg_end(cpu, WL_FLUSH2_STAMP, m, (uint64_t)writers * p_iters);
		for (uint32_t c = 0; c < writers; c++)
			check_range(cpu, WL_FLUSH2_STAMP, m, IDX_F2L + c * p_ring, p_ring);
	}
	/* Every flush is complete (seg_end): the pool's stamps are settled. */
	barrier(cpu);
	if (cpu == 0) {
		mm_settle_pool(cpu);
		for (int b = 0; b < SETTLE_BUCKETS; b++)
			stamp_hist[m][b] = __atomic_load_n(&settle_hist[b], __ATOMIC_RELAXED);
	}
	barrier(cpu);
}
