/* SPDX-License-Identifier: MIT */
/*
 * shootdown.c - the initiating side: requests, interrupts, acknowledgements.
 *
 * A request (struct request) holds one part per address space.  Each part
 * takes the next flush generation of its address space after the PTE
 * changes it covers, before its targets are chosen (Linux inc_mm_tlb_gen()
 * in flush_tlb_mm_range()).  The targets are the CPUs that may cache the
 * parts (footprints), less those the rules let catch up later instead: lazy
 * CPUs (unless page tables were freed), preempted vCPUs, CPUs whose
 * generation already covers the request.  The initiator flushes itself,
 * publishes the request, sets its bit in each target's inbox and interrupts
 * them (directly, or one leader per remote NUMA node that forwards), then
 * waits, serving its own inbox meanwhile (receive.c) so that two CPUs
 * shooting each other down both finish.  Lazy requests (BY_LAZY) are posted
 * the same way with no interrupt and no wait: targets pick them up when
 * they tick or switch (lazy.c keeps them).  Whom a request may leave out
 * is skip.c's.  Called by the files above it (drain.c, batch.c, lazy.c,
 * the public calls); calls down into skip.c, receive.c and pending.c.
 */
#include "internal.h"

/*
 * CPUs that may cache a part of the request, @me and OFFLINE CPUs (which hold
 * nothing and take no interrupt) excluded.  Returns how many.
 */
static uint32_t candidates(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
			   const struct request *s, struct tlbpol_cpuset *t)
{
	uint32_t words = eng->words, n = 0;
	uint64_t tail = eng->nr_cpus % 64 ? (1ULL << (eng->nr_cpus % 64)) - 1 : ~0ULL;

	for (uint32_t w = 0; w < words; w++)
		t->bits[w] = 0;
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const struct req_flush *rf = &s->flushes[k];
		const uint64_t *fp = eng->as[rf->as_index].footprint;
		const uint64_t *lv = eng->as[rf->as_index].leaving;
		int all = !(prm->rules & TLBPOL_RULE_FOOTPRINT) || rf->global;
		int tables = (rf->f.flags & TLBPOL_FLUSHF_TABLES) != 0;

		/* A CPU between leaving and its CR3 write may still walk
		 * the tables speculatively (see leave() in cpu.c). */
		for (uint32_t w = 0; w < words; w++)
			t->bits[w] |= all ? (w == words - 1 ? tail : ~0ULL)
					  : prim_load_relaxed(&fp[w]) |
						    (tables ? prim_load_relaxed(&lv[w]) : 0);
	}
	t->bits[me / 64] &= ~(1ULL << (me % 64));
	for_each_target(i, t, eng) {
		if (prim_load_seqcst(&cpu_of(eng, i)->state) == TLBPOL_CPU_OFFLINE)
			t->bits[i / 64] &= ~(1ULL << (i % 64));
		else
			n++;
	}
	return n;
}

/*
 * Take the request's generations.  This must come before the footprints and
 * CPU states are read: a CPU coming back to an address space publishes its
 * return (footprint bit, lazy flag, state) and then reads the generation, so
 * either it reads ours and catches up, or we read its return and target it
 * (Linux flush_tlb_mm_range(): inc_mm_tlb_gen() before mm_cpumask()).
 */
static void take_generations(struct tlbpol_engine *eng, struct request *s)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		s->flushes[k].gen = prim_fetch_add(&eng->as[s->flushes[k].as_index].gen, 1ULL) + 1;
}

/*
 * The batch entries @s took are no longer queued: it is armed (or its
 * broadcast done), so from now on its acks say whether they are complete.
 * Release: a reader that sees the drop sees that (pairs with the acquire in
 * submit.c's settle_reused_range()).
 */
static void unqueue(struct tlbpol_engine *eng, uint32_t me, const struct request *s)
{
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const struct req_flush *rf = &s->flushes[k];
		struct pending_span *b;

		if (!rf->entries)
			continue;
		b = span_of(eng, me, rf->as_index);
		prim_store_release(&b->queued, prim_load_relaxed(&b->queued) - rf->entries);
	}
}

