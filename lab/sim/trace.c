/* SPDX-License-Identifier: MIT */
/*
 * trace.c - replay a recorded trace (lab/trace/FORMAT.md, versions 1
 * to 3).
 *
 * Every trace thread is a modelled thread (sched.c).  Threads that no
 * clone or fork record makes exist from the start, thread t first queued on
 * CPU t % ncpus; the others are made when their parent reaches the record.
 * A thread replays its own records in order, at their recorded times: the
 * gap before a record is computation (with a few accesses to the pages its
 * address space maps, as the trace holds system calls, not loads and
 * stores), a block record is the thread blocked for its duration (futex,
 * poll, sleep, wait, read), an exec moves it to a new address space and an
 * exit ends it.  So which threads are on a CPU when one of them unmaps,
 * and which CPUs are idle (lazy), follows the recording.  Recorded times
 * are those of the run under strace, slowed by it: --trace-compute-scale
 * scales the computation (not the blocking).  A version 1 trace has no
 * blocking and no process structure: its threads all run from the start.
 *
 * Each trace mapping gets a dense range of the modelled address space, so
 * 47-bit addresses, and unrelated processes that share a modelled address
 * space (trace address spaces beyond SIM_MAX_AS wrap around, each round
 * 2^26 pages further up), never collide.
 *
 * What a trace does not show, the model adds, as the kernel does it: the
 * tear-down of an address space when its last thread exits or execs (one
 * flush with its page tables freed, which lazy CPUs take too), a fork's
 * write-protection of the parent's writable pages (and the copy-on-write
 * faults after it).  It cannot add what it cannot know: page faults on
 * memory never unmapped (xz's copy-on-write of the zero page), reclaim,
 * migration.  --trace-cpu-ns sets the computation from the program's CPU
 * time measured without strace.
 *
 * A version 3 trace has the page faults too (recorded with perf): a read
 * fault maps the page read-only (the shared zero page, or a file page), a
 * write fault a new writable frame, and a copy-on-write fault replaces a
 * present read-only page with a new frame as do_wp_page() does
 * (mm/memory.c wp_page_copy(): ptep_clear_flush(), a flush of every CPU
 * of the mm that may cache the old entry, then set_pte_at()): one
 * EV_FAULT with TLBPOL_EVF_PFN_CHANGED, submitted break-before-make, that
 * the engine shoots down.  The model then knows which pages are present,
 * so it no longer takes a dropped writable range to have been written,
 * and its own accesses between records only read and write what is
 * present (what the program faulted in is in the trace, its copies too).
 * The zero page is a frame of its own per page here: its sharing changes
 * no flush.  --zero-page avoid models a host that never maps it for
 * private anonymous memory (replay_fault()); the replay then says how many
 * frames that mapped and how many the program never wrote (memory the
 * zero page would have saved).
 * A thread reads the trace's mapping list of its address space and updates
 * it before any engine call it makes: another CPU runs while it waits, and
 * must find the list as the kernel's VMA tree would be (munmap removes the
 * VMA before it zaps and flushes).
 *
 * trace_load.c reads the trace (trace.h); this file is the scenario that
 * replays it, listed apart from the others (main.c runs it for `trace
 * FILE`); it calls machine.c and sched.c (sim.h).
 */
#include "trace.h"

#include <stdlib.h>

int sim_zero_page = ZERO_PAGE_MAP;

static uint32_t sim_as_of(uint32_t trace_as)
{
	return trace_as % SIM_MAX_AS;
}

static uint8_t perms_of(uint8_t prot)
{
	return prot ? (uint8_t)(prot | SIM_A) : 0;
}

/* The part of one mapping a system call changes: one engine event, as the
 * kernel's mmu_gather flushes a call's whole range once.  @bits is the
 * union of its present pages' bits (none present: no event). */
struct run {
	uint64_t vpn, n;
	uint8_t bits;
};

/* The union of the bits of the present pages of [@vpn, @vpn + @n) of
 * modelled AS @as; 0 if none is present. */
static uint8_t present_bits(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n)
{
	uint8_t bits = 0;

	for (uint64_t i = 0; i < n; i++) {
		const struct sim_page *p = sim_page(s, as, vpn + i, 0);

		if (p && (p->perms & SIM_P))
			bits |= p->perms;
	}
	return bits;
}

/* The parts of [start, start + pages) in trace AS @tas that have a present
 * page, read before any engine call; NULL (and *@nr 0) if none.  An
 * mprotect gives the mappings their new protection here, coarsely: a whole
 * mapping takes it. */
