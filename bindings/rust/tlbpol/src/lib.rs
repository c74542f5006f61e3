//! libtlbpol from Rust: decide when TLBs must be flushed, and drive the
//! shootdowns through your callbacks.
//!
//! A kernel, hypervisor or unikernel submits every page-table change as an
//! [`Event`]; the engine answers with a [`Decision`] (an [`Action`], a
//! [`Deadline`] and a [`Reason`]), flushes through the [`Host`] callbacks
//! (`flush_local`, `send_ipi`, optionally `broadcast`), batches and merges
//! what it can, and runs deferred frees only once no TLB can reach what
//! they free.  The C header, `include/tlbpol/tlbpol.h`, is the reference for
//! what each call does; each method here names the function it wraps.
//!
//! # Features
//! - `std` (default): links the shared library (the hosted build); adds
//!   `Engine::new`, which owns its memory, closures as deferred frees
//!   (`Cpu::defer_free`), live reconfiguration, and panics in callbacks
//!   are caught and abort the process.
//! - without it the crate is `#![no_std]`, allocates nothing, and links the
//!   freestanding core statically (`tlbpol-sys` compiles it from the
//!   repository's `lib/core`, or links the installed `libtlbpol-core.a`):
//!   what a kernel links.  Build the kernel with
//!   `panic = "abort"` (or a panic handler that does not unwind): a panic
//!   inside a callback must not unwind into C, and the guard that prevents
//!   it aborts by panicking again.
//! - `static`: with `std`, link `libtlbpol.a` rather than `libtlbpol.so`, so
//!   that executables run without it.
//!
//! `tlbpol-sys`'s documentation says where the library is looked for
//! (a source tree, `TLBPOL_LIB_DIR`, pkg-config), and how your executables
//! find the shared library at run time without `LD_LIBRARY_PATH`: a
//! six-line `build.rs` that reads `DEP_TLBPOL_LIBDIR`.
//!
//! # Who may call what
//! The header's concurrency rule -- calls made *for* one CPU never run
//! concurrently -- is carried by the types: those calls are methods of a
//! per-CPU token, [`Cpu`], taking `&mut self`; [`Engine::take_cpus`] hands
//! out one token per CPU, once; tokens are `Send` (a CPU's calls may move
//! between threads) but not `Sync`.  Calls that may run anywhere are
//! methods of [`Engine`], which is `Sync`.  Callbacks receive a [`Here`],
//! through which the one call that may nest, `handle_ipi`, is made for
//! their own CPU.  [`AddressSpace`] handles borrow their engine, so none
//! outlives it.  An engine that chooses hardware tags from a [`Tags`]
//! allocator ([`Engine::init_with_tags`]) borrows it mutably (or owns it)
//! for its whole life, so no other load on it can happen meanwhile; its
//! CPUs switch with [`Cpu::switch_tag`].  What the types cannot say
//! (interrupts off around `switch`, a token used on the CPU it names, the
//! host's obligations to take interrupts and tick, no CPU still running a
//! [`TagId`] given to [`Tags::release`]) is the host's, as in C.
//!
//! # Example
//! One CPU, an engine in caller memory (what a `no_std` kernel does; with
//! `std`, `Engine::new(&cfg, host)` also works), an unmap whose frame is
//! freed only after the flush:
//!
//! ```
//! use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
//! use tlbpol::*;
//!
//! struct Tlb {
//!     flushes: AtomicU32,
//! }
//! impl Host for Tlb {
//!     fn flush_local(&self, _cpu: &Here<'_>, f: &Flush<'_>) {
//!         // invlpg each page of f.ranges(), or a CR3 write for FlushKind::As
//!         self.flushes.fetch_add(1, Ordering::Relaxed);
//!     }
//!     fn send_ipi(&self, _from: &Here<'_>, _targets: &CpuSet) {
//!         // one CPU: nobody to interrupt
//!     }
//! }
//!
//! struct Frame(AtomicBool);
//! impl DeferredFree for Frame {
//!     fn free(&self) {
//!         self.0.store(true, Ordering::Relaxed); // back to the allocator
//!     }
//! }
//!
//! let host = Tlb { flushes: AtomicU32::new(0) };
//! let cfg = Config::new(1, Arch::X86_64).rules(Rules::parse("default,-lazy-unmap")?);
//! let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
//! let frame = Frame(AtomicBool::new(false));
//! let eng = Engine::init(&cfg, &host, &mut mem)?;
//! let space = eng.open_as(1)?;
//! let mut cpu = eng.take_cpus()?.next().unwrap();
//! cpu.switch(Some(&space))?;
//!
//! // The PTE was cleared (atomically, old bits read back); now:
//! let ev = Event::new(EventKind::Unmap)
//!     .va(0x7f00_0000_0000)
//!     .old_pte(Pte::PRESENT | Pte::WRITE | Pte::USER | Pte::ACCESSED);
//! let d = cpu.submit(&space, &ev)?;
//! assert_eq!((d.action, d.deadline, d.reason), (Action::Shootdown, Deadline::Free, Reason::Unmap));
//! assert_eq!(d.to_string(), "shootdown/free (unmap)");
//!
//! cpu.defer_free_ref(&frame)?; // queued behind the batched flush
//! assert!(!frame.0.load(Ordering::Relaxed));
//! cpu.flush(Deadline::Free)?; // the flush, then the free
//! assert!(frame.0.load(Ordering::Relaxed));
//! assert_eq!(host.flushes.load(Ordering::Relaxed), 1);
//! # Ok::<(), tlbpol::Error>(())
//! ```
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]
// Every unsafe operation sits in an `unsafe` block, also inside an `unsafe
// fn`, and each block and `unsafe impl` has a `// SAFETY:` comment right
// above it saying why it holds: `tests/safety_comments.rs` checks that
// with any toolchain, and clippy (where installed) with the lint below.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
// No `as` that can change a value: conversions that can fail are checked
// (`TryFrom`, an `Error::Range` before anything reaches C), lossless ones
// are `From`.  The numeric `as` left (an enum's discriminant, and in `const
// fn`s, where Rust 1.63 has no `From`/`TryFrom`, round-trip-checked ones)
// say why where they stand; the pointer `as` only add `*mut` to a `*const`
// (`cast_mut` needs Rust 1.65) or turn a reference into a pointer.
#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_lossless
)]

