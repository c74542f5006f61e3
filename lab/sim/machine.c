/* SPDX-License-Identifier: MIT */
/*
 * machine.c - the modelled machine around the real engine: its callbacks
 * and the actions a workload takes (accesses, PTE changes, flushes,
 * switches).
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
#include "sim.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CYC(s, c) ((c) / (s)->cfg.cost.cpu_ghz)

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
			tlb_flush_all(&c->tlb, s->nas);
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

static void cb_broadcast(void *ctx, uint32_t from, const struct tlbpol_flush *f)
{
	struct sim *s = ctx;
	uint64_t pages = 0;

	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
		struct sim_tlb *t = &s->cpus[c].tlb;

		if (f->kind == TLBPOL_FLUSH_ALL) {
			tlb_flush_all(t, s->nas);
		} else if (f->kind == TLBPOL_FLUSH_AS) {
			tlb_flush_as(t, (uint16_t)f->as_tag);
		} else {
			for (uint32_t r = 0; r < f->nr_ranges; r++)
				for (uint64_t i = 0; i < f->ranges[r].nr_pages; i++)
					tlb_flush_page(t, (uint16_t)f->as_tag,
						       (f->ranges[r].va >> 12) + i);
		}
	}
	for (uint32_t r = 0; r < f->nr_ranges; r++)
		pages += f->ranges[r].nr_pages;
	s->cnt.broadcasts++;
	s->cnt.pages_flushed += pages;
	if (s->cfg.hypercall)
		s->cpus[from].clock += s->cfg.cost.hypercall_ns + (double)pages * s->cfg.cost.hypercall_page_ns;
	else
		s->cpus[from].clock += s->cfg.cost.broadcast_ns + (double)pages * s->cfg.cost.broadcast_page_ns;
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
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops),
		.flush_local = cb_flush_local,
		.send_ipi = cb_send_ipi,
		.relax = cb_relax,
	};
	static const struct tlbpol_ops ops_bc = {
		.size = sizeof(ops),
		.flush_local = cb_flush_local,
		.send_ipi = cb_send_ipi,
		.broadcast = cb_broadcast,
		.relax = cb_relax,
	};
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
	ec.ops = cfg->broadcast ? &ops_bc : &ops;
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
	/* As the unikernel sizes it at boot: an IPI round trip (send, latency,
	 * the receiver's entry and exit, the acknowledgement) over one turn. */
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

		if (tlb_init(&cpu->tlb, cfg, SIM_MAX_AS))
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

static void frames_fini(void *frames);
static void frames_global_fini(void *frames);

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

/* After an engine call: if it waited, the last acknowledgement it saw
 * took ack_latency_ns to reach it.  Every CPU waiting looks again. */
static void engine_return(struct sim *s, uint32_t cpu)
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
}

double sim_makespan(const struct sim *s)
{
	double m = 0;

	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		if (s->cpus[c].ops > 1 && s->cpus[c].clock > m)
			m = s->cpus[c].clock;
	return m;
}

/* ------------------------------------------------------------------------ */
/* Workload actions                                                         */

enum access_result sim_access(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, int write)
{
	struct sim_cpu *c = &s->cpus[cpu];
	struct sim_page *p = sim_page(s, as, vpn, 0);
	struct tlb_entry *e;
	int flushed;

	e = tlb_lookup(&c->tlb, (uint16_t)as, vpn, &flushed);
	if (e && (!write || (e->perms & SIM_W))) {
		if (p && !p->unflushed && oracle_harmful(s, e->perms, e->frame, p)) {
			oracle_violation(s, cpu, as, vpn, "stale use", e, p);
			tlb_flush_page(&c->tlb, (uint16_t)as, vpn);
		}
		/* x86: the first write through an entry without D sets D in
		 * the PTE (a locked access that re-reads it). */
		if (write && !(e->perms & SIM_D) && p && (p->perms & SIM_W)) {
			e->perms |= SIM_D;
			p->perms |= SIM_D;
		}
		c->clock += s->cfg.cost.tlb_hit_ns;
		return ACC_OK;
	}
	/* Walk. */
	s->cnt.tlb_misses++;
	if (flushed)
		s->cnt.flush_misses++;
	c->clock += flushed ? s->cfg.cost.refill_ns : s->cfg.cost.tlb_walk_ns;
	if (!p || !(p->perms & SIM_P) || (write && !(p->perms & SIM_W)))
		return ACC_FAULT;
	/* The walk sets A (and D for a write) in the PTE, as x86 and Arm
	 * hardware do; not a change the engine hears about. */
	p->perms |= SIM_A | (write ? SIM_D : 0);
	tlb_fill(&c->tlb, (uint16_t)as, vpn, p->perms, p->frame, p->version);
	p->holders |= 1ULL << (cpu % 64);
	return ACC_OK;
}

