/* SPDX-License-Identifier: MIT */
/*
 * oracle.c - the page tables, and the oracle that checks every run of
 * tlbpol-sim against them.
 *
 * Every PTE change bumps the page's version.  When the engine reports
 * completion (a BY_NOW decision returns, tlbpol_flush() returns for the
 * deadline, a deferred free runs) no CPU running that address space may hold
 * an entry for the page that grants more than the PTE (a stale, stricter
 * entry is harmless: it can only fault).  CPUs not running it (lazy, idle,
 * preempted, away) are checked when they start running it again, after the
 * flush the engine told them to do.  A hit on a harmful entry of a page with
 * no flush outstanding is a stale use.  Each is a violation.
 */
#include "sim.h"
#include "support/stale.h"

#include <stdlib.h>
#include <string.h>

/* Does an entry filled as (perms, frame) grant more than the PTE does?
 * The one definition, for every checker: support/stale.h. */
int oracle_harmful(const struct sim *s, uint8_t perms, uint32_t frame, const struct sim_page *p)
{
	return model_stale_harmful(s->cfg.arch, perms | SIM_P, frame, p->perms, p->frame);
}

void oracle_violation(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, const char *when,
		      const struct tlb_entry *e, const struct sim_page *p)
{
	if (s->cnt.violations++ < 3 && !s->cfg.quiet)
		fprintf(stderr,
			"  VIOLATION (%s): cpu %u as %u vpn %#llx cached perms %#x frame %u, "
			"pte perms %#x frame %u\n",
			when, cpu, as, (unsigned long long)vpn, e->perms, e->frame, p->perms, p->frame);
}

/* --tags: @e, another address space's, serves @as under its tag. */
void oracle_foreign(struct sim *s, uint32_t cpu, uint32_t as, uint64_t vpn, const char *when,
		    const struct tlb_entry *e)
{
	s->cnt.tag_foreign_hits++;
	if (s->cnt.violations++ < 3 && !s->cfg.quiet)
		fprintf(stderr,
			"  VIOLATION (%s): cpu %u as %u vpn %#llx tag %u holds as %u's entry "
			"(frame %u)\n",
			when, cpu, as, (unsigned long long)vpn, e->asid, e->owner, e->frame);
}

struct sim_page *sim_page(struct sim *s, uint32_t as, uint64_t vpn, int create)
{
	struct sim_as *a = &s->as[as];
	uint64_t chunk = vpn / SIM_CHUNK;

	if (chunk >= a->nchunks) {
		uint64_t n = a->nchunks ? a->nchunks : 64;
		struct sim_page **c;

		if (!create)
			return NULL;
		while (n <= chunk)
			n *= 2;
		c = realloc(a->chunks, n * sizeof(*c));
		if (!c)
			abort();
		memset(c + a->nchunks, 0, (n - a->nchunks) * sizeof(*c));
		a->chunks = c;
		a->nchunks = n;
	}
	if (!a->chunks[chunk]) {
		if (!create)
			return NULL;
		a->chunks[chunk] = calloc(SIM_CHUNK, sizeof(struct sim_page));
		if (!a->chunks[chunk])
			abort();
	}
	return &a->chunks[chunk][vpn % SIM_CHUNK];
}

static struct sim_page *page_of(struct sim *s, uint32_t as, uint64_t vpn)
{
	return sim_page(s, as, vpn, 0);
}

/* Completion for [vpn, vpn + n): every CPU running @as must hold nothing
 * harmful for these pages. */
