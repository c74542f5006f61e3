//! How to build an engine: its configuration.

use core::fmt;
use core::ptr;

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::host::{ops, Host};
use crate::types::{setters, Arch, Error, Result, Rules};
#[cfg(doc)]
use crate::Engine;

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
    pub fn cpu_node(self, nodes: &[u16]) -> Config<'_> {
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
    /// The C structure (its `ops`, `ops_ctx` and `cpu_node` are set when an
    /// engine is built from it).
    pub fn raw(&self) -> &sys::tlbpol_config {
        &self.raw
    }

    /// The C structure with the node table and callbacks filled in;
    /// `Error::Invalid` for a node table shorter than `nr_cpus` (the engine
    /// would read past it).
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

/// A host that is never called: only to size a configuration.
struct NoHost;
impl Host for NoHost {
    fn flush_local(&self, _: &crate::Here<'_>, _: &crate::Flush<'_>) {}
    fn send_ipi(&self, _: &crate::Here<'_>, _: &crate::CpuSet) {}
}