/* Count the harmful changes of [@vpn, @vpn + @n) in flight, or no longer. */
static void mark_inflight(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, int by)
{
	for (uint64_t i = 0; i < n; i++) {
		struct sim_page *p = sim_page(s, as, vpn + i, 0);

		if (p)
			p->inflight = (uint16_t)(p->inflight + by);
	}
}

/*
 * The scenarios' threads mostly touch pages of their own, so the pages one
 * CPU unmaps are rarely in another's TLB, and a flush that skips a target
 * would go unnoticed.  --probe makes every CPU read, after each step, one
 * of the pages installed lately in its address space: entries of other
 * CPUs' pages then sit in every TLB when those pages change, and the
 * oracle checks what the engine does with them.  A read that finds the page
 * not present does nothing (a probe is not a fault).
 */
void sim_probe(struct sim *s, uint32_t cpu, uint32_t as)
{
	struct sim_as *a = &s->as[as];
	uint32_t n = a->nrecent < 64 ? a->nrecent : 64;

	if (n)
		(void)sim_access(s, cpu, as, a->recent[sim_rand(&s->cpus[cpu]) % n], 0);
}

struct completion {
	uint32_t as;
	uint64_t vpn, n;
	uint32_t deadline;
	uint32_t harms;
	uint64_t seq; /* order of submission on its CPU */
	struct completion *next;
};

struct cpu_pending {
	struct completion *head;
	uint64_t seq;
};

static struct cpu_pending *pending_of(struct sim *s, uint32_t cpu);
static void complete_due(struct sim *s, uint32_t cpu, uint32_t by, uint64_t upto);
static void flush_inflight(struct sim *s, uint32_t cpu, uint32_t by, int dir);

/* ------------------------------------------------------------------------ */
/* Frames (--stamps): a kernel's per-CPU free lists, recently freed first    */

/* A frame, where it was mapped last, and the stamp that must be settled
 * before it is handed out again (0: none), with its initiator's changes
 * up to @upto that the stamp covers. */
struct free_frame {
	uint32_t frame, as, owner;
	uint64_t vpn, stamp, upto;
};

struct frame_list {
	struct free_frame *v;
	uint32_t n, cap;
};

struct cpu_frames {
	struct frame_list free;    /* LIFO: what was freed last goes first */
	struct frame_list cleared; /* what this CPU's unmap in progress cleared */
};

/* A per-CPU list holds this many; the rest goes to one global list, which a
 * CPU whose own is empty takes from (Linux's per-CPU pageset and its high
 * mark, then the buddy allocator). */
#define FRAMES_PER_CPU 512

static void frames_push(struct frame_list *l, struct free_frame f)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = f;
}

static void frames_fini(void *frames)
{
	struct cpu_frames *fl = frames;

	if (!fl)
		return;
	free(fl->free.v);
	free(fl->cleared.v);
	free(fl);
}

static struct cpu_frames *frames_of(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (!c->frames && !(c->frames = calloc(1, sizeof(struct cpu_frames))))
		abort();
	return c->frames;
}

/* Free @f to @cpu's list, or past its high mark to the global one. */
static void frame_put(struct sim *s, uint32_t cpu, struct free_frame f)
{
	struct cpu_frames *fl = frames_of(s, cpu);

	if (++s->cnt.free_frames > s->cnt.free_frames_peak)
		s->cnt.free_frames_peak = s->cnt.free_frames;

	if (fl->free.n < FRAMES_PER_CPU) {
		frames_push(&fl->free, f);
		return;
	}
	if (!s->frames && !(s->frames = calloc(1, sizeof(struct frame_list))))
		abort();
	frames_push(s->frames, f);
}

