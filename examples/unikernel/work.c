/* SPDX-License-Identifier: MIT */
/*
 * work.c - what every CPU runs after boot: the calibration, then for each
 * rule mask a fresh engine and the workloads, then the result table.
 *
 * Calls flow one way (work.h): main.c -> work.c -> the workloads, one
 * family a file (wl_unmap.c, wl_reuse.c, wl_protect.c) and table.c ->
 * harness.c (barriers, measured segments, the stale-TLB check) -> params.c,
 * mm.c and the libtlbpol core.
 *
 * Every CPU runs work_run() at once (SPMD, in lock step through barriers).
 * For each rule mask (naive, linux, default, and with rules=SPEC a fourth,
 * "custom") a fresh engine is built, every CPU switches into its one
 * address space, and the workloads run:
 *
 *  spurious    every CPU writes the same not-present page of a shared
 *              mapping: write faults racing on one PTE, so spurious faults
 *              (PTE installed between a CPU's walk and its taking the lock;
 *              Linux 61c77326d1df "x86, mm: Avoid unnecessary TLB flush")
 *              and retried faults (installed while the faulting CPU prepared
 *              its frame with the lock dropped; Linux b7333b58f358
 *              "mm/memory.c: skip spurious TLB flush for retried page
 *              fault").  Then one CPU unmaps it.
 *  tlb_flush2  will-it-scale tlb_flush2: each CPU touches its page and
 *              unmaps it (madvise(MADV_DONTNEED)), in a loop, one address
 *              space, the same address every iteration.
 *  flush2_lazy the same loop, but each CPU cycles through a ring of
 *              addresses and unmaps with TLBPOL_EVF_LAZY_OK: an address is
 *              not used again until the deferred free of its last frame has
 *              run (LATR's condition; an mmap/munmap loop whose allocator
 *              holds addresses back), so the flush may complete at the
 *              other CPUs' ticks, without an interrupt.
 *  flush2_stamp the ring again, unmapped with TLBPOL_EVF_STAMP (flush
 *              stamps): no address is held back and each frame goes back
 *              to the pool at once, the last freed handed out first,
 *              settled by the CPU that takes it; the last CPU only reads
 *              the others' rings, and a read of a page unmapped and
 *              settled that does not fault is stale.
 *  stamp_reuse flush stamps checked where a settle must wait: CPU 0 unmaps
 *              pages every CPU has read (stamped), and maps the frames
 *              again at other addresses, outside its pending span, so
 *              only the settle stands between a frame's reuse and a stale
 *              translation of it; each frame carries a tag naming the page
 *              it backs.  The last CPU reads the old addresses with
 *              interrupts off all the while, so a settle that waited for
 *              every target waits for it: a read through an old address
 *              that returns a new address's tag used a translation the
 *              settle should have flushed first.
 *  reclaim     many pages mapped and cached on every CPU are reclaimed at
 *              once by one CPU (kswapd): RECLAIM events, then
 *              tlbpol_flush(BY_FREE) before the frames are freed.
 *  downgrade   mprotect(PROT_READ) of pages every CPU has written (a
 *              shootdown everywhere), the write check, then mprotect back
 *              (an upgrade) and every CPU writes again.
 *  global      kernel pages mapped global (CR4.PGE: they survive CR3
 *              writes), written by every CPU; then the others go lazy
 *              (switch to NULL) or idle, CPU 0 write-protects them, and each
 *              CPU, still lazy or idle (kernel code runs through global
 *              mappings there), checks that a write faults.  Under every
 *              rule mask: no rule may spare a lazy or idle CPU a global
 *              flush, since its catch-up (a CR3 write) would keep the entry.
 *  tags        more address spaces than tags (wl_tags.c): every CPU
 *              switches through 8 spaces that map the same addresses to
 *              frames of their own, with tags=percpu:2 (the default) or a
 *              small global pool, while their pages are remapped; every
 *              read must reach the frame of the space the CPU runs.
 *
 * The stale-TLB check runs on the hardware itself.  Every test frame holds
 * its identity at offset 0.  After a flush is complete, each CPU reads each
 * changed page through its own TLB (a probe whose fault is fixed up): a read
 * must fault if the PTE is not present and must return the identity of the
 * frame the PTE names if it is.  Reading some other frame's identity with no
 * fault means the CPU kept a translation the engine should have flushed.
 * After a downgrade, a write must fault.  Under QEMU's TCG the per-vCPU
 * software TLB is emptied only by invlpg, CR3/CR4 writes (and cross-vCPU
 * flush work, which x86 never asks for), so a skipped flush really leaves
 * the stale translation there for the probe to find.
 */
