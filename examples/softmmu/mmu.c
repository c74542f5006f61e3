/* SPDX-License-Identifier: MIT */
/*
 * mmu.c - the hardware of each vCPU, as an emulator provides it: the soft
 * TLB and paging-structure cache, the page walk with its accessed and dirty
 * assists, and the interrupt line (a kick word and a futex), together with
 * the three engine callbacks that act on them (flush_local, send_ipi,
 * relax).  It is a file of its own because this is what libtlbpol flushes
 * and interrupts: the part an emulator already has, and the only code that
 * fills or empties a TLB.  Of softmmu's files it calls only the checker, to report a
 * walk or a fill that reaches freed memory.
 */

/*
 * The MMU behaves as x86's, and the engine is told so (TLBPOL_ARCH_X86_64):
 * a walk sets A, the first write through an entry without D sets D, each
 * with an atomic update of the PTE that fails once the PTE changed (so a
 * clean entry can no longer write once its PTE is gone); a fault drops the
 * faulting address's TLB and PSC entries (SDM 4.10.4.1), which the profile's
 * no-flush rules for upgrades and spurious faults rely on.
 *
 * Interrupts.  ops->send_ipi sets the target's kick word and wakes it with a
 * futex if it sleeps.  A running vCPU looks at its kick word between guest
 * "instruction blocks" of BLOCK_ACCESSES accesses, as TCG looks at
 * cpu->exit_request between translation blocks, and calls
 * tlbpol_handle_ipi(); a vCPU waiting in the engine does the same from
 * ops->relax.
 */

#include "softmmu.h"

#include <inttypes.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* The interrupt line                                                       */
/* ------------------------------------------------------------------------ */

