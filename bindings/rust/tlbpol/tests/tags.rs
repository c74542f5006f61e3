//! The tag allocators (release 0.3) through the safe API: tests/test_tags.c's
//! scenarios (per-CPU slots: hits, round-robin misses, eviction, CPUs' slots
//! their own; global generations: the first load of each CPU flushes all, a
//! rollover keeps the tags CPUs run; each configuration error; the counters),
//! then what the bindings add: caller memory of any alignment, identities
//! tied to their allocator, tokens, integers never truncated, and threads as
//! CPUs checked against a model of each CPU's TLB by tag.

use std::sync::Mutex;

use tlbpol::*;

const PERCPU: TagKind = TagKind::PerCpu;
const GLOBAL: TagKind = TagKind::Global;

/// An allocator of `cfg` in caller memory of `Tags::mem_size()` bytes,
/// leaked (as a kernel's static), so that it builds without `std` too.
fn make(cfg: TagsConfig) -> Tags<'static> {
    assert!(cfg.tags_size() > 0, "{:?}", cfg);
    Tags::init(&cfg, Vec::leak(vec![0u8; Tags::mem_size(&cfg)])).unwrap()
}

fn use_(tag: u32, flush: TagFlush) -> TagUse {
    TagUse { tag, flush }
}

/// A configuration as C's tcfg(kind, cpus, bits, first, slots), any kind.
fn raw_cfg(kind: u32, cpus: u32, bits: u32, first: u32, slots: u32) -> TagsConfig {
    let mut raw = *TagsConfig::new(PERCPU, cpus, bits).raw();
    raw.kind = kind;
    raw.first_tag = first;
    raw.nr_slots = slots;
    TagsConfig::from_raw(raw)
}

#[test]
fn config_errors() {
    let (p, g) = (sys::TLBPOL_TAGS_PERCPU, sys::TLBPOL_TAGS_GLOBAL);
    let bad = [
        (raw_cfg(2, 2, 12, 1, 6), Error::Invalid, "kind"),
        (TagsConfig::per_cpu(0, 12, 1, 6), Error::Invalid, "no CPU"),
        (TagsConfig::per_cpu(2, 0, 1, 6), Error::Invalid, "no bit"),
        (TagsConfig::global(2, 8, 1).slots(6), Error::Invalid, "slots in a pool"),
        (raw_cfg(p, sys::TLBPOL_MAX_CPUS + 1, 12, 1, 6), Error::Range, "too many CPUs"),
        (raw_cfg(p, 2, sys::TLBPOL_TAG_BITS_MAX + 1, 1, 6), Error::Range, "too wide"),
        (TagsConfig::per_cpu(2, 12, 1, 0), Error::Range, "no slot"),
        (TagsConfig::per_cpu(2, 12, 1, sys::TLBPOL_TAG_SLOTS_MAX + 1), Error::Range, "too many slots"),
        (TagsConfig::per_cpu(2, 3, 1, 8), Error::Range, "1..8 > 7"),
        (TagsConfig::per_cpu(2, 3, 8, 1), Error::Range, "first past width"),
        (raw_cfg(g, 4, 3, 4, 0), Error::Range, "4 tags, 4 CPUs"),
    ];
    let mut mem = vec![0u8; 1 << 16];
    for (cfg, err, what) in &bad {
        assert_eq!(cfg.tags_size(), 0, "{}", what);
        assert_eq!(Tags::mem_size(cfg), 0, "{}", what);
        #[cfg(feature = "std")]
        assert_eq!(Tags::new(cfg).map(drop), Err(*err), "new: {}", what);
        assert_eq!(Tags::init(cfg, &mut mem).map(drop), Err(*err), "init: {}", what);
        // The configuration's error, even with no memory to speak of.
        assert_eq!(Tags::init(cfg, &mut []).map(drop), Err(*err), "init, no memory: {}", what);
    }
    let ok = TagsConfig::global(4, 3, 3); // 5 tags > 4 CPUs
    let need = ok.tags_size();
    assert!(need > 0);
    assert_eq!(Tags::mem_size(&ok), need + 63);
    // One byte short at a 64-byte boundary: the library's -ENOMEM.
    let mut aligned = EngineMem::<4096>::new();
    assert_eq!(Tags::init(&ok, &mut aligned.bytes()[..need - 1]).map(drop), Err(Error::NoMemory));
    assert_eq!(Tags::init(&ok, &mut []).map(drop), Err(Error::NoMemory));
    assert!(Tags::init(&ok, &mut aligned.bytes()[..need]).is_ok(), "exactly tags_size() when aligned");
    // A size too small is passed on: the library's -EINVAL.
    let mut small = *ok.raw();
    small.size -= 4;
    assert_eq!(Tags::init(&TagsConfig::from_raw(small), &mut aligned.bytes()[..]).map(drop), Err(Error::Invalid));
    let t = make(ok);
    assert_eq!((t.kind(), t.nr_cpus()), (Some(GLOBAL), 4));
}

