/* SPDX-License-Identifier: MIT */
/*
 * tlbpol-bench - micro-benchmarks of libtlbpol's hot paths, each beside the
 * cost of an empty call through a function pointer measured in the same run.
 *
 *   1. a decision that needs no flush (x86 spurious write fault), through
 *      tlbpol_submit() and tlbpol_decide();
 *   2. a deferred page enqueued (clean RECLAIM joining the batch), pages two
 *      apart (one batch entry each) and adjacent (merged into one entry);
 *   3. tlbpol_flush(BY_FREE) of a 512-page batch, 4 CPUs in the footprint,
 *      interrupts delivered synchronously from send_ipi;
 *   4. tlbpol_handle_ipi() serving an inbox filled by 4 initiators (LAZY_OK
 *      unmaps posted by tlbpol_tick(), no interrupt);
 *   5. 1 and 2 threads, each one CPU in its own address space, enqueueing
 *      clean reclaims and flushing every 512 pages: ops/s and scaling.
 *
 * Every figure is the median of --reps samples taken with
 * clock_gettime(CLOCK_MONOTONIC).  Loops of many calls are timed as a whole;
 * calls that need untimed set-up before each one (3, 4) are timed one by one
 * and the cost of a back-to-back clock_gettime() pair, measured in the same
 * sample, is subtracted.  The empty call is timed with the same structure as
 * the operation it is compared with, alternately with it, and each ratio is
 * the median of the per-sample ratios.  A sample during which the thread was
 * off its CPU is taken again (within a time budget), and the lowest on-CPU
 * share kept is printed: on a machine shared with other work the figures are
 * flagged as unreliable rather than silently inflated.  (Under Linux
 * autogroup scheduling, `nice` alone does not help against other sessions;
 * `setsid sh -c 'echo -20 > /proc/self/autogroup; exec nice -n -20
 * tlbpol-bench'` does, as root.)
 *
 * Usage: tlbpol-bench [--iters N] [--seconds S] [--reps R] [--no-pin] [--rules MASK]
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tlbpol/tlbpol.h>

#include "support/mailbox.h"
#include "support/timing.h"
#include "support/cli.h"

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

/* ------------------------------------------------------------------------ */
/* Options, timing, helpers                                                 */
/* ------------------------------------------------------------------------ */

static struct {
	uint64_t iters;  /* calls per sample of the tight loops */
	double seconds;  /* length of each threads run (the control's: half) */
	unsigned reps;   /* samples per figure (median) */
	int pin;
	uint64_t rules;  /* every engine's (--rules) */
} opt = { 1000000, 0.25, 11, 1, TLBPOL_RULES_DEFAULT };

static void die(const char *what, long v)
{
	fprintf(stderr, "tlbpol-bench: %s (%ld)\n", what, v);
	exit(1);
}

/* @rows arrays of @n samples, zeroed, in one block (row k at k * @n): one
 * allocation to check and one free() per figure. */
static double *samples(unsigned rows, unsigned n)
{
	double *v = calloc((size_t)rows * n, sizeof(double));

	if (!v)
		die("out of memory", 0);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

static struct fig fig_of(const double *op, const double *empty, unsigned n)
{
	struct fig f;
	double *q = samples(3, n), *o = q + n, *e = q + 2 * n;
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		o[i] = op[i];
		e[i] = empty[i];
		if (empty[i] > 0)
			q[k++] = op[i] / empty[i];
	}
	f.ns = median(o, n);
	f.empty = median(e, n);
	f.ratio = k == n ? median(q, n) : f.ns / f.empty;
	f.lo = k == n ? q[0] : f.ratio;
	f.hi = k == n ? q[n - 1] : f.ratio;
	free(q);
	return f;
}

/*
 * Other programs may share this machine: a sample during which this thread
 * was off its CPU more than 3% of the time is taken again, up to MAX_TRIES
 * times and as long as retakes have cost less than RETAKE_BUDGET_NS in all;
 * then the last try is kept, and the lowest on-CPU share kept is shown.
 */
#define MIN_SHARE 0.97
#define MAX_TRIES 8
#define RETAKE_BUDGET_NS 5000000000ULL
static unsigned retaken;
static uint64_t retake_ns;
static double worst_share = 1;

static int may_retake(unsigned try, uint64_t ns)
{
	if (try >= MAX_TRIES || retake_ns >= RETAKE_BUDGET_NS)
		return 0;
	retake_ns += ns;
	return 1;
}

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
static size_t stack_shift(unsigned r)
{
	return 64 + (((size_t)r * 4096 / opt.reps) & ~(size_t)63);
}

#define SHIFT_STACK_TO_PAGE()                                                  \
	char page_[((uintptr_t)__builtin_frame_address(0) & 4095) + 64];      \
	__asm__ __volatile__("" : : "r"(page_) : "memory")

#define SHIFT_STACK(r)                                                         \
	char pad_[stack_shift(r)];                                             \
	__asm__ __volatile__("" : : "r"(pad_) : "memory")

