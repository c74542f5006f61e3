/* SPDX-License-Identifier: MIT */
/*
 * pcid.c - PCIDs and the engine's tag allocators: CR4.PCIDE on every CPU
 * where the CPU has PCID and INVPCID, the allocator each rule mask's engine
 * gets (cfg->tags, from tags=), and the address-space switch that loads
 * CR3 with the tag and the flush tlbpol_switch_tag() gives.  Called by
 * main.c (boot, flush_local), work.c and the workloads.
 *
 * Where the CPU has no PCID (QEMU's TCG: target/i386/cpu.c lists
 * CPUID_EXT_PCID and CPUID_7_0_EBX_INVPCID as missing from what TCG
 * implements, and target/i386/helper.c cpu_x86_update_cr3() calls
 * tlb_flush() on every CR3 write) the allocators still choose the tags
 * and the engine still reasons with them, but the hardware holds one
 * context: every CR3 write flushes every non-global entry (SDM vol. 3A
 * 4.10.4.1), so a switch to other tables flushes whatever the allocator
 * asked, and a "no flush" load of the same tables is no CR3 write at all.
 */
#include "work.h"

uint32_t pcid_on;
uint32_t param_pcid = 1;
uint64_t cur_cr3[UK_MAX_CPUS];
struct tlbpol_tags *volatile g_tags;
struct tlbpol_tags_stats tag_stats[UK_MAX_MASKS];

/* tags=: the allocator of every engine (params.c reads it). */
uint32_t p_tags_kind = UK_TAGS_PERCPU; /* scarce by default: 2 slots, NR_TAG_AS + 1 spaces */
uint32_t p_tags_n = 2;                 /* slots (percpu) or tag bits (global) */

extern uint64_t pml4[512];

uint64_t kernel_cr3(void)
{
	return (uint64_t)(uintptr_t)pml4;
}

/*
 * CPUID.01H:ECX.PCID[bit 17] and CPUID.(EAX=07H,ECX=0):EBX.INVPCID[bit 10]
 * (SDM vol. 2A, CPUID).  Both or nothing: flushing a PCID that is not the
 * current one needs INVPCID (a CR3 write or INVLPG reaches only the current
 * PCID, SDM vol. 3A 4.10.4.1), and without it this kernel keeps PCID off.
 * CR4.PCIDE may go from 0 to 1 only in IA-32e mode with CR3[11:0] = 0
 * (SDM vol. 3A 4.10.1; #GP otherwise): the boot tables are page-aligned
 * and PCID 0 is the kernel's, so that holds on every CPU here.
 */
void pcid_init(uint32_t cpu)
{
	if (cpu == 0) {
		uint32_t a, b, c, d, max, pcid, inv = 0;

		cpuid(0, &max, &b, &c, &d);
		cpuid(1, &a, &b, &c, &d);
		pcid = (c >> 17) & 1;
		if (max >= 7) {
			cpuid(7, &a, &b, &c, &d);
			inv = (b >> 10) & 1;
		}
		pcid_on = pcid && inv && param_pcid;
		kprintf("PCID: CPUID PCID %u, INVPCID %u; CR4.PCIDE %s\n", pcid, inv,
			pcid_on ? "on: CR3 loads carry the tag, bit 63 = no flush" :
			!param_pcid ? "off (pcid=0)" :
				      "off: no PCID here, every CR3 write flushes the whole TLB "
				      "(tags are identities only, a tag's flush can be no less)");
	}
	if (pcid_on) {
		if (CR3_PCID(read_cr3()))
			panic("CPU %u: CR3[11:0] not 0 before CR4.PCIDE", cpu);
		write_cr4(read_cr4() | CR4_PCIDE);
	}
	cur_cr3[cpu] = read_cr3();
}

/*
 * The allocator for rule mask slot @slot, in memory of its own: a fresh
 * one per engine, so the first load of every tag asks for its flush
 * (whatever the previous engine left under it).  NULL with tags=off.
 */
static _Alignas(64) uint8_t tags_mem[UK_MAX_MASKS][16384];

static void tags_config(struct tlbpol_tags_config *tc)
{
	memset(tc, 0, sizeof(*tc));
	tc->size = sizeof(*tc);
	tc->kind = p_tags_kind == UK_TAGS_GLOBAL ? TLBPOL_TAGS_GLOBAL : TLBPOL_TAGS_PERCPU;
	tc->nr_cpus = nr_cpus;
	/* PCID 0 stays the kernel's (its own tables, and CR4.PCIDE off). */
	tc->first_tag = 1;
	tc->tag_bits = p_tags_kind == UK_TAGS_GLOBAL ? p_tags_n : 12;
	tc->nr_slots = p_tags_kind == UK_TAGS_GLOBAL ? 0 : p_tags_n;
}

/* At boot: is tags= possible with this many CPUs?  0 if so; 1 if the core
 * refuses it; else the size it asks, past what tags_mem[] holds. */
size_t tags_check(void)
{
	struct tlbpol_tags_config tc;
	size_t n;

	if (p_tags_kind == UK_TAGS_OFF)
		return 0;
	tags_config(&tc);
	n = tlbpol_tags_size(&tc);
	return !n || n > sizeof(tags_mem[0]) ? (n ? n : 1) : 0;
}

