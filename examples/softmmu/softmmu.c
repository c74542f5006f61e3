/* SPDX-License-Identifier: MIT */
/*
 * softmmu: real TLB shootdowns between threads, in the style of an emulator's
 * software TLB (QEMU's TCG keeps one per vCPU), driven by libtlbpol.
 *
 * The machine.  N vCPU threads run a guest workload over one shared guest
 * page table: NPAGES pages of 4 KiB, whose PTEs live in page-table pages
 * ("table pages") of GROUP_PAGES PTEs reached through a directory.  Each vCPU
 * translates every guest access through its own soft TLB (direct-mapped,
 * vpn -> host frame, permissions) and a paging-structure cache (PSC: the
 * directory entries it walked through).  Both are filled only by the vCPU's
 * own walks and emptied only by ops->flush_local, by the catch-up flushes the
 * engine asks for, and by a fault at the address.  The MMU behaves as x86's,
 * and the engine is told so (TLBPOL_ARCH_X86_64): a walk sets A, the first
 * write through an entry without D sets D, each with an atomic update of the
 * PTE that fails once the PTE changed (so a clean entry can no longer write
 * once its PTE is gone); a fault drops the faulting address's TLB and PSC
 * entries (SDM 4.10.4.1), which the profile's no-flush rules for upgrades and
 * spurious faults rely on.
 *
 * Who changes the page table.  A memory manager thread, with an engine CPU of
 * its own (CPU N, as kswapd is a kernel thread of its own), reclaims clean
 * and dirty pages, unmaps ranges (MADV_DONTNEED), write-protects, remaps,
 * migrates and ages pages and frees page-table pages, each through
 * tlbpol_submit() and tlbpol_flush().  It hands frames and table pages back
 * to the free lists only from tlbpol_defer_free() callbacks, which poison
 * them first; freed frames are reused for new mappings at once (LIFO).  The
 * vCPUs resolve their own page faults: installs of absent or swapped-out
 * pages (the install is submitted before the PTE is published), write faults
 * on write-protected pages (upgrades), spurious faults.
 *
 * Interrupts.  ops->send_ipi sets the target's kick word and wakes it with a
 * futex if it sleeps.  A running vCPU looks at its kick word between guest
 * "instruction blocks" of BLOCK_ACCESSES accesses, as TCG looks at
 * cpu->exit_request between translation blocks, and calls
 * tlbpol_handle_ipi(); a vCPU waiting in the engine does the same from
 * ops->relax.  vCPUs halt now and then (tlbpol_cpu_state() IDLE, futex sleep
 * with a short timeout, speculative walks, ticks; back to RUNNING, flushing
 * everything when that call returns 1) and block in the emulator now and then
 * (PREEMPTED: nothing runs, but a kick is still served, as a host scheduling
 * the vCPU to deliver it), so the engine meets lazy and preempted CPUs.
 * Running vCPUs call tlbpol_tick() every TICK_BLOCKS blocks.
 *
 * The check: every guest access is checked, and a stale use is counted only
 * where the engine reported the relevant flush complete.
 *  - Frames.  Word 0 of each frame holds the identity it was allocated for
 *    (guest vpn and an allocation generation); a TLB entry records the
 *    identity it was filled with.  Frames are freed only from deferred frees,
 *    which run only after every flush pending when they were registered, so
 *    reading poison or another identity through a TLB entry is always a stale
 *    use; so is a freed frame whose poison was overwritten (a late write
 *    through a stale entry), found when the frame is reused.
 *  - Page-table changes.  Each software change of a PTE takes the next
 *    version of that page; a TLB entry records the version it was filled
 *    from.  When the engine reports a change complete (tlbpol_submit()
 *    returns with a BY_NOW decision; tlbpol_flush(by) returns for changes due
 *    by then; an install at that address returns; a deferred free registered
 *    after it runs), the manager raises the page's "completed" word cv to the
 *    PTE that change produced.  An access through an entry older than cv
 *    that grants more than cv (tools/model/stale.h: cv not present, another
 *    frame, a permission cv lacks, a U/S change, a cached D cv lost) is a
 *    stale use.  That is sound: before completion a vCPU may use
 *    its old entry (the kick may not have arrived), and completion is
 *    reported only once every vCPU the engine did not skip has flushed on its
 *    own thread; a skipped vCPU is idle or blocked and uses no entry before
 *    the catch-up flush.  An entry, once flushed, never comes back with its
 *    old version, so an older entry seen after completion was there at
 *    completion.
 *  - Table pages.  A table page is freed (and poisoned) only from a deferred
 *    free after its TABLES_FREED flush.  An idle vCPU keeps the address space
 *    loaded and its MMU walks speculatively through its PSC (the reason the
 *    engine interrupts idle CPUs when page tables are freed); a walk that
 *    reaches a freed table page is a stale use.
 *
 * Measuring.  One run per rule mask (naive = TLBPOL_RULES_NONE, linux =
 * TLBPOL_RULES_LINUX, default = TLBPOL_RULES_DEFAULT, or any mask).  The
 * first runs --seconds and defines the work: how many guest accesses each
 * vCPU made and how many operations the manager made.  The manager is paced
 * by the guest (one operation per accesses_per_op guest accesses, as memory
 * pressure follows the guest's activity), and a guest that gets MAX_LAG
 * operations ahead of a manager that cannot keep up stalls, as direct
 * reclaim throttles a task; so every policy interleaves the same guest work
 * with the same page-table changes.  The others repeat exactly that work, so
 * their wall times, kicks and flushes compare directly.
 *
 * Exit status: 0 with no stale use; 1 if any was found ("stale uses found");
 * with --expect-stale (the planted-bug build, or --bug) 0 only if some were
 * found; 2 on a usage or internal error.  --bug plants a bug in this program
 * instead (vCPU 0 ignores page flushes, or vCPUs ignore the catch-up flush),
 * to show that the checks catch it.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <tlbpol/tlbpol.h>

#include "../../tools/model/stale.h"

/* --free-ticks: the engine's cfg.free_ticks (0: its default). */
static uint32_t free_ticks;

/* ------------------------------------------------------------------------ */
/* Sizes                                                                    */
/* ------------------------------------------------------------------------ */

#define PAGE_SHIFT 12
#define FRAME_WORDS 512                 /* 4 KiB host frames of 64-bit words */
#define VA_BASE 0x7f0000000000ULL       /* guest virtual address of page 0 */
#define NPAGES 4096u                    /* guest pages */
#define GROUP_SHIFT 6
#define GROUP_PAGES (1u << GROUP_SHIFT) /* PTEs per table page: 64 table pages */
#define NGROUPS (NPAGES / GROUP_PAGES)
#define NTABLES (NGROUPS + 16u)         /* table pages: one per group + in flight */
#define NFRAMES (NPAGES + NPAGES / 2)   /* frames: every page mapped + in flight */
#define TLB_SIZE 1024u                  /* soft TLB entries per vCPU, direct-mapped */
#define BLOCK_ACCESSES 16               /* guest accesses between kick checks */
#define TICK_BLOCKS 256                 /* tlbpol_tick() every 4096 accesses */
#define HOT_PAGES 512u                  /* the guest's working set, drifting */
#define CLUSTER 32u                     /* pages per reclaim batch */
#define MAX_OP_PAGES GROUP_PAGES        /* pages one manager operation touches */
#define HALT_TICK_NS 100000L            /* a halted vCPU wakes this often */
#define MAX_REPORTS 5                   /* stale uses printed per policy */
#define MAX_VCPUS 256
#define THROTTLE_BLOCKS 16              /* vCPUs look at the pace and clock this often */
#define MAX_LAG 4                       /* manager operations the guest may run ahead */

#define PTE_P TLBPOL_PTE_PRESENT
#define PTE_W TLBPOL_PTE_WRITE
#define PTE_U TLBPOL_PTE_USER
#define PTE_A TLBPOL_PTE_ACCESSED
#define PTE_D TLBPOL_PTE_DIRTY

/* What freed frames and table pages are filled with. */
#define POISON 0xdeadbeefdeadbeefULL

/*
 * A PTE word: TLBPOL_PTE_* bits (0-6), frame (8-27), version (32-63).  A
 * not-present PTE keeps the version of the change that removed it.
 */
static inline uint32_t pte_perms(uint64_t p) { return (uint32_t)(p & TLBPOL_PTE_ALL); }
static inline uint32_t pte_frame(uint64_t p) { return (uint32_t)((p >> 8) & 0xfffff); }
static inline uint32_t pte_ver(uint64_t p) { return (uint32_t)(p >> 32); }
static inline uint64_t pte_make(uint32_t perms, uint32_t frame, uint32_t ver)
{
	return (uint64_t)(perms & TLBPOL_PTE_ALL) | (uint64_t)frame << 8 | (uint64_t)ver << 32;
}

/* A frame's identity (its word 0): vpn and allocation generation (< 2^31, so
 * never POISON). */
static inline uint64_t frame_ident(uint32_t vpn, uint32_t gen)
{
	return (uint64_t)gen << 32 | vpn;
}

/*
 * A table page's identity: group and generation (< 2^48, never POISON).  A
 * directory entry (and a PSC entry, its copy) is the table page's index + 1
 * in bits 48-63 and its identity below.  0 is "no table".
 */
#define IDENT_MASK ((1ULL << 48) - 1)
static inline uint64_t table_ident(uint32_t g, uint32_t gen)
{
	return ((uint64_t)gen << 16 | g) & IDENT_MASK;
}
static inline uint64_t dir_make(uint32_t t, uint64_t ident)
{
	return (uint64_t)(t + 1) << 48 | ident;
}
static inline uint32_t dir_table(uint64_t d) { return (uint32_t)(d >> 48) - 1; }
static inline uint64_t dir_ident(uint64_t d) { return d & IDENT_MASK; }

/* ------------------------------------------------------------------------ */
/* The machine                                                              */
/* ------------------------------------------------------------------------ */

struct frame {
	_Atomic uint64_t w[FRAME_WORDS];
};

struct table {
	_Atomic uint64_t ident;
	_Atomic uint64_t pte[GROUP_PAGES];
};

/*
 * Everything a vCPU or the manager may read of another thread's work is an
 * atomic (PTEs, directory, frames, table pages, page states): a buggy engine
 * then shows up as a stale use, not as a data race.  Frames are accessed
 * with relaxed atomics, which are plain moves on x86.
 */

/* One soft TLB entry.  Private to its vCPU: only its own thread fills,
 * uses and flushes it (flush_local runs on the CPU it flushes). */
struct tlb_entry {
	uint32_t tag; /* vpn + 1; 0: empty */
	uint32_t frame;
	uint32_t perms;
	uint32_t ver;   /* the PTE version it was filled from */
	uint64_t ident; /* the frame identity it was filled with */
};

