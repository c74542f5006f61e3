//! Linking: the shared library (hosted), or the freestanding core
//! compiled here and archived.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{run, Tool};

pub(crate) fn link_hosted(root: &Path) {
    let dirs: Vec<PathBuf> = if let Some(d) = env::var_os("TLBPOL_LIB_DIR") {
        println!("cargo:rustc-link-lib=dylib=tlbpol");
        vec![PathBuf::from(d)]
    } else if let Some(libs) = pkg_config_libs() {
        let mut dirs = Vec::new();
        for w in libs.split_whitespace() {
            if let Some(d) = w.strip_prefix("-L") {
                dirs.push(PathBuf::from(d));
            } else if let Some(l) = w.strip_prefix("-l") {
                println!("cargo:rustc-link-lib=dylib={}", l);
            }
        }
        dirs
    } else if root.join("build/libtlbpol.so").exists() {
        // Neither said where: the repository's own build, as after
        // `meson setup build && ninja -C build`.
        println!("cargo:rustc-link-lib=dylib=tlbpol");
        vec![root.join("build")]
    } else {
        panic!(
            "tlbpol-sys: libtlbpol not found: set TLBPOL_LIB_DIR to the meson build directory, \
             or PKG_CONFIG_PATH to a directory with tlbpol.pc, or build {}/build; \
             or use --no-default-features to compile the freestanding core",
            root.display()
        );
    };
    let mut joined = String::new();
    for d in &dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
        // Tests and examples of this crate run against it without
        // LD_LIBRARY_PATH; tlbpol's build script does the same with `libdir`.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", d.display());
        if !joined.is_empty() {
            joined.push(':');
        }
        joined.push_str(&d.display().to_string());
    }
    println!("cargo:libdir={}", joined);
}

fn pkg_config_libs() -> Option<String> {
    let pc = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let o = Command::new(pc).args(["--libs", "tlbpol"]).stderr(Stdio::null()).output().ok()?;
    if o.status.success() {
        String::from_utf8(o.stdout).ok()
    } else {
        None
    }
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
