/* SPDX-License-Identifier: MIT */
/*
 * sched.c - threads on the modelled CPUs, scheduled as a kernel does, and
 * the run loop.
 *
 * Each CPU has a run queue.  The running thread takes steps of its
 * workload; between two steps it may block (sim_block: a sleep, a futex
 * wait, I/O), be preempted when its slice is over and another thread waits
 * for the CPU, or end.  A blocked thread is woken by its CPU's timer; it is
 * placed where Linux's select_idle_sibling() would place it: its own CPU if
 * that is free, else an idle one (woken by a reschedule interrupt), else
 * its own CPU's queue.  A CPU entering idle first pulls a waiting thread
 * from a busy CPU's queue (newidle balance).  A CPU with nothing to run
 * goes idle as Linux's does: it switches to no address space, keeping the
 * last one loaded (lazy TLB mode: tlbpol_switch(NULL)), and tells the
 * engine it is IDLE, so that with RULE_LAZY_CPUS it is spared the flushes
 * that lazy CPUs may skip.  A context switch costs ctx_switch_ns, and one
 * between address spaces is a tlbpol_switch() with what it implies.
 *
 * When every thread is done and no CPU has anything left, each CPU
 * completes what is still pending (tlbpol_flush(BY_LAZY)), so every
 * deferred free runs and the oracle sees every completion.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

static void enqueue(struct sim *s, uint32_t cpu, struct sim_thread *t)
{
	struct sim_cpu *c = &s->cpus[cpu];

	t->state = TH_RUNNABLE;
	t->cpu = cpu;
	t->rq_next = NULL;
	if (c->rq_tail)
		c->rq_tail->rq_next = t;
	else
		c->rq_head = t;
	c->rq_tail = t;
	c->nr_queued++;
}

static struct sim_thread *dequeue(struct sim_cpu *c, int unpinned_only)
{
	struct sim_thread **pp = &c->rq_head, *prev = NULL;

	while (*pp && unpinned_only && (*pp)->pinned) {
		prev = *pp;
		pp = &(*pp)->rq_next;
	}
	if (!*pp)
		return NULL;
	{
		struct sim_thread *t = *pp;

		*pp = t->rq_next;
		if (c->rq_tail == t)
			c->rq_tail = prev;
		c->nr_queued--;
		t->rq_next = NULL;
		return t;
	}
}

static int cpu_free(const struct sim_cpu *c)
{
	return !c->cur && !c->rq_head;
}

/* Where a thread that wakes (or is made) on @cpu runs: @cpu if free, else
 * the first free CPU after it, else @cpu's queue. */
static uint32_t place(struct sim *s, uint32_t cpu, const struct sim_thread *t)
{
	if (t->pinned || cpu_free(&s->cpus[cpu]))
		return cpu;
	for (uint32_t k = 1; k < s->cfg.ncpus; k++) {
		uint32_t o = (cpu + k) % s->cfg.ncpus;

		if (cpu_free(&s->cpus[o]) && s->cpus[o].mode != MODE_PREEMPTED)
			return o;
	}
	return cpu;
}

/* Make @t runnable, seen from @cpu at its clock. */
static void wake(struct sim *s, uint32_t cpu, struct sim_thread *t)
{
	uint32_t to = place(s, cpu, t);

	enqueue(s, to, t);
	if (to != cpu) {
		/* A reschedule interrupt (not a TLB one) wakes the idle CPU. */
		sim_kick(s, to, s->cpus[cpu].clock + s->cfg.cost.wakeup_ns);
	}
}

int sim_thread_new(struct sim *s, int32_t as, uint32_t cpu, int pinned)
{
	struct sim_thread *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	if (s->nthreads == s->threads_cap) {
		uint32_t cap = s->threads_cap ? s->threads_cap * 2 : 64;
		struct sim_thread **n = realloc(s->threads, cap * sizeof(*n));

		if (!n) {
			free(t);
			return -1;
		}
		s->threads = n;
		s->threads_cap = cap;
	}
	t->id = s->nthreads;
	t->as = as;
	t->pinned = pinned;
	s->threads[s->nthreads++] = t;
	if (s->running == UINT32_MAX)
		enqueue(s, cpu, t); /* set-up: where it was asked */
	else
		wake(s, s->running, t); /* made by the running CPU (clone) */
	return (int)t->id;
}

struct sim_thread *sim_current(struct sim *s, uint32_t cpu)
{
	return s->cpus[cpu].cur;
}

void sim_block(struct sim *s, uint32_t cpu, double ns)
{
	struct sim_thread *t = s->cpus[cpu].cur;

	t->state = TH_BLOCKED;
	t->wake_at = s->cpus[cpu].clock + ns;
}

