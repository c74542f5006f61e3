/* SPDX-License-Identifier: MIT */
/*
 * reconfig.c - changing rules, ceiling, batch size and cost model while
 * CPUs run, with liburcu's QSBR flavour.
 *
 * Readers (every engine call) load eng->params once and use that block; they
 * take no lock and execute no barrier beyond the load-acquire: QSBR's read
 * side is free.  A writer builds a new block, publishes it, and frees the old
 * one after a grace period: once every registered thread has passed a
 * quiescent state, i.e. returned from tlbpol_tick() or tlbpol_switch(), or
 * called tlbpol_quiescent(), or gone offline.  Hence the contract (in the
 * public header): a thread that calls an engine whose configuration may
 * change registers first, and reports quiescent states now and then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include <tlbpol/tlbpol.h>

#include "hosted.h"

static __thread int registered;

/*
 * ThreadSanitizer cannot see liburcu's grace periods (liburcu is not
 * instrumented), so a free after urcu_qsbr_synchronize_rcu() looks like a
 * race with the readers' last use.  Under TSan only, every quiescent state
 * also releases one counter and a writer acquires it after the grace
 * period: the same ordering RCU guarantees, made visible.  Normal builds pay
 * nothing.
 */
#if defined(__SANITIZE_THREAD__)
#define TLBPOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TLBPOL_TSAN 1
#endif
#endif
#ifdef TLBPOL_TSAN
static unsigned long tsan_qs;
static void qs_release(void)
{
	__atomic_fetch_add(&tsan_qs, 1, __ATOMIC_RELEASE);
}
static void gp_acquire(void)
{
	(void)__atomic_load_n(&tsan_qs, __ATOMIC_ACQUIRE);
}
#else
static void qs_release(void)
{
}
static void gp_acquire(void)
{
}
#endif

void tlbpol_thread_register(void)
{
	if (!registered) {
		urcu_qsbr_register_thread();
		registered = 1;
	}
}

void tlbpol_thread_unregister(void)
{
	if (registered) {
		qs_release();
		urcu_qsbr_unregister_thread();
		registered = 0;
	}
}

void tlbpol_quiescent(void)
{
	if (registered) {
		qs_release();
		urcu_qsbr_quiescent_state();
	}
}

void tlbpol_thread_offline(void)
{
	if (registered) {
		qs_release();
		urcu_qsbr_thread_offline();
	}
}

void tlbpol_thread_online(void)
{
	if (registered)
		urcu_qsbr_thread_online();
}

/* The core calls this at the end of tlbpol_tick() and tlbpol_switch(). */
void tlbpol__quiescent_hook(void)
{
	if (registered) {
		qs_release();
		urcu_qsbr_quiescent_state();
	}
}

/*
 * Publish a modified copy of the current block; free the old after a grace
 * period.  Writers are serialised by a mutex (no reader ever takes it).
 */
static int change(struct tlbpol_engine *eng, void (*edit)(struct tlbpol_params *p, const void *arg),
		  const void *arg)
{
	struct hosted *h;
	struct tlbpol_params *old, *nb;

	if (!eng || eng->magic != TLBPOL_MAGIC || !(h = eng->hosted))
		return -EINVAL;
	nb = malloc(sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	pthread_mutex_lock(&h->reconfig);
	old = eng->params;
	*nb = *old;
	edit(nb, arg);
	tlbpol__params_set_rules(eng, nb);
	/* rcu_assign_pointer(), spelt as the C11 release store it is, so
	 * that ThreadSanitizer sees the publication the core's
	 * load-acquire pairs with. */
	__atomic_store_n(&eng->params, nb, __ATOMIC_RELEASE);
	urcu_qsbr_synchronize_rcu();
	gp_acquire();
	pthread_mutex_unlock(&h->reconfig);
	if (old != &eng->params0)
		free(old);
	return 0;
}

static void edit_rules(struct tlbpol_params *p, const void *arg)
{
	p->rules_configured = *(const uint64_t *)arg;
}

int tlbpol_engine_set_rules(struct tlbpol_engine *eng, uint64_t rules)
{
	if (rules & ~TLBPOL_RULES_ALL)
		return -EINVAL;
	return change(eng, edit_rules, &rules);
}

static void edit_ceiling(struct tlbpol_params *p, const void *arg)
{
	p->flush_ceiling = *(const uint32_t *)arg;
}

int tlbpol_engine_set_flush_ceiling(struct tlbpol_engine *eng, uint32_t pages)
{
	if (!pages)
		return -EINVAL;
	return change(eng, edit_ceiling, &pages);
}

static void edit_batch(struct tlbpol_params *p, const void *arg)
{
	p->batch_pages = *(const uint32_t *)arg;
}

int tlbpol_engine_set_batch_pages(struct tlbpol_engine *eng, uint32_t pages)
{
	if (!eng || eng->magic != TLBPOL_MAGIC)
		return -EINVAL;
	/* The per-CPU arrays were sized at creation. */
	if (!pages || pages > eng->batch_cap)
		return -ERANGE;
	return change(eng, edit_batch, &pages);
}

static void edit_costs(struct tlbpol_params *p, const void *arg)
{
	const struct tlbpol_config *c = arg;

	if (c->cost_ipi_ns)
		p->cost_ipi = c->cost_ipi_ns;
	if (c->cost_ipi_target_ns)
		p->cost_ipi_target = c->cost_ipi_target_ns;
	if (c->cost_ipi_remote_ns)
		p->cost_ipi_remote = c->cost_ipi_remote_ns;
	if (c->cost_broadcast_ns)
		p->cost_bcast = c->cost_broadcast_ns;
	if (c->cost_broadcast_page_ns)
		p->cost_bcast_page = c->cost_broadcast_page_ns;
}

static void edit_ipi_delay(struct tlbpol_params *p, const void *arg)
{
	p->ipi_delay_spins = *(const uint32_t *)arg;
}

int tlbpol_engine_set_ipi_delay(struct tlbpol_engine *eng, uint32_t spins)
{
	return change(eng, edit_ipi_delay, &spins);
}

int tlbpol_engine_set_cost_model(struct tlbpol_engine *eng, const struct tlbpol_config *cfg)
{
	struct tlbpol_config c;
	int ret;

	/* Only the cost fields are read, so only the size is checked: too
	 * small is -EINVAL, larger with a nonzero byte past this library's
	 * structure -E2BIG, as tlbpol_engine_new() says of the same config. */
	ret = tlbpol__config_copy(cfg, &c);
	if (ret)
		return ret;
	return change(eng, edit_costs, &c);
}
