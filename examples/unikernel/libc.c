/* SPDX-License-Identifier: MIT */
/*
 * libc.c - what a C library would have provided: the string functions the
 * kernel uses.  memset/memcpy/memmove/memcmp, which GCC may emit calls to
 * even under -ffreestanding, come from support/mem.c (build.sh
 * links it in); everything is built with -fno-tree-loop-distribute-patterns
 * so these loops stay loops instead of turning into calls to themselves.
 */
#include "kernel.h"

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		if (!*a)
			return 0;
	}
	return 0;
}
