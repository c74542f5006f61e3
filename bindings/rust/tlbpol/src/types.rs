//! Plain values: errors, enums, rule masks, PTE bits, events and decisions.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not, Sub};

use tlbpol_sys as sys;

use crate::static_str;

/// A failed call: the library's negative errno, by name.
///
/// A failed call changes nothing (no pending flush is lost, no counter
/// moves), so every variant can be retried after fixing its cause; `Busy`
/// from a nested call just means "call again later".
///
/// Besides the library's own answers, these bindings answer two things
/// themselves, before anything reaches C, so that C is never passed a value
/// other than the caller's:
/// - `Range` for a number the C parameter's type cannot hold (a CPU above
///   `i32::MAX` for [`Engine::stats`](crate::Engine::stats), whose C
///   parameter is an `int` in which `u32::MAX` would read as -1, "every
///   CPU");
/// - `Invalid` for an [`Event`] whose `size` field claims more bytes than
///   its structure has (set through [`Event::from_raw`]): C would read the
///   bytes past the structure that the size claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// `-EINVAL`: a bad argument (an unknown kind, flag, PTE bit or rule, a
    /// page size the arch does not have, a closed or foreign address space).
    Invalid,
    /// `-ERANGE`: a CPU, address or size out of range; also a value that
    /// the C parameter's type cannot hold (refused here, not passed to C).
    Range,
    /// `-ENOMEM`: too little memory, or `max_as` address spaces open.
    NoMemory,
    /// `-EBUSY`: an object still in use, or a call nested in another engine
    /// call for the same CPU.
    Busy,
    /// `-EEXIST`: an address space with that tag is already open.
    Exists,
    /// Another negative errno, from a library newer than these bindings.
    Other(i32),
}

impl Error {
    /// The error of a negative return value (`-errno`).
    pub fn from_errno(ret: i32) -> Error {
        // wrapping: -i32::MIN has no i32 (it stays i32::MIN, an Other).
        match ret.wrapping_neg() {
            sys::errno::EINVAL => Error::Invalid,
            sys::errno::ERANGE => Error::Range,
            sys::errno::ENOMEM => Error::NoMemory,
            sys::errno::EBUSY => Error::Busy,
            sys::errno::EEXIST => Error::Exists,
            e => Error::Other(e),
        }
    }

