//! The host's side: the callbacks (`Host`) and what they receive (`Flush`,
//! `CpuSet`, `Here`); trampolines.rs holds the `extern "C"` functions the
//! engine calls, which hand each call to these.

use core::fmt;
use core::marker::PhantomData;

use tlbpol_sys as sys;

use crate::tags::TagFlush;
use crate::types::{check, FlushKind, Result};

/// A set of CPUs (`struct tlbpol_cpuset`): one bit per CPU, up to
/// `TLBPOL_MAX_CPUS`.  What [`Host::send_ipi`] is asked to interrupt.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct CpuSet(sys::tlbpol_cpuset);

impl CpuSet {
    /// The empty set.
    pub fn new() -> CpuSet {
        CpuSet(sys::tlbpol_cpuset::default())
    }

    /// A view of the C structure.
    pub fn from_raw(raw: &sys::tlbpol_cpuset) -> &CpuSet {
        // SAFETY: CpuSet is repr(transparent) over tlbpol_cpuset, so the
        // pointer is a valid, aligned CpuSet; the result has raw's lifetime
        // and is shared, as raw is.
        unsafe { &*(raw as *const sys::tlbpol_cpuset).cast::<CpuSet>() }
    }

    /// The C structure.
    pub fn raw(&self) -> &sys::tlbpol_cpuset {
        &self.0
    }

    /// Whether `cpu` is in the set (false for `cpu >= TLBPOL_MAX_CPUS`).
    pub fn contains(&self, cpu: u32) -> bool {
        // SAFETY: &self.0 is a valid set for the call, which only reads it and
        // takes any cpu (false past TLBPOL_MAX_CPUS).
        unsafe { sys::tlbpol_cpuset_test(&self.0, cpu) == 1 }
    }

    /// Adds `cpu` (ignored if `cpu >= TLBPOL_MAX_CPUS`).
    pub fn insert(&mut self, cpu: u32) {
        // SAFETY: &mut self.0 is a valid set, ours alone for the call, which
        // writes only inside it (ignoring cpu >= TLBPOL_MAX_CPUS).
        unsafe { sys::tlbpol_cpuset_set(&mut self.0, cpu) }
    }

    /// Removes `cpu`.
    pub fn remove(&mut self, cpu: u32) {
        // SAFETY: as in insert: an exclusive, valid set; any cpu is allowed.
        unsafe { sys::tlbpol_cpuset_clear(&mut self.0, cpu) }
    }

    /// Removes every CPU.
    pub fn clear(&mut self) {
        // SAFETY: an exclusive, valid set, which the call zeroes in place.
        unsafe { sys::tlbpol_cpuset_zero(&mut self.0) }
    }

    /// The number of CPUs in the set.
    pub fn len(&self) -> usize {
        // SAFETY: &self.0 is a valid set for the call, which only reads it.
        let n = unsafe { sys::tlbpol_cpuset_count(&self.0) };
        // 0 ..= TLBPOL_MAX_CPUS (never negative for a non-NULL set).
        usize::try_from(n).unwrap_or(0)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CPUs in the set, lowest first.
    pub fn iter(&self) -> CpuSetIter<'_> {
        CpuSetIter { set: self, last: -1 }
    }
}

impl Default for CpuSet {
    fn default() -> CpuSet {
        CpuSet::new()
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = u32;
    type IntoIter = CpuSetIter<'a>;
    fn into_iter(self) -> CpuSetIter<'a> {
        self.iter()
    }
}

/// The iterator of [`CpuSet::iter`].
#[derive(Clone, Debug)]
pub struct CpuSetIter<'a> {
    set: &'a CpuSet,
    last: sys::c_int,
}

