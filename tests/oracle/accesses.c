/* SPDX-License-Identifier: MIT */
/*
 * accesses.c - what a CPU does with its caches: user accesses and
 * speculative walks.  An access goes through the TLB or walks (through the
 * paging-structure cache, or the directory, filling both), sets A and D as
 * the hardware does, and on a fault is resolved as a kernel would (under
 * the page-table lock: an install, a spurious or retried fault, a
 * write-protect or COW fault) and tried once more.  Each entry used is
 * checked (checks.c) under the CPU's cache lock, so no flush can remove it
 * meanwhile: an access, walk and fill included, is atomic with respect to
 * interrupts and to ops->broadcast, as an instruction is.
 */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>

#include "machine.h"

/* May a user access @a go through permissions @perm?  (Present and USER,
 * and W for a write, X for an instruction fetch.) */
static int allows(uint32_t perm, enum orc_access a)
{
	if ((perm & (B_P | B_U)) != (B_P | B_U))
		return 0;
	if (a == ORC_WRITE)
		return (perm & B_W) != 0;
	if (a == ORC_EXEC)
		return (perm & B_X) != 0;
	return 1;
}

/*
 * A walk found (x, page) not present: GENERIC may cache that (RISC-V
 * without Svvptc), here one time in two.  Returns -2 with the invalid entry
 * in *@out for the caller to fill, else -1: a fault either way.
 */
int negative(struct orc_world *w, struct orc_cpu *c, uint32_t x, uint32_t page, uint64_t ptew,
	     uint64_t *out)
{
	if (!caches_invalid(w) || rng_next(&c->rng) % 2)
		return -1;
	*out = te_make(x, page, 0, 0, pte_ver(ptew));
	count(w, ORC_C_NEGATIVE, 1);
	return -2;
}

/*
 * A page walk of (x, page) by CPU @c, under its cache lock: through the
 * PSC if it has the group, else through the directory (filling the PSC).
 * Hardware sets A (x86, ARM64; GENERIC faults instead) and, for a write,
 * D.  @spec: a speculative walk, which fills only what needs no PTE update.
 * Returns 0 and the entry in *@out, -1 for a fault, or -2 for a fault that
 * leaves an invalid entry (*@out) behind (negative()).
 */
static int walk(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, uint32_t x, uint32_t page,
		enum orc_access a, int spec, uint64_t *out)
{
	uint32_t g = page / w->cfg.group_pages;
	int j = psc_find(w, c, x, g);
	uint64_t dirw;

	count(w, spec ? ORC_C_SPEC_WALKS : ORC_C_WALKS, 1);
	if (j >= 0) {
		uint64_t s = atomic_load(&c->psc[j]);
		uint64_t to = atomic_load(&w->table[dir_table(s)]);

		dirw = psc_dir(s);
		if (own_state(to) == T_FREE || own_gen(to) != dir_gen(s)) {
			/* Reading a freed page as a page table: garbage. */
			violation(w, ORC_V_WALK,
				  "cpu %u (%s) walked as %u page %u through table page %u, which "
				  "was freed",
				  cpu, spec ? "speculative" : "access", x, page, dir_table(s));
			atomic_store(&c->psc[j], 0);
			return -1;
		}
		if (own_state(to) == T_DETACHED)
			return -1; /* a table unhooked for freeing: all cleared */
	} else {
		dirw = atomic_load(&w->as[x].dir[g]);
		if (!dirw)
			return -1;
		psc_fill(w, c, psc_make(x, g, dirw));
		trace(w, (int)cpu, TR_PSC, x, g, dir_table(dirw), 0);
	}
	for (int tries = 0; tries < 16; tries++) {
		_Atomic uint64_t *pte = &w->as[x].pte[page];
		uint64_t old = atomic_load(pte), new = old;
		uint32_t perm = pte_perm(old);

		/* The PTE belongs to the table we walk only while the directory
		 * still points to it. */
		if (atomic_load(&w->as[x].dir[g]) != dirw)
			return -1;
		if (!(perm & B_P))
			return negative(w, c, x, page, old, out);
		if (!(perm & B_A)) {
			if (spec || !hw_ad(w))
				return -1;
			new |= B_A;
		}
		if (!spec && !allows(perm, a))
			return -1;
		/* Svade: a store that finds D clear faults. */
		if (!spec && a == ORC_WRITE && store_needs_d(w) && !(perm & B_D))
			return -1;
		if (!spec && a == ORC_WRITE && hw_ad(w))
			new |= B_D;
		if (new != old && !atomic_compare_exchange_strong(pte, &old, new))
			continue;
		*out = te_make(x, page, pte_pb(new), pte_frame(new), pte_ver(new));
		return 0;
	}
	return -1;
}

