/* SPDX-License-Identifier: MIT */
/*
 * machine.h - what the machine's three files share: machine.c (the
 * engine's callbacks, set-up, switches), actions.c (the workload actions:
 * accesses, PTE changes, flushes, deferred frees) and frames.c (the free
 * frames of --stamps).  Calls go one way: actions.c -> machine.c ->
 * frames.c.  Everyone else sees sim.h only.
 */
#ifndef TLBPOL_SIM_MACHINE_H
#define TLBPOL_SIM_MACHINE_H

#include "sim.h"

/* Cycles of the modelled CPU, in ns. */
#define CYC(s, c) ((c) / (s)->cfg.cost.cpu_ghz)

/* machine.c: after an engine call: the engine's own time, and the last
 * acknowledgement's latency if it waited. */
void engine_return(struct sim *s, uint32_t cpu);

/* frames.c: a frame, where it was mapped last, and the stamp that must be
 * settled before it is handed out again (0: none), with its initiator's
 * changes up to @upto that the stamp covers. */
struct free_frame {
	uint32_t frame, as, owner;
	uint64_t vpn, stamp, upto;
};

struct frame_list {
	struct free_frame *v;
	uint32_t n, cap;
};

struct cpu_frames {
	struct frame_list free;    /* LIFO: what was freed last goes first */
	struct frame_list cleared; /* what this CPU's unmap in progress cleared */
};

void frames_push(struct frame_list *l, struct free_frame f);
/* @cpu's lists, allocated on first use. */
struct cpu_frames *frames_of(struct sim *s, uint32_t cpu);
/* Free @f to @cpu's list, or past its high mark to the global one. */
void frame_put(struct sim *s, uint32_t cpu, struct free_frame f);
/* Take the frame freed last from the global list into @fl's, if @fl's is
 * empty. */
void frames_refill(struct sim *s, struct cpu_frames *fl);
/* A settle took @ns; @waited: it had to interrupt or wait. */
void frames_settle_sample(double ns, int waited);
void frames_fini(void *frames);
void frames_global_fini(void *frames);

#endif
