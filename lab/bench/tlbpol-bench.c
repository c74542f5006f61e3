/* SPDX-License-Identifier: MIT */
/*
 * tlbpol-bench - micro-benchmarks of libtlbpol's hot paths, each beside the
 * cost of an empty call through a function pointer measured in the same run.
 *
 *   1. a decision that needs no flush (x86 spurious write fault), through
 *      tlbpol_submit() and tlbpol_decide();
 *   2. a deferred page enqueued (clean RECLAIM joining the batch), pages two
 *      apart (one batch entry each) and adjacent (merged into one entry);
 *   3. tlbpol_flush(BY_FREE) of a 512-page batch, 4 CPUs in the footprint,
 *      interrupts delivered synchronously from send_ipi;
 *   4. tlbpol_handle_ipi() serving an inbox filled by 4 initiators (LAZY_OK
 *      unmaps posted by tlbpol_tick(), no interrupt);
 *   5. 1 and 2 threads, each one CPU in its own address space, enqueueing
 *      clean reclaims and flushing every 512 pages: ops/s and scaling.
 *
 * Every figure is the median of --reps samples taken with
 * clock_gettime(CLOCK_MONOTONIC).  Loops of many calls are timed as a whole;
 * calls that need untimed set-up before each one (3, 4) are timed one by one
 * and the cost of a back-to-back clock_gettime() pair, measured in the same
 * sample, is subtracted.  The empty call is timed with the same structure as
 * the operation it is compared with, alternately with it, and each ratio is
 * the median of the per-sample ratios.  A sample during which the thread was
 * off its CPU is taken again (within a time budget), and the lowest on-CPU
 * share kept is printed: on a machine shared with other work the figures are
 * flagged as unreliable rather than silently inflated.  (Under Linux
 * autogroup scheduling, `nice` alone does not help against other sessions;
 * `setsid sh -c 'echo -20 > /proc/self/autogroup; exec nice -n -20
 * tlbpol-bench'` does, as root.)
 *
 * Usage: tlbpol-bench [--iters N] [--seconds S] [--reps R] [--no-pin] [--rules MASK]
 *
 * The files: this one (options, the machine, the report) -> bench_hot.c
 * (1-4) and bench_threads.c (5) -> bench_sample.c (bench.h).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "support/cli.h"

/* @per: operations per call (the row is per page or per request). */
static void print_row(const char *name, struct fig f, double per)
{
	printf("  %-56s %10.2f %10.2f %9.1fx\n", name, f.ns / per, f.empty, f.ratio / per);
}

/*
 * The value of @key in a "key : value" line (/proc/cpuinfo, lscpu) into
 * @out; 0 if @line is not @key's or its value is empty.
 */
static int field(const char *line, const char *key, char *out, size_t n)
{
	size_t k = strlen(key);
	const char *v;

	if (strncmp(line, key, k) || !(v = strchr(line + k, ':')))
		return 0;
	for (v++; *v == ' ' || *v == '\t'; v++)
		;
	snprintf(out, n, "%s", v);
	out[strcspn(out, "\n")] = 0;
	return out[0] != 0;
}

/*
 * The CPU model, for the output header: the figures mean little without
 * it.  /proc/cpuinfo's "model name" (x86, and arm64 kernels that have
 * one); else lscpu's "Model name", which it makes from the implementer and
 * part numbers an arm64 kernel prints instead; else those raw ("Processor"
 * of 32-bit ARM kernels, "CPU part").
 */
static void cpu_model(char *model, size_t n)
{
	char line[256], raw[256] = "";
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;

	if (f) {
		while (!found && fgets(line, sizeof(line), f)) {
			found = field(line, "model name", model, n);
			if (!raw[0] && !field(line, "Processor", raw, sizeof(raw)))
				field(line, "CPU part", raw, sizeof(raw));
		}
		fclose(f);
	}
	if (!found && (f = popen("LC_ALL=C lscpu 2>/dev/null", "r"))) {
		/* Read to the end: lscpu must not die of SIGPIPE. */
		while (fgets(line, sizeof(line), f))
			if (!found)
				found = field(line, "Model name", model, n);
		pclose(f);
	}
	if (!found)
		snprintf(model, n, "%s", raw[0] ? raw : "unknown");
}