static void frames_global_fini(void *frames)
{
	struct frame_list *g = frames;

	if (g) {
		free(g->v);
		free(g);
	}
}

/* Settle latencies, every one (for percentiles at the end of a run): of
 * every reuse of a stamped frame, and of those that had to wait. */
struct samples {
	double *v;
	uint64_t n, cap;
};
static struct samples settle_all, settle_waited;

static void sample(struct samples *l, double ns)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = realloc(l->v, l->cap * sizeof(double));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, uint64_t n, double q)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(uint64_t)(q * (double)(n - 1) + 0.5)];
}

void sim_settle_percentiles(struct sim *s)
{
	s->cnt.settle_p50 = pct(settle_all.v, settle_all.n, 0.5);
	s->cnt.settle_p99 = pct(settle_all.v, settle_all.n, 0.99);
	s->cnt.wait_p50 = pct(settle_waited.v, settle_waited.n, 0.5);
	s->cnt.wait_p99 = pct(settle_waited.v, settle_waited.n, 0.99);
	free(settle_all.v);
	free(settle_waited.v);
	settle_all.v = settle_waited.v = NULL;
	settle_all.n = settle_all.cap = settle_waited.n = settle_waited.cap = 0;
}

/* Stamped frame @f is handed out again, its stamp settled (in @ns of
 * modelled time; @waited: settling had to interrupt or wait): the changes
 * the stamp covered are complete (checked), and no running CPU may still
 * translate to the frame. */
static void frame_reused(struct sim *s, const struct free_frame *f, double ns, int waited)
{
	s->cnt.frame_reuses++;
	s->cnt.settles += waited != 0;
	sample(&settle_all, ns);
	if (waited)
		sample(&settle_waited, ns);
	complete_due(s, f->owner, TLBPOL_BY_LAZY, f->upto);
	oracle_check_frame(s, f->frame, f->as, f->vpn);
}

/*
 * A frame for a page @cpu installs.  With --stamps, the one this CPU freed
 * last, if any: its stamp is settled first (tlbpol_stamp_settle(), timed:
 * the latency an allocation pays), the changes it covered are complete
 * (checked), and no running CPU may still translate to the frame.
 */
static uint32_t frame_new(struct sim *s, uint32_t cpu)
{
	struct cpu_frames *fl;
	struct free_frame f;

	s->cnt.frame_allocs++;
	if (!s->cfg.stamps)
		return s->next_frame++;
	fl = frames_of(s, cpu);
	if (!fl->free.n && s->frames && ((struct frame_list *)s->frames)->n) {
		struct frame_list *g = s->frames;

		frames_push(&fl->free, g->v[--g->n]);
	}
	if (!fl->free.n)
		return s->next_frame++;
	/*
	 * --stamp-lookahead N: among the N frames freed last (a kernel's
	 * per-CPU list holds a few hundred), one whose stamp is settled costs
	 * nothing: the allocator asks tlbpol_stamp_pending() and takes it
	 * instead, moving the top down in its place (still recently freed).
	 * Only when each is pending does it settle the last freed.  0: the
	 * last freed, always (the worst case for stamps).
	 */
	for (uint32_t k = 0; k < s->cfg.stamp_lookahead && k < fl->free.n; k++) {
		struct free_frame *c = &fl->free.v[fl->free.n - 1 - k];

		if (!c->stamp || tlbpol_stamp_pending(s->eng, c->stamp) == 0) {
			struct free_frame t = *c;

			if (c->stamp)
				frame_reused(s, c, 0, 0);
			*c = fl->free.v[fl->free.n - 1];
			fl->free.v[fl->free.n - 1] = t;
			fl->free.v[fl->free.n - 1].stamp = 0;
			break;
		}
	}
	/*
	 * --stamp-spare: every frame looked at is still pending.  A kernel
	 * with free memory takes one from the zone instead (LUF's frames wait
	 * there with their flush pending too) and leaves these in the list,
	 * where the next ticks settle them.  The model's zone never runs out:
	 * free_frames_peak says how much the lists held meanwhile.
	 */
	if (s->cfg.stamp_spare && fl->free.v[fl->free.n - 1].stamp &&
	    tlbpol_stamp_pending(s->eng, fl->free.v[fl->free.n - 1].stamp) == 1) {
		s->cnt.spare_allocs++;
		return s->next_frame++;
	}
	s->cnt.free_frames--;
	f = fl->free.v[--fl->free.n];
	if (f.stamp) {
		struct sim_cpu *c = &s->cpus[cpu];
		uint32_t cause = c->cause;
		double t0 = c->clock;
		int r;

		c->cause = CAUSE_MUNMAP; /* its interrupts are the unmap's flush */
		r = tlbpol_stamp_settle(s->eng, cpu, f.stamp);
		engine_return(s, cpu);
		c->cause = cause;
		if (r < 0) {
			fprintf(stderr, "tlbpol-sim: tlbpol_stamp_settle: %d\n", r);
			exit(2);
		}
		frame_reused(s, &f, c->clock - t0, r > 0);
	}
	return f.frame;
}

