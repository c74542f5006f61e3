/* SPDX-License-Identifier: MIT */
/*
 * tlb_flush2.c - the will-it-scale tlb_flush2 pattern, for lab/validate.
 *
 * Each of T threads maps its own private anonymous buffer of 16 pages and
 * loops: write one byte to each of the 16 pages (16 page faults), then
 * madvise(MADV_DONTNEED) the 16 pages.  One loop is one operation.  While
 * another thread of the process runs on another CPU, every MADV_DONTNEED
 * is a TLB shootdown to that CPU (the address space is live there), even
 * though no other thread ever touched these pages.
 *
 *   tlb_flush2 [-a] [-t THREADS] [-s SECONDS | -n ITERATIONS]
 *
 * -s runs for a fixed time (default 2 s) and is what run.sh measures;
 * -a puts each thread's buffer alone in a 2 MiB region (a page-table page,
 * a PTE lock and a VMA of its own); without it the buffers are neighbours
 * that share all three, as will-it-scale's threads do.
 * -n runs a fixed number of operations per thread (what run.sh records
 * under strace, where the timed loop would make a huge trace).  Prints one
 * line: "threads=T ops=N seconds=S ops_per_s=R".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGES 16
#define PAGE 4096
#define MAX_THREADS 64

static atomic_int go, stop;
static long iterations;		/* per thread, with -n; 0: until stop */
static int apart;		/* -a: each buffer alone in its 2 MiB */

struct worker {
	pthread_t tid;
	long ops;
	char pad[64];
};

static void *loop(void *arg)
{
	struct worker *w = arg;
	char *buf = mmap(NULL, PAGES * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long n = 0;

	if (apart && buf != MAP_FAILED) {
		/* -a: the buffer at the start of a 2 MiB region of its own, in
		 * a reservation of 4 MiB: its PTEs in a page-table page (and
		 * under a PTE lock) no other thread's share, in a VMA of its
		 * own.  Without it the threads' buffers are neighbours, and
		 * the kernel merges them into one VMA under one PTE page. */
		char *res = mmap(NULL, 4UL << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *at = (char *)(((unsigned long)res + (2UL << 20) - 1) & ~((2UL << 20) - 1));

		munmap(buf, PAGES * PAGE);
		buf = res == MAP_FAILED ? MAP_FAILED
			: mmap(at, PAGES * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	if (buf == MAP_FAILED) {
		perror("tlb_flush2: mmap");
		exit(1);
	}
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	while (iterations ? n < iterations : !atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < PAGES; i++)
			buf[(size_t)i * PAGE] = (char)n;
		if (madvise(buf, PAGES * PAGE, MADV_DONTNEED)) {
			perror("tlb_flush2: madvise");
			exit(1);
		}
		n++;
	}
	w->ops = n;
	munmap(buf, PAGES * PAGE);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	double seconds = 2.0, t0, t1;
	int threads = 1, c;
	long total = 0;

	while ((c = getopt(argc, argv, "at:s:n:")) != -1) {
		switch (c) {
		case 'a': apart = 1; break;
		case 't': threads = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'n': iterations = atol(optarg); break;
		default:
			fprintf(stderr, "usage: tlb_flush2 [-a] [-t THREADS] [-s SECONDS | -n ITERATIONS]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || seconds <= 0 || iterations < 0) {
		fprintf(stderr, "tlb_flush2: bad argument\n");
		return 2;
	}
	for (int i = 0; i < threads; i++)
		if (pthread_create(&w[i].tid, NULL, loop, &w[i])) {
			fprintf(stderr, "tlb_flush2: pthread_create failed\n");
			return 1;
		}
	usleep(10000); /* let every thread map its buffer and spin at the gate */
	t0 = now();
	atomic_store_explicit(&go, 1, memory_order_release);
	if (!iterations) {
		struct timespec ts = { (time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9) };

		nanosleep(&ts, NULL);
		atomic_store_explicit(&stop, 1, memory_order_relaxed);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		total += w[i].ops;
	}
	t1 = now();
	printf("threads=%d ops=%ld seconds=%.3f ops_per_s=%.0f\n", threads, total, t1 - t0,
	       (double)total / (t1 - t0));
	return 0;
}
