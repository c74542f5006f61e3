/* SPDX-License-Identifier: MIT */
/*
 * engine_new.c - the hosted constructor: the engine in memory from the C
 * library, for Linux userspace users.
 */
#include <errno.h>
#include <stdlib.h>

#include <tlbpol/tlbpol.h>

#include "../core/internal.h"

int tlbpol_engine_new(const struct tlbpol_config *cfg, struct tlbpol_engine **out)
{
	size_t len;
	void *mem;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	err = tlbpol__config_check(cfg);
	if (err)
		return err;
	len = tlbpol_engine_size(cfg);
	mem = aligned_alloc(64, len); /* len is a multiple of 64 */
	if (!mem)
		return -ENOMEM;
	err = tlbpol_engine_init(out, mem, len, cfg);
	if (err)
		free(mem);
	return err;
}

void tlbpol_engine_free(struct tlbpol_engine *eng)
{
	/* The engine starts at the block tlbpol_engine_new() allocated. */
	free(eng);
}
