/* SPDX-License-Identifier: MIT */
/*
 * frames.c - the free frames of --stamps: a kernel's per-CPU free lists,
 * recently freed first, past a high mark one global list; and the settle
 * latencies, every one, for the percentiles at the end of a run.  Called
 * by actions.c (which hands frames out and settles them) and machine.c
 * (at the end); calls nothing of the simulator's.
 */
#include "machine.h"

#include <stdlib.h>

/* A per-CPU list holds this many; the rest goes to one global list, which a
 * CPU whose own is empty takes from (Linux's per-CPU pageset and its high
 * mark, then the buddy allocator). */
#define FRAMES_PER_CPU 512

void frames_push(struct frame_list *l, struct free_frame f)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = f;
}

void frames_fini(void *frames)
{
	struct cpu_frames *fl = frames;

	if (!fl)
		return;
	free(fl->free.v);
	free(fl->cleared.v);
	free(fl);
}

struct cpu_frames *frames_of(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (!c->frames && !(c->frames = calloc(1, sizeof(struct cpu_frames))))
		abort();
	return c->frames;
}

void frame_put(struct sim *s, uint32_t cpu, struct free_frame f)
{
	struct cpu_frames *fl = frames_of(s, cpu);

	if (++s->cnt.free_frames > s->cnt.free_frames_peak)
		s->cnt.free_frames_peak = s->cnt.free_frames;

	if (fl->free.n < FRAMES_PER_CPU) {
		frames_push(&fl->free, f);
		return;
	}
	if (!s->frames && !(s->frames = calloc(1, sizeof(struct frame_list))))
		abort();
	frames_push(s->frames, f);
}

void frames_global_fini(void *frames)
{
	struct frame_list *g = frames;

	if (g) {
		free(g->v);
		free(g);
	}
}

void frames_refill(struct sim *s, struct cpu_frames *fl)
{
	if (!fl->free.n && s->frames && ((struct frame_list *)s->frames)->n) {
		struct frame_list *g = s->frames;

		frames_push(&fl->free, g->v[--g->n]);
	}
}

/* Settle latencies, every one (for percentiles at the end of a run): of
 * every reuse of a stamped frame, and of those that had to wait. */
struct samples {
	double *v;
	uint64_t n, cap;
};
static struct samples settle_all, settle_waited;

static void sample(struct samples *l, double ns)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = realloc(l->v, l->cap * sizeof(double));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, uint64_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(uint64_t)(q * (double)(n - 1) + 0.5)];
}

void sim_settle_percentiles(struct sim *s)
{
	s->cnt.settle_p50 = pct(settle_all.v, settle_all.n, 0.5);
	s->cnt.settle_p99 = pct(settle_all.v, settle_all.n, 0.99);
	s->cnt.wait_p50 = pct(settle_waited.v, settle_waited.n, 0.5);
	s->cnt.wait_p99 = pct(settle_waited.v, settle_waited.n, 0.99);
	free(settle_all.v);
	free(settle_waited.v);
	settle_all.v = settle_waited.v = NULL;
	settle_all.n = settle_all.cap = settle_waited.n = settle_waited.cap = 0;
}

void frames_settle_sample(double ns, int waited)
{
	sample(&settle_all, ns);
	if (waited)
		sample(&settle_waited, ns);
}
