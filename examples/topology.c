/* SPDX-License-Identifier: MIT */
/*
 * topology: print the NUMA node of each CPU as libtlbpol sees it (from
 * libnuma, through tlbpol_engine_new()), one "cpu node" line each.  The same
 * form is what `tlbpol-sim --topology FILE` reads, to model this machine, or
 * one it does not run on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tlbpol/tlbpol.h>

static void no_flush(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx, (void)cpu, (void)f;
}

static void no_ipi(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *t)
{
	(void)ctx, (void)cpu, (void)t;
}

int main(void)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops),
		.flush_local = no_flush,
		.send_ipi = no_ipi,
	};
	long n = sysconf(_SC_NPROCESSORS_CONF);
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	uint16_t *node;
	int nodes;

	if (n < 1)
		n = 1;
	tlbpol_config_init(&cfg, (uint32_t)n, TLBPOL_ARCH_X86_64);
	cfg.ops = &ops;
	if (tlbpol_engine_new(&cfg, &eng))
		return 1;
	node = calloc((size_t)n, sizeof(*node));
	nodes = node ? tlbpol_engine_topology(eng, node, (uint32_t)n) : -1;
	if (nodes < 1)
		return 1;
	printf("# cpu node (%ld CPUs, %d node%s)\n", n, nodes, nodes > 1 ? "s" : "");
	for (long i = 0; i < n; i++)
		printf("%ld %u\n", i, node[i]);
	free(node);
	tlbpol_engine_free(eng);
	return 0;
}
