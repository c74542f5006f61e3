/* SPDX-License-Identifier: MIT */
/*
 * libtlbpol: decide when a TLB must be flushed, and drive the flushes.
 *
 * This header is the whole public interface and its documentation.  It
 * compiles as C99, C11, C++ and with -ffreestanding, and uses only fixed-width
 * integer types so that language bindings can mirror it.
 *
 * Conventions (apply to every function below):
 *  - Functions returning int return 0 (or a count >= 0) on success and a
 *    negative errno value on failure: -EINVAL for a bad argument, -ERANGE for a
 *    CPU, address or size out of range, -ENOMEM for too little memory, -EBUSY
 *    for an object still in use, -EEXIST for a duplicate, -E2BIG for a
 *    structure larger than this library knows with a field set past it
 *    (see `size` below).  A failed call
 *    changes nothing: no pending flush is lost and no counter moves.
 *  - A CPU is an index 0 .. nr_cpus-1.  Calls made *for* one CPU (those taking
 *    a `cpu` argument, except tlbpol_decide() and tlbpol_stats_read()) must not
 *    run concurrently with each other, as in a kernel with preemption disabled
 *    on that CPU.  Calls for different CPUs may run concurrently.
 *  - Nesting, the one rule: of the calls for one CPU, only
 *    tlbpol_handle_ipi() may run inside another (from an interrupt that
 *    lands in the middle of an engine call, or from a callback such as
 *    ops->relax or ops->flush_local); it serves what it can and returns.
 *    Every other call for @cpu made while an engine call for @cpu is in
 *    progress on it -- tlbpol_tick() from a timer interrupt that lands in
 *    tlbpol_submit(), an engine call from a callback or from a deferred
 *    free -- returns -EBUSY and does nothing: call it again later.
 *  - Interrupts: tlbpol_switch() (tlbpol_switch_tag() with cfg->tags) and
 *    tlbpol_unload() run with interrupts off, as the hardware switch they
 *    describe; every other call may run
 *    with interrupts on or off, but a call that may wait for other CPUs
 *    (tlbpol_submit(), tlbpol_flush(), tlbpol_defer_free(), tlbpol_tick())
 *    keeps serving this CPU's own requests while it waits, so the host
 *    need not take the interrupt for that (unless it promises, with
 *    TLBPOL_CFGF_WAIT_IRQS, that ops->relax takes them: then a call that
 *    waits with interrupts off, a tick from the timer interrupt, is served
 *    from the wait only after TLBPOL_WAIT_IRQS_FALLBACK_TURNS turns without
 *    an acknowledgement, or cfg->wait_limit: make such calls with
 *    interrupts on where the wait's latency matters).  A CPU must not
 *    spin with interrupts off on anything another CPU may hold while it
 *    waits inside the engine (a page-table lock): that CPU waits for this
 *    one's acknowledgement.
 *  - The engine never blocks on a lock it does not own; where it waits for
 *    other CPUs it spins on ops->relax and keeps serving the waiting CPU's own
 *    incoming requests (or, with TLBPOL_CFGF_WAIT_IRQS, ops->relax does, by
 *    taking the interrupts), so two CPUs that shoot each other down cannot
 *    deadlock.  Callbacks are never invoked with an engine lock held.
 *  - Structures passed in begin with a `size` field: set it to sizeof.  A
 *    size larger than this library's structure (a caller built against a
 *    newer header) is accepted only when every byte past what this library
 *    knows is zero, and at most 4096; otherwise the call fails with -E2BIG
 *    (as Linux's copy_struct_from_user()): a field it would ignore is never
 *    ignored silently.
 *
 * Where each call may run.  "CPU": a call for @cpu, made on @cpu (or, for
 * tlbpol_cpu_state(), by whoever acts for it while it cannot run); "any":
 * any thread at any time.  "irq": from an interrupt handler; "irqs off":
 * with interrupts disabled; "waits": may spin until other CPUs acknowledge,
 * serving this CPU's own requests meanwhile; "nested": made while another
 * engine call for the same CPU is in progress on it (an interrupt landing
 * in it, or a callback of it).  tests/test_obligations.c exercises each
 * "yes" and each -EBUSY.
 *
 *   call                                 for  irq  irqs off  waits  nested
 *   tlbpol_handle_ipi                    CPU  yes  yes       no     yes
 *   tlbpol_tick                          CPU  yes  yes       yes    -EBUSY
 *   tlbpol_submit, _flush, _defer_free   CPU  yes  yes       yes    -EBUSY
 *   tlbpol_stamp, _stamp_settle          CPU  yes  yes       yes    -EBUSY
 *   tlbpol_cpu_state                     CPU  yes  yes       no     -EBUSY
 *   tlbpol_switch, _switch_tag, _unload  CPU  no   must      no     -EBUSY
 *   tlbpol_decide, _stats_read,          any  yes  yes       no     yes
 *     _frees_pending, _stamp_pending, _engine_rules, _engine_topology,
 *     _as_tag,
 *     _cpuset_*, _*_str, _rules_parse, _version, _config_init,
 *     _engine_size
 *   tlbpol_as_open, tlbpol_as_close      any  no   yes       no     yes
 *   tlbpol_engine_init                   any  yes  yes       no     -
 *   hosted: tlbpol_engine_new, _free,    process context, not from a
 *     _engine_set_*, _as_lookup,         callback (they allocate, or
 *     _thread_*, _quiescent              wait for an RCU grace period)
 *
 * (tlbpol_as_open() and tlbpol_as_close() take a spinlock for an instant:
 * not from an interrupt that may land on a CPU holding it.  A call that
 * waits and runs with interrupts off relies on the engine serving its own
 * requests, which it does; see the rule on page-table locks above.  Under
 * TLBPOL_CFGF_WAIT_IRQS it does so only once a wait has seen no
 * acknowledgement for TLBPOL_WAIT_IRQS_FALLBACK_TURNS turns (or
 * cfg->wait_limit): there, make waiting calls with interrupts on where
 * their latency matters.)
 *
 * What the host owes the engine, on every CPU:
 *  1. Interrupts.  A CPU that ops->send_ipi named calls tlbpol_handle_ipi()
 *     for itself soon: the initiator spins until it has.  cfg->wait_limit
 *     makes the engine re-send and report (ops->stuck); it never skips it.
 *  2. Ticks.  Every running CPU calls tlbpol_tick() periodically (its timer
 *     tick): lazy requests complete as CPUs tick or switch (a target that
 *     has not taken one within cfg->free_ticks of its initiator's ticks is
 *     interrupted, or left to catch up if it went idle, lazy or preempted),
 *     and work due by a free completes from a tick after cfg->free_ticks of
 *     them.
 *  3. Switches.  tlbpol_switch() at every address-space switch, with
 *     interrupts off from the call to the CR3 / TTBR / satp write, and the
 *     flush need_flush asks for as part of that write (with cfg->tags,
 *     tlbpol_switch_tag(): the tag it gives, and the flush it asks for).
 *  4. States.  tlbpol_cpu_state() when a CPU idles, blocks (PREEMPTED: a
 *     thread-CPU that sleeps, so that nobody waits for it), goes offline or
 *     comes back; when it returns 1 (from PREEMPTED to RUNNING or IDLE,
 *     from IDLE to RUNNING), flush before the CPU executes anything.
 *  5. ops->relax (optional) must return.  It should let its CPU take its
 *     own interrupts where the host delivers them by polling, and yield
 *     where CPUs are threads on fewer cores (a spinning wait otherwise
 *     lasts until the scheduler's next tick); it may pause, yield or sleep
 *     briefly; it may call tlbpol_handle_ipi() for its CPU and no other
 *     engine function for it (-EBUSY).
 *  6. Stamps.  tlbpol_stamp() on the CPU that submitted the stamped events,
 *     the task not migrating from the first event to that call: a stamp
 *     covers only its own CPU's work (elsewhere it fails with -ENOENT).
 */
#ifndef TLBPOL_TLBPOL_H
#define TLBPOL_TLBPOL_H

#include <stddef.h>
#include <stdint.h>