/*
 * Flush every part of @s by the broadcast: issued part by part and synced
 * once (split phase), or each complete on return.  It reaches every CPU,
 * this one included, whatever it runs or caches (struct tlbpol_ops says
 * which broadcasts fit), and is complete after the sync: nobody has to
 * catch up on it, so it takes no generation (with per-CPU tags the caller
 * took them: see tlbpol__shoot()).  The sync runs here, on the
 * CPU that issued, inside this engine call: TLBSYNC and DSB complete only
 * their own CPU's invalidations.  @t: the CPUs that may cache the parts,
 * which may be walking them too.  @last: nothing follows (else interrupts
 * to the CPUs it does not cover, whose arm() unqueues).
 */
static void broadcast(struct tlbpol_engine *eng, uint32_t me, struct request *s,
		      const struct tlbpol_cpuset *t, int last)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	struct tlbpol_flush f;

	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		struct tlbpol__part_iter it = { -2, 0 };

		while (tlbpol__part_flush(eng, &s->flushes[k], &f, &it)) {
			if (eng->bcast == BCAST_SPLIT)
				eng->ops.bcast_issue(eng->ops_ctx, me, &f);
			else
				eng->ops.broadcast(eng->ops_ctx, me, &f);
			prim_count(&c->cnt.task.broadcasts, 1);
		}
	}
	if (eng->bcast == BCAST_SPLIT) {
#ifdef TLBPOL_PLANTED_SYNC_OTHER
		eng->ops.bcast_sync(eng->ops_ctx, (me + 1) % eng->nr_cpus);
#else
		eng->ops.bcast_sync(eng->ops_ctx, me);
#endif
		prim_count(&c->cnt.task.bcast_syncs, 1);
	}
	if (tlbpol__walkers_left(eng, s, eng->bcast_flags)) {
		eng->ops.walker_sync(eng->ops_ctx, me, t);
		prim_count(&c->cnt.task.walker_syncs, 1);
	}
	prim_count(&c->cnt.task.shoot_broadcast, 1);
	if (last)
		unqueue(eng, me, s);
}

/* Does the broadcast of @s reach what this CPU may hold of it (nothing, or
 * all under the parts' global tags)? */
static int self_covered(const struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			uint32_t me, const struct request *s)
{
	if (tlbpol__bcast_covers(eng, me, s))
		return 1;
	for (uint32_t k = 0; k < s->nr_flushes; k++)
		if (tlbpol__may_cache(eng, prm, s->flushes[k].as_index, s->flushes[k].global, me))
			return 0;
	return 1;
}

/* Leave out of @t the CPUs a broadcast of @s reached (per-CPU tags: those
 * under its parts' global tags), or with @probe only say whether any of
 * @t is out of its reach. */
static int drop_covered(const struct tlbpol_engine *eng, const struct request *s,
			struct tlbpol_cpuset *t, int probe)
{
	int left = 0;

	for_each_target(i, t, eng) {
		if (!tlbpol__bcast_covers(eng, (uint32_t)i, s))
			left = 1;
		else if (!probe)
			t->bits[i / 64] &= ~(1ULL << (i % 64));
		if (left && probe)
			break;
	}
	return left;
}

/* This CPU's own part of @s, which it flushes before anyone else is told
 * (@lazy: see below). */
static void flush_self(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		       struct request *s, int lazy)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	struct tlbpol_flush f;

	/*
	 * Lazy work was flushed here already when it was submitted
	 * (submit.c, flush_self_now()), unless lazy_unflushed says otherwise:
	 * a stamped pass is flushed here first now, and a CPU that was outside
	 * the footprint then but came back since, with its entries retained,
	 * read an older generation than this request's and relies on this
	 * flush.  Where the submit flushed, this CPU is current with the part
	 * (the generation flush_on() would give it).
	 */
	for (uint32_t k = 0; k < s->nr_flushes; k++) {
		const struct req_flush *rf = &s->flushes[k];

		if (!tlbpol__may_cache(eng, prm, rf->as_index, rf->global, me))
			continue;
		if (lazy && !c->lazy_unflushed) {
			uint64_t *mine = local_gen_of(eng, me, rf->as_index);

			if (prim_load_relaxed(mine) + 1 == rf->gen)
				gen_raise(mine, rf->gen);
			continue;
		}
		f = rf->f;
		/* As Linux's local flush_tlb_func(): a range only if it
		 * brings this CPU exactly up to date. */
		if ((prm->rules & TLBPOL_RULE_GEN_SKIP) && f.kind == TLBPOL_FLUSH_PAGES &&
		    !rf->global && !tlbpol__range_catches_up(eng, me, rf->as_index, rf->gen)) {
			f.kind = TLBPOL_FLUSH_AS;
			f.nr_ranges = 0;
			f.ranges = 0;
		}
		tlbpol__flush_on(eng, me, &f, rf->as_index, rf->gen, &c->cnt.task);
		prim_count(&c->cnt.task.local_flushes, 1);
	}
}

