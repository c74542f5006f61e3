/* SPDX-License-Identifier: MIT */
/*
 * trace_load.c - read a recorded trace (lab/trace/FORMAT.md, versions 1
 * to 3) into s->trace: its records, and each thread's list of them.
 * main.c calls sim_load_trace() before the run; trace.c replays what it
 * read.  Calls nothing of the simulator's.
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
	for (uint32_t a = 0; a < t->nas; a++)
		t->as[a].next_dense = (uint64_t)(a / SIM_MAX_AS) << 26;
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
