//! Where libtlbpol is: a source tree, or an installed library.
//!
//! The order (README.md, "Finding libtlbpol", says the same):
//! 1. `TLBPOL_SRC_DIR`: a libtlbpol source tree (the header and, without
//!    `hosted`, the core's sources come from there).
//! 2. The repository this crate sits in (`../../..` has `meson.build` and
//!    `include/tlbpol/`), when it is built in place.
//! 3. An installed library; its headers from `TLBPOL_INCLUDE_DIR`, else the
//!    `include/` next to `TLBPOL_LIB_DIR` (a prefix's `lib/`), else
//!    pkg-config's (`tlbpol` with `hosted`, `tlbpol-core` without).
//!
//! The library itself is then `TLBPOL_LIB_DIR`, else pkg-config's, else (a
//! source tree, `hosted`) its `build/` (link.rs).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every variable this script reads; a change re-runs it.
const ENV: &[&str] = &[
    "TLBPOL_SRC_DIR",
    "TLBPOL_LIB_DIR",
    "TLBPOL_INCLUDE_DIR",
    "PKG_CONFIG",
    "PKG_CONFIG_PATH",
    "PKG_CONFIG_LIBDIR",
    "PKG_CONFIG_SYSROOT_DIR",
];

pub(crate) enum Found {
    /// A source tree's root.
    Tree(PathBuf),
    Installed(Installed),
}

pub(crate) struct Installed {
    /// The directory holding `tlbpol/tlbpol.h` and `tlbpol/version.h`.
    pub(crate) include: PathBuf,
}

pub(crate) fn locate(hosted: bool) -> Found {
    for v in ENV {
        println!("cargo:rerun-if-env-changed={}", v);
    }
    if let Some(d) = env::var_os("TLBPOL_SRC_DIR").filter(|d| !d.is_empty()) {
        let root = PathBuf::from(d);
        assert!(
            is_tree(&root),
            "tlbpol-sys: TLBPOL_SRC_DIR={} is not a libtlbpol source tree (no meson.build, include/tlbpol/)",
            root.display()
        );
        return Found::Tree(root.canonicalize().unwrap_or(root));
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest.join("../../..");
    if is_tree(&repo) {
        return Found::Tree(repo.canonicalize().unwrap_or(repo));
    }
    let include = installed_include(hosted).unwrap_or_else(|| {
        panic!(
            "tlbpol-sys: libtlbpol not found: this crate is not inside the libtlbpol repository \
             and {}; install libtlbpol (meson install: it writes {}.pc) and set PKG_CONFIG_PATH \
             to its lib/pkgconfig if the prefix is not a standard one, or set TLBPOL_LIB_DIR \
             (and TLBPOL_INCLUDE_DIR), or TLBPOL_SRC_DIR to a source tree",
            pkg_config_failure(pc_name(hosted)),
            pc_name(hosted)
        )
    });
    Found::Installed(Installed { include })
}

/// A libtlbpol source tree: what build.rs reads from one.
fn is_tree(root: &Path) -> bool {
    ["meson.build", "include/tlbpol/tlbpol.h", "include/tlbpol/version.h.in", "lib/core"]
        .iter()
        .all(|f| root.join(f).exists())
}

pub(crate) fn pc_name(hosted: bool) -> &'static str {
    if hosted {
        "tlbpol"
    } else {
        "tlbpol-core"
    }
}

fn has_header(dir: &Path) -> bool {
    dir.join("tlbpol/tlbpol.h").is_file() && dir.join("tlbpol/version.h").is_file()
}

fn installed_include(hosted: bool) -> Option<PathBuf> {
    if let Some(d) = env::var_os("TLBPOL_INCLUDE_DIR").filter(|d| !d.is_empty()) {
        let d = PathBuf::from(d);
        assert!(has_header(&d), "tlbpol-sys: TLBPOL_INCLUDE_DIR={} has no tlbpol/tlbpol.h and tlbpol/version.h", d.display());
        return Some(d);
    }
    if let Some(d) = env::var_os("TLBPOL_LIB_DIR").filter(|d| !d.is_empty()) {
        // $prefix/lib or $prefix/lib/<multiarch>: the headers of that prefix.
        for up in [1, 2] {
            let mut inc = PathBuf::from(&d);
            for _ in 0..up {
                inc.pop();
            }
            let inc = inc.join("include");
            if has_header(&inc) {
                return Some(inc);
            }
        }
    }
    let pc = pc_name(hosted);
    // -I of --cflags (which PKG_CONFIG_SYSROOT_DIR prefixes), else the
    // includedir variable.
    let mut dirs: Vec<PathBuf> = pkg_config(&["--cflags-only-I", pc])?
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("-I"))
        .map(PathBuf::from)
        .collect();
    if let Some(v) = pkg_config(&["--variable=includedir", pc]) {
        dirs.push(PathBuf::from(v.trim()));
    }
    dirs.into_iter().find(|d| has_header(d))
}

/// The words of `pkg-config <args>` (`$PKG_CONFIG`, which may carry
/// arguments), or None when it is not installed or does not know the
/// package.
pub(crate) fn pkg_config(args: &[&str]) -> Option<String> {
    let o = pkg_config_cmd(args).stderr(Stdio::null()).output().ok()?;
    if o.status.success() {
        String::from_utf8(o.stdout).ok()
    } else {
        None
    }
}

fn pkg_config_cmd(args: &[&str]) -> Command {
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let mut words = pc.split_whitespace();
    let mut c = Command::new(words.next().unwrap_or("pkg-config"));
    c.args(words).args(args);
    c
}

/// Why pkg-config did not give the package, for the panic message.
fn pkg_config_failure(pc: &str) -> String {
    match pkg_config_cmd(&["--print-errors", "--exists", pc]).output() {
        Err(e) => format!("pkg-config could not run ({})", e),
        Ok(o) if o.status.success() => format!("pkg-config's {} has no usable include directory", pc),
        Ok(o) => format!(
            "pkg-config does not find {} (PKG_CONFIG_PATH={}): {}",
            pc,
            env::var("PKG_CONFIG_PATH").unwrap_or_default(),
            String::from_utf8_lossy(&o.stderr).trim()
        ),
    }
}
