/* SPDX-License-Identifier: MIT */
/*
 * oracle.h - a model machine for libtlbpol, and an oracle that checks every
 * completion the engine reports against it.
 *
 * The machine.  Several address spaces, each an engine address space with its
 * own tag, each with a page table: PTEs with the TLBPOL_PTE_* bits, a frame
 * number and a version (bumped by every software change, not by hardware A/D
 * updates), grouped group_pages to a page-table page ("table") that can be
 * freed and reallocated.  Each CPU has a set-associative TLB of (address
 * space, page) -> (bits, frame, version filled from) and a paging-structure
 * cache (PSC) of (address space, group) -> table page.  Both are filled only
 * by the CPU's own walks (on access, or speculatively, also while it is lazy
 * with an address space loaded) and emptied only by the engine's flushes
 * (ops->flush_local, ops->broadcast: PAGES invalidates the pages of the tag,
 * and with TLBPOL_FLUSHF_TABLES the PSC entries of tables under the ranges;
 * AS everything of the tag; ALL everything), by the catch-up flushes the
 * engine asks for (tlbpol_switch() need_flush, tlbpol_cpu_state() returning
 * 1), by the CR3 write of a switch to another address space without
 * TLBPOL_CFGF_RETAIN_AS, by going offline, and on x86 by a page fault for the
 * faulting address (Intel SDM 4.10.4.1).  Hardware sets A when it fills an
 * entry and D on the first write through an entry without it, with an atomic
 * update of the PTE in memory that fails once the PTE is not present (x86 and
 * ARM64; GENERIC has no hardware A/D: a missing A faults, D is never set).
 * Frames and table pages come from pools and go back only from deferred
 * frees (tlbpol_defer_free()), so a translation the engine failed to flush
 * ends up pointing at memory someone else owns.
 *
 * Interrupts: ops->send_ipi sets the target's pending flag; the target
 * answers with tlbpol_handle_ipi() when it polls (orc_poll()): between
 * accesses, while waiting in the engine (ops->relax), while idle or lazy;
 * a preempted vCPU does not, nor an offline CPU, nor a wait with
 * interrupts off (cfg.irqs_off_pct).  An access (walk + fill) is atomic with respect
 * to interrupts, as an instruction is, and to ops->broadcast (a per-CPU
 * lock), as a broadcast TLBI waits for walks in flight.
 *
 * The workload side follows the header's protocol: every change is made
 * under a page-table lock with an atomic exchange (old_pte is what it
 * replaced), submitted before the lock is released; present PTEs are changed
 * first and then submitted, installs submitted first and then written (so
 * that pending flushes over a reused address complete before the new frame
 * appears, as flush_tlb_batched_pending() does); frame changes break before
 * make; frames and tables are freed only from deferred frees; a reclaimed
 * dirty page is written back, and a migrated page copied, only after the
 * submitting CPU's tlbpol_flush(BY_WRITEBACK), a shared dirty page unmapped
 * as soon as the unmap returns (by anyone); LAZY_OK addresses are not reused
 * before their deferred free.
 *
 * The oracle.  A change of PTE (as, page) produces version v.  When the
 * engine reports it complete -- tlbpol_submit() returns with a BY_NOW
 * decision (of any action: NONE and LOCAL claim that nothing else is
 * needed), tlbpol_flush(cpu, by) returns (that CPU's deferred changes due by
 * @by), a deferred free registered after it runs -- its PTE word becomes the
 * page's latest completed change (cv), and no CPU may then hold an entry for
 * the page filled from an older version that permits what version v does not
 * (orc_harmful()).  A CPU the contract lets the engine skip -- lazy (idle or
 * switched to NULL), preempted, away from that address space, or in the
 * middle of a switch or wake-up whose catch-up flush follows at once -- is
 * excused, and checked instead when it next starts to use the address space
 * (after the catch-up flush it was told to do): its whole TLB against cv.
 * Running CPUs also check every entry they use, and can audit themselves.
 * A freed table page: no CPU but a preempted, away or switching one may still
 * point to it (a lazy CPU's MMU may walk speculatively), and walking a freed
 * table is reported where it happens.  A freed frame: no running CPU may
 * still translate to it.  A written-back or copied page: no write may reach
 * it.  Every deferred free must run exactly once, on the CPU that registered
 * it, and none may be lost.
 *
 * Why the excuses are sound: a CPU publishes "excused" before the engine call
 * that lets the engine skip it, and "running" only after that call and its
 * catch-up flush; a checker records cv before it reads CPU states, a resuming
 * CPU publishes before it scans (all sequentially consistent), so one of the
 * two sees the other.  A TLB entry, once gone, never comes back with its old
 * version, so an entry found older than a completed change was there all
 * along.
 *
 * Threading: one thread per CPU calls the CPU-side functions for that CPU
 * (orc_cpu_bind() first); page-table changes may be made by any CPU under the
 * model's page-table locks (one per table page, taken with trylock so that no
 * CPU ever blocks while others wait for its acknowledgement).  A simulator can
 * drive the same world from one thread by binding to each CPU in turn and
 * delivering interrupts in a custom relax hook.
 *
 * Kernel pages.  A kernel region of kernel_pages global pages (index
 * ORC_KAS in every table below) is shared by every address space, as a
 * kernel's own mappings are: its PTEs are global, its TLB entries survive
 * CR3 writes and catch-up flushes of any address space (SDM 4.10.4.1) and
 * go only with FLUSH_ALL, with PAGES flushes marked TLBPOL_FLUSHF_GLOBAL
 * (an unmarked one is modelled as INVPCID type 0, which leaves global
 * translations alone), or when the CPU goes offline or its hypervisor
 * flushes it.  Every CPU that executes -- running, lazy, idle, between
 * states -- reads and writes kernel pages (orc_kaccess()) and walks them
 * speculatively; only a preempted or offline CPU is excused.  The kernel
 * maps, unmaps (LAZY_OK as vunmap's lazy purge) and protects its pages
 * through any address space, at random: a global VA reused through another
 * address space than the one that unmapped it.  On GENERIC a walk may
 * cache an invalid entry (RISC-V without Svvptc): a user access recovers
 * through a spurious fault, a kernel one has no such path, so a kernel
 * access that finds an invalid entry older than a completed install is a
 * violation.
 *
 * Data, not only frames.  A frame's contents are discarded when a DONTNEED
 * returns (orc_dontneed(): the range stays mapped and must read as zeros),
 * and superseded when a new PTE for its page is stored (a refault after
 * reclaim, a migration's restore, an address reused after munmap, a COW
 * break): any access through a translation to it after that point is a
 * violation (ORC_V_DATA), whatever the engine reported.  A write to a page
 * after its writeback or copy is a lost write (ORC_V_LOST_WRITE).
 *
 * Host orderings.  By default installs are submitted before their PTE is
 * stored, as the header requires (on GENERIC also submitted again after
 * the store: the flush of cached invalid entries must follow it), and a
 * migration's restore is stored first, after its tlbpol_flush(BY_WRITEBACK),
 * which the header allows.  cfg.store_first makes every install store
 * first: the order the header forbids, which the oracle must catch.
 *
 * Liveness.  An initiator that keeps waiting while every other CPU has
 * polled for interrupts ORC_STALL_POLLS times since the wait began, and
 * ORC_STALL_RECENT times in each of the last ORC_STALL_MARKS stretches of
 * 64 turns (none of them is preempted, none is in mid-serve; an OFFLINE one
 * counts as polling, for nothing may wait for it) is stuck on a request
 * nobody was told of, or one held by a CPU that went OFFLINE without
 * serving it: a violation (ORC_V_STALL).  A wait that polls nothing cannot
 * be judged that way (two CPUs each waiting with interrupts off for the
 * other): any engine call that has waited cfg.stall_secs is a deadlock,
 * reported as ORC_V_STALL too.  After either, interrupts are let in
 * everywhere (offline and preempted CPUs, calls with interrupts off), every
 * CPU is interrupted, and orc_stopped() tells the driver to end the run.
 * Work must also end while the run goes on, not only in orc_finish():
 * a deferred free or a flush stamp of a CPU still pending after
 * cfg.free_bound of that CPU's own ticks is a violation (ORC_V_BOUNDED),
 * for its BY_WRITEBACK / BY_FREE work ages and its lazy requests are
 * interrupted within cfg->free_ticks ticks whatever its targets do
 * (liveness.c).
 *
 * Interrupts off.  With cfg.irqs_off_pct, that percent of tlbpol_tick()
 * calls (a timer interrupt) and half as many of the other calls that may
 * wait run with interrupts off: their ops->relax takes none of the CPU's
 * interrupts.  The header allows it in every call; under
 * TLBPOL_CFGF_WAIT_IRQS it is the one place where relax does not keep the
 * promise, and without the flag it is a host whose relax never took
 * interrupts (the engine serves from its loop).  An OFFLINE CPU takes no
 * interrupt at all, nor does a preempted one: an interrupt sent to a CPU
 * that went OFFLINE before the sender's engine call (or its latest wait
 * turn) began is a violation (ORC_V_IPI_OFFLINE).
 *
 * Long preemptions.  A driver may hold a vCPU PREEMPTED for as long as it
 * likes (orc_hold_begin()): the header promises that nobody waits for it
 * then, when RULE_VCPU_DEFER is on and nothing global is flushed -- no
 * settle, no forced lazy request, no synchronous shootdown posted after it
 * went.  One posted just before (its initiator read it RUNNING) is waited
 * for, as KVM's initiator waits for a vCPU preempted after its check: the
 * hypervisor runs a held vCPU again (orc_hold_kicked()) when an engine
 * call that interrupted it has waited HOLD_WAKE_TURNS turns, unless that
 * call is a tlbpol_stamp_settle(), which must never wait for it.  A settle
 * stuck on a held CPU then lasts until the deadlock clock ends the run.
 *
 * Migrating tasks.  With cfg.migrate_pct, a task that unmapped with
 * TLBPOL_EVF_STAMP on one CPU asks its stamp first on another, where it
 * migrated: that CPU's thread calls tlbpol_stamp() for itself between its
 * steps (each CPU's calls stay on its own thread), when it owes no stamp of
 * its own.  It must get -ENOENT (the host sees its mistake and stamps on
 * the first CPU, as if migrating back: counted in ORC_C_MIGR_ENOENT); a
 * stamp it gets instead is used as a host would use it, and the frames go
 * back to the pool with it -- at once if it is 0.
 *
 * Split-phase broadcasts.  With cfg.split the engine gets ops->bcast_issue
 * and ops->bcast_sync instead of ops->broadcast.  An issue is recorded on
 * the CPU whose thread issues it and takes effect on every CPU's caches
 * only at that thread's next sync (the latest an INVLPGB may complete,
 * before its issuer's TLBSYNC), so a request counted complete before its
 * issuer synced leaves entries the completion check finds.  A sync for
 * another CPU than the thread that runs it (TLBSYNC there waits for none
 * of this CPU's INVLPGBs), and an engine call that returns with issues
 * not synced, are violations (ORC_V_API).  With cfg.tag_match the host's
 * broadcast misses the odd CPUs, as a tag-matching one does where they hold
 * the address spaces under tags of their own: the oracle must catch it.
 *
 * Lockless walkers.  With cfg.walkers the engine is told
 * TLBPOL_CFGF_LOCKLESS_WALKERS and running CPUs walk their address space's
 * page tables as Linux's GUP-fast does (orc_lockless_walk()): interrupts
 * off, no lock, the table page's pointer read once, then a few yields (the
 * walk's length), perhaps descheduled in the middle.  A table page freed
 * before the walk ends is a violation (ORC_V_LOCKLESS): freeing it was
 * safe only once every CPU that may walk had taken an interrupt since the
 * unlink, served the request by itself, or been waited for by
 * ops->walker_sync (cfg.walker_sync: it waits until each CPU named is out
 * of any walk it was in, as an RCU-like counter shows).
 *
 * Not modelled: page sizes other than 4 KiB, paging-structure caches of the
 * kernel region (its tables are never freed), memory ordering weaker than
 * the host's (the model's own accesses are sequentially consistent).
 * ORC_TRACE=1 in the environment prints the last events (submits, flushes,
 * interrupts, switches, frees) with the first violation of a world.
 */
