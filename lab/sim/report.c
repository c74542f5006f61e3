/* SPDX-License-Identifier: MIT */
/*
 * report.c - tlbpol-sim's output: a table for people, CSV and JSON for
 * scripts (lab/plot reads the CSV), one row per (scenario, policy).
 */
#include "frontend.h"

#include <string.h>

static const char *metric_name(const struct workload *wl)
{
	return wl->metric ? wl->metric : "modelled ns";
}

/* a / b; 1 when both are 0; infinite (printed "inf", null in JSON) when
 * only b is. */
static double ratio(double a, double b)
{
	return b > 0 ? a / b : (a > 0 ? 1.0 / 0.0 : 1.0);
}

/* A ratio as JSON: a number, or null when it is infinite. */
static const char *jr(char *buf, double v)
{
	if (v != v || v > 1e300)
		return "null";
	snprintf(buf, 32, "%.4f", v);
	return buf;
}

/* Did any policy reuse a frame with a stamp (--stamps)? */
static int any_stamped(const struct result *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i].cnt.frame_reuses)
			return 1;
	return 0;
}

void print_table(FILE *f, const struct workload *wl, const struct result *r, int n, int before,
		 int linux_i)
{
	if (strcmp(wl->commit, "-"))
		fprintf(f, "\n%s — %s (Linux %s)\n", wl->name, wl->what, wl->commit);
	else
		fprintf(f, "\n%s — %s\n", wl->name, wl->what);
	fprintf(f, "  %-8s %10s %10s %9s %10s %8s %10s %13s %14s %6s %9s %9s\n", "policy",
		"irq sent", "irq recv", "flushes", "pages", "full", "flush-miss", "modelled ms",
		metric_name(wl), "viol", "x before", "x linux");
	for (int i = 0; i < n; i++) {
		const struct result *x = &r[i];

		fprintf(f, "  %-8s %10llu %10llu %9llu %10llu %8llu %10llu %13.3f %14.1f %6s %9.3f %9.3f\n",
			x->policy, (unsigned long long)x->cnt.irq_sent,
			(unsigned long long)x->cnt.irq_received,
			(unsigned long long)x->cnt.local_flushes,
			(unsigned long long)x->cnt.pages_flushed,
			(unsigned long long)x->cnt.full_flushes,
			(unsigned long long)x->cnt.flush_misses, x->modelled_ns / 1e6, x->metric,
			x->cnt.violations ? "UNSAFE" : "0",
			ratio(x->modelled_ns, r[before].modelled_ns),
			ratio(x->modelled_ns, r[linux_i].modelled_ns));
		if (x->cnt.violations)
			fprintf(f, "  !!! %s/%s: %llu stale-TLB violations: this policy is UNSAFE\n",
				wl->name, x->policy, (unsigned long long)x->cnt.violations);
	}
	fprintf(f, "  interrupts by cause:");
	for (int c = 0; c < SIM_NR_CAUSES; c++)
		fprintf(f, " %s", sim_cause_names[c]);
	fprintf(f, "\n");
	for (int i = 0; i < n; i++) {
		fprintf(f, "    %-8s", r[i].policy);
		for (int c = 0; c < SIM_NR_CAUSES; c++)
			fprintf(f, " %*llu", (int)strlen(sim_cause_names[c]),
				(unsigned long long)r[i].cnt.irq_by_cause[c]);
		fprintf(f, "\n");
	}
	/* Whether each policy stamped (the flush-stamp rule's policies do
	 * unless --no-stamps; --stamps makes all of them). */
	fprintf(f, "  flush stamps:");
	for (int i = 0; i < n; i++)
		if (r[i].stamps)
			fprintf(f, "%s %s on (lookahead %u%s; %llu munmaps not stamped: guards, MAP_FIXED)",
				i ? "," : "", r[i].policy, r[i].stamp_lookahead,
				r[i].stamp_spare ? ", spare frames" : "",
				(unsigned long long)r[i].cnt.guard_unmaps);
		else
			fprintf(f, "%s %s off", i ? "," : "", r[i].policy);
	fprintf(f, "\n");
	/* Flush stamps (--stamps): what reusing frames cost the allocations. */
	for (int i = 0; i < n && any_stamped(r, n); i++) {
		const struct sim_counters *k = &r[i].cnt;

		if (!i)
			fprintf(f, "  frames (--stamps): allocations, reused with a stamp, settles that "
				   "waited (of allocations); settle p50/p99, of waits p50/p99 (ns); "
				   "most pages held in deferred frees; spare frames taken, most frames "
				   "in free lists\n");
		fprintf(f, "    %-8s %8llu %8llu %8llu (%5.2f%%)  %7.0f %7.0f  %7.0f %7.0f  %llu  %llu %llu\n",
			r[i].policy, (unsigned long long)k->frame_allocs,
			(unsigned long long)k->frame_reuses, (unsigned long long)k->settles,
			k->frame_allocs ? 100.0 * (double)k->settles / (double)k->frame_allocs : 0.0,
			k->settle_p50, k->settle_p99, k->wait_p50, k->wait_p99,
			(unsigned long long)k->dfree_pages_peak, (unsigned long long)k->spare_allocs,
			(unsigned long long)k->free_frames_peak);
	}
	/* --tags: what the allocator did, and what a broadcast by tag served. */
	for (int i = 0; i < n && r[0].cnt.tag_loads; i++) {
		const struct sim_counters *k = &r[i].cnt;

		if (!i)
			fprintf(f, "  tags (--tags %s): loads, tag flushes, flushes of all tags, "
				   "rollovers, broadcasts, moves onto a global tag between switches, "
				   "address spaces closed and opened anew; foreign hits (a tag "
				   "reused unflushed)\n",
				r[0].tags);
		fprintf(f, "    %-8s %9llu %9llu %7llu %7llu %9llu %7llu %5llu  %llu\n", r[i].policy,
			(unsigned long long)k->tag_loads, (unsigned long long)k->tag_flushes,
			(unsigned long long)k->tag_all_flushes, (unsigned long long)k->tag_rollovers,
			(unsigned long long)k->broadcasts, (unsigned long long)k->tag_moves,
			(unsigned long long)k->as_reopened, (unsigned long long)k->tag_foreign_hits);
	}
	/* A replayed trace: were its page faults recorded (version 3)? */
	if (wl == &sim_trace_workload && !r[0].cnt.faults_recorded) {
		fprintf(f, "  faults: not recorded: copy-on-write shootdowns are not modelled "
			   "(record with lab/trace/record-faults.sh: trace version 3)\n");
	} else if (wl == &sim_trace_workload) {
		fprintf(f, "  faults: recorded: %llu read, %llu write, %llu copy-on-write; "
			   "interrupts per cause:\n",
			(unsigned long long)r[0].cnt.faults[0], (unsigned long long)r[0].cnt.faults[1],
			(unsigned long long)r[0].cnt.faults[2]);
		for (int i = 0; i < n; i++) {
			fprintf(f, "    %-8s", r[i].policy);
			for (int c = 0; c < SIM_NR_CAUSES; c++)
				if (r[i].cnt.irq_by_cause[c])
					fprintf(f, " %s %llu", sim_cause_names[c],
						(unsigned long long)r[i].cnt.irq_by_cause[c]);
			fprintf(f, "\n");
		}
	}
	fprintf(f, "  interrupts vs before: ");
	for (int i = 0; i < n; i++)
		if (r[before].cnt.irq_sent)
			fprintf(f, "%s %.3f  ", r[i].policy,
				ratio((double)r[i].cnt.irq_sent, (double)r[before].cnt.irq_sent));
		else
			fprintf(f, "%s %llu  ", r[i].policy, (unsigned long long)r[i].cnt.irq_sent);
	fprintf(f, "\n");
}

