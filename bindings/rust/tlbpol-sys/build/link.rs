//! Linking: the shared library (hosted), or the freestanding core
//! compiled here and archived.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::locate::{pc_name, pkg_config};
use crate::{run, Tool};

/// The hosted library: `TLBPOL_LIB_DIR`, else pkg-config's `tlbpol`, else
/// (in a source tree) its `build/`.  The shared one, or with the `static`
/// feature `libtlbpol.a` and the libraries it needs (its tlbpol.pc's
/// `--static --libs`).
pub(crate) fn link_hosted(tree: Option<&Path>) {
    let linkage = if env::var_os("CARGO_FEATURE_STATIC").is_some() { "static" } else { "dylib" };
    // The directory given, and the .pc file that describes what is in it.
    let given = env::var_os("TLBPOL_LIB_DIR").filter(|d| !d.is_empty()).map(PathBuf::from).or_else(|| {
        // Neither TLBPOL_LIB_DIR nor pkg-config: the repository's own
        // build, as after `meson setup build && ninja -C build`.
        tree.map(|r| r.join("build"))
            .filter(|b| b.join("libtlbpol.so").exists() && pkg_config(&["--exists", "tlbpol"]).is_none())
    });
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut libs: Vec<String> = Vec::new();
    if let Some(d) = &given {
        dirs.push(d.clone());
        libs.push("tlbpol".into());
        if linkage == "static" {
            // An installed lib/ has pkgconfig/tlbpol.pc, a meson build
            // directory tlbpol.pc; else whichever pkg-config finds.
            let pc = [d.join("pkgconfig/tlbpol.pc"), d.join("tlbpol.pc")]
                .iter()
                .find(|p| p.is_file())
                .map_or_else(|| "tlbpol".to_string(), |p| p.display().to_string());
            let words = pkg_config(&["--static", "--libs", &pc])
                .unwrap_or_else(|| panic!("tlbpol-sys: feature static: pkg-config --static --libs {} failed", pc));
            libs.extend(words.split_whitespace().filter_map(|w| w.strip_prefix("-l")).map(str::to_string));
        }
    } else if let Some(words) = pkg_config(&if linkage == "static" {
        vec!["--static", "--libs", "tlbpol"]
    } else {
        vec!["--libs", "tlbpol"]
    }) {
        for w in words.split_whitespace() {
            if let Some(d) = w.strip_prefix("-L") {
                dirs.push(PathBuf::from(d));
            } else if let Some(l) = w.strip_prefix("-l") {
                libs.push(l.to_string());
            }
        }
        // No -L: pkg-config leaves out the directories the linker searches
        // anyway, which the dynamic loader searches too: no rpath needed.
        // rustc looks for a static library itself, so it needs that one.
        if linkage == "static" && dirs.is_empty() {
            dirs.extend(pkg_config(&["--variable=libdir", "tlbpol"]).map(|d| PathBuf::from(d.trim())));
        }
    } else {
        panic!(
            "tlbpol-sys: libtlbpol not found: set TLBPOL_LIB_DIR to the directory of libtlbpol.so \
             (a meson build directory or an installed lib/), or PKG_CONFIG_PATH to a directory with \
             tlbpol.pc{}; or use --no-default-features for the freestanding core",
            tree.map_or(String::new(), |r| format!(", or build {}/build", r.display()))
        );
    }
    let mut libs_seen: Vec<&str> = Vec::new();
    for l in &libs {
        if libs_seen.contains(&l.as_str()) {
            continue;
        }
        libs_seen.push(l);
        // Only libtlbpol itself is static: what it needs (libnuma,
        // liburcu) comes from the system's shared libraries.
        let kind = if l == "tlbpol" { linkage } else { "dylib" };
        println!("cargo:rustc-link-lib={}={}", kind, l);
    }
    let mut joined = String::new();
    for d in &dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
        if linkage == "static" {
            // Bundled into this crate's rlib: a new archive needs a relink.
            let a = d.join("libtlbpol.a");
            if a.is_file() {
                println!("cargo:rerun-if-changed={}", a.display());
            }
            continue;
        }
        // This crate's own tests and examples run against it without
        // LD_LIBRARY_PATH.  A link-arg does not reach the executables of
        // dependents: they set the rpath from `libdir` (DEP_TLBPOL_LIBDIR)
        // in their own build script, as tlbpol's does.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", d.display());
        if !joined.is_empty() {
            joined.push(':');
        }
        joined.push_str(&d.display().to_string());
    }
    println!("cargo:libdir={}", joined);
}

