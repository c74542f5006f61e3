/* SPDX-License-Identifier: MIT */
/*
 * sim.h - tlbpol-sim: the real engine driven through its callbacks on a
 * modelled machine.  Each CPU has a clock, a modelled TLB, a run queue of
 * threads and a coroutine of its own (clock.c): the CPU whose next event is
 * earliest in modelled time always runs, so every CPU works at once, a CPU
 * waiting for acknowledgements lets the others run (and start shootdowns of
 * their own), and interrupts land in the middle of what their target does.
 *
 * The files, top to bottom (calls go down only):
 *   main.c options.c report.c  the front end (frontend.h)
 *   wl_linux.c wl_bench.c      the scenarios (workloads.h), hypervisor.c's,
 *   hypervisor.c workloads.c   ... and what they share, the list of them
 *   trace.c trace_load.c       trace replay, and reading a trace (trace.h)
 *   sched.c                    threads: run queues, blocking, idle, the run loop
 *   actions.c                  the workload actions: accesses, PTE changes,
 *                              flushes, deferred frees (machine.h)
 *   machine.c frames.c         the engine's callbacks, set-up, switches;
 *                              --stamps' free frames
 *   clock.c                    modelled time: coroutines, interrupts in flight
 *   oracle.c tlb.c cost.c      page tables and the checks; TLBs; costs
 *   tags.c                     --tags: the tag allocator, each CPU's tags
 */
#ifndef TLBPOL_SIM_H
#define TLBPOL_SIM_H

#include <stdint.h>
#include <stdio.h>

#include <tlbpol/tlbpol.h>

#include "cost.h"

#define SIM_P TLBPOL_PTE_PRESENT
#define SIM_W TLBPOL_PTE_WRITE
#define SIM_X TLBPOL_PTE_EXEC
#define SIM_U TLBPOL_PTE_USER
#define SIM_A TLBPOL_PTE_ACCESSED
#define SIM_D TLBPOL_PTE_DIRTY

/* --- the modelled TLB: two levels, set-associative, LRU, ASID-tagged --- */

struct tlb_entry {
	uint64_t vpn;
	uint32_t frame;
	uint32_t version; /* the PTE's version when it was filled */
	uint32_t asgen;   /* the (CPU, ASID) flush generation when it was filled */
	uint32_t lru;
	uint16_t asid;    /* the hardware tag it was filled under (its key) */
	uint16_t owner;   /* the address space whose PTE filled it: with --tags
			   * a tag serves many in turn, and a hit on another's
			   * entry is a tag reused without its flush */
	uint8_t perms;
	uint8_t state; /* TLB_FREE, TLB_VALID, TLB_FLUSHED */
};

enum { TLB_FREE, TLB_VALID, TLB_FLUSHED };

struct tlb_level {
	uint32_t sets, ways;
	struct tlb_entry *e;
};

struct sim_tlb {
	struct tlb_level l1, l2;
	uint32_t *asgen; /* per tag: bumped by a flush of the tag (an address space) */
	uint32_t allgen; /* bumped by a flush of everything */
	uint32_t clock;  /* LRU */
};

/* --- page tables and frames --- */

struct sim_page {
	uint32_t frame;
	uint32_t version;
	uint64_t holders;  /* CPU buckets (cpu % 64) that filled this version */
	uint64_t suspects; /* buckets that may hold an older version */
	uint32_t unflushed; /* changes whose flush has not been reported complete */
	uint8_t perms;     /* TLBPOL_PTE_* */
	uint8_t pad;
	uint16_t inflight; /* ... of those, the ones an engine call on some CPU is
			    * completing right now (it waits for acknowledgements) */
};

/* Page tables in chunks of 512 PTEs, allocated when first set: address
 * spaces of replayed traces are sparse. */
#define SIM_CHUNK 512
struct sim_as {
	struct tlbpol_as *as;
	uint64_t base_vpn;
	uint64_t nchunks;
	struct sim_page **chunks;
	uint64_t recent[64]; /* --probe: pages installed lately, for other CPUs to read */
	uint32_t nrecent;
	int dead; /* --tags: its process is gone; closed once no CPU has it loaded */
};