void print_csv_header(FILE *f)
{
	fprintf(f, "scenario,policy,rules,ipis,ipis_received,local_flushes,pages_flushed,"
		   "full_flushes,tlb_misses,all_tlb_misses,modelled_ns,metric,metric_name,"
		   "violations,ipis_vs_before,time_vs_before,ipis_vs_linux,time_vs_linux,"
		   "broadcasts");
	for (int c = 0; c < SIM_NR_CAUSES; c++)
		fprintf(f, ",ipis_%s", sim_cause_names[c]);
	fprintf(f, ",frame_allocs,stamped_reuses,settle_waits,settle_p50_ns,settle_p99_ns,"
		   "wait_p50_ns,wait_p99_ns,dfree_pages_peak,spare_allocs,free_frames_peak,stamps,"
		   "tag_loads,tag_flushes,tag_all_flushes,tag_rollovers,tag_foreign_hits,tag_moves,"
		   "as_reopened\n");
}

/*
 * What a CSV row and a JSON object both carry, in their order.  The names
 * are the columns': tlb_misses counts the misses a flush caused,
 * all_tlb_misses every miss.
 */
struct row {
	unsigned long long rules, ipis, ipis_received, local_flushes, pages_flushed, full_flushes;
	unsigned long long tlb_misses, all_tlb_misses, violations, broadcasts;
	double ipis_vs_before, time_vs_before, ipis_vs_linux, time_vs_linux;
};

static struct row row_of(const struct result *r, int i, int before, int linux_i)
{
	const struct result *x = &r[i];

