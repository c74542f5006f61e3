/* SPDX-License-Identifier: MIT */
/*
 * main.c - boot (BSP and APs), trap dispatch, and the libtlbpol callbacks
 * that drive the real hardware: invlpg / CR3 / CR4.PGE in flush_local, local
 * APIC IPIs in send_ipi.
 */
#include "work.h"

uint8_t cpu_stacks[UK_MAX_CPUS][UK_STACK_SIZE] __attribute__((aligned(4096)));
struct cpu_counts counts[UK_MAX_CPUS];
uint32_t nr_cpus = 1;
uint32_t apic_ids[UK_MAX_CPUS];
uint32_t ping_ack;

extern char __kernel_end[];

/* xen/include/public/arch-x86/hvm/start_info.h */
struct hvm_start_info {
	uint32_t magic; /* 0x336ec578 */
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;    /* version >= 1 */
	uint64_t memmap_paddr;  /* version >= 1 */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type; /* 1: RAM (E820) */
	uint32_t reserved;
};

/* ------------------------------------------------------------------------ */
/* libtlbpol callbacks                                                      */
/* ------------------------------------------------------------------------ */

/*
 * Flush this CPU's TLB as the engine asks.
 *  PAGES: one invlpg per page.  INVLPG removes the TLB entries for the page
 *	and every paging-structure-cache entry (SDM 3A 4.10.4.1), which is
 *	what TLBPOL_FLUSHF_TABLES needs too.
 *  AS: a CR3 write: every non-global entry.
 *  ALL: toggling CR4.PGE, which also drops global entries (SDM 4.10.4.1).
 * With PCIDs and an allocator (pcid.c) @f->as_tag is the PCID this CPU
 * holds the address space under, which need not be the current one (a
 * space it switched away from keeps its entries under its tag).  INVLPG
 * and a CR3 write reach only the current PCID (and INVLPG global entries
 * of the address whatever the PCID), so another PCID is flushed by INVPCID
 * (SDM vol. 2B INVPCID; vol. 3A 4.10.4.1; tlbpol.h's x86 row):
 *  PAGES, current PCID: INVLPG; other PCID: INVPCID type 0 per page, and
 *	INVLPG too for TLBPOL_FLUSHF_GLOBAL (type 0 leaves global entries);
 *  AS, current PCID: CR3 rewritten with bit 63 clear; other: INVPCID type 1;
 *  ALL: INVPCID type 2 (every PCID, global entries too).
 * The planted bug (planted=1, or the kernel-planted.elf build): the last CPU
 * silently drops every flush; planted=2: only its invlpg (page) flushes.  The
 * stale-TLB check must catch it.
 */
static void op_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct cpu_counts *c = &counts[cpu];
	int tagged = pcid_on && g_tags;
	int other = tagged && f->as_tag != CR3_PCID(cur_cr3[cpu]);

	(void)ctx;
	if (cpu != this_cpu())
		panic("flush_local for CPU %u ran on CPU %u", cpu, this_cpu());
	if (param_planted && param_planted <= 2 && cpu == nr_cpus - 1 &&
	    (param_planted == 1 || f->kind == TLBPOL_FLUSH_PAGES)) {
		COUNT(c->skipped, 1);
		return;
	}
	switch (f->kind) {
	case TLBPOL_FLUSH_PAGES:
		for (uint32_t r = 0; r < f->nr_ranges; r++) {
			const struct tlbpol_range *rg = &f->ranges[r];

			for (uint64_t i = 0; i < rg->nr_pages; i++) {
				uint64_t va = rg->va + (i << rg->page_shift);

				if (other)
					invpcid(INVPCID_ADDR, f->as_tag, va);
				if (!other || (f->flags & TLBPOL_FLUSHF_GLOBAL))
					invlpg(va);
			}
			COUNT(c->invlpg, rg->nr_pages);
		}
		break;
	case TLBPOL_FLUSH_AS:
		if (other)
			invpcid(INVPCID_CTX, f->as_tag, 0);
		else
			write_cr3(cur_cr3[cpu]); /* bit 63 clear: the current PCID */
		COUNT(c->full_flush, 1);
		break;
	default:
		if (tagged) {
			invpcid(INVPCID_ALL_GLOBAL, 0, 0);
		} else {
			uint64_t cr4 = read_cr4();

			write_cr4(cr4 & ~CR4_PGE);
			write_cr4(cr4);
		}
		COUNT(c->full_flush, 1);
		break;
	}
}

