/* SPDX-License-Identifier: MIT */
/*
 * profiles.c - the workload mixes --profile names (struct profile in
 * stress.h): how a CPU thread weighs its steps, its page-table changes and
 * its lazy and idle spells.  Each mix exists for what it makes the engine
 * do often; the first is the default.
 *
 * normal:
 *   The default: a bit of everything.
 * switch:
 *   Address-space switches dominate: CPUs come back to address spaces
 *   they left (with --retain, entries kept under their tag) while others
 *   change them, which is where catch-up generations race with
 *   shootdowns.
 * planted:
 *   The planted bug (lazy CPUs spared the flush of freed page tables)
 *   shows only where lazy CPUs walk address spaces whose tables others
 *   free: few address spaces, long lazy spells, speculative walks, many
 *   table frees.
 * lazy:
 *   LAZY_OK work in small batches (run it with --batch): lazy requests
 *   in flight across ticks, deferred frees registered right after the
 *   tick that posted them, kernel pages purged lazily.
 * wide:
 *   Batches past their entry capacity (TLBPOL__RANGES(), 66 at the
 *   defaults): scattered reclaims pile up between rare ticks and
 *   flushes, in address spaces larger than the hot window, so events
 *   widen entries and full batches complete early.  Run it with --pages
 *   1024.
 * compute:
 *   Liveness: long compute spells (accesses only, interrupts between
 *   them), CPUs waiting for each other's shootdowns.
 * states:
 *   Every transition of tlbpol_cpu_state()'s matrix (RUNNING, IDLE,
 *   PREEMPTED, OFFLINE, each to each, lazy and not), walked while others
 *   free page tables of the two address spaces under what the walker
 *   keeps loaded: a catch-up the engine owes and does not ask for
 *   (PREEMPTED -> IDLE on a lazy CPU) leaves a walk-cache entry of a
 *   freed table, which the scan of a CPU that executes again finds.
 *   Long OFFLINE spells, entered with requests just posted to the CPU:
 *   one it did not serve as it went is waited for, or interrupted,
 *   later.  The run fails if a cell of the matrix was never visited.
 * quiet:
 *   Settles and frees are bounded (liveness.c): CPUs mix writeback work
 *   (dirty reclaims and migrations, each followed by its
 *   tlbpol_flush(BY_WRITEBACK)) with work due by a free (unmaps,
 *   deferred frees, stamps), never ask for a flush by a free themselves,
 *   and fall quiet for spells of accesses and ticks: what is due by a
 *   free must then complete from the ticks alone.  Idle CPUs never tick
 *   (NO_HZ idle), and idle spells are long: a lazy request posted to a
 *   CPU that then idles completes only if its initiator interrupts it.
 * preempted:
 *   Long preemptions (RULE_VCPU_DEFER): a vCPU held PREEMPTED until
 *   every other CPU not held has made hold_min .. hold_max steps, often
 *   right after a stamped unmap whose lazy post another CPU is then held
 *   with (invited, it goes before it takes the post), and half the time
 *   the unmapping CPU too.  Nobody may wait for a held CPU: not a settle
 *   of the stamp, by the CPU that took it or by another, not a forced
 *   lazy request; an engine that does stalls until the deadlock clock.
 *   No kernel mapping changes: a global flush waits for preempted CPUs.
 *   Holds are short in masks without vcpu-defer, where preempted CPUs
 *   are waited for.
 */
#include "stress.h"

/*
 * The weights side by side: a row per field of struct profile, a column
 * per mix (fields a mix does not name are 0).  COL(i, field, ...) is the
 * initializer of @field from the @i-th column.
 */