	return (struct row){
		.rules = x->rules,
		.ipis = x->cnt.irq_sent,
		.ipis_received = x->cnt.irq_received,
		.local_flushes = x->cnt.local_flushes,
		.pages_flushed = x->cnt.pages_flushed,
		.full_flushes = x->cnt.full_flushes,
		.tlb_misses = x->cnt.flush_misses,
		.all_tlb_misses = x->cnt.tlb_misses,
		.violations = x->cnt.violations,
		.broadcasts = x->cnt.broadcasts,
		.ipis_vs_before = ratio((double)x->cnt.irq_sent, (double)r[before].cnt.irq_sent),
		.time_vs_before = ratio(x->modelled_ns, r[before].modelled_ns),
		.ipis_vs_linux = ratio((double)x->cnt.irq_sent, (double)r[linux_i].cnt.irq_sent),
		.time_vs_linux = ratio(x->modelled_ns, r[linux_i].modelled_ns),
	};
}

void print_csv(FILE *f, const struct workload *wl, const struct result *r, int n, int before,
	       int linux_i)
{
	for (int i = 0; i < n; i++) {
		const struct result *x = &r[i];
		struct row w = row_of(r, i, before, linux_i);

		fprintf(f, "%s,%s,%#llx,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.0f,%.3f,%s,%llu,%.4f,%.4f,"
			   "%.4f,%.4f,%llu",
			x->scenario, x->policy, w.rules, w.ipis, w.ipis_received, w.local_flushes,
			w.pages_flushed, w.full_flushes, w.tlb_misses, w.all_tlb_misses,
			x->modelled_ns, x->metric, metric_name(wl), w.violations, w.ipis_vs_before,
			w.time_vs_before, w.ipis_vs_linux, w.time_vs_linux, w.broadcasts);
		for (int c = 0; c < SIM_NR_CAUSES; c++)
			fprintf(f, ",%llu", (unsigned long long)x->cnt.irq_by_cause[c]);
		fprintf(f, ",%llu,%llu,%llu,%.0f,%.0f,%.0f,%.0f,%llu,%llu,%llu,%d",
			(unsigned long long)x->cnt.frame_allocs,
			(unsigned long long)x->cnt.frame_reuses,
			(unsigned long long)x->cnt.settles, x->cnt.settle_p50, x->cnt.settle_p99,
			x->cnt.wait_p50, x->cnt.wait_p99,
			(unsigned long long)x->cnt.dfree_pages_peak,
			(unsigned long long)x->cnt.spare_allocs,
			(unsigned long long)x->cnt.free_frames_peak, x->stamps);
		fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
			(unsigned long long)x->cnt.tag_loads,
			(unsigned long long)x->cnt.tag_flushes,
			(unsigned long long)x->cnt.tag_all_flushes,
			(unsigned long long)x->cnt.tag_rollovers,
			(unsigned long long)x->cnt.tag_foreign_hits,
			(unsigned long long)x->cnt.tag_moves, (unsigned long long)x->cnt.as_reopened);
	}
}

void print_json(FILE *f, const struct workload *wl, const struct result *r, int n, int before,
		int linux_i, int *first)
{
	for (int i = 0; i < n; i++) {
		const struct result *x = &r[i];
		struct row w = row_of(r, i, before, linux_i);
		char b1[32], b2[32], b3[32], b4[32];

		fprintf(f,
			"%s  {\"scenario\": \"%s\", \"policy\": \"%s\", \"rules\": %llu, \"ipis\": %llu, "
			"\"ipis_received\": %llu, \"local_flushes\": %llu, \"pages_flushed\": %llu, "
			"\"full_flushes\": %llu, \"tlb_misses\": %llu, \"all_tlb_misses\": %llu, "
			"\"modelled_ns\": %.0f, \"metric\": %.3f, \"metric_name\": \"%s\", "
			"\"violations\": %llu, \"ipis_vs_before\": %s, \"time_vs_before\": %s, "
			"\"ipis_vs_linux\": %s, \"time_vs_linux\": %s, \"stamps\": %s, "
			"\"tag_loads\": %llu, \"tag_flushes\": %llu, \"tag_all_flushes\": %llu, "
			"\"tag_rollovers\": %llu, \"tag_foreign_hits\": %llu, \"tag_moves\": %llu, "
			"\"as_reopened\": %llu}",
			*first ? "" : ",\n", x->scenario, x->policy, w.rules, w.ipis,
			w.ipis_received, w.local_flushes, w.pages_flushed, w.full_flushes,
			w.tlb_misses, w.all_tlb_misses, x->modelled_ns, x->metric, metric_name(wl),
			w.violations, jr(b1, w.ipis_vs_before), jr(b2, w.time_vs_before),
			jr(b3, w.ipis_vs_linux), jr(b4, w.time_vs_linux),
			x->stamps ? "true" : "false", (unsigned long long)x->cnt.tag_loads,
			(unsigned long long)x->cnt.tag_flushes,
			(unsigned long long)x->cnt.tag_all_flushes,
			(unsigned long long)x->cnt.tag_rollovers,
			(unsigned long long)x->cnt.tag_foreign_hits,
			(unsigned long long)x->cnt.tag_moves, (unsigned long long)x->cnt.as_reopened);
		*first = 0;
	}
}
