/* SPDX-License-Identifier: MIT */
/*
 * tags.c - hardware tag allocators (PCID, ASID, VMID): which tag a CPU
 * loads for an address space, and what it must flush first.
 *
 * Two schemes, as the header describes.  Per-CPU slots (Linux x86,
 * arch/x86/mm/tlb.c choose_new_asid()): a CPU's slots are touched only by
 * its own loads, so they need no lock; an identity is a 64-bit number
 * never handed out twice (Linux's ctx_id), so a slot that served a closed
 * address space never matches a new one.  Global generations (Linux arm64,
 * arch/arm64/mm/context.c): the pool and the rollover are under one lock;
 * the common load is one compare-and-swap on the CPU's active word.
 * A leaf of the core: calls nothing but prim.h.
 */
#include "internal.h"

#define TAGS_MAGIC 0x74616773u /* "tags" */

/* One CPU's part, on cache lines of its own. */
struct tag_cpu {
	/* TLBPOL_TAGS_GLOBAL: the identity word this CPU runs (0: none, or a
	 * rollover since its last load); RMWs only, so that a load's
	 * compare-and-swap and a rollover's exchange are ordered (below). */
	uint64_t active;
	/* TLBPOL_TAGS_GLOBAL, under the lock: the word kept for this CPU at
	 * the last rollover, and whether it still owes its flush of all. */
	uint64_t reserved;
	uint32_t flush_pending;
	/* TLBPOL_TAGS_PERCPU: the slot the next miss takes (round-robin). */
	uint32_t next_slot;
	/* Counters, written by this CPU's loads only. */
	uint64_t loads, tag_flushes, all_flushes, rollovers;
	/* TLBPOL_TAGS_PERCPU: nr_slots identity words (0: empty). */
	uint64_t slot[];
};

struct tlbpol_tags {
	uint32_t magic;
	uint32_t kind;
	uint32_t nr_cpus;
	uint32_t bits;
	uint32_t first;
	uint32_t nr_slots;
	uint32_t stride; /* bytes per struct tag_cpu */
	uint32_t lock;   /* the pool, generations, reserved; the global tags */
	uint32_t cur_idx;
	uint32_t nr_global;   /* TLBPOL_TAGS_PERCPU: global tags, the last of the width */
	uint32_t global_min;  /* cfg's global_min_cpus, 4 for 0 */
	uint32_t global_taken; /* atomic: global tags held (not given back) */
	uint32_t global_given_back; /* atomic: given back since the last recycling */
	uint32_t pad2;
	uint64_t gen;     /* TLBPOL_TAGS_GLOBAL: the generation, in units of 2^bits */
	uint64_t next_id; /* TLBPOL_TAGS_PERCPU: identities handed out */
	/* Then nr_cpus struct tag_cpu, then (GLOBAL) the pool's bitmap, or
	 * (PERCPU) the global tags taken and those given back since the last
	 * recycling, a bitmap each. */
};

/*
 * TLBPOL_TAGS_PERCPU identity words: the identity's number in the low
 * bits, never 0, never handed out twice; its global tag + 1 above them
 * (0: none).
 */
#define ID_BITS 48
#define ID_MASK ((1ULL << ID_BITS) - 1)

static size_t header_size(void)
{
	return prim_align_up(sizeof(struct tlbpol_tags), TLBPOL_CACHELINE);
}

static size_t cpu_stride(uint32_t nr_slots)
{
	return prim_align_up(sizeof(struct tag_cpu) + nr_slots * sizeof(uint64_t),
			     TLBPOL_CACHELINE);
}

static struct tag_cpu *tcpu(const struct tlbpol_tags *t, uint32_t cpu)
{
	return (struct tag_cpu *)((char *)t + header_size() + (size_t)cpu * t->stride);
}

static uint64_t *pool(const struct tlbpol_tags *t)
{
	return (uint64_t *)((char *)t + header_size() + (size_t)t->nr_cpus * t->stride);
}

static uint64_t tag_mask(const struct tlbpol_tags *t)
{
	return (1ULL << t->bits) - 1;
}

static size_t global_words(uint32_t nr_global)
{
	return (nr_global + 63) / 64;
}

/* TLBPOL_TAGS_PERCPU: the global tags taken, and those given back. */
static uint64_t *gtaken(const struct tlbpol_tags *t)
{
	return pool(t);
}

