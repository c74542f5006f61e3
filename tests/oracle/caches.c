/* SPDX-License-Identifier: MIT */
/*
 * caches.c - each CPU's TLB and paging-structure cache (PSC): set-
 * associative arrays of single-word entries, filled only by the CPU's own
 * walks and emptied only by flushes.  The engine's flush_local and
 * broadcast callbacks land here, and so do the flushes a CPU makes as
 * itself (catch-up, CR3 writes).  A flush removes the least the contract
 * promises (a PAGES flush leaves global entries to TLBPOL_FLUSHF_GLOBAL and
 * table pointers to TLBPOL_FLUSHF_TABLES, where real hardware often drops
 * more), so that a flag the engine forgot shows as a stale entry.  Every
 * walk, fill and flush of a CPU's caches is under that CPU's cache lock: a
 * flush never races with a walk in flight, as TLBSYNC and DSB wait for
 * them (checkers on other threads read entries, each one atomic word).
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "machine.h"

void cache_lock(struct orc_cpu *c)
{
	while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
		sched_yield();
}

void cache_unlock(struct orc_cpu *c)
{
	atomic_store_explicit(&c->lock, 0, memory_order_release);
}

uint32_t tlb_set(const struct orc_world *w, uint32_t as, uint32_t page)
{
	return ((page + as * 7u) % w->cfg.tlb_sets) * w->cfg.tlb_ways;
}

static uint32_t psc_set(const struct orc_world *w, uint32_t as, uint32_t group)
{
	return ((group + as * 3u) % w->cfg.psc_sets) * w->cfg.psc_ways;
}

/* An entry's key: valid and as, with page (a TLB entry, te_make()) or
 * group (a PSC entry, psc_make()). */
#define TLB_KEY (~0ULL << 48)
#define PSC_KEY (~0ULL << 51)

/* The slot of the @ways from @base whose entry's key (under @mask) is
 * @key, or -1. */
static int set_find(_Atomic uint64_t *cache, uint32_t base, uint32_t ways, uint64_t mask,
		    uint64_t key)
{
	for (uint32_t k = 0; k < ways; k++)
		if ((atomic_load(&cache[base + k]) & mask) == key)
			return (int)(base + k);
	return -1;
}

int tlb_find(struct orc_world *w, struct orc_cpu *c, uint32_t as, uint32_t page)
{
	return set_find(c->tlb, tlb_set(w, as, page), w->cfg.tlb_ways, TLB_KEY,
			te_make(as, page, 0, 0, 0));
}

/*
 * The slot of a set-associative cache to store into: @hit (the entry with
 * the same key, -1 if none), else the first free of the @ways slots from
 * @base, else a random one of them.
 */
static uint32_t set_victim(_Atomic uint64_t *cache, uint32_t base, uint32_t ways, int hit,
			   uint64_t *rng)
{
	if (hit >= 0)
		return (uint32_t)hit;
	for (uint32_t k = 0; k < ways; k++)
		if (!atomic_load(&cache[base + k]))
			return base + k;
	return base + (uint32_t)(rng_next(rng) % ways);
}

/* Under the CPU's cache lock, on its own thread. */
void tlb_fill(struct orc_world *w, struct orc_cpu *c, uint64_t e)
{
	uint32_t base = tlb_set(w, te_as(e), te_page(e));

	atomic_store(&c->tlb[set_victim(c->tlb, base, w->cfg.tlb_ways,
					tlb_find(w, c, te_as(e), te_page(e)), &c->rng)],
		     e);
}

int psc_find(struct orc_world *w, struct orc_cpu *c, uint32_t as, uint32_t group)
{
	return set_find(c->psc, psc_set(w, as, group), w->cfg.psc_ways, PSC_KEY,
			psc_make(as, group, TE_VALID));
}

