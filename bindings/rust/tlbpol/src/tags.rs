//! Tag allocators (release 0.3): which hardware tag (PCID, ASID, VMID) a
//! CPU loads to run an address space, and what it must flush first.

use core::cell::{Cell, UnsafeCell};
use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tlbpol_sys as sys;
use tlbpol_sys::c_void;

use crate::types::{c_enum, check, setters, size_field, Error, Result};

c_enum! {
    /// `TLBPOL_TAGS_*`: how a [`Tags`] allocator hands out tags.
    ///
    /// - `PerCpu`: each CPU has `nr_slots` tags of its own (`first_tag ..
    ///   first_tag + nr_slots - 1`), each slot remembering the address
    ///   space it last served, reused round-robin (Linux x86's six PCIDs
    ///   per CPU).  One address space has different tags on different
    ///   CPUs; a slot taken from another address space is flushed
    ///   ([`TagFlush::Tag`]).  Optionally with global tags beside the
    ///   slots ([`TagsConfig::global_tags`], [`Tags::make_global`]): the
    ///   last tags of the width, each one address space's on every CPU, so
    ///   that a broadcast by tag reaches them all (Linux 6.15's global
    ///   ASIDs for INVLPGB).
    /// - `Global`: one tag per address space on every CPU, from a pool
    ///   `first_tag .. 2^tag_bits - 1`; when it runs out, a rollover starts
    ///   a new generation: every CPU flushes everything
    ///   ([`TagFlush::All`]) before it loads a tag of the new one, and the
    ///   tags CPUs run at that moment stay their address spaces' (arm64
    ///   ASIDs, KVM VMIDs).
    TagKind {
        PerCpu = TLBPOL_TAGS_PERCPU, Global = TLBPOL_TAGS_GLOBAL,
    }
    /// `TLBPOL_TAG_FLUSH_*`: what a CPU must flush before it uses the tag
    /// a load gave ([`TagUse::flush`]), as part of the same switch.
    ///
    /// - `None`: nothing for the tag's sake.
    /// - `Tag`: every entry of the tag (the slot served another address
    ///   space): x86 CR3 without bit 63 or INVPCID type 1, arm64 TLBI
    ///   ASIDE1, RISC-V sfence.vma with the ASID, INVVPID type 1.
    /// - `All`: every non-global entry of every tag (a rollover): arm64
    ///   TLBI VMALLE1, x86 INVPCID type 3, RISC-V sfence.vma x0, x0; for
    ///   VMIDs every guest's.
    TagFlush {
        None = TLBPOL_TAG_FLUSH_NONE, Tag = TLBPOL_TAG_FLUSH_TAG, All = TLBPOL_TAG_FLUSH_ALL,
    }
}

/// `sizeof(struct tlbpol_tags_config)` as its `size` field says it.
const CONFIG_SIZE: u32 = size_field(core::mem::size_of::<sys::tlbpol_tags_config>());
/// `sizeof(struct tlbpol_tags_stats)` as its `size` field says it.
const STATS_SIZE: u32 = size_field(core::mem::size_of::<sys::tlbpol_tags_stats>());
/// The alignment the library wants of an allocator's memory.
const TAGS_ALIGN: usize = 64;

/// How to build a tag allocator (`struct tlbpol_tags_config`, release 0.3).
///
/// Nothing is checked here: [`Tags::init`] and `Tags::new` hand the values
/// to the library as given, which refuses a bad one (`Error::Invalid` for
/// no CPU or no tag bit, or slots, global tags or `global_min_cpus` given
/// to `Global`; `Error::Range` for more CPUs than `TLBPOL_MAX_CPUS`, more
/// than `TLBPOL_TAG_BITS_MAX` bits, no slot or more than
/// `TLBPOL_TAG_SLOTS_MAX` for `PerCpu`, a first tag, slots or global tags
/// past the width, or a `Global` pool no larger than the number of CPUs).  Its `size` is always `sizeof(struct tlbpol_tags_config)`
/// (one set through [`TagsConfig::from_raw`] that claims more is refused
/// here, `Error::Invalid`, as an [`Event`](crate::Event)'s is).
///
/// ```
/// use tlbpol::{TagFlush, TagKind, Tags, TagsConfig};
/// // Linux x86: PCIDs 1..6 on each of 4 CPUs (12-bit PCIDs, PCID 0 the kernel's).
/// let cfg = TagsConfig::per_cpu(4, 12, 1, 6);
/// assert_eq!(cfg.kind(), Some(TagKind::PerCpu));
/// let mut mem = vec![0u8; Tags::mem_size(&cfg)];
/// let mut tags = Tags::init(&cfg, &mut mem)?;
/// let mm = tags.new_id()?;
/// let u = tags.load(0, &mm)?;
/// assert_eq!((u.tag, u.flush), (1, TagFlush::Tag)); // a slot's first use flushes it
/// assert_eq!(tags.load(0, &mm)?.flush, TagFlush::None);
/// assert_eq!(tags.tag_of(0, &mm)?, Some(1));
/// assert_eq!(tags.tag_of(1, &mm)?, None); // never loaded on CPU 1
/// # Ok::<(), tlbpol::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TagsConfig {
    raw: sys::tlbpol_tags_config,
}