/* Hardware setting D for a write through an entry without it: a locked
 * update of the PTE in memory, which fails once the PTE is not present. */
static int hw_set_dirty(struct orc_world *w, uint32_t x, uint32_t page, uint64_t *now)
{
	_Atomic uint64_t *pte = &w->as[x].pte[page];
	uint64_t old = atomic_load(pte);

	for (;;) {
		if (!(pte_perm(old) & B_P))
			return 0;
		*now = old | B_A | B_D;
		if ((pte_perm(old) & (B_A | B_D)) == (B_A | B_D))
			return 1;
		if (atomic_compare_exchange_weak(pte, &old, *now))
			return 1;
	}
}

/* One try of an access, under the cache lock.  0: done, -1: fault. */
static int try_access(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, uint32_t x,
		      uint32_t page, enum orc_access a)
{
	int slot = tlb_find(w, c, x, page);
	uint64_t e;

	if (slot >= 0) {
		uint64_t cur;

		e = atomic_load(&c->tlb[slot]);
		count(w, ORC_C_HITS, 1);
		if (!allows(te_perm(e), a))
			return -1;
		/* Checked as used, before the write below can refresh it. */
		if (use_check(w, cpu, e))
			return 0;
		if (a == ORC_WRITE && store_needs_d(w) && !(te_perm(e) & B_D))
			return -1;
		if (a == ORC_WRITE && hw_ad(w) && !(te_perm(e) & B_D)) {
			if (!hw_set_dirty(w, x, page, &cur))
				return -1;
			/*
			 * The D update walks the PTE in memory.  If that PTE
			 * still maps the entry's frame writably, the entry is
			 * reloaded from it (its D is then the PTE's, set just
			 * now, not one a later CLEAR_DIRTY should have
			 * flushed).  Otherwise the entry is stale: the write
			 * goes through it (the hardware may do that while the
			 * change is in flight), but it is left as it was, old
			 * version and no D, which would otherwise date D back
			 * to that version and make an A/D-only change in
			 * between look like a missed CLEAR_DIRTY.
			 */
			if ((pte_perm(cur) & B_W) && pte_frame(cur) == te_frame(e)) {
				e = te_make(x, page, pte_pb(cur), pte_frame(cur), pte_ver(cur));
				atomic_store(&c->tlb[slot], e);
			}
		}
		if (a == ORC_WRITE)
			write_check(w, cpu, e);
		return 0;
	}
	switch (walk(w, c, cpu, x, page, a, 0, &e)) {
	case 0:
		break;
	case -2:
		tlb_fill(w, c, e);
		return -1;
	default:
		return -1;
	}
	tlb_fill(w, c, e);
	if (!use_check(w, cpu, e) && a == ORC_WRITE)
		write_check(w, cpu, e);
	return 0;
}

/* Resolve a fault of @cpu on (x, page) as a kernel would, under the
 * page-table lock.  Returns ORC_OK when the access may be retried. */