/* Leave out of @t the candidates of @s (of @shape) that may catch up by
 * themselves, after its generations were taken; how many are left. */
static uint32_t drop_skippable(struct tlbpol_engine *eng, const struct tlbpol_params *prm,
			       uint32_t me, const struct request *s, struct tlbpol_cpuset *t,
			       uint32_t shape)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t n = 0;

	for_each_target(i, t, eng) {
		enum skip why = tlbpol__skippable(eng, prm, (uint32_t)i, s, shape, SKIPQ_GEN);

		if (why != SKIP_NO) {
			t->bits[i / 64] &= ~(1ULL << (i % 64));
			tlbpol__count_skip(c, why);
		} else {
			n++;
		}
	}
	return n;
}

/*
 * A remote action (TLBPOL_MECH_REMOTE: RAR, an SBI fence): flush this CPU,
 * leave out the candidates that may catch up by themselves (as arm() does,
 * after the generations: one that comes back reads ours and flushes at its
 * switch), and have the rest flushed with no code of ours running there,
 * complete when ops->remote_action returns.  Their generation does not
 * move: at worst they flush once more when they next switch.  Nothing is
 * posted, so nothing is taken back.  @t: the candidates.
 */
static void remote(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		   struct request *s, struct tlbpol_cpuset *t)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t n, shape = req_shape(s, 0);

	flush_self(eng, prm, me, s, 0);
	n = drop_skippable(eng, prm, me, s, t, shape);
	if (n) {
		struct tlbpol_flush f;

		for (uint32_t k = 0; k < s->nr_flushes; k++) {
			struct tlbpol__part_iter it = { -2, 0 };

			while (tlbpol__part_flush(eng, &s->flushes[k], &f, &it)) {
				eng->ops.remote_action(eng->ops_ctx, me, t, &f);
				prim_count(&c->cnt.task.remote_actions, 1);
				prim_count(&c->cnt.task.remote_targets, n);
			}
		}
		if (tlbpol__walkers_left(eng, s, eng->remote_flags)) {
			eng->ops.walker_sync(eng->ops_ctx, me, t);
			prim_count(&c->cnt.task.walker_syncs, 1);
		}
	}
	prim_count(&c->cnt.task.shoot_remote, 1);
	unqueue(eng, me, s);
}

/*
 * Flush this CPU, choose and publish the targets, post to their inboxes, and
 * (unless @lazy, or @delay turns of the caller's wait are to pass first)
 * interrupt them.  The caller took the generations and chose the candidates
 * @t after them, and waits.
 */
