/* SPDX-License-Identifier: MIT */
/*
 * oracle.c - the model machine and the oracle of oracle.h.
 *
 * Everything another thread may read is an atomic: PTEs, page-table
 * directories, TLB and PSC entries (each a single 64-bit word, so a reader
 * never sees half an entry), frame and table states, published CPU states.
 * Sequentially consistent operations are used wherever the oracle's
 * soundness argument needs a total order (see oracle.h); counters are
 * relaxed.
 */
#define _POSIX_C_SOURCE 200809L

#include "../../tools/model/stale.h"
#include "oracle.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Is version @a older than version @b? */
static inline int ver_older(uint32_t a, uint32_t b)
{
	return a < b;
}

/* ------------------------------------------------------------------------ */

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
	uint32_t frames[ORC_MAX_RANGE];
	uint32_t tables[FREE_TABLES_MAX];
	_Atomic int ran;
};

#define CHUNK 256
struct free_chunk {
	struct free_chunk *next;
	struct orc_free f[CHUNK];
};

struct orc_cpu {
	/* --- read and written by other threads --- */
	_Alignas(64) _Atomic uint64_t pub;
	_Atomic int ipi;   /* an interrupt is pending */
	_Atomic uint8_t hv; /* HV_PREEMPTED, HV_FLUSH: KVM steal time's `preempted` */
	_Atomic int lock;  /* held across a walk or a flush of this CPU's caches */
	_Atomic uint64_t *tlb;
	_Atomic uint64_t *psc;
	_Atomic uint64_t cnt[ORC_C_MAX];
	_Atomic uint64_t polls; /* orc_poll() calls: progress, for the stall check */

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
	uint16_t cpu_node[ORC_MAX_CPUS];
	uint32_t ngroups;
	struct orc_as as[ORC_MAX_AS + 1]; /* [ORC_KAS]: the kernel region */
	struct orc_cpu *cpus;

	_Atomic uint64_t *frame; /* frame states */
	uint32_t nframes;
	_Atomic uint64_t *table; /* table page states */
	uint32_t ntables;
	pthread_mutex_t pool_lock;
	uint32_t *frame_pool, frame_top;
	uint32_t *table_pool, table_top;

	_Atomic uint64_t glob[ORC_C_MAX]; /* counts made outside any CPU thread */
	_Atomic uint64_t viol[ORC_V_MAX];
	_Atomic uint32_t reports;
	_Atomic int dumped;
	pthread_mutex_t log_lock;

	_Atomic uint32_t bar_count, bar_gen;

	/* The last TRACE_LEN things that happened, for violation reports. */
	_Atomic uint64_t trace_seq;
	struct trace_ent {
		_Atomic uint64_t w0, w1;
	} trace[TRACE_LEN];
};

/* The CPU this thread acts as, and for which world. */
static _Thread_local int self_cpu = -1;
static _Thread_local struct orc_world *self_world;

static const char *const vkind_names[ORC_V_MAX] = {
	[ORC_V_STALE] = "stale-after-completion",
	[ORC_V_RESUME] = "stale-after-catch-up",
	[ORC_V_USE] = "stale-entry-used",
	[ORC_V_LOST_WRITE] = "lost-write",
	[ORC_V_FRAME] = "freed-frame-mapped",
	[ORC_V_TABLE] = "freed-table-cached",
	[ORC_V_WALK] = "freed-table-walked",
	[ORC_V_FREE] = "deferred-free",
	[ORC_V_API] = "api",
	[ORC_V_DATA] = "stale-data",
	[ORC_V_STALL] = "stall",
};

const char *orc_vkind_name(enum orc_vkind k)
{
	return (unsigned)k < ORC_V_MAX ? vkind_names[k] : "unknown";
}

static void count(struct orc_world *w, enum orc_ckind k, uint64_t n)
{
	if (self_world == w && self_cpu >= 0)
		atomic_fetch_add_explicit(&w->cpus[self_cpu].cnt[k], n, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&w->glob[k], n, memory_order_relaxed);
}

static const char *arch_name(uint32_t arch)
{
	return arch == TLBPOL_ARCH_X86_64 ? "x86" : arch == TLBPOL_ARCH_ARM64 ? "arm64" : "generic";
}

static void perm_str(uint32_t p, char out[8])
{
	const char *l = "pwxuadg";

	for (int i = 0; i < 7; i++)
		out[i] = (p >> i) & 1 ? l[i] : '-';
	out[7] = 0;
}

static void trace_dump(struct orc_world *w);

static void violation(struct orc_world *w, enum orc_vkind k, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&w->viol[k], 1);
	if (atomic_fetch_add(&w->reports, 1) >= w->cfg.max_reports)
		return;
	pthread_mutex_lock(&w->log_lock);
	fprintf(w->cfg.log, "VIOLATION %s [cpus=%u arch=%s rules=%#llx%s seed=%llu]: ",
		vkind_names[k], w->cfg.nr_cpus, arch_name(w->cfg.arch),
		(unsigned long long)w->cfg.rules,
		(w->cfg.flags & TLBPOL_CFGF_RETAIN_AS) ? " retain" : "",
		(unsigned long long)w->cfg.seed);
	va_start(ap, fmt);
	vfprintf(w->cfg.log, fmt, ap);
	va_end(ap);
	fputc('\n', w->cfg.log);
	if (!atomic_exchange(&w->dumped, 1) && getenv("ORC_TRACE"))
		trace_dump(w);
	fflush(w->cfg.log);
	pthread_mutex_unlock(&w->log_lock);
}

static void trace(struct orc_world *w, int cpu, enum trace_op op, uint32_t as, uint32_t page,
		  uint32_t a, uint32_t b)
{
	uint64_t seq = atomic_fetch_add_explicit(&w->trace_seq, 1, memory_order_relaxed);
	struct trace_ent *t = &w->trace[seq % TRACE_LEN];

	atomic_store_explicit(&t->w0,
			      seq << 24 | (uint64_t)(cpu & 0xff) << 16 | (uint64_t)op << 8 | (as & 0xff),
			      memory_order_relaxed);
	atomic_store_explicit(&t->w1, (uint64_t)(page & 0xffff) | (uint64_t)(a & 0xffffff) << 16 |
					      (uint64_t)(b & 0xffffff) << 40,
			      memory_order_relaxed);
}

/* Print the trace's last entries (racy by nature: entries being written
 * may show torn; it is a debugging aid, not part of the oracle). */
static void trace_dump(struct orc_world *w)
{
	static const char *const ops[] = { "submit", "flush", "bcast", "ipi", "take", "switch",
					   "unload", "state", "eflush", "tick", "dfree-reg",
					   "dfree-run", "detach", "table-free", "psc", "catch-up" };
	uint64_t end = atomic_load(&w->trace_seq);
	uint64_t start = end > TRACE_DUMP ? end - TRACE_DUMP : 0;

	fprintf(w->cfg.log, "  last %llu events (seq cpu op as page a b):\n",
		(unsigned long long)(end - start));
	for (uint64_t i = start; i < end; i++) {
		struct trace_ent *t = &w->trace[i % TRACE_LEN];
		uint64_t w0 = atomic_load_explicit(&t->w0, memory_order_relaxed);
		uint64_t w1 = atomic_load_explicit(&t->w1, memory_order_relaxed);
		uint32_t op = (w0 >> 8) & 0xff, a = (w1 >> 16) & 0xffffff, b = (uint32_t)(w1 >> 40);

		if ((w0 >> 24) != (i & ((1ULL << 40) - 1)))
			continue;
		fprintf(w->cfg.log, "  %8llu cpu%-2u %-10s as%-2u %4u ", (unsigned long long)(w0 >> 24),
			(unsigned)((w0 >> 16) & 0xff), op < 16 ? ops[op] : "?", (unsigned)(w0 & 0xff),
			(unsigned)(w1 & 0xffff));
		switch (op) {
		case TR_SUBMIT:
			fprintf(w->cfg.log, "kind %u %s/%s/%s flags %#x n %u old %#x new %#x\n", a & 7,
				tlbpol_action_str((a >> 3) & 3), tlbpol_deadline_str((a >> 5) & 3),
				tlbpol_reason_str((a >> 7) & 31), a >> 12, b & 0xff, (b >> 8) & 0xff,
				(b >> 16) & 0xff);
			break;
		case TR_FLUSH:
		case TR_BCAST:
			fprintf(w->cfg.log, "%s%s ranges %u pages %u\n",
				(a & 3) == 0 ? "pages" : (a & 3) == 1 ? "as" : "all",
				(a >> 2) & 1 ? "+tables" : "", a >> 4, b);
			break;
		default:
			fprintf(w->cfg.log, "%#x %#x\n", a, b);
			break;
		}
	}
}

/* A contract note that is not a safety problem (reported once each). */
static void warning(struct orc_world *w, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&w->glob[ORC_C_WARNINGS], 1) >= 3)
		return;
	pthread_mutex_lock(&w->log_lock);
	fputs("warning: ", w->cfg.log);
	va_start(ap, fmt);
	vfprintf(w->cfg.log, fmt, ap);
	va_end(ap);
	fputc('\n', w->cfg.log);
	pthread_mutex_unlock(&w->log_lock);
}

/* ------------------------------------------------------------------------ */
/* The harm a stale entry can do                                            */
/* ------------------------------------------------------------------------ */

/* Does an entry with @eperm -> @eframe, filled from an older PTE, permit what
 * PTE word @pte does not?  The one definition, for every checker:
 * tools/model/stale.h (B_ATTR is its MODEL_ATTR). */
int orc_harmful(uint32_t arch, uint32_t eperm, uint32_t eframe, uint64_t pte)
{
	return model_stale_harmful(arch, eperm, eframe, pte_pb(pte), pte_frame(pte));
}

/* ------------------------------------------------------------------------ */
/* Caches                                                                   */
/* ------------------------------------------------------------------------ */

static void cache_lock(struct orc_cpu *c)
{
	while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
		sched_yield();
}

static void cache_unlock(struct orc_cpu *c)
{
	atomic_store_explicit(&c->lock, 0, memory_order_release);
}

static uint32_t tlb_set(const struct orc_world *w, uint32_t as, uint32_t page)
{
	return ((page + as * 7u) % w->cfg.tlb_sets) * w->cfg.tlb_ways;
}

