/* SPDX-License-Identifier: MIT */
/*
 * layers.h - the functions the core's files offer each other, file by file
 * (included at the end of internal.h, whose structures they take).  Calls
 * flow one way, down lib/core/LAYERS (checked on the built archive by
 * tests/check_layers.py):
 *
 *	engine.c   submit.c   cpu.c      the public calls for a host
 *	stamp.c                          (flush stamps, the same layer)
 *	             drain.c             serve, reap, flush, post, reap, run frees
 *	             batch.c             a CPU's deferred work into requests
 *	             lazy.c              lazy requests in flight: force, age, settle
 *	           shootdown.c           send a request, wait for its acks
 *	             skip.c              whom a request may leave out, take back
 *	            receive.c            claim, flush, acknowledge; deliver
 *	            pending.c            entries and frees still owed
 *	decide.c  ranges.c  rules.c  cpuset.c  backend.c  stats.c  tag_flush.c
 *	tags.c                           leaves
 */
#ifndef TLBPOL_LAYERS_H
#define TLBPOL_LAYERS_H

/* engine.c */
int tlbpol__config_copy(const struct tlbpol_config *in, struct tlbpol_config *out);
int tlbpol__config_read(const struct tlbpol_config *in, struct tlbpol_config *out);
/* @placed: each CPU's state on pages of its own (for NUMA placement); the
 * memory must then be page-aligned. */
size_t tlbpol__engine_size(const struct tlbpol_config *cfg, int placed);
int tlbpol__engine_init(struct tlbpol_engine **out, void *mem, size_t len,
			const struct tlbpol_config *cfg, int placed);
/* The byte ranges (offset, length) holding @cpu's state, for binding them
 * to its node; returns how many (<= 2). */
int tlbpol__cpu_ranges(const struct tlbpol_config *cfg, int placed, uint32_t cpu,
		       size_t off[2], size_t len[2]);
/* Put in force @p's configured rules: p->rules and p->verdict[]. */
void tlbpol__params_set_rules(const struct tlbpol_engine *eng, struct tlbpol_params *p);
/* backend.c: @cfg's backend descriptors checked against its ops, read no
 * further than their size (0 or -errno); the broadcast they give with the
 * ops @o (BCAST_*) and that one's TLBPOL_BKF_*, the remote action; the
 * costs put into @p, a zero field keeping @p's value. */
int tlbpol__backends_check(const struct tlbpol_config *cfg);
uint32_t tlbpol__bcast_mode(const struct tlbpol_config *cfg, const struct tlbpol_ops *o,
			    uint32_t *flags);
int tlbpol__remote_mode(const struct tlbpol_config *cfg, const struct tlbpol_ops *o,
			uint32_t *flags);
void tlbpol__costs_apply(const struct tlbpol_config *cfg, struct tlbpol_params *p);
/* tags.c: cfg->tags's kind (TLBPOL_TAGS_*), or -errno when it is not an
 * allocator or has fewer CPUs than @nr_cpus; CPUs an address space must be
 * loaded on for a global tag (0: none).  tag_flush.c: the hardware tag a
 * flush names on @cpu (0: nothing of it to flush). */
int tlbpol__tags_kind(const struct tlbpol_tags *tags, uint32_t nr_cpus);
uint32_t tlbpol__tags_global_min(const struct tlbpol_tags *tags);
int tlbpol__tag_make_global(struct tlbpol_tags *tags, struct tlbpol_tag_id *id, int try);
int tlbpol__tag_local(const struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index,
		      struct tlbpol_flush *f);
/*
 * tag_flush.c: part @rf's next flush as a broadcast or a remote action
 * names it, into @f; 0 when none is left.  Start @it at { -2, 0 }.  First
 * the part itself, with cfg->tags under the address space's one hardware
 * tag (none when no CPU holds anything of it); then the part again under
 * each older tag a CPU switching away from the address space may still
 * walk it under.  @it: the CPU after which to look for older tags (-2:
 * before the first flush), and the first flush's tag.
 */
struct tlbpol__part_iter {
	int cpu;
	uint64_t named;
};
int tlbpol__part_flush(const struct tlbpol_engine *eng, const struct req_flush *rf,
		       struct tlbpol_flush *f, struct tlbpol__part_iter *it);
/* tag_flush.c: move @cpu onto its address space's global tag now
 * (ops->load_tag), if it has one the CPU is not on; the caller holds the
 * CPU's call guard, and asks only where tlbpol__tags_movable(). */
void tlbpol__tag_to_global(struct tlbpol_engine *eng, uint32_t cpu);
/* Can a CPU of @eng move onto a global tag between switches: per-CPU
 * slots (global tags only exist beside them) and the host's load_tag?
 * One test for every caller, so that the others pay one branch. */
static inline int tlbpol__tags_movable(const struct tlbpol_engine *eng)
{
	return eng->tags_percpu && eng->ops.load_tag;
}
/* ops->flush_local of @f on @cpu, for address space @as_index, naming the
 * hardware tag there with cfg->tags; 0 if there was nothing to flush. */