    /// The positive errno value (`EINVAL` ...).
    pub fn errno(self) -> i32 {
        match self {
            Error::Invalid => sys::errno::EINVAL,
            Error::Range => sys::errno::ERANGE,
            Error::NoMemory => sys::errno::ENOMEM,
            Error::Busy => sys::errno::EBUSY,
            Error::Exists => sys::errno::EEXIST,
            Error::Other(e) => e,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid => f.write_str("invalid argument (EINVAL)"),
            Error::Range => f.write_str("CPU, address or size out of range (ERANGE)"),
            Error::NoMemory => f.write_str("not enough memory or address-space slots (ENOMEM)"),
            Error::Busy => f.write_str("in use, or nested in another call for this CPU (EBUSY)"),
            Error::Exists => f.write_str("address-space tag already open (EEXIST)"),
            Error::Other(e) => write!(f, "error {}", e),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// The result of every fallible call.
pub type Result<T> = core::result::Result<T, Error>;

/// A count (`>= 0`) or an error, from an `int` return value: every
/// non-negative `int` is a `u32` exactly, every negative one is `-errno`.
pub(crate) fn check(ret: sys::c_int) -> Result<u32> {
    u32::try_from(ret).map_err(|_| Error::from_errno(ret))
}

/// A structure's size for its `u32` `size` field, as a constant: a size
/// that does not fit (or changes in the conversion, on any target) fails
/// to compile, since const evaluation panics.
pub(crate) const fn size_field(n: usize) -> u32 {
    // `as` because `TryFrom` is not `const` on Rust 1.63; the round trip
    // proves it exact.
    #[allow(clippy::cast_possible_truncation)]
    let m = n as u32;
    assert!(m as usize == n, "a structure size does not fit its u32 size field");
    m
}

macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $c:path,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $name {
            $($(#[$vm])* $v = $c,)*
        }
        impl $name {
            /// Every value, in the header's order.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];
            /// The value of a C code, `None` for a code these bindings do not know.
            pub fn from_raw(raw: u32) -> Option<$name> {
                match raw {
                    $(x if x == $c => Some($name::$v),)*
                    _ => None,
                }
            }
            /// The C code.
            pub fn raw(self) -> u32 {
                // The discriminant of a `#[repr(u32)]` enum, each the C
                // constant itself: exact (the one cast an enum allows).
                self as u32
            }
        }
    };
}

c_enum! {
    /// What the engine may assume of the hardware (`enum tlbpol_arch`).
    Arch {
        /// `TLBPOL_ARCH_GENERIC`: nothing; conservative (RISC-V without Svvptc).
        Generic = sys::TLBPOL_ARCH_GENERIC,
        /// `TLBPOL_ARCH_X86_64`: what the x86 architecture guarantees.
        X86_64 = sys::TLBPOL_ARCH_X86_64,
        /// `TLBPOL_ARCH_ARM64`: broadcast TLBI, AF and DBM.
        Arm64 = sys::TLBPOL_ARCH_ARM64,
    }
}

c_enum! {
    /// What happened to the page tables (`enum tlbpol_event_kind`).
    EventKind {
        /// `TLBPOL_EV_FAULT`: a page fault was resolved.
        Fault = sys::TLBPOL_EV_FAULT,
        /// `TLBPOL_EV_PROTECT`: software changed permissions.
        Protect = sys::TLBPOL_EV_PROTECT,
        /// `TLBPOL_EV_UNMAP`: PTEs cleared (munmap, zap, MADV_DONTNEED).
        Unmap = sys::TLBPOL_EV_UNMAP,
        /// `TLBPOL_EV_RECLAIM`: a page unmapped for reclaim or swap-out.
        Reclaim = sys::TLBPOL_EV_RECLAIM,
        /// `TLBPOL_EV_MIGRATE`: a page unmapped for migration or compaction.
        Migrate = sys::TLBPOL_EV_MIGRATE,
        /// `TLBPOL_EV_CLEAR_YOUNG`: accessed bit cleared for aging.
        ClearYoung = sys::TLBPOL_EV_CLEAR_YOUNG,
        /// `TLBPOL_EV_CLEAR_DIRTY`: dirty bit cleared.
        ClearDirty = sys::TLBPOL_EV_CLEAR_DIRTY,
        /// `TLBPOL_EV_REMAP`: PTEs moved away from these addresses (mremap).
        Remap = sys::TLBPOL_EV_REMAP,
    }
}

c_enum! {
    /// What a decision asks for (`enum tlbpol_action`).
    Action {
        /// `TLBPOL_ACT_NONE`: no flush anywhere.
        None = sys::TLBPOL_ACT_NONE,
        /// `TLBPOL_ACT_LOCAL`: flush the deciding CPU only.
        Local = sys::TLBPOL_ACT_LOCAL,
        /// `TLBPOL_ACT_SHOOTDOWN`: flush every CPU that may hold the entries.
        Shootdown = sys::TLBPOL_ACT_SHOOTDOWN,
    }
}

c_enum! {
    /// By when a flush must be complete (`enum tlbpol_deadline`); also what
    /// [`Cpu::flush`](crate::Cpu::flush) completes.
    Deadline {
        /// `TLBPOL_BY_NOW`: before the submit returns.
        Now = sys::TLBPOL_BY_NOW,
        /// `TLBPOL_BY_WRITEBACK`: before the pages are written back or copied.
        Writeback = sys::TLBPOL_BY_WRITEBACK,
        /// `TLBPOL_BY_FREE`: before the frames or page tables are freed or reused.
        Free = sys::TLBPOL_BY_FREE,
        /// `TLBPOL_BY_LAZY`: eventually (next tick or switch).
        Lazy = sys::TLBPOL_BY_LAZY,
    }
}

c_enum! {
    /// Why a decision is what it is (`enum tlbpol_reason`, `TLBPOL_WHY_*`).
    Reason {
        /// Old PTE not present: nothing cached.
        NotPresent = sys::TLBPOL_WHY_NOT_PRESENT,
        /// The PTE did not change.
        Unchanged = sys::TLBPOL_WHY_UNCHANGED,
        /// Rules NONE: full flush everywhere, now.
        Naive = sys::TLBPOL_WHY_NAIVE,
        /// A fault the PTE already allowed.
        Spurious = sys::TLBPOL_WHY_SPURIOUS,
        /// A retried fault, the PTE already installed.
        Retried = sys::TLBPOL_WHY_RETRIED,
        /// The fault only set the accessed/dirty bits.
        AccessFlags = sys::TLBPOL_WHY_ACCESS_FLAGS,
        /// Permissions only grew.
        Upgrade = sys::TLBPOL_WHY_UPGRADE,
        /// Accessed bit cleared.
        Aging = sys::TLBPOL_WHY_AGING,
        /// PTEs cleared, frames freed later.
        Unmap = sys::TLBPOL_WHY_UNMAP,
        /// A clean page reclaimed.
        ReclaimClean = sys::TLBPOL_WHY_RECLAIM_CLEAN,
        /// A dirty page reclaimed: before writeback.
        ReclaimDirty = sys::TLBPOL_WHY_RECLAIM_DIRTY,
        /// A clean page migrated.
        MigrateClean = sys::TLBPOL_WHY_MIGRATE_CLEAN,
        /// A dirty page migrated: before the copy.
        MigrateDirty = sys::TLBPOL_WHY_MIGRATE_DIRTY,
        /// The PTE points to another frame.
        PfnChange = sys::TLBPOL_WHY_PFN_CHANGE,
        /// A permission was removed.
        Downgrade = sys::TLBPOL_WHY_DOWNGRADE,
        /// Dirty bit cleared.
        ClearDirty = sys::TLBPOL_WHY_CLEAR_DIRTY,
        /// PTEs moved away from these addresses.
        Remap = sys::TLBPOL_WHY_REMAP,
        /// Dirty PTEs cleared: before writeback.
        UnmapDirty = sys::TLBPOL_WHY_UNMAP_DIRTY,
        /// Page-table pages freed: before the free.
        TablesFreed = sys::TLBPOL_WHY_TABLES_FREED,
        /// PTEs cleared, the range stays mapped: now.
        Discard = sys::TLBPOL_WHY_DISCARD,
        /// Size, memory type or key changed (`EventFlags::ATTRS`).
        Attrs = sys::TLBPOL_WHY_ATTRS,
        /// GENERIC install: invalid entries may be cached.
        Install = sys::TLBPOL_WHY_INSTALL,
    }
}

c_enum! {
    /// What a flush covers (`enum tlbpol_flush_kind`).
    FlushKind {
        /// `TLBPOL_FLUSH_PAGES`: the flush's ranges.
        Pages = sys::TLBPOL_FLUSH_PAGES,
        /// `TLBPOL_FLUSH_AS`: every non-global entry of the address space and
        /// its paging-structure caches.
        As = sys::TLBPOL_FLUSH_AS,
        /// `TLBPOL_FLUSH_ALL`: everything, global entries too.
        All = sys::TLBPOL_FLUSH_ALL,
    }
}

c_enum! {
    /// What a CPU is doing (`enum tlbpol_cpu_state`).
    CpuState {
        /// `TLBPOL_CPU_RUNNING`: running, takes interrupts.
        Running = sys::TLBPOL_CPU_RUNNING,
        /// `TLBPOL_CPU_IDLE`: idle, still takes interrupts.
        Idle = sys::TLBPOL_CPU_IDLE,
        /// `TLBPOL_CPU_PREEMPTED`: a vCPU (or thread-CPU) that is not scheduled.
        Preempted = sys::TLBPOL_CPU_PREEMPTED,
        /// `TLBPOL_CPU_OFFLINE`: takes no interrupts, never targeted.
        Offline = sys::TLBPOL_CPU_OFFLINE,
    }
}

impl Action {
    /// The library's name: "none", "local", "shootdown".
    pub fn name(self) -> &'static str {
        // SAFETY: tlbpol_action_str() takes a number (any value is allowed: an
        // unknown one names "unknown"), may run anywhere, and returns a static
        // NUL-terminated string, never NULL.
        unsafe { static_str(sys::tlbpol_action_str(self.raw())) }
    }
}

impl Deadline {
    /// The library's name: "now", "writeback", "free", "lazy".
    pub fn name(self) -> &'static str {
        // SAFETY: tlbpol_deadline_str() takes a number (any value is allowed:
        // an unknown one names "unknown"), may run anywhere, and returns a
        // static NUL-terminated string, never NULL.
        unsafe { static_str(sys::tlbpol_deadline_str(self.raw())) }
    }
}

impl Reason {
    /// The library's short name ("reclaim-clean", "spurious-fault" ...).
    pub fn name(self) -> &'static str {
        // SAFETY: tlbpol_reason_str() takes a number (any value is allowed: an
        // unknown one names "unknown"), may run anywhere, and returns a static
        // NUL-terminated string, never NULL.
        unsafe { static_str(sys::tlbpol_reason_str(self.raw())) }
    }

