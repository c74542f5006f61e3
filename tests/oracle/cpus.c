/* SPDX-License-Identifier: MIT */
/*
 * cpus.c - what a CPU is doing, told to the engine and published for
 * checkers: switches between address spaces (to NULL: lazy), unloading,
 * idle, preempted, offline and back, a hypervisor's descheduling the engine
 * is not told of.  Each transition publishes "excused" before the engine
 * call that lets the engine skip this CPU, and "running" only after that
 * call and the catch-up flush it asked for, then scans what the CPU may
 * use from now on; a checker records the completed version before it reads
 * CPU states, so one of the two sees the other (oracle.h: why the excuses
 * are sound).  The CR3 write and catch-up flush that follow a call happen
 * with interrupts off, in a window others may act in.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>

#include "machine.h"

static void publish(struct orc_cpu *c, uint32_t mode, int loaded)
{
	atomic_store(&c->pub, pub_make(mode, loaded));
}

/*
 * The CPU's state for checkers, after the engine call and the catch-up:
 * RUN only if the engine state is RUNNING and an AS runs.  A CPU that
 * executes again after it was excused (preempted, or between states) scans
 * what it may use from now on: a running one its address space and the
 * kernel's entries, a lazy one the kernel's entries and the walk caches of
 * what it keeps loaded.
 */
static void publish_settled(struct orc_world *w, struct orc_cpu *c, uint32_t cpu)
{
	if (c->estate == TLBPOL_CPU_OFFLINE) {
		publish(c, M_OFFLINE, -1);
	} else if (c->estate == TLBPOL_CPU_PREEMPTED || atomic_load(&c->hv)) {
		publish(c, M_PREEMPT, c->loaded);
	} else if (c->estate == TLBPOL_CPU_RUNNING && c->cur >= 0) {
		publish(c, M_RUN, c->cur);
		scan_self(w, c, cpu, c->cur, 0, ORC_V_RESUME, "after catch-up");
	} else {
		uint32_t was = pub_mode(atomic_load(&c->pub));

		publish(c, M_LAZY, c->loaded);
		if (was != M_LAZY)
			scan_self(w, c, cpu, c->loaded, 1, ORC_V_RESUME, "executing again");
	}
}

int orc_switch(struct orc_world *w, uint32_t cpu, int as)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct tlbpol_tag_use use = { 0, 0 };
	int nf = 0, r;

	if (as >= (int)w->cfg.nr_as || c->estate == TLBPOL_CPU_OFFLINE)
		return -EINVAL;
	/*
	 * Stop using the current AS's user addresses (for checkers) before the
	 * engine hears of it: a checker then excuses our TLB at worst too
	 * early, never too late.  But the CPU executes all along, and its CR3
	 * keeps the loaded AS until the write that follows the engine call:
	 * its kernel entries are used, and its walk caches of what stays
	 * loaded may be walked, so neither is excused (lazy, not away).  A
	 * switch to an AS is one step with its CR3 write ("the CR3 write
	 * follows at once, with interrupts off"): the CPU touches no user
	 * address until the write (our drop below) and its catch-up flush are
	 * done and it publishes again; its MMU may still walk the old tables
	 * speculatively in between, and does here, now and then.
	 */
	publish(c, c->estate == TLBPOL_CPU_PREEMPTED ? M_PREEMPT : M_LAZY, c->loaded);
	window(w, c);
	if (w->tags)
		r = tlbpol_switch_tag(w->eng, cpu, as >= 0 ? w->as[as].eas : NULL, &use);
	else
		r = tlbpol_switch(w->eng, cpu, as >= 0 ? w->as[as].eas : NULL, &nf);
	trace(w, (int)cpu, TR_SWITCH, as < 0 ? 15u : (uint32_t)as, 0, (uint32_t)nf,
	      (uint32_t)c->loaded);
	if (r) {
		/* Not running: the engine refuses to switch it to an AS. */
		if (!(r == -EBUSY && as >= 0 && c->estate != TLBPOL_CPU_RUNNING))
			violation(w, ORC_V_API, "tlbpol_switch(cpu %u, as %d) = %d", cpu, as, r);
		publish_settled(w, c, cpu);
		return r;
	}
	window(w, c);
	if (as >= 0) {
		if (as != c->loaded && c->loaded >= 0 && rng_next(&c->rng) % 4 == 0)
			orc_spec_walk(w, cpu, (uint32_t)(rng_next(&c->rng) % w->cfg.pages));
		if (as != c->loaded && !(w->cfg.flags & TLBPOL_CFGF_RETAIN_AS))
			self_flush(w, c, DROP_USER); /* CR3 write without PCID: every non-global entry */
		/* The tag's flush (catch-up included) and its load. */
		if (w->tags) {
			if (use.flush != TLBPOL_TAG_FLUSH_NONE)
				count(w, ORC_C_CATCHUPS, 1);
			hwtag_load(w, cpu, as, &use);
		}
		if (nf) {
			count(w, ORC_C_CATCHUPS, 1);
			self_flush(w, c, as);
		}
		c->loaded = c->cur = as;
	} else {
		if (nf && c->loaded >= 0) {
			count(w, ORC_C_CATCHUPS, 1);
			self_flush(w, c, c->loaded);
		}
		c->cur = -1; /* lazy: the old AS stays loaded */
	}
	publish_settled(w, c, cpu);
	return 0;
}