impl<'a> Iterator for CpuSetIter<'a> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        // SAFETY: the set is borrowed for the iterator's life and only read;
        // self.last is -1 or a CPU the call returned (or, exhausted, one past
        // every CPU), all values it takes.
        let n = unsafe { sys::tlbpol_cpuset_next(&self.set.0, self.last) };
        match u32::try_from(n) {
            Ok(cpu) => {
                self.last = n;
                Some(cpu)
            }
            Err(_) => {
                // -1: none left; stay exhausted (any start at or past
                // TLBPOL_MAX_CPUS finds nothing).
                self.last = sys::c_int::try_from(sys::TLBPOL_MAX_CPUS).unwrap_or(sys::c_int::MAX);
                None
            }
        }
    }
}

/// Pages `va .. va + nr_pages << page_shift` (`struct tlbpol_range`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct Range(sys::tlbpol_range);

impl Range {
    /// First address.
    pub fn va(&self) -> u64 {
        self.0.va
    }
    /// Number of pages.
    pub fn nr_pages(&self) -> u64 {
        self.0.nr_pages
    }
    /// log2 of the page size.
    pub fn page_shift(&self) -> u32 {
        self.0.page_shift
    }
    /// The address of each page.
    pub fn pages(&self) -> impl Iterator<Item = u64> {
        let (va, shift) = (self.0.va, self.0.page_shift);
        (0..self.0.nr_pages).map(move |i| va + (i << shift))
    }
}

impl fmt::Debug for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}+{}x{}", self.0.va, self.0.nr_pages, 1u64 << self.0.page_shift)
    }
}

/// One flush to perform on one CPU (`struct tlbpol_flush`), valid during the
/// callback that receives it.  See "Tagged flushes" in the header for which
/// instruction does what.
pub struct Flush<'a> {
    raw: &'a sys::tlbpol_flush,
}

impl<'a> Flush<'a> {
    /// A view of the C structure.
    ///
    /// # Safety
    /// `raw.ranges` must point to `raw.nr_ranges` ranges valid for `'a`
    /// (as the engine's are during a callback), or `nr_ranges` be 0.
    pub unsafe fn from_raw(raw: &'a sys::tlbpol_flush) -> Flush<'a> {
        Flush { raw }
    }

    /// The caller's tag of the address space (PCID, ASID, VMID...): compare
    /// it with the current one; a different one is flushed by its tag.
    pub fn as_tag(&self) -> u64 {
        self.raw.as_tag
    }

    /// What the flush covers.  A kind these bindings do not know (a newer
    /// library) reads as `FlushKind::All`: flushing more is always safe.
    pub fn kind(&self) -> FlushKind {
        FlushKind::from_raw(self.raw.kind).unwrap_or(FlushKind::All)
    }

    /// `TLBPOL_FLUSHF_TABLES`: paging-structure caches too.
    pub fn tables(&self) -> bool {
        self.raw.flags & sys::TLBPOL_FLUSHF_TABLES != 0
    }

    /// `TLBPOL_FLUSHF_GLOBAL`: the pages may be cached as global entries
    /// (or, where invalid entries are cached, under any tag).
    pub fn global(&self) -> bool {
        self.raw.flags & sys::TLBPOL_FLUSHF_GLOBAL != 0
    }

    /// The ranges of a `FlushKind::Pages` flush (sorted, merged); empty for
    /// the other kinds.
    pub fn ranges(&self) -> &'a [Range] {
        // A count no slice can have here (a u32 past usize: 16-bit targets
        // only) reads as none rather than as fewer ranges than there are.
        let n = match usize::try_from(self.raw.nr_ranges) {
            Ok(n) if n != 0 && !self.raw.ranges.is_null() => n,
            _ => return &[],
        };
        // SAFETY: from_raw's contract: ranges points to nr_ranges ranges valid
        // for 'a (the engine's, until the callback returns, which 'a cannot
        // outlive), which nobody writes meanwhile; Range is repr(transparent)
        // over tlbpol_range.
        unsafe { core::slice::from_raw_parts(self.raw.ranges.cast::<Range>(), n) }
    }

    /// The C structure.
    pub fn raw(&self) -> &'a sys::tlbpol_flush {
        self.raw
    }
}

