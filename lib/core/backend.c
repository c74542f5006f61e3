/* SPDX-License-Identifier: MIT */
/*
 * backend.c - the host's flush mechanisms (struct tlbpol_backend): checked
 * against the ops that carry them out, and mapped onto the cost model.
 *
 * A descriptor is the one source of a mechanism's costs; the config's
 * cost_* fields (release 0.2's model) fill whatever a descriptor leaves at
 * zero, so a host that gives none keeps that model unchanged.  And the
 * model from what the host measured (tlbpol_cost_calibrate()).  Called by
 * engine.c at creation (the hosted layer's live reconfiguration replaces
 * the config's cost fields only); calls nothing of the core's other files.
 */
#include "internal.h"

/* Descriptor @i of @cfg, or NULL when @cfg has none for that slot. */
static const struct tlbpol_backend *backend_at(const struct tlbpol_config *cfg, uint32_t i)
{
	return cfg->backends && i < cfg->nr_backends ? cfg->backends[i] : 0;
}

/* The descriptor of mechanism @mech, or NULL (checked configs only). */
static const struct tlbpol_backend *backend_of(const struct tlbpol_config *cfg, uint32_t mech)
{
	for (uint32_t i = 0; i < cfg->nr_backends; i++)
		if (backend_at(cfg, i)->mech == mech)
			return backend_at(cfg, i);
	return 0;
}

static int one_check(const struct tlbpol_ops *o, const struct tlbpol_backend *b)
{
	int split_ops = o->bcast_issue && o->bcast_sync;

	if (!b || b->size < sizeof(*b))
		return -E_INVAL;
	if (!tail_zero(b, b->size, sizeof(*b)))
		return -E_2BIG;
	if (b->mech >= TLBPOL_MECH_MAX || (b->flags & ~TLBPOL_BKF_ALL))
		return -E_INVAL;
	if (b->mech == TLBPOL_MECH_IPI)
		/* Interrupts are the engine's own ground: never split, never off. */
		return b->flags & ~TLBPOL_BKF_IMPLIES_IRQ ? -E_INVAL : 0;
	if (b->mech == TLBPOL_MECH_REMOTE && (b->flags & TLBPOL_BKF_SPLIT))
		return -E_INVAL;
	if (b->flags & TLBPOL_BKF_DISABLED)
		return 0;
	if (b->mech == TLBPOL_MECH_REMOTE)
		return o->remote_action ? 0 : -E_INVAL;
	if ((b->flags & TLBPOL_BKF_SPLIT) ? !split_ops : !o->broadcast)
		return -E_INVAL;
	return 0;
}

int tlbpol__backends_check(const struct tlbpol_config *cfg)
{
	struct tlbpol_ops ops, *o = &ops;

	ops_read(o, cfg->ops); /* as the engine will copy them */
	if (cfg->nr_backends > TLBPOL_MECH_MAX)
		return -E_RANGE;
	if ((cfg->nr_backends && !cfg->backends) || cfg->reserved2)
		return -E_INVAL;
	/* Both halves of a split broadcast or neither: an issue the engine
	 * could never sync, or a sync of nothing, is a host's slip. */
	if (!o->bcast_issue != !o->bcast_sync)
		return -E_INVAL;
	for (uint32_t i = 0; i < cfg->nr_backends; i++) {
		int err = one_check(o, backend_at(cfg, i));

		if (err)
			return err;
		for (uint32_t j = 0; j < i; j++)
			if (backend_at(cfg, j)->mech == backend_at(cfg, i)->mech)
				return -E_EXIST;
	}
	return 0;
}

int tlbpol__remote_mode(const struct tlbpol_config *cfg, const struct tlbpol_ops *o,
			uint32_t *flags)
{
	const struct tlbpol_backend *b = backend_of(cfg, TLBPOL_MECH_REMOTE);

	*flags = b ? b->flags : 0;
	return o->remote_action && !(*flags & TLBPOL_BKF_DISABLED);
}

uint32_t tlbpol__bcast_mode(const struct tlbpol_config *cfg, const struct tlbpol_ops *o,
			    uint32_t *flags)
{
	const struct tlbpol_backend *b = backend_of(cfg, TLBPOL_MECH_BROADCAST);

	*flags = 0;
	if (b) {
		*flags = b->flags;
		if (b->flags & TLBPOL_BKF_DISABLED)
			return BCAST_NONE;
		return b->flags & TLBPOL_BKF_SPLIT ? BCAST_SPLIT : BCAST_SYNC;
	}
	/* No descriptor: what the ops offer, the split form first (it lets
	 * the engine overlap the invalidation with its own work). */
	if (o->bcast_issue && o->bcast_sync) {
		*flags = TLBPOL_BKF_SPLIT;
		return BCAST_SPLIT;
	}
	return o->broadcast ? BCAST_SYNC : BCAST_NONE;
}

/* @v if nonzero, else @keep. */
static uint32_t or_keep(uint32_t v, uint32_t keep)
{
	return v ? v : keep;
}

