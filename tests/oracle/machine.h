/* SPDX-License-Identifier: MIT */
/*
 * machine.h - the model machine's private parts, shared by the files of the
 * oracle (oracle.h is what a driver sees).  The words the machine is made of
 * (PTEs, TLB and paging-structure-cache entries, directory, frame and table
 * states, published CPU states: each a single 64-bit atomic, so that a
 * reader on another thread never sees half of one), the structures that
 * hold them, and the functions one file of the model calls in another.
 * Sequentially consistent operations are used wherever the oracle's
 * soundness argument needs a total order (see oracle.h); counters are
 * relaxed.  Calls flow one way, down this list, so that each file can be
 * read knowing only those below it: world.c (construction, end of a run),
 * cpus.c (switches and CPU states), kernel.c and accesses.c (what CPUs
 * touch), pagetables.c (the page-table operations of oracle.h), submit.c
 * (events to the engine, their completion, deferred frees), liveness.c
 * (deferred frees and stamps end within a bound of ticks), memory.c
 * (frames, table pages, PTE words), checks.c (the judgement), interrupts.c
 * and caches.c (the engine's callbacks, interrupts off, the stall clocks),
 * report.c.  migrate.c (a stamp asked where a migrating task went) sits
 * between pagetables.c, which calls it, and submit.c.
 */
#ifndef TLBPOL_ORACLE_MACHINE_H
#define TLBPOL_ORACLE_MACHINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "support/stale.h"
#include "support/mailbox.h"
#include "support/rng.h"
#include "oracle.h"

/* PTE bit shorthands. */
#define B_P TLBPOL_PTE_PRESENT
#define B_W TLBPOL_PTE_WRITE
#define B_X TLBPOL_PTE_EXEC
#define B_U TLBPOL_PTE_USER
#define B_A TLBPOL_PTE_ACCESSED
#define B_D TLBPOL_PTE_DIRTY
#define B_G TLBPOL_PTE_GLOBAL
#define PERM_MASK 0x7fu
/* A kernel page's PTE: global, not USER, A and D preset (Linux PAGE_KERNEL). */
#define KPERM (B_P | B_W | B_A | B_D | B_G)

/*
 * A PTE word: permissions (bits 0-6), attribute (7), frame (8-27), version
 * (32-52).  The attribute stands for what the portable bits cannot say (a
 * memory type, a protection key): an entry that caches the other value is
 * harmful, and only TLBPOL_EVF_ATTRS tells the engine it changed.  The
 * version counts software changes of this PTE (hardware A/D updates leave it
 * alone); it is capped at VER_MAX so that it fits a TLB entry, and a page
 * whose version reached the cap is changed no more (never in practice:
 * 2 million changes of one page in one run).
 */
#define VER_BITS 21
#define VER_MAX ((1u << VER_BITS) - 1)
#define FRAME_BITS 19
#define FRAME_MAX ((1u << FRAME_BITS) - 1)
#define B_ATTR MODEL_ATTR

static inline uint32_t pte_perm(uint64_t w) { return (uint32_t)(w & PERM_MASK); }
/* Permissions and attribute: what a TLB entry caches of the PTE. */
static inline uint32_t pte_pb(uint64_t w) { return (uint32_t)(w & 0xff); }
static inline uint32_t pte_frame(uint64_t w) { return (uint32_t)((w >> 8) & FRAME_MAX); }
static inline uint32_t pte_ver(uint64_t w) { return (uint32_t)((w >> 32) & VER_MAX); }
static inline uint64_t pte_make(uint32_t pb, uint32_t frame, uint32_t ver)
{
	return (uint64_t)(pb & 0xff) | (uint64_t)frame << 8 | (uint64_t)ver << 32;
}

/* A TLB entry: valid (63), as (59-62), page (48-58), perm (41-47),
 * attribute (40), frame (21-39), version (0-20).  0 is an empty slot. */
