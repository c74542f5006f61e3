/* SPDX-License-Identifier: MIT */
/*
 * trace_load.c - read a recorded trace (lab/trace/FORMAT.md, versions 1
 * to 3) into s->trace: its records, and each thread's list of them;
 * and the replay's own bookkeeping, which calls nothing of the
 * simulator's either: each address space's mapping list, and the page
 * states of --zero-page avoid.  main.c calls sim_load_trace() before the
 * run; trace.c replays what it read.
 */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

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

/*
 * Is the mmap record just read, @t->ev[@t->n - 1], private anonymous
 * memory?  The format has no flag (lab/trace/FORMAT.md: `mmap addr pages
 * prot`), so it is inferred from what the trace has: a mapping made
 * writable or PROT_NONE by a plain mmap (malloc's arenas and big blocks,
 * thread stacks, brk growth, ld.so's scratch pages) is taken as
 * anonymous; a read-only one, or one that replaces a range at once (the
 * converter writes a MAP_FIXED mmap over mapped pages as munmaps then the
 * mmap, at the same time: ld.so placing a library's segments, its .data a
 * private file mapping whose first read maps the file's page) is not.
 * Wrong for a file mapped MAP_PRIVATE writable without MAP_FIXED, and for
 * a .bss placed with MAP_FIXED (anonymous, kept on the zero page here).
 */
static uint8_t inferred_anon(const struct trace *t)
{
	const struct tevent *e = &t->ev[t->n - 1];

	if (e->prot && !(e->prot & SIM_W))
		return 0;
	for (uint64_t i = t->n - 1; i-- > 0;) {
		const struct tevent *u = &t->ev[i];

		if (u->time != e->time || u->thread != e->thread || u->kind != T_MUNMAP)
			break;
		if (u->addr >= e->addr && u->addr < e->addr + e->pages)
			return 0;
	}
	return 1;
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
		char kind[32], a[32] = "", f6[32] = "", extra1[32] = "", extra2[32] = "";
		unsigned long long tm, th, as, pages = 0;
		struct tevent e;
		int n;

		lineno++;
		if (lineno == 1) {
			if (!strcmp(line, "# tlbpol-trace v1\n"))
				t->version = 1;
			else if (!strcmp(line, "# tlbpol-trace v2\n"))
				t->version = 2;
			else if (!strcmp(line, "# tlbpol-trace v3\n"))
				t->version = 3;
			else
				goto bad;
			/* Version 3 is a recording with its page faults:
			 * every fault it could place is a record. */
			t->faults = t->version >= 3;
			continue;
		}
		if (line[0] == '#' || line[0] == '\n')
			continue;
		n = sscanf(line, "%llu %llu %llu %31s %31s %31s %31s %31s", &tm, &th, &as, kind, a,
			   f6, extra1, extra2);
		memset(&e, 0, sizeof(e));
		if (n < 4)
			goto bad;
		e.time = tm;
		e.thread = (uint32_t)th;
		e.as = (uint32_t)as;
		if (t->version >= 2 && (!strcmp(kind, "clone") || !strcmp(kind, "exec"))) {
			if (n != 5)
				goto bad;
			e.kind = !strcmp(kind, "clone") ? T_CLONE : T_EXEC;
			if (e.kind == T_CLONE)
				e.addr = strtoull(a, NULL, 10);
			else
				e.new_addr = strtoull(a, NULL, 10);
		} else if (t->version >= 2 && !strcmp(kind, "fork")) {
			if (n != 6)
				goto bad;
			e.kind = T_FORK;
			e.addr = strtoull(a, NULL, 10);
			e.new_addr = strtoull(f6, NULL, 10);
		} else if (t->version >= 2 && !strcmp(kind, "exit")) {
			if (n != 4)
				goto bad;
			e.kind = T_EXIT;
		} else if (t->version >= 3 && !strcmp(kind, "fault")) {
			if (n != 6)
				goto bad;
			e.kind = T_FAULT;
			e.addr = strtoull(a, NULL, 16) >> 12;
			if (!strcmp(f6, "read"))
				e.new_pages = TF_READ;
			else if (!strcmp(f6, "write"))
				e.new_pages = TF_WRITE;
			else if (!strcmp(f6, "cow"))
				e.new_pages = TF_COW;
			else
				goto bad;
		} else if (t->version >= 2 && !strcmp(kind, "block")) {
			if (n != 6)
				goto bad;
			e.kind = T_BLOCK;
			e.new_addr = strtoull(a, NULL, 10);
		} else {
			if (n < 6)
				goto bad;
			pages = strtoull(f6, NULL, 10);
		}
		if (e.kind < T_CLONE) {
			e.addr = strtoull(a, NULL, 16) >> 12;
			e.pages = pages;
		}
		if (e.kind >= T_CLONE) {
			/* parsed above */
		} else if (!strcmp(kind, "mmap") || !strcmp(kind, "mprotect")) {
			e.kind = !strcmp(kind, "mmap") ? T_MMAP : T_MPROTECT;
			if (n < 7 || (e.prot = parse_prot(extra1)) == 0xff)
				goto bad;
			/* An 8th field of an mmap (version 3 on): what it maps,
			 * from its MAP_ flags and fd: anon (MAP_PRIVATE |
			 * MAP_ANONYMOUS, or brk), file (MAP_PRIVATE of a file)
			 * or shared (MAP_SHARED of either: never the zero page). */
			if (e.kind == T_MMAP && n == 8 && t->version >= 3) {
				if (strcmp(extra2, "anon") && strcmp(extra2, "file") &&
				    strcmp(extra2, "shared"))
					goto bad;
				e.anon = !strcmp(extra2, "anon") ? 1 : 0x80;
				t->map_kinds = 1;
			}
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
		if (e.kind == T_MMAP)
			t->ev[t->n - 1].anon = e.anon ? e.anon & 1 : inferred_anon(t);
		if (e.thread + 1 > t->threads)
			t->threads = e.thread + 1;
		if (e.as + 1 > t->nas)
			t->nas = e.as + 1;
		if ((e.kind == T_CLONE || e.kind == T_FORK) && e.addr + 1 > t->threads)
			t->threads = (uint32_t)e.addr + 1;
		if ((e.kind == T_FORK || e.kind == T_EXEC) && e.new_addr + 1 > t->nas)
			t->nas = (uint32_t)e.new_addr + 1;
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
	if (!t->version) {
		snprintf(s->error, sizeof(s->error), "%s: not a tlbpol-trace", path);
		free(t->ev);
		free(t);
		return -1;
	}
	t->as = calloc(t->nas ? t->nas : 1, sizeof(struct tas));
	t->th = calloc(t->threads ? t->threads : 1, sizeof(struct tthread));
	t->is_child = calloc(t->threads ? t->threads : 1, 1);
	if (!t->as || !t->th || !t->is_child)
		abort();
	for (uint32_t a = 0; a < t->nas; a++) {
		t->as[a].next_dense = (uint64_t)(a / SIM_MAX_AS) << 26;
		t->as[a].zp_base = 0x1000 + t->as[a].next_dense;
	}
	/* Each thread's records, and which threads a record makes. */
	for (uint64_t i = 0; i < t->n; i++) {
		struct tthread *tt = &t->th[t->ev[i].thread];

		if (t->ev[i].kind == T_CLONE || t->ev[i].kind == T_FORK)
			t->is_child[t->ev[i].addr] = 1;
		if (!tt->n)
			tt->tas = t->ev[i].as;
		tt->n++;
	}
	for (uint32_t th = 0; th < t->threads; th++) {
		t->th[th].idx = malloc((t->th[th].n ? t->th[th].n : 1) * sizeof(uint64_t));
		if (!t->th[th].idx)
			abort();
		t->th[th].n = 0;
	}
	for (uint64_t i = 0; i < t->n; i++) {
		struct tthread *tt = &t->th[t->ev[i].thread];

		tt->idx[tt->n++] = i;
	}
	s->trace = t;
	return 0;
}

/* Drop [start, start + pages) from the mappings, splitting where needed. */
void trace_forget(struct tas *a, uint64_t start, uint64_t pages)
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

void trace_add_mapping(struct tas *a, uint64_t start, uint64_t pages, uint8_t prot, uint8_t anon)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->m = realloc(a->m, a->cap * sizeof(*a->m));
		if (!a->m)
			abort();
	}
	a->m[a->n++] = (struct mapping){ start, pages, 0x1000 + a->next_dense, prot, anon };
	a->next_dense += pages + 1;
}