#include <tlbpol/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * TLBPOL_FREESTANDING: the kernel core archive (libtlbpol-core.a) has no
 * hosted layer: no tlbpol_engine_new(), no live reconfiguration, no thread
 * registration of liburcu, no tlbpol_as_lookup().  These are declared
 * TLBPOL_HOSTED_API.  Code that links the core archive defines
 * TLBPOL_FREESTANDING (tlbpol-core.pc's Cflags carry -DTLBPOL_FREESTANDING),
 * and a call to one of them is then a compile error -- the "unavailable"
 * attribute of gcc >= 12 and clang; gcc's "error" attribute, which fails
 * when the call is compiled, on older gcc -- rather than a link error in a
 * kernel's final link, or a warning about an implicit declaration.  The
 * headers are the same for both libraries, so one prefix holds both.
 */
#ifndef TLBPOL_API
#if defined(TLBPOL_BUILDING) && defined(__GNUC__)
#define TLBPOL_API __attribute__((visibility("default")))
#else
#define TLBPOL_API
#endif
#endif

#ifndef TLBPOL_HOSTED_API
#if defined(TLBPOL_FREESTANDING) && defined(__has_attribute)
#if __has_attribute(unavailable)
#define TLBPOL_HOSTED_API \
	__attribute__((unavailable("hosted build only: libtlbpol-core.a has no hosted layer")))
#elif __has_attribute(error)
#define TLBPOL_HOSTED_API \
	__attribute__((error("hosted build only: libtlbpol-core.a has no hosted layer")))
#endif
#endif
#ifndef TLBPOL_HOSTED_API
#define TLBPOL_HOSTED_API TLBPOL_API
#endif
#endif

/**
 * tlbpol_version() - the library's version as "MAJOR.MINOR.PATCH".
 *
 * Context: any.
 * Return: a static string, never NULL.  It names the library that is linked,
 * which may be newer than the TLBPOL_VERSION_* macros this program saw.
 */
TLBPOL_API const char *tlbpol_version(void);

/* ------------------------------------------------------------------------ */
/* Architecture profiles and rules                                          */
/* ------------------------------------------------------------------------ */

/**
 * enum tlbpol_arch - what the engine may assume of the hardware.
 * @TLBPOL_ARCH_GENERIC: nothing: no hardware A/D bits, no invalidation on a
 *	fault, no broadcast invalidation, and invalid entries may be cached
 *	(RISC-V without Svvptc): an install is flushed locally, and on every
 *	CPU for a kernel page (not USER, or GLOBAL), which has no spurious-
 *	fault path to recover by; submit it again after storing it (enum
 *	tlbpol_event_kind).  Conservative.
 * @TLBPOL_ARCH_X86_64: what the x86 architecture guarantees: the CPU sets
 *	A/D bits itself and, once a PTE is not present, can no longer set them
 *	(Linux pmdp_invalidate_ad()); a page fault invalidates the faulting
 *	CPU's entries for that address (Intel SDM vol. 3A 4.10.4.1); no flush
 *	is needed when R/W goes 0->1 or NX 1->0 (SDM 4.10.4.3).  A U/S change
 *	is flushed both ways (with SMEP/SMAP, U/S 0->1 removes supervisor
 *	access).  Page sizes 4 KiB, 2 MiB, 1 GiB.
 * @TLBPOL_ARCH_ARM64: the Arm architecture: broadcast TLBI, AF and DBM
 *	(hardware dirty state), no invalidation on a fault.  Page and block
 *	sizes of the 4K, 16K and 64K granules, and contiguous hints.
 * @TLBPOL_ARCH_RISCV64: (release 0.3) the RISC-V privileged architecture,
 *	RV64 with Sv39, Sv48 or Sv57: pages 4 KiB, 64 KiB (Svnapot), 2 MiB,
 *	1 GiB, 512 GiB, 256 TiB.  SFENCE.VMA orders only the local hart
 *	(remote harts take an interrupt or an SBI remote fence: there is no
 *	broadcast invalidation in the ISA); a fault does not invalidate; A
 *	and D are set either by a page fault (Svade) or by the hardware's
 *	atomic compare-and-set of the PTE, which fails once the PTE changed
 *	(Svadu), so a PTE without D was not written through any cached entry
 *	(priv. spec, "Virtual Address Translation Process").  The spec
 *	permits caching PTEs whose V bit is clear ("SFENCE.VMA"): an install
 *	is flushed locally, and on every CPU for a kernel page, as on
 *	GENERIC, unless the host declares Svvptc (TLBPOL_CFGF_SVVPTC).
 */
enum tlbpol_arch {
	TLBPOL_ARCH_GENERIC = 0,
	TLBPOL_ARCH_X86_64 = 1,
	TLBPOL_ARCH_ARM64 = 2,
	TLBPOL_ARCH_RISCV64 = 3,
};
#define TLBPOL_ARCH_MAX 4

/*
 * Rule bits.  Each is one optimisation that can be switched off, measured
 * alone and explained.  With a bit off the engine behaves as Linux did before
 * the change that introduced it (see each bit's origin).
 */
/* No remote flush for a spurious fault (the PTE already allowed the access);
 * x86: no flush at all, other arches: local only.  Linux 61c77326d1df
 * "x86, mm: Avoid unnecessary TLB flush". */
#define TLBPOL_RULE_SPURIOUS_NOFLUSH (1ULL << 0)
/* Flush the pages of a range instead of the whole address space, up to
 * flush_ceiling pages.  Linux 611ae8e3f520 "x86/tlb: enable tlb flush range
 * support for x86". */
#define TLBPOL_RULE_RANGE_FLUSH (1ULL << 1)
/* No access-flag update and no flush on a retried fault whose PTE is already
 * installed (FAULT_FLAG_TRIED).  Linux b7333b58f358 "mm/memory.c: skip
 * spurious TLB flush for retried page fault". */
#define TLBPOL_RULE_RETRY_NOFLUSH (1ULL << 2)
/* Defer flushes of unmap/reclaim/migrate to the event's deadline and send one
 * shootdown per batch.  Linux 72b252aed506 "mm: send one IPI per CPU to TLB
 * flush all entries after unmapping pages" and d950c9477d51 "mm: defer flush
 * of writable TLB entries". */
#define TLBPOL_RULE_BATCH (1ULL << 3)
/* No synchronous flush when the accessed bit is cleared for aging.  Linux
 * b13b1d2d8692 "x86/mm: In the PTE swapout page reclaim case clear the
 * accessed bit instead of flushing the TLB". */
#define TLBPOL_RULE_AGING_NOFLUSH (1ULL << 4)
/* No remote flush when a PTE only becomes more permissive.  x86: none at all;
 * other arches: the initiating CPU flushes locally (a stale, stricter entry
 * elsewhere is harmless and is fixed by that CPU's spurious fault). */
#define TLBPOL_RULE_UPGRADE_NOFLUSH (1ULL << 5)
/* Target only CPUs that may cache the address space (Linux mm_cpumask). */
#define TLBPOL_RULE_FOOTPRINT (1ULL << 6)
/* Do not interrupt idle/lazy CPUs; they flush when they next switch in,
 * never when page tables were freed (Linux lazy TLB). */
#define TLBPOL_RULE_LAZY_CPUS (1ULL << 7)
/* A CPU skips the flush of a request its flushed generation covers, and
 * flushes a range only when that brings it exactly up to date, else the
 * whole address space, catching up with every flush posted so far (Linux
 * tlb_gen, flush_tlb_func()).  Up to release 0.2 it also left such CPUs out
 * at the initiator: that is TLBPOL_RULE_GEN_TARGETS now. */
#define TLBPOL_RULE_GEN_SKIP (1ULL << 8)
/* A CPU receiving requests from several initiators serves them with one
 * merged flush per address space: their ranges' union, or, under
 * TLBPOL_RULE_GEN_SKIP, one whole flush when it serves more than one. */
#define TLBPOL_RULE_RECEIVER_MERGE (1ULL << 9)
/* Use a broadcast (ops->broadcast, or ops->bcast_issue and ops->bcast_sync:
 * INVLPGB, TLBI IS, a hypercall) or a remote action (ops->remote_action:
 * RAR, an SBI fence) where the cost model says it is cheaper than
 * interrupts (struct tlbpol_backend). */
#define TLBPOL_RULE_BROADCAST (1ULL << 10)
/* Interrupt one leader per NUMA node, which forwards within its node. */
#define TLBPOL_RULE_NUMA_FANOUT (1ULL << 11)
/* For events flagged TLBPOL_EVF_LAZY_OK, complete the flush at each CPU's next
 * switch or tick with no interrupt (LATR). */
#define TLBPOL_RULE_LAZY_UNMAP (1ULL << 12)
/* A preempted vCPU is not interrupted; it flushes before it next runs (KVM PV
 * flush): told by tlbpol_cpu_state() (a hypervisor embedding the engine) or
 * asked through ops->vcpu_defer (a guest). */
#define TLBPOL_RULE_VCPU_DEFER (1ULL << 13)
/* Do not interrupt a CPU that is waiting inside the engine for its own
 * shootdown's acknowledgements: it polls its inbox on every turn of that
 * wait and once more before it leaves, so a request posted to it is served
 * with no interrupt (Linux does this for idle CPUs that poll need_resched,
 * TIF_POLLING_NRFLAG, not for CPUs spinning in a TLB shootdown). */
#define TLBPOL_RULE_POLLING_CPUS (1ULL << 14)
/* For events flagged TLBPOL_EVF_STAMP (frames that die with the mapping),
 * flush at each CPU's next switch or tick with no interrupt, and let the
 * host give the frames back to its allocator at once: tlbpol_stamp() names
 * the flush, tlbpol_stamp_settle() completes it for a frame handed out
 * again before every CPU got to it (Xen's TLB clock, LUF).  Release 0.2. */
#define TLBPOL_RULE_FLUSH_STAMP (1ULL << 15)
/* An initiator leaves out the targets whose flushed generation already
 * covers its request.  Beyond Linux, whose initiator interrupts them anyway
 * (should_flush_tlb() reads no tlb_gen) and whose handler then returns at
 * once.  Release 0.3. */
#define TLBPOL_RULE_GEN_TARGETS (1ULL << 16)

/* The naive policy: every change to a present PTE is a full flush on every
 * CPU before the call returns. */
#define TLBPOL_RULES_NONE 0ULL
/* What Linux does today: the five rules above from Linux commits, footprint,
 * lazy CPUs, generations. */
#define TLBPOL_RULES_LINUX                                                      \
	(TLBPOL_RULE_SPURIOUS_NOFLUSH | TLBPOL_RULE_RANGE_FLUSH |              \
	 TLBPOL_RULE_RETRY_NOFLUSH | TLBPOL_RULE_BATCH |                       \
	 TLBPOL_RULE_AGING_NOFLUSH | TLBPOL_RULE_UPGRADE_NOFLUSH |             \
	 TLBPOL_RULE_FOOTPRINT | TLBPOL_RULE_LAZY_CPUS | TLBPOL_RULE_GEN_SKIP)
/* Every rule.  Rules an arch cannot use safely are ignored for that arch. */
#define TLBPOL_RULES_DEFAULT                                                    \
	(TLBPOL_RULES_LINUX | TLBPOL_RULE_RECEIVER_MERGE |                     \
	 TLBPOL_RULE_BROADCAST | TLBPOL_RULE_NUMA_FANOUT |                     \
	 TLBPOL_RULE_LAZY_UNMAP | TLBPOL_RULE_VCPU_DEFER |                     \
	 TLBPOL_RULE_POLLING_CPUS | TLBPOL_RULE_FLUSH_STAMP |                  \
	 TLBPOL_RULE_GEN_TARGETS)
/* Every rule bit this version knows; any other bit is rejected (-EINVAL). */
#define TLBPOL_RULES_ALL TLBPOL_RULES_DEFAULT

/**
 * tlbpol_rule_str() - the name of one rule bit.
 * @rule: one TLBPOL_RULE_* bit.
 *
 * The names are the bits' own, in lower case with '-': "spurious-noflush",
 * "range-flush", "retry-noflush", "batch", "aging-noflush",
 * "upgrade-noflush", "footprint", "lazy-cpus", "gen-skip",
 * "receiver-merge", "broadcast", "numa-fanout", "lazy-unmap", "vcpu-defer",
 * "polling-cpus", "flush-stamp".  tlbpol_rules_parse() reads them back.
 *
 * Context: any; freestanding builds too.
 * Return: a static string, never NULL: "unknown" for 0, for several bits
 * and for a bit no rule has.
 */
TLBPOL_API const char *tlbpol_rule_str(uint64_t rule);

/**
 * tlbpol_rules_parse() - a rule mask from names, as command lines give it.
 * @spec: terms read left to right from the empty mask.  A term is a set
 *	("default", "linux", "none" or its other name "naive", "all"), a
 *	rule (tlbpol_rule_str(); '_' may stand for '-') or a mask as a number
 *	(decimal, or hexadecimal after "0x").  A term adds its bits, or
 *	removes them if it begins with '-'.  Terms are separated by ',' or
 *	begin with '+' or '-' after the first: "default,-lazy-unmap",
 *	"linux+receiver-merge", "none,batch,range-flush".  A '-' inside a term
 *	is part of the name, so "default-batch" is one (unknown) name.
 * @out: the mask; written only on success.
 *
 * Context: any; freestanding builds too.
 * Return: 0, or -EINVAL for a NULL or empty @spec, a NULL @out, an empty
 * term, an unknown name, or a number with a bit outside TLBPOL_RULES_ALL.
 */
TLBPOL_API int tlbpol_rules_parse(const char *spec, uint64_t *out);

/* ------------------------------------------------------------------------ */
/* CPU sets                                                                 */
/* ------------------------------------------------------------------------ */

/* The largest nr_cpus an engine accepts. */
#define TLBPOL_MAX_CPUS 4096

/**
 * struct tlbpol_cpuset - a set of CPUs, one bit per CPU (bit c of bits[c/64]).
 * @bits: the bits, CPU c at bit c % 64 of bits[c / 64].
 *
 * Fixed size, so a binding can mirror it as an array of 64 uint64_t.  Bits at
 * or above the engine's nr_cpus are always clear in sets the engine hands out.
 */
struct tlbpol_cpuset {
	uint64_t bits[TLBPOL_MAX_CPUS / 64];
};

/**
 * tlbpol_cpuset_test() - is @cpu in @set?
 * @set: the set (may be NULL).
 * @cpu: a CPU number.
 * Context: any.
 * Return: 1 if it is, 0 if not, or if @set is NULL or @cpu >= TLBPOL_MAX_CPUS.
 */
TLBPOL_API int tlbpol_cpuset_test(const struct tlbpol_cpuset *set, uint32_t cpu);
/**
 * tlbpol_cpuset_count() - the number of CPUs in @set.
 * @set: the set (may be NULL).
 * Context: any.
 * Return: the count (0 for NULL).
 */
TLBPOL_API int tlbpol_cpuset_count(const struct tlbpol_cpuset *set);
/**
 * tlbpol_cpuset_next() - iterate over a set.
 * @set: the set (may be NULL: there is no next CPU).
 * @cpu: the last CPU seen, or -1 to start.
 * Context: any.
 * Return: the next CPU in @set greater than @cpu, or -1 when there is none.
 */
TLBPOL_API int tlbpol_cpuset_next(const struct tlbpol_cpuset *set, int cpu);
/**
 * tlbpol_cpuset_zero() / tlbpol_cpuset_set() / tlbpol_cpuset_clear() - build
 * a set (for callers and tests).
 * @set: the set: emptied, or @cpu added to it or removed from it.
 * @cpu: the CPU to add or remove; @cpu >= TLBPOL_MAX_CPUS is ignored.
 * Context: any.
 */
TLBPOL_API void tlbpol_cpuset_zero(struct tlbpol_cpuset *set);
TLBPOL_API void tlbpol_cpuset_set(struct tlbpol_cpuset *set, uint32_t cpu);
TLBPOL_API void tlbpol_cpuset_clear(struct tlbpol_cpuset *set, uint32_t cpu);

/* ------------------------------------------------------------------------ */
/* Callbacks: how the engine drives real hardware                           */
/* ------------------------------------------------------------------------ */

/**
 * struct tlbpol_range - nr_pages pages of 1 << page_shift bytes from va.
 * @va: the first address.
 * @nr_pages: the number of pages.
 * @page_shift: log2 of the page size.
 * @pad: 0.
 */
struct tlbpol_range {
	uint64_t va;
	uint64_t nr_pages;
	uint32_t page_shift;
	uint32_t pad;
};

/**
 * enum tlbpol_flush_kind - what a flush covers.
 * @TLBPOL_FLUSH_PAGES: the ranges of struct tlbpol_flush (sorted, merged).
 * @TLBPOL_FLUSH_AS: every non-global entry of the address space, and its
 *	paging-structure caches (walk caches) whether or not
 *	TLBPOL_FLUSHF_TABLES is set: the engine counts a CPU that did one as
 *	caught up on everything, freed page tables included (x86 INVPCID
 *	single-context and a CR3 write without the no-flush bit drop them; Arm
 *	TLBI ASIDE1 invalidates walk-cache entries of the ASID too).
 * @TLBPOL_FLUSH_ALL: everything, global entries too.  Used when a PTE that
 *	was global is flushed past the ceiling: on x86 a CR3 write keeps global
 *	entries (SDM 4.10.4.1), so a whole-AS flush would miss them.
 */
enum tlbpol_flush_kind {
	TLBPOL_FLUSH_PAGES = 0,
	TLBPOL_FLUSH_AS = 1,
	TLBPOL_FLUSH_ALL = 2,
};

/* Paging-structure caches too: page-table pages under the range were freed. */
#define TLBPOL_FLUSHF_TABLES (1U << 0)
/*
 * The pages may be cached as global entries (a PTE that was or becomes
 * global), or, where invalid entries are cached, under any tag: invalidate
 * them whatever tag is current and whatever tag they carry.  x86: INVLPG
 * (which reaches global entries), not INVPCID type 0 (individual address),
 * which leaves global translations alone; Arm: TLBI VAAE1 (all ASIDs);
 * RISC-V: SFENCE.VMA va, x0.  FLUSH_ALL already reaches them; FLUSH_AS of a
 * global part is never asked for (it is FLUSH_ALL).
 */
#define TLBPOL_FLUSHF_GLOBAL (1U << 1)

/**
 * struct tlbpol_flush - one flush to perform on one CPU.
 * @as_tag: the caller's tag of the address space (PCID, ASID, VMID...):
 *	the one given to tlbpol_as_open(), or with cfg->tags the hardware
 *	tag the allocator gave it on the CPU flushed (a broadcast or a remote
 *	action: its one global tag).
 * @kind: enum tlbpol_flush_kind.
 * @flags: TLBPOL_FLUSHF_*.
 * @nr_ranges: entries in @ranges (0 unless @kind is TLBPOL_FLUSH_PAGES).
 * @pad: 0.
 * @ranges: valid only during the callback.
 *
 * Tagged flushes.  @as_tag need not be the address space the CPU runs: a
 * lazy CPU keeps its loaded one, and with TLBPOL_CFGF_RETAIN_AS a CPU keeps
 * the entries of every address space it switched away from.  Compare @as_tag
 * with the current one, and flush a different one by its tag, never through
 * the current context (an INVLPG or a CR3 write there reaches only the
 * current PCID):
 *
 *   what                 x86-64 (PCID)              arm64 (ASID)         RISC-V (ASID)
 *   PAGES, current tag   INVLPG each page           TLBI VAE1 ASID|va    SFENCE.VMA va, asid
 *   PAGES, other tag     INVPCID type 0 (address)   TLBI VAE1 ASID|va    SFENCE.VMA va, asid
 *   PAGES + GLOBAL       INVLPG (any PCID current)  TLBI VAAE1 va        SFENCE.VMA va, x0
 *     ..., other tag     INVLPG and INVPCID type 0  TLBI VAAE1 va        SFENCE.VMA va, x0
 *   AS, current tag      CR3 write, bit 63 clear    TLBI ASIDE1 ASID     SFENCE.VMA x0, asid
 *   AS, other tag        INVPCID type 1 (context)   TLBI ASIDE1 ASID     SFENCE.VMA x0, asid
 *   ALL                  INVPCID type 2, or CR4.PGE toggled   TLBI VMALLE1   SFENCE.VMA x0, x0
 *
 * (Intel SDM vol. 2, INVPCID, and vol. 3 4.10.4.1: INVLPG reaches global
 * translations and the current PCID only, INVPCID types 0 and 1 never
 * global ones, so a PAGES + GLOBAL flush for another tag, which may name
 * the address space's own pages beside global ones, takes both; the Arm ARM's TLBI VAE1 matches global entries of the
 * address as well as the ASID's; RISC-V privileged spec, SFENCE.VMA: with
 * rs2 != x0 global mappings are not ordered.)  Without PCID every tag is
 * the current one, and FLUSH_AS is a CR3 write.  On arm64 flush_local, which
 * runs on the CPU it flushes, uses the non-shareable forms and DSB NSH;
 * the inner-shareable ones (VAE1IS ..., DSB ISH) belong in ops->broadcast.
 * On RISC-V a PAGES flush with TLBPOL_FLUSHF_TABLES is SFENCE.VMA x0, asid:
 * a fence with rs1 != x0 need only invalidate leaf entries, and the spec
 * asks for rs1 = x0 after a non-leaf PTE changed (Linux 97cf301fa42e).
 *
 * Completion.  A struct tlbpol_flush is one completion step: the
 * callback that receives it has completed it when it returns (its TLBIs,
 * then one DSB for all of them: arm64 batches per call, as Linux's
 * 43b3dfdd0455 batches an unmap's), except a split broadcast's, which
 * completes at the ops->bcast_sync that follows on the same CPU, for all
 * the parts that CPU issued since.  The engine never counts another CPU's
 * DSB or TLBSYNC as completing this one's invalidations (the oracle's
 * planted TLBPOL_PLANTED_SYNC_OTHER is that bug, caught); a host that
 * wants fewer DSBs than one per call issues its flushes as a split
 * broadcast.
 */
struct tlbpol_flush {
	uint64_t as_tag;
	uint32_t kind;
	uint32_t flags;
	uint32_t nr_ranges;
	uint32_t pad;
	const struct tlbpol_range *ranges;
};

/*
 * Arm TLBI by range (FEAT_TLBIRANGE): one operation invalidates
 * (NUM + 1) << (5 x SCALE + 1) pages from its base, NUM 0..31, SCALE 0..3,
 * so 2 to 2^21 pages, an even number (Arm ARM, TLBI RVAE1; Linux
 * arch/arm64/include/asm/tlbflush.h, __TLBI_RANGE_PAGES(), and Gavin Shan's
 * 2024 fix letting NUM reach 31).
 */
#define TLBPOL_TLBI_RANGE_MAX_PAGES (1ULL << 21)
#define TLBPOL_TLBI_RANGE_MAX_OPS 5U

/**
 * struct tlbpol_tlbi_op - one TLB invalidation of an arm64 range flush
 * (release 0.3).
 * @va: the first address it invalidates.
 * @pages: how many pages of the range's size it covers.
 * @range: 1 for a range operation (TLBI RVAE1IS, ...: @scale and @num
 *	encode it), 0 for one page (TLBI VAE1IS, ...).
 * @scale: SCALE, 0..3 (a range operation).
 * @num: NUM, 0..31 (a range operation).
 * @pad: 0.
 */
struct tlbpol_tlbi_op {
	uint64_t va;
	uint64_t pages;
	uint32_t range;
	uint32_t scale;
	uint32_t num;
	uint32_t pad;
};

/**
 * tlbpol_tlbi_range_ops() - a range as the fewest arm64 TLBI range operations.
 * Release 0.3 (FEAT_TLBIRANGE).
 * @r: the range (of struct tlbpol_flush): nr_pages pages of 1 << page_shift
 *	bytes from va.
 * @ops: receives the operations, in address order, at most
 *	TLBPOL_TLBI_RANGE_MAX_OPS.
 * @n: entries at @ops.
 *
 * Linux's __flush_tlb_range_op() order: a range operation per SCALE from 0
 * up for what that scale can name of the remaining pages, a single-page
 * operation for a last odd page; together they cover the range exactly,
 * no page twice.  Issue them without a DSB in between, then one DSB (the
 * split broadcast's sync, or flush_local's end).  The host encodes each
 * operand (ASID, TG, TTL and BaseADDR in the granule's units); with LPA2 a
 * range operation needs a 64 KiB aligned base, which this does not ensure.
 * A range of TLBPOL_TLBI_RANGE_MAX_PAGES pages or more is refused: flush
 * the address space instead, as Linux does.  Without FEAT_TLBIRANGE a host
 * invalidates page by page, up to Linux's MAX_DVM_OPS (one table's worth of
 * pages): set cfg->flush_ceiling to that, and the broadcast descriptor's
 * max_pages to 1.
 * Context: any; freestanding builds too.
 * Return: the number of operations written (1 .. TLBPOL_TLBI_RANGE_MAX_OPS);
 * -EINVAL for NULL @r or @ops, nr_pages 0 or a page_shift above 47;
 * -ERANGE for nr_pages >= TLBPOL_TLBI_RANGE_MAX_PAGES or a range that
 * wraps past 2^64; -ENOMEM when @n is too small (nothing written past @n).
 */
TLBPOL_API int tlbpol_tlbi_range_ops(const struct tlbpol_range *r, struct tlbpol_tlbi_op *ops,
				     uint32_t n);

/**
 * struct tlbpol_ops - the host's hooks.  Set @size to sizeof.
 * @pad: unused; set it to 0.
 * @flush_local: flush this CPU's TLB as @f describes.  Runs on @cpu itself:
 *	from the call that needed it, or from tlbpol_handle_ipi().  A hypervisor
 *	or unikernel issues invlpg / invpcid / a CR3 write here.  Required.
 * @send_ipi: interrupt each CPU in @targets; that CPU's interrupt handler
 *	calls tlbpol_handle_ipi().  May be called from any engine call made for
 *	@from_cpu.  Required.
 * @broadcast: optional (NULL if none): a flush that reaches all CPUs, the
 *	caller included, whatever address space they run or retain, without
 *	interrupts, complete when it returns (INVLPGB+TLBSYNC, TLBI IS + DSB, a
 *	flush hypercall).  Used under RULE_BROADCAST when the cost model says
 *	it is cheaper than interrupting the targets.  With
 *	TLBPOL_FLUSHF_GLOBAL in @f it must reach global entries too.  A
 *	broadcast that matches a tag (INVLPGB with its PCID bit set, TLBI by
 *	ASID) reaches only the CPUs that hold the address space under that
 *	tag: it fits here only where the address space has the same tag on
 *	every CPU (a global ASID, as Linux gives an mm before it flushes it by
 *	INVLPGB; under PTI, the same pair of tags).  With tags chosen per CPU
 *	by the host (Linux's dynamic PCIDs) issue it with no tag to match
 *	(INVLPGB without the PCID bit matches every PCID), or leave
 *	@broadcast NULL: a CPU holding the address space under another tag
 *	would keep its entries while the engine counts it flushed.  With the
 *	engine's allocator (cfg->tags) @f names the tag, and the engine
 *	interrupts the CPUs that do not hold the address space under it.
 * @relax: optional: called while waiting for other CPUs (pause, yield,
 *	deliver simulated interrupts).
 * @vcpu_defer: optional, for an engine that runs inside a guest, used under
 *	RULE_VCPU_DEFER: may the shootdown leave out vCPU @cpu?  Return 1 only
 *	if @cpu is not running now and the hypervisor has promised to flush
 *	all of its TLB (global entries and paging-structure caches included)
 *	before it runs again; the engine then neither interrupts it nor waits
 *	for it.  Return 0 otherwise.  KVM: the `preempted` byte of @cpu's
 *	steal-time area has KVM_VCPU_PREEMPTED, and a cmpxchg adding
 *	KVM_VCPU_FLUSH_TLB succeeded (Linux arch/x86/kernel/kvm.c
 *	kvm_flush_tlb_multi(); the host flushes in record_steal_time()).
 *	Called by an initiator of a synchronous shootdown, once or twice per
 *	target, never for lazy requests (they interrupt nobody).  A hypervisor
 *	that embeds the engine tells it of its own vCPUs with
 *	tlbpol_cpu_state() instead.
 * @stuck: optional (release 0.2; NULL if none), the watchdog, used when
 *	cfg->wait_limit is set: @cpu has waited @turns turns (a multiple of
 *	wait_limit) for the acknowledgements of one request, and
 *	@waiting_for are the targets that have not taken it yet (a target
 *	that took it and is flushing is not listed: @waiting_for may be
 *	empty).  The engine has just interrupted @waiting_for again (counted
 *	in ipis_resent).  The host may log, re-send through another route,
 *	mark a dead CPU, or panic; when the hook returns the engine keeps
 *	waiting.  It never reports a flush complete without every
 *	acknowledgement, so a CPU that never serves again blocks the
 *	initiator for good: the hook is where the host decides.  Context: as
 *	@relax, inside the waiting call on @cpu.
 *
 * @bcast_issue: optional (release 0.3; set with @bcast_sync or not at
 *	all), the first half of a split-phase broadcast (AMD INVLPGB without
 *	its TLBSYNC, Arm TLBI ...IS without its DSB ISH): start invalidating
 *	@f on every CPU it reaches and return without waiting.  The engine
 *	may issue several before one @bcast_sync.  Under the same rules of
 *	reach as @broadcast (tags, TLBPOL_FLUSHF_GLOBAL).  Preferred over
 *	@broadcast when both are set (see struct tlbpol_backend).
 * @bcast_sync: optional (release 0.3), the second half: return when every
 *	invalidation @cpu issued with @bcast_issue has completed on every CPU
 *	(TLBSYNC; DSB ISH).  The engine calls it on the CPU that issued, in
 *	the same engine call, before it counts any of them done.  The host's
 *	duty: the caller must not migrate between the two (they run inside
 *	one engine call for @cpu, which the header's first convention already
 *	pins to @cpu).  TLBSYNC waits only for the INVLPGBs of the CPU that
 *	executes it (Linux arch/x86/include/asm/tlb.h, __tlbsync(), which
 *	asserts cant_migrate()), and a DSB completes only the TLBIs of the PE
 *	that executes it (Arm ARM, quoted by Linux 4b634918384c).
 * @walker_sync: optional (release 0.3), used under
 *	TLBPOL_CFGF_LOCKLESS_WALKERS: page tables were freed and invalidated by
 *	a mechanism that interrupts nobody (a broadcast); return only when
 *	none of @cpus is still inside a lockless walk that began before this
 *	call (an interrupt to each and a wait for it, as Linux's
 *	tlb_remove_table_sync_one(); or an RCU grace period).  Called after a
 *	broadcast or a remote action.  Without it the engine never uses such
 *	a mechanism for a request that frees tables, and interrupts the CPUs
 *	instead.  Context: as @relax, so possibly with interrupts off (a
 *	tick): one that waits for interrupts it sent must call
 *	tlbpol_handle_ipi() for @cpu while it waits, or a CPU waiting for @cpu
 *	with interrupts off waits for ever.
 * @remote_action: optional (release 0.3), a targeted flush that runs no
 *	code on its targets and is complete on return (Intel RAR: a payload
 *	and an action vector, the initiator waiting for each target's
 *	completion; an SBI remote fence, sbi_remote_sfence_vma_asid(), whose
 *	OpenSBI implementation waits): perform @f on every CPU in @targets
 *	(never the caller), whatever they run.  Used under RULE_BROADCAST
 *	when the cost model prefers it (TLBPOL_MECH_REMOTE).  A CPU left out
 *	of @targets (idle, lazy, preempted, up to date) catches up by itself
 *	when it next uses the address space, as with interrupts; a target's
 *	flushed generation does not move (no code of the engine runs there),
 *	so it may flush once more at its next switch.  It must reach each
 *	target whatever tag that target holds the address space under (the
 *	rule of @broadcast: under per-CPU PCIDs, a RAR payload of the
 *	initiator's PCID misses the others), and with TLBPOL_FLUSHF_TABLES
 *	drop the walk caches of the whole address space (an SBI fence with a
 *	range is leaf-only on RISC-V: fence the ASID).  A target may have gone
 *	OFFLINE since it was chosen: the call must still complete.  Under
 *	TLBPOL_CFGF_LOCKLESS_WALKERS it counts as interrupting nobody (RAR is
 *	processed with interrupts off, an SBI fence in M-mode) unless its
 *	descriptor says TLBPOL_BKF_IMPLIES_IRQ, which the host asserts only
 *	where each target really takes an interrupt.  Context: as @send_ipi.
 * @load_tag: optional (release 0.3), with an allocator of per-CPU slots
 *	and global tags (cfg->tags): load @tag for the address space @cpu
 *	runs, now, with the same page tables, after the flush @flush asks
 *	for (TLBPOL_TAG_FLUSH_NONE or _ALL, as tlbpol_switch_tag()): x86 a
 *	CR3 write of the same tables with PCID @tag and bit 63 set (no
 *	flush).  The engine calls it when the address space has been given a
 *	global tag since this CPU loaded it under a slot: from
 *	tlbpol_handle_ipi() outside the CPU's engine calls, from
 *	tlbpol_tick(), and at the end of a tlbpol_submit() that shot down or
 *	of a tlbpol_flush() (never from tlbpol_switch_tag() or
 *	tlbpol_cpu_state()), so that the CPU moves onto the tag before its
 *	next switch and broadcasts by it reach the CPU from then on instead
 *	of interrupts (Linux moves a CPU onto a global ASID in its flush
 *	function too, flush_tlb_func(): "x86/mm: Handle global ASID context
 *	switch and TLB flush", 2025).
 *	The entries the CPU keeps under its slot become unreachable; those
 *	under @tag are current (the allocator hands a global tag out only
 *	after every CPU has flushed its former owner's entries).  The engine
 *	counts the CPU on @tag once the hook returns: it must not return
 *	before the CPU runs under @tag, and the CPU touches no user address
 *	in between.  Without it a CPU moves at its next switch.  Context: on
 *	@cpu, inside the engine call named above; interrupts off in the
 *	first two.
 *
 * Callbacks may call tlbpol_handle_ipi() for their own CPU but must not call
 * any other engine function for @cpu / @from_cpu (such a call returns -EBUSY).
 *
 * @size: sizeof(struct tlbpol_ops) of the header the caller was built with;
 * a structure from release 0.1's header (without @stuck, exactly
 * TLBPOL_OPS_SIZE_0_1 bytes) or release 0.2's (without @bcast_issue,
 * TLBPOL_OPS_SIZE_0_2 bytes) is accepted, and the members it lacks are NULL.
 */
struct tlbpol_ops {
	uint32_t size;
	uint32_t pad;
	void (*flush_local)(void *ctx, uint32_t cpu, const struct tlbpol_flush *f);
	void (*send_ipi)(void *ctx, uint32_t from_cpu, const struct tlbpol_cpuset *targets);
	void (*broadcast)(void *ctx, uint32_t from_cpu, const struct tlbpol_flush *f);
	void (*relax)(void *ctx, uint32_t cpu);
	int (*vcpu_defer)(void *ctx, uint32_t cpu);
	void (*stuck)(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *waiting_for,
		      uint64_t turns);
	void (*bcast_issue)(void *ctx, uint32_t cpu, const struct tlbpol_flush *f);
	void (*bcast_sync)(void *ctx, uint32_t cpu);
	void (*walker_sync)(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *cpus);
	void (*remote_action)(void *ctx, uint32_t from_cpu, const struct tlbpol_cpuset *targets,
			      const struct tlbpol_flush *f);
	void (*load_tag)(void *ctx, uint32_t cpu, uint32_t tag, uint32_t flush);
};

#define TLBPOL_OPS_SIZE_0_1 48 /* offsetof(struct tlbpol_ops, stuck) */
#define TLBPOL_OPS_SIZE_0_2 56 /* offsetof(struct tlbpol_ops, bcast_issue) */

/* ------------------------------------------------------------------------ */
/* Flush mechanisms (backends)                                              */
/* ------------------------------------------------------------------------ */

/*
 * How a shootdown reaches other CPUs.
 * TLBPOL_MECH_IPI: interrupts (ops->send_ipi); each target flushes in
 *	tlbpol_handle_ipi() and acknowledges.  Always there.
 * TLBPOL_MECH_BROADCAST: one invalidation that reaches every CPU with no
 *	interrupt: ops->bcast_issue and ops->bcast_sync (split phase), or
 *	ops->broadcast (complete on return).
 * TLBPOL_MECH_REMOTE: a targeted flush that runs no code on its targets
 *	(ops->remote_action: Intel RAR, an SBI remote fence).
 */
#define TLBPOL_MECH_IPI 0U
#define TLBPOL_MECH_BROADCAST 1U
#define TLBPOL_MECH_REMOTE 2U
#define TLBPOL_MECH_MAX 3U

/*
 * Backend flags (struct tlbpol_backend).
 * TLBPOL_BKF_IMPLIES_IRQ: every CPU the mechanism reaches has taken an
 *	interrupt before it completes, so a lockless walker that holds
 *	interrupts off (GUP-fast) is no longer inside a walk begun before it
 *	(Linux 2026, tlb_table_flush_implies_ipi_broadcast(): true only for
 *	native IPIs).  Interrupts always have it (a target acknowledges from
 *	its own handler or engine call); INVLPGB, TLBI IS, RAR (processed with
 *	interrupts off), SBI remote fences and flush hypercalls do not.
 * TLBPOL_BKF_SPLIT: issue and sync are two steps (ops->bcast_issue,
 *	ops->bcast_sync), both on the issuing CPU.
 * TLBPOL_BKF_DISABLED: the host found the mechanism unusable (an erratum:
 *	Linux a74bb5f202da turns INVLPGB off on a Zen 2 part whose CPUID
 *	misreports it; a configuration: 94a17f2dc90b, off under PTI; a
 *	command line: noinvlpgb): the engine never uses it, as if absent.
 */
#define TLBPOL_BKF_IMPLIES_IRQ (1U << 0)
#define TLBPOL_BKF_SPLIT (1U << 1)
#define TLBPOL_BKF_DISABLED (1U << 2)
#define TLBPOL_BKF_ALL 0x7U

/**
 * struct tlbpol_backend - one flush mechanism the host has, and what it
 * costs (release 0.3).  Set @size to sizeof.
 * @size: sizeof(struct tlbpol_backend); a larger size is accepted only
 *	when the bytes past this structure are zero (-E2BIG otherwise).
 * @mech: TLBPOL_MECH_*.  One descriptor per mechanism (-EEXIST).
 * @flags: TLBPOL_BKF_*.  For TLBPOL_MECH_IPI only TLBPOL_BKF_IMPLIES_IRQ
 *	(which interrupts have whether it is set or not).  For
 *	TLBPOL_MECH_BROADCAST, TLBPOL_BKF_SPLIT asks for ops->bcast_issue and
 *	ops->bcast_sync, its absence for ops->broadcast (-EINVAL when the ops
 *	lack them, unless TLBPOL_BKF_DISABLED).  For TLBPOL_MECH_REMOTE,
 *	ops->remote_action must be set (unless TLBPOL_BKF_DISABLED), and
 *	TLBPOL_BKF_SPLIT is refused.
 * @max_pages: pages one instruction of the mechanism names at most
 *	(INVLPGB: CPUID 8000_0008h EDX[15:0] + 1, Linux invlpgb_count_max;
 *	Arm TLBI by range: up to 2^21 pages; one otherwise); 0 means 1.  The
 *	cost model counts ceil(pages / @max_pages) instructions per range.
 * @cost_ns: IPI: the initiator's cost for the first target (the config's
 *	cost_ipi_ns); BROADCAST: the fixed cost of one request, issue and
 *	sync (cost_broadcast_ns); REMOTE: the first target (with no
 *	descriptor: cost_ipi_ns, and a tie with interrupts goes to the remote
 *	action, which spares the targets theirs).
 * @cost_target_ns: IPI: each further target (cost_ipi_target_ns);
 *	REMOTE: each further target (with no descriptor: cost_ipi_target_ns).
 * @cost_remote_ns: IPI: more for each target on another NUMA node
 *	(cost_ipi_remote_ns).
 * @cost_page_ns: BROADCAST: each instruction (cost_broadcast_page_ns);
 *	REMOTE: each payload of @max_pages pages (RAR names 63 pages in one;
 *	with no descriptor: 0).
 *
 * A zero cost takes the config's cost_* field, which takes its default
 * when zero: a host that has no descriptor keeps release 0.2's model.
 * The engine chooses the mechanism per request, at shoot time, by these
 * costs (tlbpol_decide() does not depend on them); a descriptor is the
 * one place the model reads.
 */
struct tlbpol_backend {
	uint32_t size;
	uint32_t mech;
	uint32_t flags;
	uint32_t max_pages;
	uint32_t cost_ns;
	uint32_t cost_target_ns;
	uint32_t cost_remote_ns;
	uint32_t cost_page_ns;
};

/* ------------------------------------------------------------------------ */
/* Tags: PCID, ASID, VMID allocation                                        */
/* ------------------------------------------------------------------------ */

/*
 * A hardware tag (x86 PCID, arm64 ASID, a hypervisor's VMID or VPID, a
 * RISC-V ASID) names whose entries a TLB entry is: an entry filled under a
 * tag serves whoever runs under that tag next, until it is flushed.  So
 * giving a tag to another address space is a flush decision, and these
 * allocators make it (release 0.3).  They are optional: an engine's
 * address spaces keep the opaque tag given to tlbpol_as_open() when the
 * host allocates its own.  Memory comes from the caller; they need no OS.
 *
 * TLBPOL_TAGS_PERCPU: each CPU has nr_slots tags of its own (tags
 *	first_tag .. first_tag + nr_slots - 1), each slot remembering the
 *	address space it last served, reused round-robin, as Linux x86 keeps
 *	TLB_NR_DYN_ASIDS = 6 PCIDs per CPU (arch/x86/mm/tlb.c,
 *	choose_new_asid(), cpu_tlbstate.ctxs[]).  One address space has
 *	different tags on different CPUs: a flush names the tag of the CPU
 *	that runs it (tlbpol_tag_of()), and a broadcast by tag reaches only
 *	CPUs that use the same one.  A slot taken from another address space
 *	is flushed before use (TLBPOL_TAG_FLUSH_TAG: x86 loads CR3 without
 *	the no-flush bit 63, SDM vol. 3A 4.10.4.1).
 * TLBPOL_TAGS_GLOBAL: one tag per address space on every CPU, from a
 *	global pool; when the pool runs out, a rollover starts a new
 *	generation: every CPU flushes all its entries (TLBPOL_TAG_FLUSH_ALL)
 *	before it loads a tag of the new one, and the tags CPUs are running
 *	at that moment stay reserved to their address spaces, as arm64 ASIDs
 *	(arch/arm64/mm/context.c, new_context(), flush_context()) and KVM's
 *	VMIDs (arch/arm64/kvm/vmid.c).  Since a running address space keeps
 *	its tag number across a rollover, every CPU that runs it or keeps it
 *	loaded holds its entries under the one tag, and a broadcast that names
 *	it (TLBI ASIDE1IS, INVEPT) reaches them all -- all but a CPU between
 *	a tlbpol_tag_load() for another address space and the CR3 (TTBR,
 *	satp) write that follows: that load gave up the old tag, so a rollover
 *	meanwhile may give the old address space another one while that CPU
 *	may still walk its tables under the old.  A host that broadcasts by
 *	tag must then name the old tag too, or wait for that CPU's write,
 *	before it frees page tables (Linux arm64 waits: its page tables are
 *	freed after an RCU grace period, which waits for the switch's
 *	interrupts-off section).  An engine with this allocator names both.
 */
#define TLBPOL_TAGS_PERCPU 0U
#define TLBPOL_TAGS_GLOBAL 1U

/* Slots per CPU at most (TLBPOL_TAGS_PERCPU); Linux x86 uses 6. */
#define TLBPOL_TAG_SLOTS_MAX 64U
/* The widest tag (bits): x86 PCID 12, arm64 ASID 8 or 16, VMID 8 or 16,
 * RISC-V ASIDLEN at most 16 (Sv57). */
#define TLBPOL_TAG_BITS_MAX 16U

/*
 * What a CPU must flush before it uses the tag tlbpol_tag_load() gave.
 * TLBPOL_TAG_FLUSH_NONE: nothing for the tag's sake (a host that tracks
 *	flush generations itself may still owe a catch-up flush).
 * TLBPOL_TAG_FLUSH_TAG: every entry of the tag (the slot served another
 *	address space): x86 CR3 without bit 63 or INVPCID type 1, arm64 TLBI
 *	ASIDE1, RISC-V sfence.vma with the ASID, a hypervisor INVVPID type 1.
 * TLBPOL_TAG_FLUSH_ALL: every non-global entry of every tag (a rollover):
 *	arm64 TLBI VMALLE1, x86 INVPCID type 3, RISC-V sfence.vma x0, x0;
 *	for VMIDs every guest's (TLBI VMALLS12E1, INVEPT global).
 */
#define TLBPOL_TAG_FLUSH_NONE 0U
#define TLBPOL_TAG_FLUSH_TAG 1U
#define TLBPOL_TAG_FLUSH_ALL 2U

/**
 * struct tlbpol_tags_config - how a tag allocator is built.  Set @size to
 * sizeof.
 * @size: sizeof(struct tlbpol_tags_config); a larger size is accepted only
 *	when the bytes past this structure are zero (-E2BIG otherwise).
 * @kind: TLBPOL_TAGS_PERCPU or TLBPOL_TAGS_GLOBAL.
 * @nr_cpus: CPUs that load tags, 1 .. TLBPOL_MAX_CPUS.
 * @tag_bits: the hardware tag's width, 1 .. TLBPOL_TAG_BITS_MAX.
 * @first_tag: the first tag the allocator hands out; those below are the
 *	host's (x86: PCID 0 for the kernel and for CR4.PCIDE off; arm64:
 *	ASID 0, which Linux keeps for the reserved TTBR0).
 * @nr_slots: TLBPOL_TAGS_PERCPU: tags per CPU, 1 .. TLBPOL_TAG_SLOTS_MAX,
 *	with @first_tag + @nr_slots + @nr_global <= 2^@tag_bits.
 *	TLBPOL_TAGS_GLOBAL: 0;
 *	the pool is @first_tag .. 2^@tag_bits - 1, and must hold more tags
 *	than @nr_cpus (after a rollover each CPU may reserve one, and one
 *	must be left to hand out: Linux checks NUM_USER_ASIDS >
 *	num_possible_cpus() for the same reason).
 * @nr_global: TLBPOL_TAGS_PERCPU: the last @nr_global tags of the width
 *	are global tags, each one address space's on every CPU, so that one
 *	broadcast by tag (INVLPGB with its ASID) reaches every CPU that runs
 *	it; 0: none (release 0.3).  Linux 6.15 gives an mm a global ASID
 *	once it is active on 4 CPUs (arch/x86/mm/tlb.c, use_global_asid()).
 *	TLBPOL_TAGS_GLOBAL: 0.
 * @global_min_cpus: an engine gives an address space a global tag once
 *	it is loaded on this many CPUs: 0 means 4; twice as many once half
 *	the global tags are taken, four times once three quarters are (at
 *	most 2^32 - 1), so that the last ones go to the widest address
 *	spaces.  TLBPOL_TAGS_GLOBAL: 0.
 */
struct tlbpol_tags_config {
	uint32_t size;
	uint32_t kind;
	uint32_t nr_cpus;
	uint32_t tag_bits;
	uint32_t first_tag;
	uint32_t nr_slots;
	uint32_t nr_global;
	uint32_t global_min_cpus;
};

/**
 * struct tlbpol_tag_id - an address space's identity to a tag allocator.
 * @word: the allocator's; set by tlbpol_tag_id_init(), never by the host.
 *
 * In the host's memory: in its mm, or its VM structure for a VMID.
 *
 * TLBPOL_TAGS_PERCPU: a number no other identity of the allocator ever
 * had (a 64-bit count, as Linux's ctx_id), so a slot that served a closed
 * address space never matches a new one.  TLBPOL_TAGS_GLOBAL: the tag and
 * the generation it belongs to, written under the allocator's lock.
 * When the address space closes: its slots are reused as they come round,
 * a TLBPOL_TAGS_GLOBAL tag at the next rollover, both with nothing to do;
 * a global tag beside per-CPU slots only after tlbpol_tag_release().
 */
struct tlbpol_tag_id {
	uint64_t word;
};

/**
 * struct tlbpol_tag_use - what tlbpol_tag_load() tells a switching CPU.
 * @tag: the hardware tag to load (CR3 PCID bits, TTBR ASID, satp ASID,
 *	VTTBR VMID).
 * @flush: TLBPOL_TAG_FLUSH_*: what to flush before the first access under
 *	@tag, as part of the same switch.
 */
struct tlbpol_tag_use {
	uint32_t tag;
	uint32_t flush;
};

/**
 * struct tlbpol_tags_stats - a tag allocator's counters.
 * @size: set by the caller to sizeof; the allocator writes the fields
 *	that fit whole in it (a program built against an older header gets
 *	those it knows), never part of one.
 * @pad: written 0.
 * @loads: tlbpol_tag_load() calls.
 * @tag_flushes: loads that returned TLBPOL_TAG_FLUSH_TAG.
 * @all_flushes: loads that returned TLBPOL_TAG_FLUSH_ALL.
 * @rollovers: new generations (TLBPOL_TAGS_GLOBAL; summed over CPUs as
 *	the CPU whose load started each).
 */
struct tlbpol_tags_stats {
	uint32_t size;
	uint32_t pad;
	uint64_t loads;
	uint64_t tag_flushes;
	uint64_t all_flushes;
	uint64_t rollovers;
};

struct tlbpol_tags;

/**
 * tlbpol_tags_size() - bytes of memory a tag allocator for @cfg needs.
 * @cfg: the configuration.
 * Context: any.
 * Return: the size, or 0 when @cfg is NULL or tlbpol_tags_init() would
 * refuse it.
 */
TLBPOL_API size_t tlbpol_tags_size(const struct tlbpol_tags_config *cfg);

/**
 * tlbpol_tags_init() - build a tag allocator in caller-provided memory.
 * @out: receives the allocator.
 * @mem: at least tlbpol_tags_size(@cfg) bytes, 64-byte aligned, untouched
 *	by the caller while the allocator is in use (nothing to free after).
 * @len: bytes at @mem.
 * @cfg: the configuration (copied).
 *
 * Every slot starts empty and every CPU with nothing loaded; the first
 * load of each tag asks for its flush (what the firmware or a previous
 * kernel left under it is unknown).  The checks run in this order: @out,
 * @mem and its alignment, @cfg, then @len (so a bad @cfg is reported as
 * such whatever @len); *@out is written only on success.
 * Context: any; nothing else may use @mem meanwhile.
 * Return: 0; -EINVAL for a NULL argument, a @cfg->size too small, an
 * unknown kind, a zero @cfg->tag_bits or @cfg->nr_cpus, @cfg->nr_slots,
 * @cfg->nr_global or @cfg->global_min_cpus nonzero for TLBPOL_TAGS_GLOBAL,
 * or misaligned @mem; -ERANGE for
 * @cfg->nr_cpus, @cfg->tag_bits or @cfg->nr_slots out of range, or tags
 * that do not fit (@cfg->first_tag + @cfg->nr_slots + @cfg->nr_global
 * past the width, a
 * global pool no larger than @cfg->nr_cpus); -ENOMEM if @len is too
 * small; -E2BIG for a larger @cfg->size with a nonzero byte past this
 * library's structure.
 */
TLBPOL_API int tlbpol_tags_init(struct tlbpol_tags **out, void *mem, size_t len,
				const struct tlbpol_tags_config *cfg);

/**
 * tlbpol_tag_id_init() - make @id a new identity of @tags.
 * @tags: the allocator.
 * @id: the address space's identity, in the host's memory.
 *
 * Once per address space, before its first tlbpol_tag_load().  An
 * identity belongs to one allocator.
 * Context: any.
 * Return: 0; -EINVAL for a NULL argument.
 */
TLBPOL_API int tlbpol_tag_id_init(struct tlbpol_tags *tags, struct tlbpol_tag_id *id);

/**
 * tlbpol_tag_load() - the tag @cpu loads to run @id, and what to flush.
 * @tags: the allocator.
 * @cpu: the switching CPU.
 * @id: what it switches to.
 * @out: receives the tag and the flush (struct tlbpol_tag_use).
 *
 * Call at every switch to @id on @cpu, and flush what @out->flush says as
 * part of the switch, before the first access under @out->tag.
 * TLBPOL_TAGS_PERCPU: @id's global tag if it has one (its slot on @cpu,
 * if any, given up; TLBPOL_TAG_FLUSH_ALL if @cpu has not flushed all
 * since the global tags were last recycled), else @id's slot on @cpu if
 * it has one (no flush), else the next slot round-robin, flushed.  TLBPOL_TAGS_GLOBAL: @id's tag if
 * it belongs to the current generation (one compare-and-swap), else under
 * the allocator's lock the same number again if no one took it, or a free
 * one, or, when none is left, a rollover; TLBPOL_TAG_FLUSH_ALL when @cpu
 * has not flushed since the last rollover.
 * An identity belongs to the allocator that made it: the allocator cannot
 * tell another one's from its own (per-CPU identities of two allocators
 * are alike numbers), and loading one is the caller's bug (the bindings
 * refuse it).
 * Context: on @cpu, with interrupts off until the tag is loaded (as the
 * switch it is part of), never from an interrupt handler that may have
 * interrupted a load on @cpu.  TLBPOL_TAGS_GLOBAL spins on a lock other
 * CPUs hold only inside this call (never across a wait for an interrupt).
 * Return: 0; -EINVAL for a NULL argument or an @id whose word no identity
 * of @tags can have (TLBPOL_TAGS_PERCPU: 0, or a number not handed out
 * yet; TLBPOL_TAGS_GLOBAL: a tag below first_tag); -ERANGE for @cpu.
 */
TLBPOL_API int tlbpol_tag_load(struct tlbpol_tags *tags, uint32_t cpu, struct tlbpol_tag_id *id,
			       struct tlbpol_tag_use *out);

/**
 * tlbpol_tag_make_global() - give @id a global tag (TLBPOL_TAGS_PERCPU
 * with nr_global).
 * @tags: the allocator.
 * @id: the identity.
 *
 * From then on every CPU loads @id under that tag (tlbpol_tag_load()),
 * its slot on the CPU given up, so that a broadcast naming the tag
 * reaches every CPU that has loaded @id since.  A CPU still running @id
 * under its slot is not reached until its next load: an engine
 * interrupts those CPUs instead (the transition is tracked per CPU, as
 * Linux's finish_asid_transition() does).  A global tag given back
 * (tlbpol_tag_release()) is handed out again only after every CPU has
 * flushed all its entries once (its next load asks for
 * TLBPOL_TAG_FLUSH_ALL), as Linux reuses freed global ASIDs only after
 * reset_global_asid_space()'s flush of everything.
 * Context: any; takes the allocator's lock (never held across a wait).
 * Return: the global tag (>= 0); -EEXIST if @id has one already
 * (tlbpol_tag_global_of() says which); -ENOSPC when every global tag is
 * taken and none was given back (nothing changes then); -EINVAL for a
 * NULL argument, an @id whose word no identity of @tags can have (as
 * tlbpol_tag_load(): another allocator's identity is not recognised), or
 * an allocator with no global tags.
 */
TLBPOL_API int tlbpol_tag_make_global(struct tlbpol_tags *tags, struct tlbpol_tag_id *id);

/**
 * tlbpol_tag_global_of() - @id's global tag.
 * @tags: the allocator.
 * @id: the identity.
 * Context: any.
 * Return: the tag (>= 0); -ENOENT if it has none; -EINVAL for a NULL
 * argument or an @id whose word no identity of @tags can have.
 */
TLBPOL_API int tlbpol_tag_global_of(const struct tlbpol_tags *tags, const struct tlbpol_tag_id *id);

/**
 * tlbpol_tag_release() - @id is gone: its global tag back to the pool.
 * @tags: the allocator.
 * @id: the identity; no CPU may run it or keep it loaded any more (an
 *	engine calls this when the address space closes, which it refuses
 *	while a CPU has it loaded).
 *
 * The tag is handed out again only after every CPU has flushed all its
 * entries since (tlbpol_tag_make_global()): a CPU may still hold @id's
 * entries under it.  @id has no tag afterwards; per-CPU slots need
 * nothing (a slot is flushed whenever it changes hands).
 * Context: any; takes the allocator's lock.
 * Return: 0 (also when @id had no global tag); -EINVAL for a NULL
 * argument or an @id whose word no identity of @tags can have (another
 * allocator's identity is not recognised: releasing one is the caller's
 * bug, which the bindings refuse).
 */
TLBPOL_API int tlbpol_tag_release(struct tlbpol_tags *tags, struct tlbpol_tag_id *id);

/**
 * tlbpol_tag_of() - the tag under which @cpu holds @id's entries.
 * @tags: the allocator.
 * @cpu: a CPU.
 * @id: an identity.
 *
 * For a flush on @cpu (its ops->flush_local): TLBPOL_TAGS_PERCPU, the tag
 * of @id's slot on @cpu, or else its global tag if it has one (a CPU that
 * loaded it since it became global holds it there); TLBPOL_TAGS_GLOBAL,
 * the tag @id was last given,
 * whatever @cpu: every CPU that runs @id runs it under that tag.  After a
 * rollover, until @id's next load, that is its tag of the old generation,
 * which a CPU still running @id keeps (reserved), and which may meanwhile
 * name another identity's entries too: a flush by it then flushes more,
 * never less.
 * Context: any; for TLBPOL_TAGS_PERCPU exact only on @cpu, whose own loads
 * are the only ones that change its slots (elsewhere the answer may be a
 * load behind).
 * Return: the tag (>= 0); -ENOENT when @cpu holds no entry of @id under a
 * tag of @tags (TLBPOL_TAGS_PERCPU: no slot on @cpu, no global tag;
 * TLBPOL_TAGS_GLOBAL:
 * @id never loaded anywhere); -EINVAL for a NULL argument; -ERANGE for
 * @cpu.
 */
TLBPOL_API int tlbpol_tag_of(const struct tlbpol_tags *tags, uint32_t cpu,
			     const struct tlbpol_tag_id *id);

/**
 * tlbpol_tags_stats_read() - read a tag allocator's counters.
 * @tags: the allocator.
 * @cpu: a CPU, or -1 for the sum over all CPUs.
 * @out: receives the counters; set @out->size first.
 * Context: any; each counter is exact, the set is not a snapshot.
 * Return: 0; -EINVAL for a NULL argument or an @out->size smaller than
 * the counters' offset (8); -ERANGE for @cpu.
 */
TLBPOL_API int tlbpol_tags_stats_read(const struct tlbpol_tags *tags, int cpu,
				      struct tlbpol_tags_stats *out);

/* ------------------------------------------------------------------------ */
/* Configuration and lifecycle                                              */
/* ------------------------------------------------------------------------ */

#define TLBPOL_DEFAULT_FLUSH_CEILING 33 /* Linux tlb_single_page_flush_ceiling */
/*
 * The broadcast cost model (RULE_BROADCAST): a shootdown by interrupts costs
 * the initiator cost_ipi_ns for its first target, cost_ipi_target_ns for each
 * further target and cost_ipi_remote_ns more for each target on another NUMA
 * node (Nadav Amit's measurements, LKML 2019: ~0.8 us first target, ~70 ns
 * each further target on the socket, more across sockets); a broadcast costs
 * cost_broadcast_ns plus cost_broadcast_page_ns per page it names (INVLPGB +
 * TLBSYNC, TLBI IS + DSB: one instruction per page, one wait for all CPUs;
 * assumed figures, tune them for the machine).  The engine broadcasts when
 * that is cheaper.
 */
#define TLBPOL_DEFAULT_COST_IPI_NS 800
#define TLBPOL_DEFAULT_COST_IPI_TARGET_NS 70
#define TLBPOL_DEFAULT_COST_IPI_REMOTE_NS 200
#define TLBPOL_DEFAULT_COST_BROADCAST_NS 1500
#define TLBPOL_DEFAULT_COST_BROADCAST_PAGE_NS 40

/*
 * Config flags.
 * TLBPOL_CFGF_RETAIN_AS: switching away from an address space keeps its TLB
 * entries (x86 PCID, Arm ASID): a CPU that comes back to it after flushes
 * were skipped must flush it (tlbpol_switch() reports need_flush).  Without
 * it, a switch to another address space drops the old one's entries (a CR3
 * write without PCID), and no flush is needed at switch-in.
 * TLBPOL_CFGF_WAIT_IRQS (release 0.2): the host promises that every wait
 * inside the engine takes this CPU's interrupts: ops->relax is set, and
 * while a CPU waits in it, an interrupt sent to that CPU by ops->send_ipi
 * runs tlbpol_handle_ipi() for it (a kernel whose waits run with
 * interrupts on, as Linux's csd_lock_wait() does).  A CPU waiting for the
 * acknowledgements of its own shootdown then serves what others post to it
 * only when interrupted, as Linux does, and not also from its wait loop
 * (under TLBPOL_RULE_POLLING_CPUS, where a waiting CPU is not interrupted,
 * it still serves from the loop).  Serving from the loop is cheaper (no
 * interrupt), so a host sets this flag only to reproduce a kernel that
 * does not, as tlbpol-sim does for its Linux policies.  Without the
 * promise kept, two CPUs that shoot each other down wait for each other
 * for ever; tlbpol_engine_new() and tlbpol_engine_init() refuse the flag
 * without ops->relax (-EINVAL).
 */
#define TLBPOL_CFGF_RETAIN_AS (1U << 0)
#define TLBPOL_CFGF_WAIT_IRQS (1U << 1)
/*
 * TLBPOL_CFGF_LOCKLESS_WALKERS (release 0.3): the host walks page tables
 * without locks, holding interrupts off across the walk (Linux GUP-fast),
 * and relies on the engine to keep freed table pages from such walks: a
 * request with TLBPOL_FLUSHF_TABLES completes only when every CPU that may
 * be walking the address space has taken an interrupt, or served the
 * request by itself from an engine call (outside any walk), or, after a
 * mechanism without TLBPOL_BKF_IMPLIES_IRQ, once ops->walker_sync returned
 * for them.  So such a request goes by interrupts where ops->walker_sync
 * is NULL, and a preempted vCPU is not left out of it (it may have been
 * descheduled inside a walk: it takes the interrupt when it runs again, and
 * the request waits for it; Linux likewise waits, for its RCU grace
 * period or its sync IPI), and TLBPOL_EVF_LAZY_OK does not make an event
 * that frees tables lazy (it stays due BY_FREE: a lazy request would leave
 * out a vCPU preempted since its post, and no flush-stamp settle may wait
 * for one).  Without the flag the host synchronises its walkers itself
 * (see TLBPOL_EVF_TABLES_FREED).
 */
#define TLBPOL_CFGF_LOCKLESS_WALKERS (1U << 2)
/*
 * TLBPOL_CFGF_SVVPTC (release 0.3; TLBPOL_ARCH_RISCV64 only, -EINVAL
 * elsewhere): every hart implements Svvptc, so a store that makes a PTE
 * valid becomes visible to its walks within a bounded time with no
 * SFENCE.VMA (priv. spec, "Svvptc").  An install of a user page then needs
 * no flush (a hart that still caches the invalid PTE takes a spurious fault,
 * and the spurious-fault row flushes it there, as Linux 7a21b2e370da).  An
 * install of a kernel page is still flushed on every hart: a kernel access
 * in that bounded window would fault on a valid mapping, which only a host
 * that retries such faults survives (Linux 503638e0babf), and a 2026
 * report shows a core that prefetches the invalid PTE before the store.
 */
#define TLBPOL_CFGF_SVVPTC (1U << 3)
#define TLBPOL_CFGF_ALL 0xfU
/*
 * TLBPOL_WAIT_IRQS_FALLBACK_TURNS (release 0.3): under TLBPOL_CFGF_WAIT_IRQS
 * a wait that has seen no acknowledgement for cfg->wait_limit turns, or
 * this many without a wait_limit, serves its CPU's inbox from its loop
 * after all, for the rest of that wait.  The promise cannot hold where the
 * header lets a waiting call run with interrupts off (tlbpol_tick() from
 * the timer interrupt): two CPUs ticking at once would otherwise wait for
 * each other for ever.  Late, never stuck.
 */
#define TLBPOL_WAIT_IRQS_FALLBACK_TURNS 4096
#define TLBPOL_DEFAULT_BATCH_PAGES 512
#define TLBPOL_DEFAULT_MAX_AS 64
#define TLBPOL_MAX_BATCH_PAGES 65536
#define TLBPOL_MAX_AS 65536

/**
 * struct tlbpol_config - how to build an engine.  Fill it with
 * tlbpol_config_init(), then adjust.
 * @size: sizeof(struct tlbpol_config).
 * @nr_cpus: 1 .. TLBPOL_MAX_CPUS.
 * @arch: enum tlbpol_arch.
 * @max_as: address spaces open at once, 1 .. TLBPOL_MAX_AS.
 * @rules: TLBPOL_RULES_DEFAULT, TLBPOL_RULES_LINUX, TLBPOL_RULES_NONE or any
 *	mask of TLBPOL_RULE_* bits.
 * @flush_ceiling: pages per address space above which one whole-AS flush is
 *	used instead of per-page invalidations (default 33), >= 1.
 * @batch_pages: deferred pages a CPU holds before it flushes by itself
 *	(default 512), 1 .. TLBPOL_MAX_BATCH_PAGES.  Scattered pages take an
 *	entry each, and a CPU holds min(batch_pages, max(4 x (flush_ceiling
 *	+ 1), 64)) entries (136 at the defaults: four address spaces
 *	interleaved, each past the ceiling).  Past them a page joins an entry
 *	of its address space if that address space already has more entries
 *	pending than the flush ceiling (it is flushed whole anyway); otherwise
 *	the batch flushes first.  Contiguous pages share an entry.
 * @cpu_node: NUMA node of each CPU (nr_cpus entries, copied), or NULL.
 * @ops: the callbacks (copied; flush_local and send_ipi are required).
 * @ops_ctx: passed to every callback.
 * @flags: TLBPOL_CFGF_*.
 * @cost_ipi_ns, @cost_ipi_target_ns, @cost_ipi_remote_ns, @cost_broadcast_ns,
 * @cost_broadcast_page_ns: the broadcast cost model (see
 *	TLBPOL_DEFAULT_COST_IPI_NS); 0 takes the default.
 * @ipi_delay_spins: with TLBPOL_RULE_POLLING_CPUS, how many turns of its wait
 *	loop (each one ops->relax) an initiator of a synchronous shootdown
 *	waits for its targets to serve the request by themselves (from their
 *	own shootdown's wait, a tick or a switch) before it interrupts the rest.
 *	0 (the default): interrupt at once.  Two CPUs shooting at each other
 *	in turn (each unmaps while the other is between its waits) never find
 *	each other polling; a short delay lets the other reach its wait.  Set
 *	it to about the cost of an interrupt divided by the cost of one turn:
 *	the wait then never costs more than the interrupt it may save (the
 *	spin-then-block argument), which pays where interrupts are dear (a
 *	guest: every IPI is a VM exit on both sides).  The engine guesses
 *	who will serve by itself (a CPU that polled in its last wait, or is
 *	inside an engine call): where the targets mostly halt until an
 *	interrupt while still RUNNING as far as the engine knows (a wait
 *	that sleeps, not declared with tlbpol_cpu_state()), the guess is
 *	wrong and the delay only postpones the interrupt; set 0 there.
 *	There is no upper
 *	bound: a delay longer than the targets' tick period means they are in
 *	effect never interrupted, and every shootdown waits for their ticks.
 * @reserved: 0.
 * @wait_limit: (release 0.2) the watchdog: every @wait_limit turns of one
 *	wait for acknowledgements (each turn one ops->relax), interrupt the
 *	targets that have not taken the request again, and call ops->stuck
 *	if set.  0 (the default): no limit, interrupts are sent once.  A
 *	lost interrupt is then recovered; a CPU that never serves is
 *	reported, never skipped.
 * @free_ticks: (release 0.2) work due BY_WRITEBACK or BY_FREE that has been
 *	pending through this many tlbpol_tick() calls of its CPU completes
 *	from the next one, and with it the deferred frees that waited for it:
 *	a CPU that unmaps and then goes quiet still frees.  0 takes the
 *	default, TLBPOL_DEFAULT_FREE_TICKS; TLBPOL_FREE_TICKS_NEVER leaves
 *	such work for the host's own tlbpol_flush() (release 0.1's behaviour).
 * @backends: (release 0.3) @nr_backends pointers to descriptors of the
 *	flush mechanisms the host has (struct tlbpol_backend; copied), or
 *	NULL.  A mechanism without one is described by the ops and the
 *	cost_* fields above: interrupts always, a broadcast when
 *	ops->bcast_issue and ops->bcast_sync (split) or ops->broadcast are
 *	set.
 * @nr_backends: entries at @backends, at most TLBPOL_MECH_MAX.
 * @reserved2: 0.
 * @tags: (release 0.3) a tag allocator (tlbpol_tags_init()) for at least
 *	@nr_cpus CPUs that chooses the address spaces' hardware tags, or
 *	NULL: the host chooses them and gives each to tlbpol_as_open().
 *	With one, the host switches with tlbpol_switch_tag() (tlbpol_switch()
 *	is refused), entries stay under their tags across switches
 *	(TLBPOL_CFGF_RETAIN_AS is implied), and every struct tlbpol_flush
 *	names the hardware tag of the CPU it reaches: tlbpol_tag_of() on that
 *	CPU for ops->flush_local (the leaving address space's old tag until
 *	the CR3 write that leaves it; no flush_local at all for an address
 *	space the CPU holds under no tag), the address space's one tag for
 *	a broadcast or a remote action.  TLBPOL_TAGS_PERCPU gives one address
 *	space different tags on different CPUs, so no single broadcast or
 *	remote action can name it: without global tags (nr_global) the
 *	engine uses interrupts only; with them, an address space loaded on
 *	global_min_cpus CPUs (as the allocator says) gets one at its next
 *	shootdown, a broadcast names it, and the CPUs that still run it
 *	under their slots (they have not switched to it since) take
 *	interrupts, the transition tracked per CPU.  Its global tag goes
 *	back to the allocator when it closes, not when it shrinks, as in
 *	Linux (destroy_context() frees a global ASID, mm_free_global_asid(),
 *	when the mm goes): to give it back earlier, every CPU that runs the
 *	address space under it would first have to move back to a slot,
 *	each with its slot's flush, and take interrupts meanwhile; instead
 *	the threshold rises as the global tags run out (global_min_cpus).
 *	The allocator is the engine's while the engine lives (no other
 *	tlbpol_tag_load() on it).
 *
 * @size is sizeof(struct tlbpol_config) of the header the caller was built
 * with; release 0.1's structure (exactly TLBPOL_CONFIG_SIZE_0_1 bytes, up
 * to @reserved) and release 0.2's (TLBPOL_CONFIG_SIZE_0_2, up to
 * @free_ticks) are accepted, and the fields they lack take their defaults.
 * A size between them is -EINVAL.
 */
struct tlbpol_config {
	uint32_t size;
	uint32_t nr_cpus;
	uint32_t arch;
	uint32_t max_as;
	uint64_t rules;
	uint32_t flush_ceiling;
	uint32_t batch_pages;
	const uint16_t *cpu_node;
	const struct tlbpol_ops *ops;
	void *ops_ctx;
	uint32_t flags;
	uint32_t cost_ipi_ns;
	uint32_t cost_ipi_target_ns;
	uint32_t cost_ipi_remote_ns;
	uint32_t cost_broadcast_ns;
	uint32_t cost_broadcast_page_ns;
	uint32_t ipi_delay_spins;
	uint32_t reserved;
	uint32_t wait_limit;
	uint32_t free_ticks;
	const struct tlbpol_backend *const *backends;
	uint32_t nr_backends;
	uint32_t reserved2;
	struct tlbpol_tags *tags;
};

#define TLBPOL_DEFAULT_FREE_TICKS 2
#define TLBPOL_FREE_TICKS_NEVER 0xffffffffU

#define TLBPOL_CONFIG_SIZE_0_1 88 /* offsetof(struct tlbpol_config, wait_limit) */
#define TLBPOL_CONFIG_SIZE_0_2 96 /* offsetof(struct tlbpol_config, backends) */

struct tlbpol_engine;
struct tlbpol_as;

/**
 * tlbpol_config_init() - fill @cfg with defaults.
 * @cfg: the configuration to fill.
 * @nr_cpus: its nr_cpus, 1 .. TLBPOL_MAX_CPUS (checked when an engine is
 *	built from it).
 * @arch: its arch, enum tlbpol_arch.
 *
 * Sets size, nr_cpus and arch as given, max_as TLBPOL_DEFAULT_MAX_AS, rules
 * TLBPOL_RULES_DEFAULT, flush_ceiling 33, batch_pages 512, the default cost
 * model, and NULL cpu_node, ops and ops_ctx, no flags, no wait_limit.  Does
 * nothing if @cfg is NULL.  Writes sizeof(struct tlbpol_config) bytes
 * (programs built against release 0.1 bind tlbpol_config_init@TLBPOL_0.1,
 * which writes 0.1's TLBPOL_CONFIG_SIZE_0_1, and against 0.2
 * tlbpol_config_init@TLBPOL_0.2, which writes TLBPOL_CONFIG_SIZE_0_2).
 * Context: any.
 */
TLBPOL_API void tlbpol_config_init(struct tlbpol_config *cfg, uint32_t nr_cpus, uint32_t arch);

/**
 * struct tlbpol_calibration - the primitives' costs, as the host timed them.
 * Release 0.3.  Set @size to sizeof; the host times each at boot.
 * @size: sizeof(struct tlbpol_calibration).
 * @refill_entries: TLB entries a CPU uses again soon after a whole flush
 *	(its working set: what a whole flush costs beyond the pages a
 *	ranged one names); 0 takes 64.
 * @ipi_round_trip: one interrupt to one other CPU, from the send to seeing
 *	its handler's acknowledgement (required, > 0).
 * @ipi_send: the sender's part for each further target (an ICR write);
 *	0 takes a tenth of @ipi_round_trip.
 * @irq_entry_exit: what a target spends taking the interrupt (entry,
 *	handler's return, EOI), added to each further target's cost where
 *	the host weighs its targets' time as well as the initiator's; 0 (the
 *	initiator's time only, as docs/results.md's tables were made).
 * @inval_page: invalidating one page locally (INVLPG, TLBI VAE1 with its
 *	DSB, SFENCE.VMA va) (required, > 0).
 * @full_flush: a whole local flush (a CR3 write, TLBI ASIDE1) (required).
 * @refill: refilling one entry a flush removed (a TLB miss's walk from
 *	cached page tables) (required, > 0).
 * @bcast_issue: one broadcast invalidation instruction issued (INVLPGB,
 *	TLBI ...IS), or 0 when the machine has none.
 * @bcast_sync: waiting for the broadcasts issued to complete (TLBSYNC,
 *	DSB ISH), or the whole of a synchronous broadcast (a hypercall).
 * @bcast_max_pages: pages one broadcast instruction names (INVLPGB's
 *	count; 1 without TLBI ranges), 0 for 1.
 * @pad: 0.
 *
 * Every time is in one unit, the same for all (nanoseconds, or TSC cycles
 * where the TSC rate is unknown): the cost model only compares them.
 */
struct tlbpol_calibration {
	uint32_t size;
	uint32_t refill_entries;
	uint64_t ipi_round_trip;
	uint64_t ipi_send;
	uint64_t irq_entry_exit;
	uint64_t inval_page;
	uint64_t full_flush;
	uint64_t refill;
	uint64_t bcast_issue;
	uint64_t bcast_sync;
	uint32_t bcast_max_pages;
	uint32_t pad;
};

/**
 * tlbpol_cost_calibrate() - the cost model and the flush ceiling from
 * measured costs (release 0.3).
 * @m: the measurements.
 * @cfg: a configuration (tlbpol_config_init()'s): its cost_* fields and
 *	flush_ceiling are written, nothing else.
 * @ipi: if not NULL, filled as the TLBPOL_MECH_IPI descriptor the costs
 *	give (size, mech, costs; flags 0).
 * @bcast: if not NULL and @m has a broadcast (@bcast_sync > 0), filled as
 *	a TLBPOL_MECH_BROADCAST descriptor (its flags 0: the host adds
 *	TLBPOL_BKF_SPLIT where it splits); else zeroed.
 *
 * The derivations, which the host may override afterwards:
 *  - first target: @ipi_round_trip (the initiator waits for it, as it
 *    waits for a broadcast's sync); each further one: @ipi_send plus
 *    @irq_entry_exit, the interrupt the target takes (which a broadcast
 *    spares it), if given;
 *  - broadcast: @bcast_issue + @bcast_sync fixed, @bcast_issue per
 *    instruction of @bcast_max_pages pages;
 *  - flush ceiling: the most pages N for which invalidating them one by
 *    one costs no more than a whole flush and the refills it adds, N x
 *    (@inval_page + @refill) <= @full_flush + @refill x @refill_entries,
 *    at least 1, at most 4096.  Linux's 33 came from such a comparison on
 *    a Haswell (Dave Hansen's measurements behind 611ae8e3f520's
 *    tlb_single_page_flush_ceiling).
 * Costs above 2^32 - 1 are capped there (the config's fields are 32-bit),
 * and a cost of 0 is written as 1 (0 in a field means "the default").
 * cost_ipi_remote_ns, and without a broadcast measured the broadcast's
 * fields, are left as they are: give them in the same unit.
 * Context: any; freestanding builds too.
 * Return: 0; -EINVAL for NULL @m or @cfg, a @size of either too small, a
 * required measurement 0 or a nonzero @pad; -E2BIG for @m->size larger than this library's
 * structure with a nonzero byte past it.
 */
TLBPOL_API int tlbpol_cost_calibrate(const struct tlbpol_calibration *m, struct tlbpol_config *cfg,
				     struct tlbpol_backend *ipi, struct tlbpol_backend *bcast);

/**
 * tlbpol_engine_size() - bytes of memory an engine for @cfg needs.
 * @cfg: the configuration the engine will be built with.
 * Context: any.
 * Return: the size, or 0 if @cfg is NULL or invalid (see tlbpol_engine_init()).
 */
TLBPOL_API size_t tlbpol_engine_size(const struct tlbpol_config *cfg);

/*
 * TLBPOL_ENGINE_SIZE() - tlbpol_engine_size() as a constant expression, for a
 * static buffer: the bytes an engine built by tlbpol_engine_init() needs
 * for @cpus CPUs, @max_as address spaces, @batch_pages and @flush_ceiling
 * (the config's fields; use the TLBPOL_DEFAULT_* values for defaults), and
 * @nodes NUMA nodes when cfg->cpu_node is given (the largest node + 1), or
 * 0 when it is NULL.  Equal to tlbpol_engine_size() for the same valid
 * configuration (tests/test_layout.c checks a grid); not for
 * tlbpol_engine_new(), which lays the engine out page by page.  LP64 only
 * (the internal sizes below are checked by the core's build).  It changes
 * from release to release: recompile, never store it.
 *
 *   static _Alignas(64) unsigned char mem[TLBPOL_ENGINE_SIZE(4,
 *           TLBPOL_DEFAULT_MAX_AS, TLBPOL_DEFAULT_BATCH_PAGES,
 *           TLBPOL_DEFAULT_FLUSH_CEILING, 0)];
 */
/*
 * The pieces of TLBPOL_ENGINE_SIZE(), which layout() in lib/core/engine.c
 * also places the engine by: each list names, in layout()'s order, the
 * arrays of a region as X(field, count, type), so that the sizes below and
 * the placement are one arithmetic.  Every array starts on a cache line
 * (TLBPOL__LINE_UP).  TLBPOL__SZ_<type> is the size of an element on LP64;
 * the core uses sizeof and asserts that the two agree.
 */
#define TLBPOL__LINE_UP(b) ((((unsigned long long)(b)) + 63ULL) / 64ULL * 64ULL)
#define TLBPOL__MIN(a, b) ((unsigned long long)(a) < (unsigned long long)(b) ? \
			   (unsigned long long)(a) : (unsigned long long)(b))