    /// The hardware rule or kernel source the decision table cites for this
    /// reason under `arch` (`tlbpol_reason_cite()`); `None` when the
    /// library these bindings were built against predates that function.
    pub fn cite(self, arch: Arch) -> Option<&'static str> {
        sys::tlbpol_reason_cite_checked(self.raw(), arch.raw()).map(|p| {
            // SAFETY: tlbpol_reason_cite() returns a static NUL-terminated
            // string, never NULL ("unknown" for an unknown reason or arch).
            unsafe { static_str(p) }
        })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The answer to "does this need a flush?" (`struct tlbpol_decision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decision {
    /// What to flush.
    pub action: Action,
    /// By when (`Deadline::Now` for `Action::None` and `Action::Local`).
    pub deadline: Deadline,
    /// Why.
    pub reason: Reason,
}

impl Decision {
    /// A decision from the C structure; `Error::Other(0)` if it holds a code
    /// these bindings do not know (a library newer than this crate).
    pub(crate) fn from_raw(d: &sys::tlbpol_decision) -> Result<Decision> {
        match (Action::from_raw(d.action), Deadline::from_raw(d.deadline), Reason::from_raw(d.reason)) {
            (Some(action), Some(deadline), Some(reason)) => Ok(Decision { action, deadline, reason }),
            _ => Err(Error::Other(0)),
        }
    }
}

impl fmt::Display for Decision {
    /// As `examples/decide` prints it: `shootdown/free (unmap)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} ({})", self.action, self.deadline, self.reason)
    }
}

