/* SPDX-License-Identifier: MIT */
/*
 * bench.h - what tlbpol-bench's files share.  Calls go one way:
 *   tlbpol-bench.c  options, the machine, the report (main)
 *     -> bench_hot.c      1-4: single-thread hot paths, timed loops
 *        bench_threads.c  5: threads acting as CPUs, scaling
 *     -> bench_sample.c   samples, medians, figures, retakes, pinning
 *     -> libtlbpol and support/ (clocks, the mailbox IPI).
 */
#ifndef TLBPOL_BENCH_H
#define TLBPOL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tlbpol/tlbpol.h>

#include "support/timing.h"

#define PAGE_SHIFT 12
#define PTE_RW_DIRTY                                                           \
	(TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_USER | TLBPOL_PTE_ACCESSED | \
	 TLBPOL_PTE_DIRTY)
#define PTE_CLEAN (TLBPOL_PTE_PRESENT | TLBPOL_PTE_USER | TLBPOL_PTE_ACCESSED)
#define VA_BASE 0x10000000ULL
#define BATCH 512        /* pages per batch in 3 and 5 */
#define ENQ_WINDOW 16384 /* enqueues per timed window in 2 (< batch_pages) */
#define IPI_INITIATORS 4 /* initiators filling the inbox in 4 */
#define MAX_THREADS 2
#define CACHELINE 64

/* The options (tlbpol-bench.c reads them, bench_sample.c holds them). */
struct bench_opt {
	uint64_t iters;  /* calls per sample of the tight loops */
	double seconds;  /* length of each threads run (the control's: half) */
	unsigned reps;   /* samples per figure (median) */
	int pin;
	uint64_t rules;  /* every engine's (--rules) */
};
extern struct bench_opt opt;

void die(const char *what, long v);
/* @rows arrays of @n samples, zeroed, in one block (row k at k * @n): one
 * allocation to check and one free() per figure. */
double *samples(unsigned rows, unsigned n);
double median(double *v, unsigned n);

/*
 * One figure: the medians of an operation's samples and of the empty call's,
 * taken alternately, and the median of the samples' ratios (the host's load
 * drifts; a sample and its empty twin, taken back to back, see about the
 * same).
 */
struct fig {
	double ns, empty, ratio;
	double lo, hi; /* the smallest and largest sample ratio */
};

struct fig fig_of(const double *op, const double *empty, unsigned n);

/*
 * Other programs may share this machine: a sample during which this thread
 * was off its CPU more than 3% of the time is taken again, up to MAX_TRIES
 * times and as long as retakes have cost less than RETAKE_BUDGET_NS in all;
 * then the last try is kept, and the lowest on-CPU share kept is shown.
 */
#define MIN_SHARE 0.97
#define MAX_TRIES 8
#define RETAKE_BUDGET_NS 5000000000ULL
extern unsigned retaken;
extern uint64_t retake_ns;
extern double worst_share;

int may_retake(unsigned try, uint64_t ns);

#define ON_CPU(...)                                                            \
	do {                                                                   \
		for (unsigned try_ = 1;; try_++) {                             \
			uint64_t c0_ = thread_cpu_ns();                        \
			uint64_t w0_ = now_ns();                               \
			double sh_;                                            \
                                                                               \
			__VA_ARGS__;                                           \
			sh_ = (double)(thread_cpu_ns() - c0_) /                \
			      (double)(now_ns() - w0_);                        \
			if (sh_ >= MIN_SHARE || !may_retake(try_, now_ns() - w0_)) { \
				worst_share = sh_ < worst_share ? sh_ : worst_share; \
				break;                                         \
			}                                                      \
			retaken++;                                             \
		}                                                              \
	} while (0)

/*
 * Sample r runs with the stack moved down by shift(r) bytes, 64-byte steps
 * spread over 4 KiB.  An empty call's cost depends on where the stack and
 * the data it touches lie: on an AMD EPYC (Zen 5) guest it was either about
 * 3.8 or about 5.7 cycles, by stack offset and by where ASLR put the stack.
 * Spreading the samples over offsets mixes the two, and main() first moves
 * the stack to the same offset within its page whatever ASLR chose, so that
 * ASLR adds no variation.  Some remains: with ASLR off the empty call of the
 * loop of row 2 still took 1.2 ns in some runs and 1.65 ns in others.  The
 * range of the sample ratios is shown with each target so that a verdict
 * that depends on it is seen as such.
 */
static inline size_t stack_shift(unsigned r)
{
	return 64 + (((size_t)r * 4096 / opt.reps) & ~(size_t)63);
}

#define SHIFT_STACK_TO_PAGE()                                                  \
	char page_[((uintptr_t)__builtin_frame_address(0) & 4095) + 64];      \
	__asm__ __volatile__("" : : "r"(page_) : "memory")

#define SHIFT_STACK(r)                                                         \
	char pad_[stack_shift(r)];                                             \
	__asm__ __volatile__("" : : "r"(pad_) : "memory")

/* Pin this thread to @cpu (unless --no-pin): 1 if it is. */
int pin_to(int cpu);

/*
 * The baseline: an empty function the compiler cannot inline or drop, called
 * through a volatile function pointer, with tlbpol_submit()'s signature so
 * the loops pass the same arguments.
 */
typedef int (*op_fn)(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		     const struct tlbpol_event *ev, struct tlbpol_decision *out);
extern op_fn volatile empty_fp;

static inline struct tlbpol_event event(uint32_t kind, uint32_t flags, uint64_t va,
					uint32_t old_pte, uint32_t new_pte)
{
	struct tlbpol_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.kind = kind;
	ev.flags = flags;
	ev.page_shift = PAGE_SHIFT;
	ev.va = va;
	ev.nr_pages = 1;
	ev.old_pte = old_pte;
	ev.new_pte = new_pte;
	return ev;
}

/* The figures, filled by the benches and printed by tlbpol-bench.c. */
extern struct fig r_submit_nf, r_decide_nf, r_enq_stride, r_enq_adj; /* 1, 2 */
extern struct fig r_flush_stride, r_flush_adj;                       /* 3 */
extern double r_clock;  /* a back-to-back clock_gettime() pair, ns */
extern struct fig r_ipi;                                             /* 4 */

struct scaling {
	double one, two;        /* medians, ops/s */
	double ratio, lo, hi;   /* median, min and max of the paired 2T/1T ratios */
	double share;           /* smallest on-CPU share of any thread in any run kept */
	unsigned retaken;       /* pairs run again: a thread lost its CPU */
	uint64_t ipis;
	int pinned;
};
extern struct scaling r_thr, r_ctl;                                  /* 5 */

/* bench_hot.c */
void bench_noflush(void);
void bench_enqueue(void);
void bench_flush(void);
void bench_ipi(void);
/* bench_threads.c */
void bench_threads(void);

#endif