impl fmt::Debug for Flush<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flush")
            .field("as_tag", &self.as_tag())
            .field("kind", &self.kind())
            .field("tables", &self.tables())
            .field("global", &self.global())
            .field("ranges", &self.ranges())
            .finish()
    }
}

/// The CPU a callback runs on, for the duration of the callback.
///
/// Besides the CPU's number it carries the one engine call a callback may
/// make for its own CPU: [`Here::handle_ipi`] (a host that delivers
/// interrupts by polling serves them from [`Host::relax`]).  It is neither
/// `Send` nor `Sync`, and lives only as long as the callback's borrow: it
/// cannot leave the CPU's thread or outlive the call.
pub struct Here<'a> {
    pub(crate) eng: *mut sys::tlbpol_engine,
    pub(crate) cpu: u32,
    pub(crate) _call: PhantomData<&'a ()>,
}

impl<'a> Here<'a> {
    /// The CPU's number.
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    /// `tlbpol_handle_ipi()` for this CPU, nested in the engine call that
    /// invoked the callback: serves what that call is not serving already.
    /// Returns the number of requests served.
    pub fn handle_ipi(&self) -> Result<u32> {
        // SAFETY: a Here exists only inside a callback the engine made for
        // self.cpu, on that CPU's thread (it is neither Send nor Sync and
        // cannot outlive the callback), so eng is live and the call is the one
        // nested call the header allows for a CPU from its callbacks.
        check(unsafe { sys::tlbpol_handle_ipi(self.eng, self.cpu) })
    }
}

impl fmt::Debug for Here<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Here(cpu {})", self.cpu)
    }
}

/// The host's hooks (`struct tlbpol_ops`): how the engine drives the
/// hardware.
///
/// `Sync` because the engine calls them from every CPU at once.  They run
/// inside engine calls made through a [`Cpu`](crate::Cpu) token, on that
/// token's thread (`send_ipi`, `broadcast`, `bcast_issue`, `bcast_sync`,
/// `walker_sync` and `remote_action` on the initiator's, `flush_local` on
/// the CPU being flushed, `relax` and `stuck` on the waiting one,
/// `load_tag` on the CPU that moves onto a global tag).  A
/// callback must not call the engine for its own CPU except through
/// [`Here::handle_ipi`] (the token is borrowed by the call in progress,
/// and the engine would answer `Busy`).
///
/// Panics never cross into C: under `std` a panicking callback aborts the
/// process (after the panic message); without `std`, a guard panics again
/// while unwinding, which aborts, so build a `no_std` kernel with
/// `panic = "abort"` or a panic handler that does not unwind.
///
/// The optional hooks are registered only when their `HAS_*` constant is
/// true, since the engine behaves differently without them (no broadcast
/// rule without `broadcast`, the split broadcast or `remote_action`; CPUs
/// move onto a global tag only at their switches without `load_tag`).
pub trait Host: Sync {
    /// Flush this CPU's TLB as `flush` says (invlpg, INVPCID, a CR3 write,
    /// TLBI ...).  Runs on `cpu` itself.  Required.
    fn flush_local(&self, cpu: &Here<'_>, flush: &Flush<'_>);

