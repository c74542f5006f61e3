/* SPDX-License-Identifier: MIT */
/*
 * trace.c - replay a recorded trace (tools/trace/FORMAT.md).
 *
 * Thread t runs on CPU t % ncpus, which executes its threads' events in
 * trace order and, between two of them, a few accesses to pages its address
 * space has mapped (the trace records system calls, not loads and stores).
 * Each trace mapping gets a dense range of the modelled address space, so
 * 47-bit addresses and unrelated processes that share a modelled address
 * space never collide.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

enum tkind { T_MMAP, T_MUNMAP, T_MPROTECT, T_DONTNEED, T_MREMAP };

struct tevent {
	uint32_t thread, as;
	uint32_t kind;
	uint8_t prot;
	uint64_t addr, pages;   /* 4 KiB pages */
	uint64_t new_addr, new_pages;
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
};

struct trace {
	struct tevent *ev;
	uint64_t n;
	uint32_t threads, nas;
	uint64_t *next; /* per CPU: index of its next event */
	struct tas *as;
};

static uint8_t parse_prot(const char *p)
{
	uint8_t perms = 0;

	if (strlen(p) != 3)
		return 0xff;
	if (p[0] == 'r')
		perms |= SIM_P | SIM_U;
	if (p[1] == 'w')
		perms |= SIM_P | SIM_U | SIM_W;
	if (p[2] == 'x')
		perms |= SIM_P | SIM_U | SIM_X;
	return perms;
}

int sim_load_trace(struct sim *s, const char *path)
{
	FILE *f = fopen(path, "r");
	struct trace *t = calloc(1, sizeof(*t));
	char line[512];
	uint64_t cap = 0, lineno = 0;

	if (!f || !t) {
		snprintf(s->error, sizeof(s->error), "cannot open trace %s", path);
		free(t);
		if (f)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char kind[32], a[32], extra1[32] = "", extra2[32] = "";
		unsigned long long tm, th, as, pages;
		struct tevent e;
		int n;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		n = sscanf(line, "%llu %llu %llu %31s %31s %llu %31s %31s", &tm, &th, &as, kind, a,
			   &pages, extra1, extra2);
		memset(&e, 0, sizeof(e));
		if (n < 6)
			goto bad;
		e.thread = (uint32_t)th;
		e.as = (uint32_t)as;
		e.addr = strtoull(a, NULL, 16) >> 12;
		e.pages = pages;
		if (!strcmp(kind, "mmap") || !strcmp(kind, "mprotect")) {
			e.kind = !strcmp(kind, "mmap") ? T_MMAP : T_MPROTECT;
			if (n < 7 || (e.prot = parse_prot(extra1)) == 0xff)
				goto bad;
		} else if (!strcmp(kind, "munmap")) {
			e.kind = T_MUNMAP;
		} else if (!strcmp(kind, "dontneed")) {
			e.kind = T_DONTNEED;
		} else if (!strcmp(kind, "mremap")) {
			e.kind = T_MREMAP;
			if (n < 8)
				goto bad;
			e.new_addr = strtoull(extra1, NULL, 16) >> 12;
			e.new_pages = strtoull(extra2, NULL, 10);
		} else {
			goto bad;
		}
		if (t->n == cap) {
			struct tevent *ne;

			cap = cap ? cap * 2 : 4096;
			ne = realloc(t->ev, cap * sizeof(*ne));
			if (!ne)
				abort();
			t->ev = ne;
		}
		t->ev[t->n++] = e;
		if (e.thread + 1 > t->threads)
			t->threads = e.thread + 1;
		if (e.as + 1 > t->nas)
			t->nas = e.as + 1;
		continue;
bad:
		snprintf(s->error, sizeof(s->error), "%s:%llu: malformed trace line", path,
			 (unsigned long long)lineno);
		fclose(f);
		free(t->ev);
		free(t);
		return -1;
	}
	fclose(f);
	t->next = calloc(s->cfg.ncpus, sizeof(uint64_t));
	t->as = calloc(t->nas ? t->nas : 1, sizeof(struct tas));
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		t->next[c] = 0;
	s->trace = t;
	return 0;
}

