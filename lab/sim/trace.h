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
	uint64_t addr, pages;   /* 4 KiB pages; clone/fork: child thread in addr */
	uint64_t new_addr, new_pages; /* fork: child as; exec: new as; block: ns;
				       * fault: enum tfault in new_pages */
};

struct mapping {
	uint64_t start, pages; /* trace page numbers */
	uint64_t dense;        /* first modelled vpn */
	uint8_t prot;
};

struct tas {
	struct mapping *m;
	uint32_t n, cap;
	uint64_t next_dense;
	uint32_t live; /* threads in it */
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
	struct tas *as;
	struct tthread *th;
	uint8_t *is_child;
};

#endif