void psc_fill(struct orc_world *w, struct orc_cpu *c, uint64_t s)
{
	uint32_t base = psc_set(w, psc_as(s), psc_group(s));

	atomic_store(&c->psc[set_victim(c->psc, base, w->cfg.psc_ways,
					psc_find(w, c, psc_as(s), psc_group(s)), &c->rng)],
		     s);
}

uint32_t tlb_slots(const struct orc_world *w)
{
	return w->cfg.tlb_sets * w->cfg.tlb_ways;
}

uint32_t psc_slots(const struct orc_world *w)
{
	return w->cfg.psc_sets * w->cfg.psc_ways;
}

/* Drop every entry of @as (or DROP_ALL, DROP_USER), TLB and PSC.  The
 * kernel region's entries are global: they go only with DROP_ALL.  Under
 * the CPU's cache lock. */
static void drop_as(struct orc_world *w, struct orc_cpu *c, int as)
{
	for (uint32_t i = 0; i < tlb_slots(w); i++) {
		uint64_t e = atomic_load(&c->tlb[i]);

		if (e && (as == DROP_ALL || (as == DROP_USER && te_as(e) != ORC_KAS) ||
			  te_as(e) == (uint32_t)as))
			atomic_store(&c->tlb[i], 0);
	}
	for (uint32_t i = 0; i < psc_slots(w); i++) {
		uint64_t s = atomic_load(&c->psc[i]);

		if (s && (as < 0 || psc_as(s) == (uint32_t)as))
			atomic_store(&c->psc[i], 0);
	}
	if (as < 0)
		hwtag_flushed_all(w, c);
}

static int as_of_tag(const struct orc_world *w, uint64_t tag)
{
	for (uint32_t x = 0; x < w->cfg.nr_as; x++)
		if (w->as[x].tag == tag)
			return (int)x;
	return -1;
}

/* Is byte address @va inside @r? */
static int in_range(const struct tlbpol_range *r, uint64_t va)
{
	if (va < r->va || r->page_shift >= 64)
		return 0;
	return ((va - r->va) >> r->page_shift) < r->nr_pages;
}

/* Does [va, va + len) meet @r? */
static int meets_range(const struct tlbpol_range *r, uint64_t va, uint64_t len)
{
	uint64_t rlen;

	if (r->page_shift >= 64)
		return 0;
	if (r->nr_pages > (UINT64_MAX >> r->page_shift))
		rlen = UINT64_MAX - r->va;
	else
		rlen = r->nr_pages << r->page_shift;
	return va < r->va + rlen && r->va < va + len;
}

/* Check what the header promises of a flush: known tag, sane ranges. */
static void check_flush(struct orc_world *w, const struct tlbpol_flush *f, int x)
{
	if (f->kind > TLBPOL_FLUSH_ALL) {
		violation(w, ORC_V_API, "flush of unknown kind %u", f->kind);
		return;
	}
	if (f->kind != TLBPOL_FLUSH_ALL && x < 0 && !w->tags)
		warning(w, "flush names tag %#llx, which no address space has",
			(unsigned long long)f->as_tag);
	if (f->kind != TLBPOL_FLUSH_PAGES)
		return;
	if (!f->nr_ranges || !f->ranges) {
		warning(w, "PAGES flush with no ranges");
		return;
	}
	for (uint32_t i = 0; i < f->nr_ranges; i++) {
		const struct tlbpol_range *r = &f->ranges[i];

		if (!r->nr_pages || r->page_shift < 12 || r->page_shift >= 64 ||
		    (r->va & ((1ULL << r->page_shift) - 1)))
			warning(w, "malformed range va %#llx pages %llu shift %u",
				(unsigned long long)r->va, (unsigned long long)r->nr_pages,
				r->page_shift);
		if (i && r->va < f->ranges[i - 1].va)
			warning(w, "flush ranges not sorted (%#llx after %#llx)",
				(unsigned long long)r->va, (unsigned long long)f->ranges[i - 1].va);
	}
}