enum sim_cpu_mode { MODE_RUN, MODE_IDLE, MODE_PREEMPTED };

/* A modelled thread (sched.c). */
enum sim_thread_state { TH_RUNNABLE, TH_RUNNING, TH_BLOCKED, TH_DONE };

struct sim_thread {
	uint32_t id;
	int32_t as;       /* its address space */
	uint32_t cpu;     /* the CPU whose run queue (or timer) holds it */
	uint32_t state;   /* enum sim_thread_state */
	int pinned;       /* never moved to another CPU */
	double wake_at;   /* TH_BLOCKED: when it becomes runnable */
	struct sim_thread *rq_next; /* run queue, or the CPU's blocked list */
	void *w;          /* the workload's per-thread state */
	uint32_t tag;     /* the workload's number for it (trace: its trace thread) */
};

struct sim;

struct sim_cpu {
	struct sim *sim;
	double clock;
	double key;      /* clock.c: when this CPU next has something to do */
	void *co;        /* clock.c: its coroutine */
	uint64_t turns;  /* wait turns (ops->relax) of the engine call in progress */
	double wait_t0;  /* when that wait began */
	uint64_t seen_epoch;
	struct sim_thread *cur;            /* sched.c: running thread, or NULL */
	struct sim_thread *rq_head, *rq_tail; /* runnable, waiting for this CPU */
	struct sim_thread *blocked;        /* blocked here, woken by this CPU's timer */
	uint32_t nr_queued;
	double next_wake;  /* earliest wake_at on the blocked list, or INFINITY */
	double slice_start;
	uint32_t dispatched; /* threads it has started running */
	int final_done;
	struct sim_tlb tlb;
	int32_t as;      /* running address space, -1 none */
	int32_t loaded;  /* what the hardware has loaded (lazy keeps it) */
	uint16_t tag;    /* --tags: the hardware tag @loaded runs under */
	uint32_t mode;
	uint32_t heap_pos;
	double irq_at;   /* pending interrupt delivery time, < 0 none */
	double next_tick;
	double run_until, resume_at; /* vCPU schedule */
	uint64_t rng;
	uint64_t ops;
	uint32_t cause;  /* enum sim_cause of its latest change: its IPIs count there */
	void *pend;      /* changes whose completion is awaited (actions.c) */
	void *frames;    /* --stamps: its free frames and those its unmap cleared (frames.c) */
	void *w;         /* workload's per-CPU state */
};

/* What an interrupt was sent for: the kind of change being flushed (exit:
 * an address space torn down at exit or exec, its tables freed; forward:
 * sent on by a handler, NUMA fan-out; other: from a tick; install: a page
 * installed where deferred flushes were pending, which completes them
 * first, Linux's flush_tlb_batched_pending(): the unmap's or the
 * reclaim's flush, paid at the reuse; fault: a fault that changed a
 * present PTE, a copy-on-write break). */
enum sim_cause { CAUSE_MUNMAP, CAUSE_DONTNEED, CAUSE_MPROTECT, CAUSE_MREMAP, CAUSE_FAULT,
		 CAUSE_RECLAIM, CAUSE_EXIT, CAUSE_FORWARD, CAUSE_OTHER, CAUSE_INSTALL,
		 SIM_NR_CAUSES };
extern const char *const sim_cause_names[SIM_NR_CAUSES];