static int pin_to(int cpu)
{
	cpu_set_t set;

	if (!opt.pin)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/*
 * The baseline: an empty function the compiler cannot inline or drop, called
 * through a volatile function pointer, with tlbpol_submit()'s signature so
 * the loops pass the same arguments.
 */
typedef int (*op_fn)(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
		     const struct tlbpol_event *ev, struct tlbpol_decision *out);

__attribute__((noinline, aligned(64))) static int
empty_op(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
	 const struct tlbpol_event *ev, struct tlbpol_decision *out)
{
	(void)eng;
	(void)as;
	(void)cpu;
	(void)ev;
	(void)out;
	__asm__ __volatile__("" ::: "memory");
	return 0;
}

static op_fn volatile empty_fp = empty_op;

static struct tlbpol_event event(uint32_t kind, uint32_t flags, uint64_t va, uint32_t old_pte,
				 uint32_t new_pte)
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

/* ------------------------------------------------------------------------ */
/* Single-threaded engines: no-op flushes, interrupts delivered at once      */
/* ------------------------------------------------------------------------ */

struct sctx {
	struct tlbpol_engine *eng;
	uint64_t flushes;    /* flush_local calls */
	uint64_t ipi_calls;  /* send_ipi calls */
};

static void s_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)cpu;
	(void)f;
	((struct sctx *)ctx)->flushes++;
}

/* As support/harness.h: deliver by calling the target's handler right away. */
static void s_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct sctx *s = ctx;

	(void)from;
	s->ipi_calls++;
	for (int c = tlbpol_cpuset_next(t, -1); c >= 0; c = tlbpol_cpuset_next(t, c))
		if (tlbpol_handle_ipi(s->eng, (uint32_t)c) < 0)
			die("tlbpol_handle_ipi from send_ipi failed", c);
}

static const struct tlbpol_ops s_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = s_flush_local,
	.send_ipi = s_send_ipi,
};

/* An x86 engine of @ncpu CPUs, default rules, every CPU running one AS. */
static struct tlbpol_as *s_engine(struct sctx *s, uint32_t ncpu, uint32_t batch_pages)
{
	struct tlbpol_config cfg;
	struct tlbpol_as *as;
	int err;

	memset(s, 0, sizeof(*s));
	tlbpol_config_init(&cfg, ncpu, TLBPOL_ARCH_X86_64);
	cfg.rules = opt.rules;
	cfg.batch_pages = batch_pages;
	cfg.ops = &s_ops;
	cfg.ops_ctx = s;
	err = tlbpol_engine_new(&cfg, &s->eng);
	if (err)
		die("tlbpol_engine_new", err);
	if ((err = tlbpol_as_open(s->eng, 1, &as)))
		die("tlbpol_as_open", err);
	for (uint32_t c = 0; c < ncpu; c++)
		if ((err = tlbpol_switch(s->eng, c, as, NULL)))
			die("tlbpol_switch", err);
	return as;
}

/* ------------------------------------------------------------------------ */
/* Timed loops.  Each operation loop has an empty-call twin of the same shape */
/* ------------------------------------------------------------------------ */

static double clock_pair_ns(void)
{
	double v[1001];

	for (unsigned i = 0; i < 1001; i++) {
		uint64_t t0 = now_ns(), t1 = now_ns();

		v[i] = (double)(t1 - t0);
	}
	return median(v, 1001);
}

/*
 * The timed loops are functions of their own, never inlined and aligned
 * alike, so that an operation's loop and its empty twin compile to the same
 * code but for the call, wherever the linker puts them.
 */
#define TIMED_LOOP __attribute__((noinline, aligned(64)))

