/* SPDX-License-Identifier: MIT */
/*
 * hypervisor.c - the `hypervisor` scenario: the engine inside a
 * hypervisor.  It sits with the scenarios (sim.h's layering: it calls
 * sched.c, machine.c, clock.c and tlb.c, never the front end).
 *
 * What the model's objects are here:
 *  - the modelled CPUs are physical CPUs (pCPUs);
 *  - an address space is a VM's stage-2 tables (Intel EPT, AMD NPT, Arm
 *    stage 2), its as_tag the VMID / EPTP;
 *  - a kind-AS flush_local is INVEPT single-context (arm64: TLBI
 *    VMALLS12E1IS); a kind-PAGES one invalidates by guest-physical address,
 *    which x86 has no instruction for (INVEPT knows single- and all-context
 *    only; KVM flushes GPA ranges only through Hyper-V's enlightenment,
 *    hv_flush_remote_tlbs_range() in arch/x86/kvm/kvm_onhyperv.c) and arm64
 *    has as TLBI IPAS2E1IS.  The sim's TLB is what it is: entries tagged by
 *    address space, so here by VM.
 *
 * Four VMs, VM_VCPU_PER_PCPU x pCPUs vCPUs in all (2x overcommit, or
 * --overcommit K), and three things at once:
 *
 *  1. Live migration of VM 0: dirty logging in rounds.  A host thread (the
 *     VMM's migration thread) write-protects the VM's memory each round and
 *     then sends the pages it found dirty; vCPUs that write a protected page
 *     take a write fault that makes it writable again and logs it.  Models
 *     KVM: kvm_mmu_slot_remove_write_access() (arch/x86/kvm/mmu/mmu.c) when
 *     logging is switched on, write-protecting the whole slot, and each
 *     round's KVM_GET_DIRTY_LOG / KVM_CLEAR_DIRTY_LOG
 *     (kvm_get_dirty_log_protect() / kvm_clear_dirty_log_protect() in
 *     virt/kvm/kvm_main.c), which go over the dirty bitmap a 64-bit word at
 *     a time, write-protect the word's dirty pages
 *     (kvm_arch_mmu_enable_log_dirty_pt_masked()) and flush once for the
 *     ioctl (kvm_flush_remote_tlbs_memslot()).  The fault is KVM's
 *     fast_page_fault() (arch/x86/kvm/mmu/mmu.c): W back in the SPTE, the
 *     gfn marked dirty, no flush.
 *  2. A balloon in VM 1.  The guest's virtio-balloon driver hands pages to
 *     the device in batches of 256 PFNs (VIRTIO_BALLOON_ARRAY_PFNS_MAX);
 *     the device (a host thread) unmaps them from stage 2, flushes, frees
 *     the frames to the host allocator behind the flush and acknowledges.
 *     QEMU: virtio_balloon_handle_output() -> balloon_inflate_page() ->
 *     ram_block_discard_range() (hw/virtio/virtio-balloon.c), which reaches
 *     KVM through kvm_mmu_notifier_invalidate_range_start() ->
 *     kvm_unmap_gfn_range() (virt/kvm/kvm_main.c), flushing before it
 *     returns; in-kernel zaps are kvm_zap_gfn_range().  When the balloon
 *     holds BALLOON_MAX pages the guest deflates the oldest batch (a hint:
 *     QEMU's balloon_deflate_page() only madvises WILLNEED) and its vCPUs
 *     touch those pages again: stage-2 faults that install fresh frames.
 *  3. vCPUs are threads (sim_thread_new(), unpinned) in their VM's address
 *     space; they run guest work, halt (HLT exits: sim_block(), after
 *     halt-polling if nothing else wants the pCPU, kvm_vcpu_halt() and
 *     kvm_vcpu_can_poll() in virt/kvm/kvm_main.c and
 *     include/linux/kvm_host.h) and wake wherever the scheduler puts them,
 *     so they are descheduled and migrate between pCPUs.  sched.c tells the
 *     engine at every switch between VMs (tlbpol_switch(): KVM's
 *     vcpu_load() / vcpu_put() and the preempt notifiers kvm_sched_in() /
 *     kvm_sched_out() in virt/kvm/kvm_main.c), and a pCPU with nothing to
 *     run goes idle and lazy, keeping the last VM's tables loaded.  A vCPU
 *     that comes to a pCPU other than the one it last ran on flushes that
 *     pCPU's TLB whole before it enters the guest: KVM's
 *     vmx_vcpu_load_vmcs() (arch/x86/kvm/vmx/vmx.c) raises KVM_REQ_TLB_FLUSH
 *     when the vCPU's VMCS was not loaded on this pCPU ("the new pCPU may
 *     have stale TLB entries from its previous association with the vCPU"),
 *     and vmx_flush_tlb_all() does INVEPT all-context; SVM's pre_svm_run()
 *     (arch/x86/kvm/svm/svm.c) gives the vCPU a new ASID, or flushes it,
 *     for the same reason, ASIDs being per pCPU.  That flush is the
 *     hypervisor's own, outside the engine, counted in the flushes and
 *     full columns (about 11400 at the defaults), much the same under
 *     every policy.  The engine does not need it for what it
 *     is told (stage-2 changes): it covers the guest's own stage-1
 *     invalidations, which act on one pCPU only.
 *
 * Preemption by the host is not told to the engine as
 * tlbpol_cpu_state(PREEMPTED): the engine runs in the hypervisor, on the
 * pCPUs, and a pCPU is never descheduled; PREEMPTED is for an engine in a
 * guest (vCPU-CPUs), i.e. a nested hypervisor.  What descheduling a vCPU
 * does here is switch its pCPU to another VM or to a host thread.
 *
 * The policies.  "before" is linux without RULE_BATCH: each stage-2 unmap
 * of the balloon is shot down when it is submitted instead of once for its
 * 256-page request.  Batching is what the balloon needs (Linux 72b252aed506
 * "mm: send one IPI per CPU to TLB flush all entries after unmapping
 * pages"; KVM too flushes once per zapped range,
 * kvm_zap_gfn_range()).  RULE_RANGE_FLUSH, the other candidate, changes
 * nothing here: a round write-protects whole bitmap words of the working
 * set, each past the 33-page flush ceiling, so every flush of VM 0 is of
 * kind AS with or without it (INVEPT single-context, what a plain EPT or
 * NPT host does anyway).
 *
 * The figure: ns per dirty-logging round, the time the migration thread
 * takes to write-protect one round's dirty pages, flushes included (one
 * KVM_CLEAR_DIRTY_LOG pass), averaged over the rounds; --events is the
 * number of rounds.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

/* Guest memory, the same layout in every VM: gfns from GUEST_BASE. */
#define HV_VMS 4
#define VM_MIGRATED 0
#define VM_BALLOON 1
#define GUEST_BASE 0x1000
#define GUEST_PAGES 4096  /* 16 MiB per VM */
#define HOT_PAGES 1024    /* what the migrated VM writes: the first quarter */
#define BITMAP_WORD 64    /* pages per word of KVM's dirty bitmap */

