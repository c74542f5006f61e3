/* SPDX-License-Identifier: MIT */
/*
 * tag_stress: the tag allocators under threads acting as CPUs, with more
 * address spaces than tags, checked by a model of each CPU's TLB by tag.
 *
 * Each CPU's TLB is modelled as, per hardware tag, whose entries it may
 * hold: nobody's (flushed), one address space's, or unknown (what boot
 * left: every tag starts so).  A CPU switches to a random address space:
 * tlbpol_tag_load(), then the flush it was told (a tag, or everything),
 * then it runs, filling the tag with that address space's entries.  Two
 * checks, each a violation when it fails:
 *  - reuse: the tag it loads holds entries of another address space (or
 *    unknown ones) after the flush: the new owner would hit them.  A slot
 *    reused without its flush, or a rollover that leaves a CPU out of the
 *    flush of all, fails here.
 *  - agreement (global generations): while a CPU runs an address space
 *    under a tag, the address space's tag (tlbpol_tag_of()) stays that
 *    tag, so that a broadcast that names it reaches this CPU.  A rollover
 *    that does not keep running CPUs' tags fails here.  (Per-CPU slots:
 *    the CPU's slot stays its own until its next load.)
 * With --global N, per-CPU slots beside N global tags: now and then a CPU
 * makes the address space it switches to global (tlbpol_tag_make_global()),
 * and with --release PCT a CPU closes an address space no CPU runs
 * (tlbpol_tag_release()) and opens a new one in its place (a new
 * identity, a new owner for the model): a global tag given back must not
 * reach a new owner while a CPU may still hold the old one's entries.
 * The tag counters are printed (rollovers every few hundred loads at the
 * configurations meson runs).  --expect-violations inverts the exit
 * status, for the planted builds (TLBPOL_PLANTED_TAG_NO_FLUSH,
 * TLBPOL_PLANTED_ROLLOVER_MISSES_CPU, TLBPOL_PLANTED_GLOBAL_TAG_EARLY_REUSE).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlbpol/tlbpol.h>

#define CLEAN (-1)
#define UNKNOWN (-2)

struct opts {
	uint32_t kind, cpus, ids, bits, first, slots, global, release;
	uint64_t loads, seed;
	int expect, quiet;
};

static struct opts o = { TLBPOL_TAGS_GLOBAL, 4, 24, 4, 1, 0, 0, 0, 20000, 1, 0, 0 };
static struct tlbpol_tags *tags;
static struct tlbpol_tag_id *ids;
/* Per address space: CPUs running it (-1: being closed), and how many
 * times it was closed (its owner in the model: index + ids x epoch). */
static atomic_int *users;
static atomic_uint *epochs;
static atomic_ulong violations, releases, globals;

static void violation(uint32_t cpu, const char *what, uint32_t tag, int x, int other)
{
	if (atomic_fetch_add(&violations, 1) < 10)
		fprintf(stderr, "VIOLATION cpu %u: %s: tag %u for owner %d, %s %d\n", cpu, what,
			tag, x, other == UNKNOWN ? "unknown entries" : "entries of owner", other);
}

/* Start running address space @x, unless it is being closed. */
static int enter(int x)
{
	int n = atomic_load(&users[x]);

	while (n >= 0)
		if (atomic_compare_exchange_weak(&users[x], &n, n + 1))
			return 1;
	return 0;
}

/* Close address space @x if no CPU runs it, and open another in its
 * place: its global tag back to the pool, a new identity. */
