//! Plain values: errors, enums, rule masks, PTE bits, events and decisions.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not, Sub};

use tlbpol_sys as sys;

use crate::static_str;

/// Builder methods (of `Event` and `Config`) that each set one field of
/// `self.raw` and return `self`, as type `Ret`: `Ret; name(arg: T) => field
/// = value; ...`.
macro_rules! setters {
    ($ret:ty; $($(#[$m:meta])* $name:ident($arg:ident: $t:ty) => $field:ident = $v:expr;)*) => {
        $(
            $(#[$m])*
            pub fn $name(mut self, $arg: $t) -> $ret {
                self.raw.$field = $v;
                self
            }
        )*
    };
}
pub(crate) use setters;

/// A failed call: the library's negative errno, by name.
///
/// A failed call changes nothing (no pending flush is lost, no counter
/// moves), so every variant can be retried after fixing its cause; `Busy`
/// from a nested call just means "call again later".
///
/// Besides the library's own answers, these bindings give some answers
/// themselves, before anything reaches C, so that C is never passed a value
/// other than the caller's:
/// - `Range` for a number the C parameter's type cannot hold (a CPU above
///   `i32::MAX` for [`Engine::stats`](crate::Engine::stats), whose C
///   parameter is an `int` in which `u32::MAX` would read as -1, "every
///   CPU");
/// - `Invalid` for an [`Event`] whose `size` field claims more bytes than
///   its structure has (set through [`Event::from_raw`]): C would read the
///   bytes past the structure that the size claims; likewise a
///   [`TagsConfig`](crate::TagsConfig) (through its `from_raw`);
/// - `Invalid` for a [`TagId`](crate::TagId) used with a tag allocator
///   other than the one that made it.
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
    /// `-EEXIST`: an address space with that tag is already open, or two
    /// backend descriptors of one mechanism.
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
            Error::Exists => f.write_str("already exists: an open address-space tag, a second backend (EEXIST)"),
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

/// The enums of the header: `Name { Variant = TLBPOL_C_NAME, ... } ...`,
/// each value the tlbpol-sys constant of that name (which its doc links).
macro_rules! c_enum {
    ($($(#[$m:meta])* $name:ident { $($v:ident = $c:ident,)* })*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $name {
            $(#[doc = concat!("[`", stringify!($c), "`](sys::", stringify!($c), ")")] $v = sys::$c,)*
        }
        impl $name {
            /// Every value, in the header's order.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];
            /// The value of a C code, `None` for a code these bindings do not know.
            pub fn from_raw(raw: u32) -> Option<$name> {
                match raw {
                    $(x if x == sys::$c => Some($name::$v),)*
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
    )*};
}
pub(crate) use c_enum;

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

/// The flag sets of the header: `Name(type) { BIT = TLBPOL_C_NAME, ... } ...`,
/// each value the tlbpol-sys constant of that name (which its doc links).
macro_rules! bits {
    ($($(#[$m:meta])* $name:ident($t:ty) { $($v:ident = $c:ident,)* })*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub $t);
        impl $name {
            $(
                #[doc = concat!("[`", stringify!($c), "`](sys::", stringify!($c), ")")]
                pub const $v: $name = $name(sys::$c);
            )*
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
    )*};
}
pub(crate) use bits;

// The enums and flag sets that mirror the header's (Arch, EventKind, Action,
// Deadline, Reason, FlushKind, CpuState, Pte, EventFlags, Rules), written
// from the header by gen/tlbpol_api.py: one source for each value.
include!("enums.rs");

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

    setters! {
        Event;
        /// First address, aligned to the page size.
        va(va: u64) => va = va;
        /// Number of pages, >= 1.
        pages(nr_pages: u64) => nr_pages = nr_pages;
        /// log2 of the page size: one of the arch's (12, 21, 30 on x86-64).
        page_shift(shift: u32) => page_shift = shift;
        /// The PTE bits before the change (what the atomic get-and-clear returned).
        old_pte(pte: Pte) => old_pte = pte.0;
        /// The PTE bits after the change.
        new_pte(pte: Pte) => new_pte = pte.0;
        /// The flags (replacing any set before).
        flags(flags: EventFlags) => flags = flags.0;
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
