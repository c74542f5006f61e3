/* SPDX-License-Identifier: MIT */
/*
 * workloads.c - the scenarios.  Each drives the modelled CPUs through the
 * page-table changes of one of the seed patches' workloads (or of a known
 * benchmark) and measures what that patch measured.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define RW (SIM_P | SIM_W | SIM_U | SIM_A)
#define RWD (RW | SIM_D)
#define RO (SIM_P | SIM_U | SIM_A)

/* Workers that only keep a footprint and a TLB busy take steps of a few
 * accesses and this much computation: the simulator's own cost grows with
 * modelled time divided by it. */
#define WORKER_COMPUTE_NS 4000

/* Per-CPU state shared by the scenarios. */
struct wcpu {
	uint64_t i, n;   /* iterations done, to do */
	uint64_t vpn;    /* a cursor */
	uint32_t as;
	uint32_t phase;
	double t0;
};

static struct {
	uint64_t rounds, done;
	double *installed_at;
	uint32_t boss_done;
	uint64_t region;
	uint64_t cursor;
} G;

static struct wcpu *W(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (!c->w)
		c->w = calloc(1, sizeof(struct wcpu));
	return c->w;
}

static int setup_common(struct sim *s)
{
	free(G.installed_at);
	memset(&G, 0, sizeof(G));
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		W(s, c);
	return 0;
}

/* Touch @vpn, resolving a missing PTE by installing it (a minor fault). */
static void touch(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, int write)
{
	if (sim_access(s, cpu, as, vpn, write) == ACC_OK)
		return;
	sim_fault(s, cpu, as, vpn, write ? TLBPOL_EVF_WRITE : 0, write ? RWD : RW);
	if (sim_access(s, cpu, as, vpn, write) != ACC_OK) {
		fprintf(stderr, "tlbpol-sim: a resolved fault faulted again\n");
		exit(2);
	}
}

/* munmap/MADV_DONTNEED of [vpn, vpn+n): clear, flush before the syscall
 * returns (tlb_finish_mmu), free the frames behind the flush.  With
 * --stamps a private munmap is stamped instead (LAZY_OK, the caller's
 * promise, is not needed then) and its frames go back at once. */
static void unmap_range(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, uint64_t n,
			uint32_t flags)
{
	uint64_t i = 0;
	int stamped = s->cfg.stamps && (flags & TLBPOL_EVF_PRIVATE) &&
		      !(flags & TLBPOL_EVF_STAYS_MAPPED);

	if (stamped)
		flags = (flags & ~TLBPOL_EVF_LAZY_OK) | TLBPOL_EVF_STAMP;
	sim_charge(s, cpu, s->cfg.cost.syscall_ns);
	/* One event per run of pages with the same PTE bits. */
	while (i < n) {
		struct sim_page *p = sim_page(s, as, vpn + i, 1);
		uint8_t perms = p->perms;
		uint64_t j = i + 1;

		while (j < n && sim_page(s, as, vpn + j, 1)->perms == perms)
			j++;
		if (perms & SIM_P)
			sim_change(s, cpu, as, TLBPOL_EV_UNMAP, flags, vpn + i, j - i, 0);
		i = j;
	}
	if (stamped) {
		sim_unmap_done(s, cpu);
		return;
	}
	sim_flush(s, cpu, TLBPOL_BY_FREE);
	sim_free_frames_later(s, cpu, as, vpn, n);
}

/* ------------------------------------------------------------------------ */
/* spurious — seed 000: every CPU writes the same fresh page each round; the
 * first installs it, the others take the fault concurrently and find it
 * installed: a spurious write fault each.                                  */