/* 1: the same event again and again (fn: submit, decide or empty). */
#define FIXED_LOOP(name, call)                                                 \
	TIMED_LOOP static double name(struct tlbpol_engine *eng,              \
				      struct tlbpol_as *as,                    \
				      const struct tlbpol_event *ev, uint64_t n) \
	{                                                                      \
		struct tlbpol_decision d;                                      \
		uint64_t t0, t1;                                               \
		int err = 0;                                                   \
                                                                               \
		t0 = now_ns();                                                 \
		for (uint64_t i = 0; i < n; i++)                               \
			err |= call;                                           \
		t1 = now_ns();                                                 \
		if (err)                                                       \
			die(#name ": call failed", err);                       \
		(void)d;                                                       \
		return (double)(t1 - t0) / (double)n;                          \
	}
FIXED_LOOP(loop_submit_fixed, tlbpol_submit(eng, as, 0, ev, NULL))
FIXED_LOOP(loop_empty_fixed, empty_fp(eng, as, 0, ev, NULL))
FIXED_LOOP(loop_decide_fixed, tlbpol_decide(eng, as, 0, ev, &d))
FIXED_LOOP(loop_empty_fixed_out, empty_fp(eng, as, 0, ev, &d))
#undef FIXED_LOOP

/* 2: one page per call at VA_BASE + (i << stride_shift). */
#define STRIDE_LOOP(name, call)                                                \
	TIMED_LOOP static uint64_t name(struct tlbpol_engine *eng,            \
					struct tlbpol_as *as,                  \
					struct tlbpol_event *ev,               \
					uint32_t stride_shift, uint64_t n)     \
	{                                                                      \
		uint64_t t0, t1;                                               \
		int err = 0;                                                   \
                                                                               \
		t0 = now_ns();                                                 \
		for (uint64_t i = 0; i < n; i++) {                             \
			ev->va = VA_BASE + (i << stride_shift);                \
			err |= call;                                           \
		}                                                              \
		t1 = now_ns();                                                 \
		if (err)                                                       \
			die(#name ": call failed", err);                       \
		return t1 - t0;                                                \
	}
STRIDE_LOOP(loop_submit_stride, tlbpol_submit(eng, as, 0, ev, NULL))
STRIDE_LOOP(loop_empty_stride, empty_fp(eng, as, 0, ev, NULL))
#undef STRIDE_LOOP

/* @per: operations per call (the row is per page or per request). */
static void print_row(const char *name, struct fig f, double per)
{
	printf("  %-56s %10.2f %10.2f %9.1fx\n", name, f.ns / per, f.empty, f.ratio / per);
}

static struct fig r_submit_nf, r_decide_nf, r_enq_stride, r_enq_adj;

/* 1. A decision that needs no flush: an x86 spurious write fault. */
static void bench_noflush(void)
{
	struct sctx s;
	struct tlbpol_as *as = s_engine(&s, 4, TLBPOL_DEFAULT_BATCH_PAGES);
	struct tlbpol_event ev = event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, VA_BASE, PTE_RW_DIRTY,
				       PTE_RW_DIRTY);
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	double *sub = samples(4, opt.reps), *dec = sub + opt.reps, *e1 = dec + opt.reps,
	       *e2 = e1 + opt.reps;
	int err;

	if ((err = tlbpol_decide(s.eng, as, 0, &ev, &d)))
		die("tlbpol_decide", err);
	if (d.action != TLBPOL_ACT_NONE || d.reason != TLBPOL_WHY_SPURIOUS)
		die("spurious fault: not a no-flush decision under these rules (--rules)", (long)d.action);
	/* warm up */
	loop_submit_fixed(s.eng, as, &ev, opt.iters / 10 + 1);
	loop_decide_fixed(s.eng, as, &ev, opt.iters / 10 + 1);
	s.flushes = s.ipi_calls = 0;
	for (unsigned r = 0; r < opt.reps; r++) {
		SHIFT_STACK(r);

		ON_CPU(e1[r] = loop_empty_fixed(s.eng, as, &ev, opt.iters);
		       sub[r] = loop_submit_fixed(s.eng, as, &ev, opt.iters));
		ON_CPU(e2[r] = loop_empty_fixed_out(s.eng, as, &ev, opt.iters);
		       dec[r] = loop_decide_fixed(s.eng, as, &ev, opt.iters));
	}
	if (s.flushes || s.ipi_calls)
		die("spurious fault: the engine flushed", (long)s.flushes);
	tlbpol_stats_read(s.eng, 0, &st);
	if (st.by_reason[TLBPOL_WHY_SPURIOUS] < opt.iters * opt.reps)
		die("spurious fault: events not counted", (long)st.events);
	r_submit_nf = fig_of(sub, e1, opt.reps);
	r_decide_nf = fig_of(dec, e2, opt.reps);
	free(sub);
	tlbpol_engine_free(s.eng);
}

/*
 * 2. A deferred page enqueued: clean RECLAIM, BY_FREE, joins the batch.
 * batch_pages is the maximum and every window of ENQ_WINDOW enqueues is
 * followed by an untimed tlbpol_flush(), so no timed call flushes.
 */
static double enqueue_sample(struct sctx *s, struct tlbpol_as *as, uint32_t stride_shift,
			     int empty)
{
	struct tlbpol_event ev = event(TLBPOL_EV_RECLAIM, 0, VA_BASE, PTE_CLEAN, 0);
	uint64_t left = opt.iters, ns = 0, done = 0;

	while (left) {
		uint64_t w = left < ENQ_WINDOW ? left : ENQ_WINDOW;
		int n;

		if (empty) {
			ns += loop_empty_stride(s->eng, as, &ev, stride_shift, w);
		} else {
			uint64_t fl = s->flushes;

			ns += loop_submit_stride(s->eng, as, &ev, stride_shift, w);
			if (s->flushes != fl)
				die("enqueue: a timed call flushed", (long)(s->flushes - fl));
			n = tlbpol_flush(s->eng, 0, TLBPOL_BY_FREE);
			if (n != (int)w)
				die("enqueue: the window's events were not all pending", n);
		}
		left -= w;
		done += w;
	}
	return (double)ns / (double)done;
}

static void bench_enqueue(void)
{
	struct sctx s;
	struct tlbpol_as *as = s_engine(&s, 4, TLBPOL_MAX_BATCH_PAGES);
	double *st = samples(3, opt.reps), *adj = st + opt.reps, *e = adj + opt.reps;
	struct tlbpol_decision d;
	struct tlbpol_event ev = event(TLBPOL_EV_RECLAIM, 0, VA_BASE, PTE_CLEAN, 0);
	int err;

	if ((err = tlbpol_decide(s.eng, as, 0, &ev, &d)))
		die("tlbpol_decide", err);
	if (d.action != TLBPOL_ACT_SHOOTDOWN || d.deadline != TLBPOL_BY_FREE ||
	    d.reason != TLBPOL_WHY_RECLAIM_CLEAN)
		die("clean reclaim: not a deferred shootdown under these rules (--rules)", (long)d.action);
	enqueue_sample(&s, as, PAGE_SHIFT + 1, 0); /* warm up */
	for (unsigned r = 0; r < opt.reps; r++) {
		SHIFT_STACK(r);

		ON_CPU(e[r] = enqueue_sample(&s, as, PAGE_SHIFT + 1, 1);
		       st[r] = enqueue_sample(&s, as, PAGE_SHIFT + 1, 0);
		       adj[r] = enqueue_sample(&s, as, PAGE_SHIFT, 0));
	}
	r_enq_adj = fig_of(adj, e, opt.reps);
	r_enq_stride = fig_of(st, e, opt.reps);
	free(st);
	tlbpol_engine_free(s.eng);
}

/* 3. tlbpol_flush(BY_FREE) of a 512-page batch, 4 CPUs in the footprint. */
static struct fig r_flush_stride, r_flush_adj;
static double r_clock;

static double flush_sample(struct sctx *s, struct tlbpol_as *as, uint32_t stride_shift,
			   uint64_t batches, int empty)
{
	struct tlbpol_event ev = event(TLBPOL_EV_RECLAIM, 0, VA_BASE, PTE_CLEAN, 0);
	double clk = clock_pair_ns();
	uint64_t ns = 0;

	for (uint64_t b = 0; b < batches; b++) {
		uint64_t t0, t1;
		int n;

		if (!empty)
			for (uint64_t i = 0; i < BATCH; i++) {
				int err;

				ev.va = VA_BASE + (i << stride_shift);
				if ((err = tlbpol_submit(s->eng, as, 0, &ev, NULL)))
					die("tlbpol_submit", err);
			}
		t0 = now_ns();
		n = empty ? empty_fp(s->eng, as, 0, &ev, NULL)
			  : tlbpol_flush(s->eng, 0, TLBPOL_BY_FREE);
		t1 = now_ns();
		if (n != (empty ? 0 : BATCH))
			die("flush: unexpected count", n);
		ns += t1 - t0;
	}
	return (double)ns / (double)batches - clk;
}

static void bench_flush(void)
{
	struct sctx s;
	struct tlbpol_as *as = s_engine(&s, 4, TLBPOL_MAX_BATCH_PAGES);
	uint64_t batches = opt.iters / 1000 + 1;
	double *st = samples(4, opt.reps), *adj = st + opt.reps, *e = adj + opt.reps,
	       *c = e + opt.reps;
	uint64_t fl, ipis;

	flush_sample(&s, as, PAGE_SHIFT + 1, batches / 10 + 1, 0); /* warm up */
	fl = s.flushes;
	ipis = s.ipi_calls;
	flush_sample(&s, as, PAGE_SHIFT + 1, 1, 0);
	/* One flush on each of the 4 CPUs, one send_ipi, per batch. */
	if (s.flushes - fl != 4 || s.ipi_calls - ipis != 1)
		die("flush: expected 4 flushes and 1 send_ipi per batch", (long)(s.flushes - fl));
	for (unsigned r = 0; r < opt.reps; r++) {
		SHIFT_STACK(r);

		ON_CPU(c[r] = clock_pair_ns();
		       e[r] = flush_sample(&s, as, PAGE_SHIFT + 1, batches, 1);
		       st[r] = flush_sample(&s, as, PAGE_SHIFT + 1, batches, 0);
		       adj[r] = flush_sample(&s, as, PAGE_SHIFT, batches, 0));
	}
	r_clock = median(c, opt.reps);
	r_flush_adj = fig_of(adj, e, opt.reps);
	r_flush_stride = fig_of(st, e, opt.reps);
	free(st);
	tlbpol_engine_free(s.eng);
}

/*
 * 4. tlbpol_handle_ipi() serving a merged inbox: each of 4 initiators
 * submits a LAZY_OK unmap of one page and ticks, which posts it to every
 * other CPU of the footprint without an interrupt; then CPU 4's handler is
 * timed.  The other CPUs are drained and the initiators reap, untimed.
 */
static struct fig r_ipi;

static double ipi_sample(struct sctx *s, struct tlbpol_as *as, uint64_t rounds, int empty)
{
	const uint32_t target = IPI_INITIATORS;
	double clk = clock_pair_ns();
	uint64_t ns = 0;

	for (uint64_t r = 0; r < rounds; r++) {
		uint64_t t0, t1;
		int n, err;

		if (!empty)
			for (uint32_t c = 0; c < IPI_INITIATORS; c++) {
				struct tlbpol_event ev =
					event(TLBPOL_EV_UNMAP, TLBPOL_EVF_LAZY_OK,
					      VA_BASE + ((uint64_t)c << PAGE_SHIFT), PTE_CLEAN, 0);

				if ((err = tlbpol_submit(s->eng, as, c, &ev, NULL)))
					die("tlbpol_submit", err);
				if ((err = tlbpol_tick(s->eng, c)))
					die("tlbpol_tick", err);
			}
		t0 = now_ns();
		n = empty ? empty_fp(s->eng, as, target, NULL, NULL)
			  : tlbpol_handle_ipi(s->eng, target);
		t1 = now_ns();
		if (n != (empty ? 0 : IPI_INITIATORS))
			die("handle_ipi: unexpected number of requests served", n);
		ns += t1 - t0;
		if (!empty) {
			for (uint32_t c = 0; c < IPI_INITIATORS; c++)
				if (tlbpol_handle_ipi(s->eng, c) < 0)
					die("tlbpol_handle_ipi", (long)c);
			for (uint32_t c = 0; c < IPI_INITIATORS; c++)
				if ((err = tlbpol_tick(s->eng, c)))
					die("tlbpol_tick", err);
		}
	}
	return (double)ns / (double)rounds - clk;
}

static void bench_ipi(void)
{
	struct sctx s;
	struct tlbpol_as *as = s_engine(&s, IPI_INITIATORS + 1, TLBPOL_DEFAULT_BATCH_PAGES);
	uint64_t rounds = opt.iters / 50 + 1;
	double *v = samples(2, opt.reps), *e = v + opt.reps;
	struct tlbpol_stats before, after;

	ipi_sample(&s, as, rounds / 10 + 1, 0); /* warm up */
	tlbpol_stats_read(s.eng, IPI_INITIATORS, &before);
	ipi_sample(&s, as, 1, 0);
	tlbpol_stats_read(s.eng, IPI_INITIATORS, &after);
	if (after.remote_flushes - before.remote_flushes != 1 || s.ipi_calls)
		die("handle_ipi: expected one merged flush and no interrupt",
		    (long)(after.remote_flushes - before.remote_flushes));
	for (unsigned r = 0; r < opt.reps; r++) {
		SHIFT_STACK(r);

		ON_CPU(e[r] = ipi_sample(&s, as, rounds, 1); v[r] = ipi_sample(&s, as, rounds, 0));
	}
	r_ipi = fig_of(v, e, opt.reps);
	free(v);
	tlbpol_engine_free(s.eng);
}

/* ------------------------------------------------------------------------ */
/* 5. Threads acting as CPUs                                                */
/* ------------------------------------------------------------------------ */

struct tctx {
	struct tlbpol_engine *eng;
	struct mbox ipi[MAX_THREADS]; /* a cache line each: polled in the loop */
	_Alignas(CACHELINE) atomic_int ready;
	atomic_int go;
	_Alignas(CACHELINE) atomic_int stop;
};

struct tthread {
	_Alignas(CACHELINE) struct tctx *m;
	pthread_t th;
	uint32_t cpu;
	int control; /* empty calls instead of the engine */
	int pinned;
	struct tlbpol_as *as;
	uint64_t ops, served, t0, t1, cpu_ns;
};

static void t_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx;
	(void)cpu;
	(void)f;
}