impl TagsConfig {
    /// An allocator of `kind` for `nr_cpus` CPUs and tags of `tag_bits`
    /// bits, handing out tags from 0, no slots (set them with
    /// [`TagsConfig::slots`] for `PerCpu`).
    pub fn new(kind: TagKind, nr_cpus: u32, tag_bits: u32) -> TagsConfig {
        TagsConfig {
            raw: sys::tlbpol_tags_config {
                size: CONFIG_SIZE,
                kind: kind.raw(),
                nr_cpus,
                tag_bits,
                first_tag: 0,
                nr_slots: 0,
                nr_global: 0,
                global_min_cpus: 0,
            },
        }
    }
    /// `TLBPOL_TAGS_PERCPU`: `nr_slots` tags per CPU from `first_tag`.
    pub fn per_cpu(nr_cpus: u32, tag_bits: u32, first_tag: u32, nr_slots: u32) -> TagsConfig {
        TagsConfig::new(TagKind::PerCpu, nr_cpus, tag_bits).first_tag(first_tag).slots(nr_slots)
    }
    /// `TLBPOL_TAGS_GLOBAL`: one pool, `first_tag .. 2^tag_bits - 1`, which
    /// must hold more tags than `nr_cpus`.
    pub fn global(nr_cpus: u32, tag_bits: u32, first_tag: u32) -> TagsConfig {
        TagsConfig::new(TagKind::Global, nr_cpus, tag_bits).first_tag(first_tag)
    }
    /// A configuration from the C structure as is (for a kind these
    /// bindings do not name, or to test the library's checks).
    pub fn from_raw(raw: sys::tlbpol_tags_config) -> TagsConfig {
        TagsConfig { raw }
    }
    setters! {
        Self;
        /// The first tag handed out; those below are the host's (x86: PCID
        /// 0 for the kernel; arm64: ASID 0, the reserved TTBR0's).
        first_tag(tag: u32) => first_tag = tag;
        /// `PerCpu`: tags per CPU, 1 ..= `TLBPOL_TAG_SLOTS_MAX`, with
        /// `first_tag + nr_slots + nr_global <= 2^tag_bits`.  `Global`: 0.
        slots(nr_slots: u32) => nr_slots = nr_slots;
        /// `nr_global` (release 0.3), `PerCpu`: the last `nr_global` tags
        /// of the width are global tags beside the slots, each one address
        /// space's on every CPU ([`Tags::make_global`]), so that one
        /// broadcast naming it (INVLPGB with its PCID) reaches every CPU
        /// that runs it; 0 (the default): none.  An engine using the
        /// allocator gives them out itself.  `Global`: 0.
        global_tags(nr_global: u32) => nr_global = nr_global;
        /// `global_min_cpus` (release 0.3), `PerCpu` with global tags: an
        /// engine gives an address space a global tag once it is loaded on
        /// this many CPUs; 0 (the default) means 4 (Linux 6.15's
        /// threshold); twice as many once half the global tags are taken,
        /// four times once three quarters are.  `Global`: 0.
        global_min_cpus(cpus: u32) => global_min_cpus = cpus;
    }
    /// The kind, `None` for a code these bindings do not know (possible
    /// only through [`TagsConfig::from_raw`]).
    pub fn kind(&self) -> Option<TagKind> {
        TagKind::from_raw(self.raw.kind)
    }
    /// The C structure.
    pub fn raw(&self) -> &sys::tlbpol_tags_config {
        &self.raw
    }
    /// The C structure to pass to the library: `Error::Invalid` if its
    /// `size` claims bytes past the structure (C would read them); a
    /// smaller size is passed on, for the library to refuse.
    fn for_c(&self) -> Result<&sys::tlbpol_tags_config> {
        if self.raw.size > CONFIG_SIZE {
            return Err(Error::Invalid);
        }
        Ok(&self.raw)
    }
    /// `tlbpol_tags_size()`: bytes of 64-byte aligned memory an allocator
    /// of this configuration needs; 0 for one the library refuses (then
    /// building it says why).
    pub fn tags_size(&self) -> usize {
        match self.for_c() {
            // SAFETY: cfg is a whole tlbpol_tags_config whose size claims no
            // byte past it (for_c()), borrowed for the call, which only reads
            // it and may run anywhere.
            Ok(cfg) => unsafe { sys::tlbpol_tags_size(cfg) },
            Err(_) => 0,
        }
    }
}

/// 64 bytes at a 64-byte boundary: where `tlbpol_tags_init()` is asked for
/// a configuration's error when there is no memory to give it.
#[repr(C, align(64))]
struct Aligned([u8; TAGS_ALIGN]);

