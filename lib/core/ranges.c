/* SPDX-License-Identifier: MIT */
/*
 * ranges.c - sorting and merging flush ranges.
 *
 * One definition of how ranges of pages become the fewest ranges that name
 * them all: used by batch.c when it builds a request and by receive.c when
 * a receiver merges what it claimed.  And how a host names a range in
 * arm64 TLBI range operations (tlbpol_tlbi_range_ops()).  A leaf: it knows
 * no engine.
 */
#include "internal.h"
#include "sort.h"

static inline int range_less(const struct tlbpol_range *x, const struct tlbpol_range *y)
{
	if (x->page_shift != y->page_shift)
		return x->page_shift < y->page_shift;
	return x->va < y->va;
}

TLBPOL_DEFINE_HEAPSORT(tlbpol_sort_ranges, struct tlbpol_range, range_less)

/*
 * Merge @n ranges sorted by (page size, address) in place: same page size,
 * overlapping or adjacent.  Returns the ranges left; *@pages gets the
 * distinct pages.
 */
uint32_t tlbpol__merge_sorted(struct tlbpol_range *r, uint32_t n, uint64_t *pages)
{
	uint32_t out = 0;

	*pages = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (out) {
			struct tlbpol_range *p = &r[out - 1];
			uint64_t last = range_last(p->va, p->nr_pages, p->page_shift);

			if (p->page_shift == r[i].page_shift &&
			    (r[i].va <= last || r[i].va == last + 1)) {
				uint64_t nl = range_last(r[i].va, r[i].nr_pages, r[i].page_shift);

				if (nl > last) {
					*pages -= p->nr_pages;
					p->nr_pages = ((nl - p->va) >> p->page_shift) + 1;
					*pages += p->nr_pages;
				}
				continue;
			}
		}
		r[out] = r[i];
		*pages += r[out].nr_pages;
		out++;
	}
	return out;
}

/* Sort (unless already sorted: an unmap walks addresses upwards) and merge. */
uint32_t tlbpol__merge_ranges(struct tlbpol_range *r, uint32_t n, uint64_t *pages)
{
	for (uint32_t i = 1; i < n; i++)
		if (range_less(&r[i], &r[i - 1])) {
			tlbpol_sort_ranges(r, n);
			break;
		}
	return tlbpol__merge_sorted(r, n, pages);
}

int tlbpol_tlbi_range_ops(const struct tlbpol_range *r, struct tlbpol_tlbi_op *ops, uint32_t n)
{
	uint64_t va, left;
	uint32_t k = 0, scale = 0;

	if (!r || !ops || !r->nr_pages || r->page_shift > 47)
		return -E_INVAL;
	if (r->nr_pages >= TLBPOL_TLBI_RANGE_MAX_PAGES ||
	    r->va > ~0ULL - ((r->nr_pages << r->page_shift) - 1))
		return -E_RANGE;
	va = r->va;
	left = r->nr_pages;
	/*
	 * As Linux's __flush_tlb_range_op(): at each SCALE from 0 the NUM
	 * field takes bits 5 x SCALE + 1 .. 5 x SCALE + 5 of what is left, so
	 * SCALE 0 takes pages 2..62 in twos, 1 up to 31 x 64 more, and so on;
	 * a last single page (only one can be odd) gets its own operation.
	 */
	while (left) {
		struct tlbpol_tlbi_op op = { va, 1, 0, 0, 0, 0 };

		if (left > 1) {
			int64_t num;

			if (scale > 3) /* left < 2^21: nothing for a fifth scale */
				return -E_RANGE;
			num = (int64_t)((left >> (5 * scale + 1)) & 0x1f) - 1;
			if (num < 0) {
				scale++;
				continue;
			}
			op.range = 1;
			op.scale = scale;
			op.num = (uint32_t)num;
			op.pages = (uint64_t)(num + 1) << (5 * scale + 1);
			scale++;
		}
		if (k == n)
			return -E_NOMEM;
		ops[k++] = op;
		va += op.pages << r->page_shift;
		left -= op.pages;
	}
	return (int)k;
}
