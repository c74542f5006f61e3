// SPDX-License-Identifier: MIT
// include!d by lib.rs: its items are the crate's, at its root.

// --- Tags: PCID, ASID, VMID allocation (release 0.3) -------------------------

/// `struct tlbpol_tags_config`: how a tag allocator is built (release 0.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_tags_config {
    /// `sizeof(struct tlbpol_tags_config)`.
    pub size: u32,
    /// `TLBPOL_TAGS_PERCPU` or `TLBPOL_TAGS_GLOBAL`.
    pub kind: u32,
    /// CPUs that load tags, 1 ..= `TLBPOL_MAX_CPUS`.
    pub nr_cpus: u32,
    /// The hardware tag's width, 1 ..= `TLBPOL_TAG_BITS_MAX`.
    pub tag_bits: u32,
    /// The first tag the allocator hands out (those below are the host's).
    pub first_tag: u32,
    /// `TLBPOL_TAGS_PERCPU`: tags per CPU, 1 ..= `TLBPOL_TAG_SLOTS_MAX`,
    /// with `first_tag + nr_slots + nr_global <= 2^tag_bits`;
    /// `TLBPOL_TAGS_GLOBAL`: 0.
    pub nr_slots: u32,
    /// `TLBPOL_TAGS_PERCPU`: the last `nr_global` tags of the width are
    /// global tags, each one address space's on every CPU (0: none);
    /// `TLBPOL_TAGS_GLOBAL`: 0.
    pub nr_global: u32,
    /// An engine gives an address space a global tag once it is loaded on
    /// this many CPUs (0: 4), twice as many once half the global tags are
    /// taken, four times once three quarters are; `TLBPOL_TAGS_GLOBAL`: 0.
    pub global_min_cpus: u32,
}

/// `struct tlbpol_tag_id`: an address space's identity to a tag allocator
/// (release 0.3), written by the allocator only ([`tlbpol_tag_id_init`],
/// [`tlbpol_tag_load`], [`tlbpol_tag_make_global`], [`tlbpol_tag_release`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_tag_id {
    /// The allocator's.
    pub word: u64,
}

/// `struct tlbpol_tag_use`: what [`tlbpol_tag_load`] tells a switching
/// CPU (release 0.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_tag_use {
    /// The hardware tag to load.
    pub tag: u32,
    /// `TLBPOL_TAG_FLUSH_*`: what to flush before the first access under `tag`.
    pub flush: u32,
}

/// `struct tlbpol_tags_stats`: a tag allocator's counters (release 0.3).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_tags_stats {
    /// Set by the caller to `sizeof(struct tlbpol_tags_stats)`.
    pub size: u32,
    /// Written 0.
    pub pad: u32,
    /// [`tlbpol_tag_load`] calls.
    pub loads: u64,
    /// Loads that returned `TLBPOL_TAG_FLUSH_TAG`.
    pub tag_flushes: u64,
    /// Loads that returned `TLBPOL_TAG_FLUSH_ALL`.
    pub all_flushes: u64,
    /// New generations (`TLBPOL_TAGS_GLOBAL`), counted on the CPU whose
    /// load started each.
    pub rollovers: u64,
}

/// `struct tlbpol_tags`: opaque (a tag allocator, in caller memory).
#[repr(C)]
pub struct tlbpol_tags {
    _opaque: [u8; 0],
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `struct tlbpol_engine`: opaque.
#[repr(C)]
pub struct tlbpol_engine {
    _opaque: [u8; 0],
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

/// `struct tlbpol_as`: opaque.
#[repr(C)]
pub struct tlbpol_as {
    _opaque: [u8; 0],
    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

// TLBPOL_ENGINE_SIZE() and the internal sizes behind it are in consts.rs,
// translated from the header's macros by gen/tlbpol_api.py.
