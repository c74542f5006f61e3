/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the engine's private structures, shared by the core's files.
 */
#ifndef TLBPOL_INTERNAL_H
#define TLBPOL_INTERNAL_H

#include <tlbpol/tlbpol.h>

#include "prim.h"

/*
 * Linux errno values.  The core cannot include <errno.h> (a hosted header);
 * lib/hosted/engine_new.c checks that these match the host's.
 */
#define E_NOENT 2
#define E_2BIG 7
#define E_NOMEM 12
#define E_BUSY 16
#define E_EXIST 17
#define E_INVAL 22
#define E_RANGE 34
#define E_NOSPC 28

/* Deferred frees queued per CPU: a caller that frees per batch (as Linux's
 * mmu_gather does, once per flush) keeps one or two queued, one that frees
 * per unmap while lazy work is in flight (LATR; tlbpol-sim lazy-unmap) more
 * than 16; a full queue completes what is pending first (tlbpol_defer_free()),
 * never drops one. */
#define TLBPOL_DFREE_SLOTS 32
/*
 * A CPU's tick count starts at the last value before it wraps, so that the
 * first tick of every run crosses the wrap: Linux starts jiffies five
 * minutes before theirs (INITIAL_JIFFIES, include/linux/jiffies.h) for the
 * same reason, to make wrap bugs show at once rather than after 49 days.
 */
#define TLBPOL_TICKS_INITIAL 0xffffffffu
/*
 * Requests one initiator may have in flight: request 0 is the synchronous one
 * (the initiator waits for it), the others carry lazy work posted without an
 * interrupt, completed as targets tick or switch.
 */
#define TLBPOL_REQS ((uint32_t)TLBPOL__REQS_PER_CPU) /* in the header, for TLBPOL_ENGINE_SIZE() */
#define REQ_SYNC 0
/* struct request's shape. */
#define REQ_LAZY 1u
#define REQ_TABLES 2u
#define REQ_GLOBAL 4u
/* Turns of its wait (after the IPI delay) before an initiator stops relying
 * on its NUMA fan-out leaders and interrupts their nodes itself: about ten
 * times what a running leader takes to take the interrupt and forward it. */
#define TLBPOL_FANOUT_RECHECK 256
/* Requests a receiver claims before it flushes and acknowledges them. */
#define TLBPOL_CLAIM_MAX 64
_Static_assert(TLBPOL_MAX_CPUS * TLBPOL__REQS_PER_CPU <= 65536,
	       "a claim (initiator * TLBPOL_REQS + request) fits struct tlbpol_cpu's 16 bits");
/* enum tlbpol_action: NONE, LOCAL, SHOOTDOWN. */
#define TLBPOL_ACTIONS 3
/* What cnt.decided[][] tells apart of them: NONE (a flush avoided, for
 * tlbpol_stats_read()) or one of the others; nothing reads more. */
#define TLBPOL_COUNTED 2

/* CLOSING: refused like a closed one, not yet reusable (the hosted layer
 * is unpublishing it from lookups, which waits for a grace period). */
enum as_state { AS_FREE = 0, AS_OPEN = 1, AS_CLOSING = 2 };

struct tlbpol_as {
	struct tlbpol_engine *eng; /* owner: a foreign handle is refused */
	uint64_t tag;
	/*
	 * Flush generation (Linux mm->context.tlb_gen, Xen's tlbflush_clock):
	 * every shootdown request that CPUs may catch up on later takes the
	 * next value, after its PTE changes and before its targets are chosen.
	 */
	uint64_t gen;     /* atomic */
	uint32_t state;   /* enum as_state; written under eng->as_lock */
	uint32_t loaded;  /* atomic: CPUs that have it loaded (running or lazy) */
	uint32_t pending; /* atomic: CPUs with deferred work in it (span count > 0) */
	uint32_t index;
	uint64_t *footprint; /* atomic words: CPUs that may cache it */
	/*
	 * atomic words: CPUs that left the footprint in tlbpol_switch() or
	 * tlbpol_unload() and may not have written CR3 yet.  Until then their
	 * MMU may still walk this address space's tables speculatively, so a
	 * request that frees tables targets them too.  A CPU clears its bit at
	 * its next engine call (which follows the CR3 write).
	 */
	uint64_t *leaving;
	/* Then, in the same array (gcover_of()), its global-tag mask. */
	struct tlbpol_tag_id tag_id; /* cfg->tags: its identity to the allocator */
} __attribute__((aligned(TLBPOL_CACHELINE))); /* no two share a line */