static uint32_t psc_set(const struct orc_world *w, uint32_t as, uint32_t group)
{
	return ((group + as * 3u) % w->cfg.psc_sets) * w->cfg.psc_ways;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static int tlb_find(struct orc_world *w, struct orc_cpu *c, uint32_t as, uint32_t page)
{
	uint32_t base = tlb_set(w, as, page);

	for (uint32_t k = 0; k < w->cfg.tlb_ways; k++) {
		uint64_t e = atomic_load(&c->tlb[base + k]);

		if ((e & TE_VALID) && te_as(e) == as && te_page(e) == page)
			return (int)(base + k);
	}
	return -1;
}

/*
 * The slot of a set-associative cache to store into: @hit (the entry with
 * the same key, -1 if none), else the first free of the @ways slots from
 * @base, else a random one of them.
 */
static uint32_t set_victim(_Atomic uint64_t *cache, uint32_t base, uint32_t ways, int hit,
			   uint64_t *rng)
{
	if (hit >= 0)
		return (uint32_t)hit;
	for (uint32_t k = 0; k < ways; k++)
		if (!atomic_load(&cache[base + k]))
			return base + k;
	return base + (uint32_t)(rng_next(rng) % ways);
}

/* Under the CPU's cache lock, on its own thread. */
static void tlb_fill(struct orc_world *w, struct orc_cpu *c, uint64_t e)
{
	uint32_t base = tlb_set(w, te_as(e), te_page(e));

	atomic_store(&c->tlb[set_victim(c->tlb, base, w->cfg.tlb_ways,
					tlb_find(w, c, te_as(e), te_page(e)), &c->rng)],
		     e);
}

static int psc_find(struct orc_world *w, struct orc_cpu *c, uint32_t as, uint32_t group)
{
	uint32_t base = psc_set(w, as, group);

	for (uint32_t k = 0; k < w->cfg.psc_ways; k++) {
		uint64_t s = atomic_load(&c->psc[base + k]);

		if ((s & TE_VALID) && psc_as(s) == as && psc_group(s) == group)
			return (int)(base + k);
	}
	return -1;
}

static void psc_fill(struct orc_world *w, struct orc_cpu *c, uint64_t s)
{
	uint32_t base = psc_set(w, psc_as(s), psc_group(s));

	atomic_store(&c->psc[set_victim(c->psc, base, w->cfg.psc_ways,
					psc_find(w, c, psc_as(s), psc_group(s)), &c->rng)],
		     s);
}

static uint32_t tlb_slots(const struct orc_world *w)
{
	return w->cfg.tlb_sets * w->cfg.tlb_ways;
}

static uint32_t psc_slots(const struct orc_world *w)
{
	return w->cfg.psc_sets * w->cfg.psc_ways;
}

/* What drop_as() drops besides one address space's entries. */
#define DROP_ALL (-1)  /* everything, global entries too (FLUSH_ALL, offline) */
#define DROP_USER (-2) /* every non-global entry (a CR3 write without PCID) */

/* Drop every entry of @as (or DROP_ALL, DROP_USER), TLB and PSC.  The
 * kernel region's entries are global: they go only with DROP_ALL.  Under
 * the CPU's cache lock. */
static void drop_as(struct orc_world *w, struct orc_cpu *c, int as)
{
	for (uint32_t i = 0; i < tlb_slots(w); i++) {
		uint64_t e = atomic_load(&c->tlb[i]);

		if (e && (as == DROP_ALL || (as == DROP_USER && te_as(e) != ORC_KAS) ||
			  te_as(e) == (uint32_t)as))
			atomic_store(&c->tlb[i], 0);
	}
	for (uint32_t i = 0; i < psc_slots(w); i++) {
		uint64_t s = atomic_load(&c->psc[i]);

		if (s && (as < 0 || psc_as(s) == (uint32_t)as))
			atomic_store(&c->psc[i], 0);
	}
}

static int as_of_tag(const struct orc_world *w, uint64_t tag)
{
	for (uint32_t x = 0; x < w->cfg.nr_as; x++)
		if (w->as[x].tag == tag)
			return (int)x;
	return -1;
}

/* Is byte address @va inside @r? */
static int in_range(const struct tlbpol_range *r, uint64_t va)
{
	if (va < r->va || r->page_shift >= 64)
		return 0;
	return ((va - r->va) >> r->page_shift) < r->nr_pages;
}

/* Does [va, va + len) meet @r? */
static int meets_range(const struct tlbpol_range *r, uint64_t va, uint64_t len)
{
	uint64_t rlen;

	if (r->page_shift >= 64)
		return 0;
	if (r->nr_pages > (UINT64_MAX >> r->page_shift))
		rlen = UINT64_MAX - r->va;
	else
		rlen = r->nr_pages << r->page_shift;
	return va < r->va + rlen && r->va < va + len;
}

/* Check what the header promises of a flush: known tag, sane ranges. */
static void check_flush(struct orc_world *w, const struct tlbpol_flush *f, int x)
{
	if (f->kind > TLBPOL_FLUSH_ALL) {
		violation(w, ORC_V_API, "flush of unknown kind %u", f->kind);
		return;
	}
	if (f->kind != TLBPOL_FLUSH_ALL && x < 0)
		warning(w, "flush names tag %#llx, which no address space has",
			(unsigned long long)f->as_tag);
	if (f->kind != TLBPOL_FLUSH_PAGES)
		return;
	if (!f->nr_ranges || !f->ranges) {
		warning(w, "PAGES flush with no ranges");
		return;
	}
	for (uint32_t i = 0; i < f->nr_ranges; i++) {
		const struct tlbpol_range *r = &f->ranges[i];

		if (!r->nr_pages || r->page_shift < 12 || r->page_shift >= 64 ||
		    (r->va & ((1ULL << r->page_shift) - 1)))
			warning(w, "malformed range va %#llx pages %llu shift %u",
				(unsigned long long)r->va, (unsigned long long)r->nr_pages,
				r->page_shift);
		if (i && r->va < f->ranges[i - 1].va)
			warning(w, "flush ranges not sorted (%#llx after %#llx)",
				(unsigned long long)r->va, (unsigned long long)f->ranges[i - 1].va);
	}
}

/* Apply flush @f to CPU @c's caches.  Under its cache lock. */
static void apply_flush(struct orc_world *w, struct orc_cpu *c, const struct tlbpol_flush *f)
{
	int x = as_of_tag(w, f->as_tag);
	uint64_t group_len = (uint64_t)w->cfg.group_pages << ORC_PAGE_SHIFT;

	if (f->kind == TLBPOL_FLUSH_ALL) {
		drop_as(w, c, DROP_ALL);
		return;
	}
	if (x < 0)
		return;
	if (f->kind == TLBPOL_FLUSH_AS) {
		/* Every non-global entry of the AS, paging-structure caches
		 * included (INVPCID single-context, TLBI ASIDE1). */
		drop_as(w, c, x);
		return;
	}
	if (f->kind != TLBPOL_FLUSH_PAGES || !f->ranges)
		return;
	for (uint32_t i = 0; i < tlb_slots(w); i++) {
		uint64_t e = atomic_load(&c->tlb[i]);
		uint64_t va;

		/*
		 * Global entries go only if the flush says it may name them
		 * (INVLPG does, INVPCID type 0 does not): the model keeps the
		 * least the contract promises.
		 */
		if (!e || (te_as(e) != (uint32_t)x &&
			   !(te_as(e) == ORC_KAS && (f->flags & TLBPOL_FLUSHF_GLOBAL))))
			continue;
		va = page_va(te_as(e), te_page(e));
		for (uint32_t r = 0; r < f->nr_ranges; r++)
			if (in_range(&f->ranges[r], va)) {
				atomic_store(&c->tlb[i], 0);
				break;
			}
	}
	/*
	 * Page invalidations leave the paging-structure caches alone unless the
	 * flush says tables were freed; then only pointers to table pages under
	 * the ranges go.  (Real INVLPG drops more; the model keeps the least the
	 * contract promises, so that a missing TABLES flag shows.)
	 */
	if (!(f->flags & TLBPOL_FLUSHF_TABLES))
		return;
	for (uint32_t i = 0; i < psc_slots(w); i++) {
		uint64_t s = atomic_load(&c->psc[i]);
		uint64_t va;

		if (!s || psc_as(s) != (uint32_t)x)
			continue;
		va = ORC_VA_BASE + (uint64_t)psc_group(s) * group_len;
		for (uint32_t r = 0; r < f->nr_ranges; r++)
			if (meets_range(&f->ranges[r], va, group_len)) {
				atomic_store(&c->psc[i], 0);
				break;
			}
	}
}

/* A flush the CPU does itself (catch-up, CR3 write): under its lock.  @as:
 * an address space, DROP_USER or DROP_ALL (see drop_as()). */
static void self_flush(struct orc_world *w, struct orc_cpu *c, int as)
{
	trace(w, (int)(c - w->cpus), TR_CATCHUP, as < 0 ? 15u : (uint32_t)as, 0, 0, 0);
	cache_lock(c);
	drop_as(w, c, as);
	cache_unlock(c);
}

/* ------------------------------------------------------------------------ */
/* Engine callbacks                                                         */
/* ------------------------------------------------------------------------ */

static void trace_flush(struct orc_world *w, int cpu, enum trace_op op,
			const struct tlbpol_flush *f)
{
	int x = as_of_tag(w, f->as_tag);
	uint64_t pages = 0;
	uint32_t first = 0;

	if (f->kind == TLBPOL_FLUSH_PAGES && f->ranges && f->nr_ranges) {
		for (uint32_t i = 0; i < f->nr_ranges; i++)
			pages += f->ranges[i].nr_pages;
		if (f->ranges[0].va >= ORC_VA_BASE)
			first = (uint32_t)((f->ranges[0].va - ORC_VA_BASE) >> ORC_PAGE_SHIFT);
	}
	trace(w, cpu, op, x < 0 ? 15u : (uint32_t)x, first,
	      (f->kind & 3) | (f->flags & 1) << 2 | f->nr_ranges << 4,
	      pages > 0xffffff ? 0xffffff : (uint32_t)pages);
}

static void cb_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct orc_world *w = ctx;
	struct orc_cpu *c;

	if (cpu >= w->cfg.nr_cpus) {
		violation(w, ORC_V_API, "flush_local for cpu %u of %u", cpu, w->cfg.nr_cpus);
		return;
	}
	/* "Runs on @cpu itself": a flush from elsewhere would race with the
	 * CPU's own walks on real hardware (here the cache lock hides that). */
	if (self_world == w && self_cpu >= 0 && (uint32_t)self_cpu != cpu)
		warning(w, "flush_local for cpu %u ran on cpu %d", cpu, self_cpu);
	c = &w->cpus[cpu];
	check_flush(w, f, as_of_tag(w, f->as_tag));
	trace_flush(w, (int)cpu, TR_FLUSH, f);
	cache_lock(c);
	apply_flush(w, c, f);
	cache_unlock(c);
	count(w, ORC_C_FLUSHES, 1);
}

static void cb_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	struct orc_world *w = ctx;
	uint64_t n = 0;

	trace(w, (int)from, TR_IPI, 0, 0, (uint32_t)(targets->bits[0] & 0xffffff), 0);
	if (from < w->cfg.nr_cpus && self_world == w && self_cpu == (int)from)
		w->cpus[from].kicks++; /* its own thread: see stall_check() */
	for (int t = tlbpol_cpuset_next(targets, -1); t >= 0; t = tlbpol_cpuset_next(targets, t)) {
		if ((uint32_t)t >= w->cfg.nr_cpus) {
			violation(w, ORC_V_API, "send_ipi to cpu %d of %u", t, w->cfg.nr_cpus);
			continue;
		}
		if ((uint32_t)t == from)
			warning(w, "cpu %u sent an interrupt to itself", from);
		atomic_store(&w->cpus[t].ipi, 1);
		n++;
	}
	count(w, ORC_C_IPIS, n);
}

/* A broadcast invalidation reaches every CPU's caches and is complete when
 * it returns; walks in flight finish first (the cache lock), as TLBSYNC and
 * DSB wait for them. */
static void cb_broadcast(void *ctx, uint32_t from, const struct tlbpol_flush *f)
{
	struct orc_world *w = ctx;

	check_flush(w, f, as_of_tag(w, f->as_tag));
	trace_flush(w, (int)from, TR_BCAST, f);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		cache_lock(&w->cpus[i]);
		apply_flush(w, &w->cpus[i], f);
		cache_unlock(&w->cpus[i]);
	}
	count(w, ORC_C_BROADCASTS, 1);
}

enum { HV_PREEMPTED = 1, HV_FLUSH = 2 }; /* KVM_VCPU_PREEMPTED, KVM_VCPU_FLUSH_TLB */

/* Linux kvm_flush_tlb_multi(): a vCPU the hypervisor preempted takes the
 * flush request in its steal-time byte, and is flushed before it runs. */
static int cb_vcpu_defer(void *ctx, uint32_t cpu)
{
	struct orc_world *w = ctx;
	uint8_t st = atomic_load(&w->cpus[cpu].hv);

	if (!(st & HV_PREEMPTED))
		return 0;
	return atomic_compare_exchange_strong(&w->cpus[cpu].hv, &st, (uint8_t)(st | HV_FLUSH));
}

/*
 * @cpu waits inside an engine call.  A target the initiator interrupted
 * serves at its next poll, a polling one at its next turn.  So if, since
 * this CPU's last interrupt sent (or the start of the call), it has waited
 * more turns than the IPI delay (after which it interrupts whoever has not
 * served) and every other CPU has polled ORC_STALL_POLLS times (none is
 * preempted: a preempted one does not poll), and the wait goes on, some
 * target has a request it was never told of.  Report it, then interrupt
 * everyone so that the run ends.
 *
 * One engine call may wait several times with no interrupt sent between
 * (tlbpol__force_lazy() completing lazy requests every target has claimed
 * already), and this check cannot see where one wait ends: the counts then
 * run from an older wait.  A target that polled through the first and then
 * claimed the next request and was descheduled in mid-serve, before it
 * acknowledged, would look stuck (seen under TSan on a loaded machine).  A
 * target in mid-serve does not poll, one that is stuck does: so every other
 * CPU must also have polled ORC_STALL_RECENT times in each of the last
 * ORC_STALL_MARKS checkpoints.
 */
static void stall_check(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int all = 1, recent = 1;

	if (c->wait_call_id != c->call_id || c->wait_kicks != c->kicks) {
		c->wait_call_id = c->call_id;
		c->wait_kicks = c->kicks;
		c->wait_turns = 0;
		c->busy_marks = 0;
		for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
			c->wait_polls[i] = c->mark_polls[i] =
				atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);
		return;
	}
	if (++c->wait_turns % 64)
		return;
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		uint64_t p = atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);

		if (i == cpu)
			continue;
		all &= p - c->wait_polls[i] >= ORC_STALL_POLLS;
		recent &= p - c->mark_polls[i] >= ORC_STALL_RECENT;
		c->mark_polls[i] = p;
	}
	c->busy_marks = recent ? c->busy_marks + 1 : 0;
	if (c->wait_turns < (uint64_t)w->cfg.ipi_delay_spins + 64 || !all ||
	    c->busy_marks < ORC_STALL_MARKS)
		return;
	violation(w, ORC_V_STALL,
		  "cpu %u has waited %llu turns while every other CPU polled %u times, and %u "
		  "times in each of its last %u x 64 turns: a target was neither interrupted "
		  "nor polling",
		  cpu, (unsigned long long)c->wait_turns, ORC_STALL_POLLS, ORC_STALL_RECENT,
		  ORC_STALL_MARKS);
	c->busy_marks = 0;
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		atomic_store(&w->cpus[i].ipi, 1);
		c->wait_polls[i] = atomic_load_explicit(&w->cpus[i].polls, memory_order_relaxed);
	}
}

static void cb_relax(void *ctx, uint32_t cpu)
{
	struct orc_world *w = ctx;

	stall_check(w, cpu);
	if (w->cfg.relax) {
		w->cfg.relax(w, cpu, w->cfg.relax_arg);
		return;
	}
	orc_poll(w, cpu);
	sched_yield();
}

int orc_poll(struct orc_world *w, uint32_t cpu)
{
	int r;

	atomic_fetch_add_explicit(&w->cpus[cpu].polls, 1, memory_order_relaxed);
	if (!atomic_exchange(&w->cpus[cpu].ipi, 0))
		return 0;
	r = tlbpol_handle_ipi(w->eng, cpu);
	trace(w, (int)cpu, TR_TAKE, 0, 0, (uint32_t)r, 0);
	if (r < 0)
		violation(w, ORC_V_API, "tlbpol_handle_ipi(cpu %u) = %d", cpu, r);
	else if (r > 0)
		count(w, ORC_C_IPIS_TAKEN, 1);
	return r;
}

/* ------------------------------------------------------------------------ */
/* Pools                                                                    */
/* ------------------------------------------------------------------------ */

static uint32_t frame_alloc(struct orc_world *w, uint32_t as, uint32_t page)
{
	uint32_t f = 0;

	pthread_mutex_lock(&w->pool_lock);
	if (w->frame_top)
		f = w->frame_pool[--w->frame_top];
	pthread_mutex_unlock(&w->pool_lock);
	if (f)
		atomic_store(&w->frame[f], own_make(F_LIVE, as, page, 0));
	return f;
}

/*
 * Frame @f, holding (x, page)'s contents, reaches @state (F_CLEANED or
 * F_GONE; a state only ever grows).  A compare-and-swap on the whole word:
 * two CPUs may mark the same frame at once (a DONTNEED that returned, an
 * install superseding it), and the frame may be freed and given to another
 * page meanwhile; a plain store would write the old owner back over the
 * new one.  Nothing happens if the frame no longer holds (x, page).
 */
static void frame_set(struct orc_world *w, uint32_t f, uint32_t x, uint32_t page,
		      uint32_t state)
{
	uint64_t o = atomic_load(&w->frame[f]);

	do {
		if (own_state(o) == F_FREE || own_state(o) >= state || own_as(o) != x ||
		    own_idx(o) != page)
			return;
	} while (!atomic_compare_exchange_weak(&w->frame[f], &o, own_make(state, x, page, 0)));
}

/* Return a frame that was allocated but never mapped. */
static void frame_unalloc(struct orc_world *w, uint32_t f)
{
	atomic_store(&w->frame[f], own_make(F_FREE, 0, 0, 0));
	pthread_mutex_lock(&w->pool_lock);
	w->frame_pool[w->frame_top++] = f;
	pthread_mutex_unlock(&w->pool_lock);
}

/*
 * Free frame @f from a deferred free.  Marked free first, then checked: a
 * CPU that publishes RUN after our check began sees the free state in its
 * resume scan, one that published before is checked here.
 */
static void frame_free(struct orc_world *w, uint32_t f)
{
	uint64_t o = atomic_load(&w->frame[f]);

	atomic_store(&w->frame[f], own_make(F_FREE, own_as(o), own_idx(o), 0));
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];
		uint64_t pub = atomic_load(&c->pub);

		for (uint32_t s = 0; s < tlb_slots(w); s++) {
			uint64_t e = atomic_load(&c->tlb[s]);

			if (!e || te_neg(e) || te_frame(e) != f || excused_tlb(pub, te_as(e)))
				continue;
			count(w, ORC_C_CHECKS, 1);
			violation(w, ORC_V_FRAME,
				  "frame %u freed (was as %u page %u) while cpu %u (mode %u) maps it "
				  "at as %u page %u (entry version %u)",
				  f, own_as(o), own_idx(o), i, pub_mode(pub), te_as(e), te_page(e),
				  te_ver(e));
		}
	}
	pthread_mutex_lock(&w->pool_lock);
	w->frame_pool[w->frame_top++] = f;
	pthread_mutex_unlock(&w->pool_lock);
}

static int table_alloc(struct orc_world *w, uint32_t as, uint32_t group, uint64_t *dirw)
{
	uint32_t t = 0;
	uint64_t gen;

	pthread_mutex_lock(&w->pool_lock);
	if (w->table_top)
		t = w->table_pool[--w->table_top];
	pthread_mutex_unlock(&w->pool_lock);
	if (!t)
		return -1;
	/* A new generation per allocation: a cached pointer to an earlier life
	 * of the same table page is told apart. */
	gen = own_gen(atomic_load(&w->table[t])) + 1;
	atomic_store(&w->table[t], own_make(T_LIVE, as, group, gen));
	*dirw = dir_make(t, gen);
	return 0;
}

