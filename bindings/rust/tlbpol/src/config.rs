//! How to build an engine: its configuration.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not, Sub};
use core::ptr;

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::host::Host;
use crate::trampolines::ops;
use crate::types::{bits, c_enum, check, setters, size_field, Arch, Error, Result, Rules};
#[cfg(doc)]
use crate::Engine;

c_enum! {
    /// `TLBPOL_MECH_*`: how a shootdown reaches other CPUs.
    ///
    /// - `Ipi`: interrupts ([`Host::send_ipi`]); each target flushes in
    ///   its handler and acknowledges.  Always there.
    /// - `Broadcast`: one invalidation that reaches every CPU with no
    ///   interrupt: [`Host::bcast_issue`] and [`Host::bcast_sync`] (split
    ///   phase), or [`Host::broadcast`] (complete on return).
    /// - `Remote` (release 0.3): a targeted flush that runs no code on its
    ///   targets ([`Host::remote_action`]: Intel RAR, an SBI remote fence).
    Mechanism {
        Ipi = TLBPOL_MECH_IPI, Broadcast = TLBPOL_MECH_BROADCAST, Remote = TLBPOL_MECH_REMOTE,
    }
}

bits! {
    /// Backend flags (`TLBPOL_BKF_*`), of a [`Backend`].
    ///
    /// - `IMPLIES_IRQ`: every CPU the mechanism reaches has taken an
    ///   interrupt before it completes, so a lockless walker that holds
    ///   interrupts off is out of any walk begun before it.  Interrupts
    ///   always have it; INVLPGB, TLBI IS, RAR, SBI remote fences and
    ///   flush hypercalls do not.
    /// - `SPLIT`: issue and sync are two steps ([`Host::bcast_issue`],
    ///   [`Host::bcast_sync`]), both on the issuing CPU.
    /// - `DISABLED`: the host found the mechanism unusable (an erratum, a
    ///   configuration, a command line): the engine never uses it.
    /// - `ALL`: every flag this version knows; any other bit is refused
    ///   (`Error::Invalid`).
    BackendFlags(u32) {
        IMPLIES_IRQ = TLBPOL_BKF_IMPLIES_IRQ, SPLIT = TLBPOL_BKF_SPLIT, DISABLED = TLBPOL_BKF_DISABLED,
        ALL = TLBPOL_BKF_ALL,
    }
}

/// One flush mechanism the host has, and what it costs (`struct
/// tlbpol_backend`, release 0.3): handed to the engine by
/// [`Config::backends`], which the engine copies when it is built.
///
/// The descriptors are the one source of the cost model: a zero cost takes
/// the [`Config`]'s (`ipi_cost`, `broadcast_cost`), which takes its
/// default when zero, so a host without descriptors keeps release 0.2's
/// model.  The engine checks each descriptor when it is built
/// (`Error::Invalid` for a flag its mechanism cannot have, such as `SPLIT`
/// on `Ipi` or `Remote`, or a broadcast or remote action whose hooks the
/// [`Host`] lacks unless `DISABLED`; `Error::Exists` for two of one
/// mechanism).  Its `size` is
/// always `sizeof(struct tlbpol_backend)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Backend {
    raw: sys::tlbpol_backend,
}

/// `sizeof(struct tlbpol_backend)` as its `size` field says it.
const BACKEND_SIZE: u32 = size_field(core::mem::size_of::<sys::tlbpol_backend>());