/* Apply flush @f to CPU @c's caches.  Under its cache lock. */
static void apply_flush(struct orc_world *w, struct orc_cpu *c, const struct tlbpol_flush *f)
{
	int x;
	uint64_t group_len = (uint64_t)w->cfg.group_pages << ORC_PAGE_SHIFT;

	if (f->kind == TLBPOL_FLUSH_ALL) {
		drop_as(w, c, DROP_ALL);
		return;
	}
	/* With hardware tags, whoever owns the tag on this CPU. */
	x = w->tags ? hwtag_owner(w, c, f) : as_of_tag(w, f->as_tag);
	/* A tag nobody holds: only global entries a PAGES flush names. */
	if (x < 0 && !(f->kind == TLBPOL_FLUSH_PAGES && (f->flags & TLBPOL_FLUSHF_GLOBAL)))
		return;
	if (f->kind == TLBPOL_FLUSH_AS) {
		/* Every non-global entry of the AS, paging-structure caches
		 * included (INVPCID single-context, TLBI ASIDE1). */
		drop_as(w, c, x);
		return;
	}
	if (f->kind != TLBPOL_FLUSH_PAGES || !f->ranges)
		return;
	for (uint32_t i = 0; i < tlb_slots(w); i++) {
		uint64_t e = atomic_load(&c->tlb[i]);
		uint64_t va;

		/*
		 * Global entries go only if the flush says it may name them
		 * (INVLPG does, INVPCID type 0 does not): the model keeps the
		 * least the contract promises.
		 */
		if (!e || (te_as(e) != (uint32_t)x &&
			   !(te_as(e) == ORC_KAS && (f->flags & TLBPOL_FLUSHF_GLOBAL))))
			continue;
		va = page_va(te_as(e), te_page(e));
		for (uint32_t r = 0; r < f->nr_ranges; r++)
			if (in_range(&f->ranges[r], va)) {
				atomic_store(&c->tlb[i], 0);
				break;
			}
	}
	/*
	 * Page invalidations leave the paging-structure caches alone unless the
	 * flush says tables were freed; then only pointers to table pages under
	 * the ranges go.  (Real INVLPG drops more; the model keeps the least the
	 * contract promises, so that a missing TABLES flag shows.)
	 */
	if (!(f->flags & TLBPOL_FLUSHF_TABLES))
		return;
	for (uint32_t i = 0; i < psc_slots(w); i++) {
		uint64_t s = atomic_load(&c->psc[i]);
		uint64_t va;

		if (!s || psc_as(s) != (uint32_t)x)
			continue;
		va = ORC_VA_BASE + (uint64_t)psc_group(s) * group_len;
		for (uint32_t r = 0; r < f->nr_ranges; r++)
			if (meets_range(&f->ranges[r], va, group_len)) {
				atomic_store(&c->psc[i], 0);
				break;
			}
	}
}

/* A flush the CPU does itself (catch-up, CR3 write): under its lock.  @as:
 * an address space, DROP_USER or DROP_ALL (see drop_as()). */
void self_flush(struct orc_world *w, struct orc_cpu *c, int as)
{
	trace(w, (int)(c - w->cpus), TR_CATCHUP, as < 0 ? 15u : (uint32_t)as, 0, 0, 0);
	cache_lock(c);
	drop_as(w, c, as);
	cache_unlock(c);
}

/* The trace's record of flush @f (a debugging aid: ORC_TRACE=1). */
static void trace_flush(struct orc_world *w, int cpu, enum trace_op op,
			const struct tlbpol_flush *f)
{
	int x = as_of_tag(w, f->as_tag);
	uint64_t pages = 0;
	uint32_t first = 0;

	if (f->kind == TLBPOL_FLUSH_PAGES && f->ranges && f->nr_ranges) {
		for (uint32_t i = 0; i < f->nr_ranges; i++)
			pages += f->ranges[i].nr_pages;
		if (f->ranges[0].va >= ORC_VA_BASE)
			first = (uint32_t)((f->ranges[0].va - ORC_VA_BASE) >> ORC_PAGE_SHIFT);
	}
	trace(w, cpu, op, x < 0 ? 15u : (uint32_t)x, first,
	      (f->kind & 3) | (f->flags & 1) << 2 | f->nr_ranges << 4,
	      pages > 0xffffff ? 0xffffff : (uint32_t)pages);
}

