/* SPDX-License-Identifier: MIT */
/*
 * kernel.h - the test kernel's shared declarations and x86 primitives.
 *
 * The kernel runs in ring 0, identity-mapped, one address space for all
 * CPUs.  It is built with -mgeneral-regs-only: interrupt stubs save only the
 * general registers, so no C code (the libtlbpol core included, which runs in
 * the shootdown interrupt) may touch SSE/x87 state.
 */
#ifndef UK_KERNEL_H
#define UK_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#define UK_MAX_CPUS 16
#define UK_STACK_SIZE (32 * 1024) /* per CPU, interrupts nest on it */

/* Interrupt vectors.  The shootdown vector is high so that its priority
 * class (vector >> 4) is above anything else we might take. */
#define VEC_PF 14
#define VEC_SHOOTDOWN 0xf0
#define VEC_PING 0xf1 /* calibration: the handler only acknowledges */
#define VEC_TIMER 0xef /* idle=hlt: periodic wake-up, the handler only EOIs */
#define VEC_SPURIOUS 0xff

/* isa-debug-exit (QEMU -device isa-debug-exit,iobase=0xf4): writing v makes
 * QEMU exit with status (v << 1) | 1.  run.sh maps these back. */
#define EXIT_PASS 0   /* qemu status 1 */
#define EXIT_STALE 1  /* qemu status 3: the stale-TLB check saw a stale read */
#define EXIT_FAIL 2   /* qemu status 5: a workload or invariant failed */
#define EXIT_PANIC 3  /* qemu status 7: unexpected exception, boot failure */
#define EXIT_CLAIM 4  /* qemu status 9: ran clean, but an IPI claim failed */
#define EXIT_USAGE 5  /* qemu status 11: a kernel argument was refused (rules=) */