/// `Tags::new`: 64-byte aligned memory of its own, freed when dropped.
#[cfg(feature = "std")]
#[test]
fn owned_memory() {
    let cfg = TagsConfig::global(4, 8, 1);
    for _ in 0..3 {
        let mut t = Tags::new(&cfg).unwrap();
        assert_eq!(t.raw() as usize % 64, 0);
        let id = t.new_id().unwrap();
        assert_eq!(t.load(3, &id), Ok(TagUse { tag: 1, flush: TagFlush::All }));
        let mut small = *cfg.raw();
        small.size -= 4;
        assert_eq!(Tags::new(&TagsConfig::from_raw(small)).map(drop), Err(Error::Invalid));
    }
}

/// A buffer of any alignment is aligned by init: mem_size() bytes suffice
/// at every offset.
#[test]
fn caller_memory_of_any_alignment() {
    let cfg = TagsConfig::per_cpu(3, 12, 1, 6);
    let n = Tags::mem_size(&cfg);
    let mut buf = vec![0u8; n + 64];
    for off in 0..64 {
        let mut tags = Tags::init(&cfg, &mut buf[off..off + n]).unwrap();
        assert_eq!(tags.raw() as usize % 64, 0, "offset {}", off);
        let id = tags.new_id().unwrap();
        assert_eq!(tags.load(2, &id), Ok(use_(1, TagFlush::Tag)));
    }
}

/// Linux x86's six PCIDs 1..6 per CPU: hits, round-robin misses.
#[test]
fn percpu() {
    let mut t = make(TagsConfig::per_cpu(2, 12, 1, 6));
    assert_eq!(t.kind(), Some(PERCPU));
    let id: Vec<TagId> = (0..8).map(|_| t.new_id().unwrap()).collect();
    for i in &id {
        assert_eq!(t.tag_of(0, i), Ok(None));
    }
    // Six misses fill the six slots, each flushed.
    for (i, x) in id[..6].iter().enumerate() {
        assert_eq!(t.load(0, x), Ok(use_(1 + i as u32, TagFlush::Tag)));
    }
    // Hits, in any order, flush nothing.
    for (i, x) in id[..6].iter().enumerate().rev() {
        assert_eq!(t.load(0, x), Ok(use_(1 + i as u32, TagFlush::None)));
        assert_eq!(t.tag_of(0, x), Ok(Some(1 + i as u32)));
    }
    // The seventh takes slot 1 (PCID 1) from id[0], flushed: id[0] has no
    // tag there any more, and takes the next slot, flushed.
    assert_eq!(t.load(0, &id[6]), Ok(use_(1, TagFlush::Tag)));
    assert_eq!(t.tag_of(0, &id[0]), Ok(None));
    assert_eq!(t.load(0, &id[0]), Ok(use_(2, TagFlush::Tag)));
    assert_eq!(t.tag_of(0, &id[1]), Ok(None), "id[1] lost PCID 2");
    // CPU 1's slots are its own.
    assert_eq!(t.tag_of(1, &id[0]), Ok(None));
    assert_eq!(t.load(1, &id[5]), Ok(use_(1, TagFlush::Tag)));
    assert_eq!(t.tag_of(0, &id[5]), Ok(Some(6)));
    assert_eq!(t.tag_of(1, &id[5]), Ok(Some(1)));
    // Refusals: a CPU the allocator does not have.
    assert_eq!(t.load(2, &id[0]), Err(Error::Range));
    assert_eq!(t.tag_of(2, &id[0]), Err(Error::Range));
    assert_eq!(t.load(u32::MAX, &id[0]), Err(Error::Range));
    // Counters: 6 + 6 + 2 loads on CPU 0 (8 flushed), 1 on CPU 1.
    let s0 = t.stats(Some(0)).unwrap();
    assert_eq!((s0.loads, s0.tag_flushes, s0.all_flushes, s0.rollovers), (14, 8, 0, 0));
    let all = t.stats(None).unwrap();
    assert_eq!((all.loads, all.tag_flushes), (15, 9));
    assert_eq!(usize::try_from(all.size).unwrap(), std::mem::size_of::<sys::tlbpol_tags_stats>());
}