#ifndef TLBPOL_ORACLE_H
#define TLBPOL_ORACLE_H

#include <stdint.h>
#include <stdio.h>

#include <tlbpol/tlbpol.h>

#define ORC_MAX_CPUS 128
#define ORC_MAX_AS 14     /* user address spaces; 4 bits in a TLB entry */
#define ORC_KAS 14        /* the kernel region's index; 15 means "none" */
#define ORC_KVA_BASE 0xffff888000000000ULL
#define ORC_MAX_KPAGES 256
#define ORC_STALL_POLLS 2048
#define ORC_STALL_RECENT 16 /* polls per checkpoint, ORC_STALL_MARKS in a row */
#define ORC_STALL_MARKS 4
#define ORC_MAX_PAGES 2048 /* pages per address space (11 bits) */
#define ORC_MAX_GROUPS 256 /* table pages per address space (8 bits) */
#define ORC_MAX_RANGE 64   /* pages one change may cover */
#define ORC_VA_BASE 0x40000000ULL
#define ORC_PAGE_SHIFT 12

struct orc_world;

enum orc_access { ORC_READ = 0, ORC_WRITE = 1, ORC_EXEC = 2 };

/* What an access or a page-table operation came to. */
enum orc_result {
	ORC_OK = 0,      /* done (an access: it went through, perhaps after a fault) */
	ORC_SEGV = 1,    /* the access is not allowed (VMA, address held back) */
	ORC_BUSY = 2,    /* a page-table lock was held: nothing done */
	ORC_SKIP = 3,    /* nothing to do (no present page, ...) */
	ORC_NOMEM = 4,   /* the frame or table pool is empty */
	ORC_FAULT = 5,   /* an access that still faults after its fault was handled */
};

