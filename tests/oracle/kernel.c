/* SPDX-License-Identifier: MIT */
/*
 * kernel.c - the kernel region: kernel_pages global pages shared by every
 * address space, as a kernel's own mappings are.  Every CPU that executes
 * -- running, lazy, idle, between states -- reads and writes them and
 * walks them speculatively; only a preempted or offline one is excused.
 * The kernel maps, unmaps (LAZY_OK as vunmap's lazy purge) and protects
 * them through whichever user address space it is in, so that a global
 * address is reused through another address space than the one that
 * unmapped it.  The region has no tables to free and its PTEs have A and D
 * preset; it has no spurious-fault path either, so an invalid entry cached
 * (GENERIC) older than a completed install is a violation here, where a
 * user access would recover.
 */
#define _POSIX_C_SOURCE 200809L

#include "machine.h"

/* May @c execute now?  A preempted vCPU (told or not) and an offline CPU
 * do not. */
static int executing(struct orc_cpu *c)
{
	return c->estate != TLBPOL_CPU_PREEMPTED && c->estate != TLBPOL_CPU_OFFLINE &&
	       !atomic_load(&c->hv);
}

/* A walk of kernel page @kp: the kernel region has no tables to free, and
 * its PTEs have A and D preset (nothing for the walk to update). */
static int kwalk(struct orc_world *w, struct orc_cpu *c, uint32_t kp, uint64_t *out)
{
	uint64_t ptew = atomic_load(&w->as[ORC_KAS].pte[kp]);

	if (!(pte_perm(ptew) & B_P))
		return negative(w, c, ORC_KAS, kp, ptew, out);
	*out = te_make(ORC_KAS, kp, pte_pb(ptew), pte_frame(ptew), pte_ver(ptew));
	return 0;
}

void orc_kspec_walk(struct orc_world *w, uint32_t cpu, uint32_t kp)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint64_t e;

	if (kp >= w->as[ORC_KAS].pages || !executing(c))
		return;
	cache_lock(c);
	count(w, ORC_C_SPEC_WALKS, 1);
	if (kwalk(w, c, kp, &e) != -1)
		tlb_fill(w, c, e);
	cache_unlock(c);
}

/*
 * A kernel access: the kernel touches only what it has mapped, so only a
 * page whose latest completed change left it present (and writable, for a
 * write).  Through the TLB, or a walk; a fault means the page is being
 * unmapped right now (nothing to check), unless it comes from an invalid
 * entry older than the page's completed install: the kernel has no
 * spurious-fault path, so that is a violation.
 */
enum orc_result orc_kaccess(struct orc_world *w, uint32_t cpu, uint32_t kp, enum orc_access a)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct orc_as *k = &w->as[ORC_KAS];
	uint64_t cvw, e;
	int slot;
	enum orc_result res = ORC_OK;

	if (kp >= k->pages || !executing(c))
		return ORC_SKIP;
	cvw = atomic_load(&k->cv[kp]);
	if (!(pte_perm(cvw) & B_P) || (a == ORC_WRITE && !(pte_perm(cvw) & B_W)))
		return ORC_SKIP;
	count(w, ORC_C_KACCESSES, 1);
	cache_lock(c);
	slot = tlb_find(w, c, ORC_KAS, kp);
	if (slot >= 0) {
		e = atomic_load(&c->tlb[slot]);
		count(w, ORC_C_HITS, 1);
		if (te_neg(e)) {
			cvw = atomic_load(&k->cv[kp]);
			if (neg_harmful(ORC_KAS, e, cvw))
				violation(w, ORC_V_USE,
					  "cpu %u: kernel access to page %u faulted on an invalid "
					  "entry (version %u) after its install (version %u) completed",
					  cpu, kp, te_ver(e), pte_ver(cvw));
			atomic_store(&c->tlb[slot], 0); /* the oops, recovered */
			res = ORC_FAULT;
		} else if (a == ORC_WRITE && !(te_perm(e) & B_W)) {
			/* A stricter entry than the PTE (an upgrade flushed only
			 * locally): the kernel's spurious-fault fixup drops it. */
			atomic_store(&c->tlb[slot], 0);
			res = ORC_FAULT;
		} else if (!use_check(w, cpu, e) && a == ORC_WRITE) {
			write_check(w, cpu, e);
		}
	} else {
		int r = kwalk(w, c, kp, &e);

		count(w, ORC_C_WALKS, 1);
		if (r != -1)
			tlb_fill(w, c, e);
		if (r)
			res = ORC_FAULT;
		else if (a == ORC_WRITE && !(te_perm(e) & B_W))
			res = ORC_FAULT;
		else if (!use_check(w, cpu, e) && a == ORC_WRITE)
			write_check(w, cpu, e);
	}
	cache_unlock(c);
	return res;
}