/*
 * One deferred event in a CPU's batch, or several merged.  What must be
 * equal for two events to merge is one word (`key`), so that the page after
 * the last one queued, the common case of an unmap walking a range, costs
 * one compare.
 */
struct pending {
	uint64_t va;
	uint64_t seq;      /* order of arrival, for deferred frees */
	uint32_t nr_pages; /* < 2 * TLBPOL_MAX_BATCH_PAGES */
	uint32_t events;   /* submitted events merged into it */
	union {
		struct {
			uint16_t as_index;  /* < TLBPOL_MAX_AS */
			uint8_t page_shift;
			uint8_t deadline;
			/* The event's TLBPOL_EVF_TABLES_FREED (its flush
			 * carries TLBPOL_FLUSHF_TABLES) and TLBPOL_EVF_LAZY_OK
			 * (its addresses are not reused before it completes,
			 * so it spans nothing installs check: struct pending_span). */
			uint8_t ev_flags;
			/* TLBPOL_PTE_GLOBAL of its old or new PTE: FOOTPRINT
			 * cannot narrow it. */
			uint8_t pte_global;
			uint8_t unused;      /* 0 */
			/*
			 * Events of one address space merged into it because the
			 * batch had no entry left (entry_cap of them): va and
			 * page_shift name the first only, and the entry is flushed
			 * as its whole address space.
			 */
			uint8_t wide;
		};
		uint64_t key;
	};
};

/*
 * A pending span: what one CPU has pending in one address space, published
 * for the others: how many batch entries (in its batch or in its lazy
 * requests in flight) and the bytes spanned by those whose addresses may be
 * reused before they complete (not LAZY_OK: its caller promised not to
 * reuse them).  Only the owner writes it; an installing CPU reads it to
 * know whether the address it reuses may still be cached elsewhere.
 * The owner writes the bounds before the count when adding, and zeroes the
 * count before the bounds when the last entry completes, so a reader that
 * sees a count sees bounds covering every entry counted.
 */
struct pending_span {
	uint64_t lo, hi;  /* atomic: first and last byte */
	/*
	 * atomic: the count, and SPAN_GLOBAL if one of them was a global PTE
	 * (span_count(), span_global()): one word, so that the table is 24
	 * bytes a CPU and address space, not 32.  A reader sees both of one
	 * store; the flag goes with the count's last entry.
	 */
	uint32_t count_global;
	/*
	 * atomic: of `count`, the entries still in the owner's batch, not yet
	 * in an armed request.  It drops (release) only after the request
	 * that took them is armed, so a reader that finds it 0 (acquire)
	 * sees every request that carries the rest: when none of those is in
	 * flight either, all of it is complete, however long the owner takes
	 * to notice and release it (submit.c, settle_reused_range()).
	 */
	uint32_t queued;
};

/* struct pending_span's count_global: entries never reach the flag's bit
 * (a CPU holds TLBPOL_REQS requests of at most TLBPOL_MAX_BATCH_PAGES
 * entries, and its batch as many). */
#define SPAN_GLOBAL 0x80000000u
_Static_assert((TLBPOL__REQS_PER_CPU + 1) * TLBPOL_MAX_BATCH_PAGES < SPAN_GLOBAL,
	       "a span's count never reaches SPAN_GLOBAL");

static inline uint32_t span_count(uint32_t count_global)
{
	return count_global & ~SPAN_GLOBAL;
}

static inline uint32_t span_global(uint32_t count_global)
{
	return (count_global & SPAN_GLOBAL) != 0;
}