static void table_free(struct orc_world *w, uint32_t t)
{
	uint64_t o = atomic_load(&w->table[t]);
	uint64_t dirw = dir_make(t, own_gen(o));

	atomic_store(&w->table[t], own_make(T_FREE, own_as(o), own_idx(o), own_gen(o)));
	trace(w, self_cpu, TR_TFREE, own_as(o), own_idx(o), t, 0);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];
		uint64_t pub = atomic_load(&c->pub);

		for (uint32_t s = 0; s < psc_slots(w); s++) {
			uint64_t e = atomic_load(&c->psc[s]);

			if (!e || psc_dir(e) != dirw || excused_psc(pub, psc_as(e)))
				continue;
			count(w, ORC_C_CHECKS, 1);
			violation(w, ORC_V_TABLE,
				  "table page %u (as %u group %u) freed while cpu %u (mode %s, "
				  "loaded as %u) caches a pointer to it",
				  t, own_as(o), own_idx(o), i,
				  pub_mode(pub) == M_RUN ? "running" : pub_mode(pub) == M_LAZY ? "lazy"
											: "other",
				  pub_loaded(pub));
		}
	}
	pthread_mutex_lock(&w->pool_lock);
	w->table_pool[w->table_top++] = t;
	pthread_mutex_unlock(&w->pool_lock);
}

/* ------------------------------------------------------------------------ */
/* The oracle                                                               */
/* ------------------------------------------------------------------------ */

/* Record @ptew as the latest completed change of (x, page), if it is. */
static void cv_raise(struct orc_world *w, uint32_t x, uint32_t page, uint64_t ptew)
{
	_Atomic uint64_t *cv = &w->as[x].cv[page];
	uint64_t old = atomic_load(cv);

	while ((!old || ver_older(pte_ver(old), pte_ver(ptew))) &&
	       !atomic_compare_exchange_weak(cv, &old, ptew))
		;
}

/*
 * The change of (x, page) that produced PTE word @ptew is complete: record
 * it, then no CPU that runs @x may hold a harmful entry filled before it.
 * CPUs excused now scan themselves when they resume (resume_scan()).
 */
/*
 * An invalid entry of a kernel page filled before the completed change that
 * produced @cvw, which made the page present: the kernel faults on a mapped
 * page and has no spurious-fault path to recover by (GENERIC only caches
 * them).  A user page recovers (a spurious fault flushes it locally).
 */
static int neg_harmful(uint32_t x, uint64_t e, uint64_t cvw)
{
	return x == ORC_KAS && te_neg(e) && (pte_perm(cvw) & B_P) &&
	       ver_older(te_ver(e), pte_ver(cvw));
}

static void complete_page(struct orc_world *w, uint32_t x, uint32_t page, uint64_t ptew,
			  const char *what)
{
	uint32_t v = pte_ver(ptew);

	cv_raise(w, x, page, ptew);
	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];
		uint64_t pub = atomic_load(&c->pub);
		uint32_t base;

		if (excused_tlb(pub, x)) {
			count(w, ORC_C_EXCUSED, 1);
			continue;
		}
		base = tlb_set(w, x, page);
		for (uint32_t k = 0; k < w->cfg.tlb_ways; k++) {
			uint64_t e = atomic_load(&c->tlb[base + k]);
			char ep[8], pp[8];

			if (!e || te_as(e) != x || te_page(e) != page || !ver_older(te_ver(e), v))
				continue;
			count(w, ORC_C_CHECKS, 1);
			if (neg_harmful(x, e, ptew)) {
				violation(w, ORC_V_STALE,
					  "%s complete: cpu %u still caches kernel page %u as invalid "
					  "(version %u), installed at version %u",
					  what, i, page, te_ver(e), v);
				continue;
			}
			if (!orc_harmful(w->cfg.arch, te_pb(e), te_frame(e), ptew))
				continue;
			perm_str(te_perm(e), ep);
			perm_str(pte_perm(ptew), pp);
			violation(w, ORC_V_STALE,
				  "%s complete: cpu %u still holds as %u page %u -> %s frame %u "
				  "(version %u) but the change made it %s frame %u (version %u)",
				  what, i, x, page, ep, te_frame(e), te_ver(e), pp, pte_frame(ptew),
				  v);
		}
	}
}

/*
 * CPU @c may use @x now (it published RUN for @x, after its catch-up): it
 * may hold nothing that a completed change made harmful, no translation to a
 * freed frame or to contents that are gone, no pointer to a freed table
 * page.  Kernel entries are checked too, whatever @x: a CPU that executes
 * uses them.  @lazy: the CPU only keeps @x loaded (its TLB entries of @x
 * wait for its catch-up; its walk caches do not, its MMU may walk); @x < 0:
 * nothing loaded.  Also used as a periodic self-audit of a running CPU.
 */
static void scan_self(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, int x, int lazy,
		      enum orc_vkind kind, const char *when)
{
	cache_lock(c);
	for (uint32_t s = 0; s < tlb_slots(w); s++) {
		uint64_t e = atomic_load(&c->tlb[s]);
		uint32_t ex;
		uint64_t cvw, fo;
		char ep[8], pp[8];

		if (!e)
			continue;
		ex = te_as(e);
		if (ex != ORC_KAS && (lazy || x < 0 || ex != (uint32_t)x))
			continue;
		cvw = atomic_load(&w->as[ex].cv[te_page(e)]);
		count(w, ORC_C_CHECKS, 1);
		if (cvw && neg_harmful(ex, e, cvw)) {
			violation(w, kind, "%s: cpu %u caches kernel page %u as invalid (version %u), "
				  "installed at version %u",
				  when, cpu, te_page(e), te_ver(e), pte_ver(cvw));
			continue;
		}
		if (te_neg(e))
			continue;
		if (cvw && ver_older(te_ver(e), pte_ver(cvw)) &&
		    orc_harmful(w->cfg.arch, te_pb(e), te_frame(e), cvw)) {
			perm_str(te_perm(e), ep);
			perm_str(pte_perm(cvw), pp);
			violation(w, kind,
				  "%s: cpu %u holds as %u page %u -> %s frame %u (version %u); a "
				  "completed change made it %s frame %u (version %u)",
				  when, cpu, ex, te_page(e), ep, te_frame(e), te_ver(e), pp,
				  pte_frame(cvw), pte_ver(cvw));
			continue;
		}
		fo = atomic_load(&w->frame[te_frame(e)]);
		if (own_state(fo) == F_FREE || own_state(fo) == F_GONE || own_as(fo) != ex ||
		    own_idx(fo) != te_page(e))
			violation(w, own_state(fo) == F_GONE ? ORC_V_DATA : kind,
				  "%s: cpu %u holds as %u page %u -> frame %u (version %u), which "
				  "is %s (as %u page %u)",
				  when, cpu, ex, te_page(e), te_frame(e), te_ver(e),
				  own_state(fo) == F_FREE   ? "free"
				  : own_state(fo) == F_GONE ? "discarded or superseded"
							    : "another page's",
				  own_as(fo), own_idx(fo));
	}
	for (uint32_t s = 0; x >= 0 && s < psc_slots(w); s++) {
		uint64_t e = atomic_load(&c->psc[s]);
		uint64_t to;

		if (!e || psc_as(e) != (uint32_t)x)
			continue;
		to = atomic_load(&w->table[dir_table(e)]);
		if (own_state(to) == T_FREE || own_gen(to) != dir_gen(e))
			violation(w, kind,
				  "%s: cpu %u caches as %u group %u -> table page %u, which was "
				  "freed",
				  when, cpu, x, psc_group(e), dir_table(e));
	}
	cache_unlock(c);
}

static void publish(struct orc_cpu *c, uint32_t mode, int loaded)
{
	atomic_store(&c->pub, pub_make(mode, loaded));
}

/*
 * The CPU's state for checkers, after the engine call and the catch-up:
 * RUN only if the engine state is RUNNING and an AS runs.  A CPU that
 * executes again after it was excused (preempted, or between states) scans
 * what it may use from now on: a running one its address space and the
 * kernel's entries, a lazy one the kernel's entries and the walk caches of
 * what it keeps loaded.
 */
static void publish_settled(struct orc_world *w, struct orc_cpu *c, uint32_t cpu)
{
	if (c->estate == TLBPOL_CPU_OFFLINE) {
		publish(c, M_OFFLINE, -1);
	} else if (c->estate == TLBPOL_CPU_PREEMPTED || atomic_load(&c->hv)) {
		publish(c, M_PREEMPT, c->loaded);
	} else if (c->estate == TLBPOL_CPU_RUNNING && c->cur >= 0) {
		publish(c, M_RUN, c->cur);
		scan_self(w, c, cpu, c->cur, 0, ORC_V_RESUME, "after catch-up");
	} else {
		uint32_t was = pub_mode(atomic_load(&c->pub));

		publish(c, M_LAZY, c->loaded);
		if (was != M_LAZY)
			scan_self(w, c, cpu, c->loaded, 1, ORC_V_RESUME, "executing again");
	}
}

/* ------------------------------------------------------------------------ */
/* Deferred changes and frees                                               */
/* ------------------------------------------------------------------------ */

static void rec_add(struct orc_cpu *c, const struct orc_rec *r)
{
	if (c->nrec == c->caprec) {
		size_t cap = c->caprec ? c->caprec * 2 : 256;
		struct orc_rec *n = realloc(c->rec, cap * sizeof(*n));

		if (!n)
			abort();
		c->rec = n;
		c->caprec = cap;
	}
	c->rec[c->nrec++] = *r;
}

/* Changes of @c with seq <= @upto and deadline <= @by are complete. */
static void complete_recs(struct orc_world *w, struct orc_cpu *c, uint64_t upto, uint32_t by,
			  const char *what)
{
	size_t keep = 0;

	for (size_t i = 0; i < c->nrec; i++) {
		struct orc_rec r = c->rec[i];

		if (r.seq <= upto && r.deadline <= by)
			complete_page(w, r.as, r.page, r.pte, what);
		else
			c->rec[keep++] = r;
	}
	c->nrec = keep;
}

static void free_cb(void *arg)
{
	struct orc_free *fr = arg;
	struct orc_world *w = fr->w;

	if (atomic_exchange(&fr->ran, 1)) {
		violation(w, ORC_V_FREE, "deferred free of cpu %u ran twice", fr->cpu);
		return;
	}
	count(w, ORC_C_FREES_RUN, 1);
	trace(w, self_cpu, TR_DFRUN, fr->as, 0, fr->nr_frames | fr->nr_tables << 8,
	      fr->nr_tables ? fr->tables[0] : 0);
	if (self_world != w || self_cpu != (int)fr->cpu) {
		violation(w, ORC_V_FREE, "deferred free of cpu %u ran on cpu %d", fr->cpu, self_cpu);
	} else {
		/* Everything this CPU had pending when it registered the free is
		 * complete now, whatever its deadline. */
		complete_recs(w, &w->cpus[fr->cpu], fr->upto, TLBPOL_BY_LAZY, "deferred free");
	}
	for (uint32_t i = 0; i < fr->nr_tables; i++)
		table_free(w, fr->tables[i]);
	for (uint32_t i = 0; i < fr->nr_frames; i++)
		frame_free(w, fr->frames[i]);
	for (uint32_t i = 0; i < fr->qn; i++)
		atomic_fetch_sub(&w->as[fr->as].quar[fr->qpage + i], 1);
}

static struct orc_free *free_new(struct orc_world *w, struct orc_cpu *c, uint32_t cpu,
				 uint32_t as)
{
	struct orc_free *fr;

	if (!c->chunks || c->chunk_used == CHUNK) {
		struct free_chunk *ch = calloc(1, sizeof(*ch));

		if (!ch)
			abort();
		ch->next = c->chunks;
		c->chunks = ch;
		c->chunk_used = 0;
	}
	fr = &c->chunks->f[c->chunk_used++];
	fr->w = w;
	fr->cpu = cpu;
	fr->as = as;
	return fr;
}

static void free_register(struct orc_world *w, struct orc_cpu *c, uint32_t cpu,
			  struct orc_free *fr)
{
	int r;

	fr->upto = c->seq;
	count(w, ORC_C_FREES_REG, 1);
	trace(w, (int)cpu, TR_DFREG, fr->as, 0, fr->nr_frames | fr->nr_tables << 8,
	      fr->nr_tables ? fr->tables[0] : 0);
	c->call_id++;
	r = tlbpol_defer_free(w->eng, cpu, free_cb, fr);
	if (r)
		violation(w, ORC_V_API, "tlbpol_defer_free(cpu %u) = %d", cpu, r);
}

/* ------------------------------------------------------------------------ */
/* Submitting changes                                                       */
/* ------------------------------------------------------------------------ */

struct change {
	uint32_t page;
	uint64_t old, new;
};

/* Page-table locks: trylock only, so no CPU blocks while another may be
 * waiting for its acknowledgement.  Groups in ascending order. */
static int lock_groups(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t g0, uint32_t g1)
{
	for (uint32_t g = g0; g <= g1; g++) {
		uint32_t expect = 0;

		if (!atomic_compare_exchange_strong(&w->as[x].lock[g], &expect, cpu + 1)) {
			while (g-- > g0)
				atomic_store(&w->as[x].lock[g], 0);
			count(w, ORC_C_BUSY, 1);
			return 0;
		}
	}
	return 1;
}

static void unlock_groups(struct orc_world *w, uint32_t x, uint32_t g0, uint32_t g1)
{
	for (uint32_t g = g0; g <= g1; g++)
		atomic_store(&w->as[x].lock[g], 0);
}

/*
 * Change PTE (x, page) under its lock: clear @clr and set @set in its
 * permissions (frame @frame, or kept when 0; a PTE without P is all zero).
 * The exchange is a CAS loop because hardware sets A/D concurrently; the old
 * value is what the CAS replaced, as the header requires.  Returns 1 if it
 * changed, 0 if not (or the page's version is exhausted).
 */
static int pte_change(struct orc_world *w, uint32_t x, uint32_t page, uint32_t clr, uint32_t set,
		      uint32_t frame, int only_present, struct change *ch)
{
	_Atomic uint64_t *pte = &w->as[x].pte[page];
	uint64_t old = atomic_load(pte), new;

	for (;;) {
		uint32_t np, nf;

		if (only_present && !(pte_perm(old) & B_P))
			return 0;
		np = (pte_perm(old) & ~clr) | set;
		nf = frame ? frame : pte_frame(old);
		if (!(np & B_P))
			np = nf = 0;
		if (np == pte_perm(old) && nf == pte_frame(old))
			return 0;
		if (pte_ver(old) >= VER_MAX)
			return 0;
		/* The attribute stays with a present PTE. */
		new = pte_make(np | (pte_pb(old) & B_ATTR), nf, pte_ver(old) + 1);
		if (atomic_compare_exchange_weak(pte, &old, new))
			break;
	}
	/* A removal: the frame whose contents a later install supersedes. */
	if ((pte_perm(old) & B_P) && !(pte_perm(new) & B_P))
		atomic_store(&w->as[x].prevf[page], pte_frame(old));
	ch->page = page;
	ch->old = old;
	ch->new = new;
	return 1;
}

