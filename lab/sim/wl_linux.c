/* SPDX-License-Identifier: MIT */
/*
 * wl_linux.c - the scenarios of five Linux patches, each run before and
 * after (main.c: the policy "before" is linux without the patch's rule):
 * spurious, munmap, retry, reclaim, swapout.  Each comment names its
 * patch; each measures what that patch measured.  Listed in workloads.c;
 * calls its helpers (workloads.h), then machine.c and sched.c.
 */
#include "workloads.h"

#include <stdlib.h>
#include <string.h>

/* The running scenario's rounds, install times and whether its kernel
 * thread (CPU 0) is done: one scenario runs at a time. */
static struct {
	uint64_t rounds, done;
	double *installed_at;
	uint32_t boss_done;
	uint64_t region;
	uint64_t cursor;
} G;

static void reset_state(void)
{
	free(G.installed_at);
	memset(&G, 0, sizeof(G));
}

/* A scenario whose events CPU 0 makes (the unmapping loop, kswapd), in one
 * address space run by CPUs [@first, ncpus) (setup_one_as()). */
static int boss_setup(struct sim *s, uint32_t first)
{
	reset_state();
	if (setup_one_as(s, first) < 0)
		return -1;
	W(s, 0)->n = s->cfg.events;
	return 0;
}

/* spurious — Linux 61c77326d1df "x86, mm: Avoid unnecessary TLB flush":
 * every CPU writes the same fresh page each round; the first installs it,
 * the others take the fault concurrently and find it installed: a spurious
 * write fault each.                                                        */

static int spurious_setup(struct sim *s)
{
	reset_state();
	G.rounds = s->cfg.events;
	G.installed_at = calloc(G.rounds, sizeof(double));
	return setup_one_as(s, 0);
}

static int spurious_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);
	uint64_t vpn = 0x1000 + w->i;
	struct sim_page *p;

	if (w->i == G.rounds)
		return 0;
	p = sim_page(s, 0, vpn, 1);
	if (!(p->perms & SIM_P)) {
		sim_fault(s, cpu, 0, vpn, TLBPOL_EVF_WRITE, RWD);
		G.installed_at[w->i] = s->cpus[cpu].clock;
	} else if (s->cpus[cpu].clock < G.installed_at[w->i] + s->cfg.cost.fault_ns) {
		/* It faulted before the PTE was there and finds it now. */
		sim_fault(s, cpu, 0, vpn, TLBPOL_EVF_WRITE, RWD);
	}
	touch(s, cpu, 0, vpn, 1);
	sim_charge(s, cpu, 200); /* the test's loop: pick the address, write */
	w->i++;
	return 1;
}

/* munmap — Linux 611ae8e3f520 "x86/tlb: enable tlb flush range support
 * for x86": CPU 0 maps, touches and unmaps 8 pages in a loop; the others
 * read randomly over a 16 MiB working set (4096 pages, more than their TLB
 * holds), as Alex Shi's `mummap' micro-benchmark did.                      */

#define MUNMAP_WS 4096
#define MUNMAP_PAGES 8

static int munmap_setup(struct sim *s)
{
	if (boss_setup(s, 0) < 0)
		return -1;
	for (uint64_t v = 0; v < MUNMAP_WS; v++)
		sim_change(s, 0, 0, TLBPOL_EV_FAULT, 0, 0x10000 + v, 1, RO);
	return 0;
}

static int munmap_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);

	if (cpu == 0) {
		if (w->i == w->n) {
			G.boss_done = 1;
			return 0;
		}
		for (uint64_t k = 0; k < MUNMAP_PAGES; k++)
			touch(s, cpu, 0, 0x100000 + k, 1);
		unmap_range(s, cpu, 0, 0x100000, MUNMAP_PAGES, 0);
		w->i++;
		return 1;
	}
	if (G.boss_done)
		return 0;
	{
		double t = s->cpus[cpu].clock;

		for (int k = 0; k < 16; k++) {
			touch(s, cpu, 0, 0x10000 + sim_rand(&s->cpus[cpu]) % MUNMAP_WS, 0);
			sim_charge(s, cpu, s->cfg.cost.mem_access_ns); /* the read itself */
		}
		s->cnt.busy_ns += s->cpus[cpu].clock - t;
		s->cnt.busy_ops += 16;
	}
	return 1;
}

/* retry — Linux b7333b58f358 "mm/memory.c: skip spurious TLB flush for
 * retried page fault": page_fault3 on ARM64 under dirty throttling: each
 * write fault installs the PTE, the throttled fault is retried and finds
 * it.                                                                      */

#define RETRY_PAGES 64