static struct run *runs_of(struct sim *s, uint32_t tas, uint64_t start, uint64_t pages,
			   enum tkind kind, uint8_t prot, uint64_t *nr)
{
	struct tas *a = &((struct trace *)s->trace)->as[tas];
	uint32_t as = tas % SIM_MAX_AS;
	struct run *r = NULL;
	uint64_t n = 0, cap = 0;

	for (uint32_t i = 0; i < a->n; i++) {
		struct mapping *m = &a->m[i];
		uint64_t lo = start > m->start ? start : m->start;
		uint64_t hi = start + pages < m->start + m->pages ? start + pages : m->start + m->pages;
		uint8_t bits;

		if (lo >= hi)
			continue;
		bits = present_bits(s, as, m->dense + (lo - m->start), hi - lo);
		if (kind != T_MPROTECT && a->zp)
			zp_drop(s->trace, a, m->dense + (lo - m->start), hi - lo);
		/* The trace has no loads and stores: a writable mapping that a
		 * program unmaps or DONTNEEDs is taken to have been written
		 * (tlb_flush2 writes all it drops; an allocator's arenas are
		 * used).  Linux flushes only PTEs it cleared, so a range never
		 * touched costs nothing: an mprotect counts only the pages the
		 * model's own accesses made present. */
		if (!bits && kind != T_MPROTECT && (m->prot & SIM_W) &&
		    !((struct trace *)s->trace)->faults)
			bits = (uint8_t)(perms_of(m->prot) | SIM_D);
		if (kind == T_MPROTECT)
			m->prot = prot;
		if (!bits)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			r = realloc(r, cap * sizeof(*r));
			if (!r)
				abort();
		}
		r[n++] = (struct run){ m->dense + (lo - m->start), hi - lo, bits };
	}
	*nr = n;
	return r;
}

/*
 * Must munmap @e of @tt's address space @a stay unstamped?  A stamp leaves
 * the freed pages readable until it settles (about a tick).  What the
 * trace tells: a guard punched strictly inside one mapping, whose pages on
 * both sides stay mapped and in use; and the first half of a MAP_FIXED
 * mmap, which the converter writes as a munmap and an mmap of the same
 * range at the same time (ld.so placing segments): the new mapping takes
 * the addresses at once, and a stale translation would read the old frame
 * through it.  An mprotect(PROT_NONE) guard is a protection change, never
 * stamped.  Not detected: a guard at a mapping's edge (as an aligned
 * allocation's trim looks), a hole between two mmaps placed side by side,
 * a program reading memory it unmapped (the trace has no loads and stores).
 */
static int unstamped(const struct tas *a, const struct tthread *tt, const struct trace *t,
		     const struct tevent *e)
{
	const struct tevent *next = tt->pos < tt->n ? &t->ev[tt->idx[tt->pos]] : NULL;

	for (uint32_t i = 0; i < a->n; i++)
		if (a->m[i].start < e->addr && e->addr + e->pages < a->m[i].start + a->m[i].pages)
			return 1;
	return next && next->kind == T_MMAP && next->addr == e->addr &&
	       next->pages == e->pages && next->time == e->time;
}

/* Submit @kind for the parts read by runs_of(); then flush and free as
 * munmap and madvise do; a munmap is stamped if @stamp (--stamps, and not
 * a guard). */
static void apply(struct sim *s, uint32_t cpu, uint32_t tas, const struct run *r, uint64_t nr,
		  enum tkind kind, uint8_t prot, int stamp)
{
	uint32_t as = tas % SIM_MAX_AS;

	for (uint64_t i = 0; i < nr; i++) {
		if (kind == T_MPROTECT)
			sim_change_range(s, cpu, as, TLBPOL_EV_PROTECT, 0, r[i].vpn, r[i].n, r[i].bits,
					 prot ? (uint8_t)(perms_of(prot) | (r[i].bits & (SIM_A | SIM_D)))
					      : 0);
		else if (kind == T_MREMAP)
			sim_change_range(s, cpu, as, TLBPOL_EV_REMAP, 0, r[i].vpn, r[i].n, r[i].bits, 0);
		else
			/* DONTNEED keeps the range mapped: complete when
			 * madvise() returns.  With --stamps a munmap is taken
			 * for private memory's (the trace does not say: most
			 * are malloc arenas, stacks and JIT heaps) and stamped. */
			sim_change_range(s, cpu, as, TLBPOL_EV_UNMAP,
					 kind == T_DONTNEED	? TLBPOL_EVF_STAYS_MAPPED
					 : stamp ? TLBPOL_EVF_STAMP | TLBPOL_EVF_PRIVATE
							 : 0,
					 r[i].vpn, r[i].n, r[i].bits, 0);
	}
	if (nr && kind == T_MUNMAP && stamp) {
		sim_unmap_done(s, cpu);
	} else if (nr && (kind == T_MUNMAP || kind == T_DONTNEED || kind == T_MREMAP)) {
		sim_flush(s, cpu, TLBPOL_BY_FREE);
		sim_free_frames_later(s, cpu, as, 0, 0);
	}
}

