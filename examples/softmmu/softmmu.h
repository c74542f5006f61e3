/* SPDX-License-Identifier: MIT */
/*
 * softmmu.h - what softmmu's files share, and only that: the machine's
 * sizes, the encodings of PTEs, frame identities and directory entries, the
 * structures more than one thread reads (struct world, struct cpu, struct
 * tlb_entry), and the calls that cross a file.  It is private to
 * examples/softmmu.  The calls run one way, and the declarations at the end
 * are grouped callee first: main.c (its options read by options.c) starts
 * the vCPU threads (guest.c, which switch address spaces through spaces.c)
 * and the memory manager's thread (manager.c); both change the page table
 * through pages.c and take their interrupts through mmu.c, where the vCPUs
 * also translate; checker.c, called from all of them, calls none.
 */

/*
 * The machine.  N vCPU threads run a guest workload over one shared guest
 * page table: NPAGES pages of 4 KiB, whose PTEs live in page-table pages
 * ("table pages") of GROUP_PAGES PTEs reached through a directory.  Each vCPU
 * translates every guest access through its own soft TLB (direct-mapped,
 * vpn -> host frame, permissions) and a paging-structure cache (PSC: the
 * directory entries it walked through).  Both are filled only by the vCPU's
 * own walks and emptied only by ops->flush_local, by the catch-up flushes the
 * engine asks for, and by a fault at the address.  A memory manager thread
 * with an engine CPU of its own (CPU N) changes the page table; the vCPUs
 * resolve their own page faults.
 *
 * Address spaces (--as N): N guest processes, each with a page table of its
 * own (NPAGES pages, NGROUPS table pages), over one pool of frames and table
 * pages.  Outside the vCPU's MMU a page is named by its number across the
 * address spaces, as * NPAGES + vpn (pg_of()): struct world's per-page
 * arrays are indexed by it, and pages.c, the manager and the checker call
 * it "vpn" (with one address space it is the vpn).  The MMU, the soft TLB
 * and the flushes see an address space's own vpn, as hardware sees virtual
 * addresses.  With --tags each TLB and PSC entry carries the hardware tag
 * it was filled under (spaces.c), and a lookup matches the tag loaded, not the
 * address space: what a tag reused without its flush serves is the
 * previous owner's translation, as on hardware.
 */
#ifndef SOFTMMU_H
#define SOFTMMU_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall(), getopt_long() under -std=c11 */
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tlbpol/tlbpol.h>

#include "support/rng.h"

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
#define MAX_AS 16u                      /* guest address spaces (--as) */
#define AS_TABLES (NGROUPS + 16u)       /* table pages: one per group + in flight */
#define AS_FRAMES (NPAGES + NPAGES / 2) /* frames: every page mapped + in flight */
#define NTABLES (MAX_AS * AS_TABLES)    /* sizes of the arrays; w->ntables are used */
#define NFRAMES (MAX_AS * AS_FRAMES)    /* ... w->nframes are used */
#define SWITCH_BLOCKS 128               /* the guest scheduler's slice (--as > 1) */
#define TLB_SIZE 1024u                  /* soft TLB entries per vCPU, direct-mapped */
#define BLOCK_ACCESSES 16               /* guest accesses between kick checks */
#define TICK_BLOCKS 256                 /* tlbpol_tick() every 4096 accesses */
#define HOT_PAGES 512u                  /* the guest's working set, drifting */
#define CLUSTER 32u                     /* pages per reclaim batch */
#define MAX_OP_PAGES GROUP_PAGES        /* pages one manager operation touches */
#define HALT_TICK_NS 100000L            /* a halted vCPU wakes this often */
#define MAX_REPORTS 5                   /* stale uses printed per policy (+1 per kind) */
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

/* A frame's identity (its word 0): page (across address spaces, pg_of())
 * and allocation generation (< 2^31, so never POISON). */
static inline uint64_t frame_ident(uint32_t vpn, uint32_t gen)
{
	return (uint64_t)gen << 32 | vpn;
}

