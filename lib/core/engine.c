/* SPDX-License-Identifier: MIT */
/*
 * engine.c - configuration, memory layout, address spaces, CPU state and
 * statistics.  Everything here lives in the caller's memory.
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

int tlbpol__config_check(const struct tlbpol_config *cfg)
{
	if (!cfg || cfg->size < sizeof(*cfg))
		return -E_INVAL;
	if (cfg->arch >= TLBPOL_ARCH_MAX || (cfg->rules & ~TLBPOL_RULES_ALL) ||
	    (cfg->flags & ~TLBPOL_CFGF_ALL))
		return -E_INVAL;
	if (!cfg->ops || cfg->ops->size < sizeof(struct tlbpol_ops) ||
	    !cfg->ops->flush_local || !cfg->ops->send_ipi)
		return -E_INVAL;
	if (cfg->flush_ceiling == 0)
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
	return 0;
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

static size_t layout(const struct tlbpol_config *cfg, struct tlbpol_engine *eng)
{
	uint32_t words = (cfg->nr_cpus + 63) / 64;
	uint32_t flush_cap = cfg->batch_pages < cfg->max_as ? cfg->batch_pages : cfg->max_as;
	size_t off = 0, cpus, as;

	take(&off, sizeof(struct tlbpol_engine));
	cpus = take(&off, (size_t)cfg->nr_cpus * sizeof(struct tlbpol_cpu));
	as = take(&off, (size_t)cfg->max_as * sizeof(struct tlbpol_as));
	if (eng) {
		eng->cpus = AT(eng, cpus);
		eng->as = AT(eng, as);
	}
	for (uint32_t a = 0; a < cfg->max_as; a++) {
		size_t fp = take(&off, words * sizeof(uint64_t));

		if (eng)
			eng->as[a].footprint = AT(eng, fp);
	}
	if (cfg->cpu_node) {
		size_t nodes = take(&off, cfg->nr_cpus * sizeof(uint16_t));

		if (eng)
			eng->cpu_node = AT(eng, nodes);
	}
	for (uint32_t i = 0; i < cfg->nr_cpus; i++) {
		size_t inbox = take(&off, words * sizeof(uint64_t));
		size_t pending = take(&off, cfg->batch_pages * sizeof(struct pending));
		size_t ranges = take(&off, cfg->batch_pages * sizeof(struct tlbpol_range));
		size_t flushes = take(&off, flush_cap * sizeof(struct tlbpol_flush));
		size_t meta = take(&off, flush_cap * sizeof(struct flush_meta));
		size_t slot = take(&off, cfg->max_as * sizeof(uint32_t));

		if (eng) {
			struct tlbpol_cpu *c = &eng->cpus[i];

			c->inbox = AT(eng, inbox);
			c->pending = AT(eng, pending);
			c->req.ranges = AT(eng, ranges);
			c->req.flushes = AT(eng, flushes);
			c->meta = AT(eng, meta);
			c->as_slot = AT(eng, slot);
			c->flush_cap = flush_cap;
		}
	}
	return off;
}

size_t tlbpol_engine_size(const struct tlbpol_config *cfg)
{
	if (tlbpol__config_check(cfg))
		return 0;
	return layout(cfg, 0);
}

/*
 * Rules an engine cannot use are dropped here, once, so the hot paths test
 * one mask.  Every rule bit is safe on every arch profile: where an arch
 * lacks the hardware behaviour a rule relies on, the decision table gives
 * that arch a weaker but safe cell instead (see decide.c).  Rules that need
 * something the caller did not give are dropped.
 */
static uint64_t rules_in_force(const struct tlbpol_config *cfg)
{
	uint64_t rules = cfg->rules;

	if (!cfg->ops->broadcast)
		rules &= ~TLBPOL_RULE_BROADCAST;
	if (!cfg->cpu_node)
		rules &= ~TLBPOL_RULE_NUMA_FANOUT;
	return rules;
}