/* Kinds of violation, each counted. */
enum orc_vkind {
	ORC_V_STALE,      /* a completed change left a harmful entry on a running CPU */
	ORC_V_RESUME,     /* a CPU started to use an AS still holding such an entry */
	ORC_V_USE,        /* a running CPU used a stale entry or a freed/reused frame */
	ORC_V_LOST_WRITE, /* a write reached a page after its writeback/copy */
	ORC_V_FRAME,      /* a frame was freed while a running CPU translates to it */
	ORC_V_TABLE,      /* a table page was freed while a CPU caches a pointer to it */
	ORC_V_WALK,       /* a CPU walked a freed table page */
	ORC_V_FREE,       /* a deferred free ran twice, on another CPU, or never */
	ORC_V_API,        /* an engine call failed or answered outside its contract */
	ORC_V_DATA,       /* discarded or superseded contents read or written */
	ORC_V_STALL,      /* an initiator waited on CPUs that were never told, or for ever */
	ORC_V_IPI_OFFLINE, /* an interrupt was sent to a CPU that was OFFLINE already */
	ORC_V_BOUNDED,    /* a deferred free or stamp outlived cfg.free_bound ticks */
	ORC_V_LOCKLESS,   /* a table page was freed under a lockless walk (orc_lockless_walk()) */
	ORC_V_TAG,        /* a hardware tag was loaded over another address space's entries */
	ORC_V_MAX
};

