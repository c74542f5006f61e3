/* SPDX-License-Identifier: MIT */
/*
 * options.h - softmmu's command line as main.c uses it: the options read
 * (struct opts) and the rule masks of --rules (struct policy).  A header of
 * its own because only main.c and options.c share it.
 */
#ifndef SOFTMMU_OPTIONS_H
#define SOFTMMU_OPTIONS_H

#include "softmmu.h"

#define MAX_POLICIES 8

struct policy {
	char name[48]; /* as given to --rules */
	uint64_t rules;
};

struct opts {
	uint32_t nv;
	double seconds;
	const struct mix *mix;
	const char *rules;
	uint64_t seed;
	enum bug bug;
	int expect;
	int no_stamps;
	uint32_t stamp_look;
	uint32_t free_ticks; /* the engine's cfg.free_ticks (0: its default) */
	uint32_t nas;        /* --as: guest address spaces */
	int tags_kind;       /* --tags: TAGS_OFF or TLBPOL_TAGS_* */
	uint32_t tags_param; /* its slots (percpu) or tag bits (global) */
};

/* The options into @o, or exit: 0 after --help, 2 (with a message on
 * stderr) for an unknown option, a missing or bad value, or an argument. */
void parse_options(int argc, char **argv, struct opts *o);
/* --rules into @pol: how many, with the first naive and linux ones (-1: none). */
int parse_rules(const char *arg, struct policy *pol, int *naive_i, int *linux_i);

#endif
