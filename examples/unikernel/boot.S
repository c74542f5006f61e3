/* SPDX-License-Identifier: MIT */
/*
 * boot.S - PVH entry, the switch to long mode, the AP trampoline, interrupt
 * stubs and the probe instructions of the stale-TLB check.
 *
 * PVH boot protocol (xen/include/public/arch-x86/hvm/start_info.h, what QEMU's
 * -kernel implements for an ELF with the note below): the loader enters the
 * 32-bit entry point in flat protected mode, paging off, interrupts off,
 * %ebx = physical address of struct hvm_start_info.
 */
#define CR0_PE (1 << 0)
#define CR0_WP (1 << 16)   /* ring 0 honours R/W=0: the downgrade test needs it */
#define CR0_PG (1 << 31)
#define CR4_PAE (1 << 5)
#define CR4_PGE (1 << 7)   /* global pages: kernel mappings survive CR3 writes */
#define MSR_EFER 0xc0000080
#define EFER_LME (1 << 8)

#define SEL_CODE64 0x08
#define SEL_DATA 0x10
#define SEL_CODE32 0x18

#define UK_STACK_SIZE (32 * 1024) /* keep in sync with kernel.h */
#define AP_TRAMP 0x8000           /* SIPI vector 0x08: CS = 0x0800, IP = 0 */

/* ------------------------------------------------------------------------ */
/* The PVH note: XEN_ELFNOTE_PHYS32_ENTRY (18), name "Xen".  In a 64-bit ELF
 * QEMU reads the descriptor as a 64-bit value (hw/i386/x86.c
 * read_pvh_start_addr()), and finds it at header + 12 + align(namesz,
 * p_align): the note segment must be 4-byte aligned, as Linux's is. */
	.section .note.Xen, "a"
	.p2align 2
	.long 4            /* namesz: "Xen\0" */
	.long 8            /* descsz */
	.long 18           /* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.p2align 2
	.quad pvh_start

/* ------------------------------------------------------------------------ */
/* GDT and the boot page tables (initialised data, so zeroing .bss leaves
 * them alone). */
	.data
	.p2align 4
	.globl gdt
gdt:
	.quad 0                     /* null */
	.quad 0x00af9a000000ffff    /* 0x08: 64-bit code, DPL 0 */
	.quad 0x00cf92000000ffff    /* 0x10: flat data */
	.quad 0x00cf9a000000ffff    /* 0x18: flat 32-bit code (AP trampoline) */
gdt_end:
	.p2align 4
	.globl gdt_desc
gdt_desc:
	.word gdt_end - gdt - 1
	.quad gdt                   /* lgdt in 32-bit mode reads the low 4 bytes */

/*
 * Identity map of the first 4 GiB with 2 MiB pages (RAM and the local APIC
 * at 0xfee00000).  Global (G) so that a CR3 write flushes only the test
 * region's 4 KiB entries, as a kernel's own mappings survive a process's
 * flush.  The top 32 MiB (APIC, IOAPIC) is uncached (PCD|PWT).  The test
 * region lives elsewhere (PML4 slot 1, 4 KiB pages only, see mm.c): QEMU's
 * TCG turns an invlpg inside the span of cached large pages into a full
 * flush, so test pages must lie outside it.
 */
	.p2align 12
	.globl pml4
pml4:
	.quad pdpt_ident + 0x3      /* P | W */
	.fill 511, 8, 0
	.p2align 12
pdpt_ident:
	.quad pd_ident + 0x0000 + 0x3
	.quad pd_ident + 0x1000 + 0x3
	.quad pd_ident + 0x2000 + 0x3
	.quad pd_ident + 0x3000 + 0x3
	.fill 508, 8, 0
	.p2align 12
pd_ident:
	.set i, 0
	.rept 2048
	.if i >= 0x7f0
	.quad (i << 21) | 0x19b     /* P|W|PWT|PCD|PS|G */
	.else
	.quad (i << 21) | 0x183     /* P|W|PS|G */
	.endif
	.set i, i + 1
	.endr

/* Handed from the BSP to the AP it is starting (smp_boot()). */
	.p2align 3
	.globl ap_boot_rsp, ap_boot_cpu, ap_boot_entry
ap_boot_rsp:
	.quad 0
ap_boot_entry:
	.quad 0
ap_boot_cpu:
	.long 0

/* First thing in 64-bit code, on every CPU: the flat data segment, null
 * FS and GS. */
.macro LOAD_DATA_SEGMENTS_64
	mov $SEL_DATA, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %eax, %eax
	mov %ax, %fs
	mov %ax, %gs
.endm

/* Paging on with PAE + long mode enable = IA-32e mode (SDM 3A 10.8.5): PAE
 * and EFER.LME before CR0.PG, then a far jump to a 64-bit code segment. */