static void arm(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		struct request *s, struct tlbpol_cpuset *t, int lazy, uint32_t delay)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint64_t mybit = 1ULL << (me % 64);
	uint32_t n, shape = req_shape(s, lazy);

	flush_self(eng, prm, me, s, lazy);
	prim_store_relaxed(&s->shape, shape);
	s->aged_from = c->ticks;
	n = drop_skippable(eng, prm, me, s, t, shape);
	s->fanout = !lazy && n && tlbpol__choose_leaders(eng, prm, me, s, t, delay);
	c->busy |= 1u << (s - c->reqs);
	/* Read only under fanout (drop_led()), and only there does it exist. */
	if (s->fanout)
		for (uint32_t w = 0; w < eng->words; w++)
			c->direct[w] = 0;
	prim_store_seqcst(&s->acks, n);
	unqueue(eng, me, s);
	if (!n)
		return;
	/*
	 * Leaders last: a leader may claim early (our lazy requests leave our
	 * bit in its inbox, and a serve looks at all our requests), and what it
	 * forwards is what it reads of the targets then.  With more than 64
	 * CPUs the targets are several words; a leader whose bit is set only
	 * after every word is reads them all (its claim, an RMW on our last
	 * store to its word, synchronizes with it).
	 */
	for (uint32_t w = 0; w < eng->words; w++)
		prim_store_seqcst(&s->targets[w], t->bits[w] & (s->fanout ? ~s->leaders[w] : ~0ULL));
	if (s->fanout)
		for (uint32_t w = 0; w < eng->words; w++)
			if (t->bits[w] & s->leaders[w])
				prim_fetch_or(&s->targets[w], t->bits[w] & s->leaders[w]);
	for_each_target(i, t, eng) {
		uint64_t xbit = 1ULL << (i % 64);
		enum skip why;

		prim_fetch_or(&cpu_of(eng, i)->inbox[me / 64], mybit);
		/*
		 * The target may have gone offline, lazy or preempted after we
		 * looked.  Take our request back if it has not claimed it; if
		 * it has, it flushes and acknowledges as usual.
		 */
		why = tlbpol__skippable(eng, prm, (uint32_t)i, s, shape, 0);
		if (why != SKIP_NO && (prim_fetch_and(&s->targets[i / 64], ~xbit) & xbit)) {
			t->bits[i / 64] &= ~xbit;
			prim_fetch_sub_release(&s->acks, 1u);
			tlbpol__count_skip(c, why);
			/* A leader that went away: its node is interrupted
			 * directly (the request is published: leave it be). */
			if (s->fanout && (s->leaders[i / 64] & xbit)) {
				const uint64_t *nm =
					&eng->node_mask[(size_t)node_of(eng, (uint32_t)i) * eng->words];

				for (uint32_t w = 0; w < eng->words; w++)
					c->direct[w] |= nm[w];
			}
		}
	}
	if (!lazy && !delay)
		tlbpol__send_ipis(eng, prm, me, s, t);
	else if (!lazy && !s->fanout)
		tlbpol__kick_outside_engine(eng, prm, me, t);
}

/*
 * cfg->wait_limit turns of one wait have passed (again): interrupt the
 * targets that have not taken @s yet ourselves, whoever was to (a leader, a
 * delay, a polling flag: none of that matters now, and an interrupt lost on
 * the way is recovered), and tell the host (ops->stuck).  A target that took
 * the request is flushing and acknowledges by itself.  Never a completion:
 * the wait goes on until every acknowledgement is in.
 */
static void watchdog(struct tlbpol_engine *eng, uint32_t me, struct request *s, uint64_t turn)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t n = tlbpol__unclaimed(eng, s, &c->fwd_wait);

	if (n) {
		eng->ops.send_ipi(eng->ops_ctx, me, &c->fwd_wait);
		prim_count(&c->cnt.task.ipis_sent, n);
		prim_count(&c->cnt.task.ipis_resent, n);
	}
	prim_count(&c->cnt.task.stuck_calls, 1);
	if (eng->ops.stuck)
		eng->ops.stuck(eng->ops_ctx, me, &c->fwd_wait, turn);
}

/* The end of turn @turn of a wait for @s: the watchdog every
 * cfg->wait_limit turns, then ops->relax (or a pause). */
void tlbpol__wait_turn(struct tlbpol_engine *eng, uint32_t me, struct request *s, uint64_t turn)
{
	if (eng->wait_limit && turn % eng->wait_limit == 0)
		watchdog(eng, me, s, turn);
	if (eng->ops.relax)
		eng->ops.relax(eng->ops_ctx, me);
	else
		prim_cpu_relax();
}

/* A wait's progress: the acknowledgements it last saw, and the turns since
 * they last moved. */
struct stall {
	uint32_t acks, turns;
};

/* Has a wait under TLBPOL_CFGF_WAIT_IRQS gone cfg->wait_limit turns (or
 * TLBPOL_WAIT_IRQS_FALLBACK_TURNS without one) with no acknowledgement? */
