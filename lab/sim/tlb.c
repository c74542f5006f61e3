/* SPDX-License-Identifier: MIT */
/*
 * tlb.c - the modelled TLB of one CPU: two levels, set-associative, LRU,
 * tagged (struct sim_tlb, sim.h): by address space, or with --tags by
 * the hardware tag the allocator gave (tags.c), each entry also naming
 * the address space that filled it, which hardware does not know.  A
 * flush of a tag or of everything bumps a generation instead of walking
 * the entries, so an entry is live only while its generation is its
 * tag's.  A flushed entry
 * stays in its slot, marked, so that a miss can tell a flush from capacity.
 */
#include "sim.h"

#include <stdlib.h>

int tlb_init(struct sim_tlb *t, const struct sim_config *cfg, uint32_t nas)
{
	t->l1.ways = cfg->l1_ways;
	t->l1.sets = cfg->l1_entries / cfg->l1_ways;
	t->l2.ways = cfg->l2_ways;
	t->l2.sets = cfg->l2_entries / cfg->l2_ways;
	t->l1.e = calloc((size_t)t->l1.sets * t->l1.ways, sizeof(struct tlb_entry));
	t->l2.e = calloc((size_t)t->l2.sets * t->l2.ways, sizeof(struct tlb_entry));
	t->asgen = calloc(nas, sizeof(uint32_t));
	return t->l1.e && t->l2.e && t->asgen ? 0 : -1;
}

void tlb_fini(struct sim_tlb *t)
{
	free(t->l1.e);
	free(t->l2.e);
	free(t->asgen);
}

static uint32_t set_of(const struct tlb_level *l, uint16_t asid, uint64_t vpn)
{
	uint64_t h = (vpn ^ ((uint64_t)asid * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (uint32_t)((h >> 32) % l->sets);
}

/* The slot of (asid, vpn) in level @l, live or not; NULL if absent. */
static struct tlb_entry *find(struct tlb_level *l, uint16_t asid, uint64_t vpn)
{
	struct tlb_entry *set = &l->e[(size_t)set_of(l, asid, vpn) * l->ways];

	for (uint32_t w = 0; w < l->ways; w++)
		if (set[w].state != TLB_FREE && set[w].asid == asid && set[w].vpn == vpn)
			return &set[w];
	return NULL;
}

int tlb_entry_live(const struct sim_tlb *t, const struct tlb_entry *e)
{
	return e && e->state == TLB_VALID && e->asgen == t->asgen[e->asid];
}

/* Lookup: the live entry, promoted to L1; *flushed tells whether a flush
 * (not capacity) removed it. */
struct tlb_entry *tlb_lookup(struct sim_tlb *t, uint16_t asid, uint64_t vpn, int *flushed)
{
	struct tlb_entry *e = find(&t->l1, asid, vpn);

	*flushed = 0;
	if (tlb_entry_live(t, e)) {
		e->lru = ++t->clock;
		return e;
	}
	if (e && e->state != TLB_FREE)
		*flushed = 1;
	e = find(&t->l2, asid, vpn);
	if (tlb_entry_live(t, e)) {
		e->lru = ++t->clock;
		return e;
	}
	if (e && e->state != TLB_FREE)
		*flushed = 1;
	return NULL;
}

static void level_fill(struct sim_tlb *t, struct tlb_level *l, const struct tlb_entry *n)
{
	struct tlb_entry *set = &l->e[(size_t)set_of(l, n->asid, n->vpn) * l->ways], *v = &set[0];

	for (uint32_t w = 0; w < l->ways; w++) {
		struct tlb_entry *e = &set[w];

		if (e->state != TLB_FREE && e->asid == n->asid && e->vpn == n->vpn) {
			v = e;
			break;
		}
		if (!tlb_entry_live(t, e)) {
			if (tlb_entry_live(t, v) || e->state == TLB_FREE)
				v = e;
		} else if (tlb_entry_live(t, v) && e->lru < v->lru) {
			v = e;
		}
	}
	*v = *n;
}

void tlb_fill(struct sim_tlb *t, uint16_t asid, uint16_t owner, uint64_t vpn, uint8_t perms,
	      uint32_t frame, uint32_t version)
{
	struct tlb_entry n = { vpn, frame, version, t->asgen[asid], ++t->clock, asid, owner, perms,
			       TLB_VALID };

	level_fill(t, &t->l1, &n);
	level_fill(t, &t->l2, &n);
}

void tlb_flush_page(struct sim_tlb *t, uint16_t asid, uint64_t vpn)
{
	struct tlb_entry *e = find(&t->l1, asid, vpn);

	if (e && e->state == TLB_VALID)
		e->state = TLB_FLUSHED;
	e = find(&t->l2, asid, vpn);
	if (e && e->state == TLB_VALID)
		e->state = TLB_FLUSHED;
}

void tlb_flush_as(struct sim_tlb *t, uint16_t asid)
{
	t->asgen[asid]++;
}

void tlb_flush_all(struct sim_tlb *t, uint32_t nkeys)
{
	for (uint32_t a = 0; a < nkeys; a++)
		t->asgen[a]++;
}
