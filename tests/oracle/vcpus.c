/* SPDX-License-Identifier: MIT */
/*
 * vcpus.c - the stress driver's descheduled vCPUs: short descheduling (the
 * engine told, or only the hypervisor), and long preemptions (oracle.h,
 * "Long preemptions"), held until every other CPU that runs has made
 * hundreds of steps -- most of them right after a stamped unmap, with its
 * lazy post held unclaimed by another CPU invited to be held with it, so
 * that an engine that waits for a preempted vCPU when settling a stamp or
 * forcing a lazy request stalls.  Part of workload.c's steps (stress.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>

#include "stress.h"

/* The vCPU is descheduled for a few turns: the engine is @told (PREEMPTED,
 * then RUNNING again), or only the hypervisor knows (orc_hv_preempt()). */
void deschedule(struct orc_world *w, uint32_t cpu, int told)
{
	uint64_t k = 1 + rnd(w, cpu, 6);

	if (told)
		orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED);
	else
		orc_hv_preempt(w, cpu);
	while (k--)
		sched_yield();
	if (told)
		orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
	else
		orc_hv_resume(w, cpu);
}

/* Has every other CPU that is not held made @k steps since @start, or
 * finished its own? */
static int others_moved(struct shared *sh, uint32_t n, uint32_t cpu, const uint64_t *start,
			uint64_t k)
{
	for (uint32_t i = 0; i < n; i++)
		if (i != cpu && !atomic_load(&sh->finished[i]) && !atomic_load(&sh->holding[i]) &&
		    atomic_load(&sh->steps[i]) - start[i] < k)
			return 0;
	return 1;
}

/*
 * A long preemption (oracle.h, "Long preemptions"): held PREEMPTED until
 * every other CPU that is not held has made hold_min .. hold_max more
 * steps (or finished), or until a waiter needs it (orc_hold_kicked()).
 * A CPU stuck waiting for it makes no step, so it is held for as long as
 * the wait lasts: the deadlock clock ends the run.  All CPUs but two at
 * most, so that two run: one settles what another took.  Only under
 * RULE_VCPU_DEFER, where nobody waits for a preempted vCPU; otherwise (or
 * with all slots taken) a short descheduling instead.
 */
static void hold(struct orc_world *w, uint32_t cpu, struct shared *sh, const struct profile *p)
{
	uint32_t n = orc_world_config(w)->nr_cpus, cur = atomic_load(&sh->nheld);
	uint64_t start[ORC_MAX_CPUS], k;

	if (!(orc_world_config(w)->rules & TLBPOL_RULE_VCPU_DEFER)) {
		deschedule(w, cpu, 1);
		return;
	}
	do {
		if (cur + 2 >= n) {
			deschedule(w, cpu, 1);
			return;
		}
	} while (!atomic_compare_exchange_weak(&sh->nheld, &cur, cur + 1));
	k = p->hold_min + rnd(w, cpu, p->hold_max - p->hold_min + 1);
	for (uint32_t i = 0; i < n; i++)
		start[i] = atomic_load(&sh->steps[i]);
	atomic_store(&sh->holding[cpu], 1);
	orc_hold_begin(w, cpu);
	while (!orc_hold_kicked(w, cpu) && !others_moved(sh, n, cpu, start, k))
		sched_yield();
	orc_hold_end(w, cpu);
	atomic_store(&sh->holding[cpu], 0);
	atomic_fetch_sub(&sh->nheld, 1);
}

/* Turns an invitation waits to be taken, and its taker for the post. */
#define INVITE_TURNS 1024

/*
 * A long preemption, hold_stamp percent of them right after a stamped
 * unmap of the running address space.  Another CPU that runs it is invited
 * first (sh->invite: a number << 8 | the address space + 1); the one that
 * takes the invitation waits, taking its interrupts, until the unmap's
 * stamp was posted (sh->posted: that number), and is held then with the
 * lazy post most likely still unclaimed in its inbox (join_hold()).  This
 * CPU is held too half the time -- another settles its stamp when it
 * reuses the frames -- and otherwise runs on and settles it itself.
 */
void hold_step(struct orc_world *w, uint32_t cpu, struct shared *sh, const struct profile *p)
{
	int as = orc_cpu_as(w, cpu);
	uint64_t seq, inv, none = 0, top;

	if (as >= 0 && rnd(w, cpu, 100) < p->hold_stamp) {
		seq = atomic_fetch_add(&sh->invites, 1) + 1;
		inv = seq << 8 | (uint64_t)(as + 1);
		if (atomic_compare_exchange_strong(&sh->invite, &none, inv)) {
			for (unsigned t = 0;
			     t < INVITE_TURNS && atomic_load(&sh->invite) == inv && !orc_stopped(w);
			     t++) {
				orc_poll(w, cpu);
				sched_yield();
			}
			/* Nobody took it: no invitation left behind. */
			atomic_compare_exchange_strong(&sh->invite, &inv, 0);
		}
		orc_unmap(w, cpu, (uint32_t)as, some_page(w, cpu, sh, (uint32_t)as),
			  1 + (uint32_t)rnd(w, cpu, 8), TLBPOL_EVF_STAMP, 0);
		top = atomic_load(&sh->posted);
		while (top < seq && !atomic_compare_exchange_weak(&sh->posted, &top, seq))
			;
		if (rnd(w, cpu, 2))
			return;
	}
	hold(w, cpu, sh, p);
}

/* @cpu took invitation @seq: wait for its post, then be held. */
void join_hold(struct orc_world *w, uint32_t cpu, struct shared *sh, const struct profile *p,
	       uint64_t seq)
{
	for (unsigned t = 0; t < INVITE_TURNS && atomic_load(&sh->posted) < seq && !orc_stopped(w);
	     t++) {
		orc_poll(w, cpu);
		sched_yield();
	}
	hold(w, cpu, sh, p);
}
