//! The `extern "C"` trampolines the engine calls (`struct tlbpol_ops`),
//! each handing its call to the host's `Host` method, and what they share:
//! the context an engine is built with (`Shim`) and the guard that keeps a
//! panic from unwinding into C.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicPtr, Ordering};

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::host::{CpuSet, Flush, Here, Host};
use crate::tags::TagFlush;
use crate::types::size_field;

/// What `ops_ctx` points to: the host and, once built, the engine (for
/// `Here::handle_ipi`).  It lives where the engine's memory is (caller
/// memory) or in a box (an owned engine): never moves while the engine lives.
pub(crate) struct Shim<H> {
    pub(crate) host: *const H,
    pub(crate) eng: AtomicPtr<sys::tlbpol_engine>,
}

/// Runs `f`, never letting a panic unwind out: the trampolines are called
/// from C, and unwinding through C frames is undefined behaviour on the
/// Rust versions this crate supports.
#[cfg(feature = "std")]
pub(crate) fn no_unwind<R>(f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            // The panic hook has printed the message.
            std::process::abort()
        }
    }
}

/// Runs `f`, never letting a panic unwind out (no_std: a panic while this
/// guard is live panics again in its drop, and a panic during unwinding
/// aborts; with `panic = "abort"` the guard never fires).
#[cfg(not(feature = "std"))]
pub(crate) fn no_unwind<R>(f: impl FnOnce() -> R) -> R {
    struct Guard;
    impl Drop for Guard {
        fn drop(&mut self) {
            panic!("tlbpol: a panic tried to unwind into the C engine");
        }
    }
    let g = Guard;
    let r = f();
    core::mem::forget(g);
    r
}

/// The host and engine of a callback's `ctx`.
///
/// # Safety
/// `ctx` is the `ops_ctx` an engine of host type `H` was built with (a
/// `Shim<H>` that outlives the engine, whose `host` outlives it too), and
/// `'a` does not outlast the callback.
unsafe fn shim<'a, H>(ctx: *mut c_void) -> (&'a H, *mut sys::tlbpol_engine) {
    // SAFETY: the caller's contract: ctx points to a live Shim<H>, written
    // once before the engine was built and only read (its atomic aside) from
    // then on.
    let s = unsafe { &*ctx.cast::<Shim<H>>() };
    // SAFETY: s.host is the host the engine was built with, borrowed for
    // (Engine::init) or owned by (Engine::new) the engine, so live for 'a.
    (unsafe { &*s.host }, s.eng.load(Ordering::Acquire))
}

