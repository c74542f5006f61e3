/* SPDX-License-Identifier: MIT */
/*
 * mem.c - memset, memcpy, memmove and memcmp for a program with no C
 * library: the kernel core archive needs none of them, but GCC may emit
 * calls to them even under -ffreestanding (structure copies and
 * initialisers), so every freestanding program that links the archive here
 * (tests/freestanding/ft_main.c, the unikernel) provides them, from this
 * one file.  Build it with -fno-tree-loop-distribute-patterns (GCC), or
 * these loops turn into calls to themselves.
 */
#include "mem.h"

void *memset(void *s, int c, size_t n)
{
	unsigned char *p = (unsigned char *)s;

	while (n--)
		*p++ = (unsigned char)c;
	return s;
}

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = (unsigned char *)dst;
	const unsigned char *s = (const unsigned char *)src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = (unsigned char *)dst;
	const unsigned char *s = (const unsigned char *)src;

	if (d < s) {
		while (n--)
			*d++ = *s++;
	} else if (d > s) {
		while (n--)
			d[n] = s[n];
	}
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x < *y ? -1 : 1;
	return 0;
}