static void t_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct tctx *m = ctx;

	(void)from;
	mbox_send(m->ipi, MAX_THREADS, t);
}

/* After every call of the timed loop: a plain load while nothing is sent. */
static inline uint64_t t_poll(struct tctx *m, uint32_t cpu)
{
	int n = mbox_serve(m->ipi, m->eng, cpu);

	if (n < 0)
		die("tlbpol_handle_ipi", n);
	return (uint64_t)n;
}

static void t_relax(void *ctx, uint32_t cpu)
{
	t_poll(ctx, cpu);
	cpu_relax();
}

static const struct tlbpol_ops t_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = t_flush_local,
	.send_ipi = t_send_ipi,
	.relax = t_relax,
};

static void *t_main(void *p)
{
	struct tthread *t = p;
	struct tctx *m = t->m;
	struct tlbpol_event ev = event(TLBPOL_EV_RECLAIM, 0, VA_BASE, PTE_CLEAN, 0);
	uint64_t i = 0, ops = 0, served = 0;

	t->pinned = pin_to((int)t->cpu);
	atomic_fetch_add(&m->ready, 1);
	while (!atomic_load(&m->go))
		cpu_relax();
	t->cpu_ns = thread_cpu_ns();
	t->t0 = now_ns();
	while (!atomic_load_explicit(&m->stop, memory_order_relaxed)) {
		int n;

		for (uint32_t j = 0; j < BATCH; j++, i++) {
			/* distinct pages, two apart: one batch entry each */
			ev.va = VA_BASE + ((i & ((1ULL << 24) - 1)) << (PAGE_SHIFT + 1));
			if (t->control) {
				empty_fp(m->eng, t->as, t->cpu, &ev, NULL);
			} else {
				int err = tlbpol_submit(m->eng, t->as, t->cpu, &ev, NULL);

				if (err)
					die("tlbpol_submit", err);
			}
			served += t_poll(m, t->cpu);
		}
		n = t->control ? empty_fp(m->eng, t->as, t->cpu, &ev, NULL) + BATCH
			       : tlbpol_flush(m->eng, t->cpu, TLBPOL_BY_FREE);
		if (n != BATCH)
			die("threads: tlbpol_flush did not complete the batch", n);
		served += t_poll(m, t->cpu);
		ops += BATCH;
	}
	t->t1 = now_ns();
	t->cpu_ns = thread_cpu_ns() - t->cpu_ns;
	t->ops = ops;
	t->served = served;
	return NULL;
}