/// `tlbpol_tags_init()` of `cfg` in the `len` bytes at `mem`.
///
/// # Safety
/// `mem` is 64-byte aligned with `len` bytes behind it that nothing else
/// uses for as long as the allocator is in use.
unsafe fn init_at(cfg: &TagsConfig, mem: *mut u8, len: usize) -> Result<NonNull<sys::tlbpol_tags>> {
    let raw_cfg = cfg.for_c()?;
    let mut out = ptr::null_mut();
    // SAFETY: mem is 64-byte aligned with len bytes that are the allocator's
    // from now on (the caller's contract); raw_cfg is a whole configuration
    // whose size claims no byte past it (for_c()), copied by the call, which
    // writes only out and at most len bytes at mem, and may run anywhere.
    check(unsafe { sys::tlbpol_tags_init(&mut out, mem.cast::<c_void>(), len, raw_cfg) })?;
    NonNull::new(out).ok_or(Error::Invalid)
}

/// The library's error for `cfg` when there is no memory to build it in:
/// its configuration's (checked before the length), else `NoMemory`.
fn config_error(cfg: &TagsConfig) -> Error {
    let mut none = Aligned([0; TAGS_ALIGN]);
    // SAFETY: none is 64-byte aligned, ours, and offered as 0 bytes: the call
    // writes nothing at it, and it dies with this frame, past the call.
    match unsafe { init_at(cfg, none.0.as_mut_ptr(), 0) } {
        Err(e) => e,
        // Cannot happen (no allocator fits in 0 bytes): not a success either.
        Ok(_) => Error::NoMemory,
    }
}

/// Each allocator's brand, which its [`TagId`]s carry: an identity used
/// with another allocator is refused (`Error::Invalid`), never loaded.
static NEXT_BRAND: AtomicUsize = AtomicUsize::new(1);

/// A tag allocator (`struct tlbpol_tags`, release 0.3): PCIDs, ASIDs or
/// VMIDs for address spaces, and what each CPU must flush before it loads
/// one.  They are optional: an [`Engine`](crate::Engine)'s address spaces
/// keep whatever tag the host gives `open_as`, which may be the one this
/// allocator gives; or the engine uses one itself
/// ([`Engine::init_with_tags`](crate::Engine::init_with_tags), which
/// borrows it exclusively, or `Engine::new_with_tags`, which owns it), and
/// its CPUs switch with [`Cpu::switch_tag`](crate::Cpu::switch_tag).
///
/// Built in caller memory with [`Tags::init`] (`no_std`, nothing
/// allocated), or owning 64-byte aligned memory from the global allocator
/// with `Tags::new` (`std`), freed when it is dropped (the library needs
/// no call to release it).  `'m` is the borrow of the caller's memory; an
/// owning allocator is `Tags<'static>`.
///
/// Each address space has a [`TagId`] from [`Tags::new_id`]; at every
/// switch to it, a CPU loads the tag its load returns ([`TagCpu::load`]),
/// after the flush it says.  A flush for the address space on a CPU names
/// the tag [`Tags::tag_of`] gives.
///
/// # Who may call what
/// The header's rule -- a CPU's loads never run concurrently (one CPU
/// switches at a time, interrupts off, never from an interrupt handler
/// that interrupted a load) -- is carried by the types as for an engine's
/// calls: loads are made through a per-CPU token, [`TagCpu`], taking
/// `&mut self`, of which [`Tags::take_cpus`] hands out one per CPU, once;
/// or through `&mut Tags` ([`Tags::load`]), when no token is alive.  The
/// other calls may run anywhere: `new_id`, `tag_of`, `stats`.
///
/// # Send and Sync
/// Both.  Through `&Tags` only the calls the header marks "any" are made
/// (`TLBPOL_TAGS_GLOBAL` loads synchronise with each other by atomics and
/// a lock inside the library, `PerCpu` ones touch only their own CPU's
/// slots), and loads for one CPU need its one token or `&mut Tags`.  The
/// allocator is plain memory, not tied to a thread.
pub struct Tags<'m> {
    raw: NonNull<sys::tlbpol_tags>,
    kind: u32,
    nr_cpus: u32,
    brand: usize,
    cpus_taken: AtomicBool,
    #[cfg(feature = "std")]
    owned: Option<(NonNull<u8>, std::alloc::Layout)>,
    _m: PhantomData<&'m mut [u8]>,
}

// SAFETY: see "Send and Sync" above: &Tags reaches tlbpol_tag_id_init(),
// tlbpol_tag_of() and tlbpol_tags_stats_read(), which the header allows from
// any context (tags.c: atomics for every word another CPU's call may write or
// read: the identity counter, each CPU's slots and active word, the
// counters), and take_cpus(), whose atomic flag hands each CPU's token out
// once; loads need that token (&mut TagCpu) or &mut Tags.
unsafe impl<'m> Sync for Tags<'m> {}
// SAFETY: the allocator keeps no per-thread state: it is the caller's
// buffer (&'m mut [u8], Send) or memory from the global allocator, which any
// thread may free.
unsafe impl<'m> Send for Tags<'m> {}

impl<'m> Tags<'m> {
    /// Bytes [`Tags::init`] needs for `cfg` in a buffer of any alignment:
    /// `tlbpol_tags_size()` and 63 bytes of alignment slack.  0 for a
    /// configuration the library refuses (then `init` says why).
    pub fn mem_size(cfg: &TagsConfig) -> usize {
        match cfg.tags_size() {
            0 => 0,
            n => n.saturating_add(TAGS_ALIGN - 1),
        }
    }