static uint64_t *gfreed(const struct tlbpol_tags *t)
{
	return pool(t) + global_words(t->nr_global);
}

/* The configuration's checks; 0 or -errno. */
static int config_check(const struct tlbpol_tags_config *cfg)
{
	if (!cfg || cfg->size < sizeof(*cfg))
		return -E_INVAL;
	if (!tail_zero(cfg, cfg->size, sizeof(*cfg)))
		return -E_2BIG;
	if (cfg->kind > TLBPOL_TAGS_GLOBAL || !cfg->tag_bits || !cfg->nr_cpus)
		return -E_INVAL;
	if (cfg->kind == TLBPOL_TAGS_GLOBAL && (cfg->nr_slots || cfg->nr_global ||
						 cfg->global_min_cpus))
		return -E_INVAL;
	if (cfg->nr_cpus > TLBPOL_MAX_CPUS || cfg->tag_bits > TLBPOL_TAG_BITS_MAX)
		return -E_RANGE;
	if (cfg->first_tag >= (1u << cfg->tag_bits))
		return -E_RANGE;
	if (cfg->kind == TLBPOL_TAGS_PERCPU)
		return !cfg->nr_slots || cfg->nr_slots > TLBPOL_TAG_SLOTS_MAX ||
				       (uint64_t)cfg->nr_slots + cfg->nr_global >
					       (1u << cfg->tag_bits) - cfg->first_tag
			       ? -E_RANGE
			       : 0;
	/* After a rollover every CPU may keep one tag, and one more must be
	 * free for the load that caused it. */
	return (1u << cfg->tag_bits) - cfg->first_tag > cfg->nr_cpus ? 0 : -E_RANGE;
}

static size_t size_of(const struct tlbpol_tags_config *cfg)
{
	size_t map = cfg->kind == TLBPOL_TAGS_GLOBAL
			     ? prim_align_up((1u << cfg->tag_bits) / 8 + 8, 8)
			     : 2 * global_words(cfg->nr_global) * sizeof(uint64_t);

	return header_size() + (size_t)cfg->nr_cpus * cpu_stride(cfg->nr_slots) + map;
}

size_t tlbpol_tags_size(const struct tlbpol_tags_config *cfg)
{
	return config_check(cfg) ? 0 : size_of(cfg);
}

int tlbpol_tags_init(struct tlbpol_tags **out, void *mem, size_t len,
		     const struct tlbpol_tags_config *cfg)
{
	struct tlbpol_tags *t = (struct tlbpol_tags *)mem;
	int err;

	if (!out || !mem || ((uintptr_t)mem & (TLBPOL_CACHELINE - 1)))
		return -E_INVAL;
	err = config_check(cfg);
	if (err)
		return err;
	if (len < size_of(cfg))
		return -E_NOMEM;
	prim_zero(mem, size_of(cfg));
	t->kind = cfg->kind;
	t->nr_cpus = cfg->nr_cpus;
	t->bits = cfg->tag_bits;
	t->first = cfg->first_tag;
	t->nr_slots = cfg->nr_slots;
	t->stride = (uint32_t)cpu_stride(cfg->nr_slots);
	t->cur_idx = cfg->first_tag;
	t->nr_global = cfg->nr_global;
	t->global_min = cfg->global_min_cpus ? cfg->global_min_cpus : 4;
	/* Generation 0 is no generation: an identity word of 0 is "none". */
	t->gen = 1ULL << cfg->tag_bits;
	/*
	 * What is under each tag at boot is unknown: every CPU owes a flush
	 * of all before its first global tag, of either kind (a slot's first
	 * use is a miss, which flushes it).
	 */
	for (uint32_t c = 0; c < cfg->nr_cpus; c++)
		tcpu(t, c)->flush_pending = 1;
	t->magic = TAGS_MAGIC;
	*out = t;
	return 0;
}

static int tags_valid(const struct tlbpol_tags *t)
{
	return t && t->magic == TAGS_MAGIC;
}

int tlbpol_tag_id_init(struct tlbpol_tags *tags, struct tlbpol_tag_id *id)
{
	if (!tags_valid(tags) || !id)
		return -E_INVAL;
	/* A global identity starts with no tag; a per-CPU one is a number no
	 * slot has held. */
	id->word = tags->kind == TLBPOL_TAGS_PERCPU
			   ? (prim_fetch_add(&tags->next_id, 1ULL) + 1) & ID_MASK
			   : 0;
	return 0;
}

