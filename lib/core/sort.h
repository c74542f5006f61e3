/* SPDX-License-Identifier: MIT */
/*
 * sort.h - an in-place heapsort for the core (no libc qsort freestanding):
 * O(n log n) worst case and no recursion, for batches of a few hundred ranges.
 */
#ifndef TLBPOL_SORT_H
#define TLBPOL_SORT_H

#include <stddef.h>

/* Sort @n elements of @size bytes at @base by @less.  @tmp: @size bytes. */
static inline void tlbpol_heapsort(void *base, size_t n, size_t size, void *tmp,
				   int (*less)(const void *a, const void *b))
{
	unsigned char *b = (unsigned char *)base, *t = (unsigned char *)tmp;

#define EL(i) (b + (i) * size)
#define SWAP(i, j)                                                             \
	do {                                                                   \
		prim_copy(t, EL(i), size);                                     \
		prim_copy(EL(i), EL(j), size);                                 \
		prim_copy(EL(j), t, size);                                     \
	} while (0)
	if (n < 2)
		return;
	for (size_t start = n / 2; start-- > 0;) {
		size_t root = start;

		for (size_t child; (child = 2 * root + 1) < n; root = child) {
			if (child + 1 < n && less(EL(child), EL(child + 1)))
				child++;
			if (!less(EL(root), EL(child)))
				break;
			SWAP(root, child);
		}
	}
	for (size_t end = n - 1; end > 0; end--) {
		size_t root = 0;

		SWAP(0, end);
		for (size_t child; (child = 2 * root + 1) < end; root = child) {
			if (child + 1 < end && less(EL(child), EL(child + 1)))
				child++;
			if (!less(EL(root), EL(child)))
				break;
			SWAP(root, child);
		}
	}
#undef SWAP
#undef EL
}

#endif /* TLBPOL_SORT_H */
