//! Memory for an engine built in place (`Engine::init`): its size, as a
//! constant, and its alignment.

use tlbpol_sys as sys;

#[cfg(doc)]
use crate::Engine;

/// Bytes [`Engine::init`] keeps in front of the engine for the callback
/// context (one cache line, so the engine stays 64-byte aligned).
pub(crate) const SHIM_SPACE: usize = 64;
/// Worst-case bytes lost aligning an arbitrary buffer to 64.
pub(crate) const ALIGN_SLACK: usize = 63;

/// Memory for an engine, 64-byte aligned: `EngineMem<{ tlbpol::engine_mem_size(..) }>`
/// in a static or on a heap, for [`Engine::init`] (exactly what it needs).
#[repr(C, align(64))]
pub struct EngineMem<const N: usize>(pub [u8; N]);

impl<const N: usize> EngineMem<N> {
    /// Zeroed memory.
    pub const fn new() -> Self {
        EngineMem([0; N])
    }
    /// The bytes, for [`Engine::init`].
    pub fn bytes(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl<const N: usize> Default for EngineMem<N> {
    fn default() -> Self {
        EngineMem::new()
    }
}

/// Bytes [`Engine::init`] needs for an engine of `cpus` CPUs, `max_as`
/// address spaces, `batch_pages`, `flush_ceiling` and `nodes` NUMA nodes (0
/// without a node table), as a constant (`TLBPOL_ENGINE_SIZE()` plus this
/// crate's callback context and alignment slack).  LP64; it changes with
/// each release of the library: recompile, never store it.
///
/// # Panics
/// If the size does not fit in `usize` (a 32-bit target and an engine of
/// 4 GiB or more): in a constant, such as `EngineMem<{ mem_size_for(..) }>`,
/// that is a compile error.  Never a truncated size.
pub const fn mem_size_for(cpus: u32, max_as: u32, batch_pages: u32, flush_ceiling: u32, nodes: u32) -> usize {
    // u32 to u64 widens, exactly (`u64::from` is not `const` on Rust 1.63).
    #[allow(clippy::cast_lossless)]
    let n = sys::TLBPOL_ENGINE_SIZE(cpus as u64, max_as as u64, batch_pages as u64, flush_ceiling as u64, nodes as u64);
    mem_total(n)
}

/// Bytes an [`EngineMem`] must have for [`Engine::init`] to build an
/// engine of `cpus` CPUs, `max_as` address spaces, `batch_pages`,
/// `flush_ceiling` and `nodes` NUMA nodes (0 without a node table) in it:
/// exactly `TLBPOL_ENGINE_SIZE()` and this crate's callback context in
/// front of the engine, since an `EngineMem` is 64-byte aligned.  A
/// `no_std` program reserves it statically:
///
/// ```
/// use tlbpol::{engine_mem_size, EngineMem};
/// static mut MEM: EngineMem<{ engine_mem_size(4, 64, 512, 33, 0) }> = EngineMem::new();
/// ```
///
/// One byte less and `init` fails with `Error::NoMemory`.  A plain byte
/// array, of any alignment, needs [`mem_size_for`] (63 bytes more).  LP64;
/// it changes with each release: recompile, never store it.
///
/// # Panics
/// As [`mem_size_for`], if the size does not fit in `usize` (a compile
/// error in a constant).
pub const fn engine_mem_size(cpus: u32, max_as: u32, batch_pages: u32, flush_ceiling: u32, nodes: u32) -> usize {
    mem_size_for(cpus, max_as, batch_pages, flush_ceiling, nodes) - ALIGN_SLACK
}

/// `engine + SHIM_SPACE + ALIGN_SLACK` bytes as a `usize`, or a panic
/// (a compile error in a constant) if that many bytes cannot be addressed.
const fn mem_total(engine: u64) -> usize {
    // `as` because `usize::try_from` is not `const` on Rust 1.63; the round
    // trip proves it exact, and anything else panics.
    #[allow(clippy::cast_possible_truncation)]
    let n = engine as usize;
    if n as u64 != engine {
        panic!("tlbpol: the engine size does not fit in usize");
    }
    match n.checked_add(SHIM_SPACE + ALIGN_SLACK) {
        Some(total) => total,
        None => panic!("tlbpol: the engine size does not fit in usize"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_total_at_the_largest_size() {
        assert_eq!(mem_total(0), SHIM_SPACE + ALIGN_SLACK);
        let max = u64::try_from(usize::MAX).unwrap();
        let largest = max - u64::try_from(SHIM_SPACE + ALIGN_SLACK).unwrap();
        assert_eq!(mem_total(largest), usize::MAX);
    }

    #[test]
    #[should_panic(expected = "tlbpol: the engine size does not fit in usize")]
    fn mem_total_one_past_the_largest_size_panics() {
        let max = u64::try_from(usize::MAX).unwrap();
        mem_total(max - u64::try_from(SHIM_SPACE + ALIGN_SLACK).unwrap() + 1);
    }

    // Where usize is 32 bits, a u64 size above 4 GiB must not wrap to a
    // small buffer size.
    #[cfg(target_pointer_width = "32")]
    #[test]
    #[should_panic(expected = "tlbpol: the engine size does not fit in usize")]
    fn mem_total_past_usize_panics() {
        mem_total(1 << 32);
    }
}
