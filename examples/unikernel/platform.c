/* SPDX-License-Identifier: MIT */
/*
 * platform.c - IDT, ACPI MADT, local APIC (xAPIC, MMIO) and SMP bring-up.
 */
#include "kernel.h"

/* ------------------------------------------------------------------------ */
/* IDT                                                                      */
/* ------------------------------------------------------------------------ */

struct idt_gate {
	uint16_t off0;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off1;
	uint32_t off2;
	uint32_t zero;
} __attribute__((packed));

static struct idt_gate idt[256] __attribute__((aligned(16)));
extern const uint64_t isr_table[256];

void idt_init(void)
{
	for (int v = 0; v < 256; v++) {
		uint64_t a = isr_table[v];

		idt[v].off0 = (uint16_t)a;
		idt[v].sel = 0x08;
		idt[v].ist = 0;
		/* Present, DPL 0, 64-bit interrupt gate: IF is cleared on entry,
		 * so a handler decides itself when to take interrupts again. */
		idt[v].type = 0x8e;
		idt[v].off1 = (uint16_t)(a >> 16);
		idt[v].off2 = (uint32_t)(a >> 32);
		idt[v].zero = 0;
	}
}

void idt_load(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) d = { sizeof(idt) - 1, (uint64_t)(uintptr_t)idt };

	__asm__ __volatile__("lidt %0" : : "m"(d));
}

/* ------------------------------------------------------------------------ */
/* ACPI: the MADT lists the local APICs (ACPI 6.x 5.2.12).                 */
/* ------------------------------------------------------------------------ */

static int checksum_ok(const uint8_t *p, uint32_t n)
{
	uint8_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s = (uint8_t)(s + p[i]);
	return s == 0;
}

/* The RSDP lies on a 16-byte boundary in the BIOS area when the loader did
 * not hand it over (PVH start_info.rsdp_paddr, version >= 1). */