static const char *const kind_names[TLBPOL_EV_MAX] = {
	"fault", "protect", "unmap", "reclaim", "migrate", "clear-young", "clear-dirty", "remap",
};

/*
 * Submit one event over pages [p0, p0 + n) of @x, whose changed pages are
 * @ch.  old_pte/new_pte are the unions over the changed pages.  That is exact
 * for changes that only remove bits (unmap, clear A/D, write-protect: a bit
 * some page lost is in the old union and not in the new one) and reads an
 * unmap as dirty if any page was; changes that may add bits go through
 * submit_runs().
 * @new_pte: the PTE to come, for a break-before-make frame change, else 0.
 * BY_NOW decisions are complete when this returns; later ones are recorded.
 * The pages are @x's (ORC_KAS: the kernel region's); the event goes
 * through user address space @via.  @mode: SUB_NOW completes the change
 * when the call returns whatever the engine decided (a DONTNEED that
 * returned promised zeros), SUB_NORECORD records nothing (the submit of a
 * GENERIC install before its store: only the one after completes it).
 */
enum sub_mode { SUB_NORMAL, SUB_NOW, SUB_NORECORD };

static void submit_via(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via, uint32_t kind,
		       uint32_t evflags, uint32_t p0, uint32_t n, const struct change *ch,
		       uint32_t nch, uint32_t new_pte, enum sub_mode mode)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct tlbpol_event ev;
	struct tlbpol_decision d;
	uint32_t oldb = 0, newb = 0;
	char what[64];
	int r;

	for (uint32_t i = 0; i < nch; i++) {
		oldb |= pte_perm(ch[i].old);
		newb |= pte_perm(ch[i].new);
	}
	if (new_pte)
		newb = new_pte;
	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.kind = kind;
	ev.flags = evflags;
	ev.page_shift = ORC_PAGE_SHIFT;
	ev.va = page_va(x, p0);
	ev.nr_pages = n;
	ev.old_pte = oldb;
	ev.new_pte = newb;
	c->call_id++;
	r = tlbpol_submit(w->eng, w->as[via].eas, cpu, &ev, &d);
	count(w, ORC_C_SUBMITS, 1);
	if (r) {
		violation(w, ORC_V_API, "tlbpol_submit(%s, old %#x new %#x flags %#x) = %d",
			  kind_names[kind], oldb, newb, evflags, r);
		return;
	}
	if (d.action > TLBPOL_ACT_SHOOTDOWN || d.deadline > TLBPOL_BY_LAZY ||
	    (d.action != TLBPOL_ACT_SHOOTDOWN && d.deadline != TLBPOL_BY_NOW)) {
		violation(w, ORC_V_API, "decision action %u deadline %u for %s", d.action,
			  d.deadline, kind_names[kind]);
		d.deadline = TLBPOL_BY_NOW; /* check it now: the strictest reading */
	}
	trace(w, (int)cpu, TR_SUBMIT, x, p0,
	      kind | d.action << 3 | d.deadline << 5 | d.reason << 7 | evflags << 12,
	      (n > 255 ? 255 : n) | oldb << 8 | newb << 16);
	snprintf(what, sizeof(what), "%s[%s,%s,%s]", kind_names[kind], tlbpol_action_str(d.action),
		 tlbpol_deadline_str(d.deadline), tlbpol_reason_str(d.reason));
	/* Only pages this event changed complete a version (a spurious or
	 * retried fault reports the PTE as it is, changed by an earlier event
	 * whose own completion may still be pending). */
	if (mode == SUB_NORECORD)
		return;
	if (d.deadline == TLBPOL_BY_NOW || mode == SUB_NOW) {
		for (uint32_t i = 0; i < nch; i++)
			if (ch[i].new != ch[i].old)
				complete_page(w, x, ch[i].page, ch[i].new, what);
		return;
	}
	count(w, ORC_C_DEFERRED, 1);
	c->seq++;
	for (uint32_t i = 0; i < nch; i++) {
		struct orc_rec rec = { c->seq, ch[i].new, (uint16_t)ch[i].page, (uint8_t)x,
				       (uint8_t)d.deadline };

		if (ch[i].new != ch[i].old)
			rec_add(c, &rec);
	}
}

static void submit(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t kind, uint32_t evflags,
		   uint32_t p0, uint32_t n, const struct change *ch, uint32_t nch, uint32_t new_pte)
{
	submit_via(w, cpu, x, x, kind, evflags, p0, n, ch, nch, new_pte, SUB_NORMAL);
}

/*
 * Submit @ch as one event per run of contiguous pages that changed alike.
 * For changes that may gain permissions: a union of old and new PTEs would
 * hide a bit one page gained while another already had it (a U/S flip is a
 * downgrade on x86).  Complete when the call returns, whatever the engine
 * decided: a protection change is in force when mprotect() (or
 * set_memory_ro(), or a memory-type change) returns, so a harmful entry
 * left after that is a violation, not a deferral.
 */
static void submit_runs(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via,
			uint32_t kind, uint32_t evflags, const struct change *ch, uint32_t nch)
{
	for (uint32_t i = 0, j; i < nch; i = j + 1) {
		for (j = i; j + 1 < nch && ch[j + 1].page == ch[j].page + 1 &&
			    pte_perm(ch[j + 1].old) == pte_perm(ch[i].old) &&
			    pte_perm(ch[j + 1].new) == pte_perm(ch[i].new);
		     j++)
			;
		submit_via(w, cpu, x, via, kind, evflags, ch[i].page, j - i + 1, &ch[i], j - i + 1,
			   0, SUB_NOW);
	}
}

/* Give group @g of @x a table page if it has none.  Under the group lock. */
static int ensure_table(struct orc_world *w, uint32_t x, uint32_t g)
{
	uint64_t d;

	if (atomic_load(&w->as[x].dir[g]))
		return 0;
	if (table_alloc(w, x, g, &d))
		return -1;
	atomic_store(&w->as[x].dir[g], d);
	return 0;
}

/* Install a fresh frame at (x, page) with @perm: an install event (old PTE not
 * present).  Under the group lock. */
/*
 * Installs are submitted before the new PTEs are written: the engine may
 * have flushes pending over these addresses (an unmap, reclaim or migration
 * batched for later), and only once those are complete may a new frame
 * appear there, or a CPU could keep using the old frame's translation
 * beside the new one (Linux calls flush_tlb_batched_pending() under the PTE
 * lock before it maps anything).  No CPU can cache a not-present PTE, and
 * nobody else writes it (we hold its lock; hardware does not touch it), so
 * nothing is lost by writing it after the submit.
 */
static int install_prepare(struct orc_world *w, uint32_t x, uint32_t page, uint32_t perm,
			   uint32_t frame, struct change *ch)
{
	uint64_t old = atomic_load(&w->as[x].pte[page]);

	if ((pte_perm(old) & B_P) || pte_ver(old) >= VER_MAX)
		return 0;
	ch->page = page;
	ch->old = old;
	ch->new = pte_make(perm | B_P, frame, pte_ver(old) + 1);
	return 1;
}

/*
 * A new PTE for (x, page) on frame @newf is about to be stored: the frame
 * its last removal took, if it still holds the page's old contents (not yet
 * freed), is superseded from now on -- others will read and write @newf,
 * and an access through a translation to the old frame is stale data.
 */
static void supersede(struct orc_world *w, uint32_t x, uint32_t page, uint32_t newf)
{
	uint32_t f = atomic_exchange(&w->as[x].prevf[page], 0u);

	if (f && f != newf)
		frame_set(w, f, x, page, F_GONE);
}

static void install_commit(struct orc_world *w, uint32_t x, const struct change *ch, uint32_t nch)
{
	for (uint32_t i = 0; i < nch; i++) {
		supersede(w, x, ch[i].page, pte_frame(ch[i].new));
		atomic_store(&w->as[x].pte[ch[i].page], ch[i].new);
	}
}

/*
 * The time a CPU spends with interrupts off in a transition: between the
 * engine call and the CR3 write or catch-up flush that follows it, or
 * before the call with an interrupt already latched.  On hardware it is a
 * few hundred cycles; here it is stretched now and then (a few yields, no
 * polls), so that what other CPUs may do in it -- skip this one by a
 * generation it has not flushed to, free tables it may still walk --
 * happens often enough to be seen.  What is allowed in the window does not
 * depend on its length.
 */
static void window(struct orc_world *w, struct orc_cpu *c)
{
	(void)w;
	if (rng_next(&c->rng) % 4)
		return;
	for (uint64_t k = 1 + rng_next(&c->rng) % 3; k--;)
		sched_yield();
}

/*
 * Submit and store installs @ch over [p0, p0 + n) of @x, through @via, as
 * the header orders it: submit (which completes pending flushes over the
 * addresses), then store; on GENERIC submit once more after the store (a
 * CPU may have cached the invalid PTE up to it: the flush must follow it),
 * and only that submit completes the install.  cfg.store_first: the order
 * the header forbids, store then submit.
 */
static void install_run(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t via,
			uint32_t evflags, uint32_t p0, uint32_t n, const struct change *ch,
			uint32_t nch)
{
	int generic = w->cfg.arch == TLBPOL_ARCH_GENERIC;

	if (w->cfg.store_first) {
		install_commit(w, x, ch, nch);
		window(w, &w->cpus[cpu]);
		submit_via(w, cpu, x, via, TLBPOL_EV_FAULT, evflags, p0, n, ch, nch, 0, SUB_NORMAL);
		return;
	}
	submit_via(w, cpu, x, via, TLBPOL_EV_FAULT, evflags, p0, n, ch, nch, 0,
		   generic ? SUB_NORECORD : SUB_NORMAL);
	install_commit(w, x, ch, nch);
	if (generic)
		submit_via(w, cpu, x, via, TLBPOL_EV_FAULT, evflags, p0, n, ch, nch, 0, SUB_NORMAL);
}

static enum orc_result install(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t page,
			       uint32_t perm, uint32_t evflags)
{
	struct change ch;
	uint32_t f;

	if (ensure_table(w, x, page / w->cfg.group_pages))
		return ORC_NOMEM;
	f = frame_alloc(w, x, page);
	if (!f)
		return ORC_NOMEM;
	if (!install_prepare(w, x, page, perm, f, &ch)) {
		frame_unalloc(w, f);
		return ORC_SKIP;
	}
	install_run(w, cpu, x, x, evflags, page, 1, &ch, 1);
	return ORC_OK;
}

/* Is the page written back when it is unmapped?  What may have been written
 * through a TLB entry: D on x86 and ARM64 (hardware sets it before the first
 * write through an entry without it, and cannot once the PTE is not
 * present), W too on GENERIC (no hardware D). */
static int may_be_dirty(const struct orc_world *w, uint32_t perm)
{
	if (perm & B_D)
		return 1;
	return w->cfg.arch == TLBPOL_ARCH_GENERIC && (perm & B_W);
}

/* ------------------------------------------------------------------------ */
/* Accesses                                                                 */
/* ------------------------------------------------------------------------ */

static int allows(uint32_t perm, enum orc_access a)
{
	if ((perm & (B_P | B_U)) != (B_P | B_U))
		return 0;
	if (a == ORC_WRITE)
		return (perm & B_W) != 0;
	if (a == ORC_EXEC)
		return (perm & B_X) != 0;
	return 1;
}

/* A running CPU uses entry @e (under its cache lock, so no flush can remove
 * it meanwhile): if a completed change made it harmful, or its frame was
 * freed or given to another page, the engine failed to flush this CPU. */
static int use_check(struct orc_world *w, uint32_t cpu, uint64_t e)
{
	uint32_t x = te_as(e), page = te_page(e);
	uint64_t cvw = atomic_load(&w->as[x].cv[page]);
	uint64_t fo = atomic_load(&w->frame[te_frame(e)]);
	char ep[8], pp[8];

	if (cvw && ver_older(te_ver(e), pte_ver(cvw)) &&
	    orc_harmful(w->cfg.arch, te_pb(e), te_frame(e), cvw)) {
		perm_str(te_perm(e), ep);
		perm_str(pte_perm(cvw), pp);
		violation(w, ORC_V_USE,
			  "cpu %u used as %u page %u -> %s frame %u (version %u) after a "
			  "completed change made it %s frame %u (version %u)",
			  cpu, x, page, ep, te_frame(e), te_ver(e), pp, pte_frame(cvw),
			  pte_ver(cvw));
		return 1;
	}
	if (own_state(fo) == F_FREE || own_as(fo) != x || own_idx(fo) != page) {
		violation(w, ORC_V_USE,
			  "cpu %u accessed frame %u through as %u page %u (version %u), but the "
			  "frame is %s (as %u page %u)",
			  cpu, te_frame(e), x, page, te_ver(e),
			  own_state(fo) == F_FREE ? "free" : "another page's", own_as(fo),
			  own_idx(fo));
		return 1;
	}
	/*
	 * The page's contents left this frame: discarded (a DONTNEED that
	 * returned promised zeros) or superseded (a new PTE for the page was
	 * stored: others use the new frame).  What this access reads is stale,
	 * what it writes is lost, whatever the engine reported.
	 */
	if (own_state(fo) == F_GONE) {
		uint64_t now = atomic_load(&w->as[x].pte[page]);

		violation(w, ORC_V_DATA,
			  "cpu %u accessed as %u page %u through frame %u (version %u), whose "
			  "contents were discarded or moved (PTE now %#x frame %u version %u)",
			  cpu, x, page, te_frame(e), te_ver(e), pte_perm(now), pte_frame(now),
			  pte_ver(now));
		return 1;
	}
	return 0;
}

/* A write went through entry @e: it must not reach a page already written
 * back or copied (its data would be lost). */
static void write_check(struct orc_world *w, uint32_t cpu, uint64_t e)
{
	uint32_t x = te_as(e), page = te_page(e);
	uint64_t fo = atomic_load(&w->frame[te_frame(e)]);

	if (own_state(fo) == F_CLEANED && own_as(fo) == x && own_idx(fo) == page) {
		uint64_t cvw = atomic_load(&w->as[x].cv[page]);
		uint64_t now = atomic_load(&w->as[x].pte[page]);
		char ep[8], pp[8];

		perm_str(te_perm(e), ep);
		perm_str(pte_perm(cvw), pp);
		violation(w, ORC_V_LOST_WRITE,
			  "cpu %u wrote frame %u through as %u page %u -> %s (version %u) after "
			  "the page was written back or copied (completed: %s frame %u version %u; "
			  "PTE now %#x frame %u version %u)",
			  cpu, te_frame(e), x, page, ep, te_ver(e), pp, pte_frame(cvw), pte_ver(cvw),
			  pte_perm(now), pte_frame(now), pte_ver(now));
	}
}

/*
 * A walk found (x, page) not present: GENERIC may cache that (RISC-V
 * without Svvptc), here one time in two.  Returns -2 with the invalid entry
 * in *@out for the caller to fill, else -1: a fault either way.
 */
static int negative(struct orc_world *w, struct orc_cpu *c, uint32_t x, uint32_t page,
		    uint64_t ptew, uint64_t *out)
{
	if (w->cfg.arch != TLBPOL_ARCH_GENERIC || rng_next(&c->rng) % 2)
		return -1;
	*out = te_make(x, page, 0, 0, pte_ver(ptew));
	count(w, ORC_C_NEGATIVE, 1);
	return -2;
}