static int stalled(const struct tlbpol_engine *eng, struct stall *st, uint32_t acks)
{
	uint32_t limit = eng->wait_limit ? eng->wait_limit : TLBPOL_WAIT_IRQS_FALLBACK_TURNS;

	if (acks != st->acks) {
		st->acks = acks;
		st->turns = 0;
		return 0;
	}
	return ++st->turns >= limit;
}

/*
 * Wait for the targets of @s, serving our own inbox meanwhile (two CPUs
 * shooting at each other must not wait for each other).  With
 * RULE_POLLING_CPUS we say so in `polling`, and kick() leaves us out: see
 * there for why the serve after clearing it is needed.  Not while this CPU
 * is already inside tlbpol__serve() (a callback that waits): our serves
 * would return at once, and the outer one runs only after we return.
 *
 * @unkicked: targets arm() has not interrupted (ipi_delay_spins), or NULL:
 * after @delay turns those that have not claimed the request by then are.
 * Polling is never a safety matter: a target acknowledges only after it
 * flushed, interrupted or not; leaving a CPU out only moves when it flushes,
 * and the initiator waits for that either way.
 */
void tlbpol__wait_acks(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		      struct request *s, struct tlbpol_cpuset *unkicked, uint32_t delay)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	int poll = prim_load_acquire(&s->acks) &&
		   (prm->rules & TLBPOL_RULE_POLLING_CPUS) &&
		   !prim_load_relaxed(&c->in_serve);
	/*
	 * Who serves what others post to this CPU while it waits: this loop,
	 * or (TLBPOL_CFGF_WAIT_IRQS) the interrupt ops->relax takes, as in
	 * Linux, whose csd_lock_wait() spins with interrupts on and never
	 * looks at its own call_single_queue.  A polling CPU is not sent the
	 * interrupt (kick() leaves it out), so it still serves here: not for
	 * liveness (kick()'s pairing interrupts one of two CPUs that wait for
	 * each other), but because its initiator, which skipped the
	 * interrupt, would otherwise wait until our own wait ends.
	 */
	int serve = poll || !(eng->flags & TLBPOL_CFGF_WAIT_IRQS);
	int lazy = (prim_load_relaxed(&s->shape) & REQ_LAZY) != 0;
	struct stall st = { 0, 0 };

	if (poll) {
		/* About to poll: see tlbpol__kick_outside_engine(). */
		if (prim_load_relaxed(&c->claims_by_irq))
			prim_store_relaxed(&c->claims_by_irq, 0u);
		prim_store_seqcst(&c->polling, 1u);
	}
	for (uint32_t turn = 1, acks; (acks = prim_load_acquire(&s->acks)); turn++) {
		/*
		 * The flag's promise cannot hold in every context: the header
		 * lets tlbpol_tick() and the other waiting calls run with
		 * interrupts off (a timer interrupt), where relax takes none,
		 * and two CPUs ticking at once would each wait for the other
		 * for ever.  The engine cannot ask whether interrupts are on,
		 * so a wait that has seen no acknowledgement for a while serves
		 * from the loop after all: late, never stuck.  (Linux avoids
		 * the case instead: smp_call_function_many_cond() warns when
		 * called with interrupts off, "can deadlock", and the tick
		 * never shoots down.)
		 */
		if (!serve && stalled(eng, &st, acks))
			serve = 1;
		if (serve)
			tlbpol__serve(eng, prm, me);
		/* A lazy request being forced was posted a while ago: its
		 * targets that went preempted, idle or lazy since are not
		 * waited for (a vCPU may stay descheduled for long). */
		if (lazy)
			tlbpol__take_back(eng, prm, me, s, &c->fwd_wait);
		if (unkicked && turn >= delay) {
			tlbpol__kick_unclaimed(eng, prm, me, s, unkicked);
			unkicked = NULL;
		}
		/*
		 * A fan-out leader is chosen once; in a guest it may then be
		 * descheduled, and the running vCPUs of its node would wait for
		 * it.  Past the recheck, interrupt every target that has not
		 * claimed the request yet ourselves (their inboxes already name
		 * it; one that claims meanwhile takes a spurious interrupt).
		 */
		if (s->fanout && turn == delay + TLBPOL_FANOUT_RECHECK) {
			tlbpol__unclaimed(eng, s, &c->fwd_wait);
			tlbpol__kick(eng, prm, me, &c->fwd_wait, &c->cnt.task);
		}
		tlbpol__wait_turn(eng, me, s, turn);
	}
	if (unkicked) /* all served within the delay: counted there */
		tlbpol__kick_unclaimed(eng, prm, me, s, unkicked);
	if (poll) {
		prim_store_seqcst(&c->polling, 0u);
		prim_fence();
		tlbpol__serve(eng, prm, me);
	}
}

