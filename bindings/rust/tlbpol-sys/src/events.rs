// SPDX-License-Identifier: MIT
// include!d by lib.rs: its items are the crate's, at its root.

// --- Events and decisions -----------------------------------------------------

/// `struct tlbpol_event`: one page-table change.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_event {
    /// `sizeof(struct tlbpol_event)`.
    pub size: u32,
    /// `TLBPOL_EV_*`.
    pub kind: u32,
    /// `TLBPOL_EVF_*`.
    pub flags: u32,
    /// log2 of the page size.
    pub page_shift: u32,
    /// First address.
    pub va: u64,
    /// Pages, >= 1.
    pub nr_pages: u64,
    /// PTE bits before the change.
    pub old_pte: u32,
    /// PTE bits after it.
    pub new_pte: u32,
}

/// `struct tlbpol_decision`: the answer to "does this need a flush?".
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_decision {
    /// `TLBPOL_ACT_*`.
    pub action: u32,
    /// `TLBPOL_BY_*`.
    pub deadline: u32,
    /// `TLBPOL_WHY_*`.
    pub reason: u32,
    /// Padding.
    pub pad: u32,
}

/// `struct tlbpol_stats`: counters, per CPU or summed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct tlbpol_stats {
    /// Events submitted.
    pub events: u64,
    /// Changed present PTEs that needed no flush.
    pub flushes_avoided: u64,
    /// `flush_local` calls for this CPU's own decisions.
    pub local_flushes: u64,
    /// `flush_local` calls serving other CPUs' requests.
    pub remote_flushes: u64,
    /// CPUs interrupted.
    pub ipis_sent: u64,
    /// `ops->broadcast` and `ops->bcast_issue` calls.
    pub broadcasts: u64,
    /// Pages in PAGES flushes performed.
    pub pages_flushed: u64,
    /// AS / ALL flushes performed.
    pub full_flushes: u64,
    /// Deferred events that shared a shootdown.
    pub coalesced: u64,
    /// CPUs skipped by flush generation.
    pub gen_skipped: u64,
    /// CPUs not interrupted because lazy, preempted or polling.
    pub lazy_skipped: u64,
    /// Deferred frees run.
    pub deferred_frees: u64,
    /// Submitted events per reason.
    pub by_reason: [u64; TLBPOL_WHY_MAX as usize],
    /// Batches completed by age (`free_ticks`).
    pub aged_flushes: u64,
    /// CPUs interrupted again by the watchdog.
    pub ipis_resent: u64,
    /// `ops->stuck` calls.
    pub stuck_calls: u64,
    /// Shootdowns that reached their other CPUs by interrupts.
    pub shoot_ipi: u64,
    /// Shootdowns served by a broadcast.
    pub shoot_broadcast: u64,
    /// Shootdowns served by remote actions.
    pub shoot_remote: u64,
    /// `ops->bcast_sync` calls.
    pub bcast_syncs: u64,
    /// `ops->remote_action` calls.
    pub remote_actions: u64,
    /// CPUs flushed by remote actions.
    pub remote_targets: u64,
    /// `ops->walker_sync` calls.
    pub walker_syncs: u64,
}