mod config;
mod cpu;
mod engine;
mod host;
mod mem;
mod tags;
mod trampolines;
mod types;

pub use config::{Backend, BackendFlags, Calibration, Config, Mechanism};
#[cfg(feature = "std")]
pub use cpu::SpaceRef;
pub use cpu::{AddressSpace, Cpu, Cpus, DeferredFree};
pub use engine::{Engine, Stamp, Stats};
pub use mem::{engine_mem_size, mem_size_for, EngineMem};
pub use host::{CpuSet, CpuSetIter, Flush, Here, Host, Range};
pub use tags::{TagCpu, TagCpus, TagFlush, TagId, TagKind, TagUse, Tags, TagsConfig, TagsStats};
pub use types::{
    Action, Arch, CpuState, Deadline, Decision, Error, Event, EventFlags, EventKind, FlushKind, Pte, Reason,
    Result, Rules,
};

/// The raw bindings, for what this crate does not wrap.
pub use tlbpol_sys as sys;

/// `tlbpol_version()`: the linked library's "MAJOR.MINOR.PATCH" (which may be
/// newer than [`sys::TLBPOL_VERSION_STRING`], the header's).
pub fn version() -> &'static str {
    // SAFETY: tlbpol_version() takes nothing, may run anywhere, and returns a
    // static NUL-terminated string, never NULL: what static_str() needs.
    unsafe { static_str(sys::tlbpol_version()) }
}

