/* SPDX-License-Identifier: MIT */
/*
 * mech.c - which mechanism reaches a shootdown's targets (interrupts, a
 * broadcast, a remote action), by the cost model the host's descriptors
 * give (backend.c), and whether it leaves lockless walkers to
 * ops->walker_sync.  Called by shootdown.c; calls skip.c (whom a request
 * could leave out anyway).
 */
#include "internal.h"

/*
 * TLBPOL_CFGF_LOCKLESS_WALKERS: would a mechanism with @flags leave the
 * host's lockless walkers unsynchronised for @s?  Page tables were freed,
 * and the mechanism interrupts nobody (no TLBPOL_BKF_IMPLIES_IRQ), so a CPU
 * may still be inside a walk that read a pointer to a freed table: only an
 * interrupt it takes, or ops->walker_sync, shows it is out (Linux
 * mm/mmu_gather.c, tlb_remove_table_sync_one(); Lance Yang's 2026
 * tlb_table_flush_implies_ipi_broadcast() is false for INVLPGB and PV
 * flushes for this reason; RAR is processed with interrupts off).
 */
int tlbpol__walkers_left(const struct tlbpol_engine *eng, const struct request *s, uint32_t flags)
{
#ifdef TLBPOL_PLANTED_NO_WALKER_SYNC
	(void)eng;
	(void)s;
	(void)flags;
	return 0;
#else
	return (eng->flags & TLBPOL_CFGF_LOCKLESS_WALKERS) && !(flags & TLBPOL_BKF_IMPLIES_IRQ) &&
	       req_any_part(s, TLBPOL_FLUSHF_TABLES);
#endif
}

/* Instructions (or payloads) of @max pages that part @rf takes: one per
 * @max pages of each range (INVLPGB names up to invlpgb_count_max pages, a
 * TLBI range up to 2^21, a RAR payload 63), none beyond the fixed cost for
 * a whole-AS flush. */
static uint64_t insns(uint32_t max, const struct req_flush *rf)
{
	uint64_t n = 0;

	if (rf->f.kind != TLBPOL_FLUSH_PAGES)
		return 0;
	if (max <= 1)
		return rf->pages;
	for (uint32_t r = 0; r < rf->f.nr_ranges; r++)
		n += (rf->f.ranges[r].nr_pages + max - 1) / max;
	return n;
}

/* Can a mechanism with TLBPOL_BKF_* @flags serve @s (not one that would
 * still need the walkers' interrupts, with no walker_sync to spare them)? */
static int usable(const struct tlbpol_engine *eng, const struct request *s, uint32_t flags)
{
	return !(tlbpol__walkers_left(eng, s, flags) && !eng->ops.walker_sync);
}

/*
 * cfg->tags with per-CPU slots and global tags (TLBPOL_TAGS_PERCPU,
 * nr_global): a broadcast names each part's global tag, so it serves @s
 * only if every part has one (a global part too: it reaches the global
 * entries by address whatever the tag, but may carry the address space's
 * own pages beside them), but for a flush of everything; and it reaches a
 * CPU only if that CPU holds the parts' entries under those tags: it
 * loaded them since (gcover).  Others still run them under slots of their
 * own and take interrupts.  Without
 * per-CPU slots every CPU is covered (cfg->tags TLBPOL_TAGS_GLOBAL, or the
 * host's tags: struct tlbpol_ops says which broadcasts fit).
 */
static int parts_global(const struct tlbpol_engine *eng, const struct request *s)
{
	if (!eng->tags_percpu)
		return 1;
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		if (s->flushes[k].f.kind != TLBPOL_FLUSH_ALL &&
		    tlbpol_tag_global_of(eng->tags, &eng->as[s->flushes[k].as_index].tag_id) < 0)
			return 0;
	return 1;
}

int tlbpol__bcast_covers(const struct tlbpol_engine *eng, uint32_t cpu, const struct request *s)
{
	if (!eng->tags_percpu)
		return 1;
#ifdef TLBPOL_PLANTED_COVER_ALL
	(void)cpu;
	return parts_global(eng, s);
#else
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const uint64_t *gc = gcover_of(eng, &eng->as[s->flushes[k].as_index]);

		if (s->flushes[k].f.kind != TLBPOL_FLUSH_ALL &&
		    !(prim_load_relaxed(&gc[cpu / 64]) & (1ULL << (cpu % 64))))
			return 0;
	}
	return 1;
#endif
}

/*
 * cfg->tags with global tags: an address space of @s loaded on enough CPUs
 * gets one (Linux 6.15 consider_global_asid(), from the flush path: one
 * active on 4 CPUs or more), the threshold rising as they run out.  Its
 * CPUs move to it at their next switch; until then they take interrupts.
 * Never waits for the allocator's lock (this may run in an interrupt that
 * landed in its holder): busy, it tries again at the next shootdown; and
 * not while broadcasts are off (the rules in force).
 */
