/* SPDX-License-Identifier: MIT */
/*
 * test_threads: threads acting as CPUs, with real concurrency.
 *
 * Each thread is a CPU with a software TLB (one cached PTE per page, filled
 * on access, emptied only by flush_local).  send_ipi raises the target's
 * mailbox flag (support/mailbox.h), which the target polls between accesses
 * and answers with tlbpol_handle_ipi(), as a CPU takes an interrupt between
 * instructions.
 * Every thread both accesses all pages and changes its own pages, so CPUs
 * shoot each other down at the same time.
 *
 * Oracle: when tlbpol_submit() returns for a BY_NOW decision, and when a
 * deferred free runs, no thread's TLB may hold an entry for the changed page
 * that permits more than the page table now does (a stale, stricter entry is
 * allowed on x86).  Violations are counted and fail the test.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "support/stale.h"
#include "support/cpus.h"
#include "support/mailbox.h"
#include "support/rng.h"
#include "support/harness.h"

#define RW_BITS (P | W | U | A | D)

#define NCPU_MAX 4
#define PAGES_PER_CPU 32
#define NPAGES (NCPU_MAX * PAGES_PER_CPU)
#define ITERS 20000

/* A PTE here: perms in the low byte, frame number above. */
#define FRAME_SHIFT 8

struct world {
	struct tlbpol_engine *eng;
	struct tlbpol_as *as;
	uint32_t ncpu, arch;
	_Atomic uint32_t pt[NPAGES];
	_Atomic uint32_t tlb[NCPU_MAX][NPAGES];
	struct mbox box[NCPU_MAX]; /* interrupts, and how many each CPU was sent */
	_Atomic uint64_t violations, frees_run, frees_registered;
	_Atomic uint32_t next_frame;
};

static struct world Wd;

static void w_flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	struct world *w = ctx;

	if (f->kind != TLBPOL_FLUSH_PAGES) {
		for (uint32_t p = 0; p < NPAGES; p++)
			atomic_store(&w->tlb[cpu][p], 0);
		return;
	}
	for (uint32_t r = 0; r < f->nr_ranges; r++)
		for (uint64_t i = 0; i < f->ranges[r].nr_pages; i++) {
			uint64_t page = (f->ranges[r].va >> 12) + i;

			if (page < NPAGES)
				atomic_store(&w->tlb[cpu][page], 0);
		}
}

static void w_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct world *w = ctx;

	(void)from;
	mbox_send(w->box, w->ncpu, t);
}

static void w_relax(void *ctx, uint32_t cpu)
{
	(void)ctx;
	(void)cpu;
	sched_yield();
}

/* Does @tlb permit something @pt does not?  The one definition, for every
 * checker: support/stale.h. */
static int stale(const struct world *w, uint32_t tlb, uint32_t pt)
{
	return model_stale_harmful(w->arch, tlb & 0xff, tlb >> FRAME_SHIFT, pt & 0xff,
				   pt >> FRAME_SHIFT);
}

static void oracle(struct world *w, uint32_t page, const char *when)
{
	uint32_t pt = atomic_load(&w->pt[page]);

	for (uint32_t c = 0; c < w->ncpu; c++) {
		uint32_t e = atomic_load(&w->tlb[c][page]);

		if (stale(w, e, pt)) {
			if (atomic_fetch_add(&w->violations, 1) < 5)
				fprintf(stderr, "violation (%s): cpu %u page %u tlb %#x pt %#x\n", when,
					c, page, e, pt);
		}
	}
}

struct freed_page {
	struct world *w;
	uint32_t page;
};

static void on_free(void *arg)
{
	struct freed_page *fp = arg;

	/* The frame is about to be reused: every TLB must have let go. */
	oracle(fp->w, fp->page, "deferred free");
	atomic_fetch_add(&fp->w->frees_run, 1);
	free(fp);
}

static void poll_ipi(struct world *w, uint32_t cpu)
{
	assert_true(mbox_serve(w->box, w->eng, cpu) >= 0);
}

static void access_page(struct world *w, uint32_t cpu, uint32_t page, int write)
{
	uint32_t e = atomic_load(&w->tlb[cpu][page]);

	if (!e) {
		e = atomic_load(&w->pt[page]); /* walk */
		if (!(e & P))
			return; /* would fault */
		atomic_store(&w->tlb[cpu][page], e);
	}
	(void)write;
}