    /// `tlbpol_tags_init()`: an allocator of `cfg` in `mem`, which it
    /// borrows for as long as it lives (aligned to 64 bytes here: give it
    /// [`Tags::mem_size`] bytes, or `cfg.tags_size()` at a 64-byte
    /// boundary).  Allocates nothing.  Errors: the configuration's (see
    /// [`TagsConfig`]), then `Error::NoMemory` if `mem` is too small.
    pub fn init(cfg: &TagsConfig, mem: &'m mut [u8]) -> Result<Tags<'m>> {
        let start = mem.as_mut_ptr();
        let skip = start.align_offset(TAGS_ALIGN);
        if skip > mem.len() {
            // Not even one aligned byte: the configuration's error first,
            // as the library answers (usize::MAX: cannot align at all).
            return Err(config_error(cfg));
        }
        // SAFETY: skip <= mem.len(), so start + skip is inside mem or one past
        // its end, and 64-byte aligned (align_offset); the mem.len() - skip
        // bytes behind it are mem's, borrowed exclusively for 'm, which the
        // Tags returned holds.
        let raw = unsafe { init_at(cfg, start.add(skip), mem.len() - skip)? };
        Ok(Tags::from_raw_parts(raw, cfg))
    }

    fn from_raw_parts(raw: NonNull<sys::tlbpol_tags>, cfg: &TagsConfig) -> Tags<'m> {
        Tags {
            raw,
            kind: cfg.raw.kind,
            nr_cpus: cfg.raw.nr_cpus,
            brand: NEXT_BRAND.fetch_add(1, Ordering::Relaxed),
            cpus_taken: AtomicBool::new(false),
            #[cfg(feature = "std")]
            owned: None,
            _m: PhantomData,
        }
    }

    /// The C allocator, for calls this crate does not wrap.
    pub fn raw(&self) -> *mut sys::tlbpol_tags {
        self.raw.as_ptr()
    }

    /// The kind it was built as (`None` for one these bindings do not
    /// name, which a later library may accept through
    /// [`TagsConfig::from_raw`]).
    pub fn kind(&self) -> Option<TagKind> {
        TagKind::from_raw(self.kind)
    }

    /// The number of CPUs.
    pub fn nr_cpus(&self) -> u32 {
        self.nr_cpus
    }

    /// `tlbpol_tag_id_init()`: a new identity, for one address space, of
    /// this allocator (in the host's memory: its mm, its VM structure).
    /// When the address space goes, give it back with [`Tags::release`]:
    /// a global tag beside per-CPU slots is handed out again only then.
    /// Dropping it instead is harmless but for that: its slots are reused
    /// as they come round, a `Global` allocator's tag at the next rollover,
    /// but a global tag it held stays taken for the allocator's life.
    pub fn new_id(&self) -> Result<TagId> {
        let id = TagId { raw: UnsafeCell::new(sys::tlbpol_tag_id { word: 0 }), brand: self.brand };
        // SAFETY: the allocator is live for &self; tlbpol_tag_id_init() may
        // run anywhere ("any": the identity counter is an atomic) and writes
        // only the identity, ours alone here.
        check(unsafe { sys::tlbpol_tag_id_init(self.raw.as_ptr(), id.raw.get()) })?;
        Ok(id)
    }