static void close_reopen(uint32_t x)
{
	int zero = 0;

	if (!atomic_compare_exchange_strong(&users[x], &zero, -1))
		return;
	if (tlbpol_tag_release(tags, &ids[x]) || tlbpol_tag_id_init(tags, &ids[x]))
		abort();
	atomic_fetch_add(&epochs[x], 1u);
	atomic_fetch_add(&releases, 1);
	atomic_store(&users[x], 0);
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *cpu_main(void *arg)
{
	uint32_t cpu = (uint32_t)(uintptr_t)arg;
	uint32_t ntags = 1u << o.bits;
	int *tlb = malloc(ntags * sizeof(int));
	uint64_t rnd = o.seed * 0x9e3779b97f4a7c15ULL + cpu + 1;
	int x = -1;

	if (!tlb)
		abort();
	for (uint32_t t = 0; t < ntags; t++)
		tlb[t] = UNKNOWN;
	for (uint64_t n = 0; n < o.loads; n++) {
		struct tlbpol_tag_use u;
		int err, owner;

		/* Mostly a change of address space, sometimes the same again. */
		if (x < 0 || next_rand(&rnd) % 4)
			x = (int)(next_rand(&rnd) % o.ids);
		if (!enter(x)) {
			x = -1;
			continue;
		}
		owner = x + (int)(o.ids * atomic_load(&epochs[x]));
		if (o.global && next_rand(&rnd) % 8 == 0 &&
		    tlbpol_tag_make_global(tags, &ids[x]) >= 0)
			atomic_fetch_add(&globals, 1);
		err = tlbpol_tag_load(tags, cpu, &ids[x], &u);
		if (err || u.tag < o.first || u.tag >= ntags) {
			fprintf(stderr, "cpu %u: tlbpol_tag_load: %d, tag %u\n", cpu, err, u.tag);
			abort();
		}
		if (u.flush == TLBPOL_TAG_FLUSH_ALL)
			for (uint32_t t = 0; t < ntags; t++)
				tlb[t] = CLEAN;
		else if (u.flush == TLBPOL_TAG_FLUSH_TAG)
			tlb[u.tag] = CLEAN;
		if (tlb[u.tag] != CLEAN && tlb[u.tag] != owner)
			violation(cpu, "a tag reused without its flush", u.tag, owner, tlb[u.tag]);
		/* Run: walks fill the tag with x's entries.  Meanwhile others
		 * load, roll over, take tags: x's tag must stay ours. */
		tlb[u.tag] = owner;
		for (int k = 0; k < 3; k++) {
			int now = tlbpol_tag_of(tags, cpu, &ids[x]);

			if (now != (int)u.tag)
				violation(cpu, "the address space's tag moved while this CPU runs it",
					  u.tag, x, now);
			if (next_rand(&rnd) % 8 == 0)
				sched_yield();
		}
		atomic_fetch_sub(&users[x], 1);
		if (o.release && next_rand(&rnd) % 100 < o.release)
			close_reopen((uint32_t)(next_rand(&rnd) % o.ids));
	}
	free(tlb);
	return NULL;
}

static int arg_u64(const char *s, uint64_t *v)
{
	char *end;

	*v = strtoull(s, &end, 0);
	return *s && !*end;
}

static int parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		uint64_t v = 0;

		if (!strcmp(a, "--expect-violations")) {
			o.expect = 1;
		} else if (!strcmp(a, "--quiet")) {
			o.quiet = 1;
		} else if (!strcmp(a, "--kind") && i + 1 < argc) {
			a = argv[++i];
			if (!strcmp(a, "percpu"))
				o.kind = TLBPOL_TAGS_PERCPU;
			else if (!strcmp(a, "global"))
				o.kind = TLBPOL_TAGS_GLOBAL;
			else
				return -1;
		} else if (i + 1 < argc && arg_u64(argv[i + 1], &v)) {
			i++;
			if (!strcmp(a, "--cpus"))
				o.cpus = (uint32_t)v;
			else if (!strcmp(a, "--ids"))
				o.ids = (uint32_t)v;
			else if (!strcmp(a, "--bits"))
				o.bits = (uint32_t)v;
			else if (!strcmp(a, "--first"))
				o.first = (uint32_t)v;
			else if (!strcmp(a, "--slots"))
				o.slots = (uint32_t)v;
			else if (!strcmp(a, "--global"))
				o.global = (uint32_t)v;
			else if (!strcmp(a, "--release"))
				o.release = (uint32_t)v;
			else if (!strcmp(a, "--loads"))
				o.loads = v;
			else if (!strcmp(a, "--seed"))
				o.seed = v;
			else
				return -1;
		} else {
			return -1;
		}
	}
	return o.cpus && o.ids ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct tlbpol_tags_config cfg;
	struct tlbpol_tags_stats st = { sizeof(st), 0, 0, 0, 0, 0 };
	pthread_t *th;
	void *mem;
	size_t len;
	int err;

	if (parse(argc, argv)) {
		fprintf(stderr, "usage: %s [--kind percpu|global] [--cpus N] [--ids N] [--bits N]\n"
				"  [--first N] [--slots N] [--global N] [--release PCT] [--loads N]\n"
				"  [--seed N] [--quiet] [--expect-violations]\n",
			argv[0]);
		return 2;
	}
	if (o.kind == TLBPOL_TAGS_PERCPU && !o.slots)
		o.slots = 6;
	cfg = (struct tlbpol_tags_config){ sizeof(cfg), o.kind, o.cpus, o.bits, o.first,
					   o.kind == TLBPOL_TAGS_PERCPU ? o.slots : 0,
					   o.kind == TLBPOL_TAGS_PERCPU ? o.global : 0, 0 };
	len = tlbpol_tags_size(&cfg);
	ids = calloc(o.ids, sizeof(*ids));
	users = calloc(o.ids, sizeof(*users));
	epochs = calloc(o.ids, sizeof(*epochs));
	th = calloc(o.cpus, sizeof(*th));
	if (!len || !ids || !users || !epochs || !th || posix_memalign(&mem, 64, len)) {
		fprintf(stderr, "bad configuration or no memory\n");
		return 2;
	}
	err = tlbpol_tags_init(&tags, mem, len, &cfg);
	for (uint32_t i = 0; !err && i < o.ids; i++)
		err = tlbpol_tag_id_init(tags, &ids[i]);
	if (err) {
		fprintf(stderr, "tlbpol_tags_init: %s\n", strerror(-err));
		return 2;
	}
	for (uint32_t c = 0; c < o.cpus; c++)
		if (pthread_create(&th[c], NULL, cpu_main, (void *)(uintptr_t)c))
			abort();
	for (uint32_t c = 0; c < o.cpus; c++)
		pthread_join(th[c], NULL);
	tlbpol_tags_stats_read(tags, -1, &st);
	if (!o.quiet || atomic_load(&violations) || o.expect)
		printf("%s, %u CPUs, %u address spaces, tags %u..%u%s, %u global: %llu loads, "
		       "%llu tag flushes, %llu flushes of all, %llu rollovers, %lu made global, "
		       "%lu closed; %lu violations\n",
		       o.kind == TLBPOL_TAGS_PERCPU ? "per-CPU slots" : "global generations",
		       o.cpus, o.ids, o.first,
		       o.kind == TLBPOL_TAGS_PERCPU ? o.first + o.slots - 1 : (1u << o.bits) - 1,
		       o.kind == TLBPOL_TAGS_PERCPU ? " per CPU" : "", o.global,
		       (unsigned long long)st.loads, (unsigned long long)st.tag_flushes,
		       (unsigned long long)st.all_flushes, (unsigned long long)st.rollovers,
		       atomic_load(&globals), atomic_load(&releases), atomic_load(&violations));
	free(mem);
	free(ids);
	free(users);
	free(epochs);
	free(th);
	if (o.expect)
		return atomic_load(&violations) ? 0 : 1;
	return atomic_load(&violations) ? 1 : 0;
}
