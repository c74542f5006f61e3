/* SPDX-License-Identifier: MIT */
/*
 * abi_expect.h - the ABI of <tlbpol/tlbpol.h> on LP64 targets (x86-64,
 * arm64), pinned with compile-time assertions.  Included by abi_lp64.c (C11,
 * _Static_assert) and by header_cxx.cc (C++11, static_assert), so the same
 * list is checked in both languages.  A failing assertion names the
 * expression that no longer holds.
 *
 * Every number below was computed by hand from the declarations (natural
 * alignment: uint32_t 4, uint64_t and pointers 8), not copied from a
 * compiler: if one fails, the header changed the ABI -- bump the soname and
 * the version node, or undo the change.
 *
 * Layouts (offset: field):
 *   tlbpol_range     0 va, 8 nr_pages, 16 page_shift, 20 pad            = 24
 *   tlbpol_flush     0 as_tag, 8 kind, 12 flags, 16 nr_ranges, 20 pad,
 *                    24 ranges                                           = 32
 *   tlbpol_ops       0 size, 4 pad, 8 flush_local, 16 send_ipi,
 *                    24 broadcast, 32 relax, 40 vcpu_defer, 48 stuck    = 56
 *                    (0.1: 48, without stuck)
 *   tlbpol_config    0 size, 4 nr_cpus, 8 arch, 12 max_as, 16 rules,
 *                    24 flush_ceiling, 28 batch_pages, 32 cpu_node,
 *                    40 ops, 48 ops_ctx, 56 flags, 60..76 cost_*,
 *                    80 ipi_delay_spins, 84 reserved, 88 wait_limit,
 *                    92 free_ticks                                       = 96
 *                    (0.1: 88, up to reserved)
 *   tlbpol_event     0 size, 4 kind, 8 flags, 12 page_shift, 16 va,
 *                    24 nr_pages, 32 old_pte, 36 new_pte                 = 40
 *   tlbpol_decision  0 action, 4 deadline, 8 reason, 12 pad              = 16
 *   tlbpol_cpuset    0 bits[4096 / 64]                                   = 512
 *   tlbpol_stats     12 counters at 0, 8, ... 88, by_reason at 96,
 *                    aged_flushes, ipis_resent, stuck_calls  = (15 + WHY_MAX) * 8
 */
#ifndef TLBPOL_TEST_ABI_EXPECT_H
#define TLBPOL_TEST_ABI_EXPECT_H

#include <stddef.h>

#include <tlbpol/tlbpol.h>

#ifdef __cplusplus
#define ABI_ASSERT(cond, what) static_assert(cond, what)
#define ABI_ALIGNOF(T) alignof(T)
#else
#define ABI_ASSERT(cond, what) _Static_assert(cond, what)
#define ABI_ALIGNOF(T) _Alignof(T)
#endif

#define ABI_SIZE(T, n) ABI_ASSERT(sizeof(T) == (n), "sizeof(" #T ") == " #n)
#define ABI_ALIGN(T, n) ABI_ASSERT(ABI_ALIGNOF(T) == (n), "alignof(" #T ") == " #n)
#define ABI_OFF(T, f, n) ABI_ASSERT(offsetof(T, f) == (n), "offsetof(" #T ", " #f ") == " #n)
#define ABI_FSIZE(T, f, n) ABI_ASSERT(sizeof(((T *)0)->f) == (n), "sizeof(" #T "." #f ") == " #n)
#define ABI_VAL(e, n) ABI_ASSERT((e) == (n), #e " == " #n)

#if defined(__LP64__) || defined(_LP64)
#define TLBPOL_ABI_CHECKED 1

ABI_SIZE(void *, 8);
ABI_SIZE(size_t, 8);

/* struct tlbpol_range */
ABI_SIZE(struct tlbpol_range, 24);
ABI_ALIGN(struct tlbpol_range, 8);
ABI_OFF(struct tlbpol_range, va, 0);
ABI_OFF(struct tlbpol_range, nr_pages, 8);
ABI_OFF(struct tlbpol_range, page_shift, 16);
ABI_OFF(struct tlbpol_range, pad, 20);

/* struct tlbpol_flush */
ABI_SIZE(struct tlbpol_flush, 32);
ABI_ALIGN(struct tlbpol_flush, 8);
ABI_OFF(struct tlbpol_flush, as_tag, 0);
ABI_OFF(struct tlbpol_flush, kind, 8);
ABI_OFF(struct tlbpol_flush, flags, 12);
ABI_OFF(struct tlbpol_flush, nr_ranges, 16);
ABI_OFF(struct tlbpol_flush, pad, 20);
ABI_OFF(struct tlbpol_flush, ranges, 24);

