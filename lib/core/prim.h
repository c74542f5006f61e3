/* SPDX-License-Identifier: MIT */
/*
 * prim.h - the porting layer of the freestanding core.
 *
 * Everything the core needs from its environment is here: atomics (GCC/Clang
 * __atomic builtins, which need no libc), a CPU pause, and memory helpers
 * written as plain loops so that the core links without libc.  The core
 * includes no hosted header; this file is the one place to port.
 */
#ifndef TLBPOL_PRIM_H
#define TLBPOL_PRIM_H

#include <stddef.h>
#include <stdint.h>

#define TLBPOL_CACHELINE 64

#define prim_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define prim_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define prim_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define prim_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define prim_load_seqcst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define prim_store_seqcst(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define prim_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define prim_fetch_sub_release(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELEASE)
#define prim_fetch_or(p, v) __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define prim_fetch_and(p, v) __atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
#define prim_xchg_acquire(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define prim_fence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
/* Orders against an interrupt handler on the same CPU (no instruction). */
#define prim_barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)
#define prim_cas(p, expp, v)                                                   \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_ACQ_REL,     \
				    __ATOMIC_ACQUIRE)

/* A per-CPU counter with a single writer: readers on other threads see a
 * whole value (relaxed atomics), the writer pays no locked instruction. */
#define prim_count(p, v) prim_store_relaxed((p), prim_load_relaxed(p) + (v))

static inline void prim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * Byte loops, not memset/memcpy: -ffreestanding still lets the compiler emit
 * calls to memset/memcpy, so the core is built with
 * -fno-tree-loop-distribute-patterns to keep these loops loops.
 */
static inline void prim_zero(void *p, size_t n)
{
	unsigned char *c = (unsigned char *)p;
	while (n--)
		*c++ = 0;
}

static inline void prim_copy(void *dst, const void *src, size_t n)
{
	unsigned char *d = (unsigned char *)dst;
	const unsigned char *s = (const unsigned char *)src;
	while (n--)
		*d++ = *s++;
}

/* SWAR popcount: __builtin_popcountll may become a libgcc call, and the
 * freestanding core links without libgcc. */
static inline uint32_t prim_popcount64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (uint32_t)((x * 0x0101010101010101ULL) >> 56);
}

/* Count trailing zeros of a non-zero word (bsf/tzcnt on x86, rbit+clz on
 * arm64: inline on both).  RISC-V without Zbb has no such instruction, and
 * gcc calls libgcc's __ctzdi2, which a kernel need not have: isolate the
 * lowest bit and count the bits below it. */
static inline uint32_t prim_ctz64(uint64_t x)
{
#if defined(__riscv) && !defined(__riscv_zbb)
	return prim_popcount64((x & (0 - x)) - 1);
#else
	return (uint32_t)__builtin_ctzll(x);
#endif
}

static inline size_t prim_align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Test-and-test-and-set spinlock, for the rare paths (address-space open and
 * close) only; never held across a callback. */
static inline void prim_spin_lock(uint32_t *l)
{
	for (;;) {
		if (!prim_load_relaxed(l) &&
		    !__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE))
			return;
		prim_cpu_relax();
	}
}

/* One attempt: 1 if taken. */
static inline int prim_spin_trylock(uint32_t *l)
{
	return !prim_load_relaxed(l) && !__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE);
}

static inline void prim_spin_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0u, __ATOMIC_RELEASE);
}

#endif /* TLBPOL_PRIM_H */