/* A page's number across the address spaces, and back. */
static inline uint32_t pg_of(uint32_t as, uint32_t vpn) { return as * NPAGES + vpn; }
static inline uint32_t pg_as(uint32_t pg) { return pg / NPAGES; }

/*
 * A table page's identity: group (across address spaces: as * NGROUPS + g,
 * in bits 0-15) and generation (< 2^48, never POISON).  A
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
	uint32_t tag; /* vpn + 1 (the address space's own vpn); 0: empty */
	uint32_t frame;
	uint32_t perms;
	uint32_t ver;   /* the PTE version it was filled from */
	uint64_t ident; /* the frame identity it was filled with */
	uint16_t htag;  /* the hardware tag it was filled under (0 without --tags) */
	/* The address space whose table filled it: the checker's knowledge,
	 * which the MMU does not look at (it matches htag). */
	uint16_t owner;
	uint32_t held;  /* announced in w->holders: under the tag now loaded */
};

enum counter {
	C_ACCESSES, C_WALKS, C_FAULTS, C_INSTALLS, C_UPGRADES, C_SPURIOUS, C_RETRIES,
	C_IRQS, C_KICKS, C_WAKEUPS, C_FLUSHES, C_CATCHUPS, C_IDLE, C_PREEMPT, C_OPS,
	C_OP_PAGES, C_THROTTLED, C_HALTED_US,
	/* Flush stamps: frames freed with a stamp; of them handed out again;
	 * of those, before the stamp settled (tlbpol_stamp_settle() called);
	 * settles that had to interrupt or wait; handouts that passed the last
	 * freed frame for a settled one; munmaps left unstamped (guards);
	 * guest accesses through a stale entry to a stamped free frame
	 * (allowed: the frame is not reused yet). */
	C_STAMPED, C_REUSED, C_EARLY, C_SETTLE_WAITS, C_PREFERRED, C_GUARDS, C_DEAD_USES,
	/* Address spaces: the guest scheduler's switches to another one; of
	 * them, those told to flush (the tag, or all: the allocator's word or
	 * the engine's catch-up). */
	C_SWITCHES, C_SWITCH_FLUSHES,
	C_MAX
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
	uint32_t space;        /* the address space it runs; NO_SPACE before the first */
	uint32_t htag;         /* the hardware tag loaded with it (0 without --tags) */
	struct tlb_entry tlb[TLB_SIZE];
	uint64_t psc[NGROUPS]; /* directory entries walked through; 0: none */
	uint16_t psc_tag[NGROUPS]; /* the hardware tag each was filled under */
};
#define NO_SPACE UINT32_MAX

/*
 * The soft TLB is direct-mapped by vpn and hardware tag: one page of two
 * tags lands in two slots (it keeps several address spaces' entries), and a
 * lookup under a tag finds only what was filled under that tag, by whoever
 * ran under it.  Tag 0 (no --tags): slot vpn % TLB_SIZE.
 */
static inline struct tlb_entry *tlb_slot(struct cpu *c, uint32_t vpn, uint32_t htag)
{
	return &c->tlb[(vpn + htag * 389u) % TLB_SIZE];
}
static inline int tlb_hit(const struct tlb_entry *e, uint32_t vpn, uint32_t htag)
{
	return e->tag == vpn + 1 && (uint32_t)e->htag == htag;
}

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
	S_UNSETTLED,     /* a frame handed out again before its flush stamp settled */
	S_OTHER_AS,      /* a TLB or PSC entry another address space left under the tag */
	S_MAX
};

/* Bugs the program can plant in itself (--bug), to show that the checks
 * catch a stale TLB entry wherever it comes from. */
enum bug { BUG_NONE, BUG_LOST_FLUSH, BUG_NO_CATCHUP, BUG_SKIP_SETTLE, BUG_TAG_NO_FLUSH };

/* --tags: none, or the engine's allocator of that kind (spaces.c). */
enum { TAGS_OFF = -1 };