enum counter {
	C_ACCESSES, C_WALKS, C_FAULTS, C_INSTALLS, C_UPGRADES, C_SPURIOUS, C_RETRIES,
	C_IRQS, C_KICKS, C_WAKEUPS, C_FLUSHES, C_CATCHUPS, C_IDLE, C_PREEMPT, C_OPS,
	C_OP_PAGES, C_THROTTLED, C_HALTED_US, C_MAX
};

struct world;

/* One engine CPU: a vCPU (0 .. nv-1) or the memory manager (nv). */
struct cpu {
	/* --- read and written by other threads --- */
	_Alignas(64) _Atomic int kick; /* an interrupt is pending; the futex word */
	_Atomic int sleeping;          /* in a futex sleep: a kick must wake it */
	_Atomic uint64_t progress;     /* guest accesses done (vCPUs) */
	_Atomic int finished;          /* done with its share of the work */

	/* --- this CPU's thread only (read by main after join) --- */
	_Alignas(64) struct world *w;
	uint32_t id;
	int halted;           /* in an idle spell: for reports */
	uint64_t rng;
	uint64_t quota;       /* guest accesses to make (fixed-work runs) */
	uint64_t wval;        /* next value a guest write stores */
	uint64_t sum;         /* what guest reads return, kept so they happen */
	uint64_t n[C_MAX];
	struct tlb_entry tlb[TLB_SIZE];
	uint64_t psc[NGROUPS]; /* directory entries walked through; 0: none */
};

/* Page states, under the page lock.  The lock is the "page-table lock" of
 * one PTE, and the page lock of reclaim: the manager keeps pages it
 * reclaims or unmaps locked until their deferred free ran (no address is
 * reused before its frames are freed: what TLBPOL_EVF_LAZY_OK promises). */
#define PG_LOCKED 0x80000000u
enum { PG_ABSENT = 0, PG_MAPPED = 1, PG_SWAPPED = 2 };

enum stale_kind {
	S_FREED_FRAME,   /* read/write through a TLB entry to a freed (poisoned) frame */
	S_REUSED_FRAME,  /* ... to a frame now allocated to another page */
	S_READ_AFTER,    /* read through an entry a completed change removed */
	S_WRITE_AFTER,   /* write through an entry a completed change made read-only/removed */
	S_FREED_TABLE,   /* a walk through the PSC reached a freed table page */
	S_LATE_WRITE,    /* a freed frame's poison was overwritten */
	S_MAX
};

static const char *const stale_names[S_MAX] = {
	"freed frame", "reused frame", "read after flush", "write after flush",
	"freed table page", "write into freed frame",
};

/* Bugs the program can plant in itself (--bug), to show that the checks
 * catch a stale TLB entry wherever it comes from. */
enum bug { BUG_NONE, BUG_LOST_FLUSH, BUG_NO_CATCHUP };

enum op_kind {
	OP_RECLAIM, OP_UNMAP, OP_PROTECT, OP_MIGRATE, OP_REMAP, OP_TABLES, OP_AGING, OP_MAX
};

struct mix {
	const char *name, *what;
	unsigned weight[OP_MAX];
	uint32_t accesses_per_op;   /* guest accesses per manager operation */
	/* A vCPU runs for 0 .. 2 * run_us (average run_us), then halts for
	 * idle_min_us .. idle_max_us; independently it blocks in the emulator
	 * (PREEMPTED) on average every preempt_every_us.  In time, not guest
	 * work, so a vCPU idles the same share of its time in any build. */
	uint32_t run_us, idle_min_us, idle_max_us;
	uint32_t preempt_every_us, preempt_min_us, preempt_max_us; /* 0: never */
};

static const struct mix mixes[] = {
	/* About 12% of the time halted, 1% blocked. */
	{ "mixed", "every operation",
	  /* reclaim unmap protect migrate remap tables aging */
	  { 30, 20, 15, 10, 10, 5, 10 },
	  4096, 4000, 100, 1000, 20000, 50, 300 },
	{ "reclaim", "reclaim-heavy: clean and dirty pages on every vCPU, 32 per batch",
	  { 90, 5, 5, 0, 0, 0, 0 },
	  4096, 4000, 100, 1000, 20000, 50, 300 },
	/* About half of the time halted. */
	{ "tables", "page-table pages freed under halted vCPUs",
	  { 20, 20, 10, 0, 0, 50, 0 },
	  2048, 1000, 200, 2000, 0, 0, 0 },
};
#define NR_MIXES (sizeof(mixes) / sizeof(mixes[0]))

struct world {
	struct tlbpol_engine *eng;
	void *eng_mem;
	struct tlbpol_as *as;
	const struct mix *mix;
	const char *policy;
	uint64_t rules;
	enum bug bug;
	uint32_t nv;  /* vCPUs: engine CPUs 0 .. nv-1 */
	uint32_t mgr; /* the memory manager's engine CPU: nv */
	struct cpu *cpu;
	struct frame *frames;
	struct table *tables;
	uint64_t (*backing)[FRAME_WORDS]; /* the swap device: one slot per page */
	uint8_t *backing_valid;           /* under the page lock */
	uint32_t *pver;                   /* version of the page's last change; page lock */
	_Atomic uint64_t dir[NGROUPS];
	_Atomic uint32_t pstate[NPAGES];
	_Atomic uint64_t cv[NPAGES];      /* PTE word of the latest completed change */

	pthread_mutex_t pool_lock;        /* held for a push or pop only */
	uint32_t nfree_frames, nfree_tables;
	uint32_t free_frames[NFRAMES];
	uint32_t free_tables[NTABLES];
	_Atomic uint32_t frame_gen, table_gen;

	_Atomic uint32_t hot_base;        /* first page of the guest's working set */
	_Atomic uint64_t guest_limit;     /* guest accesses allowed before the manager's next op */
	_Atomic int stop;                 /* timed run: the time is up */
	_Atomic int abort_run;            /* fixed-work run: too slow, give up */
	_Atomic int all_done;
	int timed;
	uint64_t mgr_quota;
	double t_start, t_end;
	pthread_barrier_t start;

	_Atomic uint64_t stale_total;
	_Atomic uint64_t stale[S_MAX];
	_Atomic uint64_t dfree_reg, dfree_run;
};

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("softmmu: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_Exit(2);
}