#include "work.h"

const char *const wl_names[NR_WL] = {
	"spurious", "tlb_flush2", "flush2_lazy", "flush2_stamp", "reclaim", "reclaim_stamp",
	"stamp_reuse", "downgrade", "global", "tags",
};

/* The workloads, in enum order (the table's). */
static void (*const wl_run[NR_WL])(uint32_t cpu, int m) = {
	wl_spurious, wl_flush2, wl_flush2_lazy, wl_flush2_stamp, wl_reclaim, wl_reclaim_stamp,
	wl_stamp_reuse, wl_downgrade, wl_global, wl_tags,
};

static uint64_t wl_stale0, wl_anom0;

/* One rule mask: a fresh engine, every workload, then the leak check. */

extern const struct tlbpol_ops uk_ops;
extern uint64_t engine_mem_base, engine_mem_stride;

static void wl_begin(uint32_t cpu)
{
	barrier(cpu);
	if (cpu == 0) {
		struct cpu_counts hw;

		sum_counts(&hw);
		wl_stale0 = hw.stale;
		wl_anom0 = hw.anomalies;
	}
	barrier(cpu);
}

static void wl_end(uint32_t cpu, int wl, int m)
{
	barrier(cpu);
	if (cpu == 0) {
		struct cpu_counts hw;
		uint64_t stale;

		sum_counts(&hw);
		/* Added: a warm-up pass's stale reads still count.  The line
		 * gives this pass's own (lab/mutants sums the lines). */
		stale = hw.stale - wl_stale0;
		results[wl][m].stale += stale;
		results[wl][m].anomalies += hw.anomalies - wl_anom0;
		kprintf("  %-12s %-8s done: %lu ops, %lu stale\n", wl_names[wl], masks[m].name,
			results[wl][m].ops, stale);
	}
	barrier(cpu);
}

static void run_workloads(uint32_t cpu, int m)
{
	for (int w = 0; w < NR_WL; w++) {
		wl_begin(cpu);
		wl_run[w](cpu, m);
		wl_end(cpu, w, m);
	}
}

/*
 * warm=1 (run.sh sets it under TCG): one round of every workload, a few
 * iterations long, before the measured ones, and its figures dropped.  TCG
 * translates a block of guest code the first time it runs, and a mask's
 * own paths through the engine run first in that mask: without the pass,
 * whichever mask comes first pays for them (6 boots: linux run again, last,
 * took 0.23-1.18 of its first run's cycles in `spurious`; the host's own
 * noise stays, as large).  What the pass drops is measurement only: its
 * stale reads and anomalies still count.
 */
static void warm_up(uint32_t cpu, int m)
{
	uint32_t rounds = p_rounds, iters = p_iters;

	barrier(cpu);
	if (cpu == 0) {
		kprintf("  (warm-up: 1 round, unmeasured)\n");
		p_rounds = 1;
		p_iters = iters < 4 ? iters : 4;
	}
	barrier(cpu);
	run_workloads(cpu, m);
	if (cpu == 0) {
		for (int w = 0; w < NR_WL; w++) {
			struct result *r = &results[w][m];
			uint64_t stale = r->stale, anomalies = r->anomalies;

			memset(r, 0, sizeof(*r));
			r->stale = stale;
			r->anomalies = anomalies;
		}
		/* stamp_reuse's round counts (sr_*) keep the warm-up's
		 * round: they are checked, not timed. */
		p_rounds = rounds;
		p_iters = iters;
	}
	barrier(cpu);
}

/* The cost model and flush ceiling tlbpol_cost_calibrate() derives from
 * the calibration, in TSC cycles (calib=1: every engine takes them). */
static struct tlbpol_config calib_cfg;
static int calib_ok;

