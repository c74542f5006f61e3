/* SPDX-License-Identifier: MIT */
/*
 * ranges.c - sorting and merging flush ranges.
 *
 * One definition of how ranges of pages become the fewest ranges that name
 * them all: used by batch.c when it builds a request and by receive.c when
 * a receiver merges what it claimed.  A leaf: it knows no engine.
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