/* struct tlbpol_ops: size, pad, then 6 pointers (0.1: 5) */
ABI_SIZE(struct tlbpol_ops, 56);
ABI_ALIGN(struct tlbpol_ops, 8);
ABI_OFF(struct tlbpol_ops, size, 0);
ABI_OFF(struct tlbpol_ops, pad, 4);
ABI_OFF(struct tlbpol_ops, flush_local, 8);
ABI_OFF(struct tlbpol_ops, send_ipi, 16);
ABI_OFF(struct tlbpol_ops, broadcast, 24);
ABI_OFF(struct tlbpol_ops, relax, 32);
ABI_OFF(struct tlbpol_ops, vcpu_defer, 40);
ABI_OFF(struct tlbpol_ops, stuck, 48);
ABI_VAL(TLBPOL_OPS_SIZE_0_1, 48);

/* struct tlbpol_config */
ABI_SIZE(struct tlbpol_config, 96);
ABI_ALIGN(struct tlbpol_config, 8);
ABI_OFF(struct tlbpol_config, size, 0);
ABI_OFF(struct tlbpol_config, nr_cpus, 4);
ABI_OFF(struct tlbpol_config, arch, 8);
ABI_OFF(struct tlbpol_config, max_as, 12);
ABI_OFF(struct tlbpol_config, rules, 16);
ABI_OFF(struct tlbpol_config, flush_ceiling, 24);
ABI_OFF(struct tlbpol_config, batch_pages, 28);
ABI_OFF(struct tlbpol_config, cpu_node, 32);
ABI_OFF(struct tlbpol_config, ops, 40);
ABI_OFF(struct tlbpol_config, ops_ctx, 48);
ABI_OFF(struct tlbpol_config, flags, 56);
ABI_OFF(struct tlbpol_config, cost_ipi_ns, 60);
ABI_OFF(struct tlbpol_config, cost_ipi_target_ns, 64);
ABI_OFF(struct tlbpol_config, cost_ipi_remote_ns, 68);
ABI_OFF(struct tlbpol_config, cost_broadcast_ns, 72);
ABI_OFF(struct tlbpol_config, cost_broadcast_page_ns, 76);
ABI_OFF(struct tlbpol_config, ipi_delay_spins, 80);
ABI_OFF(struct tlbpol_config, reserved, 84);
ABI_OFF(struct tlbpol_config, wait_limit, 88);
ABI_OFF(struct tlbpol_config, free_ticks, 92);
ABI_VAL(TLBPOL_CONFIG_SIZE_0_1, 88);

/* struct tlbpol_event */
ABI_SIZE(struct tlbpol_event, 40);
ABI_ALIGN(struct tlbpol_event, 8);
ABI_OFF(struct tlbpol_event, size, 0);
ABI_OFF(struct tlbpol_event, kind, 4);
ABI_OFF(struct tlbpol_event, flags, 8);
ABI_OFF(struct tlbpol_event, page_shift, 12);
ABI_OFF(struct tlbpol_event, va, 16);
ABI_OFF(struct tlbpol_event, nr_pages, 24);
ABI_OFF(struct tlbpol_event, old_pte, 32);
ABI_OFF(struct tlbpol_event, new_pte, 36);

/* struct tlbpol_decision */
ABI_SIZE(struct tlbpol_decision, 16);
ABI_ALIGN(struct tlbpol_decision, 4);
ABI_OFF(struct tlbpol_decision, action, 0);
ABI_OFF(struct tlbpol_decision, deadline, 4);
ABI_OFF(struct tlbpol_decision, reason, 8);
ABI_OFF(struct tlbpol_decision, pad, 12);

/* struct tlbpol_cpuset */
ABI_SIZE(struct tlbpol_cpuset, 512);
ABI_ALIGN(struct tlbpol_cpuset, 8);
ABI_OFF(struct tlbpol_cpuset, bits, 0);
ABI_FSIZE(struct tlbpol_cpuset, bits, TLBPOL_MAX_CPUS / 8);