static int chk(int r, const char *what)
{
	if (r < 0)
		die("%s failed: %s", what, strerror(-r));
	return r;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* @r mapped to lo .. hi. */
static uint32_t between(uint64_t r, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(r % (hi - lo + 1));
}

static uint64_t seed_of(uint64_t seed, uint32_t who)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (who + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

static void futex_wait(_Atomic int *word, int val, long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic int *word)
{
	syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Sleep until kicked or @ns passed.  The sender sets kick and then reads
 * sleeping; we set sleeping and then (in the kernel, atomically with going
 * to sleep) read kick: either it sees us asleep and wakes us, or we see the
 * kick and do not sleep.
 */
static void sleep_on_kick(struct cpu *c, long ns)
{
	atomic_store(&c->sleeping, 1);
	if (!atomic_load(&c->kick))
		futex_wait(&c->kick, 0, ns);
	atomic_store(&c->sleeping, 0);
}

/* Take a pending interrupt: what a CPU does between instructions. */
static void poll_kick(struct cpu *c)
{
	if (atomic_load_explicit(&c->kick, memory_order_relaxed) && atomic_exchange(&c->kick, 0)) {
		c->n[C_IRQS]++;
		chk(tlbpol_handle_ipi(c->w->eng, c->id), "tlbpol_handle_ipi");
	}
}

static void stale(struct world *w, enum stale_kind k, const char *fmt, ...)
{
	uint64_t n = atomic_fetch_add(&w->stale_total, 1);
	char msg[512];
	va_list ap;

	atomic_fetch_add(&w->stale[k], 1);
	if (n >= MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("STALE USE #%" PRIu64 " [%s] %s: %s\n", n + 1, w->policy, stale_names[k], msg);
}

static const char *perms_str(uint32_t p, char *buf)
{
	snprintf(buf, 16, "%s%s%s%s%s", p & PTE_P ? "P" : "-", p & PTE_W ? "W" : "-",
		 p & PTE_U ? "U" : "-", p & PTE_A ? "A" : "-", p & PTE_D ? "D" : "-");
	return buf;
}

/* ------------------------------------------------------------------------ */
/* Pages, frames and table pages                                            */
/* ------------------------------------------------------------------------ */

static int page_trylock(struct world *w, uint32_t vpn, uint32_t *state)
{
	uint32_t s = atomic_load_explicit(&w->pstate[vpn], memory_order_relaxed);

	if (s & PG_LOCKED)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&w->pstate[vpn], &s, s | PG_LOCKED,
						     memory_order_acquire, memory_order_relaxed))
		return 0;
	*state = s;
	return 1;
}

static void page_unlock(struct world *w, uint32_t vpn, uint32_t state)
{
	atomic_store_explicit(&w->pstate[vpn], state, memory_order_release);
}

/* The change that produced PTE word @word is complete: raise cv (never
 * lower it: completions may be learnt out of order). */
static void cv_raise(struct world *w, uint32_t vpn, uint64_t word)
{
	uint64_t cur = atomic_load_explicit(&w->cv[vpn], memory_order_relaxed);

	while (pte_ver(cur) < pte_ver(word) &&
	       !atomic_compare_exchange_weak_explicit(&w->cv[vpn], &cur, word, memory_order_release,
						      memory_order_relaxed))
		;
}

/* The PTE of @vpn as software finds it (through the directory, not a PSC).
 * The caller holds a page lock in the group, so the table cannot go. */
static _Atomic uint64_t *sw_pte(struct world *w, uint32_t vpn)
{
	uint64_t d = atomic_load(&w->dir[vpn >> GROUP_SHIFT]);

	return d ? &w->tables[dir_table(d)].pte[vpn & (GROUP_PAGES - 1)] : NULL;
}

static int frame_alloc(struct world *w)
{
	int f = -1;

	pthread_mutex_lock(&w->pool_lock);
	if (w->nfree_frames)
		f = (int)w->free_frames[--w->nfree_frames];
	pthread_mutex_unlock(&w->pool_lock);
	return f;
}

static void poison_words(_Atomic uint64_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&p[i], POISON, memory_order_relaxed);
}

/*
 * Give frame @f, just allocated, its identity and contents: zeros, a copy of
 * @from_backing or of frame @from.  It must still hold the poison it was
 * freed with: anything else was written through a stale entry after free.
 */
static void frame_fill(struct world *w, uint32_t f, uint32_t vpn, const uint64_t *from_backing,
		       int from)
{
	_Atomic uint64_t *d = w->frames[f].w;
	uint32_t broken = 0;

	for (uint32_t i = 0; i < FRAME_WORDS; i++) {
		uint64_t v = 0;

		if (atomic_load_explicit(&d[i], memory_order_relaxed) != POISON)
			broken++;
		if (i == 0)
			v = frame_ident(vpn, atomic_fetch_add(&w->frame_gen, 1) + 1);
		else if (from_backing)
			v = from_backing[i];
		else if (from >= 0)
			v = atomic_load_explicit(&w->frames[from].w[i], memory_order_relaxed);
		atomic_store_explicit(&d[i], v, memory_order_relaxed);
	}
	if (broken)
		stale(w, S_LATE_WRITE,
		      "frame %u, reused for vpn %#x, had %u of %u poisoned words overwritten "
		      "while free", f, vpn, broken, FRAME_WORDS);
}

/* A table page for group @g, installed if there is none.  The caller holds a
 * page lock in @g (freeing a table page takes all of them).  NULL: none free. */
static struct table *ensure_table(struct world *w, uint32_t g)
{
	uint64_t d = atomic_load(&w->dir[g]), nd;
	struct table *t;
	int ti = -1;

	if (d)
		return &w->tables[dir_table(d)];
	pthread_mutex_lock(&w->pool_lock);
	if (w->nfree_tables)
		ti = (int)w->free_tables[--w->nfree_tables];
	pthread_mutex_unlock(&w->pool_lock);
	if (ti < 0)
		return NULL;
	t = &w->tables[ti];
	for (uint32_t i = 0; i < GROUP_PAGES; i++)
		atomic_store(&t->pte[i], 0);
	atomic_store(&t->ident, table_ident(g, atomic_fetch_add(&w->table_gen, 1) + 1));
	nd = dir_make((uint32_t)ti, atomic_load(&t->ident));
	if (atomic_compare_exchange_strong(&w->dir[g], &d, nd))
		return t;
	/* Another vCPU (holding another page lock of the group) was first;
	 * ours was never visible. */
	poison_words(&t->ident, 1 + GROUP_PAGES);
	pthread_mutex_lock(&w->pool_lock);
	w->free_tables[w->nfree_tables++] = (uint32_t)ti;
	pthread_mutex_unlock(&w->pool_lock);
	return &w->tables[dir_table(d)];
}

static struct tlbpol_decision submit(struct world *w, uint32_t cpu, uint32_t kind,
				     uint32_t flags, uint32_t vpn, uint32_t nr, uint32_t old_perms,
				     uint32_t new_perms)
{
	struct tlbpol_event ev = { sizeof(ev), kind, flags, PAGE_SHIFT,
				   VA_BASE + ((uint64_t)vpn << PAGE_SHIFT), nr,
				   old_perms & TLBPOL_PTE_ALL, new_perms & TLBPOL_PTE_ALL };
	struct tlbpol_decision d;

	chk(tlbpol_submit(w->eng, w->as, cpu, &ev, &d), "tlbpol_submit");
	return d;
}

/* ------------------------------------------------------------------------ */
/* Engine callbacks                                                         */
/* ------------------------------------------------------------------------ */

static void tlb_flush_all(struct cpu *c)
{
	memset(c->tlb, 0, sizeof(c->tlb));
	memset(c->psc, 0, sizeof(c->psc));
}

static void cb_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct world *w = ctx;
	struct cpu *c = &w->cpu[cpu];

	c->n[C_FLUSHES]++;
	if (cpu == w->mgr)
		return; /* the memory manager runs no guest code: it has no TLB */
	if (w->bug == BUG_LOST_FLUSH && cpu == 0 && f->kind == TLBPOL_FLUSH_PAGES)
		return; /* planted: vCPU 0's invlpg does nothing */
	if (f->kind != TLBPOL_FLUSH_PAGES) {
		tlb_flush_all(c); /* a CR3 write: paging-structure caches too */
		return;
	}
	for (uint32_t r = 0; r < f->nr_ranges; r++) {
		uint64_t first = (f->ranges[r].va - VA_BASE) >> PAGE_SHIFT;
		uint64_t n = f->ranges[r].nr_pages << (f->ranges[r].page_shift - PAGE_SHIFT);

		for (uint64_t p = first; p < first + n && p < NPAGES; p++)
			if (c->tlb[p % TLB_SIZE].tag == p + 1)
				c->tlb[p % TLB_SIZE].tag = 0;
		/* Table pages under the range were freed: drop the PSC entries
		 * that point to them. */
		if (f->flags & TLBPOL_FLUSHF_TABLES)
			for (uint64_t g = first >> GROUP_SHIFT;
			     g <= (first + n - 1) >> GROUP_SHIFT && g < NGROUPS; g++)
				c->psc[g] = 0;
	}
}

static void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	struct world *w = ctx;
	struct cpu *me = &w->cpu[from];

	for (int t = tlbpol_cpuset_next(targets, -1); t >= 0; t = tlbpol_cpuset_next(targets, t)) {
		struct cpu *x = &w->cpu[t];

		me->n[C_KICKS]++;
		if (!atomic_exchange(&x->kick, 1) && atomic_load(&x->sleeping)) {
			futex_wake(&x->kick);
			me->n[C_WAKEUPS]++;
		}
	}
}

/* Waiting for other CPUs: take our own interrupts (so that two CPUs
 * shooting each other down both finish) and let the targets run. */
static void cb_relax(void *ctx, uint32_t cpu)
{
	struct world *w = ctx;

	poll_kick(&w->cpu[cpu]);
	sched_yield();
}

static const struct tlbpol_ops softmmu_ops = {
	.size = sizeof(softmmu_ops),
	.flush_local = cb_flush_local,
	.send_ipi = cb_send_ipi,
	.relax = cb_relax,
};

/* ------------------------------------------------------------------------ */
/* The vCPU's MMU                                                           */
/* ------------------------------------------------------------------------ */

/*
 * The hardware walk to @vpn's PTE: the directory entry from the PSC, else
 * from the directory (then cached).  Returns 0 if there is no table page;
 * reports a walk through a freed table page (its identity is not the one
 * the PSC entry was filled with, before or after reading the PTE).
 */
static int mmu_walk(struct cpu *c, uint32_t vpn, _Atomic uint64_t **slotp, uint64_t *ptep,
		    int spec)
{
	struct world *w = c->w;
	uint32_t g = vpn >> GROUP_SHIFT;
	uint64_t d = c->psc[g], id1, id2, p;
	struct table *t;

	if (!d) {
		d = atomic_load(&w->dir[g]);
		if (!d)
			return 0;
		c->psc[g] = d;
	}
	t = &w->tables[dir_table(d)];
	id1 = atomic_load(&t->ident);
	p = atomic_load(&t->pte[vpn & (GROUP_PAGES - 1)]);
	id2 = atomic_load(&t->ident);
	if (id1 != dir_ident(d) || id2 != dir_ident(d) || p == POISON) {
		stale(w, S_FREED_TABLE,
		      "vCPU %u (%s) walked vpn %#x through its paging-structure cache to "
		      "table page %u (group %u, generation %" PRIu64 "), which was freed: "
		      "it now reads %s",
		      c->id, spec ? "halted, speculative walk" : c->halted ? "halted" : "running",
		      vpn, dir_table(d), g, dir_ident(d) >> 16,
		      id2 == POISON || p == POISON ? "poison" : "as another table page");
		c->psc[g] = 0;
		return 0;
	}
	*slotp = &t->pte[vpn & (GROUP_PAGES - 1)];
	*ptep = p;
	return 1;
}

/* Fill @e for @vpn from the page table; 0 if the walk faults. */
static int tlb_fill(struct cpu *c, uint32_t vpn, struct tlb_entry *e)
{
	struct world *w = c->w;
	_Atomic uint64_t *slot;
	uint64_t p, id;

	c->n[C_WALKS]++;
	for (;;) {
		if (!mmu_walk(c, vpn, &slot, &p, 0) || !(p & PTE_P))
			return 0;
		if (p & PTE_A)
			break;
		/* The MMU sets A with a locked update that fails if the PTE
		 * changed meanwhile; then it walks again. */
		if (atomic_compare_exchange_strong(slot, &p, p | PTE_A)) {
			p |= PTE_A;
			break;
		}
	}
	id = atomic_load_explicit(&w->frames[pte_frame(p)].w[0], memory_order_relaxed);
	if (id == POISON || (uint32_t)id != vpn) {
		/* The PTE is current and its frame is not this page's: the
		 * frame went back to the pool while still mapped. */
		stale(w, S_REUSED_FRAME, "vCPU %u walked vpn %#x to frame %u, which is %s", c->id,
		      vpn, pte_frame(p), id == POISON ? "free (poisoned)" : "another page's");
		return 0;
	}
	e->tag = vpn + 1;
	e->frame = pte_frame(p);
	e->perms = pte_perms(p);
	e->ver = pte_ver(p);
	e->ident = id;
	return 1;
}

/*
 * The first write through an entry without D: the MMU sets D in the PTE with
 * a locked update, which fails once the PTE changed (x86 SDM 4.8; the reason
 * a clean page can be reclaimed with its flush deferred).  0: it failed, the
 * entry must go.
 */
