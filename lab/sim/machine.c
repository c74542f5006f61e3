/* SPDX-License-Identifier: MIT */
/*
 * machine.c - the modelled machine around the real engine: its callbacks,
 * its set-up and tear-down, ticks, and address-space switches and CPU
 * states.  The actions a workload takes (accesses, PTE changes, flushes)
 * are actions.c's, the free frames of --stamps frames.c's (machine.h).
 *
 * An interrupt is posted (clock.c) to arrive at send time + latency, or
 * when a preempted vCPU next runs; its target serves it at that time in
 * the middle of whatever it does, pays entry and exit, and its
 * tlbpol_handle_ipi() flushes its modelled TLB at its own cost.  The
 * initiator pays the sending costs and waits, turn by turn (ops->relax),
 * while every other CPU goes on: a target may itself be waiting for its own
 * shootdown, and serve the request from there.
 *
 * The TLB each CPU has is tlb.c's; the oracle that checks what the engine
 * reports complete, oracle.c's.  This file tells it when.
 */
#include "machine.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Callbacks                                                                */

static void cb_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct sim *s = ctx;
	struct sim_cpu *c = &s->cpus[cpu];
	uint16_t asid = (uint16_t)f->as_tag;

	s->cnt.local_flushes++;
	if (f->kind == TLBPOL_FLUSH_PAGES) {
		uint64_t pages = 0;

		for (uint32_t r = 0; r < f->nr_ranges; r++) {
			const struct tlbpol_range *rg = &f->ranges[r];
			uint64_t per = 1ULL << (rg->page_shift - 12);

			for (uint64_t i = 0; i < rg->nr_pages * per; i++)
				tlb_flush_page(&c->tlb, asid, (rg->va >> 12) + i);
			pages += rg->nr_pages;
		}
		s->cnt.pages_flushed += pages;
		c->clock += CYC(s, s->cfg.cost.invlpg_first_cycles +
					   (double)(pages - 1) * s->cfg.cost.invlpg_next_cycles);
	} else {
		if (f->kind == TLBPOL_FLUSH_ALL)
			tlb_flush_all(&c->tlb, s->nkeys);
		else
			tlb_flush_as(&c->tlb, asid);
		s->cnt.full_flushes++;
		c->clock += CYC(s, s->cfg.cost.full_flush_cycles);
	}
}

static double ipi_factor(const struct sim *s)
{
	return s->cfg.vm ? s->cfg.cost.vm_ipi_factor : 1.0;
}

static void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct sim *s = ctx;
	struct sim_cpu *src = &s->cpus[from];
	double cost = 0;
	int first = 1;

	for (int i = tlbpol_cpuset_next(t, -1); i >= 0; i = tlbpol_cpuset_next(t, i)) {
		struct sim_cpu *dst = &s->cpus[i];
		double at;

		cost += (first ? s->cfg.cost.ipi_first_ns : s->cfg.cost.ipi_next_ns) * ipi_factor(s);
		if (s->node[i] != s->node[from])
			cost += s->cfg.cost.ipi_remote_ns * ipi_factor(s);
		first = 0;
		s->cnt.irq_sent++;
		s->cnt.irq_by_cause[src->cause]++;
		at = src->clock + cost + s->cfg.cost.ipi_latency_ns * ipi_factor(s);
		/* A preempted vCPU takes it when it runs again. */
		if (dst->mode == MODE_PREEMPTED && dst->resume_at > at)
			at = dst->resume_at;
		clock_post_irq(s, (uint32_t)i, at);
	}
	src->clock += cost;
}

/* A flush @c makes of its own, told to by the engine or the allocator:
 * every entry of every tag (@key < 0: a rollover, a recycled global tag)
 * or those under one key (a tag, an address space), counted and paid as
 * one full flush. */
static void own_full_flush(struct sim *s, struct sim_cpu *c, int64_t key)
{
	if (key < 0)
		tlb_flush_all(&c->tlb, s->nkeys);
	else
		tlb_flush_as(&c->tlb, (uint16_t)key);
	s->cnt.full_flushes++;
	s->cnt.local_flushes++;
	c->clock += CYC(s, s->cfg.cost.full_flush_cycles);
}

/* --tags: @cpu moves onto its address space's global tag from an
 * interrupt or tick (a CR3 write of the same tables, no flush unless
 * @flush says; its slot's entries stay, unreachable).  Every policy gets
 * it: Linux does the same in flush_tlb_func(). */
