/* SPDX-License-Identifier: MIT */
/*
 * static_engine: an engine in a static buffer of exactly
 * TLBPOL_ENGINE_SIZE() bytes, as a kernel or a no_std program reserves it
 * (docs/integrating.md): tlbpol_engine_init() takes it, and refuses one
 * byte less (-ENOMEM).  Only the public header, as a user has it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <tlbpol/tlbpol.h>

#define CPUS 4
#define NODES 2

static _Alignas(64) unsigned char mem[TLBPOL_ENGINE_SIZE(CPUS, TLBPOL_DEFAULT_MAX_AS,
							  TLBPOL_DEFAULT_BATCH_PAGES,
							  TLBPOL_DEFAULT_FLUSH_CEILING, 0)];
static _Alignas(64) unsigned char mem_numa[TLBPOL_ENGINE_SIZE(CPUS, 8, 64, 4, NODES)];

static void flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx, (void)cpu, (void)f;
}

static void send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	(void)ctx, (void)from, (void)targets;
}

static const struct tlbpol_ops ops = {
	.size = sizeof(ops), .flush_local = flush_local, .send_ipi = send_ipi,
};

static void exact(unsigned char *buf, size_t len, const struct tlbpol_config *cfg)
{
	struct tlbpol_engine *eng = NULL;
	struct tlbpol_as *as;

	assert_int_equal(tlbpol_engine_size(cfg), len);
	assert_int_equal(tlbpol_engine_init(&eng, buf, len - 1, cfg), -ENOMEM);
	assert_null(eng);
	assert_int_equal(tlbpol_engine_init(&eng, buf, len, cfg), 0);
	assert_int_equal(tlbpol_as_open(eng, 1, &as), 0);
	assert_int_equal(tlbpol_switch(eng, 0, as, NULL), 0);
	assert_int_equal(tlbpol_flush(eng, 0, TLBPOL_BY_LAZY), 0);
}

static void test_default(void **state)
{
	struct tlbpol_config cfg;

	(void)state;
	tlbpol_config_init(&cfg, CPUS, TLBPOL_ARCH_X86_64);
	cfg.ops = &ops;
	exact(mem, sizeof(mem), &cfg);
}

static void test_numa(void **state)
{
	static const uint16_t node[CPUS] = { 0, 0, 1, 1 };
	struct tlbpol_config cfg;

	(void)state;
	tlbpol_config_init(&cfg, CPUS, TLBPOL_ARCH_ARM64);
	cfg.ops = &ops;
	cfg.max_as = 8;
	cfg.batch_pages = 64;
	cfg.flush_ceiling = 4;
	cfg.cpu_node = node;
	exact(mem_numa, sizeof(mem_numa), &cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_numa),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