macro_rules! bits {
    ($(#[$m:meta])* $name:ident($t:ty) { $($(#[$vm:meta])* $v:ident = $c:expr,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub $t);
        impl $name {
            $($(#[$vm])* pub const $v: $name = $name($c);)*
            /// No bit.
            pub const EMPTY: $name = $name(0);
            /// Whether every bit of `other` is set here.
            pub fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }
            /// The raw mask.
            pub fn bits(self) -> $t {
                self.0
            }
        }
        impl BitOr for $name {
            type Output = $name;
            fn bitor(self, o: $name) -> $name {
                $name(self.0 | o.0)
            }
        }
        impl BitOrAssign for $name {
            fn bitor_assign(&mut self, o: $name) {
                self.0 |= o.0;
            }
        }
        impl BitAnd for $name {
            type Output = $name;
            fn bitand(self, o: $name) -> $name {
                $name(self.0 & o.0)
            }
        }
        impl Sub for $name {
            type Output = $name;
            /// The bits of `self` that are not in `o`.
            fn sub(self, o: $name) -> $name {
                $name(self.0 & !o.0)
            }
        }
        impl Not for $name {
            type Output = $name;
            fn not(self) -> $name {
                $name(!self.0)
            }
        }
    };
}

bits! {
    /// Portable PTE bits (`TLBPOL_PTE_*`), for an event's old and new PTE.
    Pte(u32) {
        /// `TLBPOL_PTE_PRESENT`.
        PRESENT = sys::TLBPOL_PTE_PRESENT,
        /// `TLBPOL_PTE_WRITE`.
        WRITE = sys::TLBPOL_PTE_WRITE,
        /// `TLBPOL_PTE_EXEC`.
        EXEC = sys::TLBPOL_PTE_EXEC,
        /// `TLBPOL_PTE_USER`.
        USER = sys::TLBPOL_PTE_USER,
        /// `TLBPOL_PTE_ACCESSED`.
        ACCESSED = sys::TLBPOL_PTE_ACCESSED,
        /// `TLBPOL_PTE_DIRTY`: the hardware D bit (arm64: `pte_dirty()`).
        DIRTY = sys::TLBPOL_PTE_DIRTY,
        /// `TLBPOL_PTE_GLOBAL`.
        GLOBAL = sys::TLBPOL_PTE_GLOBAL,
        /// `TLBPOL_PTE_ALL`: every bit.
        ALL = sys::TLBPOL_PTE_ALL,
    }
}

bits! {
    /// Event flags (`TLBPOL_EVF_*`).
    EventFlags(u32) {
        /// Fault: the access was a write.
        WRITE = sys::TLBPOL_EVF_WRITE,
        /// Fault: an instruction fetch.
        EXEC = sys::TLBPOL_EVF_EXEC,
        /// Fault: a retried fault (FAULT_FLAG_TRIED).
        TRIED = sys::TLBPOL_EVF_TRIED,
        /// The PTE now points to another frame.
        PFN_CHANGED = sys::TLBPOL_EVF_PFN_CHANGED,
        /// Page-table pages under the range were freed.
        TABLES_FREED = sys::TLBPOL_EVF_TABLES_FREED,
        /// Frames and addresses are not reused before a deferred free runs (LATR).
        LAZY_OK = sys::TLBPOL_EVF_LAZY_OK,
        /// Unmap: the frame is private to the mapping and dies with it.
        PRIVATE = sys::TLBPOL_EVF_PRIVATE,
        /// Unmap: the addresses stay mapped (MADV_DONTNEED): flushed now.
        STAYS_MAPPED = sys::TLBPOL_EVF_STAYS_MAPPED,
        /// Size, structure, memory type, key or shadow stack changed.
        ATTRS = sys::TLBPOL_EVF_ATTRS,
        /// The frames go back with a flush stamp (see [`Cpu::stamp`](crate::Cpu::stamp)).
        STAMP = sys::TLBPOL_EVF_STAMP,
        /// Every flag.
        ALL = sys::TLBPOL_EVF_ALL,
    }
}

bits! {
    /// A rule mask (`TLBPOL_RULE_*`): each bit one optimisation that can be
    /// switched off.  [`Rules::parse`] reads the names command lines use.
    Rules(u64) {
        /// No remote flush for a spurious fault.
        SPURIOUS_NOFLUSH = sys::TLBPOL_RULE_SPURIOUS_NOFLUSH,
        /// Flush pages of a range instead of the whole address space.
        RANGE_FLUSH = sys::TLBPOL_RULE_RANGE_FLUSH,
        /// No flush on a retried fault.
        RETRY_NOFLUSH = sys::TLBPOL_RULE_RETRY_NOFLUSH,
        /// Defer unmap/reclaim/migrate flushes to their deadline, one shootdown per batch.
        BATCH = sys::TLBPOL_RULE_BATCH,
        /// No synchronous flush when the accessed bit is cleared.
        AGING_NOFLUSH = sys::TLBPOL_RULE_AGING_NOFLUSH,
        /// No remote flush when a PTE only becomes more permissive.
        UPGRADE_NOFLUSH = sys::TLBPOL_RULE_UPGRADE_NOFLUSH,
        /// Target only CPUs that may cache the address space.
        FOOTPRINT = sys::TLBPOL_RULE_FOOTPRINT,
        /// Do not interrupt idle or lazy CPUs.
        LAZY_CPUS = sys::TLBPOL_RULE_LAZY_CPUS,
        /// Skip CPUs whose flush generation covers the request.
        GEN_SKIP = sys::TLBPOL_RULE_GEN_SKIP,
        /// One merged flush for requests from several initiators.
        RECEIVER_MERGE = sys::TLBPOL_RULE_RECEIVER_MERGE,
        /// Use the host's broadcast where it is cheaper.
        BROADCAST = sys::TLBPOL_RULE_BROADCAST,
        /// Interrupt one leader per NUMA node.
        NUMA_FANOUT = sys::TLBPOL_RULE_NUMA_FANOUT,
        /// Lazy unmap for `EventFlags::LAZY_OK` events.
        LAZY_UNMAP = sys::TLBPOL_RULE_LAZY_UNMAP,
        /// Do not interrupt a preempted vCPU.
        VCPU_DEFER = sys::TLBPOL_RULE_VCPU_DEFER,
        /// Do not interrupt a CPU polling in its own shootdown's wait.
        POLLING_CPUS = sys::TLBPOL_RULE_POLLING_CPUS,
        /// Flush stamps for `EventFlags::STAMP` events.
        FLUSH_STAMP = sys::TLBPOL_RULE_FLUSH_STAMP,
        /// `TLBPOL_RULES_NONE`: the naive policy.
        NONE = sys::TLBPOL_RULES_NONE,
        /// `TLBPOL_RULES_LINUX`: what Linux does today.
        LINUX = sys::TLBPOL_RULES_LINUX,
        /// `TLBPOL_RULES_DEFAULT`: every rule.
        DEFAULT = sys::TLBPOL_RULES_DEFAULT,
        /// `TLBPOL_RULES_ALL`: every bit this version knows.
        ALL = sys::TLBPOL_RULES_ALL,
    }
}

impl Rules {
    /// A mask from names, as `tlbpol_rules_parse()` reads them:
    /// `"default,-lazy-unmap"`, `"linux+receiver-merge"`, `"none,batch"`.
    ///
    /// `Err(Error::Invalid)` for an empty spec, an empty term, an unknown
    /// name, a number with an unknown bit, and (this binding's limit, no
    /// allocation) a spec of 256 bytes or more or one with a NUL byte.
    pub fn parse(spec: &str) -> Result<Rules> {
        let mut buf = [0u8; 256];
        let b = spec.as_bytes();
        if b.len() >= buf.len() || b.contains(&0) {
            return Err(Error::Invalid);
        }
        buf[..b.len()].copy_from_slice(b);
        let mut out = 0u64;
        // SAFETY: buf is NUL-terminated (spec is shorter than buf, which is
        // zeroed past it, and has no NUL of its own) and outlives the call,
        // which only reads it; out is a valid u64 the call may write.
        check(unsafe { sys::tlbpol_rules_parse(buf.as_ptr().cast::<sys::c_char>(), &mut out) })?;
        Ok(Rules(out))
    }

    /// The library's name of a single rule bit ("lazy-unmap"); "unknown"
    /// for no bit, several bits or a bit no rule has.
    pub fn name(self) -> &'static str {
        // SAFETY: tlbpol_rule_str() takes any mask, may run anywhere, and
        // returns a static NUL-terminated string, never NULL.
        unsafe { static_str(sys::tlbpol_rule_str(self.0)) }
    }

    /// Each bit set, as a single-bit mask, lowest first.
    pub fn iter(self) -> impl Iterator<Item = Rules> {
        (0..64).map(|b| 1u64 << b).filter(move |bit| self.0 & bit != 0).map(Rules)
    }
}

impl fmt::Display for Rules {
    /// The names, comma-separated (`"batch,footprint"`), which
    /// [`Rules::parse`] reads back; `"none"` for the empty mask.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("none");
        }
        for (i, r) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r.name() {
                "unknown" => write!(f, "{:#x}", r.0)?,
                n => f.write_str(n)?,
            }
        }
        Ok(())
    }
}