struct dfree {
	void (*fn)(void *arg);
	void *arg;
	uint64_t after_seq; /* runs once no pending entry has seq <= this */
};

/* One address space's part of a request. */
struct req_flush {
	struct tlbpol_flush f;
	uint64_t gen;      /* the generation this part brings the AS to */
	uint64_t pages;    /* distinct pages named (before escalation) */
	uint32_t as_index;
	uint32_t global;
	uint32_t entries;  /* batch entries it carries (as->pending, span count);
			    * 0 again once they are released (pending.c) */
	uint32_t wide;     /* one of them is wide: a whole-AS flush (struct pending) */
	/* First and last byte of the entries it carries whose addresses may be
	 * reused before they complete (as struct pending_span counts them:
	 * not LAZY_OK; a wide one spans everything), lo > hi if none.  Kept
	 * for the owner's narrowing of its span, pending.c. */
	uint64_t lo, hi;
};

/*
 * A request of one initiator.  The initiator fills it while it is idle
 * (acks == 0), then publishes `targets` and sets its bit in each target's
 * inbox.  A target claims the request by clearing its own bit in `targets`
 * (an atomic RMW, so each target claims once, and the initiator can take back
 * a bit it set for a CPU that went away), reads it, flushes and decrements
 * `acks`.  Nothing is written between publication and the last ack.
 */
struct request {
	uint32_t acks;        /* atomic: claimed-or-not targets still to ack */
	/*
	 * atomic: REQ_LAZY (posted without interrupts), REQ_TABLES and
	 * REQ_GLOBAL (a part's flush has TLBPOL_FLUSHF_TABLES, _GLOBAL): what
	 * decides which targets may be left to catch up (skippable()).  The
	 * owner writes it before it arms the request; a settler on another CPU
	 * reads it while `acks` is not 0 (tlbpol__stamp_settle()).
	 */
	uint32_t shape;
	uint32_t fanout;      /* leaders forward to their node (NUMA_FANOUT) */
	uint32_t nr_flushes;
	/* atomic: a lazy request's number among its initiator's lazy posts
	 * (tlbpol_stamp()), written before `acks` arms it; others read it
	 * while `acks` is not 0, when it cannot change. */
	uint32_t stamp_seq;
	/* owner: a lazy request's initiator's tick count when it was posted,
	 * or last interrupted its unclaimed targets (lazy requests age: see
	 * tlbpol__age_lazy()). */
	uint32_t aged_from;
	uint64_t min_seq;     /* oldest batch entry carried (~0: none) */
	uint64_t *targets;    /* atomic words: targets that have not claimed */
	/* words: the CPU of each remote node that forwards; only in
	 * reqs[REQ_SYNC] with a topology (NULL otherwise: no fan-out) */
	uint64_t *leaders;
	struct req_flush *flushes;
	struct tlbpol_range *ranges;
};

/* TLBPOL_FLUSHF_TABLES or TLBPOL_FLUSHF_GLOBAL: does any part of @s have it? */
static inline int req_any_part(const struct request *s, uint32_t flag)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		if (s->flushes[k].f.flags & flag)
			return 1;
	return 0;
}

/* What decides whom request @s may leave out (struct request's shape). */
static inline uint32_t req_shape(const struct request *s, int lazy)
{
	return (lazy ? REQ_LAZY : 0) | (req_any_part(s, TLBPOL_FLUSHF_TABLES) ? REQ_TABLES : 0) |
	       (req_any_part(s, TLBPOL_FLUSHF_GLOBAL) ? REQ_GLOBAL : 0);
}

/* @in as this release's ops in @out: a caller built against 0.1 or 0.2
 * passed a shorter structure, whose missing hooks are NULL; never read past
 * its size (what lies there is the caller's, not ours). */
static inline void ops_read(struct tlbpol_ops *out, const struct tlbpol_ops *in)
{
	prim_zero(out, sizeof(*out));
	prim_copy(out, in, in->size < sizeof(*out) ? in->size : sizeof(*out));
	out->size = sizeof(*out);
}