int tlbpol_engine_init(struct tlbpol_engine **out, void *mem, size_t len,
		       const struct tlbpol_config *cfg)
{
	struct tlbpol_engine *eng = (struct tlbpol_engine *)mem;
	size_t need;
	int err;

	if (!out || !mem)
		return -E_INVAL;
	err = tlbpol__config_check(cfg);
	if (err)
		return err;
	if ((uintptr_t)mem & (TLBPOL_CACHELINE - 1))
		return -E_INVAL;
	need = layout(cfg, 0);
	if (len < need)
		return -E_NOMEM;

	prim_zero(mem, need);
	layout(cfg, eng);
	eng->nr_cpus = cfg->nr_cpus;
	eng->arch = cfg->arch;
	eng->max_as = cfg->max_as;
	eng->rules_configured = cfg->rules;
	eng->rules = rules_in_force(cfg);
	eng->flush_ceiling = cfg->flush_ceiling;
	eng->batch_pages = cfg->batch_pages;
	eng->words = (cfg->nr_cpus + 63) / 64;
	prim_copy(&eng->ops, cfg->ops, sizeof(eng->ops));
	eng->ops.size = sizeof(eng->ops);
	eng->ops_ctx = cfg->ops_ctx;
	if (cfg->cpu_node)
		prim_copy(eng->cpu_node, cfg->cpu_node, cfg->nr_cpus * sizeof(uint16_t));
	for (uint32_t a = 0; a < cfg->max_as; a++) {
		eng->as[a].eng = eng;
		eng->as[a].index = a;
	}
	prim_store_release(&eng->magic, TLBPOL_MAGIC);
	*out = eng;
	return 0;
}

uint64_t tlbpol_engine_rules(const struct tlbpol_engine *eng)
{
	return eng ? eng->rules : 0;
}

/* ------------------------------------------------------------------------ */

int tlbpol__as_valid(const struct tlbpol_engine *eng, const struct tlbpol_as *as)
{
	uintptr_t p = (uintptr_t)as, lo = (uintptr_t)eng->as;

	if (p < lo || p >= lo + (uintptr_t)eng->max_as * sizeof(*as))
		return 0;
	if ((p - lo) % sizeof(*as))
		return 0;
	return as->eng == eng && prim_load_acquire(&as->state) == AS_OPEN;
}

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
	prim_store_relaxed(&slot->running, 0u);
	prim_store_relaxed(&slot->pending, 0u);
	for (uint32_t w = 0; w < eng->words; w++)
		prim_store_relaxed(&slot->footprint[w], 0ULL);
	prim_store_release(&slot->state, (uint32_t)AS_OPEN);
	prim_spin_unlock(&eng->as_lock);
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
	else if (prim_load_acquire(&as->pending) || prim_load_acquire(&as->running))
		err = -E_BUSY;
	else
		prim_store_release(&as->state, (uint32_t)AS_FREE);
	prim_spin_unlock(&eng->as_lock);
	return err;
}

uint64_t tlbpol_as_tag(const struct tlbpol_as *as)
{
	return as ? as->tag : 0;
}

/* ------------------------------------------------------------------------ */

/*
 * Run the deferred frees whose flushes have all completed.  A free waits for
 * every entry that was pending when it was registered (seq <= after_seq);
 * entries complete out of order (BY_WRITEBACK before BY_FREE), so what
 * matters is the oldest entry still pending.
 */
void tlbpol__run_dfrees(struct tlbpol_engine *eng, struct tlbpol_cpu *c)
{
	uint64_t oldest = ~0ULL;

	for (uint32_t i = 0; i < c->nr_pending; i++)
		if (c->pending[i].seq < oldest)
			oldest = c->pending[i].seq;
	while (c->dfree_count && c->dfree[c->dfree_head].after_seq < oldest) {
		struct dfree d = c->dfree[c->dfree_head];

		c->dfree_head = (c->dfree_head + 1) % TLBPOL_DFREE_SLOTS;
		c->dfree_count--;
		prim_count(&c->cnt.task.deferred_frees, 1);
		d.fn(d.arg);
	}
	(void)eng;
}

