/* SPDX-License-Identifier: MIT */
/*
 * compat.c - symbols kept for programs linked against an earlier release
 * (lib/libtlbpol.map has one version node per release).
 *
 * tlbpol_stats_read@TLBPOL_0.1.  Release 0.1 had 19 reason codes, so its
 * struct tlbpol_stats is 31 words; 0.2 added "discard", "attributes" and
 * "install" and grew by_reason.  A program built against 0.1 passes the
 * smaller structure: it gets the counters it knows of, and the new reasons'
 * events are in `events` only.  The header's promise (struct tlbpol_stats).
 *
 * tlbpol_stats_read@TLBPOL_0.2.  0.3 appended seven counters (the mechanism
 * each shootdown used, syncs, remote actions): 0.2's structure is 37 words,
 * and a program built against it gets those.
 *
 * tlbpol_config_init@TLBPOL_0.1.  0.2 appended wait_limit and free_ticks to
 * struct tlbpol_config: 0.1's is TLBPOL_CONFIG_SIZE_0_1 bytes, and a program
 * built against it must not have 0.2's size written into its structure.
 * It gets 0.1's fields, and size says 0.1's size, which every entry point
 * accepts (the missing fields take their defaults).
 *
 * tlbpol_config_init@TLBPOL_0.2.  0.3 appended backends, nr_backends and
 * reserved2: a program built against 0.2 has TLBPOL_CONFIG_SIZE_0_2 bytes,
 * and gets those, size saying so.
 */
#include <string.h>

#include "../core/internal.h"

#define WHY_MAX_0_1 19

struct tlbpol_stats_0_1 {
	uint64_t counters[12];
	uint64_t by_reason[WHY_MAX_0_1];
};

TLBPOL_API int tlbpol__stats_read_0_1(const struct tlbpol_engine *eng, int cpu,
				      struct tlbpol_stats_0_1 *out);
__asm__(".symver tlbpol__stats_read_0_1, tlbpol_stats_read@TLBPOL_0.1");

int tlbpol__stats_read_0_1(const struct tlbpol_engine *eng, int cpu, struct tlbpol_stats_0_1 *out)
{
	struct tlbpol_stats st;
	int err;

	if (!out)
		return -E_INVAL;
	err = tlbpol_stats_read(eng, cpu, &st);
	if (err)
		return err;
	_Static_assert(offsetof(struct tlbpol_stats, by_reason) == sizeof(out->counters),
		       "the counters before by_reason are those of 0.1");
	memcpy(out, &st, sizeof(*out));
	return 0;
}

#define STATS_WORDS_0_2 37

TLBPOL_API int tlbpol__stats_read_0_2(const struct tlbpol_engine *eng, int cpu, void *out);
__asm__(".symver tlbpol__stats_read_0_2, tlbpol_stats_read@TLBPOL_0.2");

int tlbpol__stats_read_0_2(const struct tlbpol_engine *eng, int cpu, void *out)
{
	struct tlbpol_stats st;
	int err;

	if (!out)
		return -E_INVAL;
	err = tlbpol_stats_read(eng, cpu, &st);
	if (err)
		return err;
	_Static_assert(offsetof(struct tlbpol_stats, shoot_ipi) == STATS_WORDS_0_2 * sizeof(uint64_t),
		       "the counters before shoot_ipi are those of 0.2");
	memcpy(out, &st, STATS_WORDS_0_2 * sizeof(uint64_t));
	return 0;
}

/* This release's defaults in the first @size bytes of @cfg, size saying so. */
static void config_init_sized(void *cfg, uint32_t nr_cpus, uint32_t arch, uint32_t size)
{
	struct tlbpol_config c;

	if (!cfg)
		return;
	tlbpol_config_init(&c, nr_cpus, arch);
	c.size = size;
	memcpy(cfg, &c, size);
}

TLBPOL_API void tlbpol__config_init_0_1(void *cfg, uint32_t nr_cpus, uint32_t arch);
__asm__(".symver tlbpol__config_init_0_1, tlbpol_config_init@TLBPOL_0.1");

void tlbpol__config_init_0_1(void *cfg, uint32_t nr_cpus, uint32_t arch)
{
	config_init_sized(cfg, nr_cpus, arch, TLBPOL_CONFIG_SIZE_0_1);
}

TLBPOL_API void tlbpol__config_init_0_2(void *cfg, uint32_t nr_cpus, uint32_t arch);
__asm__(".symver tlbpol__config_init_0_2, tlbpol_config_init@TLBPOL_0.2");

void tlbpol__config_init_0_2(void *cfg, uint32_t nr_cpus, uint32_t arch)
{
	config_init_sized(cfg, nr_cpus, arch, TLBPOL_CONFIG_SIZE_0_2);
}