/* One fixed IPI per target on the shootdown vector; the target's handler
 * calls tlbpol_handle_ipi() (trap_dispatch() below). */
static void op_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	(void)ctx;
	for (int t = tlbpol_cpuset_next(targets, -1); t >= 0; t = tlbpol_cpuset_next(targets, t)) {
		lapic_send(apic_ids[t], VEC_SHOOTDOWN);
		COUNT(counts[from].ipi_sent, 1);
	}
}

static void op_relax(void *ctx, uint32_t cpu)
{
	(void)ctx;
	(void)cpu;
	cpu_pause();
}

/*
 * KVM's paravirtual TLB flush.  Each vCPU registers a steal-time area
 * (MSR_KVM_STEAL_TIME); when the host deschedules a vCPU that was runnable
 * it sets `preempted` = KVM_VCPU_PREEMPTED there, and before it runs the
 * vCPU again it clears the byte and, if KVM_VCPU_FLUSH_TLB was added
 * meanwhile, flushes the vCPU's whole TLB (arch/x86/kvm/x86.c
 * record_steal_time(), kvm_vcpu_flush_tlb_guest()).  The guest adds that
 * bit with a cmpxchg instead of interrupting the vCPU, as Linux's
 * kvm_flush_tlb_multi() does; a failed cmpxchg means the vCPU is running
 * again (or about to), so it is interrupted as usual.
 */
#define MSR_KVM_STEAL_TIME 0x4b564d03
#define KVM_FEATURE_STEAL_TIME (1u << 5)
#define KVM_FEATURE_PV_TLB_FLUSH (1u << 9)
#define KVM_VCPU_PREEMPTED 1
#define KVM_VCPU_FLUSH_TLB 2

struct kvm_steal_time {
	uint64_t steal;
	uint32_t version;
	uint32_t flags;
	uint8_t preempted;
	uint8_t pad8[3];
	uint32_t pad[11];
} __attribute__((aligned(64)));

static struct kvm_steal_time steal_time[UK_MAX_CPUS];
static uint32_t pv_flush; /* the host offers both features and pvflush=1 */
static uint64_t pv_asked, pv_seen; /* vcpu_defer calls; of them, byte found set */
uint32_t param_pvflush = 1;

/* Called on each CPU at boot, the BSP first. */
void pv_flush_init(uint32_t cpu)
{
	if (cpu == 0) {
		uint32_t a, b, c, d, feat = 0;
		char sig[13];

		cpuid(1, &a, &b, &c, &d);
		if (c & (1u << 31)) { /* a hypervisor is present */
			cpuid(0x40000000, &a, &b, &c, &d);
			memcpy(sig, &b, 4);
			memcpy(sig + 4, &c, 4);
			memcpy(sig + 8, &d, 4);
			sig[12] = 0;
			if (!memcmp(sig, "KVMKVMKVM\0\0\0", 12) && a >= 0x40000001) {
				cpuid(0x40000001, &a, &b, &c, &d);
				feat = a;
			}
			kprintf("hypervisor: \"%s\", KVM features %x\n", sig, feat);
		}
		pv_flush = param_pvflush &&
			   (feat & (KVM_FEATURE_STEAL_TIME | KVM_FEATURE_PV_TLB_FLUSH)) ==
				   (KVM_FEATURE_STEAL_TIME | KVM_FEATURE_PV_TLB_FLUSH);
		kprintf("paravirtual TLB flush (steal time, ops->vcpu_defer): %s\n",
			pv_flush ? "on" : param_pvflush ? "not offered" : "off (pvflush=0)");
	}
	if (pv_flush)
		/* Identity-mapped: the address is the physical one; bit 0 enables. */
		wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&steal_time[cpu] | 1);
}