static uint64_t rsdp_scan(void)
{
	for (uint64_t a = 0xe0000; a < 0x100000; a += 16)
		if (!memcmp((const void *)(uintptr_t)a, "RSD PTR ", 8) &&
		    checksum_ok((const uint8_t *)(uintptr_t)a, 20))
			return a;
	return 0;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Fill @ids with the APIC IDs of the enabled processors, in MADT order.
 * Returns how many, 0 if no MADT was found. */
int acpi_find_cpus(uint64_t rsdp, uint32_t *ids, uint32_t max)
{
	const uint8_t *r, *sdt;
	uint32_t entry_size, n_entries, found = 0;

	if (!rsdp)
		rsdp = rsdp_scan();
	if (!rsdp)
		return 0;
	r = (const uint8_t *)(uintptr_t)rsdp;
	if (memcmp(r, "RSD PTR ", 8))
		return 0;
	if (r[15] >= 2 && rd64(r + 24)) {
		sdt = (const uint8_t *)(uintptr_t)rd64(r + 24); /* XSDT */
		entry_size = 8;
	} else {
		sdt = (const uint8_t *)(uintptr_t)rd32(r + 16); /* RSDT */
		entry_size = 4;
	}
	n_entries = (rd32(sdt + 4) - 36) / entry_size;
	for (uint32_t i = 0; i < n_entries; i++) {
		const uint8_t *e = sdt + 36 + i * entry_size;
		const uint8_t *t = (const uint8_t *)(uintptr_t)(entry_size == 8 ? rd64(e) : rd32(e));
		uint32_t len;

		if (memcmp(t, "APIC", 4))
			continue;
		len = rd32(t + 4);
		for (uint32_t off = 44; off + 2 <= len; off += t[off + 1]) {
			if (t[off + 1] < 2)
				break;
			/* Type 0: processor local APIC; flags bit 0 = enabled. */
			if (t[off] == 0 && (rd32(t + off + 4) & 1) && found < max)
				ids[found++] = t[off + 3];
		}
		return (int)found;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Local APIC in xAPIC mode: registers at 0xfee00000 (SDM 3A 11.4.1).  QEMU's
 * TCG has no x2APIC, and xAPIC works under KVM too.                        */
/* ------------------------------------------------------------------------ */

#define APIC_ID 0x20
#define APIC_TPR 0x80
#define APIC_EOI 0xb0
#define APIC_SVR 0xf0
#define APIC_ESR 0x280
#define APIC_ICR_LO 0x300
#define APIC_ICR_HI 0x310
#define APIC_LVT_TIMER 0x320
#define APIC_LVT_ERROR 0x370
#define APIC_TIMER_INIT 0x380
#define APIC_TIMER_DIV 0x3e0
#define ICR_BUSY (1u << 12)  /* delivery status: send pending */
#define ICR_ASSERT (1u << 14)
#define ICR_INIT (5u << 8)
#define ICR_STARTUP (6u << 8)
#define LVT_MASKED (1u << 16)

static inline uint32_t lapic_read(uint32_t reg)
{
	return mmio_read32(LAPIC_BASE + reg);
}

static inline void lapic_write(uint32_t reg, uint32_t v)
{
	mmio_write32(LAPIC_BASE + reg, v);
}

uint32_t lapic_id(void)
{
	return lapic_read(APIC_ID) >> 24;
}

void lapic_init(void)
{
	lapic_write(APIC_TPR, 0);
	lapic_write(APIC_LVT_TIMER, LVT_MASKED);
	lapic_write(APIC_LVT_ERROR, LVT_MASKED);
	/* Software-enable the APIC (SVR bit 8) with the spurious vector. */
	lapic_write(APIC_SVR, 0x100 | VEC_SPURIOUS);
	lapic_write(APIC_ESR, 0);
	lapic_write(APIC_EOI, 0);
}

/* A periodic LAPIC timer interrupt, @count bus cycles apart, divide by 1
 * (QEMU's APIC bus runs at 1 GHz: count 100000 = 100 us). */
void lapic_timer_periodic(uint32_t vector, uint32_t count)
{
	lapic_write(APIC_TIMER_DIV, 0xb);
	lapic_write(APIC_LVT_TIMER, (1u << 17) | vector);
	lapic_write(APIC_TIMER_INIT, count);
}

void lapic_eoi(void)
{
	lapic_write(APIC_EOI, 0);
}

static void icr_wait(void)
{
	/* In xAPIC mode software must not write the ICR while the previous
	 * IPI is still pending (SDM 3A 11.6.1, delivery status). */
	while (lapic_read(APIC_ICR_LO) & ICR_BUSY)
		cpu_pause();
}

/*
 * A fixed-delivery IPI to one APIC ID.  ICR high then low: the write to the
 * low word sends, so both writes happen with interrupts off (an interrupt
 * handler on this CPU that sent an IPI in between would change the
 * destination under us).
 */
void lapic_send(uint32_t apic_id, uint32_t vector)
{
	uint64_t f = irq_save();

	icr_wait();
	lapic_write(APIC_ICR_HI, apic_id << 24);
	lapic_write(APIC_ICR_LO, ICR_ASSERT | vector);
	irq_restore(f);
}

static void send_raw(uint32_t apic_id, uint32_t lo)
{
	icr_wait();
	lapic_write(APIC_ICR_HI, apic_id << 24);
	lapic_write(APIC_ICR_LO, lo);
	icr_wait();
}

void pic_disable(void)
{
	/* Mask the legacy 8259s: the firmware maps IRQ0 (the PIT) onto vector
	 * 8, which would look like a double fault once we enable interrupts. */
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
}

/* ------------------------------------------------------------------------ */
/* SMP: INIT-SIPI-SIPI (SDM 3A 9.4.4.1, "typical AP initialization")         */
/* ------------------------------------------------------------------------ */

#define AP_TRAMP 0x8000
extern const char ap_tramp_start[], ap_tramp_end[];
extern uint64_t ap_boot_rsp, ap_boot_entry;
extern uint32_t ap_boot_cpu;
uint32_t cpus_up = 1;

/* Delays in TSC cycles: the TSC rate is not calibrated; these assume at
 * most a few GHz, and QEMU/KVM do not need the architectural delays anyway. */
static void tsc_delay(uint64_t cycles)
{
	uint64_t t0 = rdtsc();

	while (rdtsc() - t0 < cycles)
		cpu_pause();
}

static int wait_up(uint32_t want, uint64_t cycles)
{
	uint64_t t0 = rdtsc();

	while (__atomic_load_n(&cpus_up, __ATOMIC_ACQUIRE) < want)
		if (rdtsc() - t0 > cycles)
			return 0;
	return 1;
}

void smp_boot(void (*ap_entry)(uint32_t cpu))
{
	/* The trampoline must be below 1 MiB, 4 KiB aligned: the SIPI vector
	 * names the page. */
	memcpy((void *)AP_TRAMP, ap_tramp_start, (size_t)(ap_tramp_end - ap_tramp_start));
	ap_boot_entry = (uint64_t)(uintptr_t)ap_entry;
	for (uint32_t cpu = 1; cpu < nr_cpus; cpu++) {
		/* One AP at a time: they share the ap_boot_* hand-over words. */
		ap_boot_cpu = cpu;
		ap_boot_rsp = (uint64_t)(uintptr_t)&cpu_stacks[cpu][UK_STACK_SIZE];
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		send_raw(apic_ids[cpu], ICR_ASSERT | ICR_INIT);
		tsc_delay(10 * 1000 * 1000);              /* ~10 ms */
		send_raw(apic_ids[cpu], ICR_ASSERT | ICR_STARTUP | (AP_TRAMP >> 12));
		if (!wait_up(cpu + 1, 2 * 1000 * 1000)) {  /* ~200 us, then a second SIPI */
			send_raw(apic_ids[cpu], ICR_ASSERT | ICR_STARTUP | (AP_TRAMP >> 12));
			if (!wait_up(cpu + 1, 20ULL * 1000 * 1000 * 1000))
				panic("CPU %u (APIC ID %u) did not start", cpu, apic_ids[cpu]);
		}
	}
}
