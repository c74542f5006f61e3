/* SPDX-License-Identifier: MIT */
/*
 * migrate.c - a task that migrates between its unmap and its stamp.  The
 * header: tlbpol_stamp() is called on the CPU that submitted the stamped
 * events, the task not migrating from the first event to that call; a
 * stamp covers only its own CPU's work, and on a CPU where nothing stamped
 * was submitted since its last stamp the call fails with -ENOENT and
 * writes nothing.  A host that got this wrong would otherwise be told
 * "stamp 0, nothing to settle" of frames other CPUs still translate to.
 *
 * So now and then (cfg.migrate_pct of the stamped unmap passes) the task
 * asks its stamp first where it migrated.  Each CPU's engine calls stay on
 * its own thread: the asking CPU posts the question in the other CPU's
 * slot (orc_cpu's mig), and that CPU's thread answers it between its steps
 * (orc_serve_migration(), called by the driver), outside any engine call,
 * with tlbpol_stamp() for itself -- only when its own bookkeeping says it
 * owes no stamp (a stamped submit of its own since its last stamp): then
 * the engine would rightly return its own stamp, which covers its work,
 * not the asker's.  The asker waits for the answer taking its interrupts
 * (it is in no engine call and holds no page-table lock), and takes its
 * question back if it is not taken in time.  -ENOENT, or a CPU that could
 * not take the task, and the asker stamps on its own CPU after all (the
 * host saw its mistake and migrates back).  A stamp is used as the host
 * would use it: the frames go back to the pool with it, at once if it is
 * 0, and the oracle's frame, TLB and table checks judge what follows.
 * Called by pagetables.c (stamp_pass()) and the driver; calls submit.c
 * and interrupts.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <sched.h>

#include "machine.h"

/* Turns the asker waits for its question to be taken before it takes it
 * back (the other CPU may be in a long spell, or finishing the run). */
#define MIG_PATIENCE 4096

static uint32_t mig_state(uint32_t v)
{
	return v & 0xff;
}

/*
 * The stamp of @cpu's stamped unmap pass, just submitted: tlbpol_stamp()
 * on @cpu, or first on the CPU the task migrated to (see above).
 * *@stamper: the CPU whose call gave it.
 */
uint64_t stamp_pass(struct orc_world *w, uint32_t cpu, uint32_t *stamper)
{
	struct orc_cpu *c = &w->cpus[cpu], *o;
	uint32_t n = w->cfg.nr_cpus, to, asked = MIG_ASKED | cpu << 8, v = MIG_IDLE;
	uint64_t st;

	*stamper = cpu;
	/* No draw without the option: a seed's workload stays what it was. */
	if (!w->cfg.migrate_pct || n < 2 || rng_next(&c->rng) % 100 >= w->cfg.migrate_pct)
		return orc_stamp(w, cpu);
	to = (cpu + 1 + (uint32_t)(rng_next(&c->rng) % (n - 1))) % n;
	o = &w->cpus[to];
	if (!atomic_compare_exchange_strong(&o->mig, &v, asked))
		return orc_stamp(w, cpu); /* another task asks there already */
	for (uint32_t turn = 0;; turn++) {
		v = atomic_load(&o->mig);
		if (mig_state(v) >= MIG_ENOENT)
			break;
		/* Not taken yet: take it back, and stay. */
		if ((turn >= MIG_PATIENCE || orc_stopped(w)) && v == asked &&
		    atomic_compare_exchange_strong(&o->mig, &v, MIG_IDLE))
			return orc_stamp(w, cpu);
		orc_poll(w, cpu);
		/* A task asking us meanwhile: declined (we owe a stamp). */
		orc_serve_migration(w, cpu);
		sched_yield();
	}
	st = atomic_load(&o->mig_stamp);
	atomic_store(&o->mig, MIG_IDLE);
	if (mig_state(v) == MIG_DECLINED)
		return orc_stamp(w, cpu);
	count(w, ORC_C_MIGRATED, 1);
	if (mig_state(v) == MIG_ENOENT) {
		/* The engine said so: stamp where the events were submitted. */
		count(w, ORC_C_MIGR_ENOENT, 1);
		return orc_stamp(w, cpu);
	}
	/* The engine gave a stamp where it had none to give: the host trusts
	 * it, and the stamp this CPU owes is left for its next pass. */
	*stamper = to;
	return st;
}

void orc_serve_migration(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t v = atomic_load(&c->mig), from = v & ~0xffu;
	uint64_t st;
	int r;

	if (mig_state(v) != MIG_ASKED ||
	    !atomic_compare_exchange_strong(&c->mig, &v, from | MIG_TAKEN))
		return;
	/*
	 * The task runs here only if this CPU runs; and if this CPU owes a
	 * stamp itself (a stamped submit of its own since its last stamp),
	 * the engine rightly answers with that stamp, which covers none of
	 * the asker's events: no question to ask then.  This thread alone
	 * writes stamp_owed, so the answer is exact.
	 */
	if (c->estate != TLBPOL_CPU_RUNNING || atomic_load(&c->hv) || c->stamp_owed) {
		atomic_store(&c->mig, from | MIG_DECLINED);
		return;
	}
	r = stamp_call(w, cpu, &st);
	if (r == -ENOENT) {
		if (st != STAMP_UNWRITTEN)
			violation(w, ORC_V_API, "tlbpol_stamp(cpu %u) = -ENOENT wrote a stamp",
				  cpu);
		atomic_store(&c->mig, from | MIG_ENOENT);
		return;
	}
	if (r < 0) {
		violation(w, ORC_V_API, "tlbpol_stamp(cpu %u) = %d for a migrated task", cpu, r);
		atomic_store(&c->mig, from | MIG_DECLINED);
		return;
	}
	if (st == STAMP_UNWRITTEN) {
		violation(w, ORC_V_API, "tlbpol_stamp(cpu %u) = %d wrote no stamp", cpu, r);
		st = 0;
	}
	atomic_store(&c->mig_stamp, st);
	atomic_store(&c->mig, from | MIG_STAMP);
}
