/* SPDX-License-Identifier: MIT */
/*
 * wl_bench.c - the scenarios of known benchmarks, not of one patch:
 * dontneed (will-it-scale tlb_flush2), lazy-unmap (LATR's setting) and
 * vcpu (ebizzy in an overcommitted guest).  Listed in workloads.c; calls
 * its helpers (workloads.h), then machine.c and sched.c.
 */
#include "workloads.h"

#include <stdlib.h>

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

	if (setup_one_as(s, 0) < 0)
		return -1;
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

/* lazy-unmap — LATR's setting: a multithreaded server maps, uses and unmaps
 * buffers at fresh addresses; it frees them only behind the flush and does
 * not reuse the addresses before that (LAZY_OK).  Metric: munmap latency.  */

#define LU_PAGES 16

static int lazy_setup(struct sim *s)
{
	if (setup_one_as(s, 0) < 0)
		return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
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

const struct workload wl_dontneed = {
	"dontneed", "tlb_flush2: write 16 pages, MADV_DONTNEED, loop", "-", TLBPOL_ARCH_X86_64,
	U(RECEIVER_MERGE), 3000, 0, 0, "ns per operation",
	dontneed_setup, dontneed_step, NULL,
};
const struct workload wl_lazy = {
	"lazy-unmap", "threads map, use and unmap buffers (LATR)", "-", TLBPOL_ARCH_X86_64,
	U(LAZY_UNMAP), 4000, 0, 0, "ns per munmap",
	lazy_setup, lazy_step, NULL,
};
const struct workload wl_vcpu = {
	"vcpu", "ebizzy in a 2x overcommitted guest", "-", TLBPOL_ARCH_X86_64,
	U(VCPU_DEFER), 4000, 0, 1, "records per second",
	vcpu_setup, vcpu_step, NULL,
};