/* ------------------------------------------------------------------------ */
/* x86 primitives                                                           */
/* ------------------------------------------------------------------------ */

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ __volatile__("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ __volatile__("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ __volatile__("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline void cpu_pause(void)
{
	__asm__ __volatile__("pause" ::: "memory");
}

/* lfence orders rdtsc after earlier instructions (Intel SDM RDTSC: "not a
 * serializing instruction"; AMD makes lfence dispatch-serializing too). */
static inline void cpuid(uint32_t leaf, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t *d)
{
	__asm__ __volatile__("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ __volatile__("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/*
 * read_crN() / write_crN(): the control registers the kernel uses (CR2 is
 * only read: the faulting address).  A CR write is serializing and, for
 * CR3 and CR4, changes what the MMU translates with: "memory" keeps the
 * compiler from moving memory accesses across it.
 */
#define CR_READ(n)                                                             \
	static inline uint64_t read_cr##n(void)                                \
	{                                                                      \
		uint64_t v;                                                    \
									       \
		__asm__ __volatile__("mov %%cr" #n ", %0" : "=r"(v));          \
		return v;                                                      \
	}
#define CR_WRITE(n)                                                            \
	static inline void write_cr##n(uint64_t v)                             \
	{                                                                      \
		__asm__ __volatile__("mov %0, %%cr" #n : : "r"(v) : "memory"); \
	}
CR_READ(2)
CR_READ(3)
CR_WRITE(3)
CR_READ(4)
CR_WRITE(4)
#undef CR_READ
#undef CR_WRITE

static inline void invlpg(uint64_t va)
{
	__asm__ __volatile__("invlpg (%0)" : : "r"(va) : "memory");
}

/*
 * PCIDs (SDM vol. 3A 4.10.1).  With CR4.PCIDE set, CR3[11:0] is the current
 * PCID and bit 63 of a MOV to CR3 says "do not flush" (4.10.4.1); INVPCID
 * (SDM vol. 2B, INVPCID) flushes by PCID: type 0 one address of a PCID,
 * type 1 one PCID, type 2 every PCID with globals, type 3 every PCID
 * without globals.  Neither INVPCID type 0 nor type 1 touches global
 * translations.
 */
#define CR4_PGE (1ULL << 7)
#define CR4_PCIDE (1ULL << 17)
#define CR3_NOFLUSH (1ULL << 63)
#define CR3_PCID(v) ((v) & 0xfffULL)
#define INVPCID_ADDR 0
#define INVPCID_CTX 1
#define INVPCID_ALL_GLOBAL 2
#define INVPCID_ALL 3

static inline void invpcid(uint64_t type, uint64_t pcid, uint64_t va)
{
	struct {
		uint64_t pcid, va;
	} desc = { pcid, va };

	__asm__ __volatile__("invpcid %0, %1" : : "m"(desc), "r"(type) : "memory");
}

static inline void irq_enable(void)
{
	__asm__ __volatile__("sti" ::: "memory");
}

static inline void irq_disable(void)
{
	__asm__ __volatile__("cli" ::: "memory");
}

static inline uint64_t irq_save(void)
{
	uint64_t f;

	__asm__ __volatile__("pushfq; popq %0; cli" : "=r"(f) : : "memory");
	return f;
}

static inline void irq_restore(uint64_t f)
{
	if (f & (1u << 9)) /* RFLAGS.IF */
		irq_enable();
}

static inline uint64_t read_rsp(void)
{
	uint64_t v;

	__asm__ __volatile__("mov %%rsp, %0" : "=r"(v));
	return v;
}

static inline uint32_t mmio_read32(uint64_t addr)
{
	return *(volatile uint32_t *)(uintptr_t)addr;
}

static inline void mmio_write32(uint64_t addr, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)addr = v;
}

/* Test-and-test-and-set spinlock.  Never held across an engine call that
 * waits for other CPUs unless interrupts stay enabled (see mm.c). */
typedef struct {
	uint32_t v;
} spinlock_t;

static inline void spin_lock(spinlock_t *l)
{
	for (;;) {
		if (!__atomic_load_n(&l->v, __ATOMIC_RELAXED) &&
		    !__atomic_exchange_n(&l->v, 1u, __ATOMIC_ACQUIRE))
			return;
		cpu_pause();
	}
}

static inline void spin_unlock(spinlock_t *l)
{
	__atomic_store_n(&l->v, 0u, __ATOMIC_RELEASE);
}

static inline uint64_t spin_lock_irqsave(spinlock_t *l)
{
	uint64_t f = irq_save();

	spin_lock(l);
	return f;
}

static inline void spin_unlock_irqrestore(spinlock_t *l, uint64_t f)
{
	spin_unlock(l);
	irq_restore(f);
}

/* ------------------------------------------------------------------------ */
/* Per CPU                                                                  */
/* ------------------------------------------------------------------------ */

extern uint8_t cpu_stacks[UK_MAX_CPUS][UK_STACK_SIZE];

/*
 * Which CPU am I?  Every CPU runs on its own stack in cpu_stacks[] (interrupts
 * too: no ring change and no IST, so the CPU stays on the current stack), so
 * the stack pointer says.  Cheaper than an APIC ID read, which exits to the
 * hypervisor under KVM without APIC virtualisation.
 */
static inline uint32_t this_cpu(void)
{
	return (uint32_t)((read_rsp() - (uint64_t)(uintptr_t)cpu_stacks) / UK_STACK_SIZE);
}

/* Counters kept by the kernel itself (what the hardware was asked to do),
 * one writer each: the CPU itself. */
struct cpu_counts {
	uint64_t ipi_sent;     /* ICR writes (one per target) */
	uint64_t ipi_recv;     /* shootdown interrupts taken */
	uint64_t invlpg;       /* pages invalidated: invlpg, INVPCID type 0 */
	uint64_t full_flush;   /* CR3 writes / CR4.PGE toggles for flushes */
	uint64_t faults;       /* test-region page faults resolved */
	uint64_t spurious;     /* faults whose PTE already allowed the access */
	uint64_t retried;      /* faults that found the PTE installed on retry */
	uint64_t skipped;      /* flush_local calls dropped by the planted bug */
	uint64_t stale;        /* stale reads seen by this CPU */
	uint64_t anomalies;    /* other check failures */
	uint64_t op_cyc;       /* TSC cycles inside measured operations */
	uint64_t irq_cyc;      /* TSC cycles inside the shootdown handler */
	uint64_t self_visible; /* own just-unmapped page still readable (lazy) */
	uint64_t deferred;     /* shootdowns of this vCPU handed to the hypervisor */
	uint64_t stamped;      /* frames freed at once with a flush stamp */
	uint64_t settles;      /* stamped frames handed out again */
	uint64_t settle_waits; /* ... whose settle had to interrupt or wait */
	uint64_t settle_cyc;   /* TSC cycles inside tlbpol_stamp_settle() */
} __attribute__((aligned(64)));
#define NR_COUNTS 18 /* uint64_t fields above */

extern struct cpu_counts counts[UK_MAX_CPUS];
extern uint32_t nr_cpus;
extern uint32_t apic_ids[UK_MAX_CPUS];
extern uint32_t cpus_up;
extern uint32_t param_pvflush;

/* KVM paravirtual TLB flush (steal time): main.c */
void pv_flush_init(uint32_t cpu);
void pv_flush_report(void);

/* Counters that both a CPU's task context and its interrupt handler bump
 * (flush_local runs in both): one locked add, so neither loses an update. */
#define COUNT(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)

/* ------------------------------------------------------------------------ */
/* Subsystems                                                               */
/* ------------------------------------------------------------------------ */

/* console.c */
void console_init(void);
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
__attribute__((noreturn)) void kexit(uint32_t code);
__attribute__((noreturn)) void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* libc.c */
void *memset(void *s, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strncmp(const char *a, const char *b, size_t n);

/* The interrupt frame built by isr_common in boot.S. */
struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

/* platform.c: ACPI, local APIC, IDT, SMP bring-up. */
#define LAPIC_BASE 0xfee00000ULL
void idt_init(void);
void idt_load(void);
int acpi_find_cpus(uint64_t rsdp, uint32_t *ids, uint32_t max);
void lapic_init(void);
void lapic_eoi(void);
uint32_t lapic_id(void);
void lapic_send(uint32_t apic_id, uint32_t vector);
void lapic_timer_periodic(uint32_t vector, uint32_t count);
void smp_boot(void (*ap_entry)(uint32_t cpu));
void pic_disable(void);

/* boot.S */
uint64_t probe_read(const volatile uint64_t *va);
uint64_t probe_write(volatile uint64_t *va, uint64_t v);
extern const char probe_read_insn[], probe_read_done[];
extern const char probe_write_insn[], probe_write_done[];
#define PROBE_FAULT 0xfa17fa17fa17fa17ULL

/* main.c */
void trap_dispatch(struct trap_frame *f);

/* mm.c */
int mm_page_fault(struct trap_frame *f, uint64_t cr2);

/* main.c */
extern uint32_t ping_ack;

/* pcid.c: PCIDs on every CPU, CR3 loads with a tag, the tag allocators. */
extern uint32_t pcid_on;      /* CR4.PCIDE set: PCID and INVPCID present, pcid=1 */
extern uint32_t param_pcid;   /* pcid=0: leave CR4.PCIDE off */
extern uint64_t cur_cr3[UK_MAX_CPUS]; /* what each CPU's CR3 holds (bit 63 aside) */
void pcid_init(uint32_t cpu);

/* params.c (the command line), work.c (the workloads, after boot) */
void params_parse(const char *cmdline);
void params_print(void);
void work_run(uint32_t cpu);
extern uint32_t param_cpus;    /* cpus=N: used when no MADT is found */
extern uint32_t param_planted; /* planted=1: the last CPU drops its flushes;
				* 3: every CPU ignores TLBPOL_TAG_FLUSH_TAG */
extern uint32_t param_idle_hlt; /* idle=hlt: waits sleep instead of spinning */
/* Rule masks run in one boot: naive, linux, default, and rules=SPEC's. */
#define UK_MAX_MASKS 4
/* Address spaces of the tags workload (wl_tags.c), beside the one of the
 * others: more than tags=percpu:2 slots, and than tags=global:3's 7 tags. */
#define UK_NR_TAG_AS 8
#define UK_MAX_AS (1 + UK_NR_TAG_AS)

#endif /* UK_KERNEL_H */