void sim_thread_exec(struct sim *s, uint32_t cpu, int32_t as)
{
	struct sim_thread *t = s->cpus[cpu].cur;

	t->as = as;
	sim_switch(s, cpu, as);
}

/* clock.c's hook: wake the threads due on @cpu; the next wake-up. */
static double timers(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];
	struct sim_thread **pp = &c->blocked;
	double next = INFINITY;

	if (c->next_wake > c->clock)
		return c->next_wake;
	while (*pp) {
		struct sim_thread *t = *pp;

		if (t->wake_at <= c->clock) {
			*pp = t->rq_next;
			wake(s, cpu, t);
		} else {
			if (t->wake_at < next)
				next = t->wake_at;
			pp = &t->rq_next;
		}
	}
	c->next_wake = next;
	return next;
}

static void block_here(struct sim_cpu *c, struct sim_thread *t)
{
	t->rq_next = c->blocked;
	c->blocked = t;
	if (t->wake_at < c->next_wake)
		c->next_wake = t->wake_at;
}

/* Start running @t on @cpu. */
static void dispatch(struct sim *s, uint32_t cpu, struct sim_thread *t)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (c->mode == MODE_IDLE)
		sim_set_mode(s, cpu, MODE_RUN);
	/* The first thread a CPU runs is where its scenario's set-up put it:
	 * no switch to pay for. */
	if (c->dispatched++ || t->as != c->as) {
		sim_charge(s, cpu, s->cfg.cost.ctx_switch_ns);
	}
	if (t->as != c->as)
		sim_switch(s, cpu, t->as);
	t->state = TH_RUNNING;
	t->cpu = cpu;
	c->cur = t;
	c->slice_start = c->clock;
}

/* A thread for @cpu: its own queue's first, else one pulled from the
 * busiest queue (newidle balance); NULL if none. */
static struct sim_thread *pick(struct sim *s, uint32_t cpu)
{
	struct sim_thread *t = dequeue(&s->cpus[cpu], 0);
	uint32_t busiest = UINT32_MAX;

	if (t)
		return t;
	for (uint32_t o = 0; o < s->cfg.ncpus; o++)
		if (o != cpu && s->cpus[o].nr_queued &&
		    (busiest == UINT32_MAX || s->cpus[o].nr_queued > s->cpus[busiest].nr_queued))
			busiest = o;
	return busiest == UINT32_MAX ? NULL : dequeue(&s->cpus[busiest], 1);
}

static void go_idle(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (c->mode == MODE_IDLE)
		return;
	if (c->as >= 0)
		sim_switch(s, cpu, -1); /* lazy: the old one stays loaded */
	sim_set_mode(s, cpu, MODE_IDLE);
}

static void idle(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	go_idle(s, cpu);
	if (s->final && !c->final_done) {
		/* Complete everything still pending here. */
		c->final_done = 1;
		sim_flush(s, cpu, TLBPOL_BY_LAZY);
	}
	sim_sleep_until(s, cpu, INFINITY);
}

static void cpu_main(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	for (;;) {
		struct sim_thread *t = c->cur;

		if (!t) {
			t = pick(s, cpu);
			if (!t) {
				idle(s, cpu);
				continue;
			}
			dispatch(s, cpu, t);
		}
		sim_tick_if_due(s, cpu);
		c->ops++;
		if (!s->wl->step(s, cpu)) {
			t->state = TH_DONE;
			c->cur = NULL;
		} else if (t->state == TH_BLOCKED) {
			/* Its wake-up is this CPU's timer. */
			c->cur = NULL;
			block_here(c, t);
		} else if (c->rq_head && c->clock - c->slice_start >= s->cfg.cost.sched_slice_ns) {
			c->cur = NULL;
			enqueue(s, cpu, t); /* its slice is over: to the back */
		}
		if (s->cfg.probe && c->as >= 0 && c->mode == MODE_RUN)
			sim_probe(s, cpu, (uint32_t)c->as);
		sim_yield(s, cpu);
	}
}

int sim_run(struct sim *s)
{
	clock_timers = timers;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		s->cpus[c].next_wake = INFINITY;
	if (!s->nthreads)
		for (uint32_t c = 0; c < s->cfg.ncpus; c++)
			if (sim_thread_new(s, s->cpus[c].as, c, 1) < 0)
				return -1;
	if (clock_init(s, cpu_main))
		return -1;
	clock_run(s);
	if (s->wl->finish)
		s->wl->finish(s);
	/* The last phase: every CPU completes what it has pending. */
	s->final = 1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		sim_kick(s, c, s->cpus[c].clock);
	clock_run(s);
	clock_fini(s);
	return 0;
}
