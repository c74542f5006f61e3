//! Raw FFI to libtlbpol: every function, structure, enum value and constant
//! of `include/tlbpol/tlbpol.h`, under the header's own names.
//!
//! The header is the documentation: each item here names the C item it
//! mirrors, and `man 3 tlbpol_<function>` (or the kernel-doc in the header)
//! says what it does, in which context it may run and what it returns.  The
//! safe API is the `tlbpol` crate.
//!
//! Nothing here is copied from the header unchecked: the build script
//! compiles a C program against the header that prints every constant, enum
//! value, structure size and field offset and size, and
//! `tests/layout.rs` compares each with the definition below; a constant or
//! function the header has and this crate lacks does not compile there, and
//! each function's signature is checked against the header's prototype.
//!
//! Features: `hosted` (default) links the shared library and declares the
//! functions of the hosted layer (`tlbpol_engine_new()`, live
//! reconfiguration, thread registration, `tlbpol_as_lookup()`); without it
//! the build script compiles the freestanding core from the repository's
//! sources into a static archive, and those functions are not declared, as
//! the header hides them under `TLBPOL_FREESTANDING`.
#![no_std]
#![allow(non_camel_case_types)]

pub use core::ffi::c_void;

/// C `int` (every target libtlbpol supports has a 32-bit `int`).
/// Defined here because `core::ffi::c_int` needs Rust 1.64.
pub type c_int = i32;
/// C `char`: unsigned on the ABIs that say so, as `std::os::raw::c_char`.
#[cfg(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "riscv32",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "s390x"
))]
pub type c_char = u8;
/// C `char`: signed on x86 and x86-64.
#[cfg(not(any(
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "riscv32",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "s390x"
)))]
pub type c_char = i8;

include!(concat!(env!("OUT_DIR"), "/version.rs"));

/// `TLBPOL_FREESTANDING`: defined by the `<tlbpol/version.h>` of the core
/// archive, which this crate builds when the `hosted` feature is off.
#[cfg(not(feature = "hosted"))]
pub const TLBPOL_FREESTANDING: u32 = 1;

/// The errno values the library returns negated.  The core defines Linux's
/// values itself (it includes no `<errno.h>`); `tests/layout.rs` checks
/// them against the C library's `<errno.h>`.
pub mod errno {
    /// Too little memory, or `max_as` address spaces open.
    pub const ENOMEM: i32 = 12;
    /// An object still in use, or a call nested in another for its CPU.
    pub const EBUSY: i32 = 16;
    /// A duplicate (an address-space tag already open).
    pub const EEXIST: i32 = 17;
    /// A bad argument.
    pub const EINVAL: i32 = 22;
    /// A CPU, address or size out of range.
    pub const ERANGE: i32 = 34;
}

// --- Architecture profiles (enum tlbpol_arch) and rules ---------------------

/// `TLBPOL_ARCH_GENERIC`: assume nothing of the hardware (conservative).
pub const TLBPOL_ARCH_GENERIC: u32 = 0;
/// `TLBPOL_ARCH_X86_64`: what the x86 architecture guarantees.
pub const TLBPOL_ARCH_X86_64: u32 = 1;
/// `TLBPOL_ARCH_ARM64`: the Arm architecture (broadcast TLBI, AF, DBM).
pub const TLBPOL_ARCH_ARM64: u32 = 2;
/// `TLBPOL_ARCH_MAX`: one past the last arch.
pub const TLBPOL_ARCH_MAX: u32 = 3;

