/* SPDX-License-Identifier: MIT */
/*
 * clock.c - modelled time.  Every CPU runs on a coroutine of its own
 * (coro.h) and has a clock and a key: the modelled time of the next thing
 * it has to do (the end of a stretch of computation, the next turn of a
 * wait, an interrupt posted to it, a thread's wake-up).  A binary heap of
 * keys picks the CPU to run: always the earliest, ties to the lower number,
 * so a run is deterministic for its seed.  A CPU runs until it reaches a
 * point where time passes (sim_charge, a wait turn, a sleep, a step's end)
 * and another CPU's key is earlier; then it hands over, directly to that
 * CPU's coroutine.
 *
 * Why this is enough for the engine to meet hardware's orderings: when a
 * CPU runs at time T every other CPU's key is >= T, so everything that
 * happened before T anywhere has happened; an interrupt posted to a CPU
 * lowers its key to the arrival time, and the CPU serves it there, in the
 * middle of a computation or of its own wait (where the engine allows a
 * nested tlbpol_handle_ipi()), as a local APIC delivers it.  Pending
 * interrupts to one CPU coalesce (the APIC's IRR keeps one instance of a
 * vector).  A CPU inside an engine call yields only in ops->relax, so the
 * engine's code itself is never interleaved except where real CPUs
 * interleave it: at its waits.
 */
#include "sim.h"
#include "coro.h"

#include <math.h>
#include <stdlib.h>

#define CYC(s, c) ((c) / (s)->cfg.cost.cpu_ghz)
/* Enough for the engine's calls and a workload's step; reserved lazily. */
#define SIM_STACK_BYTES (256 * 1024)
/* A wait of more turns than this is reported STUCK (about 3 s modelled). */
#define SIM_MAX_TURNS 50000000ULL
/* The engine's TLBPOL_FANOUT_RECHECK (lib/core/internal.h): turns of a wait
 * after its IPI delay before it stops relying on its fan-out leaders. */
#define SIM_ENGINE_RECHECK_TURNS 256u

double (*clock_timers)(struct sim *s, uint32_t cpu);
static void (*cpu_body)(struct sim *s, uint32_t cpu);

/* ------------------------------------------------------------------------ */
/* The heap of keys                                                         */

static int before(const struct sim *s, uint32_t a, uint32_t b)
{
	double ka = s->cpus[a].key, kb = s->cpus[b].key;

	return ka < kb || (ka == kb && a < b);
}

static void heap_swap(struct sim *s, uint32_t i, uint32_t j)
{
	uint32_t t = s->heap[i];

	s->heap[i] = s->heap[j];
	s->heap[j] = t;
	s->cpus[s->heap[i]].heap_pos = i;
	s->cpus[s->heap[j]].heap_pos = j;
}

static void heap_fix(struct sim *s, uint32_t cpu)
{
	uint32_t i = s->cpus[cpu].heap_pos;

	while (i > 0 && before(s, s->heap[i], s->heap[(i - 1) / 2])) {
		heap_swap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->heap_n && before(s, s->heap[l], s->heap[m]))
			m = l;
		if (r < s->heap_n && before(s, s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			return;
		heap_swap(s, i, m);
		i = m;
	}
}

static void set_key(struct sim *s, uint32_t cpu, double key)
{
	s->cpus[cpu].key = key;
	heap_fix(s, cpu);
}

/* The earliest CPU but @cpu: the top, or if @cpu is the top one of its
 * two children; UINT32_MAX if there is none. */
static uint32_t next_other(const struct sim *s, uint32_t cpu)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t i = 0; i < 3 && i < s->heap_n; i++) {
		uint32_t o = s->heap[i];

		if (o != cpu && (best == UINT32_MAX || before(s, o, best)))
			best = o;
		if (i == 0 && o != cpu)
			break;
	}
	return best;
}

/* Must another CPU run before @cpu reaches @t? */
static int others_first(const struct sim *s, uint32_t cpu, double t)
{
	uint32_t o = next_other(s, cpu);

	return o != UINT32_MAX && (s->cpus[o].key < t || (s->cpus[o].key == t && o < cpu));
}

static double next_other_key(const struct sim *s, uint32_t cpu)
{
	uint32_t o = next_other(s, cpu);

	return o == UINT32_MAX ? INFINITY : s->cpus[o].key;
}

/* ------------------------------------------------------------------------ */
/* Handing over                                                             */

static void cpu_entry(void *arg)
{
	struct sim_cpu *c = arg;
	struct sim *s = c->sim;

	cpu_body(s, (uint32_t)(c - s->cpus));
	abort(); /* the body never returns */
}

/* @cpu's next event is at @key: run whoever is earlier, and come back when
 * @cpu is the earliest again (its key may have been lowered meanwhile by an
 * interrupt or a wake-up); its clock is then its key. */