static void machine(void)
{
	char model[256];

	cpu_model(model, sizeof(model));
	printf("machine: %ld CPUs online, %s\n", sysconf(_SC_NPROCESSORS_ONLN), model);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tlbpol-bench [--iters N] [--seconds S] [--reps R] [--no-pin] [--rules MASK]\n"
		   "  --iters N    calls per sample of the tight loops (default 1000000);\n"
		   "               flushes and interrupt rounds use N/1000 and N/50\n"
		   "  --seconds S  length of each threads run (default 0.25)\n"
		   "  --reps R     samples per figure, the median is reported (default 11)\n"
		   "  --no-pin     do not pin to CPUs\n"
		   "  --rules MASK every engine's rules, as tlbpol_rules_parse() reads them\n"
		   "               (default: default); a row whose decision needs a rule the\n"
		   "               mask lacks stops the bench and says so\n"
		   "  -h, --help   this, on standard output\n");
}

/* A bad command line: what was wrong (if anything more than getopt_long()
 * said), the usage, status 2. */
static void bad_usage(const char *what, const char *arg)
{
	if (what)
		fprintf(stderr, "tlbpol-bench: %s: %s\n", what, arg);
	usage(stderr);
	exit(2);
}

/*
 * Each long option comes back from getopt_long() as the letter in its val;
 * only "h" is in the short option string, so -h is --help and the other
 * letters are no options of their own (-i is refused, as it always was).
 */