/* What the host reported: steal time and how often a vCPU was seen
 * preempted (for the table's notes). */
void pv_flush_report(void)
{
	if (!pv_flush)
		return;
	kprintf("paravirtual flush: %lu vcpu_defer calls found the preempted byte set %lu times; "
		"steal time (ns) per vCPU:", pv_asked, pv_seen);
	for (uint32_t c = 0; c < nr_cpus; c++)
		kprintf(" %lu", __atomic_load_n(&steal_time[c].steal, __ATOMIC_RELAXED));
	kprintf("\n");
}

static int op_vcpu_defer(void *ctx, uint32_t cpu)
{
	uint8_t st;

	(void)ctx;
	if (!pv_flush)
		return 0;
	st = __atomic_load_n(&steal_time[cpu].preempted, __ATOMIC_RELAXED);
	COUNT(pv_asked, 1);
	if (st)
		COUNT(pv_seen, 1);
	if (!(st & KVM_VCPU_PREEMPTED) ||
	    !__atomic_compare_exchange_n(&steal_time[cpu].preempted, &st,
					 (uint8_t)(st | KVM_VCPU_FLUSH_TLB), 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return 0;
	COUNT(counts[cpu].deferred, 1);
	return 1;
}

const struct tlbpol_ops uk_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = op_flush_local,
	.send_ipi = op_send_ipi,
	.relax = op_relax,
	.vcpu_defer = op_vcpu_defer,
};

/* ------------------------------------------------------------------------ */
/* Traps                                                                    */
/* ------------------------------------------------------------------------ */

void trap_dispatch(struct trap_frame *f)
{
	uint32_t cpu;

	switch (f->vector) {
	case VEC_PF: {
		uint64_t cr2 = read_cr2(); /* before anything can fault again */

		if (mm_page_fault(f, cr2))
			return;
		panic("CPU %u: page fault at %lx, error %lx, rip %lx", this_cpu(), cr2, f->error,
		      f->rip);
	}
	case VEC_SHOOTDOWN: {
		struct tlbpol_engine *eng = g_eng;

		uint64_t t0 = rdtsc();

		cpu = this_cpu();
		counts[cpu].ipi_recv++;
		/* NULL between rule masks: a late interrupt finds nothing. */
		if (eng)
			tlbpol_handle_ipi(eng, cpu);
		lapic_eoi();
		counts[cpu].irq_cyc += rdtsc() - t0;
		return;
	}
	case VEC_PING:
		__atomic_store_n(&ping_ack, 1u, __ATOMIC_RELEASE);
		lapic_eoi();
		return;
	case VEC_TIMER:
		lapic_eoi();
		return;
	case VEC_SPURIOUS:
		return; /* no EOI for the spurious vector (SDM 3A 11.9) */
	default:
		break;
	}
	if (f->vector >= 32) {
		COUNT(counts[this_cpu()].anomalies, 1); /* may interrupt a task-side ++ */
		kprintf("CPU %u: unexpected interrupt vector %lu\n", this_cpu(), f->vector);
		lapic_eoi();
		return;
	}
	panic("CPU %u: exception %lu, error %lx, rip %lx, rsp %lx, cr2 %lx", this_cpu(), f->vector,
	      f->error, f->rip, f->rsp, read_cr2());
}

/* ------------------------------------------------------------------------ */
/* Boot                                                                     */
/* ------------------------------------------------------------------------ */

static void ap_main(uint32_t cpu)
{
	idt_load();
	lapic_init();
	if (lapic_id() != apic_ids[cpu])
		panic("CPU %u came up with APIC ID %u, expected %u", cpu, lapic_id(), apic_ids[cpu]);
	pv_flush_init(cpu);
	pcid_init(cpu);
	__atomic_fetch_add(&cpus_up, 1u, __ATOMIC_RELEASE);
	work_run(cpu);
}

/* Is [lo, hi) inside one RAM entry of the PVH memory map? */
static int ram_covers(const struct hvm_start_info *si, uint64_t lo, uint64_t hi)
{
	const struct hvm_memmap_entry *m;

	if (si->version < 1 || !si->memmap_paddr)
		return 1; /* no map: trust -m (run.sh gives 128 MiB) */
	m = (const struct hvm_memmap_entry *)(uintptr_t)si->memmap_paddr;
	for (uint32_t i = 0; i < si->memmap_entries; i++)
		if (m[i].type == 1 && m[i].addr <= lo && hi <= m[i].addr + m[i].size)
			return 1;
	return 0;
}

uint64_t engine_mem_base;
uint64_t engine_mem_stride;

void kmain(uint32_t si_phys)
{
	const struct hvm_start_info *si = (const struct hvm_start_info *)(uintptr_t)si_phys;
	static char cmdline[512];
	uint32_t bsp, n;
	uint64_t base, pool, nframes = 2048;
	struct tlbpol_config cfg;

	console_init();
	pic_disable();
	if (si->magic != 0x336ec578)
		panic("not booted through PVH (start_info magic %x)", si->magic);
	/* Copy what we need from start_info first: it may lie in low memory
	 * the AP trampoline will overwrite. */
	if (si->cmdline_paddr) {
		const char *c = (const char *)(uintptr_t)si->cmdline_paddr;
		size_t i = 0;

		for (; c[i] && i < sizeof(cmdline) - 1; i++)
			cmdline[i] = c[i];
		cmdline[i] = 0;
	}
	kprintf("\nlibtlbpol %s unikernel: PVH start_info v%u, cmdline \"%s\"\n", tlbpol_version(),
		si->version, cmdline);
	params_parse(cmdline);

	idt_init();
	idt_load();
	lapic_init();
	bsp = lapic_id();
	n = (uint32_t)acpi_find_cpus(si->version >= 1 ? si->rsdp_paddr : 0, apic_ids, UK_MAX_CPUS);
	if (n) {
		kprintf("ACPI MADT: %u enabled local APICs\n", n);
	} else {
		/* No MADT: QEMU numbers APIC IDs 0..N-1 for -smp N with one
		 * thread per core and a power-of-two-free layout; take cpus=N. */
		n = param_cpus ? param_cpus : 1;
		for (uint32_t i = 0; i < n; i++)
			apic_ids[i] = i;
		kprintf("no ACPI MADT: assuming APIC IDs 0..%u (cpus=%u)\n", n - 1, n);
	}
	/* CPU 0 is the BSP, whatever its place in the MADT. */
	for (uint32_t i = 0; i < n; i++)
		if (apic_ids[i] == bsp) {
			apic_ids[i] = apic_ids[0];
			apic_ids[0] = bsp;
		}
	nr_cpus = n;
	kprintf("CPUs: %u, APIC IDs:", nr_cpus);
	for (uint32_t i = 0; i < nr_cpus; i++)
		kprintf(" %u", apic_ids[i]);
	kprintf("\n");

	/* Memory after the kernel: an engine per rule mask (UK_MAX_MASKS, so a
	 * late interrupt for one never meets another being built), then frames. */
	tlbpol_config_init(&cfg, nr_cpus, TLBPOL_ARCH_X86_64);
	cfg.max_as = UK_MAX_AS;
	cfg.ops = &uk_ops;
	engine_mem_stride = (tlbpol_engine_size(&cfg) + 4095) & ~4095ULL;
	if (!engine_mem_stride)
		panic("tlbpol_engine_size() = 0");
	base = ((uint64_t)(uintptr_t)__kernel_end + 0x1fffff) & ~0x1fffffULL;
	engine_mem_base = base;
	pool = base + UK_MAX_MASKS * engine_mem_stride;
	if (!ram_covers(si, base, pool + nframes * 4096))
		panic("not enough RAM at %lx (want %lu MiB): use -m 128M", base,
		      (pool + nframes * 4096 - base) >> 20);
	kprintf("engine: %lu KiB per rule mask at %lx; %lu test frames at %lx\n",
		engine_mem_stride >> 10, base, nframes, pool);
	mm_init(pool, (uint32_t)nframes);
	params_print();
	pv_flush_init(0);
	pcid_init(0);

	smp_boot(ap_main);
	work_run(0);
}
