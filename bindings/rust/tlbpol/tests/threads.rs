//! examples/threads.c through the safe API: threads are CPUs with software
//! TLBs.  Each CPU unmaps and remaps its own pages and reads everyone's
//! through its TLB; a frame goes back to its owner's free list only from a
//! deferred free.  A read through a TLB entry to a freed frame is stale:
//! the test fails on one, and on a deferred free that runs other than
//! exactly once per registration.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Barrier, Condvar, Mutex};
use std::time::Duration;

use tlbpol::*;

const NCPU: usize = 4;
const PAGES: usize = 64; // page p belongs to CPU p % NCPU
const FRAMES: usize = 2 * PAGES; // frame f belongs to CPU f % NCPU
const STEPS: usize = 20000;

#[derive(Default)]
struct Frame {
    live: AtomicBool,
    on_freelist: AtomicBool,
    registered: AtomicU32,
    runs: AtomicU32,
    freed_twice: AtomicU32,
}

impl DeferredFree for Frame {
    fn free(&self) {
        if !self.live.swap(false, SeqCst) {
            self.freed_twice.fetch_add(1, SeqCst);
        }
        self.runs.fetch_add(1, SeqCst);
        self.on_freelist.store(true, SeqCst);
    }
}

#[derive(Default)]
struct Irq {
    pending: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

struct World {
    pte: Vec<AtomicU32>, // frame + 1; 0: not present
    frames: Vec<Frame>,
    // tlb[cpu][page]: frame + 1.  Only its own CPU's thread touches a row
    // (flush_local runs on the CPU it flushes); atomics only to be Sync.
    tlb: Vec<Vec<AtomicU32>>,
    irq: Vec<Irq>,
    stale: AtomicU64,
    done: AtomicUsize,
}

impl World {
    fn new() -> World {
        let w = World {
            pte: (0..PAGES).map(|_| AtomicU32::new(0)).collect(),
            frames: (0..FRAMES).map(|_| Frame::default()).collect(),
            tlb: (0..NCPU).map(|_| (0..PAGES).map(|_| AtomicU32::new(0)).collect()).collect(),
            irq: (0..NCPU).map(|_| Irq::default()).collect(),
            stale: AtomicU64::new(0),
            done: AtomicUsize::new(0),
        };
        for f in &w.frames {
            f.on_freelist.store(true, SeqCst);
        }
        w
    }

    fn flush_all(&self, cpu: usize) {
        for e in &self.tlb[cpu] {
            e.store(0, Relaxed);
        }
    }
}

struct SoftTlb<'w>(&'w World);

impl Host for SoftTlb<'_> {
    fn flush_local(&self, cpu: &Here<'_>, f: &Flush<'_>) {
        let c = cpu.cpu() as usize;
        if f.kind() != FlushKind::Pages {
            return self.0.flush_all(c);
        }
        for r in f.ranges() {
            assert_eq!(r.page_shift(), 12);
            for va in r.pages() {
                self.0.tlb[c][(va >> 12) as usize].store(0, Relaxed);
            }
        }
    }

    // An interrupt: raise the flag, wake the CPU if it sleeps.
    fn send_ipi(&self, _from: &Here<'_>, targets: &CpuSet) {
        for c in targets {
            let irq = &self.0.irq[c as usize];
            let _g = irq.lock.lock().unwrap();
            irq.pending.store(true, SeqCst);
            irq.wake.notify_one();
        }
    }

    // Waiting for other CPUs: take our own interrupts, let them run.
    fn relax(&self, cpu: &Here<'_>) {
        if self.0.irq[cpu.cpu() as usize].pending.swap(false, SeqCst) {
            cpu.handle_ipi().unwrap();
        }
        std::thread::yield_now();
    }
}

fn take_interrupts(w: &World, cpu: &mut Cpu<'_>) {
    if w.irq[cpu.id() as usize].pending.swap(false, SeqCst) {
        cpu.handle_ipi().unwrap();
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as usize
    }
}

/// Change our page `p`: unmap it (clear, submit, free behind the flush), or
/// map a fresh frame (submit, then store).
fn change<'e>(w: &'e World, cpu: &mut Cpu<'e>, space: &AddressSpace<'_>, p: usize, step: usize) {
    let me = cpu.id() as usize;
    let old = w.pte[p].load(SeqCst);
    let ev = Event::new(EventKind::Unmap).va((p as u64) << 12);
    if old != 0 {
        w.pte[p].store(0, SeqCst);
        cpu.submit(space, &ev.old_pte(Pte::PRESENT | Pte::ACCESSED)).unwrap();
        let frame = &w.frames[old as usize - 1];
        frame.registered.fetch_add(1, SeqCst);
        // Both kinds of deferred free: a closure (std) and a reference.
        #[cfg(feature = "std")]
        if step % 2 == 0 {
            return cpu.defer_free(move || frame.free()).unwrap();
        }
        let _ = step;
        cpu.defer_free_ref(frame).unwrap();
    } else if let Some(f) = (me..FRAMES).step_by(NCPU).find(|&f| w.frames[f].on_freelist.load(SeqCst)) {
        w.frames[f].on_freelist.store(false, SeqCst);
        let ev = Event::new(EventKind::Fault).va((p as u64) << 12).new_pte(Pte::PRESENT | Pte::ACCESSED);
        cpu.submit(space, &ev).unwrap();
        w.frames[f].live.store(true, SeqCst);
        w.pte[p].store(f as u32 + 1, SeqCst);
    }
}