/*
 * Ops per second of @nthreads threads; *@ipis: interrupts sent (0 expected);
 * *@share: the smallest share of the run any thread spent on a CPU.
 */
static double run_threads(uint32_t nthreads, int control, double seconds, uint64_t *ipis,
			  int *pinned, double *share)
{
	static struct tctx m;
	struct tthread t[MAX_THREADS];
	struct tlbpol_as *as[MAX_THREADS];
	struct tlbpol_config cfg;
	struct tlbpol_stats st;
	uint64_t start = ~0ULL, end = 0, ops = 0;
	int err;

	memset(&m, 0, sizeof(m));
	memset(t, 0, sizeof(t));
	tlbpol_config_init(&cfg, MAX_THREADS, TLBPOL_ARCH_X86_64);
	cfg.rules = opt.rules;
	cfg.batch_pages = TLBPOL_MAX_BATCH_PAGES; /* the explicit flush every 512 does the work */
	cfg.ops = &t_ops;
	cfg.ops_ctx = &m;
	if ((err = tlbpol_engine_new(&cfg, &m.eng)))
		die("tlbpol_engine_new", err);
	for (uint32_t c = 0; c < MAX_THREADS; c++)
		if ((err = tlbpol_as_open(m.eng, 100 + c, &as[c])))
			die("tlbpol_as_open", err);
	/* Each CPU in its own address space's footprint only. */
	for (uint32_t c = 0; c < nthreads; c++)
		if ((err = tlbpol_switch(m.eng, c, as[c], NULL)))
			die("tlbpol_switch", err);
	for (uint32_t c = 0; c < nthreads; c++) {
		t[c].m = &m;
		t[c].cpu = c;
		t[c].control = control;
		t[c].as = as[c];
		if (pthread_create(&t[c].th, NULL, t_main, &t[c]))
			die("pthread_create", (long)c);
	}
	while (atomic_load(&m.ready) < (int)nthreads)
		sched_yield();
	atomic_store(&m.go, 1);
	sleep_ns((uint64_t)(seconds * 1e9));
	atomic_store(&m.stop, 1);
	*pinned = 1;
	*share = 1;
	for (uint32_t c = 0; c < nthreads; c++) {
		double sh;

		pthread_join(t[c].th, NULL);
		sh = (double)t[c].cpu_ns / (double)(t[c].t1 - t[c].t0);
		if (sh < *share)
			*share = sh;
		if (t[c].t0 < start)
			start = t[c].t0;
		if (t[c].t1 > end)
			end = t[c].t1;
		ops += t[c].ops;
		*pinned &= t[c].pinned;
	}
	tlbpol_stats_read(m.eng, -1, &st);
	*ipis = st.ipis_sent;
	if (!control && st.events != ops)
		die("threads: events not counted", (long)st.events);
	tlbpol_engine_free(m.eng);
	return (double)ops * 1e9 / (double)(end - start);
}

