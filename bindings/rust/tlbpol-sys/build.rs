//! Build script of tlbpol-sys.
//!
//! 0. Finds libtlbpol (`build/locate.rs`, the order is in README.md):
//!    - a source tree: `TLBPOL_SRC_DIR`, else the repository around this
//!      crate (`../../..` has `meson.build` and `include/tlbpol/`); or
//!    - an installed library: `pkg-config tlbpol` (the `hosted` feature) or
//!      `pkg-config tlbpol-core` (without it), or `TLBPOL_LIB_DIR` and the
//!      `include/` next to it, or `TLBPOL_INCLUDE_DIR`.
//! 1. The version: in a source tree, generates `<tlbpol/version.h>` from
//!    `include/tlbpol/version.h.in` as `include/tlbpol/meson.build` does
//!    (the version from the top-level `meson.build`) into `OUT_DIR`; an
//!    installed library has its own `version.h`, read as it is.  Writes
//!    `version.rs` with the same numbers.
//! 2. Reads `tlbpol.h` (and that `version.h`), just well
//!    enough to check it: the Rust definitions themselves (`src/consts.rs`)
//!    are written from the header by `gen/tlbpol_api.py`, and this is the
//!    independent second reading that compares them with the C compiler's.
//!    It writes a C
//!    program that prints every object-like `#define`, every enum value, the
//!    size and each field's offset and size of every structure, and
//!    `TLBPOL_ENGINE_SIZE()` over a grid; compiles and runs it with the C
//!    compiler; and writes `checks.rs`, which `tests/layout.rs` includes:
//!    one comparison per value with the Rust definition of the same name
//!    (a name the Rust side lacks does not compile), and one `fn` pointer
//!    coercion per public function with the signature translated from the
//!    header (a wrong parameter type does not compile).
//! 3. Links: with the `hosted` feature the shared library (`TLBPOL_LIB_DIR`,
//!    else `pkg-config tlbpol`, else a source tree's `build/`); without it
//!    the freestanding core: from a source tree compiled here from the
//!    `core_sources` of `meson.build` with its `core_args` and archived
//!    with `ar`, else the installed `libtlbpol-core.a`.  `cargo:libdir` is
//!    the shared library's directory: a dependent's build script reads it as
//!    `DEP_TLBPOL_LIBDIR` to set its executables' rpath.
//!
//! No `cc` crate (no registry is reachable): the C compiler is `$CC` or
//! `cc`, run through `std::process::Command`.
//!
//! Steps 0, 2 and 3 live in `build/`: `locate.rs` (finding the library),
//! `header.rs` (the reading), `checks.rs` (the layout program and
//! `checks.rs`), `link.rs` (linking).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[path = "build/checks.rs"]
mod checks;
#[path = "build/header.rs"]
mod header;
#[path = "build/link.rs"]
mod link;
#[path = "build/locate.rs"]
mod locate;

use checks::{write_checks, write_cite_rs};
use header::{parse_header, Api};
use link::{build_core, link_core, link_hosted};
use locate::{locate, Found};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let hosted = env::var_os("CARGO_FEATURE_HOSTED").is_some();

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build");
    for v in ["CC", "AR", "CFLAGS"] {
        println!("cargo:rerun-if-env-changed={}", v);
    }

    let found = locate(hosted);
    let inc_out = out.join("include");
    // The include directories of the layout program, and the header text.
    let (includes, version, header, version_h) = match &found {
        Found::Tree(root) => {
            for f in ["include/tlbpol/tlbpol.h", "include/tlbpol/version.h.in", "meson.build", "lib/core"] {
                println!("cargo:rerun-if-changed={}", root.join(f).display());
            }
            let version = meson_version(&read(&root.join("meson.build")));
            write_version_h(root, &inc_out, &version);
            let header = read(&root.join("include/tlbpol/tlbpol.h"));
            let version_h = read(&inc_out.join("tlbpol/version.h"));
            (vec![root.join("include"), inc_out.clone()], version, header, version_h)
        }
        Found::Installed(lib) => {
            let (h, v) = (lib.include.join("tlbpol/tlbpol.h"), lib.include.join("tlbpol/version.h"));
            println!("cargo:rerun-if-changed={}", h.display());
            println!("cargo:rerun-if-changed={}", v.display());
            let (header, version_h) = (read(&h), read(&v));
            (vec![lib.include.clone()], header_version(&version_h, &v), header, version_h)
        }
    };
    write_version_rs(&out, &version);

    let cc = Tool::for_target("CC", "cc");
    let mut api = Api::default();
    parse_header(&version_h, &mut api);
    parse_header(&header, &mut api);
    write_cite_rs(&out, &api);
    write_checks(&includes, &out, &cc, &api, hosted);

    match (&found, hosted) {
        (Found::Tree(root), true) => link_hosted(Some(root)),
        (Found::Installed(_), true) => link_hosted(None),
        (Found::Tree(root), false) => build_core(root, &inc_out, &out, &cc, &read(&root.join("meson.build"))),
        (Found::Installed(_), false) => link_core(),
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("tlbpol-sys: cannot read {}: {}", p.display(), e))
}