static int spurious_setup(struct sim *s)
{
	setup_common(s);
	G.rounds = s->cfg.events;
	G.installed_at = calloc(G.rounds, sizeof(double));
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		sim_switch(s, c, 0);
	return 0;
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

/* ------------------------------------------------------------------------ */
/* munmap — seed 001: CPU 0 maps, touches and unmaps 8 pages in a loop; the
 * others read randomly over a 16 MiB working set (4096 pages, more than
 * their TLB holds), as Alex Shi's `mummap' micro-benchmark did.            */

#define MUNMAP_WS 4096
#define MUNMAP_PAGES 8

static int munmap_setup(struct sim *s)
{
	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		sim_switch(s, c, 0);
	for (uint64_t v = 0; v < MUNMAP_WS; v++)
		sim_change(s, 0, 0, TLBPOL_EV_FAULT, 0, 0x10000 + v, 1, RO);
	W(s, 0)->n = s->cfg.events;
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

/* ------------------------------------------------------------------------ */
/* retry — seed 002: page_fault3 on ARM64 under dirty throttling: each write
 * fault installs the PTE, the throttled fault is retried and finds it.     */

#define RETRY_PAGES 64

static int retry_setup(struct sim *s)
{
	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
		sim_switch(s, c, 0);
		W(s, c)->n = s->cfg.events / s->cfg.ncpus + 1;
	}
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
	 * and marks it dirty (seed 002: before, an access-flag flush). */
	sim_fault(s, cpu, 0, vpn, TLBPOL_EVF_WRITE | TLBPOL_EVF_TRIED, RWD);
	touch(s, cpu, 0, vpn, 1);
	w->i++;
	if (w->i % RETRY_PAGES == 0)
		unmap_range(s, cpu, 0, base, RETRY_PAGES, 0);
	return 1;
}

/* ------------------------------------------------------------------------ */
/* reclaim — seed 003: kswapd (CPU 0) reclaims cold pages of 4 processes,
 * each run by a quarter of the CPUs, 32 pages per shrink_folio_list() pass:
 * flush before writeback for dirty pages, before freeing for all.          */

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
	for (uint32_t a = 0; a < RECLAIM_AS; a++) {
		for (uint64_t v = 0; v < cold + RECLAIM_CLUSTER; v++) {
			struct sim_page *p = sim_page(s, a, 0x200000 + v, 1);

			p->perms = (v % 5 == 0) ? RWD : RW;
			p->frame = s->next_frame++;
		}
	}
	W(s, 0)->n = s->cfg.events;
	return 0;
}