static int dirty_assist(struct cpu *c, struct tlb_entry *e, uint32_t vpn)
{
	_Atomic uint64_t *slot;
	uint64_t p;

	if (!mmu_walk(c, vpn, &slot, &p, 0))
		return 0;
	for (;;) {
		if ((p & (PTE_P | PTE_W)) != (PTE_P | PTE_W) || pte_frame(p) != e->frame ||
		    pte_ver(p) != e->ver)
			return 0;
		if (atomic_compare_exchange_weak(slot, &p, p | PTE_A | PTE_D)) {
			e->perms |= PTE_A | PTE_D;
			return 1;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Page faults (the guest kernel's handler, on the vCPU)                    */
/* ------------------------------------------------------------------------ */

/* Resolve a fault at @vpn.  0: the page is busy (locked by the manager or
 * another vCPU, or no memory): the guest retries the instruction later. */
static int page_fault(struct cpu *c, uint32_t vpn, int write)
{
	struct world *w = c->w;
	uint32_t g = vpn >> GROUP_SHIFT, st, flags = write ? TLBPOL_EVF_WRITE : 0;
	_Atomic uint64_t *slot;
	struct table *t;
	uint64_t p, n;
	int f;

	c->n[C_FAULTS]++;
	/* A fault drops the TLB and paging-structure entries used for the
	 * faulting address (x86 SDM 4.10.4.1). */
	if (c->tlb[vpn % TLB_SIZE].tag == vpn + 1)
		c->tlb[vpn % TLB_SIZE].tag = 0;
	c->psc[g] = 0;
	if (!page_trylock(w, vpn, &st))
		return 0;
	if (st == PG_MAPPED) {
		slot = sw_pte(w, vpn);
		if (!slot)
			die("vpn %#x is mapped but has no table page", vpn);
		p = atomic_load(slot);
		if (write && !(p & PTE_W)) {
			/* Write-protected (dirty tracking): make it writable.  A
			 * present PTE is changed first, then submitted. */
			uint32_t v = ++w->pver[vpn];

			do
				n = pte_make(pte_perms(p) | PTE_W | PTE_A | PTE_D, pte_frame(p), v);
			while (!atomic_compare_exchange_weak(slot, &p, n));
			submit(w, c->id, TLBPOL_EV_FAULT, flags, vpn, 1, pte_perms(p),
			       pte_perms(n));
			cv_raise(w, vpn, n);
			c->n[C_UPGRADES]++;
		} else {
			/* Already allowed: a stale, stricter entry or a race with
			 * another vCPU's install.  Nothing changes. */
			submit(w, c->id, TLBPOL_EV_FAULT, flags, vpn, 1, pte_perms(p),
			       pte_perms(p));
			c->n[C_SPURIOUS]++;
		}
		page_unlock(w, vpn, PG_MAPPED);
		return 1;
	}
	/* Absent or swapped out: install a frame. */
	t = ensure_table(w, g);
	f = t ? frame_alloc(w) : -1;
	if (f < 0) {
		page_unlock(w, vpn, st);
		return 0;
	}
	frame_fill(w, (uint32_t)f, vpn,
		   st == PG_SWAPPED && w->backing_valid[vpn] ? w->backing[vpn] : NULL, -1);
	n = pte_make(PTE_P | PTE_W | PTE_U | PTE_A | (write ? PTE_D : 0), (uint32_t)f,
		     ++w->pver[vpn]);
	/* An install is submitted before the PTE is published: the engine
	 * completes any pending flush that may still cover this address. */
	submit(w, c->id, TLBPOL_EV_FAULT, flags, vpn, 1, 0, pte_perms(n));
	atomic_store(&t->pte[vpn & (GROUP_PAGES - 1)], n);
	cv_raise(w, vpn, n);
	page_unlock(w, vpn, PG_MAPPED);
	c->n[C_INSTALLS]++;
	return 1;
}

/* ------------------------------------------------------------------------ */
/* Guest accesses                                                           */
/* ------------------------------------------------------------------------ */

/*
 * Is entry @e, used after completed PTE word @cvw (it is older), one the
 * completed flush should have removed?  The one definition, for every
 * checker: tools/model/stale.h (softmmu's MMU is x86's).  A harmful entry
 * is a stale use whatever it is used for: a read through an entry that a
 * completed write-protect should have dropped means the flush left it.
 */
static int harmful(const struct tlb_entry *e, uint64_t cvw)
{
	return model_stale_harmful(TLBPOL_ARCH_X86_64, e->perms | PTE_P, e->frame,
				   pte_perms(cvw), pte_frame(cvw));
}

static void report_use(struct cpu *c, enum stale_kind k, const struct tlb_entry *e, uint32_t vpn,
		       int write, uint64_t id, uint64_t cvw)
{
	struct world *w = c->w;
	char b1[16], b2[16];

	stale(w, k,
	      "vCPU %u %s vpn %#x through its TLB entry {frame %u, %s, version %u, "
	      "frame generation %u}; the frame now holds %s; the page's last completed change: "
	      "version %u, %s frame %u",
	      c->id, write ? "wrote" : "read", vpn, e->frame, perms_str(e->perms, b1), e->ver,
	      (uint32_t)(e->ident >> 32),
	      id == POISON ? "poison" : id == e->ident ? "the same page" : "another page",
	      pte_ver(cvw), perms_str(pte_perms(cvw), b2), pte_frame(cvw));
}

/* The access itself, through entry @e, and its check. */
static void touch(struct cpu *c, const struct tlb_entry *e, uint32_t vpn, int write, uint32_t word)
{
	struct world *w = c->w;
	_Atomic uint64_t *fw = w->frames[e->frame].w;
	uint64_t id = atomic_load_explicit(&fw[0], memory_order_relaxed), cvw;

	if (write)
		atomic_store_explicit(&fw[word], c->wval++, memory_order_relaxed);
	else
		c->sum += atomic_load_explicit(&fw[word], memory_order_relaxed);
	cvw = atomic_load_explicit(&w->cv[vpn], memory_order_acquire);
	if (id == POISON)
		report_use(c, S_FREED_FRAME, e, vpn, write, id, cvw);
	else if (id != e->ident)
		report_use(c, S_REUSED_FRAME, e, vpn, write, id, cvw);
	else if (pte_ver(cvw) > e->ver && harmful(e, cvw))
		report_use(c, write ? S_WRITE_AFTER : S_READ_AFTER, e, vpn, write, id, cvw);
}

static void guest_access(struct cpu *c, uint32_t vpn, int write, uint32_t word)
{
	struct tlb_entry *e = &c->tlb[vpn % TLB_SIZE];

	for (int tries = 0; tries < 4; tries++) {
		if (e->tag != vpn + 1 && !tlb_fill(c, vpn, e)) {
			if (!page_fault(c, vpn, write))
				break;
			continue;
		}
		if (write && !(e->perms & PTE_W)) {
			/* Protection fault; it drops the entry. */
			if (!page_fault(c, vpn, write))
				break;
			continue;
		}
		if (write && !(e->perms & PTE_D) && !dirty_assist(c, e, vpn)) {
			e->tag = 0; /* walk again */
			continue;
		}
		touch(c, e, vpn, write, word);
		return;
	}
	c->n[C_RETRIES]++;
}

/* One "translation block" of guest code: BLOCK_ACCESSES accesses, 90% in
 * the working set, 30% writes. */
static void guest_block(struct cpu *c)
{
	uint32_t hot = atomic_load_explicit(&c->w->hot_base, memory_order_relaxed);

	for (int i = 0; i < BLOCK_ACCESSES; i++) {
		uint64_t r = rnd(&c->rng);
		uint32_t vpn = (r & 0xff) < 230 ? (hot + (uint32_t)(r >> 8) % HOT_PAGES) % NPAGES
						: (uint32_t)(r >> 8) % NPAGES;

		guest_access(c, vpn, (r >> 40) % 10 < 3,
			     1 + (uint32_t)(r >> 44) % (FRAME_WORDS - 1));
	}
}

/*
 * A halted vCPU's MMU may still walk the loaded page tables (speculation,
 * prefetch): through its PSC, without filling its TLB.  That is why the
 * engine still interrupts idle CPUs when page tables are freed.
 */
static void speculative_walks(struct cpu *c)
{
	uint32_t hot = atomic_load_explicit(&c->w->hot_base, memory_order_relaxed);

	for (int i = 0; i < 4; i++) {
		uint32_t vpn = (uint32_t)(hot + NPAGES - GROUP_PAGES * 4 +
					  rnd(&c->rng) % (HOT_PAGES + GROUP_PAGES * 4)) % NPAGES;
		_Atomic uint64_t *slot;
		uint64_t p;

		(void)mmu_walk(c, vpn, &slot, &p, 1);
	}
}

/* Halt (IDLE) or block in the emulator (PREEMPTED) for about @us. */
static void vcpu_halt(struct cpu *c, uint32_t state, uint32_t us)
{
	struct world *w = c->w;
	double start = now_s(), end = start + us * 1e-6, left;
	int r;

	chk(tlbpol_cpu_state(w->eng, c->id, state), "tlbpol_cpu_state");
	c->halted = 1;
	c->n[state == TLBPOL_CPU_IDLE ? C_IDLE : C_PREEMPT]++;
	while ((left = end - now_s()) > 0) {
		sleep_on_kick(c, left * 1e9 < HALT_TICK_NS ? (long)(left * 1e9) + 1 : HALT_TICK_NS);
		poll_kick(c);
		if (state == TLBPOL_CPU_IDLE) {
			chk(tlbpol_tick(w->eng, c->id), "tlbpol_tick");
			speculative_walks(c);
		}
	}
	c->halted = 0;
	c->n[C_HALTED_US] += (uint64_t)((now_s() - start) * 1e6);
	/* Flushes may have been skipped meanwhile: 1 means flush everything
	 * (paging-structure caches included) before running guest code. */
	r = chk(tlbpol_cpu_state(w->eng, c->id, TLBPOL_CPU_RUNNING), "tlbpol_cpu_state");
	if (r == 1 && w->bug != BUG_NO_CATCHUP) {
		tlb_flush_all(c);
		c->n[C_CATCHUPS]++;
	}
}

/*
 * Memory pressure follows the guest: the manager makes one operation per
 * accesses_per_op guest accesses.  A guest more than MAX_LAG operations ahead
 * of a manager that cannot keep up stalls, as a task under memory pressure
 * is throttled in direct reclaim, so that every policy interleaves the same
 * guest work with the same page-table changes; the stall counts in the wall
 * time of the policy that caused it.  A stalled vCPU is running (its TLB is
 * live) and takes its interrupts.
 */
static void vcpu_throttle(struct cpu *c)
{
	struct world *w = c->w;
	int stalled = 0;

	for (;;) {
		uint64_t total = 0;

		for (uint32_t i = 0; i < w->nv; i++)
			total += atomic_load_explicit(&w->cpu[i].progress, memory_order_relaxed);
		if (total <= atomic_load_explicit(&w->guest_limit, memory_order_relaxed) ||
		    atomic_load_explicit(&w->stop, memory_order_relaxed) ||
		    atomic_load_explicit(&w->abort_run, memory_order_relaxed))
			break;
		if (!stalled++)
			c->n[C_THROTTLED]++;
		sleep_on_kick(c, 20000);
		poll_kick(c);
	}
}

static void *vcpu_main(void *arg)
{
	struct cpu *c = arg;
	struct world *w = c->w;
	const struct mix *m = w->mix;
	uint64_t done = 0, blocks = 0;
	double next_idle, next_preempt;
	int need = 0;

	pthread_barrier_wait(&w->start);
	next_idle = now_s() + between(rnd(&c->rng), 0, 2 * m->run_us) * 1e-6;
	next_preempt = now_s() + between(rnd(&c->rng), 0, 2 * m->preempt_every_us) * 1e-6;
	chk(tlbpol_switch(w->eng, c->id, w->as, &need), "tlbpol_switch");
	if (need)
		tlb_flush_all(c);
	for (;;) {
		double t;

		if (atomic_load_explicit(&w->stop, memory_order_relaxed) ||
		    atomic_load_explicit(&w->abort_run, memory_order_relaxed) ||
		    (!w->timed && done >= c->quota))
			break;
		guest_block(c);
		done += BLOCK_ACCESSES;
		atomic_store_explicit(&c->progress, done, memory_order_relaxed);
		poll_kick(c);
		if (++blocks % TICK_BLOCKS == 0)
			chk(tlbpol_tick(w->eng, c->id), "tlbpol_tick");
		if (blocks % THROTTLE_BLOCKS)
			continue;
		vcpu_throttle(c);
		t = now_s();
		if (t >= next_idle) {
			vcpu_halt(c, TLBPOL_CPU_IDLE,
				  between(rnd(&c->rng), m->idle_min_us, m->idle_max_us));
			next_idle = now_s() + between(rnd(&c->rng), 0, 2 * m->run_us) * 1e-6;
		} else if (m->preempt_every_us && t >= next_preempt) {
			vcpu_halt(c, TLBPOL_CPU_PREEMPTED,
				  between(rnd(&c->rng), m->preempt_min_us, m->preempt_max_us));
			next_preempt =
				now_s() + between(rnd(&c->rng), 0, 2 * m->preempt_every_us) * 1e-6;
		}
	}
	c->n[C_ACCESSES] = done;
	atomic_store(&c->finished, 1);
	/* Done: halt, still taking interrupts, until the manager is done. */
	chk(tlbpol_cpu_state(w->eng, c->id, TLBPOL_CPU_IDLE), "tlbpol_cpu_state");
	while (!atomic_load(&w->all_done)) {
		sleep_on_kick(c, 1000000);
		poll_kick(c);
		chk(tlbpol_tick(w->eng, c->id), "tlbpol_tick");
	}
	poll_kick(c);
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* The memory manager                                                       */
/* ------------------------------------------------------------------------ */

/* A change whose flush is deferred, and what waits for it. */
struct change {
	uint32_t vpn;
	uint32_t deadline;
	uint64_t word; /* the PTE the change produced */
};

/* One operation's deferred free: frames, table page and pages to release,
 * changes to mark complete, when every flush pending before it is done. */
struct dfree {
	struct world *w;
	uint32_t nframes, npages, nchanges;
	int table;
	uint32_t frames[MAX_OP_PAGES];
	uint32_t pages[MAX_OP_PAGES];
	uint8_t states[MAX_OP_PAGES];
	struct change changes[MAX_OP_PAGES];
};

struct mgr {
	struct world *w;
	struct cpu *c;
	uint32_t me;
	struct dfree *df; /* the operation in progress */
};

static void df_begin(struct mgr *m)
{
	m->df = calloc(1, sizeof(*m->df));
	if (!m->df)
		die("out of memory");
	m->df->w = m->w;
	m->df->table = -1;
}

/* Record a submitted change: complete now if its flush was (BY_NOW), else
 * when a later tlbpol_flush() or the deferred free says so. */
static void note_change(struct mgr *m, uint32_t vpn, uint64_t word, const struct tlbpol_decision *d)
{
	if (d->deadline == TLBPOL_BY_NOW)
		cv_raise(m->w, vpn, word);
	else
		m->df->changes[m->df->nchanges++] = (struct change){ vpn, d->deadline, word };
}

/* tlbpol_flush(@by): every change due by then is complete when it returns. */
static void mgr_flush(struct mgr *m, uint32_t by)
{
	struct dfree *df = m->df;
	uint32_t kept = 0;

	chk(tlbpol_flush(m->w->eng, m->me, by), "tlbpol_flush");
	for (uint32_t i = 0; i < df->nchanges; i++) {
		if (df->changes[i].deadline <= by)
			cv_raise(m->w, df->changes[i].vpn, df->changes[i].word);
		else
			df->changes[kept++] = df->changes[i];
	}
	df->nchanges = kept;
}

/* Runs once every flush pending when it was registered has completed on
 * every CPU: only now may frames and table pages be reused. */
static void dfree_cb(void *arg)
{
	struct dfree *df = arg;
	struct world *w = df->w;

	for (uint32_t i = 0; i < df->nchanges; i++)
		cv_raise(w, df->changes[i].vpn, df->changes[i].word);
	for (uint32_t i = 0; i < df->nframes; i++)
		poison_words(w->frames[df->frames[i]].w, FRAME_WORDS);
	if (df->table >= 0)
		poison_words(&w->tables[df->table].ident, 1 + GROUP_PAGES);
	pthread_mutex_lock(&w->pool_lock);
	for (uint32_t i = 0; i < df->nframes; i++)
		w->free_frames[w->nfree_frames++] = df->frames[i];
	if (df->table >= 0)
		w->free_tables[w->nfree_tables++] = (uint32_t)df->table;
	pthread_mutex_unlock(&w->pool_lock);
	for (uint32_t i = 0; i < df->npages; i++)
		page_unlock(w, df->pages[i], df->states[i]);
	atomic_fetch_add(&w->dfree_run, 1);
	free(df);
}

static void df_end(struct mgr *m)
{
	struct dfree *df = m->df;

	m->df = NULL;
	if (!df->nframes && df->table < 0 && !df->npages && !df->nchanges) {
		free(df);
		return;
	}
	atomic_fetch_add(&m->w->dfree_reg, 1);
	chk(tlbpol_defer_free(m->w->eng, m->me, dfree_cb, df), "tlbpol_defer_free");
}

/* Clear a present PTE (the atomic exchange returns what the MMU may have
 * set meanwhile: that is the old_pte to submit). */
static uint64_t pte_clear(struct world *w, uint32_t vpn, uint64_t *cleared)
{
	_Atomic uint64_t *slot = sw_pte(w, vpn);

	if (!slot)
		die("vpn %#x is mapped but has no table page", vpn);
	*cleared = pte_make(0, 0, ++w->pver[vpn]);
	return atomic_exchange(slot, *cleared);
}

/* Copy a frame to the page's slot of the swap device. */
static void writeback(struct world *w, uint32_t vpn, uint32_t f)
{
	for (uint32_t i = 1; i < FRAME_WORDS; i++)
		w->backing[vpn][i] = atomic_load_explicit(&w->frames[f].w[i], memory_order_relaxed);
	w->backing_valid[vpn] = 1;
}

/*
 * Reclaim (kswapd): unmap each mapped page of a cluster for reclaim, one
 * event per page as rmap walks them; write the dirty ones back once their
 * flush is done (BY_WRITEBACK); free all frames once every flush is done.
 */
static void op_reclaim(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t dirty[MAX_OP_PAGES], dframe[MAX_OP_PAGES], nd = 0, st;

	df_begin(m);
	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		struct tlbpol_decision d;
		uint64_t old, cleared;

		if (!page_trylock(w, vpn, &st))
			continue;
		if (st != PG_MAPPED) {
			page_unlock(w, vpn, st);
			continue;
		}
		old = pte_clear(w, vpn, &cleared);
		d = submit(w, m->me, TLBPOL_EV_RECLAIM, 0, vpn, 1, pte_perms(old), 0);
		note_change(m, vpn, cleared, &d);
		if (old & PTE_D) {
			dirty[nd] = vpn;
			dframe[nd++] = pte_frame(old);
		}
		m->df->frames[m->df->nframes++] = pte_frame(old);
		m->df->pages[m->df->npages] = vpn;
		m->df->states[m->df->npages++] = PG_SWAPPED;
		m->c->n[C_OP_PAGES]++;
	}
	/* A stale writable entry could still change a dirty page: write back
	 * only after its flush (try_to_unmap_flush_dirty() before pageout()). */
	mgr_flush(m, TLBPOL_BY_WRITEBACK);
	for (uint32_t i = 0; i < nd; i++)
		writeback(w, dirty[i], dframe[i]);
	/* A clean page's copy on the swap device (or the zero page) is still
	 * good: it goes with no writeback. */
	mgr_flush(m, TLBPOL_BY_FREE);
	df_end(m);
}

/*
 * MADV_DONTNEED of private anonymous memory: the range stays mapped
 * (TLBPOL_EVF_STAYS_MAPPED), so the flush is complete when the call returns,
 * and from then on the old contents are gone: the frames are poisoned at
 * once (a stale read sees poison, a stale write breaks it and shows when the
 * frame is reused) and the addresses are free to fault in again as zero
 * pages; the frames themselves go back through the deferred free.  One
 * event per run of mapped pages, as a zap gathers.
 */
static void op_unmap(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t run = 0, run_perms = 0, nrun = 0, st, locked[MAX_OP_PAGES], nl = 0;
	uint64_t cleared[MAX_OP_PAGES];

	df_begin(m);
	for (uint32_t vpn = start; vpn <= start + n; vpn++) {
		int mapped = 0;

		if (vpn < start + n && page_trylock(w, vpn, &st)) {
			if (st == PG_MAPPED) {
				uint64_t old = pte_clear(w, vpn, &cleared[vpn - start]);

				if (!nrun++)
					run = vpn;
				run_perms |= pte_perms(old);
				m->df->frames[m->df->nframes++] = pte_frame(old);
				locked[nl++] = vpn;
				m->c->n[C_OP_PAGES]++;
				mapped = 1;
			} else {
				w->backing_valid[vpn] = 0; /* a swapped-out page: drop the slot */
				page_unlock(w, vpn, PG_ABSENT);
			}
		}
		if (!mapped && nrun) {
			struct tlbpol_decision d = submit(w, m->me, TLBPOL_EV_UNMAP,
							  TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE,
							  run, nrun, run_perms, 0);

			for (uint32_t p = run; p < run + nrun; p++)
				note_change(m, p, cleared[p - start], &d);
			nrun = 0;
			run_perms = 0;
		}
	}
	/* madvise() returns: the contents are gone, the addresses usable. */
	for (uint32_t i = 0; i < m->df->nframes; i++)
		poison_words(w->frames[m->df->frames[i]].w, FRAME_WORDS);
	for (uint32_t i = 0; i < nl; i++)
		page_unlock(w, locked[i], PG_ABSENT);
	df_end(m);
}

/* Write-protect a range (dirty tracking): one event for the range, as
 * change_protection() flushes once; the guest's next write faults. */
static void op_protect(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t locked[MAX_OP_PAGES], lstate[MAX_OP_PAGES], nl = 0, first = 0, last = 0;
	uint32_t old_perms = 0, new_perms = 0, st;
	uint64_t words[MAX_OP_PAGES] = { 0 };
	int any = 0;

	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		_Atomic uint64_t *slot;
		uint64_t p, np;
		uint32_t v;

		if (!page_trylock(w, vpn, &st))
			continue;
		locked[nl] = vpn;
		lstate[nl++] = st;
		if (st != PG_MAPPED || !((p = atomic_load(slot = sw_pte(w, vpn))) & PTE_W))
			continue;
		v = ++w->pver[vpn];
		do
			np = pte_make(pte_perms(p) & ~PTE_W, pte_frame(p), v);
		while (!atomic_compare_exchange_weak(slot, &p, np));
		words[vpn - start] = np;
		old_perms |= pte_perms(p);
		new_perms |= pte_perms(np);
		if (!any)
			first = vpn;
		last = vpn;
		any = 1;
		m->c->n[C_OP_PAGES]++;
	}
	if (any) {
		struct tlbpol_decision d = submit(w, m->me, TLBPOL_EV_PROTECT, 0, first,
						  last - first + 1, old_perms, new_perms);

		df_begin(m);
		for (uint32_t vpn = first; vpn <= last; vpn++)
			if (words[vpn - start])
				note_change(m, vpn, words[vpn - start], &d);
		df_end(m);
	}
	for (uint32_t i = 0; i < nl; i++)
		page_unlock(w, locked[i], lstate[i]);
}

/* Age pages (clear A), one event per page as page_referenced() walks them. */
static void op_aging(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t st;

	df_begin(m);
	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		_Atomic uint64_t *slot;
		struct tlbpol_decision d;
		uint64_t p, np;
		uint32_t v;

		if (!page_trylock(w, vpn, &st))
			continue;
		if (st == PG_MAPPED && ((p = atomic_load(slot = sw_pte(w, vpn))) & PTE_A)) {
			v = ++w->pver[vpn];
			do
				np = pte_make(pte_perms(p) & ~PTE_A, pte_frame(p), v);
			while (!atomic_compare_exchange_weak(slot, &p, np));
			d = submit(w, m->me, TLBPOL_EV_CLEAR_YOUNG, 0, vpn, 1, pte_perms(p),
				   pte_perms(np));
			note_change(m, vpn, np, &d);
			m->c->n[C_OP_PAGES]++;
		}
		page_unlock(w, vpn, st);
	}
	df_end(m);
}

/*
 * Migrate (compaction): unmap each page to a migration entry, copy it to a
 * new frame once a stale entry can no longer write it (BY_WRITEBACK: a clean
 * page's stale entries can only read the unchanged old copy), then restore
 * the PTE on the new frame.  The restore is an install: the engine completes
 * the pending flush for that address before it returns.
 */
static void op_migrate(struct mgr *m, uint32_t start, uint32_t n)
{
	struct world *w = m->w;
	uint32_t vpns[MAX_OP_PAGES], newf[MAX_OP_PAGES], np = 0, st;
	uint64_t old[MAX_OP_PAGES], cleared[MAX_OP_PAGES];

	df_begin(m);
	for (uint32_t vpn = start; vpn < start + n; vpn++) {
		struct tlbpol_decision d;
		int f;

		if (!page_trylock(w, vpn, &st))
			continue;
		if (st != PG_MAPPED || (f = frame_alloc(w)) < 0) {
			page_unlock(w, vpn, st);
			continue;
		}
		vpns[np] = vpn;
		newf[np] = (uint32_t)f;
		old[np] = pte_clear(w, vpn, &cleared[np]);
		d = submit(w, m->me, TLBPOL_EV_MIGRATE, 0, vpn, 1, pte_perms(old[np]), 0);
		note_change(m, vpn, cleared[np], &d);
		m->df->frames[m->df->nframes++] = pte_frame(old[np]);
		np++;
		m->c->n[C_OP_PAGES]++;
	}
	mgr_flush(m, TLBPOL_BY_WRITEBACK);
	for (uint32_t i = 0; i < np; i++)
		frame_fill(w, newf[i], vpns[i], NULL, (int)pte_frame(old[i]));
	for (uint32_t i = 0; i < np; i++) {
		uint64_t nw = pte_make(pte_perms(old[i]), newf[i], ++w->pver[vpns[i]]);

		submit(w, m->me, TLBPOL_EV_MIGRATE, 0, vpns[i], 1, 0, pte_perms(nw));
		/* The install completed the removal's flush (the header's
		 * promise for reused addresses): both changes are done. */
		cv_raise(w, vpns[i], cleared[i]);
		cv_raise(w, vpns[i], nw);
		atomic_store(sw_pte(w, vpns[i]), nw);
		page_unlock(w, vpns[i], PG_MAPPED);
	}
	m->df->nchanges = 0; /* all completed by the installs */
	df_end(m);
}

/*
 * mremap of a few pages from @a to an absent range: the old addresses are
 * flushed before the move is visible (REMAP, BY_NOW); the frames then take
 * their new identity and are installed at the new addresses.
 */
static void op_remap(struct mgr *m, uint32_t a, uint32_t b, uint32_t n)
{
	struct world *w = m->w;
	uint32_t na = 0, st, perms = 0;
	uint64_t old[4], cleared[4];
	struct tlbpol_decision d;
	struct table *t;

	for (; na < n; na++) {
		if (!page_trylock(w, a + na, &st))
			break;
		if (st != PG_MAPPED) {
			page_unlock(w, a + na, st);
			break;
		}
		if (!page_trylock(w, b + na, &st)) {
			page_unlock(w, a + na, PG_MAPPED);
			break;
		}
		if (st != PG_ABSENT) {
			page_unlock(w, b + na, st);
			page_unlock(w, a + na, PG_MAPPED);
			break;
		}
	}
	if (!na)
		return;
	t = ensure_table(w, b >> GROUP_SHIFT);
	if (!t) {
		for (uint32_t i = 0; i < na; i++) {
			page_unlock(w, a + i, PG_MAPPED);
			page_unlock(w, b + i, PG_ABSENT);
		}
		return;
	}
	df_begin(m);
	for (uint32_t i = 0; i < na; i++) {
		old[i] = pte_clear(w, a + i, &cleared[i]);
		perms |= pte_perms(old[i]);
	}
	d = submit(w, m->me, TLBPOL_EV_REMAP, 0, a, na, perms, 0);
	for (uint32_t i = 0; i < na; i++)
		note_change(m, a + i, cleared[i], &d);
	mgr_flush(m, TLBPOL_BY_NOW);
	/* No CPU translates the old addresses any more: the frames belong to
	 * the new ones. */
	for (uint32_t i = 0; i < na; i++)
		atomic_store_explicit(&w->frames[pte_frame(old[i])].w[0],
				      frame_ident(b + i, atomic_fetch_add(&w->frame_gen, 1) + 1),
				      memory_order_relaxed);
	perms = PTE_P | PTE_W | PTE_U | PTE_A | PTE_D;
	submit(w, m->me, TLBPOL_EV_REMAP, 0, b, na, 0, perms);
	for (uint32_t i = 0; i < na; i++) {
		uint64_t nw = pte_make(perms, pte_frame(old[i]), ++w->pver[b + i]);

		atomic_store(&t->pte[(b + i) & (GROUP_PAGES - 1)], nw);
		cv_raise(w, b + i, nw);
		w->backing_valid[a + i] = w->backing_valid[b + i] = 0;
		page_unlock(w, a + i, PG_ABSENT);
		page_unlock(w, b + i, PG_MAPPED);
		m->c->n[C_OP_PAGES]++;
	}
	df_end(m);
}

/*
 * munmap of a whole table page's range: unmap its pages, detach the table
 * page and free it with the frames once the flush -- which must reach idle
 * CPUs too (TABLES_FREED), since their MMU may walk it -- is done.
 */
static void op_tables(struct mgr *m, uint32_t g)
{
	struct world *w = m->w;
	uint32_t base = g * GROUP_PAGES, locked = 0, st[GROUP_PAGES], nrun = 0, run = 0, perms = 0;
	uint64_t cleared[GROUP_PAGES], d;
	struct tlbpol_decision dec;

	for (; locked < GROUP_PAGES; locked++)
		if (!page_trylock(w, base + locked, &st[locked]))
			break;
	d = atomic_load(&w->dir[g]);
	if (locked < GROUP_PAGES || !d) {
		for (uint32_t i = 0; i < locked; i++)
			page_unlock(w, base + i, st[i]);
		return;
	}
	df_begin(m);
	for (uint32_t i = 0; i <= GROUP_PAGES; i++) {
		int mapped = i < GROUP_PAGES && st[i] == PG_MAPPED;

		if (mapped) {
			uint64_t old = pte_clear(w, base + i, &cleared[i]);

			if (!nrun++)
				run = base + i;
			perms |= pte_perms(old);
			m->df->frames[m->df->nframes++] = pte_frame(old);
			m->c->n[C_OP_PAGES]++;
		} else if (nrun) {
			dec = submit(w, m->me, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE, run, nrun,
				     perms, 0);
			for (uint32_t p = run; p < run + nrun; p++)
				note_change(m, p, cleared[p - base], &dec);
			nrun = 0;
			perms = 0;
		}
		if (i < GROUP_PAGES) {
			w->backing_valid[base + i] = 0;
			m->df->pages[m->df->npages] = base + i;
			m->df->states[m->df->npages++] = PG_ABSENT;
		}
	}
	/* Detach the table page, then say so: the flush reaches every CPU that
	 * may cache a pointer to it, idle ones included. */
	atomic_store(&w->dir[g], 0);
	m->df->table = (int)dir_table(d);
	submit(w, m->me, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE | TLBPOL_EVF_TABLES_FREED, base,
	       GROUP_PAGES, 0, 0);
	mgr_flush(m, TLBPOL_BY_FREE);
	df_end(m);
}

/* A page-aligned start @back pages behind the working set: pages the guest
 * used recently, so most vCPUs' TLBs still hold them. */
static uint32_t behind(struct mgr *m, uint32_t align, uint32_t span)
{
	uint32_t hot = atomic_load_explicit(&m->w->hot_base, memory_order_relaxed);
	uint32_t back = align * (1 + (uint32_t)(rnd(&m->c->rng) % (span / align)));

	return ((hot + NPAGES - back) % NPAGES) & ~(align - 1);
}

static void mgr_op(struct mgr *m)
{
	struct world *w = m->w;
	const struct mix *mx = w->mix;
	unsigned total = 0, pick;
	uint32_t hot = atomic_load_explicit(&w->hot_base, memory_order_relaxed);
	int op = 0;

	for (int i = 0; i < OP_MAX; i++)
		total += mx->weight[i];
	pick = (unsigned)(rnd(&m->c->rng) % total);
	while (pick >= mx->weight[op])
		pick -= mx->weight[op++];
	switch (op) {
	case OP_RECLAIM:
		op_reclaim(m, behind(m, CLUSTER, 8 * CLUSTER), CLUSTER);
		break;
	case OP_UNMAP:
		op_unmap(m, behind(m, 16, 256), 16);
		break;
	case OP_PROTECT:
		op_protect(m, (hot + (uint32_t)(rnd(&m->c->rng) % HOT_PAGES)) % NPAGES & ~7u, 8);
		break;
	case OP_MIGRATE:
		op_migrate(m, behind(m, 16, 256), 16);
		break;
	case OP_REMAP: {
		uint32_t a = (hot + (uint32_t)(rnd(&m->c->rng) % HOT_PAGES)) % NPAGES & ~3u;
		uint32_t b = (uint32_t)(rnd(&m->c->rng) % NPAGES) & ~3u;

		op_remap(m, a, b, 4);
		break;
	}
	case OP_TABLES:
		op_tables(m, behind(m, GROUP_PAGES, 4 * GROUP_PAGES) / GROUP_PAGES);
		break;
	default:
		op_aging(m, behind(m, CLUSTER, 8 * CLUSTER), CLUSTER);
		break;
	}
	/* The working set drifts: what the manager just worked on behind it
	 * was hot a moment ago. */
	atomic_store_explicit(&w->hot_base, (hot + 2) % NPAGES, memory_order_relaxed);
}

static void *mgr_main(void *arg)
{
	struct cpu *c = arg;
	struct world *w = c->w;
	struct mgr m = { w, c, w->mgr, NULL };
	uint64_t ops = 0;

	pthread_barrier_wait(&w->start);
	for (;;) {
		uint64_t total = 0;
		int vdone = 1;

		poll_kick(c);
		for (uint32_t i = 0; i < w->nv; i++) {
			total += atomic_load_explicit(&w->cpu[i].progress, memory_order_relaxed);
			vdone &= atomic_load(&w->cpu[i].finished);
		}
		if (atomic_load(&w->abort_run))
			break;
		/* Paced by the guest: operation i once the guest made
		 * i * accesses_per_op accesses. */
		if (ops * w->mix->accesses_per_op <= total && (w->timed || ops < w->mgr_quota)) {
			mgr_op(&m);
			ops++;
			/* The guest may run MAX_LAG operations ahead; once the
			 * manager made all its operations, without limit. */
			atomic_store_explicit(&w->guest_limit,
					      !w->timed && ops >= w->mgr_quota
						      ? UINT64_MAX
						      : (ops + MAX_LAG) * w->mix->accesses_per_op,
					      memory_order_relaxed);
			chk(tlbpol_tick(w->eng, w->mgr), "tlbpol_tick");
			continue;
		}
		if (vdone)
			break;
		chk(tlbpol_tick(w->eng, w->mgr), "tlbpol_tick");
		sleep_on_kick(c, 20000);
	}
	/* Complete everything still pending, lazy work included: every
	 * deferred free runs. */
	chk(tlbpol_flush(w->eng, w->mgr, TLBPOL_BY_LAZY), "tlbpol_flush");
	c->n[C_OPS] = ops;
	w->t_end = now_s();
	atomic_store(&w->all_done, 1);
	for (uint32_t i = 0; i < w->nv; i++) {
		atomic_store(&w->cpu[i].kick, 1);
		futex_wake(&w->cpu[i].kick);
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

struct result {
	const char *name;
	double wall;
	int aborted;
	uint64_t n[C_MAX];
	struct tlbpol_stats st;
	uint64_t stale, stale_kind[S_MAX];
};

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

	if (!p)
		die("out of memory (%zu bytes)", n);
	memset(p, 0, n);
	return p;
}

/* Fresh machine, engine and address space; every page mapped (each install
 * submitted by the manager's CPU, before any vCPU runs). */
static void world_setup(struct world *w, uint64_t rules, const char *policy, uint64_t seed)
{
	struct tlbpol_config cfg;
	size_t len;
	uint32_t st;

	w->policy = policy;
	w->rules = rules;
	for (uint32_t f = 0; f < NFRAMES; f++)
		poison_words(w->frames[f].w, FRAME_WORDS);
	for (uint32_t t = 0; t < NTABLES; t++)
		poison_words(&w->tables[t].ident, 1 + GROUP_PAGES);
	w->nfree_frames = w->nfree_tables = 0;
	for (uint32_t f = NFRAMES; f-- > 1;) /* frame 0 stays unused */
		w->free_frames[w->nfree_frames++] = f;
	for (uint32_t t = NTABLES; t-- > 0;)
		w->free_tables[w->nfree_tables++] = t;
	for (uint32_t g = 0; g < NGROUPS; g++)
		atomic_store(&w->dir[g], 0);
	for (uint32_t p = 0; p < NPAGES; p++) {
		atomic_store(&w->pstate[p], PG_ABSENT);
		atomic_store(&w->cv[p], 0);
	}
	memset(w->pver, 0, NPAGES * sizeof(*w->pver));
	memset(w->backing_valid, 0, NPAGES);
	atomic_store(&w->frame_gen, 0);
	atomic_store(&w->table_gen, 0);
	atomic_store(&w->hot_base, 0);
	atomic_store(&w->guest_limit, (uint64_t)MAX_LAG * w->mix->accesses_per_op);
	atomic_store(&w->stop, 0);
	atomic_store(&w->abort_run, 0);
	atomic_store(&w->all_done, 0);
	atomic_store(&w->stale_total, 0);
	for (int k = 0; k < S_MAX; k++)
		atomic_store(&w->stale[k], 0);
	atomic_store(&w->dfree_reg, 0);
	atomic_store(&w->dfree_run, 0);
	for (uint32_t i = 0; i <= w->nv; i++) {
		struct cpu *c = &w->cpu[i];
		uint64_t quota = c->quota;

		memset(c, 0, sizeof(*c));
		c->w = w;
		c->id = i;
		c->rng = seed_of(seed, i);
		c->quota = quota;
		c->wval = (uint64_t)i << 48;
	}

	tlbpol_config_init(&cfg, w->nv + 1, TLBPOL_ARCH_X86_64);
	cfg.rules = rules;
	cfg.free_ticks = free_ticks;
	cfg.max_as = 1;
	cfg.ops = &softmmu_ops;
	cfg.ops_ctx = w;
	len = tlbpol_engine_size(&cfg);
	if (!len)
		die("tlbpol_engine_size: invalid configuration");
	/* tlbpol_engine_init() in our own memory: the freestanding
	 * constructor, no hosted layer needed. */
	w->eng_mem = xalloc(len);
	chk(tlbpol_engine_init(&w->eng, w->eng_mem, len, &cfg), "tlbpol_engine_init");
	chk(tlbpol_as_open(w->eng, 1, &w->as), "tlbpol_as_open");

	for (uint32_t vpn = 0; vpn < NPAGES; vpn++) {
		struct table *t;
		int f;
		uint64_t n;

		if (!page_trylock(w, vpn, &st) || !(t = ensure_table(w, vpn >> GROUP_SHIFT)) ||
		    (f = frame_alloc(w)) < 0)
			die("setup: cannot map vpn %#x", vpn);
		frame_fill(w, (uint32_t)f, vpn, NULL, -1);
		n = pte_make(PTE_P | PTE_W | PTE_U | PTE_A, (uint32_t)f, ++w->pver[vpn]);
		submit(w, w->mgr, TLBPOL_EV_FAULT, 0, vpn, 1, 0, pte_perms(n));
		atomic_store(&t->pte[vpn & (GROUP_PAGES - 1)], n);
		cv_raise(w, vpn, n);
		page_unlock(w, vpn, PG_MAPPED);
	}
}

static void run(struct world *w, struct result *res, double seconds)
{
	pthread_t *th = calloc(w->nv + 1, sizeof(*th));
	double limit = w->timed ? 0 : 20 * seconds + 10;

	if (!th)
		die("out of memory");
	if (pthread_barrier_init(&w->start, NULL, w->nv + 2))
		die("pthread_barrier_init failed");
	for (uint32_t i = 0; i <= w->nv; i++)
		if (pthread_create(&th[i], NULL, i < w->nv ? vcpu_main : mgr_main, &w->cpu[i]))
			die("pthread_create failed");
	pthread_barrier_wait(&w->start);
	w->t_start = now_s();
	if (w->timed) {
		struct timespec ts = { (time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		atomic_store(&w->stop, 1);
	} else {
		/* A policy far slower than the first is cut short, not waited for. */
		while (!atomic_load(&w->all_done)) {
			struct timespec ts = { 0, 10000000 };

			nanosleep(&ts, NULL);
			if (now_s() - w->t_start > limit) {
				atomic_store(&w->abort_run, 1);
				res->aborted = 1;
				break;
			}
		}
	}
	for (uint32_t i = 0; i <= w->nv; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&w->start);
	free(th);

	res->wall = w->t_end - w->t_start;
	memset(res->n, 0, sizeof(res->n));
	for (uint32_t i = 0; i <= w->nv; i++)
		for (int k = 0; k < C_MAX; k++)
			res->n[k] += w->cpu[i].n[k];
	chk(tlbpol_stats_read(w->eng, -1, &res->st), "tlbpol_stats_read");
	res->stale = atomic_load(&w->stale_total);
	for (int k = 0; k < S_MAX; k++)
		res->stale_kind[k] = atomic_load(&w->stale[k]);
	/* The bookkeeping must add up: every kick counted by the engine went
	 * through send_ipi, every deferred free ran exactly once. */
	if (res->n[C_FLUSHES] != res->st.local_flushes + res->st.remote_flushes)
		printf("note: %s: %" PRIu64 " flush_local calls, the engine counted %" PRIu64 "\n",
		       w->policy, res->n[C_FLUSHES],
		       res->st.local_flushes + res->st.remote_flushes);
	if (res->n[C_KICKS] != res->st.ipis_sent)
		die("%s: send_ipi saw %" PRIu64 " targets, the engine counted %" PRIu64, w->policy,
		    res->n[C_KICKS], res->st.ipis_sent);
	if (atomic_load(&w->dfree_run) != atomic_load(&w->dfree_reg))
		die("%s: %" PRIu64 " deferred frees registered, %" PRIu64 " ran", w->policy,
		    atomic_load(&w->dfree_reg), atomic_load(&w->dfree_run));
	free(w->eng_mem);
	w->eng_mem = NULL;
	w->eng = NULL;
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

#define MAX_POLICIES 8

struct policy {
	const char *name;
	uint64_t rules;
};

static void help(FILE *f, int rc)
{
	fprintf(f,
		"usage: softmmu [--vcpus N] [--seconds S] [--mix mixed|reclaim|tables]\n"
		"               [--rules POLICY,...] [--seed N]\n"
		"               [--expect-stale] [--bug lost-flush|no-catchup] [--free-ticks N]\n"
		"  POLICY: a rule mask as tlbpol_rules_parse() reads it: naive, linux,\n"
		"          default, linux+receiver-merge, 0x1ff (default: naive,linux,default)\n");
	exit(rc);
}

static void usage(void)
{
	help(stderr, 2);
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* "%.3f" of @a / @b into @buf, or "-" without a reference run. */
static const char *ratio_str(char *buf, double a, const struct result *ref, double b)
{
	if (!ref)
		return "-";
	snprintf(buf, 16, "%.3f", ratio(a, b));
	return buf;
}

static void report(const struct result *res, int np, int naive_i, int linux_i, uint32_t nv)
{
	const struct result *nr = naive_i >= 0 ? &res[naive_i] : NULL;
	const struct result *lr = linux_i >= 0 ? &res[linux_i] : NULL;

	printf("%-8s %7s %7s %7s %9s %9s %9s %9s %6s %7s %7s %7s %7s\n", "policy", "wall s",
	       "Macc/s", "mm ops", "kicks", "flushes", "full", "pages", "stale", "kicks", "kicks",
	       "wall", "wall");
	printf("%-8s %7s %7s %7s %9s %9s %9s %9s %6s %7s %7s %7s %7s\n", "", "", "", "", "", "", "",
	       "", "", "/naive", "/linux", "/naive", "/linux");
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];
		char b[4][16];

		printf("%-8s %7.3f %7.2f %7" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		       " %9" PRIu64 " %6" PRIu64 " %7s %7s %7s %7s%s\n",
		       r->name, r->wall, ratio((double)r->n[C_ACCESSES], r->wall) / 1e6,
		       r->n[C_OPS], r->n[C_KICKS], r->n[C_FLUSHES], r->st.full_flushes,
		       r->st.pages_flushed, r->stale,
		       ratio_str(b[0], (double)r->n[C_KICKS], nr, nr ? (double)nr->n[C_KICKS] : 0),
		       ratio_str(b[1], (double)r->n[C_KICKS], lr, lr ? (double)lr->n[C_KICKS] : 0),
		       ratio_str(b[2], r->wall, nr, nr ? nr->wall : 0),
		       ratio_str(b[3], r->wall, lr, lr ? lr->wall : 0),
		       r->aborted ? "  (cut short: too slow)" : "");
	}
	printf("\n%-8s %10s %7s %8s %8s %8s %7s %8s %7s %8s %8s %8s %8s %6s %7s\n", "policy",
	       "accesses", "pages", "misses", "faults", "installs", "upgrade", "spurious", "busy",
	       "irqs", "wakeups", "catchups", "halts", "halted", "stalls");
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];
		char halts[32];

		snprintf(halts, sizeof(halts), "%" PRIu64 "+%" PRIu64, r->n[C_IDLE],
			 r->n[C_PREEMPT]);
		printf("%-8s %10" PRIu64 " %7" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %7" PRIu64 " %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %8s %5.1f%% %7" PRIu64 "\n",
		       r->name, r->n[C_ACCESSES], r->n[C_OP_PAGES], r->n[C_WALKS], r->n[C_FAULTS],
		       r->n[C_INSTALLS], r->n[C_UPGRADES], r->n[C_SPURIOUS], r->n[C_RETRIES],
		       r->n[C_IRQS], r->n[C_WAKEUPS], r->n[C_CATCHUPS], halts,
		       100.0 * ratio((double)r->n[C_HALTED_US] * 1e-6, r->wall * nv),
		       r->n[C_THROTTLED]);
	}
	printf("\nwall: until every vCPU made its accesses and the manager its operations.\n"
	       "kicks: send_ipi targets (interrupts); flushes: flush_local calls, local and\n"
	       "remote; full: whole-TLB flushes; pages: pages named by page flushes; stale: must\n"
	       "be 0.\n"
	       "2nd table: pages: PTEs the manager changed; misses: soft-TLB misses (walks);\n"
	       "busy: accesses retried later (page locked by the manager); irqs: kicks taken;\n"
	       "wakeups: kicks that woke a sleeping thread; catchups: full flushes asked for by\n"
	       "tlbpol_cpu_state() returning 1; halts: idle + preempted spells; halted: their\n"
	       "share of vCPU time; stalls: guest stalls behind a manager that fell behind.\n");
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];

		if (strcmp(r->name, "default"))
			continue;
		if (nr)
			printf("\ndefault vs naive: %.1fx fewer kicks, %.2fx the wall time "
			       "(%.1fx faster)",
			       ratio((double)nr->n[C_KICKS], (double)r->n[C_KICKS]),
			       ratio(r->wall, nr->wall), ratio(nr->wall, r->wall));
		if (lr)
			printf("\ndefault vs linux: %.2fx the kicks, %.2fx the wall time",
			       ratio((double)r->n[C_KICKS], (double)lr->n[C_KICKS]),
			       ratio(r->wall, lr->wall));
		printf("\n");
	}
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];

		if (!r->stale)
			continue;
		printf("%s: %" PRIu64 " stale uses:", r->name, r->stale);
		for (int k = 0; k < S_MAX; k++)
			if (r->stale_kind[k])
				printf(" %s %" PRIu64 ";", stale_names[k], r->stale_kind[k]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t nv = ncpu < 2 ? 2 : ncpu > MAX_VCPUS ? MAX_VCPUS : (uint32_t)ncpu;
	double seconds = 5;
	const struct mix *mx = &mixes[0];
	const char *rules_arg = "naive,linux,default";
	uint64_t seed = 1;
	enum bug bug = BUG_NONE;
	int expect = 0, np = 0, naive_i = -1, linux_i = -1;
	struct policy pol[MAX_POLICIES];
	char mask_names[MAX_POLICIES][48];
	struct result res[MAX_POLICIES];
	struct world *w;
	uint64_t total_stale = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			help(stdout, 0);
		if (!strcmp(a, "--expect-stale")) {
			expect = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--vcpus")) {
			long n = strtol(v, NULL, 10);

			if (n < 1 || n > MAX_VCPUS)
				die("--vcpus: 1 .. %d", MAX_VCPUS);
			nv = (uint32_t)n;
		} else if (!strcmp(a, "--seconds")) {
			seconds = strtod(v, NULL);
			if (!(seconds > 0 && seconds < 3600))
				die("--seconds: a positive number");
		} else if (!strcmp(a, "--mix")) {
			mx = NULL;
			for (size_t k = 0; k < NR_MIXES; k++)
				if (!strcmp(v, mixes[k].name))
					mx = &mixes[k];
			if (!mx)
				die("--mix: mixed, reclaim or tables");
		} else if (!strcmp(a, "--rules")) {
			rules_arg = v;
		} else if (!strcmp(a, "--seed")) {
			seed = strtoull(v, NULL, 0);
		} else if (!strcmp(a, "--free-ticks")) {
			free_ticks = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--bug")) {
			if (!strcmp(v, "lost-flush"))
				bug = BUG_LOST_FLUSH;
			else if (!strcmp(v, "no-catchup"))
				bug = BUG_NO_CATCHUP;
			else
				die("--bug: lost-flush or no-catchup");
		} else {
			usage();
		}
	}
	/* --rules: up to MAX_POLICIES policies, a comma list.  Each is one
	 * mask as tlbpol_rules_parse() reads it ("naive", "linux", "default",
	 * "linux+receiver-merge", "0x1ff"), named as given. */
	for (const char *p = rules_arg; *p;) {
		size_t len = strcspn(p, ",");

		if (np == MAX_POLICIES)
			die("--rules: at most %d policies", MAX_POLICIES);
		if (len >= sizeof(mask_names[np]))
			die("--rules: a policy name of at most %zu characters",
			    sizeof(mask_names[np]) - 1);
		memcpy(mask_names[np], p, len);
		mask_names[np][len] = 0;
		if (tlbpol_rules_parse(mask_names[np], &pol[np].rules))
			die("--rules: %s: not a rule mask (tlbpol_rules_parse())", mask_names[np]);
		pol[np].name = mask_names[np];
		if (pol[np].rules == TLBPOL_RULES_NONE && naive_i < 0)
			naive_i = np;
		if (pol[np].rules == TLBPOL_RULES_LINUX && linux_i < 0)
			linux_i = np;
		np++;
		p += len + (p[len] == ',');
	}
	if (!np)
		die("--rules: a list of naive, linux, default or rule masks");

	w = xalloc(sizeof(*w));
	w->nv = nv;
	w->mgr = nv;
	w->mix = mx;
	w->bug = bug;
	w->cpu = xalloc((nv + 1) * sizeof(*w->cpu));
	w->frames = xalloc(NFRAMES * sizeof(*w->frames));
	w->tables = xalloc(NTABLES * sizeof(*w->tables));
	w->backing = xalloc(NPAGES * sizeof(*w->backing));
	w->backing_valid = xalloc(NPAGES);
	w->pver = xalloc(NPAGES * sizeof(*w->pver));
	pthread_mutex_init(&w->pool_lock, NULL);

	printf("softmmu: %u vCPU threads + 1 memory-manager thread, %u guest pages in %u "
	       "page-table pages,\nsoft TLB %u entries per vCPU, libtlbpol %s%s\n",
	       nv, NPAGES, NGROUPS, TLB_SIZE, tlbpol_version(),
#ifdef SOFTMMU_PLANTED
	       " (core built with TLBPOL_PLANTED_BUG)"
#else
	       ""
#endif
	);
	printf("mix \"%s\": %s; one manager operation per %u guest accesses\n", mx->name, mx->what,
	       mx->accesses_per_op);
	printf("work: \"%s\" runs %.1f s; the others repeat exactly its work (guest accesses per\n"
	       "vCPU, manager operations)\n\n",
	       pol[0].name, seconds);
	fflush(stdout);

	for (int i = 0; i < np; i++) {
		struct result *r = &res[i];

		memset(r, 0, sizeof(*r));
		r->name = pol[i].name;
		w->timed = i == 0;
		world_setup(w, pol[i].rules, r->name, seed);
		run(w, r, seconds);
		if (i == 0) {
			/* The first run defines the work of the others. */
			for (uint32_t c = 0; c < nv; c++)
				w->cpu[c].quota = w->cpu[c].n[C_ACCESSES];
			w->mgr_quota = w->cpu[nv].n[C_OPS];
		}
		total_stale += r->stale;
		fflush(stdout);
	}

	report(res, np, naive_i, linux_i, nv);
	pthread_mutex_destroy(&w->pool_lock);
	free(w->pver);
	free(w->backing_valid);
	free(w->backing);
	free(w->tables);
	free(w->frames);
	free(w->cpu);
	free(w);
	if (expect) {
		if (total_stale) {
			printf("planted bug detected: %" PRIu64 " stale uses (expected)\n",
			       total_stale);
			return 0;
		}
		printf("planted bug NOT detected: no stale use\n");
		return 1;
	}
	if (total_stale) {
		printf("FAIL: stale uses found\n");
		return 1;
	}
	printf("no stale use\n");
	return 0;
}