static void complete(struct sim *s, struct completion *k, const char *when)
{
	oracle_complete(s, k->as, k->vpn, k->n, (int)k->harms, when);
}

const char *const sim_cause_names[SIM_NR_CAUSES] = {
	[CAUSE_MUNMAP] = "munmap",   [CAUSE_DONTNEED] = "dontneed", [CAUSE_MPROTECT] = "mprotect",
	[CAUSE_MREMAP] = "mremap",   [CAUSE_FAULT] = "fault",       [CAUSE_RECLAIM] = "reclaim",
	[CAUSE_EXIT] = "exit",       [CAUSE_FORWARD] = "forward",   [CAUSE_OTHER] = "other",
	[CAUSE_INSTALL] = "install",
};

static uint32_t cause_of(uint32_t kind, uint32_t flags)
{
	switch (kind) {
	case TLBPOL_EV_UNMAP:
		if (flags & TLBPOL_EVF_STAYS_MAPPED)
			return CAUSE_DONTNEED;
		return flags & TLBPOL_EVF_TABLES_FREED ? CAUSE_EXIT : CAUSE_MUNMAP;
	case TLBPOL_EV_PROTECT:
		return CAUSE_MPROTECT;
	case TLBPOL_EV_REMAP:
		return CAUSE_MREMAP;
	case TLBPOL_EV_FAULT:
		return CAUSE_FAULT;
	case TLBPOL_EV_RECLAIM:
		return CAUSE_RECLAIM;
	default:
		return CAUSE_OTHER;
	}
}

struct tlbpol_decision sim_change(struct sim *s, uint32_t cpu, uint32_t as, uint32_t kind,
				  uint32_t flags, uint64_t vpn, uint64_t n, uint8_t perms)
{
	return sim_change_range(s, cpu, as, kind, flags, vpn, n, sim_page(s, as, vpn, 1)->perms,
				perms);
}

