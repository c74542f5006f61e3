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
//! # Features
//! `hosted` (default) links the shared library and declares the functions
//! of the hosted layer (`tlbpol_engine_new()`, live reconfiguration, thread
//! registration, `tlbpol_as_lookup()`: `TLBPOL_HOSTED_API` in the header).
//! Without it the crate links the freestanding core statically, and those
//! functions are not declared, as the header makes them unavailable under
//! `TLBPOL_FREESTANDING`.
//! `static` (with `hosted`) links `libtlbpol.a` instead of `libtlbpol.so`,
//! and what its `tlbpol.pc` lists for `--static --libs` (libnuma, liburcu)
//! as shared libraries: the executables need no `libtlbpol.so` at run time.
//!
//! # Finding libtlbpol
//! The build script takes the header and the library from the first of:
//! 1. `TLBPOL_SRC_DIR`, a libtlbpol source tree;
//! 2. the repository this crate sits in, when built in place (`../../..`
//!    has `meson.build`, `include/tlbpol/` and `lib/core/`): without
//!    `hosted` it compiles the core from `lib/core`;
//! 3. an installed libtlbpol: headers from `TLBPOL_INCLUDE_DIR`, else the
//!    `include/` next to `TLBPOL_LIB_DIR`, else `pkg-config tlbpol`
//!    (`hosted`) or `pkg-config tlbpol-core` (without), whose
//!    `libtlbpol-core.a` it links; the version is the installed
//!    `<tlbpol/version.h>`'s.
//!
//! The shared library (`hosted`) is `TLBPOL_LIB_DIR`'s, else
//! `pkg-config --libs tlbpol`'s (`PKG_CONFIG_PATH` for a prefix of your own),
//! else a source tree's `build/`.  Every one of these variables, and `CC`,
//! `AR`, `CFLAGS`, re-runs the build script when it changes.
//!
//! # Running without `LD_LIBRARY_PATH`
//! Under a prefix the dynamic loader does not search, your executables need
//! an rpath, and only your own build script can give them one (or use the
//! `static` feature): this crate is `links = "tlbpol"` and passes the
//! directory it linked as `libdir`, which cargo hands to the build scripts
//! of the crates that depend on it directly as `DEP_TLBPOL_LIBDIR`.  Depend on `tlbpol-sys` (`default-features = false`
//! is enough: `tlbpol`'s `std` turns `hosted` on) and add this `build.rs`:
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     println!("cargo:rerun-if-env-changed=DEP_TLBPOL_LIBDIR");
//!     let dirs = std::env::var("DEP_TLBPOL_LIBDIR").unwrap_or_default();
//!     for dir in dirs.split(':').filter(|d| !d.is_empty()) {
//!         println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
//!     }
//! }
//! ```
#![no_std]
#![allow(non_camel_case_types)]
// TLBPOL_ENGINE_SIZE() in consts.rs is generated term by term from the
// header's macro, whose sums start at `0 +`; it stays a literal copy.
#![allow(clippy::identity_op)]
// The build.rs in the documentation above is a whole build script to copy:
// its `fn main` is the point.
#![allow(clippy::needless_doctest_main)]

pub use core::ffi::c_void;

/// C `int` (every target libtlbpol supports has a 32-bit `int`).
/// Defined here because `core::ffi::c_int` needs Rust 1.64.
pub type c_int = i32;
/// `c_char` for the targets whose C `char` is unsigned (the ABIs of
/// `$arch`), signed elsewhere (x86, x86-64), as `std::os::raw::c_char`.
macro_rules! c_char_unsigned_on {
    ($($arch:literal),*) => {
        /// C `char`: unsigned on the ABIs that say so, as `std::os::raw::c_char`.
        #[cfg(any($(target_arch = $arch),*))]
        pub type c_char = u8;
        /// C `char`: signed on x86 and x86-64.
        #[cfg(not(any($(target_arch = $arch),*)))]
        pub type c_char = i8;
    };
}
c_char_unsigned_on!("aarch64", "arm", "riscv64", "riscv32", "powerpc", "powerpc64", "s390x");

include!(concat!(env!("OUT_DIR"), "/version.rs"));

/// The header's internal sizes (`TLBPOL__*`), which `TLBPOL_ENGINE_SIZE()`
/// adds up: `NAME = value, ...`, each a documented `u64` constant.
macro_rules! internal_sizes {
    ($($name:ident = $v:expr,)*) => {$(
        #[doc = concat!("`", stringify!($name), "` of the header (an internal size of the core).")]
        pub const $name: u64 = $v;
    )*};
}

// Every integer constant of the header, and TLBPOL_ENGINE_SIZE(), written
// from it by gen/tlbpol_api.py (committed, so that the crate builds without
// meson; `meson test api-generated` fails when it differs from the header).
include!("consts.rs");