enum op_kind {
	OP_RECLAIM, OP_UNMAP, OP_PROTECT, OP_MIGRATE, OP_REMAP, OP_TABLES, OP_AGING, OP_MUNMAP,
	OP_MAX
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

struct world {
	struct tlbpol_engine *eng;
	void *eng_mem;
	uint32_t nas;                  /* guest address spaces (--as) */
	struct tlbpol_as *as[MAX_AS];
	/* --tags: TAGS_OFF or TLBPOL_TAGS_*, with its slots (PERCPU) or tag
	 * bits (GLOBAL); the allocator of the run, in tags_mem. */
	int tags_kind;
	uint32_t tags_param;
	struct tlbpol_tags *tags;
	void *tags_mem;
	uint32_t npages, nframes, ntables; /* of the arrays below, in use */
	const struct mix *mix;
	const char *policy;
	uint64_t rules;
	enum bug bug;
	int stamps;   /* reclaim and munmap free frames at once with a flush stamp */
	uint32_t stamp_look; /* last freed frames the allocator looks at for a settled one */
	uint32_t nv;  /* vCPUs: engine CPUs 0 .. nv-1 */
	uint32_t mgr; /* the memory manager's engine CPU: nv */
	struct cpu *cpu;
	struct frame *frames;
	struct table *tables;
	uint64_t (*backing)[FRAME_WORDS]; /* the swap device: one slot per page */
	uint8_t *backing_valid;           /* under the page lock */
	uint32_t *pver;                   /* version of the page's last change; page lock */
	/* Per page across the address spaces (pg_of()): */
	_Atomic uint64_t dir[MAX_AS * NGROUPS];
	_Atomic uint32_t pstate[MAX_AS * NPAGES];
	_Atomic uint64_t cv[MAX_AS * NPAGES]; /* PTE word of the latest completed change */

	pthread_mutex_t pool_lock;        /* held for a push or pop only */
	uint32_t nfree_frames, nfree_tables;
	uint32_t free_frames[NFRAMES];
	/* A free frame's flush stamp (tlbpol_stamp()); 0: none.  Such a frame
	 * is not poisoned when freed: stale entries may still read it (its
	 * clean contents are still right) until it is handed out again,
	 * settled and poisoned (frame_alloc()). */
	_Atomic uint64_t frame_stamp[NFRAMES];
	/*
	 * The checker's view of the soft TLBs from other threads: bit v of
	 * holders[f] is set while vCPU v has an entry for frame f (set before
	 * the entry is usable, cleared when it is dropped, in the vCPU's own
	 * thread), and bit v of halted while vCPU v is IDLE or PREEMPTED as
	 * the engine knows it, until its catch-up flush.  A frame handed out
	 * again must have no holder that is not halted (frame_alloc()).
	 */
	_Atomic uint64_t holders[NFRAMES][MAX_VCPUS / 64];
	_Atomic uint64_t halted[MAX_VCPUS / 64];
	uint32_t free_tables[NTABLES];
	_Atomic uint32_t frame_gen, table_gen;