/// Read page `p` through our TLB, walking the table on a miss.
fn read_page(w: &World, cpu: usize, p: usize) {
    let e = &w.tlb[cpu][p];
    if e.load(Relaxed) == 0 {
        e.store(w.pte[p].load(SeqCst), Relaxed);
    }
    let f = e.load(Relaxed);
    if f != 0 && !w.frames[f as usize - 1].live.load(SeqCst) {
        w.stale.fetch_add(1, SeqCst);
    }
}

fn run<'e>(w: &'e World, mut cpu: Cpu<'e>, space: &AddressSpace<'_>, start: &Barrier) {
    let me = cpu.id() as usize;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (me as u64 + 1));
    cpu.switch(Some(space)).unwrap();
    start.wait();
    for step in 0..STEPS {
        let r = rng.next();
        take_interrupts(w, &mut cpu);
        if r % 8 == 0 {
            change(w, &mut cpu, space, (r / 8 % (PAGES / NCPU)) * NCPU + me, step);
        } else {
            read_page(w, me, r / 8 % PAGES);
        }
        if r % 64 == 1 {
            cpu.tick().unwrap();
        }
        if r % 512 == 2 {
            // Blocked for a while: tell the engine, so nobody waits for us.
            cpu.set_state(CpuState::Preempted).unwrap();
            let irq = &w.irq[me];
            let g = irq.lock.lock().unwrap();
            if !irq.pending.load(SeqCst) {
                drop(irq.wake.wait_timeout(g, Duration::from_micros(200)).unwrap());
            }
            if cpu.set_state(CpuState::Running).unwrap() {
                w.flush_all(me);
            }
        }
    }
    cpu.flush(Deadline::Lazy).unwrap(); // everything complete, frees run
    assert_eq!(cpu.frees_pending(), Ok(0));
    // Still a CPU until all are done: the others may be waiting for us.
    w.done.fetch_add(1, SeqCst);
    while w.done.load(SeqCst) < NCPU {
        take_interrupts(w, &mut cpu);
        std::thread::yield_now();
    }
}

fn stress(rules: Rules) {
    let world = World::new();
    let host = SoftTlb(&world);
    let cfg = Config::new(NCPU as u32, Arch::X86_64).rules(rules);
    let mut mem = vec![0u8; Engine::<SoftTlb<'_>>::mem_size(&cfg)];
    let eng = Engine::init(&cfg, &host, &mut mem).unwrap();
    let space = eng.open_as(1).unwrap();
    let start = Barrier::new(NCPU);
    std::thread::scope(|s| {
        for cpu in eng.take_cpus().unwrap() {
            let (w, space, start) = (&world, &space, &start);
            s.spawn(move || run(w, cpu, space, start));
        }
    });

    let st = eng.stats(None).unwrap();
    let registered: u32 = world.frames.iter().map(|f| f.registered.load(SeqCst)).sum();
    eprintln!(
        "{}: {} CPUs, {} events, {} interrupts, {} frees of {}, {} stale",
        rules,
        NCPU,
        st.events,
        st.ipis_sent,
        st.deferred_frees,
        registered,
        world.stale.load(SeqCst)
    );
    assert_eq!(world.stale.load(SeqCst), 0, "reads through a stale TLB entry");
    assert!(registered > 1000, "too little work to mean anything: {}", registered);
    for (i, f) in world.frames.iter().enumerate() {
        assert_eq!(f.runs.load(SeqCst), f.registered.load(SeqCst), "frame {}: frees run != registered", i);
        assert_eq!(f.freed_twice.load(SeqCst), 0, "frame {} freed while already free", i);
    }
    assert_eq!(st.deferred_frees, registered as u64);
    for c in 0..NCPU as u32 {
        assert_eq!(eng.frees_pending(c), Ok(0));
    }
}

#[test]
fn threads_as_cpus_default_rules() {
    stress(Rules::DEFAULT);
}

#[test]
fn threads_as_cpus_linux_rules() {
    stress(Rules::LINUX);
}

#[test]
fn threads_as_cpus_naive() {
    stress(Rules::NONE);
}
