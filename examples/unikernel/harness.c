/* SPDX-License-Identifier: MIT */
/*
 * harness.c - what every workload runs on: the barrier the CPUs meet at
 * (ticking while they wait), the measured segments that fill the result
 * table, and the stale-TLB check (described in work.c).  Called by the
 * workloads (wl_*.c), work.c and table.c; calls mm.c and the core.
 */
#include "work.h"

static struct {
	uint32_t count;
	uint32_t gen;
} bar __attribute__((aligned(64)));
uint32_t tick_ok[UK_MAX_CPUS];

/*
 * Waiting for other CPUs.  idle=hlt (run.sh sets it under TCG): sleep until
 * the next interrupt -- a shootdown IPI or the 100 us LAPIC timer -- so that a
 * waiting vCPU leaves the host CPU to the vCPUs doing the work (MTTCG runs
 * one host thread per vCPU, and this host has 2 cores).  Default: spin, so
 * that under KVM an IPI never lands on a halted vCPU and its wake-up does not
 * count in the cycles measured.  Called with interrupts enabled.
 */
void idle_wait(void)
{
	if (param_idle_hlt)
		__asm__ __volatile__("sti; hlt" ::: "memory");
	else
		cpu_pause();
}

/*
 * Sense-reversing barrier.  A waiting CPU is a running CPU with nothing to
 * do: it ticks (tlbpol_tick(): serves requests posted to it without an
 * interrupt, posts its own lazy work, runs due deferred frees), as an idle
 * loop would at each timer tick, and takes shootdown interrupts.
 */
void barrier(uint32_t cpu)
{
	uint32_t g = __atomic_load_n(&bar.gen, __ATOMIC_ACQUIRE);

	if (__atomic_add_fetch(&bar.count, 1u, __ATOMIC_ACQ_REL) == nr_cpus) {
		__atomic_store_n(&bar.count, 0u, __ATOMIC_RELAXED);
		__atomic_store_n(&bar.gen, g + 1, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&bar.gen, __ATOMIC_ACQUIRE) == g) {
		if (tick_ok[cpu])
			tlbpol_tick(g_eng, cpu);
		idle_wait();
	}
}

/* Measurement: the counters of a segment, summed over the CPUs. */
struct result results[NR_WL][UK_MAX_MASKS];
uint64_t stamp_hist[NR_MASKS + 1][SETTLE_BUCKETS];
static struct cpu_counts snap_hw;
static struct tlbpol_stats snap_eng;
static uint32_t stale_printed;

void sum_counts(struct cpu_counts *out)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t c = 0; c < nr_cpus; c++) {
		const uint64_t *src = (const uint64_t *)&counts[c];
		uint64_t *dst = (uint64_t *)out;

		for (size_t i = 0; i < NR_COUNTS; i++)
			dst[i] += __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
}

/* Start a measured segment: everyone quiet, CPU 0 snapshots, then go. */
void seg_begin(uint32_t cpu)
{
	barrier(cpu);
	if (cpu == 0) {
		sum_counts(&snap_hw);
		tlbpol_stats_read(g_eng, -1, &snap_eng);
	}
	barrier(cpu);
}

/*
 * End a measured segment: wait for everyone (ticking), complete whatever
 * lazy work is left (tlbpol_flush(BY_LAZY) interrupts only targets that have
 * not picked it up at a tick yet), so the segment's cost and counters include
 * all of its flushes.
 */
void seg_end(uint32_t cpu, int wl, int m, uint64_t ops)
{
	/* Lazy work completes at ticks: give every CPU two (post its own, then
	 * serve what the others posted) before forcing what is left. */
	barrier(cpu);
	tlbpol_tick(g_eng, cpu);
	barrier(cpu);
	tlbpol_tick(g_eng, cpu);
	barrier(cpu);
	tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
	barrier(cpu);
	if (cpu == 0) {
		struct result *r = &results[wl][m];
		struct cpu_counts hw;
		struct tlbpol_stats st;

		sum_counts(&hw);
		tlbpol_stats_read(g_eng, -1, &st);
		r->ops += ops;
		for (size_t i = 0; i < NR_COUNTS; i++)
			((uint64_t *)&r->hw)[i] += ((uint64_t *)&hw)[i] - ((uint64_t *)&snap_hw)[i];
		for (size_t i = 0; i < sizeof(st) / 8; i++)
			((uint64_t *)&r->eng)[i] += ((uint64_t *)&st)[i] - ((uint64_t *)&snap_eng)[i];
	}
	barrier(cpu);
}