    /// The tokens of every CPU, 0 first; once per allocator (`Error::Busy`
    /// after that).  Hand each one to the thread or CPU that runs it.
    pub fn take_cpus(&self) -> Result<TagCpus<'_>> {
        if self.cpus_taken.swap(true, Ordering::AcqRel) {
            return Err(Error::Busy);
        }
        Ok(TagCpus { tags: self.raw, brand: self.brand, next: 0, end: self.nr_cpus, _t: PhantomData })
    }

    /// A token for `cpu`, outside [`Tags::take_cpus`] (`Error::Range` from
    /// its calls if the allocator has no such CPU).
    ///
    /// # Safety
    /// No other token for `cpu` may be in use while this one is: two loads
    /// for one CPU must not run concurrently.
    pub unsafe fn cpu_unchecked(&self, cpu: u32) -> TagCpu<'_> {
        TagCpu { tags: self.raw, id: cpu, brand: self.brand, _t: PhantomData }
    }

    /// `tlbpol_tag_load()` for `cpu`, with exclusive access (no token is
    /// alive, so no other load runs): see [`TagCpu::load`].
    pub fn load(&mut self, cpu: u32, id: &TagId) -> Result<TagUse> {
        // SAFETY: &mut self: no token borrows the allocator, so no other load
        // for any CPU is running.
        unsafe { load(self.raw, self.brand, cpu, id) }
    }

    /// `tlbpol_tag_of()`: the tag under which `cpu` holds `id`'s entries,
    /// for a flush of them on `cpu`; `None` when it holds none under a tag
    /// of this allocator (`PerCpu`: no slot there, evicted or never
    /// loaded, and no global tag; `Global`: never loaded anywhere).
    /// `PerCpu`: `id`'s slot on `cpu`, else its global tag if it has one
    /// (a CPU that loaded it since it became global holds it there).
    /// `Global`: the address space's tag on every CPU.
    ///
    /// `PerCpu`: a CPU's slots change only in its own loads, so the answer
    /// is exact on `cpu` itself ([`TagCpu::tag_of`]) or while no load for
    /// `cpu` runs; read from elsewhere while `cpu` switches, it may be
    /// out of date by the time it returns (the library reads the slots
    /// with atomic loads: never torn).
    ///
    /// Errors: `Error::Range` for `cpu`; `Error::Invalid` for an identity
    /// of another allocator.
    pub fn tag_of(&self, cpu: u32, id: &TagId) -> Result<Option<u32>> {
        tag_of(self.raw, self.brand, cpu, id)
    }

    /// The C identity of `id`: `Error::Invalid` for another allocator's.
    fn own(&self, id: &TagId) -> Result<*mut sys::tlbpol_tag_id> {
        if id.brand != self.brand {
            return Err(Error::Invalid);
        }
        Ok(id.raw.get())
    }

    /// `tlbpol_tag_make_global()` (`PerCpu` with
    /// [`TagsConfig::global_tags`]): give `id` a global tag, returned.
    ///
    /// From then on every CPU's load of `id` gives that tag, its slot on
    /// that CPU given up, so a broadcast naming the tag reaches every CPU
    /// that has loaded `id` since.  A CPU still running `id` under its
    /// slot is reached only after its next load (until then a flush there
    /// names the slot, [`TagCpu::tag_of`]); an engine interrupts those
    /// CPUs instead.  A global tag given back ([`Tags::release`]) is
    /// handed out again only once every CPU has flushed everything since
    /// ([`TagFlush::All`] at its next load of a global tag).
    ///
    /// May run anywhere (it takes the allocator's lock, which no one holds
    /// across a wait).
    ///
    /// Errors, the library's errno as this crate's [`Error`]:
    /// `Error::Exists` if `id` has a global tag already ([`Tags::global_of`]
    /// says which: the library returns the errno, not the tag, and so does
    /// this); `Error::Other(ENOSPC)` (`sys::errno::ENOSPC`) when every
    /// global tag is taken; `Error::Invalid` for an allocator without
    /// global tags (every `Global` one), or an identity of another
    /// allocator (refused here, as the library could not always tell).
    pub fn make_global(&self, id: &TagId) -> Result<u32> {
        let raw = self.own(id)?;
        // SAFETY: the allocator is live for &self; tlbpol_tag_make_global()
        // may run anywhere ("any": it takes the allocator's lock, held by no
        // one across a wait).  raw is an identity of this allocator (its
        // brand); C writes its word only with an atomic store under the lock
        // and loads read it atomically, so the shared &TagId other CPUs may
        // be loading at once is sound to pass (UnsafeCell).  C keeps no
        // pointer past the call.
        check(unsafe { sys::tlbpol_tag_make_global(self.raw.as_ptr(), raw) })
    }

    /// `tlbpol_tag_global_of()`: `id`'s global tag, `None` if it has none
    /// (never made global, or released; always `None` with a `Global`
    /// allocator, whose tags are not global tags in this sense).  May run
    /// anywhere.  Errors: `Error::Invalid` for an identity of another
    /// allocator.
    pub fn global_of(&self, id: &TagId) -> Result<Option<u32>> {
        let raw = self.own(id)?;
        // SAFETY: the allocator is live for &self; tlbpol_tag_global_of()
        // only reads the identity's word, atomically (acquire), so it races
        // with no load or make_global; raw is an identity of this allocator.
        let r = unsafe { sys::tlbpol_tag_global_of(self.raw.as_ptr(), raw) };
        if r == -sys::errno::ENOENT {
            return Ok(None);
        }
        check(r).map(Some)
    }

    /// `tlbpol_tag_release()`: `id`'s address space is gone; its global tag,
    /// if it has one, goes back to the pool, to be handed out again only
    /// once every CPU has flushed everything since (a CPU may still hold
    /// `id`'s entries under it).  Per-CPU slots need nothing (a slot is
    /// flushed whenever it changes hands), nor does a `Global`
    /// allocator's tag (free again at the next rollover): `Ok(())` for
    /// those too.  May run anywhere (it takes the allocator's lock).
    ///
    /// # Why it takes the identity, and is not `unsafe`
    /// The header asks that `id` be gone: no CPU may run it or keep it
    /// loaded any more.  Taking `id` by value makes the "any more" hold by
    /// construction: no load, `make_global` or `tag_of` of it can run
    /// meanwhile (each borrows it) or follow (C would take it for a plain
    /// per-CPU identity again).  What no type can tell is whether a CPU
    /// still *runs* it, having loaded it before: switching every CPU away
    /// first is the host's duty, as flushing what a [`TagUse`] says is,
    /// and as running a load with interrupts off is ([`TagCpu::load`]).
    /// A CPU that kept running it would fill entries under a tag that
    /// no flush of `id` names any more; that is a TLB-correctness bug of
    /// the host, not undefined behaviour in this program (the library
    /// reads and writes the words a release shares with other calls
    /// atomically, under its lock), so the function is safe, like the
    /// others.  An engine with tags does this for its address spaces
    /// itself when one is closed, which it refuses while a CPU has it
    /// loaded ([`AddressSpace::close`](crate::AddressSpace::close)).
    ///
    /// Errors: `Error::Invalid`, with `id` given back unreleased, for an
    /// identity of another allocator (as `AddressSpace::close` gives its
    /// handle back).
    pub fn release(&self, id: TagId) -> core::result::Result<(), (Error, TagId)> {
        let mut id = id;
        if id.brand != self.brand {
            return Err((Error::Invalid, id));
        }
        // SAFETY: the allocator is live for &self; tlbpol_tag_release() may
        // run anywhere ("any": it takes the allocator's lock).  id is an
        // identity of this allocator, owned here: no other call is using it
        // (get_mut), and C keeps no pointer to it past the call.
        match check(unsafe { sys::tlbpol_tag_release(self.raw.as_ptr(), id.raw.get_mut()) }) {
            Ok(_) => Ok(()),
            Err(e) => Err((e, id)),
        }
    }

    /// `tlbpol_tags_stats_read()`: the counters of `cpu`, or summed over
    /// every CPU for `None`.  Each counter is exact, the set is not a
    /// snapshot.
    ///
    /// The C parameter is an `int`, in which -1 means every CPU: a `cpu`
    /// above `i32::MAX` has no `int` (wrapped, `u32::MAX` would be -1) and
    /// is `Error::Range` without calling C; below, C says whether the
    /// allocator has it (`Error::Range` too if not).
    pub fn stats(&self, cpu: Option<u32>) -> Result<TagsStats> {
        let c: sys::c_int = match cpu {
            Some(c) => sys::c_int::try_from(c).map_err(|_| Error::Range)?,
            None => -1,
        };
        let mut s = sys::tlbpol_tags_stats { size: STATS_SIZE, ..Default::default() };
        // SAFETY: the allocator is live for &self; a read that may run anywhere
        // (the counters are atomics), writing only s, whose size field says
        // its whole size (what the call writes at most).
        check(unsafe { sys::tlbpol_tags_stats_read(self.raw.as_ptr(), c, &mut s) })?;
        Ok(TagsStats(s))
    }
}