#define TLBPOL__MAX(a, b) ((unsigned long long)(a) > (unsigned long long)(b) ? \
			   (unsigned long long)(a) : (unsigned long long)(b))
/* Element sizes, LP64 (lib/core/engine.c asserts each). */
#define TLBPOL__SZ_ENGINE 440ULL      /* struct tlbpol_engine */
/* struct tlbpol_cpu: each reason adds two decision counts (flush avoided
 * or not), so a new reason needs no new size here. */
#define TLBPOL__SZ_CPU_BASE 3024ULL
#define TLBPOL__SZ_CPU_PER_REASON 16ULL
#define TLBPOL__SZ_CPU                                                          \
	TLBPOL__LINE_UP(TLBPOL__SZ_CPU_BASE + TLBPOL_WHY_MAX * TLBPOL__SZ_CPU_PER_REASON)
#define TLBPOL__SZ_AS 64ULL           /* struct tlbpol_as */
#define TLBPOL__SZ_PENDING_SPAN 24ULL /* struct pending_span, one per CPU and AS */
#define TLBPOL__SZ_PENDING 32ULL      /* struct pending, a batch entry */
#define TLBPOL__SZ_REQ_FLUSH 80ULL    /* struct req_flush */
#define TLBPOL__SZ_RECV_AS 48ULL      /* struct recv_as */
#define TLBPOL__SZ_RANGE 24ULL        /* struct tlbpol_range */
#define TLBPOL__SZ_CPUSET 512ULL      /* struct tlbpol_cpuset */
#define TLBPOL__SZ_U64 8ULL
#define TLBPOL__SZ_U32 4ULL
#define TLBPOL__SZ_U16 2ULL
#define TLBPOL__SZ_U8 1ULL
/* Request slots each CPU owns (the core's TLBPOL_REQS): one synchronous,
 * seven for lazy requests in flight (a flush stamp posts one per unmap, and
 * a post that finds them all busy interrupts the oldest one's targets). */