static void cb_load_tag(void *ctx, uint32_t cpu, uint32_t tag, uint32_t flush)
{
	struct sim *s = ctx;
	struct sim_cpu *c = &s->cpus[cpu];

	c->tag = (uint16_t)tag;
	s->cnt.tag_moves++;
	if (flush == TLBPOL_TAG_FLUSH_ALL)
		own_full_flush(s, c, -1);
}

/* A turn of the engine's wait: other CPUs run meanwhile (clock.c). */
static void cb_relax(void *ctx, uint32_t cpu)
{
	clock_relax(ctx, cpu);
}

/* ------------------------------------------------------------------------ */
/* Set-up                                                                   */

uint64_t sim_xorshift(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

uint64_t sim_rand(struct sim_cpu *c)
{
	return sim_xorshift(&c->rng);
}

int sim_init(struct sim *s, const struct sim_config *cfg, const struct workload *wl)
{
	struct tlbpol_config ec;
	const char *trace_path = s->trace_path;
	int err;

	memset(s, 0, sizeof(*s));
	s->trace_path = trace_path;
	s->cfg = *cfg;
	s->wl = wl;
	s->cpus = calloc(cfg->ncpus, sizeof(*s->cpus));
	s->heap = calloc(cfg->ncpus, sizeof(*s->heap));
	s->node = calloc(cfg->ncpus, sizeof(*s->node));
	if (!s->cpus || !s->heap || !s->node)
		return -1;
	for (uint32_t c = 0; c < cfg->ncpus; c++)
		s->node[c] = cfg->topology ? cfg->topology[c]
					   : (uint16_t)((uint64_t)c * cfg->nnodes / cfg->ncpus);
	tlbpol_config_init(&ec, cfg->ncpus, cfg->arch);
	ec.free_ticks = cfg->free_ticks;
	ec.rules = cfg->rules;
	ec.max_as = SIM_MAX_AS;
	s->ops = (struct tlbpol_ops){
		.size = sizeof(s->ops),
		.flush_local = cb_flush_local,
		.send_ipi = cb_send_ipi,
		.relax = cb_relax,
	};
	sim_backend_setup(s, &ec);
	if (sim_tags_setup(s, &ec))
		return -1;
	if (s->tags)
		s->ops.load_tag = cb_load_tag;
	ec.ops = &s->ops;
	if (cfg->pcid)
		ec.flags |= TLBPOL_CFGF_RETAIN_AS;
	if (cfg->wait_irqs) /* cb_relax() takes this CPU's interrupts */
		ec.flags |= TLBPOL_CFGF_WAIT_IRQS;
	ec.ops_ctx = s;
	ec.cpu_node = cfg->nnodes > 1 ? s->node : NULL;
	ec.cost_ipi_ns = (uint32_t)(cfg->cost.ipi_first_ns * (cfg->vm ? cfg->cost.vm_ipi_factor : 1));
	ec.cost_ipi_target_ns = (uint32_t)(cfg->cost.ipi_next_ns * (cfg->vm ? cfg->cost.vm_ipi_factor : 1));
	ec.cost_ipi_remote_ns = (uint32_t)cfg->cost.ipi_remote_ns;
	ec.cost_broadcast_ns = (uint32_t)(cfg->hypercall ? cfg->cost.hypercall_ns : cfg->cost.broadcast_ns);
	ec.cost_broadcast_page_ns =
		(uint32_t)(cfg->hypercall ? cfg->cost.hypercall_page_ns : cfg->cost.broadcast_page_ns);
	/* An IPI round trip (send, latency, the receiver's entry and exit,
	 * the acknowledgement) over one turn: the most that waiting for a
	 * target, rather than interrupting it, can save this initiator.  Not
	 * the unikernel's size, twice the ICR write over a PAUSE
	 * (examples/unikernel/work.c), which leaves the latencies out. */
	if (cfg->ipi_delay_spins >= 0)
		ec.ipi_delay_spins = (uint32_t)cfg->ipi_delay_spins;
	else
		ec.ipi_delay_spins =
			(uint32_t)(((cfg->cost.ipi_first_ns + cfg->cost.ipi_latency_ns) *
					    (cfg->vm ? cfg->cost.vm_ipi_factor : 1) +
				    CYC(s, cfg->cost.irq_entry_exit_cycles) + cfg->cost.ack_latency_ns) /
				   cfg->cost.relax_ns);
	s->ipi_delay_spins = ec.ipi_delay_spins;
	/* The liveness check: on bare metal an acknowledgement takes
	 * microseconds (a target serves an interrupt in the middle of what it
	 * does, or the request from its own wait), queued behind the other
	 * requests its target serves, so a wait of 1 ms and 4 us per CPU means
	 * a target that was never interrupted and serves only at its tick
	 * (256 CPUs all shooting each other wait up to about 0.25 ms); a
	 * guest's waits include a preempted vCPU's time off its pCPU. */
	s->wait_limit_ns = 1e6 + 4e3 * cfg->ncpus;
	if (cfg->vm)
		s->wait_limit_ns += cfg->cost.vcpu_slice_ns * (cfg->overcommit > 2 ? cfg->overcommit : 2);
	err = tlbpol_engine_new(&ec, &s->eng);
	if (err) {
		snprintf(s->error, sizeof(s->error), "tlbpol_engine_new: %d", err);
		return -1;
	}
	for (uint32_t c = 0; c < cfg->ncpus; c++) {
		struct sim_cpu *cpu = &s->cpus[c];

		if (tlb_init(&cpu->tlb, cfg, s->nkeys))
			return -1;
		cpu->as = cpu->loaded = -1;
		cpu->irq_at = -1;
		cpu->next_tick = cfg->cost.tick_ns * (1.0 + (double)c / cfg->ncpus);
		cpu->rng = cfg->seed * 0x9e3779b97f4a7c15ULL + c * 0xbf58476d1ce4e5b9ULL + 1;
	}
	s->running = UINT32_MAX;
	s->next_frame = 1;
	return wl->setup(s);
}

void sim_fini(struct sim *s)
{
	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
		tlb_fini(&s->cpus[c].tlb);
		free(s->cpus[c].w);
		free(s->cpus[c].pend);
		frames_fini(s->cpus[c].frames);
	}
	frames_global_fini(s->frames);

	for (uint32_t a = 0; a < s->nas; a++) {
		for (uint64_t c = 0; c < s->as[a].nchunks; c++)
			free(s->as[a].chunks[c]);
		free(s->as[a].chunks);
	}
	tlbpol_engine_free(s->eng);
	sim_tags_fini(s);
	free(s->cpus);
	free(s->heap);
	free(s->node);
	for (uint32_t t = 0; t < s->nthreads; t++) {
		free(s->threads[t]->w);
		free(s->threads[t]);
	}
	free(s->threads);
}

