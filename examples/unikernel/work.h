/* SPDX-License-Identifier: MIT */
/*
 * work.h - what the workload files share (internal to the test kernel).
 *
 * Calls flow one way:
 *   work.c (run_mask(), calibrate(), work_run())
 *     -> wl_unmap.c, wl_reuse.c, wl_protect.c (the workloads, one family
 *        a file) and table.c (the result table and the claims)
 *     -> harness.c (barriers, measured segments, the stale-TLB check)
 *     -> params.c (the kernel command line, the rule masks)
 *     -> mm.c (the test region) and the libtlbpol core.
 */
#ifndef UK_WORK_H
#define UK_WORK_H

#include "mm.h"

/* params.c: the kernel command line (key=value). */
extern uint32_t p_rounds;    /* rounds per workload and mask */
extern uint32_t p_iters;     /* tlb_flush2 iterations per CPU per round */
extern uint32_t p_ring;      /* flush2_lazy addresses per CPU */
extern uint32_t p_reclaim;   /* pages per reclaim batch */
extern uint32_t p_dgpages;   /* pages per mprotect */
extern uint32_t p_tick;      /* iterations between ticks in the loops */
extern uint32_t p_reuse;     /* stamp_reuse pages per round */
extern uint32_t p_reusewin;  /* stamp_reuse: the reader's interrupts-off
			      * window, at most, in millions of TSC cycles */
/* ipi_delay_spins of the default engine; UINT32_MAX: from the calibration
 * (an IPI round trip over one relax turn) */
extern uint32_t p_ipi_delay;
extern uint32_t p_swap;      /* swap=1: default runs before linux (work.c) */
extern uint32_t p_warm;      /* warm=1: each mask's workloads once unmeasured first */
/* calib=1: every engine takes tlbpol_cost_calibrate()'s costs and flush
 * ceiling (work.c, calibrate()); 0 (the default): they are only printed,
 * and the engines keep the defaults the recorded comparisons used */
extern uint32_t p_calib;

/*
 * The rule masks.  The first three are the built-in comparison, which the
 * table's ratios and the claims are about; rules=SPEC adds a fourth,
 * "custom" (params.c).
 */
#define NR_MASKS 3
#define M_LINUX 1
#define M_DEFAULT 2
#define M_CUSTOM 3
struct uk_mask {
	const char *name;
	uint64_t rules;
};
extern struct uk_mask masks[UK_MAX_MASKS];
extern int nr_masks;
extern char p_rules_spec[128]; /* rules=SPEC as given */
extern int p_only; /* only=NAME: the one rule set that runs (-1: all) */

/* Layout of the test region (page indices). */
#define IDX_SEED 0
#define IDX_DG 8          /* .. 39 */
#define IDX_F2 40         /* one per CPU: .. 55 */
#define IDX_GL 56         /* .. 63: global (kernel) pages */
#define NR_GL 8
#define IDX_F2L 64        /* ring per CPU: .. 319 */
#define IDX_RC 320        /* .. 511 */
/* stamp_reuse, between the others (each leaves its pages unmapped): the old
 * addresses below the new ones, so that an install at a new address is
 * outside the span of the old ones' pending unmaps. */
#define IDX_SR_OLD IDX_F2L /* .. + reuse= */
#define IDX_SR_NEW IDX_RC  /* .. + reuse= */

/* The workloads, in the order they run (work.c) and are printed (table.c). */
enum { WL_SEED000, WL_FLUSH2, WL_FLUSH2_LAZY, WL_FLUSH2_STAMP, WL_RECLAIM, WL_RECLAIM_STAMP,
       WL_STAMP_REUSE, WL_DOWNGRADE, WL_GLOBAL, WL_TAGS, NR_WL };
extern const char *const wl_names[NR_WL];