/* Clip [kp, kp + n) to the kernel region and ORC_MAX_RANGE; 0 if empty. */
static int kclip(const struct orc_world *w, uint32_t *kp, uint32_t *n)
{
	uint32_t pages = w->as[ORC_KAS].pages;

	if (*kp >= pages || !*n)
		return 0;
	if (*n > ORC_MAX_RANGE)
		*n = ORC_MAX_RANGE;
	if (*kp + *n > pages)
		*n = pages - *kp;
	return 1;
}

enum orc_result orc_kmap(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kp, uint32_t n)
{
	struct orc_as *k = &w->as[ORC_KAS];
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0, first = kp;
	enum orc_result res = ORC_OK;

	if (via >= w->cfg.nr_as || !kclip(w, &kp, &n))
		return ORC_SKIP;
	first = kp;
	if (!lock_groups(w, cpu, ORC_KAS, kp, kp + n - 1))
		return ORC_BUSY;
	for (uint32_t p = kp; p < kp + n; p++) {
		uint32_t f;

		if ((pte_perm(atomic_load(&k->pte[p])) & B_P) || atomic_load(&k->quar[p]))
			continue;
		if (!(f = frame_alloc(w, ORC_KAS, p))) {
			res = ORC_NOMEM;
			break;
		}
		if (install_prepare(w, ORC_KAS, p, KPERM, f, &ch[nch]))
			nch++;
		else
			frame_unalloc(w, f);
	}
	if (nch)
		install_run(w, cpu, ORC_KAS, via, 0, first, n, ch, nch);
	unlock_groups(w, ORC_KAS, kp, kp + n - 1);
	return nch ? ORC_OK : res == ORC_OK ? ORC_SKIP : res;
}

enum orc_result orc_kunmap(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kp,
			   uint32_t n, int lazy)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch;
	struct orc_free *fr;

	if (via >= w->cfg.nr_as || !kclip(w, &kp, &n))
		return ORC_SKIP;
	if (!lock_groups(w, cpu, ORC_KAS, kp, kp + n - 1))
		return ORC_BUSY;
	nch = clear_to_free(w, cpu, ORC_KAS, kp, n, ch, &fr);
	if (!nch) {
		unlock_groups(w, ORC_KAS, kp, kp + n - 1);
		return ORC_SKIP;
	}
	/* vunmap: the contents die with it; lazily (vmap's lazy purge) the
	 * addresses are not reused before the free. */
	submit_via(w, cpu, ORC_KAS, via, TLBPOL_EV_UNMAP,
		   TLBPOL_EVF_PRIVATE | (lazy ? TLBPOL_EVF_LAZY_OK : 0), kp, n, ch, nch, 0,
		   SUB_NORMAL);
	if (lazy)
		hold_back(w, ORC_KAS, kp, n, fr);
	unlock_groups(w, ORC_KAS, kp, kp + n - 1);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_kprotect(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kp,
			     uint32_t n, int writable)
{
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	uint32_t nch = 0;

	if (via >= w->cfg.nr_as || !kclip(w, &kp, &n))
		return ORC_SKIP;
	if (!lock_groups(w, cpu, ORC_KAS, kp, kp + n - 1))
		return ORC_BUSY;
	for (uint32_t p = kp; p < kp + n; p++)
		if (pte_change(w, ORC_KAS, p, writable ? 0 : B_W, writable ? B_W : 0, 0, 1, &ch[nch]))
			nch++;
	submit_runs(w, cpu, ORC_KAS, via, TLBPOL_EV_PROTECT, 0, ch, nch);
	unlock_groups(w, ORC_KAS, kp, kp + n - 1);
	return nch ? ORC_OK : ORC_SKIP;
}