/// Global generations, tags 1..7 (3 bits, 0 the host's) on 2 CPUs: the
/// first load of each CPU flushes all; then loads are free until the pool
/// runs out; the eighth identity rolls over.  CPU 1 runs id[1] then, so
/// id[1] keeps tag 2 in the new generation, and nobody else gets it.
#[test]
fn global_rollover() {
    let mut t = make(TagsConfig::global(2, 3, 1));
    let id: Vec<TagId> = (0..9).map(|_| t.new_id().unwrap()).collect();
    assert_eq!(t.tag_of(0, &id[0]), Ok(None), "never loaded");
    assert_eq!(t.load(0, &id[0]), Ok(use_(1, TagFlush::All)));
    assert_eq!(t.load(1, &id[1]), Ok(use_(2, TagFlush::All)));
    // One tag on every CPU.
    assert_eq!(t.load(1, &id[0]), Ok(use_(1, TagFlush::None)));
    assert_eq!(t.tag_of(0, &id[0]), Ok(Some(1)));
    assert_eq!(t.tag_of(1, &id[0]), Ok(Some(1)));
    t.load(1, &id[1]).unwrap();
    for (i, x) in id.iter().enumerate().take(7).skip(2) {
        assert_eq!(t.load(0, x), Ok(use_(1 + i as u32, TagFlush::None)));
    }
    assert_eq!(t.stats(None).unwrap().rollovers, 0);
    // The pool is empty: a rollover.  CPU 0 ran id[6] (tag 7), CPU 1 id[1]
    // (tag 2): both stay taken; id[7] gets the first free one.
    assert_eq!(t.load(0, &id[7]), Ok(use_(1, TagFlush::All)));
    let s = t.stats(None).unwrap();
    assert_eq!((s.rollovers, s.all_flushes), (1, 3));
    // id[0] had tag 1 in the old generation: now taken, another one.
    assert_eq!(t.load(0, &id[0]), Ok(use_(3, TagFlush::None)));
    // id[1], reserved by CPU 1, keeps tag 2; CPU 1 flushes all first.
    assert_eq!(t.load(1, &id[1]), Ok(use_(2, TagFlush::All)));
    // id[6], reserved by CPU 0, keeps 7 wherever it runs.
    assert_eq!(t.load(1, &id[6]), Ok(use_(7, TagFlush::None)));
    // The per-CPU counters.
    let s1 = t.stats(Some(1)).unwrap();
    assert_eq!((s1.loads, s1.all_flushes, s1.rollovers), (5, 2, 0));
    let s0 = t.stats(Some(0)).unwrap();
    assert_eq!((s0.loads, s0.all_flushes, s0.rollovers), (8, 2, 1));
}

