/* SPDX-License-Identifier: MIT */
/*
 * ipi_rtt.c - measure this machine's IPI round trip from user space, for
 * the model of the machine that lab/validate replays traces on.
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
 *   ipi_rtt [-n CALLS] [-m | -g]  prints: "rtt_ns=R alone_ns=A calls=N"
 *
 * -m (mutual): the other thread does not spin but calls membarrier in a
 * loop too, so the two CPUs interrupt each other at once, as two threads
 * of tlb_flush2 shoot each other; rtt_ns is then one call's cost less
 * alone_ns, with the other CPU sending its own meanwhile.
 *
 * -g (gaps): the spinner reads the clock in its loop and times each gap
 * longer than GAP_MIN_NS, which is the CPU an interrupt took from it:
 * delivery into the vCPU, entry, the handler, the EOI, exit (in a guest
 * without APIC virtualization, a VM exit or two among them).  Prints
 * "recv_ns=G gaps=N" beside the round trip: the median gap while the
 * sender calls, and how many gaps there were (about one per call).  What
 * is left of the round trip, rtt_ns - recv_ns, is the sender's ICR write
 * and the delivery; tlbpol-sim's machine profile takes both from here.
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int spin_on, stop;
static int mutual, gaps, shootdown, dontneed;
static char *pages; /* -p: one page per thread, toggled read-only and back */

#define GAP_MIN_NS 500
#define GAP_SLOTS 100000 /* 10 ns buckets up to 1 ms */
static unsigned gap_hist[GAP_SLOTS];
static long gap_count;

static int membarrier(int cmd);

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/*
 * One call: membarrier, or with -p a real TLB shootdown: taking write
 * permission from a present page flushes it on every CPU that runs the mm
 * (mm/mprotect.c change_pte_range() -> tlb_flush_pte_range(), x86's
 * pte_needs_flush() true for a downgrade), as native_flush_tlb_multi() with
 * wait; giving it back needs no flush on x86 (pte_needs_flush() false).
 * Unlike membarrier, nothing serializes two CPUs' shootdowns: Linux 6.x's
 * membarrier takes a global mutex (SERIALIZE_IPI(), kernel/sched/
 * membarrier.c), so -m without -p times the mutex, not the interrupts.
 */
static void one_call(int self)
{
	if (dontneed) {
		char *p = pages + self * 4096;

		p[0] = 1;
		madvise(p, 4096, MADV_DONTNEED);
		return;
	}
	if (shootdown) {
		char *p = pages + self * 4096;

		mprotect(p, 4096, PROT_READ);
		mprotect(p, 4096, PROT_READ | PROT_WRITE);
		return;
	}
	membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static double now_ns(void);

/* -g: spin with the clock in hand; every gap is an interruption. */
static void spin_timing_gaps(void)
{
	double last = now_ns();

	while (atomic_load(&spin_on)) {
		double t = now_ns(), gap = t - last;

		last = t;
		if (gap >= GAP_MIN_NS) {
			long slot = (long)(gap / 10);

			gap_hist[slot < GAP_SLOTS ? slot : GAP_SLOTS - 1]++;
			gap_count++;
		}
	}
}

static double gap_median(void)
{
	long seen = 0;

	for (long i = 0; i < GAP_SLOTS; i++) {
		seen += gap_hist[i];
		if (2 * seen >= gap_count)
			return i * 10.0 + 5;
	}
	return 0;
}

static void *spinner(void *arg)
{
	(void)arg;
	pin(1);
	while (!atomic_load(&stop)) {
		if (atomic_load(&spin_on) && gaps) {
			spin_timing_gaps();
			continue;
		}
		if (atomic_load(&spin_on) && mutual) {
			one_call(1);
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
			one_call(0);
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
		else if (!strcmp(argv[i], "-g"))
			gaps = 1;
		else if (!strcmp(argv[i], "-p"))
			shootdown = 1;
		else if (!strcmp(argv[i], "-d"))
			dontneed = 1;
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
	pages = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED) {
		perror("ipi_rtt: mmap");
		return 1;
	}
	memset(pages, 1, 2 * 4096); /* present, or there is nothing to flush */
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
	if (gaps)
		printf("rtt_ns=%.0f alone_ns=%.0f calls=%ld recv_ns=%.0f gaps=%ld\n", busy - alone,
		       alone, n * 7, gap_median(), gap_count);
	else
		printf("rtt_ns=%.0f alone_ns=%.0f calls=%ld\n", busy - alone, alone, n * 7);
	return 0;
}
