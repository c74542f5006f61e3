/* SPDX-License-Identifier: MIT */
/*
 * bench_sample.c - how tlbpol-bench takes its figures: the options' values,
 * sample arrays and medians, a figure from an operation's samples and its
 * empty twin's, the retake of samples taken off the CPU, pinning, and the
 * empty call every operation is compared with.  Called by every other
 * file of the bench (bench.h); calls only libc.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

struct bench_opt opt = { 1000000, 0.25, 11, 1, TLBPOL_RULES_DEFAULT };

void die(const char *what, long v)
{
	fprintf(stderr, "tlbpol-bench: %s (%ld)\n", what, v);
	exit(1);
}

double *samples(unsigned rows, unsigned n)
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

double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct fig fig_of(const double *op, const double *empty, unsigned n)
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

unsigned retaken;
uint64_t retake_ns;
double worst_share = 1;

int may_retake(unsigned try, uint64_t ns)
{
	if (try >= MAX_TRIES || retake_ns >= RETAKE_BUDGET_NS)
		return 0;
	retake_ns += ns;
	return 1;
}

int pin_to(int cpu)
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

op_fn volatile empty_fp = empty_op;
