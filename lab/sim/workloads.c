/* SPDX-License-Identifier: MIT */
/*
 * workloads.c - what the scenarios share (workloads.h) and the list of
 * them.  Each scenario drives the modelled CPUs through the page-table
 * changes of one Linux patch's workload (wl_linux.c) or of a known
 * benchmark (wl_bench.c), or a hypervisor's (hypervisor.c), and measures
 * what that patch or benchmark measured.
 */
#include "workloads.h"

#include <stdlib.h>
#include <string.h>

struct wcpu *W(struct sim *s, uint32_t cpu)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (!c->w)
		c->w = calloc(1, sizeof(struct wcpu));
	return c->w;
}

int setup_common(struct sim *s)
{
	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		W(s, c);
	return 0;
}

int setup_one_as(struct sim *s, uint32_t first)
{
	setup_common(s);
	if (sim_open_as(s) < 0)
		return -1;
	for (uint32_t c = first; c < s->cfg.ncpus; c++)
		sim_switch(s, c, 0);
	if (first)
		sim_switch(s, 0, -1);
	return 0;
}

void populate(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, uint32_t dirty_every)
{
	for (uint64_t v = 0; v < n; v++) {
		struct sim_page *p = sim_page(s, as, vpn + v, 1);

		p->perms = (v % dirty_every == 0) ? RWD : RW;
		p->frame = s->next_frame++;
	}
}

/* Touch @vpn, resolving a missing PTE by installing it (a minor fault). */
void touch(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, int write)
{
	if (sim_access(s, cpu, as, vpn, write) == ACC_OK)
		return;
	sim_fault(s, cpu, as, vpn, write ? TLBPOL_EVF_WRITE : 0, write ? RWD : RW);
	if (sim_access(s, cpu, as, vpn, write) != ACC_OK) {
		fprintf(stderr, "tlbpol-sim: a resolved fault faulted again\n");
		exit(2);
	}
}

/* munmap/MADV_DONTNEED of [vpn, vpn+n): clear, flush before the syscall
 * returns (tlb_finish_mmu), free the frames behind the flush.  With
 * --stamps a private munmap is stamped instead (LAZY_OK, the caller's
 * promise, is not needed then) and its frames go back at once. */
void unmap_range(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, uint64_t n,
		 uint32_t flags)
{
	uint64_t i = 0;
	int stamped = s->cfg.stamps && (flags & TLBPOL_EVF_PRIVATE) &&
		      !(flags & TLBPOL_EVF_STAYS_MAPPED);

	if (stamped)
		flags = (flags & ~TLBPOL_EVF_LAZY_OK) | TLBPOL_EVF_STAMP;
	sim_charge(s, cpu, s->cfg.cost.syscall_ns);
	/* One event per run of pages with the same PTE bits. */
	while (i < n) {
		struct sim_page *p = sim_page(s, as, vpn + i, 1);
		uint8_t perms = p->perms;
		uint64_t j = i + 1;

		while (j < n && sim_page(s, as, vpn + j, 1)->perms == perms)
			j++;
		if (perms & SIM_P)
			sim_change(s, cpu, as, TLBPOL_EV_UNMAP, flags, vpn + i, j - i, 0);
		i = j;
	}
	if (stamped) {
		sim_unmap_done(s, cpu);
		return;
	}
	sim_flush(s, cpu, TLBPOL_BY_FREE);
	sim_free_frames_later(s, cpu, as, vpn, n);
}

/* wl_linux.c */
extern const struct workload wl_spurious, wl_munmap, wl_retry, wl_reclaim, wl_swapout;
/* wl_bench.c */
extern const struct workload wl_dontneed, wl_lazy, wl_vcpu;
/* hypervisor.c */
extern const struct workload wl_hypervisor;

const struct workload *const sim_workloads[] = {
	&wl_spurious, &wl_munmap, &wl_retry, &wl_reclaim, &wl_swapout,
	&wl_dontneed, &wl_lazy, &wl_vcpu, &wl_hypervisor, NULL,
};

const struct workload *sim_find_workload(const char *name)
{
	for (int i = 0; sim_workloads[i]; i++)
		if (!strcmp(sim_workloads[i]->name, name))
			return sim_workloads[i];
	return NULL;
}
