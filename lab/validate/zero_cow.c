/* SPDX-License-Identifier: MIT */
/*
 * zero_cow.c - copy-on-write faults of the shared zero page, the pattern
 * of allocators that drop pages with MADV_DONTNEED and read them before
 * writing them again (a calloc'd table checked before it is filled).
 *
 * Each of T threads maps a private anonymous buffer of P pages and loops:
 * read one byte of each page (a read fault maps the zero page,
 * read-only), write one byte of each (do_wp_page() copies it to a new
 * frame: ptep_clear_flush(), a TLB shootdown to the CPUs the other threads
 * run on), then madvise(MADV_DONTNEED) the buffer (one more shootdown).
 * The threads start together (a barrier) so that they overlap.
 *
 *   zero_cow [-t THREADS] [-p PAGES] [-n ITERATIONS]    (default 2 8 10)
 *
 * Prints "threads=T pages=P iterations=N sum=S".  lab/trace/record.sh
 * records it with its page faults (samples/zero-cow.*).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096
#define MAX_THREADS 64

static long pages = 8, iterations = 10;
static pthread_barrier_t start;

static void *loop(void *arg)
{
	volatile char *buf = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long sum = 0;

	(void)arg;
	if (buf == MAP_FAILED) {
		perror("zero_cow: mmap");
		exit(1);
	}
	pthread_barrier_wait(&start);
	for (long i = 0; i < iterations; i++) {
		for (long p = 0; p < pages; p++)
			sum += buf[p * PAGE];
		for (long p = 0; p < pages; p++)
			buf[p * PAGE] = (char)(i + 1);
		if (madvise((void *)buf, pages * PAGE, MADV_DONTNEED)) {
			perror("zero_cow: madvise");
			exit(1);
		}
	}
	munmap((void *)buf, pages * PAGE);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	pthread_t tid[MAX_THREADS];
	long threads = 2, sum = 0;
	int c;

	while ((c = getopt(argc, argv, "t:p:n:")) != -1) {
		switch (c) {
		case 't':
			threads = strtol(optarg, NULL, 10);
			break;
		case 'p':
			pages = strtol(optarg, NULL, 10);
			break;
		case 'n':
			iterations = strtol(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: zero_cow [-t THREADS] [-p PAGES] [-n ITERATIONS]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || pages < 1 || iterations < 0) {
		fprintf(stderr, "zero_cow: bad arguments\n");
		return 2;
	}
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (long t = 0; t < threads; t++)
		if (pthread_create(&tid[t], NULL, loop, NULL)) {
			fprintf(stderr, "zero_cow: pthread_create failed\n");
			return 1;
		}
	for (long t = 0; t < threads; t++) {
		void *r;

		pthread_join(tid[t], &r);
		sum += (long)r;
	}
	printf("threads=%ld pages=%ld iterations=%ld sum=%ld\n", threads, pages, iterations, sum);
	return 0;
}