#define TLBPOL__REQS_PER_CPU 8ULL
/* Address spaces one request carries at most; a lazy one, one (and
 * TLBPOL__LAZY_RANGES() ranges): many small lazy requests rather than a
 * few large ones. */
#define TLBPOL__PARTS_MAX 8ULL
#define TLBPOL__LAZY_PARTS_MAX 1ULL
/* 64-bit words of a CPU mask of @c CPUs. */
#define TLBPOL__MASK_WORDS(c) (((unsigned long long)(c) + 63ULL) / 64ULL)
#define TLBPOL__PARTS(bp, as) TLBPOL__MIN(TLBPOL__MIN((bp), (as)), TLBPOL__PARTS_MAX)
#define TLBPOL__RANGES(bp, ceil) TLBPOL__MIN(TLBPOL__MAX(2ULL * (ceil), 64ULL), (bp))
#define TLBPOL__LAZY_PARTS(bp, as) TLBPOL__MIN(TLBPOL__PARTS(bp, as), TLBPOL__LAZY_PARTS_MAX)
#define TLBPOL__LAZY_RANGES(bp, ceil) TLBPOL__MIN(4ULL, TLBPOL__RANGES(bp, ceil))
#define TLBPOL__RECV_RANGES(bp, ceil) TLBPOL__MIN(TLBPOL__MAX((ceil), 32ULL), TLBPOL__RANGES(bp, ceil))
#define TLBPOL__ENTRIES(bp, ceil) TLBPOL__MIN(TLBPOL__MAX(4ULL * ((ceil) + 1ULL), 64ULL), (bp))
/* Each address space's arrays: its footprint mask, then its leaving mask
 * and its global-tag mask in the same array (one cache line for the three
 * up to 128 CPUs). */
