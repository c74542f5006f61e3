/* SPDX-License-Identifier: MIT */
/*
 * stats.c - tlbpol_stats_read(): the per-CPU counters summed into struct
 * tlbpol_stats.  Each CPU's counters have one writer per context (its task
 * side, its interrupt side: struct cpu_counters); a read takes each word
 * whole, so every counter is exact and the set is not a snapshot.  A leaf
 * of the core.
 */
#include "internal.h"

/* struct cpu_stats is struct tlbpol_stats with by_reason[] cut out. */
#define STATS_HEAD (offsetof(struct tlbpol_stats, by_reason) / sizeof(uint64_t))
_Static_assert(offsetof(struct cpu_stats, aged_flushes) ==
		       offsetof(struct tlbpol_stats, by_reason) &&
	       offsetof(struct cpu_stats, deferred_frees) ==
		       offsetof(struct tlbpol_stats, deferred_frees) &&
	       offsetof(struct cpu_stats, walker_syncs) + sizeof(((struct tlbpol_stats *)0)->by_reason) ==
		       offsetof(struct tlbpol_stats, walker_syncs) &&
	       sizeof(struct cpu_stats) + sizeof(((struct tlbpol_stats *)0)->by_reason) ==
		       sizeof(struct tlbpol_stats),
	       "struct cpu_stats is struct tlbpol_stats less by_reason");

static void stats_add(struct tlbpol_stats *out, const struct cpu_stats *in)
{
	const uint64_t *src = (const uint64_t *)in;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*in) / sizeof(uint64_t); i++)
		dst[i < STATS_HEAD ? i : i + TLBPOL_WHY_MAX] += prim_load_relaxed(&src[i]);
}

int tlbpol_stats_read(const struct tlbpol_engine *eng, int cpu, struct tlbpol_stats *out)
{
	if (!eng || !out || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu < -1 || cpu >= (int)eng->nr_cpus)
		return -E_RANGE;
	prim_zero(out, sizeof(*out));
	for (uint32_t i = 0; i < eng->nr_cpus; i++) {
		if (cpu >= 0 && (uint32_t)cpu != i)
			continue;
		const struct cpu_counters *cnt = &cpu_of(eng, i)->cnt;

		stats_add(out, &cnt->task);
		stats_add(out, &cnt->irq);
		for (uint32_t r = 0; r < TLBPOL_WHY_MAX; r++) {
			for (uint32_t a = 0; a < TLBPOL_COUNTED; a++) {
				uint64_t n = prim_load_relaxed(&cnt->decided[r][a]);

				out->events += n;
				out->by_reason[r] += n;
				/* Not counted as avoided: nothing was there to flush. */
				if (a == 0 && r != TLBPOL_WHY_NOT_PRESENT &&
				    r != TLBPOL_WHY_UNCHANGED)
					out->flushes_avoided += n;
			}
		}
	}
	return 0;
}