#define TE_VALID (1ULL << 63)
static inline uint64_t te_make(uint32_t as, uint32_t page, uint32_t pb, uint32_t frame,
			       uint32_t ver)
{
	return TE_VALID | (uint64_t)as << 59 | (uint64_t)page << 48 |
	       (uint64_t)(pb & PERM_MASK) << 41 | (uint64_t)((pb >> 7) & 1) << 40 |
	       (uint64_t)frame << 21 | ver;
}
static inline uint32_t te_as(uint64_t e) { return (uint32_t)((e >> 59) & 0xf); }
static inline uint32_t te_page(uint64_t e) { return (uint32_t)((e >> 48) & 0x7ff); }
static inline uint32_t te_perm(uint64_t e) { return (uint32_t)((e >> 41) & PERM_MASK); }
static inline uint32_t te_pb(uint64_t e) { return te_perm(e) | (uint32_t)((e >> 40) & 1) << 7; }
static inline uint32_t te_frame(uint64_t e) { return (uint32_t)((e >> 21) & FRAME_MAX); }
static inline uint32_t te_ver(uint64_t e) { return (uint32_t)(e & VER_MAX); }
/* An invalid entry (GENERIC may cache them): no translation, only a fault. */
static inline int te_neg(uint64_t e) { return !(te_perm(e) & TLBPOL_PTE_PRESENT); }
/* The byte address of @page of @as. */
static inline uint64_t page_va(uint32_t as, uint32_t page)
{
	return (as == ORC_KAS ? ORC_KVA_BASE : ORC_VA_BASE) + ((uint64_t)page << ORC_PAGE_SHIFT);
}

/* A directory word (which table page a group's PTEs live in): valid (63),
 * table (36-50), generation of that table page (0-35).  A PSC entry is the
 * same word plus as (59-62) and group (51-58). */
#define GEN_MASK ((1ULL << 36) - 1)
static inline uint64_t dir_make(uint32_t table, uint64_t gen)
{
	return TE_VALID | (uint64_t)table << 36 | (gen & GEN_MASK);
}
static inline uint32_t dir_table(uint64_t d) { return (uint32_t)((d >> 36) & 0x7fff); }
static inline uint64_t dir_gen(uint64_t d) { return d & GEN_MASK; }
static inline uint64_t psc_make(uint32_t as, uint32_t group, uint64_t dir)
{
	return dir | (uint64_t)as << 59 | (uint64_t)group << 51;
}
static inline uint32_t psc_as(uint64_t s) { return (uint32_t)((s >> 59) & 0xf); }
static inline uint32_t psc_group(uint64_t s) { return (uint32_t)((s >> 51) & 0xff); }
static inline uint64_t psc_dir(uint64_t s) { return s & ~(0xfffULL << 51); }

/* Table page and frame states: state (62-63), owner as (58-61), owner group
 * or page (47-57), generation (tables, 0-35).  A frame is F_CLEANED once its
 * contents were written back or copied (a later write is lost), F_GONE once
 * they were discarded (DONTNEED returned) or superseded (a new PTE for its
 * page was stored): any access is then wrong. */
enum { T_FREE = 0, T_LIVE = 1, T_DETACHED = 2 };
enum { F_FREE = 0, F_LIVE = 1, F_CLEANED = 2, F_GONE = 3 };
static inline uint64_t own_make(uint32_t state, uint32_t as, uint32_t idx, uint64_t gen)
{
	return (uint64_t)state << 62 | (uint64_t)as << 58 | (uint64_t)idx << 47 | (gen & GEN_MASK);
}
static inline uint32_t own_state(uint64_t o) { return (uint32_t)(o >> 62); }
static inline uint32_t own_as(uint64_t o) { return (uint32_t)((o >> 58) & 0xf); }
static inline uint32_t own_idx(uint64_t o) { return (uint32_t)((o >> 47) & 0x7ff); }
static inline uint64_t own_gen(uint64_t o) { return o & GEN_MASK; }

/*
 * What a CPU publishes for checkers: mode (0-2) and loaded AS (3-6, 15 for
 * none).  RUN is published only once the CPU may use its loaded AS: after the
 * engine call that made it so and the catch-up flush that call asked for.
 */
enum { M_RUN = 0, M_LAZY = 1, M_PREEMPT = 2, M_OFFLINE = 3 };
#define AS_NONE 15u
static inline uint64_t pub_make(uint32_t mode, int loaded)
{
	return mode | (uint64_t)(loaded < 0 ? AS_NONE : (uint32_t)loaded) << 3;
}
static inline uint32_t pub_mode(uint64_t p) { return (uint32_t)(p & 7); }
static inline uint32_t pub_loaded(uint64_t p) { return (uint32_t)((p >> 3) & 0xf); }

/* The engine may leave stale TLB entries of @x on a CPU that does not run
 * @x (lazy, preempted, offline, or loaded with another AS).  Kernel (global)
 * entries are used by every CPU that executes: only a preempted or offline
 * one may keep them, and it is checked when it runs again. */