static void futex_wait(_Atomic int *word, int val, long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic int *word)
{
	syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Sleep until kicked or @ns passed.  The sender sets kick and then reads
 * sleeping; we set sleeping and then (in the kernel, atomically with going
 * to sleep) read kick: either it sees us asleep and wakes us, or we see the
 * kick and do not sleep.
 */
void sleep_on_kick(struct cpu *c, long ns)
{
	atomic_store(&c->sleeping, 1);
	if (!atomic_load(&c->kick))
		futex_wait(&c->kick, 0, ns);
	atomic_store(&c->sleeping, 0);
}

/* Take a pending interrupt: what a CPU does between instructions. */
void poll_kick(struct cpu *c)
{
	if (atomic_load_explicit(&c->kick, memory_order_relaxed) && atomic_exchange(&c->kick, 0)) {
		c->n[C_IRQS]++;
		chk(tlbpol_handle_ipi(c->w->eng, c->id), "tlbpol_handle_ipi");
	}
}

/* The run is over (all_done is set): wake every vCPU to see it. */
void wake_all(struct world *w)
{
	for (uint32_t i = 0; i < w->nv; i++) {
		atomic_store(&w->cpu[i].kick, 1);
		futex_wake(&w->cpu[i].kick);
	}
}

/* ------------------------------------------------------------------------ */
/* Engine callbacks                                                         */
/* ------------------------------------------------------------------------ */

void tlb_hold(struct world *w, uint32_t frame, uint32_t vcpu)
{
	atomic_fetch_or_explicit(&w->holders[frame][vcpu / 64], 1ULL << (vcpu % 64),
				 memory_order_seq_cst);
}

void tlb_unhold(struct world *w, uint32_t frame, uint32_t vcpu)
{
	atomic_fetch_and_explicit(&w->holders[frame][vcpu / 64], ~(1ULL << (vcpu % 64)),
				  memory_order_release);
}

void vcpu_set_halted(struct world *w, uint32_t vcpu, int halted)
{
	if (halted)
		atomic_fetch_or(&w->halted[vcpu / 64], 1ULL << (vcpu % 64));
	else
		atomic_fetch_and(&w->halted[vcpu / 64], ~(1ULL << (vcpu % 64)));
}

/* Drop entry @e of @c (it no longer translates).  Only an entry under the
 * loaded tag is announced (held): one under another tag cannot be used
 * before a switch back, which flushes it if it must go. */
static void tlb_drop(struct cpu *c, struct tlb_entry *e)
{
	if (e->tag && e->held)
		tlb_unhold(c->w, e->frame, c->id);
	e->tag = 0;
	e->held = 0;
}

void tlb_flush_all(struct cpu *c)
{
	for (uint32_t i = 0; i < TLB_SIZE; i++)
		tlb_drop(c, &c->tlb[i]);
	memset(c->psc, 0, sizeof(c->psc));
}

void tlb_flush_tag(struct cpu *c, uint32_t htag)
{
	for (uint32_t i = 0; i < TLB_SIZE; i++)
		if ((uint32_t)c->tlb[i].htag == htag)
			tlb_drop(c, &c->tlb[i]);
	for (uint32_t g = 0; g < NGROUPS; g++)
		if ((uint32_t)c->psc_tag[g] == htag)
			c->psc[g] = 0;
}

/*
 * A switch to another address space: from the engine's switch on, flushes
 * of the one left may pass this vCPU by and its frames be handed out again,
 * while its entries stay under their tag (--tags), unusable until a switch
 * back flushes what must go.  So the reuse check must not count them from
 * before that call (as vcpu_halt() sets the halted bit first), and counts
 * again those under the tag loaded once its flush is done.
 */
void tlb_unhold_all(struct cpu *c)
{
	for (uint32_t i = 0; i < TLB_SIZE; i++) {
		struct tlb_entry *e = &c->tlb[i];

		if (e->tag && e->held)
			tlb_unhold(c->w, e->frame, c->id);
		e->held = 0;
	}
}

void tlb_hold_tag(struct cpu *c, uint32_t htag)
{
	for (uint32_t i = 0; i < TLB_SIZE; i++) {
		struct tlb_entry *e = &c->tlb[i];

		if (e->tag && (uint32_t)e->htag == htag && !e->held) {
			tlb_hold(c->w, e->frame, c->id);
			e->held = 1;
		}
	}
}

/* Does flush @f reach what was filled under hardware tag @htag?  Without
 * --tags there is one tag, 0 (a switch's CR3 write drops every entry), and
 * every flush reaches it; with them, the tag @f names on this vCPU (the
 * engine's tlbpol_tag_of()), or any tag for a global flush (none here: no
 * PTE is global). */
static int reaches(const struct world *w, const struct tlbpol_flush *f, uint32_t htag)
{
	return !w->tags || (f->flags & TLBPOL_FLUSHF_GLOBAL) || f->as_tag == htag;
}

/* Drop vpn @p's entry that @f reaches. */
static void flush_page(struct cpu *c, const struct tlbpol_flush *f, uint32_t p)
{
	struct world *w = c->w;
	struct tlb_entry *e;

	if (w->tags && (f->flags & TLBPOL_FLUSHF_GLOBAL)) {
		/* Under any tag: every slot the page may be in. */
		for (uint32_t i = 0; i < TLB_SIZE; i++)
			if (c->tlb[i].tag == p + 1)
				tlb_drop(c, &c->tlb[i]);
		return;
	}
	e = tlb_slot(c, p, w->tags ? (uint32_t)f->as_tag : 0);
	if (e->tag == p + 1 && reaches(w, f, e->htag))
		tlb_drop(c, e);
}

static void cb_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct world *w = ctx;
	struct cpu *c = &w->cpu[cpu];

	c->n[C_FLUSHES]++;
	if (cpu == w->mgr)
		return; /* the memory manager runs no guest code: it has no TLB */
	if (w->bug == BUG_LOST_FLUSH && cpu == 0 && f->kind == TLBPOL_FLUSH_PAGES)
		return; /* planted: vCPU 0's invlpg does nothing */
	if (f->kind == TLBPOL_FLUSH_ALL || (f->kind == TLBPOL_FLUSH_AS && !w->tags)) {
		tlb_flush_all(c); /* a CR3 write: paging-structure caches too */
		return;
	}
	if (f->kind == TLBPOL_FLUSH_AS) {
		/* INVPCID single-context, TLBI ASIDE1: the tag's entries and
		 * walk caches, whichever tag is loaded. */
		tlb_flush_tag(c, (uint32_t)f->as_tag);
		return;
	}
	for (uint32_t r = 0; r < f->nr_ranges; r++) {
		uint64_t first = (f->ranges[r].va - VA_BASE) >> PAGE_SHIFT;
		uint64_t n = f->ranges[r].nr_pages << (f->ranges[r].page_shift - PAGE_SHIFT);

		for (uint64_t p = first; p < first + n && p < NPAGES; p++)
			flush_page(c, f, (uint32_t)p);
		/* Table pages under the range were freed: drop the PSC entries
		 * that point to them. */
		if (f->flags & TLBPOL_FLUSHF_TABLES)
			for (uint64_t g = first >> GROUP_SHIFT;
			     g <= (first + n - 1) >> GROUP_SHIFT && g < NGROUPS; g++)
				if (reaches(w, f, c->psc_tag[g]))
					c->psc[g] = 0;
	}
}

