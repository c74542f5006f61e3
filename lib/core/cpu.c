/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - a CPU's life: switch, unload, state, tick, deferred frees.
 *
 * The calls a host makes for one CPU outside its events: tlbpol_switch()
 * when it changes address space, tlbpol_unload() and tlbpol_cpu_state()
 * when it goes lazy, idle, preempted or offline, tlbpol_tick() from its
 * timer, and tlbpol_defer_free() for memory that may be freed only after
 * the flushes pending before it.  Each publishes what other CPUs read to
 * decide whom to interrupt (footprints, lazy and state words), in the
 * orders that pair with shootdown.c's reads, then serves and completes its
 * own work through drain.c.
 */
#include "call.h"

int tlbpol_frees_pending(const struct tlbpol_engine *eng, uint32_t cpu)
{
	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -E_INVAL;
	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	return (int)prim_load_relaxed(&cpu_of(eng, cpu)->dfree_count);
}

int tlbpol_defer_free(struct tlbpol_engine *eng, uint32_t cpu, void (*fn)(void *arg), void *arg)
{
	struct tlbpol_cpu *c;
	struct dfree *d;
	int err = cpu_call_enter(eng, cpu, fn != 0, &c);

	if (err)
		return err;
	tlbpol__reap(eng, cpu);
	/* The queue is full: complete everything @cpu has pending, lazy work
	 * included, so that every free queued can run (no serve: this call
	 * has just reaped, and the forced waits serve the inbox). */
	if (c->dfree_count == TLBPOL_DFREE_SLOTS)
		tlbpol__drain(eng, params_of(eng), cpu, TLBPOL_BY_LAZY, DRAIN_FORCE_LAZY);
	/*
	 * Still full: the drain leaves nothing pending, so every free queued
	 * ran, but a slot is never taken on that belief.  The next one is the
	 * oldest free's, which may still wait for its flushes: written over,
	 * that free would be lost and this one run twice (the ring would
	 * count past its size).  Refused instead, with nothing queued.
	 */
	if (c->dfree_count >= TLBPOL_DFREE_SLOTS) {
		call_leave(c);
		return -E_BUSY;
	}
	if (!c->dfree_count && tlbpol__oldest_seq(eng, cpu) == ~0ULL) {
		prim_count(&c->cnt.task.deferred_frees, 1);
		fn(arg);
		call_leave(c);
		return 0;
	}
	d = &c->dfree[(c->dfree_head + c->dfree_count) % TLBPOL_DFREE_SLOTS];
	d->fn = fn;
	d->arg = arg;
	d->after_seq = c->next_seq ? c->next_seq - 1 : 0;
	c->dfree_count++;
	call_leave(c);
	return 0;
}

/*
 * @cpu is about to use @as: has it missed flushes (it was lazy, preempted or
 * away with its entries retained)?  Called after the CPU published that it is
 * back (footprint bit, lazy flag or state, all sequentially consistent), so a
 * generation taken after this read finds it awake and interrupts it, and one
 * taken before is seen here (Linux switch_mm_irqs_off(): "Start receiving
 * IPIs and then read tlb_gen").  Returns 1 if the caller must flush @as.
 *
 * The CPU does not count as caught up yet: the caller flushes only after
 * this call returns.  Were the generation published now, an initiator could
 * skip this CPU by it and free page tables it still caches, and this CPU's
 * own serve (in tlbpol_switch()) would acknowledge a request unflushed.  So
 * it waits in catchup_* until the CPU's next engine call (tlbpol__settle()).
 */
static int catch_up(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *as)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);
	uint64_t now = prim_load_seqcst(&as->gen);

	if (flushed_gen(eng, cpu, as->index) >= now)
		return 0;
	c->catchup_as = as->index + 1;
	c->catchup_gen = now;
	return 1;
}

/*
 * @cpu stops using @as: marked leaving until its next engine call, for its
 * CR3 write follows this call (Linux clears mm_cpumask(prev) before
 * load_new_mm_cr3() too, and relies on RCU-freed page tables for the
 * window), with the tag @as's entries stay under meanwhile.  The tag is
 * stored before the bit, which is an RMW: an initiator that reads the bit
 * after the address space's tag reads this CPU's tag too
 * (tag_leaving(), tag_flush.c).  A switch marks before its tag load; see there.
 */
