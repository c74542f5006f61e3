//! The engine: building it, the calls that may run anywhere, its
//! reconfiguration, and what it reports (stamps, counters).

use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::config::Config;
use crate::cpu::{AddressSpace, Cpu, Cpus};
#[cfg(feature = "std")]
use crate::cpu::SpaceRef;
use crate::host::Host;
use crate::trampolines::{ops, Shim};
use crate::mem::{ALIGN_SLACK, SHIM_SPACE};
use crate::tags::Tags;
use crate::types::{check, Decision, Error, Event, Reason, Result, Rules};
#[cfg(doc)]
use crate::{mem_size_for, EngineMem, Here};

/// The capacity of a buffer of `len` entries as C's `uint32_t n` of
/// "fill up to n entries": `len`, or `u32::MAX` for a longer buffer.  Not an
/// error: C writes min(n, nr_cpus) entries and nr_cpus <= `TLBPOL_MAX_CPUS`,
/// so a clamped capacity gets exactly what the whole buffer would; a
/// truncating `as` would tell C a smaller capacity than the caller has
/// (2^32 + 3 entries as 3).
fn capacity_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// A TLB-flush policy engine driving host `H`.
///
/// Built in caller memory with [`Engine::init`] (`no_std`: no allocation
/// anywhere), or owning its memory with `Engine::new` (`std`).  `'m` is
/// the borrow of that memory and of the host; an owning engine is
/// `Engine<'static, H>`.
///
/// With a tag allocator ([`Engine::init_with_tags`], which borrows it
/// for `'m`, or `Engine::new_with_tags`, which owns it; `cfg->tags`,
/// release 0.3) the engine chooses the address spaces' hardware tags: CPUs
/// switch with [`Cpu::switch_tag`], which says which tag to load and what
/// to flush, and every [`Flush`](crate::Flush) names the tag of the CPU it
/// reaches.  The allocator is the engine's alone while it lives (the
/// header: no other load on it), which the borrow or the ownership makes
/// so: no [`TagCpu`](crate::TagCpu) token or `&mut Tags` can exist
/// meanwhile.
///
/// Calls that may run anywhere at any time (`decide`, `stats`, `rules`,
/// `open_as` ...) are methods of the engine; calls made *for* a CPU
/// (`submit`, `flush`, `tick`, `switch` ...) are methods of that CPU's
/// [`Cpu`] token, handed out once by [`Engine::take_cpus`].
///
/// # Send and Sync
/// `Engine` is `Sync`: the header makes every call that is not for one CPU
/// safe to run concurrently with everything (the engine synchronises
/// internally), and the calls for one CPU need that CPU's token, of which
/// there is one.  The host is shared by the engine's callbacks on every
/// CPU at once, hence `Host: Sync`.  `Engine` is `Send` when `H` is: an
/// engine is not tied to the thread that built it.
pub struct Engine<'m, H: Host> {
    raw: NonNull<sys::tlbpol_engine>,
    nr_cpus: u32,
    cpus_taken: AtomicBool,
    #[cfg(feature = "std")]
    owned: Option<Owned<H>>,
    // 'm: the caller's memory and host (Engine::init); H: owned by an
    // engine from Engine::new, dropped with it.
    _m: PhantomData<(&'m mut [u8], H)>,
}

#[cfg(feature = "std")]
struct Owned<H> {
    // Dropped after tlbpol_engine_free(), in this order.
    _shim: Box<Shim<H>>,
    _host: Box<H>,
    // The allocator of Engine::new_with_tags, which the engine loads from
    // until it is freed (taken back only by into_tags, which frees first).
    tags: Option<Tags<'static>>,
}

// SAFETY: see "Send and Sync" above.  Through &Engine the raw pointer reaches
// only calls the header marks "any" (thread-safe, the engine synchronises
// internally) and take_cpus(), whose atomic flag hands each CPU's token out
// once; the per-CPU calls need that token (&mut Cpu). Callbacks may then run
// on every thread at once with &H: H: Host is Sync. `owned` (the boxed host
// and shim) is only dropped, by Drop, with &mut.
unsafe impl<'m, H: Host> Sync for Engine<'m, H> {}
// SAFETY: the engine keeps no per-thread state (C's or this crate's): its
// memory is the caller's buffer or the library's allocation, freed by
// tlbpol_engine_free() from any thread; an owned host moves with it, hence H:
// Send; a borrowed one is &H, Send because H: Sync.  A tag allocator it uses
// is plain memory too (Tags: Send + Sync), borrowed or owned.
unsafe impl<'m, H: Host + Send> Send for Engine<'m, H> {}

