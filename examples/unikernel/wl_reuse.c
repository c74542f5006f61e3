/* SPDX-License-Identifier: MIT */
/*
 * wl_reuse.c - the workloads whose frames are freed and used again:
 * reclaim (kswapd unmaps pages every CPU caches, then flushes before the
 * frames go), reclaim_stamp (the same with flush stamps: the frames go back
 * at once and the next faults settle), and stamp_reuse (the check that a
 * settle waits for every target).  work.c runs them; they call harness.c,
 * mm.c and the core.
 */
#include "work.h"

/* reclaim, or with @stamped its clean pages stamped (reclaim_stamp): the
 * frames go back at once, the next round's faults take them and settle. */
static void reclaim(uint32_t cpu, int m, int stamped)
{
	int wl = stamped ? WL_RECLAIM_STAMP : WL_RECLAIM;

	for (uint32_t r = 0; r < p_rounds; r++) {
		/* Populate, not measured: every CPU reads every page (racing
		 * faults install them), so every TLB holds all of them. */
		barrier(cpu);
		for (uint32_t k = 0; k < p_reclaim; k++) {
			uint32_t idx = IDX_RC + (k + cpu * p_reclaim / nr_cpus) % p_reclaim;

			touch_read(idx);
			check_touched(cpu, wl, m, idx);
		}
		seg_begin(cpu);
		if (cpu == r % nr_cpus) {
			uint64_t t = rdtsc();

			for (uint32_t k = 0; k < p_reclaim; k++) {
				if (stamped)
					mm_unmap_stamped(cpu, IDX_RC + k, TLBPOL_EV_RECLAIM);
				else
					mm_unmap(cpu, IDX_RC + k, TLBPOL_EV_RECLAIM, 0);
			}
			if (stamped)
				mm_stamp(cpu); /* try_to_unmap_flush(): frames back at once */
			else
				tlbpol_flush(g_eng, cpu, TLBPOL_BY_FREE); /* before the frames go */
			counts[cpu].op_cyc += rdtsc() - t;
		}
		seg_end(cpu, wl, m, p_reclaim);
		check_range(cpu, wl, m, IDX_RC, p_reclaim);
	}
	barrier(cpu);
	if (stamped && cpu == 0)
		mm_settle_pool(cpu);
	barrier(cpu);
}

void wl_reclaim(uint32_t cpu, int m)
{
	reclaim(cpu, m, 0);
}

void wl_reclaim_stamp(uint32_t cpu, int m)
{
	reclaim(cpu, m, 1);
}

/*
 * stamp_reuse: a stamped frame mapped again at another address, the old
 * one still read by a CPU that has not flushed.  flush2_stamp and
 * reclaim_stamp install a reused frame where (or near where) it was
 * unmapped, inside the writer's pending span, so the install completes
 * the flush everywhere before the PTE is stored and a settle that returned
 * early goes unseen.  Here the settle is all there is:
 *
 *  1. CPU 0 (the writer) maps the old pages [IDX_SR_OLD, + reuse=) and
 *     writes in each frame, at SR_TAG_OFF, a tag naming the page and the
 *     round (sr_tag()); every CPU reads every tag (so every TLB holds the
 *     old translations, and every CPU runs the address space: each is a
 *     target of the flush).
 *  2. The last CPU (the holder) disables interrupts and reads the old
 *     addresses' tags in a loop; it makes no engine call, so it cannot
 *     flush until its loop ends: when the writer says it is done, or after
 *     reusewin= million TSC cycles.  The CPUs in between read them too,
 *     with interrupts on (they flush when interrupted).
 *  3. The writer unmaps the old pages with TLBPOL_EVF_STAMP, stamps
 *     (munmap returns), and faults in the new pages [IDX_SR_NEW, + reuse=),
 *     above the old ones: each fault takes the last freed frame, one of
 *     the old pages', and settles its stamp (frame_alloc()), then the
 *     writer writes the new page's tag in it.
 *
 * A settle that waits for every target waits for the holder's window to
 * end, so the holder never sees a new tag: each read faults (after its
 * flush) or returns the old page's tag.  A read through an old address
 * that returns another tag went through a translation to a frame already
 * handed out again: a settle returned while a CPU could still translate to
 * the frame (mutant S1-settle-skips-one, S2-stamp-never-pending).  Under
 * QEMU's TCG the holder's software TLB keeps the old entries until it
 * flushes, so the read really happens.  Under masks without flush stamps
 * (naive, linux) the stamp's flush is synchronous and waits for the
 * holder's window in tlbpol_stamp(); the same check holds.
 *
 * Whether the writer finished while the holder still had interrupts off
 * is counted (sr_early): 0 expected under TCG with the correct engine.
 * Under KVM a preempted holder may legitimately be left to the
 * hypervisor's flush (RULE_VCPU_DEFER), so only the tags decide.
 */
#define SR_TAG_OFF 2048 /* away from the identity word and the scratch words */
static uint32_t sr_phase; /* 1: the holder's window is open; 2: the writer is done */
static uint32_t sr_gen;
uint64_t sr_early[UK_MAX_MASKS], sr_windows[UK_MAX_MASKS], sr_caught[UK_MAX_MASKS];
static uint32_t sr_caught_round; /* a stale read seen this round (any CPU) */

static inline uint64_t sr_tag(uint32_t idx, uint32_t gen)
{
	return 0x7a90000000000000ULL | ((uint64_t)(gen & 0xffffffu) << 16) | idx;
}