void cb_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct orc_world *w = ctx;
	struct orc_cpu *c;

	if (cpu >= w->cfg.nr_cpus) {
		violation(w, ORC_V_API, "flush_local for cpu %u of %u", cpu, w->cfg.nr_cpus);
		return;
	}
	/* "Runs on @cpu itself": a flush from elsewhere would race with the
	 * CPU's own walks on real hardware (here the cache lock hides that). */
	if (self_world == w && self_cpu >= 0 && (uint32_t)self_cpu != cpu)
		warning(w, "flush_local for cpu %u ran on cpu %d", cpu, self_cpu);
	c = &w->cpus[cpu];
	check_flush(w, f, as_of_tag(w, f->as_tag));
	trace_flush(w, (int)cpu, TR_FLUSH, f);
	cache_lock(c);
	apply_flush(w, c, f);
	cache_unlock(c);
	count(w, ORC_C_FLUSHES, 1);
}

/*
 * Does a broadcast reach CPU @i?  Every CPU, as ops->broadcast requires --
 * unless cfg.tag_match models the host bug the header warns of: a broadcast
 * that matches a tag (INVLPGB with its PCID bit, TLBI by ASID) while the odd
 * CPUs hold every address space under a per-CPU tag of their own (Linux's
 * dynamic PCIDs): those keep their entries.
 */
static int bcast_reaches(const struct orc_world *w, uint32_t i)
{
	return !w->cfg.tag_match || i % 2 == 0;
}

/* @f applied to CPU @i's caches, its walks in flight finished first (the
 * cache lock), as a broadcast's sync or a remote action waits for them. */
static void apply_on(struct orc_world *w, uint32_t i, const struct tlbpol_flush *f)
{
	cache_lock(&w->cpus[i]);
	apply_flush(w, &w->cpus[i], f);
	cache_unlock(&w->cpus[i]);
}

/* @f applied to every CPU a broadcast reaches. */
static void apply_broadcast(struct orc_world *w, const struct tlbpol_flush *f)
{
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
		if (bcast_reaches(w, i))
			apply_on(w, i, f);
}

/* A broadcast invalidation reaches every CPU's caches and is complete when
 * it returns; walks in flight finish first (the cache lock), as TLBSYNC and
 * DSB wait for them. */
void cb_broadcast(void *ctx, uint32_t from, const struct tlbpol_flush *f)
{
	struct orc_world *w = ctx;

	check_flush(w, f, as_of_tag(w, f->as_tag));
	trace_flush(w, (int)from, TR_BCAST, f);
	apply_broadcast(w, f);
	count(w, ORC_C_BROADCASTS, 1);
}

/*
 * Split-phase broadcast (cfg.split).  An issue is only recorded, on the
 * thread that runs it; it takes effect on every CPU at that thread's next
 * sync -- the latest an INVLPGB (TLBI IS) may complete, for only its
 * issuer's TLBSYNC (DSB ISH) waits for it.  A request the engine counts
 * complete before its issuer synced is then found by the completion check.
 */