/*
 * struct tlbpol_stats less by_reason, which no CPU counts apart: it is
 * derived from cpu_counters.decided[][] when read (tlbpol_stats_read(),
 * which asserts the two layouts).  The same names, so that the core counts
 * into either alike.
 */
struct cpu_stats {
	uint64_t events, flushes_avoided, local_flushes, remote_flushes;
	uint64_t ipis_sent, broadcasts, pages_flushed, full_flushes;
	uint64_t coalesced, gen_skipped, lazy_skipped, deferred_frees;
	/* by_reason[] of struct tlbpol_stats would be here */
	uint64_t aged_flushes, ipis_resent, stuck_calls;
	uint64_t shoot_ipi, shoot_broadcast, shoot_remote;
	uint64_t bcast_syncs, remote_actions, remote_targets, walker_syncs;
};

/* Counters with one writer each: `task` is written by the CPU's own engine
 * calls, `irq` by its tlbpol_handle_ipi(), so an interrupt that lands in the
 * middle of a task-side increment cannot lose either update. */
struct cpu_counters {
	struct cpu_stats task;
	struct cpu_stats irq;
	/*
	 * Decisions submitted, by reason and whether they flush ([r][0]:
	 * TLBPOL_ACT_NONE, [r][1]: LOCAL or SHOOTDOWN): one increment per
	 * tlbpol_submit() where events, by_reason and flushes_avoided took
	 * three.  tlbpol_stats_read() derives those three from it (task's own
	 * copies stay 0).
	 */
	uint64_t decided[TLBPOL_WHY_MAX][TLBPOL_COUNTED];
};

/* What a receiver gathers of one address space across claimed requests. */
struct recv_as {
	uint32_t as_index;
	uint32_t kind;   /* the widest kind asked for */
	uint32_t flags;
	uint32_t global;
	uint32_t nreq;
	uint32_t first;  /* its ranges in recv_ranges, after sorting */
	uint32_t count;
	uint32_t pad;
	uint64_t min_gen, max_gen;
};

struct tlbpol_cpu {
	/* --- read by other CPUs --- */
	uint32_t state;  /* atomic: enum tlbpol_cpu_state */
	uint32_t lazy;   /* atomic: switched to NULL, keeping `loaded` */
	uint32_t polling; /* atomic: in wait_acks(), serving its inbox (RULE_POLLING_CPUS) */
	uint64_t *inbox; /* atomic words: bit i = CPU i may have a request for us */
	struct request reqs[TLBPOL_REQS];