impl<'m, H: Host> Engine<'m, H> {
    /// Bytes `init` needs for `cfg` in a buffer of any alignment: the
    /// engine's size, a cache line for the callback context, and 63 bytes of
    /// alignment slack.  0 for an invalid configuration (then `init` says
    /// what is wrong with it).
    pub fn mem_size(cfg: &Config<'_>) -> usize {
        match cfg.engine_size() {
            0 => 0,
            n => n + SHIM_SPACE + ALIGN_SLACK,
        }
    }

    /// `tlbpol_engine_init()`: an engine in `mem`, calling `host`.
    ///
    /// `mem` should hold [`Engine::mem_size`] bytes (or be an
    /// [`EngineMem`] of [`mem_size_for`]); it is aligned here, and it and
    /// the host stay borrowed for as long as the engine lives.  Allocates
    /// nothing.  Errors: `Error::NoMemory` if `mem` is too small, and the
    /// configuration's (`Error::Invalid` for an unknown arch or rule bit, a
    /// zero flush ceiling or a bad [`Backend`](crate::Backend) descriptor;
    /// `Error::Exists` for two descriptors of one mechanism;
    /// `Error::Range` for `nr_cpus`, `max_as`, `batch_pages`, a node or
    /// the number of descriptors out of range).
    pub fn init(cfg: &Config<'_>, host: &'m H, mem: &'m mut [u8]) -> Result<Engine<'m, H>> {
        // SAFETY: no allocator.
        unsafe { Engine::init_at(cfg, host, mem, ptr::null_mut()) }
    }

    /// `tlbpol_engine_init()` with a tag allocator (`cfg->tags`, release
    /// 0.3): as [`Engine::init`], and the engine chooses the address
    /// spaces' hardware tags from `tags`, which it borrows exclusively for
    /// as long as it lives (the header: the allocator is the engine's, no
    /// other load on it).  Switch CPUs with [`Cpu::switch_tag`]
    /// ([`Cpu::switch`] is refused, `Error::Invalid`); entries stay under
    /// their tags across switches (`Config::retain_as` is implied).  With
    /// `TagKind::PerCpu` one address space has a different tag on each
    /// CPU, so the engine uses interrupts only (no broadcast or remote
    /// action can name it), unless the allocator has global tags
    /// ([`TagsConfig::global_tags`](crate::TagsConfig::global_tags)): it
    /// then gives one to an address space loaded on enough CPUs
    /// ([`TagsConfig::global_min_cpus`](crate::TagsConfig::global_min_cpus))
    /// at a shootdown, broadcasts naming it to the CPUs that switched to it
    /// since, interrupts the others, and gives it back when the address
    /// space is closed.
    ///
    /// Errors: those of [`Engine::init`], and `Error::Range` for an
    /// allocator of fewer CPUs than the configuration's.
    ///
    /// ```
    /// use tlbpol::*;
    /// struct Tlb;
    /// impl Host for Tlb {
    ///     fn flush_local(&self, _: &Here<'_>, f: &Flush<'_>) {
    ///         let _pcid = f.as_tag(); // this CPU's tag of the address space
    ///     }
    ///     fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
    /// }
    /// let tcfg = TagsConfig::per_cpu(1, 12, 1, 6); // PCIDs 1..6
    /// let mut tmem = vec![0u8; Tags::mem_size(&tcfg)];
    /// let mut tags = Tags::init(&tcfg, &mut tmem)?;
    /// let cfg = Config::new(1, Arch::X86_64);
    /// let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    /// let eng = Engine::init_with_tags(&cfg, &Tlb, &mut mem, &mut tags)?;
    /// let mm = eng.open_as(1)?;
    /// let mut cpu = eng.take_cpus()?.next().unwrap();
    /// let u = cpu.switch_tag(Some(&mm))?; // interrupts off until CR3 is written
    /// assert_eq!((u.tag, u.flush), (1, TagFlush::Tag)); // CR3 = root | 1, bit 63 clear
    /// assert_eq!(cpu.switch(Some(&mm)), Err(Error::Invalid));
    /// # Ok::<(), tlbpol::Error>(())
    /// ```
    ///
    /// The allocator is out of reach while the engine lives:
    ///
    /// ```compile_fail
    /// # use tlbpol::*;
    /// # struct Tlb;
    /// # impl Host for Tlb {
    /// #     fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    /// #     fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
    /// # }
    /// # let tcfg = TagsConfig::per_cpu(1, 12, 1, 6);
    /// # let mut tmem = vec![0u8; Tags::mem_size(&tcfg)];
    /// # let mut tags = Tags::init(&tcfg, &mut tmem)?;
    /// # let cfg = Config::new(1, Arch::X86_64);
    /// # let mut mem = vec![0u8; Engine::<Tlb>::mem_size(&cfg)];
    /// let eng = Engine::init_with_tags(&cfg, &Tlb, &mut mem, &mut tags)?;
    /// let mut own = tags.take_cpus()?.next().unwrap(); // borrowed by the engine
    /// let mm = eng.open_as(1)?;
    /// # Ok::<(), tlbpol::Error>(())
    /// ```
    pub fn init_with_tags(
        cfg: &Config<'_>,
        host: &'m H,
        mem: &'m mut [u8],
        tags: &'m mut Tags<'_>,
    ) -> Result<Engine<'m, H>> {
        let t = tags.raw();
        // SAFETY: t is the live allocator of tags, which the Engine returned
        // borrows exclusively for 'm (the signature), so no token, `&mut
        // Tags` load or drop of it can happen while the engine may load.
        unsafe { Engine::init_at(cfg, host, mem, t) }
    }