static inline int excused_tlb(uint64_t pub, uint32_t x)
{
	if (x == ORC_KAS)
		return pub_mode(pub) == M_PREEMPT || pub_mode(pub) == M_OFFLINE;
	return pub_loaded(pub) != x || pub_mode(pub) != M_RUN;
}

/* ... but a stale pointer to a freed table page only on one that cannot walk
 * @x: a preempted vCPU executes nothing, an offline CPU holds nothing, a CPU
 * with another AS loaded does not walk @x.  A lazy CPU keeps @x loaded and its
 * MMU may walk it speculatively. */
static inline int excused_psc(uint64_t pub, uint32_t x)
{
	uint32_t m = pub_mode(pub);

	return pub_loaded(pub) != x || m == M_PREEMPT || m == M_OFFLINE;
}

/*
 * What the model's hardware does, per arch.  x86 and ARM64 set A and D
 * themselves (an atomic update of the PTE that fails once it is not
 * present).  GENERIC and RISCV64 do not: a walk that finds A clear faults,
 * and so does, on RISCV64 (Svade), a store through an entry without D;
 * GENERIC lets that store through silently, D never set (the weakest
 * hardware, for which writable counts as dirty).  GENERIC and RISCV64
 * cache not-present PTEs, RISCV64 not with Svvptc (cfg.svvptc).
 */
static inline int hw_ad(const struct orc_world *w);
static inline int store_needs_d(const struct orc_world *w);
static inline int caches_invalid(const struct orc_world *w);

/* Is version @a older than version @b? */
static inline int ver_older(uint32_t a, uint32_t b)
{
	return a < b;
}

/* Each CPU's own generator, and the world's at construction: xorshift64*,
 * whose sequence a seed's run depends on (see rng.h). */
static inline uint64_t rng_next(uint64_t *s)
{
	return rng_xorshift64star(s);
}

/* One page of a deferred change still pending on the CPU that submitted it. */
struct orc_rec {
	uint64_t seq; /* the submit's sequence number on its CPU */
	uint64_t pte; /* the PTE word the change produced */
	uint16_t page;
	uint8_t as;
	uint8_t deadline;
};

#define FREE_TABLES_MAX 16

/* A deferred free and what it frees. */
struct orc_free {
	struct orc_world *w;
	uint64_t upto; /* the CPU's changes with seq <= upto are complete when it runs */
	uint32_t cpu;
	uint32_t as;
	uint32_t nr_frames, nr_tables;
	uint32_t qpage, qn; /* pages held back (LAZY_OK), released when it runs */
	uint64_t reg_tick;  /* its CPU's tick count when it was registered (liveness.c) */
	uint32_t frames[ORC_MAX_RANGE];
	uint32_t tables[FREE_TABLES_MAX];
	_Atomic int ran;
};

/* Deferred frees and stamps the bounded-free check follows per CPU: the
 * engine queues 64 frees at most, and a CPU has 8 lazy requests. */
#define LIVE_MAX 128

#define CHUNK 256
struct free_chunk {
	struct free_chunk *next;
	struct orc_free f[CHUNK];
};