static enum orc_result handle_fault(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t page,
				    enum orc_access a)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct orc_as *as = &w->as[x];
	uint32_t g = page / w->cfg.group_pages;
	uint32_t need = B_P | B_U | (a == ORC_WRITE ? B_W : 0) | (a == ORC_EXEC ? B_X : 0);
	uint32_t evflags = (a == ORC_WRITE ? TLBPOL_EVF_WRITE : 0) |
			   (a == ORC_EXEC ? TLBPOL_EVF_EXEC : 0);
	int tried = 0;
	enum orc_result res = ORC_OK;
	uint64_t old;
	uint32_t vma, perm;
	struct change ch;

	count(w, ORC_C_FAULTS, 1);
	if (!lock_groups(w, cpu, x, g, g)) {
		/* The fault would sleep on the lock and come back retried
		 * (VM_FAULT_RETRY, then FAULT_FLAG_TRIED). */
		orc_poll(w, cpu);
		sched_yield();
		tried = 1;
		if (!lock_groups(w, cpu, x, g, g))
			return ORC_BUSY;
	}
	old = atomic_load(&as->pte[page]);
	perm = pte_perm(old);
	vma = atomic_load(&as->vma[page]);
	if (!(perm & B_P)) {
		if (atomic_load(&as->quar[page]) || (need & ~(vma | B_P)))
			res = ORC_SEGV;
		else
			res = install(w, cpu, x, page,
				      B_A | (vma & (B_W | B_X | B_U)) | (a == ORC_WRITE ? B_D : 0),
				      evflags);
	} else if (allows(perm, a)) {
		/*
		 * The PTE already allows it: a stale stricter entry, a cleared
		 * table page still cached, or (GENERIC) the software accessed
		 * bit.  A retried fault updates nothing.
		 */
		uint32_t set = B_A | (a == ORC_WRITE ? B_D : 0);

		if (tried || rng_next(&c->rng) % 16 == 0) {
			evflags |= TLBPOL_EVF_TRIED;
			set = 0;
		}
		ch.page = page;
		ch.old = ch.new = old;
		if (set && !pte_change(w, x, page, 0, set, 0, 1, &ch)) {
			ch.old = ch.new = atomic_load(&as->pte[page]);
		}
		if (pte_perm(ch.new) & B_P)
			submit(w, cpu, x, TLBPOL_EV_FAULT, evflags, page, 1, &ch, 1, 0);
	} else if (!(need & ~(vma | B_P))) {
		/* The VMA allows it: write-protect or COW fault, exec or user
		 * bit granted back. */
		if (a == ORC_WRITE && !(perm & B_W) && rng_next(&c->rng) % 2) {
			unlock_groups(w, x, g, g);
			return orc_change_frame(w, cpu, x, page, 1) == ORC_OK ? ORC_OK : ORC_BUSY;
		}
		if (pte_change(w, x, page, 0, (need & ~B_P) | B_A | (a == ORC_WRITE ? B_D : 0), 0, 1,
			       &ch))
			submit(w, cpu, x, TLBPOL_EV_FAULT, evflags | (tried ? TLBPOL_EVF_TRIED : 0),
			       page, 1, &ch, 1, 0);
	} else {
		res = ORC_SEGV;
	}
	unlock_groups(w, x, g, g);
	return res;
}

enum orc_result orc_access(struct orc_world *w, uint32_t cpu, uint32_t page, enum orc_access a)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t x;
	enum orc_result r;

	if (c->cur < 0 || c->estate != TLBPOL_CPU_RUNNING || page >= w->cfg.pages)
		return ORC_SKIP;
	x = (uint32_t)c->cur;
	count(w, ORC_C_ACCESSES, 1);
	for (int attempt = 0; attempt < 2; attempt++) {
		int fault;

		cache_lock(c);
		fault = try_access(w, c, cpu, x, page, a);
		if (fault && w->cfg.arch == TLBPOL_ARCH_X86_64) {
			/* A page fault invalidates the faulting address's TLB and
			 * paging-structure-cache entries (SDM 4.10.4.1). */
			int s = tlb_find(w, c, x, page);
			int p = psc_find(w, c, x, page / w->cfg.group_pages);

			if (s >= 0)
				atomic_store(&c->tlb[s], 0);
			if (p >= 0)
				atomic_store(&c->psc[p], 0);
		}
		cache_unlock(c);
		if (!fault)
			return ORC_OK;
		if (attempt)
			return ORC_FAULT;
		r = handle_fault(w, cpu, x, page, a);
		if (r != ORC_OK) {
			count(w, ORC_C_SEGV, 1);
			return r;
		}
	}
	return ORC_FAULT;
}

void orc_spec_walk(struct orc_world *w, uint32_t cpu, uint32_t page)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint64_t e;

	/* A preempted vCPU or an offline CPU executes nothing. */
	if (c->loaded < 0 || c->estate == TLBPOL_CPU_PREEMPTED || c->estate == TLBPOL_CPU_OFFLINE ||
	    page >= w->cfg.pages)
		return;
	cache_lock(c);
	if (walk(w, c, cpu, (uint32_t)c->loaded, page, ORC_READ, 1, &e) != -1)
		tlb_fill(w, c, e);
	cache_unlock(c);
}
