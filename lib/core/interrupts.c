/* SPDX-License-Identifier: MIT */
/*
 * interrupts.c - whom an initiator interrupts, when, and through whom: a
 * NUMA leader per remote node that pays (tlbpol__choose_leaders()), the
 * targets left to those leaders (drop_led()), the ones interrupted at once
 * and the ones given the IPI delay to find the request by themselves
 * (tlbpol__kick_outside_engine(), tlbpol__kick_unclaimed()).  None of it is
 * a safety matter: the initiator waits for every acknowledgement whoever
 * sends the interrupt.  shootdown.c calls it; it calls receive.c's
 * tlbpol__kick().
 */
#include "internal.h"

/* Leave out of @t the targets a leader of @s interrupts (RULE_NUMA_FANOUT). */
static void drop_led(struct tlbpol_engine *eng, uint32_t me, const struct request *s,
		     struct tlbpol_cpuset *t)
{
	const struct tlbpol_cpu *c = cpu_of(eng, me);

	if (s->fanout) {
		/* Targets in a node with a leader are its to interrupt (unless
		 * that leader went away after publication: then we do). */
		for_each_target(i, t, eng) {
			const uint64_t *nm =
				&eng->node_mask[(size_t)node_of(eng, (uint32_t)i) * eng->words];
			int led = 0;

			if ((s->leaders[i / 64] | c->direct[i / 64]) & (1ULL << (i % 64)))
				continue;
			for (uint32_t w = 0; w < eng->words && !led; w++)
				led = (s->leaders[w] & nm[w]) != 0;
			if (led)
				t->bits[i / 64] &= ~(1ULL << (i % 64));
		}
	}
}

/* Interrupt what is left of @t: directly on our node, through one leader per
 * other node with RULE_NUMA_FANOUT. */
void tlbpol__send_ipis(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		      struct request *s, struct tlbpol_cpuset *t)
{
	drop_led(eng, me, s, t);
	tlbpol__kick(eng, prm, me, t, &cpu_of(eng, me)->cnt.task);
}

/*
 * Does CPU @i run outside the engine, where only an interrupt reaches it?
 * Not if it polls, is inside an engine call, or has waited since its last
 * claim by interrupt: those find a request by themselves within the IPI
 * delay (tlbpol__kick_outside_engine() says why each).  A guess, never a safety
 * matter: every target is waited for either way.
 */
int tlbpol__outside_engine(const struct tlbpol_engine *eng, uint32_t i)
{
	const struct tlbpol_cpu *tc = cpu_of(eng, i);

	return !prim_load_relaxed(&tc->polling) && !prim_load_relaxed(&tc->in_call) &&
	       prim_load_relaxed(&tc->claims_by_irq);
}

/* The targets of @t outside the engine now, into @me's fwd_wait (free until
 * the wait), which it returns. */
static struct tlbpol_cpuset *outside_engine_of(struct tlbpol_engine *eng, uint32_t me,
					       const struct tlbpol_cpuset *t)
{
	struct tlbpol_cpuset *out = &cpu_of(eng, me)->fwd_wait;

	for (uint32_t w = 0; w < eng->words; w++)
		out->bits[w] = 0;
	for_each_target(i, t, eng)
		if (tlbpol__outside_engine(eng, (uint32_t)i))
			out->bits[i / 64] |= 1ULL << (i % 64);
	return out;
}

/*
 * NUMA fan-out: choose one leader among @targets in each remote node where
 * that pays.  The initiator saves (k - 1) cross-node sends for a node with k
 * targets, and the others pay one more hop (the leader's interrupt and its
 * sends); with the cost model that is worth it when (k - 1) remote sends
 * cost more than one interrupt.  Returns 1 if any leader was chosen.
 *
 * Which of a node's k targets leads rotates with the initiator: the one
 * at position @me mod k.  Were it always the first, every initiator's
 * request into that node would be forwarded by the same CPU, and when
 * many CPUs shoot down at once (an all-to-all storm: every CPU of a
 * tlb_flush2-style mm unmapping together) that CPU would make the
 * (k - 1) sends of each of them, one after another, while the other
 * targets waited for it: the fan-out would cost more than the direct
 * sends it replaces.
 *
 * With the IPI delay (@delay turns), k counts only the targets that would
 * be interrupted at once (outside_engine()), and the leader is one of them:
 * the others find the request by themselves within the delay, and sending
 * them nothing is cheaper than any fan-out.  Counted as targets, they made
 * storms of CPUs that all wait in the engine (tlb_flush2's, a guest's vCPUs
 * flushing each other) interrupt each other through their leaders: in
 * tlbpol-sim on 64 CPUs in 4 nodes, dontneed sent 93933 interrupts in 3
 * seeds and vcpu 136191, against 0 for both without the fan-out.
 */