#define WEIGHTS(i) \
	/*                   normal  switch  planted  lazy  wide  compute  states  quiet  preempted */ \
	COL(i, nr_as,             3,      2,       2,    2,    2,       2,      2,     2,         2) \
	COL(i, access,          560,    400,     300,  450,  300,     400,    300,   400,       450) \
	COL(i, spec,             20,     10,      30,   20,   10,      10,     60,    20,        20) \
	COL(i, change,          250,    300,     330,  300,  600,     300,    300,   300,       300) \
	COL(i, tick,             40,     20,      40,   80,    1,       5,     40,    40,        40) \
	COL(i, flush,            30,     20,      30,   20,    1,      10,     20,    20,        20) \
	COL(i, sw,               15,    200,      10,   10,    5,       5,     10,    10,        10) \
	COL(i, lazy,             15,     20,      60,   20,    5,       5,     20,    15,        15) \
	COL(i, idle,             15,     10,      60,   20,    5,       5,     20,    20,        15) \
	COL(i, preempt,          15,     10,       5,   10,    5,       2,     10,     5,        10) \
	COL(i, offline,           2,      1,       0,    1,    0,       0,      2,     2,         1) \
	COL(i, hvpreempt,        15,     10,       0,    5,    2,       2,      5,     5,         5) \
	COL(i, audit,            10,     10,       5,   10,    5,       5,      5,     5,        10) \
	COL(i, kaccess,          40,     30,       0,   40,   10,      20,     20,    20,        30) \
	COL(i, compute,           3,      2,       0,    3,    1,      40,      0,     0,         2) \
	COL(i, populate,          8,      8,      25,   20,    3,      20,     30,    25,        25) \
	COL(i, prot_down,        12,     20,       3,    5,    1,      30,      4,     5,         6) \
	COL(i, prot_up,           8,     10,       2,    3,    1,      10,      2,     3,         3) \
	COL(i, unmap,            12,     12,       5,   30,    2,      20,     10,    30,        40) \
	COL(i, unmap_tables,      6,      4,      40,    6,    0,       4,     40,     5,         5) \
	COL(i, unmap_big,         3,      2,       5,    3,    0,       2,      5,     3,         4) \
	COL(i, reclaim,          10,      8,       3,    6,  100,       4,      4,    30,         6) \
	COL(i, migrate,           7,      4,       2,    3,    1,       2,      2,    10,         3) \
	COL(i, young,            10,      4,       3,    3,    2,       2,      2,     3,         3) \
	COL(i, dirty,             8,      8,       2,    2,    1,       4,      2,     5,         3) \
	COL(i, remap,             5,      4,       2,    2,    0,       2,      2,     2,         2) \
	COL(i, cow,               5,      4,       2,    2,    1,       4,      2,     2,         3) \
	COL(i, replace,           3,      2,       1,    1,    0,       2,      1,     1,         1) \
	COL(i, dontneed,          6,      4,       0,    4,    1,      10,      2,     2,         3) \
	COL(i, age_reclaim,      10,      2,       0,    2,    2,       1,      2,    10,         3) \
	COL(i, kmap,              3,      3,       0,    4,    0,       2,      2,     2,         0) \
	COL(i, kunmap,            3,      3,       0,    4,    0,       2,      2,     3,         0) \
	COL(i, kprotect,          3,      3,       0,    1,    0,       4,      1,     1,         0) \
	COL(i, attrs,             3,      2,       0,    0,    0,       2,      1,     1,         1) \
	COL(i, retable,           3,      2,       0,    0,    0,       2,     20,     2,         2) \
	COL(i, lazy_spec,        30,     30,      70,   30,   30,      30,     60,    30,        30) \
	COL(i, lazy_tick,        10,     10,       5,   20,    2,       5,     10,    10,        10) \
	COL(i, lazy_work,        10,     10,       0,    5,    5,       5,      5,     5,         5) \
	COL(i, lazy_kaccess,     15,     15,       0,   15,   10,      15,     10,    15,        15) \
	COL(i, lazy_preempt,      3,      3,       0,    3,    1,       1,      5,     2,         3) \
	COL(i, lazy_min,          5,      5,      20,    5,    5,       5,      5,    20,         5) \
	COL(i, lazy_max,         40,     30,     120,   30,   20,      20,     40,   400,        30) \
	COL(i, lazy_ok,          25,     25,      25,   80,   25,      25,     40,    40,        40) \
	COL(i, states,            0,      0,       0,    0,    0,       0,     20,     5,         0) \
	COL(i, quiet,             0,      0,       0,    0,    0,       0,      0,    25,         0) \
	COL(i, quiet_min,         0,      0,       0,    0,    0,       0,      0,    40,         0) \
	COL(i, quiet_max,         0,      0,       0,    0,    0,       0,      0,   160,         0) \
	COL(i, quiet_tick,        0,      0,       0,    0,    0,       0,      0,    30,         0) \
	COL(i, idle_notick,       0,      0,       0,    0,    0,       0,      0,     1,         0) \
	COL(i, preempt_max,       0,      0,       0,    0,    0,       0,     12,     0,         0) \
	COL(i, off_long,         20,     20,       0,   20,    0,       0,     10,    50,        10) \
	COL(i, flush_mix[0],      0,      0,       0,    0,    0,       0,      0,    10,         0) \
	COL(i, flush_mix[1],      0,      0,       0,    0,    0,       0,      0,    90,         0) \
	COL(i, flush_mix[2],      0,      0,       0,    0,    0,       0,      0,     0,         0) \
	COL(i, flush_mix[3],      0,      0,       0,    0,    0,       0,      0,     0,         0) \
	COL(i, matrix,            0,      0,       0,    0,    0,       0,      1,     0,         0) \
	COL(i, hold,              0,      0,       0,    0,    0,       0,      0,     0,         8) \
	COL(i, hold_min,          0,      0,       0,    0,    0,       0,      0,     0,        50) \
	COL(i, hold_max,          0,      0,       0,    0,    0,       0,      0,     0,       400) \
	COL(i, hold_stamp,        0,      0,       0,    0,    0,       0,      0,     0,        70)

#define COL(i, field, ...) .field = PICK##i(__VA_ARGS__, 0),
#define PICK0(n, ...) n
#define PICK1(n, ...) PICK0(__VA_ARGS__)
#define PICK2(n, ...) PICK1(__VA_ARGS__)
#define PICK3(n, ...) PICK2(__VA_ARGS__)
#define PICK4(n, ...) PICK3(__VA_ARGS__)
#define PICK5(n, ...) PICK4(__VA_ARGS__)
#define PICK6(n, ...) PICK5(__VA_ARGS__)
#define PICK7(n, ...) PICK6(__VA_ARGS__)
#define PICK8(n, ...) PICK7(__VA_ARGS__)

const struct profile profiles[] = {
	{ .name = "normal", WEIGHTS(0) },
	{ .name = "switch", WEIGHTS(1) },
	{ .name = "planted", WEIGHTS(2) },
	{ .name = "lazy", WEIGHTS(3) },
	{ .name = "wide", WEIGHTS(4) },
	{ .name = "compute", WEIGHTS(5) },
	{ .name = "states", WEIGHTS(6) },
	{ .name = "quiet", WEIGHTS(7) },
	{ .name = "preempted", WEIGHTS(8) },
};

const size_t nr_profiles = sizeof(profiles) / sizeof(profiles[0]);
