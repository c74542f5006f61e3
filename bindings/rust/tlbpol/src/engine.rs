//! The engine, its configuration, per-CPU tokens and address spaces.

use core::cell::Cell;
use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::host::{no_unwind, ops, Host, Shim};
use crate::types::{check, Arch, CpuState, Deadline, Decision, Error, Event, Reason, Result, Rules};

/// How to build an engine (`struct tlbpol_config`): the defaults of
/// `tlbpol_config_init()`, then adjusted by the builder methods.
///
/// `'n` is the borrow of the NUMA node table, if one is given; the engine
/// copies it, so it need only live until the engine is built.
#[derive(Clone, Copy)]
pub struct Config<'n> {
    raw: sys::tlbpol_config,
    nodes: Option<&'n [u16]>,
}

impl Config<'static> {
    /// The defaults for `nr_cpus` CPUs (1 ..= `TLBPOL_MAX_CPUS`) of `arch`:
    /// 64 address spaces, every rule, flush ceiling 33, batches of 512
    /// pages, the default cost model, no NUMA table.
    pub fn new(nr_cpus: u32, arch: Arch) -> Config<'static> {
        let mut raw = core::mem::MaybeUninit::<sys::tlbpol_config>::zeroed();
        // SAFETY: raw is a writable, aligned tlbpol_config of this header's
        // size, which is what tlbpol_config_init() writes (the layout test
        // checks the sizes agree; programs built against 0.1's smaller
        // structure bind the 0.1 symbol).  It takes any nr_cpus and arch (the
        // engine checks them later) and may run anywhere.
        unsafe { sys::tlbpol_config_init(raw.as_mut_ptr(), nr_cpus, arch.raw()) };
        // SAFETY: zeroed above, so every field is initialised whatever the
        // call wrote; tlbpol_config is plain integers and nullable pointers
        // (cpu_node, ops, ops_ctx), for which all-zero bytes are valid.
        let raw = unsafe { raw.assume_init() };
        Config { raw, nodes: None }
    }
}