/// A static NUL-terminated string from the library as `&str`.  (Not
/// `core::ffi::CStr`: that needs Rust 1.64.)
///
/// # Safety
/// `p` is NULL or a NUL-terminated string that lives forever.
pub(crate) unsafe fn static_str(p: *const sys::c_char) -> &'static str {
    if p.is_null() {
        return "unknown";
    }
    let p = p.cast::<u8>(); // c_char is i8 or u8: the same bytes
    let mut n = 0;
    // SAFETY: p is a NUL-terminated string (the caller's promise), so every
    // byte up to and including the NUL is readable: the loop stops at it.
    while unsafe { *p.add(n) } != 0 {
        n += 1;
    }
    // SAFETY: the n bytes before the NUL were just read one by one; the string
    // lives forever and the library never writes it, so a shared 'static slice
    // of them is sound.
    core::str::from_utf8(unsafe { core::slice::from_raw_parts(p, n) }).unwrap_or("?")
}

/// Thread registration for live reconfiguration (hosted build,
/// `tlbpol_thread_*`).  [`Engine::set_rules`] and its siblings take
/// `&mut Engine`, so no call is in flight while they run and threads need
/// not register for them; these are for programs that also reconfigure
/// engines through the raw bindings while CPUs run.
#[cfg(feature = "std")]
pub mod thread {
    use super::sys;

    /// `tlbpol_thread_register()`: this thread takes part in grace periods.
    pub fn register() {
        // SAFETY: no argument; it changes only this thread's liburcu state
        // (lib/hosted/reconfig.c: idempotent, a no-op for an unregistered
        // thread).  A grace period can only be waiting on it for a
        // reconfiguration, which this crate makes only through `&mut Engine`,
        // with no call in flight; raw reconfiguration, which the header's "not
        // from a callback" is about, is the raw caller's `unsafe` to justify.
        unsafe { sys::tlbpol_thread_register() }
    }
    /// `tlbpol_thread_unregister()`.
    pub fn unregister() {
        // SAFETY: no argument; it changes only this thread's liburcu state
        // (lib/hosted/reconfig.c: idempotent, a no-op for an unregistered
        // thread).  A grace period can only be waiting on it for a
        // reconfiguration, which this crate makes only through `&mut Engine`,
        // with no call in flight; raw reconfiguration, which the header's "not
        // from a callback" is about, is the raw caller's `unsafe` to justify.
        unsafe { sys::tlbpol_thread_unregister() }
    }
    /// `tlbpol_quiescent()`: this thread holds no engine configuration now.
    pub fn quiescent() {
        // SAFETY: no argument; it changes only this thread's liburcu state
        // (lib/hosted/reconfig.c: idempotent, a no-op for an unregistered
        // thread).  A grace period can only be waiting on it for a
        // reconfiguration, which this crate makes only through `&mut Engine`,
        // with no call in flight; raw reconfiguration, which the header's "not
        // from a callback" is about, is the raw caller's `unsafe` to justify.
        unsafe { sys::tlbpol_quiescent() }
    }
    /// `tlbpol_thread_offline()`: around a long block.
    pub fn offline() {
        // SAFETY: no argument; it changes only this thread's liburcu state
        // (lib/hosted/reconfig.c: idempotent, a no-op for an unregistered
        // thread).  A grace period can only be waiting on it for a
        // reconfiguration, which this crate makes only through `&mut Engine`,
        // with no call in flight; raw reconfiguration, which the header's "not
        // from a callback" is about, is the raw caller's `unsafe` to justify.
        unsafe { sys::tlbpol_thread_offline() }
    }
    /// `tlbpol_thread_online()`.
    pub fn online() {
        // SAFETY: no argument; it changes only this thread's liburcu state
        // (lib/hosted/reconfig.c: idempotent, a no-op for an unregistered
        // thread).  A grace period can only be waiting on it for a
        // reconfiguration, which this crate makes only through `&mut Engine`,
        // with no call in flight; raw reconfiguration, which the header's "not
        // from a callback" is about, is the raw caller's `unsafe` to justify.
        unsafe { sys::tlbpol_thread_online() }
    }
}
