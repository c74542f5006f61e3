/* SPDX-License-Identifier: MIT */
/*
 * mem.h - the declarations of support/mem.c, for a program with
 * no C library (and so no <string.h>).
 */
#ifndef TLBPOL_FREESTANDING_MEM_H
#define TLBPOL_FREESTANDING_MEM_H

#include <stddef.h>

void *memset(void *s, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif /* TLBPOL_FREESTANDING_MEM_H */