.macro ENTER_LONG_MODE target
	lgdt gdt_desc
	mov %cr4, %eax
	or $(CR4_PAE | CR4_PGE), %eax
	mov %eax, %cr4
	mov $pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	mov %cr0, %eax
	or $(CR0_PG | CR0_WP | CR0_PE), %eax
	mov %eax, %cr0
	ljmp $SEL_CODE64, $\target
.endm

/* ------------------------------------------------------------------------ */
/* BSP entry */
	.section .text.boot, "ax"
	.code32
	.globl pvh_start
pvh_start:
	cli
	cld
	/* %ebx = start_info: keep it there (rep stos and rdmsr/wrmsr leave it). */
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb
	ENTER_LONG_MODE bsp_long64

	.code64
bsp_long64:
	LOAD_DATA_SEGMENTS_64
	/* CPU 0 runs on cpu_stacks[0] (this_cpu() derives from %rsp). */
	mov $(cpu_stacks + UK_STACK_SIZE), %rsp
	mov %ebx, %edi              /* zero-extends: kmain(start_info) */
	xor %ebp, %ebp
	call kmain
1:	cli
	hlt
	jmp 1b

/* ------------------------------------------------------------------------ */
/*
 * AP trampoline: copied to AP_TRAMP (below 1 MiB, 4 KiB aligned) by
 * smp_boot().  A STARTUP IPI with vector 0x08 starts the AP in real mode at
 * 0x0800:0000 (SDM 3A 9.4.4).  It loads our GDT (the descriptor copy below,
 * addressed through DS = 0), sets PE and jumps to ap_start32 in the kernel
 * image, which goes on to long mode like the BSP.
 */
	.code16
	.globl ap_tramp_start, ap_tramp_end
ap_tramp_start:
	cli
	cld
	xorw %ax, %ax
	movw %ax, %ds
	lgdtl AP_TRAMP + (ap_tramp_gdt - ap_tramp_start)
	movl %cr0, %eax
	orl $CR0_PE, %eax
	movl %eax, %cr0
	ljmpl $SEL_CODE32, $ap_start32
	.p2align 3
ap_tramp_gdt:
	.word gdt_end - gdt - 1
	.long gdt
ap_tramp_end:

	.code32
ap_start32:
	mov $SEL_DATA, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	ENTER_LONG_MODE ap_long64

	.code64
ap_long64:
	LOAD_DATA_SEGMENTS_64
	mov ap_boot_rsp(%rip), %rsp
	mov ap_boot_cpu(%rip), %edi
	xor %ebp, %ebp
	call *ap_boot_entry(%rip)
1:	cli
	hlt
	jmp 1b

/* ------------------------------------------------------------------------ */
/* Interrupt stubs: one per vector, pushing a dummy error code where the CPU
 * pushes none (SDM 3A 6.13: 8, 10-14, 17, 21, 29, 30 have one), then the
 * vector, then a common path that saves the general registers (the only
 * state C code touches, see kernel.h) and calls trap_dispatch(frame). */
	.text
	.altmacro
.macro ISR_STUB n
	.p2align 4
isr_stub_\n:
	.if (\n == 8) || ((\n >= 10) && (\n <= 14)) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp isr_common
.endm
.macro ISR_ADDR n
	.quad isr_stub_\n
.endm

	.set i, 0
	.rept 256
	ISR_STUB %i
	.set i, i + 1
	.endr

isr_common:
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	/* 5 words pushed by the CPU (it aligns %rsp to 16 first in 64-bit
	 * mode), 2 by the stub, 15 here: %rsp is 16-byte aligned at the call. */
	mov %rsp, %rdi
	cld
	call trap_dispatch
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
	add $16, %rsp               /* vector, error code */
	iretq

	.section .rodata
	.p2align 3
	.globl isr_table
isr_table:
	.set i, 0
	.rept 256
	ISR_ADDR %i
	.set i, i + 1
	.endr
	.noaltmacro

/* ------------------------------------------------------------------------ */
/*
 * The stale-TLB probes.  Each is one access through the TLB; if it faults,
 * the page-fault handler sees %rip at the *_insn label, sets %rax to
 * PROBE_FAULT and resumes at *_done (an exception-table fixup, as Linux's
 * get_user()).  So a probe returns what the CPU's translation gave, or that
 * it had none.
 */
	.text
	.globl probe_read, probe_read_insn, probe_read_done
	.globl probe_write, probe_write_insn, probe_write_done
probe_read:                     /* uint64_t probe_read(const volatile uint64_t *va) */
probe_read_insn:
	mov (%rdi), %rax
probe_read_done:
	ret

probe_write:                    /* uint64_t probe_write(volatile uint64_t *va, uint64_t v) */
probe_write_insn:
	mov %rsi, (%rdi)
	xor %eax, %eax              /* 0: the write went through */
probe_write_done:
	ret

	.section .note.GNU-stack, "", @progbits