struct sim_counters {
	uint64_t irq_by_cause[SIM_NR_CAUSES];
	uint64_t irq_sent, irq_received, local_flushes, pages_flushed, full_flushes;
	uint64_t tlb_misses, flush_misses, violations, broadcasts;
	double busy_ns; /* workload-specific time measured (e.g. munmap latency) */
	uint64_t busy_ops;
	/* --stamps: frames handed out (new or reused), reused with a stamp
	 * still to settle, settles that had to interrupt or wait, and the
	 * modelled time each settle took (every one, for percentiles). */
	uint64_t frame_allocs, frame_reuses, settles;
	/* --stamp-spare: allocations that took a spare frame because every
	 * one looked at was still pending, and the most frames the free lists
	 * held at once (what they held back, pending or not). */
	uint64_t spare_allocs, free_frames, free_frames_peak;
	/* trace: munmaps never stamped, guard holes and MAP_FIXED replacements
	 * (trace.c: unstamped()). */
	uint64_t guard_unmaps;
	/* Pages whose frames wait in deferred frees (tlbpol_defer_free()):
	 * now, and the most at once (memory LAZY_OK holds back). */
	uint64_t dfree_pages, dfree_pages_peak;
	double settle_p50, settle_p99, wait_p50, wait_p99; /* sim_settle_percentiles() */
	/* Trace replay: whether the trace has fault records (version 3), and
	 * how many of each it replayed (read, write, cow: enum tfault). */
	int faults_recorded;
	uint64_t faults[3];
	/* --tags: the allocator's counters at the end (tlbpol_tags_stats):
	 * tag loads, loads that flushed the tag, that flushed everything (a
	 * rollover's), rollovers; and a hit on an entry another address
	 * space filled under the same tag (also a violation). */
	uint64_t tag_loads, tag_flushes, tag_all_flushes, tag_rollovers, tag_foreign_hits;
	uint64_t tag_moves; /* ops->load_tag: moves onto a global tag from an interrupt */
	uint64_t as_reopened; /* --tags: address spaces closed and opened anew (sim_as_dead()) */
};

/* The flush mechanisms of --backend (backends.c). */
enum sim_backend {
	SIM_BK_DEFAULT = 0, /* --broadcast, --hypercall and the scenario say */
	SIM_BK_IPI,
	SIM_BK_INVLPGB,
	SIM_BK_TLBI,
	SIM_BK_HYPERCALL,
	SIM_BK_RAR,
	SIM_BK_SBI,
	SIM_BK_MAX
};

struct sim_config {
	uint32_t ncpus, nnodes;
	const uint16_t *topology; /* node of each CPU, or NULL: blocks of CPUs */
	uint32_t arch;
	uint64_t rules;
	uint32_t l1_entries, l1_ways, l2_entries, l2_ways;
	int broadcast; /* give the engine ops->broadcast */
	int hypercall; /* ... implemented as a flush hypercall */
	int backend;   /* enum sim_backend (--backend): overrides the two above */
	int fixed;     /* ... the engine always broadcasts by it (backends.c) */
	int vm;        /* guest: IPIs cost vm_ipi_factor more */
	uint32_t overcommit; /* vcpu scenario: vCPUs per physical CPU */
	uint64_t events;  /* workload size (scenario-defined unit) */
	uint64_t seed;
	uint32_t free_ticks; /* cfg.free_ticks of the engine (0: its default) */
	int64_t ipi_delay_spins; /* the engine's; < 0: an IPI round trip over one wait turn */
	double trace_compute_scale; /* trace replay: recorded computation times this */
	double trace_cpu_ns; /* > 0: ... scaled to add up to this (the program's CPU time) */
	uint32_t threads; /* dontneed: its threads (0: one per CPU) */
	uint32_t pages;   /* dontneed: pages per operation (0: 16) */
	double block_ns;  /* dontneed: each thread blocks this long after each operation */
	int probe;        /* after each step a CPU reads a page installed lately (checking) */
	int pcid;         /* switches keep the old address space's entries (RETAIN_AS) */
	int wait_irqs;    /* waits are served only by interrupts (CFGF_WAIT_IRQS) */
	int stamps;       /* private unmaps are stamped; freed frames are reused at once */
	/* What the command line asked: -1 (neither --stamps nor --no-stamps)
	 * stamps exactly the policies whose mask has TLBPOL_RULE_FLUSH_STAMP,
	 * with a kernel's allocator (lookahead 64, spare frames); 1 every
	 * policy, as given; 0 none.  run_one() (main.c) sets @stamps from it. */
	int stamps_mode;
	int stamp_lookahead_given; /* --stamp-lookahead was on the command line */
	uint32_t stamp_lookahead; /* ... the allocator prefers a settled one of this many */
	int stamp_spare;  /* ... and takes a spare frame rather than settle one */
	int quiet;
	/* --tags (tags.c): the engine takes its address spaces' hardware
	 * tags from an allocator; kind TLBPOL_TAGS_*, 0 bits: off. */
	struct sim_tags_config {
		uint32_t kind, bits, slots, nr_global, global_min_cpus;
	} tags;
	struct sim_cost cost;
};

