/* SPDX-License-Identifier: MIT */
/*
 * bench_threads.c - bench 5: threads acting as CPUs, each in its own
 * address space, enqueueing clean reclaims and flushing every batch, run
 * one and two at a time; the 2T/1T scaling, and the machine's own with
 * empty calls in the same loop.  Interrupts go through support/cpus.h's
 * mailbox host.
 * Called by tlbpol-bench.c; calls bench_sample.c (bench.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "support/cpus.h"

/* ------------------------------------------------------------------------ */
/* 5. Threads acting as CPUs                                                */
/* ------------------------------------------------------------------------ */

/*
 * The host is support/cpus.h's mailbox host, as in the tests that run
 * threads as CPUs: its ops->relax yields where this loop would pause, but
 * relax runs only while a flush waits for other CPUs, and here none does
 * (each CPU flushes its own address space: no interrupt is sent, and the
 * report shows that none was).
 */
struct tctx {
	struct cpus_mbox host;        /* ops_ctx: the engine, the mailboxes */
	struct mbox ipi[MAX_THREADS]; /* a cache line each: polled in the loop */
	_Alignas(CACHELINE) atomic_int ready;
	atomic_int go;
	_Alignas(CACHELINE) atomic_int stop;
};

struct tthread {
	_Alignas(CACHELINE) struct tctx *m;
	uint32_t cpu;
	int control; /* empty calls instead of the engine */
	int pinned;
	struct tlbpol_as *as;
	uint64_t ops, served, t0, t1, cpu_ns;
};

/* After every call of the timed loop: a plain load while nothing is sent. */
static inline uint64_t t_poll(struct tctx *m, uint32_t cpu)
{
	return (uint64_t)cpus_mbox_take(&m->host, cpu);
}

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
				empty_fp(m->host.eng, t->as, t->cpu, &ev, NULL);
			} else {
				int err = tlbpol_submit(m->host.eng, t->as, t->cpu, &ev, NULL);

				if (err)
					die("tlbpol_submit", err);
			}
			served += t_poll(m, t->cpu);
		}
		n = t->control ? empty_fp(m->host.eng, t->as, t->cpu, &ev, NULL) + BATCH
			       : tlbpol_flush(m->host.eng, t->cpu, TLBPOL_BY_FREE);
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
	pthread_t th[MAX_THREADS];
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
	cfg.ops = &cpus_mbox_ops;
	cfg.ops_ctx = &m.host;
	m.host.nr_cpus = MAX_THREADS;
	m.host.box = m.ipi;
	if ((err = tlbpol_engine_new(&cfg, &m.host.eng)))
		die("tlbpol_engine_new", err);
	for (uint32_t c = 0; c < MAX_THREADS; c++)
		if ((err = tlbpol_as_open(m.host.eng, 100 + c, &as[c])))
			die("tlbpol_as_open", err);
	/* Each CPU in its own address space's footprint only. */
	for (uint32_t c = 0; c < nthreads; c++)
		if ((err = tlbpol_switch(m.host.eng, c, as[c], NULL)))
			die("tlbpol_switch", err);
	for (uint32_t c = 0; c < nthreads; c++) {
		t[c].m = &m;
		t[c].cpu = c;
		t[c].control = control;
		t[c].as = as[c];
	}
	cpus_start_args(th, nthreads, t_main, t, sizeof(t[0]));
	while (atomic_load(&m.ready) < (int)nthreads)
		sched_yield();
	atomic_store(&m.go, 1);
	sleep_ns((uint64_t)(seconds * 1e9));
	atomic_store(&m.stop, 1);
	cpus_join(th, 0, nthreads);
	*pinned = 1;
	*share = 1;
	for (uint32_t c = 0; c < nthreads; c++) {
		double sh = (double)t[c].cpu_ns / (double)(t[c].t1 - t[c].t0);
		if (sh < *share)
			*share = sh;
		if (t[c].t0 < start)
			start = t[c].t0;
		if (t[c].t1 > end)
			end = t[c].t1;
		ops += t[c].ops;
		*pinned &= t[c].pinned;
	}
	tlbpol_stats_read(m.host.eng, -1, &st);
	*ipis = st.ipis_sent;
	if (!control && st.events != ops)
		die("threads: events not counted", (long)st.events);
	tlbpol_engine_free(m.host.eng);
	return (double)ops * 1e9 / (double)(end - start);
}

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

struct scaling r_thr, r_ctl;

void bench_threads(void)
{
	scaling(&r_thr, 0, opt.seconds, opt.reps);
	/* The machine's own scaling: the same loop with empty calls. */
	scaling(&r_ctl, 1, opt.seconds / 2, opt.reps);
}