#define TLBPOL__AS_ARRAYS(X, c)                                                 \
	X(footprint, 3ULL * TLBPOL__MASK_WORDS(c), U64)
/* Each CPU's arrays, then its synchronous request's, then each of its
 * TLBPOL__REQS_PER_CPU - 1 lazy requests'.  What only NUMA fan-out uses
 * (direct, fwd, leaders) exists only with a topology (@nodes), and never
 * in a lazy request, which never fans out. */
#define TLBPOL__NUMA_ONLY(nodes, n) ((nodes) ? (unsigned long long)(n) : 0ULL)
#define TLBPOL__CPU_ARRAYS(X, c, as, bp, ceil, nodes)                           \
	X(inbox, TLBPOL__MASK_WORDS(c), U64)                                    \
	X(direct, TLBPOL__NUMA_ONLY(nodes, TLBPOL__MASK_WORDS(c)), U64)         \
	X(fwd, TLBPOL__NUMA_ONLY(nodes, 1), CPUSET)                             \
	X(pending, TLBPOL__ENTRIES(bp, ceil), PENDING)                          \
	X(as_slot, (as), U8)                                                    \
	X(recv_slot, (as), U8)                                                  \
	X(recv_as, TLBPOL__PARTS(bp, as), RECV_AS)                              \
	X(recv_ranges, TLBPOL__RECV_RANGES(bp, ceil), RANGE)
#define TLBPOL__REQ_ARRAYS(X, c, as, bp, ceil, nodes)                           \
	X(targets, TLBPOL__MASK_WORDS(c), U64)                                  \
	X(leaders, TLBPOL__NUMA_ONLY(nodes, TLBPOL__MASK_WORDS(c)), U64)        \
	X(flushes, TLBPOL__PARTS(bp, as), REQ_FLUSH)                            \
	X(ranges, TLBPOL__RANGES(bp, ceil), RANGE)
/* A lazy request's flushes and then, in the same array, its ranges, in
 * bytes: one part (80 bytes) and four ranges (96) fill three cache lines
 * together where each alone took two (448 bytes a CPU, seven requests).
 * Both are written by the owner before it arms the request and only read
 * while it is armed, so sharing a line costs nothing; the targets, which
 * claimers write, keep lines of their own. */
#define TLBPOL__LAZY_BODY(as, bp, ceil)                                         \
	(TLBPOL__LAZY_PARTS(bp, as) * TLBPOL__SZ_REQ_FLUSH +                    \
	 TLBPOL__LAZY_RANGES(bp, ceil) * TLBPOL__SZ_RANGE)
#define TLBPOL__LAZY_REQ_ARRAYS(X, c, as, bp, ceil)                             \
	X(targets, TLBPOL__MASK_WORDS(c), U64)                                  \
	X(flushes, TLBPOL__LAZY_BODY(as, bp, ceil), U8)
/* An X() for the lists above: the bytes of one array, added. */
#define TLBPOL__BYTES(field, n, type) + TLBPOL__LINE_UP((n) * TLBPOL__SZ_##type)
#define TLBPOL__CPU_BYTES(c, as, bp, ceil, nodes)                               \
	(0ULL TLBPOL__CPU_ARRAYS(TLBPOL__BYTES, c, as, bp, ceil, nodes) +       \
	 (0ULL TLBPOL__REQ_ARRAYS(TLBPOL__BYTES, c, as, bp, ceil, nodes)) +     \
	 (TLBPOL__REQS_PER_CPU - 1ULL) *                                        \
		 (0ULL TLBPOL__LAZY_REQ_ARRAYS(TLBPOL__BYTES, c, as, bp, ceil)))
/* The engine, its CPUs, address spaces, generations and pending spans,
 * the node masks, the address spaces' arrays, the node table, the CPUs'
 * arrays: layout()'s order. */