	/* --- this CPU's engine calls only --- */
	struct tlbpol_as *current; /* NULL when idle/lazy */
	struct tlbpol_as *loaded;  /* what the hardware has loaded */
	uint32_t in_call;          /* atomic: a task-side engine call for this CPU runs */
	/*
	 * A catch-up the caller was told to flush for (tlbpol_switch()'s
	 * need_flush, tlbpol_cpu_state()'s 1) but has not yet done: the
	 * generation read, and the address space (index + 1, 0: none).  It is
	 * published in local_gen only at this CPU's next engine call, which
	 * follows that flush: published earlier, initiators and this CPU's own
	 * serves would skip it by generation while it still holds the entries.
	 */
	uint32_t catchup_as;
	/* cfg->tags: the hardware tag `loaded` runs under, and the one the
	 * leaving address space's entries are under until the CR3 write (its
	 * slot may have gone to the address space switched to). */
	uint32_t loaded_tag;
	uint64_t catchup_gen;
	uint32_t leaving_as;       /* index + 1 of the AS whose `leaving` has our bit */
	uint32_t leaving_tag;
	uint32_t busy; /* bit i: reqs[i] armed, not yet reaped (request 0: not yet waited for) */
	uint32_t nr_pending;
	uint32_t pending_pages;
	/*
	 * Ticks this CPU has taken (from TLBPOL_TICKS_INITIAL, so that the
	 * count wraps at the first tick), and, while free_aging is set, the
	 * tick at which BY_WRITEBACK or BY_FREE work began to wait in its
	 * batch.  A flag of its own, not a tick + 1 with 0 for none: that
	 * wrapped to "none" for work queued at tick UINT32_MAX.
	 */
	uint32_t ticks, free_since, free_aging;
	/*
	 * atomic (this CPU writes, initiators read): 1 if this CPU claimed a
	 * request by interrupt and has not since waited for acknowledgements
	 * of its own, polling its inbox.  An initiator's IPI delay pays only
	 * for a CPU that polls (RULE_POLLING_CPUS; shootdown.c,
	 * kick_outside_engine()).
	 */
	uint32_t claims_by_irq;
	/*
	 * A BY_LAZY entry of the batch was not flushed here when it was
	 * submitted (a stamped event without LAZY_OK, or this CPU was outside
	 * the footprint): its lazy request must flush this CPU when posted
	 * (arm()).  Cleared when a drain leaves no BY_LAZY entry (drain.c).
	 */
	uint32_t lazy_unflushed;
	uint32_t stamp_next;       /* the stamp_seq of its last lazy request */
	/* An event with TLBPOL_EVF_STAMP was submitted since the last
	 * tlbpol_stamp(): one that finds none was made on the wrong CPU. */
	uint32_t stamp_owed;
	/* Read-only after init, by the receiving side too: */
	uint32_t flush_cap;        /* entries in reqs[REQ_SYNC].flushes[] and in recv_as[] */
	uint32_t range_cap;        /* entries in reqs[REQ_SYNC].ranges[] */
	uint32_t entry_cap;        /* entries in pending[] (tlbpol__entry_cap()) */
	/* The lazy requests' flushes[] and ranges[] (TLBPOL__LAZY_PARTS(),
	 * TLBPOL__LAZY_RANGES()): never more than the synchronous one's, so a
	 * receiver's round, sized by those, takes any request. */
	uint32_t lazy_flush_cap, lazy_range_cap;
	/* Entries in recv_ranges[] (TLBPOL__RECV_RANGES()): fewer than a
	 * request may carry, in which case the parts past them are flushed
	 * whole (recv_add()). */
	uint32_t recv_cap;
	uint64_t next_seq;
	struct pending *pending;   /* entry_cap entries (enqueue() widens past them) */
	/*
	 * The decision of this CPU's last submit that was classified
	 * (tlbpol_submit(), but for its spurious fast path), with what it
	 * depends on: a decision is a function of the engine's
	 * arch, the rules in force and these fields of the event alone
	 * (classify(), the verdicts of those rules, lazy_deadline()), so an
	 * event that matches them all has this decision, packed, and is as
	 * valid.  rules == ~0 (never a valid mask): nothing cached.
	 */
	struct {
		uint64_t rules;
		uint32_t kind, flags, old_pte, new_pte;
		uint32_t packed;
		uint32_t pad;
	} last;
	struct dfree dfree[TLBPOL_DFREE_SLOTS];
	uint32_t dfree_head, dfree_count;
	uint8_t *as_slot;          /* scratch: as index -> flush index + 1 (<= flush_cap) */
	struct tlbpol_cpuset targets; /* scratch for send_ipi */
	/* scratch words: nodes whose leader went away (NUMA fan-out only:
	 * NULL without a topology) */
	uint64_t *direct;
	struct tlbpol_cpuset fwd_wait; /* scratch: targets a leader did not reach */

	/* --- this CPU's tlbpol_handle_ipi() only --- */
	uint32_t in_serve;         /* atomic: nesting guard */
	uint32_t nr_claims;
	uint16_t claims[TLBPOL_CLAIM_MAX]; /* initiator * TLBPOL_REQS + request */
	uint8_t *recv_slot;        /* as index -> recv_as index + 1 (<= flush_cap) */
	struct recv_as *recv_as;   /* flush_cap entries: a round ends when full */
	/*
	 * recv_cap entries: the round's ranges, each with its recv_as index
	 * in `pad` until they are sorted; then each address space's run is
	 * merged in place and handed to flush_local (pad 0 again).
	 */
	struct tlbpol_range *recv_ranges;
	/* scratch for NUMA forwarding: only with a topology (NULL without) */
	struct tlbpol_cpuset *fwd;