int sim_open_as(struct sim *s)
{
	struct sim_as *a;

	if (s->nas == SIM_MAX_AS)
		return -1;
	a = &s->as[s->nas];
	if (tlbpol_as_open(s->eng, s->nas, &a->as))
		return -1;
	return (int)s->nas++;
}

/*
 * --tags: a dead address space closes when no CPU keeps it loaded and no
 * flush of it is pending (tlbpol_as_close(): -EBUSY until then, tried
 * again as CPUs leave it), which gives its tags back: a global tag goes
 * back to the pool and is handed out again only after every CPU has
 * flushed all.  A fresh address space takes the index.
 */
static void try_close(struct sim *s, uint32_t as)
{
	struct sim_as *a = &s->as[as];

	if (!a->dead)
		return;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		if (s->cpus[c].loaded == (int32_t)as)
			return;
	if (tlbpol_as_close(s->eng, a->as))
		return;
	if (tlbpol_as_open(s->eng, as, &a->as)) {
		fprintf(stderr, "tlbpol-sim: tlbpol_as_open after a close failed\n");
		abort();
	}
	a->dead = 0;
	s->cnt.as_reopened++;
}

void sim_as_dead(struct sim *s, uint32_t as)
{
	if (!s->tags)
		return;
	s->as[as].dead = 1;
	try_close(s, as);
}

/* After an engine call: if it waited, the last acknowledgement it saw
 * took ack_latency_ns to reach it.  Every CPU waiting looks again. */
void engine_return(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	c->clock += s->cfg.cost.engine_call_ns;
	if (c->turns)
		c->clock += s->cfg.cost.ack_latency_ns;
	c->turns = 0;
	s->epoch++;
}

void sim_tick_if_due(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (c->clock < c->next_tick)
		return;
	while (c->next_tick <= c->clock)
		c->next_tick += s->cfg.cost.tick_ns;
	{
		uint32_t cause = c->cause;

		c->cause = CAUSE_OTHER; /* what a tick completes is not one change's */
		tlbpol_tick(s->eng, cpu);
		c->cause = cause;
	}
	engine_return(s, cpu);
	/* --tags: a dead address space whose flushes were pending may close now. */
	for (uint32_t a = 0; s->tags && a < s->nas; a++)
		try_close(s, a);
}

