/* SPDX-License-Identifier: MIT */
/*
 * stale.h - the one definition of a harmful stale TLB entry, for every
 * checker that models a TLB: the stress oracle (tests/oracle), tlbpol-sim
 * (lab/sim), softmmu (examples/softmmu) and the threads tests.
 *
 * An entry was filled from an older PTE.  It is harmful if it lets a CPU do
 * what the PTE in memory no longer allows, so that a checker must count a
 * use of it after the engine reported the change's flush complete.  A
 * stricter stale entry is harmless: it can only fault, and the fault drops
 * it (SDM 4.10.4.3, Arm ARM D8.16: a fault does not use a cached entry
 * that would allow the access).
 *
 * Permissions are TLBPOL_PTE_* bits, with MODEL_ATTR beside them: the
 * models' stand-in for what the portable bits cannot say (a memory type, a
 * protection key; TLBPOL_EVF_ATTRS).
 */
#ifndef TLBPOL_MODEL_STALE_H
#define TLBPOL_MODEL_STALE_H

#include <stdint.h>

#include <tlbpol/tlbpol.h>

/* The models' attribute bit, outside TLBPOL_PTE_ALL. */
#define MODEL_ATTR 0x80u
_Static_assert((MODEL_ATTR & TLBPOL_PTE_ALL) == 0, "MODEL_ATTR is not a PTE bit");

/*
 * Does an entry filled as @eperm -> @eframe let a CPU of @arch do what the
 * PTE @pperm -> @pframe does not?
 *  - An entry that is not present (a cached invalid PTE, GENERIC) grants
 *    nothing: what it costs is judged apart (a fault that should not be).
 *  - Any entry of a page that is no longer present, or that now maps
 *    another frame, reaches memory that is no longer the page's.
 *  - Losing W, X or U makes an entry that has it harmful.
 *  - On x86 a U/S change is harmful either way: with SMEP and SMAP, U/S
 *    0->1 takes supervisor access away (SDM 4.6.1; the header's x86
 *    profile).
 *  - A writable entry with D set writes without touching the PTE in memory
 *    (SDM 4.8: D is set only when the entry lacks it; Arm DBM likewise), so
 *    once the PTE lost D (CLEAR_DIRTY) its writes go unseen: harmful.
 *  - An entry whose A the PTE lost is harmless: aging is only inexact.
 *  - An entry with the other attribute (MODEL_ATTR) is harmful either way.
 */
static inline int model_stale_harmful(uint32_t arch, uint32_t eperm, uint32_t eframe,
				      uint32_t pperm, uint32_t pframe)
{
	if (!(eperm & TLBPOL_PTE_PRESENT))
		return 0;
	if (!(pperm & TLBPOL_PTE_PRESENT) || eframe != pframe)
		return 1;
	if (eperm & ~pperm & (TLBPOL_PTE_WRITE | TLBPOL_PTE_EXEC | TLBPOL_PTE_USER))
		return 1;
	if ((eperm ^ pperm) & MODEL_ATTR)
		return 1;
	if (arch == TLBPOL_ARCH_X86_64 && ((eperm ^ pperm) & TLBPOL_PTE_USER))
		return 1;
	return (eperm & TLBPOL_PTE_WRITE) && (eperm & TLBPOL_PTE_DIRTY) &&
	       !(pperm & TLBPOL_PTE_DIRTY);
}

#endif /* TLBPOL_MODEL_STALE_H */