struct orc_cpu {
	/* --- read and written by other threads --- */
	_Alignas(64) _Atomic uint64_t pub;
	_Atomic uint8_t hv; /* HV_PREEMPTED, HV_FLUSH: KVM steal time's `preempted` */
	_Atomic int lock;  /* held across a walk or a flush of this CPU's caches */
	_Atomic uint64_t *tlb;
	_Atomic uint64_t *psc;
	/* cfg.tags, under the cache lock: per hardware tag, the address space
	 * whose entries it holds (-1: none), and whether entries of an
	 * earlier owner the model no longer keeps may still be under it; per
	 * address space, the tag its entries are under (-1: none). */
	int16_t *tag_owner;
	uint8_t *tag_orphan;
	int16_t as_tag[ORC_MAX_AS + 1];
	_Atomic uint64_t cnt[ORC_C_MAX];
	_Atomic uint64_t polls; /* orc_poll() calls: progress, for the stall check */
	/* w->offline_clock's value when its going OFFLINE returned (it has
	 * served what was posted to it, and takes no interrupt from then on);
	 * 0 while it is not, or is coming back (cb_send_ipi()). */
	_Atomic uint64_t offline_since;
	/*
	 * Its interrupt: raised by send_ipi and the stall watchdog, taken by
	 * orc_poll(), with mailbox.h's sequentially consistent pair
	 * (interrupts.c says why).  Its `sent` stays 0: cb_send_ipi() counts
	 * the oracle's IPIs itself (ORC_C_IPIS).  A line of its own, as
	 * struct mbox is aligned.
	 */
	struct mbox mb;
	/* A long preemption (orc_hold_begin()), and a waiter's demand that it
	 * end (cb_relax()). */
	_Atomic int held, kicked;
	/* A migrating task's stamp asked of this CPU (migrate.c): MIG_* and
	 * the asking CPU << 8; the stamp it got. */
	_Atomic uint32_t mig;
	_Atomic uint64_t mig_stamp;
	/* Odd while a lockless walk is in progress (orc_lockless_walk()),
	 * bumped at its start and end: ops->walker_sync waits for it to move. */
	_Atomic uint64_t walk_seq;
	/* Split-phase broadcasts this thread issued and has not synced
	 * (caches.c); under iss_lock, for a sync run elsewhere reads them. */
	pthread_mutex_t iss_lock;
	struct issued {
		struct tlbpol_flush f;
		struct tlbpol_range *r;
	} *iss;
	uint32_t niss, capiss;

	/* --- the CPU's own thread only --- */
	_Alignas(64) int cur;  /* running AS, -1: NULL */
	int loaded;            /* loaded AS, -1: none */
	uint32_t estate;       /* the state last given to tlbpol_cpu_state() */
	uint64_t rng;
	uint64_t seq;
	struct orc_rec *rec;
	size_t nrec, caprec;
	struct free_chunk *chunks;
	uint32_t chunk_used;
	/* The stall check (cb_relax()): the engine call being waited in. */
	uint64_t call_id, wait_call_id;
	uint64_t kicks, wait_kicks; /* send_ipi calls made by this CPU */
	uint64_t wait_turns;
	uint64_t *wait_polls; /* every CPU's polls when the wait began */
	uint64_t *mark_polls; /* ... at the last checkpoint (every 64 turns) */
	uint32_t busy_marks;  /* checkpoints in a row at which all had polled */
	/* The engine call in progress (call_begin()): interrupts off (relax
	 * takes none), and w->offline_clock when it began or last relaxed. */
	int irqs_off;
	uint64_t call_mark;
	/* CPUs the engine call in progress interrupted (cb_send_ipi()), and
	 * whether it is a tlbpol_stamp_settle(): cb_relax() ends their long
	 * preemptions unless it is. */
	uint64_t sent[ORC_MAX_CPUS / 64];
	int settling;
	/* The deadlock clock (cb_relax()): the call it times, since when. */
	uint64_t clock_call_id, clock_turns;
	double clock_t0;
	/* The bounded-free check (liveness.c): own ticks that count (taken
	 * while every other CPU made progress), the deferred frees registered
	 * and not yet run, the stamps not yet seen settled, with the tick each
	 * began at.  finishing: orc_finish() has begun, where the check stops. */
	uint64_t ticks;
	uint64_t *live_polls; /* every CPU's polls at its last tick that counted */
	struct orc_free *pend[LIVE_MAX];
	uint32_t npend;
	struct live_stamp {
		uint64_t stamp, tick;
	} pst[LIVE_MAX];
	uint32_t npst;
	int finishing;
	/* A stamped event was submitted since the last tlbpol_stamp(). */
	int stamp_owed;
	/* tlbpol_cpu_state() transitions made: [lazy][from][to]. */
	uint64_t trans[2][4][4];
};

struct orc_as {
	struct tlbpol_as *eas;
	uint64_t tag;
	_Atomic uint64_t *pte;
	_Atomic uint64_t *cv;   /* PTE word of the latest completed change */
	_Atomic uint32_t *vma;  /* W/X/U a fault may grant */
	_Atomic uint32_t *quar; /* >0: address held back until a LAZY_OK free runs */
	_Atomic uint64_t *dir;  /* per group: its table page (dir_make), 0: none */
	_Atomic uint32_t *lock; /* per group: page-table lock, holder cpu + 1 */
	_Atomic uint32_t *prevf; /* per page: the frame its last removal took, 0: none */
	uint32_t pages;
};

#define TRACE_LEN 1024
#define TRACE_DUMP 160

