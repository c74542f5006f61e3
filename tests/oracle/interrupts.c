/* SPDX-License-Identifier: MIT */
/*
 * interrupts.c - how the model's CPUs are interrupted, and when they
 * cannot be.  An interrupt is a flag in the target's mailbox (struct
 * orc_cpu's mb, support/mailbox.h; ops->send_ipi raises it); the
 * target answers with tlbpol_handle_ipi() only when it polls
 * (orc_poll()): between accesses, while it waits in the engine
 * (ops->relax), idle or lazy, never while preempted.  A waiting
 * initiator also runs the stall watchdogs here.  A vCPU the hypervisor
 * descheduled takes a flush request in its steal-time byte instead
 * (ops->vcpu_defer).  A CPU in a transition has interrupts off for a
 * while (window()), stretched now and then so that what others may do
 * meanwhile is seen; an engine call may run with them off throughout
 * (call_begin(): a tick from the timer interrupt), and then its relax
 * takes none.  An OFFLINE CPU takes none either, and must never be sent
 * one.  This is the one place the mailbox is written and read; it calls
 * only report.c.
 *
 * The mailbox's ordering.  The engine publishes a request in the target's
 * inbox before it calls ops->send_ipi, and tlbpol_handle_ipi() on the
 * target reads it.  cb_send_ipi()'s mbox_raise_seq_cst() (a seq_cst
 * store, after the engine's publication) pairs with orc_poll()'s
 * mbox_take_seq_cst() (a seq_cst exchange, before the handler): a poll
 * that takes the flag sees the request that raised it, and a raise lands
 * before the exchange (taken now) or after it (taken at the next poll),
 * never lost.  The stall watchdog's raise pairs with the same exchange.
 * Both are sequentially consistent, and every poll exchanges, raised or
 * not, as the rest of the model's cross-CPU words are (machine.h):
 * mailbox.h says why the oracle does not use mbox_raise()/mbox_take().
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <time.h>

#include "machine.h"

double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * An engine call that may wait begins on @c's thread.  Its stall clocks
 * restart (call_id), it notes how far CPUs have gone OFFLINE (an interrupt
 * it sends to one that was OFFLINE already is wrong: cb_send_ipi()), and
 * it runs with interrupts off now and then: a tick from the timer
 * interrupt (twice as often as the other calls), a caller in a section
 * with interrupts disabled.  Its relax then takes none of the CPU's
 * interrupts.  The header lets every call run so; under
 * TLBPOL_CFGF_WAIT_IRQS the engine must still not wait for ever (it serves
 * from its loop after TLBPOL_WAIT_IRQS_FALLBACK_TURNS turns with no
 * acknowledgement), and without the flag it must serve from its loop all
 * along.  No random number is drawn when cfg.irqs_off_pct is 0, so that
 * a seed's workload is what it was before the option.
 */
void call_begin(struct orc_world *w, struct orc_cpu *c, int tick)
{
	uint32_t pct = w->cfg.irqs_off_pct;

	c->call_id++;
	c->call_mark = atomic_load(&w->offline_clock);
	for (uint32_t k = 0; k < ORC_MAX_CPUS / 64; k++)
		c->sent[k] = 0;
	c->irqs_off = pct && rng_next(&c->rng) % 200 < (tick ? 2 * pct : pct);
	if (c->irqs_off)
		count(w, ORC_C_IRQS_OFF, 1);
}

void call_end(struct orc_world *w, struct orc_cpu *c)
{
	c->irqs_off = 0;
	issued_check(w, c, (uint32_t)(c - w->cpus));
}