/// `TLBPOL_FREESTANDING`: what C code that links the core archive defines
/// (`tlbpol-core.pc`'s Cflags carry `-DTLBPOL_FREESTANDING`), as this crate
/// does without the `hosted` feature.
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
    /// A duplicate (an address-space tag already open, two backend
    /// descriptors of one mechanism).
    pub const EEXIST: i32 = 17;
    /// A bad argument.
    pub const EINVAL: i32 = 22;
    /// A CPU, address or size out of range.
    pub const ERANGE: i32 = 34;
    /// Nothing to report: no stamped event (`tlbpol_stamp()`), no tag of
    /// an identity on a CPU (`tlbpol_tag_of()`).
    pub const ENOENT: i32 = 2;
    /// A size-led structure larger than the library's with a nonzero byte
    /// past what it knows.
    pub const E2BIG: i32 = 7;
    /// Nothing left to hand out: every global tag taken
    /// (`tlbpol_tag_make_global()`).
    pub const ENOSPC: i32 = 28;
}

// --- CPU sets ---------------------------------------------------------------

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

/// `struct tlbpol_tlbi_op`: one TLB invalidation of an arm64 range flush,
/// from [`tlbpol_tlbi_range_ops`] (release 0.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_tlbi_op {
    /// The first address it invalidates.
    pub va: u64,
    /// Pages of the range's size it covers.
    pub pages: u64,
    /// 1 for a range operation (TLBI RVAE1IS...), 0 for one page.
    pub range: u32,
    /// SCALE, 0..3 (a range operation).
    pub scale: u32,
    /// NUM, 0..31 (a range operation).
    pub num: u32,
    /// 0.
    pub pad: u32,
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
    /// Start a split-phase broadcast of `f`, without waiting.  Optional
    /// (release 0.3), with `bcast_sync` or not at all.
    pub bcast_issue: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32, f: *const tlbpol_flush)>,
    /// Wait for every `bcast_issue` of `cpu` to complete; called on `cpu`,
    /// in the same engine call.  Optional (release 0.3).
    pub bcast_sync: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32)>,
    /// Under `TLBPOL_CFGF_LOCKLESS_WALKERS`: wait until none of `cpus` is
    /// in a lockless walk begun before the call.  Optional (release 0.3).
    pub walker_sync: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32, cpus: *const tlbpol_cpuset)>,
    /// Flush `f` on every CPU in `targets` (never the caller) with no code
    /// of the engine running there, complete on return (Intel RAR, an SBI
    /// remote fence).  Optional (release 0.3): `TLBPOL_MECH_REMOTE`.
    pub remote_action: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            from_cpu: u32,
            targets: *const tlbpol_cpuset,
            f: *const tlbpol_flush,
        ),
    >,
    /// Load `tag` (after the flush `flush`, `TLBPOL_TAG_FLUSH_*`) for the
    /// address space `cpu` runs, from its interrupt: the move onto a global
    /// tag.  Optional (release 0.3).
    pub load_tag: Option<unsafe extern "C" fn(ctx: *mut c_void, cpu: u32, tag: u32, flush: u32)>,
}

// --- Flush mechanisms (backends) ---------------------------------------------

/// `struct tlbpol_backend`: one flush mechanism the host has, and what it
/// costs (release 0.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_backend {
    /// `sizeof(struct tlbpol_backend)`.
    pub size: u32,
    /// `TLBPOL_MECH_*`.
    pub mech: u32,
    /// `TLBPOL_BKF_*`.
    pub flags: u32,
    /// Pages one instruction names at most (0: 1).
    pub max_pages: u32,
    /// IPI: the first target; BROADCAST: one request, issue and sync.
    pub cost_ns: u32,
    /// IPI: each further target.
    pub cost_target_ns: u32,
    /// IPI: each target on another node.
    pub cost_remote_ns: u32,
    /// BROADCAST: each instruction.
    pub cost_page_ns: u32,
}

// --- Configuration and lifecycle --------------------------------------------

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
    /// `nr_backends` pointers to descriptors of the host's flush
    /// mechanisms (copied), or NULL (release 0.3).
    pub backends: *const *const tlbpol_backend,
    /// Entries at `backends`, at most `TLBPOL_MECH_MAX`.
    pub nr_backends: u32,
    /// 0.
    pub reserved2: u32,
    /// A tag allocator that chooses the address spaces' hardware tags,
    /// or NULL (release 0.3).
    pub tags: *mut tlbpol_tags,
}