enum trace_op {
	TR_SUBMIT,  /* page: first; a: kind|action<<3|deadline<<5|reason<<7|flags<<12; b: n|old<<8|new<<16 */
	TR_FLUSH,   /* flush_local on cpu: a: kind|flags<<2|ranges<<4; page: first page; b: pages */
	TR_BCAST,   /* broadcast from cpu, same fields */
	TR_IPI,     /* cpu sent interrupts: a: targets (low 24 bits) */
	TR_TAKE,    /* cpu took an interrupt: a: requests served */
	TR_SWITCH,  /* as: next (15: NULL); a: need_flush; b: loaded before */
	TR_UNLOAD,
	TR_STATE,   /* a: state; b: return */
	TR_EFLUSH,  /* tlbpol_flush: a: by; b: return */
	TR_TICK,
	TR_DFREG,   /* a: frames|tables<<8; b: first table */
	TR_DFRUN,   /* same */
	TR_DETACH,  /* page: group; a: table */
	TR_TFREE,   /* page: group; a: table */
	TR_PSC,     /* a walk cached a table pointer: page: group; a: table */
	TR_CATCHUP, /* the CPU flushed as itself: as (15: all) */
};

struct orc_world {
	struct orc_config cfg;
	struct tlbpol_engine *eng;
	struct tlbpol_ops ops;
	struct tlbpol_backend bcast_desc, remote_desc;
	const struct tlbpol_backend *bcast_descs[2];
	uint16_t cpu_node[ORC_MAX_CPUS];
	uint32_t ngroups;
	struct orc_as as[ORC_MAX_AS + 1]; /* [ORC_KAS]: the kernel region */
	struct orc_cpu *cpus;
	struct tlbpol_tags *tags; /* cfg.tags: the engine's allocator */
	uint32_t ntags;

	_Atomic uint64_t *frame; /* frame states */
	uint32_t nframes;
	_Atomic uint64_t *table; /* table page states */
	uint32_t ntables;
	pthread_mutex_t pool_lock;
	uint32_t *frame_pool, frame_top;
	/* A free frame's flush stamp (tlbpol_stamp()), 0 for none: freed at
	 * once, its old translations may live on until it is settled, when it
	 * is handed out again (frame_alloc()). */
	_Atomic uint64_t *frame_stamp;
	_Atomic uint32_t *frame_stamper; /* the CPU whose tlbpol_stamp() gave it */
	uint32_t *table_pool, table_top;

	_Atomic uint64_t glob[ORC_C_MAX]; /* counts made outside any CPU thread */
	_Atomic uint64_t viol[ORC_V_MAX];
	_Atomic uint32_t reports;
	_Atomic int dumped;
	pthread_mutex_t log_lock;

	_Atomic uint32_t bar_count, bar_gen;

	/* Counts CPUs' completed moves to OFFLINE (orc_cpu's offline_since). */
	_Atomic uint64_t offline_clock;
	/* A deadlock was reported: interrupts are let in everywhere, and the
	 * workload stops (orc_stopped()). */
	_Atomic int stopped;
	_Atomic uint32_t held; /* CPUs in a long preemption (orc_hold_begin()) */
	uint32_t free_bound; /* cfg.free_bound resolved; 0: no bounded-free check */
	double stall_secs;   /* cfg.stall_secs resolved */

	/* The last TRACE_LEN things that happened, for violation reports. */
	_Atomic uint64_t trace_seq;
	struct trace_ent {
		_Atomic uint64_t w0, w1;
	} trace[TRACE_LEN];
};

static inline int hw_ad(const struct orc_world *w)
{
	return w->cfg.arch == TLBPOL_ARCH_X86_64 || w->cfg.arch == TLBPOL_ARCH_ARM64;
}

static inline int store_needs_d(const struct orc_world *w)
{
	return w->cfg.arch == TLBPOL_ARCH_RISCV64;
}

static inline int caches_invalid(const struct orc_world *w)
{
	return w->cfg.arch == TLBPOL_ARCH_GENERIC ||
	       (w->cfg.arch == TLBPOL_ARCH_RISCV64 && !w->cfg.svvptc);
}

/* The CPU this thread acts as, and for which world (orc_cpu_bind()). */
extern _Thread_local int self_cpu;
extern _Thread_local struct orc_world *self_world;

/* Turns an engine call that interrupted a held CPU waits before the
 * hypervisor runs that CPU again (oracle.h, "Long preemptions"). */
#define HOLD_WAKE_TURNS 256