/*
 * The last thread of an address space is gone (exit, or exec leaving it):
 * exit_mmap() unmaps everything and frees the page tables, so the flush
 * reaches the CPUs lazy in it too (TABLES_FREED), as Linux's does
 * (mm/mmap.c exit_mmap(), tlb_finish_mmu() with freed_tables); then (with
 * --tags) the address space closes.  A trace does not show it. */
static void teardown(struct sim *s, uint32_t cpu, uint32_t tas)
{
	struct tas *a = &((struct trace *)s->trace)->as[tas];
	uint32_t as = sim_as_of(tas);
	uint64_t lo = UINT64_MAX, hi = 0;
	uint8_t bits = 0;
	struct run *r;
	uint64_t nr;

	/* One event over all of it, as one tlb_finish_mmu() flushes it. */
	r = runs_of(s, tas, 0, UINT64_MAX / 2, T_MUNMAP, 0, &nr);
	for (uint64_t i = 0; i < nr; i++) {
		lo = r[i].vpn < lo ? r[i].vpn : lo;
		hi = r[i].vpn + r[i].n > hi ? r[i].vpn + r[i].n : hi;
		bits |= r[i].bits;
	}
	free(r);
	free(a->m);
	a->m = NULL;
	a->n = a->cap = 0;
	if (nr) {
		sim_change_range(s, cpu, as, TLBPOL_EV_UNMAP, TLBPOL_EVF_TABLES_FREED, lo, hi - lo, bits, 0);
		sim_flush(s, cpu, TLBPOL_BY_FREE);
		sim_free_frames_later(s, cpu, as, 0, 0);
	}
	sim_as_dead(s, as);
}

/* A thread leaves trace AS @tas; tear it down if it was the last. */
static void leave_as(struct sim *s, uint32_t cpu, uint32_t tas)
{
	struct tas *a = &((struct trace *)s->trace)->as[tas];

	if (a->live && !--a->live)
		teardown(s, cpu, tas);
}

/* A fork write-protects the parent's private writable pages for
 * copy-on-write and flushes the parent's mm (kernel/fork.c dup_mmap():
 * copy_page_range(), then flush_tlb_mm(oldmm)); its CPUs running other
 * threads of the parent take it. */
static void fork_protect(struct sim *s, uint32_t cpu, uint32_t tas)
{
	struct tas *a = &((struct trace *)s->trace)->as[tas];
	uint32_t as = sim_as_of(tas);

	for (uint32_t i = 0; i < a->n; i++) {
		struct mapping m = a->m[i];
		uint8_t bits;

		if (!(m.prot & SIM_W))
			continue;
		bits = present_bits(s, as, m.dense, m.pages);
		if (bits & SIM_W)
			sim_change_range(s, cpu, as, TLBPOL_EV_PROTECT, 0, m.dense, m.pages, bits,
					 (uint8_t)(bits & ~(SIM_W | SIM_D)));
	}
}

/* A fork: the child's address space starts as a copy of the parent's
 * mappings (its pages fault in anew: the model does not copy PTEs). */
static void copy_as(struct tas *to, const struct tas *from)
{
	for (uint32_t i = 0; i < from->n; i++)
		trace_add_mapping(to, from->m[i].start, from->m[i].pages, from->m[i].prot,
				  from->m[i].anon);
}

/* Make the modelled thread of trace thread @th, in trace AS @tas, at trace
 * time @now; first queued on @cpu (at set-up) or placed by the scheduler. */
static int make_thread(struct sim *s, uint32_t th, uint32_t tas, uint64_t now, uint32_t cpu)
{
	struct trace *t = s->trace;
	int id;

	t->th[th].tas = tas;
	t->th[th].last = now;
	t->th[th].made = 1;
	t->as[tas].live++;
	id = sim_thread_new(s, (int32_t)sim_as_of(tas), cpu, 0);
	if (id < 0)
		return -1;
	s->threads[id]->tag = th; /* the trace thread it replays */
	return 0;
}