/* The stale-TLB check (work.c says how it works). */

void stale(uint32_t cpu, int wl, int m, uint32_t idx, const char *what, uint64_t got,
	   uint64_t pte)
{
	counts[cpu].stale++;
	if (__atomic_fetch_add(&stale_printed, 1u, __ATOMIC_RELAXED) < 16)
		kprintf("STALE: CPU %u %s/%s page %u va %lx: %s %lx, but the PTE is %lx%s\n", cpu,
			wl_names[wl], masks[m].name, idx, TVA(idx), what, got, pte,
			(got >> 48) == 0x1de7 ? " (an old frame's identity)" : "");
}

void anomaly(uint32_t cpu, int wl, int m, uint32_t idx, const char *what, uint64_t v)
{
	COUNT(counts[cpu].anomalies, 1);
	kprintf("ANOMALY: CPU %u %s/%s page %u: %s %lx\n", cpu, wl_names[wl], masks[m].name, idx,
		what, v);
}

/*
 * Read page @idx through this CPU's TLB and compare with the page table.
 * Called only while nobody changes that PTE, after its flushes completed.
 */
void check_read(uint32_t cpu, int wl, int m, uint32_t idx)
{
	uint64_t pte = __atomic_load_n(&test_pt[idx], __ATOMIC_ACQUIRE);
	uint64_t got = probe_read((volatile uint64_t *)(uintptr_t)TVA(idx));

	if (pte & PTE_P) {
		if (got == idw(PTE_PFN(pte)))
			return;
		if (got == PROBE_FAULT)
			anomaly(cpu, wl, m, idx, "read faulted on a present PTE", pte);
		else
			stale(cpu, wl, m, idx, "read", got, pte);
	} else if (got != PROBE_FAULT) {
		/* Unmapped and its deferred free has run: nothing may remain. */
		if (!__atomic_load_n(&vpages[idx].pending, __ATOMIC_ACQUIRE))
			stale(cpu, wl, m, idx, "read without a fault", got, pte);
	}
}

/*
 * This CPU has just accessed page @idx without a fault it did not resolve
 * itself: the PTE must be present and name the frame it reached.  An access
 * to a not-present page that did not fault went through a translation the
 * page table no longer has, whatever deferred free is outstanding: nobody
 * may reuse an address whose lazy flush is pending (TLBPOL_EVF_LAZY_OK), and
 * every workload here clears an address before using it again.
 */
void check_touched(uint32_t cpu, int wl, int m, uint32_t idx)
{
	uint64_t pte = __atomic_load_n(&test_pt[idx], __ATOMIC_ACQUIRE);

	if (!(pte & PTE_P))
		stale(cpu, wl, m, idx, "access did not fault, reached",
		      probe_read((volatile uint64_t *)(uintptr_t)TVA(idx)), pte);
	else
		check_read(cpu, wl, m, idx);
}

/* After a downgrade: a write must fault. */
void check_write_faults(uint32_t cpu, int wl, int m, uint32_t idx)
{
	uint64_t pte = __atomic_load_n(&test_pt[idx], __ATOMIC_ACQUIRE);
	volatile uint64_t *p = (volatile uint64_t *)(uintptr_t)(TVA(idx) + SCRATCH_OFF(cpu));

	if (pte & PTE_W)
		return;
	if (probe_write(p, 0xbad) != PROBE_FAULT)
		stale(cpu, wl, m, idx, "write went through a read-only PTE", 0, pte);
}

void check_range(uint32_t cpu, int wl, int m, uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < first + n; i++)
		check_read(cpu, wl, m, i);
}

/* Unmap a workload's pages and wait until every frame is back. */
void teardown(uint32_t cpu, int wl, int m, uint32_t first, uint32_t n)
{
	barrier(cpu);
	if (cpu == 0) {
		for (uint32_t i = first; i < first + n; i++)
			mm_unmap(cpu, i, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE);
		tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
	}
	barrier(cpu);
	tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
	barrier(cpu);
	check_range(cpu, wl, m, first, n);
	barrier(cpu);
}
