/* SPDX-License-Identifier: MIT */
/*
 * cpus.h - threads acting as CPUs: one thread started per CPU and joined,
 * and the callbacks of a host whose interrupts are mailbox flags
 * (mailbox.h) and whose CPUs hold nothing a flush must remove (the tests
 * that use it check the engine's requests, waits and counts, not a TLB:
 * test_threads.c and the stress oracle model TLBs of their own; and
 * tlbpol-bench's threads rows time the engine's calls only).
 */
#ifndef TLBPOL_SUPPORT_CPUS_H
#define TLBPOL_SUPPORT_CPUS_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tlbpol/tlbpol.h>

#include "support/mailbox.h"

/* Run @fn(@arg) on a thread of its own; a thread that cannot be started
 * ends the test (nothing can be checked without it). */
static inline void cpus_start_one(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int err = pthread_create(t, NULL, fn, arg);

	if (err) {
		fprintf(stderr, "pthread_create: error %d\n", err);
		abort();
	}
}

/* CPUs @from .. @to - 1, each @fn on its own thread @t[cpu], given its CPU
 * number (cpus_id() reads it back). */
static inline void cpus_start(pthread_t *t, uint32_t from, uint32_t to, void *(*fn)(void *))
{
	for (uint32_t c = from; c < to; c++)
		cpus_start_one(&t[c], fn, (void *)(uintptr_t)c);
}

/* CPUs 0 .. @n - 1, each @fn on its own thread @t[cpu], given its element
 * of @args (an array of @n elements of @size bytes). */
static inline void cpus_start_args(pthread_t *t, uint32_t n, void *(*fn)(void *), void *args,
				   size_t size)
{
	for (uint32_t c = 0; c < n; c++)
		cpus_start_one(&t[c], fn, (char *)args + (size_t)c * size);
}

/* The CPU number cpus_start() gave a thread. */
static inline uint32_t cpus_id(void *arg)
{
	return (uint32_t)(uintptr_t)arg;
}

/* Wait for the threads of CPUs @from .. @to - 1 to end. */
static inline void cpus_join(pthread_t *t, uint32_t from, uint32_t to)
{
	for (uint32_t c = from; c < to; c++)
		pthread_join(t[c], NULL);
}

/* ops->flush_local of CPUs that cache no translation. */
static inline void cpus_flush_nothing(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx;
	(void)cpu;
	(void)f;
}

/* The ops_ctx of cpus_mbox_ops: an engine and one mailbox per CPU, and
 * optional counters per CPU for the tests that check how a CPU was
 * reached (served in a wait loop or interrupted, and when it waited). */
struct cpus_mbox {
	struct tlbpol_engine *eng;
	uint32_t nr_cpus;
	struct mbox *box;           /* nr_cpus of them */
	_Atomic uint64_t *served;   /* NULL, or requests each CPU's interrupts served */
	_Atomic uint64_t *relaxes;  /* NULL, or turns of each CPU's wait loops */
};

/* ops->send_ipi: raise each target's mailbox flag. */
static inline void cpus_mbox_send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *t)
{
	struct cpus_mbox *h = ctx;

	(void)from;
	mbox_send(h->box, h->nr_cpus, t);
}

/* Take @cpu's interrupt if one is waiting: what tlbpol_handle_ipi()
 * returned (0 if none was); an error of the handler ends the test. */
static inline int cpus_mbox_take(struct cpus_mbox *h, uint32_t cpu)
{
	int n = mbox_serve(h->box, h->eng, cpu);

	if (n < 0) {
		fprintf(stderr, "tlbpol_handle_ipi(cpu %u): %d\n", cpu, n);
		abort();
	}
	if (n && h->served)
		atomic_fetch_add(&h->served[cpu], (uint64_t)n);
	return n;
}

/* ops->relax of a CPU whose interrupts are on: take them while waiting,
 * and let the other threads run (there may be fewer cores than CPUs). */
static inline void cpus_mbox_relax(void *ctx, uint32_t cpu)
{
	struct cpus_mbox *h = ctx;

	if (h->relaxes)
		atomic_fetch_add(&h->relaxes[cpu], 1);
	cpus_mbox_take(h, cpu);
	sched_yield();
}

static const struct tlbpol_ops cpus_mbox_ops = {
	.size = sizeof(struct tlbpol_ops),
	.flush_local = cpus_flush_nothing,
	.send_ipi = cpus_mbox_send_ipi,
	.relax = cpus_mbox_relax,
};

#endif