static int trace_setup(struct sim *s)
{
	struct trace *t;

	if (!s->trace_path || sim_load_trace(s, s->trace_path))
		return -1;
	t = s->trace;
	s->cnt.faults_recorded = t->faults;
	for (uint32_t a = 0; a < SIM_MAX_AS && a < t->nas; a++)
		if (sim_open_as(s) < 0)
			return -1;
	for (uint32_t th = 0; th < t->threads; th++)
		if (!t->is_child[th] && t->th[th].n &&
		    make_thread(s, th, t->th[th].tas, 0, th % s->cfg.ncpus))
			return -1;
	if (s->cfg.trace_cpu_ns > 0) {
		/* --trace-cpu-ns: scale the recorded computation so that it adds
		 * up to the CPU time the program used without strace. */
		double total = trace_compute_ns(t);

		if (total > 0)
			s->cfg.trace_compute_scale = s->cfg.trace_cpu_ns / total;
	}
	return 0;
}

/* The program runs a little between two system calls: a few accesses to
 * what its address space maps. */
static void run_a_little(struct sim *s, uint32_t cpu, uint32_t tas)
{
	struct trace *t = s->trace;
	struct sim_cpu *c = &s->cpus[cpu];
	uint32_t as = sim_as_of(tas);

	for (int k = 0; k < 4 && t->as[tas].n; k++) {
		struct tas *a = &t->as[tas];
		struct mapping *m = &a->m[sim_rand(c) % a->n];
		uint64_t v = m->dense + sim_rand(c) % m->pages;
		int write = !!(m->prot & SIM_W);
		uint8_t prot = m->prot;

		if (!prot)
			continue;
		if (t->faults) {
			/* The recorded faults made the pages present: touch
			 * only those, and write only the writable ones. */
			const struct sim_page *p = sim_page(s, as, v, 0);
			const uint8_t *zp = zp_state(&t->as[tas], v, 0);

			/* --zero-page avoid: a fresh frame the program has
			 * not written stays unwritten (it only read it). */
			if (p && (p->perms & SIM_P))
				sim_access(s, cpu, as, v,
					   write && (p->perms & SIM_W) && !(zp && (*zp & ZP_FRESH)));
			continue;
		}
		/* m is not used past here: the fault may wait, and another
		 * CPU change the list meanwhile. */
		if (sim_access(s, cpu, as, v, write) == ACC_FAULT) {
			struct sim_page *p = sim_page(s, as, v, 0);
			/* A write to a present read-only page of a writable
			 * mapping is copy-on-write (after a fork): a new frame
			 * (mm/memory.c wp_page_copy(), ptep_clear_flush()). */
			uint32_t cow = write && p && (p->perms & SIM_P) ? TLBPOL_EVF_PFN_CHANGED : 0;

			sim_fault(s, cpu, as, v, (write ? TLBPOL_EVF_WRITE : 0) | cow,
				  (uint8_t)(perms_of(prot) | (write ? SIM_D : 0)));
			sim_access(s, cpu, as, v, write);
		}
	}
}

/*
 * A recorded page fault (v3) at @page of trace AS @tas, resolved as the
 * kernel did (mm/memory.c): a read of a page not present maps it
 * read-only (do_anonymous_page(): the zero page; a file's page); a write
 * maps a new writable frame (no flush: nothing was cached); a write to a
 * present write-protected page copies it (do_wp_page() -> wp_page_copy():
 * ptep_clear_flush() of the old PTE, then the new frame's).  The
 * model's page may differ from the kernel's (its own accesses between
 * records): a copy still replaces whatever is present, as the record
 * says the kernel did.
 *
 * --zero-page avoid: the read of a page not present of private anonymous
 * memory maps a fresh zeroed frame instead, as do_anonymous_page() does
 * where mm_forbids_zeropage() (593befa6ab74): writable and dirty if the
 * mapping is writable (pte_mkwrite(pte_mkdirty())), an install.  The
 * program's later write, recorded as a copy of the zero page, then finds
 * its own exclusive frame: a plain write if the PTE is writable, else
 * wp_page_reuse() (an upgrade, no new frame); never a copy.  After a fork
 * the frame is shared, and the recorded copy is one.
 */
