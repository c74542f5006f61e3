/* SPDX-License-Identifier: MIT */
/*
 * bench_hot.c - benches 1 to 4, the single-thread hot paths: a no-flush
 * decision, a deferred page enqueued, a batch flushed, an inbox served.
 * Each runs on engines whose flushes do nothing and whose interrupts are
 * delivered at once, timed loop by loop beside an empty-call twin of the
 * same shape.  Called by tlbpol-bench.c; calls bench_sample.c (bench.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

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

struct fig r_submit_nf, r_decide_nf, r_enq_stride, r_enq_adj;

/* 1. A decision that needs no flush: an x86 spurious write fault. */
void bench_noflush(void)
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

void bench_enqueue(void)
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
struct fig r_flush_stride, r_flush_adj;
double r_clock;

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

void bench_flush(void)
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
struct fig r_ipi;

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

void bench_ipi(void)
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