struct tlbpol_decision sim_change_range(struct sim *s, uint32_t cpu, uint32_t as, uint32_t kind,
					uint32_t flags, uint64_t vpn, uint64_t n, uint8_t old,
					uint8_t perms)
{
	struct tlbpol_event ev = { sizeof(ev), kind, flags, 12, vpn << 12, n, old, perms };
	struct tlbpol_decision d;
	uint32_t harms = 0;
	int pfn = !!(flags & TLBPOL_EVF_PFN_CHANGED) && (perms & SIM_P);

	/* An install needs no flush of its own on x86: what it sends
	 * completes deferred work over the address. */
	s->cpus[cpu].cause = kind == TLBPOL_EV_FAULT && !(old & SIM_P) ? CAUSE_INSTALL
								 : cause_of(kind, flags);
	for (uint64_t i = 0; i < n; i++) {
		/* An unmap or an mprotect changes only what is present (and
		 * does not populate): a long range of a sparse address space
		 * costs no page-table memory here. */
		int sparse = kind == TLBPOL_EV_PROTECT || !(perms & SIM_P);
		struct sim_page *p = sim_page(s, as, vpn + i, !sparse);
		uint32_t frame;

		if (sparse && (!p || !(p->perms & SIM_P)))
			continue;
		frame = p->frame;
		/* A frame an unmap or reclaim takes away goes back to the
		 * allocator when the unmap ends (sim_unmap_done()). */
		if (s->cfg.stamps && !(perms & SIM_P) && (p->perms & SIM_P) &&
		    (kind == TLBPOL_EV_UNMAP || kind == TLBPOL_EV_RECLAIM))
			frames_push(&frames_of(s, cpu)->cleared,
				    (struct free_frame){ p->frame, as, cpu, vpn + i, 0, 0 });
		if ((perms & SIM_P) && (!(p->perms & SIM_P) || pfn)) {
			struct sim_as *a = &s->as[as];

			frame = frame_new(s, cpu);
			a->recent[a->nrecent++ % 64] = vpn + i;
		}
		if (oracle_change_harms(s, p->perms, p->frame, perms, frame)) {
			harms = 1;
			p->unflushed++;
		}
		p->version++;
		p->suspects |= p->holders;
		p->holders = 0;
		/* Break-before-make: a frame change is submitted cleared. */
		p->perms = pfn ? 0 : perms;
		p->frame = frame;
	}
	if (harms)
		mark_inflight(s, as, vpn, n, 1);
	if (tlbpol_submit(s->eng, s->as[as].as, cpu, &ev, &d)) {
		fprintf(stderr, "tlbpol-sim: tlbpol_submit refused an event\n");
		exit(2);
	}
	if (harms)
		mark_inflight(s, as, vpn, n, -1);
	engine_return(s, cpu);
	if (pfn)
		for (uint64_t i = 0; i < n; i++)
			sim_page(s, as, vpn + i, 0)->perms = perms;
	if (d.deadline == TLBPOL_BY_NOW || d.action != TLBPOL_ACT_SHOOTDOWN) {
		struct completion k = { as, vpn, n, TLBPOL_BY_NOW, harms, 0, NULL };

		complete(s, &k, d.action == TLBPOL_ACT_NONE ? "no-flush decision" : "after submit");
	} else if (harms) {
		struct completion *k = malloc(sizeof(*k));

		*k = (struct completion){ as, vpn, n, d.deadline, harms, ++pending_of(s, cpu)->seq,
					  pending_of(s, cpu)->head };
		pending_of(s, cpu)->head = k;
	}
	return d;
}

struct tlbpol_decision sim_fault(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn,
				 uint32_t flags, uint8_t perms)
{
	/* A fault runs with interrupts enabled: one posted meanwhile is taken
	 * in the middle of it, and the fault takes that much longer. */
	sim_charge(s, cpu, s->cfg.cost.fault_ns);
	return sim_change(s, cpu, as, TLBPOL_EV_FAULT, flags, vpn, 1, perms);
}

static struct cpu_pending *pending_of(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (!c->pend)
		c->pend = calloc(1, sizeof(struct cpu_pending));
	return (struct cpu_pending *)c->pend;
}

/* Complete (and check) this CPU's pending changes due by @by and submitted
 * no later than @upto.  BY_LAZY ones are completed by a deferred free
 * registered after them, or by a BY_LAZY flush. */
static void complete_due(struct sim *s, uint32_t cpu, uint32_t by, uint64_t upto)
{
	struct completion **pp = &pending_of(s, cpu)->head;

	while (*pp) {
		struct completion *k = *pp;

		if (k->deadline <= by && k->seq <= upto) {
			*pp = k->next;
			complete(s, k, "after flush");
			free(k);
		} else {
			pp = &k->next;
		}
	}
}

/* The changes a tlbpol_flush(@by) of @cpu completes are in flight while it
 * waits (@dir 1), and no longer once it returns (-1). */
static void flush_inflight(struct sim *s, uint32_t cpu, uint32_t by, int dir)
{
	for (struct completion *k = pending_of(s, cpu)->head; k; k = k->next)
		if (k->deadline <= by)
			mark_inflight(s, k->as, k->vpn, k->n, dir);
}

void sim_flush(struct sim *s, uint32_t cpu, uint32_t by)
{
	flush_inflight(s, cpu, by, 1);
	tlbpol_flush(s->eng, cpu, by);
	flush_inflight(s, cpu, by, -1);
	engine_return(s, cpu);
	complete_due(s, cpu, by, UINT64_MAX);
}