static void replay_fault(struct sim *s, uint32_t cpu, uint32_t tas, uint64_t page,
			 enum tfault how)
{
	struct trace *t = s->trace;
	struct tas *a = &t->as[tas];
	uint32_t as = sim_as_of(tas);
	const struct sim_page *p;
	uint64_t v = 0;
	uint8_t prot = 0, anon = 0, *zp = NULL;
	int present;

	for (uint32_t i = 0; i < a->n; i++)
		if (a->m[i].start <= page && page < a->m[i].start + a->m[i].pages) {
			v = a->m[i].dense + (page - a->m[i].start);
			prot = a->m[i].prot;
			anon = a->m[i].anon;
			break;
		}
	if (!prot)
		return; /* not mapped as the model sees it, or PROT_NONE */
	s->cnt.faults[how]++;
	p = sim_page(s, as, v, 0);
	present = p && (p->perms & SIM_P);
	if (sim_zero_page == ZERO_PAGE_AVOID)
		zp = zp_state(a, v, 1);
	/* The states change before any engine call: another CPU runs while
	 * this one waits, and may drop the page. */
	if (zp && !present && how == TF_READ && anon) {
		t->zp_frames++;
		t->zp_unwritten += *zp & ZP_FRESH; /* lost unwritten (PROT_NONE) */
		*zp = ZP_FRESH | ZP_OWN;
		sim_fault(s, cpu, as, v, 0, (uint8_t)(perms_of(prot) | (prot & SIM_W ? SIM_D : 0)));
		sim_access(s, cpu, as, v, 0);
		return;
	}
	if (zp)
		*zp = (uint8_t)((how == TF_READ ? *zp & ZP_FRESH : 0) | (present ? *zp & ZP_OWN : 0));
	if (!present) {
		if (how == TF_READ)
			sim_fault(s, cpu, as, v, 0, (uint8_t)(perms_of(prot) & ~SIM_W));
		else
			sim_fault(s, cpu, as, v, TLBPOL_EVF_WRITE,
				  (uint8_t)(perms_of(prot) | SIM_W | SIM_D));
	} else if (zp && (*zp & ZP_OWN) && how != TF_READ) {
		if (!(p->perms & SIM_W))
			sim_fault(s, cpu, as, v, TLBPOL_EVF_WRITE,
				  (uint8_t)(perms_of(prot) | SIM_W | SIM_D));
	} else if (how == TF_COW || (how == TF_WRITE && !(p->perms & SIM_W))) {
		sim_fault(s, cpu, as, v, TLBPOL_EVF_WRITE | TLBPOL_EVF_PFN_CHANGED,
			  (uint8_t)(perms_of(prot) | SIM_W | SIM_D));
	}
	sim_access(s, cpu, as, v, how != TF_READ);
}