#[cfg(feature = "std")]
impl Tags<'static> {
    /// An allocator of `cfg` owning its memory: `cfg.tags_size()` bytes,
    /// 64-byte aligned, from the global allocator, freed when it is
    /// dropped.  Errors: the configuration's (see [`TagsConfig`]);
    /// `Error::NoMemory` if the memory cannot be had.
    pub fn new(cfg: &TagsConfig) -> Result<Tags<'static>> {
        let size = cfg.tags_size();
        if size == 0 {
            return Err(config_error(cfg));
        }
        let layout = std::alloc::Layout::from_size_align(size, TAGS_ALIGN).map_err(|_| Error::NoMemory)?;
        // SAFETY: layout has a nonzero size (size > 0 above).
        let mem = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or(Error::NoMemory)?;
        // SAFETY: mem is 64-byte aligned (the layout's alignment) with size
        // bytes behind it, ours alone until Drop frees them, after which no
        // call can use the allocator (they borrow the Tags).
        match unsafe { init_at(cfg, mem.as_ptr(), size) } {
            Ok(raw) => {
                let mut t = Tags::from_raw_parts(raw, cfg);
                t.owned = Some((mem, layout));
                Ok(t)
            }
            Err(e) => {
                // SAFETY: allocated above with this layout, never handed out:
                // the library refused it, and keeps nothing on failure.
                unsafe { std::alloc::dealloc(mem.as_ptr(), layout) };
                Err(e)
            }
        }
    }
}

impl Drop for Tags<'_> {
    fn drop(&mut self) {
        // Memory of the caller's stays the caller's; owned memory is freed
        // (the library needs no call first: "nothing to free after").
        #[cfg(feature = "std")]
        if let Some((mem, layout)) = self.owned.take() {
            // SAFETY: allocated by Tags::new with this layout and freed once,
            // here; &mut self means no token or call is alive (they borrow
            // the allocator), and identities hold no pointer into it.
            unsafe { std::alloc::dealloc(mem.as_ptr(), layout) };
        }
    }
}

impl fmt::Debug for Tags<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tags").field("kind", &self.kind()).field("nr_cpus", &self.nr_cpus).finish()
    }
}

/// The iterator of [`Tags::take_cpus`]: one [`TagCpu`] per CPU, in order.
pub struct TagCpus<'t> {
    tags: NonNull<sys::tlbpol_tags>,
    brand: usize,
    next: u32,
    end: u32,
    _t: PhantomData<&'t ()>,
}

impl<'t> Iterator for TagCpus<'t> {
    type Item = TagCpu<'t>;
    fn next(&mut self) -> Option<TagCpu<'t>> {
        if self.next == self.end {
            return None;
        }
        self.next += 1;
        Some(TagCpu { tags: self.tags, id: self.next - 1, brand: self.brand, _t: PhantomData })
    }
}