/// One page-table change (`struct tlbpol_event`), built step by step:
///
/// ```
/// use tlbpol::{Event, EventKind, Pte};
/// let ev = Event::new(EventKind::Unmap)
///     .va(0x7f00_0000_0000)
///     .pages(8)
///     .old_pte(Pte::PRESENT | Pte::WRITE | Pte::USER | Pte::ACCESSED);
/// assert_eq!(ev.raw().nr_pages, 8);
/// ```
///
/// Nothing is checked here: the engine checks every field when the event is
/// decided or submitted, and a bad one is `Error::Invalid` or `Error::Range`.
/// (These bindings check one thing first: a `size` larger than the
/// structure, possible through [`Event::from_raw`], is `Error::Invalid`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    raw: sys::tlbpol_event,
}

/// `sizeof(struct tlbpol_event)` as its `size` field says it
/// (`tests/layout.rs` of tlbpol-sys checks the Rust structure against C's).
pub(crate) const EVENT_SIZE: u32 = size_field(core::mem::size_of::<sys::tlbpol_event>());

impl Event {
    /// An event of `kind`: one 4 KiB page at address 0, both PTEs 0, no flags.
    pub fn new(kind: EventKind) -> Event {
        Event {
            raw: sys::tlbpol_event {
                size: EVENT_SIZE,
                kind: kind.raw(),
                flags: 0,
                page_shift: 12,
                va: 0,
                nr_pages: 1,
                old_pte: 0,
                new_pte: 0,
            },
        }
    }