static int reclaim_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);

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
				   s->cfg.stamps ? TLBPOL_EVF_STAMP : TLBPOL_EVF_LAZY_OK, vpn, 1, 0);
		}
		if (dirty)
			sim_flush(s, cpu, TLBPOL_BY_WRITEBACK); /* try_to_unmap_flush_dirty() */
		if (s->cfg.stamps) {
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

/* ------------------------------------------------------------------------ */
/* swapout — seed 004: a multithreaded program under memory pressure; kswapd
 * ages its pages (clearing accessed bits) and reclaims those found old.    */

#define SWAP_WS 8192
#define SWAP_HOT 1024

static int swapout_setup(struct sim *s)
{
	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 1; c < s->cfg.ncpus; c++)
		sim_switch(s, c, 0);
	sim_switch(s, 0, -1);
	for (uint64_t v = 0; v < SWAP_WS; v++) {
		struct sim_page *p = sim_page(s, 0, 0x10000 + v, 1);

		p->perms = RWD;
		p->frame = s->next_frame++;
	}
	W(s, 0)->n = s->cfg.events;
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

/* ------------------------------------------------------------------------ */
/* dontneed — will-it-scale tlb_flush2 (threads): each thread writes 16
 * pages and MADV_DONTNEEDs them, in a loop, all in one address space.
 * --threads T runs T threads (first on CPUs t % ncpus: fewer than CPUs
 * leaves CPUs idle, more share them), each doing the same number of
 * operations whatever T is; its figure is the time of one operation, so T
 * threads on T CPUs do T / that per second.  --block-us has each thread
 * block that long after each operation.                                  */

#define DN_PAGES 16 /* tlb_flush2's; --pages changes it */
#define DN_PAGES_MAX 256 /* each thread's buffer at tag * 256 pages */

static int dontneed_setup(struct sim *s)
{
	uint32_t threads = s->cfg.threads ? s->cfg.threads : s->cfg.ncpus;

	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		sim_switch(s, c, 0);
	/* One thread per CPU unless --threads says otherwise; more threads
	 * than CPUs share them through the run queues. */
	for (uint32_t t = 0; t < threads; t++) {
		int id = sim_thread_new(s, 0, t % s->cfg.ncpus, 0);
		struct wcpu *w;

		if (id < 0 || !(w = calloc(1, sizeof(*w))))
			return -1;
		w->n = s->cfg.events / s->cfg.ncpus + 1;
		s->threads[id]->w = w;
		s->threads[id]->tag = t;
	}
	return 0;
}

static int dontneed_step(struct sim *s, uint32_t cpu)
{
	struct sim_thread *me = sim_current(s, cpu);
	struct wcpu *w = me->w;
	uint64_t pages = s->cfg.pages ? s->cfg.pages : DN_PAGES;
	uint64_t base = 0x100000 + (uint64_t)me->tag * DN_PAGES_MAX; /* options.c: pages <= 256 */
	/* An operation runs from the end of the thread's last one: the
	 * interrupts it served in between (at the end of its step, in
	 * clock.c's sim_yield) are its CPU's time as surely as those served
	 * inside, and a real tlb_flush2's throughput pays for both. */
	double t = w->t0 > 0 ? w->t0 : s->cpus[cpu].clock;

	if (w->i == w->n)
		return 0;
	for (uint64_t k = 0; k < pages; k++)
		touch(s, cpu, 0, base + k, 1);
	/* MADV_DONTNEED of private anonymous pages: the range stays mapped,
	 * so the flush is complete when madvise() returns (STAYS_MAPPED). */
	unmap_range(s, cpu, 0, base, pages, TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE);
	s->cnt.busy_ns += s->cpus[cpu].clock - t;
	s->cnt.busy_ops++;
	w->i++;
	w->t0 = s->cpus[cpu].clock;
	/* --block-us: it then waits (a sleep, a futex, I/O); its CPU may run
	 * another thread or go idle, lazy, and be spared the others' flushes.
	 * The wait is not the operation's: the next starts when it runs. */
	if (s->cfg.block_ns > 0) {
		sim_block(s, cpu, s->cfg.block_ns);
		w->t0 = 0;
	}
	return 1;
}

/* ------------------------------------------------------------------------ */
/* lazy-unmap — LATR's setting: a multithreaded server maps, uses and unmaps
 * buffers at fresh addresses; it frees them only behind the flush and does
 * not reuse the addresses before that (LAZY_OK).  Metric: munmap latency.  */

#define LU_PAGES 16

static int lazy_setup(struct sim *s)
{
	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
		sim_switch(s, c, 0);
		W(s, c)->n = s->cfg.events / s->cfg.ncpus + 1;
		W(s, c)->vpn = 0x1000000 + (uint64_t)c * 0x100000;
	}
	return 0;
}

static int lazy_step(struct sim *s, uint32_t cpu)
{
	struct wcpu *w = W(s, cpu);
	double t;

	if (w->i == w->n)
		return 0;
	for (uint64_t k = 0; k < LU_PAGES; k++)
		touch(s, cpu, 0, w->vpn + k, 1);
	sim_charge(s, cpu, 2000); /* serve the request */
	t = s->cpus[cpu].clock;
	unmap_range(s, cpu, 0, w->vpn, LU_PAGES, TLBPOL_EVF_LAZY_OK | TLBPOL_EVF_PRIVATE);
	s->cnt.busy_ns += s->cpus[cpu].clock - t;
	s->cnt.busy_ops++;
	w->vpn += LU_PAGES + 1; /* a guard page, as mmap leaves */
	w->i++;
	return 1;
}

/* ------------------------------------------------------------------------ */
/* vcpu — a guest whose vCPUs are preempted part of the time (overcommit),
 * running an ebizzy-like allocator loop; guest IPIs cost vm_ipi_factor.   */

static int vcpu_setup(struct sim *s)
{
	double slice = s->cfg.cost.vcpu_slice_ns;
	uint32_t oc = s->cfg.overcommit ? s->cfg.overcommit : 2;

	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
		struct sim_cpu *cpu = &s->cpus[c];

		sim_switch(s, c, 0);
		W(s, c)->n = s->cfg.events / s->cfg.ncpus + 1;
		/* Staggered: at any time 1/oc of the vCPUs run. */
		cpu->run_until = slice * (double)((c % oc) + 1) / oc + slice * (c % oc);
		cpu->resume_at = cpu->run_until + slice * (oc - 1);
	}
	return 0;
}