/// `TLBPOL_RULE_SPURIOUS_NOFLUSH`: no remote flush for a spurious fault.
pub const TLBPOL_RULE_SPURIOUS_NOFLUSH: u64 = 1 << 0;
/// `TLBPOL_RULE_RANGE_FLUSH`: flush pages of a range, up to the ceiling.
pub const TLBPOL_RULE_RANGE_FLUSH: u64 = 1 << 1;
/// `TLBPOL_RULE_RETRY_NOFLUSH`: no flush on a retried fault.
pub const TLBPOL_RULE_RETRY_NOFLUSH: u64 = 1 << 2;
/// `TLBPOL_RULE_BATCH`: defer unmap/reclaim/migrate flushes to their deadline.
pub const TLBPOL_RULE_BATCH: u64 = 1 << 3;
/// `TLBPOL_RULE_AGING_NOFLUSH`: no synchronous flush for accessed-bit clearing.
pub const TLBPOL_RULE_AGING_NOFLUSH: u64 = 1 << 4;
/// `TLBPOL_RULE_UPGRADE_NOFLUSH`: no remote flush when a PTE only grows.
pub const TLBPOL_RULE_UPGRADE_NOFLUSH: u64 = 1 << 5;
/// `TLBPOL_RULE_FOOTPRINT`: target only CPUs that may cache the address space.
pub const TLBPOL_RULE_FOOTPRINT: u64 = 1 << 6;
/// `TLBPOL_RULE_LAZY_CPUS`: do not interrupt idle/lazy CPUs.
pub const TLBPOL_RULE_LAZY_CPUS: u64 = 1 << 7;
/// `TLBPOL_RULE_GEN_SKIP`: skip CPUs whose flush generation covers a request.
pub const TLBPOL_RULE_GEN_SKIP: u64 = 1 << 8;
/// `TLBPOL_RULE_RECEIVER_MERGE`: one merged flush for several initiators.
pub const TLBPOL_RULE_RECEIVER_MERGE: u64 = 1 << 9;
/// `TLBPOL_RULE_BROADCAST`: use `ops->broadcast` where it is cheaper.
pub const TLBPOL_RULE_BROADCAST: u64 = 1 << 10;
/// `TLBPOL_RULE_NUMA_FANOUT`: interrupt one leader per NUMA node.
pub const TLBPOL_RULE_NUMA_FANOUT: u64 = 1 << 11;
/// `TLBPOL_RULE_LAZY_UNMAP`: LATR-style lazy unmap for `TLBPOL_EVF_LAZY_OK`.
pub const TLBPOL_RULE_LAZY_UNMAP: u64 = 1 << 12;
/// `TLBPOL_RULE_VCPU_DEFER`: do not interrupt a preempted vCPU.
pub const TLBPOL_RULE_VCPU_DEFER: u64 = 1 << 13;
/// `TLBPOL_RULE_POLLING_CPUS`: do not interrupt a CPU polling in its own wait.
pub const TLBPOL_RULE_POLLING_CPUS: u64 = 1 << 14;
/// `TLBPOL_RULE_FLUSH_STAMP`: flush stamps for `TLBPOL_EVF_STAMP` events.
pub const TLBPOL_RULE_FLUSH_STAMP: u64 = 1 << 15;
/// `TLBPOL_RULES_NONE`: the naive policy.
pub const TLBPOL_RULES_NONE: u64 = 0;
/// `TLBPOL_RULES_LINUX`: what Linux does today.
pub const TLBPOL_RULES_LINUX: u64 = TLBPOL_RULE_SPURIOUS_NOFLUSH
    | TLBPOL_RULE_RANGE_FLUSH
    | TLBPOL_RULE_RETRY_NOFLUSH
    | TLBPOL_RULE_BATCH
    | TLBPOL_RULE_AGING_NOFLUSH
    | TLBPOL_RULE_UPGRADE_NOFLUSH
    | TLBPOL_RULE_FOOTPRINT
    | TLBPOL_RULE_LAZY_CPUS
    | TLBPOL_RULE_GEN_SKIP;
/// `TLBPOL_RULES_DEFAULT`: every rule.
pub const TLBPOL_RULES_DEFAULT: u64 = TLBPOL_RULES_LINUX
    | TLBPOL_RULE_RECEIVER_MERGE
    | TLBPOL_RULE_BROADCAST
    | TLBPOL_RULE_NUMA_FANOUT
    | TLBPOL_RULE_LAZY_UNMAP
    | TLBPOL_RULE_VCPU_DEFER
    | TLBPOL_RULE_POLLING_CPUS
    | TLBPOL_RULE_FLUSH_STAMP;
/// `TLBPOL_RULES_ALL`: every rule bit this version knows.
pub const TLBPOL_RULES_ALL: u64 = TLBPOL_RULES_DEFAULT;

// --- CPU sets ---------------------------------------------------------------

/// `TLBPOL_MAX_CPUS`: the largest `nr_cpus` an engine accepts.
pub const TLBPOL_MAX_CPUS: u32 = 4096;

/// `struct tlbpol_cpuset`: one bit per CPU, bit c of `bits[c / 64]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct tlbpol_cpuset {
    /// The bits.
    pub bits: [u64; (TLBPOL_MAX_CPUS / 64) as usize],
}

impl Default for tlbpol_cpuset {
    fn default() -> Self {
        tlbpol_cpuset { bits: [0; (TLBPOL_MAX_CPUS / 64) as usize] }
    }
}

// --- Callbacks --------------------------------------------------------------

/// `struct tlbpol_range`: `nr_pages` pages of `1 << page_shift` bytes from `va`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_range {
    /// First address.
    pub va: u64,
    /// Pages.
    pub nr_pages: u64,
    /// log2 of the page size.
    pub page_shift: u32,
    /// Padding.
    pub pad: u32,
}

/// `TLBPOL_FLUSH_PAGES`: the ranges of a `struct tlbpol_flush`.
pub const TLBPOL_FLUSH_PAGES: u32 = 0;
/// `TLBPOL_FLUSH_AS`: every non-global entry of the address space.
pub const TLBPOL_FLUSH_AS: u32 = 1;
/// `TLBPOL_FLUSH_ALL`: everything, global entries too.
pub const TLBPOL_FLUSH_ALL: u32 = 2;
/// `TLBPOL_FLUSHF_TABLES`: paging-structure caches too.
pub const TLBPOL_FLUSHF_TABLES: u32 = 1 << 0;
/// `TLBPOL_FLUSHF_GLOBAL`: the pages may be cached as global entries.
pub const TLBPOL_FLUSHF_GLOBAL: u32 = 1 << 1;

