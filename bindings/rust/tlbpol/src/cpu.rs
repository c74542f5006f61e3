//! Per-CPU tokens, deferred frees and address spaces.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;
#[cfg(feature = "std")]
use core::ops::Deref;
use core::ptr::{self, NonNull};

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::trampolines::no_unwind;
use crate::engine::Stamp;
use crate::tags::TagUse;
use crate::types::{check, CpuState, Deadline, Decision, Error, Event, Result};
#[cfg(doc)]
use crate::Engine;

/// The iterator of [`Engine::take_cpus`]: one [`Cpu`] per CPU, in order.
pub struct Cpus<'e> {
    pub(crate) eng: NonNull<sys::tlbpol_engine>,
    pub(crate) next: u32,
    pub(crate) end: u32,
    pub(crate) _e: PhantomData<&'e ()>,
}

impl<'e> Iterator for Cpus<'e> {
    type Item = Cpu<'e>;
    fn next(&mut self) -> Option<Cpu<'e>> {
        if self.next == self.end {
            return None;
        }
        self.next += 1;
        Some(Cpu { eng: self.eng, id: self.next - 1, _e: PhantomData })
    }
}

impl fmt::Debug for Cpus<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cpus({}..{})", self.next, self.end)
    }
}

/// The right to make the calls *for* one CPU: one token per CPU, from
/// [`Engine::take_cpus`].
///
/// The header's rule "calls made for one CPU must not run concurrently" is
/// this type's reason to be: every such call takes `&mut self`, and there is
/// one token per CPU, so two of them cannot overlap.  The one call that may
/// nest inside another for the same CPU, `tlbpol_handle_ipi()`, is also
/// reachable from a callback through [`Here::handle_ipi`](crate::Here).
///
/// # Send and Sync
/// `Send`: a CPU's calls may move to another thread between calls (a
/// thread-CPU migrating, a kernel handing each AP its token at boot); the
/// engine keeps no per-thread state for a CPU, and its callbacks run on
/// whatever thread makes the call.  Not `Sync`: a shared `&Cpu` on two
/// threads would be two callers for one CPU.
///
/// `'e` is the engine borrow; the token is invariant in it, so deferred
/// frees registered through it (which run only from later calls for this
/// CPU) may borrow anything that outlives the engine borrow.
///
/// Not enforced by types: `switch` and `unload` run with interrupts off,
/// and a token's calls run on the CPU it names (in a kernel, the token lives
/// in that CPU's per-CPU data).
pub struct Cpu<'e> {
    pub(crate) eng: NonNull<sys::tlbpol_engine>,
    pub(crate) id: u32,
    pub(crate) _e: PhantomData<Cell<&'e ()>>,
}

// SAFETY: see "Send and Sync" above: the engine keeps no per-thread state for
// a CPU, so its calls may come from another thread as long as they do not
// overlap, which the one token per CPU and &mut self ensure (the token moves,
// it is not shared: !Sync comes from the Cell).  Deferred frees it registered
// are DeferredFree: Sync, or closures: Send, so running them on the thread the
// token moved to is sound.
unsafe impl<'e> Send for Cpu<'e> {}

impl fmt::Debug for Cpu<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cpu({})", self.id)
    }
}

/// A deferred free that carries its own data: `free` runs once, on the CPU
/// that registered it, when no TLB can reach what it frees.  `Sync` because
/// the token (and so the call that runs it) may have moved to another
/// thread by then.
pub trait DeferredFree: Sync {
    /// Free the frames, page tables or addresses.  Must not call the engine
    /// for this CPU (it would get `Error::Busy`); must not panic (a panic
    /// aborts).
    fn free(&self);
}

/// The deferred free of [`Cpu::defer_free_ref`].
///
/// # Safety
/// `arg` is the `&'e T` that `defer_free_ref` registered, still alive.
unsafe extern "C" fn run_ref<T: DeferredFree>(arg: *mut c_void) {
    // SAFETY: arg is the &'e T defer_free_ref() registered; the engine runs it
    // only from a call for the registering CPU, made through a token that
    // borrows the engine for 'e, so the T is still borrowed and alive.
    let item = unsafe { &*arg.cast::<T>() };
    no_unwind(|| item.free())
}

/// The deferred free of [`Cpu::defer_free`].
///
/// # Safety
/// `arg` is the `Box<F>` that `defer_free` leaked, not run before.
#[cfg(feature = "std")]
unsafe extern "C" fn run_box<F: FnOnce() + Send>(arg: *mut c_void) {
    no_unwind(|| {
        // SAFETY: arg came from Box::into_raw(Box<F>) in defer_free(), and the
        // engine runs a deferred free exactly once, so the box is taken back
        // once.
        let f = unsafe { Box::from_raw(arg.cast::<F>()) };
        f()
    })
}