static int retry_setup(struct sim *s)
{
	reset_state();
	if (setup_one_as(s, 0) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		W(s, c)->n = s->cfg.events / s->cfg.ncpus + 1;
	return 0;
}

static int retry_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);
	uint64_t base = 0x100000 + (uint64_t)cpu * 0x1000;
	uint64_t vpn = base + w->i % RETRY_PAGES;

	if (w->i == w->n)
		return 0;
	/* First try: the fault installs the file page, clean. */
	sim_fault(s, cpu, 0, vpn, TLBPOL_EVF_WRITE, RW);
	/* balance_dirty_pages() dropped the lock; the retry finds the PTE
	 * and marks it dirty (before b7333b58f358, an access-flag flush). */
	sim_fault(s, cpu, 0, vpn, TLBPOL_EVF_WRITE | TLBPOL_EVF_TRIED, RWD);
	touch(s, cpu, 0, vpn, 1);
	w->i++;
	if (w->i % RETRY_PAGES == 0)
		unmap_range(s, cpu, 0, base, RETRY_PAGES, 0);
	return 1;
}

/* reclaim — Mel Gorman's batched unmap flush, Linux 72b252aed506 "mm:
 * send one IPI per CPU to TLB flush all entries after unmapping pages" and
 * d950c9477d51 "mm: defer flush of writable TLB entries": kswapd (CPU 0)
 * reclaims cold pages of 4 processes, each run by a quarter of the CPUs,
 * 32 pages per shrink_folio_list() pass: flush before writeback for dirty
 * pages, before freeing for all.                                           */

#define RECLAIM_AS 4
#define RECLAIM_HOT 64
#define RECLAIM_CLUSTER 32

/* The i-th page reclaimed: clusters of 32 from one process's LRU, the
 * processes in turn. */
static uint64_t reclaim_vpn(uint64_t i)
{
	return 0x200000 + i / (RECLAIM_CLUSTER * RECLAIM_AS) * RECLAIM_CLUSTER + i % RECLAIM_CLUSTER;
}

static int reclaim_setup(struct sim *s)
{
	uint64_t cold = s->cfg.events / RECLAIM_AS + RECLAIM_CLUSTER;

	reset_state();
	setup_common(s);
	for (uint32_t a = 0; a < RECLAIM_AS; a++)
		if (sim_open_as(s) < 0)
			return -1;
	for (uint32_t c = 1; c < s->cfg.ncpus; c++) {
		W(s, c)->as = c % RECLAIM_AS;
		sim_switch(s, c, (int32_t)(c % RECLAIM_AS));
	}
	sim_switch(s, 0, -1);
	/* Cold pages, one in five dirty; installed before the run. */
	for (uint32_t a = 0; a < RECLAIM_AS; a++)
		populate(s, a, 0x200000, cold + RECLAIM_CLUSTER, 5);
	W(s, 0)->n = s->cfg.events;
	return 0;
}

static int reclaim_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);

	/*
	 * Stamp only when asked (--stamps), not by default: kswapd's frames
	 * already wait in its own deferred free, which the lazy-unmap rule
	 * completes at the CPUs' ticks, merged per batch (one flush per 32
	 * pages); stamped, the batch loses that merging and nothing here
	 * reuses a frame early enough for a stamp to pay (measured: 16022
	 * interrupts and 13.786 ms against 9827 and 11.271 at 64 CPUs).  The
	 * stamp's gain, memory back at once, is not what this scenario
	 * weighs.
	 */
	int stamp = s->cfg.stamps &&
		    !(s->cfg.stamps_mode < 0 && (s->cfg.rules & TLBPOL_RULE_LAZY_UNMAP));

	if (cpu == 0) {
		int dirty = 0;
		uint64_t first = w->i;

		if (w->i >= w->n) {
			G.boss_done = 1;
			return 0;
		}
		for (uint32_t k = 0; k < RECLAIM_CLUSTER; k++, w->i++) {
			uint32_t as = (uint32_t)(w->i / RECLAIM_CLUSTER % RECLAIM_AS);
			uint64_t vpn = reclaim_vpn(w->i);
			struct sim_page *p = sim_page(s, as, vpn, 1);

			sim_charge(s, cpu, 400); /* rmap walk, LRU isolation */
			dirty |= !!(p->perms & SIM_D);
			/* The frame is freed only through a deferred free and the
			 * address is not reused: LAZY_OK.  With --stamps it is
			 * freed at once, stamped. */
			sim_change(s, cpu, as, TLBPOL_EV_RECLAIM,
				   stamp ? TLBPOL_EVF_STAMP : TLBPOL_EVF_LAZY_OK, vpn, 1, 0);
		}
		if (dirty)
			sim_flush(s, cpu, TLBPOL_BY_WRITEBACK); /* try_to_unmap_flush_dirty() */
		if (stamp) {
			sim_unmap_done(s, cpu);
			return 1;
		}
		sim_flush(s, cpu, TLBPOL_BY_FREE);          /* try_to_unmap_flush() */
		sim_free_frames_later(s, cpu, (uint32_t)(first / RECLAIM_CLUSTER % RECLAIM_AS),
				      reclaim_vpn(first), RECLAIM_CLUSTER);
		return 1;
	}
	if (G.boss_done)
		return 0;
	/* A worker: some accesses, then a stretch of computation (long: the
	 * workers only keep the address spaces' footprints and TLBs busy, and
	 * 1024-CPU runs would otherwise spend their time here). */
	for (int k = 0; k < 4; k++)
		touch(s, cpu, w->as, 0x10000 + sim_rand(&s->cpus[cpu]) % RECLAIM_HOT, 1);
	sim_charge(s, cpu, 10 * WORKER_COMPUTE_NS);
	return 1;
}

