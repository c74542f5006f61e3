/* SPDX-License-Identifier: MIT */
/*
 * profiles.c - the workload mixes --profile names (struct profile in
 * stress.h): how a CPU thread weighs its steps, its page-table changes and
 * its lazy and idle spells.  Each mix exists for what it makes the engine
 * do often; the first is the default.
 */
#include "stress.h"

const struct profile profiles[] = {
	{
		.name = "normal",
		.nr_as = 3,
		.access = 560, .spec = 20, .change = 250, .tick = 40, .flush = 30, .sw = 15,
		.lazy = 15, .idle = 15, .preempt = 15, .offline = 2, .hvpreempt = 15, .audit = 10,
		.kaccess = 40, .compute = 3,
		.populate = 8, .prot_down = 12, .prot_up = 8, .unmap = 12, .unmap_tables = 6,
		.unmap_big = 3, .reclaim = 10, .migrate = 7, .young = 10, .dirty = 8,
		.remap = 5, .cow = 5, .replace = 3, .dontneed = 6, .age_reclaim = 10, .kmap = 3,
		.kunmap = 3, .kprotect = 3, .attrs = 3, .retable = 3,
		.lazy_spec = 30, .lazy_tick = 10, .lazy_work = 10, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 40, .lazy_ok = 25,
		.off_long = 20,
	},
	{
		/* Address-space switches dominate: CPUs come back to address
		 * spaces they left (with --retain, entries kept under their
		 * tag) while others change them, which is where catch-up
		 * generations race with shootdowns. */
		.name = "switch",
		.nr_as = 2,
		.access = 400, .spec = 10, .change = 300, .tick = 20, .flush = 20, .sw = 200,
		.lazy = 20, .idle = 10, .preempt = 10, .offline = 1, .hvpreempt = 10, .audit = 10,
		.kaccess = 30, .compute = 2,
		.populate = 8, .prot_down = 20, .prot_up = 10, .unmap = 12, .unmap_tables = 4,
		.unmap_big = 2, .reclaim = 8, .migrate = 4, .young = 4, .dirty = 8,
		.remap = 4, .cow = 4, .replace = 2, .dontneed = 4, .age_reclaim = 2, .kmap = 3,
		.kunmap = 3, .kprotect = 3, .attrs = 2, .retable = 2,
		.lazy_spec = 30, .lazy_tick = 10, .lazy_work = 10, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 30, .lazy_ok = 25,
		.off_long = 20,
	},
	{
		/* The planted bug (lazy CPUs spared the flush of freed page
		 * tables) shows only where lazy CPUs walk address spaces whose
		 * tables others free: few address spaces, long lazy spells,
		 * speculative walks, many table frees. */
		.name = "planted",
		.nr_as = 2,
		.access = 300, .spec = 30, .change = 330, .tick = 40, .flush = 30, .sw = 10,
		.lazy = 60, .idle = 60, .preempt = 5, .offline = 0, .audit = 5,
		.populate = 25, .prot_down = 3, .prot_up = 2, .unmap = 5, .unmap_tables = 40,
		.unmap_big = 5, .reclaim = 3, .migrate = 2, .young = 3, .dirty = 2,
		.remap = 2, .cow = 2, .replace = 1,
		.lazy_spec = 70, .lazy_tick = 5, .lazy_work = 0, .lazy_min = 20, .lazy_max = 120,
		.lazy_ok = 25,
	},
	{
		/* LAZY_OK work in small batches (run it with --batch): lazy
		 * requests in flight across ticks, deferred frees registered
		 * right after the tick that posted them, kernel pages purged
		 * lazily. */
		.name = "lazy",
		.nr_as = 2,
		.access = 450, .spec = 20, .change = 300, .tick = 80, .flush = 20, .sw = 10,
		.lazy = 20, .idle = 20, .preempt = 10, .offline = 1, .hvpreempt = 5, .audit = 10,
		.kaccess = 40, .compute = 3,
		.populate = 20, .prot_down = 5, .prot_up = 3, .unmap = 30, .unmap_tables = 6,
		.unmap_big = 3, .reclaim = 6, .migrate = 3, .young = 3, .dirty = 2,
		.remap = 2, .cow = 2, .replace = 1, .dontneed = 4, .age_reclaim = 2, .kmap = 4,
		.kunmap = 4, .kprotect = 1,
		.lazy_spec = 30, .lazy_tick = 20, .lazy_work = 5, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 30, .lazy_ok = 80,
		.off_long = 20,
	},
	{
		/* Batches past their entry capacity (TLBPOL__RANGES(), 66 at
		 * the defaults): scattered reclaims pile up between rare ticks
		 * and flushes, in address spaces larger than the hot window, so
		 * events widen entries and full batches complete early.  Run it
		 * with --pages 1024. */
		.name = "wide",
		.nr_as = 2,
		.access = 300, .spec = 10, .change = 600, .tick = 1, .flush = 1, .sw = 5,
		.lazy = 5, .idle = 5, .preempt = 5, .offline = 0, .hvpreempt = 2, .audit = 5,
		.kaccess = 10, .compute = 1,
		.populate = 3, .prot_down = 1, .prot_up = 1, .unmap = 2, .unmap_tables = 0,
		.unmap_big = 0, .reclaim = 100, .migrate = 1, .young = 2, .dirty = 1,
		.remap = 0, .cow = 1, .replace = 0, .dontneed = 1, .age_reclaim = 2, .kmap = 0,
		.kunmap = 0, .kprotect = 0, .attrs = 0,
		.lazy_spec = 30, .lazy_tick = 2, .lazy_work = 5, .lazy_kaccess = 10,
		.lazy_preempt = 1, .lazy_min = 5, .lazy_max = 20, .lazy_ok = 25,
	},
	{
		/* Liveness: long compute spells (accesses only, interrupts
		 * between them), CPUs waiting for each other's shootdowns. */
		.name = "compute",
		.nr_as = 2,
		.access = 400, .spec = 10, .change = 300, .tick = 5, .flush = 10, .sw = 5,
		.lazy = 5, .idle = 5, .preempt = 2, .offline = 0, .hvpreempt = 2, .audit = 5,
		.kaccess = 20, .compute = 40,
		.populate = 20, .prot_down = 30, .prot_up = 10, .unmap = 20, .unmap_tables = 4,
		.unmap_big = 2, .reclaim = 4, .migrate = 2, .young = 2, .dirty = 4,
		.remap = 2, .cow = 4, .replace = 2, .dontneed = 10, .age_reclaim = 1, .kmap = 2,
		.kunmap = 2, .kprotect = 4, .attrs = 2, .retable = 2,
		.lazy_spec = 30, .lazy_tick = 5, .lazy_work = 5, .lazy_kaccess = 15,
		.lazy_preempt = 1, .lazy_min = 5, .lazy_max = 20, .lazy_ok = 25,
	},
	{
		/*
		 * Every transition of tlbpol_cpu_state()'s matrix (RUNNING,
		 * IDLE, PREEMPTED, OFFLINE, each to each, lazy and not), walked
		 * while others free page tables of the two address spaces under
		 * what the walker keeps loaded: a catch-up the engine owes and
		 * does not ask for (PREEMPTED -> IDLE on a lazy CPU) leaves a
		 * walk-cache entry of a freed table, which the scan of a CPU
		 * that executes again finds.  Long OFFLINE spells, entered with
		 * requests just posted to the CPU: one it did not serve as it
		 * went is waited for, or interrupted, later.  The run fails if
		 * a cell of the matrix was never visited.
		 */
		.name = "states",
		.nr_as = 2,
		.access = 300, .spec = 60, .change = 300, .tick = 40, .flush = 20, .sw = 10,
		.lazy = 20, .idle = 20, .preempt = 10, .offline = 2, .hvpreempt = 5, .audit = 5,
		.kaccess = 20, .compute = 0, .states = 20,
		.populate = 30, .prot_down = 4, .prot_up = 2, .unmap = 10, .unmap_tables = 40,
		.unmap_big = 5, .reclaim = 4, .migrate = 2, .young = 2, .dirty = 2,
		.remap = 2, .cow = 2, .replace = 1, .dontneed = 2, .age_reclaim = 2, .kmap = 2,
		.kunmap = 2, .kprotect = 1, .attrs = 1, .retable = 20,
		.lazy_spec = 60, .lazy_tick = 10, .lazy_work = 5, .lazy_kaccess = 10,
		.lazy_preempt = 5, .lazy_min = 5, .lazy_max = 40, .lazy_ok = 40,
		.preempt_max = 12, .off_long = 10, .matrix = 1,
	},
	{
		/*
		 * Settles and frees are bounded (liveness.c): CPUs mix
		 * writeback work (dirty reclaims and migrations, each followed
		 * by its tlbpol_flush(BY_WRITEBACK)) with work due by a free
		 * (unmaps, deferred frees, stamps), never ask for a flush by a
		 * free themselves, and fall quiet for spells of accesses and
		 * ticks: what is due by a free must then complete from the
		 * ticks alone.  Idle CPUs never tick (NO_HZ idle), and idle
		 * spells are long: a lazy request posted to a CPU that then
		 * idles completes only if its initiator interrupts it.
		 */
		.name = "quiet",
		.nr_as = 2,
		.access = 400, .spec = 20, .change = 300, .tick = 40, .flush = 20, .sw = 10,
		.lazy = 15, .idle = 20, .preempt = 5, .offline = 2, .hvpreempt = 5, .audit = 5,
		.kaccess = 20, .compute = 0, .states = 5, .quiet = 25,
		.populate = 25, .prot_down = 5, .prot_up = 3, .unmap = 30, .unmap_tables = 5,
		.unmap_big = 3, .reclaim = 30, .migrate = 10, .young = 3, .dirty = 5,
		.remap = 2, .cow = 2, .replace = 1, .dontneed = 2, .age_reclaim = 10, .kmap = 2,
		.kunmap = 3, .kprotect = 1, .attrs = 1, .retable = 2,
		.lazy_spec = 30, .lazy_tick = 10, .lazy_work = 5, .lazy_kaccess = 15,
		.lazy_preempt = 2, .lazy_min = 20, .lazy_max = 400, .lazy_ok = 40,
		.quiet_min = 40, .quiet_max = 160, .quiet_tick = 30, .idle_notick = 1,
		.off_long = 50, .flush_mix = { 10, 90, 0, 0 },
	},
	{
		/*
		 * Long preemptions (RULE_VCPU_DEFER): a vCPU held PREEMPTED
		 * until every other CPU not held has made hold_min .. hold_max
		 * steps, often right after a stamped unmap whose lazy post
		 * another CPU is then held with (invited, it goes before it
		 * takes the post), and half the time the unmapping CPU too.
		 * Nobody may wait for a held CPU: not a settle of the stamp,
		 * by the CPU that took it or by another, not a forced lazy
		 * request; an engine that does stalls until the deadlock
		 * clock.  No kernel mapping changes: a global flush waits for
		 * preempted CPUs.  Holds are short in masks without
		 * vcpu-defer, where preempted CPUs are waited for.
		 */
		.name = "preempted",
		.nr_as = 2,
		.access = 450, .spec = 20, .change = 300, .tick = 40, .flush = 20, .sw = 10,
		.lazy = 15, .idle = 15, .preempt = 10, .offline = 1, .hvpreempt = 5, .audit = 10,
		.kaccess = 30, .compute = 2, .hold = 8,
		.populate = 25, .prot_down = 6, .prot_up = 3, .unmap = 40, .unmap_tables = 5,
		.unmap_big = 4, .reclaim = 6, .migrate = 3, .young = 3, .dirty = 3,
		.remap = 2, .cow = 3, .replace = 1, .dontneed = 3, .age_reclaim = 3,
		.attrs = 1, .retable = 2,
		.lazy_spec = 30, .lazy_tick = 10, .lazy_work = 5, .lazy_kaccess = 15,
		.lazy_preempt = 3, .lazy_min = 5, .lazy_max = 30, .lazy_ok = 40,
		.off_long = 10, .hold_min = 50, .hold_max = 400, .hold_stamp = 70,
	},
};

const size_t nr_profiles = sizeof(profiles) / sizeof(profiles[0]);