uint8_t *zp_state(struct tas *a, uint64_t vpn, int create)
{
	uint64_t c = (vpn - a->zp_base) / SIM_CHUNK;

	if (c >= a->zp_chunks) {
		uint64_t n = a->zp_chunks ? a->zp_chunks : 64;

		if (!create)
			return NULL;
		while (n <= c)
			n *= 2;
		a->zp = realloc(a->zp, n * sizeof(*a->zp));
		if (!a->zp)
			abort();
		memset(a->zp + a->zp_chunks, 0, (n - a->zp_chunks) * sizeof(*a->zp));
		a->zp_chunks = n;
	}
	if (!a->zp[c] && create && !(a->zp[c] = calloc(SIM_CHUNK, 1)))
		abort();
	return a->zp[c] ? &a->zp[c][(vpn - a->zp_base) % SIM_CHUNK] : NULL;
}

void zp_drop(struct trace *t, struct tas *a, uint64_t vpn, uint64_t n)
{
	for (uint64_t v = vpn; v < vpn + n && (v - a->zp_base) / SIM_CHUNK < a->zp_chunks;) {
		uint8_t *c = a->zp[(v - a->zp_base) / SIM_CHUNK];
		uint64_t end = v - (v - a->zp_base) % SIM_CHUNK + SIM_CHUNK;

		for (; v < end && v < vpn + n; v++)
			if (c && c[(v - a->zp_base) % SIM_CHUNK]) {
				t->zp_unwritten += c[(v - a->zp_base) % SIM_CHUNK] & ZP_FRESH;
				c[(v - a->zp_base) % SIM_CHUNK] = 0;
			}
	}
}

void zp_fork(struct tas *a)
{
	for (uint64_t c = 0; c < a->zp_chunks; c++)
		for (uint32_t i = 0; a->zp[c] && i < SIM_CHUNK; i++)
			a->zp[c][i] &= (uint8_t)~ZP_OWN;
}

double trace_compute_ns(const struct trace *t)
{
	double total = 0;

	for (uint32_t th = 0; th < t->threads; th++) {
		uint64_t last = 0;

		for (uint64_t k = 0; k < t->th[th].n; k++) {
			const struct tevent *e = &t->ev[t->th[th].idx[k]];
			uint64_t at = e->kind == T_BLOCK ? e->time - e->new_addr : e->time;

			if (k && at > last)
				total += (double)(at - last);
			last = e->time;
		}
	}
	return total;
}