/// The installed freestanding core, `libtlbpol-core.a`: from
/// `TLBPOL_LIB_DIR`, else pkg-config's `tlbpol-core`.
pub(crate) fn link_core() {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = env::var_os("TLBPOL_LIB_DIR").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    let pc = pc_name(false);
    if let Some(libs) = pkg_config(&["--libs-only-L", pc]) {
        dirs.extend(libs.split_whitespace().filter_map(|w| w.strip_prefix("-L")).map(PathBuf::from));
    }
    // pkg-config omits -L for the linker's own directories; rustc looks
    // for a static library itself, so it needs the directory.
    if let Some(d) = pkg_config(&["--variable=libdir", pc]) {
        dirs.push(PathBuf::from(d.trim()));
    }
    let dir = dirs.into_iter().find(|d| d.join("libtlbpol-core.a").is_file()).unwrap_or_else(|| {
        panic!(
            "tlbpol-sys: libtlbpol-core.a not found: set TLBPOL_LIB_DIR to its directory, or \
             PKG_CONFIG_PATH to a directory with tlbpol-core.pc (every meson install writes both)"
        )
    });
    println!("cargo:rerun-if-changed={}", dir.join("libtlbpol-core.a").display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=tlbpol-core");
    println!("cargo:libdir=");
}

/// The list literal after `key` in meson.build: `core_sources = files('a', 'b')`.
fn meson_strings(meson: &str, key: &str) -> Vec<String> {
    let i = meson.find(key).unwrap_or_else(|| panic!("tlbpol-sys: no {} in meson.build", key));
    let rest = &meson[i..];
    let end = rest.find([')', ']']).unwrap();
    rest[..end].split('\'').skip(1).step_by(2).map(str::to_string).collect()
}

pub(crate) fn build_core(root: &Path, inc_out: &Path, out: &Path, cc: &Tool, meson: &str) {
    let sources = meson_strings(meson, "core_sources = files(");
    assert!(!sources.is_empty() && sources.iter().all(|s| s.starts_with("lib/core/")));
    // core_args as meson.build has them: the fixed list, then each
    // get_supported_arguments() flag this compiler takes.
    let mut flags = meson_strings(meson, "core_args = [");
    let mut rest = meson;
    while let Some(i) = rest.find("core_args += cc.get_supported_arguments(") {
        let list = &rest[i..];
        for f in meson_strings(list, "get_supported_arguments(") {
            if supported(cc, out, &f) {
                flags.push(f);
            }
        }
        rest = &list[1..];
    }
    // Position-independent, as a Rust executable is (and as meson's
    // code_model=pie, its default, builds the kernel archive).  The hosted C
    // library's headers stay out of reach as in meson's kernel archive
    // (-nostdinc: only the compiler's own stddef.h and stdint.h).
    let bare_metal = env::var("CARGO_CFG_TARGET_OS").map_or(false, |os| os == "none");
    flags.push(if bare_metal { "-fPIE" } else { "-fPIC" }.into());
    flags.push("-O2".into());
    flags.push("-std=c11".into());
    // As meson's kernel archive: a core file that called a hosted-only
    // function (TLBPOL_HOSTED_API) does not compile.
    flags.push("-DTLBPOL_FREESTANDING".into());
    let cc_include = run({
        let mut c = cc.cmd();
        c.arg("-print-file-name=include");
        c
    }, "asking the compiler for its include directory");
    flags.push("-nostdinc".into());
    flags.push("-idirafter".into());
    flags.push(cc_include.trim().to_string());
    if bare_metal {
        // A kernel target (x86_64-unknown-none ...): meson's ring-0 flags
        // for the kernel archive (no FP/SIMD registers, no red zone, no
        // stack protector, no unwind tables, atomics inline).
        flags.extend(["-fno-stack-protector", "-fno-asynchronous-unwind-tables"].iter().map(|f| f.to_string()));
        let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
        let more: &[&str] = match arch.as_str() {
            "x86_64" => &["-mno-red-zone", "-mgeneral-regs-only"],
            "aarch64" => &["-mgeneral-regs-only", "-mno-outline-atomics"],
            "riscv64" => &["-march=rv64imac_zicsr_zifencei", "-mabi=lp64", "-mcmodel=medany"],
            _ => &[],
        };
        flags.extend(more.iter().map(|f| f.to_string()));
    }
    // The caller's last word (a cross compiler's -target, a code model).
    if let Ok(extra) = env::var("CFLAGS") {
        flags.extend(extra.split_whitespace().map(str::to_string));
    }

    let obj_dir = out.join("core");
    fs::create_dir_all(&obj_dir).unwrap();
    let mut children = Vec::new();
    let mut objs = Vec::new();
    for s in &sources {
        let obj = obj_dir.join(Path::new(s).file_stem().unwrap()).with_extension("o");
        let mut c = cc.cmd();
        c.args(&flags).arg("-I").arg(root.join("include")).arg("-I").arg(inc_out);
        c.arg("-c").arg(root.join(s)).arg("-o").arg(&obj);
        let child = c.spawn().unwrap_or_else(|e| panic!("tlbpol-sys: {:?}: {}", c, e));
        children.push((child, s.clone()));
        objs.push(obj);
    }
    for (mut child, s) in children {
        let st = child.wait().unwrap();
        assert!(st.success(), "tlbpol-sys: compiling {} failed", s);
    }
    let lib = out.join("libtlbpol_core.a");
    let _ = fs::remove_file(&lib);
    let mut ar = Tool::for_target("AR", "ar").cmd();
    ar.arg("crs").arg(&lib).args(&objs);
    run(ar, "archiving the core");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=tlbpol_core");
    println!("cargo:libdir=");
}

fn supported(cc: &Tool, out: &Path, flag: &str) -> bool {
    let mut c = cc.cmd();
    c.args(["-Werror", flag, "-x", "c", "-c", "-", "-o"]).arg(out.join("probe.o"));
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    c.status().map(|s| s.success()).unwrap_or(false)
}