static inline int tlbpol__flush_local(struct tlbpol_engine *eng, uint32_t cpu,
				      const struct tlbpol_flush *f, uint32_t as_index)
{
	struct tlbpol_flush g;

	if (eng->tags) {
		g = *f;
		if (!tlbpol__tag_local(eng, cpu, as_index, &g))
			return 0;
		f = &g;
	}
	eng->ops.flush_local(eng->ops_ctx, cpu, f);
	return 1;
}
/* decide.c: p->verdict[] for p->rules. */
void tlbpol__resolve_verdicts(uint32_t arch, struct tlbpol_params *p);
/* Is @as one of @eng's open address spaces?  Inline: every submit asks. */
static inline int tlbpol__as_valid(const struct tlbpol_engine *eng, const struct tlbpol_as *as)
{
	/* One unsigned compare for both bounds: below the array wraps. */
	uintptr_t off = (uintptr_t)as - (uintptr_t)eng->as;

	if ((off >= (uintptr_t)eng->max_as * sizeof(*as)) | (off % sizeof(*as) != 0))
		return 0;
	/* @as is one of eng->as[], whose `eng` is set at init and never
	 * changes: only its state is left to check. */
	return prim_load_acquire(&as->state) == AS_OPEN;
}

/* pending.c */
void tlbpol__run_dfrees(struct tlbpol_engine *eng, uint32_t cpu);
/* What this CPU's previous call left for its next one (see struct
 * tlbpol_cpu): the CR3 write after a leave has happened, and, if
 * @caught_up, the catch-up flush it was told to do. */
void tlbpol__settle(struct tlbpol_engine *eng, uint32_t cpu, int caught_up);
uint64_t tlbpol__oldest_seq(const struct tlbpol_engine *eng, uint32_t cpu);
void tlbpol__release_entries(struct tlbpol_engine *eng, uint32_t cpu, struct request *s);

/* receive.c */
int tlbpol__serve(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu);
void tlbpol__flush_on(struct tlbpol_engine *eng, uint32_t cpu, const struct tlbpol_flush *f,
		      uint32_t as_index, uint64_t gen, struct cpu_stats *st);
int tlbpol__range_catches_up(const struct tlbpol_engine *eng, uint32_t cpu, uint32_t as_index,
			     uint64_t gen);
int tlbpol__may_cache(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
		      uint32_t as_index, uint32_t global, uint32_t cpu);
void tlbpol__kick(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		  struct tlbpol_cpuset *t, struct cpu_stats *cnt);

/* mech.c: would a mechanism with TLBPOL_BKF_* @flags leave lockless
 * walkers to ops->walker_sync for @s?  Which TLBPOL_MECH_* reaches @s's
 * @n candidates @t most cheaply? */
int tlbpol__bcast_covers(const struct tlbpol_engine *eng, uint32_t cpu, const struct request *s);
void tlbpol__consider_global(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			     const struct request *s);
int tlbpol__walkers_left(const struct tlbpol_engine *eng, const struct request *s, uint32_t flags);
uint32_t tlbpol__choose_mech(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			     uint32_t me, const struct request *s, const struct tlbpol_cpuset *t,
			     uint32_t n);

/* interrupts.c: whom an initiator interrupts, when, through whom. */
/* Would CPU @i need an interrupt to find a request (not polling, not in an
 * engine call, last served by one)?  A guess, never a safety matter. */
int tlbpol__outside_engine(const struct tlbpol_engine *eng, uint32_t i);
int tlbpol__choose_leaders(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			   struct request *s, const struct tlbpol_cpuset *targets, uint32_t delay);
void tlbpol__send_ipis(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		       struct request *s, struct tlbpol_cpuset *t);
void tlbpol__kick_outside_engine(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				 uint32_t me, struct tlbpol_cpuset *t);
void tlbpol__kick_unclaimed(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			    struct request *s, struct tlbpol_cpuset *t);

/* skip.c */
enum skip { SKIP_NO, SKIP_OFFLINE, SKIP_LAZY, SKIP_GEN };
/* The targets of @s that have not claimed it yet, into @t; how many. */
uint32_t tlbpol__unclaimed(const struct tlbpol_engine *eng, const struct request *s,
			   struct tlbpol_cpuset *t);
/* May @x be left out of request @s of @shape (struct request) and catch up
 * by itself?  @how: SKIPQ_GEN, by its generation too (@s's owner, before
 * arming); SKIPQ_ESTIMATE, a cost estimate's question, which does not ask
 * the hypervisor (ops->vcpu_defer makes it promise a flush). */
#define SKIPQ_GEN 1
#define SKIPQ_ESTIMATE 2
enum skip tlbpol__skippable(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			    uint32_t x, const struct request *s, uint32_t shape, int how);
void tlbpol__count_skip(struct tlbpol_cpu *c, enum skip why);
/* Take back, from @me's own request @s, the unclaimed targets that may now
 * catch up by themselves; the others left unclaimed into @t, how many. */