impl<'e> Cpu<'e> {
    /// The CPU's number.
    pub fn id(&self) -> u32 {
        self.id
    }

    fn eng(&self) -> *mut sys::tlbpol_engine {
        self.eng.as_ptr()
    }

    /// `tlbpol_submit()`: decide `ev` and act (flush now, or join this CPU's
    /// batch).  Submit every page-table change under its PTE lock: a change
    /// of a present PTE after it is made, an install *before* the new PTE
    /// is stored.  May call every callback and wait for other CPUs.
    ///
    /// `Err(Error::Other(0))` is the one error after which the event *was*
    /// submitted and acted on: a library newer than this crate returned a
    /// decision with a code the crate does not know (a new reason, say).
    /// Do not submit the event again.
    pub fn submit(&mut self, space: &AddressSpace<'_>, ev: &Event) -> Result<Decision> {
        let mut d = sys::tlbpol_decision::default();
        let ev = ev.for_c()?;
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).  space is
        // live for its borrow (C refuses a foreign or closed one); ev is a
        // whole event whose size claims no byte past it (for_c()); C writes
        // only d, a local.  Callbacks get this H's trampolines and shim, live
        // as long as the engine; deferred frees it runs are valid to run, as
        // in flush.
        check(unsafe { sys::tlbpol_submit(self.eng(), space.raw.as_ptr(), self.id, ev, &mut d) })?;
        Decision::from_raw(&d)
    }

    /// `tlbpol_flush()`: complete every pending flush of this CPU due by
    /// `by` (`Deadline::Lazy`: everything), then run the deferred frees that
    /// are due.  Returns the number of deferred events completed.
    pub fn flush(&mut self, by: Deadline) -> Result<u32> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).  Deferred
        // frees it may run were registered through this CPU's token and are
        // valid to run (defer_free_ref/defer_free).
        check(unsafe { sys::tlbpol_flush(self.eng(), self.id, by.raw()) })
    }

    /// `tlbpol_tick()`: the periodic work of this CPU (its timer tick).
    pub fn tick(&mut self) -> Result<()> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run); deferred
        // frees it runs are valid to run, as in flush.
        check(unsafe { sys::tlbpol_tick(self.eng(), self.id) }).map(drop)
    }

    /// `tlbpol_switch()`: this CPU now runs `next` (`None`: an idle or
    /// kernel thread, the previous address space stays loaded, lazily).
    /// Returns whether it must flush `next` whole before using it.  Call it
    /// with interrupts off, the CR3 / TTBR / satp write following at once.
    ///
    /// An engine with a tag allocator ([`Engine::init_with_tags`]) refuses
    /// it (`Error::Invalid`): the host must learn the tag, from
    /// [`Cpu::switch_tag`].
    pub fn switch(&mut self, next: Option<&AddressSpace<'_>>) -> Result<bool> {
        let mut need = 0;
        let n = next.map_or(ptr::null_mut(), |a| a.raw.as_ptr());
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).  n is
        // NULL or a live address space (C refuses a foreign or closed one); C
        // writes only need, a local; deferred frees it runs are valid to run,
        // as in flush.  Interrupts off around it is the host's part, as the
        // type docs say: it decides when the TLB is right, not what memory is
        // valid.
        check(unsafe { sys::tlbpol_switch(self.eng(), self.id, n, &mut need) })?;
        Ok(need != 0)
    }

    /// `tlbpol_switch_tag()` (release 0.3): [`Cpu::switch`] for an engine
    /// with a tag allocator ([`Engine::init_with_tags`]): this CPU now runs
    /// `next` (`None`: lazily, the previous address space stays loaded),
    /// under [`TagUse::tag`], after the flush [`TagUse::flush`] says.
    ///
    /// One answer folds the allocator's decision (a slot taken from
    /// another address space, a rollover) and the engine's (flushes this
    /// CPU skipped while away from `next`, which `switch` reports as its
    /// `bool`): [`TagFlush::Tag`] flushes every entry of the tag (x86: CR3
    /// without bit 63; arm64: TLBI ASIDE1), [`TagFlush::All`] every
    /// non-global entry.  Make that flush as part of the switch, before any
    /// access under the tag and before any other call for this CPU.  For
    /// `None` the tag is the one still loaded (0 if none) and the flush
    /// `TagFlush::None`.  Call it with interrupts off until the tag is
    /// loaded.
    ///
    /// Errors: `Error::Invalid` for an engine without a tag allocator or a
    /// closed or foreign `next`; `Error::Busy` as for `switch`.
    /// `Err(Error::Other(0))` is the one error after which the switch *was*
    /// made: a library newer than this crate returned a flush code it does
    /// not know.
    ///
    /// [`TagFlush::Tag`]: crate::TagFlush::Tag
    /// [`TagFlush::All`]: crate::TagFlush::All
    pub fn switch_tag(&mut self, next: Option<&AddressSpace<'_>>) -> Result<TagUse> {
        let mut u = sys::tlbpol_tag_use::default();
        let n = next.map_or(ptr::null_mut(), |a| a.raw.as_ptr());
        // SAFETY: as in switch: the engine is live for 'e; &mut self on this
        // CPU's one token makes this the only call for self.id in progress
        // (a nested one is answered -EBUSY, never run); n is NULL or a live
        // address space (C refuses a foreign or closed one); deferred frees
        // it runs are valid to run, as in flush.  C writes only u, a local.
        // The tlbpol_tag_load() it makes for self.id on the engine's
        // allocator is the only load for self.id on it: the engine borrows or
        // owns the allocator for its whole life (init_with_tags,
        // new_with_tags), so only the engine loads on it, and only inside
        // this call for this CPU.  Without an allocator C answers -EINVAL.
        check(unsafe { sys::tlbpol_switch_tag(self.eng(), self.id, n, &mut u) })?;
        TagUse::from_raw(&u)
    }

    /// `tlbpol_unload()`: drop the address space kept loaded while lazy
    /// (after `switch(None)`), e.g. before it is closed.  Interrupts off.
    pub fn unload(&mut self) -> Result<()> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).
        check(unsafe { sys::tlbpol_unload(self.eng(), self.id) }).map(drop)
    }

    /// `tlbpol_cpu_state()`: record what this CPU is doing.  Returns `true`
    /// when, coming back to `Running`, it must flush its current address
    /// space before using it (do that before any other call for it).
    pub fn set_state(&mut self, state: CpuState) -> Result<bool> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run); state is
        // one of the enum's codes.
        check(unsafe { sys::tlbpol_cpu_state(self.eng(), self.id, state.raw()) }).map(|r| r == 1)
    }

    /// `tlbpol_handle_ipi()`: this CPU's shootdown interrupt handler.
    /// Returns the number of requests served.
    pub fn handle_ipi(&mut self) -> Result<u32> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).
        check(unsafe { sys::tlbpol_handle_ipi(self.eng(), self.id) })
    }

    /// `tlbpol_stamp()`: complete this CPU's flushes due by a free, post its
    /// stamped ones (`EventFlags::STAMP`) lazily, and return how many
    /// deferred events were completed or posted, and the stamp to keep with
    /// the freed frames.  On a CPU where no stamped event was submitted
    /// since its previous `stamp()`, release 0.3 answers `-ENOENT`
    /// (`Error::Other(2)`) and does nothing: end such a pass with
    /// `flush(Deadline::Free)` instead.
    pub fn stamp(&mut self) -> Result<(u32, Stamp)> {
        let mut s = 0u64;
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run); C writes
        // only s, a local.
        let n = check(unsafe { sys::tlbpol_stamp(self.eng(), self.id, &mut s) })?;
        Ok((n, Stamp(s)))
    }

    /// `tlbpol_stamp_settle()`: make frames freed under `stamp` safe to hand
    /// out again.  Returns whether it had to interrupt or wait.
    pub fn stamp_settle(&mut self, stamp: Stamp) -> Result<bool> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run); C checks
        // the stamp (any u64 is allowed).
        check(unsafe { sys::tlbpol_stamp_settle(self.eng(), self.id, stamp.0) }).map(|r| r != 0)
    }

    /// `tlbpol_defer_free()` with `item.free()`: runs it once every flush
    /// pending on this CPU now has completed on every CPU it targets --
    /// at once if nothing is pending, else from a later `flush`, `submit`,
    /// `tick` or `switch` of this CPU.  Allocates nothing.
    pub fn defer_free_ref<T: DeferredFree>(&mut self, item: &'e T) -> Result<()> {
        let arg = item as *const T as *mut c_void;
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).
        // run_ref::<T>(arg) runs once, now or from a later call for this CPU:
        // through this token, which borrows the engine for 'e, the lifetime of
        // item, so item is alive then (run_ref's contract); C never writes
        // through arg.
        check(unsafe { sys::tlbpol_defer_free(self.eng(), self.id, Some(run_ref::<T>), arg) }).map(drop)
    }

    /// `tlbpol_defer_free()` with a closure (boxed), run as
    /// [`Cpu::defer_free_ref`] says.  A closure still pending when an owned
    /// engine is dropped is leaked, not run.
    #[cfg(feature = "std")]
    pub fn defer_free<F: FnOnce() + Send + 'e>(&mut self, f: F) -> Result<()> {
        let arg = Box::into_raw(Box::new(f));
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).
        // run_box::<F> takes the box back exactly once when it runs (run_box's
        // contract), on the thread holding this token, which F: Send allows;
        // F: 'e keeps what it borrows alive for as long as a call for this CPU
        // can run it.
        let r = check(unsafe { sys::tlbpol_defer_free(self.eng(), self.id, Some(run_box::<F>), arg.cast::<c_void>()) });
        if r.is_err() {
            // SAFETY: not registered (an error changes nothing), so it will
            // never run: the box from into_raw above is ours to drop, once.
            drop(unsafe { Box::from_raw(arg) });
        }
        r.map(drop)
    }

    /// `tlbpol_defer_free(fn, arg)` as the C API has it.
    ///
    /// # Safety
    /// `f(arg)` must be sound to run once, on this CPU's thread at the time,
    /// from a later call for this CPU (or never, if the engine goes first).
    pub unsafe fn defer_free_raw(&mut self, f: unsafe extern "C" fn(*mut c_void), arg: *mut c_void) -> Result<()> {
        // SAFETY: the engine is live for 'e; &mut self on this CPU's one token
        // makes this the only call for self.id in progress (the header's
        // per-CPU rule; a nested one is answered -EBUSY, never run).  That
        // f(arg) is sound to run then is the caller's contract.
        check(unsafe { sys::tlbpol_defer_free(self.eng(), self.id, Some(f), arg) }).map(drop)
    }

    /// `tlbpol_frees_pending()` for this CPU (exact, since it is called for it).
    pub fn frees_pending(&self) -> Result<u32> {
        // SAFETY: the engine is live for 'e; a read that may run anywhere.
        check(unsafe { sys::tlbpol_frees_pending(self.eng(), self.id) })
    }
}