impl<'n> Config<'n> {
    /// The rule mask (unknown bits make the engine refuse: `Error::Invalid`).
    pub fn rules(mut self, rules: Rules) -> Self {
        self.raw.rules = rules.0;
        self
    }
    /// Address spaces open at once, 1 ..= `TLBPOL_MAX_AS`.
    pub fn max_as(mut self, n: u32) -> Self {
        self.raw.max_as = n;
        self
    }
    /// Pages per address space above which one whole-AS flush is used (>= 1).
    pub fn flush_ceiling(mut self, pages: u32) -> Self {
        self.raw.flush_ceiling = pages;
        self
    }
    /// Deferred pages a CPU holds before it flushes by itself,
    /// 1 ..= `TLBPOL_MAX_BATCH_PAGES`.
    pub fn batch_pages(mut self, pages: u32) -> Self {
        self.raw.batch_pages = pages;
        self
    }
    /// `TLBPOL_CFGF_RETAIN_AS`: switching away keeps an address space's
    /// entries under their tag (PCID, ASID).
    pub fn retain_as(self, on: bool) -> Self {
        self.config_flag(sys::TLBPOL_CFGF_RETAIN_AS, on)
    }
    /// `TLBPOL_CFGF_WAIT_IRQS`: the host promises that [`Host::relax`]
    /// takes this CPU's interrupts (calls `handle_ipi` for an interrupt
    /// [`Host::send_ipi`] raised), and a CPU waiting for its own shootdown
    /// then serves other CPUs' requests only from them, as Linux's
    /// `csd_lock_wait()` does.  Without the promise kept, two CPUs that
    /// shoot each other down wait for ever.  For reproducing such a
    /// kernel; serving from the wait loop (the default) is cheaper.
    ///
    /// [`Host::relax`]: crate::Host::relax
    /// [`Host::send_ipi`]: crate::Host::send_ipi
    pub fn wait_irqs(self, on: bool) -> Self {
        self.config_flag(sys::TLBPOL_CFGF_WAIT_IRQS, on)
    }
    /// Sets or clears one `TLBPOL_CFGF_*` bit.
    fn config_flag(mut self, bit: u32, on: bool) -> Self {
        if on {
            self.raw.flags |= bit;
        } else {
            self.raw.flags &= !bit;
        }
        self
    }
    /// The NUMA node of each CPU (at least `nr_cpus` entries, copied).
    pub fn cpu_node<'m>(self, nodes: &'m [u16]) -> Config<'m> {
        Config { raw: self.raw, nodes: Some(nodes) }
    }
    /// The interrupt side of the broadcast cost model, in ns: first
    /// target, each further target, each target on another node (0: default).
    pub fn ipi_cost(mut self, first: u32, per_target: u32, per_remote: u32) -> Self {
        self.raw.cost_ipi_ns = first;
        self.raw.cost_ipi_target_ns = per_target;
        self.raw.cost_ipi_remote_ns = per_remote;
        self
    }
    /// The broadcast side of the cost model, in ns: one broadcast, each
    /// page it names (0: default).
    pub fn broadcast_cost(mut self, base: u32, per_page: u32) -> Self {
        self.raw.cost_broadcast_ns = base;
        self.raw.cost_broadcast_page_ns = per_page;
        self
    }
    /// With `Rules::POLLING_CPUS`: turns an initiator waits for polling
    /// targets before it interrupts them (0: at once).
    pub fn ipi_delay_spins(mut self, turns: u32) -> Self {
        self.raw.ipi_delay_spins = turns;
        self
    }
    /// The watchdog: every `turns` turns of a wait, interrupt the laggards
    /// again and call [`Host::stuck`] (0: never).
    pub fn wait_limit(mut self, turns: u32) -> Self {
        self.raw.wait_limit = turns;
        self
    }
    /// Ticks after which BY_WRITEBACK / BY_FREE work completes by itself
    /// (0: the default, 2; `TLBPOL_FREE_TICKS_NEVER`: only by `Cpu::flush`).
    pub fn free_ticks(mut self, ticks: u32) -> Self {
        self.raw.free_ticks = ticks;
        self
    }
    /// The C structure (its `ops`, `ops_ctx` and `cpu_node` are set when an
    /// engine is built from it).
    pub fn raw(&self) -> &sys::tlbpol_config {
        &self.raw
    }

    /// The C structure with the node table and callbacks filled in;
    /// `Error::Invalid` for a node table shorter than `nr_cpus` (the engine
    /// would read past it).
    fn complete(&self, ops: *const sys::tlbpol_ops, ctx: *mut c_void) -> Result<sys::tlbpol_config> {
        let mut raw = self.raw;
        if let Some(n) = self.nodes {
            // A count past usize (16-bit targets) is longer than any slice.
            let need = usize::try_from(raw.nr_cpus).map_err(|_| Error::Invalid)?;
            if n.len() < need {
                return Err(Error::Invalid);
            }
            raw.cpu_node = n.as_ptr();
        }
        raw.ops = ops;
        raw.ops_ctx = ctx;
        Ok(raw)
    }

    /// `tlbpol_engine_size()`: bytes the engine itself needs; 0 for an
    /// invalid configuration.  [`Engine::mem_size`] adds what
    /// [`Engine::init`] needs besides.
    pub fn engine_size(&self) -> usize {
        // Any ops will do for sizing; the engine only checks they are set.
        let o = ops::<NoHost>();
        match self.complete(&o, ptr::null_mut()) {
            // SAFETY: raw is a whole configuration of this header's size, and
            // complete() checked its node table holds nr_cpus entries (the
            // call reads them); it and o outlive the call, which only reads
            // them, may run anywhere, and calls no callback (ops and a NULL
            // ops_ctx are only checked for being set).
            Ok(raw) => unsafe { sys::tlbpol_engine_size(&raw) },
            Err(_) => 0,
        }
    }
}

impl fmt::Debug for Config<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("nr_cpus", &self.raw.nr_cpus)
            .field("arch", &Arch::from_raw(self.raw.arch))
            .field("rules", &Rules(self.raw.rules))
            .field("max_as", &self.raw.max_as)
            .field("flush_ceiling", &self.raw.flush_ceiling)
            .field("batch_pages", &self.raw.batch_pages)
            .field("flags", &self.raw.flags)
            .finish()
    }
}

