/* SPDX-License-Identifier: MIT */
/*
 * tag_flush.c - which hardware tag a flush names, for an engine with a tag
 * allocator (cfg->tags): on the CPU it reaches (ops->flush_local), or on
 * every CPU (a broadcast, a remote action).  Called by the files that
 * flush (receive.c, submit.c, shootdown.c); calls the allocator (tags.c).
 */
#include "internal.h"

/*
 * The hardware tag under which @cpu (the calling CPU) holds address space
 * @as_index's entries, into f->as_tag; 0 when it holds none under any tag
 * and @f names no global entry.  The leaving address space's entries are
 * under the tag it ran with until the CR3 write, even if its slot has just
 * gone to the address space switched to; any other address space without
 * a slot here lost its entries when its slot was taken (that load's
 * flush, which precedes any use of the tag).  A global flush with no tag
 * names the loaded one: INVLPG and TLBI VAAE1 reach global entries
 * whatever tag is current.
 */
int tlbpol__tag_local(const struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index,
		      struct tlbpol_flush *f)
{
	const struct tlbpol_cpu *c = cpu_of(eng, cpu);
	int t;

	if (f->kind == TLBPOL_FLUSH_ALL)
		return 1;
	if (c->leaving_as == as_index + 1) {
		f->as_tag = c->leaving_tag;
		return 1;
	}
	t = tlbpol_tag_of(eng->tags, cpu, &eng->as[as_index].tag_id);
	if (t >= 0) {
		f->as_tag = (uint64_t)t;
		return 1;
	}
	f->as_tag = c->loaded_tag;
	return (f->flags & TLBPOL_FLUSHF_GLOBAL) != 0;
}

/*
 * The tag a broadcast or a remote action names for address space
 * @as_index, into f->as_tag: its one tag (TLBPOL_TAGS_GLOBAL: every CPU
 * that runs it, or keeps it loaded, runs it under that tag, for a
 * rollover keeps the tags CPUs run, rollover()), or its global tag beside
 * per-CPU slots (the CPUs it does not reach are the engine's to
 * interrupt: mech.c).  0 when it never had one (no CPU holds its entries)
 * and @f names no global entry; a global one then names tag 0 (a
 * broadcast by address reaches global entries whatever the tag).
 */
int tlbpol__tag_global(const struct tlbpol_engine *eng, uint32_t as_index, struct tlbpol_flush *f)
{
	int t;

	if (f->kind == TLBPOL_FLUSH_ALL)
		return 1;
	t = eng->tags_percpu ? tlbpol_tag_global_of(eng->tags, &eng->as[as_index].tag_id)
			     : tlbpol_tag_of(eng->tags, 0, &eng->as[as_index].tag_id);
	if (t < 0) {
		f->as_tag = 0;
		return (f->flags & TLBPOL_FLUSHF_GLOBAL) != 0;
	}
	f->as_tag = (uint64_t)t;
	return 1;
}
