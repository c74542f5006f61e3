//! Every constant, enum value, structure size, field offset and field size
//! of the header against this crate's definitions, and every function's
//! signature against its prototype.  The values and the list come from the
//! header itself (build.rs compiles and runs a C program generated from
//! it), so a constant added to the header without its Rust twin makes this
//! file fail to compile, and a changed value makes the test fail.
#![allow(clippy::unnecessary_cast)]

use std::mem::MaybeUninit;
use tlbpol_sys::*;

macro_rules! offset_of {
    ($t:ty, $f:ident) => {{
        let u = MaybeUninit::<$t>::uninit();
        let base = u.as_ptr();
        // addr_of! makes no reference to the uninitialised field.
        (unsafe { std::ptr::addr_of!((*base).$f) } as *const u8 as usize - base as *const u8 as usize) as u64
    }};
}

macro_rules! field_size {
    ($t:ty, $f:ident) => {{
        fn size_of_pointee<F>(_: *const F) -> usize {
            std::mem::size_of::<F>()
        }
        let u = MaybeUninit::<$t>::uninit();
        let base = u.as_ptr();
        size_of_pointee(unsafe { std::ptr::addr_of!((*base).$f) }) as u64
    }};
}

#[derive(Default)]
struct Checker {
    checked: usize,
    functions: usize,
    wrong: Vec<String>,
}

impl Checker {
    fn num(&mut self, what: &str, rust: u64, c: u64) {
        self.checked += 1;
        if rust != c {
            self.wrong.push(format!("{}: Rust {} != C {}", what, rust, c));
        }
    }
    fn str(&mut self, what: &str, rust: &str, c: &str) {
        self.checked += 1;
        if rust != c {
            self.wrong.push(format!("{}: Rust {:?} != C {:?}", what, rust, c));
        }
    }
    fn function(&mut self, what: &str, addr: usize) {
        self.functions += 1;
        if addr == 0 {
            self.wrong.push(format!("{}: null", what));
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/checks.rs"));

#[test]
fn layout_and_constants_match_the_header() {
    let mut c = Checker::default();
    checks(&mut c);
    if !LAYOUT_MEASURED {
        eprintln!("cross build: layout not measured");
        return;
    }
    assert!(c.wrong.is_empty(), "mismatches with the C header:\n{}", c.wrong.join("\n"));
    // The header has some 180 values and 40 functions: a parser that
    // found next to nothing would pass vacuously.
    assert!(c.checked > 150, "only {} values checked", c.checked);
    assert!(c.functions >= 30, "only {} functions checked", c.functions);
    eprintln!("{} values and {} function signatures match the header", c.checked, c.functions);
}

#[test]
fn linked_library_is_this_header_s() {
    let v = unsafe { std::ffi::CStr::from_ptr(tlbpol_version() as *const std::os::raw::c_char) };
    assert_eq!(v.to_str().unwrap(), TLBPOL_VERSION_STRING);
}

/// Each function `src/lib.rs` declares, and whether it sits in the
/// `hosted` block, is one the header declares, with `TLBPOL_HOSTED_API`
/// exactly when hosted: the reading of the header (build.rs) found every
/// function, so each one's signature was checked above.
#[test]
fn every_declared_function_was_read_from_the_header() {
    let mut hosted_block = false;
    let mut after_hosted_cfg = false;
    let mut declared = Vec::new();
    for line in include_str!("../src/lib.rs").lines() {
        let t = line.trim();
        if t.starts_with("extern \"C\"") {
            hosted_block = after_hosted_cfg;
        }
        after_hosted_cfg = t == "#[cfg(feature = \"hosted\")]";
        if let Some(rest) = t.strip_prefix("pub fn tlbpol_") {
            let name = format!("tlbpol_{}", &rest[..rest.find('(').unwrap()]);
            declared.push((name, hosted_block));
        }
    }
    assert!(declared.iter().filter(|d| d.1).count() >= 10, "no hosted block found in src/lib.rs");
    let mut wrong = Vec::new();
    for (name, hosted) in &declared {
        match HEADER_FUNCTIONS.iter().find(|f| f.0 == name) {
            None => wrong.push(format!("{}: not read from the header", name)),
            Some(f) if f.1 != *hosted => {
                wrong.push(format!("{}: hosted-only in the header: {}, in src/lib.rs: {}", name, f.1, hosted))
            }
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(declared.len(), HEADER_FUNCTIONS.len(), "src/lib.rs and the header declare different counts");
}