impl fmt::Debug for TagCpus<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TagCpus({}..{})", self.next, self.end)
    }
}

/// The right to load tags on one CPU: one token per CPU, from
/// [`Tags::take_cpus`].  Every load takes `&mut self`, and there is one
/// token per CPU, so two loads for one CPU cannot overlap (the header's
/// rule).
///
/// # Send and Sync
/// `Send`: a CPU's loads may move to another thread between loads; the
/// allocator keeps no per-thread state.  Not `Sync`: a shared `&TagCpu`
/// on two threads would be two loaders for one CPU.
///
/// Not enforced by types: a load runs on the CPU it names, with interrupts
/// off until the tag is loaded, as part of the switch.
pub struct TagCpu<'t> {
    tags: NonNull<sys::tlbpol_tags>,
    id: u32,
    brand: usize,
    _t: PhantomData<Cell<&'t ()>>,
}

// SAFETY: see "Send and Sync" above: the allocator keeps no per-thread state
// for a CPU, so its loads may come from another thread as long as they do not
// overlap, which the one token per CPU and &mut self ensure (!Sync comes from
// the Cell).
unsafe impl<'t> Send for TagCpu<'t> {}

impl fmt::Debug for TagCpu<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TagCpu({})", self.id)
    }
}

impl<'t> TagCpu<'t> {
    /// The CPU's number.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `tlbpol_tag_load()`: the tag this CPU loads to run `id`, and what
    /// it must flush first.  Call it at every switch to `id`, with
    /// interrupts off, and flush what [`TagUse::flush`] says before the
    /// first access under [`TagUse::tag`].
    ///
    /// `PerCpu`: `id`'s global tag if it has one ([`Tags::make_global`];
    /// its slot here given up; `TagFlush::All` if this CPU has not flushed
    /// everything since global tags were last recycled, its first load of
    /// a global tag too), else `id`'s slot on this CPU if it has one (no
    /// flush), else the next slot round-robin, flushed (its previous
    /// address space loses it: [`Tags::tag_of`] is `None` for it here,
    /// unless it is global).  `Global`: `id`'s tag
    /// if it is of the current generation, else the same number again if
    /// no one took it, or a free one, or a rollover; `TagFlush::All` when
    /// this CPU has not flushed since the last rollover (its first load
    /// too).  May spin on the allocator's lock, which other CPUs hold only
    /// inside their loads.
    ///
    /// Errors: `Error::Range` for a CPU the allocator does not have (a
    /// token of [`Tags::cpu_unchecked`]); `Error::Invalid` for an identity
    /// of another allocator (refused here, nothing loaded).
    /// `Err(Error::Other(0))` is the one error after which the load *was*
    /// made: a library newer than this crate returned a flush code it does
    /// not know.
    pub fn load(&mut self, id: &TagId) -> Result<TagUse> {
        // SAFETY: &mut self on this CPU's one token (or an unchecked one, whose
        // creator vouched for it) makes this the only load for self.id running.
        unsafe { load(self.tags, self.brand, self.id, id) }
    }

    /// `tlbpol_tag_of()` on this CPU: see [`Tags::tag_of`] (exact here, no
    /// load for this CPU can run meanwhile).
    pub fn tag_of(&self, id: &TagId) -> Result<Option<u32>> {
        tag_of(self.tags, self.brand, self.id, id)
    }
}

/// `tlbpol_tag_load()` of `id` on `cpu`.
///
/// # Safety
/// `tags` is a live allocator whose brand is `brand`, and no other load for
/// `cpu` runs until this one returns.
unsafe fn load(tags: NonNull<sys::tlbpol_tags>, brand: usize, cpu: u32, id: &TagId) -> Result<TagUse> {
    if id.brand != brand {
        return Err(Error::Invalid);
    }
    let mut u = sys::tlbpol_tag_use::default();
    // SAFETY: tags is live and this is the only load for cpu running (the
    // caller's contract: the header's rule); C checks cpu.  id is an identity
    // of this allocator (its brand), made by tlbpol_tag_id_init(); C writes its
    // word only with atomic stores under the allocator's lock (Global: loads;
    // PerCpu: make_global and release only), and reads it with atomic loads,
    // so the shared &TagId other CPUs may be loading at once is sound to pass
    // (UnsafeCell).  C keeps no pointer to it or to u past the call.
    check(unsafe { sys::tlbpol_tag_load(tags.as_ptr(), cpu, id.raw.get(), &mut u) })?;
    TagUse::from_raw(&u)
}

/// `tlbpol_tag_of()` of `id` on `cpu`: `None` for `-ENOENT`.
fn tag_of(tags: NonNull<sys::tlbpol_tags>, brand: usize, cpu: u32, id: &TagId) -> Result<Option<u32>> {
    if id.brand != brand {
        return Err(Error::Invalid);
    }
    // SAFETY: tags is live (borrowed by the caller, a Tags or a token of it);
    // id is an identity of this allocator.  tlbpol_tag_of() only reads: the
    // identity's word and (PerCpu) cpu's slots, each with an atomic load, so
    // it races with no load (a stale answer off cpu, never a torn one); C
    // checks cpu.
    let r = unsafe { sys::tlbpol_tag_of(tags.as_ptr(), cpu, id.raw.get()) };
    if r == -sys::errno::ENOENT {
        return Ok(None);
    }
    check(r).map(Some)
}

