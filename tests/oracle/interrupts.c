/* SPDX-License-Identifier: MIT */
/*
 * interrupts.c - how the model's CPUs are interrupted, and when they
 * cannot be.  An interrupt is a flag in the target's mailbox (struct
 * orc_cpu's mb, tests/common/mailbox.h; ops->send_ipi raises it); the
 * target answers with tlbpol_handle_ipi() only when it polls
 * (orc_poll()): between accesses, while it waits in the engine
 * (ops->relax), idle or lazy, never while preempted.  A waiting
 * initiator also runs the stall watchdog here.  A vCPU the hypervisor
 * descheduled takes a flush request in its steal-time byte instead
 * (ops->vcpu_defer).  And a CPU in a transition has interrupts off for a
 * while (window()), stretched now and then so that what others may do
 * meanwhile is seen.  This is the one place the mailbox is written and
 * read; it calls only report.c.
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

#include "machine.h"

void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	struct orc_world *w = ctx;
	uint64_t n = 0;

	trace(w, (int)from, TR_IPI, 0, 0, (uint32_t)(targets->bits[0] & 0xffffff), 0);
	if (from < w->cfg.nr_cpus && self_world == w && self_cpu == (int)from)
		w->cpus[from].kicks++; /* its own thread: see stall_check() */
	for (int t = tlbpol_cpuset_next(targets, -1); t >= 0; t = tlbpol_cpuset_next(targets, t)) {
		if ((uint32_t)t >= w->cfg.nr_cpus) {
			violation(w, ORC_V_API, "send_ipi to cpu %d of %u", t, w->cfg.nr_cpus);
			continue;
		}
		if ((uint32_t)t == from)
			warning(w, "cpu %u sent an interrupt to itself", from);
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
 * preempted: a preempted one does not poll), and the wait goes on, some
 * target has a request it was never told of.  Report it, then interrupt
 * everyone so that the run ends.
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
		  "times in each of its last %u x 64 turns: a target was neither interrupted "
		  "nor polling",
		  cpu, (unsigned long long)c->wait_turns, ORC_STALL_POLLS, ORC_STALL_RECENT,
		  ORC_STALL_MARKS);
	c->busy_marks = 0;
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		mbox_raise_seq_cst(&w->cpus[i].mb); /* not an IPI of the engine's: not counted */
		c->wait_polls[i] = atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);
	}
}

void cb_relax(void *ctx, uint32_t cpu)
{
	struct orc_world *w = ctx;

	stall_check(w, cpu);
	if (w->cfg.relax) {
		w->cfg.relax(w, cpu, w->cfg.relax_arg);
		return;
	}
	orc_poll(w, cpu);
	sched_yield();
}

int orc_poll(struct orc_world *w, uint32_t cpu)
{
	int r;

	atomic_fetch_add_explicit(&w->cpus[cpu].polls, 1, memory_order_relaxed);
	if (!mbox_take_seq_cst(&w->cpus[cpu].mb))
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
 * depend on its length.
 */
void window(struct orc_world *w, struct orc_cpu *c)
{
	(void)w;
	if (rng_next(&c->rng) % 4)
		return;
	for (uint64_t k = 1 + rng_next(&c->rng) % 3; k--;)
		sched_yield();
}