void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	struct orc_world *w = ctx;
	uint64_t n = 0, mark = 0;

	trace(w, (int)from, TR_IPI, 0, 0, (uint32_t)(targets->bits[0] & 0xffffff), 0);
	if (from < w->cfg.nr_cpus && self_world == w && self_cpu == (int)from) {
		w->cpus[from].kicks++; /* its own thread: see stall_check() */
		mark = w->cpus[from].call_mark;
		for (uint32_t k = 0; k < ORC_MAX_CPUS / 64; k++) /* see hold_wake() */
			w->cpus[from].sent[k] |= targets->bits[k];
	}
	for (int t = tlbpol_cpuset_next(targets, -1); t >= 0; t = tlbpol_cpuset_next(targets, t)) {
		uint64_t off;

		if ((uint32_t)t >= w->cfg.nr_cpus) {
			violation(w, ORC_V_API, "send_ipi to cpu %d of %u", t, w->cfg.nr_cpus);
			continue;
		}
		if ((uint32_t)t == from)
			warning(w, "cpu %u sent an interrupt to itself", from);
		/*
		 * An OFFLINE CPU takes no interrupt.  Going OFFLINE serves what
		 * was posted to it, and a request posted later finds it OFFLINE
		 * and leaves it out (or takes it back), so an engine sends it
		 * nothing -- but for one race: a request posted just before the
		 * CPU served and went, whose initiator read its state before
		 * that.  Such an initiator began its call (or last relaxed)
		 * before the CPU was OFFLINE.  One whose call or last wait turn
		 * began after (mark: w->offline_clock then) interrupts a CPU
		 * left holding a request it never served, or one it should have
		 * left out.
		 */
		off = atomic_load(&w->cpus[t].offline_since);
		if (off && off <= mark)
			violation(w, ORC_V_IPI_OFFLINE,
				  "cpu %u sent an interrupt to cpu %d, which went OFFLINE before "
				  "this engine call (or its last wait turn) began: a request left in "
				  "its inbox when it went, or posted to it since",
				  from, t);
		mbox_raise_seq_cst(&w->cpus[t].mb);
		n++;
	}
	count(w, ORC_C_IPIS, n);
}

/* Linux kvm_flush_tlb_multi(): a vCPU the hypervisor preempted takes the
 * flush request in its steal-time byte, and is flushed before it runs. */
int cb_vcpu_defer(void *ctx, uint32_t cpu)
{
	struct orc_world *w = ctx;
	uint8_t st = atomic_load(&w->cpus[cpu].hv);

	if (!(st & HV_PREEMPTED))
		return 0;
	return atomic_compare_exchange_strong(&w->cpus[cpu].hv, &st, (uint8_t)(st | HV_FLUSH));
}

/*
 * @cpu waits inside an engine call.  A target the initiator interrupted
 * serves at its next poll, a polling one at its next turn.  So if, since
 * this CPU's last interrupt sent (or the start of the call), it has waited
 * more turns than the IPI delay (after which it interrupts whoever has not
 * served) and every other CPU has polled ORC_STALL_POLLS times (none is
 * preempted: a preempted one does not poll; a wait turn with interrupts
 * off counts as a poll where the engine must serve from its loop, see
 * cb_relax(); an OFFLINE CPU counts as polling, for nothing may be waiting
 * for it), and the wait goes on, some target has a request it was never
 * told of.  Report it, then let interrupts in everywhere and interrupt
 * everyone, so that the run ends (orc_stopped()).
 *
 * One engine call may wait several times with no interrupt sent between
 * (tlbpol__force_lazy() completing lazy requests every target has claimed
 * already), and this check cannot see where one wait ends: the counts then
 * run from an older wait.  A target that polled through the first and then
 * claimed the next request and was descheduled in mid-serve, before it
 * acknowledged, would look stuck (seen under TSan on a loaded machine).  A
 * target in mid-serve does not poll, one that is stuck does: so every other
 * CPU must also have polled ORC_STALL_RECENT times in each of the last
 * ORC_STALL_MARKS checkpoints.
 */
/*
 * After a stall report: what the waiting CPU @cpu can see of every other
 * CPU (their published state, mailbox and progress, and whether its own
 * call interrupted them), for the reader to find the target that was never
 * told.  Only atomics of the others are read, and the waiter's own fields.
 */
static void stall_dump(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	static const char *const modes[] = { "run", "lazy", "preempted", "offline" };

	pthread_mutex_lock(&w->log_lock);
	fprintf(w->cfg.log, "  cpu %u (waiting, call %llu, %llu interrupts sent by it):\n", cpu,
		(unsigned long long)c->call_id, (unsigned long long)c->kicks);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *o = &w->cpus[i];
		uint64_t pub = atomic_load(&o->pub);
		uint32_t m = pub_mode(pub);

		if (i == cpu)
			continue;
		fprintf(w->cfg.log,
			"    cpu %u: %s, loaded %d; mailbox %s; polled %llu times since the wait "
			"began; interrupted by this call: %s; held: %d\n",
			i, m < 4 ? modes[m] : "?",
			pub_loaded(pub) == AS_NONE ? -1 : (int)pub_loaded(pub),
			atomic_load(&o->mb.raised) ? "raised" : "clear",
			(unsigned long long)(atomic_load_explicit(&o->polls, memory_order_relaxed) -
					     c->wait_polls[i]),
			(c->sent[i / 64] >> (i % 64) & 1) ? "yes" : "no", atomic_load(&o->held));
	}
	fflush(w->cfg.log);
	pthread_mutex_unlock(&w->log_lock);
}