static void run_mask(uint32_t cpu, int m, int slot)
{
	barrier(cpu);
	if (cpu == 0) {
		struct tlbpol_config cfg;
		struct tlbpol_engine *eng;
		struct tlbpol_as *as;
		void *mem = (void *)(uintptr_t)(engine_mem_base + (uint64_t)slot * engine_mem_stride);
		int err;

		tlbpol_config_init(&cfg, nr_cpus, TLBPOL_ARCH_X86_64);
		cfg.max_as = UK_MAX_AS;
		cfg.rules = masks[m].rules;
		cfg.ops = &uk_ops;
		/* tags=: the engine chooses the PCIDs (pcid.c), from an
		 * allocator of its own. */
		cfg.tags = tags_make(slot);
		/* Only RULE_POLLING_CPUS reads it; set for every mask so
		 * the masks differ in their rules alone. */
		cfg.ipi_delay_spins = p_ipi_delay;
		if (p_calib && calib_ok) {
			cfg.flush_ceiling = calib_cfg.flush_ceiling;
			cfg.cost_ipi_ns = calib_cfg.cost_ipi_ns;
			cfg.cost_ipi_target_ns = calib_cfg.cost_ipi_target_ns;
		}
		err = tlbpol_engine_init(&eng, mem, engine_mem_stride, &cfg);
		if (err)
			panic("tlbpol_engine_init = %d", err);
		err = tlbpol_as_open(eng, 1, &as);
		if (err)
			panic("tlbpol_as_open = %d", err);
		g_as = as;
		g_tags = cfg.tags;
		g_eng = eng;
		kprintf("rules %-7s: configured %lx, in force %lx, ipi_delay_spins %u\n",
			masks[m].name, masks[m].rules, tlbpol_engine_rules(eng), p_ipi_delay);
	}
	barrier(cpu);
	/* Switch in: join the footprint, then load the address space (the
	 * new allocator flushes each tag at its first load, so nothing the
	 * previous engine left under it is used). */
	uk_switch(cpu, g_as, kernel_cr3());
	tick_ok[cpu] = 1;
	barrier(cpu);

	if (p_warm)
		warm_up(cpu, m);
	run_workloads(cpu, m);

	/* Leave: complete everything, go lazy, drop the address space. */
	tlbpol_flush(g_eng, cpu, TLBPOL_BY_LAZY);
	barrier(cpu);
	tick_ok[cpu] = 0;
	uk_unload(cpu);
	barrier(cpu);
	if (cpu == 0) {
		int err = tlbpol_as_close(g_eng, g_as);

		if (err)
			panic("tlbpol_as_close = %d", err);
		if (g_tags) {
			tag_stats[m].size = sizeof(tag_stats[m]);
			tlbpol_tags_stats_read(g_tags, -1, &tag_stats[m]);
		}
		if (mm_frames_free() != mm_frames_total()) {
			COUNT(counts[0].anomalies, 1);
			kprintf("ANOMALY: %u of %u frames did not come back\n",
				mm_frames_total() - mm_frames_free(), mm_frames_total());
		}
		for (uint32_t i = 0; i < NR_TPAGES; i++)
			if (test_pt[i] || vpages[i].pending) {
				COUNT(counts[0].anomalies, 1);
				kprintf("ANOMALY: page %u left mapped or pending\n", i);
			}
		g_eng = 0;
		g_as = 0;
		g_tags = 0;
	}
	barrier(cpu);
}

static void calibrated(uint64_t inv, uint64_t cr3, uint64_t walk, uint64_t send, uint64_t rt)
{
	struct tlbpol_calibration m = {
		.size = sizeof(m), .ipi_round_trip = rt ? rt : 1, .ipi_send = send,
		.inval_page = inv ? inv : 1, .full_flush = cr3 ? cr3 : 1, .refill = walk ? walk : 1,
	};
	int err;

	tlbpol_config_init(&calib_cfg, nr_cpus, TLBPOL_ARCH_X86_64);
	err = tlbpol_cost_calibrate(&m, &calib_cfg, 0, 0);
	if (err) {
		kprintf("calibrated: tlbpol_cost_calibrate = %d\n", err);
		return;
	}
	calib_ok = 1;
	kprintf("calibrated: flush ceiling %u pages (default %u), IPI first target %u, each "
		"further %u (TSC cycles; no broadcast here); %s\n",
		calib_cfg.flush_ceiling, TLBPOL_DEFAULT_FLUSH_CEILING, calib_cfg.cost_ipi_ns,
		calib_cfg.cost_ipi_target_ns,
		p_calib ? "calib=1: the engines use them" : "printed only (calib=1 uses them)");
}

/*
 * What the primitives cost on this machine, to read the table by: CPU 0
 * times each while the others wait with interrupts on.
 */