    /// An event from the C structure as is (for codes these bindings do not
    /// name, or to test the engine's checks).
    pub fn from_raw(raw: sys::tlbpol_event) -> Event {
        Event { raw }
    }

    /// First address, aligned to the page size.
    pub fn va(mut self, va: u64) -> Event {
        self.raw.va = va;
        self
    }

    /// Number of pages, >= 1.
    pub fn pages(mut self, nr_pages: u64) -> Event {
        self.raw.nr_pages = nr_pages;
        self
    }

    /// log2 of the page size: one of the arch's (12, 21, 30 on x86-64).
    pub fn page_shift(mut self, shift: u32) -> Event {
        self.raw.page_shift = shift;
        self
    }

    /// The PTE bits before the change (what the atomic get-and-clear returned).
    pub fn old_pte(mut self, pte: Pte) -> Event {
        self.raw.old_pte = pte.0;
        self
    }

    /// The PTE bits after the change.
    pub fn new_pte(mut self, pte: Pte) -> Event {
        self.raw.new_pte = pte.0;
        self
    }

    /// The flags (replacing any set before).
    pub fn flags(mut self, flags: EventFlags) -> Event {
        self.raw.flags = flags.0;
        self
    }

    /// The C structure.
    pub fn raw(&self) -> &sys::tlbpol_event {
        &self.raw
    }