void cb_bcast_issue(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct orc_world *w = ctx;
	struct orc_cpu *c;
	struct issued *is;

	if (self_world != w || self_cpu < 0 || (uint32_t)self_cpu != cpu) {
		violation(w, ORC_V_API, "bcast_issue for cpu %u ran on cpu %d", cpu,
			  self_world == w ? self_cpu : -1);
		if (self_world != w || self_cpu < 0)
			return;
	}
	c = &w->cpus[self_cpu];
	check_flush(w, f, as_of_tag(w, f->as_tag));
	trace_flush(w, self_cpu, TR_BCAST, f);
	pthread_mutex_lock(&c->iss_lock);
	if (c->niss == c->capiss) {
		c->capiss = c->capiss ? 2 * c->capiss : 8;
		c->iss = realloc(c->iss, c->capiss * sizeof(*c->iss));
		if (!c->iss)
			abort();
	}
	is = &c->iss[c->niss++];
	is->f = *f;
	is->r = NULL;
	if (f->nr_ranges) {
		is->r = malloc(f->nr_ranges * sizeof(*is->r));
		if (!is->r)
			abort();
		memcpy(is->r, f->ranges, f->nr_ranges * sizeof(*is->r));
	}
	is->f.ranges = is->r;
	pthread_mutex_unlock(&c->iss_lock);
	count(w, ORC_C_BROADCASTS, 1);
}

/* Complete what CPU @cpu issued, on every CPU; the engine says @cpu is the
 * one running the sync, and a sync elsewhere is its mistake. */
void cb_bcast_sync(void *ctx, uint32_t cpu)
{
	struct orc_world *w = ctx;
	struct orc_cpu *c;

	if (cpu >= w->cfg.nr_cpus) {
		violation(w, ORC_V_API, "bcast_sync for cpu %u of %u", cpu, w->cfg.nr_cpus);
		return;
	}
	if (self_world != w || self_cpu < 0 || (uint32_t)self_cpu != cpu)
		violation(w, ORC_V_API,
			  "bcast_sync for cpu %u ran on cpu %d: TLBSYNC there completes none of "
			  "cpu %u's issues", cpu, self_world == w ? self_cpu : -1, cpu);
	/* What the thread that runs it issued: the hardware's TLBSYNC. */
	if (self_world != w || self_cpu < 0)
		return;
	c = &w->cpus[self_cpu];
	pthread_mutex_lock(&c->iss_lock);
	for (uint32_t k = 0; k < c->niss; k++) {
		apply_broadcast(w, &c->iss[k].f);
		free(c->iss[k].r);
	}
	c->niss = 0;
	pthread_mutex_unlock(&c->iss_lock);
}

void issued_check(struct orc_world *w, struct orc_cpu *c, uint32_t cpu)
{
	uint32_t n;

	if (!w->cfg.split)
		return;
	pthread_mutex_lock(&c->iss_lock);
	n = c->niss;
	pthread_mutex_unlock(&c->iss_lock);
	if (n)
		violation(w, ORC_V_API, "an engine call of cpu %u returned with %u broadcasts issued "
			  "and not synced", cpu, n);
}

/*
 * ops->remote_action (cfg.remote: RAR, an SBI fence): each target's caches
 * flushed with no code of the engine run there, complete on return; walks
 * in flight finish first (the cache lock), as the hardware's would.  Never
 * the caller itself, which flushes its own part.
 */
void cb_remote_action(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets,
		      const struct tlbpol_flush *f)
{
	struct orc_world *w = ctx;

	if (self_world != w || self_cpu != (int)from)
		violation(w, ORC_V_API, "remote_action from cpu %u ran on cpu %d", from, self_cpu);
	if (tlbpol_cpuset_test(targets, from))
		violation(w, ORC_V_API, "remote_action from cpu %u names itself", from);
	check_flush(w, f, as_of_tag(w, f->as_tag));
	trace_flush(w, (int)from, TR_BCAST, f);
	for (int i = tlbpol_cpuset_next(targets, -1); i >= 0; i = tlbpol_cpuset_next(targets, i)) {
		if ((uint32_t)i >= w->cfg.nr_cpus) {
			violation(w, ORC_V_API, "remote_action names cpu %d of %u", i, w->cfg.nr_cpus);
			break;
		}
		apply_on(w, (uint32_t)i, f);
	}
	count(w, ORC_C_BROADCASTS, 1);
}