static void change_page(struct world *w, uint32_t cpu, uint32_t page, uint32_t op)
{
	uint32_t old = atomic_load(&w->pt[page]), new;
	struct tlbpol_event ev;
	struct tlbpol_decision d;

	if (!(old & P)) {
		/* Map a new frame: submitted before the PTE is stored (the
		 * contract for installs); not present -> present is never a
		 * remote flush, and only GENERIC flushes locally. */
		new = (atomic_fetch_add(&w->next_frame, 1) << FRAME_SHIFT) | RW_BITS;
		ev = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, (uint64_t)page << 12, 1, 0, new & 0xff);
		assert_int_equal(tlbpol_submit(w->eng, w->as, cpu, &ev, &d), 0);
		assert_int_equal(d.action, w->arch == TLBPOL_ARCH_GENERIC ? TLBPOL_ACT_LOCAL
									   : TLBPOL_ACT_NONE);
		atomic_store(&w->pt[page], new);
		return;
	}
	switch (op % 4) {
	case 0: /* write-protect: BY_NOW */
		new = old & ~(uint32_t)W;
		atomic_store(&w->pt[page], new);
		ev = h_event(TLBPOL_EV_PROTECT, 0, (uint64_t)page << 12, 1, old & 0xff, new & 0xff);
		break;
	case 1: /* make writable again: an upgrade */
		new = old | W;
		atomic_store(&w->pt[page], new);
		ev = h_event(TLBPOL_EV_PROTECT, 0, (uint64_t)page << 12, 1, old & 0xff, new & 0xff);
		break;
	case 2: { /* unmap, free the frame only through a deferred free */
		struct freed_page *fp = malloc(sizeof(*fp));

		atomic_store(&w->pt[page], 0);
		ev = h_event(op & 4 ? TLBPOL_EV_RECLAIM : TLBPOL_EV_UNMAP, 0, (uint64_t)page << 12, 1,
			     old & 0xff, 0);
		assert_int_equal(tlbpol_submit(w->eng, w->as, cpu, &ev, &d), 0);
		fp->w = w;
		fp->page = page;
		atomic_fetch_add(&w->frees_registered, 1);
		assert_int_equal(tlbpol_defer_free(w->eng, cpu, on_free, fp), 0);
		return;
	}
	default: /* COW-style move to a new frame: break-before-make */
		new = (atomic_fetch_add(&w->next_frame, 1) << FRAME_SHIFT) | (old & 0xff);
		atomic_store(&w->pt[page], 0);
		ev = h_event(TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE | TLBPOL_EVF_PFN_CHANGED,
			     (uint64_t)page << 12, 1, old & 0xff, new & 0xff);
		assert_int_equal(tlbpol_submit(w->eng, w->as, cpu, &ev, &d), 0);
		assert_int_equal(d.deadline, TLBPOL_BY_NOW);
		oracle(w, page, "after submit (cleared)");
		atomic_store(&w->pt[page], new);
		return;
	}
	assert_int_equal(tlbpol_submit(w->eng, w->as, cpu, &ev, &d), 0);
	if (d.deadline == TLBPOL_BY_NOW)
		oracle(w, page, "after submit");
}

struct cpu_arg {
	struct world *w;
	uint32_t cpu;
	uint32_t seed;
};

static void *cpu_thread(void *p)
{
	struct cpu_arg *a = p;
	struct world *w = a->w;
	uint32_t cpu = a->cpu, x = a->seed;

	assert_int_equal(tlbpol_switch(w->eng, cpu, w->as, NULL), 0);
	for (int i = 0; i < ITERS; i++) {
		rng_lcg32(&x); /* bits 8 and up only: the low ones are weak */
		poll_ipi(w, cpu);
		if ((x >> 16) % 4) {
			access_page(w, cpu, (x >> 8) % (w->ncpu * PAGES_PER_CPU), (x >> 20) & 1);
		} else {
			uint32_t page = cpu * PAGES_PER_CPU + (x >> 9) % PAGES_PER_CPU;

			change_page(w, cpu, page, x >> 24);
		}
		if ((x >> 12) % 64 == 0)
			assert_true(tlbpol_flush(w->eng, cpu, TLBPOL_BY_FREE) >= 0);
	}
	assert_true(tlbpol_flush(w->eng, cpu, TLBPOL_BY_LAZY) >= 0);
	/* Keep answering interrupts until every CPU is done. */
	return NULL;
}