static void mark_leaving(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *as)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);

	if (c->leaving_as && c->leaving_as != as->index + 1)
		tlbpol__settle(eng, cpu, 0); /* cannot happen: one leave per call */
	c->leaving_as = as->index + 1;
	prim_store_relaxed(&c->leaving_tag, c->loaded_tag);
	prim_fetch_or(&as->leaving[cpu / 64], 1ULL << (cpu % 64));
}

/* Then out of @as's footprint: leaving is published before the footprint
 * bit goes, so an initiator that misses the one sees the other. */
static void drop_footprint(uint32_t cpu, struct tlbpol_as *as)
{
	prim_fetch_and(&as->footprint[cpu / 64], ~(1ULL << (cpu % 64)));
	prim_fetch_sub_release(&as->loaded, 1u);
}

static void leave(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *as)
{
	mark_leaving(eng, cpu, as);
	drop_footprint(cpu, as);
}

/*
 * cfg->tags: the allocator's tag for @next on @cpu, and its flush, into
 * @use.  A flush of the tag, or of everything, leaves @cpu with no entry
 * of @next (a slot taken from another address space held none of it; a
 * rollover's flush drops all): caught up, once that flush is done, to the
 * generation read after this CPU joined the footprint (catch_up() tells
 * why not before).
 */
static int tag_catch_up(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next,
			struct tlbpol_tag_use *use)
{
	struct tlbpol_cpu *c = cpu_of(eng, cpu);

	if (use->flush == TLBPOL_TAG_FLUSH_NONE) {
		if (catch_up(eng, cpu, next))
			use->flush = TLBPOL_TAG_FLUSH_TAG;
		return 0;
	}
	c->catchup_as = next->index + 1;
	c->catchup_gen = prim_load_seqcst(&next->gen);
	return 0;
}

/* tlbpol_switch() and tlbpol_switch_tag(): @use is NULL without tags. */
static int switch_to(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next,
		     int *need_flush, struct tlbpol_tag_use *use)
{
	struct tlbpol_cpu *c;
	int need = 0;

	if (cpu >= eng->nr_cpus)
		return -E_RANGE;
	if (next && !tlbpol__as_valid(eng, next))
		return -E_INVAL;
	c = cpu_of(eng, cpu);
	/*
	 * Only a running CPU runs an address space: an IDLE or PREEMPTED one
	 * would be spared interrupts for it as if it did not (cpu_is_lazy()),
	 * an OFFLINE one would never be targeted at all.
	 */
	if (next && prim_load_relaxed(&c->state) != TLBPOL_CPU_RUNNING)
		return -E_BUSY;
	if (call_enter(eng, c, cpu))
		return -E_BUSY;

	if (!next) {
		/*
		 * Lazy TLB mode: the hardware keeps the old address space
		 * loaded (no CR3 write for a kernel thread), so the CPU stays
		 * in its footprint; RULE_LAZY_CPUS spares it interrupts.
		 */
		if (c->loaded)
			prim_store_seqcst(&c->lazy, 1u);
		c->current = 0;
		if (use) {
			use->tag = c->loaded ? c->loaded_tag : 0;
			use->flush = TLBPOL_TAG_FLUSH_NONE;
		}
	} else if (next == c->loaded) {
		/* Back from lazy: the tag stayed loaded (no CR3 write). */
		prim_store_seqcst(&c->lazy, 0u);
		c->current = next;
		need = catch_up(eng, cpu, next);
		if (use) {
			use->tag = c->loaded_tag;
			use->flush = need ? TLBPOL_TAG_FLUSH_TAG : TLBPOL_TAG_FLUSH_NONE;
		}
	} else {
		uint64_t bit = 1ULL << (cpu % 64);

		/*
		 * Leaving the old one, before the tag load: from the load on,
		 * the allocator no longer keeps the old tag for this CPU
		 * (TLBPOL_TAGS_GLOBAL: a rollover reserves the tag each CPU
		 * loaded last), so the old address space may get another tag
		 * while this CPU still walks it under the old one, until its
		 * CR3 write.  Broadcasts then name both (tag_leaving(), tag_flush.c),
		 * which they can only if this mark comes first.
		 */
		if (c->loaded)
			mark_leaving(eng, cpu, c->loaded);
		if (use) {
			/* The engine made the identity: a failure means the
			 * allocator's memory was overwritten.  Nothing moved
			 * but the mark, which the next call clears. */
			int err = tlbpol_tag_load(eng->tags, cpu, &next->tag_id, use);

			if (err) {
				call_leave(c);
				return err;
			}
			/* Under next's global tag from now on: its broadcasts
			 * reach this CPU (the entries it may hold under a
			 * slot are out of reach from here on). */
			if (eng->tags_percpu &&
			    (int)use->tag == tlbpol_tag_global_of(eng->tags, &next->tag_id))
				prim_fetch_or(&gcover_of(eng, next)[cpu / 64], bit);
		}
		/*
		 * Join the footprint before this CPU can walk next's page
		 * tables: an initiator changes a PTE, takes a generation and
		 * then reads the footprint, so either it sees this bit or our
		 * read of the generation below sees its change.
		 */
		prim_fetch_add(&next->loaded, 1u);
		prim_fetch_or(&next->footprint[cpu / 64], bit);
		prim_store_seqcst(&c->lazy, 0u);
		/*
		 * Out of the old one: the switch drops its entries (a CR3 write
		 * without PCID), or, with retention, keeps them under its tag
		 * and this CPU catches up when it comes back.
		 */
		if (c->loaded)
			drop_footprint(cpu, c->loaded);
		/*
		 * Without retention this CPU holds no entry of next: the CR3
		 * write that took it away from next dropped them all (global
		 * ones aside, which generations never cover), so it is caught
		 * up now, before its CR3 write.
		 */
		if (use)
			need = tag_catch_up(eng, cpu, next, use);
		else if (eng->flags & TLBPOL_CFGF_RETAIN_AS)
			need = catch_up(eng, cpu, next);
		else
			gen_raise(local_gen_of(eng, cpu, next->index),
				  prim_load_seqcst(&next->gen));
		if (use)
			c->loaded_tag = use->tag;
		c->loaded = c->current = next;
	}
	if (need_flush)
		*need_flush = need;
	tlbpol__drain(eng, params_of(eng), cpu, TLBPOL_BY_NOW, DRAIN_SERVE);
	call_leave(c);
	if (eng->quiescent)
		eng->quiescent();
	return 0;
}

