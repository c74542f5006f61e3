/* SPDX-License-Identifier: MIT */
/*
 * consumer.c - a program built against an *installed* libtlbpol only.
 *
 * tests/install/install-test.sh compiles this file as C99, C11 and C++11
 * using nothing but the installed headers and the flags the installed
 * tlbpol.pc gives, links it against the installed shared library (and once
 * against the installed static one) and runs it.  It is therefore written in
 * the common subset of C99 and C++11: no designated initialisers, no
 * compound literals, no implicit conversions from void *.
 */
#include <stdio.h>
#include <string.h>

#include <tlbpol/tlbpol.h>

static unsigned flushes, ipis;

static void flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx;
	(void)cpu;
	(void)f;
	flushes++;
}

static void send_ipi(void *ctx, uint32_t from_cpu, const struct tlbpol_cpuset *targets)
{
	(void)ctx;
	(void)from_cpu;
	(void)targets;
	ipis++;
}

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "consumer: %s:%d: check failed: %s\n", \
				__FILE__, __LINE__, #cond);                    \
			return 1;                                              \
		}                                                              \
	} while (0)

int main(void)
{
	/* Zeroed, then filled: valid C and C++ (no designated initializers
	 * before C++20), and unset hooks stay NULL as the struct grows. */
	struct tlbpol_ops ops;
	const uint32_t pte = TLBPOL_PTE_PRESENT | TLBPOL_PTE_WRITE | TLBPOL_PTE_USER |
			     TLBPOL_PTE_ACCESSED | TLBPOL_PTE_DIRTY;
	struct tlbpol_config cfg;
	struct tlbpol_engine *eng = NULL;
	struct tlbpol_as *as = NULL;
	struct tlbpol_event ev;
	struct tlbpol_decision d;
	int err;

	CHECK(tlbpol_version() != NULL);
	CHECK(strcmp(tlbpol_version(), TLBPOL_VERSION_STRING) == 0);

	memset(&ops, 0, sizeof(ops));
	ops.size = sizeof(ops);
	ops.flush_local = flush_local;
	ops.send_ipi = send_ipi;
	tlbpol_config_init(&cfg, 2, TLBPOL_ARCH_X86_64);
	CHECK(cfg.size == sizeof(cfg));
	cfg.ops = &ops;
	err = tlbpol_engine_new(&cfg, &eng);
	CHECK(err == 0 && eng != NULL);
	err = tlbpol_as_open(eng, 1, &as);
	CHECK(err == 0 && as != NULL);

	/* An x86-64 spurious write fault: the PTE already allowed the write. */
	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	ev.kind = TLBPOL_EV_FAULT;
	ev.flags = TLBPOL_EVF_WRITE;
	ev.page_shift = 12;
	ev.va = 0x1000;
	ev.nr_pages = 1;
	ev.old_pte = pte;
	ev.new_pte = pte;
	memset(&d, 0xff, sizeof(d));
	err = tlbpol_decide(eng, as, 0, &ev, &d);
	CHECK(err == 0);
	CHECK(d.action == TLBPOL_ACT_NONE);
	CHECK(d.reason == TLBPOL_WHY_SPURIOUS);
	CHECK(strcmp(tlbpol_reason_str(d.reason), "unknown") != 0);
	CHECK(flushes == 0 && ipis == 0);

	CHECK(tlbpol_as_close(eng, as) == 0);
	tlbpol_engine_free(eng);
	printf("consumer: libtlbpol %s (header %s): %s/%s (%s)\n", tlbpol_version(),
	       TLBPOL_VERSION_STRING, tlbpol_action_str(d.action),
	       tlbpol_deadline_str(d.deadline), tlbpol_reason_str(d.reason));
	return 0;
}