struct tlbpol_tags *tags_make(int slot)
{
	struct tlbpol_tags_config tc;
	struct tlbpol_tags *t;
	int err;

	if (p_tags_kind == UK_TAGS_OFF)
		return 0;
	tags_config(&tc);
	err = tlbpol_tags_init(&t, tags_mem[slot], sizeof(tags_mem[slot]), &tc);
	if (err)
		panic("tlbpol_tags_init = %d", err);
	return t;
}

/*
 * Load @table on @cpu with the tag and flush of @u.  Interrupts off (the
 * switch's).  With PCIDs (SDM vol. 3A 4.10.4.1): FLUSH_NONE is a CR3 write
 * with bit 63 set (entries of the PCID stay); FLUSH_TAG one with bit 63
 * clear (every non-global entry and paging-structure-cache entry of that
 * PCID goes); FLUSH_ALL is INVPCID type 3 (every PCID, globals kept: the
 * allocator's rollover) and then a no-flush load.  planted=3: FLUSH_TAG is
 * ignored (a reused slot loaded over its previous owner's entries).
 */
static void cr3_load(uint32_t cpu, uint64_t table, const struct tlbpol_tag_use *u)
{
	uint64_t now = cur_cr3[cpu], v;
	uint32_t flush = u->flush;

	if (param_planted == 3 && g_tags && flush == TLBPOL_TAG_FLUSH_TAG) {
		/* Counted where it changes something: without PCID a load
		 * of other tables flushes all the same. */
		if (pcid_on || table == now)
			COUNT(counts[cpu].skipped, 1);
		flush = TLBPOL_TAG_FLUSH_NONE;
	}
	if (!pcid_on) {
		/* One context: loading other tables flushes it all anyway. */
		if (table != now || flush != TLBPOL_TAG_FLUSH_NONE)
			write_cr3(table);
		cur_cr3[cpu] = table;
		return;
	}
	/* Without an allocator everything runs under PCID 0. */
	v = table | (g_tags ? CR3_PCID(u->tag) : 0);
	if (flush == TLBPOL_TAG_FLUSH_ALL) {
		invpcid(INVPCID_ALL, 0, 0);
		flush = TLBPOL_TAG_FLUSH_NONE;
	}
	if (v == now && flush == TLBPOL_TAG_FLUSH_NONE)
		return;
	write_cr3(flush == TLBPOL_TAG_FLUSH_NONE ? v | CR3_NOFLUSH : v);
	cur_cr3[cpu] = v;
}

/*
 * @cpu now runs @as with page tables @table (@as NULL: lazy, the loaded
 * tables and tag stay, nothing is written).  The engine call and the CR3
 * write with interrupts off, as tlbpol.h asks of tlbpol_switch().  Without
 * an allocator (tags=off) the engine does not retain entries across
 * switches: a switch to other tables must flush PCID 0, which it would
 * otherwise keep.
 */
void uk_switch(uint32_t cpu, struct tlbpol_as *as, uint64_t table)
{
	uint64_t f = irq_save();
	struct tlbpol_tag_use u = { 0, TLBPOL_TAG_FLUSH_NONE };
	int err;

	if (g_tags) {
		err = tlbpol_switch_tag(g_eng, cpu, as, &u);
	} else {
		int nf = 0;

		err = tlbpol_switch(g_eng, cpu, as, &nf);
		if (nf || table != (cur_cr3[cpu] & ~0xfffULL))
			u.flush = TLBPOL_TAG_FLUSH_TAG;
	}
	if (err)
		panic("CPU %u: tlbpol_switch%s = %d", cpu, g_tags ? "_tag" : "", err);
	if (as)
		cr3_load(cpu, table, &u);
	irq_restore(f);
}

/* Leave every address space of the engine: the kernel's own tables under
 * PCID 0 (a CR3 write that flushes PCID 0; the tags keep their entries,
 * which the next engine's allocator flushes before it hands them out). */
void uk_unload(uint32_t cpu)
{
	uint64_t f = irq_save();

	uk_switch(cpu, 0, 0);
	if (tlbpol_unload(g_eng, cpu))
		panic("CPU %u: tlbpol_unload failed", cpu);
	write_cr3(kernel_cr3());
	cur_cr3[cpu] = kernel_cr3();
	irq_restore(f);
}

/* tags= as the params line and the table print it. */
void tags_describe(void)
{
	if (p_tags_kind == UK_TAGS_OFF)
		kprintf("tags=off: no allocator; the kernel's own PCID 0 for everything\n");
	else if (p_tags_kind == UK_TAGS_PERCPU)
		kprintf("tags=percpu:%u: TLBPOL_TAGS_PERCPU, PCIDs 1..%u on each CPU, %u address "
			"spaces%s\n", p_tags_n, p_tags_n, 1 + UK_NR_TAG_AS,
			p_tags_n < 1 + UK_NR_TAG_AS ? " (scarce: slots reused)" : "");
	else
		kprintf("tags=global:%u: TLBPOL_TAGS_GLOBAL, tags 1..%u, %u address spaces%s\n",
			p_tags_n, (1u << p_tags_n) - 1, 1 + UK_NR_TAG_AS,
			(1u << p_tags_n) - 1 < 1 + UK_NR_TAG_AS ? " (scarce: rollovers)" : "");
}
