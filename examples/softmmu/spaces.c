/* SPDX-License-Identifier: MIT */
/*
 * spaces.c - several guest address spaces on the vCPUs (--as): the guest
 * scheduler's choice of the next one, and the switch to it.  It is a file
 * of its own because this is what a host adds to the vCPU side (guest.c)
 * to run processes: the CR3 / TTBR write of a context switch.  Calls
 * mmu.c, which empties the TLB.
 */

#include "softmmu.h"

/* Another address space now and then: any other, at random. */
uint32_t vcpu_next_space(struct cpu *c)
{
	uint32_t n = c->w->nas, k = (uint32_t)(rnd(&c->rng) % (n - 1));

	return k >= c->space ? k + 1 : k;
}

/*
 * The switch: interrupts off, in a vCPU's world, from the engine's call to
 * the CR3 write; nothing here takes a kick.  Without tags the CR3 write
 * drops every entry.  It is dropped here before the engine's call, from
 * which the old address space's flushes may pass this vCPU by and its
 * frames be handed out again: the reuse check must not find this vCPU
 * caching one then (as vcpu_halt() sets the halted bit first), and no
 * access comes in between.
 */
void vcpu_switch(struct cpu *c, uint32_t next)
{
	struct world *w = c->w;

	if (next == c->space)
		return;
	tlb_flush_all(c);
	chk(tlbpol_switch(w->eng, c->id, w->as[next], NULL), "tlbpol_switch");
	c->n[C_SWITCHES] += c->space != NO_SPACE;
	c->space = next;
}