    /// [`Engine::init`] with `cfg->tags` = `tags`.
    ///
    /// # Safety
    /// `tags` is NULL or a live allocator that stays valid, and on which
    /// nothing but this engine loads, for `'m`.
    unsafe fn init_at(
        cfg: &Config<'_>,
        host: &'m H,
        mem: &'m mut [u8],
        tags: *mut sys::tlbpol_tags,
    ) -> Result<Engine<'m, H>> {
        let start = mem.as_mut_ptr();
        let skip = start.align_offset(64);
        if skip == usize::MAX || mem.len() < skip + SHIM_SPACE {
            return Err(Error::NoMemory);
        }
        // SAFETY: skip + SHIM_SPACE <= mem.len() (checked above), so both
        // offsets stay inside mem (the second at most one past its end).
        let (shim_ptr, eng_mem) = unsafe { (start.add(skip).cast::<Shim<H>>(), start.add(skip + SHIM_SPACE)) };
        let eng_len = mem.len() - skip - SHIM_SPACE;
        // The shim fits: two pointers in a 64-byte, 64-aligned slot.
        debug_assert!(core::mem::size_of::<Shim<H>>() <= SHIM_SPACE);
        debug_assert!(core::mem::align_of::<Shim<H>>() <= 64);
        // SAFETY: shim_ptr is 64-aligned (skip is start's offset to 64) and
        // has SHIM_SPACE bytes of mem behind it, more than a Shim (two
        // pointers, whatever H); mem is ours, exclusively, for 'm, and nothing
        // is overwritten that needed dropping (bytes).
        unsafe {
            ptr::write(shim_ptr, Shim { host: host as *const H, eng: AtomicPtr::new(ptr::null_mut()) });
        }
        let o = ops::<H>();
        let mut raw_cfg = cfg.complete(&o, shim_ptr.cast::<c_void>())?;
        raw_cfg.tags = tags;
        let mut eng = ptr::null_mut();
        // SAFETY: eng_mem is 64-aligned with eng_len bytes of mem behind it,
        // which the engine borrows for 'm (the header's "stay valid and
        // untouched until the engine is no longer used": the Engine holds the
        // &'m mut, the shim in front of it is ours and outside it). raw_cfg is
        // a whole configuration whose node table complete() checked, whose ops
        // are this H's trampolines and whose ops_ctx is the shim just written,
        // which lives as long as mem (the trampolines' contract); its tags is
        // NULL or an allocator that is the engine's alone for 'm (init_at's
        // contract; C checks it is one, of enough CPUs); the call copies cfg
        // and ops, and calls no callback.
        check(unsafe { sys::tlbpol_engine_init(&mut eng, eng_mem.cast::<c_void>(), eng_len, &raw_cfg) })?;
        // SAFETY: the shim written above, in mem that we still borrow; the
        // engine only reads it, and eng is an atomic.
        unsafe { (*shim_ptr).eng.store(eng, Ordering::Release) };
        Ok(Engine {
            raw: NonNull::new(eng).ok_or(Error::Invalid)?,
            nr_cpus: raw_cfg.nr_cpus,
            cpus_taken: AtomicBool::new(false),
            #[cfg(feature = "std")]
            owned: None,
            _m: PhantomData,
        })
    }

    /// The C engine, for calls this crate does not wrap.
    pub fn raw(&self) -> *mut sys::tlbpol_engine {
        self.raw.as_ptr()
    }

    /// The number of CPUs.
    pub fn nr_cpus(&self) -> u32 {
        self.nr_cpus
    }

    /// The tokens of every CPU, 0 first; once per engine (`Error::Busy`
    /// after that).  Hand each one to the thread or CPU that runs it.
    pub fn take_cpus(&self) -> Result<Cpus<'_>> {
        if self.cpus_taken.swap(true, Ordering::AcqRel) {
            return Err(Error::Busy);
        }
        Ok(Cpus { eng: self.raw, next: 0, end: self.nr_cpus, _e: PhantomData })
    }

    /// A token for `cpu`, outside [`Engine::take_cpus`].
    ///
    /// # Safety
    /// No other token for `cpu` may be in use while this one is (calls for
    /// one CPU must not run concurrently), and deferred frees registered
    /// through an earlier token for `cpu` must still be valid to run, since
    /// this token's calls may run them.
    pub unsafe fn cpu_unchecked(&self, cpu: u32) -> Cpu<'_> {
        Cpu { eng: self.raw, id: cpu, _e: PhantomData }
    }

    /// `tlbpol_handle_ipi()` for `cpu`, from its shootdown interrupt
    /// handler, without its [`Cpu`] token.  The interrupt may land while the
    /// code it interrupted holds that token inside another engine call (or
    /// in a callback's [`Here`]): a `&mut Cpu` cannot be had there, and the
    /// C engine allows exactly this one call to nest (it serves what the
    /// interrupted call is not serving already, and the rest is served
    /// before that call returns).  Returns the number of requests served.
    ///
    /// # Safety
    /// Call it on `cpu` itself, in its interrupt handler or wherever the
    /// host delivers the interrupt: the flushes it makes (`flush_local`
    /// for `cpu`) must reach that CPU's TLB, and no other thread may be
    /// making calls for `cpu` meanwhile.
    pub unsafe fn handle_ipi_on(&self, cpu: u32) -> Result<u32> {
        // SAFETY: the engine is live (borrowed); the caller's contract makes
        // this a call on cpu that is either alone for it or nested, as the
        // header allows for tlbpol_handle_ipi() (and only it); C checks cpu.
        check(unsafe { sys::tlbpol_handle_ipi(self.raw.as_ptr(), cpu) })
    }

    /// `tlbpol_as_open()`: start tracking an address space whose flushes
    /// carry `tag` (its PCID, ASID, VMID...).  `Error::Exists` if an open
    /// one has `tag`, `Error::NoMemory` if `max_as` are open.
    pub fn open_as(&self, tag: u64) -> Result<AddressSpace<'_>> {
        let mut a = ptr::null_mut();
        // SAFETY: the engine is live for &self; tlbpol_as_open() is
        // thread-safe ("any") and writes only *out, a local here.
        check(unsafe { sys::tlbpol_as_open(self.raw.as_ptr(), tag, &mut a) })?;
        Ok(AddressSpace { eng: self.raw, raw: NonNull::new(a).ok_or(Error::Invalid)?, _e: PhantomData })
    }

    /// `tlbpol_decide()`: what `ev` in `space`, made on `cpu`, needs under
    /// this engine's arch and rules.  Pure: changes nothing.
    pub fn decide(&self, space: &AddressSpace<'_>, cpu: u32, ev: &Event) -> Result<Decision> {
        let mut d = sys::tlbpol_decision::default();
        let ev = ev.for_c()?;
        // SAFETY: the engine is live for &self and space for its borrow (of
        // this engine or another live one: C refuses a foreign one);
        // tlbpol_decide() is pure and may run anywhere.  ev is a whole event
        // whose size claims no byte past it (for_c()); C checks every field
        // and cpu, and writes only d, a local.
        check(unsafe { sys::tlbpol_decide(self.raw.as_ptr(), space.raw.as_ptr(), cpu, ev, &mut d) })?;
        Decision::from_raw(&d)
    }

    /// `tlbpol_engine_rules()`: the rules in force (the configured mask less
    /// those this arch or these callbacks cannot use).
    pub fn rules(&self) -> Rules {
        // SAFETY: the engine is live for &self; a read that may run anywhere.
        Rules(unsafe { sys::tlbpol_engine_rules(self.raw.as_ptr()) })
    }

    /// `tlbpol_engine_topology()`: fills `cpu_node` with the node of each CPU
    /// (up to its length) and returns the number of nodes.
    pub fn topology(&self, cpu_node: &mut [u16]) -> Result<u32> {
        let n = capacity_u32(cpu_node.len());
        let mut dummy = 0u16;
        let p = if n == 0 { &mut dummy as *mut u16 } else { cpu_node.as_mut_ptr() };
        // SAFETY: the engine is live for &self (a read that may run anywhere);
        // C writes min(n, nr_cpus) entries at p, and n <= cpu_node.len()
        // (capacity_u32), so only cpu_node, borrowed exclusively for the call,
        // is written (or nothing, at dummy).
        check(unsafe { sys::tlbpol_engine_topology(self.raw.as_ptr(), p, n) })
    }

    /// `tlbpol_stats_read()`: the counters of `cpu`, or summed over every
    /// CPU for `None`.
    ///
    /// The C parameter is an `int`, in which -1 means every CPU: a `cpu`
    /// above `i32::MAX` has no `int` (wrapped, `u32::MAX` would be -1) and
    /// is `Error::Range` without calling C; below, C says whether the
    /// engine has it (`Error::Range` too if not).
    pub fn stats(&self, cpu: Option<u32>) -> Result<Stats> {
        let c: sys::c_int = match cpu {
            Some(c) => sys::c_int::try_from(c).map_err(|_| Error::Range)?,
            None => -1,
        };
        let mut s = sys::tlbpol_stats::default();
        // SAFETY: the engine is live for &self; a read that may run anywhere,
        // writing only s, a whole tlbpol_stats of this header's size (what the
        // symbol this crate links writes; layout test).
        check(unsafe { sys::tlbpol_stats_read(self.raw.as_ptr(), c, &mut s) })?;
        Ok(Stats(s))
    }

    /// `tlbpol_frees_pending()`: deferred frees registered on `cpu` that have
    /// not run yet (exact only on `cpu` itself).
    pub fn frees_pending(&self, cpu: u32) -> Result<u32> {
        // SAFETY: the engine is live for &self; a read that may run anywhere
        // ("any"); C checks cpu.
        check(unsafe { sys::tlbpol_frees_pending(self.raw.as_ptr(), cpu) })
    }

    /// `tlbpol_stamp_pending()`: would settling `stamp` have to interrupt or
    /// wait now?  (`false` stays false; `true` may turn false any moment.)
    pub fn stamp_pending(&self, stamp: Stamp) -> Result<bool> {
        // SAFETY: the engine is live for &self; a read that may run anywhere;
        // C checks the stamp (any u64 is allowed).
        check(unsafe { sys::tlbpol_stamp_pending(self.raw.as_ptr(), stamp.0) }).map(|r| r != 0)
    }
}