/* swapout — Linux b13b1d2d8692 "x86/mm: In the PTE swapout page reclaim
 * case clear the accessed bit instead of flushing the TLB": a multithreaded
 * program under memory pressure; kswapd ages its pages (clearing accessed
 * bits) and reclaims those found old.                                      */

#define SWAP_WS 8192
#define SWAP_HOT 1024

static int swapout_setup(struct sim *s)
{
	if (boss_setup(s, 1) < 0)
		return -1;
	populate(s, 0, 0x10000, SWAP_WS, 1);
	return 0;
}

static int swapout_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);

	if (cpu == 0) {
		uint32_t reclaimed = 0;

		if (w->i >= w->n) {
			G.boss_done = 1;
			sim_flush(s, cpu, TLBPOL_BY_FREE);
			return 0;
		}
		for (uint32_t k = 0; k < 32; k++, w->i++) {
			uint64_t vpn = 0x10000 + w->i % SWAP_WS;
			struct sim_page *p = sim_page(s, 0, vpn, 1);

			sim_charge(s, cpu, 200); /* page_referenced() rmap walk */
			if (!(p->perms & SIM_P))
				continue;
			if ((p->perms & SIM_A) && vpn - 0x10000 < SWAP_HOT * 2) {
				/* ptep_clear_flush_young() */
				sim_change(s, cpu, 0, TLBPOL_EV_CLEAR_YOUNG, 0, vpn, 1,
					   p->perms & ~SIM_A);
			} else {
				sim_change(s, cpu, 0, TLBPOL_EV_RECLAIM, 0, vpn, 1, 0);
				reclaimed++;
				s->cnt.busy_ops++;
			}
		}
		if (reclaimed) {
			sim_flush(s, cpu, TLBPOL_BY_WRITEBACK);
			sim_charge(s, cpu, s->cfg.cost.swap_write_ns * reclaimed);
			sim_flush(s, cpu, TLBPOL_BY_FREE);
		}
		return 1;
	}
	if (G.boss_done)
		return 0;
	/* A skewed working set: 99% of the accesses on the hot eighth. */
	{
		uint64_t r = sim_rand(&s->cpus[cpu]);
		uint64_t v = (r % 100) ? (r >> 8) % SWAP_HOT : (r >> 8) % SWAP_WS;

		touch(s, cpu, 0, 0x10000 + v, 1);
		for (int k = 0; k < 3; k++)
			touch(s, cpu, 0, 0x10000 + (sim_rand(&s->cpus[cpu]) >> 8) % SWAP_HOT, 1);
		sim_charge(s, cpu, WORKER_COMPUTE_NS);
	}
	return 1;
}

static void swapout_finish(struct sim *s)
{
	/* swap-out throughput: what kswapd did, in its own time */
	s->cnt.busy_ns = s->cpus[0].clock;
}

const struct workload wl_spurious = {
	"spurious", "every CPU writes the same fresh page", "61c77326d1df", TLBPOL_ARCH_X86_64,
	U(SPURIOUS_NOFLUSH), 300, 0, 0, NULL,
	spurious_setup, spurious_step, NULL,
};
const struct workload wl_munmap = {
	"munmap", "CPU 0 unmaps 8 pages in a loop, the others read a 4096-page set", "611ae8e3f520",
	TLBPOL_ARCH_X86_64, U(RANGE_FLUSH), 1000, 0, 0, "ns per remote read",
	munmap_setup, munmap_step, NULL,
};
const struct workload wl_retry = {
	"retry", "page_fault3 on ARM64, throttled faults retried", "b7333b58f358", TLBPOL_ARCH_ARM64,
	U(RETRY_NOFLUSH), 8000, 1, 0, NULL,
	retry_setup, retry_step, NULL,
};
const struct workload wl_reclaim = {
	"reclaim", "kswapd reclaims cold pages of 4 processes", "72b252aed506", TLBPOL_ARCH_X86_64,
	U(BATCH), 16384, 0, 0, "interrupts per second",
	reclaim_setup, reclaim_step, NULL,
};
const struct workload wl_swapout = {
	"swapout", "kswapd ages and swaps out a threaded program", "b13b1d2d8692", TLBPOL_ARCH_X86_64,
	U(AGING_NOFLUSH), 12000, 0, 0, "ns per page swapped out",
	swapout_setup, swapout_step, swapout_finish,
};