/* Counters (orc_read_counters()). */
enum orc_ckind {
	ORC_C_EVENTS,     /* workload steps (the driver counts them) */
	ORC_C_ACCESSES,
	ORC_C_HITS,
	ORC_C_WALKS,
	ORC_C_SPEC_WALKS,
	ORC_C_FAULTS,
	ORC_C_SEGV,       /* accesses refused (VMA, held-back address, busy lock) */
	ORC_C_SUBMITS,
	ORC_C_DEFERRED,   /* submits whose flush was deferred */
	ORC_C_IPIS,       /* interrupts sent (targets) */
	ORC_C_IPIS_TAKEN, /* tlbpol_handle_ipi() calls that served something */
	ORC_C_FLUSHES,    /* flush_local calls */
	ORC_C_BROADCASTS,
	ORC_C_CATCHUPS,   /* catch-up flushes the engine asked for */
	ORC_C_FREES_REG,
	ORC_C_FREES_RUN,
	ORC_C_BUSY,       /* operations skipped on a held page-table lock */
	ORC_C_CHECKS,     /* entries compared against a completed change */
	ORC_C_EXCUSED,    /* CPUs excused at a completion (checked at resume) */
	ORC_C_WARNINGS,   /* contract notes that are not unsafe (e.g. unsorted ranges) */
	ORC_C_KACCESSES,  /* kernel-page accesses */
	ORC_C_NEGATIVE,   /* invalid entries cached (GENERIC) */
	ORC_C_STAMPED,    /* frames freed at once with a flush stamp */
	ORC_C_SETTLES,    /* stamped frames handed out again (tlbpol_stamp_settle()) */
	ORC_C_SETTLE_WAITS, /* ... of which settling had to interrupt or wait */
	ORC_C_IRQS_OFF,   /* engine calls made with interrupts off (cfg.irqs_off_pct) */
	ORC_C_AGED,       /* deferred frees and stamps the bounded-free check saw end */
	ORC_C_MIGRATED,   /* stamps asked first on another CPU, which answered (migrate.c) */
	ORC_C_MIGR_ENOENT, /* ... of which it refused (-ENOENT): the host stamped at home */
	ORC_C_HOLDS,      /* long preemptions (orc_hold_begin()) */
	ORC_C_HOLD_KICKS, /* ... ended by a waiter's interrupt, not by the others' progress */
	ORC_C_SETTLES_OWN, /* settles made by the CPU that took the stamp */
	ORC_C_HELD_SETTLES, /* settles made while some CPU was held */
	ORC_C_LOCKLESS,   /* lockless walks (orc_lockless_walk()) that found a table */
	ORC_C_WALKER_SYNCS, /* ops->walker_sync calls */
	ORC_C_TAG_MOVES,  /* ops->load_tag calls: moves onto a global tag */
	ORC_C_MAX
};