/* Next event of a thread that runs on @cpu, from index @from. */
static uint64_t next_for(const struct sim *s, const struct trace *t, uint32_t cpu, uint64_t from)
{
	while (from < t->n && t->ev[from].thread % s->cfg.ncpus != cpu)
		from++;
	return from;
}

static uint32_t sim_as_of(uint32_t trace_as)
{
	return trace_as % SIM_MAX_AS;
}

static uint8_t perms_of(uint8_t prot)
{
	return prot ? (uint8_t)(prot | SIM_A) : 0;
}

/* Apply @kind to the modelled pages of [start, start + pages) in trace AS
 * @tas: one engine event per run of present pages with the same bits. */
static void apply(struct sim *s, uint32_t cpu, uint32_t tas, uint64_t start, uint64_t pages,
		  enum tkind kind, uint8_t prot)
{
	struct trace *t = s->trace;
	struct tas *a = &t->as[tas];
	uint32_t as = sim_as_of(tas);
	int touched = 0;

	for (uint32_t i = 0; i < a->n; i++) {
		struct mapping *m = &a->m[i];
		uint64_t lo = start > m->start ? start : m->start;
		uint64_t hi = start + pages < m->start + m->pages ? start + pages : m->start + m->pages;
		uint64_t v = lo;

		if (lo >= hi)
			continue;
		while (v < hi) {
			uint64_t d = m->dense + (v - m->start);
			struct sim_page *p = sim_page(s, as, d, 1);
			uint8_t bits = p->perms;
			uint64_t w = v + 1;

			while (w < hi && sim_page(s, as, m->dense + (w - m->start), 1)->perms == bits)
				w++;
			if (bits & SIM_P) {
				if (kind == T_MPROTECT) {
					uint8_t np = prot ? (uint8_t)(perms_of(prot) |
								      (bits & (SIM_A | SIM_D)))
							  : 0;
					if (!prot)
						sim_change(s, cpu, as, TLBPOL_EV_PROTECT, 0, d, w - v, 0);
					else
						sim_change(s, cpu, as, TLBPOL_EV_PROTECT, 0, d, w - v, np);
				} else if (kind == T_MREMAP) {
					sim_change(s, cpu, as, TLBPOL_EV_REMAP, 0, d, w - v, 0);
				} else {
					/* DONTNEED keeps the range mapped: complete
					 * when madvise() returns. */
					sim_change(s, cpu, as, TLBPOL_EV_UNMAP,
						   kind == T_DONTNEED ? TLBPOL_EVF_STAYS_MAPPED : 0, d,
						   w - v, 0);
					touched = 1;
				}
			}
			v = w;
		}
		if (kind == T_MPROTECT)
			m->prot = prot; /* coarse: the whole mapping takes the new protection */
	}
	if (touched || kind == T_MUNMAP || kind == T_DONTNEED) {
		sim_flush(s, cpu, TLBPOL_BY_FREE);
		sim_free_frames_later(s, cpu, as, 0, 0);
	}
}

/* Drop [start, start + pages) from the mappings, splitting where needed. */
static void forget(struct tas *a, uint64_t start, uint64_t pages)
{
	struct mapping *out = malloc((a->n * 2 + 1) * sizeof(*out));
	uint64_t end = start + pages;
	uint32_t k = 0;

	if (!out)
		abort();
	for (uint32_t i = 0; i < a->n; i++) {
		struct mapping m = a->m[i];
		uint64_t mend = m.start + m.pages;

		if (mend <= start || end <= m.start) {
			out[k++] = m;
			continue;
		}
		if (m.start < start) {
			struct mapping head = m;

			head.pages = start - m.start;
			out[k++] = head;
		}
		if (end < mend) {
			struct mapping tail = m;

			tail.start = end;
			tail.dense = m.dense + (end - m.start);
			tail.pages = mend - end;
			out[k++] = tail;
		}
	}
	free(a->m);
	a->m = out;
	a->n = k;
	a->cap = a->n * 2 + 1;
}

