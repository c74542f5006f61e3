/* SPDX-License-Identifier: MIT */
/*
 * engine.c - configuration, memory layout, address spaces and statistics.
 *
 * The top of the core with submit.c and cpu.c: it builds an engine in the
 * caller's memory, opens and closes address spaces, and sums the per-CPU
 * counters.  It calls down only into decide.c (the verdicts of the rules
 * in force); nothing in the core calls up into it.
 */
#include "internal.h"

const char *tlbpol_version(void)
{
	return TLBPOL_VERSION_STRING;
}

void tlbpol_config_init(struct tlbpol_config *cfg, uint32_t nr_cpus, uint32_t arch)
{
	if (!cfg)
		return;
	prim_zero(cfg, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
	cfg->nr_cpus = nr_cpus;
	cfg->arch = arch;
	cfg->max_as = TLBPOL_DEFAULT_MAX_AS;
	cfg->rules = TLBPOL_RULES_DEFAULT;
	cfg->flush_ceiling = TLBPOL_DEFAULT_FLUSH_CEILING;
	cfg->batch_pages = TLBPOL_DEFAULT_BATCH_PAGES;
	cfg->cost_ipi_ns = TLBPOL_DEFAULT_COST_IPI_NS;
	cfg->cost_ipi_target_ns = TLBPOL_DEFAULT_COST_IPI_TARGET_NS;
	cfg->cost_ipi_remote_ns = TLBPOL_DEFAULT_COST_IPI_REMOTE_NS;
	cfg->cost_broadcast_ns = TLBPOL_DEFAULT_COST_BROADCAST_NS;
	cfg->cost_broadcast_page_ns = TLBPOL_DEFAULT_COST_BROADCAST_PAGE_NS;
}

/*
 * @in as this release's structure in @out: a caller built with release
 * 0.1's header passes a shorter one (cfg->size), whose missing fields are
 * 0, their defaults, and so are the ops it lacks.  Every public entry point
 * reads the caller's configuration through here, never past its size.
 */
static int config_check(const struct tlbpol_config *cfg);

int tlbpol__config_copy(const struct tlbpol_config *in, struct tlbpol_config *out)
{
	/* One of the releases' sizes: a size that cuts a field is a bug. */
	if (!in || (in->size != TLBPOL_CONFIG_SIZE_0_1 && in->size != TLBPOL_CONFIG_SIZE_0_2 &&
		    in->size < sizeof(*out)))
		return -E_INVAL;
	if (!tail_zero(in, in->size, sizeof(*out)))
		return -E_2BIG;
	prim_zero(out, sizeof(*out));
	prim_copy(out, in, in->size < sizeof(*out) ? in->size : sizeof(*out));
	out->size = sizeof(*out);
	return 0;
}

/* tlbpol__config_copy(), then the whole configuration checked. */
int tlbpol__config_read(const struct tlbpol_config *in, struct tlbpol_config *out)
{
	int err = tlbpol__config_copy(in, out);

	return err ? err : config_check(out);
}

_Static_assert(TLBPOL_CONFIG_SIZE_0_1 == offsetof(struct tlbpol_config, wait_limit),
	       "release 0.1's configuration ends before wait_limit");
_Static_assert(TLBPOL_OPS_SIZE_0_1 == offsetof(struct tlbpol_ops, stuck),
	       "release 0.1's ops end before stuck");
_Static_assert(TLBPOL_CONFIG_SIZE_0_2 == offsetof(struct tlbpol_config, backends),
	       "release 0.2's configuration ends before backends");
_Static_assert(TLBPOL_OPS_SIZE_0_2 == offsetof(struct tlbpol_ops, bcast_issue),
	       "release 0.2's ops end before bcast_issue");

/* The element sizes behind TLBPOL_ENGINE_SIZE(), whose lists layout() also
 * places the engine by: on LP64 they are these structures' sizes. */
#if UINTPTR_MAX == 0xffffffffffffffffULL
_Static_assert(sizeof(struct tlbpol_engine) == TLBPOL__SZ_ENGINE, "TLBPOL__SZ_ENGINE");
_Static_assert(sizeof(struct tlbpol_cpu) == TLBPOL__SZ_CPU, "TLBPOL__SZ_CPU");
_Static_assert(sizeof(struct tlbpol_as) == TLBPOL__SZ_AS, "TLBPOL__SZ_AS");
_Static_assert(sizeof(struct pending_span) == TLBPOL__SZ_PENDING_SPAN, "TLBPOL__SZ_PENDING_SPAN");
_Static_assert(sizeof(struct pending) == TLBPOL__SZ_PENDING, "TLBPOL__SZ_PENDING");
_Static_assert(TLBPOL_MAX_AS <= 65536, "struct pending keeps an address space's index in 16 bits");
_Static_assert(sizeof(((struct pending *)0)->key) == 8 && offsetof(struct pending, key) + 8 ==
		       sizeof(struct pending), "the key covers what merging compares, nothing else");
_Static_assert(sizeof(struct req_flush) == TLBPOL__SZ_REQ_FLUSH, "TLBPOL__SZ_REQ_FLUSH");
_Static_assert(sizeof(struct recv_as) == TLBPOL__SZ_RECV_AS, "TLBPOL__SZ_RECV_AS");
_Static_assert(sizeof(struct tlbpol_range) == TLBPOL__SZ_RANGE, "TLBPOL__SZ_RANGE");
_Static_assert(sizeof(struct tlbpol_cpuset) == TLBPOL__SZ_CPUSET, "TLBPOL__SZ_CPUSET");
#endif
_Static_assert(TLBPOL_REQS == TLBPOL__REQS_PER_CPU, "TLBPOL__REQS_PER_CPU");
/* TLBPOL__LAZY_BODY() is in LP64 sizes on every target: it must hold a lazy
 * request's flushes and ranges by sizeof too, the ranges aligned after them. */
_Static_assert(sizeof(struct req_flush) <= TLBPOL__SZ_REQ_FLUSH &&
		       sizeof(struct tlbpol_range) <= TLBPOL__SZ_RANGE,
	       "TLBPOL__LAZY_BODY() holds what layout() places");
_Static_assert(sizeof(struct req_flush) % _Alignof(struct tlbpol_range) == 0,
	       "a lazy request's ranges are aligned after its flushes");

/* @cfg: this release's structure (tlbpol__config_read()). */
static int config_check(const struct tlbpol_config *cfg)
{
	if (!cfg || cfg->size < sizeof(*cfg))
		return -E_INVAL;
	if (cfg->arch >= TLBPOL_ARCH_MAX || (cfg->rules & ~TLBPOL_RULES_ALL) ||
	    (cfg->flags & ~TLBPOL_CFGF_ALL))
		return -E_INVAL;
	if (!cfg->ops ||
	    (cfg->ops->size != TLBPOL_OPS_SIZE_0_1 && cfg->ops->size != TLBPOL_OPS_SIZE_0_2 &&
	     cfg->ops->size < sizeof(struct tlbpol_ops)) ||
	    !cfg->ops->flush_local || !cfg->ops->send_ipi)
		return -E_INVAL;
	if (!tail_zero(cfg->ops, cfg->ops->size, sizeof(struct tlbpol_ops)))
		return -E_2BIG;
	/* Svvptc is a RISC-V extension: on another arch it would mean nothing. */
	if ((cfg->flags & TLBPOL_CFGF_SVVPTC) && cfg->arch != TLBPOL_ARCH_RISCV64)
		return -E_INVAL;
	/* WAIT_IRQS leans on ops->relax to take the interrupts (tlbpol.h). */
	if ((cfg->flags & TLBPOL_CFGF_WAIT_IRQS) && !cfg->ops->relax)
		return -E_INVAL;
	if (cfg->flush_ceiling == 0 || cfg->reserved)
		return -E_INVAL;
	if (cfg->nr_cpus == 0 || cfg->nr_cpus > TLBPOL_MAX_CPUS)
		return -E_RANGE;
	if (cfg->max_as == 0 || cfg->max_as > TLBPOL_MAX_AS)
		return -E_RANGE;
	if (cfg->batch_pages == 0 || cfg->batch_pages > TLBPOL_MAX_BATCH_PAGES)
		return -E_RANGE;
	if (cfg->cpu_node)
		for (uint32_t i = 0; i < cfg->nr_cpus; i++)
			if (cfg->cpu_node[i] >= cfg->nr_cpus)
				return -E_RANGE;
	if (cfg->tags && tlbpol__tags_kind(cfg->tags, cfg->nr_cpus) < 0)
		return tlbpol__tags_kind(cfg->tags, cfg->nr_cpus);
	return tlbpol__backends_check(cfg);
}

/*
 * The layout of an engine in one block: the engine, the per-CPU array (each
 * CPU on its own cache lines), then each CPU's arrays, the address spaces and
 * their footprints.  layout() computes offsets; with @base it also fills in
 * the pointers.
 */
/* Reserve @bytes at *@off, cache-line aligned; return where they start. */
static size_t take(size_t *off, size_t bytes)
{
	size_t at = *off;

	*off = prim_align_up(at + bytes, TLBPOL_CACHELINE);
	return at;
}

#define AT(base, o) ((void *)((char *)(base) + (o)))

static uint32_t nodes_of(const struct tlbpol_config *cfg)
{
	uint32_t n = 1;

	if (cfg->cpu_node)
		for (uint32_t i = 0; i < cfg->nr_cpus; i++)
			if (cfg->cpu_node[i] + 1u > n)
				n = cfg->cpu_node[i] + 1u;
	return n;
}

/*
 * The sizes of a request, which layout() gives each CPU: defined once, in
 * the public header, for TLBPOL_ENGINE_SIZE().
 *
 * Address spaces one request carries (its parts), TLBPOL__PARTS(): a batch
 * that spans more is sent as several requests, TLBPOL__PARTS_MAX at a time
 * (build()).  Most batches are of one address space; reclaim across
 * processes spans a few.  A receiver merges what it claims into one flush
 * per address space, for as many address spaces at once.
 *
 * Ranges one request carries, across its address spaces, TLBPOL__RANGES():
 * room for two address spaces at the flush ceiling, and at least 64, but
 * no more than a batch holds.  A part past the ceiling is one whole-AS
 * flush and carries none; a part that does not fit in what is left is one
 * too (build()).  Sized by what a request can use, not by the batch: five
 * requests of batch_pages ranges were 60 KiB of each CPU's 135.
 *
 * Entries one CPU's batch holds, TLBPOL__ENTRIES(): room for eight address
 * spaces at the flush ceiling, at least 64, no more than the batch's pages.
 * Past them an event widens an entry whose part is past the ceiling anyway,
 * or the batch completes early (enqueue()).  Eight, not two as for ranges:
 * at 66 entries, a reclaim of 4 interleaved address spaces (the case of
 * Linux 72b252aed506 "mm: send one IPI per CPU to TLB flush all entries
 * after unmapping pages") sent 63 interrupts per target where 512-page
 * batches need 8, and tlbpol-sim's reclaim sent 6% more; at 256 tlbpol-sim
 * matched 512 entries to the digit.
 */
#define PAGE 4096

/*
 * The element types of the header's layout lists (TLBPOL__CPU_ARRAYS() and
 * the others, which TLBPOL_ENGINE_SIZE() sums): TLBPOL__SZ_<type> there,
 * sizeof here (equal on LP64, asserted above).
 */
#define LAYOUT_SZ_U64 sizeof(uint64_t)
#define LAYOUT_SZ_U32 sizeof(uint32_t)
#define LAYOUT_SZ_U8 sizeof(uint8_t)
#define LAYOUT_SZ_PENDING sizeof(struct pending)
#define LAYOUT_SZ_RECV_AS sizeof(struct recv_as)
#define LAYOUT_SZ_RANGE sizeof(struct tlbpol_range)
#define LAYOUT_SZ_REQ_FLUSH sizeof(struct req_flush)
#define LAYOUT_SZ_CPUSET sizeof(struct tlbpol_cpuset)

/* Where one CPU's state lies, asked of layout(). */
struct probe {
	uint32_t cpu;
	size_t off[2], len[2];
};

/*
 * @placed: page-align each CPU's struct and its arrays, so that the hosted
 * layer can bind them to the CPU's NUMA node (a page belongs to one node).
 */
static size_t layout(const struct tlbpol_config *cfg, struct tlbpol_engine *eng, int placed,
		     struct probe *probe)
{
	uint32_t words = (cfg->nr_cpus + 63) / 64;
	uint32_t flush_cap = (uint32_t)TLBPOL__PARTS(cfg->batch_pages, cfg->max_as);
	uint32_t range_cap = (uint32_t)TLBPOL__RANGES(cfg->batch_pages, cfg->flush_ceiling);
	uint32_t entry_cap = (uint32_t)TLBPOL__ENTRIES(cfg->batch_pages, cfg->flush_ceiling);
	uint32_t lazy_flush_cap = (uint32_t)TLBPOL__LAZY_PARTS(cfg->batch_pages, cfg->max_as);
	uint32_t lazy_range_cap = (uint32_t)TLBPOL__LAZY_RANGES(cfg->batch_pages,
								cfg->flush_ceiling);
	uint32_t recv_cap = (uint32_t)TLBPOL__RECV_RANGES(cfg->batch_pages, cfg->flush_ceiling);
	size_t stride = placed ? prim_align_up(sizeof(struct tlbpol_cpu), PAGE)
			       : sizeof(struct tlbpol_cpu);
	size_t off = 0, cpus, as, gens, spans, masks = 0;
	/* TLBPOL_ENGINE_SIZE()'s @nodes: 0 without a topology. */
	uint32_t nodes = cfg->cpu_node ? nodes_of(cfg) : 0;

	take(&off, sizeof(struct tlbpol_engine));
	if (placed)
		off = prim_align_up(off, PAGE);
	cpus = take(&off, (size_t)cfg->nr_cpus * stride);
	as = take(&off, (size_t)cfg->max_as * sizeof(struct tlbpol_as));
	gens = take(&off, (size_t)cfg->nr_cpus * cfg->max_as * sizeof(uint64_t));
	spans = take(&off, (size_t)cfg->nr_cpus * cfg->max_as * sizeof(struct pending_span));
	if (cfg->cpu_node)
		masks = take(&off, (size_t)nodes_of(cfg) * words * sizeof(uint64_t));
	if (eng) {
		eng->cpus = AT(eng, cpus);
		eng->cpu_stride = (uint32_t)stride;
		eng->as = AT(eng, as);
		eng->local_gen = AT(eng, gens);
		eng->spans = AT(eng, spans);
		if (cfg->cpu_node)
			eng->node_mask = AT(eng, masks);
	}
	if (probe) {
		probe->off[0] = cpus + (size_t)probe->cpu * stride;
		probe->len[0] = stride;
	}
	for (uint32_t a = 0; a < cfg->max_as; a++) {
		size_t o;

#define PLACE_AS(field, n, type)                                               \
	o = take(&off, (size_t)(n) * LAYOUT_SZ_##type);                        \
	if (eng)                                                               \
		eng->as[a].field = AT(eng, o);
		TLBPOL__AS_ARRAYS(PLACE_AS, cfg->nr_cpus)
#undef PLACE_AS
		/* Its second and third parts (TLBPOL__AS_ARRAYS()): the same
		 * CPUs write them, as they switch in and out. */
		if (eng)
			eng->as[a].leaving = eng->as[a].footprint + words;
	}
	if (cfg->cpu_node) {
		size_t nodes = take(&off, cfg->nr_cpus * sizeof(uint16_t));

		if (eng)
			eng->cpu_node = AT(eng, nodes);
	}
	for (uint32_t i = 0; i < cfg->nr_cpus; i++) {
		struct tlbpol_cpu *c = eng ? cpu_of(eng, i) : 0;
		size_t o, start;

#define PLACE(field, bytes)                                                    \
	do {                                                                   \
		o = take(&off, (bytes));                                       \
		if (c)                                                         \
			c->field = AT(eng, o);                                 \
	} while (0)
		if (placed)
			off = prim_align_up(off, PAGE);
		start = off;
		/* The header's lists, which TLBPOL_ENGINE_SIZE() sums. */
#define PLACE_CPU(field, n, type) PLACE(field, (size_t)(n) * LAYOUT_SZ_##type);
#define PLACE_REQ(field, n, type) PLACE(reqs[k].field, (size_t)(n) * LAYOUT_SZ_##type);
		TLBPOL__CPU_ARRAYS(PLACE_CPU, cfg->nr_cpus, cfg->max_as, cfg->batch_pages,
				   cfg->flush_ceiling, nodes)
		for (uint32_t k = 0; k < TLBPOL_REQS; k++) {
			if (k == REQ_SYNC) {
				TLBPOL__REQ_ARRAYS(PLACE_REQ, cfg->nr_cpus, cfg->max_as,
						   cfg->batch_pages, cfg->flush_ceiling, nodes)
			} else {
				TLBPOL__LAZY_REQ_ARRAYS(PLACE_REQ, cfg->nr_cpus, cfg->max_as,
							cfg->batch_pages, cfg->flush_ceiling)
				/* Its ranges follow its flushes in one array
				 * (TLBPOL__LAZY_BODY()). */
				if (c)
					c->reqs[k].ranges = (struct tlbpol_range *)(void *)(
						c->reqs[k].flushes + lazy_flush_cap);
			}
			/* A lazy request never fans out (arm()), nor any
			 * without a topology: no leaders, and a stray use
			 * faults rather than corrupts. */
			if (c && (k != REQ_SYNC || !nodes))
				c->reqs[k].leaders = 0;
		}
		if (c && !nodes) {
			c->direct = 0;
			c->fwd = 0;
		}
#undef PLACE_REQ
#undef PLACE_CPU
#undef PLACE
		if (placed)
			off = prim_align_up(off, PAGE);
		if (probe && probe->cpu == i) {
			probe->off[1] = start;
			probe->len[1] = off - start;
		}
		if (c) {
			c->flush_cap = flush_cap;
			c->range_cap = range_cap;
			c->entry_cap = entry_cap;
			c->lazy_flush_cap = lazy_flush_cap;
			c->lazy_range_cap = lazy_range_cap;
			c->recv_cap = recv_cap;
			c->last.rules = ~0ULL; /* no decision cached */
			c->ticks = TLBPOL_TICKS_INITIAL;
#ifdef TLBPOL_TEST_ENTRY_CAP
			/* tests/oracle: a copy of the engine whose batches
			 * overflow their entries all the time, for the oracle to
			 * check enqueue()'s widening and early completion. */
			if (c->entry_cap > TLBPOL_TEST_ENTRY_CAP)
				c->entry_cap = TLBPOL_TEST_ENTRY_CAP;
#endif
		}
	}
	return off;
}

size_t tlbpol__engine_size(const struct tlbpol_config *cfg, int placed)
{
	struct tlbpol_config c;

	if (tlbpol__config_read(cfg, &c))
		return 0;
	return layout(&c, 0, placed, 0);
}

int tlbpol__cpu_ranges(const struct tlbpol_config *cfg, int placed, uint32_t cpu,
		       size_t off[2], size_t len[2])
{
	struct probe pr = { cpu, { 0, 0 }, { 0, 0 } };
	struct tlbpol_config c;

	if (tlbpol__config_read(cfg, &c) || cpu >= c.nr_cpus)
		return 0;
	layout(&c, 0, placed, &pr);
	off[0] = pr.off[0];
	len[0] = pr.len[0];
	off[1] = pr.off[1];
	len[1] = pr.len[1];
	return 2;
}

size_t tlbpol_engine_size(const struct tlbpol_config *cfg)
{
	return tlbpol__engine_size(cfg, 0);
}

/*
 * Rules an engine cannot use are dropped here, once, so the hot paths test
 * one mask.  Every rule bit is safe on every arch profile: where an arch
 * lacks the hardware behaviour a rule relies on, the decision table gives
 * that arch a weaker but safe cell instead (see decide.c).  Rules that need
 * something the caller did not give are dropped.
 */
static uint64_t rules_in_force(const struct tlbpol_engine *eng, uint64_t rules)
{
	if (eng->bcast == BCAST_NONE && !eng->remote)
		rules &= ~TLBPOL_RULE_BROADCAST;
	if (!eng->cpu_node)
		rules &= ~TLBPOL_RULE_NUMA_FANOUT;
	return rules;
}

void tlbpol__params_set_rules(const struct tlbpol_engine *eng, struct tlbpol_params *p)
{
	p->rules = rules_in_force(eng, p->rules_configured);
	tlbpol__resolve_verdicts(eng->arch, p);
}

int tlbpol_engine_init(struct tlbpol_engine **out, void *mem, size_t len,
		       const struct tlbpol_config *cfg)
{
	return tlbpol__engine_init(out, mem, len, cfg, 0);
}

int tlbpol__engine_init(struct tlbpol_engine **out, void *mem, size_t len,
			const struct tlbpol_config *user, int placed)
{
	struct tlbpol_engine *eng = (struct tlbpol_engine *)mem;
	struct tlbpol_config c, *cfg = &c;
	size_t need;
	int err;

	if (!out || !mem)
		return -E_INVAL;
	err = tlbpol__config_read(user, &c);
	if (err)
		return err;
	if ((uintptr_t)mem & ((placed ? PAGE : TLBPOL_CACHELINE) - 1))
		return -E_INVAL;
	need = layout(cfg, 0, placed, 0);
	if (len < need)
		return -E_NOMEM;

	prim_zero(mem, need);
	layout(cfg, eng, placed, 0);
	eng->nr_cpus = cfg->nr_cpus;
	eng->arch = cfg->arch;
	eng->max_as = cfg->max_as;
	eng->params = &eng->params0;
	eng->batch_cap = cfg->batch_pages;
	eng->params0.rules_configured = cfg->rules;
	eng->params0.flush_ceiling = cfg->flush_ceiling;
	eng->params0.batch_pages = cfg->batch_pages;
	eng->words = (cfg->nr_cpus + 63) / 64;
	ops_read(&eng->ops, cfg->ops);
	eng->ops_ctx = cfg->ops_ctx;
	eng->flags = cfg->flags;
	eng->nr_nodes = nodes_of(cfg);
	eng->params0.cost_ipi = TLBPOL_DEFAULT_COST_IPI_NS;
	eng->params0.cost_ipi_target = TLBPOL_DEFAULT_COST_IPI_TARGET_NS;
	eng->params0.cost_ipi_remote = TLBPOL_DEFAULT_COST_IPI_REMOTE_NS;
	eng->params0.cost_bcast = TLBPOL_DEFAULT_COST_BROADCAST_NS;
	eng->params0.cost_bcast_page = TLBPOL_DEFAULT_COST_BROADCAST_PAGE_NS;
	tlbpol__costs_apply(cfg, &eng->params0);
	/* From the engine's copy of the ops, NULL past the caller's size. */
	eng->bcast = tlbpol__bcast_mode(cfg, &eng->ops, &eng->bcast_flags);
	eng->remote = (uint32_t)tlbpol__remote_mode(cfg, &eng->ops, &eng->remote_flags);
	/* Entries stay under their tags; with per-CPU slots no one tag names
	 * an address space everywhere, so nothing but interrupts reaches it. */
	eng->tags = cfg->tags;
	if (eng->tags)
		eng->flags |= TLBPOL_CFGF_RETAIN_AS;
	if (eng->tags && tlbpol__tags_kind(eng->tags, 0) == TLBPOL_TAGS_PERCPU) {
		/* A broadcast only by global tags, where the allocator has any. */
		if (!tlbpol__tags_global_min(eng->tags))
			eng->bcast = BCAST_NONE;
		eng->remote = 0;
		eng->tags_percpu = 1;
	}
	eng->params0.ipi_delay_spins = cfg->ipi_delay_spins;
	eng->wait_limit = cfg->wait_limit;
	eng->free_ticks = cfg->free_ticks ? cfg->free_ticks : TLBPOL_DEFAULT_FREE_TICKS;
	if (cfg->cpu_node) {
		prim_copy(eng->cpu_node, cfg->cpu_node, cfg->nr_cpus * sizeof(uint16_t));
		for (uint32_t i = 0; i < cfg->nr_cpus; i++)
			eng->node_mask[(size_t)cfg->cpu_node[i] * eng->words + i / 64] |=
				1ULL << (i % 64);
	}
	for (uint32_t a = 0; a < cfg->max_as; a++) {
		eng->as[a].eng = eng;
		eng->as[a].index = a;
	}
	for (size_t i = 0; i < (size_t)cfg->nr_cpus * cfg->max_as; i++)
		eng->spans[i].lo = ~0ULL;
	tlbpol__params_set_rules(eng, &eng->params0);
	prim_store_release(&eng->magic, TLBPOL_MAGIC);
	*out = eng;
	return 0;
}

int tlbpol_engine_topology(const struct tlbpol_engine *eng, uint16_t *cpu_node, uint32_t n)
{
	if (!eng || eng->magic != TLBPOL_MAGIC || (!cpu_node && n))
		return -E_INVAL;
	for (uint32_t i = 0; i < n && i < eng->nr_cpus; i++)
		cpu_node[i] = eng->cpu_node ? eng->cpu_node[i] : 0;
	return (int)eng->nr_nodes;
}

uint64_t tlbpol_engine_rules(const struct tlbpol_engine *eng)
{
	return eng ? params_of(eng)->rules : 0;
}

/* ------------------------------------------------------------------------ */

int tlbpol_as_open(struct tlbpol_engine *eng, uint64_t tag, struct tlbpol_as **out)
{
	struct tlbpol_as *slot = 0;

	if (!eng || !out || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	prim_spin_lock(&eng->as_lock);
	for (uint32_t a = 0; a < eng->max_as; a++) {
		struct tlbpol_as *as = &eng->as[a];

		if (as->state == AS_OPEN && as->tag == tag) {
			prim_spin_unlock(&eng->as_lock);
			return -E_EXIST;
		}
		if (as->state == AS_FREE && !slot)
			slot = as;
	}
	if (!slot) {
		prim_spin_unlock(&eng->as_lock);
		return -E_NOMEM;
	}
	slot->tag = tag;
	if (eng->tags)
		tlbpol_tag_id_init(eng->tags, &slot->tag_id);
	prim_store_relaxed(&slot->loaded, 0u);
	prim_store_relaxed(&slot->pending, 0u);
	/*
	 * Generations never go back: CPUs keep what they flushed to for this
	 * slot's earlier address space.  One step past it makes every CPU that
	 * could still hold entries under a reused tag (ASID retention) flush
	 * at its first switch in.  Not with an allocator: the identity is new,
	 * and its tag's load flushes whatever an earlier owner left (a slot
	 * taken over, a rollover).
	 */
	if (!eng->tags)
		prim_fetch_add(&slot->gen, 1ULL);
	for (uint32_t w = 0; w < eng->words; w++) {
		prim_store_relaxed(&slot->footprint[w], 0ULL);
		prim_store_relaxed(&slot->leaving[w], 0ULL);
		prim_store_relaxed(&gcover_of(eng, slot)[w], 0ULL);
	}
	prim_store_release(&slot->state, (uint32_t)AS_OPEN);
	prim_spin_unlock(&eng->as_lock);
	if (eng->as_changed)
		eng->as_changed(eng, slot, 1);
	*out = slot;
	return 0;
}

int tlbpol_as_close(struct tlbpol_engine *eng, struct tlbpol_as *as)
{
	int err = 0;

	if (!eng || !as || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	prim_spin_lock(&eng->as_lock);
	if (!tlbpol__as_valid(eng, as))
		err = -E_INVAL;
	else if (prim_load_acquire(&as->pending) || prim_load_acquire(&as->loaded))
		err = -E_BUSY;
	else if (eng->tags && tlbpol_tag_release(eng->tags, &as->tag_id))
		err = -E_INVAL; /* cannot happen: the engine made the identity */
	else
		prim_store_release(&as->state, (uint32_t)(eng->as_changed ? AS_CLOSING : AS_FREE));
	prim_spin_unlock(&eng->as_lock);
	/* Unpublished from lookups (outside the lock: it waits for readers)
	 * before the slot can be reused. */
	if (!err && eng->as_changed) {
		eng->as_changed(eng, as, 0);
		prim_store_release(&as->state, (uint32_t)AS_FREE);
	}
	return err;
}

uint64_t tlbpol_as_tag(const struct tlbpol_as *as)
{
	return as ? as->tag : 0;
}