struct orc_config {
	uint32_t nr_cpus;      /* 1 .. ORC_MAX_CPUS */
	uint32_t arch;         /* enum tlbpol_arch */
	uint64_t rules;
	uint32_t flags;        /* TLBPOL_CFGF_* */
	uint32_t nr_as;        /* 1 .. ORC_MAX_AS */
	uint32_t pages;        /* per address space, a multiple of group_pages */
	uint32_t group_pages;  /* PTEs per table page, 2 .. ORC_MAX_RANGE */
	uint32_t tlb_sets, tlb_ways;
	uint32_t psc_sets, psc_ways;
	uint32_t numa_nodes;   /* > 1: give the engine a cpu_node map */
	int broadcast;         /* give the engine ops->broadcast */
	/* Give it ops->bcast_issue and ops->bcast_sync instead (split phase:
	 * an issue takes effect only at its issuer's sync, "Split-phase
	 * broadcasts"), with a TLBPOL_MECH_BROADCAST descriptor. */
	int split;
	/* The broadcast descriptor's cost_ns (0: the engine's default), so
	 * that a few CPUs' shootdowns choose it too. */
	uint32_t bcast_cost;
	/* Pages one broadcast instruction names (0: 8, INVLPGB-like; 2^21 - 1
	 * for arm64 TLBI ranges). */
	uint32_t bcast_max_pages;
	/* The host's broadcast matches tags while odd CPUs hold the address
	 * spaces under tags of their own: it misses them (a host bug the
	 * oracle must catch; caches.c). */
	int tag_match;
	/* Give the engine ops->remote_action too (a targeted flush that runs
	 * no code on its targets: RAR), with a descriptor priced to be
	 * chosen over interrupts. */
	int remote;
	/* Lockless walks in the workload ("Lockless walkers"): 1 with
	 * TLBPOL_CFGF_LOCKLESS_WALKERS, 2 without (a host that has walkers
	 * and does not say so, which the oracle must catch); @walker_sync:
	 * give ops->walker_sync. */
	int walkers, walker_sync;
	/* RISCV64 harts that implement Svvptc: no invalid PTE is cached, and
	 * the engine is told (TLBPOL_CFGF_SVVPTC). */
	int svvptc;
	/* The engine's tags from an allocator (cfg->tags, "Hardware tags"):
	 * 0 none (each address space its own tag), else TLBPOL_TAGS_* + 1;
	 * @tag_bits the width (tags 1 .. 2^bits - 1), @tag_slots per CPU;
	 * per-CPU slots with @tag_global global tags, given to an address
	 * space loaded on @tag_global_cpus CPUs (0: the allocator's 4). */
	uint32_t tags, tag_bits, tag_slots, tag_global, tag_global_cpus;
	/* Give the engine ops->load_tag: a CPU moves onto a global tag in
	 * its interrupt or tick, not only at its switch. */
	int tag_irq_load;
	/* A stretched transition window (window()) lasts until the other
	 * CPUs have made about this many steps, or 8 times as many yields
	 * have passed; 0: one to three yields. */
	uint32_t window_events;
	int vcpu_defer;        /* give the engine ops->vcpu_defer (orc_hv_preempt()) */
	uint32_t batch_pages;  /* 0: the engine's default */
	uint32_t flush_ceiling; /* 0: the engine's default */
	uint32_t ipi_delay_spins; /* the engine's ipi_delay_spins */
	uint32_t kernel_pages; /* the kernel region, 0 .. ORC_MAX_KPAGES (default 32) */
	/* Percent of plain unmaps made private with TLBPOL_EVF_STAMP: their
	 * frames go back to the pool at once, with the stamp, and are settled
	 * when handed out again (default 30; 0: none). */
	uint32_t stamp_pct;
	int store_first;       /* installs store their PTE before the submit (forbidden) */
	/* Percent of tlbpol_tick() calls made with interrupts off (half that
	 * of the other calls that may wait); 0: none (see "Interrupts off"). */
	uint32_t irqs_off_pct;
	/* Percent of stamped unmap passes whose task migrates before its
	 * tlbpol_stamp(): asked first on another CPU (see "Migrating tasks");
	 * 0: none. */
	uint32_t migrate_pct;
	uint32_t wait_limit;   /* the engine's cfg->wait_limit (0: none) */
	uint32_t free_ticks;   /* the engine's cfg->free_ticks (0: its default) */
	/* Own ticks a deferred free or stamp may stay pending (ORC_V_BOUNDED);
	 * 0: 4 x free_ticks + 8; TLBPOL_FREE_TICKS_NEVER free_ticks: no check. */
	uint32_t free_bound;
	/* Seconds one engine call may wait before it is a deadlock (0: 10,
	 * 30 under ThreadSanitizer). */
	double stall_secs;
	uint64_t seed;
	FILE *log;             /* violation reports; NULL: stderr */
	uint32_t max_reports;  /* reports printed per world */
	/* Called by ops->relax while @cpu waits; NULL: orc_poll() + sched_yield(). */
	void (*relax)(struct orc_world *w, uint32_t cpu, void *arg);
	void *relax_arg;
};