#[cfg(feature = "std")]
impl<H: Host> Engine<'static, H> {
    /// `tlbpol_engine_new()`: an engine that owns its memory and `host`
    /// (hosted build).  Dropping it frees both; flushes and deferred frees
    /// still pending are dropped (complete them first with
    /// `Cpu::flush(Deadline::Lazy)`; closures not run are leaked, never run).
    pub fn new(cfg: &Config<'_>, host: H) -> Result<Engine<'static, H>> {
        Engine::new_owning(cfg, host, None)
    }

    /// `tlbpol_engine_new()` with a tag allocator (`cfg->tags`, release
    /// 0.3), which the engine owns: see [`Engine::init_with_tags`].  It is
    /// dropped with the engine, after it, or given back by
    /// [`Engine::into_tags`].  Errors: those of `Engine::new`, and
    /// `Error::Range` for an allocator of fewer CPUs than the
    /// configuration's (the allocator is dropped).
    pub fn new_with_tags(cfg: &Config<'_>, host: H, tags: Tags<'static>) -> Result<Engine<'static, H>> {
        Engine::new_owning(cfg, host, Some(tags))
    }

    fn new_owning(cfg: &Config<'_>, host: H, tags: Option<Tags<'static>>) -> Result<Engine<'static, H>> {
        let host = Box::new(host);
        let shim = Box::new(Shim { host: &*host as *const H, eng: AtomicPtr::new(ptr::null_mut()) });
        let o = ops::<H>();
        let mut raw_cfg = cfg.complete(&o, &*shim as *const Shim<H> as *mut c_void)?;
        raw_cfg.tags = tags.as_ref().map_or(ptr::null_mut(), |t| t.raw());
        let mut eng = ptr::null_mut();
        // SAFETY: raw_cfg is a whole configuration whose node table complete()
        // checked; its ops_ctx is the boxed shim, which with the boxed host it
        // points to is kept in the Engine and dropped only after
        // tlbpol_engine_free() (Owned's field order; heap addresses do not
        // move with the Engine).  Its tags is NULL or the allocator moved in
        // here, kept in Owned until after tlbpol_engine_free() too (into_tags
        // frees first), and reachable by nobody else meanwhile: no other load
        // on it (the header's rule); its memory does not move with the Tags
        // value.  The call copies cfg and ops, calls no callback, and writes
        // only eng, a local.
        check(unsafe { sys::tlbpol_engine_new(&raw_cfg, &mut eng) })?;
        shim.eng.store(eng, Ordering::Release);
        Ok(Engine {
            raw: NonNull::new(eng).ok_or(Error::Invalid)?,
            nr_cpus: raw_cfg.nr_cpus,
            cpus_taken: AtomicBool::new(false),
            owned: Some(Owned { _shim: shim, _host: host, tags }),
            _m: PhantomData,
        })
    }

    /// Frees the engine (as dropping it does) and gives back the tag
    /// allocator it owned (`Engine::new_with_tags`), `None` if it had none.
    /// The allocator is then the caller's again, with the slots and
    /// generations the engine left, and its counters.
    pub fn into_tags(mut self) -> Option<Tags<'static>> {
        let tags = self.owned.as_mut().and_then(|o| o.tags.take());
        drop(self); // tlbpol_engine_free(): no load on the allocator after it
        tags
    }

    /// `tlbpol_as_lookup()`: the open address space with `tag`, lock-free
    /// (hosted build, engines from `Engine::new`).  The result cannot close
    /// it: whoever opened it keeps that right.  Used after the owner closed
    /// it, it is refused as closed (`Error::Invalid`) -- the engine keeps
    /// its address spaces in its own memory -- or names the address space
    /// that reused the slot.
    pub fn lookup(&self, tag: u64) -> Option<SpaceRef<'_>> {
        // SAFETY: the engine is live for &self, so is its tag table, whose
        // nodes sit in an array the engine frees only in tlbpol_engine_free()
        // (Drop, &mut self).  The call is a QSBR read-side lookup
        // (lib/hosted/lookup.c) that neither allocates nor waits, the reasons
        // the header's table keeps the hosted calls out of callbacks; NULL
        // (and so None) for an engine without the table. The handle points
        // into the engine's memory, and a stale one is refused as closed by
        // every call that takes it.
        let a = NonNull::new(unsafe { sys::tlbpol_as_lookup(self.raw.as_ptr(), tag) })?;
        Some(SpaceRef(AddressSpace { eng: self.raw, raw: a, _e: PhantomData }))
    }

    /// `tlbpol_engine_set_rules()`.  Exclusive access (`&mut self`: no token
    /// or address space is borrowed, so no call is in progress), which makes
    /// the library's RCU grace period trivially safe whatever threads
    /// called before.
    pub fn set_rules(&mut self, rules: Rules) -> Result<()> {
        // SAFETY: a reconfiguration; C checks the mask.
        unsafe { self.reconfigure(sys::tlbpol_engine_set_rules, rules.0) }
    }

    /// `tlbpol_engine_set_flush_ceiling()` (see [`Engine::set_rules`]).
    pub fn set_flush_ceiling(&mut self, pages: u32) -> Result<()> {
        // SAFETY: a reconfiguration; C checks the ceiling.
        unsafe { self.reconfigure(sys::tlbpol_engine_set_flush_ceiling, pages) }
    }

    /// `tlbpol_engine_set_batch_pages()`: 1 ..= the creation size.
    pub fn set_batch_pages(&mut self, pages: u32) -> Result<()> {
        // SAFETY: a reconfiguration; C checks the batch size.
        unsafe { self.reconfigure(sys::tlbpol_engine_set_batch_pages, pages) }
    }

    /// `tlbpol_engine_set_cost_model()`: the cost fields of `cfg` (0 keeps one).
    pub fn set_cost_model(&mut self, cfg: &Config<'_>) -> Result<()> {
        // SAFETY: a reconfiguration; cfg.raw() is a whole configuration,
        // borrowed for the call, which only reads it (its cost fields).
        unsafe { self.reconfigure(sys::tlbpol_engine_set_cost_model, cfg.raw() as *const sys::tlbpol_config) }
    }

    /// `tlbpol_engine_set_ipi_delay()`.
    pub fn set_ipi_delay(&mut self, spins: u32) -> Result<()> {
        // SAFETY: a reconfiguration; any number of spins is allowed.
        unsafe { self.reconfigure(sys::tlbpol_engine_set_ipi_delay, spins) }
    }

    /// Calls `set`, a `tlbpol_engine_set_*()`, on this engine with `arg`.
    ///
    /// # Safety
    /// `set` is one of the header's `tlbpol_engine_set_*()` reconfigurations
    /// and `arg` a value it accepts: an integer (C checks it) or a pointer
    /// valid for what the call reads.
    unsafe fn reconfigure<T>(&mut self, set: unsafe extern "C" fn(*mut sys::tlbpol_engine, T) -> sys::c_int, arg: T) -> Result<()> {
        // SAFETY: the engine is live, and &mut self means no token, address
        // space or other borrow of it is alive, so no call on it is in
        // flight: nothing holds the configuration this replaces, and the RCU
        // grace period the call waits for waits on no call of this engine.
        // (The header's "not from a callback" is for that wait: a callback of
        // this engine cannot get &mut of it, its call borrows the engine.)
        // The caller vouches for set and arg.
        check(unsafe { set(self.raw.as_ptr(), arg) }).map(drop)
    }
}