impl Backend {
    /// A descriptor of `mech` with no flags, `max_pages` 0 (one page per
    /// instruction) and every cost 0 (the configuration's).
    pub fn new(mech: Mechanism) -> Backend {
        Backend { raw: sys::tlbpol_backend { size: BACKEND_SIZE, mech: mech.raw(), ..Default::default() } }
    }
    setters! {
        Self;
        /// `TLBPOL_BKF_*`.  `Ipi` may have only `IMPLIES_IRQ` (which
        /// interrupts have whether it is set or not); for `Broadcast`,
        /// `SPLIT` asks for [`Host::bcast_issue`] and [`Host::bcast_sync`],
        /// its absence for [`Host::broadcast`]; `Remote` needs
        /// [`Host::remote_action`] (unless `DISABLED`) and is never
        /// `SPLIT`.
        flags(flags: BackendFlags) => flags = flags.0;
        /// Pages one instruction of the mechanism names at most (INVLPGB:
        /// `invlpgb_count_max`; Arm TLBI by range: up to 2^21; 0 means 1).
        /// The cost model counts ceil(pages / `max_pages`) instructions per
        /// range.
        max_pages(pages: u32) => max_pages = pages;
        /// `Ipi`: the initiator's cost for the first target; `Broadcast`:
        /// the fixed cost of one request, issue and sync; `Remote`: the
        /// first target (ns; 0: the configuration's; for `Remote`, what
        /// interrupts cost, and a tie with them goes to the remote action,
        /// which spares the targets theirs).
        cost_ns(ns: u32) => cost_ns = ns;
        /// `Ipi` and `Remote`: each further target (ns; 0: the
        /// configuration's interrupt cost).
        cost_target_ns(ns: u32) => cost_target_ns = ns;
        /// `Ipi`: more for each target on another NUMA node (ns; 0: the
        /// configuration's).
        cost_remote_ns(ns: u32) => cost_remote_ns = ns;
        /// `Broadcast`: each instruction (ns; 0: the configuration's);
        /// `Remote`: each payload of `max_pages` pages (RAR names 63 pages
        /// in one; 0: nothing).
        cost_page_ns(ns: u32) => cost_page_ns = ns;
    }
    /// The C structure.
    pub fn raw(&self) -> &sys::tlbpol_backend {
        &self.raw
    }
}

/// What the host timed at boot (`struct tlbpol_calibration`, release 0.3),
/// for [`Config::calibrate`]: the costs of the primitives a shootdown is
/// made of.  Every time is in one unit, the same for all (ns, or TSC
/// cycles where the TSC rate is unknown): the cost model only compares
/// them.
///
/// [`Calibration::new`] has every measurement 0; `ipi_round_trip`,
/// `inval_page`, `full_flush` and `refill` are required (nonzero:
/// [`Config::calibrate`] answers `Error::Invalid` otherwise), the others
/// may stay 0, which takes the default each setter names.  The values
/// reach C as given (`u64` times, `u32` counts; the library saturates its
/// sums and caps the costs at `u32::MAX`); its `size` is always
/// `sizeof(struct tlbpol_calibration)` and its `pad` 0.
///
/// ```
/// use tlbpol::{Arch, Calibration, Config};
/// // Dave Hansen's Haswell figures, in cycles (Linux 611ae8e3f520).
/// let m = Calibration::new().ipi_round_trip(2000).inval_page(250).full_flush(2283).refill(250);
/// let mut cfg = Config::new(4, Arch::X86_64);
/// let (ipi, bcast) = cfg.calibrate(&m)?;
/// assert_eq!(cfg.raw().flush_ceiling, 36);
/// assert_eq!((ipi.raw().cost_ns, ipi.raw().cost_target_ns), (2000, 200));
/// assert!(bcast.is_none()); // no broadcast measured
/// # Ok::<(), tlbpol::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    raw: sys::tlbpol_calibration,
}

/// `sizeof(struct tlbpol_calibration)` as its `size` field says it.
const CALIBRATION_SIZE: u32 = size_field(core::mem::size_of::<sys::tlbpol_calibration>());