/// Global tags beside per-CPU slots (tests/test_tags.c's
/// test_percpu_global): 4-bit tags, slots 1..3 on each of 2 CPUs, global
/// tags 14 and 15.
#[test]
fn percpu_global() {
    let c = TagsConfig::per_cpu(2, 4, 1, 3);
    assert_eq!(c.global_tags(13).tags_size(), 0, "3 slots + 13 > 15 tags");
    let mut t = make(c.global_tags(2));
    let a = t.new_id().unwrap();
    let b = t.new_id().unwrap();
    let d = t.new_id().unwrap();
    assert_eq!(t.load(0, &a).unwrap().tag, 1);
    assert_eq!(t.global_of(&a), Ok(None));
    assert_eq!(t.make_global(&a), Ok(14));
    assert_eq!(t.make_global(&a), Err(Error::Exists), "the library's -EEXIST, not the tag");
    assert_eq!(t.global_of(&a), Ok(Some(14)));
    // CPU 0 still runs it under its slot until its next load.
    assert_eq!(t.tag_of(0, &a), Ok(Some(1)));
    assert_eq!(t.load(0, &a), Ok(use_(14, TagFlush::All)));
    assert_eq!(t.tag_of(0, &a), Ok(Some(14)));
    assert_eq!(t.load(0, &a).unwrap().flush, TagFlush::None);
    assert_eq!(t.load(1, &a), Ok(use_(14, TagFlush::All)));
    // The slot CPU 0 gave up is taken again with its flush.
    assert_eq!(t.load(0, &b), Ok(use_(2, TagFlush::Tag)));
    assert_eq!(t.make_global(&b), Ok(15));
    assert_eq!(t.make_global(&d), Err(Error::Other(sys::errno::ENOSPC)));
    assert_eq!(t.make_global(&d).unwrap_err().errno(), sys::errno::ENOSPC);
    // a goes: 14 is handed out again only after a flush of all.  release()
    // takes a, so C's next two lines (a has no global tag, and a second
    // release is 0) cannot be written: a is gone (TagId's compile_fail
    // example shows that it cannot be loaded again).
    t.release(a).unwrap();
    assert_eq!(t.make_global(&d), Ok(14));
    assert_eq!(t.load(1, &d), Ok(use_(14, TagFlush::All)));
    assert_eq!(t.load(1, &b), Ok(use_(15, TagFlush::None)));
    assert_eq!(t.load(0, &d).unwrap().flush, TagFlush::All);
    // An identity without a global tag is released too (nothing to give
    // back), as are b and d, whose tags are free again for the next
    // recycling.
    let e = t.new_id().unwrap();
    t.release(e).unwrap();
    t.release(b).unwrap();
    t.release(d).unwrap();
    let f = t.new_id().unwrap();
    assert_eq!(t.make_global(&f), Ok(14));

    // Refusals (C's NULL arguments have no safe spelling here): no global
    // tags; a Global allocator, whose release is a no-op; global tags in
    // a Global configuration.
    let t = make(TagsConfig::per_cpu(2, 4, 1, 3));
    let a = t.new_id().unwrap();
    assert_eq!(t.make_global(&a), Err(Error::Invalid));
    assert_eq!(t.global_of(&a), Ok(None));
    let t = make(TagsConfig::global(2, 4, 1));
    let a = t.new_id().unwrap();
    assert_eq!(t.make_global(&a), Err(Error::Invalid));
    assert_eq!(t.global_of(&a), Ok(None));
    t.release(a).unwrap();
    let g = TagsConfig::global(2, 4, 1).global_tags(1);
    assert_eq!(g.tags_size(), 0);
    assert_eq!(Tags::init(&g, &mut [0u8; 4096]).map(drop), Err(Error::Invalid));
    let g = TagsConfig::global(2, 4, 1).global_min_cpus(2);
    assert_eq!(Tags::init(&g, &mut [0u8; 4096]).map(drop), Err(Error::Invalid));
}

/// Global tags are refused for an identity of another allocator, which
/// release() gives back unreleased; nothing moves in either allocator.
#[test]
fn global_tags_of_another_allocator() {
    let a = make(TagsConfig::per_cpu(2, 4, 1, 3).global_tags(2));
    let b = make(TagsConfig::per_cpu(2, 4, 1, 3).global_tags(2));
    let xa = a.new_id().unwrap();
    let xb = b.new_id().unwrap();
    // xa's word equals xb's: C alone would give xb a global tag.
    assert_eq!(b.make_global(&xa), Err(Error::Invalid));
    assert_eq!(b.global_of(&xa), Err(Error::Invalid));
    assert_eq!(b.global_of(&xb), Ok(None), "xb untouched");
    assert_eq!(a.make_global(&xa), Ok(14));
    let (err, xa) = b.release(xa).unwrap_err();
    assert_eq!(err, Error::Invalid);
    assert_eq!(a.global_of(&xa), Ok(Some(14)), "given back unreleased");
    assert_eq!(b.make_global(&xb), Ok(14), "b's first global tag still free");
    a.release(xa).unwrap();
}