int tlbpol_defer_free(struct tlbpol_engine *eng, uint32_t cpu, void (*fn)(void *arg), void *arg)
{
	struct tlbpol_cpu *c;
	struct dfree *d;

	if (!eng || !fn || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	c = &eng->cpus[cpu];
	if (c->dfree_count == TLBPOL_DFREE_SLOTS)
		tlbpol__flush_batch(eng, cpu, TLBPOL_BY_WRITEBACK, TLBPOL_BY_LAZY);
	if (!c->nr_pending && !c->dfree_count) {
		prim_count(&c->cnt.task.deferred_frees, 1);
		fn(arg);
		return 0;
	}
	d = &c->dfree[(c->dfree_head + c->dfree_count) % TLBPOL_DFREE_SLOTS];
	d->fn = fn;
	d->arg = arg;
	d->after_seq = c->next_seq ? c->next_seq - 1 : 0;
	c->dfree_count++;
	return 0;
}

int tlbpol_switch(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next, int *need_flush)
{
	struct tlbpol_cpu *c;

	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	if (next && !tlbpol__as_valid(eng, next))
		return -E_INVAL;
	c = &eng->cpus[cpu];

	if (c->need_full_flush) {
		/* Back from OFFLINE: requests were not sent to this CPU while it
		 * was down, so whatever its TLB kept is suspect, globals too. */
		struct tlbpol_flush f = { 0, TLBPOL_FLUSH_ALL, 0, 0, 0, 0 };

		eng->ops.flush_local(eng->ops_ctx, cpu, &f);
		prim_count(&c->cnt.task.local_flushes, 1);
		prim_count(&c->cnt.task.full_flushes, 1);
		c->need_full_flush = 0;
	}
	if (c->current != next) {
		if (next) {
			uint64_t bit = 1ULL << (cpu % 64);

			prim_fetch_add(&next->running, 1u);
			/*
			 * Join the footprint before this CPU can walk next's page
			 * tables: an initiator changes a PTE and then reads the
			 * footprint (after a full fence), so either it sees this
			 * bit or this CPU's walk sees its PTE (the ordering Linux
			 * switch_mm_irqs_off() gets from setting mm_cpumask
			 * before loading CR3).
			 */
			if (!(prim_load_relaxed(&next->footprint[cpu / 64]) & bit))
				prim_fetch_or(&next->footprint[cpu / 64], bit);
			prim_fence();
		}
		if (c->current)
			prim_fetch_sub_release(&c->current->running, 1u);
		c->current = next;
	}
	if (need_flush)
		*need_flush = 0;
	tlbpol__serve(eng, cpu);
	tlbpol__run_dfrees(eng, c);
	return 0;
}

int tlbpol_cpu_state(struct tlbpol_engine *eng, uint32_t cpu, uint32_t state)
{
	struct tlbpol_cpu *c;
	uint32_t old;

	if (!eng || eng->magic != TLBPOL_MAGIC || state > TLBPOL_CPU_OFFLINE)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	c = &eng->cpus[cpu];
	old = prim_load_relaxed(&c->state);
	if (state == TLBPOL_CPU_OFFLINE && old != TLBPOL_CPU_OFFLINE) {
		if (c->nr_pending || c->dfree_count)
			return -E_BUSY;
		/*
		 * Publish OFFLINE, then drain: an initiator sets its inbox bit
		 * and then reads our state (both sequentially consistent), so
		 * either it sees OFFLINE and takes its request back, or this
		 * drain sees its bit.  Nobody is left waiting on a dead CPU.
		 */
		prim_store_seqcst(&c->state, state);
		tlbpol__serve(eng, cpu);
		if (c->current) {
			prim_fetch_sub_release(&c->current->running, 1u);
			c->current = 0;
		}
		return 0;
	}
	if (old == TLBPOL_CPU_OFFLINE && state != TLBPOL_CPU_OFFLINE)
		c->need_full_flush = 1;
	prim_store_seqcst(&c->state, state);
	return 0;
}

int tlbpol_tick(struct tlbpol_engine *eng, uint32_t cpu)
{
	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	tlbpol__serve(eng, cpu);
	if (eng->cpus[cpu].nr_pending)
		tlbpol__flush_batch(eng, cpu, TLBPOL_BY_LAZY, TLBPOL_BY_LAZY);
	tlbpol__run_dfrees(eng, &eng->cpus[cpu]);
	return 0;
}

/* ------------------------------------------------------------------------ */

static void stats_add(struct tlbpol_stats *out, const struct tlbpol_stats *in)
{
	const uint64_t *src = (const uint64_t *)in;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*in) / sizeof(uint64_t); i++)
		dst[i] += prim_load_relaxed(&src[i]);
}

int tlbpol_stats_read(const struct tlbpol_engine *eng, int cpu, struct tlbpol_stats *out)
{
	if (!eng || !out || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu < -1 || cpu >= (int)eng->nr_cpus)
		return -E_RANGE;
	prim_zero(out, sizeof(*out));
	for (uint32_t i = 0; i < eng->nr_cpus; i++) {
		if (cpu >= 0 && (uint32_t)cpu != i)
			continue;
		stats_add(out, &eng->cpus[i].cnt.task);
		stats_add(out, &eng->cpus[i].cnt.irq);
	}
	return 0;
}