static void stall_check(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int all = 1, recent = 1;

	if (c->wait_call_id != c->call_id || c->wait_kicks != c->kicks) {
		c->wait_call_id = c->call_id;
		c->wait_kicks = c->kicks;
		c->wait_turns = 0;
		c->busy_marks = 0;
		for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
			c->wait_polls[i] = c->mark_polls[i] =
				atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);
		return;
	}
	if (++c->wait_turns % 64)
		return;
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		uint64_t p = atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);

		if (i == cpu)
			continue;
		/* Nobody waits for an OFFLINE CPU: it served what it held as
		 * it went, and is left out of what was posted since.  One
		 * that is waited for holds a request it never served. */
		if (atomic_load(&w->cpus[i].offline_since)) {
			c->mark_polls[i] = p;
			continue;
		}
		all &= p - c->wait_polls[i] >= ORC_STALL_POLLS;
		recent &= p - c->mark_polls[i] >= ORC_STALL_RECENT;
		c->mark_polls[i] = p;
	}
	c->busy_marks = recent ? c->busy_marks + 1 : 0;
	if (c->wait_turns < (uint64_t)w->cfg.ipi_delay_spins + 64 || !all ||
	    c->busy_marks < ORC_STALL_MARKS)
		return;
	violation(w, ORC_V_STALL,
		  "cpu %u has waited %llu turns while every other CPU polled %u times, and %u "
		  "times in each of its last %u x 64 turns (an OFFLINE one aside): a target was "
		  "neither interrupted nor polling, or served nothing from its wait, or went "
		  "OFFLINE holding the request",
		  cpu, (unsigned long long)c->wait_turns, ORC_STALL_POLLS, ORC_STALL_RECENT,
		  ORC_STALL_MARKS);
	stall_dump(w, cpu);
	c->busy_marks = 0;
	/* Interrupts let in everywhere, so that a CPU waiting with them off
	 * is served too, and the run ends (orc_stopped()). */
	atomic_store(&w->stopped, 1);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		mbox_raise_seq_cst(&w->cpus[i].mb); /* not an IPI of the engine's: not counted */
		c->wait_polls[i] = atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);
	}
}

/*
 * The deadlock clock.  stall_check() proves a target was never told, but
 * only while every other CPU polls: two CPUs that wait for each other with
 * interrupts off (two ticks from the timer interrupt, under
 * TLBPOL_CFGF_WAIT_IRQS), or one whose wait serves nothing and is never
 * interrupted (a settle that stopped serving its own inbox), poll nothing
 * and would hang the run until meson's timeout.  No wait of the engine
 * lasts seconds when every CPU it waits for takes interrupts or serves
 * within a bounded time (preempted and offline spells are short or never
 * waited for, an interrupts-off wait serves after its fallback turns): an
 * engine call that has waited w->stall_secs is a deadlock.  Reported once
 * per call, and then interrupts are let in everywhere and every mailbox
 * raised, so that whatever waits is served and the run ends (orc_stopped()
 * stops the workload).
 */
static void deadlock_check(struct orc_world *w, struct orc_cpu *c, uint32_t cpu)
{
	double t;

	if (c->clock_call_id != c->call_id) {
		c->clock_call_id = c->call_id;
		c->clock_turns = 0;
		c->clock_t0 = now_secs();
		return;
	}
	if (++c->clock_turns % 256)
		return;
	t = now_secs() - c->clock_t0;
	if (t < w->stall_secs)
		return;
	violation(w, ORC_V_STALL,
		  "cpu %u has waited %.1f s (%llu turns) in one engine call%s: a deadlock (no "
		  "target that takes interrupts or serves keeps a wait that long); interrupts are "
		  "let in everywhere from now on, and the run ends",
		  cpu, t, (unsigned long long)c->clock_turns,
		  c->irqs_off ? " with interrupts off" : "");
	stall_dump(w, cpu);
	c->clock_t0 = 1e300; /* once per call */
	atomic_store(&w->stopped, 1);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
		mbox_raise_seq_cst(&w->cpus[i].mb); /* not an IPI of the engine's */
}

/*
 * Long preemptions (oracle.h): a synchronous shootdown posted to a CPU just
 * before it went PREEMPTED (its initiator read it RUNNING) is waited for,
 * until the CPU runs again -- as KVM's initiator waits for a vCPU that was
 * preempted after its check.  So the hypervisor runs a held CPU again once
 * an engine call that interrupted it has waited HOLD_WAKE_TURNS turns.  Not
 * for a tlbpol_stamp_settle(): a settle never waits for a CPU that went
 * preempted after the flushes were posted (the header), and one that does
 * waits here until the deadlock clock ends the run.  Nor does the flag say
 * whom the call waits for, only whom it interrupted: a CPU held for
 * nothing only runs again early.
 */