/* Is @w an identity word @t made (as far as can be told)? */
static int word_valid(const struct tlbpol_tags *t, uint64_t w)
{
	if (t->kind == TLBPOL_TAGS_PERCPU)
		return (w & ID_MASK) && (w & ID_MASK) <= prim_load_relaxed(&t->next_id) &&
		       (w >> ID_BITS) <= t->nr_global;
	return !w || (w & tag_mask(t)) >= t->first;
}

/* ---- TLBPOL_TAGS_PERCPU ---- */

static void load_percpu(struct tlbpol_tags *t, struct tag_cpu *c, uint64_t w,
			struct tlbpol_tag_use *out)
{
	uint32_t s;

	if (w >> ID_BITS) {
		/*
		 * A global tag: this CPU's slot, if it kept one, is given up
		 * (its entries there are unreachable now, and the slot's next
		 * owner flushes it).  A flush of all is owed after global
		 * tags were recycled: make_global() raised every CPU's flag
		 * before it published the tag that needs it, and we read the
		 * tag (acquire) before the flag.
		 */
		for (s = 0; s < t->nr_slots; s++)
			if (prim_load_relaxed(&c->slot[s]) == (w & ID_MASK))
				prim_store_relaxed(&c->slot[s], 0ULL);
		out->tag = (1u << t->bits) - t->nr_global + (uint32_t)(w >> ID_BITS) - 1;
		out->flush = prim_xchg_acquire(&c->flush_pending, 0u) ? TLBPOL_TAG_FLUSH_ALL
								    : TLBPOL_TAG_FLUSH_NONE;
		return;
	}
	w &= ID_MASK;
	for (s = 0; s < t->nr_slots; s++) {
		if (prim_load_relaxed(&c->slot[s]) == w) {
			out->tag = t->first + s;
			out->flush = TLBPOL_TAG_FLUSH_NONE;
			return;
		}
	}
	/*
	 * A miss: the next slot round-robin, whose entries are another
	 * address space's (or unknown): flushed as it is loaded, as Linux's
	 * choose_new_asid() returns need_flush for a slot it takes over.
	 */
	s = c->next_slot;
	c->next_slot = (s + 1) % t->nr_slots;
	prim_store_relaxed(&c->slot[s], w);
	out->tag = t->first + s;
#ifndef TLBPOL_PLANTED_TAG_NO_FLUSH
	out->flush = TLBPOL_TAG_FLUSH_TAG;
#else
	out->flush = TLBPOL_TAG_FLUSH_NONE;
#endif
}

/* ---- TLBPOL_TAGS_GLOBAL ---- */

static int pool_test_and_set(uint64_t *map, uint64_t tag)
{
	uint64_t bit = 1ULL << (tag % 64), old = map[tag / 64];

	map[tag / 64] = old | bit;
	return (old & bit) != 0;
}

/* The first free tag at or after @from, or 2^bits if none. */
static uint64_t pool_next_free(const struct tlbpol_tags *t, const uint64_t *map, uint64_t from)
{
	uint64_t end = 1ULL << t->bits;

	for (uint64_t tag = from; tag < end;) {
		uint64_t free = ~map[tag / 64] & (~0ULL << (tag % 64));

		if (free)
			return (tag & ~63ULL) + prim_ctz64(free) < end ? (tag & ~63ULL) + prim_ctz64(free)
								     : end;
		tag = (tag & ~63ULL) + 64;
	}
	return end;
}

/*
 * A new generation, under the lock (Linux flush_context()).  The pool
 * empties, but what each CPU runs now stays taken, its tag reserved to its
 * address space (check_update_reserved() gives it back the same number):
 * the CPU goes on using that tag's entries until its next load, and any
 * other CPU that runs the address space must use the same tag for one
 * broadcast by tag to reach them all.  A CPU whose active word is 0 had a
 * rollover since its last load, and keeps what it reserved then.  Every
 * CPU then owes a flush of all before it loads a tag of this generation:
 * its TLB may hold anything of the last one under any tag.  The exchange
 * and a load's compare-and-swap are RMWs of one word, so they are ordered:
 * a load that swapped before is kept here, one that comes after finds 0
 * and takes the lock, which orders it after the new generation.
 */
