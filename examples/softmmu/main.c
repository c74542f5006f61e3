/* SPDX-License-Identifier: MIT */
/*
 * main.c - softmmu's entry: real TLB shootdowns between threads, in the
 * style of an emulator's software TLB (QEMU's TCG keeps one per vCPU),
 * driven by libtlbpol.  This file reads the options, builds the machine,
 * runs the same guest work and page-table changes once per rule mask (one
 * vCPU thread per vCPU, guest.c, and the memory manager's thread,
 * manager.c), and prints the comparison and the stale uses the checker
 * counted.  It exists to keep the measuring apart from the machine and
 * from the manager that users copy; the command line is options.c's.
 */

/*
 * Measuring.  One run per rule mask (naive = TLBPOL_RULES_NONE, linux =
 * TLBPOL_RULES_LINUX, default = TLBPOL_RULES_DEFAULT, or any mask).  The
 * first runs --seconds and defines the work: how many guest accesses each
 * vCPU made and how many operations the manager made.  The manager is paced
 * by the guest (one operation per accesses_per_op guest accesses, as memory
 * pressure follows the guest's activity), and a guest that gets MAX_LAG
 * operations ahead of a manager that cannot keep up stalls, as direct
 * reclaim throttles a task; so every policy interleaves the same guest work
 * with the same page-table changes.  The others repeat exactly that work, so
 * their wall times, kicks and flushes compare directly.
 *
 * Exit status: 0 with no stale use; 1 if any was found ("stale uses found");
 * with --expect-stale (the planted-bug build, or --bug) 0 only if some were
 * found; 2 on a usage or internal error.  --bug plants a bug in this program
 * instead (vCPU 0 ignores page flushes, vCPUs ignore the catch-up flush,
 * the allocator hands out a frame whose flush stamp has not settled, or
 * vCPUs ignore the flush their switch's tag asks for), to show that the
 * checks catch it.
 */

#include "options.h"

#include <errno.h>
#include <inttypes.h>

/* --free-ticks: the engine's cfg.free_ticks (0: its default). */
static uint32_t free_ticks;

/* CPU @who's random stream (splitmix64 of --seed): every run of a policy
 * starts each vCPU and the manager from the same point. */
static uint64_t seed_of(uint64_t seed, uint32_t who)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (who + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return z ? z : 1;
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

struct result {
	const char *name;
	double wall;
	int aborted;
	uint64_t n[C_MAX];
	struct tlbpol_stats st;
	struct tlbpol_tags_stats ts; /* --tags: the allocator's counters */
	uint64_t stale, stale_kind[S_MAX];
};

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

	if (!p)
		die("out of memory (%zu bytes)", n);
	memset(p, 0, n);
	return p;
}

/* Fresh machine, engine and address space for a run of @rules; every page
 * mapped. */
static void world_setup(struct world *w, uint64_t rules, const char *policy, uint64_t seed)
{
	struct tlbpol_config cfg;
	size_t len;

	w->policy = policy;
	w->rules = rules;
	atomic_store(&w->hot_base, 0);
	atomic_store(&w->guest_limit, (uint64_t)MAX_LAG * w->mix->accesses_per_op);
	atomic_store(&w->stop, 0);
	atomic_store(&w->abort_run, 0);
	atomic_store(&w->all_done, 0);
	atomic_store(&w->stale_total, 0);
	for (int k = 0; k < S_MAX; k++)
		atomic_store(&w->stale[k], 0);
	atomic_store(&w->dfree_reg, 0);
	atomic_store(&w->dfree_run, 0);
	for (uint32_t i = 0; i <= w->nv; i++) {
		struct cpu *c = &w->cpu[i];
		uint64_t quota = c->quota;

		memset(c, 0, sizeof(*c));
		c->w = w;
		c->id = i;
		c->rng = seed_of(seed, i);
		c->quota = quota;
		c->wval = (uint64_t)i << 48;
		c->space = NO_SPACE;
	}

	tlbpol_config_init(&cfg, w->nv + 1, TLBPOL_ARCH_X86_64);
	cfg.rules = rules;
	cfg.free_ticks = free_ticks;
	cfg.max_as = w->nas;
	cfg.ops = &softmmu_ops;
	cfg.ops_ctx = w;
	tags_setup(w, &cfg);
	len = tlbpol_engine_size(&cfg);
	if (!len)
		die("tlbpol_engine_size: invalid configuration");
	/* tlbpol_engine_init() in our own memory: the freestanding
	 * constructor, no hosted layer needed. */
	w->eng_mem = xalloc(len);
	chk(tlbpol_engine_init(&w->eng, w->eng_mem, len, &cfg), "tlbpol_engine_init");
	for (uint32_t a = 0; a < w->nas; a++)
		chk(tlbpol_as_open(w->eng, a + 1, &w->as[a]), "tlbpol_as_open");
	pages_setup(w);
}

