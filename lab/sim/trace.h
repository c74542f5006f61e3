/* SPDX-License-Identifier: MIT */
/*
 * trace.h - a recorded trace in memory (lab/trace/FORMAT.md, versions 1
 * to 3): read by trace_load.c, replayed by trace.c.
 */
#ifndef TLBPOL_SIM_TRACE_H
#define TLBPOL_SIM_TRACE_H

#include "sim.h"

enum tkind { T_MMAP, T_MUNMAP, T_MPROTECT, T_DONTNEED, T_MREMAP,
	     T_CLONE, T_FORK, T_EXEC, T_EXIT, T_BLOCK, T_FAULT };

/* A fault record's kind of fault (v3): a read or a write of a page that
 * was not present, a write to a present write-protected one (a copy). */
enum tfault { TF_READ, TF_WRITE, TF_COW };

struct tevent {
	uint64_t time;          /* ns */
	uint32_t thread, as;
	uint32_t kind;
	uint8_t prot;
	uint8_t anon;           /* mmap: private anonymous memory (see map_kinds) */
	uint64_t addr, pages;   /* 4 KiB pages; clone/fork: child thread in addr */
	uint64_t new_addr, new_pages; /* fork: child as; exec: new as; block: ns;
				       * fault: enum tfault in new_pages */
};

struct mapping {
	uint64_t start, pages; /* trace page numbers */
	uint64_t dense;        /* first modelled vpn */
	uint8_t prot;
	uint8_t anon;          /* private anonymous: --zero-page avoid applies */
};

/* --zero-page avoid: what the replay knows of a page of a trace address
 * space, by modelled vpn (chunks of SIM_CHUNK, made when first set). */
enum { ZP_FRESH = 1, /* its frame came from a read fault and the program
		      * has not written it yet */
       ZP_OWN = 2 }; /* its present frame is one of those, not shared by a
		      * fork: a write to it reuses it */

struct tas {
	struct mapping *m;
	uint32_t n, cap;
	uint64_t next_dense;
	uint32_t live; /* threads in it */
	uint8_t **zp;  /* --zero-page avoid: page states from zp_base */
	uint64_t zp_base, zp_chunks;
};

/* A trace thread's replay. */
struct tthread {
	uint64_t *idx;    /* its records */
	uint64_t n, pos;
	uint32_t tas;     /* its trace address space now */
	uint64_t last;    /* time of its previous record */
	int gap_done;     /* the computation before idx[pos] is done */
	int made;         /* a modelled thread exists for it */
};

struct trace {
	struct tevent *ev;
	uint64_t n;
	uint32_t threads, nas;
	uint32_t version;
	int faults;             /* version 3: faults were recorded */
	/* Some mmap record says whether it is anonymous (an 8th field, anon,
	 * file or shared); else each mmap's anon was inferred at load. */
	int map_kinds;
	/* --zero-page avoid: frames mapped at read faults instead of the zero
	 * page, and those of them dropped or left unwritten. */
	uint64_t zp_frames, zp_unwritten;
	struct tas *as;
	struct tthread *th;
	uint8_t *is_child;
};

/* How a read fault of private anonymous memory is resolved in a replay
 * (--zero-page; options.c sets it): the shared zero page, as Linux does,
 * or a fresh zeroed frame, as mm_forbids_zeropage() hosts do. */
enum { ZERO_PAGE_MAP, ZERO_PAGE_AVOID };
extern int sim_zero_page;

/* trace_load.c: the computation the records' gaps add up to (ns), the
 * mapping lists, and the page states of --zero-page avoid. */
double trace_compute_ns(const struct trace *t);
void trace_forget(struct tas *a, uint64_t start, uint64_t pages);
void trace_add_mapping(struct tas *a, uint64_t start, uint64_t pages, uint8_t prot,
		       uint8_t anon);
/* The state of modelled page @vpn of @a (NULL if none was set and !@create). */
uint8_t *zp_state(struct tas *a, uint64_t vpn, int create);
/* Pages [@vpn, @vpn + @n) are dropped (or everything, at the end): count
 * the unwritten fresh frames into @t and forget their states. */
void zp_drop(struct trace *t, struct tas *a, uint64_t vpn, uint64_t n);
/* A fork: the frames of @a are shared with the child from now on. */
void zp_fork(struct tas *a);

#endif