/* struct tlbpol_stats: 12 counters, one per reason, then 3 counters */
ABI_SIZE(struct tlbpol_stats, (15 + TLBPOL_WHY_MAX) * 8);
ABI_ALIGN(struct tlbpol_stats, 8);
ABI_OFF(struct tlbpol_stats, events, 0);
ABI_OFF(struct tlbpol_stats, flushes_avoided, 8);
ABI_OFF(struct tlbpol_stats, local_flushes, 16);
ABI_OFF(struct tlbpol_stats, remote_flushes, 24);
ABI_OFF(struct tlbpol_stats, ipis_sent, 32);
ABI_OFF(struct tlbpol_stats, broadcasts, 40);
ABI_OFF(struct tlbpol_stats, pages_flushed, 48);
ABI_OFF(struct tlbpol_stats, full_flushes, 56);
ABI_OFF(struct tlbpol_stats, coalesced, 64);
ABI_OFF(struct tlbpol_stats, gen_skipped, 72);
ABI_OFF(struct tlbpol_stats, lazy_skipped, 80);
ABI_OFF(struct tlbpol_stats, deferred_frees, 88);
ABI_OFF(struct tlbpol_stats, by_reason, 96);
ABI_FSIZE(struct tlbpol_stats, by_reason, TLBPOL_WHY_MAX * 8);
ABI_OFF(struct tlbpol_stats, aged_flushes, (12 + TLBPOL_WHY_MAX) * 8);
ABI_OFF(struct tlbpol_stats, ipis_resent, (13 + TLBPOL_WHY_MAX) * 8);
ABI_OFF(struct tlbpol_stats, stuck_calls, (14 + TLBPOL_WHY_MAX) * 8);
ABI_VAL(TLBPOL_DEFAULT_FREE_TICKS, 2);

#endif /* LP64 */

/*
 * Values compiled into callers: they may gain new members, but an existing
 * one never changes.  (Any data model.)
 */
ABI_VAL(TLBPOL_ARCH_GENERIC, 0);
ABI_VAL(TLBPOL_ARCH_X86_64, 1);
ABI_VAL(TLBPOL_ARCH_ARM64, 2);

ABI_VAL(TLBPOL_RULE_SPURIOUS_NOFLUSH, 1ULL << 0);
ABI_VAL(TLBPOL_RULE_RANGE_FLUSH, 1ULL << 1);
ABI_VAL(TLBPOL_RULE_RETRY_NOFLUSH, 1ULL << 2);
ABI_VAL(TLBPOL_RULE_BATCH, 1ULL << 3);
ABI_VAL(TLBPOL_RULE_AGING_NOFLUSH, 1ULL << 4);
ABI_VAL(TLBPOL_RULE_UPGRADE_NOFLUSH, 1ULL << 5);
ABI_VAL(TLBPOL_RULE_FOOTPRINT, 1ULL << 6);
ABI_VAL(TLBPOL_RULE_LAZY_CPUS, 1ULL << 7);
ABI_VAL(TLBPOL_RULE_GEN_SKIP, 1ULL << 8);
ABI_VAL(TLBPOL_RULE_RECEIVER_MERGE, 1ULL << 9);
ABI_VAL(TLBPOL_RULE_BROADCAST, 1ULL << 10);
ABI_VAL(TLBPOL_RULE_NUMA_FANOUT, 1ULL << 11);
ABI_VAL(TLBPOL_RULE_LAZY_UNMAP, 1ULL << 12);
ABI_VAL(TLBPOL_RULE_VCPU_DEFER, 1ULL << 13);
ABI_VAL(TLBPOL_RULE_POLLING_CPUS, 1ULL << 14);
ABI_VAL(TLBPOL_RULE_FLUSH_STAMP, 1ULL << 15);
ABI_VAL(TLBPOL_RULES_NONE, 0);

ABI_VAL(TLBPOL_MAX_CPUS, 4096);

ABI_VAL(TLBPOL_FLUSH_PAGES, 0);
ABI_VAL(TLBPOL_FLUSH_AS, 1);
ABI_VAL(TLBPOL_FLUSH_ALL, 2);
ABI_VAL(TLBPOL_FLUSHF_TABLES, 1U << 0);
ABI_VAL(TLBPOL_FLUSHF_GLOBAL, 1U << 1);

ABI_VAL(TLBPOL_CPU_RUNNING, 0);
ABI_VAL(TLBPOL_CPU_IDLE, 1);
ABI_VAL(TLBPOL_CPU_PREEMPTED, 2);
ABI_VAL(TLBPOL_CPU_OFFLINE, 3);