int orc_unload(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int r;

	if (c->cur >= 0)
		return -EBUSY;
	/* CR3 still on the loaded AS until the write below (see orc_switch()). */
	publish(c, c->estate == TLBPOL_CPU_PREEMPTED ? M_PREEMPT : M_LAZY, c->loaded);
	r = tlbpol_unload(w->eng, cpu);
	trace(w, (int)cpu, TR_UNLOAD, 0, 0, (uint32_t)r, 0);
	if (r) {
		violation(w, ORC_V_API, "tlbpol_unload(cpu %u) = %d", cpu, r);
		publish_settled(w, c, cpu);
		return r;
	}
	window(w, c);
	if (c->loaded >= 0 && rng_next(&c->rng) % 4 == 0)
		orc_spec_walk(w, cpu, (uint32_t)(rng_next(&c->rng) % w->cfg.pages));
	/* To page tables of the host's own: a CR3 write, which keeps the old
	 * AS's entries under its tag only with retention, and global ones. */
	if (!(w->cfg.flags & TLBPOL_CFGF_RETAIN_AS))
		self_flush(w, c, DROP_USER);
	c->loaded = -1;
	publish_settled(w, c, cpu);
	return 0;
}

/*
 * What @c is for checkers during the call that takes it from engine state
 * @from to @to, and until its catch-up flush is done: whatever it is
 * leaving or entering excuses most.  OFFLINE: going down, or coming back,
 * it is excused throughout (its caches are not emptied when it goes: the
 * engine leaves it out from the moment it is OFFLINE, and flushes it whole
 * in the call that brings it back; it executes nothing in between).
 * PREEMPTED: the hypervisor marks its vCPU running (or idle) before it
 * enters it, and it executes nothing until the catch-up flush is done.
 * IDLE: going idle stops its use of user addresses; waking from idle is,
 * like a switch, one step with the catch-up flush it may ask for (see
 * orc_switch()), and all along it executes and its MMU may walk what it
 * keeps loaded.  -1: RUNNING to RUNNING, nothing changes.
 */
static int transition_mode(uint32_t from, uint32_t to)
{
	if (from == TLBPOL_CPU_OFFLINE || to == TLBPOL_CPU_OFFLINE)
		return M_OFFLINE;
	if (from == TLBPOL_CPU_PREEMPTED || to == TLBPOL_CPU_PREEMPTED)
		return M_PREEMPT;
	if (from == TLBPOL_CPU_IDLE || to == TLBPOL_CPU_IDLE)
		return M_LAZY;
	return -1;
}

int orc_set_state(struct orc_world *w, uint32_t cpu, uint32_t state)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t from = c->estate;
	int lazy = c->cur < 0 && c->loaded >= 0, mode, r;

	if (state > TLBPOL_CPU_OFFLINE)
		return -EINVAL;
	mode = transition_mode(from, state);
	if (mode >= 0)
		publish(c, (uint32_t)mode, mode == M_OFFLINE ? -1 : c->loaded);
	/* Coming back: it takes interrupts again from this call on. */
	if (from == TLBPOL_CPU_OFFLINE && state != TLBPOL_CPU_OFFLINE)
		atomic_store(&c->offline_since, 0);
	r = tlbpol_cpu_state(w->eng, cpu, state);
	trace(w, (int)cpu, TR_STATE, 0, 0, state, (uint32_t)r);
	if (r < 0) {
		if (!(state == TLBPOL_CPU_OFFLINE && r == -EBUSY))
			violation(w, ORC_V_API, "tlbpol_cpu_state(cpu %u, %u) = %d", cpu, state, r);
		if (from == TLBPOL_CPU_OFFLINE && state != TLBPOL_CPU_OFFLINE)
			atomic_store(&c->offline_since, atomic_fetch_add(&w->offline_clock, 1) + 1);
		publish_settled(w, c, cpu);
		return r;
	}
	if (r > 1)
		violation(w, ORC_V_API, "tlbpol_cpu_state(cpu %u, %u -> %u) = %d", cpu, from, state,
			  r);
	c->trans[lazy][from][state]++;
	if (state == TLBPOL_CPU_OFFLINE) {
		/* Must switch before it uses an AS. */
		c->cur = c->loaded = -1;
	} else if (r == 1) {
		/*
		 * "Flush its current address space, paging-structure caches
		 * included": the running one, or the lazily loaded one,
		 * whatever the transition (leaving PREEMPTED for IDLE too:
		 * the idle loop executes, and its MMU walks what is loaded).
		 */
		int x = c->cur >= 0 ? c->cur : c->loaded;

		window(w, c);
		count(w, ORC_C_CATCHUPS, 1);
		if (x >= 0)
			self_flush(w, c, x);
	}
	c->estate = state;
	/* Gone: what was posted to it is served, and nothing may be sent to
	 * it from now on (cb_send_ipi()). */
	if (state == TLBPOL_CPU_OFFLINE && from != TLBPOL_CPU_OFFLINE)
		atomic_store(&c->offline_since, atomic_fetch_add(&w->offline_clock, 1) + 1);
	publish_settled(w, c, cpu);
	return r;
}