void oracle_check_pages(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, const char *when)
{
	for (uint64_t i = 0; i < n; i++) {
		struct sim_page *p = page_of(s, as, vpn + i);
		uint64_t buckets;

		/* A flush of this page is in flight (its initiator waits for
		 * acknowledgements on another CPU): entries it will remove are
		 * checked when it completes.  A change that ends in the
		 * meantime (a fault installing the page anew, say) does not
		 * have to wait for it: Linux's does not either, the window is
		 * the other call's (zap, then flush). */
		if (!p || p->inflight)
			continue;
		buckets = p->holders | p->suspects;
		while (buckets) {
			uint32_t b = (uint32_t)__builtin_ctzll(buckets);

			buckets &= buckets - 1;
			for (uint32_t c = b; c < s->cfg.ncpus; c += 64) {
				struct sim_cpu *cpu = &s->cpus[c];
				struct tlb_entry *e;
				int fl;

				if (cpu->as != (int32_t)as || cpu->mode != MODE_RUN)
					continue; /* checked when it runs @as again */
				e = tlb_lookup(&cpu->tlb, sim_tag_key(s, c, as), vpn + i, &fl);
				if (e && e->owner != as)
					oracle_foreign(s, c, as, vpn + i, when, e);
				else if (e && oracle_harmful(s, e->perms, e->frame, p))
					oracle_violation(s, c, as, vpn + i, when, e, p);
			}
		}
		if (!p->unflushed)
			p->suspects = 0;
	}
}

void oracle_check_frame(struct sim *s, uint32_t f, uint32_t as, uint64_t vpn)
{
	struct sim_page *p = page_of(s, as, vpn);

	for (uint32_t c = 0; c < s->cfg.ncpus; c++) {
		struct sim_cpu *cpu = &s->cpus[c];
		struct tlb_entry *e;
		int fl;

		if (cpu->as != (int32_t)as || cpu->mode != MODE_RUN)
			continue; /* flushes before it runs @as again */
		e = tlb_lookup(&cpu->tlb, sim_tag_key(s, c, as), vpn, &fl);
		if (e && e->owner != as)
			oracle_foreign(s, c, as, vpn, "frame reuse", e);
		else if (e && e->frame == f && p)
			oracle_violation(s, c, as, vpn, "frame reuse", e, p);
	}
}

/* @cpu starts running @as again: what it kept must be harmless or still
 * covered by a flush in progress. */
void oracle_check_resume(struct sim *s, uint32_t cpu, uint32_t as)
{
	struct sim_tlb *t = &s->cpus[cpu].tlb;
	struct tlb_level *lv[2] = { &t->l1, &t->l2 };
	uint16_t key = sim_tag_key(s, cpu, as);

	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < (size_t)lv[l]->sets * lv[l]->ways; i++) {
			struct tlb_entry *e = &lv[l]->e[i];
			struct sim_page *p;

			if (e->asid != key || !tlb_entry_live(t, e))
				continue;
			if (e->owner != as) {
				/* What a previous owner of the tag left: the
				 * switch to it should have flushed it. */
				oracle_foreign(s, cpu, as, e->vpn, "resume", e);
				continue;
			}
			p = page_of(s, as, e->vpn);
			if (p && !p->unflushed && oracle_harmful(s, e->perms, e->frame, p))
				oracle_violation(s, cpu, as, e->vpn, "resume", e, p);
		}
}

/* A change that can leave an entry granting more than the new PTE. */
int oracle_change_harms(const struct sim *s, uint8_t old, uint32_t old_frame, uint8_t new,
			uint32_t new_frame)
{
	struct sim_page p = { 0 };

	if (!(old & SIM_P))
		return 0;
	p.perms = new;
	p.frame = new_frame;
	return oracle_harmful(s, old | SIM_D, old_frame, &p) &&
	       (oracle_harmful(s, old & ~SIM_D, old_frame, &p) || (old & SIM_D));
}

/* The changes to [vpn, vpn + n) are complete: those that could harm are
 * no longer outstanding, and no CPU running @as may hold a harmful entry. */
void oracle_complete(struct sim *s, uint32_t as, uint64_t vpn, uint64_t n, int harms,
		     const char *when)
{
	if (harms)
		for (uint64_t i = 0; i < n; i++) {
			struct sim_page *p = page_of(s, as, vpn + i);

			if (p && p->unflushed)
				p->unflushed--;
		}
	oracle_check_pages(s, as, vpn, n, when);
}