static void calibrate(uint32_t cpu)
{
	enum { N = 1000 };
	volatile uint64_t *unmapped = (volatile uint64_t *)(uintptr_t)TVA(NR_TPAGES - 1);
	uint64_t t, c_tsc, c_pause, c_inv, c_cr3, c_pf, c_walk, c_ipi = 0, c_send = 0;

	barrier(cpu);
	if (cpu == 0) {
		t = rdtsc();
		for (int i = 0; i < N; i++)
			(void)rdtsc();
		c_tsc = (rdtsc() - t) / N;
		t = rdtsc();
		for (int i = 0; i < N; i++)
			uk_ops.relax(0, cpu);
		c_pause = (rdtsc() - t) / N;
		t = rdtsc();
		for (int i = 0; i < N; i++)
			invlpg(TVA(NR_TPAGES - 1));
		c_inv = (rdtsc() - t) / N;
		t = rdtsc();
		for (int i = 0; i < N; i++)
			write_cr3(read_cr3());
		c_cr3 = (rdtsc() - t) / N;
		t = rdtsc();
		for (int i = 0; i < N; i++)
			if (probe_read(unmapped) != PROBE_FAULT)
				panic("calibration: the unmapped page did not fault");
		c_pf = (rdtsc() - t) / N;
		/* A walk after an invalidation: the refill a flush costs. */
		t = rdtsc();
		for (int i = 0; i < N; i++) {
			invlpg((uint64_t)(uintptr_t)&ping_ack);
			(void)__atomic_load_n(&ping_ack, __ATOMIC_RELAXED);
		}
		c_walk = (rdtsc() - t) / N;
		c_walk = c_walk > c_inv ? c_walk - c_inv : 1;
		if (nr_cpus > 1) {
			t = rdtsc();
			for (int i = 0; i < N; i++) {
				__atomic_store_n(&ping_ack, 0u, __ATOMIC_RELAXED);
				lapic_send(apic_ids[1], VEC_PING);
				while (!__atomic_load_n(&ping_ack, __ATOMIC_ACQUIRE))
					cpu_pause();
			}
			c_ipi = (rdtsc() - t) / N;
			/* The sender's part alone: the ICR write. */
			for (int i = 0; i < N; i++) {
				__atomic_store_n(&ping_ack, 0u, __ATOMIC_RELAXED);
				t = rdtsc();
				lapic_send(apic_ids[1], VEC_PING);
				c_send += rdtsc() - t;
				while (!__atomic_load_n(&ping_ack, __ATOMIC_ACQUIRE))
					cpu_pause();
			}
			c_send /= N;
		}
		kprintf("calibration (TSC cycles): rdtsc %lu, relax %lu, invlpg %lu, CR3 write %lu, "
			"#PF round trip %lu, walk %lu, IPI send %lu, IPI round trip CPU0->CPU1->CPU0 "
			"%lu\n", c_tsc, c_pause, c_inv, c_cr3, c_pf, c_walk, c_send, c_ipi);
		calibrated(c_inv, c_cr3, c_walk, c_send, c_ipi);
		/*
		 * Spin-then-interrupt: wait for a target to serve by itself
		 * for at most what the interrupt would cost the machine (the
		 * sender's ICR write, and about as much again for the
		 * target's entry and EOI), so the wait never costs more than
		 * twice the better choice.  Not the round trip: that is
		 * latency (under an overcommitted host mostly the target's
		 * wait for a physical CPU), which spinning does not save.
		 */
		if (p_ipi_delay == UINT32_MAX) {
			uint64_t d = 2 * c_send / (c_pause ? c_pause : 1);

			/*
			 * idle=hlt: a CPU waiting at a barrier sleeps until an
			 * interrupt (or its 100 us timer) without telling the
			 * engine, which takes a CPU that polled in its last wait
			 * for one that will serve by itself; waiting for it only
			 * postpones the interrupt that wakes it (Linux interrupts
			 * an idle CPU unless it polls, TIF_POLLING_NRFLAG).
			 * Targets inside an engine call (tlb_flush2's loops)
			 * would serve within the delay, and lose it: in 6 TCG
			 * boots each, spurious and downgrade went from FAIL to
			 * ok, tlb_flush2's IPIs from 38-140 to 130-173 of 256.
			 * CPUs waiting inside the engine still poll, and are
			 * still spared (RULE_POLLING_CPUS).
			 */
			p_ipi_delay = param_idle_hlt ? 0 : d > 1000000 ? 1000000 : (uint32_t)d;
		}
	}
	barrier(cpu);
}

void work_run(uint32_t cpu)
{
	if (param_idle_hlt)
		lapic_timer_periodic(VEC_TIMER, 100000);
	irq_enable();
	calibrate(cpu);
	if (p_swap && cpu == 0)
		kprintf("swap=1: default runs before linux\n");
	/* swap=1: default before linux, each in the other's place and memory,
	 * so that a cost that follows the order (or the memory) shows as such. */
	for (int slot = 0; slot < nr_masks; slot++) {
		int m = !p_swap                ? slot :
			slot == M_LINUX   ? M_DEFAULT :
			slot == M_DEFAULT ? M_LINUX : slot;

		if (p_only < 0 || m == p_only)
			run_mask(cpu, m, slot);
	}
	if (cpu == 0)
		kexit((uint32_t)print_table());
	for (;;)
		__asm__ __volatile__("hlt");
}