void orc_transitions(const struct orc_world *w, uint64_t m[2][4][4])
{
	for (int l = 0; l < 2; l++)
		for (int f = 0; f < 4; f++)
			for (int t = 0; t < 4; t++) {
				m[l][f][t] = 0;
				for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
					m[l][f][t] += w->cpus[i].trans[l][f][t];
			}
}

void orc_hv_preempt(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];

	/* Excused from here on (it executes nothing), then visible to
	 * vcpu_defer: a checker excuses it at worst too early. */
	publish(c, M_PREEMPT, c->loaded);
	atomic_store(&c->hv, HV_PREEMPTED);
	trace(w, (int)cpu, TR_STATE, 0, 0, 100 + HV_PREEMPTED, 0);
}

void orc_hv_resume(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint8_t st = atomic_exchange(&c->hv, 0);

	trace(w, (int)cpu, TR_STATE, 0, 0, 100 + st, 0);
	if (st & HV_FLUSH) {
		/* The host flushes the whole guest: every AS, global entries
		 * and paging-structure caches included. */
		count(w, ORC_C_CATCHUPS, 1);
		self_flush(w, c, DROP_ALL);
	}
	publish_settled(w, c, cpu);
}

/*
 * A long preemption: told to the engine (tlbpol_cpu_state(), a hypervisor
 * that embeds it), from RUNNING, between the CPU's steps -- never in the
 * middle of an engine call for it, so every request it claimed it has
 * acknowledged.  What was posted to it and not claimed stays in its inbox
 * until it runs again: a lazy request (a stamp's) is left to catch up, a
 * synchronous one posted just before is waited for (oracle.h, "Long
 * preemptions").  Held from before the state changes to after it changes
 * back: cb_relax() may end it early at any point of that.
 */
void orc_hold_begin(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];

	atomic_store(&c->kicked, 0);
	atomic_store(&c->held, 1);
	atomic_fetch_add(&w->held, 1);
	count(w, ORC_C_HOLDS, 1);
	orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED);
}

int orc_hold_kicked(const struct orc_world *w, uint32_t cpu)
{
	return atomic_load(&w->cpus[cpu].kicked) || orc_stopped(w);
}

void orc_hold_end(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];

	orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
	if (atomic_load(&c->kicked))
		count(w, ORC_C_HOLD_KICKS, 1);
	atomic_store(&c->held, 0);
	atomic_fetch_sub(&w->held, 1);
}

void orc_audit(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];

	if (c->cur >= 0 && c->estate == TLBPOL_CPU_RUNNING)
		scan_self(w, c, cpu, c->cur, 0, ORC_V_USE, "self-audit");
}

int orc_cpu_as(const struct orc_world *w, uint32_t cpu)
{
	return w->cpus[cpu].cur;
}

int orc_cpu_loaded(const struct orc_world *w, uint32_t cpu)
{
	return w->cpus[cpu].loaded;
}

uint32_t orc_cpu_state(const struct orc_world *w, uint32_t cpu)
{
	return w->cpus[cpu].estate;
}

void orc_cpu_bind(struct orc_world *w, uint32_t cpu)
{
	self_world = w;
	self_cpu = (int)cpu;
}

void orc_note_events(struct orc_world *w, uint32_t cpu, uint64_t n)
{
	(void)cpu;
	count(w, ORC_C_EVENTS, n);
}

uint64_t orc_rand(struct orc_world *w, uint32_t cpu)
{
	return rng_next(&w->cpus[cpu].rng);
}