void tlbpol__costs_apply(const struct tlbpol_config *cfg, struct tlbpol_params *p)
{
	const struct tlbpol_backend *ipi = backend_of(cfg, TLBPOL_MECH_IPI);
	const struct tlbpol_backend *bc = backend_of(cfg, TLBPOL_MECH_BROADCAST);
	const struct tlbpol_backend *ra = backend_of(cfg, TLBPOL_MECH_REMOTE);

	p->cost_ipi = or_keep(cfg->cost_ipi_ns, p->cost_ipi);
	p->cost_ipi_target = or_keep(cfg->cost_ipi_target_ns, p->cost_ipi_target);
	p->cost_ipi_remote = or_keep(cfg->cost_ipi_remote_ns, p->cost_ipi_remote);
	p->cost_bcast = or_keep(cfg->cost_broadcast_ns, p->cost_bcast);
	p->cost_bcast_page = or_keep(cfg->cost_broadcast_page_ns, p->cost_bcast_page);
	if (ipi) {
		p->cost_ipi = or_keep(ipi->cost_ns, p->cost_ipi);
		p->cost_ipi_target = or_keep(ipi->cost_target_ns, p->cost_ipi_target);
		p->cost_ipi_remote = or_keep(ipi->cost_remote_ns, p->cost_ipi_remote);
	}
	if (bc) {
		p->cost_bcast = or_keep(bc->cost_ns, p->cost_bcast);
		p->cost_bcast_page = or_keep(bc->cost_page_ns, p->cost_bcast_page);
		p->bcast_max_pages = or_keep(bc->max_pages, p->bcast_max_pages);
	}
	if (!p->bcast_max_pages)
		p->bcast_max_pages = 1;
	/* A remote action with no descriptor of its own costs what interrupts
	 * cost the initiator (and wins the tie, sparing the targets). */
	p->cost_remote = or_keep(ra ? ra->cost_ns : 0, or_keep(p->cost_remote, p->cost_ipi));
	p->cost_remote_target = or_keep(ra ? ra->cost_target_ns : 0,
					or_keep(p->cost_remote_target, p->cost_ipi_target));
	p->cost_remote_page = or_keep(ra ? ra->cost_page_ns : 0, p->cost_remote_page);
	p->remote_max_pages = or_keep(ra ? ra->max_pages : 0, p->remote_max_pages);
	if (!p->remote_max_pages)
		p->remote_max_pages = 1;
}

/* @v capped to what a 32-bit cost field holds. */
static uint32_t cap32(uint64_t v)
{
	return v > 0xffffffffULL ? 0xffffffffU : (uint32_t)v;
}

/* @a + @b and @a x @b, at most 2^64 - 1: a measurement near the top of
 * the range must not wrap into a small cost (or a zero divisor). */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > ~0ULL - b ? ~0ULL : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return a && b > ~0ULL / a ? ~0ULL : a * b;
}

int tlbpol_cost_calibrate(const struct tlbpol_calibration *m, struct tlbpol_config *cfg,
			  struct tlbpol_backend *ipi, struct tlbpol_backend *bcast)
{
	uint64_t send, irq, w, n, per;

	if (!m || !cfg || m->size < sizeof(*m) || cfg->size < sizeof(*cfg))
		return -E_INVAL;
	if (!tail_zero(m, m->size, sizeof(*m)))
		return -E_2BIG;
	if (!m->ipi_round_trip || !m->inval_page || !m->full_flush || !m->refill || m->pad)
		return -E_INVAL;
	send = m->ipi_send ? m->ipi_send : m->ipi_round_trip / 10;
	irq = m->irq_entry_exit;
	cfg->cost_ipi_ns = cap32(m->ipi_round_trip);
	cfg->cost_ipi_target_ns = cap32(sat_add(send, irq));
	if (!cfg->cost_ipi_target_ns) /* 0 would mean the default */
		cfg->cost_ipi_target_ns = 1;
	/*
	 * N pages one by one against a whole flush: both lose the N entries
	 * named, the whole flush also the rest of the working set, which the
	 * CPU walks again.  The largest N that is no dearer.
	 */
	w = m->refill_entries ? m->refill_entries : 64;
	per = sat_add(m->inval_page, m->refill);
	n = sat_add(m->full_flush, sat_mul(m->refill, w)) / per;
	cfg->flush_ceiling = (uint32_t)(n < 1 ? 1 : n > 4096 ? 4096 : n);
	if (m->bcast_sync) {
		cfg->cost_broadcast_ns = cap32(sat_add(m->bcast_issue, m->bcast_sync));
		cfg->cost_broadcast_page_ns = cap32(m->bcast_issue ? m->bcast_issue : 1);
	}
	if (ipi) {
		prim_zero(ipi, sizeof(*ipi));
		ipi->size = sizeof(*ipi);
		ipi->mech = TLBPOL_MECH_IPI;
		ipi->cost_ns = cfg->cost_ipi_ns;
		ipi->cost_target_ns = cfg->cost_ipi_target_ns;
		ipi->cost_remote_ns = cfg->cost_ipi_remote_ns;
	}
	if (bcast) {
		prim_zero(bcast, sizeof(*bcast));
		if (m->bcast_sync) {
			bcast->size = sizeof(*bcast);
			bcast->mech = TLBPOL_MECH_BROADCAST;
			bcast->max_pages = m->bcast_max_pages ? m->bcast_max_pages : 1;
			bcast->cost_ns = cfg->cost_broadcast_ns;
			bcast->cost_page_ns = cfg->cost_broadcast_page_ns;
		}
	}
	return 0;
}
