/* SPDX-License-Identifier: MIT */
/*
 * actions.c - the actions a workload takes on the modelled machine, each
 * on one CPU at its clock: accesses through its TLB, PTE changes submitted
 * to the engine, flushes, deferred frees, the end of a stamped unmap.
 * Every change the engine is told of is tracked until the engine reports
 * it complete (at once, after a flush, at a deferred free, at a stamp's
 * settle), and the oracle (oracle.c) checks it then.
 *
 * Called by the scenarios (workloads.h, trace.c, hypervisor.c) through
 * sim.h; calls machine.c (engine_return()), frames.c, oracle.c, tlb.c.
 */
#include "machine.h"

#include <errno.h>
#include <stdlib.h>

enum access_result sim_access(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, int write)
{
	struct sim_cpu *c = &s->cpus[cpu];
	struct sim_page *p = sim_page(s, as, vpn, 0);
	uint16_t key = sim_tag_key(s, cpu, as);
	struct tlb_entry *e;
	int flushed;

	e = tlb_lookup(&c->tlb, key, vpn, &flushed);
	if (e && e->owner != as) {
		/* --tags: another address space's entry under the tag this
		 * one was given: the tag was reused without its flush. */
		oracle_foreign(s, cpu, as, vpn, "tag reused unflushed", e);
		tlb_flush_page(&c->tlb, key, vpn);
		e = NULL;
	}
	if (e && (!write || (e->perms & SIM_W))) {
		if (p && !p->unflushed && oracle_harmful(s, e->perms, e->frame, p)) {
			oracle_violation(s, cpu, as, vpn, "stale use", e, p);
			tlb_flush_page(&c->tlb, key, vpn);
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
	tlb_fill(&c->tlb, key, (uint16_t)as, vpn, p->perms, p->frame, p->version);
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

/* Stamped frame @f is handed out again, its stamp settled (in @ns of
 * modelled time; @waited: settling had to interrupt or wait): the changes
 * the stamp covered are complete (checked), and no running CPU may still
 * translate to the frame. */
static void frame_reused(struct sim *s, const struct free_frame *f, double ns, int waited)
{
	s->cnt.frame_reuses++;
	s->cnt.settles += waited != 0;
	frames_settle_sample(ns, waited);
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
	frames_refill(s, fl);
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
