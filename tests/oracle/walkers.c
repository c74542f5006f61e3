/* SPDX-License-Identifier: MIT */
/*
 * walkers.c - lockless page-table walkers, as Linux's GUP-fast
 * (mm/gup.c, gup_fast()): a running CPU walks its address space's page
 * tables with interrupts off and no lock, and relies on the table pages it
 * reaches not being freed before it is done.  A free is safe after every
 * CPU that may walk has taken an interrupt since the table was unlinked (it
 * cannot take one inside a walk), has served the request itself from an
 * engine call (outside any walk), or was waited for by ops->walker_sync --
 * what TLBPOL_CFGF_LOCKLESS_WALKERS asks of the engine.  Called by the
 * driver (orc_lockless_walk()) and by the engine (cb_walker_sync()); calls
 * cpus.c for a walk's preemption and report.c.
 */
#include <sched.h>

#include "machine.h"

void orc_lockless_walk(struct orc_world *w, uint32_t cpu, uint32_t page, uint32_t yields,
		       int preempt)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int x = c->cur;
	uint64_t d, o;
	uint32_t g, t;

	if (x < 0 || c->estate != TLBPOL_CPU_RUNNING || atomic_load(&c->hv) ||
	    page >= w->cfg.pages)
		return;
	/*
	 * Interrupts off, then the pointer.  A walker_sync that saw this CPU
	 * out of any walk read the counter before this increment, and the
	 * unlink it follows was stored before that: the read of the
	 * directory below sees it (sequentially consistent, as a
	 * local_irq_disable() is ordered against the interrupt's delivery).
	 */
	atomic_fetch_add(&c->walk_seq, 1);
	g = page / w->cfg.group_pages;
	d = atomic_load(&w->as[x].dir[g]);
	if (d) {
		t = dir_table(d);
		count(w, ORC_C_LOCKLESS, 1);
		for (uint32_t k = 0; k < yields; k++)
			sched_yield();
		/* Descheduled in the middle of the walk, the hypervisor
		 * telling the engine or not: the walk resumes with the
		 * pointer it read, whatever flush the CPU does on the way. */
		if (preempt == 1 && orc_set_state(w, cpu, TLBPOL_CPU_PREEMPTED) == 0) {
			for (uint32_t k = 0; k < 1 + yields; k++)
				sched_yield();
			orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
		} else if (preempt == 2) {
			orc_hv_preempt(w, cpu);
			for (uint32_t k = 0; k < 1 + yields; k++)
				sched_yield();
			orc_hv_resume(w, cpu);
		}
		o = atomic_load(&w->table[t]);
		if (own_state(o) == T_FREE || own_gen(o) != dir_gen(d))
			violation(w, ORC_V_LOCKLESS,
				  "cpu %u walked as %d group %u locklessly and table page %u was "
				  "freed under the walk (no interrupt, serve or walker_sync since "
				  "its unlink)", cpu, x, g, t);
	}
	atomic_fetch_add(&c->walk_seq, 1);
}

/*
 * ops->walker_sync: return once none of @cpus is inside a walk it was in
 * when this was called (an odd counter that has not moved), as an RCU
 * grace period or Linux's tlb_remove_table_sync_one() would.
 */
void cb_walker_sync(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *cpus)
{
	struct orc_world *w = ctx;
	uint64_t seen[ORC_MAX_CPUS];

	if (self_world != w || self_cpu != (int)cpu)
		violation(w, ORC_V_API, "walker_sync for cpu %u ran on cpu %d", cpu, self_cpu);
	count(w, ORC_C_WALKER_SYNCS, 1);
	for (int i = tlbpol_cpuset_next(cpus, -1); i >= 0 && i < ORC_MAX_CPUS;
	     i = tlbpol_cpuset_next(cpus, i))
		seen[i] = atomic_load(&w->cpus[i].walk_seq);
	for (int i = tlbpol_cpuset_next(cpus, -1); i >= 0 && i < ORC_MAX_CPUS;
	     i = tlbpol_cpuset_next(cpus, i))
		while ((seen[i] & 1) && atomic_load(&w->cpus[i].walk_seq) == seen[i] &&
		       !atomic_load(&w->stopped))
			sched_yield();
}
