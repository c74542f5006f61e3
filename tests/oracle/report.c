/* SPDX-License-Identifier: MIT */
/*
 * report.c - what the oracle tells: violations (counted by kind, the first
 * max_reports of a world printed with its configuration, so that one line
 * is enough to reproduce it), contract warnings that are not unsafe, the
 * ring of recent events that ORC_TRACE=1 prints with the first violation,
 * and the counters.  It sits at the bottom of the model: every other file
 * reports through it, and it calls none of them, so a report can be made
 * from anywhere, under any lock but log_lock.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdlib.h>

#include "machine.h"

/* The CPU this thread acts as, and for which world. */
_Thread_local int self_cpu = -1;
_Thread_local struct orc_world *self_world;

static const char *const vkind_names[ORC_V_MAX] = {
	[ORC_V_STALE] = "stale-after-completion",
	[ORC_V_RESUME] = "stale-after-catch-up",
	[ORC_V_USE] = "stale-entry-used",
	[ORC_V_LOST_WRITE] = "lost-write",
	[ORC_V_FRAME] = "freed-frame-mapped",
	[ORC_V_TABLE] = "freed-table-cached",
	[ORC_V_WALK] = "freed-table-walked",
	[ORC_V_FREE] = "deferred-free",
	[ORC_V_API] = "api",
	[ORC_V_DATA] = "stale-data",
	[ORC_V_STALL] = "stall",
	[ORC_V_IPI_OFFLINE] = "ipi-to-offline",
	[ORC_V_BOUNDED] = "bounded-free",
	[ORC_V_LOCKLESS] = "freed-table-lockless-walk",
	[ORC_V_TAG] = "tag-reused-unflushed",
};

const char *orc_vkind_name(enum orc_vkind k)
{
	return (unsigned)k < ORC_V_MAX ? vkind_names[k] : "unknown";
}

void count(struct orc_world *w, enum orc_ckind k, uint64_t n)
{
	if (self_world == w && self_cpu >= 0)
		atomic_fetch_add_explicit(&w->cpus[self_cpu].cnt[k], n, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&w->glob[k], n, memory_order_relaxed);
}

const char *orc_arch_name(uint32_t arch)
{
	return arch == TLBPOL_ARCH_X86_64	 ? "x86"
	       : arch == TLBPOL_ARCH_ARM64	 ? "arm64"
	       : arch == TLBPOL_ARCH_RISCV64 ? "riscv64"
					 : "generic";
}

/* Permission bits @p as "pwxuadg" with '-' for each one clear, in @out. */
const char *perm_str(uint32_t p, char out[8])
{
	const char *l = "pwxuadg";

	for (int i = 0; i < 7; i++)
		out[i] = (p >> i) & 1 ? l[i] : '-';
	out[7] = 0;
	return out;
}

static void trace_dump(struct orc_world *w);

void violation(struct orc_world *w, enum orc_vkind k, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add(&w->viol[k], 1);
	if (atomic_fetch_add(&w->reports, 1) >= w->cfg.max_reports)
		return;
	pthread_mutex_lock(&w->log_lock);
	fprintf(w->cfg.log, "VIOLATION %s [cpus=%u arch=%s rules=%#llx%s seed=%llu]: ",
		vkind_names[k], w->cfg.nr_cpus, orc_arch_name(w->cfg.arch),
		(unsigned long long)w->cfg.rules,
		(w->cfg.flags & TLBPOL_CFGF_RETAIN_AS) ? " retain" : "",
		(unsigned long long)w->cfg.seed);
	va_start(ap, fmt);
	vfprintf(w->cfg.log, fmt, ap);
	va_end(ap);
	fputc('\n', w->cfg.log);
	if (!atomic_exchange(&w->dumped, 1) && getenv("ORC_TRACE"))
		trace_dump(w);
	fflush(w->cfg.log);
	pthread_mutex_unlock(&w->log_lock);
}

void trace(struct orc_world *w, int cpu, enum trace_op op, uint32_t as, uint32_t page,
	   uint32_t a, uint32_t b)
{
	uint64_t seq = atomic_fetch_add_explicit(&w->trace_seq, 1, memory_order_relaxed);
	struct trace_ent *t = &w->trace[seq % TRACE_LEN];

	atomic_store_explicit(&t->w0,
			      seq << 24 | (uint64_t)(cpu & 0xff) << 16 | (uint64_t)op << 8 | (as & 0xff),
			      memory_order_relaxed);
	atomic_store_explicit(&t->w1, (uint64_t)(page & 0xffff) | (uint64_t)(a & 0xffffff) << 16 |
					      (uint64_t)(b & 0xffffff) << 40,
			      memory_order_relaxed);
}