int tlbpol_switch(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next, int *need_flush)
{
	/* With an allocator the host must learn the tag: tlbpol_switch_tag(). */
	if (!eng || eng->magic != TLBPOL_MAGIC || eng->tags)
		return -E_INVAL;
	return switch_to(eng, cpu, next, need_flush, 0);
}

int tlbpol_switch_tag(struct tlbpol_engine *eng, uint32_t cpu, struct tlbpol_as *next,
		      struct tlbpol_tag_use *out)
{
	if (!eng || eng->magic != TLBPOL_MAGIC || !eng->tags || !out)
		return -E_INVAL;
	return switch_to(eng, cpu, next, 0, out);
}

int tlbpol_unload(struct tlbpol_engine *eng, uint32_t cpu)
{
	struct tlbpol_cpu *c;
	int err = cpu_call_enter(eng, cpu, 1, &c);

	if (err)
		return err;
	if (c->current) {
		call_leave(c);
		return -E_BUSY;
	}
	if (c->loaded)
		leave(eng, cpu, c->loaded);
	c->loaded = 0;
	prim_store_seqcst(&c->lazy, 0u);
	call_leave(c);
	return 0;
}

int tlbpol_cpu_state(struct tlbpol_engine *eng, uint32_t cpu, uint32_t state)
{
	struct tlbpol_cpu *c;
	struct tlbpol_as *back = 0;
	uint32_t old;
	int ret = cpu_call_enter(eng, cpu, state <= TLBPOL_CPU_OFFLINE, &c);

	if (ret)
		return ret;
	old = prim_load_relaxed(&c->state);
	if (state == TLBPOL_CPU_OFFLINE && old != TLBPOL_CPU_OFFLINE) {
		tlbpol__reap(eng, cpu);
		if (c->nr_pending || c->dfree_count || tlbpol__oldest_seq(eng, cpu) != ~0ULL) {
			call_leave(c);
			return -E_BUSY;
		}
		/*
		 * Publish OFFLINE, then drain: an initiator sets its inbox bit
		 * and then reads our state (both sequentially consistent), so
		 * either it sees OFFLINE and takes its request back, or this
		 * drain sees its bit.  Nobody is left waiting on a dead CPU.
		 * The fence: serve's first look at the inbox is a relaxed
		 * load, which a sequentially consistent store does not order
		 * on its own (arm64: a plain LDR may complete before an
		 * earlier STLR), so both sides of the pattern need a full
		 * barrier (the initiator's is its RMW and seq_cst load).
		 */
		prim_store_seqcst(&c->state, state);
		prim_fence();
		tlbpol__serve(eng, params_of(eng), cpu);
		if (c->loaded)
			leave(eng, cpu, c->loaded);
		c->loaded = c->current = 0;
		prim_store_seqcst(&c->lazy, 0u);
		call_leave(c);
		return 0;
	}
	prim_store_seqcst(&c->state, state);
	if (old == TLBPOL_CPU_OFFLINE) {
		/*
		 * Back from OFFLINE: requests were not sent to this CPU while it
		 * was down, so whatever its TLB kept is suspect, global entries
		 * and walk caches too.  Flushed here, before it executes
		 * anything: kernel code would run through stale global entries
		 * long before its next switch.  (Published first: a request
		 * taken from now on reaches it.)
		 */
		struct tlbpol_flush f = { 0, TLBPOL_FLUSH_ALL,
					  TLBPOL_FLUSHF_TABLES | TLBPOL_FLUSHF_GLOBAL, 0, 0, 0 };

		/* The same pattern: our state store before the walks that
		 * follow the flush (an initiator stores its PTE and then reads
		 * our state; it skipped us if it read OFFLINE). */
		prim_fence();
		eng->ops.flush_local(eng->ops_ctx, cpu, &f);
		prim_count(&c->cnt.task.local_flushes, 1);
		prim_count(&c->cnt.task.full_flushes, 1);
	}
	/*
	 * Back to work after flushes may have been skipped.  An IDLE CPU was
	 * spared flushes of its current address space, never freed tables (a
	 * lazy one catches up on its loaded one when it switches back).  A
	 * PREEMPTED one was spared everything, freed tables too (it executed
	 * nothing), so it catches up on what its MMU may walk as soon as it
	 * executes anything, whether it runs or idles: the current address
	 * space, or the one it keeps loaded while lazy.  An idle CPU executes
	 * too (its idle loop, interrupts), and its MMU walks the loaded tables
	 * speculatively; as IDLE it would not be told later (a lazy one's
	 * return to RUNNING has no current address space to catch up on), so
	 * the catch-up cannot wait for RUNNING (SDM vol. 3A 4.10.3: the walk
	 * caches hold entries of freed tables until invalidated).  Going
	 * OFFLINE needs none: coming back from it flushes everything.
	 */
	if (state == TLBPOL_CPU_RUNNING && old == TLBPOL_CPU_IDLE)
		back = c->current;
	else if (old == TLBPOL_CPU_PREEMPTED &&
		 (state == TLBPOL_CPU_RUNNING || state == TLBPOL_CPU_IDLE))
		back = c->current ? c->current : c->loaded;
	if (back)
		ret = catch_up(eng, cpu, back);
	call_leave(c);
	return ret;
}

int tlbpol_tick(struct tlbpol_engine *eng, uint32_t cpu)
{
	struct tlbpol_cpu *c;
	int err = cpu_call_enter(eng, cpu, 1, &c);

	if (err)
		return err;
	/*
	 * The tick counts before the drain reads it (neither serving nor
	 * reaping does).  Work due by a free that has waited free_ticks ticks
	 * is completed here, one shootdown for the batch, and lazy requests
	 * age too: a target that idles without ticking would hold them, and
	 * what waits behind them, for as long as it idles.
	 */
	c->ticks++;
	tlbpol__drain(eng, params_of(eng), cpu, TLBPOL_BY_FREE,
		      DRAIN_SERVE | DRAIN_AGED | DRAIN_AGE_LAZY | DRAIN_POST_LAZY);
	if (tlbpol__tags_movable(eng))
		tlbpol__tag_to_global(eng, cpu);
	call_leave(c);
	if (eng->quiescent)
		eng->quiescent();
	return 0;
}