#define SIM_MAX_AS 64

struct workload {
	const char *name;
	const char *what;
	const char *commit;    /* the Linux commit it reproduces, or "-" */
	uint32_t arch;
	uint64_t before_rule;  /* the rule that commit added, which "before" switches off (0: none) */
	uint64_t default_events;
	int broadcast, vm;
	const char *metric;    /* what busy_ns / busy_ops measures */
	int (*setup)(struct sim *s);
	int (*step)(struct sim *s, uint32_t cpu); /* 0: this CPU is done */
	void (*finish)(struct sim *s);
};

struct sim {
	struct sim_config cfg;
	const struct workload *wl;
	struct tlbpol_engine *eng;
	struct sim_cpu *cpus;
	uint32_t *heap;
	uint32_t heap_n;
	uint32_t nas;
	struct sim_as as[SIM_MAX_AS];
	uint32_t next_frame;
	uint16_t *node;
	uint32_t running;   /* clock.c: the CPU whose coroutine runs; UINT32_MAX: none */
	uint64_t epoch;     /* bumped by every engine call and interrupt: waiters re-poll */
	int final;          /* sched.c: every thread is done; complete what is pending */
	uint32_t ipi_delay_spins; /* as given to the engine */
	double wait_limit_ns; /* a longer wait for acknowledgements is STUCK */
	struct sim_thread **threads;
	uint32_t nthreads, threads_cap;
	struct sim_counters cnt;
	uint64_t events_done;
	const char *trace_path;
	struct tlbpol_ops ops;  /* what the engine was given (machine.c, backends.c) */
	struct tlbpol_backend bk_desc[2];
	const struct tlbpol_backend *bk_descs[2];
	void *trace;        /* the replayed trace */
	void *frames;       /* --stamps: the free frames past the per-CPU lists (frames.c) */
	struct tlbpol_tags *tags; /* --tags: the allocator (tags.c), or NULL */
	void *tags_mem;
	uint32_t nkeys;     /* tags a TLB can hold: address spaces, or hardware tags */
	int planted_tag_no_flush; /* tags.c: TLBPOL_SIM_PLANTED=tag-no-flush */
	char error[256];
};

/* backends.c: --backend's name and number (-1: unknown), and the ops and
 * descriptors it gives the engine @ec (s->ops' flush_local, send_ipi and
 * relax are set already). */
const char *sim_backend_name(int bk);
int sim_backend_parse(const char *v);
void sim_backend_setup(struct sim *s, struct tlbpol_config *ec);

/* tags.c: --tags.  Parse "percpu:SLOTS[+GLOBAL[@MIN]]" or "global:BITS"
 * into @t (-1: not one); build the allocator for the engine @ec (0, or -1
 * with s->error said); the tag under which @cpu holds @as's entries (the
 * TLB's key: @as itself without tags); the allocator's counters into
 * s->cnt; a line saying what --tags is. */
int sim_tags_parse(const char *v, struct sim_tags_config *t);
int sim_tags_setup(struct sim *s, struct tlbpol_config *ec);
void sim_tags_fini(struct sim *s);
uint16_t sim_tag_key(const struct sim *s, uint32_t cpu, uint32_t as);
void sim_tags_collect(struct sim *s);
void sim_tags_describe(const struct sim_tags_config *t, char *buf, size_t len);

