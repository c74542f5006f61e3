/* SPDX-License-Identifier: MIT */
/*
 * tags.c - --tags: the engine's address spaces take their hardware tags
 * from one of the library's allocators (tlbpol_tags_init(), cfg->tags),
 * as a host with fewer tags than address spaces would, and each modelled
 * TLB is keyed by those tags instead of by address space.
 *
 *   percpu:SLOTS[+GLOBAL[@MIN]]  x86 PCIDs as Linux keeps them: SLOTS
 *        dynamic tags per CPU (TLB_NR_DYN_ASIDS = 6, arch/x86/mm/tlb.c),
 *        and GLOBAL tags every CPU shares, which an address space loaded
 *        on MIN CPUs (0: the library's 4) takes, so that one broadcast by
 *        tag reaches all of them (Linux 6.15's global ASIDs for INVLPGB).
 *        The width is the fewest bits that hold tag 0 (the host's, as
 *        PCID 0 is the kernel's) and the rest: the model needs no more.
 *   global:BITS  arm64 ASIDs or KVM VMIDs: one tag per address space on
 *        every CPU, 2^BITS - 1 of them (tag 0 the host's), a rollover
 *        when they run out (arch/arm64/mm/context.c, arch/arm64/kvm/vmid.c).
 *
 * Hardware does not know whose entry a tag's entry was: the TLB here
 * does (struct tlb_entry's owner), so a tag given to another address
 * space without its flush shows as a hit on a foreign entry, a violation
 * (actions.c, oracle.c).  In the hypervisor scenario the address spaces
 * are VMs and the tags their VMIDs (VPIDs and EPTP-tagged entries on x86).
 * TLBPOL_SIM_PLANTED=tag-no-flush in the environment makes the switches
 * skip the flushes they are told to make: the check's own test, which
 * must find foreign hits (lab/sim/meson.build).
 *
 * Called by the front end (parsing, the description), machine.c (set-up,
 * counters) and actions.c and oracle.c (the keys); calls the library.
 */
#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The most bits of global:BITS: each CPU's TLB keeps a generation per tag. */
#define SIM_TAG_BITS_MAX 12U

static int whole(const char **p, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno || v < lo || v > hi)
		return -1;
	*p = end;
	*out = (uint32_t)v;
	return 0;
}

int sim_tags_parse(const char *v, struct sim_tags_config *t)
{
	struct sim_tags_config n = { 0 };

	if (!strncmp(v, "percpu:", 7)) {
		uint32_t need;

		v += 7;
		n.kind = TLBPOL_TAGS_PERCPU;
		if (whole(&v, 1, TLBPOL_TAG_SLOTS_MAX, &n.slots))
			return -1;
		if (*v == '+' && (v++, whole(&v, 1, 1024, &n.nr_global)))
			return -1;
		if (*v == '@' && (!n.nr_global || (v++, whole(&v, 1, 1024, &n.global_min_cpus))))
			return -1;
		for (need = 1 + n.slots + n.nr_global; (1U << n.bits) < need;)
			n.bits++;
	} else if (!strncmp(v, "global:", 7)) {
		v += 7;
		n.kind = TLBPOL_TAGS_GLOBAL;
		if (whole(&v, 1, SIM_TAG_BITS_MAX, &n.bits))
			return -1;
	} else {
		return -1;
	}
	if (*v)
		return -1;
	*t = n;
	return 0;
}

void sim_tags_describe(const struct sim_tags_config *t, char *buf, size_t len)
{
	if (!t->bits)
		snprintf(buf, len, "off");
	else if (t->kind == TLBPOL_TAGS_GLOBAL)
		snprintf(buf, len, "global generations, %u bits (%u tags)", t->bits,
			 (1U << t->bits) - 1);
	else if (t->nr_global)
		snprintf(buf, len, "%u per-CPU slots and %u global tags (from %u CPUs)", t->slots,
			 t->nr_global, t->global_min_cpus ? t->global_min_cpus : 4);
	else
		snprintf(buf, len, "%u per-CPU slots", t->slots);
}

int sim_tags_setup(struct sim *s, struct tlbpol_config *ec)
{
	const struct sim_tags_config *t = &s->cfg.tags;
	struct tlbpol_tags_config tc;
	const char *v;
	size_t n;
	int err;

	s->nkeys = SIM_MAX_AS;
	if (!t->bits)
		return 0;
	memset(&tc, 0, sizeof(tc));
	tc.size = sizeof(tc);
	tc.kind = t->kind;
	tc.nr_cpus = s->cfg.ncpus;
	tc.tag_bits = t->bits;
	tc.first_tag = 1;
	tc.nr_slots = t->slots;
	tc.nr_global = t->nr_global;
	tc.global_min_cpus = t->global_min_cpus;
	n = tlbpol_tags_size(&tc);
	if (!n) {
		snprintf(s->error, sizeof(s->error),
			 "--tags: the allocator refuses this (a global pool must hold more than "
			 "the %u CPUs)", s->cfg.ncpus);
		return -1;
	}
	n = (n + 63) & ~(size_t)63;
	s->tags_mem = aligned_alloc(64, n);
	if (!s->tags_mem)
		return -1;
	memset(s->tags_mem, 0, n);
	err = tlbpol_tags_init(&s->tags, s->tags_mem, n, &tc);
	if (err) {
		snprintf(s->error, sizeof(s->error), "tlbpol_tags_init: %d", err);
		return -1;
	}
	ec->tags = s->tags;
	s->nkeys = 1U << t->bits;
	v = getenv("TLBPOL_SIM_PLANTED");
	s->planted_tag_no_flush = v && !strcmp(v, "tag-no-flush");
	return 0;
}

void sim_tags_fini(struct sim *s)
{
	free(s->tags_mem);
	s->tags_mem = NULL;
	s->tags = NULL;
}

uint16_t sim_tag_key(const struct sim *s, uint32_t cpu, uint32_t as)
{
	const struct sim_cpu *c = &s->cpus[cpu];

	if (!s->tags)
		return (uint16_t)as;
	/* Hardware reaches an address space's entries only through the
	 * tag it has loaded; the scenarios touch only what their CPU runs. */
	if (c->loaded != (int32_t)as) {
		fprintf(stderr, "tlbpol-sim: cpu %u touches address space %u with %d loaded\n", cpu,
			as, c->loaded);
		abort();
	}
	return c->tag;
}

void sim_tags_collect(struct sim *s)
{
	struct tlbpol_tags_stats st = { .size = sizeof(st) };

	if (!s->tags || tlbpol_tags_stats_read(s->tags, -1, &st))
		return;
	s->cnt.tag_loads = st.loads;
	s->cnt.tag_flushes = st.tag_flushes;
	s->cnt.tag_all_flushes = st.all_flushes;
	s->cnt.tag_rollovers = st.rollovers;
}