/*
 * A page walk of (x, page) by CPU @c, under its cache lock: through the
 * PSC if it has the group, else through the directory (filling the PSC).
 * Hardware sets A (x86, ARM64; GENERIC faults instead) and, for a write,
 * D.  @spec: a speculative walk, which fills only what needs no PTE update.
 * Returns 0 and the entry in *@out, -1 for a fault, or -2 for a fault that
 * leaves an invalid entry (*@out) behind (negative()).
 */
static int walk(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, uint32_t x, uint32_t page,
		enum orc_access a, int spec, uint64_t *out)
{
	uint32_t g = page / w->cfg.group_pages;
	int j = psc_find(w, c, x, g);
	uint64_t dirw;

	count(w, spec ? ORC_C_SPEC_WALKS : ORC_C_WALKS, 1);
	if (j >= 0) {
		uint64_t s = atomic_load(&c->psc[j]);
		uint64_t to = atomic_load(&w->table[dir_table(s)]);

		dirw = psc_dir(s);
		if (own_state(to) == T_FREE || own_gen(to) != dir_gen(s)) {
			/* Reading a freed page as a page table: garbage. */
			violation(w, ORC_V_WALK,
				  "cpu %u (%s) walked as %u page %u through table page %u, which "
				  "was freed",
				  cpu, spec ? "speculative" : "access", x, page, dir_table(s));
			atomic_store(&c->psc[j], 0);
			return -1;
		}
		if (own_state(to) == T_DETACHED)
			return -1; /* a table unhooked for freeing: all cleared */
	} else {
		dirw = atomic_load(&w->as[x].dir[g]);
		if (!dirw)
			return -1;
		psc_fill(w, c, psc_make(x, g, dirw));
		trace(w, (int)cpu, TR_PSC, x, g, dir_table(dirw), 0);
	}
	for (int tries = 0; tries < 16; tries++) {
		_Atomic uint64_t *pte = &w->as[x].pte[page];
		uint64_t old = atomic_load(pte), new = old;
		uint32_t perm = pte_perm(old);

		/* The PTE belongs to the table we walk only while the directory
		 * still points to it. */
		if (atomic_load(&w->as[x].dir[g]) != dirw)
			return -1;
		if (!(perm & B_P))
			return negative(w, c, x, page, old, out);
		if (!(perm & B_A)) {
			if (spec || w->cfg.arch == TLBPOL_ARCH_GENERIC)
				return -1;
			new |= B_A;
		}
		if (!spec && !allows(perm, a))
			return -1;
		if (!spec && a == ORC_WRITE && w->cfg.arch != TLBPOL_ARCH_GENERIC)
			new |= B_D;
		if (new != old && !atomic_compare_exchange_strong(pte, &old, new))
			continue;
		*out = te_make(x, page, pte_pb(new), pte_frame(new), pte_ver(new));
		return 0;
	}
	return -1;
}

/* Hardware setting D for a write through an entry without it: a locked
 * update of the PTE in memory, which fails once the PTE is not present. */
static int hw_set_dirty(struct orc_world *w, uint32_t x, uint32_t page, uint64_t *now)
{
	_Atomic uint64_t *pte = &w->as[x].pte[page];
	uint64_t old = atomic_load(pte);

	for (;;) {
		if (!(pte_perm(old) & B_P))
			return 0;
		*now = old | B_A | B_D;
		if ((pte_perm(old) & (B_A | B_D)) == (B_A | B_D))
			return 1;
		if (atomic_compare_exchange_weak(pte, &old, *now))
			return 1;
	}
}

/* One try of an access, under the cache lock.  0: done, -1: fault. */
static int try_access(struct orc_world *w, struct orc_cpu *c, uint32_t cpu, uint32_t x,
		      uint32_t page, enum orc_access a)
{
	int slot = tlb_find(w, c, x, page);
	uint64_t e;

	if (slot >= 0) {
		uint64_t cur;

		e = atomic_load(&c->tlb[slot]);
		count(w, ORC_C_HITS, 1);
		if (!allows(te_perm(e), a))
			return -1;
		/* Checked as used, before the write below can refresh it. */
		if (use_check(w, cpu, e))
			return 0;
		if (a == ORC_WRITE && w->cfg.arch != TLBPOL_ARCH_GENERIC && !(te_perm(e) & B_D)) {
			if (!hw_set_dirty(w, x, page, &cur))
				return -1;
			/*
			 * The D update walks the PTE in memory.  If that PTE
			 * still maps the entry's frame writably, the entry is
			 * reloaded from it (its D is then the PTE's, set just
			 * now, not one a later CLEAR_DIRTY should have
			 * flushed).  Otherwise the entry is stale: the write
			 * goes through it (the hardware may do that while the
			 * change is in flight), but it is left as it was, old
			 * version and no D, which would otherwise date D back
			 * to that version and make an A/D-only change in
			 * between look like a missed CLEAR_DIRTY.
			 */
			if ((pte_perm(cur) & B_W) && pte_frame(cur) == te_frame(e)) {
				e = te_make(x, page, pte_pb(cur), pte_frame(cur), pte_ver(cur));
				atomic_store(&c->tlb[slot], e);
			}
		}
		if (a == ORC_WRITE)
			write_check(w, cpu, e);
		return 0;
	}
	switch (walk(w, c, cpu, x, page, a, 0, &e)) {
	case 0:
		break;
	case -2:
		tlb_fill(w, c, e);
		return -1;
	default:
		return -1;
	}
	tlb_fill(w, c, e);
	if (!use_check(w, cpu, e) && a == ORC_WRITE)
		write_check(w, cpu, e);
	return 0;
}

/* Resolve a fault of @cpu on (x, page) as a kernel would, under the
 * page-table lock.  Returns ORC_OK when the access may be retried. */
static enum orc_result handle_fault(struct orc_world *w, uint32_t cpu, uint32_t x, uint32_t page,
				    enum orc_access a)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct orc_as *as = &w->as[x];
	uint32_t g = page / w->cfg.group_pages;
	uint32_t need = B_P | B_U | (a == ORC_WRITE ? B_W : 0) | (a == ORC_EXEC ? B_X : 0);
	uint32_t evflags = (a == ORC_WRITE ? TLBPOL_EVF_WRITE : 0) |
			   (a == ORC_EXEC ? TLBPOL_EVF_EXEC : 0);
	int tried = 0;
	enum orc_result res = ORC_OK;
	uint64_t old;
	uint32_t vma, perm;
	struct change ch;

	count(w, ORC_C_FAULTS, 1);
	if (!lock_groups(w, cpu, x, g, g)) {
		/* The fault would sleep on the lock and come back retried
		 * (VM_FAULT_RETRY, then FAULT_FLAG_TRIED). */
		orc_poll(w, cpu);
		sched_yield();
		tried = 1;
		if (!lock_groups(w, cpu, x, g, g))
			return ORC_BUSY;
	}
	old = atomic_load(&as->pte[page]);
	perm = pte_perm(old);
	vma = atomic_load(&as->vma[page]);
	if (!(perm & B_P)) {
		if (atomic_load(&as->quar[page]) || (need & ~(vma | B_P)))
			res = ORC_SEGV;
		else
			res = install(w, cpu, x, page,
				      B_A | (vma & (B_W | B_X | B_U)) | (a == ORC_WRITE ? B_D : 0),
				      evflags);
	} else if (allows(perm, a)) {
		/*
		 * The PTE already allows it: a stale stricter entry, a cleared
		 * table page still cached, or (GENERIC) the software accessed
		 * bit.  A retried fault updates nothing.
		 */
		uint32_t set = B_A | (a == ORC_WRITE ? B_D : 0);

		if (tried || rng_next(&c->rng) % 16 == 0) {
			evflags |= TLBPOL_EVF_TRIED;
			set = 0;
		}
		ch.page = page;
		ch.old = ch.new = old;
		if (set && !pte_change(w, x, page, 0, set, 0, 1, &ch)) {
			ch.old = ch.new = atomic_load(&as->pte[page]);
		}
		if (pte_perm(ch.new) & B_P)
			submit(w, cpu, x, TLBPOL_EV_FAULT, evflags, page, 1, &ch, 1, 0);
	} else if (!(need & ~(vma | B_P))) {
		/* The VMA allows it: write-protect or COW fault, exec or user
		 * bit granted back. */
		if (a == ORC_WRITE && !(perm & B_W) && rng_next(&c->rng) % 2) {
			unlock_groups(w, x, g, g);
			return orc_change_frame(w, cpu, x, page, 1) == ORC_OK ? ORC_OK : ORC_BUSY;
		}
		if (pte_change(w, x, page, 0, (need & ~B_P) | B_A | (a == ORC_WRITE ? B_D : 0), 0, 1,
			       &ch))
			submit(w, cpu, x, TLBPOL_EV_FAULT, evflags | (tried ? TLBPOL_EVF_TRIED : 0),
			       page, 1, &ch, 1, 0);
	} else {
		res = ORC_SEGV;
	}
	unlock_groups(w, x, g, g);
	return res;
}

enum orc_result orc_access(struct orc_world *w, uint32_t cpu, uint32_t page, enum orc_access a)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t x;
	enum orc_result r;

	if (c->cur < 0 || c->estate != TLBPOL_CPU_RUNNING || page >= w->cfg.pages)
		return ORC_SKIP;
	x = (uint32_t)c->cur;
	count(w, ORC_C_ACCESSES, 1);
	for (int attempt = 0; attempt < 2; attempt++) {
		int fault;

		cache_lock(c);
		fault = try_access(w, c, cpu, x, page, a);
		if (fault && w->cfg.arch == TLBPOL_ARCH_X86_64) {
			/* A page fault invalidates the faulting address's TLB and
			 * paging-structure-cache entries (SDM 4.10.4.1). */
			int s = tlb_find(w, c, x, page);
			int p = psc_find(w, c, x, page / w->cfg.group_pages);

			if (s >= 0)
				atomic_store(&c->tlb[s], 0);
			if (p >= 0)
				atomic_store(&c->psc[p], 0);
		}
		cache_unlock(c);
		if (!fault)
			return ORC_OK;
		if (attempt)
			return ORC_FAULT;
		r = handle_fault(w, cpu, x, page, a);
		if (r != ORC_OK) {
			count(w, ORC_C_SEGV, 1);
			return r;
		}
	}
	return ORC_FAULT;
}

void orc_spec_walk(struct orc_world *w, uint32_t cpu, uint32_t page)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint64_t e;

	/* A preempted vCPU or an offline CPU executes nothing. */
	if (c->loaded < 0 || c->estate == TLBPOL_CPU_PREEMPTED || c->estate == TLBPOL_CPU_OFFLINE ||
	    page >= w->cfg.pages)
		return;
	cache_lock(c);
	if (walk(w, c, cpu, (uint32_t)c->loaded, page, ORC_READ, 1, &e) != -1)
		tlb_fill(w, c, e);
	cache_unlock(c);
}

/* May @c execute now?  A preempted vCPU (told or not) and an offline CPU
 * do not. */
static int executing(struct orc_cpu *c)
{
	return c->estate != TLBPOL_CPU_PREEMPTED && c->estate != TLBPOL_CPU_OFFLINE &&
	       !atomic_load(&c->hv);
}

/* A walk of kernel page @kp: the kernel region has no tables to free, and
 * its PTEs have A and D preset (nothing for the walk to update). */
static int kwalk(struct orc_world *w, struct orc_cpu *c, uint32_t kp, uint64_t *out)
{
	uint64_t ptew = atomic_load(&w->as[ORC_KAS].pte[kp]);

	if (!(pte_perm(ptew) & B_P))
		return negative(w, c, ORC_KAS, kp, ptew, out);
	*out = te_make(ORC_KAS, kp, pte_pb(ptew), pte_frame(ptew), pte_ver(ptew));
	return 0;
}

void orc_kspec_walk(struct orc_world *w, uint32_t cpu, uint32_t kp)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint64_t e;

	if (kp >= w->as[ORC_KAS].pages || !executing(c))
		return;
	cache_lock(c);
	count(w, ORC_C_SPEC_WALKS, 1);
	if (kwalk(w, c, kp, &e) != -1)
		tlb_fill(w, c, e);
	cache_unlock(c);
}

/*
 * A kernel access: the kernel touches only what it has mapped, so only a
 * page whose latest completed change left it present (and writable, for a
 * write).  Through the TLB, or a walk; a fault means the page is being
 * unmapped right now (nothing to check), unless it comes from an invalid
 * entry older than the page's completed install: the kernel has no
 * spurious-fault path, so that is a violation.
 */
enum orc_result orc_kaccess(struct orc_world *w, uint32_t cpu, uint32_t kp, enum orc_access a)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct orc_as *k = &w->as[ORC_KAS];
	uint64_t cvw, e;
	int slot;
	enum orc_result res = ORC_OK;

	if (kp >= k->pages || !executing(c))
		return ORC_SKIP;
	cvw = atomic_load(&k->cv[kp]);
	if (!(pte_perm(cvw) & B_P) || (a == ORC_WRITE && !(pte_perm(cvw) & B_W)))
		return ORC_SKIP;
	count(w, ORC_C_KACCESSES, 1);
	cache_lock(c);
	slot = tlb_find(w, c, ORC_KAS, kp);
	if (slot >= 0) {
		e = atomic_load(&c->tlb[slot]);
		count(w, ORC_C_HITS, 1);
		if (te_neg(e)) {
			cvw = atomic_load(&k->cv[kp]);
			if (neg_harmful(ORC_KAS, e, cvw))
				violation(w, ORC_V_USE,
					  "cpu %u: kernel access to page %u faulted on an invalid "
					  "entry (version %u) after its install (version %u) completed",
					  cpu, kp, te_ver(e), pte_ver(cvw));
			atomic_store(&c->tlb[slot], 0); /* the oops, recovered */
			res = ORC_FAULT;
		} else if (a == ORC_WRITE && !(te_perm(e) & B_W)) {
			/* A stricter entry than the PTE (an upgrade flushed only
			 * locally): the kernel's spurious-fault fixup drops it. */
			atomic_store(&c->tlb[slot], 0);
			res = ORC_FAULT;
		} else if (!use_check(w, cpu, e) && a == ORC_WRITE) {
			write_check(w, cpu, e);
		}
	} else {
		int r = kwalk(w, c, kp, &e);

		count(w, ORC_C_WALKS, 1);
		if (r != -1)
			tlb_fill(w, c, e);
		if (r)
			res = ORC_FAULT;
		else if (a == ORC_WRITE && !(te_perm(e) & B_W))
			res = ORC_FAULT;
		else if (!use_check(w, cpu, e) && a == ORC_WRITE)
			write_check(w, cpu, e);
	}
	cache_unlock(c);
	return res;
}

/* ------------------------------------------------------------------------ */
/* CPU state                                                                */
/* ------------------------------------------------------------------------ */