static void hold_wake(struct orc_world *w, struct orc_cpu *c)
{
	if (c->settling || c->clock_turns < HOLD_WAKE_TURNS || !atomic_load(&w->held))
		return;
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
		if ((c->sent[i / 64] >> (i % 64) & 1) && atomic_load(&w->cpus[i].held))
			atomic_store(&w->cpus[i].kicked, 1);
}

void cb_relax(void *ctx, uint32_t cpu)
{
	struct orc_world *w = ctx;
	struct orc_cpu *c = &w->cpus[cpu];

	stall_check(w, cpu);
	deadlock_check(w, c, cpu);
	hold_wake(w, c);
	c->call_mark = atomic_load(&w->offline_clock);
	if (w->cfg.relax) {
		w->cfg.relax(w, cpu, w->cfg.relax_arg);
		return;
	}
	/*
	 * Interrupts off: the pending interrupt waits for the call's end.
	 * Without TLBPOL_CFGF_WAIT_IRQS the engine has served this CPU's
	 * inbox from its loop before each turn (the header: a waiting call
	 * keeps serving its CPU's requests, so the host need not take the
	 * interrupt): the turn is as good as a poll, and counts as one for
	 * others' stall_check() -- a loop that does not serve is then seen
	 * as a target that polls and never answers.  Under the flag it is
	 * not: the engine may leave its inbox to the interrupt for up to
	 * TLBPOL_WAIT_IRQS_FALLBACK_TURNS turns.
	 */
	if (!c->irqs_off || atomic_load(&w->stopped))
		orc_poll(w, cpu);
	else if (!(w->cfg.flags & TLBPOL_CFGF_WAIT_IRQS))
		atomic_fetch_add_explicit(&c->polls, 1, memory_order_relaxed);
	sched_yield();
}

int orc_stopped(const struct orc_world *w)
{
	return atomic_load(&w->stopped);
}

int orc_poll(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int r;

	/* An OFFLINE CPU takes no interrupt, nor does a preempted vCPU
	 * (told or not): one sent stays pending until it runs again, or is
	 * a violation (cb_send_ipi()).  After a deadlock they take them all,
	 * so that the run ends. */
	if ((c->estate == TLBPOL_CPU_OFFLINE || c->estate == TLBPOL_CPU_PREEMPTED ||
	     atomic_load(&c->hv)) &&
	    !atomic_load(&w->stopped))
		return 0;
	c->call_mark = atomic_load(&w->offline_clock);
	atomic_fetch_add_explicit(&c->polls, 1, memory_order_relaxed);
	if (!mbox_take_seq_cst(&c->mb))
		return 0;
	r = tlbpol_handle_ipi(w->eng, cpu);
	trace(w, (int)cpu, TR_TAKE, 0, 0, (uint32_t)r, 0);
	if (r < 0)
		violation(w, ORC_V_API, "tlbpol_handle_ipi(cpu %u) = %d", cpu, r);
	else if (r > 0)
		count(w, ORC_C_IPIS_TAKEN, 1);
	return r;
}

/*
 * The time a CPU spends with interrupts off in a transition: between the
 * engine call and the CR3 write or catch-up flush that follows it, or
 * before the call with an interrupt already latched.  On hardware it is a
 * few hundred cycles; here it is stretched now and then (a few yields, no
 * polls), so that what other CPUs may do in it -- skip this one by a
 * generation it has not flushed to, free tables it may still walk --
 * happens often enough to be seen.  What is allowed in the window does not
 * depend on its length.  With cfg.window_events it lasts until the others
 * have made that many steps (the trace counts them), so that a sequence of
 * theirs fits in it (a rollover, a new tag for the address space being
 * left, its tables freed); bounded, for they may be waiting for this CPU.
 */
void window(struct orc_world *w, struct orc_cpu *c)
{
	uint64_t n = w->cfg.window_events, end;

	if (rng_next(&c->rng) % 4)
		return;
	if (!n) {
		for (uint64_t k = 1 + rng_next(&c->rng) % 3; k--;)
			sched_yield();
		return;
	}
	end = atomic_load(&w->trace_seq) + 1 + rng_next(&c->rng) % n;
	for (uint64_t k = 8 * n; k-- && atomic_load(&w->trace_seq) < end;)
		sched_yield();
}