static void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	struct world *w = ctx;
	struct cpu *me = &w->cpu[from];

	for (int t = tlbpol_cpuset_next(targets, -1); t >= 0; t = tlbpol_cpuset_next(targets, t)) {
		struct cpu *x = &w->cpu[t];

		me->n[C_KICKS]++;
		if (!atomic_exchange(&x->kick, 1) && atomic_load(&x->sleeping)) {
			futex_wake(&x->kick);
			me->n[C_WAKEUPS]++;
		}
	}
}

/* Waiting for other CPUs: take our own interrupts (so that two CPUs
 * shooting each other down both finish) and let the targets run. */
static void cb_relax(void *ctx, uint32_t cpu)
{
	struct world *w = ctx;

	poll_kick(&w->cpu[cpu]);
	sched_yield();
}

const struct tlbpol_ops softmmu_ops = {
	.size = sizeof(softmmu_ops),
	.flush_local = cb_flush_local,
	.send_ipi = cb_send_ipi,
	.relax = cb_relax,
};

/* ------------------------------------------------------------------------ */
/* The vCPU's MMU                                                           */
/* ------------------------------------------------------------------------ */

/*
 * The hardware walk to @vpn's PTE: the directory entry from the PSC, else
 * from the directory (then cached).  Returns 0 if there is no table page;
 * reports a walk through a freed table page (its identity is not the one
 * the PSC entry was filled with, before or after reading the PTE).
 */
int mmu_walk(struct cpu *c, uint32_t vpn, _Atomic uint64_t **slotp, uint64_t *ptep, int spec)
{
	struct world *w = c->w;
	uint32_t g = vpn >> GROUP_SHIFT, gg = c->space * NGROUPS + g;
	uint64_t d = c->psc[g], id1, id2, p;
	struct table *t;

	if (!d || (uint32_t)c->psc_tag[g] != c->htag) {
		d = atomic_load(&w->dir[gg]);
		if (!d)
			return 0;
		c->psc[g] = d;
		c->psc_tag[g] = (uint16_t)c->htag;
	}
	t = &w->tables[dir_table(d)];
	id1 = atomic_load(&t->ident);
	p = atomic_load(&t->pte[vpn & (GROUP_PAGES - 1)]);
	id2 = atomic_load(&t->ident);
	if (id1 != dir_ident(d) || id2 != dir_ident(d) || p == POISON) {
		stale(w, S_FREED_TABLE,
		      "vCPU %u (%s) walked vpn %#x through its paging-structure cache to "
		      "table page %u (group %u, generation %" PRIu64 "), which was freed: "
		      "it now reads %s",
		      c->id, spec ? "halted, speculative walk" : c->halted ? "halted" : "running",
		      vpn, dir_table(d), g, dir_ident(d) >> 16,
		      id2 == POISON || p == POISON ? "poison" : "as another table page");
		c->psc[g] = 0;
		return 0;
	}
	if ((dir_ident(d) & 0xffff) != gg) {
		/* A live table page of another address space, cached under the
		 * tag now loaded: its owner filled it, and the tag came to this
		 * one without its flush. */
		stale(w, S_OTHER_AS,
		      "vCPU %u running address space %u under tag %u walked vpn %#x through a "
		      "paging-structure entry of address space %u",
		      c->id, c->space, c->htag, vpn, (uint32_t)(dir_ident(d) & 0xffff) / NGROUPS);
		c->psc[g] = 0;
		return 0;
	}
	*slotp = &t->pte[vpn & (GROUP_PAGES - 1)];
	*ptep = p;
	return 1;
}