int orc_switch(struct orc_world *w, uint32_t cpu, int as)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int nf = 0, r;

	if (as >= (int)w->cfg.nr_as || c->estate == TLBPOL_CPU_OFFLINE)
		return -EINVAL;
	/*
	 * Stop using the current AS's user addresses (for checkers) before the
	 * engine hears of it: a checker then excuses our TLB at worst too
	 * early, never too late.  But the CPU executes all along, and its CR3
	 * keeps the loaded AS until the write that follows the engine call:
	 * its kernel entries are used, and its walk caches of what stays
	 * loaded may be walked, so neither is excused (lazy, not away).  A
	 * switch to an AS is one step with its CR3 write ("the CR3 write
	 * follows at once, with interrupts off"): the CPU touches no user
	 * address until the write (our drop below) and its catch-up flush are
	 * done and it publishes again; its MMU may still walk the old tables
	 * speculatively in between, and does here, now and then.
	 */
	publish(c, c->estate == TLBPOL_CPU_PREEMPTED ? M_PREEMPT : M_LAZY, c->loaded);
	window(w, c);
	r = tlbpol_switch(w->eng, cpu, as >= 0 ? w->as[as].eas : NULL, &nf);
	trace(w, (int)cpu, TR_SWITCH, as < 0 ? 15u : (uint32_t)as, 0, (uint32_t)nf,
	      (uint32_t)c->loaded);
	if (r) {
		/* Not running: the engine refuses to switch it to an AS. */
		if (!(r == -EBUSY && as >= 0 && c->estate != TLBPOL_CPU_RUNNING))
			violation(w, ORC_V_API, "tlbpol_switch(cpu %u, as %d) = %d", cpu, as, r);
		publish_settled(w, c, cpu);
		return r;
	}
	window(w, c);
	if (as >= 0) {
		if (as != c->loaded && c->loaded >= 0 && rng_next(&c->rng) % 4 == 0)
			orc_spec_walk(w, cpu, (uint32_t)(rng_next(&c->rng) % w->cfg.pages));
		if (as != c->loaded && !(w->cfg.flags & TLBPOL_CFGF_RETAIN_AS))
			self_flush(w, c, DROP_USER); /* CR3 write without PCID: every non-global entry */
		if (nf) {
			count(w, ORC_C_CATCHUPS, 1);
			self_flush(w, c, as);
		}
		c->loaded = c->cur = as;
	} else {
		if (nf && c->loaded >= 0) {
			count(w, ORC_C_CATCHUPS, 1);
			self_flush(w, c, c->loaded);
		}
		c->cur = -1; /* lazy: the old AS stays loaded */
	}
	publish_settled(w, c, cpu);
	return 0;
}

int orc_unload(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int r;

	if (c->cur >= 0)
		return -EBUSY;
	/* CR3 still on the loaded AS until the write below (see orc_switch()). */
	publish(c, c->estate == TLBPOL_CPU_PREEMPTED ? M_PREEMPT : M_LAZY, c->loaded);
	r = tlbpol_unload(w->eng, cpu);
	trace(w, (int)cpu, TR_UNLOAD, 0, 0, (uint32_t)r, 0);
	if (r) {
		violation(w, ORC_V_API, "tlbpol_unload(cpu %u) = %d", cpu, r);
		publish_settled(w, c, cpu);
		return r;
	}
	window(w, c);
	if (c->loaded >= 0 && rng_next(&c->rng) % 4 == 0)
		orc_spec_walk(w, cpu, (uint32_t)(rng_next(&c->rng) % w->cfg.pages));
	/* To page tables of the host's own: a CR3 write, which keeps the old
	 * AS's entries under its tag only with retention, and global ones. */
	if (!(w->cfg.flags & TLBPOL_CFGF_RETAIN_AS))
		self_flush(w, c, DROP_USER);
	c->loaded = -1;
	publish_settled(w, c, cpu);
	return 0;
}

int orc_set_state(struct orc_world *w, uint32_t cpu, uint32_t state)
{
	struct orc_cpu *c = &w->cpus[cpu];
	int r;

	if (state > TLBPOL_CPU_OFFLINE)
		return -EINVAL;
	if (state == TLBPOL_CPU_IDLE)
		publish(c, M_LAZY, c->loaded);
	else if (state == TLBPOL_CPU_PREEMPTED)
		publish(c, M_PREEMPT, c->loaded);
	else if (state == TLBPOL_CPU_OFFLINE || c->estate == TLBPOL_CPU_OFFLINE)
		/* Going down, or coming back: excused throughout.  The caches
		 * are not emptied when it goes: the engine leaves it out from
		 * the moment it is OFFLINE, and flushes it whole in the call
		 * that brings it back; it executes nothing in between. */
		publish(c, M_OFFLINE, -1);
	else if (c->estate == TLBPOL_CPU_PREEMPTED)
		/* The hypervisor marks its vCPU running before it enters it:
		 * it executes nothing until the catch-up flush is done. */
		publish(c, M_PREEMPT, c->loaded);
	else if (c->estate != TLBPOL_CPU_RUNNING)
		/* Waking from idle is, like a switch, one step with the
		 * catch-up flush it may ask for (see orc_switch()); the CPU
		 * executes, and its MMU may walk what it keeps loaded. */
		publish(c, M_LAZY, c->loaded);
	r = tlbpol_cpu_state(w->eng, cpu, state);
	trace(w, (int)cpu, TR_STATE, 0, 0, state, (uint32_t)r);
	if (r < 0) {
		if (!(state == TLBPOL_CPU_OFFLINE && r == -EBUSY))
			violation(w, ORC_V_API, "tlbpol_cpu_state(cpu %u, %u) = %d", cpu, state, r);
		publish_settled(w, c, cpu);
		return r;
	}
	if (state == TLBPOL_CPU_OFFLINE) {
		/* Must switch before it uses an AS. */
		c->cur = c->loaded = -1;
	} else if (state == TLBPOL_CPU_RUNNING && r == 1) {
		window(w, c);
		/* "Flush its current address space, paging-structure caches
		 * included": the running one, or the lazily loaded one. */
		int x = c->cur >= 0 ? c->cur : c->loaded;

		count(w, ORC_C_CATCHUPS, 1);
		if (x >= 0)
			self_flush(w, c, x);
	} else if (r != 0) {
		violation(w, ORC_V_API, "tlbpol_cpu_state(cpu %u, %u) = %d", cpu, state, r);
	}
	c->estate = state;
	publish_settled(w, c, cpu);
	return r;
}

void orc_hv_preempt(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];

	/* Excused from here on (it executes nothing), then visible to
	 * vcpu_defer: a checker excuses it at worst too early. */
	publish(c, M_PREEMPT, c->loaded);
	atomic_store(&c->hv, HV_PREEMPTED);
	trace(w, (int)cpu, TR_STATE, 0, 0, 100 + HV_PREEMPTED, 0);
}

void orc_hv_resume(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint8_t st = atomic_exchange(&c->hv, 0);

	trace(w, (int)cpu, TR_STATE, 0, 0, 100 + st, 0);
	if (st & HV_FLUSH) {
		/* The host flushes the whole guest: every AS, global entries
		 * and paging-structure caches included. */
		count(w, ORC_C_CATCHUPS, 1);
		self_flush(w, c, DROP_ALL);
	}
	publish_settled(w, c, cpu);
}

int orc_tick(struct orc_world *w, uint32_t cpu)
{
	int r;

	w->cpus[cpu].call_id++;
	r = tlbpol_tick(w->eng, cpu);

	trace(w, (int)cpu, TR_TICK, 0, 0, (uint32_t)r, 0);
	if (r < 0)
		violation(w, ORC_V_API, "tlbpol_tick(cpu %u) = %d", cpu, r);
	return r;
}

int orc_flush(struct orc_world *w, uint32_t cpu, uint32_t by)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint64_t upto = c->seq;
	int r;

	c->call_id++;
	r = tlbpol_flush(w->eng, cpu, by);

	trace(w, (int)cpu, TR_EFLUSH, 0, 0, by, (uint32_t)r);
	if (r < 0) {
		violation(w, ORC_V_API, "tlbpol_flush(cpu %u, %u) = %d", cpu, by, r);
		return r;
	}
	if (by != TLBPOL_BY_NOW)
		complete_recs(w, c, upto, by, by == TLBPOL_BY_WRITEBACK ? "flush(writeback)"
					       : by == TLBPOL_BY_FREE   ? "flush(free)"
									: "flush(lazy)");
	return r;
}

void orc_audit(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];

	if (c->cur >= 0 && c->estate == TLBPOL_CPU_RUNNING)
		scan_self(w, c, cpu, c->cur, 0, ORC_V_USE, "self-audit");
}

int orc_cpu_as(const struct orc_world *w, uint32_t cpu)
{
	return w->cpus[cpu].cur;
}

int orc_cpu_loaded(const struct orc_world *w, uint32_t cpu)
{
	return w->cpus[cpu].loaded;
}

uint32_t orc_cpu_state(const struct orc_world *w, uint32_t cpu)
{
	return w->cpus[cpu].estate;
}

void orc_cpu_bind(struct orc_world *w, uint32_t cpu)
{
	self_world = w;
	self_cpu = (int)cpu;
}

void orc_note_events(struct orc_world *w, uint32_t cpu, uint64_t n)
{
	(void)cpu;
	count(w, ORC_C_EVENTS, n);
}

uint64_t orc_rand(struct orc_world *w, uint32_t cpu)
{
	return rng_next(&w->cpus[cpu].rng);
}

/* ------------------------------------------------------------------------ */
/* Page-table operations                                                    */
/* ------------------------------------------------------------------------ */

/* Clip [page, page + n) to the AS and to ORC_MAX_RANGE; 0 if empty. */
static int clip(const struct orc_world *w, uint32_t as, uint32_t *page, uint32_t *n)
{
	if (as >= w->cfg.nr_as || *page >= w->cfg.pages || !*n)
		return 0;
	if (*n > ORC_MAX_RANGE)
		*n = ORC_MAX_RANGE;
	if (*page + *n > w->cfg.pages)
		*n = w->cfg.pages - *page;
	return 1;
}

enum orc_result orc_populate(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			     uint32_t n)
{
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0;
	enum orc_result res = ORC_OK;

	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	for (uint32_t p = page; p < page + n; p++) {
		struct orc_as *a = &w->as[as];
		uint32_t f;

		if ((pte_perm(atomic_load(&a->pte[p])) & B_P) || atomic_load(&a->quar[p]))
			continue;
		if (ensure_table(w, as, p / gp) || !(f = frame_alloc(w, as, p))) {
			res = ORC_NOMEM;
			break;
		}
		if (install_prepare(w, as, p, B_A | (atomic_load(&a->vma[p]) & (B_W | B_X | B_U)), f,
				    &ch[nch]))
			nch++;
		else
			frame_unalloc(w, f);
	}
	if (nch)
		install_run(w, cpu, as, as, 0, page, n, ch, nch);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : res == ORC_OK ? ORC_SKIP : res;
}

enum orc_result orc_protect(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			    uint32_t n, uint32_t clear, uint32_t set, int vma)
{
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	uint32_t nch = 0, kind = TLBPOL_EV_PROTECT;

	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	clear &= B_W | B_X | B_U;
	set &= B_W | B_X | B_U;
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	for (uint32_t p = page; p < page + n; p++) {
		_Atomic uint32_t *v = &w->as[as].vma[p];
		uint32_t allowed;

		if (vma)
			atomic_store(v, (atomic_load(v) & ~clear) | set);
		allowed = atomic_load(v);
		if (pte_change(w, as, p, clear, set & allowed, 0, 1, &ch[nch]))
			nch++;
	}
	/*
	 * Now and then the host's code path labels the change as something
	 * else (an unmap-like kind): the header promises that an event is
	 * never flushed less than its PTE change needs, whatever its kind,
	 * so a downgrade labelled UNMAP, RECLAIM or MIGRATE must still be one.
	 */
	if (rng_next(&w->cpus[cpu].rng) % 8 == 0) {
		static const uint32_t kinds[] = { TLBPOL_EV_UNMAP, TLBPOL_EV_RECLAIM,
						  TLBPOL_EV_MIGRATE };

		kind = kinds[rng_next(&w->cpus[cpu].rng) % 3];
	}
	submit_runs(w, cpu, as, as, kind, 0, ch, nch);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

enum orc_result orc_unmap(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			  uint32_t n, uint32_t evflags, int writeback)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	uint32_t nch = 0, dirty[ORC_MAX_RANGE], dpage[ORC_MAX_RANGE], ndirty = 0;
	struct orc_free *fr;

	evflags &= TLBPOL_EVF_TABLES_FREED | TLBPOL_EVF_LAZY_OK;
	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	if (evflags & TLBPOL_EVF_TABLES_FREED) {
		/* Whole table pages only, and not more than a free can hold. */
		uint32_t end = (page + n + gp - 1) / gp * gp;

		page = page / gp * gp;
		n = end - page;
		if (n > gp * FREE_TABLES_MAX)
			n = gp * FREE_TABLES_MAX;
		while (n > ORC_MAX_RANGE)
			n -= gp;
	}
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	fr = free_new(w, c, cpu, as);
	for (uint32_t p = page; p < page + n; p++) {
		if (!pte_change(w, as, p, PERM_MASK, 0, 0, 1, &ch[nch]))
			continue;
		fr->frames[fr->nr_frames++] = pte_frame(ch[nch].old);
		if (writeback && may_be_dirty(w, pte_perm(ch[nch].old))) {
			dpage[ndirty] = p;
			dirty[ndirty++] = pte_frame(ch[nch].old);
		}
		nch++;
	}
	if (evflags & TLBPOL_EVF_TABLES_FREED) {
		/* Unhook the table pages (their PTEs are all clear now); they are
		 * freed by the deferred free, after the flush. */
		for (uint32_t g = g0; g <= g1; g++) {
			uint64_t d = atomic_exchange(&w->as[as].dir[g], 0);
			uint64_t o;

			if (!d)
				continue;
			o = atomic_load(&w->table[dir_table(d)]);
			atomic_store(&w->table[dir_table(d)],
				     own_make(T_DETACHED, own_as(o), own_idx(o), own_gen(o)));
			fr->tables[fr->nr_tables++] = dir_table(d);
			trace(w, (int)cpu, TR_DETACH, as, g, dir_table(d), 0);
		}
	}
	if (!nch && !fr->nr_tables) {
		unlock_groups(w, as, g0, g1);
		c->chunk_used--; /* give the unused record back */
		memset(fr, 0, sizeof(*fr));
		return ORC_SKIP;
	}
	submit(w, cpu, as, TLBPOL_EV_UNMAP, evflags, page, n, ch, nch, 0);
	if (evflags & TLBPOL_EVF_LAZY_OK) {
		/* The promise LAZY_OK makes: these addresses are not reused
		 * until the deferred free below has run. */
		for (uint32_t p = page; p < page + n; p++)
			atomic_fetch_add(&w->as[as].quar[p], 1);
		fr->qpage = page;
		fr->qn = n;
	}
	unlock_groups(w, as, g0, g1);
	if (ndirty) {
		/*
		 * A shared page written back: by a flusher thread, on whichever
		 * CPU, once the page-table lock is dropped (the header: such an
		 * unmap is complete when the call returns, since no other CPU's
		 * tlbpol_flush() could complete it).  From here on a write
		 * through a stale entry would be lost.
		 */
		for (uint32_t i = 0; i < ndirty; i++)
			frame_set(w, dirty[i], as, dpage[i], F_CLEANED);
	}
	/* Now and then a tick between the submit and the free: it may post
	 * this CPU's lazy work and empty its batch, and the free must still
	 * wait for the request in flight. */
	if (rng_next(&c->rng) % 4 == 0)
		orc_tick(w, cpu);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_dontneed(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			     uint32_t n)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t gp = w->cfg.group_pages, g0, g1, nch = 0;
	uint32_t evflags = TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE;
	struct change ch[ORC_MAX_RANGE];
	struct orc_free *fr;

	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	fr = free_new(w, c, cpu, as);
	for (uint32_t p = page; p < page + n; p++)
		if (pte_change(w, as, p, PERM_MASK, 0, 0, 1, &ch[nch]))
			fr->frames[fr->nr_frames++] = pte_frame(ch[nch++].old);
	if (!nch) {
		unlock_groups(w, as, g0, g1);
		c->chunk_used--;
		memset(fr, 0, sizeof(*fr));
		return ORC_SKIP;
	}
	/* What a careless host passes for private memory: to be ignored. */
	if (rng_next(&c->rng) % 2)
		evflags |= TLBPOL_EVF_LAZY_OK;
	/*
	 * madvise() returns here: complete, whatever the engine decided.  A
	 * later access must fault and find a zero page, so from now on the old
	 * contents are gone: reading them is stale data, writing them a lost
	 * write.  The frames go back through a deferred free as usual.
	 */
	submit_via(w, cpu, as, as, TLBPOL_EV_UNMAP, evflags, page, n, ch, nch, 0, SUB_NOW);
	for (uint32_t i = 0; i < fr->nr_frames; i++)
		frame_set(w, fr->frames[i], as, ch[i].page, F_GONE);
	unlock_groups(w, as, g0, g1);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

/* Clip [kp, kp + n) to the kernel region and ORC_MAX_RANGE; 0 if empty. */
static int kclip(const struct orc_world *w, uint32_t *kp, uint32_t *n)
{
	uint32_t pages = w->as[ORC_KAS].pages;

	if (*kp >= pages || !*n)
		return 0;
	if (*n > ORC_MAX_RANGE)
		*n = ORC_MAX_RANGE;
	if (*kp + *n > pages)
		*n = pages - *kp;
	return 1;
}

enum orc_result orc_kmap(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kp, uint32_t n)
{
	struct orc_as *k = &w->as[ORC_KAS];
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0, first = kp;
	enum orc_result res = ORC_OK;

