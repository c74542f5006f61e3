/* SPDX-License-Identifier: MIT */
/*
 * ft_main.c - the freestanding core, linked and run with no C library at all.
 *
 * This is what a unikernel or hypervisor does with the core: its own entry
 * point (_start, x86-64 Linux), memset/memcpy/memmove/memcmp (the
 * compiler may emit calls to them even under -ffreestanding), the engine in
 * a static buffer (tlbpol_engine_init(), no allocator), and "interrupts"
 * delivered by calling tlbpol_handle_ipi() directly from ops->send_ipi (one
 * thread; the initiator serves inboxes while it waits, so this cannot
 * deadlock).  It is linked with -nostdlib -static against the core archive
 * only, so a core that needs anything from libc or libgcc fails to link here.
 *
 * Scenario, 2 CPUs, x86-64, default rules:
 *  - both CPUs switch to one address space;
 *  - CPU 0 submits a PROTECT downgrade (P|W|U|A -> P|U|A): flush_local must
 *    run on CPU 0 and, through send_ipi -> tlbpol_handle_ipi, on CPU 1;
 *  - CPU 0 submits a spurious x86 write fault: no flush anywhere.
 *
 * Exit status: 0 on success, otherwise the number of the first failed check
 * (see enum ft_fail).  The exit is the raw exit syscall (60).
 */
#include <tlbpol/tlbpol.h>

#if !defined(__x86_64__) || !defined(__linux__)
#error "ft_main.c is for x86-64 Linux only"
#endif

/* ------------------------------------------------------------------------ */
/* What a C library would have provided                                     */
/* ------------------------------------------------------------------------ */

/* memset, memcpy, memmove, memcmp: support/mem.c, linked in. */
#include "support/mem.h"

static __attribute__((noreturn)) void sys_exit(long code)
{
	/* exit(2): x86-64 Linux syscall 60; the only thread, so this ends it all. */
	__asm__ __volatile__("syscall" : : "a"(60L), "D"(code) : "rcx", "r11", "memory");
	__builtin_unreachable();
}

/* ------------------------------------------------------------------------ */
/* The host: two simulated CPUs                                             */
/* ------------------------------------------------------------------------ */

#define NR_CPUS 2
#define AS_TAG 0x42
#define VA 0x7f0000001000ULL

enum ft_fail {
	FT_OK = 0,
	FT_SIZE = 10,        /* tlbpol_engine_size() returned 0 */
	FT_SIZE_BIG,         /* 11: engine larger than the static buffer */
	FT_INIT_MISALIGNED,  /* 12: misaligned memory not refused with -EINVAL */
	FT_INIT,             /* 13: tlbpol_engine_init() failed */
	FT_AS_OPEN,          /* 14: tlbpol_as_open() failed */
	FT_SWITCH0,          /* 15: tlbpol_switch(cpu 0) failed or asked for a flush */
	FT_SWITCH1,          /* 16: tlbpol_switch(cpu 1) failed or asked for a flush */
	FT_SWITCH_FLUSHED,   /* 17: a switch called a callback */
	FT_DG_DECIDE,        /* 18: tlbpol_decide(downgrade) failed */
	FT_DG_DECISION,      /* 19: downgrade is not SHOOTDOWN / BY_NOW / DOWNGRADE */
	FT_DG_SUBMIT,        /* 20: tlbpol_submit(downgrade) failed */
	FT_DG_FLUSH0,        /* 21: CPU 0 not flushed exactly once */
	FT_DG_FLUSH1,        /* 22: CPU 1 not flushed exactly once */
	FT_DG_IPI,           /* 23: send_ipi not called once from CPU 0 for {1} */
	FT_DG_SERVED,        /* 24: tlbpol_handle_ipi(1) did not serve one request */
	FT_DG_WHAT,          /* 25: a flush was not PAGES of [VA, 1 page, 4K] in AS_TAG */
	FT_SP_DECIDE,        /* 26: tlbpol_decide(spurious) failed */
	FT_SP_DECISION,      /* 27: spurious fault is not NONE / SPURIOUS */
	FT_SP_SUBMIT,        /* 28: tlbpol_submit(spurious) failed */
	FT_SP_FLUSHED,       /* 29: the spurious fault flushed or interrupted */
	FT_STATS,            /* 30: tlbpol_stats_read() failed */
	FT_STATS_VALUES,     /* 31: counters disagree with what happened */
	FT_BAD_ARG,          /* 32: a NULL event was not refused with -EINVAL */
	FT_CTX,              /* 33: a callback got the wrong ctx or CPU */
	FT_CLOSE,            /* 34: switching away / closing the AS failed */
};