static void rollover(struct tlbpol_tags *t, struct tag_cpu *me)
{
	uint64_t *map = pool(t);

	prim_zero(map, ((1ULL << t->bits) + 63) / 64 * 8);
	prim_store_relaxed(&t->gen, prim_load_relaxed(&t->gen) + (1ULL << t->bits));
	for (uint32_t i = 0; i < t->nr_cpus; i++) {
		struct tag_cpu *c = tcpu(t, i);
		uint64_t w = prim_xchg_acquire(&c->active, 0ULL);

		if (!w)
			w = c->reserved;
		if (w)
			pool_test_and_set(map, w & tag_mask(t));
		c->reserved = w;
#ifndef TLBPOL_PLANTED_ROLLOVER_MISSES_CPU
		c->flush_pending = 1;
#else
		c->flush_pending = i ? 1 : c->flush_pending;
#endif
	}
	prim_count(&me->rollovers, 1);
}

/* Every CPU's reservation of @w becomes @nw; was there one?  (Linux
 * check_update_reserved_asid().) */
static int update_reserved(struct tlbpol_tags *t, uint64_t w, uint64_t nw)
{
	int hit = 0;

	for (uint32_t i = 0; i < t->nr_cpus; i++) {
		struct tag_cpu *c = tcpu(t, i);

		if (c->reserved == w) {
			c->reserved = nw;
			hit = 1;
		}
	}
	return hit;
}

/* A tag of the current generation for an identity whose word is @w, under
 * the lock (Linux new_context()). */
static uint64_t new_word(struct tlbpol_tags *t, struct tag_cpu *me, uint64_t w)
{
	uint64_t *map = pool(t), gen = prim_load_relaxed(&t->gen), tag;

	if (w) {
		/* The same number if a CPU kept it for us or nobody took it:
		 * CPUs that may still run us under it keep agreeing. */
		uint64_t nw = gen | (w & tag_mask(t));

		if (update_reserved(t, w, nw) || !pool_test_and_set(map, w & tag_mask(t)))
			return nw;
	}
	tag = pool_next_free(t, map, t->cur_idx);
	if (tag >> t->bits) {
		rollover(t, me);
		gen = prim_load_relaxed(&t->gen);
		tag = pool_next_free(t, map, t->first);
	}
	pool_test_and_set(map, tag);
	t->cur_idx = (uint32_t)tag;
	return gen | tag;
}

static void load_global(struct tlbpol_tags *t, struct tag_cpu *c, struct tlbpol_tag_id *id,
			struct tlbpol_tag_use *out)
{
	uint64_t w = prim_load_relaxed(&id->word), old = prim_load_relaxed(&c->active);

	out->flush = TLBPOL_TAG_FLUSH_NONE;
	/*
	 * The fast path (Linux check_and_switch_context()): our word is of the
	 * current generation and no rollover cleared our active word since
	 * our last load.  If one races with us, either our swap comes first
	 * and the rollover reserves our tag, or it finds 0 and we take the
	 * lock.
	 */
	if (old && (w >> t->bits) == (prim_load_relaxed(&t->gen) >> t->bits) &&
	    prim_cas(&c->active, &old, w)) {
		out->tag = (uint32_t)(w & tag_mask(t));
		return;
	}
	prim_spin_lock(&t->lock);
	w = prim_load_relaxed(&id->word);
	if ((w >> t->bits) != (prim_load_relaxed(&t->gen) >> t->bits)) {
		w = new_word(t, c, w);
		/* Release: an initiator that reads the new tag also sees the
		 * CPUs that gave up the old one marked leaving
		 * (tag_leaving(), tag_flush.c). */
		prim_store_release(&id->word, w);
	}
	if (c->flush_pending) {
		c->flush_pending = 0;
		out->flush = TLBPOL_TAG_FLUSH_ALL;
	}
	prim_store_seqcst(&c->active, w);
	prim_spin_unlock(&t->lock);
	out->tag = (uint32_t)(w & tag_mask(t));
}

int tlbpol_tag_load(struct tlbpol_tags *tags, uint32_t cpu, struct tlbpol_tag_id *id,
		    struct tlbpol_tag_use *out)
{
	struct tag_cpu *c;

