/* SPDX-License-Identifier: MIT */
/*
 * skip.c - whom a request may leave out, and taking back those it may leave
 * out after all.
 *
 * A target left out of a request flushes by itself before it uses what the
 * request covers: an OFFLINE CPU (it holds nothing, and flushes everything
 * when it comes back), a preempted vCPU, a lazy or idle CPU when no page
 * tables were freed, a CPU whose generation already covers the request.
 * The initiator asks when it arms a request (shootdown.c) and again later,
 * of the targets that have not claimed it yet: a CPU may have gone lazy,
 * idle or preempted since, and a request waits for it no longer (its wait,
 * lazy.c's forcing and ageing).  Called by shootdown.c and lazy.c; calls
 * nothing of the core's other files.
 */
#include "internal.h"

/* The targets of @s that have not claimed it yet, into @t.  Returns how many. */
uint32_t tlbpol__unclaimed(const struct tlbpol_engine *eng, const struct request *s,
			  struct tlbpol_cpuset *t)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < eng->words; w++) {
		t->bits[w] = prim_load_acquire(&s->targets[w]);
		n += prim_popcount64(t->bits[w]);
	}
	return n;
}

/*
 * May @x be left out of a request of @shape and catch up by itself?  Called
 * after the request's generations were taken: a CPU leaving a lazy or
 * preempted state stores its new state and then reads the generation, so
 * either we see it awake here or it sees our generation and flushes (the
 * Dekker pattern of Linux's cpu_tlbstate_shared.is_lazy and
 * switch_mm_irqs_off()).  @s: the request, for SKIPQ_GEN only (its
 * generations, which its owner alone may read before arming).
 */
enum skip tlbpol__skippable(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			   uint32_t x, const struct request *s, uint32_t shape, int how)
{
	uint32_t st = prim_load_seqcst(&cpu_of(eng, x)->state);
	int lazy = (shape & REQ_LAZY) != 0, tables = (shape & REQ_TABLES) != 0;
	int ask_hv = eng->ops.vcpu_defer && !(how & SKIPQ_ESTIMATE);
	/*
	 * TLBPOL_CFGF_LOCKLESS_WALKERS: a vCPU descheduled inside a lockless
	 * walk (interrupts off) resumes it with the pointer it read, and its
	 * hypervisor's flush does not end the walk; only the interrupt it
	 * takes when it runs again shows it is out.  So no preempted vCPU is
	 * left out of a request that frees tables.
	 */
#ifdef TLBPOL_PLANTED_NO_WALKER_SYNC
	int defer_ok = 1;
#else
	int defer_ok = !(tables && (eng->flags & TLBPOL_CFGF_LOCKLESS_WALKERS));
#endif

	if (st == TLBPOL_CPU_OFFLINE)
		return SKIP_OFFLINE;
	/*
	 * A global entry survives what every catch-up below relies on: a CR3
	 * write keeps it (SDM 4.10.4.1), and a lazy or idle CPU runs kernel
	 * code through it in the meantime.  Only a hypervisor's promise to
	 * flush everything (ops->vcpu_defer) may leave one out.  Linux
	 * flush_tlb_kernel_range() likewise interrupts every CPU, with no
	 * lazy skip and no tlb_gen.
	 */
	if (shape & REQ_GLOBAL) {
		if ((prm->rules & TLBPOL_RULE_VCPU_DEFER) && !lazy && defer_ok &&
		    ask_hv && eng->ops.vcpu_defer(eng->ops_ctx, x))
			return SKIP_LAZY;
		return SKIP_NO;
	}
	/*
	 * A preempted vCPU executes nothing, not even speculative walks, and
	 * flushes before it runs again: KVM's PV TLB flush skips it even when
	 * page tables were freed (arch/x86/kernel/kvm.c kvm_flush_tlb_multi()).
	 * In a guest only the hypervisor knows, and ops->vcpu_defer asks it
	 * (and makes it promise the flush).  Not for lazy requests: they
	 * interrupt nobody, and the promise costs the vCPU a full flush.
	 */
	if ((prm->rules & TLBPOL_RULE_VCPU_DEFER) && defer_ok &&
	    (st == TLBPOL_CPU_PREEMPTED ||
	     (!lazy && ask_hv && eng->ops.vcpu_defer(eng->ops_ctx, x))))
		return SKIP_LAZY;
	/*
	 * A lazy CPU does not touch user addresses until it switches back, but
	 * its MMU may still walk the loaded page tables speculatively: when
	 * tables were freed it must flush its paging-structure caches now
	 * (Linux flush_tlb_mm_range(): freed_tables disables the lazy skip).
	 */
#ifdef TLBPOL_PLANTED_BUG
	(void)tables;
	if ((prm->rules & TLBPOL_RULE_LAZY_CPUS) && cpu_is_lazy(eng, x))
		return SKIP_LAZY;
#else
	if ((prm->rules & TLBPOL_RULE_LAZY_CPUS) && !tables && cpu_is_lazy(eng, x))
		return SKIP_LAZY;
#endif
	if ((how & SKIPQ_GEN) && (prm->rules & TLBPOL_RULE_GEN_TARGETS)) {
		for (uint32_t k = 0; k < s->nr_flushes; k++)
			if (flushed_gen(eng, x, s->flushes[k].as_index) < s->flushes[k].gen)
				return SKIP_NO;
		return SKIP_GEN;
	}
	return SKIP_NO;
}

void tlbpol__count_skip(struct tlbpol_cpu *c, enum skip why)
{
	if (why == SKIP_LAZY)
		prim_count(&c->cnt.task.lazy_skipped, 1);
	else if (why == SKIP_GEN)
		prim_count(&c->cnt.task.gen_skipped, 1);
}

/*
 * Take back, from @me's own request @s, the targets that have not claimed it
 * and that may now be left to catch up by themselves: a vCPU preempted, a
 * CPU gone idle or lazy since the post (arm() looked once, at the post).
 * They flush before they next run or use the address space
 * (tlbpol_cpu_state(), tlbpol_switch()), as those arm() left out do.  Only
 * the owner takes back: it alone knows the request cannot be completed and
 * armed anew under it.  Returns the targets left unclaimed, in @t.
 */
uint32_t tlbpol__take_back(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			   struct request *s, struct tlbpol_cpuset *t)
{
	uint32_t n = tlbpol__unclaimed(eng, s, t), shape = prim_load_relaxed(&s->shape);

	for_each_target(i, t, eng) {
		uint64_t xbit = 1ULL << (i % 64);
		enum skip why = tlbpol__skippable(eng, prm, (uint32_t)i, s, shape, 0);

		if (why != SKIP_NO && (prim_fetch_and(&s->targets[i / 64], ~xbit) & xbit)) {
			t->bits[i / 64] &= ~xbit;
			n--;
			prim_fetch_sub_release(&s->acks, 1u);
			tlbpol__count_skip(cpu_of(eng, me), why);
		}
	}
	return n;
}