struct dfree_rec {
	struct sim *s;
	uint32_t cpu;
	uint32_t as;
	uint64_t vpn, n;
	uint64_t upto; /* the changes pending when it was registered */
	struct frame_list frames; /* --stamps: what it frees */
};

static void on_free(void *arg)
{
	struct dfree_rec *r = arg;

	/* Every flush pending at registration is done: BY_LAZY ones too. */
	complete_due(r->s, r->cpu, TLBPOL_BY_LAZY, r->upto);
	oracle_check_pages(r->s, r->as, r->vpn, r->n, "deferred free");
	for (uint32_t i = 0; i < r->frames.n; i++)
		frame_put(r->s, r->cpu, r->frames.v[i]);
	r->s->cnt.dfree_pages -= r->n;
	free(r->frames.v);
	free(r);
}

void sim_free_frames_later(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, uint64_t n)
{
	struct dfree_rec *r = malloc(sizeof(*r));

	*r = (struct dfree_rec){ s, cpu, as, vpn, n, pending_of(s, cpu)->seq, { 0, 0, 0 } };
	s->cnt.dfree_pages += n;
	if (s->cnt.dfree_pages > s->cnt.dfree_pages_peak)
		s->cnt.dfree_pages_peak = s->cnt.dfree_pages;
	if (s->cfg.stamps) {
		struct cpu_frames *fl = frames_of(s, cpu);

		r->frames = fl->cleared; /* freed behind the flush, stamp 0 */
		fl->cleared = (struct frame_list){ 0, 0, 0 };
	}
	tlbpol_defer_free(s->eng, cpu, on_free, r);
	engine_return(s, cpu);
}

void sim_unmap_done(struct sim *s, uint32_t cpu)
{
	struct cpu_frames *fl;
	uint64_t stamp = 0, upto;
	int r;

	/* tlbpol_stamp() completes what is due by the free, as
	 * sim_flush(BY_FREE) does, and posts the rest. */
	flush_inflight(s, cpu, TLBPOL_BY_FREE, 1);
	fl = frames_of(s, cpu);
	r = tlbpol_stamp(s->eng, cpu, &stamp);
	/* Nothing stamped on this CPU: right if the unmap freed no frame
	 * (what it did is then completed as by a free), a bug otherwise. */
	if (r == -ENOENT && !fl->cleared.n)
		r = tlbpol_flush(s->eng, cpu, TLBPOL_BY_FREE);
	flush_inflight(s, cpu, TLBPOL_BY_FREE, -1);
	engine_return(s, cpu);
	if (r < 0) {
		fprintf(stderr, "tlbpol-sim: tlbpol_stamp: %d\n", r);
		exit(2);
	}
	complete_due(s, cpu, TLBPOL_BY_FREE, UINT64_MAX);
	upto = pending_of(s, cpu)->seq;
	if (!stamp) /* nothing in flight: all of it is complete */
		complete_due(s, cpu, TLBPOL_BY_LAZY, upto);
	for (uint32_t i = 0; i < fl->cleared.n; i++) {
		struct free_frame f = fl->cleared.v[i];

		f.stamp = stamp;
		f.upto = upto;
		frame_put(s, cpu, f);
	}
	fl->cleared.n = 0;
}

/* @cpu runs again: the flush the engine asked for (of its address space,
 * or while lazy of the one it keeps loaded, which its MMU may walk at
 * once), then the oracle's look at what it kept of the one it runs. */
static void resume(struct sim *s, uint32_t cpu, int need)
{
	struct sim_cpu *c = &s->cpus[cpu];
	int32_t as = c->as >= 0 ? c->as : c->loaded;

	if (need && as >= 0) {
		tlb_flush_as(&c->tlb, (uint16_t)as);
		s->cnt.full_flushes++;
		s->cnt.local_flushes++;
		c->clock += CYC(s, s->cfg.cost.full_flush_cycles);
	}
	if (c->as >= 0)
		oracle_check_resume(s, cpu, (uint32_t)c->as);
}

void sim_switch(struct sim *s, uint32_t cpu, int32_t as)
{
	struct sim_cpu *c = &s->cpus[cpu];
	int need = 0;

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
