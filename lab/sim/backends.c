/* SPDX-License-Identifier: MIT */
/*
 * backends.c - the machine's flush mechanisms (--backend): which ops and
 * descriptors (struct tlbpol_backend) each gives the engine, and what each
 * costs the CPU that issues it.
 *
 *   ipi        interrupts only (machine.c's send_ipi).
 *   invlpgb    AMD INVLPGB + TLBSYNC, split: an instruction per
 *              invlpgb_pages pages of a range, one TLBSYNC for the request.
 *   tlbi       Arm TLBI ...IS + DSB ISH, split: an instruction per page (no
 *              FEAT_TLBIRANGE), one DSB.
 *   hypercall  a paravirtual flush hypercall, complete on return.
 *   rar        Intel RAR: a targeted remote action, no handler on the
 *              targets; a fixed cost, one per target, one per payload of
 *              rar_pages pages (ops->remote_action).
 *   sbi        an SBI remote fence (sbi_remote_sfence_vma_asid): the same
 *              op, with a trap into M-mode and one per hart (OpenSBI waits
 *              for every hart; the harts' M-mode handlers are not charged).
 *
 * A broadcast reaches every
 * CPU and costs none of them anything but the issuer (no handler runs),
 * so its invalidations are applied to every modelled TLB at once.  With
 * cfg->fixed the engine is told interrupts cost it far more than any
 * broadcast, so that it always broadcasts: the fixed mechanism the cost
 * model's choice is compared with.  Called by machine.c's set-up; calls
 * tlb.c.
 */
#include "machine.h"

#include <string.h>

static const char *const names[SIM_BK_MAX] = {
	[SIM_BK_DEFAULT] = "default", [SIM_BK_IPI] = "ipi", [SIM_BK_INVLPGB] = "invlpgb",
	[SIM_BK_TLBI] = "tlbi", [SIM_BK_HYPERCALL] = "hypercall", [SIM_BK_RAR] = "rar",
	[SIM_BK_SBI] = "sbi",
};

const char *sim_backend_name(int bk)
{
	return bk >= 0 && bk < SIM_BK_MAX ? names[bk] : "unknown";
}

int sim_backend_parse(const char *v)
{
	for (int bk = 1; bk < SIM_BK_MAX; bk++)
		if (!strcmp(v, names[bk]))
			return bk;
	return -1;
}

/* @f applied to CPU @c's TLB, as the hardware would, no code run there. */
static void flush_one(struct sim *s, uint32_t c, const struct tlbpol_flush *f)
{
	struct sim_tlb *t = &s->cpus[c].tlb;

	if (f->kind == TLBPOL_FLUSH_ALL) {
		tlb_flush_all(t, s->nkeys);
	} else if (f->kind == TLBPOL_FLUSH_AS) {
		tlb_flush_as(t, (uint16_t)f->as_tag);
	} else {
		for (uint32_t r = 0; r < f->nr_ranges; r++)
			for (uint64_t i = 0; i < f->ranges[r].nr_pages; i++)
				tlb_flush_page(t, (uint16_t)f->as_tag,
					       (f->ranges[r].va >> 12) + i);
	}
}

/* @f applied to every CPU's TLB; returns the pages it names. */
static uint64_t apply_everywhere(struct sim *s, const struct tlbpol_flush *f)
{
	uint64_t pages = 0;

	for (uint32_t c = 0; c < s->cfg.ncpus; c++)
		flush_one(s, c, f);
	for (uint32_t r = 0; r < f->nr_ranges; r++)
		pages += f->ranges[r].nr_pages;
	s->cnt.broadcasts++;
	s->cnt.pages_flushed += pages;
	return pages;
}

/* Instructions a split broadcast of @f takes at @per pages each (a whole
 * address space or everything: one). */
static uint64_t insns(const struct tlbpol_flush *f, double per)
{
	uint64_t n = 0, p = per >= 1 ? (uint64_t)per : 1;

	if (f->kind != TLBPOL_FLUSH_PAGES)
		return 1;
	for (uint32_t r = 0; r < f->nr_ranges; r++)
		n += (f->ranges[r].nr_pages + p - 1) / p;
	return n ? n : 1;
}

/* ops->broadcast: the generic broadcast of --broadcast, or the hypercall. */
static void cb_broadcast(void *ctx, uint32_t from, const struct tlbpol_flush *f)
{
	struct sim *s = ctx;
	uint64_t pages = apply_everywhere(s, f);

	if (s->cfg.hypercall || s->cfg.backend == SIM_BK_HYPERCALL)
		s->cpus[from].clock += s->cfg.cost.hypercall_ns + (double)pages * s->cfg.cost.hypercall_page_ns;
	else
		s->cpus[from].clock += s->cfg.cost.broadcast_ns + (double)pages * s->cfg.cost.broadcast_page_ns;
}

/* ops->bcast_issue: INVLPGB or TLBI ...IS, per instruction. */
static void cb_bcast_issue(void *ctx, uint32_t from, const struct tlbpol_flush *f)
{
	struct sim *s = ctx;
	const struct sim_cost *k = &s->cfg.cost;

	apply_everywhere(s, f);
	if (s->cfg.backend == SIM_BK_INVLPGB)
		s->cpus[from].clock += (double)insns(f, k->invlpgb_pages) * k->invlpgb_ns;
	else
		s->cpus[from].clock += (double)insns(f, 1) * k->tlbi_ns;
}

/* ops->bcast_sync: TLBSYNC or DSB ISH, the wait for every CPU. */
static void cb_bcast_sync(void *ctx, uint32_t from)
{
	struct sim *s = ctx;

	s->cpus[from].clock += s->cfg.backend == SIM_BK_INVLPGB ? s->cfg.cost.tlbsync_ns
								: s->cfg.cost.dsb_ns;
}