/* EPT entries: read/write/execute, accessed, dirty (no user bit). */
#define GRW (SIM_P | SIM_W | SIM_X | SIM_A)
#define GRWD (GRW | SIM_D)
#define GRO (SIM_P | SIM_X | SIM_A)

/* The balloon: the last BALLOON_PAGES of VM 1's memory. */
#define BALLOON_PAGES 2048
#define BALLOON_BATCH 256 /* VIRTIO_BALLOON_ARRAY_PFNS_MAX */
#define BALLOON_MAX 1024  /* held at most: then the oldest batch is deflated */
#define BALLOON_EVERY_NS 500000.0 /* the guest driver's requests, this far apart */
#define BALLOON_REQUEST_NS 2000.0 /* popping it, translating 256 PFNs */

/* vCPUs. */
#define VM_VCPU_PER_PCPU 2
#define GUEST_ACCESSES 8      /* per step, of which GUEST_WRITES writes */
#define GUEST_WRITES 2
#define GUEST_COMPUTE_NS 5000.0
#define HALT_ONE_IN 12        /* steps between halts, on average */
#define HALT_MIN_NS 20000.0
#define HALT_SPAN_NS 160000.0
#define HALT_POLL_NS 50000.0  /* halt-polling window (KVM: per vCPU, up to halt_poll_ns) */

/* The migration thread. */
#define SCAN_WORD_NS 20.0     /* reading one bitmap word */
#define ROUND_SYNC_NS 20000.0 /* the VMM's bitmap sync around the ioctl */
#define SEND_PAGE_NS 1000.0   /* sending one dirty page (4 KiB at ~4 GB/s) */