	if (via >= w->cfg.nr_as || !kclip(w, &kp, &n))
		return ORC_SKIP;
	first = kp;
	if (!lock_groups(w, cpu, ORC_KAS, kp, kp + n - 1))
		return ORC_BUSY;
	for (uint32_t p = kp; p < kp + n; p++) {
		uint32_t f;

		if ((pte_perm(atomic_load(&k->pte[p])) & B_P) || atomic_load(&k->quar[p]))
			continue;
		if (!(f = frame_alloc(w, ORC_KAS, p))) {
			res = ORC_NOMEM;
			break;
		}
		if (install_prepare(w, ORC_KAS, p, KPERM, f, &ch[nch]))
			nch++;
		else
			frame_unalloc(w, f);
	}
	if (nch)
		install_run(w, cpu, ORC_KAS, via, 0, first, n, ch, nch);
	unlock_groups(w, ORC_KAS, kp, kp + n - 1);
	return nch ? ORC_OK : res == ORC_OK ? ORC_SKIP : res;
}

enum orc_result orc_kunmap(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kp,
			   uint32_t n, int lazy)
{
	struct orc_cpu *c = &w->cpus[cpu];
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0;
	struct orc_free *fr;

	if (via >= w->cfg.nr_as || !kclip(w, &kp, &n))
		return ORC_SKIP;
	if (!lock_groups(w, cpu, ORC_KAS, kp, kp + n - 1))
		return ORC_BUSY;
	fr = free_new(w, c, cpu, ORC_KAS);
	for (uint32_t p = kp; p < kp + n; p++)
		if (pte_change(w, ORC_KAS, p, PERM_MASK, 0, 0, 1, &ch[nch]))
			fr->frames[fr->nr_frames++] = pte_frame(ch[nch++].old);
	if (!nch) {
		unlock_groups(w, ORC_KAS, kp, kp + n - 1);
		c->chunk_used--;
		memset(fr, 0, sizeof(*fr));
		return ORC_SKIP;
	}
	/* vunmap: the contents die with it; lazily (vmap's lazy purge) the
	 * addresses are not reused before the free. */
	submit_via(w, cpu, ORC_KAS, via, TLBPOL_EV_UNMAP,
		   TLBPOL_EVF_PRIVATE | (lazy ? TLBPOL_EVF_LAZY_OK : 0), kp, n, ch, nch, 0,
		   SUB_NORMAL);
	if (lazy) {
		for (uint32_t p = kp; p < kp + n; p++)
			atomic_fetch_add(&w->as[ORC_KAS].quar[p], 1);
		fr->qpage = kp;
		fr->qn = n;
	}
	unlock_groups(w, ORC_KAS, kp, kp + n - 1);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_kprotect(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kp,
			     uint32_t n, int writable)
{
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	uint32_t nch = 0;

	if (via >= w->cfg.nr_as || !kclip(w, &kp, &n))
		return ORC_SKIP;
	if (!lock_groups(w, cpu, ORC_KAS, kp, kp + n - 1))
		return ORC_BUSY;
	for (uint32_t p = kp; p < kp + n; p++)
		if (pte_change(w, ORC_KAS, p, writable ? 0 : B_W, writable ? B_W : 0, 0, 1, &ch[nch]))
			nch++;
	submit_runs(w, cpu, ORC_KAS, via, TLBPOL_EV_PROTECT, 0, ch, nch);
	unlock_groups(w, ORC_KAS, kp, kp + n - 1);
	return nch ? ORC_OK : ORC_SKIP;
}

enum orc_result orc_reclaim(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t g = page / w->cfg.group_pages, f;
	struct change ch;
	struct orc_free *fr;

	if (as >= w->cfg.nr_as || page >= w->cfg.pages)
		return ORC_SKIP;
	if (!lock_groups(w, cpu, as, g, g))
		return ORC_BUSY;
	if (!pte_change(w, as, page, PERM_MASK, 0, 0, 1, &ch)) {
		unlock_groups(w, as, g, g);
		return ORC_SKIP;
	}
	submit(w, cpu, as, TLBPOL_EV_RECLAIM, 0, page, 1, &ch, 1, 0);
	unlock_groups(w, as, g, g);
	f = pte_frame(ch.old);
	/* pageout(): a dirty page is written back once nothing can write it
	 * any more; a clean one has nothing to write. */
	if (may_be_dirty(w, pte_perm(ch.old)))
		orc_flush(w, cpu, TLBPOL_BY_WRITEBACK);
	frame_set(w, f, as, page, F_CLEANED);
	fr = free_new(w, c, cpu, as);
	fr->frames[fr->nr_frames++] = f;
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_migrate(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t g = page / w->cfg.group_pages, f1, f2;
	struct change ch, ch2;
	struct orc_free *fr;

	if (as >= w->cfg.nr_as || page >= w->cfg.pages)
		return ORC_SKIP;
	if (!lock_groups(w, cpu, as, g, g))
		return ORC_BUSY;
	/* Unmap (the migration entry keeps faults away: we hold the lock). */
	if (!pte_change(w, as, page, PERM_MASK, 0, 0, 1, &ch)) {
		unlock_groups(w, as, g, g);
		return ORC_SKIP;
	}
	submit(w, cpu, as, TLBPOL_EV_MIGRATE, 0, page, 1, &ch, 1, 0);
	f1 = pte_frame(ch.old);
	/* Copy, once the flush due before it is done (the header: every
	 * migration is due BY_WRITEBACK). */
	orc_flush(w, cpu, TLBPOL_BY_WRITEBACK);
	frame_set(w, f1, as, page, F_CLEANED);
	/*
	 * Restore the PTE on the new frame, stored before it is submitted as
	 * Linux's remove_migration_ptes() does: the header allows that order
	 * here, after the migration's own tlbpol_flush(BY_WRITEBACK).  From
	 * the store on, the old frame's contents are stale.
	 */
	f2 = frame_alloc(w, as, page);
	if (f2 && install_prepare(w, as, page, pte_perm(ch.old), f2, &ch2)) {
		install_commit(w, as, &ch2, 1);
		submit(w, cpu, as, TLBPOL_EV_FAULT, 0, page, 1, &ch2, 1, 0);
	} else if (f2) {
		frame_unalloc(w, f2);
	}
	unlock_groups(w, as, g, g);
	fr = free_new(w, c, cpu, as);
	fr->frames[fr->nr_frames++] = f1;
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_clear_young(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				uint32_t n)
{
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0;

	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	for (uint32_t p = page; p < page + n; p++)
		if (pte_change(w, as, p, B_A, 0, 0, 1, &ch[nch]))
			nch++;
	if (nch)
		submit(w, cpu, as, TLBPOL_EV_CLEAR_YOUNG, 0, page, n, ch, nch, 0);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

enum orc_result orc_clear_dirty(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				uint32_t n, int wrprotect)
{
	uint32_t gp = w->cfg.group_pages, g0, g1;
	struct change ch[ORC_MAX_RANGE];
	uint32_t nch = 0;

	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	for (uint32_t p = page; p < page + n; p++) {
		/* Only pages that are dirty: page_mkclean() of each. */
		if (!(pte_perm(atomic_load(&w->as[as].pte[p])) & B_D))
			continue;
		if (pte_change(w, as, p, B_D | (wrprotect ? B_W : 0), 0, 0, 1, &ch[nch]))
			nch++;
	}
	if (nch)
		submit(w, cpu, as, TLBPOL_EV_CLEAR_DIRTY, 0, page, n, ch, nch, 0);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

enum orc_result orc_remap(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t from,
			  uint32_t to)
{
	uint32_t gp = w->cfg.group_pages, ga, gb, perm, f;
	struct orc_as *a;
	struct change ch, ch2;
	enum orc_result res = ORC_OK;

	if (as >= w->cfg.nr_as || from >= w->cfg.pages || to >= w->cfg.pages || from == to)
		return ORC_SKIP;
	a = &w->as[as];
	ga = (from < to ? from : to) / gp;
	gb = (from < to ? to : from) / gp;
	/* Two locks in address order; the ones between are taken too (a
	 * simplification: the range is small). */
	if (!lock_groups(w, cpu, as, ga, gb))
		return ORC_BUSY;
	if (!(pte_perm(atomic_load(&a->pte[from])) & B_P) ||
	    (pte_perm(atomic_load(&a->pte[to])) & B_P) || atomic_load(&a->quar[to]) ||
	    ensure_table(w, as, to / gp)) {
		unlock_groups(w, as, ga, gb);
		return ORC_SKIP;
	}
	if (!pte_change(w, as, from, PERM_MASK, 0, 0, 1, &ch)) {
		unlock_groups(w, as, ga, gb);
		return ORC_SKIP;
	}
	/* move_ptes(): the old address goes, flushed before the new one can be
	 * used. */
	submit(w, cpu, as, TLBPOL_EV_REMAP, 0, from, 1, &ch, 1, 0);
	perm = pte_perm(ch.old);
	f = pte_frame(ch.old);
	atomic_store(&w->frame[f], own_make(F_LIVE, as, to, 0));
	atomic_store(&a->vma[to], atomic_load(&a->vma[from]));
	if (install_prepare(w, as, to, perm, f, &ch2)) {
		install_run(w, cpu, as, as, 0, to, 1, &ch2, 1);
	} else {
		res = ORC_SKIP; /* cannot happen: checked under the lock above */
	}
	unlock_groups(w, as, ga, gb);
	return res;
}

enum orc_result orc_attrs(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			  uint32_t n)
{
	uint32_t gp = w->cfg.group_pages, g0, g1, nch = 0;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };

	if (!clip(w, as, &page, &n))
		return ORC_SKIP;
	g0 = page / gp;
	g1 = (page + n - 1) / gp;
	if (!lock_groups(w, cpu, as, g0, g1))
		return ORC_BUSY;
	for (uint32_t p = page; p < page + n; p++) {
		_Atomic uint64_t *pte = &w->as[as].pte[p];
		uint64_t old = atomic_load(pte), new = 0;

		do {
			if (!(pte_perm(old) & B_P) || pte_ver(old) >= VER_MAX)
				break;
			new = pte_make(pte_pb(old) ^ B_ATTR, pte_frame(old), pte_ver(old) + 1);
		} while (!atomic_compare_exchange_weak(pte, &old, new));
		if (!(pte_perm(old) & B_P) || pte_ver(old) >= VER_MAX)
			continue;
		ch[nch].page = p;
		ch[nch].old = old;
		ch[nch++].new = new;
	}
	/* The portable bits do not change: only the flag says what did. */
	if (nch)
		submit_runs(w, cpu, as, as, TLBPOL_EV_PROTECT, TLBPOL_EVF_ATTRS, ch, nch);
	unlock_groups(w, as, g0, g1);
	return nch ? ORC_OK : ORC_SKIP;
}

/*
 * The table page of @page's group replaced by a copy: a hypervisor
 * rebuilding a shadow table, a kernel moving page-table pages.  No PTE
 * changes, but the old table page is freed by the deferred free, so no CPU
 * may still cache a pointer to it by then (paging-structure caches, SDM
 * 4.10.3; Arm ARM D8.13 walk caches).  The host reports it with
 * TLBPOL_EVF_TABLES_FREED under the kind of the code path that did it
 * (@kind): a fault that found its PTE already good (it looks spurious), a
 * protect or an aging pass that changed nothing.  Under the group lock.
 */
enum orc_result orc_retable(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			    uint32_t kind)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t gp = w->cfg.group_pages, g, p0, n = gp, nch = 0;
	struct change ch[ORC_MAX_RANGE] = { { 0, 0, 0 } };
	struct orc_free *fr;
	uint64_t d, nd, o;

	if (kind >= TLBPOL_EV_MAX || kind == TLBPOL_EV_REMAP)
		return ORC_SKIP;
	p0 = page / gp * gp;
	if (!clip(w, as, &p0, &n))
		return ORC_SKIP;
	g = p0 / gp;
	if (!lock_groups(w, cpu, as, g, g))
		return ORC_BUSY;
	d = atomic_load(&w->as[as].dir[g]);
	if (!d || table_alloc(w, as, g, &nd)) {
		unlock_groups(w, as, g, g);
		return d ? ORC_NOMEM : ORC_SKIP;
	}
	/* The event names the group's present PTEs, old and new alike. */
	for (uint32_t p = p0; p < p0 + n; p++) {
		uint64_t pte = atomic_load(&w->as[as].pte[p]);

		if (!(pte_perm(pte) & B_P))
			continue;
		ch[nch].page = p;
		ch[nch].old = ch[nch].new = pte;
		nch++;
	}
	atomic_store(&w->as[as].dir[g], nd);
	o = atomic_load(&w->table[dir_table(d)]);
	atomic_store(&w->table[dir_table(d)],
		     own_make(T_DETACHED, own_as(o), own_idx(o), own_gen(o)));
	trace(w, (int)cpu, TR_DETACH, as, g, dir_table(d), 0);
	fr = free_new(w, c, cpu, as);
	fr->tables[fr->nr_tables++] = dir_table(d);
	submit(w, cpu, as, kind, TLBPOL_EVF_TABLES_FREED, p0, n, ch, nch, 0);
	unlock_groups(w, as, g, g);
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

enum orc_result orc_change_frame(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				 int cow)
{
	struct orc_cpu *c = &w->cpus[cpu];
	uint32_t g = page / w->cfg.group_pages, f1, f2, perm;
	struct change ch;
	struct orc_free *fr;
	_Atomic uint64_t *pte;
	uint64_t want;

	if (as >= w->cfg.nr_as || page >= w->cfg.pages)
		return ORC_SKIP;
	if (!lock_groups(w, cpu, as, g, g))
		return ORC_BUSY;
	pte = &w->as[as].pte[page];
	f2 = frame_alloc(w, as, page);
	if (!f2) {
		unlock_groups(w, as, g, g);
		return ORC_NOMEM;
	}
	/* Break before make: clear, submit (describing the PTE to come), and
	 * only then install the new frame. */
	if (!pte_change(w, as, page, PERM_MASK, 0, 0, 1, &ch)) {
		unlock_groups(w, as, g, g);
		frame_unalloc(w, f2);
		return ORC_SKIP;
	}
	f1 = pte_frame(ch.old);
	perm = pte_perm(ch.old) | B_A;
	if (cow && (atomic_load(&w->as[as].vma[page]) & B_W))
		perm |= B_W | B_D;
	submit(w, cpu, as, cow ? TLBPOL_EV_FAULT : TLBPOL_EV_PROTECT,
	       TLBPOL_EVF_PFN_CHANGED | (cow ? TLBPOL_EVF_WRITE : 0), page, 1, &ch, 1, perm);
	/* The copy was taken; writes to the old frame from now on are lost. */
	frame_set(w, f1, as, page, F_CLEANED);
	want = pte_make(perm, f2, pte_ver(ch.new) + 1);
	if (pte_ver(ch.new) < VER_MAX) {
		supersede(w, as, page, f2);
		atomic_store(pte, want); /* nobody else writes a not-present PTE */
	} else {
		frame_unalloc(w, f2);
	}
	unlock_groups(w, as, g, g);
	fr = free_new(w, c, cpu, as);
	fr->frames[fr->nr_frames++] = f1;
	free_register(w, c, cpu, fr);
	return ORC_OK;
}

/* ------------------------------------------------------------------------ */
/* World                                                                    */
/* ------------------------------------------------------------------------ */

void orc_config_init(struct orc_config *cfg, uint32_t nr_cpus, uint32_t arch, uint64_t rules)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nr_cpus = nr_cpus;
	cfg->arch = arch;
	cfg->rules = rules;
	cfg->nr_as = 4;
	cfg->pages = 128;
	cfg->group_pages = 8;
	cfg->tlb_sets = 32;
	cfg->tlb_ways = 4;
	cfg->psc_sets = 4;
	cfg->psc_ways = 4;
	cfg->numa_nodes = nr_cpus >= 2 ? 2 : 1;
	cfg->broadcast = 1;
	cfg->vcpu_defer = 1;
	cfg->kernel_pages = 32;
	cfg->seed = 1;
	cfg->max_reports = 20;
}

void orc_world_free(struct orc_world *w)
{
	if (!w)
		return;
	if (w->eng)
		tlbpol_engine_free(w->eng);
	for (uint32_t x = 0; x <= ORC_MAX_AS; x++) {
		struct orc_as *a = &w->as[x];

		free((void *)a->pte);
		free((void *)a->cv);
		free((void *)a->vma);
		free((void *)a->quar);
		free((void *)a->dir);
		free((void *)a->lock);
		free((void *)a->prevf);
	}
	if (w->cpus) {
		for (uint32_t i = 0; i < w->cfg.nr_cpus; i++) {
			struct orc_cpu *c = &w->cpus[i];

			free((void *)c->tlb);
			free((void *)c->psc);
			free(c->rec);
			free(c->wait_polls);
			free(c->mark_polls);
			while (c->chunks) {
				struct free_chunk *n = c->chunks->next;

				free(c->chunks);
				c->chunks = n;
			}
		}
		free(w->cpus);
	}
	free((void *)w->frame);
	free((void *)w->table);
	free(w->frame_pool);
	free(w->table_pool);
	pthread_mutex_destroy(&w->pool_lock);
	pthread_mutex_destroy(&w->log_lock);
	free(w);
}

#define ZALLOC(p, n)                                                                      \
	do {                                                                              \
		(p) = calloc((n), sizeof(*(p)));                                          \
		if (!(p))                                                                 \
			goto nomem;                                                       \
	} while (0)

int orc_world_new(const struct orc_config *cfg, struct orc_world **out)
{
	struct orc_world *w;
	struct tlbpol_config ec;
	uint64_t seed;
	int r;

	if (!cfg || !out || !cfg->nr_cpus || cfg->nr_cpus > ORC_MAX_CPUS || !cfg->nr_as ||
	    cfg->nr_as > ORC_MAX_AS || cfg->group_pages < 2 || cfg->group_pages > ORC_MAX_RANGE ||
	    !cfg->pages || cfg->pages > ORC_MAX_PAGES || cfg->pages % cfg->group_pages ||
	    cfg->pages / cfg->group_pages > ORC_MAX_GROUPS || !cfg->tlb_sets || !cfg->tlb_ways ||
	    !cfg->psc_sets || !cfg->psc_ways || cfg->kernel_pages > ORC_MAX_KPAGES)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cfg = *cfg;
	if (!w->cfg.log)
		w->cfg.log = stderr;
	pthread_mutex_init(&w->pool_lock, NULL);
	pthread_mutex_init(&w->log_lock, NULL);
	w->ngroups = cfg->pages / cfg->group_pages;
	seed = cfg->seed ? cfg->seed : 1;

	/* Pools: room for every page mapped and as many again held by deferred
	 * frees; frame and table 0 mean "none". */
	w->nframes = (cfg->nr_as * cfg->pages + cfg->kernel_pages) * 3 + 64;
	w->ntables = cfg->nr_as * w->ngroups * 4 + 16;
	if (w->nframes > FRAME_MAX || w->ntables > 0x7fff) {
		orc_world_free(w);
		return -EINVAL;
	}
	ZALLOC(w->frame, w->nframes);
	ZALLOC(w->table, w->ntables);
	ZALLOC(w->frame_pool, w->nframes);
	ZALLOC(w->table_pool, w->ntables);
	for (uint32_t f = w->nframes - 1; f >= 1; f--)
		w->frame_pool[w->frame_top++] = f;
	for (uint32_t t = w->ntables - 1; t >= 1; t--)
		w->table_pool[w->table_top++] = t;

	ZALLOC(w->cpus, cfg->nr_cpus);
	for (uint32_t i = 0; i < cfg->nr_cpus; i++) {
		struct orc_cpu *c = &w->cpus[i];

		ZALLOC(c->tlb, (size_t)cfg->tlb_sets * cfg->tlb_ways);
		ZALLOC(c->psc, (size_t)cfg->psc_sets * cfg->psc_ways);
		ZALLOC(c->wait_polls, cfg->nr_cpus);
		ZALLOC(c->mark_polls, cfg->nr_cpus);
		c->cur = c->loaded = -1;
		c->estate = TLBPOL_CPU_RUNNING;
		c->rng = seed * 0x9E3779B97F4A7C15ULL + (i + 1) * 0xBF58476D1CE4E5B9ULL;
		if (!c->rng)
			c->rng = 1;
		atomic_store(&c->pub, pub_make(M_LAZY, -1));
		w->cpu_node[i] = (uint16_t)(cfg->numa_nodes > 1 ? i * cfg->numa_nodes / cfg->nr_cpus
								: 0);
	}

	w->ops.size = sizeof(w->ops);
	w->ops.flush_local = cb_flush_local;
	w->ops.send_ipi = cb_send_ipi;
	w->ops.broadcast = cfg->broadcast ? cb_broadcast : NULL;
	w->ops.relax = cb_relax;
	w->ops.vcpu_defer = cfg->vcpu_defer ? cb_vcpu_defer : NULL;
	tlbpol_config_init(&ec, cfg->nr_cpus, cfg->arch);
	ec.rules = cfg->rules;
	ec.flags = cfg->flags;
	ec.ops = &w->ops;
	ec.ops_ctx = w;
	ec.max_as = cfg->nr_as + 1;
	if (cfg->numa_nodes > 1)
		ec.cpu_node = w->cpu_node;
	if (cfg->batch_pages)
		ec.batch_pages = cfg->batch_pages;
	if (cfg->flush_ceiling)
		ec.flush_ceiling = cfg->flush_ceiling;
	ec.ipi_delay_spins = cfg->ipi_delay_spins;
	r = tlbpol_engine_new(&ec, &w->eng);
	if (r) {
		w->eng = NULL;
		orc_world_free(w);
		return r;
	}

	for (uint32_t x = 0; x < cfg->nr_as; x++) {
		struct orc_as *a = &w->as[x];
		uint64_t rs = seed ^ (0xD6E8FEB86659FD93ULL * (x + 1));

		ZALLOC(a->pte, cfg->pages);
		ZALLOC(a->cv, cfg->pages);
		ZALLOC(a->vma, cfg->pages);
		ZALLOC(a->quar, cfg->pages);
		ZALLOC(a->dir, w->ngroups);
		ZALLOC(a->lock, w->ngroups);
		ZALLOC(a->prevf, cfg->pages);
		a->pages = cfg->pages;
		/* Distinct, not small, not contiguous: a PCID/ASID-like tag. */
		a->tag = 0x100 + 0x31ULL * (x + 1);
		r = tlbpol_as_open(w->eng, a->tag, &a->eas);
		if (r) {
			orc_world_free(w);
			return r;
		}
		/* What faults may grant, per page: mostly read-write, some
		 * read-only, some executable. */
		for (uint32_t p = 0; p < cfg->pages; p++) {
			uint64_t v = rng_next(&rs) % 20;

			atomic_store(&a->vma[p], B_U | (v < 13 ? B_W : v < 16 ? 0 : v < 19 ? B_X
										      : B_W | B_X));
		}
	}

	/* The kernel region: no engine address space of its own (its changes
	 * go through the user ones), a lock per page, no page tables to free. */
	{
		struct orc_as *k = &w->as[ORC_KAS];
		uint32_t kp = cfg->kernel_pages ? cfg->kernel_pages : 1;

		ZALLOC(k->pte, kp);
		ZALLOC(k->cv, kp);
		ZALLOC(k->vma, kp);
		ZALLOC(k->quar, kp);
		ZALLOC(k->dir, 1);
		ZALLOC(k->lock, kp);
		ZALLOC(k->prevf, kp);
		k->pages = cfg->kernel_pages;
		k->tag = ~0ULL; /* no flush names it */
	}

	/* A first population from CPU 0, before any CPU runs: submitted like
	 * any install. */
	orc_cpu_bind(w, 0);
	/* The kernel's mappings are there before any CPU runs (boot): no
	 * TLB holds anything to flush yet, so they are written directly, as
	 * completed changes.  Two pages in eight are left for orc_kmap(). */
	for (uint32_t p = 0; p < cfg->kernel_pages; p++) {
		uint32_t f;
		uint64_t ptew;

		if (p % 8 >= 6 || !(f = frame_alloc(w, ORC_KAS, p)))
			continue;
		ptew = pte_make(KPERM, f, 1);
		atomic_store(&w->as[ORC_KAS].pte[p], ptew);
		atomic_store(&w->as[ORC_KAS].cv[p], ptew);
	}
	for (uint32_t x = 0; x < cfg->nr_as; x++)
		for (uint32_t p = 0; p < cfg->pages; p += cfg->group_pages)
			if ((rng_next(&w->cpus[0].rng) % 4) != 0)
				orc_populate(w, 0, x, p, cfg->group_pages);
	self_world = NULL;
	self_cpu = -1;
	*out = w;
	return 0;
nomem:
	orc_world_free(w);
	return -ENOMEM;
}

struct tlbpol_engine *orc_engine(struct orc_world *w)
{
	return w->eng;
}

const struct orc_config *orc_world_config(const struct orc_world *w)
{
	return &w->cfg;
}

/* ------------------------------------------------------------------------ */
/* End of a run                                                             */
/* ------------------------------------------------------------------------ */

void orc_barrier(struct orc_world *w, uint32_t cpu)
{
	uint32_t gen = atomic_load(&w->bar_gen);

	if (atomic_fetch_add(&w->bar_count, 1) + 1 == w->cfg.nr_cpus) {
		atomic_store(&w->bar_count, 0);
		atomic_fetch_add(&w->bar_gen, 1);
		return;
	}
	while (atomic_load(&w->bar_gen) == gen) {
		orc_poll(w, cpu);
		sched_yield();
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t total(const struct orc_world *w, enum orc_ckind k)
{
	uint64_t n = atomic_load(&w->glob[k]);

	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
		n += atomic_load(&w->cpus[i].cnt[k]);
	return n;
}

void orc_finish(struct orc_world *w, uint32_t cpu)
{
	struct orc_cpu *c = &w->cpus[cpu];
	double until;

	/* Back to a running CPU in some address space. */
	if (c->estate != TLBPOL_CPU_RUNNING)
		orc_set_state(w, cpu, TLBPOL_CPU_RUNNING);
	if (c->cur < 0)
		orc_switch(w, cpu, c->loaded >= 0 ? c->loaded : (int)(cpu % w->cfg.nr_as));
	orc_barrier(w, cpu);

	/* Nobody changes page tables any more: complete everything. */
	orc_flush(w, cpu, TLBPOL_BY_LAZY);
	orc_barrier(w, cpu);

	/* Every deferred free must have run; tick until they have (a lost one
	 * shows as a count that never matches). */
	until = now_s() + 10.0;
	while (total(w, ORC_C_FREES_RUN) < total(w, ORC_C_FREES_REG) && now_s() < until) {
		orc_tick(w, cpu);
		orc_flush(w, cpu, TLBPOL_BY_LAZY);
		orc_poll(w, cpu);
		sched_yield();
	}
	orc_barrier(w, cpu);

	/* Visit every address space: each visit catches up and scans, so a
	 * stale entry some lazy or away CPU was excused for shows now. */
	for (uint32_t k = 1; k <= w->cfg.nr_as; k++) {
		int x = (int)((cpu + k) % w->cfg.nr_as);

		orc_switch(w, cpu, x);
		orc_spec_walk(w, cpu, (uint32_t)(orc_rand(w, cpu) % w->cfg.pages));
		orc_poll(w, cpu);
	}
	orc_barrier(w, cpu);
}

void orc_read_counters(const struct orc_world *w, uint64_t c[ORC_C_MAX], uint64_t v[ORC_V_MAX])
{
	for (int k = 0; k < ORC_C_MAX; k++)
		c[k] = total(w, (enum orc_ckind)k);
	for (int k = 0; k < ORC_V_MAX; k++)
		v[k] = atomic_load(&w->viol[k]);
	/* Lost frees count as violations. */
	if (c[ORC_C_FREES_RUN] < c[ORC_C_FREES_REG])
		v[ORC_V_FREE] += c[ORC_C_FREES_REG] - c[ORC_C_FREES_RUN];
}

uint64_t orc_violations(const struct orc_world *w)
{
	uint64_t c[ORC_C_MAX], v[ORC_V_MAX], n = 0;

	orc_read_counters(w, c, v);
	for (int k = 0; k < ORC_V_MAX; k++)
		n += v[k];
	return n;
}