double sim_makespan(const struct sim *s)
{
	double m = 0;

	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		if (s->cpus[c].ops > 1 && s->cpus[c].clock > m)
			m = s->cpus[c].clock;
	return m;
}

/* @cpu runs again: the flush the engine asked for (of its address space,
 * or while lazy of the one it keeps loaded, which its MMU may walk at
 * once), then the oracle's look at what it kept of the one it runs. */
static void resume(struct sim *s, uint32_t cpu, int need)
{
	struct sim_cpu *c = &s->cpus[cpu];
	int32_t as = c->as >= 0 ? c->as : c->loaded;

	if (need && as >= 0)
		own_full_flush(s, c, sim_tag_key(s, cpu, (uint32_t)as));
	if (c->as >= 0)
		oracle_check_resume(s, cpu, (uint32_t)c->as);
}

/*
 * --tags: the allocator's tag and the flush it and the engine ask for
 * (tlbpol_switch_tag()), made as part of the switch: TAG, every entry of
 * the tag (a slot another address space had, or flushes skipped while
 * away: x86 CR3 without bit 63); ALL, every tag's (a rollover: arm64 TLBI
 * VMALLE1).  Entries of other tags stay, as with PCIDs.
 */
static void switch_tag(struct sim *s, uint32_t cpu, int32_t as)
{
	struct sim_cpu *c = &s->cpus[cpu];
	int32_t old = c->loaded;
	struct tlbpol_tag_use u;
	int err;

	if (as >= 0)
		s->as[as].dead = 0; /* a thread of a new process in its place */
	err = tlbpol_switch_tag(s->eng, cpu, as >= 0 ? s->as[as].as : NULL, &u);
	if (err) {
		fprintf(stderr, "tlbpol-sim: tlbpol_switch_tag: %d\n", err);
		abort();
	}
	engine_return(s, cpu);
	/* Lazy in a dead address space: drop it (Linux switches to
	 * init_mm), so that it can close. */
	if (as < 0 && old >= 0 && s->as[old].dead) {
		err = tlbpol_unload(s->eng, cpu);
		engine_return(s, cpu);
		if (err) {
			fprintf(stderr, "tlbpol-sim: tlbpol_unload: %d\n", err);
			abort();
		}
		c->loaded = -1;
	}
	if (old >= 0 && old != as)
		try_close(s, (uint32_t)old);
	if (as >= 0) {
		c->loaded = as;
		c->tag = (uint16_t)u.tag;
		/* TLBPOL_SIM_PLANTED=tag-no-flush: the checker's own test,
		 * a host that loads the tag without the flush it was told. */
		if (u.flush != TLBPOL_TAG_FLUSH_NONE && !s->planted_tag_no_flush)
			own_full_flush(s, c, u.flush == TLBPOL_TAG_FLUSH_ALL ? -1 : (int64_t)c->tag);
	}
	c->as = as;
	if (as >= 0)
		resume(s, cpu, 0);
}

void sim_switch(struct sim *s, uint32_t cpu, int32_t as)
{
	struct sim_cpu *c = &s->cpus[cpu];
	int need = 0;

	if (s->tags) {
		switch_tag(s, cpu, as);
		return;
	}
	tlbpol_switch(s->eng, cpu, as >= 0 ? s->as[as].as : NULL, &need);
	engine_return(s, cpu);
	if (as >= 0 && as != c->loaded) {
		/* A CR3 write without PCID drops every non-global entry; with
		 * PCIDs (--pcid: TLBPOL_CFGF_RETAIN_AS) the old address space's
		 * entries stay under their tag, and the engine says at the
		 * switch back whether they must go (need, below). */
		if (c->loaded >= 0 && !s->cfg.pcid) {
			tlb_flush_all(&c->tlb, s->nas);
			c->clock += CYC(s, s->cfg.cost.full_flush_cycles);
		}
		c->loaded = as;
	}
	c->as = as;
	if (as >= 0)
		resume(s, cpu, need);
}

void sim_set_mode(struct sim *s, uint32_t cpu, uint32_t mode)
{
	struct sim_cpu *c = &s->cpus[cpu];
	uint32_t st = mode == MODE_IDLE ? TLBPOL_CPU_IDLE
		      : mode == MODE_PREEMPTED ? TLBPOL_CPU_PREEMPTED
					       : TLBPOL_CPU_RUNNING;
	int r = tlbpol_cpu_state(s->eng, cpu, st);

	engine_return(s, cpu);
	c->mode = mode;
	if (mode == MODE_RUN)
		resume(s, cpu, r == 1);
}
