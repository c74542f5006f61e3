/* SPDX-License-Identifier: MIT */
/*
 * tag_flush.c - which hardware tag a flush names, for an engine with a tag
 * allocator (cfg->tags): on the CPU it reaches (ops->flush_local), or on
 * every CPU (a broadcast, a remote action: tlbpol__part_flush() gives a
 * request's part as those name it, with or without tags); and a CPU's move
 * onto a global tag from its interrupt (ops->load_tag).  Called by the files that flush
 * (receive.c, submit.c, shootdown.c) and by cpu.c; calls the allocator
 * (tags.c).
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
static int tag_global(const struct tlbpol_engine *eng, uint32_t as_index, struct tlbpol_flush *f)
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

/*
 * TLBPOL_TAGS_GLOBAL: after a broadcast or remote action named @named for
 * address space @as_index, the next other tag, from CPU *@cursor + 1 on,
 * under which a CPU still holds that address space loaded, into f->as_tag;
 * 0 when none is left (start with *@cursor = -1, f->as_tag @named).  A tag
 * comes again only if another came between (a spurious flush): each CPU's
 * mark and tag are read once, for reading earlier CPUs again to skip a
 * repeated tag could see a tag one of them took since, and skip a tag
 * never named.
 *
 * A CPU that runs the address space, or keeps it loaded lazily, runs it
 * under its one tag (rollover() keeps what each CPU loaded last).  Not one
 * between a switch away from it and the CR3 write that follows: its tag
 * load for the next address space gave up the old tag, and a rollover
 * meanwhile may have given the address space another, while its MMU may
 * still walk the old tables under the old tag, through walk-cache entries
 * a flush of the new tag does not reach (Linux arm64 has the same window
 * and covers it with RCU-freed page tables, which wait for the switch's
 * interrupts-off section; the engine frees tables when the flushes are
 * done, so the flushes must reach it).  Such a CPU is marked leaving
 * before its tag load, with the old tag (cpu.c mark_leaving()).
 *
 * Why it is found: the address space gets a tag other than the CPU's only
 * from a load after a rollover that ran after that tag load, and the word
 * is stored with release under the allocator's lock; the fence after the
 * caller's read of it (here, at the first call) orders the reads of the
 * leaving marks after it, so they see the mark, unless the CPU has made
 * its next engine call since, after its CR3 write: then the old tag is
 * out of use, and flushed before any address space is loaded under it
 * again (the rollover left that CPU a flush of all).  The mark and tag may
 * then be those of a later switch: at worst a spurious flush.
 */
static int tag_leaving(const struct tlbpol_engine *eng, uint32_t as_index, uint64_t named,
		       int *cursor, struct tlbpol_flush *f)
{
	const uint64_t *lv = eng->as[as_index].leaving;

	if (eng->tags_percpu || f->kind == TLBPOL_FLUSH_ALL)
		return 0;
	if (*cursor < 0)
		prim_fence();
	for (uint32_t i = (uint32_t)(*cursor + 1); i < eng->nr_cpus; i++) {
		uint32_t tag;

		if (!(prim_load_relaxed(&lv[i / 64]) & (1ULL << (i % 64))))
			continue;
		tag = prim_load_relaxed(&cpu_of(eng, i)->leaving_tag);
		/* Named already: first, or just before. */
		if (tag == named || tag == f->as_tag)
			continue;
		*cursor = (int)i;
		f->as_tag = tag;
		return 1;
	}
	return 0;
}

int tlbpol__part_flush(const struct tlbpol_engine *eng, const struct req_flush *rf,
		       struct tlbpol_flush *f, struct tlbpol__part_iter *it)
{
	if (it->cpu == -2) {
		*f = rf->f;
		it->cpu = -1;
		if (eng->tags && !tag_global(eng, rf->as_index, f))
			return 0;
		it->named = f->as_tag;
		return 1;
	}
	return eng->tags && tag_leaving(eng, rf->as_index, it->named, &it->cpu, f);
}

/*
 * Move @cpu, between engine calls, onto the global tag its address space
 * was given since the CPU loaded it under a slot (ops->load_tag), so that
 * broadcasts by that tag reach it from now on, as Linux's flush_tlb_func()
 * reloads CR3 with a global ASID ("x86/mm: Handle global ASID context
 * switch and TLB flush", 2025).  Not while the CPU is lazy (its switch
 * back catches up under the tag it keeps), owes the publication of its
 * last switch (leaving_as, catchup_as: the CR3 write of that switch may
 * not have happened yet), or serves a nested interrupt.
 *
 * Safe to load without a flush of the tag: every entry of another address
 * space under it was flushed before the allocator handed it out (a
 * recycled global tag owes a flush of all, which tlbpol_tag_load()
 * returns), and this CPU has none of this address space's under it (it
 * ran it under a slot).  Its slot entries become unreachable: the load
 * gives the slot up, and the slot's next owner flushes it.  The CPU joins
 * gcover only after the hook returns, when it runs under the tag: an
 * initiator that finds it there broadcasts by the tag and reaches it; one
 * that does not interrupts it, and the handler flushes under whatever tag
 * it has then (tlbpol__tag_local()).  The caller holds the CPU's call
 * guard, so no tlbpol_tag_load() of this CPU's runs meanwhile.
 */
void tlbpol__tag_to_global(struct tlbpol_engine *eng, uint32_t cpu)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	struct tlbpol_as *as = c->current;
	struct tlbpol_tag_use u;
	int g;

	if (!as || as != c->loaded || c->leaving_as || c->catchup_as ||
	    prim_load_relaxed(&c->in_serve))
		return;
	g = tlbpol_tag_global_of(eng->tags, &as->tag_id);
	if (g < 0 || (uint32_t)g == c->loaded_tag)
		return;
	if (tlbpol_tag_load(eng->tags, cpu, &as->tag_id, &u) || u.tag != (uint32_t)g)
		return;
	/* (Planted TLBPOL_PLANTED_COVER_WITHOUT_LOAD: counted on the tag
	 * below, never told to load it.) */
#ifndef TLBPOL_PLANTED_COVER_WITHOUT_LOAD
	eng->ops.load_tag(eng->ops_ctx, cpu, u.tag, u.flush);
#endif
	c->loaded_tag = u.tag;
	prim_fetch_or(&gcover_of(eng, as)[cpu / 64], 1ULL << (cpu % 64));
}
