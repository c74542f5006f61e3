/* SPDX-License-Identifier: MIT */
/*
 * engine_new.c - the hosted constructor: topology from libnuma, each CPU's
 * state on its own node, and the hooks of the hosted layer (RCU quiescent
 * states, lookup by tag).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <tlbpol/tlbpol.h>

#include "hosted.h"

/* The core returns Linux's errno values without <errno.h> (internal.h):
 * they are the host's. */
_Static_assert(E_NOENT == ENOENT && E_2BIG == E2BIG && E_NOMEM == ENOMEM && E_BUSY == EBUSY &&
		       E_EXIST == EEXIST && E_INVAL == EINVAL && E_RANGE == ERANGE,
	       "the core's errno values are the host's");

/*
 * The node of each engine CPU, from libnuma; NULL where NUMA is unavailable
 * or the machine has one node (the engine then assumes one node).  Engine
 * CPUs beyond the machine's (a model of a bigger machine) are spread over
 * the nodes in blocks, as sockets number their CPUs.
 */
static uint16_t *discover(uint32_t nr_cpus)
{
	int nodes, cpus;
	uint16_t *map;

	if (numa_available() < 0)
		return NULL;
	nodes = numa_max_node() + 1;
	cpus = numa_num_configured_cpus();
	if (nodes <= 1 || cpus <= 0)
		return NULL;
	map = calloc(nr_cpus, sizeof(*map));
	if (!map)
		return NULL;
	for (uint32_t i = 0; i < nr_cpus; i++) {
		int n = (int)i < cpus ? numa_node_of_cpu((int)i)
				      : (int)((uint64_t)i * (uint64_t)nodes / nr_cpus);

		map[i] = (uint16_t)(n < 0 ? 0 : n);
	}
	return map;
}

int tlbpol_engine_new(const struct tlbpol_config *cfg, struct tlbpol_engine **out)
{
	struct tlbpol_config c;
	struct hosted *h;
	int placed, err;

	if (!cfg || !out)
		return -EINVAL;
	err = tlbpol__config_read(cfg, &c);
	if (err)
		return err;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (!c.cpu_node) {
		h->nodes = discover(c.nr_cpus);
		c.cpu_node = h->nodes;
	}
	/* Page-aligned per-CPU state only pays where there are nodes. */
	placed = c.cpu_node != NULL;
	h->len = tlbpol__engine_size(&c, placed);
	h->mem = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h->mem == MAP_FAILED) {
		free(h->nodes);
		free(h);
		return -ENOMEM;
	}
	/*
	 * Bind each CPU's state to its node before the engine first touches
	 * it (tlbpol__engine_init zeroes it): pages land where that CPU's
	 * inbox, batch and counters are hot.  Without NUMA this is skipped.
	 */
	if (placed && numa_available() >= 0)
		for (uint32_t i = 0; i < c.nr_cpus; i++) {
			size_t off[2], len[2];
			int n = tlbpol__cpu_ranges(&c, placed, i, off, len);

			for (int k = 0; k < n; k++)
				if (len[k] && c.cpu_node[i] <= numa_max_node())
					numa_tonode_memory((char *)h->mem + off[k], len[k],
							   c.cpu_node[i]);
		}
	err = tlbpol__engine_init(out, h->mem, h->len, &c, placed);
	if (!err)
		err = tlbpol__lookup_init(*out, h);
	if (err) {
		munmap(h->mem, h->len);
		free(h->nodes);
		free(h);
		return err;
	}
	pthread_mutex_init(&h->reconfig, NULL);
	(*out)->hosted = h;
	(*out)->quiescent = tlbpol__quiescent_hook;
	return 0;
}

void tlbpol_engine_free(struct tlbpol_engine *eng)
{
	struct hosted *h;

	if (!eng)
		return;
	h = eng->hosted;
	/* Built by tlbpol_engine_init() in the caller's memory: not ours. */
	if (!h)
		return;
	/* A parameter block that replaced the first is the hosted layer's. */
	if (eng->params != &eng->params0)
		free(eng->params);
	tlbpol__lookup_fini(h);
	pthread_mutex_destroy(&h->reconfig);
	munmap(h->mem, h->len);
	free(h->nodes);
	free(h);
}
