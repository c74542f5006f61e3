/* SPDX-License-Identifier: MIT */
/*
 * decide: print, for each scenario of the Linux changes the rules follow
 * (named by commit), what the engine decides and why, under the naive
 * policy (TLBPOL_RULES_NONE), Linux's rules and the default rules.  The
 * decisions come from tlbpol_decide(), nothing is hard-coded.
 *
 * decide --cite: what each reason rests on, per arch, from
 * tlbpol_reason_cite(), as the Markdown list docs/rules.md carries (the
 * docs-obligations test compares the two).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlbpol/tlbpol.h>

#define P TLBPOL_PTE_PRESENT
#define W TLBPOL_PTE_WRITE
#define U TLBPOL_PTE_USER
#define A TLBPOL_PTE_ACCESSED
#define D TLBPOL_PTE_DIRTY

struct scenario {
	const char *commit, *what; /* the Linux commit the scenario comes from, or "-" */
	uint32_t arch, kind, flags, old_pte, new_pte;
	uint64_t nr_pages;
};

static const struct scenario scenarios[] = {
	{ "61c77326d1df", "threads write one shared page (D set)", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, P | W | U | A, P | W | U | A | D, 1 },
	{ "61c77326d1df", "spurious write fault, PTE unchanged", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, P | W | U | A | D, P | W | U | A | D, 1 },
	{ "61c77326d1df", "COW reuse: read-only -> writable", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE, P | U | A, P | W | U | A | D, 1 },
	{ "611ae8e3f520", "munmap of 8 pages", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_UNMAP, 0, P | W | U | A, 0, 8 },
	{ "b7333b58f358", "retried write fault, PTE installed", TLBPOL_ARCH_ARM64,
	  TLBPOL_EV_FAULT, TLBPOL_EVF_WRITE | TLBPOL_EVF_TRIED, P | W | U | A, P | W | U | A | D, 1 },
	{ "72b252aed506", "reclaim a clean page", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_RECLAIM, 0, P | W | U | A, 0, 1 },
	{ "72b252aed506", "reclaim a dirty page", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_RECLAIM, 0, P | W | U | A | D, 0, 1 },
	{ "b13b1d2d8692", "clear accessed bit for aging", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_CLEAR_YOUNG, 0, P | W | U | A, P | W | U, 1 },
	{ "b13b1d2d8692", "clear accessed bit for aging", TLBPOL_ARCH_ARM64,
	  TLBPOL_EV_CLEAR_YOUNG, 0, P | W | U | A, P | W | U, 1 },
	{ "-", "mprotect read-only (downgrade)", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_PROTECT, 0, P | W | U | A, P | U | A, 4 },
	{ "-", "fault on a not-present PTE", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_FAULT, 0, 0, P | U | A, 1 },
	{ "-", "fault on a not-present PTE", TLBPOL_ARCH_GENERIC,
	  TLBPOL_EV_FAULT, 0, 0, P | U | A, 1 },
	{ "-", "MADV_DONTNEED of 16 dirty pages", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_UNMAP, TLBPOL_EVF_STAYS_MAPPED | TLBPOL_EVF_PRIVATE, P | W | U | A | D, 0, 16 },
	{ "-", "huge-page split (EVF_ATTRS)", TLBPOL_ARCH_X86_64,
	  TLBPOL_EV_PROTECT, TLBPOL_EVF_ATTRS, P | W | U | A | D, P | W | U | A | D, 1 },
};

static const char *arch_name(uint32_t arch)
{
	static const char *const names[TLBPOL_ARCH_MAX] = { "generic", "x86_64", "arm64", "riscv64" };

	return arch < TLBPOL_ARCH_MAX ? names[arch] : "unknown";
}

static void no_flush(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx, (void)cpu, (void)f;
}

static void no_ipi(void *ctx, uint32_t cpu, const struct tlbpol_cpuset *t)
{
	(void)ctx, (void)cpu, (void)t;
}

static int decide(uint32_t arch, uint64_t rules, const struct scenario *s,
		  struct tlbpol_decision *d)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops),
		.flush_local = no_flush,
		.send_ipi = no_ipi,
	};
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng;
	struct tlbpol_as *as;
	struct tlbpol_event ev = { sizeof(ev), s->kind, s->flags, 12, 0x7f0000000000ULL,
				   s->nr_pages, s->old_pte, s->new_pte };
	int err;

	tlbpol_config_init(&cfg, 4, arch);
	cfg.rules = rules;
	cfg.ops = &ops;
	err = tlbpol_engine_new(&cfg, &eng);
	if (err)
		return err;
	err = tlbpol_as_open(eng, 1, &as);
	if (!err)
		err = tlbpol_decide(eng, as, 0, &ev, d);
	tlbpol_engine_free(eng);
	return err;
}

/* The citations, reason by reason: one line where every arch cites the
 * same, one line per arch where they differ. */
static int print_cites(void)
{
	for (uint32_t r = 0; r < TLBPOL_WHY_MAX; r++) {
		const char *c0 = tlbpol_reason_cite(r, 0);
		int same = 1;

		for (uint32_t a = 1; a < TLBPOL_ARCH_MAX; a++)
			same &= !strcmp(c0, tlbpol_reason_cite(r, a));
		if (same) {
			printf("- `%s`: %s\n", tlbpol_reason_str(r), c0);
			continue;
		}
		printf("- `%s`:\n", tlbpol_reason_str(r));
		for (uint32_t a = 0; a < TLBPOL_ARCH_MAX; a++)
			printf("  - %s: %s\n", arch_name(a), tlbpol_reason_cite(r, a));
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; uint64_t rules; } policies[] = {
		{ "naive", TLBPOL_RULES_NONE },
		{ "linux", TLBPOL_RULES_LINUX },
		{ "default", TLBPOL_RULES_DEFAULT },
	};

	if (argc == 2 && !strcmp(argv[1], "--cite"))
		return print_cites();
	if (argc != 1) {
		fprintf(stderr, "usage: decide [--cite]\n");
		return 2;
	}

	printf("libtlbpol %s: decisions for the scenarios of the Linux changes\n\n", tlbpol_version());
	printf("%-12s %-40s %-8s", "commit", "scenario", "arch");
	for (size_t p = 0; p < 3; p++)
		printf(" | %-36s", policies[p].name);
	printf("\n");
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		const struct scenario *s = &scenarios[i];

		printf("%-12s %-40s %-8s", s->commit, s->what, arch_name(s->arch));
		for (size_t p = 0; p < 3; p++) {
			struct tlbpol_decision d;
			char cell[64];
			int err = decide(s->arch, policies[p].rules, s, &d);

			if (err) {
				fprintf(stderr, "decide: error %d\n", err);
				return 1;
			}
			snprintf(cell, sizeof(cell), "%s/%s (%s)", tlbpol_action_str(d.action),
				 tlbpol_deadline_str(d.deadline), tlbpol_reason_str(d.reason));
			printf(" | %-36s", cell);
		}
		printf("\n");
	}
	printf("\naction/deadline (reason): none = no flush anywhere, local = this CPU only,\n"
	       "shootdown = every CPU that may hold the entry; now / writeback / free / lazy\n"
	       "= before the call returns / before writeback / before the frames are freed /\n"
	       "eventually.\n");
	return 0;
}