void tlbpol__shoot(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		   struct request *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);
	uint32_t n, delay, mech;
	int gens = 0;

	/*
	 * The caller changed the PTEs before calling us; order those stores
	 * before the loads of footprints and CPU states below (a CPU joining a
	 * footprint fences the other way in tlbpol_switch()).  With per-CPU
	 * tags even a broadcast takes the generations first: a CPU joining
	 * the footprint now, under a slot it kept (it loaded its tag before
	 * the address space became global), is neither a candidate we see
	 * nor reached by the global tag; it must read our generation and
	 * catch up (the race Jann Horn found in the INVLPGB series, between
	 * a flush and the transition to a global ASID).
	 */
	prim_fence();
	if (eng->tags_percpu) {
		take_generations(eng, s);
		prim_fence();
		gens = 1;
	}
	n = candidates(eng, prm, me, s, &c->targets);
	tlbpol__consider_global(eng, prm, s);
	mech = tlbpol__choose_mech(eng, prm, me, s, &c->targets, n);
	if (mech == TLBPOL_MECH_BROADCAST) {
		/*
		 * With per-CPU tags a CPU still running a part under its own
		 * slot is out of the broadcast's reach (a CPU that switches in
		 * from now on loads the global tag): it is interrupted after,
		 * as any target, generations and all (Linux 6.15
		 * finish_asid_transition()), and so is this CPU, flushed by
		 * arm() then.  A candidate never becomes uncovered while its
		 * address space keeps its global tag.
		 */
		int left = eng->tags_percpu && (drop_covered(eng, s, &c->targets, 1) ||
						!self_covered(eng, prm, me, s));

		broadcast(eng, me, s, &c->targets, !left);
		if (!left)
			return;
	}
	if (!gens) {
		take_generations(eng, s);
		prim_fence();
	}
	candidates(eng, prm, me, s, &c->targets);
	if (mech == TLBPOL_MECH_BROADCAST)
		drop_covered(eng, s, &c->targets, 0);
	if (mech == TLBPOL_MECH_REMOTE) {
		remote(eng, prm, me, s, &c->targets);
		return;
	}
	prim_count(&c->cnt.task.shoot_ipi, 1);
	delay = prm->rules & TLBPOL_RULE_POLLING_CPUS ? prm->ipi_delay_spins : 0;
	arm(eng, prm, me, s, &c->targets, 0, delay);
	tlbpol__wait_acks(eng, prm, me, s, delay ? &c->targets : NULL, delay);
	c->busy &= ~(1u << (s - c->reqs));
}

void tlbpol__post_lazy(struct tlbpol_engine *eng, const struct tlbpol_params *prm, uint32_t me,
		       struct request *s)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	if (!s->nr_flushes)
		return;
	take_generations(eng, s);
	prim_fence();
	candidates(eng, prm, me, s, &c->targets);
	arm(eng, prm, me, s, &c->targets, 1, 0);
	tlbpol__reap(eng, me);
}

void tlbpol__reap(struct tlbpol_engine *eng, uint32_t me)
{
	struct tlbpol_cpu *c = cpu_of(eng, me);

	if (!lazy_in_flight(c))
		return;
	for (uint32_t i = 1; i < TLBPOL_REQS; i++) {
		struct request *s = &c->reqs[i];

		if (req_busy(c, i) && !prim_load_acquire(&s->acks)) {
			c->busy &= ~(1u << i);
			tlbpol__release_entries(eng, me, s);
		}
	}
}

