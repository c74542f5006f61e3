/* SPDX-License-Identifier: MIT */
/*
 * threads.c - the smallest complete host: threads are CPUs with soft TLBs.
 * Each CPU unmaps and remaps its own pages and reads everyone's; the engine
 * decides the flushes and a frame is reused only after tlbpol_defer_free()
 * says no TLB can reach it.  A read through an entry to a freed frame is
 * counted as stale: the run fails if there is one.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tlbpol/tlbpol.h>

#define NCPU 4
#define PAGES 64 /* page p belongs to CPU p % NCPU */
#define FRAMES (2 * PAGES)
#define STEPS 20000

static struct tlbpol_engine *eng;
static struct tlbpol_as *as;
static _Atomic int pte[PAGES];            /* frame + 1, 0: not present */
static _Atomic int frame_live[FRAMES];    /* 0 once freed */
static int tlb[NCPU][PAGES];              /* frame + 1; only its own thread touches it */
static int freelist[NCPU][FRAMES], nfree[NCPU];
static _Atomic long stale;
static atomic_int done; /* CPUs through their last flush */
static struct cpu {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	atomic_int pending; /* an interrupt is waiting */
} cpus[NCPU];
static pthread_barrier_t start;

static void flush_local(void *ctx, uint32_t cpu, const struct tlbpol_flush *f)
{
	(void)ctx;
	if (f->kind != TLBPOL_FLUSH_PAGES) {
		for (int p = 0; p < PAGES; p++)
			tlb[cpu][p] = 0;
		return;
	}
	for (uint32_t r = 0; r < f->nr_ranges; r++)
		for (uint64_t i = 0; i < f->ranges[r].nr_pages; i++)
			tlb[cpu][(f->ranges[r].va >> 12) + i] = 0;
}

/* An interrupt: raise the flag, wake the CPU if it sleeps. */
static void send_ipi(void *ctx, uint32_t from, const struct tlbpol_cpuset *targets)
{
	(void)ctx;
	(void)from;
	for (int c = tlbpol_cpuset_next(targets, -1); c >= 0; c = tlbpol_cpuset_next(targets, c)) {
		pthread_mutex_lock(&cpus[c].lock);
		atomic_store(&cpus[c].pending, 1);
		pthread_cond_signal(&cpus[c].wake);
		pthread_mutex_unlock(&cpus[c].lock);
	}
}

static void take_interrupts(uint32_t cpu)
{
	if (atomic_exchange(&cpus[cpu].pending, 0))
		tlbpol_handle_ipi(eng, cpu);
}

static void free_frame(void *arg) /* runs on the frame's owner */
{
	int f = (int)(intptr_t)arg;

	atomic_store(&frame_live[f], 0);
	freelist[f % NCPU][nfree[f % NCPU]++] = f;
}

/* Change our page @p: unmap it, or map a fresh frame (submit, then store). */
static void change(uint32_t cpu, int p)
{
	int old = atomic_load(&pte[p]);
	struct tlbpol_event ev = { .size = sizeof(ev), .page_shift = 12,
				   .va = (uint64_t)p << 12, .nr_pages = 1 };

	if (old) {
		ev.kind = TLBPOL_EV_UNMAP;
		ev.old_pte = TLBPOL_PTE_PRESENT | TLBPOL_PTE_ACCESSED;
		atomic_store(&pte[p], 0);
		tlbpol_submit(eng, as, cpu, &ev, NULL);
		tlbpol_defer_free(eng, cpu, free_frame, (void *)(intptr_t)(old - 1));
	} else if (nfree[cpu]) {
		int f = freelist[cpu][--nfree[cpu]];

		ev.kind = TLBPOL_EV_FAULT;
		ev.new_pte = TLBPOL_PTE_PRESENT | TLBPOL_PTE_ACCESSED;
		tlbpol_submit(eng, as, cpu, &ev, NULL);
		atomic_store(&frame_live[f], 1);
		atomic_store(&pte[p], f + 1);
	}
}