impl<'m, H: Host> Drop for Engine<'m, H> {
    fn drop(&mut self) {
        // An engine in caller memory needs nothing: the memory stays the
        // caller's.  An owned one is freed (no token or address space can
        // be alive: they borrow the engine).
        #[cfg(feature = "std")]
        if self.owned.is_some() {
            // SAFETY: the engine came from tlbpol_engine_new() (owned is set
            // only there) and is freed once, here; &mut self means no token,
            // address space or call is alive (they borrow the engine), as the
            // header's "no other call may be running" needs.  The host and
            // shim it calls, and the allocator it loads from, are dropped
            // after this.
            unsafe { sys::tlbpol_engine_free(self.raw.as_ptr()) };
        }
    }
}

impl<'m, H: Host> fmt::Debug for Engine<'m, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").field("nr_cpus", &self.nr_cpus).field("rules", &self.rules()).finish()
    }
}

/// A flush stamp (`tlbpol_stamp()`): keep it with the frames it freed;
/// 0 means nothing to settle, any other value is opaque.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stamp(pub u64);

impl Stamp {
    /// Nothing in flight.
    pub const NONE: Stamp = Stamp(0);
    /// Whether there is nothing to settle.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

/// Counters (`struct tlbpol_stats`): its fields through `Deref`, and the
/// per-reason counts by [`Reason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats(pub sys::tlbpol_stats);

impl Stats {
    /// Events submitted with `reason`.
    pub fn by_reason(&self, reason: Reason) -> u64 {
        // Every Reason is below TLBPOL_WHY_MAX, the array's length; a reason
        // the counters do not have would have counted nothing.
        let i = usize::try_from(reason.raw()).unwrap_or(usize::MAX);
        self.0.by_reason.get(i).copied().unwrap_or(0)
    }
}

impl Deref for Stats {
    type Target = sys::tlbpol_stats;
    fn deref(&self) -> &sys::tlbpol_stats {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_clamped_never_truncated() {
        assert_eq!(capacity_u32(0), 0);
        assert_eq!(capacity_u32(4096), 4096);
        let max = usize::try_from(u32::MAX).unwrap();
        assert_eq!(capacity_u32(max), u32::MAX, "the largest u32 is passed as is");
        #[cfg(target_pointer_width = "64")]
        {
            assert_eq!(capacity_u32(max + 1), u32::MAX, "one past: clamped, not 0");
            assert_eq!(capacity_u32((1 << 32) + 3), u32::MAX, "not 3");
            assert_eq!(capacity_u32(usize::MAX), u32::MAX);
        }
    }
}