/* Read old page @idx's tag: a fault or its own tag, nothing else. */
static void sr_check(uint32_t cpu, int m, uint32_t idx, uint32_t gen)
{
	uint64_t v = probe_read((volatile uint64_t *)(uintptr_t)(TVA(idx) + SR_TAG_OFF));

	if (v == PROBE_FAULT || v == sr_tag(idx, gen))
		return;
	__atomic_store_n(&sr_caught_round, 1u, __ATOMIC_RELAXED);
	stale(cpu, WL_STAMP_REUSE, m, idx,
	      (v >> 48) == 0x7a90 ? "read through the old address, a frame handed out again: tag "
				    "(7a90, round, page, in hex)"
				  : "read through the old address",
	      v, __atomic_load_n(&test_pt[idx], __ATOMIC_RELAXED));
}

void wl_stamp_reuse(uint32_t cpu, int m)
{
	uint32_t holder = nr_cpus - 1;

	for (uint32_t r = 0; r < p_rounds; r++) {
		uint32_t gen;

		barrier(cpu);
		if (cpu == 0) {
			gen = ++sr_gen;
			__atomic_store_n(&sr_phase, 0u, __ATOMIC_RELEASE);
			__atomic_store_n(&sr_caught_round, 0u, __ATOMIC_RELAXED);
			for (uint32_t i = 0; i < p_reuse; i++) {
				uint32_t idx = IDX_SR_OLD + i;

				touch_write(cpu, idx, gen);
				((volatile uint64_t *)(uintptr_t)(TVA(idx) + SR_TAG_OFF))[0] =
					sr_tag(idx, gen);
			}
		}
		barrier(cpu);
		gen = __atomic_load_n(&sr_gen, __ATOMIC_ACQUIRE);
		for (uint32_t i = 0; i < p_reuse; i++) {
			uint32_t idx = IDX_SR_OLD + i;
			uint64_t v = probe_read((volatile uint64_t *)(uintptr_t)(TVA(idx) + SR_TAG_OFF));

			check_touched(cpu, WL_STAMP_REUSE, m, idx);
			if (v != sr_tag(idx, gen))
				anomaly(cpu, WL_STAMP_REUSE, m, idx, "tag not written", v);
		}
		seg_begin(cpu);
		if (nr_cpus > 1 && cpu == holder) {
			/* irq_save(): interrupts off from here to irq_restore(). */
			uint64_t f = irq_save(), t0, lim = (uint64_t)p_reusewin * 1000000ULL;
			int early = 0;

			__atomic_store_n(&sr_phase, 1u, __ATOMIC_RELEASE);
			t0 = rdtsc();
			for (;;) {
				/* One more pass after the writer is done. */
				int done = __atomic_load_n(&sr_phase, __ATOMIC_ACQUIRE) == 2;

				for (uint32_t i = 0; i < p_reuse; i++)
					sr_check(cpu, m, IDX_SR_OLD + i, gen);
				if (done) {
					early = 1;
					break;
				}
				if (rdtsc() - t0 > lim)
					break;
			}
			irq_restore(f);
			sr_windows[m]++;
			sr_early[m] += (uint64_t)early;
		} else if (cpu) {
			uint64_t n = 0;

			while (__atomic_load_n(&sr_phase, __ATOMIC_ACQUIRE) != 2) {
				for (uint32_t i = 0; i < p_reuse; i++)
					sr_check(cpu, m, IDX_SR_OLD + i, gen);
				if (++n % (16ULL * p_tick) == 0)
					tlbpol_tick(g_eng, cpu);
			}
			for (uint32_t i = 0; i < p_reuse; i++)
				sr_check(cpu, m, IDX_SR_OLD + i, gen);
		} else {
			uint64_t t;

			if (nr_cpus > 1)
				while (__atomic_load_n(&sr_phase, __ATOMIC_ACQUIRE) != 1)
					cpu_pause();
			/* Timed: the unmaps, the stamp and the faults that
			 * settle, which wait for the reader's window under
			 * every mask (by design: cyc/op is not a cost here). */
			t = rdtsc();
			for (uint32_t i = 0; i < p_reuse; i++)
				mm_unmap_stamped(cpu, IDX_SR_OLD + i, TLBPOL_EV_UNMAP);
			mm_stamp(cpu); /* munmap returns; the frames are in the pool */
			for (uint32_t i = 0; i < p_reuse; i++) {
				uint32_t idx = IDX_SR_NEW + i;

				touch_write(cpu, idx, gen); /* the fault settles */
				check_touched(cpu, WL_STAMP_REUSE, m, idx);
				((volatile uint64_t *)(uintptr_t)(TVA(idx) + SR_TAG_OFF))[0] =
					sr_tag(idx, gen);
			}
			counts[cpu].op_cyc += rdtsc() - t;
			__atomic_store_n(&sr_phase, 2u, __ATOMIC_RELEASE);
		}
		seg_end(cpu, WL_STAMP_REUSE, m, p_reuse);
		if (cpu == 0)
			sr_caught[m] += __atomic_load_n(&sr_caught_round, __ATOMIC_RELAXED);
		/* Complete: the old pages fault everywhere, the new ones read
		 * their frames. */
		check_range(cpu, WL_STAMP_REUSE, m, IDX_SR_OLD, p_reuse);
		check_range(cpu, WL_STAMP_REUSE, m, IDX_SR_NEW, p_reuse);
		teardown(cpu, WL_STAMP_REUSE, m, IDX_SR_NEW, p_reuse);
	}
	barrier(cpu);
	if (cpu == 0)
		mm_settle_pool(cpu);
	barrier(cpu);
}