/// An open address space (`struct tlbpol_as`), tied to its engine's borrow.
///
/// Closed by [`AddressSpace::close`], which consumes it; dropping it leaves
/// it open (closing can fail while a CPU runs it or flushes are pending),
/// and the engine forgets it when it goes.
///
/// # Send and Sync
/// Both: it is a handle that every call reads and none writes through it
/// except `close`, which takes it by value; the calls that use it are
/// thread-safe or go through a CPU's token.
pub struct AddressSpace<'e> {
    pub(crate) eng: NonNull<sys::tlbpol_engine>,
    pub(crate) raw: NonNull<sys::tlbpol_as>,
    pub(crate) _e: PhantomData<&'e ()>,
}

// SAFETY: see "Send and Sync" above: the handle is two pointers into a live
// engine (borrowed for 'e) that every call only passes to C, whose
// address-space calls are thread-safe ("any") or made through a CPU's token;
// nothing about it is tied to a thread.
unsafe impl<'e> Send for AddressSpace<'e> {}
// SAFETY: as for Send: &AddressSpace only reads the handle; close(), the one
// call that ends it, takes it by value.
unsafe impl<'e> Sync for AddressSpace<'e> {}

impl<'e> AddressSpace<'e> {
    /// The tag it was opened with.
    pub fn tag(&self) -> u64 {
        // SAFETY: self.raw came from tlbpol_as_open() or _lookup() of an
        // engine live for 'e, and points into its memory even once closed; a
        // read that may run anywhere.
        unsafe { sys::tlbpol_as_tag(self.raw.as_ptr()) }
    }

