/* SPDX-License-Identifier: MIT */
/*
 * hosted.h - state of the hosted layer, attached to an engine made by
 * tlbpol_engine_new().  Private: no liburcu or libnuma type reaches the
 * public header.
 */
#ifndef TLBPOL_HOSTED_H
#define TLBPOL_HOSTED_H

#include <pthread.h>
#include <stddef.h>

#include <urcu-qsbr.h>
#include <urcu/rculfhash.h>

#include "../core/internal.h"

struct as_node {
	struct cds_lfht_node node;
	uint64_t tag;
	struct tlbpol_as *as;
};

struct hosted {
	void *mem;          /* the engine's block (mmap) */
	size_t len;
	uint16_t *nodes;    /* discovered topology, or NULL */
	struct cds_lfht *by_tag;
	struct as_node *as_nodes; /* one per address-space slot */
	pthread_mutex_t reconfig; /* serialises writers of eng->params */
};

/* lookup.c */
int tlbpol__lookup_init(struct tlbpol_engine *eng, struct hosted *h);
void tlbpol__lookup_fini(struct hosted *h);
/* reconfig.c */
void tlbpol__quiescent_hook(void);

#endif