/// `struct tlbpol_flush`: one flush to perform on one CPU.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tlbpol_flush {
    /// The caller's tag of the address space.
    pub as_tag: u64,
    /// `TLBPOL_FLUSH_*`.
    pub kind: u32,
    /// `TLBPOL_FLUSHF_*`.
    pub flags: u32,
    /// Entries in `ranges`.
    pub nr_ranges: u32,
    /// Padding.
    pub pad: u32,
    /// The ranges, valid only during the callback.
    pub ranges: *const tlbpol_range,
}

/// `struct tlbpol_ops`: the host's hooks.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tlbpol_ops {
    /// `sizeof(struct tlbpol_ops)`.
    pub size: u32,
    /// Padding.
    pub pad: u32,
    /// Flush this CPU's TLB.  Required.
    pub flush_local: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32, f: *const tlbpol_flush)>,
    /// Interrupt each CPU in `targets`.  Required.
    pub send_ipi:
        Option<unsafe extern "C" fn(ctx: *mut c_void, from_cpu: u32, targets: *const tlbpol_cpuset)>,
    /// A flush that reaches all CPUs without interrupts.  Optional.
    pub broadcast: Option<unsafe extern "C" fn(ctx: *mut c_void, from_cpu: u32, f: *const tlbpol_flush)>,
    /// Called while waiting for other CPUs.  Optional.
    pub relax: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32)>,
    /// May the shootdown leave out vCPU `cpu`?  Optional.
    pub vcpu_defer: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32) -> c_int>,
    /// The watchdog.  Optional.
    pub stuck: Option<
        unsafe extern "C" fn(ctx: *mut c_void, cpu: u32, waiting_for: *const tlbpol_cpuset, turns: u64),
    >,
}

/// `TLBPOL_OPS_SIZE_0_1`: release 0.1's `struct tlbpol_ops` (without `stuck`).
pub const TLBPOL_OPS_SIZE_0_1: u32 = 48;

// --- Configuration and lifecycle --------------------------------------------

/// `TLBPOL_DEFAULT_FLUSH_CEILING`.
pub const TLBPOL_DEFAULT_FLUSH_CEILING: u32 = 33;
/// `TLBPOL_DEFAULT_COST_IPI_NS`.
pub const TLBPOL_DEFAULT_COST_IPI_NS: u32 = 800;
/// `TLBPOL_DEFAULT_COST_IPI_TARGET_NS`.
pub const TLBPOL_DEFAULT_COST_IPI_TARGET_NS: u32 = 70;
/// `TLBPOL_DEFAULT_COST_IPI_REMOTE_NS`.
pub const TLBPOL_DEFAULT_COST_IPI_REMOTE_NS: u32 = 200;
/// `TLBPOL_DEFAULT_COST_BROADCAST_NS`.
pub const TLBPOL_DEFAULT_COST_BROADCAST_NS: u32 = 1500;
/// `TLBPOL_DEFAULT_COST_BROADCAST_PAGE_NS`.
pub const TLBPOL_DEFAULT_COST_BROADCAST_PAGE_NS: u32 = 40;
/// `TLBPOL_CFGF_RETAIN_AS`: switching away keeps the address space's entries.
pub const TLBPOL_CFGF_RETAIN_AS: u32 = 1 << 0;
/// `TLBPOL_CFGF_WAIT_IRQS`: the host's `relax` takes this CPU's interrupts,
/// and a CPU waiting for its own shootdown serves others' requests only
/// from them (as Linux's `csd_lock_wait()`); needs `relax`.
pub const TLBPOL_CFGF_WAIT_IRQS: u32 = 1 << 1;
/// `TLBPOL_CFGF_ALL`: every config flag.
pub const TLBPOL_CFGF_ALL: u32 = 0x3;
/// `TLBPOL_WAIT_IRQS_FALLBACK_TURNS` (release 0.3): under
/// `TLBPOL_CFGF_WAIT_IRQS`, a wait that has seen no acknowledgement for
/// `wait_limit` turns, or this many without one, serves its CPU's inbox
/// from its own loop for the rest of that wait.
pub const TLBPOL_WAIT_IRQS_FALLBACK_TURNS: u32 = 4096;
/// `TLBPOL_DEFAULT_BATCH_PAGES`.
pub const TLBPOL_DEFAULT_BATCH_PAGES: u32 = 512;
/// `TLBPOL_DEFAULT_MAX_AS`.
pub const TLBPOL_DEFAULT_MAX_AS: u32 = 64;
/// `TLBPOL_MAX_BATCH_PAGES`.
pub const TLBPOL_MAX_BATCH_PAGES: u32 = 65536;
/// `TLBPOL_MAX_AS`.
pub const TLBPOL_MAX_AS: u32 = 65536;
/// `TLBPOL_DEFAULT_FREE_TICKS`.
pub const TLBPOL_DEFAULT_FREE_TICKS: u32 = 2;
/// `TLBPOL_FREE_TICKS_NEVER`.
pub const TLBPOL_FREE_TICKS_NEVER: u32 = 0xffff_ffff;
/// `TLBPOL_CONFIG_SIZE_0_1`: release 0.1's `struct tlbpol_config`.
pub const TLBPOL_CONFIG_SIZE_0_1: u32 = 88;

