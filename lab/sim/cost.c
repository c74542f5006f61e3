/* SPDX-License-Identifier: MIT */
#include "cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_cost_defaults(struct sim_cost *c)
{
#define SIM_COST_DEF(name, def, src) c->name = (def);
	SIM_COSTS(SIM_COST_DEF)
#undef SIM_COST_DEF
}

int sim_cost_set(struct sim_cost *c, const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	char *end;
	double v;

	if (!eq)
		return -1;
	v = strtod(eq + 1, &end);
	if (end == eq + 1 || *end || v < 0)
		return -1;
#define SIM_COST_SET(name, def, src)                                                   \
	if ((size_t)(eq - assignment) == strlen(#name) &&                              \
	    !strncmp(assignment, #name, (size_t)(eq - assignment))) {                   \
		c->name = v;                                                           \
		return 0;                                                              \
	}
	SIM_COSTS(SIM_COST_SET)
#undef SIM_COST_SET
	return -1;
}

int sim_cost_load(struct sim_cost *c, const char *path, int *bad_line)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;

	*bad_line = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *e;

		n++;
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strcspn(p, "#\r\n");
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*e = 0;
		if (!*p)
			continue;
		if (sim_cost_set(c, p)) {
			*bad_line = n;
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

void sim_cost_print(const struct sim_cost *c, void *file)
{
	FILE *f = file;

#define SIM_COST_PRINT(name, def, src) fprintf(f, "  %-22s %12g   %s\n", #name, c->name, src);
	SIM_COSTS(SIM_COST_PRINT)
#undef SIM_COST_PRINT
}