/* clock.c: modelled time.  Only a CPU's own coroutine calls these for it. */
int clock_init(struct sim *s, void (*cpu_main)(struct sim *s, uint32_t cpu));
void clock_fini(struct sim *s);
/* Run every CPU until none has anything left to do (all keys infinite). */
void clock_run(struct sim *s);
/* @ns of computation: interrupts (and timers) landing in it are served at
 * their time and lengthen it by what they cost. */
void sim_charge(struct sim *s, uint32_t cpu, double ns);
/* Sleep (idle, blocked) until @t or until woken earlier (sim_kick); serve
 * what lands meanwhile. */
void sim_sleep_until(struct sim *s, uint32_t cpu, double t);
/* A step's end: let every CPU whose time is earlier run first. */
void sim_yield(struct sim *s, uint32_t cpu);
/* One turn of a wait for acknowledgements (ops->relax). */
void clock_relax(struct sim *s, uint32_t cpu);
/* Post an interrupt to @cpu, to arrive at @at (coalesced: one pending). */
void clock_post_irq(struct sim *s, uint32_t cpu, double at);
/* Make sleeping @cpu look again at @at (a wake-up from another CPU). */
void sim_kick(struct sim *s, uint32_t cpu, double at);
/* The hook sched.c gives: wake @cpu's threads due by its clock; return the
 * next wake-up time of its blocked threads (INFINITY: none). */
extern double (*clock_timers)(struct sim *s, uint32_t cpu);

/* machine.c (sim_settle_percentiles(): frames.c) */
int sim_init(struct sim *s, const struct sim_config *cfg, const struct workload *wl);
void sim_fini(struct sim *s);
/* --stamps: the settle latencies' percentiles into s->cnt (once, at the end). */
void sim_settle_percentiles(struct sim *s);
double sim_makespan(const struct sim *s);
int sim_open_as(struct sim *s);
/* --tags: @as's process is gone (its tables torn down): it is closed once
 * no CPU has it loaded, and a fresh one, a new identity to the allocator,
 * takes its index; a thread that comes to it before that revives it. */
void sim_as_dead(struct sim *s, uint32_t as);
/* xorshift64 (13, 7, 17) of *@state: a CPU's draws (sim_rand), or a
 * thread's own, which stay the same wherever it runs. */
uint64_t sim_xorshift(uint64_t *state);
uint64_t sim_rand(struct sim_cpu *c);

/* actions.c: workload actions, run on @cpu at its clock. */
enum access_result { ACC_OK, ACC_FAULT };
enum access_result sim_access(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, int write);
/* Change @n PTEs from @vpn to @perms (0: unmap); @frame_change gives them new
 * frames (break-before-make).  Returns the decision. */
struct tlbpol_decision sim_change(struct sim *s, uint32_t cpu, uint32_t as, uint32_t kind,
				  uint32_t flags, uint64_t vpn, uint64_t n, uint8_t perms);
/* The same for a range whose present pages differ: one event, as a
 * kernel's mmu_gather flushes a whole system call's range once, @old the
 * union of their bits.  An mprotect (EV_PROTECT) leaves pages that are not
 * present as they are. */
struct tlbpol_decision sim_change_range(struct sim *s, uint32_t cpu, uint32_t as, uint32_t kind,
					uint32_t flags, uint64_t vpn, uint64_t n, uint8_t old,
					uint8_t perms);
/* A fault on @vpn resolved with @perms (installs a frame if not present). */
struct tlbpol_decision sim_fault(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn,
				 uint32_t flags, uint8_t perms);
void sim_flush(struct sim *s, uint32_t cpu, uint32_t by);
void sim_free_frames_later(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, uint64_t n);
/* --stamps: the end of a stamped private unmap (tlb_finish_mmu()):
 * tlbpol_stamp(), and the frames it cleared go back to this CPU's free list
 * at once with the stamp (the oracle checks the pages at settle). */
