/* SPDX-License-Identifier: MIT */
/*
 * spaces.c - several guest address spaces on the vCPUs (--as), and the
 * hardware tags that keep their entries apart in a TLB (--tags): the
 * engine's tag allocator, built for each run, and the guest scheduler's
 * switch from one address space to another, with the flush the switch's
 * tag asks for made on the soft TLB.  It is a file of its own because this
 * is what a host adds to the vCPU side (guest.c) to run processes under
 * tags: the CR3 / TTBR write of a context switch.  Calls mmu.c, which
 * empties the TLB.
 */

/*
 * Which hardware each allocator models.  percpu:SLOTS is x86's PCIDs as
 * Linux uses them: each CPU keeps SLOTS tags of its own (Linux 6,
 * TLB_NR_DYN_ASIDS), each remembering the address space it last served,
 * taken round-robin when none does, the slot flushed as it changes hands
 * (choose_new_asid(): CR3 loaded without the no-flush bit).  global:BITS is
 * arm64's ASIDs (arch/arm64/mm/context.c): one tag per address space on
 * every CPU from a pool of 2^BITS - 1 (tag 0 is the host's, as Linux keeps
 * ASID 0), and when the pool runs out a rollover: a new generation, every
 * CPU flushing all its entries before it loads a tag of it, the tags CPUs
 * run at that moment kept by their address spaces.  Without --tags a
 * switch to another address space flushes everything (a CR3 write without
 * PCID).
 *
 * Tag 1 is the first handed out (first_tag), and the widths are the
 * hardware's: 12 bits for PCIDs; BITS for ASIDs, small on purpose so that
 * a run rolls over often.
 */

#include "softmmu.h"

#define PCID_BITS 12

const char *tags_str(const struct world *w, char *buf)
{
	if (w->tags_kind == TAGS_OFF)
		snprintf(buf, 16, "off");
	else
		snprintf(buf, 16, "%s:%u", w->tags_kind == TLBPOL_TAGS_PERCPU ? "percpu" : "global",
			 w->tags_param);
	return buf;
}

void tags_setup(struct world *w, struct tlbpol_config *cfg)
{
	struct tlbpol_tags_config t = { sizeof(t), 0, 0, 0, 0, 0, 0, 0 };
	size_t len;
	char buf[16];

	cfg->tags = w->tags = NULL;
	if (w->tags_kind == TAGS_OFF)
		return;
	t.kind = (uint32_t)w->tags_kind;
	t.nr_cpus = cfg->nr_cpus; /* the manager's CPU too: it loads none */
	t.first_tag = 1;
	if (w->tags_kind == TLBPOL_TAGS_PERCPU) {
		t.tag_bits = PCID_BITS;
		t.nr_slots = w->tags_param;
	} else {
		t.tag_bits = w->tags_param;
	}
	len = tlbpol_tags_size(&t);
	if (!len)
		die("--tags %s: refused by tlbpol_tags_size() (a global pool of 2^BITS - 1 tags "
		    "must hold more than the %u CPUs, vCPUs and manager)",
		    tags_str(w, buf), cfg->nr_cpus);
	w->tags_mem = aligned_alloc(64, (len + 63) & ~(size_t)63);
	if (!w->tags_mem)
		die("out of memory");
	chk(tlbpol_tags_init(&w->tags, w->tags_mem, len, &t), "tlbpol_tags_init");
	cfg->tags = w->tags;
}

/*
 * Another address space now and then: any other, at random, so that with
 * more address spaces than tags a vCPU comes back to some while its slot
 * still holds them (no flush) and to others whose slot went (flushed).
 */
uint32_t vcpu_next_space(struct cpu *c)
{
	uint32_t n = c->w->nas, k = (uint32_t)(rnd(&c->rng) % (n - 1));

	return k >= c->space ? k + 1 : k;
}

/*
 * The switch: interrupts off, in a vCPU's world, from the engine's call to
 * the CR3 write; nothing here takes a kick.  The flush is the one the
 * engine's answer names, made before the first access under the tag: the
 * tag's entries (a slot taken from another address space, or flushes this
 * vCPU skipped while away from @next), or every entry (a rollover, or no
 * tags: the CR3 write drops them all).  --bug tag-no-flush ignores it: the
 * previous owner's entries, or stale ones, then serve @next.
 */
void vcpu_switch(struct cpu *c, uint32_t next)
{
	struct world *w = c->w;
	struct tlbpol_tag_use use = { 0, TLBPOL_TAG_FLUSH_ALL };

	if (next == c->space)
		return;
	/* From the engine's call on, the old address space's flushes may
	 * pass this vCPU by: its entries are no longer announced (mmu.c). */
	tlb_unhold_all(c);
	if (w->tags)
		chk(tlbpol_switch_tag(w->eng, c->id, w->as[next], &use), "tlbpol_switch_tag");
	else
		chk(tlbpol_switch(w->eng, c->id, w->as[next], NULL), "tlbpol_switch");
	c->n[C_SWITCH_FLUSHES] += c->space != NO_SPACE && use.flush != TLBPOL_TAG_FLUSH_NONE;
	if (w->bug == BUG_TAG_NO_FLUSH)
		use.flush = TLBPOL_TAG_FLUSH_NONE; /* planted (no tags: a CR3 write that keeps all) */
	if (use.flush == TLBPOL_TAG_FLUSH_ALL)
		tlb_flush_all(c);
	else if (use.flush == TLBPOL_TAG_FLUSH_TAG)
		tlb_flush_tag(c, use.tag);
	c->n[C_SWITCHES] += c->space != NO_SPACE;
	c->space = next;
	c->htag = w->tags ? use.tag : 0;
	tlb_hold_tag(c, c->htag);
}