impl Calibration {
    /// Every measurement 0 (the four required ones must then be set).
    pub fn new() -> Calibration {
        Calibration { raw: sys::tlbpol_calibration { size: CALIBRATION_SIZE, ..Default::default() } }
    }
    setters! {
        Self;
        /// TLB entries a CPU uses again soon after a whole flush (its
        /// working set: what a whole flush costs beyond the pages a ranged
        /// one names); 0 takes 64.
        refill_entries(entries: u32) => refill_entries = entries;
        /// One interrupt to one other CPU, from the send to seeing its
        /// handler's acknowledgement.  Required.
        ipi_round_trip(t: u64) => ipi_round_trip = t;
        /// The sender's part for each further target (an ICR write); 0
        /// takes a tenth of `ipi_round_trip`.
        ipi_send(t: u64) => ipi_send = t;
        /// What a target spends taking the interrupt (entry, handler's
        /// return, EOI), added to each further target's cost where the
        /// host weighs its targets' time as well as the initiator's; 0:
        /// the initiator's time only.
        irq_entry_exit(t: u64) => irq_entry_exit = t;
        /// Invalidating one page locally (INVLPG, TLBI VAE1 with its DSB,
        /// SFENCE.VMA va).  Required.
        inval_page(t: u64) => inval_page = t;
        /// A whole local flush (a CR3 write, TLBI ASIDE1).  Required.
        full_flush(t: u64) => full_flush = t;
        /// Refilling one entry a flush removed (a TLB miss's walk from
        /// cached page tables).  Required.
        refill(t: u64) => refill = t;
        /// One broadcast invalidation instruction issued (INVLPGB, TLBI
        /// ...IS), or 0 when the machine has none.
        bcast_issue(t: u64) => bcast_issue = t;
        /// Waiting for the broadcasts issued to complete (TLBSYNC, DSB
        /// ISH), or the whole of a synchronous broadcast (a hypercall); 0:
        /// no broadcast.
        bcast_sync(t: u64) => bcast_sync = t;
        /// Pages one broadcast instruction names (INVLPGB's count; 1
        /// without TLBI ranges); 0 for 1.
        bcast_max_pages(pages: u32) => bcast_max_pages = pages;
    }
    /// The C structure.
    pub fn raw(&self) -> &sys::tlbpol_calibration {
        &self.raw
    }
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::new()
    }
}

/// The number of backend descriptors as `cfg->nr_backends`: `Error::Range`
/// for a count a `u32` cannot hold, never a truncated one.
fn backend_count(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| Error::Range)
}

/// How to build an engine (`struct tlbpol_config`): the defaults of
/// `tlbpol_config_init()`, then adjusted by the builder methods.
///
/// `'n` is the borrow of the NUMA node table and of the backend
/// descriptors, if given; the engine copies them, so they need only live
/// until the engine is built.
#[derive(Clone, Copy)]
pub struct Config<'n> {
    raw: sys::tlbpol_config,
    nodes: Option<&'n [u16]>,
    backends: Option<&'n [&'n Backend]>,
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
        // (cpu_node, ops, ops_ctx, backends), for which all-zero bytes are
        // valid.
        let raw = unsafe { raw.assume_init() };
        Config { raw, nodes: None, backends: None }
    }
}