/// `struct tlbpol_config`: how to build an engine (fill it with
/// [`tlbpol_config_init`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tlbpol_config {
    /// `sizeof(struct tlbpol_config)`.
    pub size: u32,
    /// 1 ..= `TLBPOL_MAX_CPUS`.
    pub nr_cpus: u32,
    /// `TLBPOL_ARCH_*`.
    pub arch: u32,
    /// Address spaces open at once.
    pub max_as: u32,
    /// `TLBPOL_RULE_*` mask.
    pub rules: u64,
    /// Pages above which a whole-AS flush is used.
    pub flush_ceiling: u32,
    /// Deferred pages a CPU holds before it flushes by itself.
    pub batch_pages: u32,
    /// NUMA node of each CPU (copied), or NULL.
    pub cpu_node: *const u16,
    /// The callbacks (copied).
    pub ops: *const tlbpol_ops,
    /// Passed to every callback.
    pub ops_ctx: *mut c_void,
    /// `TLBPOL_CFGF_*`.
    pub flags: u32,
    /// Cost model: first IPI target.
    pub cost_ipi_ns: u32,
    /// Cost model: each further target.
    pub cost_ipi_target_ns: u32,
    /// Cost model: each target on another node.
    pub cost_ipi_remote_ns: u32,
    /// Cost model: one broadcast.
    pub cost_broadcast_ns: u32,
    /// Cost model: each page a broadcast names.
    pub cost_broadcast_page_ns: u32,
    /// Turns an initiator waits for polling targets before interrupting.
    pub ipi_delay_spins: u32,
    /// 0.
    pub reserved: u32,
    /// The watchdog period in turns (0: none).
    pub wait_limit: u32,
    /// Ticks before BY_WRITEBACK / BY_FREE work completes by itself.
    pub free_ticks: u32,
}