#define TLBPOL_ENGINE_SIZE(cpus, max_as, batch_pages, flush_ceiling, nodes)          \
	(TLBPOL__LINE_UP(TLBPOL__SZ_ENGINE) + TLBPOL__LINE_UP((cpus) * TLBPOL__SZ_CPU) + \
	 TLBPOL__LINE_UP((max_as) * TLBPOL__SZ_AS) +                                  \
	 TLBPOL__LINE_UP((cpus) * (max_as) * TLBPOL__SZ_U64) +                         \
	 TLBPOL__LINE_UP((cpus) * (max_as) * TLBPOL__SZ_PENDING_SPAN) +                \
	 ((nodes) ? TLBPOL__LINE_UP((nodes) * TLBPOL__MASK_WORDS(cpus) * TLBPOL__SZ_U64) \
		  : 0ULL) +                                                           \
	 (max_as) * (0ULL TLBPOL__AS_ARRAYS(TLBPOL__BYTES, cpus)) +                   \
	 ((nodes) ? TLBPOL__LINE_UP((cpus) * TLBPOL__SZ_U16) : 0ULL) +                 \
	 (cpus) * TLBPOL__CPU_BYTES((cpus), (max_as), (batch_pages), (flush_ceiling), (nodes)))

/**
 * tlbpol_engine_init() - build an engine in caller-provided memory.
 * @out: receives the engine.
 * @mem: at least tlbpol_engine_size(@cfg) bytes, 64-byte aligned, that stay
 *	valid and untouched by the caller until the engine is no longer used.
 * @len: bytes at @mem.
 * @cfg: the configuration (copied).
 *
 * This is the freestanding constructor: it allocates nothing.
 * Context: any; no other thread may use @mem meanwhile.
 * Return: 0; -EINVAL for a NULL argument, cfg->size too small, an unknown
 * arch, rule or config flag bit (TLBPOL_CFGF_SVVPTC on another arch than
 * RISCV64 too), missing ops->flush_local or ops->send_ipi,
 * TLBPOL_CFGF_WAIT_IRQS without ops->relax, one of ops->bcast_issue and
 * ops->bcast_sync without the other, a zero flush_ceiling or
 * misaligned @mem, or a bad backend descriptor (NULL, too small, an
 * unknown mechanism or flag, a flag its mechanism cannot have, a
 * broadcast whose ops are missing), or a cfg->tags that is no tag
 * allocator; -EEXIST for two descriptors of one
 * mechanism; -ERANGE for nr_cpus, max_as, batch_pages, nr_backends
 * or a cpu_node entry out of range, or a cfg->tags for fewer CPUs than
 * nr_cpus; -ENOMEM if @len is too small; -E2BIG
 * for cfg->size, cfg->ops->size or a descriptor's size larger than this
 * library's structure with a nonzero byte past it (release 0.3).
 */
TLBPOL_API int tlbpol_engine_init(struct tlbpol_engine **out, void *mem, size_t len,
				  const struct tlbpol_config *cfg);

/**
 * tlbpol_engine_new() - allocate and build an engine (hosted build only).
 * @cfg: the configuration (copied).
 * @out: receives the engine.
 * Context: process context, may allocate.
 * Return: 0, or the errors of tlbpol_engine_init(); -ENOMEM if allocation fails.
 */
TLBPOL_HOSTED_API int tlbpol_engine_new(const struct tlbpol_config *cfg, struct tlbpol_engine **out);

/**
 * tlbpol_engine_free() - free an engine made by tlbpol_engine_new() (hosted
 * build only).
 * @eng: the engine, or NULL.
 *
 * NULL, and an engine built by tlbpol_engine_init() in the
 * caller's memory (which stays the caller's), are ignored.  Pending flushes and deferred frees are
 * dropped: complete them first with tlbpol_flush(.., TLBPOL_BY_LAZY).
 * Context: no other call may be running on the engine.
 */
TLBPOL_HOSTED_API void tlbpol_engine_free(struct tlbpol_engine *eng);

/**
 * tlbpol_engine_topology() - the NUMA node of each CPU, as the engine uses it.
 * @eng: the engine.
 * @cpu_node: receives min(@n, nr_cpus) entries (may be NULL if @n is 0).
 * @n: entries at @cpu_node.
 *
 * With cfg->cpu_node given, that; with tlbpol_engine_new() and no cpu_node,
 * what libnuma reported (one node where NUMA is unavailable).
 * Context: any.
 * Return: the number of nodes (>= 1); -EINVAL for NULL @eng or @cpu_node.
 */
TLBPOL_API int tlbpol_engine_topology(const struct tlbpol_engine *eng, uint16_t *cpu_node,
				      uint32_t n);

/**
 * tlbpol_engine_rules() - the rules in force.
 * @eng: the engine.
 *
 * The configured mask less the rules this arch or these ops cannot use
 * (e.g. RULE_BROADCAST with neither a broadcast nor a remote action, or
 * with their descriptors TLBPOL_BKF_DISABLED).
 * Context: any.
 * Return: the mask, 0 for NULL.
 */
TLBPOL_API uint64_t tlbpol_engine_rules(const struct tlbpol_engine *eng);

/* ------------------------------------------------------------------------ */
/* Live reconfiguration (hosted build; engines from tlbpol_engine_new())     */
/* ------------------------------------------------------------------------ */

/*
 * Rules, flush ceiling, batch size and cost model can change while CPUs run.
 * Engine calls read the configuration without a lock or barrier (liburcu's
 * QSBR flavour); a change frees the configuration it replaces after every
 * registered thread has passed a quiescent state.  The contract:
 *  - a thread that calls into an engine that may be reconfigured calls
 *    tlbpol_thread_register() first (and tlbpol_thread_unregister() before
 *    it exits);
 *  - it passes quiescent states: every return from tlbpol_tick() or
 *    tlbpol_switch() is one, tlbpol_quiescent() is one, and a thread that
 *    blocks for long goes tlbpol_thread_offline() / tlbpol_thread_online()
 *    around it.  A change waits for all of them (it blocks until then).
 * Threads that never call an engine being reconfigured need not register.
 * One call sees one configuration: a decision never mixes two.
 */

/**
 * tlbpol_engine_set_rules() - replace the rule mask.
 * @eng: an engine made by tlbpol_engine_new().
 * @rules: the new mask of TLBPOL_RULE_* bits, filtered as at creation:
 *	rules the ops or topology cannot serve are dropped.
 * Context: process context, may block until a grace period has elapsed; not
 * from a callback.
 * Return: 0; -EINVAL for NULL or a freestanding engine, or unknown bits;
 * -ENOMEM.
 */
TLBPOL_HOSTED_API int tlbpol_engine_set_rules(struct tlbpol_engine *eng, uint64_t rules);
/**
 * tlbpol_engine_set_flush_ceiling() - replace the flush ceiling.
 * @eng: an engine made by tlbpol_engine_new().
 * @pages: pages above which a whole-AS flush is used, >= 1.
 * Context: as tlbpol_engine_set_rules().
 * Return: 0; -EINVAL for NULL or a freestanding engine, or 0 @pages;
 * -ENOMEM.
 */
TLBPOL_HOSTED_API int tlbpol_engine_set_flush_ceiling(struct tlbpol_engine *eng, uint32_t pages);
/**
 * tlbpol_engine_set_batch_pages() - replace the batch size.
 * @eng: an engine made by tlbpol_engine_new().
 * @pages: deferred pages a CPU holds before it flushes by itself: 1 .. the
 *	batch_pages the engine was created with (its arrays are sized for
 *	that).
 * Context: as tlbpol_engine_set_rules().
 * Return: 0; -EINVAL for NULL or a freestanding engine; -ERANGE for 0 or
 * above the creation size; -ENOMEM.
 */
TLBPOL_HOSTED_API int tlbpol_engine_set_batch_pages(struct tlbpol_engine *eng, uint32_t pages);
/**
 * tlbpol_engine_set_cost_model() - replace the broadcast cost model.
 * @eng: an engine made by tlbpol_engine_new().
 * @cfg: its cost_* fields are the new model (a zero field keeps the current
 *	value); of the rest only its size is checked: its backends (release
 *	0.3) are not read, and the descriptors' costs given at creation stay.
 * Context: as tlbpol_engine_set_rules().
 * Return: 0; -EINVAL for NULL or cfg->size too small; -E2BIG for cfg->size
 * larger than this library's structure with a nonzero byte past it;
 * -ENOMEM.
 */
TLBPOL_HOSTED_API int tlbpol_engine_set_cost_model(struct tlbpol_engine *eng,
					    const struct tlbpol_config *cfg);
/**
 * tlbpol_engine_set_ipi_delay() - replace the config's ipi_delay_spins.
 * @eng: an engine made by tlbpol_engine_new().
 * @spins: the new ipi_delay_spins (0: interrupt at once).
 * Context: as tlbpol_engine_set_rules().
 * Return: 0; -EINVAL for NULL or a freestanding engine; -ENOMEM.
 */
TLBPOL_HOSTED_API int tlbpol_engine_set_ipi_delay(struct tlbpol_engine *eng, uint32_t spins);
/**
 * tlbpol_thread_register() / tlbpol_thread_unregister() - the calling thread
 * joins (leaves) the grace periods of live reconfiguration.
 *
 * Idempotent.
 *
 * Context: the thread itself.
 */
TLBPOL_HOSTED_API void tlbpol_thread_register(void);
TLBPOL_HOSTED_API void tlbpol_thread_unregister(void);
/**
 * tlbpol_quiescent() - the calling thread holds no engine configuration now.
 *
 * A no-op in an unregistered thread.
 *
 * Context: the thread itself, outside engine calls.
 */
TLBPOL_HOSTED_API void tlbpol_quiescent(void);
/**
 * tlbpol_thread_offline() / tlbpol_thread_online() - the calling thread
 * leaves the grace periods around a long block, and comes back.
 *
 * No-ops in an unregistered thread.
 *
 * Context: the thread itself, outside engine calls.
 */
TLBPOL_HOSTED_API void tlbpol_thread_offline(void);
TLBPOL_HOSTED_API void tlbpol_thread_online(void);

/* ------------------------------------------------------------------------ */
/* Address spaces and CPU state                                             */
/* ------------------------------------------------------------------------ */

/**
 * tlbpol_as_open() - start tracking an address space.
 * @eng: the engine.
 * @tag: the caller's tag (PCID, ASID, VMID...), passed back in every flush
 *	(with cfg->tags, an identity only: flushes name hardware tags).
 *	Tags of open address spaces are unique.
 * @out: receives the address space.
 * Context: any; thread-safe.
 * Return: 0; -EINVAL for NULL arguments; -EEXIST if an open address space has
 * @tag; -ENOMEM if max_as are open.
 */
TLBPOL_API int tlbpol_as_open(struct tlbpol_engine *eng, uint64_t tag, struct tlbpol_as **out);

/**
 * tlbpol_as_close() - stop tracking an address space.
 * @eng: the engine.
 * @as: the address space.
 * Context: any; thread-safe.  No CPU may still have @as loaded, running or
 * lazily (switch away, or tlbpol_unload() lazy CPUs, first).  Free its page
 * tables through an unmap with TLBPOL_EVF_TABLES_FREED and
 * tlbpol_defer_free() before closing it, not directly after: a CPU that
 * has just switched away may still walk them until its CR3 write, and such
 * an unmap waits for it.
 * Return: 0; -EINVAL for NULL or an address space that is closed or belongs to
 * another engine; -EBUSY while flushes are pending for it or a CPU runs it.
 */
TLBPOL_API int tlbpol_as_close(struct tlbpol_engine *eng, struct tlbpol_as *as);

/**
 * tlbpol_as_lookup() - the open address space with @tag (hosted build).
 * @eng: the engine.
 * @tag: the tag it was opened with.
 *
 * Lock-free on the read side (a liburcu hash table); in a thread registered
 * with tlbpol_thread_register() it costs no more than the hash walk.  The
 * handle is valid until the address space is closed.
 * Context: any thread, not from a callback.
 * Return: the address space, or NULL (none open with @tag, NULL or
 * freestanding @eng).
 */
TLBPOL_HOSTED_API struct tlbpol_as *tlbpol_as_lookup(struct tlbpol_engine *eng, uint64_t tag);

/**
 * tlbpol_as_tag() - the tag @as was opened with.
 * @as: an open address space, or NULL.
 * Context: any.
 * Return: the tag; 0 for NULL.
 */
TLBPOL_API uint64_t tlbpol_as_tag(const struct tlbpol_as *as);

/**
 * tlbpol_switch() - @cpu now runs @next (NULL: idle/lazy kernel thread).
 * @eng: the engine.
 * @cpu: the CPU that switches.
 * @next: the address space it switches to, or NULL.
 *
 * Switching to NULL keeps the previous address space loaded (as Linux's lazy
 * TLB mode keeps the old mm for a kernel thread): the CPU stays in its
 * footprint, with RULE_LAZY_CPUS is spared interrupts for it (unless page
 * tables were freed), and catches up when it switches back to it.  Switching
 * to another address space leaves the old one's footprint (its entries go
 * with the CR3 write, or, with TLBPOL_CFGF_RETAIN_AS, stay under their tag
 * and are caught up on at the next switch back).  Call it as the hardware
 * switches (the CR3 write follows at once), with interrupts off.  Until this
 * CPU's next engine call (or an interrupt it takes after the CR3 write) it
 * still counts as walking the old address space's page tables: a request
 * that frees tables there waits for it, for its MMU may walk them
 * speculatively until CR3 changes.
 * @need_flush: may be NULL; set to 1 when the CPU must flush @next (kind AS)
 *	before using it because flushes were skipped while it was away, else 0.
 *	The caller does that flush as part of the switch (e.g. a CR3 write
 *	without the no-flush bit), before any other engine call for @cpu; the
 *	engine counts the CPU as caught up from that next call on, not before
 *	(until then initiators interrupt it as usual).
 *
 * Also serves this CPU's incoming requests and runs deferred frees that are due.
 * Context: for @cpu.
 * Return: 0; -EINVAL for NULL @eng, a closed/foreign @next, or an engine
 * with cfg->tags (it switches with tlbpol_switch_tag()); -ERANGE for @cpu;
 * -EBUSY when @next is an address space and @cpu is not RUNNING (an IDLE or
 * PREEMPTED CPU would be spared its flushes; set it RUNNING first), or
 * nested in another engine call for @cpu.
 */
TLBPOL_API int tlbpol_switch(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next,
			     int *need_flush);

/**
 * tlbpol_switch_tag() - tlbpol_switch() with cfg->tags: the tag, and its flush.
 * @eng: the engine.
 * @cpu: the CPU that switches.
 * @next: the address space it switches to, or NULL (lazy, as
 *	tlbpol_switch()).
 * @out: receives the tag to load with @next's tables and the flush to
 *	make as part of the switch (TLBPOL_TAG_FLUSH_*), before any access
 *	under the tag and before any other engine call for @cpu.
 *
 * One call for the host's switch path: the allocator's decision
 * (tlbpol_tag_load(): a slot taken from another address space, a
 * rollover) and the engine's (flushes @cpu skipped while away from @next,
 * which tlbpol_switch() reports as need_flush) folded into one answer:
 * TLBPOL_TAG_FLUSH_TAG flushes every entry of @out->tag (x86: CR3 without
 * bit 63; arm64: TLBI ASIDE1; RISC-V: SFENCE.VMA x0, asid), and
 * TLBPOL_TAG_FLUSH_ALL every non-global entry.  For @next NULL, @out->tag
 * is the tag still loaded and @out->flush TLBPOL_TAG_FLUSH_NONE; with
 * nothing loaded (no address space since tlbpol_unload() or the start)
 * there is no tag, and @out->tag is 0, which may also be a tag of the
 * allocator's when first_tag is 0: the host loads nothing either way.  A
 * catch-up that tlbpol_cpu_state() asks for later (its return of 1, from
 * PREEMPTED, or from IDLE to RUNNING) is a flush of the tag the CPU runs.
 * Context: for @cpu, with interrupts off until the tag is loaded.
 * Return: 0; -EINVAL for NULL @eng or @out, a closed/foreign @next, or an
 * engine without cfg->tags; -ERANGE for @cpu; -EBUSY as tlbpol_switch().
 */
TLBPOL_API int tlbpol_switch_tag(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next,
				 struct tlbpol_tag_use *out);

/**
 * tlbpol_unload() - @cpu drops the address space it keeps loaded while lazy.
 * @eng: the engine.
 * @cpu: a lazy CPU (after tlbpol_switch(.., NULL) or tlbpol_switch_tag(.., NULL, ..)).
 *
 * @cpu leaves the address space's footprint: the host switches it to page
 * tables of its own (Linux: switch_mm() to init_mm), e.g. before the address
 * space is closed and its page tables freed.
 * Context: for @cpu.
 * Call it with interrupts off, the CR3 write following at once (as
 * tlbpol_switch()).
 * Return: 0; -EINVAL for NULL @eng; -ERANGE for @cpu; -EBUSY if @cpu is not
 * lazy (it runs an address space: switch it to NULL first), or nested in
 * another engine call for @cpu.
 */
TLBPOL_API int tlbpol_unload(struct tlbpol_engine *eng, uint32_t cpu);

/**
 * enum tlbpol_cpu_state - what a CPU is doing.
 * @TLBPOL_CPU_RUNNING: running, takes interrupts.
 * @TLBPOL_CPU_IDLE: idle; still takes interrupts (RULE_LAZY_CPUS may spare it).
 * @TLBPOL_CPU_PREEMPTED: a vCPU that is not scheduled (RULE_VCPU_DEFER may
 *	spare it).
 * @TLBPOL_CPU_OFFLINE: takes no interrupts and is never targeted: nothing
 *	it keeps counts.  The tlbpol_cpu_state() call that brings it back
 *	flushes it whole (ops->flush_local, kind ALL, walk caches and global
 *	entries included) before returning, and it must call tlbpol_switch()
 *	(tlbpol_switch_tag()) before it uses an address space again.
 */
enum tlbpol_cpu_state {
	TLBPOL_CPU_RUNNING = 0,
	TLBPOL_CPU_IDLE = 1,
	TLBPOL_CPU_PREEMPTED = 2,
	TLBPOL_CPU_OFFLINE = 3,
};

/**
 * tlbpol_cpu_state() - record what @cpu is doing.
 * @eng: the engine.
 * @cpu: the CPU.
 * @state: what it does now, enum tlbpol_cpu_state.
 *
 * With RULE_LAZY_CPUS an IDLE CPU, and with RULE_VCPU_DEFER a PREEMPTED one,
 * is not interrupted for flushes of the address space it has loaded (an IDLE
 * CPU still is when page tables were freed: it may walk them speculatively; a
 * preempted vCPU executes nothing, as KVM's PV TLB flush assumes).  Neither
 * is spared a flush of a global PTE: the catch-up flush is kind AS, which
 * keeps global entries, and an idle CPU runs kernel code through them.  It
 * catches up when it comes back: the call that returns it to RUNNING returns
 * 1 when it must first flush its current address space (kind AS, paging-
 * structure caches included, e.g. a CR3 write) -- for a PREEMPTED CPU that
 * is lazy, the address space it keeps loaded, whose tables its MMU may walk
 * as soon as it runs -- as tlbpol_switch() reports need_flush.  A PREEMPTED
 * CPU that goes IDLE (release 0.3) catches up the same way, for an idle CPU
 * executes too (its idle loop, interrupts) and its MMU may walk the tables
 * that were freed while it was preempted: that call may return 1 as well.
 * Do that flush before any other engine call for @cpu and before the CPU
 * executes anything: the engine counts the CPU as caught up from its next
 * call on.  Every other transition returns 0: RUNNING to anything, IDLE to
 * anything but RUNNING, PREEMPTED to PREEMPTED or OFFLINE, and OFFLINE to
 * anything (the call that brings a CPU back from OFFLINE flushes it itself).
 *
 * Going OFFLINE serves every request already posted to @cpu first (so nobody
 * waits on it) and requires no pending deferred work on @cpu (flush it
 * first).
 * Context: for @cpu (the CPU itself, or whoever acts for it while it cannot,
 * e.g. the hypervisor for a preempted vCPU).
 * Return: 0, or 1 when the CPU must flush its current address space (or the
 * one it keeps loaded) before it executes anything; -EINVAL for NULL @eng or
 * an unknown @state; -ERANGE for @cpu;
 * -EBUSY when going OFFLINE with deferred work or deferred frees pending, or
 * nested in another engine call for @cpu.
 */
