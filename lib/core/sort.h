/* SPDX-License-Identifier: MIT */
/*
 * sort.h - an in-place heapsort for the core (no libc qsort freestanding):
 * O(n log n) worst case and no recursion, for batches of a few hundred
 * ranges.  Generated per element type so that the comparison inlines and
 * elements move as whole structures, not bytes.
 */
#ifndef TLBPOL_SORT_H
#define TLBPOL_SORT_H

#include <stddef.h>

#define TLBPOL_DEFINE_HEAPSORT(name, type, less)                               \
	static void name##_sift(type *a, size_t root, size_t end)               \
	{                                                                      \
		for (size_t child; (child = 2 * root + 1) < end; root = child) {  \
			type t;                                                \
			if (child + 1 < end && less(&a[child], &a[child + 1]))    \
				child++;                                       \
			if (!less(&a[root], &a[child]))                        \
				return;                                        \
			t = a[root];                                           \
			a[root] = a[child];                                    \
			a[child] = t;                                          \
		}                                                              \
	}                                                                      \
	static void name(type *a, size_t n)                                    \
	{                                                                      \
		if (n < 2)                                                     \
			return;                                                \
		for (size_t start = n / 2; start-- > 0;)                       \
			name##_sift(a, start, n);                              \
		for (size_t end = n - 1; end > 0; end--) {                     \
			type t = a[0];                                         \
			a[0] = a[end];                                         \
			a[end] = t;                                            \
			name##_sift(a, 0, end);                                \
		}                                                              \
	}

#endif /* TLBPOL_SORT_H */
