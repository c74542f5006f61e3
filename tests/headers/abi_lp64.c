/* SPDX-License-Identifier: MIT */
/*
 * abi_lp64.c - pins the ABI of <tlbpol/tlbpol.h> at compile time (C11
 * _Static_assert; abi_check.h checks the pins of abi_expect.h).  Nothing runs:
 * if this file compiles, the layout is as pinned.
 */
#include "abi_check.h"

#ifndef TLBPOL_ABI_CHECKED
#if defined(__x86_64__) || defined(__aarch64__)
#error "x86-64 / arm64 without __LP64__: the struct layouts were not checked"
#endif
#endif

/* Keep the translation unit non-empty (ISO C) and give the library a symbol. */
int tlbpol_test_abi_lp64(void);
int tlbpol_test_abi_lp64(void)
{
#ifdef TLBPOL_ABI_CHECKED
	return 1;
#else
	return 0;
#endif
}
