/* SPDX-License-Identifier: MIT */
/*
 * ipi_rtt.c - measure this machine's IPI round trip from user space, for
 * the model of the machine that tools/validate replays traces on.
 *
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) interrupts every other CPU
 * that runs a thread of the calling process and waits until each has run
 * the handler (kernel/sched/membarrier.c: smp_call_function_many() with
 * wait), which is what a TLB shootdown's initiator does (arch/x86/mm/tlb.c:
 * native_flush_tlb_multi() -> on_each_cpu_cond_mask(..., wait = true)).  So
 * its cost with a spinning thread on the other CPU, less its cost with that
 * thread asleep (no CPU to interrupt), is one IPI round trip as a
 * shootdown's initiator sees it: send, delivery, the handler's entry and
 * exit, the acknowledgement.
 *
 *   ipi_rtt [-n CALLS] [-m]  prints: "rtt_ns=R alone_ns=A calls=N"
 *
 * -m (mutual): the other thread does not spin but calls membarrier in a
 * loop too, so the two CPUs interrupt each other at once, as two threads
 * of tlb_flush2 shoot each other; rtt_ns is then one call's cost less
 * alone_ns, with the other CPU sending its own meanwhile.
 *
 * Needs 2 CPUs (it pins itself to CPU 0 and the spinner to CPU 1).
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int spin_on, stop;
static int mutual;

static int membarrier(int cmd);

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *spinner(void *arg)
{
	(void)arg;
	pin(1);
	while (!atomic_load(&stop)) {
		if (atomic_load(&spin_on) && mutual) {
			membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
			continue;
		}
		if (atomic_load(&spin_on))
			continue; /* runs on CPU 1: membarrier must interrupt it */
		usleep(1000); /* asleep: nothing to interrupt */
	}
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Median of @runs rounds of @n calls each, in ns per call. */
static double per_call(long n)
{
	double best[7];

	for (int r = 0; r < 7; r++) {
		double t0 = now_ns();

		for (long i = 0; i < n; i++)
			membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
		best[r] = (now_ns() - t0) / n;
	}
	for (int i = 0; i < 7; i++)
		for (int j = i + 1; j < 7; j++)
			if (best[j] < best[i]) {
				double t = best[i];

				best[i] = best[j];
				best[j] = t;
			}
	return best[3];
}

int main(int argc, char **argv)
{
	long n = 20000;
	pthread_t t;
	double alone, busy;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-m"))
			mutual = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atol(argv[++i]);
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "ipi_rtt: needs 2 CPUs\n");
		return 77;
	}
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) {
		perror("ipi_rtt: membarrier register");
		return 77;
	}
	pin(0);
	pthread_create(&t, NULL, spinner, NULL);
	usleep(20000);
	alone = per_call(n);
	atomic_store(&spin_on, 1);
	usleep(20000);
	busy = per_call(n);
	atomic_store(&spin_on, 0);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("rtt_ns=%.0f alone_ns=%.0f calls=%ld\n", busy - alone, alone, n * 7);
	return 0;
}
