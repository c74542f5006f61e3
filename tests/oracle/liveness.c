/* SPDX-License-Identifier: MIT */
/*
 * liveness.c - settles and frees are bounded.  orc_finish() completes
 * every flush before it counts the deferred frees, which hides an engine
 * that never completes on its own: work that never ages, a lazy request
 * held by a target that idles without ticking.  So, while the run goes on,
 * each CPU follows the deferred frees it registered that did not run at
 * once, and the flush stamps it took, and at each of its own ticks judges
 * them by its tick count (its successful tlbpol_tick() calls, the only
 * clock the engine's promise is stated in):
 *
 *  - the engine completes a CPU's BY_WRITEBACK / BY_FREE work from the
 *    tick after it has waited cfg->free_ticks of its ticks (one shootdown),
 *    posts its BY_LAZY work at its next tick, and interrupts the targets
 *    that have not claimed one of its lazy requests (or takes back those
 *    that may catch up by themselves) once the request has been in flight
 *    free_ticks of its ticks, and again every free_ticks ticks;
 *  - a target takes that interrupt at its next poll: it runs or idles,
 *    an OFFLINE one is never a target (a preempted one may be, until it
 *    runs again), one that waits with interrupts off serves after its
 *    fallback turns;
 *
 * so a deferred free (which waits for the work pending when it was
 * registered) runs, and a stamp is settled (tlbpol_stamp_pending() 0),
 * within about 2 x free_ticks + 2 of the CPU's ticks -- ticks of a machine
 * whose CPUs all go on.  Here they are threads on fewer cores: one may sit
 * descheduled by the host for a time slice while another ticks a hundred
 * times.  So a tick counts only if every other CPU (OFFLINE ones aside)
 * has polled since the last tick that counted: none was descheduled, none
 * preempted (a preempted vCPU does not poll), none waited with interrupts
 * off all along.  w->free_bound, 4 x
 * free_ticks + 8 by default, is generous; one still pending past it is a
 * violation (ORC_V_BOUNDED), reported once, mid-run: a CPU that registered
 * it and keeps ticking is exactly the CPU the header promises it to.
 * Nothing is judged once orc_finish() has begun, nor after a deadlock.
 * Everything here runs on the CPU's own thread.
 */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "machine.h"

/* Deferred free @fr was registered on @c and did not run at once: follow it. */
void live_free(struct orc_world *w, struct orc_cpu *c, struct orc_free *fr)
{
	if (!w->free_bound || atomic_load(&fr->ran))
		return;
	if (c->npend == LIVE_MAX) {
		/* Cannot happen (the engine completes everything when its 64
		 * slots are full): forget the oldest rather than overflow. */
		memmove(&c->pend[0], &c->pend[1], (LIVE_MAX - 1) * sizeof(c->pend[0]));
		c->npend--;
	}
	fr->reg_tick = c->ticks;
	c->pend[c->npend++] = fr;
}

/* @c took flush stamp @stamp (not 0) and freed frames with it. */
void live_stamp(struct orc_world *w, struct orc_cpu *c, uint64_t stamp)
{
	if (!w->free_bound)
		return;
	if (c->npst == LIVE_MAX) {
		/* 8 lazy requests per CPU: never this many in flight. */
		memmove(&c->pst[0], &c->pst[1], (LIVE_MAX - 1) * sizeof(c->pst[0]));
		c->npst--;
	}
	c->pst[c->npst].stamp = stamp;
	c->pst[c->npst++].tick = c->ticks;
}

/* Does this tick of CPU @cpu count: has every other CPU that is not
 * OFFLINE polled since the last one that did? */
static int tick_counts(struct orc_world *w, struct orc_cpu *c, uint32_t cpu)
{
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *o = &w->cpus[i];

		if (i != cpu && pub_mode(atomic_load(&o->pub)) != M_OFFLINE &&
		    atomic_load_explicit(&o->polls, memory_order_relaxed) == c->live_polls[i])
			return 0;
	}
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
		c->live_polls[i] = atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);
	return 1;
}

/* One deferred free or stamp of a CPU that has just ticked, @age of its
 * ticks old: 0 if it is done (counted as aged; dropped), 1 if it may still
 * wait (kept), -1 if it has waited past the bound, which holds alike for
 * both (dropped; the caller reports it). */
static int judge(struct orc_world *w, int done, uint64_t age)
{
	if (done) {
		count(w, ORC_C_AGED, 1);
		return 0;
	}
	return age <= w->free_bound ? 1 : -1;
}

/* @c (CPU @cpu) has just ticked: judge what it follows. */
void live_tick(struct orc_world *w, struct orc_cpu *c, uint32_t cpu)
{
	uint32_t keep = 0;

	if (!w->free_bound || c->finishing || atomic_load(&w->stopped) ||
	    !tick_counts(w, c, cpu))
		return;
	c->ticks++;
	for (uint32_t i = 0; i < c->npend; i++) {
		struct orc_free *fr = c->pend[i];
		uint64_t age = c->ticks - fr->reg_tick;
		int v = judge(w, atomic_load(&fr->ran), age);

		if (v > 0)
			c->pend[keep++] = fr;
		if (v >= 0)
			continue;
		violation(w, ORC_V_BOUNDED,
			  "cpu %u: a deferred free it registered (%u frames, %u tables of as %u) has "
			  "waited %llu of its ticks, past the bound of %u: work due by a free that "
			  "never aged, or a lazy request whose targets were never interrupted",
			  cpu, fr->nr_frames, fr->nr_tables, fr->as, (unsigned long long)age,
			  w->free_bound);
	}
	c->npend = keep;
	keep = 0;
	for (uint32_t i = 0; i < c->npst; i++) {
		struct live_stamp s = c->pst[i];
		uint64_t age = c->ticks - s.tick;
		int r = tlbpol_stamp_pending(w->eng, s.stamp), v;

		if (r < 0) {
			violation(w, ORC_V_API, "tlbpol_stamp_pending(%#llx) = %d",
				  (unsigned long long)s.stamp, r);
			continue;
		}
		v = judge(w, !r, age);
		if (v > 0)
			c->pst[keep++] = s;
		if (v >= 0)
			continue;
		violation(w, ORC_V_BOUNDED,
			  "cpu %u: its flush stamp %#llx is still pending after %llu of its ticks, "
			  "past the bound of %u: a lazy request whose targets were never interrupted",
			  cpu, (unsigned long long)s.stamp, (unsigned long long)age, w->free_bound);
	}
	c->npst = keep;
}