/* Defaults: 4 address spaces of 128 pages in tables of 8, 32x4 TLB, 4x4 PSC. */
void orc_config_init(struct orc_config *cfg, uint32_t nr_cpus, uint32_t arch, uint64_t rules);

/* Build the world and its engine; every CPU starts RUNNING with nothing
 * loaded, every page not present but for a first population. */
int orc_world_new(const struct orc_config *cfg, struct orc_world **out);
void orc_world_free(struct orc_world *w);
struct tlbpol_engine *orc_engine(struct orc_world *w);
/* cfg.tags: the engine's tag allocator (NULL without). */
struct tlbpol_tags *orc_tags(struct orc_world *w);
const struct orc_config *orc_world_config(const struct orc_world *w);

/* ---- The CPU side: call from the thread acting as @cpu. ---- */

/* This thread now acts as @cpu (for callbacks that must run "on @cpu"). */
void orc_cpu_bind(struct orc_world *w, uint32_t cpu);
/* The driver counts its workload steps here (ORC_C_EVENTS). */
void orc_note_events(struct orc_world *w, uint32_t cpu, uint64_t n);
/* A random number from @cpu's generator (seeded from cfg->seed). */
uint64_t orc_rand(struct orc_world *w, uint32_t cpu);
/* Take a pending interrupt, if any (none while OFFLINE or preempted).
 * Returns requests served. */