static void add_mapping(struct tas *a, uint64_t start, uint64_t pages, uint8_t prot)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->m = realloc(a->m, a->cap * sizeof(*a->m));
		if (!a->m)
			abort();
	}
	a->m[a->n++] = (struct mapping){ start, pages, 0x1000 + a->next_dense, prot };
	a->next_dense += pages + 1;
}

static int trace_setup(struct sim *s)
{
	struct trace *t;

	if (!s->trace_path || sim_load_trace(s, s->trace_path))
		return -1;
	t = s->trace;
	for (uint32_t a = 0; a < SIM_MAX_AS && a < t->nas; a++)
		if (sim_open_as(s) < 0)
			return -1;
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		t->next[c] = next_for(s, t, c, 0);
	return 0;
}

static int trace_step(struct sim *s, uint32_t cpu)
{
	struct trace *t = s->trace;
	struct sim_cpu *c = &s->cpus[cpu];
	struct tevent *e;
	struct tas *a;
	uint32_t as;

	if (t->next[cpu] >= t->n)
		return 0;
	e = &t->ev[t->next[cpu]];
	a = &t->as[e->as];
	as = sim_as_of(e->as);
	if (c->as != (int32_t)as)
		sim_switch(s, cpu, (int32_t)as);
	/* The program runs a little between two system calls. */
	for (int k = 0; k < 4 && a->n; k++) {
		struct mapping *m = &a->m[sim_rand(c) % a->n];
		uint64_t v = m->dense + sim_rand(c) % m->pages;
		int write = !!(m->prot & SIM_W);

		if (!m->prot)
			continue;
		if (sim_access(s, cpu, as, v, write) == ACC_FAULT) {
			sim_fault(s, cpu, as, v, write ? TLBPOL_EVF_WRITE : 0,
				  (uint8_t)(perms_of(m->prot) | (write ? SIM_D : 0)));
			sim_access(s, cpu, as, v, write);
		}
	}
	sim_charge(s, cpu, s->cfg.cost.syscall_ns);
	switch (e->kind) {
	case T_MMAP:
		add_mapping(a, e->addr, e->pages ? e->pages : 1, e->prot);
		break;
	case T_MUNMAP:
		apply(s, cpu, e->as, e->addr, e->pages, T_MUNMAP, 0);
		forget(a, e->addr, e->pages);
		break;
	case T_DONTNEED:
		apply(s, cpu, e->as, e->addr, e->pages, T_DONTNEED, 0);
		break;
	case T_MPROTECT:
		apply(s, cpu, e->as, e->addr, e->pages, T_MPROTECT, e->prot);
		break;
	case T_MREMAP: {
		uint8_t prot = 0;

		for (uint32_t i = 0; i < a->n; i++)
			if (a->m[i].start <= e->addr && e->addr < a->m[i].start + a->m[i].pages)
				prot = a->m[i].prot;
		apply(s, cpu, e->as, e->addr, e->pages, T_MREMAP, 0);
		forget(a, e->addr, e->pages);
		sim_flush(s, cpu, TLBPOL_BY_FREE);
		add_mapping(a, e->new_addr, e->new_pages ? e->new_pages : 1, prot);
		break;
	}
	}
	s->events_done++;
	t->next[cpu] = next_for(s, t, cpu, t->next[cpu] + 1);
	return 1;
}

static void trace_finish(struct sim *s)
{
	struct trace *t = s->trace;

	for (uint32_t a = 0; a < t->nas; a++)
		free(t->as[a].m);
	free(t->as);
	free(t->next);
	free(t->ev);
	free(t);
	s->trace = NULL;
}

const struct workload sim_trace_workload = {
	"trace", "replay of a recorded trace", "-", TLBPOL_ARCH_X86_64, 0, 0, 0, 0, NULL,
	trace_setup, trace_step, trace_finish,
};