/* harness.c: the measurement. */
struct result {
	uint64_t ops;
	struct cpu_counts hw;     /* summed over CPUs, measured segments only */
	struct tlbpol_stats eng;  /* engine counters, same segments */
	uint64_t stale, anomalies; /* whole workload, checks included */
};
extern struct result results[NR_WL][UK_MAX_MASKS];
/* flush2_stamp's settle latencies per mask: log2 buckets (mm.c). */
extern uint64_t stamp_hist[NR_MASKS + 1][SETTLE_BUCKETS];
/* wl_reuse.c: stamp_reuse's rounds per mask (table.c prints them). */
extern uint64_t sr_early[UK_MAX_MASKS], sr_windows[UK_MAX_MASKS], sr_caught[UK_MAX_MASKS];

/* harness.c: waiting, barriers and measured segments. */
extern uint32_t tick_ok[UK_MAX_CPUS];
void idle_wait(void);
void barrier(uint32_t cpu);
void sum_counts(struct cpu_counts *out);
void seg_begin(uint32_t cpu);
void seg_end(uint32_t cpu, int wl, int m, uint64_t ops);

/* harness.c: the stale-TLB check. */
void stale(uint32_t cpu, int wl, int m, uint32_t idx, const char *what, uint64_t got,
	   uint64_t pte);
void anomaly(uint32_t cpu, int wl, int m, uint32_t idx, const char *what, uint64_t v);
void check_read(uint32_t cpu, int wl, int m, uint32_t idx);
void check_touched(uint32_t cpu, int wl, int m, uint32_t idx);
void check_write_faults(uint32_t cpu, int wl, int m, uint32_t idx);
void check_range(uint32_t cpu, int wl, int m, uint32_t first, uint32_t n);
void teardown(uint32_t cpu, int wl, int m, uint32_t first, uint32_t n);

/*
 * Time an operation on the CPU that performs it: what will-it-scale measures
 * (each thread's loop), a fault's latency, an munmap's or mprotect's return.
 * The cycles other CPUs spend in the shootdown handler are counted apart
 * (irq_cyc).  rdtsc under a nested hypervisor may itself exit: the
 * calibration line shows its cost.
 */
#define TIMED(cpu, stmt)                                                       \
	do {                                                                   \
		uint64_t t_ = rdtsc();                                         \
		stmt;                                                          \
		counts[cpu].op_cyc += rdtsc() - t_;                            \
	} while (0)

/* A real access through the TLB (the page-fault handler resolves it). */
static inline void touch_write(uint32_t cpu, uint32_t idx, uint64_t v)
{
	((volatile uint64_t *)(uintptr_t)TVA(idx))[SCRATCH_OFF(cpu) / 8] = v;
}

static inline void touch_read(uint32_t idx)
{
	(void)((volatile uint64_t *)(uintptr_t)TVA(idx))[0];
}

/* The workloads: every CPU calls each at once, for rule mask @m. */
void wl_spurious(uint32_t cpu, int m);      /* wl_unmap.c */
void wl_flush2(uint32_t cpu, int m);
void wl_flush2_lazy(uint32_t cpu, int m);
void wl_flush2_stamp(uint32_t cpu, int m);
void wl_reclaim(uint32_t cpu, int m);      /* wl_reuse.c */
void wl_reclaim_stamp(uint32_t cpu, int m);
void wl_stamp_reuse(uint32_t cpu, int m);
void wl_downgrade(uint32_t cpu, int m);    /* wl_protect.c */
void wl_global(uint32_t cpu, int m);

void wl_tags(uint32_t cpu, int m);         /* wl_tags.c */

/* pcid.c: tags=, the allocators, and the switch that loads CR3 with a tag. */
#define UK_TAGS_OFF 0
#define UK_TAGS_PERCPU 1
#define UK_TAGS_GLOBAL 2
extern uint32_t p_tags_kind, p_tags_n;
extern struct tlbpol_tags *volatile g_tags; /* the running engine's (NULL: tags=off) */
extern struct tlbpol_tags_stats tag_stats[UK_MAX_MASKS]; /* per mask, at its end */
uint64_t kernel_cr3(void);
size_t tags_check(void);
struct tlbpol_tags *tags_make(int slot);
void tags_describe(void);
void uk_switch(uint32_t cpu, struct tlbpol_as *as, uint64_t table);
void uk_unload(uint32_t cpu);

/* table.c: print the table and the claims; the kernel's exit code. */
int print_table(void);

#endif /* UK_WORK_H */