int tlbpol__choose_leaders(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			  struct request *s, const struct tlbpol_cpuset *targets, uint32_t delay)
{
	uint32_t words = eng->words, mynode = node_of(eng, me);
	const struct tlbpol_cpuset *t = targets;
	int any = 0;

	if (!(prm->rules & TLBPOL_RULE_NUMA_FANOUT) || eng->nr_nodes < 2)
		return 0;
	if (delay)
		t = outside_engine_of(eng, me, targets);
	for (uint32_t w = 0; w < words; w++)
		s->leaders[w] = 0;
	for (uint32_t node = 0; node < eng->nr_nodes; node++) {
		const uint64_t *nm = &eng->node_mask[(size_t)node * words];
		uint32_t k = 0, j;

		if (node == mynode)
			continue;
		for (uint32_t w = 0; w < words; w++)
			k += prim_popcount64(t->bits[w] & nm[w]);
		if (!k || (uint64_t)(k - 1) * prm->cost_ipi_remote <= prm->cost_ipi)
			continue;
		j = me % k;
		for (uint32_t w = 0; w < words; w++) {
			uint64_t b = t->bits[w] & nm[w];
			uint32_t nb = prim_popcount64(b);

			if (j >= nb) {
				j -= nb;
				continue;
			}
			while (j--)
				b &= b - 1;
			s->leaders[w] |= b & -b;
			any = 1;
			break;
		}
	}
	return any;
}

/*
 * The IPI delay (RULE_POLLING_CPUS) pays for targets that find the request in
 * their inbox within it by themselves: those waiting for acknowledgements of
 * their own (`polling`), those inside an engine call, which may reach such a
 * wait, and those that waited so since their last claim by interrupt (a
 * thread that shoots down in a loop, as tlb_flush2's do, is back in its wait
 * within the delay).  A target whose last claim came by interrupt and that
 * has not waited since runs something else -- user code that does not unmap,
 * a guest, or nothing at all (a vCPU its hypervisor has not scheduled) --
 * and only an interrupt reaches it: waiting out the
 * delay before sending it only makes this initiator wait longer (tlbpol-sim
 * munmap on 2 CPUs: 8.8% longer than without the rule).  Interrupt those now;
 * @t keeps the rest for tlbpol__kick_unclaimed() at the end of the delay.
 *
 * A wrong guess costs time, never safety: the initiator waits for every
 * acknowledgement either way, and kick() still leaves out a target that
 * polls.  Not with a NUMA fan-out: a leader interrupted at once forwards at
 * once to its whole node, polling or not (in the model, tlb_flush2's 64
 * threads on 4 nodes then fall out of step: 1.15x linux's time instead of
 * 0.87x).
 */
void tlbpol__kick_outside_engine(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				uint32_t me, struct tlbpol_cpuset *t)
{
	struct tlbpol_cpuset *now = outside_engine_of(eng, me, t);
	uint32_t n = 0;

	for (uint32_t w = 0; w < eng->words; w++) {
		t->bits[w] &= ~now->bits[w];
		n += prim_popcount64(now->bits[w]);
	}
	if (n)
		tlbpol__kick(eng, prm, me, now, &cpu_of(eng, me)->cnt.task);
}

/*
 * The end of the IPI delay: interrupt the targets of @t that we would
 * interrupt ourselves (not those a leader does) and that have not claimed
 * @s yet; count the others as served without an interrupt.
 */
void tlbpol__kick_unclaimed(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			   struct request *s, struct tlbpol_cpuset *t)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t before = 0, after = 0;

	drop_led(eng, me, s, t);
	for (uint32_t w = 0; w < eng->words; w++) {
		before += prim_popcount64(t->bits[w]);
		t->bits[w] &= prim_load_acquire(&s->targets[w]);
		after += prim_popcount64(t->bits[w]);
	}
	prim_count(&c->cnt.task.lazy_skipped, before - after);
	tlbpol__kick(eng, prm, me, t, &c->cnt.task);
}