	if (!tags_valid(tags) || !id || !out || !word_valid(tags, prim_load_relaxed(&id->word)))
		return -E_INVAL;
	if (cpu >= tags->nr_cpus)
		return -E_RANGE;
	c = tcpu(tags, cpu);
	if (tags->kind == TLBPOL_TAGS_PERCPU)
		load_percpu(tags, c, prim_load_acquire(&id->word), out);
	else
		load_global(tags, c, id, out);
	prim_count(&c->loads, 1);
	if (out->flush == TLBPOL_TAG_FLUSH_TAG)
		prim_count(&c->tag_flushes, 1);
	else if (out->flush == TLBPOL_TAG_FLUSH_ALL)
		prim_count(&c->all_flushes, 1);
	return 0;
}

/* ---- TLBPOL_TAGS_PERCPU's global tags ---- */

/* Is any of the @n bits of @map set? */
static int any_set(const uint64_t *map, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 64)
		if (map[i / 64] & (n - i >= 64 ? ~0ULL : (1ULL << (n - i)) - 1))
			return 1;
	return 0;
}

/* The first clear bit of @n in @map, or @n. */
static uint32_t first_clear(const uint64_t *map, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 64) {
		uint64_t free = ~map[i / 64];

		if (free)
			return i + prim_ctz64(free) < n ? i + prim_ctz64(free) : n;
	}
	return n;
}

/*
 * Under the lock: the global tags given back since the last recycling are
 * free again, and every CPU owes a flush of all before it loads one (it
 * may hold a former owner's entries under it; Linux flushes everything
 * with INVLPGB in reset_global_asid_space() for the same reason).  The
 * flags are raised before any recycled tag is published.
 */
static void recycle_global(struct tlbpol_tags *t)
{
	uint64_t *taken = gtaken(t), *freed = gfreed(t);

	for (size_t i = 0; i < global_words(t->nr_global); i++) {
		taken[i] &= ~freed[i];
		freed[i] = 0;
	}
	for (uint32_t c = 0; c < t->nr_cpus; c++)
		prim_store_seqcst(&tcpu(t, c)->flush_pending, 1u);
}

/* tlbpol_tag_make_global(), and with @try the engine's: -EBUSY rather than
 * wait for the lock (its shootdowns may run in an interrupt that landed in
 * a holder of it, tlbpol_as_close() on the same CPU), nor take it when
 * every global tag is taken and none is given back. */
int tlbpol__tag_make_global(struct tlbpol_tags *tags, struct tlbpol_tag_id *id, int try)
{
	uint64_t w, *taken;
	uint32_t g;

	if (!tags_valid(tags) || !id || !tags->nr_global ||
	    !word_valid(tags, prim_load_relaxed(&id->word)))
		return -E_INVAL;
	taken = gtaken(tags);
	if (try) {
		if (prim_load_relaxed(&tags->global_taken) >= tags->nr_global &&
		    !prim_load_relaxed(&tags->global_given_back))
			return -E_NOSPC;
		if (!prim_spin_trylock(&tags->lock))
			return -E_BUSY;
	} else {
		prim_spin_lock(&tags->lock);
	}
	w = prim_load_relaxed(&id->word);
	if (w >> ID_BITS) {
		prim_spin_unlock(&tags->lock);
		return -E_EXIST;
	}
	g = first_clear(taken, tags->nr_global);
	if (g == tags->nr_global) {
		/* Nothing given back since the last recycling: no flush owed. */
		if (!any_set(gfreed(tags), tags->nr_global)) {
			prim_spin_unlock(&tags->lock);
			return -E_NOSPC;
		}
		recycle_global(tags);
		prim_store_relaxed(&tags->global_given_back, 0u);
		g = first_clear(taken, tags->nr_global);
	}
	taken[g / 64] |= 1ULL << (g % 64);
	prim_fetch_add(&tags->global_taken, 1u);
	/* Release: a load that finds the tag finds the flags raised before. */
	prim_store_release(&id->word, w | (uint64_t)(g + 1) << ID_BITS);
	prim_spin_unlock(&tags->lock);
	return (int)((1u << tags->bits) - tags->nr_global + g);
}

int tlbpol_tag_make_global(struct tlbpol_tags *tags, struct tlbpol_tag_id *id)
{
	return tlbpol__tag_make_global(tags, id, 0);
}

int tlbpol_tag_global_of(const struct tlbpol_tags *tags, const struct tlbpol_tag_id *id)
{
	uint64_t g;

	if (!tags_valid(tags) || !id || !word_valid(tags, prim_load_relaxed(&id->word)))
		return -E_INVAL;
	g = tags->kind == TLBPOL_TAGS_PERCPU ? prim_load_acquire(&id->word) >> ID_BITS : 0;
	return g ? (int)((1u << tags->bits) - tags->nr_global + g - 1) : -E_NOENT;
}

