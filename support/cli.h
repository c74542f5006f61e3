/* SPDX-License-Identifier: MIT */
/*
 * cli.h - how the command-line tools (tlbpol-sim, the stress oracle, softmmu,
 * tlbpol-bench) read an option's value, so that they refuse the same things:
 * header-only, as none of them links anything but the library.
 *
 * These only judge a value; saying what was wrong, and exiting with status 2,
 * stays with each tool, since each has its own words for it (and its scripts
 * and tests read them): tlbpol-sim returns 2 through sim_parse_options(),
 * the stress oracle and tlbpol-bench add their usage, softmmu dies().
 */
#ifndef TLBPOL_CLI_H
#define TLBPOL_CLI_H

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/**
 * cli_whole() - read all of an option's value as a whole number
 * @v:    the value, as getopt_long() gives it
 * @base: as strtoull() takes it: 10, or 0 for C's prefixes (0x hexadecimal,
 *        0 octal)
 * @max:  the largest it takes
 * @out:  the number; written even when refused
 *
 * strtoull() alone takes "-1" as 2^64 - 1, "" and " " as 0, "4x" as 4 and an
 * overflow as its largest value, and a 32-bit field would wrap a number
 * above 2^32 - 1: so the value must start with a digit, be read to its end
 * without ERANGE, and be at most @max.
 *
 * Return: 0, or -1 if @v is not such a number.
 */
static inline int cli_whole(const char *v, int base, uint64_t max, uint64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	*out = strtoull(v, &end, base);
	return errno || *end || *out > max ? -1 : 0;
}

/**
 * cli_u32() - cli_whole() for a 32-bit field: C's prefixes, up to 2^32 - 1
 * @v:   the value
 * @out: the number; left alone when refused
 *
 * Return: 0, or -1 if @v is not such a number.
 */
static inline int cli_u32(const char *v, uint32_t *out)
{
	uint64_t n;

	if (cli_whole(v, 0, UINT32_MAX, &n))
		return -1;
	*out = (uint32_t)n;
	return 0;
}

/**
 * cli_double() - read all of an option's value as a number strictly between
 * two bounds
 * @v:   the value, as strtod() reads it (so "0.5", "1e-3", "0x1p-2")
 * @lo:  it must be above this,
 * @hi:  ... and below this
 * @out: the number; written even when refused
 *
 * Strictly, as the tools' durations are: a run of 0 seconds measures
 * nothing.  NaN is never between them.
 *
 * Return: 0, or -1 if @v is not such a number.
 */
static inline int cli_double(const char *v, double lo, double hi, double *out)
{
	char *end;

	*out = strtod(v, &end);
	return end == v || *end || !(*out > lo && *out < hi) ? -1 : 0;
}

/*
 * An option that only sets a number: a table of them in place of a case
 * each, for the tools whose numbers take their field's whole range.
 */
struct cli_number {
	int opt;       /* getopt_long()'s val for it */
	uint32_t *u32; /* the field it sets, up to 2^32 - 1, */
	uint64_t *u64; /* ... or this one, up to 2^64 - 1 */
};

/* An entry of such a table, by the width of the field @f that option @opt
 * sets: the entry names the field's width, so a 64-bit field is never set
 * through a 32-bit pointer (the compiler checks &(@f)'s type). */
#define CLI_U32(opt, f) { (opt), &(f), NULL }
#define CLI_U64(opt, f) { (opt), NULL, &(f) }

/**
 * cli_number_find() - the entry of an option in a table of numbers
 * @tab: the table
 * @n:   its entries
 * @opt: getopt_long()'s return
 *
 * Return: the entry, or NULL if @opt sets no number.
 */
static inline const struct cli_number *cli_number_find(const struct cli_number *tab, size_t n,
						       int opt)
{
	for (size_t i = 0; i < n; i++)
		if (tab[i].opt == opt)
			return &tab[i];
	return NULL;
}

/**
 * cli_number_set() - set an entry's field from its option's value
 * @num: the entry
 * @v:   the value, read by cli_whole() with C's prefixes
 *
 * Return: 0, or -1 (the field left alone) if @v is not a number the field
 * holds.
 */
static inline int cli_number_set(const struct cli_number *num, const char *v)
{
	uint64_t n;

	if (cli_whole(v, 0, num->u32 ? UINT32_MAX : UINT64_MAX, &n))
		return -1;
	if (num->u32)
		*num->u32 = (uint32_t)n;
	else
		*num->u64 = n;
	return 0;
}

#endif