    /// Interrupt each CPU in `targets`; each one's interrupt handler then
    /// calls [`Cpu::handle_ipi`](crate::Cpu::handle_ipi).  Runs on `from`,
    /// the initiator.  Required.
    fn send_ipi(&self, from: &Here<'_>, targets: &CpuSet);

    /// Whether [`Host::broadcast`] is implemented (`ops->broadcast` is set).
    const HAS_BROADCAST: bool = false;
    /// A flush that reaches every CPU, the caller included, whatever they
    /// run, without interrupts, complete on return (INVLPGB+TLBSYNC, TLBI
    /// IS + DSB, a flush hypercall).  Used under `Rules::BROADCAST` when
    /// the cost model prefers it; only if `HAS_BROADCAST`.  One that
    /// matches a tag (INVLPGB with its PCID bit, TLBI by ASID) fits only
    /// where the address space has that tag on every CPU: see
    /// `ops->broadcast` in `tlbpol.h`.
    fn broadcast(&self, from: &Here<'_>, flush: &Flush<'_>) {
        let _ = (from, flush);
    }

    /// Whether [`Host::bcast_issue`] and [`Host::bcast_sync`] are
    /// implemented (`ops->bcast_issue` and `ops->bcast_sync` are set,
    /// together; release 0.3).  Preferred over [`Host::broadcast`] when
    /// both are there, unless a [`Backend`](crate::Backend) descriptor
    /// says otherwise.
    const HAS_SPLIT_BROADCAST: bool = false;
    /// The first half of a split-phase broadcast (INVLPGB without its
    /// TLBSYNC, TLBI ...IS without its DSB ISH): start invalidating `flush`
    /// on every CPU it reaches and return without waiting.  The engine may
    /// issue several before one [`Host::bcast_sync`].  The same rules of
    /// reach as [`Host::broadcast`] (tags, `Flush::global`).  Only if
    /// `HAS_SPLIT_BROADCAST`.
    fn bcast_issue(&self, here: &Here<'_>, flush: &Flush<'_>) {
        let _ = (here, flush);
    }
    /// The second half: return when every invalidation `here` issued with
    /// [`Host::bcast_issue`] has completed on every CPU (TLBSYNC, DSB
    /// ISH).  The engine calls it on the CPU that issued, inside the same
    /// engine call, before it counts any of them done: TLBSYNC and DSB
    /// complete only their own CPU's invalidations, so the caller must not
    /// migrate between the two (a [`Cpu`](crate::Cpu) token's call runs
    /// on its CPU).  Only if `HAS_SPLIT_BROADCAST`.
    fn bcast_sync(&self, here: &Here<'_>) {
        let _ = here;
    }

    /// Whether [`Host::walker_sync`] is implemented (`ops->walker_sync` is
    /// set; release 0.3).
    const HAS_WALKER_SYNC: bool = false;
    /// Under [`Config::lockless_walkers`](crate::Config::lockless_walkers):
    /// page tables were freed and invalidated by a mechanism that
    /// interrupts nobody (a broadcast); return only when none of `cpus` is
    /// still inside a lockless walk that began before this call (an
    /// interrupt to each and a wait for it, as Linux's
    /// `tlb_remove_table_sync_one()`, or an RCU grace period).  Runs on
    /// `here`, the initiator, inside the same engine call, as
    /// [`Host::relax`] does.  Without it the engine never uses such a
    /// mechanism for a request that frees tables, and interrupts the CPUs
    /// instead.  Only if `HAS_WALKER_SYNC`.
    fn walker_sync(&self, here: &Here<'_>, cpus: &CpuSet) {
        let _ = (here, cpus);
    }

    /// Whether [`Host::remote_action`] is implemented (`ops->remote_action`
    /// is set; release 0.3).
    const HAS_REMOTE_ACTION: bool = false;
    /// A targeted flush that runs no code on its targets and is complete
    /// on return (Intel RAR: a payload and an action vector, waiting for
    /// each target's completion; an SBI remote fence,
    /// `sbi_remote_sfence_vma_asid()`): perform `flush` on every CPU in
    /// `targets` (never `from`, the initiator, which the engine flushes
    /// through [`Host::flush_local`]), whatever they run.  Used under
    /// `Rules::BROADCAST` when the cost model prefers it
    /// ([`Mechanism::Remote`](crate::Mechanism::Remote)).  A CPU left out
    /// of `targets` (idle, lazy, preempted, up to date) catches up by
    /// itself, as with interrupts; a target's flushed generation does not
    /// move, so it may flush once more at its next switch.  Under
    /// [`Config::lockless_walkers`](crate::Config::lockless_walkers) it
    /// counts as interrupting nobody.  Runs on `from`, inside the engine
    /// call, as [`Host::send_ipi`] does.  Only if `HAS_REMOTE_ACTION`.
    fn remote_action(&self, from: &Here<'_>, targets: &CpuSet, flush: &Flush<'_>) {
        let _ = (from, targets, flush);
    }

    /// Whether [`Host::load_tag`] is implemented (`ops->load_tag` is set;
    /// release 0.3).
    const HAS_LOAD_TAG: bool = false;
    /// With a tag allocator of per-CPU slots and global tags
    /// ([`TagsConfig::global_tags`](crate::TagsConfig::global_tags), given
    /// to [`Engine::init_with_tags`](crate::Engine::init_with_tags)): load
    /// `tag` for the address space `here` runs, now, with the same page
    /// tables, after the flush `flush` asks for ([`TagFlush::None`] or
    /// [`TagFlush::All`], as [`Cpu::switch_tag`](crate::Cpu::switch_tag)
    /// says them): x86 a CR3 write of the same tables with PCID `tag` and
    /// bit 63 set.  The engine calls it when the address space has been
    /// given a global tag since this CPU loaded it under a slot: from
    /// [`Cpu::handle_ipi`](crate::Cpu::handle_ipi) (not from
    /// [`Here::handle_ipi`], nested in another engine call), from
    /// [`Cpu::tick`](crate::Cpu::tick), and at the end of a
    /// [`Cpu::submit`](crate::Cpu::submit) that shot down or of a
    /// [`Cpu::flush`](crate::Cpu::flush) (never from a switch or
    /// [`Cpu::set_state`](crate::Cpu::set_state)), so that the CPU moves
    /// onto the global tag before its next switch and broadcasts by it
    /// reach the CPU from then on instead of interrupts (Linux's
    /// `flush_tlb_func()` does the same).
    ///
    /// The entries the CPU keeps under its slot become unreachable; those
    /// under `tag` are current.  The engine counts the CPU on `tag` once
    /// this returns: it must not return before the CPU runs under `tag`,
    /// and the CPU touches no user address in between.  Without it a CPU
    /// moves at its next switch.  Runs on `here`, inside the engine call
    /// named above, on that [`Cpu`](crate::Cpu) token's thread; interrupts
    /// off in the first two.  A flush code these bindings do not know (a
    /// library newer than this crate) reads as `TagFlush::All`: flushing
    /// more is always safe.  Only if `HAS_LOAD_TAG`.
    fn load_tag(&self, here: &Here<'_>, tag: u32, flush: TagFlush) {
        let _ = (here, tag, flush);
    }

    /// Called while `cpu` waits for other CPUs: pause, yield, or take this
    /// CPU's own interrupts through `cpu.handle_ipi()`.  Must return.  The
    /// default is a spin-loop hint.
    fn relax(&self, cpu: &Here<'_>) {
        let _ = cpu;
        core::hint::spin_loop();
    }

    /// Whether [`Host::vcpu_defer`] is implemented (`ops->vcpu_defer` is set).
    const HAS_VCPU_DEFER: bool = false;
    /// For an engine inside a guest, under `Rules::VCPU_DEFER`: may the
    /// shootdown leave out vCPU `cpu` (not running, and the hypervisor
    /// promised to flush it before it runs)?  Only if `HAS_VCPU_DEFER`.
    fn vcpu_defer(&self, cpu: u32) -> bool {
        let _ = cpu;
        false
    }

    /// Whether [`Host::stuck`] is implemented (`ops->stuck` is set).
    const HAS_STUCK: bool = false;
    /// The watchdog (with `Config::wait_limit`): `cpu` has waited `turns`
    /// turns for `waiting_for`, which the engine has just interrupted
    /// again.  Log, re-send, or panic (which aborts); the engine keeps
    /// waiting when this returns.  Only if `HAS_STUCK`.
    fn stuck(&self, cpu: &Here<'_>, waiting_for: &CpuSet, turns: u64) {
        let _ = (cpu, waiting_for, turns);
    }
}