	struct cpu_counters cnt;
} __attribute__((aligned(TLBPOL_CACHELINE)));

#define TLBPOL_CLASSES 24 /* enum event_class (decide.h) */

/*
 * What can change while the engine runs (the hosted layer's
 * tlbpol_engine_set_*()): a block replaced as a whole through eng->params,
 * never modified in place, so one call that reads it once sees one
 * consistent configuration.  The hosted layer frees a replaced block after
 * an RCU grace period.
 */
/* Which broadcast an engine uses (tlbpol__bcast_mode()). */
enum { BCAST_NONE = 0, BCAST_SYNC = 1, BCAST_SPLIT = 2 };

struct tlbpol_params {
	uint64_t rules; /* in force: configured less what arch/ops cannot use */
	uint64_t rules_configured;
	uint32_t flush_ceiling;
	uint32_t batch_pages; /* <= eng->batch_cap */
	uint32_t cost_ipi, cost_ipi_target, cost_ipi_remote, cost_bcast, cost_bcast_page;
	uint32_t ipi_delay_spins;
	uint32_t bcast_max_pages; /* pages one broadcast instruction names, >= 1 */
	/* ops->remote_action's model (TLBPOL_MECH_REMOTE): fixed, per target,
	 * per payload of remote_max_pages pages */
	uint32_t cost_remote, cost_remote_target, cost_remote_page, remote_max_pages;
	/*
	 * The decision table's cell for each event class under `rules` and the
	 * engine's arch, packed (decision_pack()), so that a decision
	 * is one load: set with `rules` by tlbpol__params_set_rules(), never
	 * apart from it.
	 */
	uint32_t verdict[TLBPOL_CLASSES];
};

struct tlbpol_engine {
	uint32_t magic;
	uint32_t nr_cpus;
	uint32_t arch;
	uint32_t max_as;
	struct tlbpol_params *params; /* atomic: the current block */
	uint32_t batch_cap;   /* batch_pages the per-CPU arrays were sized for */
	uint32_t words; /* uint64_t words in a CPU bitmap */
	uint32_t as_lock;
	uint32_t flags; /* TLBPOL_CFGF_* */
	uint32_t nr_nodes;
	uint32_t cpu_stride;  /* bytes from one struct tlbpol_cpu to the next */
	struct tlbpol_ops ops;
	void *ops_ctx;
	uint16_t *cpu_node;   /* copy of cfg->cpu_node, or NULL */
	uint64_t *node_mask;  /* nr_nodes bitmaps of `words` words */
	uint64_t *local_gen;  /* [cpu * max_as + as]: generation cpu has flushed to */
	uint32_t global_pending; /* atomic: spans holding a global PTE's entry */
	uint32_t wait_limit;  /* cfg->wait_limit: the watchdog's period, 0: none */
	uint32_t free_ticks;  /* cfg->free_ticks, the default for 0 */
	uint32_t bcast;       /* BCAST_*: the broadcast in use (backend.c) */
	uint32_t bcast_flags; /* its TLBPOL_BKF_* */
	uint32_t remote;      /* ops->remote_action in use (backend.c) */
	uint32_t remote_flags; /* its TLBPOL_BKF_* */
	struct tlbpol_tags *tags; /* cfg->tags, or NULL */
	uint32_t tags_percpu;     /* ... of TLBPOL_TAGS_PERCPU */
	struct pending_span *spans;  /* [cpu * max_as + as] */
	struct tlbpol_cpu *cpus;
	struct tlbpol_as *as;
	struct tlbpol_params params0; /* the block the engine starts with */
	/* Hooks for the hosted layer (NULL in a freestanding engine). */
	void (*quiescent)(void);      /* after tlbpol_tick() and tlbpol_switch() */
	void (*as_changed)(struct tlbpol_engine *eng, struct tlbpol_as *as, int open);
	void *hosted;
};

static inline struct tlbpol_cpu *cpu_of(const struct tlbpol_engine *eng, uint32_t cpu)
{
	return (struct tlbpol_cpu *)((char *)eng->cpus + (size_t)cpu * eng->cpu_stride);
}