struct host {
	struct tlbpol_engine *eng;
	unsigned flushes[NR_CPUS];
	unsigned ipis;
	unsigned ipi_from_bad, ipi_targets_bad, served_bad;
	unsigned bad_ctx;
	unsigned bad_flush; /* a flush that is not exactly the expected one */
};

static struct host host;

/* The engine lives here: static, 64-byte aligned, zeroed by the loader. */
static _Alignas(64) unsigned char engine_mem[1024 * 1024];

static void flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct host *h = (struct host *)ctx;

	if (h != &host || cpu >= NR_CPUS) {
		host.bad_ctx++;
		return;
	}
	h->flushes[cpu]++;
	/* The only flush in this program is the downgrade of one 4K page. */
	if (f->as_tag != AS_TAG || f->kind != TLBPOL_FLUSH_PAGES || f->nr_ranges != 1 ||
	    f->ranges[0].va != VA || f->ranges[0].nr_pages != 1 ||
	    f->ranges[0].page_shift != 12)
		h->bad_flush++;
}

/* "Deliver" the interrupt: run each target's handler right here. */
static void send_ipi(void *ctx, uint32_t from_cpu, const struct tlbpol_cpuset *targets)
{
	struct host *h = (struct host *)ctx;

	if (h != &host) {
		host.bad_ctx++;
		return;
	}
	h->ipis++;
	if (from_cpu != 0)
		h->ipi_from_bad++;
	if (tlbpol_cpuset_count(targets) != 1 || !tlbpol_cpuset_test(targets, 1))
		h->ipi_targets_bad++;
	for (int cpu = tlbpol_cpuset_next(targets, -1); cpu >= 0;
	     cpu = tlbpol_cpuset_next(targets, cpu))
		if (tlbpol_handle_ipi(h->eng, (uint32_t)cpu) != 1)
			h->served_bad++;
}

static unsigned total_flushes(void)
{
	unsigned n = 0;

	for (int i = 0; i < NR_CPUS; i++)
		n += host.flushes[i];
	return n;
}

/* An event on the one 4K page at VA; the members not named are zero. */
static struct tlbpol_event page_event(uint32_t kind, uint32_t flags, uint32_t old_pte,
				      uint32_t new_pte)
{
	struct tlbpol_event ev = {
		.size = sizeof(ev), .kind = kind, .flags = flags, .page_shift = 12,
		.va = VA, .nr_pages = 1, .old_pte = old_pte, .new_pte = new_pte,
	};

	return ev;
}