/// The capacity of a buffer of `len` entries as C's `uint32_t n` of
/// "fill up to n entries": `len`, or `u32::MAX` for a longer buffer.  Not an
/// error: C writes min(n, nr_cpus) entries and nr_cpus <= `TLBPOL_MAX_CPUS`,
/// so a clamped capacity gets exactly what the whole buffer would; a
/// truncating `as` would tell C a smaller capacity than the caller has
/// (2^32 + 3 entries as 3).
fn capacity_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// A host that is never called: only to size a configuration.
struct NoHost;
impl Host for NoHost {
    fn flush_local(&self, _: &crate::Here<'_>, _: &crate::Flush<'_>) {}
    fn send_ipi(&self, _: &crate::Here<'_>, _: &crate::CpuSet) {}
}

/// Bytes [`Engine::init`] keeps in front of the engine for the callback
/// context (one cache line, so the engine stays 64-byte aligned).
const SHIM_SPACE: usize = 64;
/// Worst-case bytes lost aligning an arbitrary buffer to 64.
const ALIGN_SLACK: usize = 63;

/// Memory for an engine, 64-byte aligned: `EngineMem<{ tlbpol::engine_mem_size(..) }>`
/// in a static or on a heap, for [`Engine::init`] (exactly what it needs).
#[repr(C, align(64))]
pub struct EngineMem<const N: usize>(pub [u8; N]);

impl<const N: usize> EngineMem<N> {
    /// Zeroed memory.
    pub const fn new() -> Self {
        EngineMem([0; N])
    }
    /// The bytes, for [`Engine::init`].
    pub fn bytes(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl<const N: usize> Default for EngineMem<N> {
    fn default() -> Self {
        EngineMem::new()
    }
}

/// Bytes [`Engine::init`] needs for an engine of `cpus` CPUs, `max_as`
/// address spaces, `batch_pages`, `flush_ceiling` and `nodes` NUMA nodes (0
/// without a node table), as a constant (`TLBPOL_ENGINE_SIZE()` plus this
/// crate's callback context and alignment slack).  LP64; it changes with
/// each release of the library: recompile, never store it.
///
/// # Panics
/// If the size does not fit in `usize` (a 32-bit target and an engine of
/// 4 GiB or more): in a constant, such as `EngineMem<{ mem_size_for(..) }>`,
/// that is a compile error.  Never a truncated size.
pub const fn mem_size_for(cpus: u32, max_as: u32, batch_pages: u32, flush_ceiling: u32, nodes: u32) -> usize {
    // u32 to u64 widens, exactly (`u64::from` is not `const` on Rust 1.63).
    #[allow(clippy::cast_lossless)]
    let n = sys::TLBPOL_ENGINE_SIZE(cpus as u64, max_as as u64, batch_pages as u64, flush_ceiling as u64, nodes as u64);
    mem_total(n)
}

/// Bytes an [`EngineMem`] must have for [`Engine::init`] to build an
/// engine of `cpus` CPUs, `max_as` address spaces, `batch_pages`,
/// `flush_ceiling` and `nodes` NUMA nodes (0 without a node table) in it:
/// exactly `TLBPOL_ENGINE_SIZE()` and this crate's callback context in
/// front of the engine, since an `EngineMem` is 64-byte aligned.  A
/// `no_std` program reserves it statically:
///
/// ```
/// use tlbpol::{engine_mem_size, EngineMem};
/// static mut MEM: EngineMem<{ engine_mem_size(4, 64, 512, 33, 0) }> = EngineMem::new();
/// ```
///
/// One byte less and `init` fails with `Error::NoMemory`.  A plain byte
/// array, of any alignment, needs [`mem_size_for`] (63 bytes more).  LP64;
/// it changes with each release: recompile, never store it.
///
/// # Panics
/// As [`mem_size_for`], if the size does not fit in `usize` (a compile
/// error in a constant).
pub const fn engine_mem_size(cpus: u32, max_as: u32, batch_pages: u32, flush_ceiling: u32, nodes: u32) -> usize {
    mem_size_for(cpus, max_as, batch_pages, flush_ceiling, nodes) - ALIGN_SLACK
}

/// `engine + SHIM_SPACE + ALIGN_SLACK` bytes as a `usize`, or a panic
/// (a compile error in a constant) if that many bytes cannot be addressed.
const fn mem_total(engine: u64) -> usize {
    // `as` because `usize::try_from` is not `const` on Rust 1.63; the round
    // trip proves it exact, and anything else panics.
    #[allow(clippy::cast_possible_truncation)]
    let n = engine as usize;
    if n as u64 != engine {
        panic!("tlbpol: the engine size does not fit in usize");
    }
    match n.checked_add(SHIM_SPACE + ALIGN_SLACK) {
        Some(total) => total,
        None => panic!("tlbpol: the engine size does not fit in usize"),
    }
}

/// A TLB-flush policy engine driving host `H`.
///
/// Built in caller memory with [`Engine::init`] (`no_std`: no allocation
/// anywhere), or owning its memory with [`Engine::new`] (`std`).  `'m` is
/// the borrow of that memory and of the host; an owning engine is
/// `Engine<'static, H>`.
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
// Send; a borrowed one is &H, Send because H: Sync.
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
    /// configuration's (`Error::Invalid` for an unknown arch or rule bit or
    /// a zero flush ceiling; `Error::Range` for `nr_cpus`, `max_as`,
    /// `batch_pages` or a node out of range).
    pub fn init(cfg: &Config<'_>, host: &'m H, mem: &'m mut [u8]) -> Result<Engine<'m, H>> {
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
        let raw_cfg = cfg.complete(&o, shim_ptr.cast::<c_void>())?;
        let mut eng = ptr::null_mut();
        // SAFETY: eng_mem is 64-aligned with eng_len bytes of mem behind it,
        // which the engine borrows for 'm (the header's "stay valid and
        // untouched until the engine is no longer used": the Engine holds the
        // &'m mut, the shim in front of it is ours and outside it). raw_cfg is
        // a whole configuration whose node table complete() checked, whose ops
        // are this H's trampolines and whose ops_ctx is the shim just written,
        // which lives as long as mem (the trampolines' contract); the call
        // copies cfg and ops, and calls no callback.
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
        let host = Box::new(host);
        let shim = Box::new(Shim { host: &*host as *const H, eng: AtomicPtr::new(ptr::null_mut()) });
        let o = ops::<H>();
        let raw_cfg = cfg.complete(&o, &*shim as *const Shim<H> as *mut c_void)?;
        let mut eng = ptr::null_mut();
        // SAFETY: raw_cfg is a whole configuration whose node table complete()
        // checked; its ops_ctx is the boxed shim, which with the boxed host it
        // points to is kept in the Engine and dropped only after
        // tlbpol_engine_free() (Owned's field order; heap addresses do not
        // move with the Engine).  The call copies cfg and ops, calls no
        // callback, and writes only eng, a local.
        check(unsafe { sys::tlbpol_engine_new(&raw_cfg, &mut eng) })?;
        shim.eng.store(eng, Ordering::Release);
        Ok(Engine {
            raw: NonNull::new(eng).ok_or(Error::Invalid)?,
            nr_cpus: raw_cfg.nr_cpus,
            cpus_taken: AtomicBool::new(false),
            owned: Some(Owned { _shim: shim, _host: host }),
            _m: PhantomData,
        })
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
        // SAFETY: the engine is live, and &mut self means no token, address
        // space or other borrow of it is alive, so no call on it is in
        // flight: nothing holds the configuration this replaces, and the RCU
        // grace period the call waits for waits on no call of this engine.
        // (The header's "not from a callback" is for that wait: a callback of
        // this engine cannot get &mut of it, its call borrows the engine.)
        check(unsafe { sys::tlbpol_engine_set_rules(self.raw.as_ptr(), rules.0) }).map(drop)
    }

    /// `tlbpol_engine_set_flush_ceiling()` (see [`Engine::set_rules`]).
    pub fn set_flush_ceiling(&mut self, pages: u32) -> Result<()> {
        // SAFETY: the engine is live, and &mut self means no token, address
        // space or other borrow of it is alive, so no call on it is in
        // flight: nothing holds the configuration this replaces, and the RCU
        // grace period the call waits for waits on no call of this engine.
        // (The header's "not from a callback" is for that wait: a callback of
        // this engine cannot get &mut of it, its call borrows the engine.)
        check(unsafe { sys::tlbpol_engine_set_flush_ceiling(self.raw.as_ptr(), pages) }).map(drop)
    }

    /// `tlbpol_engine_set_batch_pages()`: 1 ..= the creation size.
    pub fn set_batch_pages(&mut self, pages: u32) -> Result<()> {
        // SAFETY: the engine is live, and &mut self means no token, address
        // space or other borrow of it is alive, so no call on it is in
        // flight: nothing holds the configuration this replaces, and the RCU
        // grace period the call waits for waits on no call of this engine.
        // (The header's "not from a callback" is for that wait: a callback of
        // this engine cannot get &mut of it, its call borrows the engine.)
        check(unsafe { sys::tlbpol_engine_set_batch_pages(self.raw.as_ptr(), pages) }).map(drop)
    }

    /// `tlbpol_engine_set_cost_model()`: the cost fields of `cfg` (0 keeps one).
    pub fn set_cost_model(&mut self, cfg: &Config<'_>) -> Result<()> {
        // SAFETY: the engine is live, and &mut self means no token, address
        // space or other borrow of it is alive, so no call on it is in
        // flight: nothing holds the configuration this replaces, and the RCU
        // grace period the call waits for waits on no call of this engine.
        // (The header's "not from a callback" is for that wait: a callback of
        // this engine cannot get &mut of it, its call borrows the engine.) cfg.raw() is a whole
        // configuration, only read (its cost fields).
        check(unsafe { sys::tlbpol_engine_set_cost_model(self.raw.as_ptr(), cfg.raw()) }).map(drop)
    }

    /// `tlbpol_engine_set_ipi_delay()`.
    pub fn set_ipi_delay(&mut self, spins: u32) -> Result<()> {
        // SAFETY: the engine is live, and &mut self means no token, address
        // space or other borrow of it is alive, so no call on it is in
        // flight: nothing holds the configuration this replaces, and the RCU
        // grace period the call waits for waits on no call of this engine.
        // (The header's "not from a callback" is for that wait: a callback of
        // this engine cannot get &mut of it, its call borrows the engine.)
        check(unsafe { sys::tlbpol_engine_set_ipi_delay(self.raw.as_ptr(), spins) }).map(drop)
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
            // shim it calls are dropped after this.
            unsafe { sys::tlbpol_engine_free(self.raw.as_ptr()) };
        }
    }
}

impl<'m, H: Host> fmt::Debug for Engine<'m, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").field("nr_cpus", &self.nr_cpus).field("rules", &self.rules()).finish()
    }
}

