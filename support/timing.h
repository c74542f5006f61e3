/* SPDX-License-Identifier: MIT */
/*
 * timing.h - clocks, sleeps and the spin-wait hint of the tests and of
 * tlbpol-bench.
 *
 * Times are nanoseconds in a uint64_t: differences of two readings of one
 * clock are then plain subtractions, and 2^64 ns is 584 years of uptime.
 *
 * clock_gettime() and nanosleep() are POSIX, which -std=c11 hides: the
 * including file defines _POSIX_C_SOURCE (or _GNU_SOURCE) before its first
 * #include, or is built with -pthread (its _REENTRANT makes glibc show
 * POSIX.1c, which has them).
 */
#ifndef TLBPOL_TESTS_COMMON_TIMING_H
#define TLBPOL_TESTS_COMMON_TIMING_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* Clock @id (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...) in ns. */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Wall time for intervals: CLOCK_MONOTONIC, which no settimeofday() or NTP
 * step moves (NTP only slews its rate), through the vDSO: no system call.
 */
static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* CPU time this thread has run: its share of a wall interval says how
 * long it was off its CPU (preempted by another program). */
static inline uint64_t thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Sleep @ns at least, a signal notwithstanding. */
static inline void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The spin-wait hint, as the kernel's cpu_relax(): x86 PAUSE lets the
 * core's SMT sibling run and spares the pipeline flush on leaving a loop
 * that polls memory; arm64 YIELD is the same hint.  Elsewhere none.  The
 * "memory" clobber makes it a compiler barrier too, so that a loop around
 * it reloads what it polls.
 */
#if defined(__x86_64__) || defined(__i386__)
#define TIMING_RELAX_INSN "pause"
#elif defined(__aarch64__)
#define TIMING_RELAX_INSN "yield"
#else
#define TIMING_RELAX_INSN ""
#endif

static inline void cpu_relax(void)
{
	__asm__ __volatile__(TIMING_RELAX_INSN ::: "memory");
}

#endif
