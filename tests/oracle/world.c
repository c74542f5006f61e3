/* SPDX-License-Identifier: MIT */
/*
 * world.c - a world's making and unmaking, and the end of a run.  The
 * world holds the engine (given the callbacks of caches.c and
 * interrupts.c, a NUMA map, the configured batching and delays), the
 * frame and table pools, the address spaces (each with its engine address
 * space and a VMA of what faults may grant), the kernel region mapped at
 * boot, and the CPUs; a first population is submitted like any install.
 * At the end every CPU completes what it has pending, waits for every
 * deferred free, and visits every address space, so that an entry some
 * excused CPU kept shows.  Everything here is built from cfg->seed: the
 * same seed makes the same world.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "machine.h"

/* ThreadSanitizer slows every wait: the deadlock clock runs longer there. */
#if defined(__SANITIZE_THREAD__)
#define WORLD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WORLD_TSAN 1
#endif
#endif
#ifndef WORLD_TSAN
#define WORLD_TSAN 0
#endif

void orc_config_init(struct orc_config *cfg, uint32_t nr_cpus, uint32_t arch, uint64_t rules)
{
	/* Every field not named here is 0 (NULL): its default (oracle.h). */
	*cfg = (struct orc_config){
		.nr_cpus = nr_cpus, .arch = arch, .rules = rules,
		.nr_as = 4, .pages = 128, .group_pages = 8,
		.tlb_sets = 32, .tlb_ways = 4, .psc_sets = 4, .psc_ways = 4,
		.numa_nodes = nr_cpus >= 2 ? 2 : 1, .broadcast = 1, .vcpu_defer = 1,
		.kernel_pages = 32, .stamp_pct = 30, .seed = 1, .max_reports = 20,
	};
}

void orc_world_free(struct orc_world *w)
{
	if (!w)
		return;
	if (w->eng)
		tlbpol_engine_free(w->eng);
	for (uint32_t x = 0; x <= ORC_MAX_AS; x++) {
		struct orc_as *a = &w->as[x];

		free((void *)a->pte);
		free((void *)a->cv);
		free((void *)a->vma);
		free((void *)a->quar);
		free((void *)a->dir);
		free((void *)a->lock);
		free((void *)a->prevf);
	}
	if (w->cpus) {
		for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
			struct orc_cpu *c = &w->cpus[i];

			free((void *)c->tlb);
			free((void *)c->psc);
			free(c->tag_owner);
			free(c->tag_orphan);
			for (uint32_t k = 0; k < c->niss; k++)
				free(c->iss[k].r);
			free(c->iss);
			free(c->rec);
			free(c->wait_polls);
			free(c->mark_polls);
			free(c->live_polls);
			while (c->chunks) {
				struct free_chunk *n = c->chunks->next;

				free(c->chunks);
				c->chunks = n;
			}
		}
		free(w->cpus);
	}
	free((void *)w->frame);
	free((void *)w->table);
	free(w->frame_pool);
	free(w->frame_stamp);
	free(w->frame_stamper);
	free(w->table_pool);
	free(w->tags);
	pthread_mutex_destroy(&w->pool_lock);
	pthread_mutex_destroy(&w->log_lock);
	free(w);
}

#define ZALLOC(p, n)                                                                      \
	do {                                                                              \
		(p) = calloc((n), sizeof(*(p)));                                          \
		if (!(p))                                                                 \
			goto nomem;                                                       \
	} while (0)