/// An address space's identity to one tag allocator (`struct
/// tlbpol_tag_id`, release 0.3), from [`Tags::new_id`]: keep it with the
/// address space (its mm, its VM).
///
/// The library writes it during loads (`Global`: the tag and its
/// generation), through the shared reference every load takes: CPUs
/// running the address space load it at once.  It keeps no pointer to it
/// between calls, so the identity may move (no `Box` needed), and it is
/// not `Clone`: two copies would be two identities that began as one.
///
/// An identity belongs to the allocator that made it: every call with
/// another allocator is refused (`Error::Invalid`), which the library
/// alone could not always tell.
///
/// When the address space goes, give it back with [`Tags::release`],
/// which takes it: a global tag it holds ([`Tags::make_global`]) is handed
/// out again only then.  Dropped instead, it keeps that tag for the
/// allocator's life (nothing else is lost: slots are reused as they come
/// round).
///
/// ```compile_fail,E0382
/// # use tlbpol::{Tags, TagsConfig};
/// # let cfg = TagsConfig::per_cpu(1, 4, 1, 3).global_tags(2);
/// # let mut mem = vec![0u8; Tags::mem_size(&cfg)];
/// # let mut tags = Tags::init(&cfg, &mut mem).unwrap();
/// let mm = tags.new_id().unwrap();
/// tags.release(mm).unwrap();
/// tags.load(0, &mm); // gone: no CPU may load it any more
/// ```
pub struct TagId {
    raw: UnsafeCell<sys::tlbpol_tag_id>,
    brand: usize,
}

// SAFETY: shared between threads, a TagId is only passed to
// tlbpol_tag_load(), tlbpol_tag_of(), tlbpol_tag_make_global() and
// tlbpol_tag_global_of(), which read and write its word with atomic
// operations (tags.c: prim_load_relaxed / _acquire, prim_store_relaxed /
// _release under the allocator's lock) and never with plain ones after
// tlbpol_tag_id_init(), which ran before the TagId was handed out;
// tlbpol_tag_release() takes it by value; Rust never reads it.
unsafe impl Sync for TagId {}

impl TagId {
    /// The C identity, for calls this crate does not wrap (with the
    /// allocator that made it, [`Tags::raw`]).
    pub fn raw(&self) -> *mut sys::tlbpol_tag_id {
        self.raw.get()
    }
}

impl fmt::Debug for TagId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The word is the library's, written under its lock: not read here.
        f.write_str("TagId")
    }
}

/// What a load tells a switching CPU (`struct tlbpol_tag_use`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TagUse {
    /// The hardware tag to load (CR3 PCID bits, TTBR ASID, satp ASID,
    /// VTTBR VMID).
    pub tag: u32,
    /// What to flush before the first access under `tag`, as part of the
    /// same switch.
    pub flush: TagFlush,
}

impl TagUse {
    /// A use from the C structure; `Error::Other(0)` for a flush code these
    /// bindings do not know (a library newer than this crate).
    pub(crate) fn from_raw(u: &sys::tlbpol_tag_use) -> Result<TagUse> {
        match TagFlush::from_raw(u.flush) {
            Some(flush) => Ok(TagUse { tag: u.tag, flush }),
            None => Err(Error::Other(0)),
        }
    }
}

/// A tag allocator's counters (`struct tlbpol_tags_stats`): `loads`,
/// `tag_flushes`, `all_flushes` and `rollovers` through `Deref`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TagsStats(pub sys::tlbpol_tags_stats);

impl Deref for TagsStats {
    type Target = sys::tlbpol_tags_stats;
    fn deref(&self) -> &sys::tlbpol_tags_stats {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_structures() {
        assert_eq!(usize::try_from(CONFIG_SIZE).unwrap(), core::mem::size_of::<sys::tlbpol_tags_config>());
        assert_eq!(usize::try_from(STATS_SIZE).unwrap(), core::mem::size_of::<sys::tlbpol_tags_stats>());
        let c = TagsConfig::per_cpu(4, 12, 1, 6);
        assert_eq!(
            *c.raw(),
            sys::tlbpol_tags_config {
                size: CONFIG_SIZE,
                kind: 0,
                nr_cpus: 4,
                tag_bits: 12,
                first_tag: 1,
                nr_slots: 6,
                nr_global: 0,
                global_min_cpus: 0
            }
        );
        let g = TagsConfig::global(2, 8, 1);
        assert_eq!((g.raw().kind, g.raw().nr_slots, g.raw().first_tag), (sys::TLBPOL_TAGS_GLOBAL, 0, 1));
    }

    #[test]
    fn mem_size_saturates_never_wraps() {
        assert_eq!(usize::MAX.saturating_add(TAGS_ALIGN - 1), usize::MAX);
        assert_eq!(Tags::mem_size(&TagsConfig::per_cpu(0, 12, 1, 6)), 0);
    }
}