void sim_unmap_done(struct sim *s, uint32_t cpu);
void sim_switch(struct sim *s, uint32_t cpu, int32_t as);
void sim_set_mode(struct sim *s, uint32_t cpu, uint32_t mode);
void sim_tick_if_due(struct sim *s, uint32_t cpu);
/* --probe: @cpu reads one page of @as that some CPU installed lately. */
void sim_probe(struct sim *s, uint32_t cpu, uint32_t as);

/* sched.c: threads.  A scenario that makes none gets one per CPU, pinned,
 * in the address space its setup switched that CPU to. */
/* A new thread in @as, runnable on @cpu (or, unpinned, on an idle CPU when
 * it first wakes); its id, or -1 when out of memory. */
int sim_thread_new(struct sim *s, int32_t as, uint32_t cpu, int pinned);
/* The thread @cpu runs (a step acts for it). */
struct sim_thread *sim_current(struct sim *s, uint32_t cpu);
/* The running thread blocks for @ns (sleep, futex, I/O) once its step ends. */
void sim_block(struct sim *s, uint32_t cpu, double ns);
/* The running thread moves to address space @as (exec). */
void sim_thread_exec(struct sim *s, uint32_t cpu, int32_t as);
int sim_run(struct sim *s);

/* tlb.c: a CPU's modelled TLB, for machine.c, actions.c and oracle.c */
int tlb_init(struct sim_tlb *t, const struct sim_config *cfg, uint32_t nas);
void tlb_fini(struct sim_tlb *t);
/* Still usable: valid, and not flushed with its whole address space. */
int tlb_entry_live(const struct sim_tlb *t, const struct tlb_entry *e);
/* The live entry, promoted to L1; *@flushed tells whether a flush (not
 * capacity) removed it. */
struct tlb_entry *tlb_lookup(struct sim_tlb *t, uint16_t asid, uint64_t vpn, int *flushed);
/* Fill under tag @asid an entry of address space @owner. */
void tlb_fill(struct sim_tlb *t, uint16_t asid, uint16_t owner, uint64_t vpn, uint8_t perms,
	      uint32_t frame, uint32_t version);
void tlb_flush_page(struct sim_tlb *t, uint16_t asid, uint64_t vpn);
void tlb_flush_as(struct sim_tlb *t, uint16_t asid);
void tlb_flush_all(struct sim_tlb *t, uint32_t nas);

/* oracle.c: the page tables, and the checks actions.c calls for */
/* The PTE of @vpn (allocated if @create); NULL if absent and !@create. */
struct sim_page *sim_page(struct sim *s, uint32_t as, uint64_t vpn, int create);
/* Does an entry filled as (@perms, @frame) grant more than @p does? */
int oracle_harmful(const struct sim *s, uint8_t perms, uint32_t frame, const struct sim_page *p);
void oracle_violation(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, const char *when,
		      const struct tlb_entry *e, const struct sim_page *p);
/* --tags: a live entry of another address space under @as's tag. */
void oracle_foreign(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, const char *when,
		    const struct tlb_entry *e);
/* May changing a PTE from @old to @new leave an entry granting too much? */
int oracle_change_harms(const struct sim *s, uint8_t old, uint32_t old_frame, uint8_t new,
			uint32_t new_frame);
/* The changes to [@vpn, @vpn + @n) of @as are complete (@harms: some could
 * harm, and are outstanding until now): check every CPU running @as. */
void oracle_complete(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, int harms,
		     const char *when);
void oracle_check_pages(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, const char *when);
/* @cpu starts running @as again: check what its TLB kept. */
void oracle_check_resume(struct sim *s, uint32_t cpu, uint32_t as);
/* Frame @f, last mapped at (@as, @vpn), is handed out again: no CPU
 * running @as may still translate to it. */
void oracle_check_frame(struct sim *s, uint32_t f, uint32_t as, uint64_t vpn);

/* workloads.c */
extern const struct workload *const sim_workloads[];
const struct workload *sim_find_workload(const char *name);

/* trace.c, trace_load.c */
extern const struct workload sim_trace_workload; /* replays s->trace_path */
int sim_load_trace(struct sim *s, const char *path);

#endif