uint32_t tlbpol__take_back(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			   struct request *s, struct tlbpol_cpuset *t);

/* shootdown.c */
/* Wait for @s's acknowledgements, serving @me's inbox as the rules say;
 * @unkicked: targets to interrupt after @delay turns, or NULL. */
void tlbpol__wait_acks(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		       struct request *s, struct tlbpol_cpuset *unkicked, uint32_t delay);
/* The end of turn @turn of a wait for @s: the watchdog (cfg->wait_limit),
 * then ops->relax. */
void tlbpol__wait_turn(struct tlbpol_engine *eng, uint32_t me, struct request *s, uint64_t turn);
void tlbpol__shoot(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
		   struct request *s);
void tlbpol__post_lazy(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
		       struct request *s);
void tlbpol__reap(struct tlbpol_engine *eng, uint32_t cpu);

/* lazy.c */
struct request *tlbpol__lazy_request(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
				     uint32_t cpu);
void tlbpol__force_lazy(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu);
void tlbpol__force_lazy_over(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			     uint32_t cpu, uint32_t as_index, uint64_t first, uint64_t last);
/* Interrupt the unclaimed targets of @cpu's lazy requests in flight for
 * cfg->free_ticks of its ticks (or take them back); no wait. */
void tlbpol__age_lazy(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu);
/* Flush stamps: is lazy work of @owner that stamp sequence @seq covers still
 * in flight?  Complete it from @me (interrupting, waiting). */
int tlbpol__stamp_pending(const struct tlbpol_engine *eng, uint32_t owner, uint32_t seq);
void tlbpol__stamp_settle(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			  uint32_t me, uint32_t owner, uint32_t seq);

/*
 * drain.c: a CPU's drain, in one order: serve its inbox and reap, flush its
 * batch's entries due BY_WRITEBACK..@upto (TLBPOL_BY_NOW: none), force, age
 * and post lazy work, reap, run the deferred frees due (drain.c says why in
 * that order).  The steps the callers differ by, on purpose:
 */
enum drain_step {
	/*
	 * Serve the inbox and reap first: tlbpol_switch(), tlbpol_tick(),
	 * tlbpol_flush(), tlbpol_stamp() (a CPU's ticks and switches are
	 * where the lazy requests posted to it complete).  Not a full
	 * deferred-free queue (tlbpol_defer_free()): its call has just
	 * reaped, and a forced wait serves the inbox as every wait does
	 * (tlbpol__wait_acks()).
	 */
	DRAIN_SERVE = 1u << 0,
	/*
	 * Flush only if work due by a free has waited cfg->free_ticks of this
	 * CPU's ticks, and count it (aged_flushes): tlbpol_tick(), where the
	 * host asked for no flush; the others flush all that is due by @upto.
	 */
	DRAIN_AGED = 1u << 1,
	/*
	 * Complete every lazy request in flight: tlbpol_flush(.., BY_LAZY),
	 * and a full deferred-free queue, which must make room by completing
	 * everything the oldest free may wait for.
	 */
	DRAIN_FORCE_LAZY = 1u << 2,
	/* Interrupt the targets slow to take lazy requests in flight
	 * (tlbpol__age_lazy()): tlbpol_tick(), which counts the ticks. */
	DRAIN_AGE_LAZY = 1u << 3,
	/*
	 * Post the batch's BY_LAZY entries (no interrupt): tlbpol_tick(), so
	 * that lazy work does not wait in the batch for one that fills, and
	 * tlbpol_stamp(), whose stamp must cover them.
	 */
	DRAIN_POST_LAZY = 1u << 4,
	/*
	 * Reap once more before the frees: tlbpol_stamp(), which reads what is
	 * still in flight afterwards (a stamp of 0 when all of it completed).
	 */
	DRAIN_REAP = 1u << 5,
};
/* Returns the batch entries flushed and posted. */
int tlbpol__drain(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
		  uint32_t upto, uint32_t steps);

/* batch.c */
/* Complete (SYNC) or post (lazy) the pending entries of @cpu with
 * from <= deadline <= to; then run due deferred frees.  Returns the entries
 * taken. */
int tlbpol__flush_batch(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t cpu,
			uint32_t from, uint32_t to);
int tlbpol__post_lazy_batch(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			    uint32_t cpu);
void tlbpol__enqueue(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
		     struct tlbpol_as *as, uint32_t cpu, const struct tlbpol_event *ev,
		     uint32_t deadline);
void tlbpol__single(const struct tlbpol_params *prm, struct request *s, const struct tlbpol_as *as,
		    const struct tlbpol_event *ev);

/* ranges.c */
uint32_t tlbpol__merge_ranges(struct tlbpol_range *r, uint32_t n, uint64_t *pages);
uint32_t tlbpol__merge_sorted(struct tlbpol_range *r, uint32_t n, uint64_t *pages);

#endif /* TLBPOL_LAYERS_H */
