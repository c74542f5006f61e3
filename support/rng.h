/* SPDX-License-Identifier: MIT */
/*
 * rng.h - the small pseudo-random generators of the tests.
 *
 * Not for statistics: each test wants a cheap sequence that is the same on
 * every run and every machine for the same seed, so that a failure can be
 * run again and its numbers (logged events, expected counts) stay put.
 * The state is the caller's, one per thread, so that threads acting as
 * CPUs neither share a generator nor race on one.
 *
 * Each generator's sequence is fixed: a test's expectations may depend on
 * it, and support/test_common.c checks the first values of each.
 * Changing one changes what those tests exercise; add a new one instead.
 */
#ifndef TLBPOL_TESTS_COMMON_RNG_H
#define TLBPOL_TESTS_COMMON_RNG_H

#include <stdint.h>

/*
 * A 32-bit linear congruential generator, the constants of the C
 * standard's example rand() (glibc's TYPE_0): the new state, which is also
 * the value.  Its low bits are weak (bit k repeats with period 2^(k+1)),
 * so take bits from 8 up: (x >> 8) % n, (x >> 16) & 1 ...
 */
static inline uint32_t rng_lcg32(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state;
}

/*
 * Marsaglia's xorshift64 (shifts 13, 7, 17; "Xorshift RNGs", 2003): the
 * new state, which is also the value.  Period 2^64 - 1; the state must not
 * be 0 (0 stays 0).  Marsaglia's own seed is RNG_XORSHIFT64_SEED.
 */
#define RNG_XORSHIFT64_SEED 88172645463325252ULL

static inline uint64_t rng_xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/*
 * Vigna's xorshift64* (shifts 12, 25, 27 then the multiplier
 * 0x2545F4914F6CDD1D; "An experimental exploration of Marsaglia's xorshift
 * generators, scrambled", 2016): the state steps as xorshift64 does, the
 * value is the state times the multiplier, whose high bits are good where
 * xorshift64's low bits are weak, so that `% n` of it is fine.  Period
 * 2^64 - 1; the state must not be 0 (0 stays 0).  The stress oracle's
 * CPUs and world (tests/oracle: rng_next()) and examples/softmmu (rnd())
 * draw from it; their runs replay from a seed only as long as its
 * sequence stays put.
 */
static inline uint64_t rng_xorshift64star(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * Seed @i of a set of well spread 32-bit seeds, one per thread: the
 * (@i + 1)th multiple of 2^32 / golden ratio.  The factor is odd, so
 * distinct @i give distinct seeds, and none is 0 below i = 2^32 - 1.
 */
static inline uint32_t rng_seed32(uint32_t i)
{
	return 0x9e3779b9u * (i + 1);
}

#endif