/* A migrating task's stamp (migrate.c): asked, taken, answered. */
enum { MIG_IDLE, MIG_ASKED, MIG_TAKEN, MIG_ENOENT, MIG_STAMP, MIG_DECLINED };

/* What tlbpol_stamp() leaves in a stamp it does not write: a value no
 * stamp has (its low word names no CPU). */
#define STAMP_UNWRITTEN 0xffffffffULL

/* KVM steal time's `preempted` byte: KVM_VCPU_PREEMPTED, KVM_VCPU_FLUSH_TLB. */
enum { HV_PREEMPTED = 1, HV_FLUSH = 2 };

/* What drop_as() drops besides one address space's entries. */
#define DROP_ALL (-1)  /* everything, global entries too (FLUSH_ALL, offline) */
#define DROP_USER (-2) /* every non-global entry (a CR3 write without PCID) */

/* One PTE's change: what the exchange replaced, and what it stored. */
struct change {
	uint32_t page;
	uint64_t old, new;
};

/* How submit_via() completes what it submits (see there). */
enum sub_mode { SUB_NORMAL, SUB_NOW, SUB_NORECORD };

/* ---- report.c: violations, warnings, the trace, counters ---- */

void count(struct orc_world *w, enum orc_ckind k, uint64_t n);
const char *perm_str(uint32_t p, char out[8]);
void violation(struct orc_world *w, enum orc_vkind k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void warning(struct orc_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void trace(struct orc_world *w, int cpu, enum trace_op op, uint32_t as, uint32_t page,
	   uint32_t a, uint32_t b);
uint64_t total(const struct orc_world *w, enum orc_ckind k);

/* ---- caches.c: TLBs and paging-structure caches, the engine's flushes ---- */

void cache_lock(struct orc_cpu *c);
void cache_unlock(struct orc_cpu *c);
uint32_t tlb_set(const struct orc_world *w, uint32_t as, uint32_t page);
uint32_t tlb_slots(const struct orc_world *w);
uint32_t psc_slots(const struct orc_world *w);
int tlb_find(struct orc_world *w, struct orc_cpu *c, uint32_t as, uint32_t page);
void tlb_fill(struct orc_world *w, struct orc_cpu *c, uint64_t e);
int psc_find(struct orc_world *w, struct orc_cpu *c, uint32_t as, uint32_t group);
void psc_fill(struct orc_world *w, struct orc_cpu *c, uint64_t s);
void self_flush(struct orc_world *w, struct orc_cpu *c, int as);
/* hwtags.c (cfg.tags): no tag used yet; every tag flushed; the owner a
 * flush's tag reaches; a tag loaded by a switch, its flush made first. */
void hwtag_init(struct orc_world *w, struct orc_cpu *c);
void hwtag_flushed_all(struct orc_world *w, struct orc_cpu *c);
int hwtag_owner(struct orc_world *w, struct orc_cpu *c, const struct tlbpol_flush *f);
void hwtag_load(struct orc_world *w, uint32_t cpu, int x, const struct tlbpol_tag_use *u);
void cb_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f);
void cb_broadcast(void *ctx, uint32_t from, const struct tlbpol_flush *f);
void cb_bcast_issue(void *ctx, uint32_t cpu, const struct tlbpol_flush *f);
void cb_bcast_sync(void *ctx, uint32_t cpu);
void cb_remote_action(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets,
		      const struct tlbpol_flush *f);
/* An engine call of @c's returns: it must have synced what it issued. */
void issued_check(struct orc_world *w, struct orc_cpu *c, uint32_t cpu);

/* ---- walkers.c: lockless walkers, ops->walker_sync ---- */

void cb_walker_sync(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *cpus);
/* hwtags.c: ops->load_tag, a move onto a global tag from an interrupt. */
void cb_load_tag(void *ctx, uint32_t cpu, uint32_t tag, uint32_t flush);

/* ---- interrupts.c: the engine's interrupts, relax and vcpu_defer ---- */

void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets);
int cb_vcpu_defer(void *ctx, uint32_t cpu);
void cb_relax(void *ctx, uint32_t cpu);
void window(struct orc_world *w, struct orc_cpu *c);
/* An engine call for @c that may wait begins (@tick: tlbpol_tick(), a
 * timer interrupt), or ends: interrupts on or off for it, the stall clocks. */