static int run(void)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(struct tlbpol_ops),
		.flush_local = flush_local,
		.send_ipi = send_ipi,
	};
	const uint32_t P = TLBPOL_PTE_PRESENT, W = TLBPOL_PTE_WRITE, U = TLBPOL_PTE_USER,
		       A = TLBPOL_PTE_ACCESSED, D = TLBPOL_PTE_DIRTY;
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng = 0;
	struct tlbpol_as *as = 0;
	struct tlbpol_event ev;
	struct tlbpol_decision d;
	struct tlbpol_stats st;
	size_t need;
	int need_flush;

	tlbpol_config_init(&cfg, NR_CPUS, TLBPOL_ARCH_X86_64);
	cfg.ops = &ops;
	cfg.ops_ctx = &host;
	need = tlbpol_engine_size(&cfg);
	if (need == 0)
		return FT_SIZE;
	if (need > sizeof(engine_mem) - 64)
		return FT_SIZE_BIG;
	if (tlbpol_engine_init(&eng, engine_mem + 8, sizeof(engine_mem) - 8, &cfg) != -22)
		return FT_INIT_MISALIGNED;
	if (tlbpol_engine_init(&eng, engine_mem, sizeof(engine_mem), &cfg) != 0 || !eng)
		return FT_INIT;
	host.eng = eng;

	if (tlbpol_as_open(eng, AS_TAG, &as) != 0 || !as)
		return FT_AS_OPEN;
	need_flush = -1;
	if (tlbpol_switch(eng, 0, as, &need_flush) != 0 || need_flush != 0)
		return FT_SWITCH0;
	need_flush = -1;
	if (tlbpol_switch(eng, 1, as, &need_flush) != 0 || need_flush != 0)
		return FT_SWITCH1;
	if (total_flushes() || host.ipis)
		return FT_SWITCH_FLUSHED;

	/* mprotect(PROT_READ) of one page both CPUs may cache. */
	ev = page_event(TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A);
	if (tlbpol_decide(eng, as, 0, &ev, &d) != 0)
		return FT_DG_DECIDE;
	if (d.action != TLBPOL_ACT_SHOOTDOWN || d.deadline != TLBPOL_BY_NOW ||
	    d.reason != TLBPOL_WHY_DOWNGRADE)
		return FT_DG_DECISION;
	if (tlbpol_submit(eng, as, 0, &ev, &d) != 0)
		return FT_DG_SUBMIT;
	if (host.bad_ctx)
		return FT_CTX;
	if (host.flushes[0] != 1)
		return FT_DG_FLUSH0;
	if (host.flushes[1] != 1)
		return FT_DG_FLUSH1;
	if (host.ipis != 1 || host.ipi_from_bad || host.ipi_targets_bad)
		return FT_DG_IPI;
	if (host.served_bad)
		return FT_DG_SERVED;
	if (host.bad_flush)
		return FT_DG_WHAT;

	/* A spurious write fault: the PTE already allowed the write. */
	ev = page_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, P | W | U | A | D, P | W | U | A | D);
	if (tlbpol_decide(eng, as, 0, &ev, &d) != 0)
		return FT_SP_DECIDE;
	if (d.action != TLBPOL_ACT_NONE || d.reason != TLBPOL_WHY_SPURIOUS)
		return FT_SP_DECISION;
	if (tlbpol_submit(eng, as, 0, &ev, &d) != 0)
		return FT_SP_SUBMIT;
	if (total_flushes() != 2 || host.ipis != 1)
		return FT_SP_FLUSHED;

	if (tlbpol_stats_read(eng, -1, &st) != 0)
		return FT_STATS;
	if (st.events != 2 || st.local_flushes != 1 || st.remote_flushes != 1 ||
	    st.ipis_sent != 1 || st.flushes_avoided != 1 || st.pages_flushed != 2 ||
	    st.by_reason[TLBPOL_WHY_DOWNGRADE] != 1 || st.by_reason[TLBPOL_WHY_SPURIOUS] != 1)
		return FT_STATS_VALUES;

	if (tlbpol_decide(eng, as, 0, 0, &d) != -22)
		return FT_BAD_ARG;

	/* Lazy CPUs keep the address space loaded: unload them to close it. */
	if (tlbpol_switch(eng, 0, 0, 0) != 0 || tlbpol_switch(eng, 1, 0, 0) != 0 ||
	    tlbpol_as_close(eng, as) != -16 || tlbpol_unload(eng, 0) != 0 ||
	    tlbpol_unload(eng, 1) != 0 || tlbpol_as_close(eng, as) != 0)
		return FT_CLOSE;
	if (host.bad_ctx)
		return FT_CTX;
	return FT_OK;
}

/* Called from _start with the stack aligned as the ABI wants at a call. */
__attribute__((noreturn, used)) void ft_start_c(void);

__attribute__((noreturn, used)) void ft_start_c(void)
{
	sys_exit(run());
}

/*
 * The entry point.  The kernel enters with %rsp 16-byte aligned and no
 * return address; mark the outermost frame (%rbp = 0), keep %rsp aligned
 * for the call, and never return.
 */
__asm__(".text\n"
	".globl _start\n"
	".type _start, @function\n"
	"_start:\n"
	"	xorl %ebp, %ebp\n"
	"	andq $-16, %rsp\n"
	"	call ft_start_c\n"
	"	hlt\n"
	".size _start, .-_start\n");