/* Print the trace's last entries (racy by nature: entries being written
 * may show torn; it is a debugging aid, not part of the oracle). */
static void trace_dump(struct orc_world *w)
{
	static const char *const ops[] = { "submit", "flush", "bcast", "ipi", "take", "switch",
					   "unload", "state", "eflush", "tick", "dfree-reg",
					   "dfree-run", "detach", "table-free", "psc", "catch-up" };
	uint64_t end = atomic_load(&w->trace_seq);
	uint64_t start = end > TRACE_DUMP ? end - TRACE_DUMP : 0;

	fprintf(w->cfg.log, "  last %llu events (seq cpu op as page a b):\n",
		(unsigned long long)(end - start));
	for (uint64_t i = start; i < end; i++) {
		struct trace_ent *t = &w->trace[i % TRACE_LEN];
		uint64_t w0 = atomic_load_explicit(&t->w0, memory_order_relaxed);
		uint64_t w1 = atomic_load_explicit(&t->w1, memory_order_relaxed);
		uint32_t op = (w0 >> 8) & 0xff, a = (w1 >> 16) & 0xffffff, b = (uint32_t)(w1 >> 40);

		if ((w0 >> 24) != (i & ((1ULL << 40) - 1)))
			continue;
		fprintf(w->cfg.log, "  %8llu cpu%-2u %-10s as%-2u %4u ", (unsigned long long)(w0 >> 24),
			(unsigned)((w0 >> 16) & 0xff), op < 16 ? ops[op] : "?", (unsigned)(w0 & 0xff),
			(unsigned)(w1 & 0xffff));
		switch (op) {
		case TR_SUBMIT:
			fprintf(w->cfg.log, "kind %u %s/%s/%s flags %#x n %u old %#x new %#x\n", a & 7,
				tlbpol_action_str((a >> 3) & 3), tlbpol_deadline_str((a >> 5) & 3),
				tlbpol_reason_str((a >> 7) & 31), a >> 12, b & 0xff, (b >> 8) & 0xff,
				(b >> 16) & 0xff);
			break;
		case TR_FLUSH:
		case TR_BCAST:
			fprintf(w->cfg.log, "%s%s ranges %u pages %u\n",
				(a & 3) == 0 ? "pages" : (a & 3) == 1 ? "as" : "all",
				(a >> 2) & 1 ? "+tables" : "", a >> 4, b);
			break;
		default:
			fprintf(w->cfg.log, "%#x %#x\n", a, b);
			break;
		}
	}
}

/* A contract note that is not a safety problem (reported once each). */
void warning(struct orc_world *w, const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&w->glob[ORC_C_WARNINGS], 1) >= 3)
		return;
	pthread_mutex_lock(&w->log_lock);
	fputs("warning: ", w->cfg.log);
	va_start(ap, fmt);
	vfprintf(w->cfg.log, fmt, ap);
	va_end(ap);
	fputc('\n', w->cfg.log);
	pthread_mutex_unlock(&w->log_lock);
}

/* Counter @k over every CPU and the world's own. */
uint64_t total(const struct orc_world *w, enum orc_ckind k)
{
	uint64_t n = atomic_load(&w->glob[k]);

	for (uint32_t i = 0; i < w->cfg.nr_cpus; i++)
		n += atomic_load(&w->cpus[i].cnt[k]);
	return n;
}

void orc_read_counters(const struct orc_world *w, uint64_t c[ORC_C_MAX], uint64_t v[ORC_V_MAX])
{
	for (int k = 0; k < ORC_C_MAX; k++)
		c[k] = total(w, (enum orc_ckind)k);
	for (int k = 0; k < ORC_V_MAX; k++)
		v[k] = atomic_load(&w->viol[k]);
	/* Lost frees count as violations. */
	if (c[ORC_C_FREES_RUN] < c[ORC_C_FREES_REG])
		v[ORC_V_FREE] += c[ORC_C_FREES_REG] - c[ORC_C_FREES_RUN];
}

uint64_t orc_violations(const struct orc_world *w)
{
	uint64_t c[ORC_C_MAX], v[ORC_V_MAX], n = 0;

	orc_read_counters(w, c, v);
	for (int k = 0; k < ORC_V_MAX; k++)
		n += v[k];
	return n;
}