/// `struct tlbpol_engine`: opaque.
#[repr(C)]
pub struct tlbpol_engine {
    _opaque: [u8; 0],
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `struct tlbpol_as`: opaque.
#[repr(C)]
pub struct tlbpol_as {
    _opaque: [u8; 0],
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

// TLBPOL__SZ_ENGINE ... TLBPOL__PARTS_MAX: the internal sizes
// TLBPOL_ENGINE_SIZE() uses, read from the header by build.rs.
include!(concat!(env!("OUT_DIR"), "/internal.rs"));

const fn al(b: u64) -> u64 {
    (b + 63) / 64 * 64
}
const fn min(a: u64, b: u64) -> u64 {
    if a < b {
        a
    } else {
        b
    }
}
const fn max(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}
const fn words(c: u64) -> u64 {
    (c + 63) / 64
}
const fn cpu_arrays(c: u64, nas: u64, bp: u64, ceil: u64) -> u64 {
    let parts = min(min(bp, nas), TLBPOL__PARTS_MAX);
    let ranges = min(max(2 * ceil, 64), bp);
    let entries = min(max(8 * ceil, 64), bp);
    2 * al(words(c) * 8)
        + al(entries * TLBPOL__SZ_PENDING)
        + 2 * al(nas * 4)
        + al(parts * TLBPOL__SZ_RECV_AS)
        + al(ranges * TLBPOL__SZ_RECV_RANGE)
        + al(ranges * TLBPOL__SZ_RANGE)
        + TLBPOL__SLOTS * (2 * al(words(c) * 8) + al(parts * TLBPOL__SZ_REQ_FLUSH) + al(ranges * TLBPOL__SZ_RANGE))
}

/// `TLBPOL_ENGINE_SIZE(cpus, max_as, batch_pages, flush_ceiling, nodes)`:
/// `tlbpol_engine_size()` as a constant expression, for a static buffer
/// (LP64; recompile with every release, never store it).
#[allow(non_snake_case)]
pub const fn TLBPOL_ENGINE_SIZE(cpus: u64, max_as: u64, batch_pages: u64, flush_ceiling: u64, nodes: u64) -> u64 {
    al(TLBPOL__SZ_ENGINE)
        + al(cpus * TLBPOL__SZ_CPU)
        + al(max_as * TLBPOL__SZ_AS)
        + al(cpus * max_as * 8)
        + al(cpus * max_as * TLBPOL__SZ_PBOX)
        + if nodes != 0 { al(nodes * words(cpus) * 8) } else { 0 }
        + max_as * 2 * al(words(cpus) * 8)
        + if nodes != 0 { al(cpus * 2) } else { 0 }
        + cpus * cpu_arrays(cpus, max_as, batch_pages, flush_ceiling)
}

// --- Address spaces and CPU state ----------------------------------------------

/// `TLBPOL_CPU_RUNNING`.
pub const TLBPOL_CPU_RUNNING: u32 = 0;
/// `TLBPOL_CPU_IDLE`.
pub const TLBPOL_CPU_IDLE: u32 = 1;
/// `TLBPOL_CPU_PREEMPTED`.
pub const TLBPOL_CPU_PREEMPTED: u32 = 2;
/// `TLBPOL_CPU_OFFLINE`.
pub const TLBPOL_CPU_OFFLINE: u32 = 3;

// --- Events and decisions -----------------------------------------------------

/// `TLBPOL_EV_FAULT`: a page fault was resolved.
pub const TLBPOL_EV_FAULT: u32 = 0;
/// `TLBPOL_EV_PROTECT`: software changed permissions.
pub const TLBPOL_EV_PROTECT: u32 = 1;
/// `TLBPOL_EV_UNMAP`: PTEs cleared.
pub const TLBPOL_EV_UNMAP: u32 = 2;
/// `TLBPOL_EV_RECLAIM`: a page unmapped for reclaim.
pub const TLBPOL_EV_RECLAIM: u32 = 3;
/// `TLBPOL_EV_MIGRATE`: a page unmapped for migration.
pub const TLBPOL_EV_MIGRATE: u32 = 4;
/// `TLBPOL_EV_CLEAR_YOUNG`: accessed bit cleared.
pub const TLBPOL_EV_CLEAR_YOUNG: u32 = 5;
/// `TLBPOL_EV_CLEAR_DIRTY`: dirty bit cleared.
pub const TLBPOL_EV_CLEAR_DIRTY: u32 = 6;
/// `TLBPOL_EV_REMAP`: PTEs moved away.
pub const TLBPOL_EV_REMAP: u32 = 7;
/// `TLBPOL_EV_MAX`: one past the last kind.
pub const TLBPOL_EV_MAX: u32 = 8;

/// `TLBPOL_PTE_PRESENT`.
pub const TLBPOL_PTE_PRESENT: u32 = 1 << 0;
/// `TLBPOL_PTE_WRITE`.
pub const TLBPOL_PTE_WRITE: u32 = 1 << 1;
/// `TLBPOL_PTE_EXEC`.
pub const TLBPOL_PTE_EXEC: u32 = 1 << 2;
/// `TLBPOL_PTE_USER`.
pub const TLBPOL_PTE_USER: u32 = 1 << 3;
/// `TLBPOL_PTE_ACCESSED`.
pub const TLBPOL_PTE_ACCESSED: u32 = 1 << 4;
/// `TLBPOL_PTE_DIRTY`.
pub const TLBPOL_PTE_DIRTY: u32 = 1 << 5;
/// `TLBPOL_PTE_GLOBAL`.
pub const TLBPOL_PTE_GLOBAL: u32 = 1 << 6;
/// `TLBPOL_PTE_ALL`.
pub const TLBPOL_PTE_ALL: u32 = 0x7f;

/// `TLBPOL_EVF_WRITE`: fault: the access was a write.
pub const TLBPOL_EVF_WRITE: u32 = 1 << 0;
/// `TLBPOL_EVF_EXEC`: fault: an instruction fetch.
pub const TLBPOL_EVF_EXEC: u32 = 1 << 1;
/// `TLBPOL_EVF_TRIED`: fault: a retried fault.
pub const TLBPOL_EVF_TRIED: u32 = 1 << 2;
/// `TLBPOL_EVF_PFN_CHANGED`: the PTE now points to another frame.
pub const TLBPOL_EVF_PFN_CHANGED: u32 = 1 << 3;
/// `TLBPOL_EVF_TABLES_FREED`: page-table pages under the range were freed.
pub const TLBPOL_EVF_TABLES_FREED: u32 = 1 << 4;
/// `TLBPOL_EVF_LAZY_OK`: frames/addresses not reused before a deferred free.
pub const TLBPOL_EVF_LAZY_OK: u32 = 1 << 5;
/// `TLBPOL_EVF_PRIVATE`: unmap: the frame dies with the mapping.
pub const TLBPOL_EVF_PRIVATE: u32 = 1 << 6;
/// `TLBPOL_EVF_STAYS_MAPPED`: unmap: the addresses stay mapped.
pub const TLBPOL_EVF_STAYS_MAPPED: u32 = 1 << 7;
/// `TLBPOL_EVF_ATTRS`: size, type, key or shadow stack changed.
pub const TLBPOL_EVF_ATTRS: u32 = 1 << 8;
/// `TLBPOL_EVF_STAMP`: the frames go back with a flush stamp.
pub const TLBPOL_EVF_STAMP: u32 = 1 << 9;
/// `TLBPOL_EVF_ALL`.
pub const TLBPOL_EVF_ALL: u32 = 0x3ff;

/// `struct tlbpol_event`: one page-table change.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_event {
    /// `sizeof(struct tlbpol_event)`.
    pub size: u32,
    /// `TLBPOL_EV_*`.
    pub kind: u32,
    /// `TLBPOL_EVF_*`.
    pub flags: u32,
    /// log2 of the page size.
    pub page_shift: u32,
    /// First address.
    pub va: u64,
    /// Pages, >= 1.
    pub nr_pages: u64,
    /// PTE bits before the change.
    pub old_pte: u32,
    /// PTE bits after it.
    pub new_pte: u32,
}

/// `TLBPOL_ACT_NONE`.
pub const TLBPOL_ACT_NONE: u32 = 0;
/// `TLBPOL_ACT_LOCAL`.
pub const TLBPOL_ACT_LOCAL: u32 = 1;
/// `TLBPOL_ACT_SHOOTDOWN`.
pub const TLBPOL_ACT_SHOOTDOWN: u32 = 2;
/// `TLBPOL_BY_NOW`.
pub const TLBPOL_BY_NOW: u32 = 0;
/// `TLBPOL_BY_WRITEBACK`.
pub const TLBPOL_BY_WRITEBACK: u32 = 1;
/// `TLBPOL_BY_FREE`.
pub const TLBPOL_BY_FREE: u32 = 2;
/// `TLBPOL_BY_LAZY`.
pub const TLBPOL_BY_LAZY: u32 = 3;

/// `TLBPOL_WHY_NOT_PRESENT`.
pub const TLBPOL_WHY_NOT_PRESENT: u32 = 0;
/// `TLBPOL_WHY_UNCHANGED`.
pub const TLBPOL_WHY_UNCHANGED: u32 = 1;
/// `TLBPOL_WHY_NAIVE`.
pub const TLBPOL_WHY_NAIVE: u32 = 2;
/// `TLBPOL_WHY_SPURIOUS`.
pub const TLBPOL_WHY_SPURIOUS: u32 = 3;
/// `TLBPOL_WHY_RETRIED`.
pub const TLBPOL_WHY_RETRIED: u32 = 4;
/// `TLBPOL_WHY_ACCESS_FLAGS`.
pub const TLBPOL_WHY_ACCESS_FLAGS: u32 = 5;
/// `TLBPOL_WHY_UPGRADE`.
pub const TLBPOL_WHY_UPGRADE: u32 = 6;
/// `TLBPOL_WHY_AGING`.
pub const TLBPOL_WHY_AGING: u32 = 7;
/// `TLBPOL_WHY_UNMAP`.
pub const TLBPOL_WHY_UNMAP: u32 = 8;
/// `TLBPOL_WHY_RECLAIM_CLEAN`.
pub const TLBPOL_WHY_RECLAIM_CLEAN: u32 = 9;
/// `TLBPOL_WHY_RECLAIM_DIRTY`.
pub const TLBPOL_WHY_RECLAIM_DIRTY: u32 = 10;
/// `TLBPOL_WHY_MIGRATE_CLEAN`.
pub const TLBPOL_WHY_MIGRATE_CLEAN: u32 = 11;
/// `TLBPOL_WHY_MIGRATE_DIRTY`.
pub const TLBPOL_WHY_MIGRATE_DIRTY: u32 = 12;
/// `TLBPOL_WHY_PFN_CHANGE`.
pub const TLBPOL_WHY_PFN_CHANGE: u32 = 13;
/// `TLBPOL_WHY_DOWNGRADE`.
pub const TLBPOL_WHY_DOWNGRADE: u32 = 14;
/// `TLBPOL_WHY_CLEAR_DIRTY`.
pub const TLBPOL_WHY_CLEAR_DIRTY: u32 = 15;
/// `TLBPOL_WHY_REMAP`.
pub const TLBPOL_WHY_REMAP: u32 = 16;
/// `TLBPOL_WHY_UNMAP_DIRTY`.
pub const TLBPOL_WHY_UNMAP_DIRTY: u32 = 17;
/// `TLBPOL_WHY_TABLES_FREED`.
pub const TLBPOL_WHY_TABLES_FREED: u32 = 18;
/// `TLBPOL_WHY_DISCARD`.
pub const TLBPOL_WHY_DISCARD: u32 = 19;
/// `TLBPOL_WHY_ATTRS`.
pub const TLBPOL_WHY_ATTRS: u32 = 20;
/// `TLBPOL_WHY_INSTALL`.
pub const TLBPOL_WHY_INSTALL: u32 = 21;
/// `TLBPOL_WHY_MAX`: the number of reasons.
pub const TLBPOL_WHY_MAX: u32 = 22;

/// `struct tlbpol_decision`: the answer to "does this need a flush?".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_decision {
    /// `TLBPOL_ACT_*`.
    pub action: u32,
    /// `TLBPOL_BY_*`.
    pub deadline: u32,
    /// `TLBPOL_WHY_*`.
    pub reason: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct tlbpol_stats`: counters, per CPU or summed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_stats {
    /// Events submitted.
    pub events: u64,
    /// Changed present PTEs that needed no flush.
    pub flushes_avoided: u64,
    /// `flush_local` calls for this CPU's own decisions.
    pub local_flushes: u64,
    /// `flush_local` calls serving other CPUs' requests.
    pub remote_flushes: u64,
    /// CPUs interrupted.
    pub ipis_sent: u64,
    /// `ops->broadcast` calls.
    pub broadcasts: u64,
    /// Pages in PAGES flushes performed.
    pub pages_flushed: u64,
    /// AS / ALL flushes performed.
    pub full_flushes: u64,
    /// Deferred events that shared a shootdown.
    pub coalesced: u64,
    /// CPUs skipped by flush generation.
    pub gen_skipped: u64,
    /// CPUs not interrupted because lazy, preempted or polling.
    pub lazy_skipped: u64,
    /// Deferred frees run.
    pub deferred_frees: u64,
    /// Submitted events per reason.
    pub by_reason: [u64; TLBPOL_WHY_MAX as usize],
    /// Batches completed by age (`free_ticks`).
    pub aged_flushes: u64,
    /// CPUs interrupted again by the watchdog.
    pub ipis_resent: u64,
    /// `ops->stuck` calls.
    pub stuck_calls: u64,
}

// --- Functions ----------------------------------------------------------------

extern "C" {
    /// `tlbpol_version()`.
    pub fn tlbpol_version() -> *const c_char;
    /// `tlbpol_rule_str()`.
    pub fn tlbpol_rule_str(rule: u64) -> *const c_char;
    /// `tlbpol_rules_parse()`.
    pub fn tlbpol_rules_parse(spec: *const c_char, out: *mut u64) -> c_int;

    /// `tlbpol_cpuset_test()`.
    pub fn tlbpol_cpuset_test(set: *const tlbpol_cpuset, cpu: u32) -> c_int;
    /// `tlbpol_cpuset_count()`.
    pub fn tlbpol_cpuset_count(set: *const tlbpol_cpuset) -> c_int;
    /// `tlbpol_cpuset_next()`.
    pub fn tlbpol_cpuset_next(set: *const tlbpol_cpuset, cpu: c_int) -> c_int;
    /// `tlbpol_cpuset_zero()`.
    pub fn tlbpol_cpuset_zero(set: *mut tlbpol_cpuset);
    /// `tlbpol_cpuset_set()`.
    pub fn tlbpol_cpuset_set(set: *mut tlbpol_cpuset, cpu: u32);
    /// `tlbpol_cpuset_clear()`.
    pub fn tlbpol_cpuset_clear(set: *mut tlbpol_cpuset, cpu: u32);

    /// `tlbpol_config_init()`.
    pub fn tlbpol_config_init(cfg: *mut tlbpol_config, nr_cpus: u32, arch: u32);
    /// `tlbpol_engine_size()`.
    pub fn tlbpol_engine_size(cfg: *const tlbpol_config) -> usize;
    /// `tlbpol_engine_init()`.
    pub fn tlbpol_engine_init(
        out: *mut *mut tlbpol_engine,
        mem: *mut c_void,
        len: usize,
        cfg: *const tlbpol_config,
    ) -> c_int;
    /// `tlbpol_engine_topology()`.
    pub fn tlbpol_engine_topology(eng: *const tlbpol_engine, cpu_node: *mut u16, n: u32) -> c_int;
    /// `tlbpol_engine_rules()`.
    pub fn tlbpol_engine_rules(eng: *const tlbpol_engine) -> u64;

    /// `tlbpol_as_open()`.
    pub fn tlbpol_as_open(eng: *mut tlbpol_engine, tag: u64, out: *mut *mut tlbpol_as) -> c_int;
    /// `tlbpol_as_close()`.
    pub fn tlbpol_as_close(eng: *mut tlbpol_engine, as_: *mut tlbpol_as) -> c_int;
    /// `tlbpol_as_tag()`.
    pub fn tlbpol_as_tag(as_: *const tlbpol_as) -> u64;
    /// `tlbpol_switch()`.
    pub fn tlbpol_switch(eng: *mut tlbpol_engine, cpu: u32, next: *mut tlbpol_as, need_flush: *mut c_int)
        -> c_int;
    /// `tlbpol_unload()`.
    pub fn tlbpol_unload(eng: *mut tlbpol_engine, cpu: u32) -> c_int;
    /// `tlbpol_cpu_state()`.
    pub fn tlbpol_cpu_state(eng: *mut tlbpol_engine, cpu: u32, state: u32) -> c_int;
    /// `tlbpol_tick()`.
    pub fn tlbpol_tick(eng: *mut tlbpol_engine, cpu: u32) -> c_int;

    /// `tlbpol_decide()`.
    pub fn tlbpol_decide(
        eng: *const tlbpol_engine,
        as_: *const tlbpol_as,
        cpu: u32,
        ev: *const tlbpol_event,
        out: *mut tlbpol_decision,
    ) -> c_int;
    /// `tlbpol_submit()`.
    pub fn tlbpol_submit(
        eng: *mut tlbpol_engine,
        as_: *mut tlbpol_as,
        cpu: u32,
        ev: *const tlbpol_event,
        out: *mut tlbpol_decision,
    ) -> c_int;
    /// `tlbpol_reason_str()`.
    pub fn tlbpol_reason_str(reason: u32) -> *const c_char;
    /// `tlbpol_action_str()`.
    pub fn tlbpol_action_str(action: u32) -> *const c_char;
    /// `tlbpol_deadline_str()`.
    pub fn tlbpol_deadline_str(deadline: u32) -> *const c_char;
    /// `tlbpol_reason_cite()`: the hardware rule or kernel source a reason
    /// cites under an arch; a static string, "unknown" for an unknown
    /// reason or arch.  New: call it through [`tlbpol_reason_cite_checked`],
    /// which is `None` when the header this crate was built against does
    /// not declare it (a library without the symbol then still links).
    pub fn tlbpol_reason_cite(reason: u32, arch: u32) -> *const c_char;

    /// `tlbpol_flush()`.
    pub fn tlbpol_flush(eng: *mut tlbpol_engine, cpu: u32, by: u32) -> c_int;
    /// `tlbpol_defer_free()`.
    pub fn tlbpol_defer_free(
        eng: *mut tlbpol_engine,
        cpu: u32,
        fn_: Option<unsafe extern "C" fn(arg: *mut c_void)>,
        arg: *mut c_void,
    ) -> c_int;
    /// `tlbpol_frees_pending()`.
    pub fn tlbpol_frees_pending(eng: *const tlbpol_engine, cpu: u32) -> c_int;

    /// `tlbpol_stamp()`.
    pub fn tlbpol_stamp(eng: *mut tlbpol_engine, cpu: u32, stamp: *mut u64) -> c_int;
    /// `tlbpol_stamp_settle()`.
    pub fn tlbpol_stamp_settle(eng: *mut tlbpol_engine, cpu: u32, stamp: u64) -> c_int;
    /// `tlbpol_stamp_pending()`.
    pub fn tlbpol_stamp_pending(eng: *const tlbpol_engine, stamp: u64) -> c_int;
    /// `tlbpol_handle_ipi()`.
    pub fn tlbpol_handle_ipi(eng: *mut tlbpol_engine, cpu: u32) -> c_int;

    /// `tlbpol_stats_read()`.
    pub fn tlbpol_stats_read(eng: *const tlbpol_engine, cpu: c_int, out: *mut tlbpol_stats) -> c_int;
}

// The hosted layer (`#ifndef TLBPOL_FREESTANDING` in the header).
#[cfg(feature = "hosted")]
extern "C" {
    /// `tlbpol_engine_new()`.
    pub fn tlbpol_engine_new(cfg: *const tlbpol_config, out: *mut *mut tlbpol_engine) -> c_int;
    /// `tlbpol_engine_free()`.
    pub fn tlbpol_engine_free(eng: *mut tlbpol_engine);
    /// `tlbpol_engine_set_rules()`.
    pub fn tlbpol_engine_set_rules(eng: *mut tlbpol_engine, rules: u64) -> c_int;
    /// `tlbpol_engine_set_flush_ceiling()`.
    pub fn tlbpol_engine_set_flush_ceiling(eng: *mut tlbpol_engine, pages: u32) -> c_int;
    /// `tlbpol_engine_set_batch_pages()`.
    pub fn tlbpol_engine_set_batch_pages(eng: *mut tlbpol_engine, pages: u32) -> c_int;
    /// `tlbpol_engine_set_cost_model()`.
    pub fn tlbpol_engine_set_cost_model(eng: *mut tlbpol_engine, cfg: *const tlbpol_config) -> c_int;
    /// `tlbpol_engine_set_ipi_delay()`.
    pub fn tlbpol_engine_set_ipi_delay(eng: *mut tlbpol_engine, spins: u32) -> c_int;
    /// `tlbpol_thread_register()`.
    pub fn tlbpol_thread_register();
    /// `tlbpol_thread_unregister()`.
    pub fn tlbpol_thread_unregister();
    /// `tlbpol_quiescent()`.
    pub fn tlbpol_quiescent();
    /// `tlbpol_thread_offline()`.
    pub fn tlbpol_thread_offline();
    /// `tlbpol_thread_online()`.
    pub fn tlbpol_thread_online();
    /// `tlbpol_as_lookup()`.
    pub fn tlbpol_as_lookup(eng: *mut tlbpol_engine, tag: u64) -> *mut tlbpol_as;
}

include!(concat!(env!("OUT_DIR"), "/cite.rs"));