/* Fill @e for @vpn from the page table; 0 if the walk faults. */
int tlb_fill(struct cpu *c, uint32_t vpn, struct tlb_entry *e)
{
	struct world *w = c->w;
	uint32_t pg = pg_of(c->space, vpn);
	_Atomic uint64_t *slot;
	uint64_t p, id;

	c->n[C_WALKS]++;
	for (;;) {
		if (!mmu_walk(c, vpn, &slot, &p, 0) || !(p & PTE_P))
			return 0;
		if (p & PTE_A)
			break;
		/* The MMU sets A with a locked update that fails if the PTE
		 * changed meanwhile; then it walks again. */
		if (atomic_compare_exchange_strong(slot, &p, p | PTE_A)) {
			p |= PTE_A;
			break;
		}
	}
	id = atomic_load_explicit(&w->frames[pte_frame(p)].w[0], memory_order_relaxed);
	if (id == POISON || (uint32_t)id != pg) {
		/* The PTE is current and its frame is not this page's: the
		 * frame went back to the pool while still mapped. */
		stale(w, S_REUSED_FRAME, "vCPU %u walked vpn %#x to frame %u, which is %s", c->id,
		      vpn, pte_frame(p), id == POISON ? "free (poisoned)" : "another page's");
		return 0;
	}
	/* The entry it replaces (another page's, same slot) goes; the new
	 * one is announced before it is usable. */
	tlb_drop(c, e);
	tlb_hold(w, pte_frame(p), c->id);
	e->tag = vpn + 1;
	e->frame = pte_frame(p);
	e->perms = pte_perms(p);
	e->ver = pte_ver(p);
	e->ident = id;
	e->htag = (uint16_t)c->htag;
	e->owner = (uint16_t)c->space;
	e->held = 1;
	return 1;
}

/*
 * The first write through an entry without D: the MMU sets D in the PTE with
 * a locked update, which fails once the PTE changed (x86 SDM 4.8; the reason
 * a clean page can be reclaimed with its flush deferred).  0: it failed, and
 * the entry is dropped.
 */
int dirty_assist(struct cpu *c, struct tlb_entry *e, uint32_t vpn)
{
	_Atomic uint64_t *slot;
	uint64_t p;

	if (!mmu_walk(c, vpn, &slot, &p, 0))
		goto drop;
	for (;;) {
		if ((p & (PTE_P | PTE_W)) != (PTE_P | PTE_W) || pte_frame(p) != e->frame ||
		    pte_ver(p) != e->ver)
			goto drop;
		if (atomic_compare_exchange_weak(slot, &p, p | PTE_A | PTE_D)) {
			e->perms |= PTE_A | PTE_D;
			return 1;
		}
	}
drop:
	tlb_drop(c, e);
	return 0;
}

/* A fault at @vpn drops the TLB and paging-structure entries used for the
 * faulting address (x86 SDM 4.10.4.1), which the profile's no-flush rules
 * for upgrades and spurious faults rely on. */
void mmu_fault(struct cpu *c, uint32_t vpn)
{
	struct tlb_entry *e = tlb_slot(c, vpn, c->htag);

	if (tlb_hit(e, vpn, c->htag))
		tlb_drop(c, e);
	c->psc[vpn >> GROUP_SHIFT] = 0;
}
