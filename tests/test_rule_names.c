/* SPDX-License-Identifier: MIT */
/*
 * test_rule_names: tlbpol_rule_str() names every rule bit once, and
 * tlbpol_rules_parse() reads those names, the sets, numbers, '+', '-' and
 * ',' back; bad specs are -EINVAL with the output untouched.
 */
#include <errno.h>

#include "support/harness.h"

/* Every bit of TLBPOL_RULES_ALL has a name of its own, and it parses back. */
static void test_every_bit_round_trips(void **state)
{
	const char *seen[64] = { 0 };

	(void)state;
	for (int b = 0; b < 64; b++) {
		uint64_t bit = 1ULL << b, m = 0;
		const char *name = tlbpol_rule_str(bit);

		assert_non_null(name);
		if (!(bit & TLBPOL_RULES_ALL)) {
			assert_string_equal(name, "unknown");
			continue;
		}
		assert_string_not_equal(name, "unknown");
		for (int o = 0; o < b; o++)
			if (seen[o])
				assert_string_not_equal(seen[o], name);
		seen[b] = name;
		assert_int_equal(tlbpol_rules_parse(name, &m), 0);
		assert_true(m == bit);
	}
	assert_string_equal(tlbpol_rule_str(0), "unknown");
	assert_string_equal(tlbpol_rule_str(TLBPOL_RULE_BATCH | TLBPOL_RULE_FOOTPRINT), "unknown");
	assert_string_equal(tlbpol_rule_str(TLBPOL_RULE_LAZY_UNMAP), "lazy-unmap");
}

static const struct {
	const char *spec;
	uint64_t mask;
} good[] = {
	{ "default", TLBPOL_RULES_DEFAULT },
	{ "linux", TLBPOL_RULES_LINUX },
	{ "none", TLBPOL_RULES_NONE },
	{ "naive", TLBPOL_RULES_NONE },
	{ "all", TLBPOL_RULES_ALL },
	{ "default,-lazy-unmap", TLBPOL_RULES_DEFAULT & ~TLBPOL_RULE_LAZY_UNMAP },
	{ "default-lazy-unmap", ~0ULL }, /* one unknown name: below */
	{ "linux+receiver-merge", TLBPOL_RULES_LINUX | TLBPOL_RULE_RECEIVER_MERGE },
	{ "linux,+receiver-merge", TLBPOL_RULES_LINUX | TLBPOL_RULE_RECEIVER_MERGE },
	{ "none,batch,range-flush", TLBPOL_RULE_BATCH | TLBPOL_RULE_RANGE_FLUSH },
	{ "batch", TLBPOL_RULE_BATCH },
	{ "-batch", 0 },
	{ "default-batch+batch", ~0ULL },
	{ "all-batch", ~0ULL },
	{ "all,-batch,-footprint", TLBPOL_RULES_ALL & ~(TLBPOL_RULE_BATCH | TLBPOL_RULE_FOOTPRINT) },
	{ "lazy_unmap", TLBPOL_RULE_LAZY_UNMAP },
	{ "0x7fff", 0x7fff },
	{ "0X3", 3 },
	{ "4095", 4095 },
	{ "0x1ff-batch", ~0ULL },
	{ "0x1ff,-batch", 0x1ff & ~TLBPOL_RULE_BATCH },
	{ "default,-default", 0 },
	{ "linux,-linux,+broadcast", TLBPOL_RULE_BROADCAST },
};

/* ~0ULL: the spec is bad. */
static void test_specs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t m = 0x5a5a;
		int r = tlbpol_rules_parse(good[i].spec, &m);

		if (good[i].mask == ~0ULL) {
			if (r != -EINVAL || m != 0x5a5a)
				fail_msg("\"%s\": got %d (mask %#llx), want -EINVAL and nothing written",
					 good[i].spec, r, (unsigned long long)m);
		} else if (r || m != good[i].mask) {
			fail_msg("\"%s\": got %d, mask %#llx, want %#llx", good[i].spec, r,
				 (unsigned long long)m, (unsigned long long)good[i].mask);
		}
	}
}

static void test_bad_specs(void **state)
{
	static const char *const bad[] = {
		"", ",", "+", "-", "default,", "default,,batch", ",default", "default+",
		"defaults", "Default", "batch,", "nonsense", "0x", "0x20000", "0x10000000000000000",
		"99999999999999999999999", "1e3", "0xg", " default", "default ", "lazy-unmap,-",
	};
	uint64_t m = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = tlbpol_rules_parse(bad[i], &m);

		if (r != -EINVAL || m != 42)
			fail_msg("\"%s\": got %d (mask %#llx), want -EINVAL", bad[i], r,
				 (unsigned long long)m);
	}
	assert_int_equal(tlbpol_rules_parse(NULL, &m), -EINVAL);
	assert_int_equal(tlbpol_rules_parse("default", NULL), -EINVAL);
	assert_int_equal(m, 42);
}

/* A parsed mask configures an engine as the macro does. */
static void test_parsed_mask_configures(void **state)
{
	struct harness h;
	uint64_t m;

	(void)state;
	assert_int_equal(tlbpol_rules_parse("linux+lazy-unmap", &m), 0);
	h_engine(&h, 2, TLBPOL_ARCH_X86_64, m);
	assert_true(tlbpol_engine_rules(h.eng) == (TLBPOL_RULES_LINUX | TLBPOL_RULE_LAZY_UNMAP));
	tlbpol_engine_free(h.eng);
}

H_TEST_MAIN(
	cmocka_unit_test(test_every_bit_round_trips),
	cmocka_unit_test(test_specs),
	cmocka_unit_test(test_bad_specs),
	cmocka_unit_test(test_parsed_mask_configures));
