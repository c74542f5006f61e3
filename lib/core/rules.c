/* SPDX-License-Identifier: MIT */
/*
 * rules.c - the names of the rule bits, and rule masks parsed from them.
 *
 * The one table of rule names: every tool, test and binding that names a
 * rule takes it from tlbpol_rule_str() and tlbpol_rules_parse(), so a rule
 * is spelt the same on every command line.  Freestanding: no libc.
 */
#include "internal.h"

/* A name and the mask it stands for. */
struct named_mask {
	uint64_t mask;
	const char *name;
};

/* One bit each. */
static const struct named_mask rule_names[] = {
	{ TLBPOL_RULE_SPURIOUS_NOFLUSH, "spurious-noflush" },
	{ TLBPOL_RULE_RANGE_FLUSH, "range-flush" },
	{ TLBPOL_RULE_RETRY_NOFLUSH, "retry-noflush" },
	{ TLBPOL_RULE_BATCH, "batch" },
	{ TLBPOL_RULE_AGING_NOFLUSH, "aging-noflush" },
	{ TLBPOL_RULE_UPGRADE_NOFLUSH, "upgrade-noflush" },
	{ TLBPOL_RULE_FOOTPRINT, "footprint" },
	{ TLBPOL_RULE_LAZY_CPUS, "lazy-cpus" },
	{ TLBPOL_RULE_GEN_SKIP, "gen-skip" },
	{ TLBPOL_RULE_RECEIVER_MERGE, "receiver-merge" },
	{ TLBPOL_RULE_BROADCAST, "broadcast" },
	{ TLBPOL_RULE_NUMA_FANOUT, "numa-fanout" },
	{ TLBPOL_RULE_LAZY_UNMAP, "lazy-unmap" },
	{ TLBPOL_RULE_VCPU_DEFER, "vcpu-defer" },
	{ TLBPOL_RULE_POLLING_CPUS, "polling-cpus" },
	{ TLBPOL_RULE_FLUSH_STAMP, "flush-stamp" },
	{ TLBPOL_RULE_GEN_TARGETS, "gen-targets" },
};
#define NR_RULE_NAMES (sizeof(rule_names) / sizeof(rule_names[0]))

/* The named masks.  "naive" is the tables' name for no rule at all. */
static const struct named_mask set_names[] = {
	{ TLBPOL_RULES_NONE, "none" },
	{ TLBPOL_RULES_NONE, "naive" },
	{ TLBPOL_RULES_LINUX, "linux" },
	{ TLBPOL_RULES_DEFAULT, "default" },
	{ TLBPOL_RULES_ALL, "all" },
};
#define NR_SET_NAMES (sizeof(set_names) / sizeof(set_names[0]))

/* Every rule bit has a name: a bit added to TLBPOL_RULES_ALL without one
 * fails here, not on a command line. */
_Static_assert(TLBPOL_RULES_ALL == (1ULL << 17) - 1 && NR_RULE_NAMES == 17,
	       "rule_names[] names every bit of TLBPOL_RULES_ALL, in order");

const char *tlbpol_rule_str(uint64_t rule)
{
	for (uint32_t i = 0; i < NR_RULE_NAMES; i++)
		if (rule_names[i].mask == rule)
			return rule_names[i].name;
	return "unknown";
}

/* Does @s[0, @n) spell @name?  '_' is read as '-' (the oracle's first
 * spelling). */
static int name_is(const char *s, uint32_t n, const char *name)
{
	uint32_t i;

	for (i = 0; i < n && name[i]; i++)
		if ((s[i] == '_' ? '-' : s[i]) != name[i])
			return 0;
	return i == n && !name[i];
}

/* A number, decimal or 0x-hexadecimal: 0 and *@v, or -1. */
static int number(const char *s, uint32_t n, uint64_t *v)
{
	uint32_t i = 0, base = 10;
	uint64_t x = 0;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == n)
		return -1;
	for (; i < n; i++) {
		char ch = s[i];
		uint32_t d;

		if (ch >= '0' && ch <= '9')
			d = (uint32_t)(ch - '0');
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = (uint32_t)(ch - 'a' + 10);
		else if (base == 16 && ch >= 'A' && ch <= 'F')
			d = (uint32_t)(ch - 'A' + 10);
		else
			return -1;
		if (x > (~0ULL - d) / base)
			return -1;
		x = x * base + d;
	}
	*v = x;
	return 0;
}

/* The mask @s[0, @n) names in @t (@nr entries): 0 and *@mask, or -1. */
static int lookup(const struct named_mask *t, uint32_t nr, const char *s, uint32_t n,
		  uint64_t *mask)
{
	for (uint32_t i = 0; i < nr; i++)
		if (name_is(s, n, t[i].name)) {
			*mask = t[i].mask;
			return 0;
		}
	return -1;
}

/* The mask one term names: a set, a rule or a number.  0, or -1. */
static int term_mask(const char *s, uint32_t n, uint64_t *mask)
{
	if (!lookup(set_names, NR_SET_NAMES, s, n, mask) ||
	    !lookup(rule_names, NR_RULE_NAMES, s, n, mask))
		return 0;
	if (number(s, n, mask) || (*mask & ~TLBPOL_RULES_ALL))
		return -1;
	return 0;
}

/*
 * Terms, left to right, from the empty mask: a term adds its mask, or
 * removes it if it begins with '-'.  Terms are separated by ',' or begin
 * with '+' or '-' ("linux+receiver-merge"); a '-' inside a term is part of
 * its name.
 */
int tlbpol_rules_parse(const char *spec, uint64_t *out)
{
	uint64_t mask = 0;
	const char *s = spec;

	if (!spec || !out || !*spec)
		return -E_INVAL;
	for (;;) {
		int remove = 0;
		uint32_t n = 0;
		uint64_t m;

		if (*s == '+' || *s == '-') {
			remove = *s == '-';
			s++;
		}
		while (s[n] && s[n] != ',' && s[n] != '+')
			n++;
		if (!n || term_mask(s, n, &m))
			return -E_INVAL;
		mask = remove ? mask & ~m : mask | m;
		s += n;
		if (!*s)
			break;
		if (*s == ',')
			s++; /* a term follows, with or without its sign */
		if (!*s)
			return -E_INVAL; /* a trailing separator */
	}
	*out = mask;
	return 0;
}
