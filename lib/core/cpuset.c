/* SPDX-License-Identifier: MIT */
/*
 * cpuset.c - exported helpers for struct tlbpol_cpuset, so that bindings need
 * not reimplement the bit layout.
 */
#include "internal.h"

int tlbpol_cpuset_test(const struct tlbpol_cpuset *set, uint32_t cpu)
{
	if (!set || cpu >= TLBPOL_MAX_CPUS)
		return 0;
	return (int)((set->bits[cpu / 64] >> (cpu % 64)) & 1);
}

int tlbpol_cpuset_count(const struct tlbpol_cpuset *set)
{
	int n = 0;

	if (!set)
		return 0;
	for (uint32_t w = 0; w < TLBPOL_MAX_CPUS / 64; w++)
		n += (int)prim_popcount64(set->bits[w]);
	return n;
}

int tlbpol_cpuset_next(const struct tlbpol_cpuset *set, int cpu)
{
	uint32_t start;

	if (!set || cpu >= TLBPOL_MAX_CPUS - 1)
		return -1;
	start = cpu < 0 ? 0 : (uint32_t)cpu + 1;
	for (uint32_t w = start / 64; w < TLBPOL_MAX_CPUS / 64; w++) {
		uint64_t bits = set->bits[w];

		if (w == start / 64)
			bits &= ~0ULL << (start % 64);
		if (bits)
			return (int)(w * 64 + prim_ctz64(bits));
	}
	return -1;
}

void tlbpol_cpuset_zero(struct tlbpol_cpuset *set)
{
	if (set)
		prim_zero(set, sizeof(*set));
}

void tlbpol_cpuset_set(struct tlbpol_cpuset *set, uint32_t cpu)
{
	if (set && cpu < TLBPOL_MAX_CPUS)
		set->bits[cpu / 64] |= 1ULL << (cpu % 64);
}

void tlbpol_cpuset_clear(struct tlbpol_cpuset *set, uint32_t cpu)
{
	if (set && cpu < TLBPOL_MAX_CPUS)
		set->bits[cpu / 64] &= ~(1ULL << (cpu % 64));
}
