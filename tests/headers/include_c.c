/* SPDX-License-Identifier: MIT */
/*
 * include_c.c - <tlbpol/tlbpol.h> must compile on its own (it is included
 * first) as C99 and C11 with -Wall -Wextra -Werror -pedantic, and with
 * -ffreestanding.  The function below touches every public type and every
 * macro that expands to an expression, so a macro that does not compile in
 * some dialect is caught here, not in a user's build.
 */
#include <tlbpol/tlbpol.h>

uint64_t tlbpol_test_header_c(void);

uint64_t tlbpol_test_header_c(void)
{
	struct tlbpol_range range = { 0, 1, 12, 0 };
	struct tlbpol_flush flush = { 0, TLBPOL_FLUSH_PAGES, TLBPOL_FLUSHF_TABLES, 1, 0, 0 };
	struct tlbpol_ops ops = { sizeof(struct tlbpol_ops), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct tlbpol_config cfg = { sizeof(struct tlbpol_config), 1, TLBPOL_ARCH_X86_64,
				     TLBPOL_DEFAULT_MAX_AS, TLBPOL_RULES_DEFAULT,
				     TLBPOL_DEFAULT_FLUSH_CEILING, TLBPOL_DEFAULT_BATCH_PAGES,
				     0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct tlbpol_backend be = { sizeof(struct tlbpol_backend), TLBPOL_MECH_BROADCAST,
				     TLBPOL_BKF_ALL, 1, 0, 0, 0, 0 };
	struct tlbpol_event ev = { sizeof(struct tlbpol_event), TLBPOL_EV_FAULT,
				   TLBPOL_EVF_ALL, 12, 0, 1, TLBPOL_PTE_ALL, TLBPOL_PTE_ALL };
	struct tlbpol_decision d = { TLBPOL_ACT_NONE, TLBPOL_BY_NOW, TLBPOL_WHY_SPURIOUS, 0 };
	struct tlbpol_cpuset set = { { 0 } };
	struct tlbpol_stats st = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, { 0 }, 0, 0, 0,
				   0, 0, 0, 0, 0, 0, 0 };
	struct tlbpol_tags_config tc = { sizeof(struct tlbpol_tags_config), TLBPOL_TAGS_PERCPU,
					 1, 12, 1, 6, 16, 4 };
	struct tlbpol_tag_id tid = { 0 };
	struct tlbpol_tag_use tu = { 0, TLBPOL_TAG_FLUSH_ALL };
	struct tlbpol_tags_stats ts = { sizeof(struct tlbpol_tags_stats), 0, 0, 0, 0, 0 };
	enum tlbpol_arch arch = TLBPOL_ARCH_ARM64;
	enum tlbpol_flush_kind fk = TLBPOL_FLUSH_ALL;
	enum tlbpol_cpu_state cs = TLBPOL_CPU_OFFLINE;
	enum tlbpol_event_kind ek = TLBPOL_EV_REMAP;
	enum tlbpol_action act = TLBPOL_ACT_SHOOTDOWN;
	enum tlbpol_deadline dl = TLBPOL_BY_LAZY;
	enum tlbpol_reason why = TLBPOL_WHY_MAX;
	struct tlbpol_engine *eng = 0;
	struct tlbpol_as *as = 0;

	flush.ranges = &range;
	cfg.ops = &ops;
	cfg.nr_backends = be.size;
	return range.nr_pages + flush.nr_ranges + ops.size + cfg.rules + ev.size + d.reason +
	       tc.size + tid.word + tu.flush + ts.size + TLBPOL_TAGS_GLOBAL +
	       set.bits[0] + st.by_reason[0] + (uint64_t)arch + (uint64_t)fk + (uint64_t)cs +
	       (uint64_t)ek + (uint64_t)act + (uint64_t)dl + (uint64_t)why +
	       TLBPOL_RULES_ALL + TLBPOL_RULES_LINUX + TLBPOL_RULES_NONE +
	       TLBPOL_ARCH_MAX + TLBPOL_EV_MAX + TLBPOL_MAX_CPUS + TLBPOL_MAX_AS +
	       TLBPOL_MAX_BATCH_PAGES + TLBPOL_OPS_SIZE_0_1 + TLBPOL_CONFIG_SIZE_0_1 +
	       TLBPOL_OPS_SIZE_0_2 + TLBPOL_CONFIG_SIZE_0_2 + TLBPOL_MECH_MAX + TLBPOL_MECH_IPI +
	       TLBPOL_CFGF_ALL + TLBPOL_CFGF_LOCKLESS_WALKERS + TLBPOL_ENGINE_SIZE(1, 1, 1, 1, 0) + TLBPOL_DEFAULT_FREE_TICKS + TLBPOL_FREE_TICKS_NEVER + TLBPOL_VERSION_MAJOR + TLBPOL_VERSION_MINOR +
	       TLBPOL_VERSION_PATCH + sizeof(TLBPOL_VERSION_STRING) + (uint64_t)(eng == 0) +
	       (uint64_t)(as == 0);
}
