/* SPDX-License-Identifier: MIT */
/*
 * wl_protect.c - the protection workloads: downgrade (mprotect read-only of
 * pages every CPU has written, then back) and global (kernel pages mapped
 * global, write-protected while the other CPUs are lazy or idle).  work.c
 * describes them and runs them; they call harness.c, mm.c and the core.
 */
#include "work.h"

void wl_downgrade(uint32_t cpu, int m)
{
	barrier(cpu);
	for (uint32_t i = 0; i < p_dgpages; i++) {
		touch_write(cpu, IDX_DG + i, i);
		check_touched(cpu, WL_DOWNGRADE, m, IDX_DG + i);
	}
	for (uint32_t r = 0; r < p_rounds; r++) {
		uint32_t who = r % nr_cpus;

		seg_begin(cpu);
		if (cpu == who)
			TIMED(cpu, mm_protect(cpu, IDX_DG, p_dgpages, 0));
		seg_end(cpu, WL_DOWNGRADE, m, 1);
		/* Complete: every write must fault now, every read still works. */
		for (uint32_t i = 0; i < p_dgpages; i++) {
			check_write_faults(cpu, WL_DOWNGRADE, m, IDX_DG + i);
			check_read(cpu, WL_DOWNGRADE, m, IDX_DG + i);
		}
		seg_begin(cpu);
		if (cpu == who)
			TIMED(cpu, mm_protect(cpu, IDX_DG, p_dgpages, 1));
		barrier(cpu);
		for (uint32_t i = 0; i < p_dgpages; i++)
			touch_write(cpu, IDX_DG + i, r);
		seg_end(cpu, WL_DOWNGRADE, m, 0);
	}
	teardown(cpu, WL_DOWNGRADE, m, IDX_DG, p_dgpages);
}

void wl_global(uint32_t cpu, int m)
{
	barrier(cpu);
	if (cpu == 0)
		mm_map_global(cpu, IDX_GL, NR_GL);
	barrier(cpu);
	for (uint32_t r = 0; r < p_rounds; r++) {
		/* Odd CPUs go lazy, even ones idle: both run kernel code. */
		int lazy = cpu % 2;

		for (uint32_t i = 0; i < NR_GL; i++) {
			touch_write(cpu, IDX_GL + i, r);
			check_touched(cpu, WL_GLOBAL, m, IDX_GL + i);
		}
		seg_begin(cpu);
		if (cpu && lazy)
			uk_switch(cpu, 0, 0);
		if (cpu && !lazy && tlbpol_cpu_state(g_eng, cpu, TLBPOL_CPU_IDLE) < 0)
			panic("CPU %u: idle failed", cpu);
		barrier(cpu);
		if (cpu == 0)
			TIMED(cpu, mm_protect(cpu, IDX_GL, NR_GL, 0));
		barrier(cpu);
		/* Complete, and everyone still lazy or idle: a write must fault. */
		for (uint32_t i = 0; i < NR_GL; i++) {
			check_write_faults(cpu, WL_GLOBAL, m, IDX_GL + i);
			check_read(cpu, WL_GLOBAL, m, IDX_GL + i);
		}
		barrier(cpu);
		if (cpu && lazy) {
			/* Back to the loaded tables: a catch-up, if any, is
			 * the switch's flush of the tag (keeps global entries). */
			uk_switch(cpu, g_as, kernel_cr3());
		} else if (cpu) {
			int nf = tlbpol_cpu_state(g_eng, cpu, TLBPOL_CPU_RUNNING);

			if (nf < 0)
				panic("CPU %u: wake failed", cpu);
			if (nf) /* the catch-up: the current PCID (keeps global entries) */
				write_cr3(read_cr3());
		}
		barrier(cpu);
		if (cpu == 0)
			TIMED(cpu, mm_protect(cpu, IDX_GL, NR_GL, 1));
		seg_end(cpu, WL_GLOBAL, m, 1);
	}
	teardown(cpu, WL_GLOBAL, m, IDX_GL, NR_GL);
}