void call_begin(struct orc_world *w, struct orc_cpu *c, int tick);
void call_end(struct orc_world *w, struct orc_cpu *c);
double now_secs(void);

/* ---- liveness.c: deferred frees and stamps end within free_bound ticks ---- */

void live_free(struct orc_world *w, struct orc_cpu *c, struct orc_free *fr);
void live_stamp(struct orc_world *w, struct orc_cpu *c, uint64_t stamp);
void live_tick(struct orc_world *w, struct orc_cpu *c, uint32_t cpu);

/* ---- checks.c: the oracle's judgement ---- */

int neg_harmful(uint32_t x, uint64_t e, uint64_t cvw);
void complete_page(struct orc_world *w, uint32_t x, uint32_t page, uint64_t ptew, const char *what);
void scan_self(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, int x, int lazy,
	       enum orc_vkind kind, const char *when);
int use_check(struct orc_world *w, uint32_t cpu, uint64_t e);
void write_check(struct orc_world *w, uint32_t cpu, uint64_t e);
void check_freed_frame(struct orc_world *w, uint32_t f, uint64_t o);
void check_freed_table(struct orc_world *w, uint32_t t, uint64_t o);

/* ---- memory.c: frames, table pages, PTE words and their locks ---- */

uint32_t frame_alloc(struct orc_world *w, uint32_t as, uint32_t page);
void frame_set(struct orc_world *w, uint32_t f, uint32_t x, uint32_t page, uint32_t state);
void frame_unalloc(struct orc_world *w, uint32_t f);
void frame_free(struct orc_world *w, uint32_t f);
void frame_free_stamped(struct orc_world *w, uint32_t f, uint64_t stamp, uint32_t stamper);
/* Is @fo (a frame's state word) a stamped free frame of (@x, @page), whose
 * old translations may still be used until it is handed out again? */
int frame_stamped_of(struct orc_world *w, uint32_t f, uint64_t fo, uint32_t x, uint32_t page);
int table_alloc(struct orc_world *w, uint32_t as, uint32_t group, uint64_t *dirw);
void table_free(struct orc_world *w, uint32_t t);
void table_detach(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t g, uint32_t t);
int ensure_table(struct orc_world *w, uint32_t x, uint32_t g);
int lock_groups(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t g0, uint32_t g1);
void unlock_groups(struct orc_world *w, uint32_t x, uint32_t g0, uint32_t g1);
int pte_change(struct orc_world *w, uint32_t x, uint32_t page, uint32_t clr, uint32_t set,
	       uint32_t frame, int only_present, struct change *ch);
int install_prepare(struct orc_world *w, uint32_t x, uint32_t page, uint32_t perm, uint32_t frame,
		    struct change *ch);
void supersede(struct orc_world *w, uint32_t x, uint32_t page, uint32_t newf);
void install_commit(struct orc_world *w, uint32_t x, const struct change *ch, uint32_t nch);

/* ---- submit.c: events submitted, completions recorded, deferred frees ---- */

void submit_via(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t kind,
		uint32_t evflags, uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch,
		uint32_t new_pte, enum sub_mode mode);
void submit(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t kind, uint32_t evflags,
	    uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch, uint32_t new_pte);
void submit_runs(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t kind,
		 uint32_t evflags, const struct change *ch, uint32_t nch);
void install_run(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t evflags,
		 uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch);
enum orc_result install(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t page, uint32_t perm,
			uint32_t evflags);
struct orc_free *free_new(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, uint32_t as);
void free_unused(struct orc_cpu *c, struct orc_free *fr);
uint32_t clear_to_free(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t p0, uint32_t n,
		       struct change *ch, struct orc_free **frp);
void free_register(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, struct orc_free *fr);
void free_frame_later(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t f);
void hold_back(struct orc_world *w, uint32_t x, uint32_t page, uint32_t n, struct orc_free *fr);
int stamp_call(struct orc_world *w, uint32_t cpu, uint64_t *st);
uint64_t orc_stamp(struct orc_world *w, uint32_t cpu);

/* ---- migrate.c: a stamp asked where a migrating task went ---- */

uint64_t stamp_pass(struct orc_world *w, uint32_t cpu, uint32_t *stamper);

/* ---- accesses.c: walks, accesses and faults ---- */

int negative(struct orc_world *w, struct orc_cpu *c, uint32_t x, uint32_t page, uint64_t ptew,
	     uint64_t *out);

#endif /* TLBPOL_ORACLE_MACHINE_H */
