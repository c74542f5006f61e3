/* SPDX-License-Identifier: MIT */
/*
 * workloads.h - what the scenario files share: per-CPU (or per-thread)
 * state, the page bits, and the helpers every scenario uses.
 *
 * Calls go one way: wl_linux.c (the five Linux patches' scenarios) and
 * wl_bench.c (the benchmarks') -> workloads.c (the helpers, the list of
 * scenarios) -> machine.c, sched.c (sim.h).
 */
#ifndef TLBPOL_SIM_WORKLOADS_H
#define TLBPOL_SIM_WORKLOADS_H

#include "sim.h"

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

/* @cpu's state, allocated on first use. */
struct wcpu *W(struct sim *s, uint32_t cpu);
/* Give every CPU its state. */
int setup_common(struct sim *s);
/* setup_common(), then one address space, which CPUs [@first, ncpus) run;
 * CPU 0, when @first is 1, runs none (a kernel thread: kswapd).  -1 if the
 * address space cannot be opened. */
int setup_one_as(struct sim *s, uint32_t first);
/* Pages [@vpn, @vpn + @n) of @as present before the run, each with a frame
 * of its own, without the engine (mapped long ago): every @dirty_every-th
 * dirty, the others clean. */
void populate(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, uint32_t dirty_every);
/* Touch @vpn, resolving a missing PTE by installing it (a minor fault). */
void touch(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, int write);
/* munmap/MADV_DONTNEED of [vpn, vpn+n), flushed before it returns. */
void unmap_range(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, uint64_t n,
		 uint32_t flags);

/* A scenario's rule, in its entry (struct workload). */
#define U(rule) TLBPOL_RULE_##rule

#endif