/*
 * The configuration in force.  Read once, where an engine call enters, and
 * passed down as @prm to everything the call does: the reconfiguration
 * contract (the public header) is that one call sees one configuration,
 * so a shootdown never chooses its targets under one rule mask and skips
 * them under another.
 */
static inline const struct tlbpol_params *params_of(const struct tlbpol_engine *eng)
{
	return prim_load_acquire(&eng->params);
}

#define TLBPOL_MAGIC 0x746c6270u /* "tlbp" */

/*
 * A structure the caller passed with @size bytes, of which this release
 * knows @known: may the bytes past them be ignored?  Only when they are
 * all zero (a newer caller left the fields it knows of unset); a field set
 * there is one this release would silently ignore -- a flag the caller
 * relies on, say -- so the call fails with -E2BIG instead.  As Linux's
 * copy_struct_from_user() (include/linux/uaccess.h) and libbpf's
 * OPTS_VALID() do.  Past a page the size is taken for garbage and not read,
 * as the kernel's bpf_check_uarg_tail_zero() refuses it.
 */
#define TLBPOL_STRUCT_MAX 4096u

static inline int tail_zero(const void *p, uint32_t size, uint32_t known)
{
	const unsigned char *b = (const unsigned char *)p;

	if (size > TLBPOL_STRUCT_MAX)
		return 0;
	for (uint32_t i = known; i < size; i++)
		if (b[i])
			return 0;
	return 1;
}

/* Last byte (inclusive) of @nr pages of 1 << @shift from @va: validated
 * events never wrap, but may end exactly at 2^64. */
static inline uint64_t range_last(uint64_t va, uint64_t nr, uint32_t shift)
{
	return va + ((nr - 1) << shift) + ((1ULL << shift) - 1);
}

/*
 * hull_widen(): [*lo, *hi] grown to take [@first, @last] in.
 * tlbpol__hull_add(): grown by the addresses of batch entry @p that an
 * install may reuse before it completes: none for LAZY_OK (its caller
 * promised not to), the whole address space for a wide entry (its va names
 * the first of the events merged into it only).
 */
static inline void hull_widen(uint64_t *lo, uint64_t *hi, uint64_t first, uint64_t last)
{
	if (first < *lo)
		*lo = first;
	if (last > *hi)
		*hi = last;
}

static inline void tlbpol__hull_add(const struct pending *p, uint64_t *lo, uint64_t *hi)
{
	if (p->ev_flags & TLBPOL_EVF_LAZY_OK)
		return;
	if (p->wide)
		hull_widen(lo, hi, 0, ~0ULL);
	else
		hull_widen(lo, hi, p->va, range_last(p->va, p->nr_pages, p->page_shift));
}

/* Do [@lo, @hi] and [@first, @last] share a byte?  (lo > hi: empty.) */
static inline int hull_meets(uint64_t lo, uint64_t hi, uint64_t first, uint64_t last)
{
	return lo <= last && first <= hi;
}

/* Account a flush this CPU performed in @s. */
static inline void count_flush(struct cpu_stats *s, const struct tlbpol_flush *f)
{
	if (f->kind == TLBPOL_FLUSH_PAGES) {
		uint64_t pages = 0;

		for (uint32_t i = 0; i < f->nr_ranges; i++)
			pages += f->ranges[i].nr_pages;
		prim_count(&s->pages_flushed, pages);
	} else {
		prim_count(&s->full_flushes, 1);
	}
}

static inline int bitmap_test(const uint64_t *w, uint32_t bit)
{
	return (prim_load_relaxed(&w[bit / 64]) >> (bit % 64)) & 1;
}

static inline struct pending_span *span_of(const struct tlbpol_engine *eng, uint32_t cpu,
					   uint32_t as)
{
	return &eng->spans[(size_t)cpu * eng->max_as + as];
}

static inline uint64_t *local_gen_of(const struct tlbpol_engine *eng, uint32_t cpu, uint32_t as)
{
	return &eng->local_gen[(size_t)cpu * eng->max_as + as];
}

