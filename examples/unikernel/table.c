/* SPDX-License-Identifier: MIT */
/*
 * table.c - the result table printed at the end of the boot, the IPI
 * claims checked on it, and the kernel's exit code (RESULT: line).  Called
 * by work.c once every mask has run; reads harness.c's results.
 */
#include "work.h"

static const char *const wl_units[NR_WL] = {
	"write", "touch+unmap", "touch+unmap", "touch+unmap", "page", "page", "page",
	"RO+RW pair", "RO+RW pair", "switch",
};

/* "base / x" as "12.34x"; "-" when both are 0, "inf" when only x is. */
static void ratio(char *out, uint64_t base, uint64_t x)
{
	uint64_t v, ip;
	char d[24];
	int k = 0;

	if (!x) {
		const char *s = base ? "inf" : "-";

		while ((*out++ = *s++))
			;
		return;
	}
	v = (base * 100 + x / 2) / x;
	ip = v / 100;
	do {
		d[k++] = (char)('0' + ip % 10);
		ip /= 10;
	} while (ip);
	while (k)
		*out++ = d[--k];
	*out++ = '.';
	*out++ = (char)('0' + (v % 100) / 10);
	*out++ = (char)('0' + v % 10);
	*out++ = 'x';
	*out = 0;
}

static uint64_t per_op(uint64_t cycles, uint64_t ops)
{
	return ops ? (cycles + ops / 2) / ops : 0;
}