static void suspend_until(struct sim *s, uint32_t cpu, double key)
{
	struct sim_cpu *c = &s->cpus[cpu];
	uint32_t top;

	set_key(s, cpu, key);
	top = s->heap[0];
	if (top != cpu || isinf(key)) {
		struct sim_cpu *t = &s->cpus[top];

		/* Every CPU asleep for good: back to the run loop, which ends
		 * the run or starts its last phase (sched.c). */
		s->running = isinf(t->key) ? UINT32_MAX : top;
		coro_switch(c->co, isinf(t->key) ? coro_main() : t->co);
		/* Resumed by whoever found this CPU the earliest. */
		s->running = cpu;
	}
	if (c->key > c->clock)
		c->clock = c->key;
}

/* ------------------------------------------------------------------------ */
/* Interrupts                                                               */

void clock_post_irq(struct sim *s, uint32_t cpu, double at)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (c->irq_at >= 0 && c->irq_at <= at)
		return; /* one pending instance (APIC IRR) */
	c->irq_at = at;
	if (cpu != s->running && at < c->key)
		set_key(s, cpu, at);
}

void sim_kick(struct sim *s, uint32_t cpu, double at)
{
	if (cpu != s->running && at < s->cpus[cpu].key)
		set_key(s, cpu, at);
}

/* A preempted vCPU runs nothing, interrupt handlers included, until its
 * host runs it again and it is RUNNING once more. */
static int irq_due(const struct sim_cpu *c)
{
	return c->irq_at >= 0 && c->irq_at <= c->clock && c->mode != MODE_PREEMPTED;
}

static void serve_irq(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];
	double half = CYC(s, s->cfg.cost.irq_entry_exit_cycles) / 2;
	uint32_t cause = c->cause;

	c->irq_at = -1;
	/* In a guest the exits come before the handler acknowledges (cost.h
	 * [VMX]), so the initiator waits them out; the return is native. */
	c->clock += half + (s->cfg.vm ? s->cfg.cost.vm_irq_exit_ns : 0);
	/* The handler's acknowledgement is a store other CPUs see the moment
	 * it is made, so make it only when this CPU is the earliest again,
	 * at its clock past the entry and the exits.  Without this catch-up
	 * the handler ran while the other CPUs' clocks were still at the
	 * interrupt's arrival: an initiator polling meanwhile saw its
	 * acknowledgement the entry and the exits early and ran ahead
	 * (check_causality.sh).  A loop: an interrupt posted meanwhile lowers
	 * this CPU's key and resumes it early, at that interrupt's arrival,
	 * still behind the others; serve_due() takes that one next. */
	while (s->running == cpu && others_first(s, cpu, c->clock))
		suspend_until(s, cpu, c->clock);
	s->cnt.irq_received++;
	c->cause = CAUSE_FORWARD; /* what a handler sends on (NUMA fan-out) */
	tlbpol_handle_ipi(s->eng, cpu);
	c->cause = cause;
	c->clock += half;
	s->epoch++;
}

/* The next thing due on @cpu other than its own work: an interrupt it can
 * take, a thread's wake-up. */
static double next_due(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];
	double t = clock_timers ? clock_timers(s, cpu) : INFINITY;

	if (c->irq_at >= 0 && c->mode != MODE_PREEMPTED && c->irq_at < t)
		t = c->irq_at;
	return t;
}

/* Serve what is due at @cpu's clock: interrupts (which take time) and
 * wake-ups (which sched.c's hook does, at no cost to this CPU); at most
 * @max interrupts. */
static void serve_some(struct sim *s, uint32_t cpu, unsigned max)
{
	struct sim_cpu *c = &s->cpus[cpu];

	for (unsigned n = 0;; n++) {
		if (clock_timers)
			clock_timers(s, cpu);
		if (n == max || !irq_due(c))
			return;
		serve_irq(s, cpu);
	}
}

static void serve_due(struct sim *s, uint32_t cpu)
{
	serve_some(s, cpu, ~0u);
}

/* ------------------------------------------------------------------------ */
/* Time passing                                                             */

void sim_charge(struct sim *s, uint32_t cpu, double ns)
{
	struct sim_cpu *c = &s->cpus[cpu];
	double end = c->clock + ns;

	if (s->running != cpu) { /* setup, on the run loop's stack */
		c->clock = end;
		return;
	}
	while (c->clock < end) {
		double t = end, due = next_due(s, cpu), served;

		if (due < t)
			t = due > c->clock ? due : c->clock;
		if (others_first(s, cpu, t))
			suspend_until(s, cpu, t);
		else
			c->clock = t;
		served = c->clock;
		serve_due(s, cpu);
		end += c->clock - served; /* what it cost lengthens the computation */
	}
}