enum hv_role { HV_VCPU, HV_MIGRATION, HV_BALLOON };

struct hv_thread {
	uint32_t role;
	uint32_t vm;      /* vCPU: its VM */
	int32_t last_cpu; /* vCPU: the pCPU it last ran on, -1 none */
	uint64_t rng;
};

static struct {
	uint64_t rounds, rounds_done;
	int done;                 /* the migration is over: every thread ends */
	uint64_t balloon_lo, balloon_hi; /* inflated: batches [lo, hi) (pages) */
	double balloon_next;      /* when the guest's next inflate request comes */
} H;

static int new_thread(struct sim *s, uint32_t role, int32_t as, uint32_t cpu, uint32_t n)
{
	int id = sim_thread_new(s, as, cpu % s->cfg.ncpus, 0);
	struct hv_thread *h;

	if (id < 0)
		return -1;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -1;
	h->role = role;
	h->vm = as < 0 ? 0 : (uint32_t)as;
	h->last_cpu = -1;
	h->rng = (s->cfg.seed + 1) * 0x9e3779b97f4a7c15ULL + (n + 1) * 0xd1b54a32d192ed03ULL;
	h->rng |= 1;
	s->threads[id]->w = h;
	s->threads[id]->tag = n;
	return 0;
}

static int hv_setup(struct sim *s)
{
	uint32_t oc = s->cfg.overcommit ? s->cfg.overcommit : VM_VCPU_PER_PCPU;
	uint32_t per_vm = s->cfg.ncpus * oc / HV_VMS;
	uint32_t n = 0;

	memset(&H, 0, sizeof(H));
	H.rounds = s->cfg.events;
	if (per_vm < 1)
		per_vm = 1;
	for (uint32_t vm = 0; vm < HV_VMS; vm++) {
		if (sim_open_as(s) < 0)
			return -1;
		/* The guest has touched all its memory before: every page is
		 * mapped, writable (dirty logging is not on yet). */
		for (uint64_t v = 0; v < GUEST_PAGES; v++) {
			struct sim_page *p = sim_page(s, vm, GUEST_BASE + v, 1);

			p->perms = GRW;
			p->frame = s->next_frame++;
		}
	}
	/* vCPUs, the VMs' interleaved over the pCPUs' run queues, then the
	 * two host threads; none is pinned.  No pCPU is switched to a VM
	 * here: each switches when it first runs a vCPU. */
	for (uint32_t i = 0; i < per_vm; i++)
		for (uint32_t vm = 0; vm < HV_VMS; vm++, n++)
			if (new_thread(s, HV_VCPU, (int32_t)vm, n, n))
				return -1;
	if (new_thread(s, HV_MIGRATION, -1, 0, n) || new_thread(s, HV_BALLOON, -1, 1, n + 1))
		return -1;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* vCPUs                                                                    */

static int inflated(uint64_t idx)
{
	uint64_t held = H.balloon_hi - H.balloon_lo;

	return (idx + BALLOON_PAGES - H.balloon_lo % BALLOON_PAGES) % BALLOON_PAGES < held;
}

/* A guest page for this vCPU to touch: the migrated VM writes its working
 * set (the first HOT_PAGES), the others anywhere; the balloon's pages are
 * left alone. */
static uint64_t guest_page(struct hv_thread *h, int write)
{
	uint64_t r = sim_xorshift(&h->rng) >> 8;
	uint64_t v = write && h->vm == VM_MIGRATED ? r % HOT_PAGES : r % GUEST_PAGES;

	if (h->vm == VM_BALLOON && v >= GUEST_PAGES - BALLOON_PAGES &&
	    inflated(v - (GUEST_PAGES - BALLOON_PAGES)))
		v = r % (GUEST_PAGES - BALLOON_PAGES);
	return GUEST_BASE + v;
}

/* A guest access; a stage-2 fault (EPT violation) exits to the hypervisor,
 * which resolves it: a write to a write-protected page of the migrated VM
 * is fast_page_fault() (W again, logged dirty); a page not mapped (one the
 * balloon took and the guest deflated) gets a fresh frame.  The vCPU then
 * retries the access, which may fault again if the page changed meanwhile
 * (the next round protected it, the balloon took it). */
static void guest_access(struct sim *s, uint32_t cpu, uint32_t vm, uint64_t vpn, int write)
{
	for (int tries = 0; sim_access(s, cpu, vm, vpn, write) == ACC_FAULT; tries++) {
		if (tries == 100) {
			fprintf(stderr, "tlbpol-sim: hypervisor: a guest access faults forever\n");
			exit(2);
		}
		sim_fault(s, cpu, vm, vpn, write ? TLBPOL_EVF_WRITE : 0, write ? GRWD : GRW);
	}
}

static int vcpu_step(struct sim *s, uint32_t cpu, struct hv_thread *h)
{
	struct sim_cpu *c = &s->cpus[cpu];

	if (H.done)
		return 0;
	if (h->last_cpu != (int32_t)cpu) {
		/* vcpu_load() on a pCPU this vCPU did not last run on:
		 * KVM_REQ_TLB_FLUSH, INVEPT all-context before VM entry. */
		if (h->last_cpu >= 0) {
			tlb_flush_all(&c->tlb, s->nkeys);
			s->cnt.local_flushes++;
			s->cnt.full_flushes++;
			sim_charge(s, cpu, s->cfg.cost.full_flush_cycles / s->cfg.cost.cpu_ghz);
		}
		h->last_cpu = (int32_t)cpu;
	}
	for (int k = 0; k < GUEST_ACCESSES; k++) {
		int write = k < GUEST_WRITES;

		guest_access(s, cpu, h->vm, guest_page(h, write), write);
	}
	sim_charge(s, cpu, GUEST_COMPUTE_NS);
	if (sim_xorshift(&h->rng) % HALT_ONE_IN == 0) {
		double ns = HALT_MIN_NS + (double)(sim_xorshift(&h->rng) % (uint64_t)HALT_SPAN_NS);

		/* HLT: halt-polling keeps the pCPU if the wake-up comes within
		 * the window and nothing else waits for it; else the vCPU
		 * blocks and wakes where the scheduler places it. */
		if (ns <= HALT_POLL_NS && !c->rq_head)
			sim_charge(s, cpu, ns);
		else
			sim_block(s, cpu, ns);
	}
	return 1;
}

/* ------------------------------------------------------------------------ */
/* The migration thread                                                     */

/*
 * One round: over each word of the dirty bitmap, write-protect the word's
 * dirty pages (writable ones: a page becomes writable only by the write
 * fault that logs it).  The engine hears one EV_PROTECT per word, from its
 * first dirty page to its last, read-only pages between them included
 * (their RO -> RO is no change): a downgrade, so a shootdown before
 * tlbpol_submit() returns, one per word.  KVM flushes once per ioctl
 * instead, since the pages it harvested are copied only after the ioctl
 * returns; the engine has no deadline for a write-protect but BY_NOW.
 */
static int migration_step(struct sim *s, uint32_t cpu, struct hv_thread *h)
{
	double t0 = s->cpus[cpu].clock;
	uint64_t dirty = 0;

	(void)h;
	if (H.rounds_done == H.rounds) {
		H.done = 1;
		return 0;
	}
	for (uint64_t w = 0; w < GUEST_PAGES / BITMAP_WORD; w++) {
		uint64_t base = GUEST_BASE + w * BITMAP_WORD, first = BITMAP_WORD, last = 0;
		uint64_t n = 0;

		sim_charge(s, cpu, SCAN_WORD_NS);
		/* From here to the submit nothing lets time pass: the
		 * word is read and protected under the MMU lock. */
		for (uint64_t i = 0; i < BITMAP_WORD; i++)
			if (sim_page(s, VM_MIGRATED, base + i, 1)->perms & SIM_W) {
				if (first == BITMAP_WORD)
					first = i;
				last = i;
				n++;
			}
		if (!n)
			continue;
		sim_change(s, cpu, VM_MIGRATED, TLBPOL_EV_PROTECT, 0, base + first,
			   last - first + 1, GRO);
		dirty += n;
	}
	/* The figure: this pass, flushes and all (main.c: busy_ns / busy_ops). */
	s->cnt.busy_ns += s->cpus[cpu].clock - t0;
	s->cnt.busy_ops++;
	H.rounds_done++;
	s->events_done++;
	/* Send what was dirty, then the next round. */
	sim_block(s, cpu, ROUND_SYNC_NS + (double)dirty * SEND_PAGE_NS);
	return 1;
}

/* ------------------------------------------------------------------------ */
/* The balloon                                                              */

/*
 * One inflate request: unmap the batch from VM 1's stage 2, one event per
 * run of pages with the same PTE bits (pages the guest never touched again
 * since an earlier inflate are not mapped), complete the flush, free the
 * frames behind it, acknowledge.
 *
 * Flags.  PRIVATE: the contents of a ballooned page die with it (the
 * device discards them; anonymous private guest RAM), so a dirty page is
 * no more urgent than a clean one and the batch is one shootdown.
 *
 * Not LAZY_OK, although the frames would allow it: they go back to the
 * host allocator only through the deferred free (sim_free_frames_later(),
 * tlbpol_defer_free()), never behind the engine's back, so no pCPU can
 * reach a frame someone else owns.  (Linux KVM cannot say as much: the
 * core mm frees the pages itself once the mmu notifier returns, which is
 * why kvm_mmu_notifier_invalidate_range_start() flushes before returning.)
 * The guest-physical addresses are what forbids it.  The device
 * acknowledges the request when this step ends, and from then on the guest
 * may deflate the pages and use them again (with free page reporting, at
 * once).  A vCPU on a pCPU that has not yet ticked or switched would still
 * write through its stale entry into the old frame, and the fresh frame
 * the next stage-2 fault installs would not have that write: guest memory
 * corrupted, though no frame was reused and the oracle (which checks
 * translations, not contents) would not see it.  LAZY_OK would be safe
 * only if the acknowledgement waited for the deferred free, which stalls
 * the guest's balloon driver for up to a tick of every pCPU.
 */
static int balloon_step(struct sim *s, uint32_t cpu, struct hv_thread *h)
{
	const uint64_t region = GUEST_BASE + GUEST_PAGES - BALLOON_PAGES;
	uint64_t vpn0, i = 0;
	double wait;

	(void)h;
	if (H.done)
		return 0;
	if (H.balloon_next < s->cpus[cpu].clock)
		H.balloon_next = s->cpus[cpu].clock; /* the first, or one that waited */
	sim_charge(s, cpu, BALLOON_REQUEST_NS);
	/* The guest gave these pages before sending the request: they are
	 * inflated (left alone by its vCPUs) from now on.  Past the most the
	 * balloon holds, the guest deflates the oldest batch. */
	vpn0 = region + H.balloon_hi % BALLOON_PAGES;
	H.balloon_hi += BALLOON_BATCH;
	if (H.balloon_hi - H.balloon_lo > BALLOON_MAX)
		H.balloon_lo += BALLOON_BATCH;
	while (i < BALLOON_BATCH) {
		uint8_t perms = sim_page(s, VM_BALLOON, vpn0 + i, 1)->perms;
		uint64_t j = i + 1;

		while (j < BALLOON_BATCH && sim_page(s, VM_BALLOON, vpn0 + j, 1)->perms == perms)
			j++;
		if (perms & SIM_P)
			sim_change(s, cpu, VM_BALLOON, TLBPOL_EV_UNMAP, TLBPOL_EVF_PRIVATE,
				   vpn0 + i, j - i, 0);
		i = j;
	}
	sim_flush(s, cpu, TLBPOL_BY_FREE);
	sim_free_frames_later(s, cpu, VM_BALLOON, vpn0, BALLOON_BATCH);
	/* The guest's driver sends a request every BALLOON_EVERY_NS, whatever
	 * the policy (so every policy unmaps about as much); one the device
	 * did not keep up with is waiting already. */
	H.balloon_next += BALLOON_EVERY_NS;
	wait = H.balloon_next - s->cpus[cpu].clock;
	sim_block(s, cpu, wait > BALLOON_REQUEST_NS ? wait : BALLOON_REQUEST_NS);
	return 1;
}

/* ------------------------------------------------------------------------ */

static int hv_step(struct sim *s, uint32_t cpu)
{
	struct sim_thread *t = sim_current(s, cpu);
	struct hv_thread *h = t->w;

	switch (h->role) {
	case HV_VCPU:
		return vcpu_step(s, cpu, h);
	case HV_MIGRATION:
		return migration_step(s, cpu, h);
	default:
		return balloon_step(s, cpu, h);
	}
}

const struct workload wl_hypervisor = {
	"hypervisor", "4 VMs on the pCPUs: one migrated, one ballooned, vCPUs moving", "-",
	TLBPOL_ARCH_X86_64, TLBPOL_RULE_BATCH, 16, 0, 0, "ns per dirty-logging round",
	hv_setup, hv_step, NULL,
};