static const struct option longopts[] = {
	{ "iters", required_argument, NULL, 'i' },
	{ "seconds", required_argument, NULL, 's' },
	{ "reps", required_argument, NULL, 'r' },
	{ "no-pin", no_argument, NULL, 'P' },
	{ "rules", required_argument, NULL, 'R' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'P':
			opt.pin = 0;
			break;
		case 'i':
			if (cli_whole(optarg, 0, UINT64_MAX, &opt.iters) || opt.iters == 0)
				bad_usage("--iters: not a count", optarg);
			break;
		case 's':
			if (cli_double(optarg, 0, 3600, &opt.seconds))
				bad_usage("--seconds: not in (0, 3600)", optarg);
			break;
		case 'r': {
			uint64_t v;

			if (cli_whole(optarg, 0, 1000, &v) || v == 0)
				bad_usage("--reps: not in 1..1000", optarg);
			opt.reps = (unsigned)v;
			break;
		}
		case 'R':
			if (tlbpol_rules_parse(optarg, &opt.rules))
				bad_usage("--rules: not a rule mask", optarg);
			break;
		default: /* '?': getopt_long() said what */
			bad_usage(NULL, NULL);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument", argv[optind]);
}

static const char *verdict(int ok)
{
	return ok ? "MET" : "MISSED";
}

/* "7.8x MET" and, when the samples fall on both sides of @max, a warning. */
static void target(const char *what, struct fig f, double max)
{
	printf("%s %.1fx %s (samples %.1f .. %.1fx%s)", what, f.ratio, verdict(f.ratio <= max),
	       f.lo, f.hi, f.lo <= max && f.hi > max ? ", on both sides of the target" : "");
}

static int run(void);

int main(int argc, char **argv)
{
	parse(argc, argv);
	{
		/*
		 * Put the stack at the same offset within its page whatever
		 * address ASLR chose, so that the layouts the samples cover
		 * (see stack_shift()) are the same from run to run.
		 */
		SHIFT_STACK_TO_PAGE();

		return run();
	}
}

__attribute__((noinline)) static int run(void)
{
	int pinned;
	char name[96];

	setvbuf(stdout, NULL, _IOLBF, 0);
	pinned = pin_to(0);
	printf("tlbpol-bench: libtlbpol %s, %s\n", tlbpol_version(),
#ifdef TLBPOL_BENCH_SHARED
	       "shared library (calls through the PLT)"
#else
	       "static library"
#endif
	);
	machine();
	printf("main thread %s; iters %llu, reps %u (median), threads runs %.2f s\n",
	       pinned ? "pinned to CPU 0" : "not pinned", (unsigned long long)opt.iters,
	       opt.reps, opt.seconds);

	bench_noflush();
	bench_enqueue();
	bench_flush();
	bench_ipi();
	printf("clock_gettime() pair: %.1f ns (subtracted from calls timed one by one)\n", r_clock);
	printf("samples retaken because the CPU was shared: %u; lowest on-CPU share kept: %.1f%%%s\n\n",
	       retaken, 100 * worst_share,
	       worst_share < MIN_SHARE ? " (the machine is busy: figures are not reliable)" : "");

	printf("  %-56s %10s %10s %10s\n", "operation", "ns/op", "empty ns", "ratio");
	print_row("1 submit: x86 spurious write fault (no flush)", r_submit_nf, 1);
	print_row("1 decide: x86 spurious write fault", r_decide_nf, 1);
	print_row("2 submit: clean reclaim enqueued, pages 2 apart", r_enq_stride, 1);
	print_row("2 submit: clean reclaim enqueued, adjacent pages", r_enq_adj, 1);
	snprintf(name, sizeof(name), "3 flush BY_FREE: %d-page batch, 2 apart, 4 CPUs", BATCH);
	print_row(name, r_flush_stride, 1);
	print_row("    per page", r_flush_stride, BATCH);
	snprintf(name, sizeof(name), "3 flush BY_FREE: %d-page batch, adjacent, 4 CPUs", BATCH);
	print_row(name, r_flush_adj, 1);
	print_row("    per page", r_flush_adj, BATCH);
	snprintf(name, sizeof(name), "4 handle_ipi: inbox of %d requests, merged",
		 IPI_INITIATORS);
	print_row(name, r_ipi, 1);
	print_row("    per request served", r_ipi, IPI_INITIATORS);
	printf("  (empty ns: the empty call timed in the same loop shape: rows 1-2 in a\n"
	   "   loop of %llu calls, rows 3-4 one call at a time less the clock pair;\n"
	   "   ratio: median of the samples' op/empty ratios, per page or request\n"
	   "   on the indented rows)\n\n",
	       (unsigned long long)opt.iters);

	bench_threads();
	printf("5 threads, each one CPU in its own address space, clean reclaims 2 pages\n"
	       "  apart, tlbpol_flush(BY_FREE) every %d; %u pairs of runs of %.2f s\n"
	       "  (%s, %llu interrupts sent, every thread on a CPU >= %.1f%% of its run,\n"
	       "  %u pairs retaken%s):\n",
	       BATCH, opt.reps, opt.seconds, r_thr.pinned ? "threads pinned" : "threads not pinned",
	       (unsigned long long)r_thr.ipis, 100 * r_thr.share, r_thr.retaken,
	       r_thr.share < MIN_SHARE ? "; the machine is busy: not reliable" : "");
	printf("  1 thread : %12.0f ops/s  (%.1f ns/op)\n", r_thr.one, 1e9 / r_thr.one);
	printf("  2 threads: %12.0f ops/s  scaling 2T/1T = %.2fx (pairs: %.2f .. %.2f)\n",
	       r_thr.two, r_thr.ratio, r_thr.lo, r_thr.hi);
	printf("  control, empty calls in the same loop: 1T %.0f, 2T %.0f ops/s,\n"
	       "  scaling %.2fx (pairs: %.2f .. %.2f; on a CPU >= %.1f%%, %u pairs retaken)\n\n",
	       r_ctl.one, r_ctl.two, r_ctl.ratio, r_ctl.lo, r_ctl.hi, 100 * r_ctl.share,
	       r_ctl.retaken);

	printf("targets:\n");
	printf("  no-flush decision within 5x of an empty call:\n");
	target("    submit", r_submit_nf, 5);
	target("\n    decide", r_decide_nf, 5);
	printf("\n  enqueued page within 10x of an empty call:\n");
	target("    pages 2 apart", r_enq_stride, 10);
	target("\n    adjacent pages", r_enq_adj, 10);
	printf("\n");
	printf("  2-thread scaling >= 1.8x: %.2fx %s\n", r_thr.ratio, verdict(r_thr.ratio >= 1.8));
	return 0;
}