void sim_sleep_until(struct sim *s, uint32_t cpu, double t)
{
	struct sim_cpu *c = &s->cpus[cpu];
	double due = next_due(s, cpu);

	if (due < t)
		t = due;
	if (t < c->clock)
		t = c->clock;
	suspend_until(s, cpu, t);
	serve_due(s, cpu);
}

void sim_yield(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	serve_due(s, cpu);
	if (others_first(s, cpu, c->clock)) {
		suspend_until(s, cpu, c->clock);
		serve_due(s, cpu);
	}
}

/*
 * One turn of a wait: serve what was posted here (the engine allows a
 * nested tlbpol_handle_ipi() in ops->relax), then let time pass by one
 * turn, relax_ns (a PAUSE and a look at the acknowledgements).  While
 * nothing anywhere has changed since the last turn (no engine call, no
 * interrupt) and the engine's delay before interrupting is over, the turns
 * until the next CPU's event would all find the same: jump to it.  The
 * engine counts turns for ipi_delay_spins, for the recheck of a NUMA
 * fan-out's leaders after the delay (SIM_ENGINE_RECHECK_TURNS more) and for
 * cfg.wait_limit, which the simulator does not set; until those are over
 * every turn is taken one by one.  (Jumping through the recheck's turns
 * made it come milliseconds late: with 512 overcommitted vCPUs a leader
 * descheduled left its node waiting until the wait limit.)
 */
void clock_relax(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];
	double t;

	if (s->running != cpu) {
		fprintf(stderr, "tlbpol-sim: cpu %u waits outside its coroutine (in setup?)\n", cpu);
		exit(2);
	}
	if (!c->turns++)
		c->wait_t0 = c->clock;
	/* One interrupt a turn: between two interrupts a CPU returns to the
	 * code they interrupted and runs some of it (x86 checks for the next
	 * only at an instruction boundary after the IRET), so a wait looks at
	 * its acknowledgements between two.  Serving all that are due here
	 * would let a stream of interrupts, each due before the last one's
	 * exits end, hold a CPU in its wait after its own request was
	 * acknowledged, for as long as the stream lasts. */
	serve_some(s, cpu, 1);
	if (c->clock - c->wait_t0 > s->wait_limit_ns) {
		/* No acknowledgement in this model takes that long: a target
		 * was never interrupted and serves only at its tick. */
		snprintf(s->error, sizeof(s->error),
			 "cpu %u waited %.3f ms for acknowledgements (the longest wait this "
			 "machine allows is %.3f ms)",
			 cpu, (c->clock - c->wait_t0) / 1e6, s->wait_limit_ns / 1e6);
		fprintf(stderr, "tlbpol-sim: %s\n", s->error);
		exit(2);
	}
	t = c->clock + s->cfg.cost.relax_ns;
	if (c->turns > (uint64_t)s->ipi_delay_spins + 1 + SIM_ENGINE_RECHECK_TURNS &&
	    c->seen_epoch == s->epoch &&
	    !irq_due(c)) {
		double o = next_other_key(s, cpu), due = next_due(s, cpu);

		if (due < o)
			o = due;
		if (isinf(o) || c->turns > SIM_MAX_TURNS) {
			snprintf(s->error, sizeof(s->error),
				 "cpu %u waits for acknowledgements but no interrupt is pending",
				 cpu);
			fprintf(stderr, "tlbpol-sim: %s\n", s->error);
			exit(2);
		}
		if (o > t)
			t = o;
	}
	c->seen_epoch = s->epoch;
	suspend_until(s, cpu, t);
	serve_due(s, cpu);
}

/* ------------------------------------------------------------------------ */
/* The run                                                                  */

int clock_init(struct sim *s, void (*cpu_main)(struct sim *s, uint32_t cpu))
{
	cpu_body = cpu_main;
	s->running = UINT32_MAX;
	for (uint32_t i = 0; i < s->cfg.ncpus; i++) {
		struct sim_cpu *c = &s->cpus[i];

		c->sim = s;
		c->co = coro_new(SIM_STACK_BYTES, cpu_entry, c);
		if (!c->co)
			return -1;
		c->key = c->clock;
		c->heap_pos = i;
		s->heap[i] = i;
	}
	s->heap_n = s->cfg.ncpus;
	for (uint32_t i = s->heap_n / 2; i-- > 0;)
		heap_fix(s, s->heap[i]);
	return 0;
}

void clock_fini(struct sim *s)
{
	for (uint32_t i = 0; i < s->cfg.ncpus; i++) {
		coro_free(s->cpus[i].co);
		s->cpus[i].co = NULL;
	}
}

void clock_run(struct sim *s)
{
	while (!isinf(s->cpus[s->heap[0]].key)) {
		uint32_t top = s->heap[0];

		s->running = top;
		coro_switch(coro_main(), s->cpus[top].co);
		s->running = UINT32_MAX;
	}
}