/// A program named by an environment variable that may carry arguments
/// (`CC="ccache gcc"`).
struct Tool {
    prog: String,
    args: Vec<String>,
}

impl Tool {
    fn from_env(var: &str, default: &str) -> Tool {
        let s = env::var(var).unwrap_or_else(|_| default.to_string());
        let mut words = s.split_whitespace().map(str::to_string);
        let prog = words.next().unwrap_or_else(|| default.to_string());
        Tool { prog, args: words.collect() }
    }
    /// `CC_<target>` / `TARGET_CC` / `CC` (and likewise for AR), the names
    /// the `cc` crate reads, so a cross build finds its compiler as usual.
    fn for_target(var: &str, default: &str) -> Tool {
        let target = env::var("TARGET").unwrap_or_default().replace('-', "_");
        for v in [format!("{}_{}", var, target), format!("TARGET_{}", var)] {
            println!("cargo:rerun-if-env-changed={}", v);
            if env::var_os(&v).is_some() {
                return Tool::from_env(&v, default);
            }
        }
        Tool::from_env(var, default)
    }
    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.prog);
        c.args(&self.args);
        c
    }
}

fn run(mut c: Command, what: &str) -> String {
    let o = c.stderr(Stdio::inherit()).output().unwrap_or_else(|e| panic!("tlbpol-sys: {}: {:?}: {}", what, c, e));
    if !o.status.success() {
        panic!("tlbpol-sys: {} failed ({}): {:?}", what, o.status, c);
    }
    String::from_utf8(o.stdout).expect("tlbpol-sys: output is not UTF-8")
}

// ---------------------------------------------------------------------------
// version.h, as include/tlbpol/meson.build makes it

fn meson_version(meson: &str) -> String {
    // project('tlbpol', 'c', version : '0.2.0', ...)
    let i = meson.find("version").expect("tlbpol-sys: no version in meson.build");
    let rest = &meson[i..];
    let a = rest.find('\'').unwrap() + 1;
    let b = a + rest[a..].find('\'').unwrap();
    rest[a..b].to_string()
}

fn write_version_h(root: &Path, inc_out: &Path, version: &str) {
    let v: Vec<&str> = version.split('.').collect();
    assert!(v.len() == 3, "tlbpol-sys: version {:?} is not MAJOR.MINOR.PATCH", version);
    let text = read(&root.join("include/tlbpol/version.h.in"))
        .replace("@MAJOR@", v[0])
        .replace("@MINOR@", v[1])
        .replace("@PATCH@", v[2])
        .replace("@VERSION@", version);
    assert!(!text.contains('@'), "tlbpol-sys: version.h.in has a placeholder this script does not know");
    fs::create_dir_all(inc_out.join("tlbpol")).unwrap();
    write_if_changed(&inc_out.join("tlbpol/version.h"), &text);
}

/// TLBPOL_VERSION_STRING of an installed `<tlbpol/version.h>`.
fn header_version(version_h: &str, path: &Path) -> String {
    for line in version_h.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["#define", "TLBPOL_VERSION_STRING", v] = words[..] {
            return v.trim_matches('"').to_string();
        }
    }
    panic!("tlbpol-sys: no TLBPOL_VERSION_STRING in {}", path.display());
}

fn write_version_rs(out: &Path, version: &str) {
    let v: Vec<&str> = version.split('.').collect();
    let s = format!(
        "/// `TLBPOL_VERSION_MAJOR`: the major version of the header these bindings mirror.\n\
         pub const TLBPOL_VERSION_MAJOR: u32 = {};\n\
         /// `TLBPOL_VERSION_MINOR`.\n\
         pub const TLBPOL_VERSION_MINOR: u32 = {};\n\
         /// `TLBPOL_VERSION_PATCH`.\n\
         pub const TLBPOL_VERSION_PATCH: u32 = {};\n\
         /// `TLBPOL_VERSION_STRING`: \"MAJOR.MINOR.PATCH\".\n\
         pub const TLBPOL_VERSION_STRING: &str = {:?};\n",
        v[0], v[1], v[2], version
    );
    write_if_changed(&out.join("version.rs"), &s);
}

fn write_if_changed(p: &Path, s: &str) {
    if fs::read_to_string(p).ok().as_deref() != Some(s) {
        fs::write(p, s).unwrap();
    }
}
