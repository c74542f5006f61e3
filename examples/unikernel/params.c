/* SPDX-License-Identifier: MIT */
/*
 * params.c - the kernel command line (key=value) and the rule masks run in
 * one boot.  main.c calls params_parse() and params_print() at boot; the
 * workloads read the values (work.h).  Calls nothing but the console and
 * tlbpol_rules_parse().
 */
#include "work.h"


uint32_t param_cpus;
#ifdef UK_PLANTED_BUG
uint32_t param_planted = 1;
#else
uint32_t param_planted;
#endif
uint32_t p_rounds = 8;
uint32_t p_iters = 16;
uint32_t p_ring = 16;
uint32_t p_reclaim = 64;
uint32_t p_dgpages = 8;
uint32_t p_tick = 4;
uint32_t p_reuse = 8;
uint32_t p_reusewin = 200;
uint32_t p_ipi_delay = UINT32_MAX;
uint32_t p_swap;               /* swap=1: default runs before linux */
uint32_t p_warm;               /* warm=1: one unmeasured short round first */
uint32_t p_calib;              /* calib=1: the engines use the calibrated costs */
uint32_t param_idle_hlt;        /* idle=hlt */

/*
 * The rule masks.  The first three are the built-in comparison, which the
 * table's ratios and the claims are about.  rules=SPEC adds a fourth,
 * "custom", read by tlbpol_rules_parse() with the names every other CLI
 * takes ("default,-lazy-unmap", "linux+receiver-merge", "none,batch"): it
 * runs after the other three, under the same stale-TLB check, and gets a
 * row of its own in each workload.
 */
struct uk_mask masks[UK_MAX_MASKS] = {
	{ "naive", TLBPOL_RULES_NONE },
	{ "linux", TLBPOL_RULES_LINUX },
	{ "default", TLBPOL_RULES_DEFAULT },
};
int nr_masks = NR_MASKS;
char p_rules_spec[128]; /* rules=SPEC as given */
int p_only = -1;
static char p_only_name[16];

static uint32_t parse_u32(const char *s)
{
	uint32_t v = 0;

	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint32_t)(*s++ - '0');
	return v;
}

/* rules=SPEC: a mask tlbpol_rules_parse() accepts, or the boot stops with
 * EXIT_USAGE (run.sh: exit 2) after saying which names there are. */
static void parse_rules(const char *v)
{
	size_t n = 0;
	uint64_t mask;
	int err;

	while (v[n] && v[n] != ' ')
		n++;
	if (n >= sizeof(p_rules_spec)) {
		kprintf("rules=: longer than %lu characters\n", (uint64_t)sizeof(p_rules_spec) - 1);
		kprintf("RESULT: USAGE\n");
		kexit(EXIT_USAGE);
	}
	memcpy(p_rules_spec, v, n);
	p_rules_spec[n] = 0;
	err = tlbpol_rules_parse(p_rules_spec, &mask);
	if (err) {
		kprintf("rules=%s: not a rule mask (tlbpol_rules_parse() = %d)\n", p_rules_spec, err);
		kprintf("  terms, separated by ',' or starting with '+' (add) or '-' (remove):\n"
			"  sets default, linux, none (naive), all; a mask as a number; rules:");
		for (uint64_t b = 1; b && b <= TLBPOL_RULES_ALL; b <<= 1)
			if (TLBPOL_RULES_ALL & b)
				kprintf(" %s", tlbpol_rule_str(b));
		kprintf("\n  e.g. rules=default,-lazy-unmap\nRESULT: USAGE\n");
		kexit(EXIT_USAGE);
	}
	masks[M_CUSTOM].name = "custom";
	masks[M_CUSTOM].rules = mask;
	nr_masks = M_CUSTOM + 1;
}

/*
 * tags=percpu:N (TLBPOL_TAGS_PERCPU, N PCIDs per CPU, 1..64), tags=global:B
 * (TLBPOL_TAGS_GLOBAL, tags 1 .. 2^B - 1, B 2..12), tags=off (no
 * allocator).  Anything else stops the boot with EXIT_USAGE; so does a
 * pool too small for the CPUs (params_print(), once they are counted).
 */
static void parse_tags(const char *v)
{
	uint32_t n;

	if (!strncmp(v, "off", 3) && (!v[3] || v[3] == ' ')) {
		p_tags_kind = UK_TAGS_OFF;
		return;
	}
	if (!strncmp(v, "percpu:", 7)) {
		p_tags_kind = UK_TAGS_PERCPU;
		v += 7;
	} else if (!strncmp(v, "global:", 7)) {
		p_tags_kind = UK_TAGS_GLOBAL;
		v += 7;
	} else {
		p_tags_kind = UK_TAGS_OFF;
		v = "";
	}
	n = parse_u32(v);
	if (!*v || *v < '0' || *v > '9' ||
	    (p_tags_kind == UK_TAGS_PERCPU ? n < 1 || n > TLBPOL_TAG_SLOTS_MAX : n < 2 || n > 12)) {
		kprintf("tags=: percpu:N (N 1..%u), global:BITS (2..12) or off\nRESULT: USAGE\n",
			TLBPOL_TAG_SLOTS_MAX);
		kexit(EXIT_USAGE);
	}
	p_tags_n = n;
}