static _Atomic int done_count;

static void *cpu_main(void *p)
{
	struct cpu_arg *a = p;

	cpu_thread(p);
	atomic_fetch_add(&done_count, 1);
	while (atomic_load(&done_count) < (int)a->w->ncpu) {
		poll_ipi(a->w, a->cpu);
		sched_yield();
	}
	poll_ipi(a->w, a->cpu);
	return NULL;
}

static void run(uint32_t ncpu, uint32_t arch, uint64_t rules)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops),
		.flush_local = w_flush_local,
		.send_ipi = w_send_ipi,
		.relax = w_relax,
	};
	struct world *w = &Wd;
	struct tlbpol_config cfg;
	pthread_t t[NCPU_MAX];
	struct cpu_arg args[NCPU_MAX];
	struct tlbpol_stats st;

	memset(w, 0, sizeof(*w));
	atomic_store(&done_count, 0);
	w->ncpu = ncpu;
	w->arch = arch;
	atomic_store(&w->next_frame, 1);
	tlbpol_config_init(&cfg, ncpu, arch);
	cfg.rules = rules;
	cfg.ops = &ops;
	cfg.ops_ctx = w;
	assert_int_equal(tlbpol_engine_new(&cfg, &w->eng), 0);
	assert_int_equal(tlbpol_as_open(w->eng, 1, &w->as), 0);
	for (uint32_t p = 0; p < NPAGES; p++)
		atomic_store(&w->pt[p], (atomic_fetch_add(&w->next_frame, 1) << FRAME_SHIFT) | RW_BITS);
	for (uint32_t c = 0; c < ncpu; c++)
		args[c] = (struct cpu_arg){ w, c, rng_seed32(c) };
	cpus_start_args(t, ncpu, cpu_main, args, sizeof(args[0]));
	cpus_join(t, 0, ncpu);
	assert_int_equal(tlbpol_stats_read(w->eng, -1, &st), 0);
	printf("# %u cpus arch %u rules %#llx: events %llu ipis %llu remote %llu frees %llu/%llu\n",
	       ncpu, arch, (unsigned long long)rules, (unsigned long long)st.events,
	       (unsigned long long)st.ipis_sent, (unsigned long long)st.remote_flushes,
	       (unsigned long long)atomic_load(&w->frees_run),
	       (unsigned long long)atomic_load(&w->frees_registered));
	assert_int_equal(atomic_load(&w->violations), 0);
	/* Every deferred free ran, exactly once (each frees its argument). */
	assert_int_equal(atomic_load(&w->frees_run), atomic_load(&w->frees_registered));
	assert_int_equal(st.deferred_frees, atomic_load(&w->frees_registered));
	/* Shootdowns really crossed threads. */
	assert_true(st.ipis_sent > 0);
	assert_int_equal(st.ipis_sent, mbox_sent_total(w->box, ncpu));
	tlbpol_engine_free(w->eng);
}

/* One CMocka test a configuration, named for it. */
#define RUN_TEST(name, ncpu, arch, rules) \
	static void name(void **s)        \
	{                                 \
		(void)s;                  \
		run(ncpu, arch, rules);   \
	}

RUN_TEST(test_two_cpus_default, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_DEFAULT)
RUN_TEST(test_two_cpus_naive, 2, TLBPOL_ARCH_X86_64, TLBPOL_RULES_NONE)
RUN_TEST(test_two_cpus_linux_arm64, 2, TLBPOL_ARCH_ARM64, TLBPOL_RULES_LINUX)
RUN_TEST(test_four_cpus_generic, 4, TLBPOL_ARCH_GENERIC, TLBPOL_RULES_DEFAULT)

H_TEST_MAIN(
	cmocka_unit_test(test_two_cpus_default),
	cmocka_unit_test(test_two_cpus_naive),
	cmocka_unit_test(test_two_cpus_linux_arm64),
	cmocka_unit_test(test_four_cpus_generic));