TLBPOL_API int tlbpol_cpu_state(struct tlbpol_engine *eng, uint32_t cpu, uint32_t state);

/**
 * tlbpol_tick() - periodic work for @cpu, from its timer tick.
 * @eng: the engine.
 * @cpu: the CPU that ticks.
 *
 * Serves @cpu's incoming requests
 * (including lazy ones posted without an interrupt), completes its
 * BY_WRITEBACK / BY_FREE work once that has waited cfg->free_ticks ticks
 * (one shootdown for the batch), posts its own BY_LAZY work to its targets
 * without interrupting them, and runs deferred frees that are due.  Lazy
 * work completes as CPUs tick or switch: call it periodically on every CPU
 * (a timer tick), or force completion with tlbpol_flush(.., TLBPOL_BY_LAZY).
 * A lazy request of @cpu's that some target has not taken after
 * cfg->free_ticks of @cpu's ticks (release 0.3: a target that idles without
 * ticking) is not waited for: the targets that may catch up by themselves
 * (idle, lazy or preempted since the post) are left to, the others are
 * interrupted, again every free_ticks ticks (none with
 * TLBPOL_FREE_TICKS_NEVER).
 * Context: for @cpu; from a timer interrupt too (one that lands inside
 * another engine call for @cpu gets -EBUSY: tick at the next one).
 * Return: 0; -EINVAL for NULL @eng; -ERANGE for @cpu; -EBUSY nested in
 * another engine call for @cpu.
 */
TLBPOL_API int tlbpol_tick(struct tlbpol_engine *eng, uint32_t cpu);

/* ------------------------------------------------------------------------ */
/* Events and decisions                                                     */
/* ------------------------------------------------------------------------ */

/**
 * enum tlbpol_event_kind - what happened to the page tables.
 * @TLBPOL_EV_FAULT: a page fault was resolved: PTE @old_pte -> @new_pte at va.
 * @TLBPOL_EV_PROTECT: software changed permissions (mprotect, write-protect
 *	for COW or dirty tracking).
 * @TLBPOL_EV_UNMAP: PTEs cleared (munmap, zap; MADV_DONTNEED with
 *	TLBPOL_EVF_STAYS_MAPPED).
 * @TLBPOL_EV_RECLAIM: a page unmapped for reclaim / swap-out.
 * @TLBPOL_EV_MIGRATE: a page unmapped for migration or compaction.
 * @TLBPOL_EV_CLEAR_YOUNG: accessed bit cleared for aging.
 * @TLBPOL_EV_CLEAR_DIRTY: dirty bit cleared (writeback, dirty logging).
 * @TLBPOL_EV_REMAP: PTEs moved away from va (mremap): the old addresses must go.
 *
 * The engine classifies an event by what changed between @old_pte and
 * @new_pte as well as by its kind, so a mislabelled event is never flushed
 * less than its PTE change needs (an UNMAP whose new PTE is present but
 * read-only is treated as the downgrade it is).
 *
 * @old_pte must be what the atomic get-and-clear (or exchange) of the PTE
 * returned, not an earlier read: hardware may set D until the PTE is
 * cleared, and a late D read as clean would defer the flush past writeback.
 *
 * A frame change (TLBPOL_EVF_PFN_CHANGED with a present new PTE) is
 * submitted break-before-make: clear the PTE, submit the event (describing
 * the PTE to come as @new_pte), and install the new PTE only after
 * tlbpol_submit() returns, so that no CPU ever holds the old frame's
 * translation while another uses the new one (Linux wp_page_copy():
 * ptep_clear_flush() before set_pte_at(); Arm break-before-make).
 *
 * An install (old PTE not present, new present) is submitted *before* the
 * new PTE is stored, under the lock that serialises changes to it: the
 * engine may still have flushes pending over the address (a batched unmap
 * or reclaim of its old frame, here or on another CPU), and tlbpol_submit()
 * completes those first.  Stored first, the new PTE would be visible while
 * some CPU still translates the address to the old frame: a CPU that walks
 * the new PTE and writes the new frame while another still reads the old
 * one (a coherence break; on Arm a break-before-make violation, Arm ARM
 * D8.16.1).  No CPU caches a not-present PTE (but see TLBPOL_ARCH_GENERIC)
 * and nobody else writes it while the lock is held, so nothing is lost by
 * storing after the submit.  The one exception: restoring a migration
 * entry after the migration's own tlbpol_flush(.., TLBPOL_BY_WRITEBACK)
 * (due before the copy) may store first, as Linux's
 * remove_migration_ptes() does: nothing can be pending over that address
 * then.  Restoring a swap entry faulted back in is an install like any
 * other.  On TLBPOL_ARCH_GENERIC, where invalid entries may be cached,
 * submit the install once more after the store: a CPU may cache the
 * invalid PTE up to the store, so the flush that removes it must follow
 * the store (Linux riscv's update_mmu_cache() after set_pte_at()); the
 * second submit finds nothing pending and does just that flush.
 *
 * A change the portable bits cannot express -- the translation's size or
 * structure (huge-page split or collapse, Arm block <-> table or the
 * contiguous bit), its memory type (x86 PAT/PCD/PWT, Arm MAIR index), its
 * protection key, or an x86 shadow-stack PTE (W=0, D=1 with CET) becoming
 * an ordinary writable one -- is submitted with TLBPOL_EVF_ATTRS and is a
 * shootdown before the call returns.  Encode it break-before-make: make
 * the entry invalid, submit with @old_pte the old entry, @page_shift and
 * the range of the *old* translation (for a collapse: the small pages),
 * @new_pte the entry to come (and TLBPOL_EVF_PFN_CHANGED if the output
 * address changes too), then write the new entry after tlbpol_submit()
 * returns.  Without the flag such a change looks unchanged and is not
 * flushed.
 *
 * What the bits mean:
 *  - x86: the hardware bits; TLBPOL_PTE_DIRTY is the hardware D bit (not a
 *    software "saved dirty" bit).  A PTE with W=0 and D=1 is a shadow-stack
 *    PTE when CET shadow stacks are on: W 0->1 on it is not an upgrade, so
 *    submit it with TLBPOL_EVF_ATTRS.
 *  - ARM64 with hardware dirty state (DBM): TLBPOL_PTE_WRITE is "writable"
 *    (DBM set or AP[2] clear), TLBPOL_PTE_DIRTY is Linux's pte_dirty():
 *    software dirty, or hardware-dirty (DBM set and AP[2] clear).  A
 *    descriptor with AP[2] clear may be cached writable, and writes through
 *    such an entry update nothing in memory, so it must be reported DIRTY.
 *  - ARM64 contiguous runs (page_shift 16 with the 4K granule, 21 with the
 *    16K and 64K granules): the TLB may hold a run as one entry or as
 *    entries of the base granule (Arm ARM D8.7), so a host that invalidates
 *    one address per named page may leave base-granule entries of the run.
 *    Either describe the run as base pages (page_shift of the granule,
 *    nr_pages its length; this is what Linux's contpte code flushes, at
 *    PAGE_SIZE stride) or invalidate each base page of a named run (or use
 *    a range TLBI).
 */
enum tlbpol_event_kind {
	TLBPOL_EV_FAULT = 0,
	TLBPOL_EV_PROTECT = 1,
	TLBPOL_EV_UNMAP = 2,
	TLBPOL_EV_RECLAIM = 3,
	TLBPOL_EV_MIGRATE = 4,
	TLBPOL_EV_CLEAR_YOUNG = 5,
	TLBPOL_EV_CLEAR_DIRTY = 6,
	TLBPOL_EV_REMAP = 7,
};
#define TLBPOL_EV_MAX 8

/* Portable PTE bits, for old_pte / new_pte. */
#define TLBPOL_PTE_PRESENT (1U << 0)
#define TLBPOL_PTE_WRITE (1U << 1)
#define TLBPOL_PTE_EXEC (1U << 2)
#define TLBPOL_PTE_USER (1U << 3)
#define TLBPOL_PTE_ACCESSED (1U << 4)
#define TLBPOL_PTE_DIRTY (1U << 5)
#define TLBPOL_PTE_GLOBAL (1U << 6)
#define TLBPOL_PTE_ALL 0x7fU

/* Event flags. */
#define TLBPOL_EVF_WRITE (1U << 0)        /* fault: the access was a write */
#define TLBPOL_EVF_EXEC (1U << 1)         /* fault: the access was an instruction fetch */
#define TLBPOL_EVF_TRIED (1U << 2)        /* fault: a retried fault (FAULT_FLAG_TRIED) */
#define TLBPOL_EVF_PFN_CHANGED (1U << 3)  /* the PTE now points to another frame */
#define TLBPOL_EVF_TABLES_FREED (1U << 4) /* page-table pages under the range were freed */
/*
 * What the flush of freed tables completes: the TLBs and paging-structure
 * caches of the CPUs (what the hardware walker caches).  Not a software
 * walker that walks page tables without locks, holding interrupts off
 * (Linux's GUP-fast): an interrupt is what holds it off, and a target
 * reached without one -- by ops->broadcast, or a vCPU its hypervisor
 * descheduled, perhaps in the middle of such a walk (TLBPOL_CPU_PREEMPTED,
 * ops->vcpu_defer) -- may still be in the walk when the engine completes the
 * request and runs its deferred frees.  (Lazy CPUs are interrupted for
 * freed tables; a CPU that serves the request itself, at a tick, a switch
 * or in the engine's own wait, or that has flushed since the tables were
 * unlinked (its generation), did so outside any walk.)
 * A host with such walkers either sets TLBPOL_CFGF_LOCKLESS_WALKERS
 * (release 0.3), and the engine then holds the request's completion until
 * they are out of their walks, or frees table pages only after its own
 * synchronisation (an RCU grace period, or an interrupt to every CPU that
 * may walk), as Linux does with MMU_GATHER_RCU_TABLE_FREE
 * (mm/mmu_gather.c, tlb_remove_table_sync_one()).
 */
#define TLBPOL_EVF_LAZY_OK (1U << 5)      /* frames/addresses not reused before a deferred free runs */
/* unmap: the frame is private to this mapping and its contents die with it
 * (private anonymous memory): no writeback and no other mapping can see a
 * late write through a stale entry, so a dirty page is no more urgent than a
 * clean one.  Ignored for reclaim and migration, which keep the contents. */
#define TLBPOL_EVF_PRIVATE (1U << 6)
/* unmap: the addresses stay mapped (MADV_DONTNEED, MADV_REMOVE, a hole
 * punched in a mapped file): a later access must see the page gone as soon
 * as the call returns, so the flush completes before tlbpol_submit()
 * returns, whatever PRIVATE and LAZY_OK say (reason "discard").  Ignored for
 * other kinds. */
#define TLBPOL_EVF_STAYS_MAPPED (1U << 7)
/* something the portable bits cannot express changed: size, structure,
 * memory type, protection key, shadow stack (see enum tlbpol_event_kind);
 * a shootdown now (reason "attributes"). */
#define TLBPOL_EVF_ATTRS (1U << 8)
/* unmap (with PRIVATE, not STAYS_MAPPED) or reclaim: the frames die with
 * the mapping and go back to the host's allocator after tlbpol_stamp(),
 * with its stamp, without waiting for the flush (TLBPOL_RULE_FLUSH_STAMP;
 * see tlbpol_stamp()).  -EINVAL on any other event: a range that stays
 * mapped is used, not just kept, through a stale entry; a downgrade or a
 * frame change must be seen now; a migrated or remapped frame lives on.
 * (Release 0.2.) */
#define TLBPOL_EVF_STAMP (1U << 9)
#define TLBPOL_EVF_ALL 0x3ffU

/**
 * struct tlbpol_event - one page-table change.
 * @size: sizeof(struct tlbpol_event).
 * @kind: enum tlbpol_event_kind.
 * @flags: TLBPOL_EVF_*.
 * @page_shift: 12, 21, 30 ... one of the arch's page sizes: x86-64 12, 21,
 *	30; ARM64 12, 14, 16, 21, 25, 29, 30, 34, 36, 42 (pages, blocks
 *	and contiguous runs of the three granules); RISCV64 12, 16, 21, 30,
 *	39, 48; GENERIC 12 .. 47.
 * @va: first address, aligned to 1 << page_shift.
 * @nr_pages: >= 1; va + (nr_pages << page_shift) must not pass 2^64.
 * @old_pte: the PTE bits before the change (TLBPOL_PTE_*).
 * @new_pte: the PTE bits after it.
 */
struct tlbpol_event {
	uint32_t size;
	uint32_t kind;
	uint32_t flags;
	uint32_t page_shift;
	uint64_t va;
	uint64_t nr_pages;
	uint32_t old_pte;
	uint32_t new_pte;
};

/**
 * enum tlbpol_action - what a decision asks for.
 * @TLBPOL_ACT_NONE: no flush anywhere.
 * @TLBPOL_ACT_LOCAL: flush the deciding CPU only.
 * @TLBPOL_ACT_SHOOTDOWN: flush every CPU that may hold the entries.
 */
enum tlbpol_action {
	TLBPOL_ACT_NONE = 0,
	TLBPOL_ACT_LOCAL = 1,
	TLBPOL_ACT_SHOOTDOWN = 2,
};

/**
 * enum tlbpol_deadline - by when the flush must be complete.
 * @TLBPOL_BY_NOW: before tlbpol_submit() returns.
 * @TLBPOL_BY_WRITEBACK: before the pages' contents are written back or copied
 *	(a stale writable entry could otherwise change them afterwards).
 * @TLBPOL_BY_FREE: before the frames (or page tables) are freed or reused.
 *
 * Deferred work (BY_WRITEBACK, BY_FREE, BY_LAZY) is completed only by
 * tlbpol_flush() (or the engine's own calls) on the CPU that submitted it:
 * another CPU's tlbpol_flush() does not complete it.  So the CPU that
 * submitted a BY_WRITEBACK event must be the one that then writes back or
 * copies (kswapd's pageout(), a migration's copy), or the one that hands
 * the page over after its own tlbpol_flush(); BY_FREE frames go back
 * through tlbpol_defer_free() on that CPU.  Events whose contents another
 * CPU may reach on its own (a dirty shared page's unmap: any flusher
 * thread writes it back) are decided BY_NOW for that reason.
 * @TLBPOL_BY_LAZY: eventually (next tick or switch); only stale accessed
 *	bits or frames held back by a deferred free depend on it.
 */
enum tlbpol_deadline {
	TLBPOL_BY_NOW = 0,
	TLBPOL_BY_WRITEBACK = 1,
	TLBPOL_BY_FREE = 2,
	TLBPOL_BY_LAZY = 3,
};

/**
 * enum tlbpol_reason - why a decision is what it is (TLBPOL_WHY_*).
 * @TLBPOL_WHY_MAX: the number of reasons (the length of the by_reason array
 *	of struct tlbpol_stats).
 *
 * tlbpol_reason_str() names each.
 */
enum tlbpol_reason {
	TLBPOL_WHY_NOT_PRESENT = 0,   /* old PTE not present: nothing cached */
	TLBPOL_WHY_UNCHANGED = 1,     /* the PTE did not change */
	TLBPOL_WHY_NAIVE = 2,         /* rules NONE: full flush everywhere, now */
	TLBPOL_WHY_SPURIOUS = 3,      /* fault the PTE already allowed */
	TLBPOL_WHY_RETRIED = 4,       /* retried fault, PTE already installed */
	TLBPOL_WHY_ACCESS_FLAGS = 5,  /* fault only set the accessed/dirty bits */
	TLBPOL_WHY_UPGRADE = 6,       /* permissions only grew */
	TLBPOL_WHY_AGING = 7,         /* accessed bit cleared */
	TLBPOL_WHY_UNMAP = 8,         /* PTEs cleared, frames freed later */
	TLBPOL_WHY_RECLAIM_CLEAN = 9, /* clean page reclaimed */
	TLBPOL_WHY_RECLAIM_DIRTY = 10, /* dirty page reclaimed: before writeback */
	TLBPOL_WHY_MIGRATE_CLEAN = 11, /* clean page migrated */
	TLBPOL_WHY_MIGRATE_DIRTY = 12, /* dirty page migrated: before the copy */
	TLBPOL_WHY_PFN_CHANGE = 13,   /* PTE points to another frame */
	TLBPOL_WHY_DOWNGRADE = 14,    /* a permission was removed */
	TLBPOL_WHY_CLEAR_DIRTY = 15,  /* dirty bit cleared */
	TLBPOL_WHY_REMAP = 16,        /* PTEs moved away from these addresses */
	TLBPOL_WHY_UNMAP_DIRTY = 17,  /* dirty PTEs cleared: before writeback */
	TLBPOL_WHY_TABLES_FREED = 18, /* page-table pages freed: before free */
	TLBPOL_WHY_DISCARD = 19,      /* PTEs cleared, range stays mapped: now */
	TLBPOL_WHY_ATTRS = 20,        /* size, type or key changed (EVF_ATTRS) */
	TLBPOL_WHY_INSTALL = 21,      /* GENERIC install: invalid entries may be cached */
	TLBPOL_WHY_MAX = 22,
};

/**
 * struct tlbpol_decision - the answer to "does this need a flush?".
 * @action: enum tlbpol_action.
 * @deadline: enum tlbpol_deadline (BY_NOW for NONE and LOCAL).
 * @reason: enum tlbpol_reason.
 * @pad: 0.
 */
struct tlbpol_decision {
	uint32_t action;
	uint32_t deadline;
	uint32_t reason;
	uint32_t pad;
};

/**
 * tlbpol_decide() - what @ev needs, under @eng's arch and rules.
 * @eng: the engine.
 * @as: the address space the event is in (checked, not otherwise used).
 * @cpu: the CPU that made the change (checked).
 * @ev: the event.
 * @out: receives the decision.
 *
 * Pure: changes nothing, counts nothing.
 * Context: any; may run concurrently with everything.
 * Return: 0 and *@out filled; -EINVAL for a NULL argument, ev->size too small,
 * an unknown kind or flag, an unknown PTE bit, nr_pages 0, a page_shift the
 * arch does not have, va not aligned to it, or a closed/foreign @as; -ERANGE
 * for @cpu out of range or a range that wraps past 2^64; -E2BIG for
 * ev->size larger than this library's structure with a nonzero byte past it
 * (release 0.3).
 */