void params_parse(const char *c)
{
	static const struct {
		const char *key;
		uint32_t *val, min, max;
	} keys[] = {
		{ "rounds=", &p_rounds, 1, 1000000 },   { "iters=", &p_iters, 1, 1000000 },
		{ "ring=", &p_ring, 2, 16 },            { "reclaim=", &p_reclaim, 1, 192 },
		{ "dgpages=", &p_dgpages, 1, 32 },      { "tick=", &p_tick, 1, 1000000 },
		{ "cpus=", &param_cpus, 1, UK_MAX_CPUS }, { "planted=", &param_planted, 0, 3 },
		{ "ipidelay=", &p_ipi_delay, 0, 100000000 }, { "pvflush=", &param_pvflush, 0, 1 },
		{ "stamplook=", &param_stamp_lookahead, 0, 64 },
		{ "reuse=", &p_reuse, 1, 64 },          { "reusewin=", &p_reusewin, 1, 100000 },
		{ "swap=", &p_swap, 0, 1 },             { "warm=", &p_warm, 0, 1 },
		{ "calib=", &p_calib, 0, 1 },             { "pcid=", &param_pcid, 0, 1 },
	};

	while (*c) {
		while (*c == ' ')
			c++;
		if (!strncmp(c, "idle=hlt", 8))
			param_idle_hlt = 1;
		if (!strncmp(c, "rules=", 6))
			parse_rules(c + 6);
		if (!strncmp(c, "tags=", 5))
			parse_tags(c + 5);
		if (!strncmp(c, "only=", 5)) {
			size_t n = 0;

			while (c[5 + n] && c[5 + n] != ' ' && n < sizeof(p_only_name) - 1) {
				p_only_name[n] = c[5 + n];
				n++;
			}
			p_only_name[n] = 0;
		}
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t n = strlen(keys[k].key);

			if (!strncmp(c, keys[k].key, n)) {
				uint32_t v = parse_u32(c + n);

				*keys[k].val = v < keys[k].min ? keys[k].min
					       : v > keys[k].max ? keys[k].max : v;
			}
		}
		while (*c && *c != ' ')
			c++;
	}
}

/*
 * only=NAME: run one rule set (naive, linux, default, or custom with
 * rules=), to measure it alone (a profiler or the hypervisor's counters
 * then see nothing else); the table leaves the others at 0 and the claims,
 * which compare rule sets, are not checked.  Resolved after every argument
 * is read: "custom" exists only with rules=.  An unknown name stops the
 * boot with EXIT_USAGE.
 */
static void resolve_only(void)
{
	if (!p_only_name[0])
		return;
	for (int m = 0; m < nr_masks; m++)
		if (!strncmp(p_only_name, masks[m].name, sizeof(p_only_name)))
			p_only = m;
	if (p_only < 0) {
		kprintf("only=%s: not a rule set of this boot (naive, linux, default%s)\n",
			p_only_name, nr_masks > NR_MASKS ? ", custom" : "");
		kprintf("RESULT: USAGE\n");
		kexit(EXIT_USAGE);
	}
}

void params_print(void)
{
	resolve_only();
	kprintf("params: rounds=%u iters=%u ring=%u reclaim=%u dgpages=%u tick=%u planted=%u idle=%s "
		"stamplook=%u reuse=%u reusewin=%u calib=%u pcid=%u\n",
		p_rounds, p_iters, p_ring, p_reclaim, p_dgpages, p_tick, param_planted,
		param_idle_hlt ? "hlt" : "spin", param_stamp_lookahead, p_reuse, p_reusewin, p_calib,
		param_pcid);
	tags_describe();
	if (tags_check() == 1) {
		kprintf("tags=: tlbpol_tags_size() refuses it for %u CPUs (a global pool must hold "
			"more tags than CPUs)\nRESULT: USAGE\n", nr_cpus);
		kexit(EXIT_USAGE);
	} else if (tags_check()) {
		kprintf("tags=: the allocator needs %lu bytes, more than pcid.c reserves\n"
			"RESULT: USAGE\n", (uint64_t)tags_check());
		kexit(EXIT_USAGE);
	}
	if (nr_masks > NR_MASKS)
		kprintf("rules=%s: mask %lx, run as \"custom\" after naive, linux and default\n",
			p_rules_spec, masks[M_CUSTOM].rules);
	if (p_only >= 0)
		kprintf("only=%s: the other rule sets do not run; the claims are not checked\n",
			masks[p_only].name);
	if (param_planted == 1)
		kprintf("PLANTED BUG: CPU %u drops every flush_local (invlpg, CR3, CR4) on purpose\n",
			nr_cpus - 1);
	else if (param_planted == 2)
		kprintf("PLANTED BUG: CPU %u skips its invlpg (page flushes) on purpose\n", nr_cpus - 1);
	else if (param_planted == 3)
		kprintf("PLANTED BUG: every CPU ignores TLBPOL_TAG_FLUSH_TAG from tlbpol_switch_tag() "
			"(loads CR3 with no flush anyway)%s\n",
			p_tags_kind == UK_TAGS_OFF ? "; tags=off: no allocator, no effect" : "");
}