int tlbpol_tag_release(struct tlbpol_tags *tags, struct tlbpol_tag_id *id)
{
	uint64_t w, g;

	if (!tags_valid(tags) || !id || !word_valid(tags, prim_load_relaxed(&id->word)))
		return -E_INVAL;
	if (tags->kind != TLBPOL_TAGS_PERCPU)
		return 0;
	prim_spin_lock(&tags->lock);
	w = prim_load_relaxed(&id->word);
	g = w >> ID_BITS;
	if (g) {
		g--;
#ifndef TLBPOL_PLANTED_GLOBAL_TAG_EARLY_REUSE
		gfreed(tags)[g / 64] |= 1ULL << (g % 64);
		prim_fetch_add(&tags->global_given_back, 1u);
#else
		gtaken(tags)[g / 64] &= ~(1ULL << (g % 64));
#endif
		prim_fetch_sub_release(&tags->global_taken, 1u);
		prim_store_relaxed(&id->word, w & ID_MASK);
	}
	prim_spin_unlock(&tags->lock);
	return 0;
}

int tlbpol_tag_of(const struct tlbpol_tags *tags, uint32_t cpu, const struct tlbpol_tag_id *id)
{
	uint64_t w;

	if (!tags_valid(tags) || !id)
		return -E_INVAL;
	if (cpu >= tags->nr_cpus)
		return -E_RANGE;
	w = prim_load_relaxed(&id->word);
	if (!w)
		return -E_NOENT;
	if (tags->kind == TLBPOL_TAGS_GLOBAL)
		return (int)(w & tag_mask(tags));
	for (uint32_t s = 0; s < tags->nr_slots; s++)
		if (prim_load_relaxed(&tcpu(tags, cpu)->slot[s]) == (w & ID_MASK))
			return (int)(tags->first + s);
	return tlbpol_tag_global_of(tags, id);
}

int tlbpol_tags_stats_read(const struct tlbpol_tags *tags, int cpu, struct tlbpol_tags_stats *out)
{
	struct tlbpol_tags_stats st;
	uint32_t size;

	if (!tags_valid(tags) || !out || out->size < offsetof(struct tlbpol_tags_stats, loads))
		return -E_INVAL;
	if (cpu < -1 || cpu >= (int)tags->nr_cpus)
		return -E_RANGE;
	prim_zero(&st, sizeof(st));
	for (uint32_t i = 0; i < tags->nr_cpus; i++) {
		const struct tag_cpu *c = tcpu(tags, i);

		if (cpu >= 0 && (uint32_t)cpu != i)
			continue;
		st.loads += prim_load_relaxed(&c->loads);
		st.tag_flushes += prim_load_relaxed(&c->tag_flushes);
		st.all_flushes += prim_load_relaxed(&c->all_flushes);
		st.rollovers += prim_load_relaxed(&c->rollovers);
	}
	/* Whole fields only: every one past the first eight bytes is 8. */
	size = (out->size < sizeof(st) ? out->size : (uint32_t)sizeof(st)) & ~7u;
	st.size = out->size;
	prim_copy(out, &st, size);
	return 0;
}

/* ---- The engine's use of its allocator (cfg->tags) ---- */

int tlbpol__tags_kind(const struct tlbpol_tags *tags, uint32_t nr_cpus)
{
	if (!tags_valid(tags))
		return -E_INVAL;
	return tags->nr_cpus < nr_cpus ? -E_RANGE : (int)tags->kind;
}

/* CPUs an address space must be loaded on to get a global tag, rising as
 * they run out (saturating: never 0 with global tags); 0 when the
 * allocator has none. */
uint32_t tlbpol__tags_global_min(const struct tlbpol_tags *tags)
{
	uint32_t taken = prim_load_relaxed(&tags->global_taken);
	uint64_t min = tags->global_min;

	if (!tags->nr_global)
		return 0;
	if (4ULL * taken >= 3ULL * tags->nr_global)
		min *= 4;
	else if (2ULL * taken >= tags->nr_global)
		min *= 2;
	return min > 0xffffffffULL ? 0xffffffffU : (uint32_t)min;
}