static int vcpu_step(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];
	struct wcpu *w = W(s, cpu);
	double slice = s->cfg.cost.vcpu_slice_ns;
	uint32_t oc = s->cfg.overcommit ? s->cfg.overcommit : 2;
	uint64_t base = 0x100000 + (uint64_t)cpu * 0x100;

	if (c->mode == MODE_PREEMPTED) {
		sim_set_mode(s, cpu, MODE_RUN);
		c->run_until = c->clock + slice;
		c->resume_at = c->run_until + slice * (oc - 1);
		return 1;
	}
	if (w->i == w->n)
		return 0;
	if (c->clock >= c->run_until) {
		sim_set_mode(s, cpu, MODE_PREEMPTED);
		if (c->clock < c->resume_at)
			sim_charge(s, cpu, c->resume_at - c->clock);
		return 1;
	}
	for (uint64_t k = 0; k < 8; k++)
		touch(s, cpu, 0, base + k, 1);
	sim_charge(s, cpu, 3000); /* ebizzy: search the records */
	unmap_range(s, cpu, 0, base, 8, 0);
	w->i++;
	s->cnt.busy_ops++;
	return 1;
}

/* ------------------------------------------------------------------------ */

#define U(rule) TLBPOL_RULE_##rule

static const struct workload wl_spurious = {
	"spurious", "every CPU writes the same fresh page", "000", TLBPOL_ARCH_X86_64,
	U(SPURIOUS_NOFLUSH), 300, 0, 0, NULL,
	spurious_setup, spurious_step, NULL,
};
static const struct workload wl_munmap = {
	"munmap", "CPU 0 unmaps 8 pages in a loop, the others read a 4096-page set", "001",
	TLBPOL_ARCH_X86_64, U(RANGE_FLUSH), 1000, 0, 0, "ns per remote read",
	munmap_setup, munmap_step, NULL,
};
static const struct workload wl_retry = {
	"retry", "page_fault3 on ARM64, throttled faults retried", "002", TLBPOL_ARCH_ARM64,
	U(RETRY_NOFLUSH), 8000, 1, 0, NULL,
	retry_setup, retry_step, NULL,
};
static const struct workload wl_reclaim = {
	"reclaim", "kswapd reclaims cold pages of 4 processes", "003", TLBPOL_ARCH_X86_64,
	U(BATCH), 16384, 0, 0, "interrupts per second",
	reclaim_setup, reclaim_step, NULL,
};
static const struct workload wl_swapout = {
	"swapout", "kswapd ages and swaps out a threaded program", "004", TLBPOL_ARCH_X86_64,
	U(AGING_NOFLUSH), 12000, 0, 0, "ns per page swapped out",
	swapout_setup, swapout_step, swapout_finish,
};
static const struct workload wl_dontneed = {
	"dontneed", "tlb_flush2: write 16 pages, MADV_DONTNEED, loop", "-", TLBPOL_ARCH_X86_64,
	U(RECEIVER_MERGE), 3000, 0, 0, "ns per operation",
	dontneed_setup, dontneed_step, NULL,
};
static const struct workload wl_lazy = {
	"lazy-unmap", "threads map, use and unmap buffers (LATR)", "-", TLBPOL_ARCH_X86_64,
	U(LAZY_UNMAP), 4000, 0, 0, "ns per munmap",
	lazy_setup, lazy_step, NULL,
};
static const struct workload wl_vcpu = {
	"vcpu", "ebizzy in a 2x overcommitted guest", "-", TLBPOL_ARCH_X86_64,
	U(VCPU_DEFER), 4000, 0, 1, "records per second",
	vcpu_setup, vcpu_step, NULL,
};

/* hypervisor.c */
extern const struct workload wl_hypervisor;

const struct workload *const sim_workloads[] = {
	&wl_spurious, &wl_munmap, &wl_retry, &wl_reclaim, &wl_swapout,
	&wl_dontneed, &wl_lazy, &wl_vcpu, &wl_hypervisor, NULL,
};

const struct workload *sim_find_workload(const char *name)
{
	for (int i = 0; sim_workloads[i]; i++)
		if (!strcmp(sim_workloads[i]->name, name))
			return sim_workloads[i];
	return NULL;
}
