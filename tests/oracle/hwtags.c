/* SPDX-License-Identifier: MIT */
/*
 * hwtags.c - hardware tags in the model machine (cfg.tags: the engine's
 * tag allocator chooses them, tlbpol_switch_tag() tells the CPU).
 *
 * A TLB entry belongs to whoever runs under its tag, not to the address
 * space that filled it.  The model keeps entries by address space, and
 * per CPU which tag each address space's entries are under and which
 * address space's entries each tag holds, so that a flush that names a
 * tag drops the entries of whoever owns it there (caches.c), as hardware
 * does.  Loading a tag (the CR3 / TTBR / satp write of a switch, after the
 * flush the switch was told to make) that still holds entries of another
 * address space, or entries of an earlier use the model dropped without a
 * flush of the tag, is a violation (ORC_V_TAG): the new owner would hit
 * them (a slot reused without its flush, a rollover that left a CPU out).
 * An address space that moves to another tag on a CPU leaves its old
 * entries under the old one, for whoever loads it next: the model drops
 * them and marks the tag, which a flush of it clears.
 */
#include <stdlib.h>

#include "machine.h"

/* Does @c hold any entry (TLB or walk cache) of address space @x?  Under
 * its cache lock. */
static int holds(struct orc_world *w, struct orc_cpu *c, int x)
{
	for (uint32_t i = 0; i < tlb_slots(w); i++) {
		uint64_t e = atomic_load(&c->tlb[i]);

		if (e && te_as(e) == (uint32_t)x)
			return 1;
	}
	for (uint32_t i = 0; i < psc_slots(w); i++) {
		uint64_t s = atomic_load(&c->psc[i]);

		if (s && psc_as(s) == (uint32_t)x)
			return 1;
	}
	return 0;
}

/* @c's tags before anything ran: nobody's. */
void hwtag_init(struct orc_world *w, struct orc_cpu *c)
{
	for (uint32_t t = 0; t < w->ntags; t++)
		c->tag_owner[t] = -1;
	for (uint32_t x = 0; x <= ORC_MAX_AS; x++)
		c->as_tag[x] = -1;
}

/* Every tag of @c flushed (its user entries all dropped): nothing of an
 * earlier owner is left anywhere.  Who runs under which tag stays: the
 * CPU's next fills go there.  Under the lock. */
void hwtag_flushed_all(struct orc_world *w, struct orc_cpu *c)
{
	if (!w->tags)
		return;
	for (uint32_t t = 0; t < w->ntags; t++)
		c->tag_orphan[t] = 0;
}

/*
 * The address space whose entries flush @f's tag reaches on @c, or -1;
 * a flush of the whole tag also clears what an earlier owner may have
 * left under it.  Under the lock.
 */
int hwtag_owner(struct orc_world *w, struct orc_cpu *c, const struct tlbpol_flush *f)
{
	if (f->as_tag >= w->ntags) {
		violation(w, ORC_V_API, "flush names tag %#llx, past the allocator's %u",
			  (unsigned long long)f->as_tag, w->ntags);
		return -1;
	}
	if (f->kind == TLBPOL_FLUSH_AS)
		c->tag_orphan[f->as_tag] = 0;
	return c->tag_owner[f->as_tag];
}

/*
 * CPU @cpu loads tag @u->tag for address space @x after the switch that
 * gave it, flushing what @u->flush says first.  Under no lock (takes it).
 */
void hwtag_load(struct orc_world *w, uint32_t cpu, int x, const struct tlbpol_tag_use *u)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t t = u->tag;
	int o;

	if (t >= w->ntags || u->flush > TLBPOL_TAG_FLUSH_ALL) {
		violation(w, ORC_V_API, "tlbpol_switch_tag(cpu %u, as %d): tag %u, flush %u", cpu,
			  x, t, u->flush);
		return;
	}
	cache_lock(c);
	if (u->flush == TLBPOL_TAG_FLUSH_ALL) {
		cache_unlock(c);
		self_flush(w, c, DROP_USER); /* and hwtag_flushed_all() */
		cache_lock(c);
	} else if (u->flush == TLBPOL_TAG_FLUSH_TAG) {
		o = c->tag_owner[t];
		cache_unlock(c);
		if (o >= 0)
			self_flush(w, c, o);
		cache_lock(c);
		c->tag_orphan[t] = 0;
	}
	o = c->tag_owner[t];
	if (c->tag_orphan[t] || (o >= 0 && o != x && holds(w, c, o))) {
		violation(w, ORC_V_TAG, "cpu %u loads tag %u for as %d over %s", cpu, t, x,
			  c->tag_orphan[t] ? "an earlier owner's entries, never flushed"
					   : "another address space's entries");
		/* Reported; the model goes on without them. */
		c->tag_orphan[t] = 0;
		if (o >= 0 && o != x) {
			cache_unlock(c);
			self_flush(w, c, o);
			cache_lock(c);
		}
	}
	if (o >= 0 && o != x)
		c->as_tag[o] = -1;
	/* x's entries under another tag stay there, unreachable to x. */
	if (c->as_tag[x] >= 0 && c->as_tag[x] != (int)t) {
		uint32_t old = (uint32_t)c->as_tag[x];

		if (holds(w, c, x))
			c->tag_orphan[old] = 1;
		c->tag_owner[old] = -1;
		cache_unlock(c);
		self_flush(w, c, x);
		cache_lock(c);
	}
	c->tag_owner[t] = (int16_t)x;
	c->as_tag[x] = (int16_t)t;
	cache_unlock(c);
}

/*
 * ops->load_tag: from its interrupt or tick, between engine calls, @cpu
 * loads @tag for the address space it runs (a CR3 write of the same
 * tables: the move onto a global tag), after the flush @flush says.  The
 * entries it had under its slot stay there, unreachable (hwtag_load()
 * marks them for the slot's next owner); a broadcast by @tag reaches it
 * from now on.  Running nothing, or called inside an engine call of its
 * own, is the engine's error.
 */
void cb_load_tag(void *ctx, uint32_t cpu, uint32_t tag, uint32_t flush)
{
	struct orc_world *w = ctx;
	struct orc_cpu *c = &w->cpus[cpu];
	struct tlbpol_tag_use u = { tag, flush };

	count(w, ORC_C_TAG_MOVES, 1);
	if (c->cur < 0 || c->cur != c->loaded || flush == TLBPOL_TAG_FLUSH_TAG) {
		violation(w, ORC_V_API, "load_tag(cpu %u, tag %u, flush %u) running as %d, loaded %d",
			  cpu, tag, flush, c->cur, c->loaded);
		return;
	}
	hwtag_load(w, cpu, c->loaded, &u);
}