/*
 * Raise a single-writer generation, after the flush it records; an
 * interrupt that raised it meanwhile wins (a lower value is only ever
 * conservative).  Release: it pairs with the acquire in flushed_gen(), so an
 * initiator that skips this CPU by generation, and then frees what the
 * flush covered, is ordered after the flush (on Arm the DSB that ends the
 * flush orders the TLBI before the store, and the acquire orders the free
 * after the load; x86 needs neither, and the two compile to plain moves).
 */
static inline void gen_raise(uint64_t *g, uint64_t v)
{
	if (prim_load_relaxed(g) < v)
		prim_store_release(g, v);
}

static inline uint64_t flushed_gen(const struct tlbpol_engine *eng, uint32_t cpu, uint32_t as)
{
	return prim_load_acquire(&eng->local_gen[(size_t)cpu * eng->max_as + as]);
}

/* The next CPU in @t after @cpu (-1 to start), looking only at the first
 * @words words: the engine's sets never have bits beyond nr_cpus. */
static inline int set_next(const struct tlbpol_cpuset *t, uint32_t words, int cpu)
{
	uint32_t start = (uint32_t)(cpu + 1), w = start / 64;
	uint64_t bits;

	if (w >= words)
		return -1;
	bits = t->bits[w] & (~0ULL << (start % 64));
	while (!bits) {
		if (++w >= words)
			return -1;
		bits = t->bits[w];
	}
	return (int)(w * 64 + prim_ctz64(bits));
}

/*
 * cfg->tags with per-CPU slots and global tags: @as's atomic words of the
 * CPUs that loaded it under its global tag since it got one, so that they
 * hold its reachable entries only there and a broadcast by that tag
 * reaches them (set at their switch, never cleared while it keeps the
 * tag; an address space opened in the slot starts with none).  After its
 * footprint and leaving masks (TLBPOL__AS_ARRAYS()).
 */
static inline uint64_t *gcover_of(const struct tlbpol_engine *eng, const struct tlbpol_as *as)
{
	return as->footprint + 2 * eng->words;
}

#define for_each_target(i, t, eng)                                             \
	for (int i = set_next((t), (eng)->words, -1); i >= 0;                   \
	     i = set_next((t), (eng)->words, i))

/*
 * May the event's pages be cached as global entries?  If the old PTE was
 * global (its entries outlive CR3 writes), and also if the new one is: an
 * install of a global page where invalid entries are cached (GENERIC) must
 * reach those cached under any tag.
 */
static inline uint32_t tlbpol__event_global(const struct tlbpol_event *ev)
{
	return ((ev->old_pte | ev->new_pte) & TLBPOL_PTE_GLOBAL) != 0;
}

/* @cpu's NUMA node (0 without a topology). */
static inline uint32_t node_of(const struct tlbpol_engine *eng, uint32_t cpu)
{
	return eng->cpu_node ? eng->cpu_node[cpu] : 0;
}

/* A CPU that is not using user addresses (Linux lazy TLB mode). */
static inline int cpu_is_lazy(const struct tlbpol_engine *eng, uint32_t cpu)
{
	return prim_load_seqcst(&cpu_of(eng, cpu)->lazy) ||
	       prim_load_seqcst(&cpu_of(eng, cpu)->state) == TLBPOL_CPU_IDLE;
}

/* Is reqs[@i] armed and not yet reaped (or, request 0, waited for)? */
static inline int req_busy(const struct tlbpol_cpu *c, uint32_t i)
{
	return (c->busy >> i) & 1;
}

/* Does @c have lazy requests in flight (armed, not yet reaped)?  One word,
 * not a flag in each request: the reap and the aging ask at every tick and
 * every submit that acts, and the requests are four more cache lines. */
static inline int lazy_in_flight(const struct tlbpol_cpu *c)
{
	return (c->busy & ~(1u << REQ_SYNC)) != 0;
}

/* The functions the core's files offer each other, layer by layer. */
#include "layers.h"

#endif /* TLBPOL_INTERNAL_H */