struct scaling {
	double one, two;        /* medians, ops/s */
	double ratio, lo, hi;   /* median, min and max of the paired 2T/1T ratios */
	double share;           /* smallest on-CPU share of any thread in any run kept */
	unsigned retaken;       /* pairs run again: a thread lost its CPU */
	uint64_t ipis;
	int pinned;
};

/*
 * 1-thread and 2-thread runs alternate, and each pair gives one ratio: the
 * load other guests put on the host drifts, and a pair taken back to back
 * sees about the same.  The median of the pairs' ratios is reported.
 */
static void scaling(struct scaling *out, int control, double seconds, unsigned pairs)
{
	double *a = samples(3, pairs), *b = a + pairs, *q = b + pairs;

	memset(out, 0, sizeof(*out));
	out->pinned = 1;
	out->share = 1;
	for (unsigned r = 0; r < pairs; r++) {
		for (unsigned try = 1;; try++) {
			uint64_t ipis, t0 = now_ns();
			double share1, share2;
			int pinned;

			a[r] = run_threads(1, control, seconds, &ipis, &pinned, &share1);
			out->ipis += ipis;
			out->pinned &= pinned;
			b[r] = run_threads(2, control, seconds, &ipis, &pinned, &share2);
			out->ipis += ipis;
			out->pinned &= pinned;
			if (share2 < share1)
				share1 = share2;
			if (share1 >= MIN_SHARE || !may_retake(try, now_ns() - t0)) {
				out->share = share1 < out->share ? share1 : out->share;
				break;
			}
			out->retaken++;
		}
		q[r] = b[r] / a[r];
	}
	out->one = median(a, pairs);
	out->two = median(b, pairs);
	out->ratio = median(q, pairs); /* sorts q */
	out->lo = q[0];
	out->hi = q[pairs - 1];
	free(a);
}