int orc_world_new(const struct orc_config *cfg, struct orc_world **out)
{
	struct orc_world *w;
	struct tlbpol_config ec;
	uint64_t seed;
	int r;

	if (!cfg || !out || !cfg->nr_cpus || cfg->nr_cpus > ORC_MAX_CPUS || !cfg->nr_as ||
	    cfg->nr_as > ORC_MAX_AS || cfg->group_pages < 2 || cfg->group_pages > ORC_MAX_RANGE ||
	    !cfg->pages || cfg->pages > ORC_MAX_PAGES || cfg->pages % cfg->group_pages ||
	    cfg->pages / cfg->group_pages > ORC_MAX_GROUPS || !cfg->tlb_sets || !cfg->tlb_ways ||
	    !cfg->psc_sets || !cfg->psc_ways || cfg->kernel_pages > ORC_MAX_KPAGES)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cfg = *cfg;
	if (!w->cfg.log)
		w->cfg.log = stderr;
	pthread_mutex_init(&w->pool_lock, NULL);
	pthread_mutex_init(&w->log_lock, NULL);
	w->ngroups = cfg->pages / cfg->group_pages;
	seed = cfg->seed ? cfg->seed : 1;
	/* Hardware tags from an allocator: the engine keeps entries under
	 * them across switches (it implies TLBPOL_CFGF_RETAIN_AS). */
	if (cfg->tags) {
		int percpu = cfg->tags == TLBPOL_TAGS_PERCPU + 1;
		struct tlbpol_tags_config tc = { sizeof(tc), cfg->tags - 1, cfg->nr_cpus,
						 cfg->tag_bits, 1, percpu ? cfg->tag_slots : 0,
						 percpu ? cfg->tag_global : 0,
						 percpu ? cfg->tag_global_cpus : 0 };
		size_t len = tlbpol_tags_size(&tc);
		void *mem = NULL;

		w->cfg.flags |= TLBPOL_CFGF_RETAIN_AS;
		if (!len || cfg->tag_bits > 12 || posix_memalign(&mem, 64, len) ||
		    tlbpol_tags_init(&w->tags, mem, len, &tc)) {
			free(mem);
			free(w);
			return -EINVAL;
		}
		w->ntags = 1u << cfg->tag_bits;
	}

	/* Pools: room for every page mapped and as many again held by deferred
	 * frees; frame and table 0 mean "none". */
	w->nframes = (cfg->nr_as * cfg->pages + cfg->kernel_pages) * 3 + 64;
	w->ntables = cfg->nr_as * w->ngroups * 4 + 16;
	if (w->nframes > FRAME_MAX || w->ntables > 0x7fff) {
		orc_world_free(w);
		return -EINVAL;
	}
	ZALLOC(w->frame, w->nframes);
	ZALLOC(w->table, w->ntables);
	ZALLOC(w->frame_pool, w->nframes);
	ZALLOC(w->frame_stamp, w->nframes);
	ZALLOC(w->frame_stamper, w->nframes);
	ZALLOC(w->table_pool, w->ntables);
	for (uint32_t f = w->nframes - 1; f >= 1; f--)
		w->frame_pool[w->frame_top++] = f;
	for (uint32_t t = w->ntables - 1; t >= 1; t--)
		w->table_pool[w->table_top++] = t;

	ZALLOC(w->cpus, cfg->nr_cpus);
	for (uint32_t i = 0; i < cfg->nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];

		pthread_mutex_init(&c->iss_lock, NULL);
		ZALLOC(c->tlb, (size_t)cfg->tlb_sets * cfg->tlb_ways);
		ZALLOC(c->psc, (size_t)cfg->psc_sets * cfg->psc_ways);
		ZALLOC(c->wait_polls, cfg->nr_cpus);
		ZALLOC(c->mark_polls, cfg->nr_cpus);
		ZALLOC(c->live_polls, cfg->nr_cpus);
		if (w->tags) {
			ZALLOC(c->tag_owner, w->ntags);
			ZALLOC(c->tag_orphan, w->ntags);
			hwtag_init(w, c);
		}
		c->cur = c->loaded = -1;
		c->estate = TLBPOL_CPU_RUNNING;
		c->rng = seed * 0x9E3779B97F4A7C15ULL + (i + 1) * 0xBF58476D1CE4E5B9ULL;
		if (!c->rng)
			c->rng = 1;
		atomic_store(&c->pub, pub_make(M_LAZY, -1));
		w->cpu_node[i] = (uint16_t)(cfg->numa_nodes > 1 ? i * cfg->numa_nodes / cfg->nr_cpus
								: 0);
	}

	w->ops.size = sizeof(w->ops);
	w->ops.flush_local = cb_flush_local;
	w->ops.send_ipi = cb_send_ipi;
	w->ops.broadcast = cfg->broadcast && !cfg->split ? cb_broadcast : NULL;
	w->ops.bcast_issue = cfg->broadcast && cfg->split ? cb_bcast_issue : NULL;
	w->ops.bcast_sync = cfg->broadcast && cfg->split ? cb_bcast_sync : NULL;
	w->ops.walker_sync = cfg->walker_sync ? cb_walker_sync : NULL;
	w->ops.remote_action = cfg->remote ? cb_remote_action : NULL;
	w->ops.load_tag = cfg->tag_irq_load ? cb_load_tag : NULL;
	w->ops.relax = cb_relax;
	w->ops.vcpu_defer = cfg->vcpu_defer ? cb_vcpu_defer : NULL;
	tlbpol_config_init(&ec, cfg->nr_cpus, cfg->arch);
	ec.rules = cfg->rules;
	ec.flags = cfg->flags | (cfg->walkers == 1 ? TLBPOL_CFGF_LOCKLESS_WALKERS : 0) |
		   (cfg->svvptc ? TLBPOL_CFGF_SVVPTC : 0);
	/* The broadcast described (struct tlbpol_backend), so that its cost
	 * can be set low enough for a few CPUs' shootdowns to choose it. */
	if (cfg->broadcast && (cfg->split || cfg->bcast_cost)) {
		w->bcast_desc = (struct tlbpol_backend){
			.size = sizeof(w->bcast_desc), .mech = TLBPOL_MECH_BROADCAST,
			.flags = cfg->split ? TLBPOL_BKF_SPLIT : 0,
			.max_pages = cfg->bcast_max_pages ? cfg->bcast_max_pages : 8,
			.cost_ns = cfg->bcast_cost,
		};
		w->bcast_descs[ec.nr_backends++] = &w->bcast_desc;
		ec.backends = w->bcast_descs;
	}
	if (cfg->remote) {
		w->remote_desc = (struct tlbpol_backend){
			.size = sizeof(w->remote_desc), .mech = TLBPOL_MECH_REMOTE,
			.max_pages = 63, .cost_ns = 400, .cost_target_ns = 20,
		};
		w->bcast_descs[ec.nr_backends++] = &w->remote_desc;
		ec.backends = w->bcast_descs;
	}
	ec.ops = &w->ops;
	ec.ops_ctx = w;
	ec.tags = w->tags;
	ec.max_as = cfg->nr_as + 1;
	if (cfg->numa_nodes > 1)
		ec.cpu_node = w->cpu_node;
	if (cfg->batch_pages)
		ec.batch_pages = cfg->batch_pages;
	if (cfg->flush_ceiling)
		ec.flush_ceiling = cfg->flush_ceiling;
	ec.ipi_delay_spins = cfg->ipi_delay_spins;
	ec.wait_limit = cfg->wait_limit;
	ec.free_ticks = cfg->free_ticks;
	/* The bounded-free check (liveness.c): twice what the engine needs,
	 * and more; none when work due by a free never ages. */
	if (cfg->free_ticks != TLBPOL_FREE_TICKS_NEVER)
		w->free_bound = cfg->free_bound ? cfg->free_bound
				: 4 * (cfg->free_ticks ? cfg->free_ticks : TLBPOL_DEFAULT_FREE_TICKS) + 8;
	w->stall_secs = cfg->stall_secs > 0 ? cfg->stall_secs : WORLD_TSAN ? 30.0 : 10.0;
	r = tlbpol_engine_new(&ec, &w->eng);
	if (r) {
		w->eng = NULL;
		orc_world_free(w);
		return r;
	}

	for (uint32_t x = 0; x < cfg->nr_as; x++) {
		struct orc_as *a = &w->as[x];
		uint64_t rs = seed ^ (0xD6E8FEB86659FD93ULL * (x + 1));

		ZALLOC(a->pte, cfg->pages);
		ZALLOC(a->cv, cfg->pages);
		ZALLOC(a->vma, cfg->pages);
		ZALLOC(a->quar, cfg->pages);
		ZALLOC(a->dir, w->ngroups);
		ZALLOC(a->lock, w->ngroups);
		ZALLOC(a->prevf, cfg->pages);
		a->pages = cfg->pages;
		/* Distinct, not small, not contiguous: a PCID/ASID-like tag. */
		a->tag = 0x100 + 0x31ULL * (x + 1);
		r = tlbpol_as_open(w->eng, a->tag, &a->eas);
		if (r) {
			orc_world_free(w);
			return r;
		}
		/* What faults may grant, per page: mostly read-write, some
		 * read-only, some executable. */
		for (uint32_t p = 0; p < cfg->pages; p++) {
			uint64_t v = rng_next(&rs) % 20;

			atomic_store(&a->vma[p], B_U | (v < 13 ? B_W : v < 16 ? 0 : v < 19 ? B_X
										      : B_W | B_X));
		}
	}

	/* The kernel region: no engine address space of its own (its changes
	 * go through the user ones), a lock per page, no page tables to free. */
	{
		struct orc_as *k = &w->as[ORC_KAS];
		uint32_t kp = cfg->kernel_pages ? cfg->kernel_pages : 1;

		ZALLOC(k->pte, kp);
		ZALLOC(k->cv, kp);
		ZALLOC(k->vma, kp);
		ZALLOC(k->quar, kp);
		ZALLOC(k->dir, 1);
		ZALLOC(k->lock, kp);
		ZALLOC(k->prevf, kp);
		k->pages = cfg->kernel_pages;
		k->tag = ~0ULL; /* no flush names it */
	}

	/* A first population from CPU 0, before any CPU runs: submitted like
	 * any install. */
	orc_cpu_bind(w, 0);
	/* The kernel's mappings are there before any CPU runs (boot): no
	 * TLB holds anything to flush yet, so they are written directly, as
	 * completed changes.  Two pages in eight are left for orc_kmap(). */
	for (uint32_t p = 0; p < cfg->kernel_pages; p++) {
		uint32_t f;
		uint64_t ptew;

		if (p % 8 >= 6 || !(f = frame_alloc(w, ORC_KAS, p)))
			continue;
		ptew = pte_make(KPERM, f, 1);
		atomic_store(&w->as[ORC_KAS].pte[p], ptew);
		atomic_store(&w->as[ORC_KAS].cv[p], ptew);
	}
	for (uint32_t x = 0; x < cfg->nr_as; x++)
		for (uint32_t p = 0; p < cfg->pages; p += cfg->group_pages)
			if ((rng_next(&w->cpus[0].rng) % 4) != 0)
				orc_populate(w, 0, x, p, cfg->group_pages);
	self_world = NULL;
	self_cpu = -1;
	*out = w;
	return 0;