static int trace_step(struct sim *s, uint32_t cpu)
{
	struct trace *t = s->trace;
	struct sim_thread *me = sim_current(s, cpu);
	struct tthread *tt = &t->th[me->tag];
	struct tevent *e;
	struct tas *a;
	struct run *r;
	uint64_t nr;
	int guard;

	if (tt->pos >= tt->n)
		return 0;
	e = &t->ev[tt->idx[tt->pos]];
	if (!tt->gap_done) {
		/* Computation until the record (until its blocking began). */
		uint64_t at = e->kind == T_BLOCK ? e->time - e->new_addr : e->time;
		double gap = at > tt->last ? (double)(at - tt->last) : 0;

		tt->gap_done = 1;
		if (t->version >= 2 && gap > 0) {
			run_a_little(s, cpu, tt->tas);
			sim_charge(s, cpu, gap * s->cfg.trace_compute_scale);
			return 1;
		}
	}
	tt->gap_done = 0;
	tt->pos++;
	tt->last = e->time;
	if (t->version < 2)
		run_a_little(s, cpu, tt->tas);
	a = &t->as[tt->tas];
	switch (e->kind) {
	case T_CLONE:
	case T_FORK: {
		uint32_t child = (uint32_t)e->addr;
		uint32_t cas = e->kind == T_CLONE ? tt->tas : (uint32_t)e->new_addr;

		sim_charge(s, cpu, s->cfg.cost.syscall_ns);
		if (e->kind == T_FORK) {
			copy_as(&t->as[cas], a);
			zp_fork(a);
			fork_protect(s, cpu, tt->tas);
		}
		if (!t->th[child].made && make_thread(s, child, cas, e->time, cpu))
			abort();
		return 1;
	}
	case T_EXEC: {
		uint32_t old = tt->tas;

		tt->tas = (uint32_t)e->new_addr;
		t->as[tt->tas].live++;
		leave_as(s, cpu, old);
		sim_thread_exec(s, cpu, (int32_t)sim_as_of(tt->tas));
		return 1;
	}
	case T_EXIT:
		leave_as(s, cpu, tt->tas);
		return 0;
	case T_BLOCK:
		sim_block(s, cpu, (double)e->new_addr);
		return 1;
	case T_FAULT:
		replay_fault(s, cpu, tt->tas, e->addr, (enum tfault)e->new_pages);
		s->events_done++;
		return 1;
	default:
		break;
	}
	sim_charge(s, cpu, s->cfg.cost.syscall_ns);
	switch (e->kind) {
	case T_MMAP:
		trace_add_mapping(a, e->addr, e->pages ? e->pages : 1, e->prot, e->anon);
		break;
	case T_MUNMAP:
		r = runs_of(s, tt->tas, e->addr, e->pages, T_MUNMAP, 0, &nr);
		/* Counted only where there is something to stamp. */
		guard = nr && unstamped(a, tt, t, e);
		s->cnt.guard_unmaps += guard;
		trace_forget(a, e->addr, e->pages);
		apply(s, cpu, tt->tas, r, nr, T_MUNMAP, 0, s->cfg.stamps && !guard);
		free(r);
		break;
	case T_DONTNEED:
		r = runs_of(s, tt->tas, e->addr, e->pages, T_DONTNEED, 0, &nr);
		apply(s, cpu, tt->tas, r, nr, T_DONTNEED, 0, 0);
		free(r);
		break;
	case T_MPROTECT:
		r = runs_of(s, tt->tas, e->addr, e->pages, T_MPROTECT, e->prot, &nr);
		apply(s, cpu, tt->tas, r, nr, T_MPROTECT, e->prot, 0);
		free(r);
		break;
	case T_MREMAP: {
		struct mapping from = { 0 };

		for (uint32_t i = 0; i < a->n; i++)
			if (a->m[i].start <= e->addr && e->addr < a->m[i].start + a->m[i].pages)
				from = a->m[i];
		r = runs_of(s, tt->tas, e->addr, e->pages, T_MREMAP, 0, &nr);
		trace_forget(a, e->addr, e->pages);
		trace_add_mapping(a, e->new_addr, e->new_pages ? e->new_pages : 1, from.prot,
				  from.anon);
		apply(s, cpu, tt->tas, r, nr, T_MREMAP, 0, 0);
		free(r);
		break;
	}
	default:
		break;
	}
	s->events_done++;
	return 1;
}

static const char *rules_name(uint64_t rules)
{
	return rules == TLBPOL_RULES_LINUX ? "linux" : rules == TLBPOL_RULES_DEFAULT ? "default"
					 : rules ? "custom" : "naive";
}

static void trace_finish(struct sim *s)
{
	struct trace *t = s->trace;

	for (uint32_t a = 0; a < t->nas; a++) {
		/* What is still mapped at the end counts as it is. */
		zp_drop(t, &t->as[a], t->as[a].zp_base, t->as[a].zp_chunks * SIM_CHUNK);
		for (uint64_t c = 0; c < t->as[a].zp_chunks; c++)
			free(t->as[a].zp[c]);
		free(t->as[a].zp);
		free(t->as[a].m);
	}
	if (sim_zero_page == ZERO_PAGE_AVOID && !s->cfg.quiet)
		fprintf(stderr,
			"tlbpol-sim: trace: zero page avoided (rules %s %#llx): %llu frames mapped at "
			"read faults, %llu never written (%llu KiB); anonymous memory: %s\n",
			rules_name(s->cfg.rules), (unsigned long long)s->cfg.rules,
			(unsigned long long)t->zp_frames, (unsigned long long)t->zp_unwritten,
			(unsigned long long)t->zp_unwritten * 4,
			!t->faults	 ? "none used, no fault records (version 3)"
			: t->map_kinds ? "as the trace says"
				       : "inferred from the mmap records");
	for (uint32_t th = 0; th < t->threads; th++)
		free(t->th[th].idx);
	free(t->th);
	free(t->is_child);
	free(t->as);
	free(t->ev);
	free(t);
	s->trace = NULL;
}

const struct workload sim_trace_workload = {
	"trace", "replay of a recorded trace", "-", TLBPOL_ARCH_X86_64, 0, 0, 0, 0, NULL,
	trace_setup, trace_step, trace_finish,
};