ABI_VAL(TLBPOL_EV_FAULT, 0);
ABI_VAL(TLBPOL_EV_PROTECT, 1);
ABI_VAL(TLBPOL_EV_UNMAP, 2);
ABI_VAL(TLBPOL_EV_RECLAIM, 3);
ABI_VAL(TLBPOL_EV_MIGRATE, 4);
ABI_VAL(TLBPOL_EV_CLEAR_YOUNG, 5);
ABI_VAL(TLBPOL_EV_CLEAR_DIRTY, 6);
ABI_VAL(TLBPOL_EV_REMAP, 7);

ABI_VAL(TLBPOL_PTE_PRESENT, 1U << 0);
ABI_VAL(TLBPOL_PTE_WRITE, 1U << 1);
ABI_VAL(TLBPOL_PTE_EXEC, 1U << 2);
ABI_VAL(TLBPOL_PTE_USER, 1U << 3);
ABI_VAL(TLBPOL_PTE_ACCESSED, 1U << 4);
ABI_VAL(TLBPOL_PTE_DIRTY, 1U << 5);
ABI_VAL(TLBPOL_PTE_GLOBAL, 1U << 6);

ABI_VAL(TLBPOL_EVF_WRITE, 1U << 0);
ABI_VAL(TLBPOL_EVF_EXEC, 1U << 1);
ABI_VAL(TLBPOL_EVF_TRIED, 1U << 2);
ABI_VAL(TLBPOL_EVF_PFN_CHANGED, 1U << 3);
ABI_VAL(TLBPOL_EVF_TABLES_FREED, 1U << 4);
ABI_VAL(TLBPOL_EVF_LAZY_OK, 1U << 5);
ABI_VAL(TLBPOL_EVF_PRIVATE, 1U << 6);
ABI_VAL(TLBPOL_EVF_STAYS_MAPPED, 1U << 7);
ABI_VAL(TLBPOL_EVF_ATTRS, 1U << 8);
ABI_VAL(TLBPOL_EVF_STAMP, 1U << 9);
ABI_VAL(TLBPOL_EVF_ALL, 0x3ffU);

ABI_VAL(TLBPOL_ACT_NONE, 0);
ABI_VAL(TLBPOL_ACT_LOCAL, 1);
ABI_VAL(TLBPOL_ACT_SHOOTDOWN, 2);

ABI_VAL(TLBPOL_BY_NOW, 0);
ABI_VAL(TLBPOL_BY_WRITEBACK, 1);
ABI_VAL(TLBPOL_BY_FREE, 2);
ABI_VAL(TLBPOL_BY_LAZY, 3);

ABI_VAL(TLBPOL_WHY_NOT_PRESENT, 0);
ABI_VAL(TLBPOL_WHY_UNCHANGED, 1);
ABI_VAL(TLBPOL_WHY_NAIVE, 2);
ABI_VAL(TLBPOL_WHY_SPURIOUS, 3);
ABI_VAL(TLBPOL_WHY_RETRIED, 4);
ABI_VAL(TLBPOL_WHY_ACCESS_FLAGS, 5);
ABI_VAL(TLBPOL_WHY_UPGRADE, 6);
ABI_VAL(TLBPOL_WHY_AGING, 7);
ABI_VAL(TLBPOL_WHY_UNMAP, 8);
ABI_VAL(TLBPOL_WHY_RECLAIM_CLEAN, 9);
ABI_VAL(TLBPOL_WHY_RECLAIM_DIRTY, 10);
ABI_VAL(TLBPOL_WHY_MIGRATE_CLEAN, 11);
ABI_VAL(TLBPOL_WHY_MIGRATE_DIRTY, 12);
ABI_VAL(TLBPOL_WHY_PFN_CHANGE, 13);
ABI_VAL(TLBPOL_WHY_DOWNGRADE, 14);
ABI_VAL(TLBPOL_WHY_CLEAR_DIRTY, 15);
ABI_VAL(TLBPOL_WHY_REMAP, 16);
ABI_VAL(TLBPOL_WHY_UNMAP_DIRTY, 17);
ABI_VAL(TLBPOL_WHY_TABLES_FREED, 18);
ABI_VAL(TLBPOL_WHY_DISCARD, 19);
ABI_VAL(TLBPOL_WHY_ATTRS, 20);
ABI_VAL(TLBPOL_WHY_INSTALL, 21);
/* 0.2 grew struct tlbpol_stats from 19 reasons; 0.1's size is kept by
 * tlbpol_stats_read@TLBPOL_0.1 (lib/hosted/compat.c). */
ABI_VAL(TLBPOL_WHY_MAX, 22);

#endif /* TLBPOL_TEST_ABI_EXPECT_H */