int orc_poll(struct orc_world *w, uint32_t cpu);
/* A user access to @page of the running address space (fault handled). */
enum orc_result orc_access(struct orc_world *w, uint32_t cpu, uint32_t page, enum orc_access a);
/* A speculative walk of @page of the loaded address space (running or lazy). */
void orc_spec_walk(struct orc_world *w, uint32_t cpu, uint32_t page);
/* A lockless software walk to @page's table page of the running address
 * space, interrupts off for @yields yields, descheduled in the middle if
 * @preempt (1: told, tlbpol_cpu_state(); 2: not, orc_hv_preempt()). */
void orc_lockless_walk(struct orc_world *w, uint32_t cpu, uint32_t page, uint32_t yields,
		       int preempt);
/* A kernel access to kernel page @kpage (by any CPU that executes), and a
 * speculative walk of one. */
enum orc_result orc_kaccess(struct orc_world *w, uint32_t cpu, uint32_t kpage, enum orc_access a);
void orc_kspec_walk(struct orc_world *w, uint32_t cpu, uint32_t kpage);
/* tlbpol_switch() to address space @as, or -1 for NULL (lazy). */
int orc_switch(struct orc_world *w, uint32_t cpu, int as);
/* tlbpol_unload(): a lazy CPU drops its loaded address space. */
int orc_unload(struct orc_world *w, uint32_t cpu);
/* tlbpol_cpu_state(), from whatever state to whatever state; a return of
 * 1 is honoured before anything else runs, whatever the transition. */
int orc_set_state(struct orc_world *w, uint32_t cpu, uint32_t state);
int orc_tick(struct orc_world *w, uint32_t cpu);
/*
 * The hypervisor deschedules the vCPU without the engine being told (a
 * guest's engine learns of it only through ops->vcpu_defer, as KVM's
 * steal-time `preempted` byte); orc_hv_resume() runs it again, first
 * flushing all of its caches if a vcpu_defer call asked for it
 * (KVM_VCPU_FLUSH_TLB, honoured by KVM's record_steal_time()).
 */
void orc_hv_preempt(struct orc_world *w, uint32_t cpu);
void orc_hv_resume(struct orc_world *w, uint32_t cpu);
/*
 * A long preemption (see "Long preemptions"): the vCPU goes PREEMPTED
 * (tlbpol_cpu_state()) from RUNNING, outside any engine call, and stays so
 * for as long as the driver likes while orc_hold_kicked() says 0 (a waiter
 * needs it, or the run stopped); orc_hold_end() runs it again.  From the
 * CPU's own thread, as every CPU-side call.
 */
void orc_hold_begin(struct orc_world *w, uint32_t cpu);
int orc_hold_kicked(const struct orc_world *w, uint32_t cpu);
void orc_hold_end(struct orc_world *w, uint32_t cpu);
/* Between steps, outside any engine call: answer a stamp another CPU's
 * migrating task asks of this one (see "Migrating tasks"). */
void orc_serve_migration(struct orc_world *w, uint32_t cpu);
/* tlbpol_flush(), then the oracle for every change of @cpu due by @by. */
int orc_flush(struct orc_world *w, uint32_t cpu, uint32_t by);
/* A running CPU checks its whole TLB for the running AS against cv. */
void orc_audit(struct orc_world *w, uint32_t cpu);

/* What the model says @cpu is doing. */
int orc_cpu_as(const struct orc_world *w, uint32_t cpu);     /* running AS, -1: NULL */
int orc_cpu_loaded(const struct orc_world *w, uint32_t cpu); /* loaded AS, -1: none */
uint32_t orc_cpu_state(const struct orc_world *w, uint32_t cpu);

/* ---- Page-table changes, made by @cpu under the page-table locks. ---- */

enum orc_result orc_populate(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			     uint32_t n);
/* Clear and set W/X/U on the present pages; @vma: change what faults may
 * grant too (mprotect), else only the PTEs (write-protect, COW). */
