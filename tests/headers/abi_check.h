/* SPDX-License-Identifier: MIT */
/*
 * abi_check.h - turns the ABI pins of abi_expect.h (generated from the
 * header by gen/tlbpol_api.py: X-macro lists of values) into compile-time
 * assertions.  Included by abi_lp64.c (C11, _Static_assert) and by
 * header_cxx.cc (C++11, static_assert), so the same pins are checked in
 * both languages.  A failing assertion names the expression that no longer
 * holds, as written in abi_expect.h.
 */
#ifndef TLBPOL_TEST_ABI_CHECK_H
#define TLBPOL_TEST_ABI_CHECK_H

#include <stddef.h>

#include <tlbpol/tlbpol.h>

#include "abi_expect.h"

#ifdef __cplusplus
#define ABI_ASSERT(cond, what) static_assert(cond, what)
#define ABI_ALIGNOF(T) alignof(T)
#else
#define ABI_ASSERT(cond, what) _Static_assert(cond, what)
#define ABI_ALIGNOF(T) _Alignof(T)
#endif

/*
 * The layouts were computed for LP64 (x86-64, arm64): checked only there,
 * and abi_lp64.c refuses to build on those CPUs if this is not LP64.
 */
#if defined(__LP64__) || defined(_LP64)
#define TLBPOL_ABI_CHECKED 1

ABI_ASSERT(sizeof(void *) == 8, "sizeof(void *) == 8");
ABI_ASSERT(sizeof(size_t) == 8, "sizeof(size_t) == 8");

/* One field of struct @name: its offset and its size. */
#define ABI_FIELD(name, f, off, size)						\
	ABI_ASSERT(offsetof(struct name, f) == (off),				\
		   "offsetof(struct " #name ", " #f ") == " #off);		\
	ABI_ASSERT(sizeof(((struct name *)0)->f) == (size),			\
		   "sizeof(struct " #name "." #f ") == " #size);

/* One structure: its size and alignment, then each of its fields. */
#define ABI_STRUCT(name, size, align)						\
	ABI_ASSERT(sizeof(struct name) == (size),				\
		   "sizeof(struct " #name ") == " #size);			\
	ABI_ASSERT(ABI_ALIGNOF(struct name) == (align),				\
		   "alignof(struct " #name ") == " #align);			\
	ABI_FIELDS_##name(ABI_FIELD, name)

ABI_STRUCTS(ABI_STRUCT)

#endif /* LP64 */

/* A value compiled into callers (any data model). */
#define ABI_VALUE(e, n) ABI_ASSERT((e) == (n), #e " == " #n);

ABI_VALUES(ABI_VALUE)

#endif /* TLBPOL_TEST_ABI_CHECK_H */
