/* SPDX-License-Identifier: MIT */
/*
 * lookup.c - address spaces by tag: a liburcu lock-free hash table, so that
 * callers and bindings holding tags find the handle without a lock on the
 * read side.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include <tlbpol/tlbpol.h>

#include "hosted.h"

static unsigned long hash_tag(uint64_t tag)
{
	tag ^= tag >> 33;
	tag *= 0xff51afd7ed558ccdULL;
	tag ^= tag >> 33;
	return (unsigned long)tag;
}

static int match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct as_node, node)->tag == *(const uint64_t *)key;
}

/* Called by the core after an open, and before a closed slot is reused. */
static void as_changed(struct tlbpol_engine *eng, struct tlbpol_as *as, int open)
{
	struct hosted *h = eng->hosted;
	struct as_node *n = &h->as_nodes[as->index];

	if (open) {
		n->tag = as->tag;
		n->as = as;
		cds_lfht_node_init(&n->node);
		urcu_qsbr_read_lock();
		cds_lfht_add(h->by_tag, hash_tag(as->tag), &n->node);
		urcu_qsbr_read_unlock();
		return;
	}
	urcu_qsbr_read_lock();
	cds_lfht_del(h->by_tag, &n->node);
	urcu_qsbr_read_unlock();
	/* A reader may still be on the node: it is reused only after every
	 * registered thread has passed a quiescent state. */
	urcu_qsbr_synchronize_rcu();
}

int tlbpol__lookup_init(struct tlbpol_engine *eng, struct hosted *h)
{
	h->as_nodes = calloc(eng->max_as, sizeof(*h->as_nodes));
	h->by_tag = cds_lfht_new(16, 16, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING, NULL);
	if (!h->as_nodes || !h->by_tag) {
		free(h->as_nodes);
		if (h->by_tag)
			cds_lfht_destroy(h->by_tag, NULL);
		return -ENOMEM;
	}
	eng->hosted = h;
	eng->as_changed = as_changed;
	return 0;
}

void tlbpol__lookup_fini(struct hosted *h)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	urcu_qsbr_read_lock();
	cds_lfht_for_each(h->by_tag, &it, n)
		cds_lfht_del(h->by_tag, n);
	urcu_qsbr_read_unlock();
	cds_lfht_destroy(h->by_tag, NULL);
	free(h->as_nodes);
}

struct tlbpol_as *tlbpol_as_lookup(struct tlbpol_engine *eng, uint64_t tag)
{
	struct hosted *h;
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	struct tlbpol_as *as = NULL;

	if (!eng || eng->magic != TLBPOL_MAGIC || !(h = eng->hosted))
		return NULL;
	urcu_qsbr_read_lock();
	cds_lfht_lookup(h->by_tag, hash_tag(tag), match, &tag, &it);
	n = cds_lfht_iter_get_node(&it);
	if (n)
		as = caa_container_of(n, struct as_node, node)->as;
	urcu_qsbr_read_unlock();
	return as;
}
