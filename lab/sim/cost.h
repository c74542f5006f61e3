/* SPDX-License-Identifier: MIT */
/*
 * cost.h - the simulator's cost model: every constant named, sourced and
 * overridable (--cost NAME=VALUE).  Times are nanoseconds unless the name
 * says cycles; cycles are converted at cpu_ghz.
 */
#ifndef TLBPOL_SIM_COST_H
#define TLBPOL_SIM_COST_H

#include <stdint.h>

/*
 * X(name, default, source).  Sources:
 *  [DH14]  Dave Hansen, "x86: tlb flush: ... use invlpg ... ceiling",
 *          LKML, 2014 (measurements on a Haswell desktop: a local flush of
 *          N pages by invlpg ~1276 + 250 * (N - 1) cycles up to 33 pages;
 *          a full flush (CR3 write) ~2283 cycles, plus ~100 ns for each
 *          entry refilled afterwards).
 *  [NA19]  Nadav Amit, "x86/mm/tlb: ... concurrent TLB flushes" series,
 *          LKML 2019: a shootdown costs the initiator ~0.8 us for its first
 *          target and ~70 ns for each further target on the same socket,
 *          more across sockets.
 *  [IRQ]   interrupt entry + exit on the receiver: >= 1000 cycles (Amit
 *          2019; Linux entry code with IRET, no PTI).
 *  [VM]    an IPI from a guest costs about 4x (VM exits on send and
 *          receive; KVM PV TLB flush cover letter, Wanpeng Li, 2017).
 *  [VMX]   what an interrupt takes from a guest's vCPU before the handler
 *          runs, beyond the native entry: the host's posting or kick exit
 *          and the EOI write's exit without APIC virtualization (x86's
 *          call-function vector writes EOI before its handler,
 *          arch/x86/kernel/smp.c sysvec_call_function()).  0 by default:
 *          vm_ipi_factor prices the guest on the sender's side only; a
 *          measured machine profile (--cost-file, e.g. lab/validate/data/
 *          machine.cost from `ipi_rtt -g`) sets it.
 *  [PF]    a minor page fault ~1-2 us on x86 (will-it-scale page_fault*
 *          rates: ~1M faults/s/core).
 *  [WALK]  a TLB miss served from cached page-table entries ~20-30 ns on a
 *          recent x86; the model charges [DH14]'s 100 ns refill for misses
 *          that a flush caused and `tlb_walk_ns` for the rest.
 *  [BC]    INVLPGB + TLBSYNC / TLBI IS + DSB: assumed; one instruction per
 *          page and one wait for all CPUs (AMD APM vol. 3 INVLPGB; Arm ARM
 *          TLBI ...IS).  No public per-operation figures; tune to taste.
 *  [INVLPGB] Linux arch/x86/kernel/cpu/amd.c cpu_detect_tlb_amd():
 *          invlpgb_count_max = CPUID 8000_0008h EDX[15:0] + 1; 8 is an
 *          assumed value (no figure for a given part is cited here).
 *  [RAR]   Intel Remote Action Request, as Rik van Riel's RFC v4 (2025)
 *          drives it: a payload table, per-CPU action bytes, an APIC
 *          write; RAR_INVLPG_MAX_PAGES 63.  No public latency figures:
 *          assumed.
 *  [SBI]   the SBI RFENCE extension (sbi_remote_sfence_vma_asid()); OpenSBI
 *          sends M-mode IPIs and waits for every hart (sbi_tlb.c); OpenSBI's
 *          measurement of 5% less total time than IPIs is the only public
 *          figure: the per-call costs are assumed.
 *  [HV]    a paravirtual flush hypercall (Hyper-V HvFlushVirtualAddressList,
 *          KVM PV flush): one VM exit, the hypervisor flushes the vCPUs;
 *          assumed ~2 us plus a little per page.
 *  [PAUSE] PAUSE takes about 140 cycles from Skylake on (Intel 64 and IA-32
 *          Architectures Optimization Reference Manual, 2.5.4 "Pause
 *          Latency in Skylake Microarchitecture"), ~56 ns at 2.5 GHz.
 *  [LMB]   lmbench lat_ctx: a switch between two processes costs ~1-3 us
 *          on current x86, most of it the cache and TLB refills after.
 *  [CFS]   EEVDF's base slice, 0.75 ms (sysctl_sched_base_slice,
 *          kernel/sched/fair.c, Linux 6.6 on).
 *  [MODEL] a modelling choice of this simulator, not a measurement.
 */