fn here<'a>(eng: *mut sys::tlbpol_engine, cpu: u32) -> Here<'a> {
    Here { eng, cpu, _call: PhantomData }
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn flush_local<H: Host>(ctx: *mut c_void, cpu: u32, f: *const sys::tlbpol_flush) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx (this function's
        // contract), and the borrows end with the callback.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: f is the engine's flush, valid and unchanged until the
        // callback returns, with ranges/nr_ranges as the header describes:
        // Flush::from_raw's contract, for a borrow that ends here.
        let f = unsafe { Flush::from_raw(&*f) };
        host.flush_local(&here(eng, cpu), &f);
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn send_ipi<H: Host>(ctx: *mut c_void, from: u32, targets: *const sys::tlbpol_cpuset) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: targets is the engine's set, valid and unchanged for the
        // callback, which the borrow does not outlive.
        let targets = unsafe { &*targets };
        host.send_ipi(&here(eng, from), CpuSet::from_raw(targets));
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn broadcast<H: Host>(ctx: *mut c_void, from: u32, f: *const sys::tlbpol_flush) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: as in flush_local: the engine's flush, valid for the
        // callback, which the borrow does not outlive.
        let f = unsafe { Flush::from_raw(&*f) };
        host.broadcast(&here(eng, from), &f);
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn bcast_issue<H: Host>(ctx: *mut c_void, cpu: u32, f: *const sys::tlbpol_flush) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: as in flush_local: the engine's flush, valid for the
        // callback, which the borrow does not outlive.
        let f = unsafe { Flush::from_raw(&*f) };
        host.bcast_issue(&here(eng, cpu), &f);
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn bcast_sync<H: Host>(ctx: *mut c_void, cpu: u32) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        host.bcast_sync(&here(eng, cpu));
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn walker_sync<H: Host>(ctx: *mut c_void, cpu: u32, cpus: *const sys::tlbpol_cpuset) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: cpus is the engine's set, valid for the callback, which
        // the borrow does not outlive.
        let cpus = unsafe { &*cpus };
        host.walker_sync(&here(eng, cpu), CpuSet::from_raw(cpus));
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn remote_action<H: Host>(
    ctx: *mut c_void,
    from: u32,
    targets: *const sys::tlbpol_cpuset,
    f: *const sys::tlbpol_flush,
) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: targets is the engine's set, valid and unchanged for the
        // callback, which the borrow does not outlive.
        let targets = unsafe { &*targets };
        // SAFETY: as in flush_local: the engine's flush, valid for the
        // callback, which the borrow does not outlive.
        let f = unsafe { Flush::from_raw(&*f) };
        host.remote_action(&here(eng, from), CpuSet::from_raw(targets), &f);
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn load_tag<H: Host>(ctx: *mut c_void, cpu: u32, tag: u32, flush: u32) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // An unknown code (a newer library) as the largest flush, as
        // Flush::kind does.
        let flush = TagFlush::from_raw(flush).unwrap_or(TagFlush::All);
        host.load_tag(&here(eng, cpu), tag, flush);
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn relax<H: Host>(ctx: *mut c_void, cpu: u32) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        host.relax(&here(eng, cpu));
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn vcpu_defer<H: Host>(ctx: *mut c_void, cpu: u32) -> sys::c_int {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, _) = unsafe { shim::<H>(ctx) };
        sys::c_int::from(host.vcpu_defer(cpu))
    })
}

/// # Safety
/// Called by the engine only, as `struct tlbpol_ops` says: `ctx` is the
/// engine's `ops_ctx` (see `shim`), and pointer arguments are valid for
/// the call.
unsafe extern "C" fn stuck<H: Host>(ctx: *mut c_void, cpu: u32, waiting: *const sys::tlbpol_cpuset, turns: u64) {
    no_unwind(|| {
        // SAFETY: the engine calls this with its own ctx.
        let (host, eng) = unsafe { shim::<H>(ctx) };
        // SAFETY: waiting is the engine's set, valid for the callback, which
        // the borrow does not outlive.
        let waiting = unsafe { &*waiting };
        host.stuck(&here(eng, cpu), CpuSet::from_raw(waiting), turns);
    })
}

/// `sizeof(struct tlbpol_ops)` as its `size` field says it.
const OPS_SIZE: u32 = size_field(core::mem::size_of::<sys::tlbpol_ops>());

/// The `struct tlbpol_ops` of host type `H` (the engine copies it).
pub(crate) fn ops<H: Host>() -> sys::tlbpol_ops {
    sys::tlbpol_ops {
        size: OPS_SIZE,
        pad: 0,
        flush_local: Some(flush_local::<H>),
        send_ipi: Some(send_ipi::<H>),
        broadcast: if H::HAS_BROADCAST { Some(broadcast::<H>) } else { None },
        relax: Some(relax::<H>),
        vcpu_defer: if H::HAS_VCPU_DEFER { Some(vcpu_defer::<H>) } else { None },
        stuck: if H::HAS_STUCK { Some(stuck::<H>) } else { None },
        bcast_issue: if H::HAS_SPLIT_BROADCAST { Some(bcast_issue::<H>) } else { None },
        bcast_sync: if H::HAS_SPLIT_BROADCAST { Some(bcast_sync::<H>) } else { None },
        walker_sync: if H::HAS_WALKER_SYNC { Some(walker_sync::<H>) } else { None },
        remote_action: if H::HAS_REMOTE_ACTION { Some(remote_action::<H>) } else { None },
        load_tag: if H::HAS_LOAD_TAG { Some(load_tag::<H>) } else { None },
    }
}