impl<'n> Config<'n> {
    setters! {
        Self;
        /// The rule mask (unknown bits make the engine refuse: `Error::Invalid`).
        rules(rules: Rules) => rules = rules.0;
        /// Address spaces open at once, 1 ..= `TLBPOL_MAX_AS`.
        max_as(n: u32) => max_as = n;
        /// Pages per address space above which one whole-AS flush is used (>= 1).
        flush_ceiling(pages: u32) => flush_ceiling = pages;
        /// Deferred pages a CPU holds before it flushes by itself,
        /// 1 ..= `TLBPOL_MAX_BATCH_PAGES`.
        batch_pages(pages: u32) => batch_pages = pages;
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
    /// `TLBPOL_CFGF_LOCKLESS_WALKERS` (release 0.3): the host walks page
    /// tables without locks, holding interrupts off across the walk (Linux
    /// GUP-fast), and relies on the engine to keep freed table pages from
    /// such walks: a request that frees tables completes only when every
    /// CPU that may be walking has taken an interrupt, served the request
    /// from an engine call, or, after a mechanism without
    /// `BackendFlags::IMPLIES_IRQ`, been waited for by
    /// [`Host::walker_sync`].  Without that hook such a request goes by
    /// interrupts; a preempted vCPU is not left out of it, and
    /// `EventFlags::LAZY_OK` does not make it lazy.
    ///
    /// [`Host::walker_sync`]: crate::Host::walker_sync
    pub fn lockless_walkers(self, on: bool) -> Self {
        self.config_flag(sys::TLBPOL_CFGF_LOCKLESS_WALKERS, on)
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
    pub fn cpu_node<'b>(self, nodes: &'b [u16]) -> Config<'b>
    where
        'n: 'b,
    {
        Config { raw: self.raw, nodes: Some(nodes), backends: self.backends }
    }
    /// The descriptors of the host's flush mechanisms (`cfg->backends` and
    /// `cfg->nr_backends`, release 0.3; copied when the engine is built),
    /// at most one per [`Mechanism`].  A mechanism without one is
    /// described by the [`Host`]'s hooks and the cost fields: interrupts
    /// always, a broadcast when the host has one.  As in C, the list is of
    /// pointers: `&[&ipi, &broadcast]`.  Errors, when the engine is built:
    /// see [`Backend`]; `Error::Range` for more than `TLBPOL_MECH_MAX`
    /// (or more than a `u32` counts, refused here).
    pub fn backends<'b>(self, list: &'b [&'b Backend]) -> Config<'b>
    where
        'n: 'b,
    {
        Config { raw: self.raw, nodes: self.nodes, backends: Some(list) }
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
    setters! {
        Self;
        /// With `Rules::POLLING_CPUS`: turns an initiator waits for polling
        /// targets before it interrupts them (0: at once).
        ipi_delay_spins(turns: u32) => ipi_delay_spins = turns;
        /// The watchdog: every `turns` turns of a wait, interrupt the laggards
        /// again and call [`Host::stuck`] (0: never).
        wait_limit(turns: u32) => wait_limit = turns;
        /// Ticks after which BY_WRITEBACK / BY_FREE work completes by itself
        /// (0: the default, 2; `TLBPOL_FREE_TICKS_NEVER`: only by `Cpu::flush`).
        free_ticks(ticks: u32) => free_ticks = ticks;
    }
    /// `tlbpol_cost_calibrate()` (release 0.3): the cost model and the flush
    /// ceiling from what the host measured.  Writes this configuration's
    /// cost fields (those of [`Config::ipi_cost`] and
    /// [`Config::broadcast_cost`]) and its flush ceiling, nothing else, and
    /// returns the descriptors the costs give, for [`Config::backends`]:
    /// interrupts (`Mechanism::Ipi`, no flags), and, when `m` has a
    /// broadcast (`bcast_sync` > 0), the broadcast (`Mechanism::Broadcast`,
    /// no flags: add `BackendFlags::SPLIT` where the host splits it).
    ///
    /// The derivations, which may be overridden afterwards: the first
    /// interrupt target costs `ipi_round_trip`, each further one `ipi_send`
    /// (plus `irq_entry_exit` if given); a broadcast `bcast_issue +
    /// bcast_sync` fixed and `bcast_issue` per instruction; the flush
    /// ceiling is the most pages N with N x (`inval_page` + `refill`) <=
    /// `full_flush` + `refill` x `refill_entries`, 1 ..= 4096.  The
    /// library's sums and products saturate at `u64::MAX`, and costs above
    /// `u32::MAX` are capped there (the configuration's fields are
    /// 32-bit).
    ///
    /// Errors, with the configuration unchanged: `Error::Invalid` for a
    /// required measurement 0.  (The library's `-E2BIG`, for a `size`
    /// larger than its structure with nonzero bytes past it, cannot
    /// happen: the size is this header's.)
    pub fn calibrate(&mut self, m: &Calibration) -> Result<(Backend, Option<Backend>)> {
        let mut ipi = sys::tlbpol_backend::default();
        let mut bcast = sys::tlbpol_backend::default();
        // SAFETY: m.raw is a whole tlbpol_calibration whose size is this
        // header's and whose pad is 0; the library takes any measurements
        // (a required one 0 is its -EINVAL, its sums saturate, so nothing
        // wraps into a zero divisor); self.raw is a whole configuration of
        // this header's size (tlbpol_config_init()'s), ipi and bcast
        // writable descriptors; all outlive the call, which reads m.raw,
        // writes only the cost fields and flush_ceiling of self.raw (plain
        // u32s: any value is valid) and the descriptors, keeps no pointer,
        // calls no callback, and may run anywhere.
        check(unsafe { sys::tlbpol_cost_calibrate(&m.raw, &mut self.raw, &mut ipi, &mut bcast) })?;
        // The library zeroes the broadcast descriptor when m has none.
        let bcast = if bcast.size == 0 { None } else { Some(Backend { raw: bcast }) };
        Ok((Backend { raw: ipi }, bcast))
    }
    /// The C structure (its `ops`, `ops_ctx`, `cpu_node`, `backends` and
    /// `nr_backends` are set when an engine is built from it).
    pub fn raw(&self) -> &sys::tlbpol_config {
        &self.raw
    }

    /// The C structure with the node table, backend descriptors and
    /// callbacks filled in; `Error::Invalid` for a node table shorter than
    /// `nr_cpus` (the engine would read past it), `Error::Range` for more
    /// descriptors than a `u32` counts.  Its pointers borrow `self`'s.
    pub(crate) fn complete(&self, ops: *const sys::tlbpol_ops, ctx: *mut c_void) -> Result<sys::tlbpol_config> {
        let mut raw = self.raw;
        if let Some(n) = self.nodes {
            // A count past usize (16-bit targets) is longer than any slice.
            let need = usize::try_from(raw.nr_cpus).map_err(|_| Error::Invalid)?;
            if n.len() < need {
                return Err(Error::Invalid);
            }
            raw.cpu_node = n.as_ptr();
        }
        if let Some(list) = self.backends {
            raw.nr_backends = backend_count(list.len())?;
            // An array of pointers to the descriptors, as C wants it: a
            // `&Backend` is a non-null `*const Backend`, and Backend is
            // repr(transparent) over tlbpol_backend.  None: NULL.
            raw.backends =
                if list.is_empty() { ptr::null() } else { list.as_ptr().cast::<*const sys::tlbpol_backend>() };
        }
        raw.ops = ops;
        raw.ops_ctx = ctx;
        Ok(raw)
    }

    /// `tlbpol_engine_size()`: bytes the engine itself needs; 0 for an
    /// invalid configuration.  [`Engine::mem_size`] adds what
    /// [`Engine::init`] needs besides.  The backend descriptors are held
    /// against the host's hooks only by [`Engine::init`], which knows the
    /// host: here against a host that has every hook.
    pub fn engine_size(&self) -> usize {
        // Any ops will do for sizing; the engine only checks they are set
        // (every optional one too: a descriptor that needs a hook is the
        // host's to answer for, at init).
        let o = ops::<NoHost>();
        match self.complete(&o, ptr::null_mut()) {
            // SAFETY: raw is a whole configuration of this header's size, and
            // complete() checked its node table holds nr_cpus entries (the
            // call reads them) and pointed backends at nr_backends pointers
            // to whole descriptors, borrowed by self; they and o outlive the
            // call, which only reads them, may run anywhere, and calls no
            // callback (ops and a NULL ops_ctx are only checked for being set).
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
            .field("backends", &self.backends)
            .finish()
    }
}

/// A host that is never called: only to size a configuration.  It has
/// every optional hook, so that no backend descriptor fails for want of one.
struct NoHost;
impl Host for NoHost {
    fn flush_local(&self, _: &crate::Here<'_>, _: &crate::Flush<'_>) {}
    fn send_ipi(&self, _: &crate::Here<'_>, _: &crate::CpuSet) {}
    const HAS_BROADCAST: bool = true;
    const HAS_SPLIT_BROADCAST: bool = true;
    const HAS_WALKER_SYNC: bool = true;
    const HAS_REMOTE_ACTION: bool = true;
    const HAS_LOAD_TAG: bool = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_count_is_refused_never_truncated() {
        assert_eq!(backend_count(0), Ok(0));
        assert_eq!(backend_count(3), Ok(3));
        let max = usize::try_from(u32::MAX).unwrap();
        assert_eq!(backend_count(max), Ok(u32::MAX));
        #[cfg(target_pointer_width = "64")]
        {
            assert_eq!(backend_count(max + 1), Err(Error::Range), "one past: refused, not 0");
            assert_eq!(backend_count((1 << 32) + 2), Err(Error::Range), "not 2");
        }
    }

    /// The cost fields and the flush ceiling, which `calibrate` writes.
    fn costs(c: &Config<'_>) -> [u32; 6] {
        let r = c.raw();
        [
            r.flush_ceiling,
            r.cost_ipi_ns,
            r.cost_ipi_target_ns,
            r.cost_ipi_remote_ns,
            r.cost_broadcast_ns,
            r.cost_broadcast_page_ns,
        ]
    }

    #[test]
    fn calibration_reaches_c_as_given() {
        let m = Calibration::new()
            .ipi_round_trip((1 << 32) + 5)
            .inval_page(1 << 32)
            .refill(1 << 32)
            .full_flush(1 << 40)
            .bcast_issue((1 << 32) + 7)
            .bcast_sync(1)
            .bcast_max_pages(u32::MAX);
        assert_eq!(usize::try_from(m.raw().size).unwrap(), core::mem::size_of::<sys::tlbpol_calibration>());
        assert_eq!((m.raw().pad, m.raw().refill_entries), (0, 0));
        assert_eq!(
            m,
            Calibration::default()
                .ipi_round_trip((1 << 32) + 5)
                .inval_page(1 << 32)
                .refill(1 << 32)
                .full_flush(1 << 40)
                .bcast_issue((1 << 32) + 7)
                .bcast_sync(1)
                .bcast_max_pages(u32::MAX)
        );
        let mut cfg = Config::new(4, Arch::X86_64);
        let (ipi, bc) = cfg.calibrate(&m).unwrap();
        // Cut to 32 bits, the round trip would be 5 and inval_page 0
        // (refused); the library caps each cost at u32::MAX instead, and
        // each further target is a tenth of the round trip (no
        // irq_entry_exit given).
        let target = ((1u64 << 32) + 5) / 10;
        assert_eq!(u64::from(cfg.raw().cost_ipi_target_ns), target);
        assert_eq!(cfg.raw().cost_ipi_ns, u32::MAX);
        // (2^40 + 64 x 2^32) / (2^32 + 2^32) pages.
        assert_eq!(cfg.raw().flush_ceiling, 160);
        assert_eq!((cfg.raw().cost_broadcast_ns, cfg.raw().cost_broadcast_page_ns), (u32::MAX, u32::MAX));
        assert_eq!(ipi.raw().size, BACKEND_SIZE);
        assert_eq!((ipi.raw().mech, ipi.raw().flags, ipi.raw().cost_ns), (sys::TLBPOL_MECH_IPI, 0, u32::MAX));
        let bc = bc.unwrap();
        assert_eq!(bc.raw().size, BACKEND_SIZE);
        assert_eq!((bc.raw().mech, bc.raw().flags), (sys::TLBPOL_MECH_BROADCAST, 0));
        assert_eq!((bc.raw().max_pages, bc.raw().cost_ns, bc.raw().cost_page_ns), (u32::MAX, u32::MAX, u32::MAX));
    }

    /// Sums near the top of the range go to C as given: the library
    /// saturates them (inval_page + refill of 2^64 is no zero divisor), and
    /// caps the costs.
    #[test]
    fn calibration_sums_at_the_top_reach_c() {
        let good = Calibration::new().ipi_round_trip(2000).inval_page(250).full_flush(2283).refill(250);
        let top = 1u64 << 63;
        let max = u32::MAX;
        for (page, refill) in [(u64::MAX, 1), (1, u64::MAX), (top, top), (u64::MAX, u64::MAX)] {
            let mut cfg = Config::new(4, Arch::X86_64);
            assert!(cfg.calibrate(&good.inval_page(page).refill(refill)).is_ok(), "{} + {}", page, refill);
            // Each page costs the most there is: the ceiling is its least, 1.
            assert_eq!(costs(&cfg)[..3], [1, 2000, 200], "{} + {}", page, refill);
        }
        let mut cfg = Config::new(4, Arch::X86_64);
        let m = good.ipi_send(u64::MAX).irq_entry_exit(u64::MAX).bcast_issue(u64::MAX).bcast_sync(1);
        let (ipi, bc) = cfg.calibrate(&m).unwrap();
        assert_eq!(costs(&cfg)[1..], [2000, max, sys::TLBPOL_DEFAULT_COST_IPI_REMOTE_NS, max, max]);
        assert_eq!((ipi.raw().cost_target_ns, bc.unwrap().raw().cost_ns), (max, max));
        // A zero among the required ones is the library's -EINVAL.
        assert_eq!(cfg.calibrate(&good.inval_page(0).refill(0)), Err(Error::Invalid));
    }

    #[test]
    fn backends_are_an_array_of_pointers_to_sized_descriptors() {
        let ipi = Backend::new(Mechanism::Ipi).cost_ns(900);
        let bc = Backend::new(Mechanism::Broadcast).flags(BackendFlags::SPLIT).max_pages(8).cost_ns(100);
        let list = [&ipi, &bc];
        let cfg = Config::new(2, Arch::X86_64).backends(&list);
        assert!(cfg.raw().backends.is_null(), "set only when an engine is built");
        let raw = cfg.complete(ptr::null(), ptr::null_mut()).unwrap();
        assert_eq!(raw.nr_backends, 2);
        assert_eq!(raw.reserved2, 0);
        // SAFETY: complete() pointed backends at list, two pointers to live
        // descriptors, borrowed here.
        let got = unsafe { [*raw.backends, *raw.backends.add(1)] };
        assert_eq!(got, [ipi.raw() as *const sys::tlbpol_backend, bc.raw() as *const _]);
        // SAFETY: each points to ipi or bc, alive and unchanged here.
        let (a, b) = unsafe { (*got[0], *got[1]) };
        assert_eq!(usize::try_from(a.size).unwrap(), core::mem::size_of::<sys::tlbpol_backend>());
        assert_eq!((a.mech, a.flags, a.cost_ns), (sys::TLBPOL_MECH_IPI, 0, 900));
        assert_eq!(
            (b.mech, b.flags, b.max_pages, b.cost_ns),
            (sys::TLBPOL_MECH_BROADCAST, sys::TLBPOL_BKF_SPLIT, 8, 100)
        );
        // No list: NULL and 0; an empty one: 0 descriptors.
        let raw = Config::new(2, Arch::X86_64).complete(ptr::null(), ptr::null_mut()).unwrap();
        assert!(raw.backends.is_null() && raw.nr_backends == 0);
        let raw = Config::new(2, Arch::X86_64).backends(&[]).complete(ptr::null(), ptr::null_mut()).unwrap();
        assert!(raw.backends.is_null() && raw.nr_backends == 0);
        // The node table and the descriptors survive each other's setter.
        let nodes = [0u16, 0];
        let cfg = Config::new(2, Arch::X86_64).backends(&list).cpu_node(&nodes).lockless_walkers(true);
        let raw = cfg.complete(ptr::null(), ptr::null_mut()).unwrap();
        assert_eq!((raw.nr_backends, raw.cpu_node), (2, nodes.as_ptr()));
        assert_eq!(raw.flags & sys::TLBPOL_CFGF_LOCKLESS_WALKERS, sys::TLBPOL_CFGF_LOCKLESS_WALKERS);
        assert_eq!(cfg.lockless_walkers(false).raw().flags & sys::TLBPOL_CFGF_LOCKLESS_WALKERS, 0);
    }
}