#define SIM_COSTS(X)                                                                   \
	X(cpu_ghz, 2.5, "[MODEL] cycles per ns for the cycle figures below")          \
	X(invlpg_first_cycles, 1276, "[DH14] local flush of one page")                 \
	X(invlpg_next_cycles, 250, "[DH14] each further page of a local flush")       \
	X(full_flush_cycles, 2283, "[DH14] local whole-TLB flush (CR3 write)")        \
	X(refill_ns, 100, "[DH14] refilling an entry a flush removed")                  \
	X(tlb_hit_ns, 0.5, "[MODEL] an access that hits the TLB")                       \
	X(tlb_walk_ns, 25, "[WALK] an access that misses for capacity/first touch")    \
	X(ipi_first_ns, 800, "[NA19] initiator: first target of a shootdown")          \
	X(ipi_next_ns, 70, "[NA19] initiator: each further target, same socket")       \
	X(ipi_remote_ns, 250, "[NA19] initiator: extra per target on another socket")  \
	X(ipi_latency_ns, 300, "[MODEL] send to handler start on the target")          \
	X(irq_entry_exit_cycles, 1000, "[IRQ] receiver: interrupt entry and exit")     \
	X(ack_latency_ns, 100, "[MODEL] handler's acknowledgement seen by initiator")  \
	X(relax_ns, 60, "[PAUSE] one turn of a wait loop: a PAUSE, a look at the acks")\
	X(vm_ipi_factor, 4, "[VM] IPI costs inside a guest")                           \
	X(vm_irq_exit_ns, 0, "[VMX] guest receiver: the exits before its handler runs")  \
	X(broadcast_ns, 1500, "[BC] broadcast flush wait (TLBSYNC/DSB)")               \
	X(broadcast_page_ns, 40, "[BC] each page a broadcast names")                   \
	X(hypercall_ns, 2000, "[HV] a flush hypercall (the broadcast of --hypercall)")  \
	X(invlpgb_ns, 60, "[BC] one INVLPGB instruction, issued without waiting")        \
	X(invlpgb_pages, 8, "[INVLPGB] pages one INVLPGB names (CPUID 8000_0008h EDX)")  \
	X(tlbsync_ns, 1500, "[BC] TLBSYNC: the wait for this CPU's INVLPGBs")          \
	X(tlbi_ns, 40, "[BC] one TLBI ...IS instruction (one page, no FEAT_TLBIRANGE)") \
	X(dsb_ns, 1500, "[BC] DSB ISH after TLBIs: the wait for every PE")            \
	X(rar_ns, 600, "[RAR] a remote action: payload, APIC write, the first wait")   \
	X(rar_target_ns, 40, "[RAR] each target's action byte set and waited for")     \
	X(rar_payload_ns, 20, "[RAR] each payload of rar_pages pages")                 \
	X(rar_pages, 63, "[RAR] pages one RAR payload names (RAR_INVLPG_MAX_PAGES)")   \
	X(sbi_ns, 1500, "[SBI] an SBI remote fence: the ecall into M-mode, the wait")  \
	X(sbi_hart_ns, 300, "[SBI] each hart: M-mode IPI and its fence")              \
	X(hypercall_page_ns, 20, "[HV] each page a flush hypercall names")             \
	X(fault_ns, 1500, "[PF] handling a page fault")                                  \
	X(mem_access_ns, 60, "[MODEL] a random read that misses the caches (DRAM)")     \
	X(swap_write_ns, 30000, "[MODEL] writing one page to swap (SSD, one stream)")   \
	X(syscall_ns, 300, "[MODEL] entering and leaving mmap/munmap/madvise")          \
	X(engine_call_ns, 50, "[MODEL] one libtlbpol call (measured: lab/bench)")    \
	X(tick_ns, 4000000, "[MODEL] timer tick period (HZ=250)")                       \
	X(vcpu_slice_ns, 3000000, "[MODEL] host scheduler slice of a vCPU")              \
	X(ctx_switch_ns, 2000, "[LMB] a context switch between threads")                \
	X(wakeup_ns, 1000, "[MODEL] waking a thread on an idle CPU (reschedule IPI)")  \
	X(sched_slice_ns, 750000, "[CFS] a thread's slice when others wait for its CPU")

struct sim_cost {
#define SIM_COST_FIELD(name, def, src) double name;
	SIM_COSTS(SIM_COST_FIELD)
#undef SIM_COST_FIELD
};

void sim_cost_defaults(struct sim_cost *c);
/* "name=value": 0, or -1 if the name is unknown or the value malformed. */
int sim_cost_set(struct sim_cost *c, const char *assignment);
/* A file of "name=value" lines, '#' comments and blank lines: 0, or -1
 * with *@bad_line the first bad line (0: the file could not be read). */
int sim_cost_load(struct sim_cost *c, const char *path, int *bad_line);
void sim_cost_print(const struct sim_cost *c, void *file);

#endif