/* ops->remote_action: RAR or an SBI fence, its targets flushed by the
 * hardware (or M-mode), the initiator waiting for all of them. */
static void cb_remote_action(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets,
			     const struct tlbpol_flush *f)
{
	struct sim *s = ctx;
	const struct sim_cost *k = &s->cfg.cost;
	uint64_t n = 0;
	int rar = s->cfg.backend == SIM_BK_RAR;

	for (int c = tlbpol_cpuset_next(targets, -1); c >= 0; c = tlbpol_cpuset_next(targets, c)) {
		n++;
		flush_one(s, (uint32_t)c, f);
	}
	s->cnt.broadcasts++;
	s->cpus[from].clock += rar ? k->rar_ns + (double)n * k->rar_target_ns +
					     (double)insns(f, k->rar_pages) * k->rar_payload_ns
				   : k->sbi_ns + (double)n * k->sbi_hart_ns;
}

void sim_backend_setup(struct sim *s, struct tlbpol_config *ec)
{
	const struct sim_config *cfg = &s->cfg;
	const struct sim_cost *k = &cfg->cost;
	struct tlbpol_backend *bc = &s->bk_desc[0], *ipi = &s->bk_desc[1];
	uint32_t n = 0;

	s->ops.broadcast = NULL;
	s->ops.bcast_issue = NULL;
	s->ops.bcast_sync = NULL;
	s->ops.remote_action = NULL;
	memset(s->bk_desc, 0, sizeof(s->bk_desc));
	switch (cfg->backend) {
	case SIM_BK_DEFAULT:
		/* --broadcast, --hypercall or the scenario's: the config's
		 * cost_* fields describe it (machine.c). */
		if (cfg->broadcast)
			s->ops.broadcast = cb_broadcast;
		return;
	case SIM_BK_IPI:
		return;
	case SIM_BK_INVLPGB:
	case SIM_BK_TLBI:
		s->ops.bcast_issue = cb_bcast_issue;
		s->ops.bcast_sync = cb_bcast_sync;
		bc->flags = TLBPOL_BKF_SPLIT;
		if (cfg->backend == SIM_BK_INVLPGB) {
			bc->max_pages = (uint32_t)k->invlpgb_pages;
			bc->cost_ns = (uint32_t)(k->tlbsync_ns + k->invlpgb_ns);
			bc->cost_page_ns = (uint32_t)k->invlpgb_ns;
		} else {
			bc->max_pages = 1;
			bc->cost_ns = (uint32_t)(k->dsb_ns + k->tlbi_ns);
			bc->cost_page_ns = (uint32_t)k->tlbi_ns;
		}
		break;
	case SIM_BK_HYPERCALL:
		s->ops.broadcast = cb_broadcast;
		bc->cost_ns = (uint32_t)k->hypercall_ns;
		bc->cost_page_ns = (uint32_t)k->hypercall_page_ns;
		bc->max_pages = 1;
		break;
	case SIM_BK_RAR:
	case SIM_BK_SBI:
		s->ops.remote_action = cb_remote_action;
		bc->mech = TLBPOL_MECH_REMOTE;
		if (cfg->backend == SIM_BK_RAR) {
			bc->cost_ns = (uint32_t)(k->rar_ns + k->rar_target_ns);
			bc->cost_target_ns = (uint32_t)k->rar_target_ns;
			bc->cost_page_ns = (uint32_t)k->rar_payload_ns;
			bc->max_pages = (uint32_t)k->rar_pages;
		} else {
			bc->cost_ns = (uint32_t)(k->sbi_ns + k->sbi_hart_ns);
			bc->cost_target_ns = (uint32_t)k->sbi_hart_ns;
			bc->max_pages = 1;
		}
		break;
	default:
		return;
	}
	bc->size = sizeof(*bc);
	if (!bc->mech)
		bc->mech = TLBPOL_MECH_BROADCAST;
	s->bk_descs[n++] = bc;
	ipi->size = sizeof(*ipi);
	ipi->mech = TLBPOL_MECH_IPI;
	if (cfg->fixed) {
		/* Interrupts priced out of reach: every shootdown broadcasts
		 * (or takes the remote action). */
		ipi->cost_ns = 1u << 30;
		ipi->cost_target_ns = 1u << 20;
	} else {
		/*
		 * What the initiator's first target costs it in this model:
		 * the send, the latency, the target's entry and exit and the
		 * acknowledgement's way back, which it waits for as a
		 * broadcast's issuer waits for its sync -- the round trip a
		 * host measures (tlbpol_cost_calibrate()'s job), not the send
		 * alone.  Each further target: its send.  Not the interrupt
		 * the target takes: counted, it priced interrupts out where
		 * the targets were idle anyway (an SBI fence chosen at 1024
		 * CPUs, 2.6x the time of interrupts, and 2.5% behind at 16
		 * with a hypercall).
		 */
		double vmf = cfg->vm ? k->vm_ipi_factor : 1;

		ipi->cost_ns = (uint32_t)((k->ipi_first_ns + k->ipi_latency_ns) * vmf +
					  CYC(s, k->irq_entry_exit_cycles) + k->ack_latency_ns);
		/* Each further target: its send, and the interrupt it takes
		 * (entry, exit), which a broadcast spares it. */
		ipi->cost_target_ns = (uint32_t)(k->ipi_next_ns * vmf);
		ipi->cost_remote_ns = (uint32_t)k->ipi_remote_ns;
	}
	s->bk_descs[n++] = ipi;
	ec->backends = s->bk_descs;
	ec->nr_backends = n;
}