TLBPOL_API int tlbpol_decide(const struct tlbpol_engine *eng, const struct tlbpol_as *as,
			     uint32_t cpu, const struct tlbpol_event *ev,
			     struct tlbpol_decision *out);

/**
 * tlbpol_submit() - decide and act on a page-table change.
 * @eng: the engine.
 * @as: the address space the event is in.
 * @cpu: the CPU that made the change, and calls this.
 *
 * NONE is counted; LOCAL flushes @cpu;
 * a BY_NOW shootdown is flushed locally and remotely before the call returns;
 * later deadlines join @cpu's batch (which flushes itself when it holds
 * batch_pages pages, or when its entries run out, see @batch_pages in
 * struct tlbpol_config: nothing is ever dropped).
 *
 * Submit every page-table change, installs (old PTE not present) included,
 * before releasing the lock that serialises changes to that PTE; a change of
 * a present PTE after it is made, an install *before* the new PTE is stored
 * (enum tlbpol_event_kind says why, and the one exception).  An install in
 * an address space with deferred flushes pending completes them first where
 * they may cover the reused address (this CPU's overlapping entries early,
 * other CPUs' with one whole-AS shootdown, as Linux
 * flush_tlb_batched_pending()), looking at every address space for pending
 * global PTEs: a CPU must never keep the old frame's translation once a new
 * frame is mapped there.
 * @ev: read, never written; it must not change until the call returns, from
 * the callbacks either (the engine may read it before and after them).
 * @out: may be NULL.
 * Context: for @cpu.  May call every callback and wait for other CPUs.
 * Return: 0, or the errors of tlbpol_decide(); -EBUSY nested in another
 * engine call for @cpu.
 */
TLBPOL_API int tlbpol_submit(struct tlbpol_engine *eng, struct tlbpol_as *as, uint32_t cpu,
			     const struct tlbpol_event *ev, struct tlbpol_decision *out);

/**
 * tlbpol_reason_str() - a short name for a TLBPOL_WHY_* code.
 * @reason: enum tlbpol_reason.
 * Context: any.
 * Return: a static string, never NULL ("unknown" for codes out of range).
 */
TLBPOL_API const char *tlbpol_reason_str(uint32_t reason);

/**
 * tlbpol_reason_cite() - what a TLBPOL_WHY_* decision rests on, on @arch.
 * @reason: enum tlbpol_reason.
 * @arch: enum tlbpol_arch.
 *
 * The hardware rule or kernel source that the decision table's row cites
 * (Intel SDM and Arm ARM sections, Linux functions and commits, such as
 * the commit that introduced each rule), in one line of text.  The same
 * reason may cite differently per arch (a spurious fault needs no flush on
 * x86 because the fault itself invalidates; on ARM64 it does not).  `python3 -m tlbpol explain` prints
 * it beside each decision.
 * Context: any.
 * Return: a static string, never NULL ("unknown" for a reason or arch out
 * of range).
 */
TLBPOL_API const char *tlbpol_reason_cite(uint32_t reason, uint32_t arch);

/**
 * tlbpol_action_str() / tlbpol_deadline_str() - a short name for an action or
 * a deadline.
 * @action: enum tlbpol_action.
 * @deadline: enum tlbpol_deadline.
 * Context: any.
 * Return: a static string, never NULL ("unknown" for values out of range).
 */
TLBPOL_API const char *tlbpol_action_str(uint32_t action);
TLBPOL_API const char *tlbpol_deadline_str(uint32_t deadline);

/* ------------------------------------------------------------------------ */
/* Batches, completion and safe freeing                                     */
/* ------------------------------------------------------------------------ */

/**
 * tlbpol_flush() - complete every pending flush of @cpu whose deadline is <= @by.
 * @eng: the engine.
 * @cpu: the CPU whose batch is completed.
 * @by: TLBPOL_BY_WRITEBACK before writing back dirty pages, TLBPOL_BY_FREE
 *	before freeing frames, TLBPOL_BY_LAZY for everything (BY_NOW is
 *	accepted and completes nothing, since nothing is pending BY_NOW).
 * Returns when every targeted CPU has flushed; then runs deferred frees that
 * are due.
 * Context: for @cpu.  May call every callback and wait for other CPUs.
 * Return: the number of deferred events completed; -EINVAL for NULL
 * @eng or an unknown @by; -ERANGE for @cpu; -EBUSY nested in another engine
 * call for @cpu.
 */
TLBPOL_API int tlbpol_flush(struct tlbpol_engine *eng, uint32_t cpu, uint32_t by);

/**
 * tlbpol_defer_free() - run fn(arg) once the flushes pending on @cpu are done.
 * @eng: the engine.
 * @cpu: the CPU whose pending flushes @fn waits for.
 * @fn: the function to run, once, with @arg.
 * @arg: its argument.
 *
 * @fn runs once every flush pending on @cpu now has completed on every CPU it
 * targets -- never earlier.  Free frames, page tables or reuse addresses
 * there.  If nothing is pending, @fn runs before this returns.  Otherwise it runs
 * exactly once, on @cpu, from a later tlbpol_flush(), tlbpol_submit(),
 * tlbpol_tick() (within cfg->free_ticks ticks at the latest, if only
 * BY_FREE work stands in the way) or tlbpol_switch() for @cpu.  When @cpu's queue of deferred
 * frees is full, the pending flushes are completed first (never -ENOMEM).
 * Context: for @cpu.  @fn must not call the engine for @cpu.
 * Return: 0; -EINVAL for NULL @eng or @fn; -ERANGE for @cpu; -EBUSY nested
 * in another engine call for @cpu (from @fn, say).
 */
TLBPOL_API int tlbpol_defer_free(struct tlbpol_engine *eng, uint32_t cpu,
				 void (*fn)(void *arg), void *arg);

/**
 * tlbpol_frees_pending() - deferred frees registered on @cpu that have not
 * run yet (release 0.2).
 * @eng: the engine.
 * @cpu: the CPU they were registered on.
 *
 * They run once the flushes they wait for complete:
 * by tlbpol_flush(), a full batch, or within cfg->free_ticks ticks.
 * Context: any; read without stopping @cpu, so exact only on @cpu itself.
 * Return: the count; -EINVAL for NULL @eng; -ERANGE for @cpu.
 */
TLBPOL_API int tlbpol_frees_pending(const struct tlbpol_engine *eng, uint32_t cpu);

/* ------------------------------------------------------------------------ */
/* Flush stamps: freed frames go back at once (RULE_FLUSH_STAMP)            */
/* ------------------------------------------------------------------------ */

/*
 * The usual way to free the frames of an unmap is behind the flush: the
 * host completes it (tlbpol_flush(.., TLBPOL_BY_FREE), one shootdown) or
 * queues the free behind it (tlbpol_defer_free()).  With stamps it does
 * neither.  It submits the events with TLBPOL_EVF_STAMP, calls
 * tlbpol_stamp() where Linux calls tlb_finish_mmu(), and puts the frames
 * back into its allocator at once, each with the stamp (a plain integer:
 * keep it in the frame descriptor).  The engine has posted the flush to
 * the CPUs that may cache the address space without interrupting them;
 * each does it at its next tick or switch, or when it next serves its
 * inbox.  When the allocator hands a frame out again, the host calls
 * tlbpol_stamp_settle() with its stamp before the frame is written: it
 * returns at once when every CPU has done the flush (the common case, a
 * tick after the free), and otherwise interrupts those that have not and
 * waits for them -- the cost moves into the allocation, and only for a
 * frame reused within a tick or so.  tlbpol_stamp_pending() tells an
 * allocator that prefers another frame whether settling would wait.
 *
 * What stays as it was, whatever the stamps:
 *  - a dirty page still flushes before writeback (a reclaim of a dirty
 *    page stays BY_WRITEBACK), and a downgrade or frame change before the
 *    call returns: TLBPOL_EVF_STAMP is refused on them;
 *  - the addresses: an install over a stamped range completes its flush
 *    first (as for any deferred work), so a new mapping at the same address
 *    is never reached through another CPU's stale entry to the old frame;
 *  - freed page tables (TLBPOL_EVF_TABLES_FREED) and global PTEs are not
 *    deferred: such an event is decided as without the flag, and
 *    tlbpol_stamp() completes it before it returns;
 *  - lazy, preempted and offline CPUs, and CPUs that switched away with
 *    their entries retained (TLBPOL_CFGF_RETAIN_AS): as for every deferred
 *    flush, they are not interrupted and flush when they come back to the
 *    address space, before they use it (tlbpol_switch(), tlbpol_cpu_state());
 *    settling does not wait for them.
 * What changes for the program: until every target has flushed, a thread
 * on another CPU may still read or write the unmapped pages through its
 * TLB -- the old frames, whose contents are dead and which nobody else has
 * yet -- where Linux's munmap() returns only after the flush, and a later
 * access faults.  A program that touches memory it unmapped sees the old
 * contents instead of a fault, for about a tick.  LATR (TLBPOL_EVF_LAZY_OK)
 * and LUF make the same trade; a host whose programs rely on that fault
 * (guard pages made by munmap) leaves those unmaps unstamped.
 * With the rule off the same host code is correct and Linux's: the events
 * are decided BY_FREE, tlbpol_stamp() completes them with one shootdown and
 * returns the stamp 0, and settling it does nothing.
 *
 * A stamp names the initiating CPU and a sequence number of its own: 0 is
 * "nothing to settle", any other value is opaque.  The sequence is 32 bits
 * and wraps: a stamp kept across 2^31 of its CPU's lazy posts may be taken
 * for a pending one and settled again (a wasted flush, never a missed one).
 */

/**
 * tlbpol_stamp() - take a flush stamp for the frames of an unmap.
 * @eng: the engine.
 * @cpu: the CPU that submitted the stamped events, and calls this.
 * @stamp: receives the stamp (0: nothing is left in flight).
 *
 * It completes @cpu's flushes that are due by a free, posts its stamped ones
 * lazily, and gives the stamp that settles them.
 * Call it after the events of an unmap or reclaim pass (TLBPOL_EVF_STAMP),
 * before their frames go back to the allocator, on the CPU that submitted
 * them: from the first event to this call the task must not migrate (Linux
 * holds the mmu_gather on one CPU likewise).  A stamp covers only what
 * @cpu submitted; on another CPU it would say "nothing to settle" of frames
 * other CPUs may still translate to, so a call on a CPU where no stamped
 * event was submitted since its previous tlbpol_stamp() fails with -ENOENT
 * and does nothing (release 0.3).  A pass that stamped nothing completes
 * its other work with tlbpol_flush(.., TLBPOL_BY_FREE) instead.  What of @cpu's batch is due
 * by a free (TLBPOL_BY_WRITEBACK, TLBPOL_BY_FREE: events without the flag,
 * freed page tables, the rule off) completes first, as tlbpol_flush(..,
 * TLBPOL_BY_FREE) does; what the rule deferred (TLBPOL_BY_LAZY) is posted to
 * its targets with no interrupt.  The stamp covers everything @cpu has in
 * flight lazily then, so a stamp is never too early.
 * Context: for @cpu.  May call every callback (the BY_FREE part waits for
 * other CPUs).
 * Return: the number of deferred events completed or posted; -EINVAL for
 * NULL @eng or @stamp; -ERANGE for @cpu; -ENOENT when no event with
 * TLBPOL_EVF_STAMP was submitted on @cpu since its previous tlbpol_stamp()
 * (*@stamp is not written); -EBUSY nested in another engine call for @cpu.
 */
TLBPOL_API int tlbpol_stamp(struct tlbpol_engine *eng, uint32_t cpu, uint64_t *stamp);

/**
 * tlbpol_stamp_settle() - make the frames freed under @stamp safe to reuse.
 * @eng: the engine.
 * @cpu: the calling CPU.
 * @stamp: a stamp from tlbpol_stamp().
 *
 * On return no CPU that runs their address space translates to them.  If every target of the stamp's flushes has done them (through a tick, a
 * switch, a whole-AS flush or a later request it served), this returns 0 at
 * once.  Otherwise it interrupts the targets that have not taken them yet
 * and waits for all of them, serving @cpu's own inbox meanwhile -- but for
 * a target that went preempted, idle or lazy after the flushes were posted:
 * it flushes before it uses the address space again, and is not waited for
 * (release 0.3).  cfg->wait_limit's watchdog applies to the wait.
 * Context: for @cpu, the allocating CPU (any CPU: a stamp from another CPU
 * is settled with that CPU's requests).  May call every callback and wait
 * for other CPUs.
 * Return: 0 if nothing had to be done, 1 if it had to interrupt or wait;
 * -EINVAL for NULL @eng or a stamp that names no CPU of @eng; -ERANGE for
 * @cpu; -EBUSY nested in another engine call for @cpu.
 */
TLBPOL_API int tlbpol_stamp_settle(struct tlbpol_engine *eng, uint32_t cpu, uint64_t stamp);

/**
 * tlbpol_stamp_pending() - would tlbpol_stamp_settle(@stamp) have to
 * interrupt or wait now?
 * @eng: the engine.
 * @stamp: a stamp from tlbpol_stamp().
 *
 * A few loads, no store: for an allocator that would rather hand out
 * another frame.  An answer of 0 stays true (a settled stamp never becomes
 * pending again, until its sequence wraps: see above); a 1 may turn 0 at
 * any moment.
 * Context: any.
 * Return: 1 or 0; -EINVAL for NULL @eng or a stamp that names no CPU of @eng.
 */
TLBPOL_API int tlbpol_stamp_pending(const struct tlbpol_engine *eng, uint64_t stamp);

/**
 * tlbpol_handle_ipi() - serve @cpu's shootdown interrupt.
 * @eng: the engine.
 * @cpu: the interrupted CPU.
 *
 * The shootdown interrupt handler of @cpu calls this: it serves every
 * request waiting for @cpu, calls ops->flush_local, and acknowledges each.
 * Context: on @cpu, in its interrupt handler or wherever the host delivers
 * the interrupt.  The one call that may run while another engine call for
 * @cpu is in progress on @cpu (an interrupt landing in it, or a callback of
 * it such as ops->relax): it then serves what that call is not serving
 * already, and the rest is served before that call returns.  A handler
 * nested in itself returns 0 at once, likewise.
 * Return: the number of requests served (0 if none); -EINVAL for NULL @eng;
 * -ERANGE for @cpu.
 */
TLBPOL_API int tlbpol_handle_ipi(struct tlbpol_engine *eng, uint32_t cpu);

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */
/* ------------------------------------------------------------------------ */

/**
 * struct tlbpol_stats - counters, per CPU or summed.
 * @events: events submitted.
 * @flushes_avoided: submitted events of a present PTE that changed and needed
 *	no flush at all (the naive policy would have flushed everywhere).
 * @local_flushes: flush_local calls made for this CPU's own decisions.
 * @remote_flushes: flush_local calls made while serving other CPUs' requests.
 * @ipis_sent: CPUs interrupted (each target of each send_ipi counts once).
 * @broadcasts: ops->broadcast calls, and (release 0.3) ops->bcast_issue calls.
 * @pages_flushed: pages in TLBPOL_FLUSH_PAGES flushes performed.
 * @full_flushes: TLBPOL_FLUSH_AS / TLBPOL_FLUSH_ALL flushes performed.
 * @coalesced: deferred events that shared a shootdown with an earlier one.
 * @gen_skipped: CPUs skipped because their flush generation covered a request.
 * @lazy_skipped: CPUs not interrupted because they were lazy or preempted
 *	(they catch up by themselves), polling (TLBPOL_RULE_POLLING_CPUS:
 *	they serve the request posted to them from their wait loop), or served
 *	the request by themselves within ipi_delay_spins.
 * @deferred_frees: deferred frees run.
 * @by_reason: submitted events per TLBPOL_WHY_* reason.
 * @aged_flushes: (release 0.2) batches that tlbpol_tick() completed because
 *	their BY_WRITEBACK / BY_FREE work had waited cfg->free_ticks ticks.
 * @ipis_resent: (release 0.2) CPUs interrupted again by the watchdog
 *	(cfg->wait_limit) because they had not taken a request in time.
 * @stuck_calls: (release 0.2) ops->stuck calls, or watchdog periods when
 *	there is no such hook.
 * @shoot_ipi: (release 0.3) shootdowns whose other CPUs were reached by
 *	interrupts (TLBPOL_MECH_IPI), also those where every target was left
 *	out (none interrupted).  Lazy posts (TLBPOL_BY_LAZY) are in none of
 *	the three shoot_* counters: they interrupt nobody.
 * @shoot_broadcast: (release 0.3) shootdowns served by a broadcast
 *	(TLBPOL_MECH_BROADCAST); with per-CPU tags beside global ones, the
 *	CPUs it did not reach were interrupted too, counted in @shoot_ipi.
 * @shoot_remote: (release 0.3) shootdowns served by remote actions
 *	(TLBPOL_MECH_REMOTE).
 * @bcast_syncs: (release 0.3) ops->bcast_sync calls (each completes the
 *	split-phase broadcasts its CPU issued since the last one).
 * @remote_actions: (release 0.3) ops->remote_action calls.
 * @remote_targets: (release 0.3) CPUs flushed by remote actions (each
 *	target of each call counts once).
 * @walker_syncs: (release 0.3) ops->walker_sync calls.
 *
 * The structure has no size field (the API fixes it): a release that grows
 * it (a reason more in @by_reason, counters at the end) exports
 * tlbpol_stats_read() under a new symbol version and keeps the old one
 * writing the old size.  Release 0.2 added three reasons (19 to 22) and
 * three counters at the end: programs linked against 0.1 call
 * tlbpol_stats_read@TLBPOL_0.1, which writes 0.1's 31 words.  Release 0.3
 * added seven counters at the end: tlbpol_stats_read@TLBPOL_0.2 writes
 * 0.2's 37 words.  A freestanding
 * core is linked statically and has the size of the header it was built with.
 */
struct tlbpol_stats {
	uint64_t events;
	uint64_t flushes_avoided;
	uint64_t local_flushes;
	uint64_t remote_flushes;
	uint64_t ipis_sent;
	uint64_t broadcasts;
	uint64_t pages_flushed;
	uint64_t full_flushes;
	uint64_t coalesced;
	uint64_t gen_skipped;
	uint64_t lazy_skipped;
	uint64_t deferred_frees;
	uint64_t by_reason[TLBPOL_WHY_MAX];
	uint64_t aged_flushes;
	uint64_t ipis_resent;
	uint64_t stuck_calls;
	uint64_t shoot_ipi;
	uint64_t shoot_broadcast;
	uint64_t shoot_remote;
	uint64_t bcast_syncs;
	uint64_t remote_actions;
	uint64_t remote_targets;
	uint64_t walker_syncs;
};

/**
 * tlbpol_stats_read() - read counters.
 * @eng: the engine.
 * @cpu: a CPU, or -1 for the sum over all CPUs.
 * @out: receives the counters.
 *
 * Counters are read without stopping the CPUs: each is exact, the set is not
 * a snapshot while CPUs are running.
 * Context: any.
 * Return: 0; -EINVAL for a NULL argument; -ERANGE for @cpu.
 */
TLBPOL_API int tlbpol_stats_read(const struct tlbpol_engine *eng, int cpu, struct tlbpol_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* TLBPOL_TLBPOL_H */
