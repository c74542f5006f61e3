//! An engine in static memory of exactly the size a `no_std` program
//! reserves for it: `EngineMem<{ engine_mem_size(..) }>` is what
//! `Engine::init` needs, to the byte (one byte less is `Error::NoMemory`),
//! and a plain byte array of `mem_size_for(..)` works at any alignment.

use core::ptr::addr_of_mut;

use tlbpol::*;

struct Quiet;
impl Host for Quiet {
    fn flush_local(&self, _: &Here<'_>, _: &Flush<'_>) {}
    fn send_ipi(&self, _: &Here<'_>, _: &CpuSet) {}
}

const CPUS: u32 = 4;
const NEED: usize = engine_mem_size(
    CPUS,
    sys::TLBPOL_DEFAULT_MAX_AS,
    sys::TLBPOL_DEFAULT_BATCH_PAGES,
    sys::TLBPOL_DEFAULT_FLUSH_CEILING,
    0,
);
const NODES_NEED: usize = engine_mem_size(CPUS, 8, 64, 4, 2);

static mut MEM: EngineMem<NEED> = EngineMem::new();
static mut SHORT: EngineMem<{ NEED - 1 }> = EngineMem::new();
static mut NODES_MEM: EngineMem<NODES_NEED> = EngineMem::new();
static mut BYTES: [u8; mem_size_for(2, 4, 64, 8, 0) + 1] = [0; mem_size_for(2, 4, 64, 8, 0) + 1];

#[test]
fn exactly_engine_mem_size() {
    let cfg = Config::new(CPUS, Arch::X86_64);
    // The header's size, this crate's callback context, no alignment slack.
    assert_eq!(
        u64::try_from(NEED).unwrap(),
        sys::TLBPOL_ENGINE_SIZE(
            u64::from(CPUS),
            u64::from(sys::TLBPOL_DEFAULT_MAX_AS),
            u64::from(sys::TLBPOL_DEFAULT_BATCH_PAGES),
            u64::from(sys::TLBPOL_DEFAULT_FLUSH_CEILING),
            0
        ) + 64
    );
    assert_eq!(NEED, cfg.engine_size() + 64, "the linked library's tlbpol_engine_size() differs");
    // SAFETY: the only reference to SHORT, in this one test.
    let short = unsafe { &mut *addr_of_mut!(SHORT) };
    assert_eq!(Engine::init(&cfg, &Quiet, short.bytes()).map(drop).unwrap_err(), Error::NoMemory);
    // SAFETY: the only reference to MEM, in this one test.
    let mem = unsafe { &mut *addr_of_mut!(MEM) };
    let eng = Engine::init(&cfg, &Quiet, mem.bytes()).unwrap();
    let space = eng.open_as(1).unwrap();
    let ev = Event::new(EventKind::Unmap).va(0x40_0000).old_pte(Pte::PRESENT | Pte::ACCESSED);
    assert!(eng.decide(&space, 0, &ev).is_ok());
}

#[test]
fn with_a_node_table() {
    let nodes = [0u16, 0, 1, 1];
    let cfg = Config::new(CPUS, Arch::Arm64).max_as(8).batch_pages(64).flush_ceiling(4).cpu_node(&nodes);
    assert_eq!(NODES_NEED, cfg.engine_size() + 64);
    // SAFETY: the only reference to NODES_MEM, in this one test.
    let mem = unsafe { &mut *addr_of_mut!(NODES_MEM) };
    assert_eq!(Engine::init(&cfg, &Quiet, &mut mem.bytes()[..NODES_NEED - 1]).map(drop).unwrap_err(), Error::NoMemory);
    assert!(Engine::init(&cfg, &Quiet, mem.bytes()).is_ok());
}

#[test]
fn a_byte_array_of_mem_size_for_at_any_alignment() {
    let cfg = Config::new(2, Arch::Generic).max_as(4).batch_pages(64).flush_ceiling(8);
    // SAFETY: the only reference to BYTES, in this one test.
    let bytes = unsafe { &mut *addr_of_mut!(BYTES) };
    // Of its two 64-byte phases, the one that needs the most slack.
    let start = bytes.as_ptr() as usize;
    let off = (0..2).max_by_key(|o| (start + o).wrapping_neg() % 64).unwrap();
    let n = mem_size_for(2, 4, 64, 8, 0);
    assert!(Engine::init(&cfg, &Quiet, &mut bytes[off..off + n]).is_ok());
}