int print_table(void)
{
	uint64_t total_stale = 0, total_anom = 0;
	int claims_ok = 1;

	kprintf("\n=== libtlbpol unikernel: %u CPUs, %lu rounds, TSC cycles ===\n", nr_cpus,
		(uint64_t)p_rounds);
	kprintf("cyc/op: cycles the CPUs spent inside the operations (fault, touch+unmap loop, "
		"munmap/mprotect until it returns) / ops\n");
	kprintf("irq/op: cycles the targets spent in the shootdown interrupt handler / ops\n");
	kprintf("IPI/naive, IPI/linux: that row's IPIs sent / this row's (x fewer); "
		"cyc/nv, cyc/lx: the same for cyc/op\n");
	if (nr_masks > NR_MASKS)
		kprintf("custom: rules=%s (mask %lx); the claims are about default\n", p_rules_spec,
			masks[M_CUSTOM].rules);
	kprintf("\n");
	kprintf("%-11s %-7s %6s %9s %8s %9s %9s %7s %7s %6s %4s %5s %5s | %9s %9s | %7s %7s\n",
		"workload", "rules", "ops", "cyc/op", "irq/op", "IPIs-sent", "IPIs-recv", "invlpg",
		"full-fl", "faults", "spur", "retry", "stale", "IPI/naive", "IPI/linux", "cyc/nv",
		"cyc/lx");
	for (int w = 0; w < NR_WL; w++) {
		for (int m = 0; m < nr_masks; m++) {
			struct result *r = &results[w][m], *nv = &results[w][0], *lx = &results[w][1];
			char a[24], b[24], c[24], d[24];
			uint64_t cyc = per_op(r->hw.op_cyc, r->ops);

			ratio(a, nv->hw.ipi_sent, r->hw.ipi_sent);
			ratio(b, lx->hw.ipi_sent, r->hw.ipi_sent);
			ratio(c, per_op(nv->hw.op_cyc, nv->ops), cyc);
			ratio(d, per_op(lx->hw.op_cyc, lx->ops), cyc);
			kprintf("%-11s %-7s %6lu %9lu %8lu %9lu %9lu %7lu %7lu %6lu %4lu %5lu %5lu | %9s %9s | "
				"%7s %7s\n",
				m ? "" : wl_names[w], masks[m].name, r->ops, cyc,
				per_op(r->hw.irq_cyc, r->ops), r->hw.ipi_sent, r->hw.ipi_recv, r->hw.invlpg,
				r->hw.full_flush, r->hw.faults, r->hw.spurious, r->hw.retried, r->stale, a,
				m == 0 ? "" : b, c, m == 0 ? "" : d);
			/* The engine counts the same IPIs we sent. */
			if (r->eng.ipis_sent != r->hw.ipi_sent) {
				total_anom++;
				kprintf("ANOMALY: engine counted %lu IPIs, the APIC sent %lu\n",
					r->eng.ipis_sent, r->hw.ipi_sent);
			}
		}
	}
	kprintf("(op = one");
	for (int w = 0; w < NR_WL; w++)
		kprintf("%s %s", w ? " /" : "", wl_units[w]);
	kprintf(")\n");
	if (param_planted) {
		struct cpu_counts hw;

		sum_counts(&hw);
		if (param_planted == 3)
			kprintf("planted bug: %lu TLBPOL_TAG_FLUSH_TAG loads done without the flush%s\n",
				hw.skipped,
				pcid_on ? "" : " (no PCID: only reloads of the same tables, a lazy "
					       "CPU's catch-up; other tables flush all anyway)");
		else
			kprintf("planted bug: %lu flush_local calls dropped on CPU %u\n", hw.skipped,
				nr_cpus - 1);
	}
	/* The allocators, each over its whole mask (warm-up included). */
	if (p_tags_kind != UK_TAGS_OFF) {
		kprintf("tag allocator: ");
		tags_describe();
		kprintf("  PCIDs %s; per mask: loads / TLBPOL_TAG_FLUSH_TAG / TLBPOL_TAG_FLUSH_ALL / "
			"rollovers\n", pcid_on ? "in CR3" : "off (identities only)");
		for (int m = 0; m < nr_masks; m++)
			kprintf("TAGS  %-7s %lu / %lu / %lu / %lu\n", masks[m].name,
				tag_stats[m].loads, tag_stats[m].tag_flushes,
				tag_stats[m].all_flushes, tag_stats[m].rollovers);
	}

	/* The IPI claims, checked in the same boot (they compare rule sets). */
	if (nr_cpus > 1 && p_only >= 0) {
		kprintf("\nclaims: not checked (only=%s)\n", masks[p_only].name);
	} else if (nr_cpus > 1) {
		uint64_t rn = results[WL_RECLAIM][0].hw.ipi_sent, rd = results[WL_RECLAIM][2].hw.ipi_sent;
		uint64_t fl = results[WL_FLUSH2_LAZY][1].hw.ipi_sent,
			 fd = results[WL_FLUSH2_LAZY][2].hw.ipi_sent;
		uint64_t sl = results[WL_FLUSH2][1].hw.ipi_sent, sd = results[WL_FLUSH2][2].hw.ipi_sent;
		/* A stamped reclaim pass past the flush ceiling is one whole
		 * flush per CPU, as linux's BY_FREE pass is: no page flushed
		 * one by one on top of it (libtlbpol tests/test_stamp_ceiling.c). */
		uint64_t kl = results[WL_RECLAIM_STAMP][1].hw.invlpg,
			 kd = results[WL_RECLAIM_STAMP][2].hw.invlpg;
		int c1 = rn >= 10 * rd, c2 = fd < fl, c3 = sd < sl, c4 = kd <= kl;

		kprintf("\nCLAIM reclaim: default sends >= 10x fewer IPIs than naive: %lu vs %lu: %s\n",
			rd, rn, c1 ? "ok" : "FAILED");
		kprintf("CLAIM flush2_lazy: default sends fewer IPIs than linux: %lu vs %lu: %s\n", fd,
			fl, c2 ? "ok" : "FAILED");
		kprintf("CLAIM tlb_flush2: default sends fewer IPIs than linux: %lu vs %lu: %s\n", sd,
			sl, c3 ? "ok" : "FAILED");
		kprintf("CLAIM reclaim_stamp: default invalidates no more pages one by one than "
			"linux: %lu vs %lu invlpg: %s\n",
			kd, kl, c4 ? "ok" : "FAILED");
		kprintf("NOTE  flush2_lazy: the unmapping CPU could still read its page right after "
			"munmap returned in %lu of %lu (naive), %lu (linux), %lu (default) iterations\n",
			results[WL_FLUSH2_LAZY][0].hw.self_visible, results[WL_FLUSH2_LAZY][0].ops,
			results[WL_FLUSH2_LAZY][1].hw.self_visible,
			results[WL_FLUSH2_LAZY][2].hw.self_visible);
		kprintf("NOTE  vCPUs left to the hypervisor's flush (preempted, ops->vcpu_defer), "
			"default: spurious %lu, tlb_flush2 %lu, flush2_lazy %lu, reclaim %lu, "
			"downgrade %lu\n",
			results[WL_SEED000][2].hw.deferred, results[WL_FLUSH2][2].hw.deferred,
			results[WL_FLUSH2_LAZY][2].hw.deferred, results[WL_RECLAIM][2].hw.deferred,
			results[WL_DOWNGRADE][2].hw.deferred);
		pv_flush_report();
		/* Flush stamps: what an allocation paid to settle. */
		kprintf("NOTE  flush2_stamp (flush stamps): frames stamped / reused / settles that "
			"waited; settle cycles: mean, p50, p99 (log2 buckets: below)\n");
		for (int m = 0; m < nr_masks; m++) {
			const struct result *r = &results[WL_FLUSH2_STAMP][m];
			uint64_t tot = 0, acc = 0, p50 = 0, p99 = 0;

			for (int b = 0; b < SETTLE_BUCKETS; b++)
				tot += stamp_hist[m][b];
			for (int b = 0; b < SETTLE_BUCKETS && tot; b++) {
				acc += stamp_hist[m][b];
				if (!p50 && 2 * acc >= tot)
					p50 = 1ULL << b;
				if (!p99 && 100 * acc >= 99 * tot)
					p99 = 1ULL << b;
			}
			kprintf("      %-7s %lu / %lu / %lu; %lu, < %lu, < %lu cycles; IPIs %lu\n",
				masks[m].name, r->hw.stamped, r->hw.settles, r->hw.settle_waits,
				per_op(r->hw.settle_cyc, r->hw.settles), p50, p99, r->hw.ipi_sent);
		}
		kprintf("NOTE  stamp_reuse: rounds in which the writer finished while the reader "
			"still had interrupts off / in which an old address reached a frame handed "
			"out again (stale):");
		for (int m = 0; m < nr_masks; m++)
			kprintf(" %s %lu / %lu of %lu%s", masks[m].name, sr_early[m], sr_caught[m],
				sr_windows[m], m + 1 < nr_masks ? "," : "\n");
		claims_ok = c1 && c2 && c3 && c4;
	}
	/* Totals from the CPUs' counters: they include what was found outside
	 * the workloads (frames not returned at the end of a mask). */
	{
		struct cpu_counts hw;

		sum_counts(&hw);
		total_stale = hw.stale;
		total_anom += hw.anomalies;
	}
	kprintf("\nstale reads: %lu, anomalies: %lu\n", total_stale, total_anom);
	if (total_stale) {
		kprintf("RESULT: STALE -- %lu stale TLB reads detected\n", total_stale);
		return EXIT_STALE;
	}
	if (total_anom) {
		kprintf("RESULT: FAIL -- %lu anomalies\n", total_anom);
		return EXIT_FAIL;
	}
	if (!claims_ok) {
		kprintf("RESULT: CLAIM FAILED\n");
		return EXIT_CLAIM;
	}
	kprintf("RESULT: PASS\n");
	return EXIT_PASS;
}
