/* SPDX-License-Identifier: MIT */
/*
 * manager.c - the memory manager, the part of softmmu a hypervisor or an
 * emulator copies: a thread with an engine CPU of its own (as kswapd is a
 * kernel thread of its own) that reclaims clean and dirty pages, unmaps
 * ranges (MADV_DONTNEED, munmap), write-protects, ages, migrates and
 * remaps pages and frees page-table pages, each operation in the one
 * pattern libtlbpol asks for: a deferred-free record; each PTE cleared with
 * an atomic exchange and submitted; what must wait for the flush waiting
 * for its deadline (tlbpol_flush()); frames and table pages poisoned and
 * handed back to the free lists only from the tlbpol_defer_free() callback,
 * or, with flush stamps, at once with the stamp (manager_stamp.c).  It has
 * files of its own so that it reads, and copies, apart from the machine:
 * it reaches the page table through pages.c and the interrupt line through
 * mmu.c, is paced by the guest (vcpu_throttle() in guest.c), and tells the
 * checker when each change is complete.
 *
 * This file is the thread: paced by the guest, it picks each operation
 * from the mix, and marks complete the stamped changes whose stamp settled.
 * The operations are manager_ops.c's, the pattern they follow
 * manager_defer.c's and manager_stamp.c's (manager.h).
 */

#include "manager.h"

#include <inttypes.h>

/* A page-aligned start @back pages behind the working set: pages the guest
 * used recently, so most vCPUs' TLBs still hold them. */
static uint32_t behind(struct mgr *m, uint32_t align, uint32_t span)
{
	uint32_t hot = atomic_load_explicit(&m->w->hot_base, memory_order_relaxed);
	uint32_t back = align * (1 + (uint32_t)(rnd(&m->c->rng) % (span / align)));

	return ((hot + NPAGES - back) % NPAGES) & ~(align - 1);
}

static void mgr_op(struct mgr *m)
{
	struct world *w = m->w;
	const struct mix *mx = w->mix;
	unsigned total = 0, pick;
	uint32_t hot = atomic_load_explicit(&w->hot_base, memory_order_relaxed), base = 0;
	int op = 0;

	for (int i = 0; i < OP_MAX; i++)
		total += mx->weight[i];
	pick = (unsigned)(rnd(&m->c->rng) % total);
	while (pick >= mx->weight[op])
		pick -= mx->weight[op++];
	/* Several address spaces: the operation is one process's, chosen at
	 * random (its first page, pg_of(); every range below stays in it). */
	if (w->nas > 1)
		base = pg_of((uint32_t)(rnd(&m->c->rng) % w->nas), 0);
	switch (op) {
	case OP_RECLAIM:
		op_reclaim(m, base + behind(m, CLUSTER, 8 * CLUSTER), CLUSTER);
		break;
	case OP_UNMAP:
		op_unmap(m, base + behind(m, 16, 256), 16);
		break;
	case OP_PROTECT:
		op_protect(m,
			   base + ((hot + (uint32_t)(rnd(&m->c->rng) % HOT_PAGES)) % NPAGES & ~7u),
			   8);
		break;
	case OP_MIGRATE:
		op_migrate(m, base + behind(m, 16, 256), 16);
		break;
	case OP_REMAP: {
		uint32_t a = (hot + (uint32_t)(rnd(&m->c->rng) % HOT_PAGES)) % NPAGES & ~3u;
		uint32_t b = (uint32_t)(rnd(&m->c->rng) % NPAGES) & ~3u;

		op_remap(m, base + a, base + b, 4);
		break;
	}
	case OP_MUNMAP:
		/* One in four is a guard page the program relies on faulting. */
		op_munmap(m, base + behind(m, 16, 256), 16, rnd(&m->c->rng) % 4 == 0);
		break;
	case OP_TABLES:
		op_tables(m, (base + behind(m, GROUP_PAGES, 4 * GROUP_PAGES)) / GROUP_PAGES);
		break;
	default:
		op_aging(m, base + behind(m, CLUSTER, 8 * CLUSTER), CLUSTER);
		break;
	}
	/* The working set drifts: what the manager just worked on behind it
	 * was hot a moment ago. */
	atomic_store_explicit(&w->hot_base, (hot + 2) % NPAGES, memory_order_relaxed);
}

void *mgr_main(void *arg)
{
	struct cpu *c = arg;
	struct world *w = c->w;
	struct mgr m = { w, c, w->mgr, NULL, calloc(1, sizeof(struct stampq)) };
	uint64_t ops = 0;

	if (!m.sq)
		die("out of memory");
	pthread_barrier_wait(&w->start);
	for (;;) {
		uint64_t total = 0;
		int vdone = 1;

		poll_kick(c);
		stamp_poll(&m);
		for (uint32_t i = 0; i < w->nv; i++) {
			total += atomic_load_explicit(&w->cpu[i].progress, memory_order_relaxed);
			vdone &= atomic_load(&w->cpu[i].finished);
		}
		if (atomic_load(&w->abort_run))
			break;
		/* Paced by the guest: operation i once the guest made
		 * i * accesses_per_op accesses. */
		if (ops * w->mix->accesses_per_op <= total && (w->timed || ops < w->mgr_quota)) {
			mgr_op(&m);
			ops++;
			/* The guest may run MAX_LAG operations ahead; once the
			 * manager made all its operations, without limit. */
			atomic_store_explicit(&w->guest_limit,
					      !w->timed && ops >= w->mgr_quota
						      ? UINT64_MAX
						      : (ops + MAX_LAG) * w->mix->accesses_per_op,
					      memory_order_relaxed);
			chk(tlbpol_tick(w->eng, w->mgr), "tlbpol_tick");
			continue;
		}
		if (vdone)
			break;
		chk(tlbpol_tick(w->eng, w->mgr), "tlbpol_tick");
		sleep_on_kick(c, 20000);
	}
	/* Complete everything still pending, lazy work included: every
	 * deferred free runs. */
	chk(tlbpol_flush(w->eng, w->mgr, TLBPOL_BY_LAZY), "tlbpol_flush");
	stamp_poll(&m);
	if (m.sq->dropped || m.sq->head != m.sq->tail)
		printf("note: %s: %" PRIu64 " stamped changes never checked as complete\n",
		       w->policy, m.sq->dropped + (m.sq->tail - m.sq->head));
	free(m.sq);
	c->n[C_OPS] = ops;
	w->t_end = now_s();
	atomic_store(&w->all_done, 1);
	wake_all(w);
	return NULL;
}