/// `struct tlbpol_calibration`: the primitives' costs, as the host timed
/// them, for [`tlbpol_cost_calibrate`] (release 0.3).  Every time in one
/// unit, the same for all (ns, or TSC cycles).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_calibration {
    /// `sizeof(struct tlbpol_calibration)`.
    pub size: u32,
    /// TLB entries a CPU uses again soon after a whole flush (0: 64).
    pub refill_entries: u32,
    /// One interrupt to one other CPU, to its acknowledgement (> 0).
    pub ipi_round_trip: u64,
    /// The sender's part for each further target (0: a tenth of the round trip).
    pub ipi_send: u64,
    /// A target's interrupt entry and exit, added to each further
    /// target's cost (0: the initiator's time only).
    pub irq_entry_exit: u64,
    /// Invalidating one page locally (> 0).
    pub inval_page: u64,
    /// A whole local flush (> 0).
    pub full_flush: u64,
    /// Refilling one entry a flush removed (> 0).
    pub refill: u64,
    /// One broadcast invalidation issued (0: none).
    pub bcast_issue: u64,
    /// Waiting for the broadcasts issued (0: no broadcast).
    pub bcast_sync: u64,
    /// Pages one broadcast instruction names (0: 1).
    pub bcast_max_pages: u32,
    /// 0.
    pub pad: u32,
}

// The tag allocators' structures (release 0.3), and the events and
// decisions with the statistics.
include!("tags.rs");
include!("events.rs");

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

    /// `tlbpol_tlbi_range_ops()` (release 0.3).
    pub fn tlbpol_tlbi_range_ops(r: *const tlbpol_range, ops: *mut tlbpol_tlbi_op, n: u32) -> c_int;

    /// `tlbpol_config_init()`.
    pub fn tlbpol_config_init(cfg: *mut tlbpol_config, nr_cpus: u32, arch: u32);
    /// `tlbpol_cost_calibrate()` (release 0.3).
    pub fn tlbpol_cost_calibrate(
        m: *const tlbpol_calibration,
        cfg: *mut tlbpol_config,
        ipi: *mut tlbpol_backend,
        bcast: *mut tlbpol_backend,
    ) -> c_int;
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
    /// `tlbpol_switch_tag()` (release 0.3): `tlbpol_switch()` for an engine
    /// with `cfg->tags`: the tag to load and the flush to make.
    pub fn tlbpol_switch_tag(
        eng: *mut tlbpol_engine,
        cpu: u32,
        next: *mut tlbpol_as,
        out: *mut tlbpol_tag_use,
    ) -> c_int;
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

    /// `tlbpol_tags_size()` (release 0.3).
    pub fn tlbpol_tags_size(cfg: *const tlbpol_tags_config) -> usize;
    /// `tlbpol_tags_init()` (release 0.3): `mem` 64-byte aligned.
    pub fn tlbpol_tags_init(
        out: *mut *mut tlbpol_tags,
        mem: *mut c_void,
        len: usize,
        cfg: *const tlbpol_tags_config,
    ) -> c_int;
    /// `tlbpol_tag_id_init()` (release 0.3).
    pub fn tlbpol_tag_id_init(tags: *mut tlbpol_tags, id: *mut tlbpol_tag_id) -> c_int;
    /// `tlbpol_tag_load()` (release 0.3).
    pub fn tlbpol_tag_load(tags: *mut tlbpol_tags, cpu: u32, id: *mut tlbpol_tag_id, out: *mut tlbpol_tag_use)
        -> c_int;
    /// `tlbpol_tag_make_global()` (release 0.3): the global tag (>= 0), or
    /// `-EEXIST` (it has one), `-ENOSPC`, `-EINVAL`.
    pub fn tlbpol_tag_make_global(tags: *mut tlbpol_tags, id: *mut tlbpol_tag_id) -> c_int;
    /// `tlbpol_tag_global_of()` (release 0.3): the global tag, or `-ENOENT`.
    pub fn tlbpol_tag_global_of(tags: *const tlbpol_tags, id: *const tlbpol_tag_id) -> c_int;
    /// `tlbpol_tag_release()` (release 0.3): no CPU may run `id` or keep it
    /// loaded any more.
    pub fn tlbpol_tag_release(tags: *mut tlbpol_tags, id: *mut tlbpol_tag_id) -> c_int;
    /// `tlbpol_tag_of()` (release 0.3).
    pub fn tlbpol_tag_of(tags: *const tlbpol_tags, cpu: u32, id: *const tlbpol_tag_id) -> c_int;
    /// `tlbpol_tags_stats_read()` (release 0.3): `cpu` -1 for the sum.
    pub fn tlbpol_tags_stats_read(tags: *const tlbpol_tags, cpu: c_int, out: *mut tlbpol_tags_stats) -> c_int;
}

// The hosted layer (`TLBPOL_HOSTED_API` in the header: unavailable under
// TLBPOL_FREESTANDING).
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