	_Atomic uint32_t hot_base;        /* first vpn of the guest's working set, in each space */
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
/* Helpers, for every file                                                  */
/* ------------------------------------------------------------------------ */

/* An internal error: exit 2, as for a usage error. */
static inline _Noreturn __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...)
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

static inline int chk(int r, const char *what)
{
	if (r < 0)
		die("%s failed: %s", what, strerror(-r));
	return r;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Each vCPU's generator: xorshift64*, the tests' (support/rng.h). */
static inline uint64_t rnd(uint64_t *s)
{
	return rng_xorshift64star(s);
}

/* ------------------------------------------------------------------------ */
/* Calls between the files                                                  */
/* ------------------------------------------------------------------------ */

/* checker.c: the stale-use reports and the judgement of an access. */
extern const char *const stale_names[S_MAX];
void stale(struct world *w, enum stale_kind k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cv_raise(struct world *w, uint32_t vpn, uint64_t word);
/* @vpn: the address space's own, as the vCPU running it accessed it. */
void check_use(struct cpu *c, const struct tlb_entry *e, uint32_t vpn, int write, uint64_t id);
/* Frame @f, freed with flush stamp @stamp (0: none), is handed out again;
 * @settled: the allocator settled the stamp or found it settled. */
void check_handout(struct world *w, uint32_t f, uint64_t stamp, int settled);

/* mmu.c: a vCPU's soft TLB, page walk and interrupt line.  @vpn: the
 * running address space's own. */
extern const struct tlbpol_ops softmmu_ops;
void tlb_flush_all(struct cpu *c);
/* Drop every TLB and PSC entry filled under hardware tag @htag. */
void tlb_flush_tag(struct cpu *c, uint32_t htag);
/* Around a switch: no entry is announced as usable (before), then those
 * under the tag now loaded are (after; held again). */
void tlb_unhold_all(struct cpu *c);
void tlb_hold_tag(struct cpu *c, uint32_t htag);
int mmu_walk(struct cpu *c, uint32_t vpn, _Atomic uint64_t **slotp, uint64_t *ptep, int spec);
int tlb_fill(struct cpu *c, uint32_t vpn, struct tlb_entry *e);
int dirty_assist(struct cpu *c, struct tlb_entry *e, uint32_t vpn);
void mmu_fault(struct cpu *c, uint32_t vpn);
void sleep_on_kick(struct cpu *c, long ns);
void poll_kick(struct cpu *c);
void wake_all(struct world *w);

/* pages.c: the page table, frames and table pages as software changes them. */
int page_trylock(struct world *w, uint32_t vpn, uint32_t *state);
void page_unlock(struct world *w, uint32_t vpn, uint32_t state);
_Atomic uint64_t *sw_pte(struct world *w, uint32_t vpn);
/* A free frame for engine CPU @cpu (settling its stamp there), or -1. */
int frame_alloc(struct world *w, uint32_t cpu);
/* Soft-TLB entries as the checker sees them (mmu.c). */
void tlb_hold(struct world *w, uint32_t frame, uint32_t vcpu);
void tlb_unhold(struct world *w, uint32_t frame, uint32_t vcpu);
void vcpu_set_halted(struct world *w, uint32_t vcpu, int halted);
/* Free @f at once with @stamp, unpoisoned (flush stamps). */
void frame_free_stamped(struct world *w, uint32_t f, uint64_t stamp);
void poison_words(_Atomic uint64_t *p, size_t n);
void frame_fill(struct world *w, uint32_t f, uint32_t vpn, const uint64_t *from_backing,
		int from);
struct table *ensure_table(struct world *w, uint32_t g);
void table_free(struct world *w, uint32_t t);
struct tlbpol_decision submit(struct world *w, uint32_t cpu, uint32_t kind, uint32_t flags,
			      uint32_t vpn, uint32_t nr, uint32_t old_perms, uint32_t new_perms);
void page_install(struct world *w, uint32_t cpu, uint32_t flags, struct table *t, uint32_t vpn,
		  uint32_t f, const uint64_t *from_backing, uint32_t perms);
void pages_setup(struct world *w);

/* spaces.c: the address spaces and their hardware tags. */
/* Build the allocator of --tags into @cfg->tags (none without). */
void tags_setup(struct world *w, struct tlbpol_config *cfg);
/* The guest scheduler: vCPU @c runs address space @next from now on. */
void vcpu_switch(struct cpu *c, uint32_t next);
/* Now and then another address space: vCPU @c's next one. */
uint32_t vcpu_next_space(struct cpu *c);
/* "percpu:2", "global:3" or "off" into @buf (16 bytes). */
const char *tags_str(const struct world *w, char *buf);

/* manager.c (manager.h) and guest.c: the threads main.c starts. */
void *mgr_main(void *arg);
void *vcpu_main(void *arg);

#endif /* SOFTMMU_H */