/// The counters' structure: written up to its size; the CPU argument.
#[test]
fn stats_sizes() {
    let mut t = make(TagsConfig::per_cpu(2, 12, 1, 6));
    let id = t.new_id().unwrap();
    t.load(0, &id).unwrap();
    t.load(0, &id).unwrap();
    let s = t.stats(Some(0)).unwrap();
    assert_eq!((s.loads, s.tag_flushes, s.pad), (2, 1, 0));
    assert_eq!(t.stats(Some(1)).unwrap().loads, 0);
    assert_eq!(t.stats(Some(2)).map(drop), Err(Error::Range));
    // Through the raw bindings: a size of 16 gets loads only.
    #[repr(C)]
    struct Words {
        size: u32,
        pad: u32,
        w: [u64; 7],
    }
    let mut words = Words { size: 16, pad: 0, w: [0xa5a5_a5a5_a5a5_a5a5; 7] };
    // SAFETY: words starts as the structure does (size, pad, then u64s) and
    // is larger; its size says 16, so the call writes 16 bytes at most.
    let r = unsafe { sys::tlbpol_tags_stats_read(t.raw(), -1, (&mut words as *mut Words).cast()) };
    assert_eq!((r, words.size, words.w[0], words.w[1]), (0, 16, 2, 0xa5a5_a5a5_a5a5_a5a5));
    let mut st = sys::tlbpol_tags_stats { size: 4, ..Default::default() };
    // SAFETY: st is a whole structure; its size (4) is refused before any write.
    assert_eq!(unsafe { sys::tlbpol_tags_stats_read(t.raw(), 0, &mut st) }, -sys::errno::EINVAL);
}

/// E2BIG, which the safe API cannot reach (its size is always the
/// structure's, a larger one is refused before C): a larger size-led
/// structure with a nonzero byte past it.
#[test]
fn raw_larger_config() {
    #[repr(C)]
    struct Big {
        c: sys::tlbpol_tags_config,
        future: u32,
    }
    let mut big = Big { c: *TagsConfig::global(4, 3, 3).raw(), future: 1 };
    big.c.size = u32::try_from(std::mem::size_of::<Big>()).unwrap();
    let mut mem = EngineMem::<4096>::new();
    let mut out = std::ptr::null_mut();
    let (p, n) = (mem.bytes().as_mut_ptr().cast(), mem.bytes().len());
    // SAFETY: big is size bytes as its size says; mem is 64-byte aligned, n
    // bytes, ours; out is a local.
    assert_eq!(unsafe { sys::tlbpol_tags_init(&mut out, p, n, &big.c) }, -sys::errno::E2BIG);
    assert!(out.is_null());
    big.future = 0;
    // SAFETY: as above.
    assert_eq!(unsafe { sys::tlbpol_tags_init(&mut out, p, n, &big.c) }, 0);
    assert!(!out.is_null());
    // The safe API refuses the larger size before C, zero tail or not.
    assert_eq!(TagsConfig::from_raw(big.c).tags_size(), 0);
    assert_eq!(Tags::init(&TagsConfig::from_raw(big.c), mem.bytes()).map(drop), Err(Error::Invalid));
}

/// An identity belongs to the allocator that made it: another one refuses
/// it (its word could be one of its own identities'), and changes nothing.
#[test]
fn identities_are_their_allocators() {
    let mut a = make(TagsConfig::per_cpu(2, 12, 1, 6));
    let mut b = make(TagsConfig::per_cpu(2, 12, 1, 6));
    let xa = a.new_id().unwrap();
    let xb = b.new_id().unwrap();
    assert_eq!(b.load(0, &xb), Ok(use_(1, TagFlush::Tag)));
    // xa's word equals xb's (each allocator's first identity): C alone
    // would take it for xb and hand it xb's PCID unflushed.
    assert_eq!(b.load(0, &xa), Err(Error::Invalid));
    assert_eq!(b.tag_of(0, &xa), Err(Error::Invalid));
    let mut cpus = b.take_cpus().unwrap();
    assert_eq!(cpus.next().unwrap().load(&xa), Err(Error::Invalid));
    assert_eq!(b.stats(None).unwrap().loads, 1, "nothing loaded");
    assert_eq!(a.load(0, &xa), Ok(use_(1, TagFlush::Tag)));
    // An identity may move between calls: the library keeps no pointer to it.
    let moved = Box::new(xa);
    assert_eq!(a.load(0, &moved), Ok(use_(1, TagFlush::None)));
    let back = *moved;
    assert_eq!(a.tag_of(0, &back), Ok(Some(1)));
}