nomem:
	orc_world_free(w);
	return -ENOMEM;
}

struct tlbpol_engine *orc_engine(struct orc_world *w)
{
	return w->eng;
}

struct tlbpol_tags *orc_tags(struct orc_world *w)
{
	return w->tags;
}

const struct orc_config *orc_world_config(const struct orc_world *w)
{
	return &w->cfg;
}

void orc_barrier(struct orc_world *w, uint32_t cpu)
{
	uint32_t gen = atomic_load(&w->bar_gen);

	if (atomic_fetch_add(&w->bar_count, 1) + 1 == w->cfg.nr_cpus) {
		atomic_store(&w->bar_count, 0);
		atomic_fetch_add(&w->bar_gen, 1);
		return;
	}
	while (atomic_load(&w->bar_gen) == gen) {
		orc_poll(w, cpu);
		sched_yield();
	}
}

void orc_finish(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	double until;

	/* From here on flushes are forced: the bounded-free check stops. */
	c->finishing = 1;
	/* Back to a running CPU in some address space. */
	if (c->estate != TLBPOL_CPU_RUNNING)
		orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
	if (c->cur < 0)
		orc_switch(w, cpu, c->loaded >= 0 ? c->loaded : (int)(cpu % w->cfg.nr_as));
	orc_barrier(w, cpu);

	/* Nobody changes page tables any more: complete everything. */
	orc_flush(w, cpu, TLBPOL_BY_LAZY);
	orc_barrier(w, cpu);

	/* Every deferred free must have run; tick until they have (a lost one
	 * shows as a count that never matches). */
	until = now_secs() + 10.0;
	while (total(w, ORC_C_FREES_RUN) < total(w, ORC_C_FREES_REG) && now_secs() < until) {
		orc_tick(w, cpu);
		orc_flush(w, cpu, TLBPOL_BY_LAZY);
		orc_poll(w, cpu);
		sched_yield();
	}
	orc_barrier(w, cpu);

	/* Visit every address space: each visit catches up and scans, so a
	 * stale entry some lazy or away CPU was excused for shows now. */
	for (uint32_t k = 1; k <= w->cfg.nr_as; k++) {
		int x = (int)((cpu + k) % w->cfg.nr_as);

		orc_switch(w, cpu, x);
		orc_spec_walk(w, cpu, (uint32_t)(orc_rand(w, cpu) % w->cfg.pages));
		orc_poll(w, cpu);
	}
	orc_barrier(w, cpu);
}