static struct scaling r_thr, r_ctl;

static void bench_threads(void)
{
	scaling(&r_thr, 0, opt.seconds, opt.reps);
	/* The machine's own scaling: the same loop with empty calls. */
	scaling(&r_ctl, 1, opt.seconds / 2, opt.reps);
}

/* ------------------------------------------------------------------------ */

/*
 * The value of @key in a "key : value" line (/proc/cpuinfo, lscpu) into
 * @out; 0 if @line is not @key's or its value is empty.
 */
static int field(const char *line, const char *key, char *out, size_t n)
{
	size_t k = strlen(key);
	const char *v;

	if (strncmp(line, key, k) || !(v = strchr(line + k, ':')))
		return 0;
	for (v++; *v == ' ' || *v == '\t'; v++)
		;
	snprintf(out, n, "%s", v);
	out[strcspn(out, "\n")] = 0;
	return out[0] != 0;
}

/*
 * The CPU model, for the output header: the figures mean little without
 * it.  /proc/cpuinfo's "model name" (x86, and arm64 kernels that have
 * one); else lscpu's "Model name", which it makes from the implementer and
 * part numbers an arm64 kernel prints instead; else those raw ("Processor"
 * of 32-bit ARM kernels, "CPU part").
 */
static void cpu_model(char *model, size_t n)
{
	char line[256], raw[256] = "";
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;

	if (f) {
		while (!found && fgets(line, sizeof(line), f)) {
			found = field(line, "model name", model, n);
			if (!raw[0] && !field(line, "Processor", raw, sizeof(raw)))
				field(line, "CPU part", raw, sizeof(raw));
		}
		fclose(f);
	}
	if (!found && (f = popen("LC_ALL=C lscpu 2>/dev/null", "r"))) {
		/* Read to the end: lscpu must not die of SIGPIPE. */
		while (fgets(line, sizeof(line), f))
			if (!found)
				found = field(line, "Model name", model, n);
		pclose(f);
	}
	if (!found)
		snprintf(model, n, "%s", raw[0] ? raw : "unknown");
}

static void machine(void)
{
	char model[256];

	cpu_model(model, sizeof(model));
	printf("machine: %ld CPUs online, %s\n", sysconf(_SC_NPROCESSORS_ONLN), model);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tlbpol-bench [--iters N] [--seconds S] [--reps R] [--no-pin] [--rules MASK]\n"
		   "  --iters N    calls per sample of the tight loops (default 1000000);\n"
		   "               flushes and interrupt rounds use N/1000 and N/50\n"
		   "  --seconds S  length of each threads run (default 0.25)\n"
		   "  --reps R     samples per figure, the median is reported (default 11)\n"
		   "  --no-pin     do not pin to CPUs\n"
		   "  --rules MASK every engine's rules, as tlbpol_rules_parse() reads them\n"
		   "               (default: default); a row whose decision needs a rule the\n"
		   "               mask lacks stops the bench and says so\n"
		   "  -h, --help   this, on standard output\n");
}

/* A bad command line: what was wrong (if anything more than getopt_long()
 * said), the usage, status 2. */
static void bad_usage(const char *what, const char *arg)
{
	if (what)
		fprintf(stderr, "tlbpol-bench: %s: %s\n", what, arg);
	usage(stderr);
	exit(2);
}

/*
 * Each long option comes back from getopt_long() as the letter in its val;
 * only "h" is in the short option string, so -h is --help and the other
 * letters are no options of their own (-i is refused, as it always was).
 */
