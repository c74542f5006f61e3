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
 * tests check that these match the host's.
 */
#define E_NOMEM 12
#define E_BUSY 16
#define E_EXIST 17
#define E_INVAL 22
#define E_RANGE 34

#define TLBPOL_DFREE_SLOTS 64 /* deferred frees queued per CPU */

enum as_state { AS_FREE = 0, AS_OPEN = 1 };

struct tlbpol_as {
	struct tlbpol_engine *eng; /* owner: a foreign handle is refused */
	uint64_t tag;
	uint32_t state;   /* enum as_state; written under eng->as_lock */
	uint32_t running; /* atomic: CPUs whose current AS this is */
	uint32_t pending; /* atomic: deferred entries that name it */
	uint32_t index;
	uint64_t *footprint; /* atomic words: CPUs that may cache it */
};

/* One deferred event in a CPU's batch. */
struct pending {
	uint64_t va;
	uint64_t nr_pages;
	uint64_t seq; /* order of arrival, for deferred frees */
	uint32_t as_index;
	uint8_t page_shift;
	uint8_t deadline;
	uint8_t flush_flags; /* TLBPOL_FLUSHF_* */
	uint8_t global;      /* old PTE was global: FOOTPRINT cannot narrow it */
};

/* What the batch builder knows of one address space's flush. */
struct flush_meta {
	uint64_t pages;
	uint32_t as_index;
	uint32_t global;
};

struct dfree {
	void (*fn)(void *arg);
	void *arg;
	uint64_t after_seq; /* runs once no pending entry has seq <= this */
};

/*
 * A shootdown request of one initiator.  It lives in the initiator's per-CPU
 * state and is read by targets between the set of their inbox bit and their
 * acknowledgement; the initiator does not touch it until `acks` reaches zero,
 * so no lock protects it.
 */
struct request {
	uint32_t nr_flushes;
	uint32_t pad;
	struct tlbpol_flush *flushes; /* one per address space */
	struct tlbpol_range *ranges;  /* backing store of flushes[].ranges */
};

/* Counters with one writer each: `task` is written by the CPU's own engine
 * calls, `irq` by its tlbpol_handle_ipi(), so an interrupt that lands in the
 * middle of a task-side increment cannot lose either update. */
struct cpu_counters {
	struct tlbpol_stats task;
	struct tlbpol_stats irq;
};

struct tlbpol_cpu {
	/* --- read by other CPUs --- */
	uint32_t state;  /* atomic: enum tlbpol_cpu_state */
	uint32_t acks;   /* atomic: targets that still owe this CPU an ack */
	uint64_t *inbox; /* atomic words: bit i = CPU i has a request for us */
	struct request req;

	/* --- this CPU only --- */
	struct tlbpol_as *current;
	uint32_t need_full_flush; /* came back from OFFLINE: flush ALL at next switch */
	uint32_t nr_pending;
	uint32_t pending_pages;
	uint64_t next_seq;
	struct pending *pending; /* batch_pages entries */
	struct dfree dfree[TLBPOL_DFREE_SLOTS];
	uint32_t dfree_head, dfree_count;
	struct tlbpol_cpuset targets; /* scratch for send_ipi */
	uint32_t *as_slot;            /* scratch: as index -> flush slot + 1 */
	struct flush_meta *meta;      /* scratch: one per req.flushes[] */
	uint32_t flush_cap;           /* entries in req.flushes[] and meta[] */

	struct cpu_counters cnt;
} __attribute__((aligned(TLBPOL_CACHELINE)));

struct tlbpol_engine {
	uint32_t magic;
	uint32_t nr_cpus;
	uint32_t arch;
	uint32_t max_as;
	uint64_t rules; /* in force: configured less what arch/ops cannot use */
	uint64_t rules_configured;
	uint32_t flush_ceiling;
	uint32_t batch_pages;
	uint32_t words; /* uint64_t words in a CPU bitmap */
	uint32_t as_lock;
	struct tlbpol_ops ops;
	void *ops_ctx;
	uint16_t *cpu_node; /* copy of cfg->cpu_node, or NULL */
	struct tlbpol_cpu *cpus;
	struct tlbpol_as *as;
};

#define TLBPOL_MAGIC 0x746c6270u /* "tlbp" */

/* decide.c */
int tlbpol__validate_event(const struct tlbpol_engine *eng, const struct tlbpol_event *ev);
void tlbpol__decide(const struct tlbpol_engine *eng, const struct tlbpol_event *ev,
		    struct tlbpol_decision *out);

/* engine.c */
int tlbpol__config_check(const struct tlbpol_config *cfg);
int tlbpol__as_valid(const struct tlbpol_engine *eng, const struct tlbpol_as *as);
void tlbpol__run_dfrees(struct tlbpol_engine *eng, struct tlbpol_cpu *c);

/* shootdown.c */
int tlbpol__serve(struct tlbpol_engine *eng, uint32_t cpu);
/* Complete the pending entries of @cpu with from <= deadline <= to; then run
 * the deferred frees that became due.  Returns the entries completed. */
int tlbpol__flush_batch(struct tlbpol_engine *eng, uint32_t cpu, uint32_t from, uint32_t to);

static inline int bitmap_test(const uint64_t *w, uint32_t bit)
{
	return (prim_load_relaxed(&w[bit / 64]) >> (bit % 64)) & 1;
}

#endif /* TLBPOL_INTERNAL_H */