/// The iterator of [`Engine::take_cpus`]: one [`Cpu`] per CPU, in order.
pub struct Cpus<'e> {
    eng: NonNull<sys::tlbpol_engine>,
    next: u32,
    end: u32,
    _e: PhantomData<&'e ()>,
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
    eng: NonNull<sys::tlbpol_engine>,
    id: u32,
    _e: PhantomData<Cell<&'e ()>>,
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
    eng: NonNull<sys::tlbpol_engine>,
    raw: NonNull<sys::tlbpol_as>,
    _e: PhantomData<&'e ()>,
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
pub struct SpaceRef<'e>(AddressSpace<'e>);

#[cfg(feature = "std")]
impl<'e> Deref for SpaceRef<'e> {
    type Target = AddressSpace<'e>;
    fn deref(&self) -> &AddressSpace<'e> {
        &self.0
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

    #[test]
    fn mem_total_at_the_largest_size() {
        assert_eq!(mem_total(0), SHIM_SPACE + ALIGN_SLACK);
        let max = u64::try_from(usize::MAX).unwrap();
        let largest = max - u64::try_from(SHIM_SPACE + ALIGN_SLACK).unwrap();
        assert_eq!(mem_total(largest), usize::MAX);
    }

    #[test]
    #[should_panic(expected = "tlbpol: the engine size does not fit in usize")]
    fn mem_total_one_past_the_largest_size_panics() {
        let max = u64::try_from(usize::MAX).unwrap();
        mem_total(max - u64::try_from(SHIM_SPACE + ALIGN_SLACK).unwrap() + 1);
    }

    // Where usize is 32 bits, a u64 size above 4 GiB must not wrap to a
    // small buffer size.
    #[cfg(target_pointer_width = "32")]
    #[test]
    #[should_panic(expected = "tlbpol: the engine size does not fit in usize")]
    fn mem_total_past_usize_panics() {
        mem_total(1 << 32);
    }
}