static const struct option longopts[] = {
	{ "iters", required_argument, NULL, 'i' },
	{ "seconds", required_argument, NULL, 's' },
	{ "reps", required_argument, NULL, 'r' },
	{ "no-pin", no_argument, NULL, 'P' },
	{ "rules", required_argument, NULL, 'R' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'P':
			opt.pin = 0;
			break;
		case 'i':
			if (cli_whole(optarg, 0, UINT64_MAX, &opt.iters) || opt.iters == 0)
				bad_usage("--iters: not a count", optarg);
			break;
		case 's':
			if (cli_double(optarg, 0, 3600, &opt.seconds))
				bad_usage("--seconds: not in (0, 3600)", optarg);
			break;
		case 'r': {
			uint64_t v;

			if (cli_whole(optarg, 0, 1000, &v) || v == 0)
				bad_usage("--reps: not in 1..1000", optarg);
			opt.reps = (unsigned)v;
			break;
		}
		case 'R':
			if (tlbpol_rules_parse(optarg, &opt.rules))
				bad_usage("--rules: not a rule mask", optarg);
			break;
		default: /* '?': getopt_long() said what */
			bad_usage(NULL, NULL);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument", argv[optind]);
}

static const char *verdict(int ok)
{
	return ok ? "MET" : "MISSED";
}

/* "7.8x MET" and, when the samples fall on both sides of @max, a warning. */
static void target(const char *what, struct fig f, double max)
{
	printf("%s %.1fx %s (samples %.1f .. %.1fx%s)", what, f.ratio, verdict(f.ratio <= max),
	       f.lo, f.hi, f.lo <= max && f.hi > max ? ", on both sides of the target" : "");
}

static int run(void);

int main(int argc, char **argv)
{
	parse(argc, argv);
	{
		/*
		 * Put the stack at the same offset within its page whatever
		 * address ASLR chose, so that the layouts the samples cover
		 * (see stack_shift()) are the same from run to run.
		 */
		SHIFT_STACK_TO_PAGE();

		return run();
	}
}

__attribute__((noinline)) static int run(void)
{
	int pinned;
	char name[96];

	setvbuf(stdout, NULL, _IOLBF, 0);
	pinned = pin_to(0);
	printf("tlbpol-bench: libtlbpol %s, %s\n", tlbpol_version(),
#ifdef TLBPOL_BENCH_SHARED
	       "shared library (calls through the PLT)"
#else
	       "static library"
#endif
	);
	machine();
	printf("main thread %s; iters %llu, reps %u (median), threads runs %.2f s\n",
	       pinned ? "pinned to CPU 0" : "not pinned", (unsigned long long)opt.iters,
	       opt.reps, opt.seconds);

	bench_noflush();
	bench_enqueue();
	bench_flush();
	bench_ipi();
	printf("clock_gettime() pair: %.1f ns (subtracted from calls timed one by one)\n", r_clock);
	printf("samples retaken because the CPU was shared: %u; lowest on-CPU share kept: %.1f%%%s\n\n",
	       retaken, 100 * worst_share,
	       worst_share < MIN_SHARE ? " (the machine is busy: figures are not reliable)" : "");

	printf("  %-56s %10s %10s %10s\n", "operation", "ns/op", "empty ns", "ratio");
	print_row("1 submit: x86 spurious write fault (no flush)", r_submit_nf, 1);
	print_row("1 decide: x86 spurious write fault", r_decide_nf, 1);
	print_row("2 submit: clean reclaim enqueued, pages 2 apart", r_enq_stride, 1);
	print_row("2 submit: clean reclaim enqueued, adjacent pages", r_enq_adj, 1);
	snprintf(name, sizeof(name), "3 flush BY_FREE: %d-page batch, 2 apart, 4 CPUs", BATCH);
	print_row(name, r_flush_stride, 1);
	print_row("    per page", r_flush_stride, BATCH);
	snprintf(name, sizeof(name), "3 flush BY_FREE: %d-page batch, adjacent, 4 CPUs", BATCH);
	print_row(name, r_flush_adj, 1);
	print_row("    per page", r_flush_adj, BATCH);
	snprintf(name, sizeof(name), "4 handle_ipi: inbox of %d requests, merged",
		 IPI_INITIATORS);
	print_row(name, r_ipi, 1);
	print_row("    per request served", r_ipi, IPI_INITIATORS);
	printf("  (empty ns: the empty call timed in the same loop shape: rows 1-2 in a\n"
	   "   loop of %llu calls, rows 3-4 one call at a time less the clock pair;\n"
	   "   ratio: median of the samples' op/empty ratios, per page or request\n"
	   "   on the indented rows)\n\n",
	       (unsigned long long)opt.iters);

	bench_threads();
	printf("5 threads, each one CPU in its own address space, clean reclaims 2 pages\n"
	       "  apart, tlbpol_flush(BY_FREE) every %d; %u pairs of runs of %.2f s\n"
	       "  (%s, %llu interrupts sent, every thread on a CPU >= %.1f%% of its run,\n"
	       "  %u pairs retaken%s):\n",
	       BATCH, opt.reps, opt.seconds, r_thr.pinned ? "threads pinned" : "threads not pinned",
	       (unsigned long long)r_thr.ipis, 100 * r_thr.share, r_thr.retaken,
	       r_thr.share < MIN_SHARE ? "; the machine is busy: not reliable" : "");
	printf("  1 thread : %12.0f ops/s  (%.1f ns/op)\n", r_thr.one, 1e9 / r_thr.one);
	printf("  2 threads: %12.0f ops/s  scaling 2T/1T = %.2fx (pairs: %.2f .. %.2f)\n",
	       r_thr.two, r_thr.ratio, r_thr.lo, r_thr.hi);
	printf("  control, empty calls in the same loop: 1T %.0f, 2T %.0f ops/s,\n"
	       "  scaling %.2fx (pairs: %.2f .. %.2f; on a CPU >= %.1f%%, %u pairs retaken)\n\n",
	       r_ctl.one, r_ctl.two, r_ctl.ratio, r_ctl.lo, r_ctl.hi, 100 * r_ctl.share,
	       r_ctl.retaken);

	printf("targets:\n");
	printf("  no-flush decision within 5x of an empty call:\n");
	target("    submit", r_submit_nf, 5);
	target("\n    decide", r_decide_nf, 5);
	printf("\n  enqueued page within 10x of an empty call:\n");
	target("    pages 2 apart", r_enq_stride, 10);
	target("\n    adjacent pages", r_enq_adj, 10);
	printf("\n");
	printf("  2-thread scaling >= 1.8x: %.2fx %s\n", r_thr.ratio, verdict(r_thr.ratio >= 1.8));
	return 0;
}