/* Read page @p through our TLB, walking the table on a miss. */
static void read_page(uint32_t cpu, int p)
{
	if (!tlb[cpu][p])
		tlb[cpu][p] = atomic_load(&pte[p]);
	if (tlb[cpu][p] && !atomic_load(&frame_live[tlb[cpu][p] - 1]))
		atomic_fetch_add(&stale, 1);
}

static void *run(void *arg)
{
	uint32_t cpu = (uint32_t)(uintptr_t)arg;
	unsigned seed = cpu + 1;

	tlbpol_switch(eng, cpu, as, NULL);
	pthread_barrier_wait(&start);
	for (int i = 0; i < STEPS; i++) {
		int r = rand_r(&seed);

		take_interrupts(cpu);
		if (r % 8 == 0)
			change(cpu, (r / 8 % (PAGES / NCPU)) * NCPU + (int)cpu);
		else
			read_page(cpu, r / 8 % PAGES);
		if (r % 64 == 1)
			tlbpol_tick(eng, cpu);
		if (r % 512 == 2) { /* blocked for a while: tell the engine */
			tlbpol_cpu_state(eng, cpu, TLBPOL_CPU_PREEMPTED);
			pthread_mutex_lock(&cpus[cpu].lock);
			if (!atomic_load(&cpus[cpu].pending)) {
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_nsec += 200000;
				if (ts.tv_nsec >= 1000000000L)
					ts.tv_sec++, ts.tv_nsec -= 1000000000L;
				pthread_cond_timedwait(&cpus[cpu].wake, &cpus[cpu].lock, &ts);
			}
			pthread_mutex_unlock(&cpus[cpu].lock);
			if (tlbpol_cpu_state(eng, cpu, TLBPOL_CPU_RUNNING) == 1)
				flush_local(NULL, cpu, &(struct tlbpol_flush){ .kind = TLBPOL_FLUSH_AS });
		}
	}
	tlbpol_flush(eng, cpu, TLBPOL_BY_LAZY); /* everything complete, frees run */
	/* Still a CPU until all are done: the others may be waiting for us. */
	atomic_fetch_add(&done, 1);
	while (atomic_load(&done) < NCPU) {
		take_interrupts(cpu);
		sched_yield();
	}
	return NULL;
}

static void relax(void *ctx, uint32_t cpu)
{
	(void)ctx;
	take_interrupts(cpu);
	sched_yield();
}

int main(void)
{
	static const struct tlbpol_ops ops = {
		.size = sizeof(ops), .flush_local = flush_local, .send_ipi = send_ipi, .relax = relax,
	};
	struct tlbpol_config cfg;
	struct tlbpol_stats st;
	pthread_t t[NCPU];

	tlbpol_config_init(&cfg, NCPU, TLBPOL_ARCH_X86_64);
	cfg.ops = &ops;
	if (tlbpol_engine_new(&cfg, &eng) || tlbpol_as_open(eng, 1, &as))
		return 1;
	for (int f = 0; f < FRAMES; f++)
		freelist[f % NCPU][nfree[f % NCPU]++] = f;
	pthread_barrier_init(&start, NULL, NCPU);
	for (uintptr_t c = 0; c < NCPU; c++) {
		pthread_mutex_init(&cpus[c].lock, NULL);
		pthread_cond_init(&cpus[c].wake, NULL);
		pthread_create(&t[c], NULL, run, (void *)c);
	}
	for (int c = 0; c < NCPU; c++)
		pthread_join(t[c], NULL);
	tlbpol_stats_read(eng, -1, &st);
	printf("%d CPUs, %llu events, %llu interrupts, %llu flushes avoided, %llu frees, %ld stale\n",
	       NCPU, (unsigned long long)st.events, (unsigned long long)st.ipis_sent,
	       (unsigned long long)st.flushes_avoided, (unsigned long long)st.deferred_frees,
	       atomic_load(&stale));
	tlbpol_engine_free(eng);
	return atomic_load(&stale) != 0;
}