    /// The C address space.
    pub fn raw(&self) -> *mut sys::tlbpol_as {
        self.raw.as_ptr()
    }

    /// `tlbpol_as_close()`.  No CPU may still have it loaded, running or
    /// lazily (`switch` away, `unload`); otherwise, or while flushes are
    /// pending for it, `Error::Busy` comes back with the handle.
    pub fn close(self) -> core::result::Result<(), (Error, AddressSpace<'e>)> {
        // SAFETY: the engine is live for 'e and the handle is its (or, from
        // another engine, refused); tlbpol_as_close() is thread-safe.  A
        // SpaceRef cannot get here (it derefs to &AddressSpace only).
        match check(unsafe { sys::tlbpol_as_close(self.eng.as_ptr(), self.raw.as_ptr()) }) {
            Ok(_) => Ok(()),
            Err(e) => Err((e, self)),
        }
    }
}

impl fmt::Debug for AddressSpace<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AddressSpace(tag {:#x})", self.tag())
    }
}

/// An address space found by [`Engine::lookup`]: usable as the
/// [`AddressSpace`] it derefs to, but not closable through it.
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct SpaceRef<'e>(pub(crate) AddressSpace<'e>);

#[cfg(feature = "std")]
impl<'e> Deref for SpaceRef<'e> {
    type Target = AddressSpace<'e>;
    fn deref(&self) -> &AddressSpace<'e> {
        &self.0
    }
}