enum orc_result orc_protect(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			    uint32_t n, uint32_t clear, uint32_t set, int vma);
/* @evflags: TLBPOL_EVF_TABLES_FREED (rounded out to whole table pages, which
 * are freed) and/or TLBPOL_EVF_LAZY_OK (the addresses are held back until the
 * deferred free runs).  @writeback: a shared mapping's dirty pages are
 * written back, as by a flusher on another CPU, once the call returns (the
 * unmap of a dirty shared page is complete then). */
enum orc_result orc_unmap(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			  uint32_t n, uint32_t evflags, int writeback);
enum orc_result orc_reclaim(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page);
enum orc_result orc_migrate(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page);
enum orc_result orc_clear_young(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				uint32_t n);
enum orc_result orc_clear_dirty(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				uint32_t n, int wrprotect);
enum orc_result orc_remap(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t from,
			  uint32_t to);
/* MADV_DONTNEED of the present pages: the range stays mapped; the old
 * contents are gone when this returns (LAZY_OK and PRIVATE are passed too,
 * at random: the engine must ignore them). */
enum orc_result orc_dontneed(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			     uint32_t n);
/* Kernel mappings, submitted through user address space @via: map fresh
 * frames at the not-present pages (vmap), unmap (vunmap; @lazy: LAZY_OK),
 * write-protect or make writable. */
enum orc_result orc_kmap(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kpage,
			 uint32_t n);
enum orc_result orc_kunmap(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kpage,
			   uint32_t n, int lazy);
enum orc_result orc_kprotect(struct orc_world *w, uint32_t cpu, uint32_t via, uint32_t kpage,
			     uint32_t n, int writable);
/* Flip the model's attribute (a memory type, a protection key) of the
 * present pages: TLBPOL_EVF_ATTRS, the portable bits unchanged. */
enum orc_result orc_attrs(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			  uint32_t n);
/* Replace the table page of @page's group by a copy, every PTE unchanged,
 * and free the old one after the flush: TLBPOL_EVF_TABLES_FREED on an event
 * of @kind (a fault that looks spurious, a protect or an aging pass that
 * changed nothing). */
enum orc_result orc_retable(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
			    uint32_t kind);
/* Point the PTE at a new frame (@cow: a write fault breaking COW, else an
 * in-place replacement), break-before-make. */
enum orc_result orc_change_frame(struct orc_world *w, uint32_t cpu, uint32_t as, uint32_t page,
				 int cow);

/* ---- End of a run. ---- */

/* Wait for every CPU (answering interrupts meanwhile). */
void orc_barrier(struct orc_world *w, uint32_t cpu);
/* Called by every CPU thread at the end: back to running, complete every
 * pending flush (tlbpol_flush(BY_LAZY)), tick until every deferred free ran,
 * then visit every address space (catch-up and scan).  Collective. */
void orc_finish(struct orc_world *w, uint32_t cpu);

/* A deadlock was reported (ORC_V_STALL by the clock): the driver stops its
 * workload and goes to orc_finish(). */
int orc_stopped(const struct orc_world *w);
/* tlbpol_cpu_state() transitions that succeeded, summed over CPUs: [lazy:
 * switched to NULL with an AS loaded][from][to] (enum tlbpol_cpu_state). */
void orc_transitions(const struct orc_world *w, uint64_t m[2][4][4]);

void orc_read_counters(const struct orc_world *w, uint64_t c[ORC_C_MAX], uint64_t v[ORC_V_MAX]);
uint64_t orc_violations(const struct orc_world *w);
const char *orc_vkind_name(enum orc_vkind k);
/* "x86", "arm64", "riscv64" or "generic": how reports and the driver name @arch. */
const char *orc_arch_name(uint32_t arch);

/* Does a TLB entry with @eperm/@eframe permit what PTE word @pte does not?
 * Bit 7 of @eperm is the model's attribute (see orc_attrs()).  Exposed for
 * tests of the oracle itself. */
int orc_harmful(uint32_t arch, uint32_t eperm, uint32_t eframe, uint64_t pte);

#endif /* TLBPOL_ORACLE_H */