#[test]
fn tokens_once_per_allocator() {
    let t = make(TagsConfig::global(3, 8, 1));
    let id = t.new_id().unwrap();
    let mut cpus: Vec<TagCpu<'_>> = t.take_cpus().unwrap().collect();
    assert_eq!(cpus.iter().map(TagCpu::id).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(t.take_cpus().map(drop), Err(Error::Busy));
    assert_eq!(cpus[2].load(&id), Ok(use_(1, TagFlush::All)));
    assert_eq!(cpus[0].load(&id), Ok(use_(1, TagFlush::All)));
    assert_eq!(cpus[0].load(&id), Ok(use_(1, TagFlush::None)));
    assert_eq!(cpus[1].tag_of(&id), Ok(Some(1)), "global: one tag everywhere");
    // SAFETY: no other token for CPU 7 exists (the allocator has none).
    let mut c7 = unsafe { t.cpu_unchecked(7) };
    assert_eq!(c7.load(&id), Err(Error::Range));
    assert_eq!(format!("{:?} {:?}", cpus[1], t), "TagCpu(1) Tags { kind: Some(Global), nr_cpus: 3 }");
}

/// Threads as CPUs, each with its token, loading identities shared by all
/// (`&TagId` across threads), checked against a model of each CPU's TLB by
/// tag as tests/tag_stress.c does: after the flush a load asks for, the
/// tag it gives holds no other address space's entries.
fn stress(cfg: TagsConfig, ids: usize, loads: u32) {
    const UNKNOWN: usize = usize::MAX; // what boot left under a tag
    const CLEAN: usize = usize::MAX - 1;
    let tags = make(cfg);
    let id: Vec<TagId> = (0..ids).map(|_| tags.new_id().unwrap()).collect();
    let width = 1usize << cfg.raw().tag_bits;
    let violations = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for mut cpu in tags.take_cpus().unwrap() {
            let (id, violations) = (&id, &violations);
            s.spawn(move || {
                let mut tlb = vec![UNKNOWN; width];
                let mut seed = u64::from(cpu.id()).wrapping_mul(0x9e37_79b9_7f4a_7c15) + 1;
                for _ in 0..loads {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let x = usize::try_from(seed % ids as u64).unwrap();
                    let u = cpu.load(&id[x]).unwrap();
                    let tag = usize::try_from(u.tag).unwrap();
                    match u.flush {
                        TagFlush::All => tlb.iter_mut().for_each(|e| *e = CLEAN),
                        TagFlush::Tag => tlb[tag] = CLEAN,
                        TagFlush::None => {}
                    }
                    if tlb[tag] != CLEAN && tlb[tag] != x {
                        violations.lock().unwrap().push((cpu.id(), u, x, tlb[tag]));
                    }
                    tlb[tag] = x;
                    assert_eq!(cpu.tag_of(&id[x]), Ok(Some(u.tag)), "the tag just loaded");
                    std::thread::yield_now();
                }
            });
        }
    });
    let v = violations.into_inner().unwrap();
    assert!(v.is_empty(), "{} violations, first {:?}", v.len(), v.first());
    let s = tags.stats(None).unwrap();
    assert_eq!(s.loads, u64::from(loads) * u64::from(tags.nr_cpus()));
    if cfg.kind() == Some(GLOBAL) {
        assert!(s.rollovers > 0, "{:?}", *s);
    } else {
        assert!(s.tag_flushes > 0 && s.all_flushes == 0, "{:?}", *s);
    }
}

#[test]
fn threads_as_cpus_global() {
    stress(TagsConfig::global(4, 4, 1), 24, 3000);
}

#[test]
fn threads_as_cpus_percpu() {
    stress(TagsConfig::per_cpu(4, 12, 1, 6), 16, 3000);
}

/// Tags, its tokens and identities cross threads as the types say.
#[test]
fn send_and_sync() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Tags<'static>>();
    sync::<Tags<'static>>();
    send::<TagCpu<'static>>();
    send::<TagId>();
    sync::<TagId>();
}