    /// The C structure to pass to the library: `Error::Invalid` if its
    /// `size` claims more than `size_of::<tlbpol_event>()` bytes (possible
    /// only through [`Event::from_raw`]).  The library reads `size` bytes
    /// (since release 0.3 it checks that those past the structure it knows
    /// are zero, -E2BIG otherwise), and those past this structure are not
    /// this event's: refusing is the one answer that reads nothing it
    /// should not.  A smaller size is passed on for the library to refuse.
    pub(crate) fn for_c(&self) -> Result<&sys::tlbpol_event> {
        if self.raw.size > EVENT_SIZE {
            return Err(Error::Invalid);
        }
        Ok(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_keeps_every_count_and_every_errno() {
        assert_eq!(check(0), Ok(0));
        assert_eq!(check(i32::MAX), Ok(2_147_483_647), "the largest count, as is");
        assert_eq!(check(-1), Err(Error::Other(1)), "one below: an errno, not a count of 4294967295");
        assert_eq!(check(-sys::errno::ERANGE), Err(Error::Range));
        assert_eq!(check(i32::MIN), Err(Error::Other(i32::MIN)), "no overflow negating it");
    }

    #[test]
    fn size_field_at_the_largest_u32() {
        assert_eq!(size_field(0), 0);
        assert_eq!(size_field(usize::try_from(u32::MAX).unwrap()), u32::MAX);
        assert_eq!(usize::try_from(EVENT_SIZE).unwrap(), core::mem::size_of::<sys::tlbpol_event>());
    }

    #[cfg(target_pointer_width = "64")]
    #[test]
    #[should_panic(expected = "a structure size does not fit its u32 size field")]
    fn size_field_one_past_the_largest_u32_panics() {
        // At run time here; in the constants it is a compile error.
        size_field(usize::try_from(u32::MAX).unwrap() + 1);
    }
}