void tlbpol__consider_global(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			     const struct request *s)
{
	uint32_t min;

	if (!eng->tags_percpu || eng->bcast == BCAST_NONE || !(prm->rules & TLBPOL_RULE_BROADCAST))
		return;
	min = tlbpol__tags_global_min(eng->tags);
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		struct tlbpol_as *as = &eng->as[s->flushes[k].as_index];

		if (s->flushes[k].f.kind != TLBPOL_FLUSH_ALL && prim_load_relaxed(&as->loaded) >= min &&
		    tlbpol_tag_global_of(eng->tags, &as->tag_id) < 0)
			tlbpol__tag_make_global(eng->tags, &as->tag_id, 1);
	}
}

/* @fixed per part of @s, and @per per instruction of @max pages. */
static uint64_t parts_cost(const struct request *s, uint64_t fixed, uint32_t max, uint32_t per)
{
	uint64_t c = 0;

	for (uint32_t k = 0; k < s->nr_flushes; k++)
		c += fixed + insns(max, &s->flushes[k]) * per;
	return c;
}

/*
 * RULE_BROADCAST: the cheapest way to reach the candidates @t of @s.  Only
 * the candidates a request could not leave out count (skip.c: idle, lazy,
 * preempted ones catch up by themselves whatever the mechanism), and of
 * them, for interrupts, only those that would take one: not polling
 * (RULE_POLLING_CPUS: a CPU waiting in the engine serves the request from
 * its loop) and, with an IPI delay, not inside an engine call (it finds the
 * request within the delay: interrupts.c's guess).
 * Interrupts cost the initiator a first-target cost, a cost per further
 * target and more per target on another node; a broadcast a fixed wait
 * plus one instruction per max_pages pages; a remote action, as
 * interrupts, a first-target cost and one per further target, and one per
 * payload.  A mechanism that would still need the walkers' interrupts (no
 * walker_sync) is not a choice.  A remote action wins a tie with
 * interrupts: it spares the targets theirs.  Called before the request's
 * generations are taken (with per-CPU tags, after: tlbpol__shoot()), and
 * leaves no target out by generation either way.
 */
uint32_t tlbpol__choose_mech(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			     uint32_t me, const struct request *s, const struct tlbpol_cpuset *t,
			     uint32_t n)
{
	uint64_t ipi = 0, bc = ~0ULL, ra = ~0ULL;
	uint32_t shape, reach = 0, irq = 0, remote = 0, uncov = 0;
	int poll = (prm->rules & TLBPOL_RULE_POLLING_CPUS) != 0;
	int delay = poll && prm->ipi_delay_spins;

	/* Before anything else: the common case, a host with interrupts alone. */
	if (!(prm->rules & TLBPOL_RULE_BROADCAST) || !n)
		return TLBPOL_MECH_IPI;
	shape = req_shape(s, 0);
	for_each_target(i, t, eng) {
		if (tlbpol__skippable(eng, prm, (uint32_t)i, s, shape, SKIPQ_ESTIMATE) != SKIP_NO)
			continue;
		reach++;
		if (poll && prim_load_relaxed(&cpu_of(eng, (uint32_t)i)->polling))
			continue;
		/* Given the IPI delay, one inside the engine serves by itself. */
		if (delay && !tlbpol__outside_engine(eng, (uint32_t)i))
			continue;
		irq++;
		uncov += !tlbpol__bcast_covers(eng, (uint32_t)i, s);
		if (eng->cpu_node)
			remote += node_of(eng, (uint32_t)i) != node_of(eng, me);
	}
	if (!reach)
		return TLBPOL_MECH_IPI;
	if (irq)
		ipi = prm->cost_ipi + (uint64_t)(irq - 1) * prm->cost_ipi_target +
		      (uint64_t)remote * prm->cost_ipi_remote;
	/* A broadcast that does not cover every CPU comes with interrupts to
	 * the others (as above, without their node costs). */
	if (eng->bcast != BCAST_NONE && usable(eng, s, eng->bcast_flags) && parts_global(eng, s))
		bc = parts_cost(s, prm->cost_bcast, prm->bcast_max_pages, prm->cost_bcast_page) +
		     (uncov ? prm->cost_ipi + (uint64_t)(uncov - 1) * prm->cost_ipi_target : 0);
	if (eng->remote && usable(eng, s, eng->remote_flags))
		ra = parts_cost(s, prm->cost_remote + (uint64_t)(reach - 1) * prm->cost_remote_target,
				prm->remote_max_pages, prm->cost_remote_page);
	if (bc < ipi && bc <= ra)
		return TLBPOL_MECH_BROADCAST;
	if (ra <= ipi)
		return TLBPOL_MECH_REMOTE;
	return TLBPOL_MECH_IPI;
}