static void run(struct world *w, struct result *res, double seconds)
{
	pthread_t *th = calloc(w->nv + 1, sizeof(*th));
	double limit = w->timed ? 0 : 20 * seconds + 10;

	if (!th)
		die("out of memory");
	if (pthread_barrier_init(&w->start, NULL, w->nv + 2))
		die("pthread_barrier_init failed");
	for (uint32_t i = 0; i <= w->nv; i++)
		if (pthread_create(&th[i], NULL, i < w->nv ? vcpu_main : mgr_main, &w->cpu[i]))
			die("pthread_create failed");
	pthread_barrier_wait(&w->start);
	w->t_start = now_s();
	if (w->timed) {
		struct timespec ts = { (time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		atomic_store(&w->stop, 1);
	} else {
		/* A policy far slower than the first is cut short, not waited for. */
		while (!atomic_load(&w->all_done)) {
			struct timespec ts = { 0, 10000000 };

			nanosleep(&ts, NULL);
			if (now_s() - w->t_start > limit) {
				atomic_store(&w->abort_run, 1);
				res->aborted = 1;
				break;
			}
		}
	}
	for (uint32_t i = 0; i <= w->nv; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&w->start);
	free(th);

	res->wall = w->t_end - w->t_start;
	memset(res->n, 0, sizeof(res->n));
	for (uint32_t i = 0; i <= w->nv; i++)
		for (int k = 0; k < C_MAX; k++)
			res->n[k] += w->cpu[i].n[k];
	chk(tlbpol_stats_read(w->eng, -1, &res->st), "tlbpol_stats_read");
	res->ts.size = sizeof(res->ts);
	if (w->tags)
		chk(tlbpol_tags_stats_read(w->tags, -1, &res->ts), "tlbpol_tags_stats_read");
	res->stale = atomic_load(&w->stale_total);
	for (int k = 0; k < S_MAX; k++)
		res->stale_kind[k] = atomic_load(&w->stale[k]);
	/* The bookkeeping must add up: every kick counted by the engine went
	 * through send_ipi, every deferred free ran exactly once.  With tags
	 * the engine counts, without a flush_local call, the flushes of an
	 * address space a vCPU holds under no tag (its slot went, with its
	 * flush): only more calls than it counted are worth a note. */
	if (w->tags ? res->n[C_FLUSHES] > res->st.local_flushes + res->st.remote_flushes
		    : res->n[C_FLUSHES] != res->st.local_flushes + res->st.remote_flushes)
		printf("note: %s: %" PRIu64 " flush_local calls, the engine counted %" PRIu64 "\n",
		       w->policy, res->n[C_FLUSHES],
		       res->st.local_flushes + res->st.remote_flushes);
	if (res->n[C_KICKS] != res->st.ipis_sent)
		die("%s: send_ipi saw %" PRIu64 " targets, the engine counted %" PRIu64, w->policy,
		    res->n[C_KICKS], res->st.ipis_sent);
	if (atomic_load(&w->dfree_run) != atomic_load(&w->dfree_reg))
		die("%s: %" PRIu64 " deferred frees registered, %" PRIu64 " ran", w->policy,
		    atomic_load(&w->dfree_reg), atomic_load(&w->dfree_run));
	free(w->eng_mem);
	free(w->tags_mem);
	w->eng_mem = w->tags_mem = NULL;
	w->eng = NULL;
	w->tags = NULL;
}

/* ------------------------------------------------------------------------ */
/* The report                                                               */
/* ------------------------------------------------------------------------ */

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* "%.3f" of @a / @b into @buf, or "-" without a reference run. */
static const char *ratio_str(char *buf, double a, const struct result *ref, double b)
{
	if (!ref)
		return "-";
	snprintf(buf, 16, "%.3f", ratio(a, b));
	return buf;
}

static void report(const struct result *res, int np, int naive_i, int linux_i, uint32_t nv)
{
	const struct result *nr = naive_i >= 0 ? &res[naive_i] : NULL;
	const struct result *lr = linux_i >= 0 ? &res[linux_i] : NULL;

	printf("%-8s %7s %7s %7s %9s %9s %9s %9s %6s %7s %7s %7s %7s\n", "policy", "wall s",
	       "Macc/s", "mm ops", "kicks", "flushes", "full", "pages", "stale", "kicks", "kicks",
	       "wall", "wall");
	printf("%-8s %7s %7s %7s %9s %9s %9s %9s %6s %7s %7s %7s %7s\n", "", "", "", "", "", "", "",
	       "", "", "/naive", "/linux", "/naive", "/linux");
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];
		char b[4][16];

		printf("%-8s %7.3f %7.2f %7" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		       " %9" PRIu64 " %6" PRIu64 " %7s %7s %7s %7s%s\n",
		       r->name, r->wall, ratio((double)r->n[C_ACCESSES], r->wall) / 1e6,
		       r->n[C_OPS], r->n[C_KICKS], r->n[C_FLUSHES], r->st.full_flushes,
		       r->st.pages_flushed, r->stale,
		       ratio_str(b[0], (double)r->n[C_KICKS], nr, nr ? (double)nr->n[C_KICKS] : 0),
		       ratio_str(b[1], (double)r->n[C_KICKS], lr, lr ? (double)lr->n[C_KICKS] : 0),
		       ratio_str(b[2], r->wall, nr, nr ? nr->wall : 0),
		       ratio_str(b[3], r->wall, lr, lr ? lr->wall : 0),
		       r->aborted ? "  (cut short: too slow)" : "");
	}
	printf("\n%-8s %10s %7s %8s %8s %8s %7s %8s %7s %8s %8s %8s %8s %6s %7s\n", "policy",
	       "accesses", "pages", "misses", "faults", "installs", "upgrade", "spurious", "busy",
	       "irqs", "wakeups", "catchups", "halts", "halted", "stalls");
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];
		char halts[32];

		snprintf(halts, sizeof(halts), "%" PRIu64 "+%" PRIu64, r->n[C_IDLE],
			 r->n[C_PREEMPT]);
		printf("%-8s %10" PRIu64 " %7" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %7" PRIu64 " %8" PRIu64 " %7" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %8s %5.1f%% %7" PRIu64 "\n",
		       r->name, r->n[C_ACCESSES], r->n[C_OP_PAGES], r->n[C_WALKS], r->n[C_FAULTS],
		       r->n[C_INSTALLS], r->n[C_UPGRADES], r->n[C_SPURIOUS], r->n[C_RETRIES],
		       r->n[C_IRQS], r->n[C_WAKEUPS], r->n[C_CATCHUPS], halts,
		       100.0 * ratio((double)r->n[C_HALTED_US] * 1e-6, r->wall * nv),
		       r->n[C_THROTTLED]);
	}
	/* Two tables: lab/results/parse.py reads the first's four columns. */
	printf("\n%-8s %10s %10s %10s  (flush stamps: frames freed at once)\n", "policy",
	       "stamped", "reused", "waited");
	for (int i = 0; i < np; i++)
		printf("%-8s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n", res[i].name,
		       res[i].n[C_STAMPED], res[i].n[C_REUSED], res[i].n[C_SETTLE_WAITS]);
	printf("\n%-8s %10s %10s %10s %10s\n", "policy", "early", "preferred", "guards",
	       "dead uses");
	for (int i = 0; i < np; i++)
		printf("%-8s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n", res[i].name,
		       res[i].n[C_EARLY], res[i].n[C_PREFERRED], res[i].n[C_GUARDS],
		       res[i].n[C_DEAD_USES]);
	printf("\nwall: until every vCPU made its accesses and the manager its operations.\n"
	       "kicks: send_ipi targets (interrupts); flushes: flush_local calls, local and\n"
	       "remote; full: whole-TLB flushes; pages: pages named by page flushes; stale: must\n"
	       "be 0.\n"
	       "2nd table: pages: PTEs the manager changed; misses: soft-TLB misses (walks);\n"
	       "busy: accesses retried later (page locked by the manager); irqs: kicks taken;\n"
	       "wakeups: kicks that woke a sleeping thread; catchups: full flushes asked for by\n"
	       "tlbpol_cpu_state() returning 1; halts: idle + preempted spells; halted: their\n"
	       "share of vCPU time; stalls: guest stalls behind a manager that fell behind.\n"
	       "Flush stamps: stamped: frames freed at once with a stamp; reused: of them\n"
	       "handed out again; waited: settles that interrupted or waited; early: reuses\n"
	       "before the stamp settled; preferred: handouts that passed the frame freed\n"
	       "last for a settled one; guards: munmaps left unstamped (the fault is relied on);\n"
	       "dead uses: guest accesses through a stale entry to a stamped frame not yet\n"
	       "reused (allowed: its contents are dead but nobody else has it).\n");
	if (res[0].n[C_SWITCHES] || res[0].ts.loads) {
		printf("\n%-8s %10s %10s %10s %10s %10s %10s  (address spaces and tags)\n",
		       "policy", "switches", "flushed", "loads", "tag flush", "all flush",
		       "rollovers");
		for (int i = 0; i < np; i++)
			printf("%-8s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64
			       " %10" PRIu64 " %10" PRIu64 "\n",
			       res[i].name, res[i].n[C_SWITCHES], res[i].n[C_SWITCH_FLUSHES],
			       res[i].ts.loads, res[i].ts.tag_flushes, res[i].ts.all_flushes,
			       res[i].ts.rollovers);
		printf("switches: the guest scheduler's, to another address space; flushed: of\n"
		       "them, those told to flush the tag or all (the allocator's word, or the\n"
		       "engine's catch-up for flushes skipped while away); loads: the allocator's\n"
		       "tlbpol_tag_load() calls (the first switch's too); tag flush / all flush:\n"
		       "loads it told to flush the tag (a slot changed hands) or every tag (a\n"
		       "rollover); rollovers: new generations of the global pool.\n");
	}
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];

		if (strcmp(r->name, "default"))
			continue;
		if (nr)
			printf("\ndefault vs naive: %.1fx fewer kicks, %.2fx the wall time "
			       "(%.1fx faster)",
			       ratio((double)nr->n[C_KICKS], (double)r->n[C_KICKS]),
			       ratio(r->wall, nr->wall), ratio(nr->wall, r->wall));
		if (lr)
			printf("\ndefault vs linux: %.2fx the kicks, %.2fx the wall time",
			       ratio((double)r->n[C_KICKS], (double)lr->n[C_KICKS]),
			       ratio(r->wall, lr->wall));
		printf("\n");
	}
	for (int i = 0; i < np; i++) {
		const struct result *r = &res[i];

		if (!r->stale)
			continue;
		printf("%s: %" PRIu64 " stale uses:", r->name, r->stale);
		for (int k = 0; k < S_MAX; k++)
			if (r->stale_kind[k])
				printf(" %s %" PRIu64 ";", stale_names[k], r->stale_kind[k]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	struct policy pol[MAX_POLICIES];
	struct result res[MAX_POLICIES];
	uint64_t total_stale = 0;
	int np, naive_i, linux_i;
	struct opts o;
	struct world *w;
	uint32_t nv;
	char tb[16];

	parse_options(argc, argv, &o);
	np = parse_rules(o.rules, pol, &naive_i, &linux_i);
	nv = o.nv;
	free_ticks = o.free_ticks;

	w = xalloc(sizeof(*w));
	w->nv = nv;
	w->mgr = nv;
	w->mix = o.mix;
	w->bug = o.bug;
	w->stamps = !o.no_stamps;
	w->stamp_look = o.stamp_look;
	w->nas = o.nas;
	w->tags_kind = o.tags_kind;
	w->tags_param = o.tags_param;
	w->npages = w->nas * NPAGES;
	w->nframes = w->nas * AS_FRAMES;
	w->ntables = w->nas * AS_TABLES;
	w->cpu = xalloc((nv + 1) * sizeof(*w->cpu));
	w->frames = xalloc(w->nframes * sizeof(*w->frames));
	w->tables = xalloc(w->ntables * sizeof(*w->tables));
	w->backing = xalloc(w->npages * sizeof(*w->backing));
	w->backing_valid = xalloc(w->npages);
	w->pver = xalloc(w->npages * sizeof(*w->pver));
	pthread_mutex_init(&w->pool_lock, NULL);

	printf("softmmu: %u vCPU threads + 1 memory-manager thread, %u guest pages in %u "
	       "page-table pages,\nsoft TLB %u entries per vCPU, libtlbpol %s%s\n",
	       nv, NPAGES, NGROUPS, TLB_SIZE, tlbpol_version(),
#ifdef SOFTMMU_PLANTED
	       " (core built with TLBPOL_PLANTED_BUG)"
#else
	       ""
#endif
	);
	printf("mix \"%s\": %s; one manager operation per %u guest accesses\n", o.mix->name,
	       o.mix->what, o.mix->accesses_per_op);
	printf("flush stamps: %s (the rule is in default; --no-stamps turns them off)\n",
	       o.no_stamps ? "off" : "on for reclaim and munmap");
	if (w->nas > 1)
		printf("address spaces: %u, the vCPUs switching every %u blocks; ", w->nas,
		       SWITCH_BLOCKS);
	else if (w->tags_kind != TAGS_OFF)
		printf("address spaces: 1, no switch; ");
	if (w->nas > 1 || w->tags_kind != TAGS_OFF)
		printf("tags: %s%s\n", tags_str(w, tb),
		       w->bug == BUG_TAG_NO_FLUSH ? " (planted: switches ignore their flush)" : "");
	printf("work: \"%s\" runs %.1f s; the others repeat exactly its work (guest accesses per\n"
	       "vCPU, manager operations)\n\n",
	       pol[0].name, o.seconds);
	fflush(stdout);

	for (int i = 0; i < np; i++) {
		struct result *r = &res[i];

		memset(r, 0, sizeof(*r));
		r->name = pol[i].name;
		w->timed = i == 0;
		world_setup(w, pol[i].rules, r->name, o.seed);
		run(w, r, o.seconds);
		if (i == 0) {
			/* The first run defines the work of the others. */
			for (uint32_t c = 0; c < nv; c++)
				w->cpu[c].quota = w->cpu[c].n[C_ACCESSES];
			w->mgr_quota = w->cpu[nv].n[C_OPS];
		}
		total_stale += r->stale;
		fflush(stdout);
	}

	report(res, np, naive_i, linux_i, nv);
	pthread_mutex_destroy(&w->pool_lock);
	free(w->pver);
	free(w->backing_valid);
	free(w->backing);
	free(w->tables);
	free(w->frames);
	free(w->cpu);
	free(w);
	if (o.expect) {
		if (total_stale) {
			printf("planted bug detected: %" PRIu64 " stale uses (expected)\n",
			       total_stale);
			return 0;
		}
		printf("planted bug NOT detected: no stale use\n");
		return 1;
	}
	if (total_stale) {
		printf("FAIL: stale uses found\n");
		return 1;
	}
	printf("no stale use\n");
	return 0;
}
