//! Build script of tlbpol-sys.
//!
//! 1. Generates `<tlbpol/version.h>` from `include/tlbpol/version.h.in` as
//!    `include/tlbpol/meson.build` does (the version from the top-level
//!    `meson.build`), into `OUT_DIR`, and `version.rs` with the same numbers.
//! 2. Reads `include/tlbpol/tlbpol.h` (and that `version.h`), just well
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
//!    else the `pkg-config` program, else the repository's `build/`);
//!    without it the freestanding core, compiled here from the
//!    `core_sources` of `meson.build` with its `core_args`, archived with
//!    `ar`.
//!
//! No `cc` crate (no registry is reachable): the C compiler is `$CC` or
//! `cc`, run through `std::process::Command`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    // bindings/rust/tlbpol-sys -> the repository; TLBPOL_SRC_DIR for a copy
    // of the crate kept elsewhere.
    let root = match env::var_os("TLBPOL_SRC_DIR") {
        Some(d) => PathBuf::from(d),
        None => manifest.join("../../.."),
    };
    let root = root.canonicalize().unwrap_or(root);
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let hosted = env::var_os("CARGO_FEATURE_HOSTED").is_some();

    for f in ["include/tlbpol/tlbpol.h", "include/tlbpol/version.h.in", "meson.build", "lib/core"] {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    for v in ["TLBPOL_SRC_DIR", "TLBPOL_LIB_DIR", "PKG_CONFIG_PATH", "PKG_CONFIG", "CC", "AR", "CFLAGS"] {
        println!("cargo:rerun-if-env-changed={}", v);
    }

    let meson = read(&root.join("meson.build"));
    let version = meson_version(&meson);
    let inc_out = out.join("include");
    write_version_h(&root, &inc_out, &version, hosted);
    write_version_rs(&out, &version);

    let cc = Tool::for_target("CC", "cc");
    let header = read(&root.join("include/tlbpol/tlbpol.h"));
    let version_h = read(&inc_out.join("tlbpol/version.h"));
    let mut api = Api::default();
    parse_header(&version_h, &mut api);
    parse_header(&header, &mut api);
    write_cite_rs(&out, &api);
    write_checks(&root, &inc_out, &out, &cc, &api);

    if hosted {
        link_hosted(&root);
    } else {
        build_core(&root, &inc_out, &out, &cc, &meson);
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

fn write_version_h(root: &Path, inc_out: &Path, version: &str, hosted: bool) {
    let v: Vec<&str> = version.split('.').collect();
    assert!(v.len() == 3, "tlbpol-sys: version {:?} is not MAJOR.MINOR.PATCH", version);
    // The same text meson substitutes for @FREESTANDING@.
    let fs = if hosted {
        "/* the hosted build: TLBPOL_FREESTANDING not defined */"
    } else {
        "#define TLBPOL_FREESTANDING 1 /* the kernel core archive: no hosted layer */"
    };
    let text = read(&root.join("include/tlbpol/version.h.in"))
        .replace("@MAJOR@", v[0])
        .replace("@MINOR@", v[1])
        .replace("@PATCH@", v[2])
        .replace("@VERSION@", version)
        .replace("@FREESTANDING@", fs);
    assert!(!text.contains('@'), "tlbpol-sys: version.h.in has a placeholder this script does not know");
    fs::create_dir_all(inc_out.join("tlbpol")).unwrap();
    write_if_changed(&inc_out.join("tlbpol/version.h"), &text);
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

// ---------------------------------------------------------------------------
// The header, read just well enough for its own regular style

#[derive(Default)]
struct Api {
    /// Object-like macros: name, whether its value is a string literal.
    defines: Vec<(String, bool)>,
    enum_values: Vec<String>,
    /// Structures: name, fields.
    structs: Vec<(String, Vec<String>)>,
    /// Functions: name, Rust fn-pointer type, declared only in the hosted build.
    functions: Vec<(String, String, bool)>,
}

fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            let end = s[i + 2..].find("*/").expect("unterminated comment") + i + 4;
            // keep line structure for the preprocessor lines
            out.extend(s[i..end].chars().filter(|&c| c == '\n'));
            out.push(' ');
            i = end;
        } else if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out.replace("\\\n", " ")
}

fn parse_header(text: &str, api: &mut Api) {
    let text = strip_comments(text);
    // Conditional stack: (hosted-only region, C++-only region).
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let mut stmt = String::new();
    let mut stmt_hosted = false;
    let mut depth = 0i32;
    for line in text.lines() {
        let t = line.trim();
        let hosted_only = stack.iter().any(|s| s.0);
        let cplusplus = stack.iter().any(|s| s.1);
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim();
            if d.starts_with("if") {
                let words: Vec<&str> = d.split_whitespace().collect();
                stack.push((
                    words == ["ifndef", "TLBPOL_FREESTANDING"],
                    words == ["ifdef", "__cplusplus"],
                ));
            } else if d.starts_with("endif") {
                stack.pop();
            } else if let Some(def) = d.strip_prefix("define") {
                let def = def.trim_start();
                let name_end = def.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(def.len());
                let name = &def[..name_end];
                let rest = &def[name_end..];
                let guard = matches!(name, "TLBPOL_TLBPOL_H" | "TLBPOL_VERSION_H" | "TLBPOL_API");
                if !rest.starts_with('(') && !guard && name.starts_with("TLBPOL") {
                    api.defines.push((name.to_string(), rest.trim().starts_with('"')));
                }
            }
            continue;
        }
        if cplusplus || t.is_empty() {
            continue;
        }
        if stmt.is_empty() {
            stmt_hosted = hosted_only;
        }
        stmt.push_str(t);
        stmt.push(' ');
        depth += t.matches('{').count() as i32 - t.matches('}').count() as i32;
        if depth == 0 && t.ends_with(';') {
            statement(stmt.trim(), stmt_hosted, api);
            stmt.clear();
        }
    }
    assert!(stack.is_empty() && stmt.trim().is_empty(), "tlbpol-sys: could not read the header to its end");
}

fn statement(s: &str, hosted: bool, api: &mut Api) {
    if s.starts_with("enum ") {
        let body = &s[s.find('{').unwrap() + 1..s.rfind('}').unwrap()];
        for item in body.split(',') {
            let name = item.split('=').next().unwrap().trim();
            if !name.is_empty() {
                api.enum_values.push(name.to_string());
            }
        }
    } else if s.starts_with("struct ") && s.contains('{') {
        let name = s["struct ".len()..s.find('{').unwrap()].trim().to_string();
        let body = &s[s.find('{').unwrap() + 1..s.rfind('}').unwrap()];
        let fields = body
            .split(';')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| declarator_name(d).to_string())
            .collect();
        api.structs.push((name, fields));
    } else if let Some(f) = s.strip_prefix("TLBPOL_API ") {
        let open = f.find('(').unwrap();
        let head = &f[..open];
        let name = declarator_name(head).to_string();
        let ret = c_type(head[..head.len() - name.len()].trim(), true);
        let params = &f[open + 1..f.rfind(')').unwrap()];
        let args: Vec<String> = if params.trim() == "void" {
            Vec::new()
        } else {
            split_params(params).iter().map(|p| param_type(p)).collect()
        };
        let ret = if ret == "()" { String::new() } else { format!(" -> {}", ret) };
        api.functions.push((name, format!("unsafe extern \"C\" fn({}){}", args.join(", "), ret), hosted));
    }
}

/// The declared name: `uint64_t bits[64]` -> bits, `void (*fn)(void *)` -> fn.
fn declarator_name(d: &str) -> &str {
    if let Some(i) = d.find("(*") {
        let rest = &d[i + 2..];
        return rest[..rest.find(')').unwrap()].trim();
    }
    let d = match d.find('[') {
        Some(i) => &d[..i],
        None => d,
    };
    let d = d.trim_end();
    let start = d.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    &d[start..]
}

fn split_params(p: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in p.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                v.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    v.push(cur.trim().to_string());
    v
}

fn param_type(p: &str) -> String {
    if let Some(i) = p.find("(*") {
        // a function pointer: ret (*name)(params)
        let ret = c_type(p[..i].trim(), true);
        let args_start = p[i..].find(")(").unwrap() + i + 2;
        let inner = &p[args_start..p.rfind(')').unwrap()];
        let args: Vec<String> = split_params(inner).iter().map(|a| param_type(a)).collect();
        let ret = if ret == "()" { String::new() } else { format!(" -> {}", ret) };
        return format!("Option<unsafe extern \"C\" fn({}){}>", args.join(", "), ret);
    }
    let name = declarator_name(p);
    c_type(p[..p.len() - name.len()].trim(), false)
}

/// A C type (no declarator name) as Rust spells it in tlbpol-sys.
fn c_type(t: &str, is_return: bool) -> String {
    let stars = t.matches('*').count();
    let mut words: Vec<&str> = t.split(|c: char| c.is_whitespace() || c == '*').filter(|w| !w.is_empty()).collect();
    let is_const = words.first() == Some(&"const");
    words.retain(|w| *w != "const" && *w != "struct");
    assert!(words.len() == 1, "tlbpol-sys: cannot translate the C type {:?}", t);
    let base = match words[0] {
        "void" if stars == 0 && is_return => "()".to_string(),
        "void" => "c_void".to_string(),
        "char" => "c_char".to_string(),
        "int" => "c_int".to_string(),
        "size_t" => "usize".to_string(),
        "uint16_t" => "u16".to_string(),
        "uint32_t" => "u32".to_string(),
        "uint64_t" => "u64".to_string(),
        w if w.starts_with("tlbpol_") => w.to_string(),
        w => panic!("tlbpol-sys: no Rust type for the C type {:?}", w),
    };
    let mut ty = base;
    for level in 0..stars {
        // `const` before the base type qualifies the innermost pointee.
        let q = if level == 0 && is_const { "*const " } else { "*mut " };
        ty = format!("{}{}", q, ty);
    }
    ty
}

// ---------------------------------------------------------------------------
// The layout program and checks.rs

fn write_cite_rs(out: &Path, api: &Api) {
    // tlbpol_reason_cite() is new: call it only when the header declares it,
    // so that a library that predates it still links.
    let declared = api.functions.iter().any(|f| f.0 == "tlbpol_reason_cite");
    let body = if declared {
        "// SAFETY: the header declares tlbpol_reason_cite(), so the library\n    \
         // has it; it takes any reason and arch and returns a static string.\n    \
         Some(unsafe { tlbpol_reason_cite(reason, arch) })"
    } else {
        "let _ = (reason, arch);\n    None"
    };
    let s = format!(
        "/// `tlbpol_reason_cite(reason, arch)` when the header this crate was built\n\
         /// against declares it (the library then has it), else `None`.\n\
         pub fn tlbpol_reason_cite_checked(reason: u32, arch: u32) -> Option<*const c_char> {{\n    {}\n}}\n\
         /// Whether the header declares `tlbpol_reason_cite()`.\n\
         pub const TLBPOL_HAVE_REASON_CITE: bool = {};\n",
        body, declared
    );
    write_if_changed(&out.join("cite.rs"), &s);
}

/// Configurations for TLBPOL_ENGINE_SIZE(): (cpus, max_as, batch_pages, flush_ceiling, nodes).
const GRID: &[(u64, u64, u64, u64, u64)] = &[
    (1, 1, 1, 1, 0),
    (4, 64, 512, 33, 0),
    (4, 64, 512, 33, 2),
    (64, 8, 100, 1, 0),
    (65, 300, 65536, 200, 3),
    (4096, 1, 4, 2, 1),
    (7, 65536, 16, 40, 0),
];

fn write_checks(root: &Path, inc_out: &Path, out: &Path, cc: &Tool, api: &Api) {
    let mut c = String::new();
    c.push_str("#include <errno.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <tlbpol/tlbpol.h>\n");
    c.push_str("#define V(n) printf(\"%llu\\n\", (unsigned long long)(n));\n");
    c.push_str("#define S(n) printf(\"%s\\n\", n);\n");
    c.push_str("#define F(t, f) V(offsetof(struct t, f)) V(sizeof(((struct t *)0)->f))\n");
    c.push_str("int main(void)\n{\n");
    // The Rust side of each value, in the order the program prints them.
    let mut rust: Vec<(String, String, bool)> = Vec::new(); // what, Rust expression, string?
    for (name, is_str) in &api.defines {
        c.push_str(&format!("\t{}({})\n", if *is_str { "S" } else { "V" }, name));
        let expr = if *is_str { name.clone() } else { format!("{} as u64", name) };
        rust.push((name.clone(), expr, *is_str));
    }
    for name in &api.enum_values {
        c.push_str(&format!("\tV({})\n", name));
        rust.push((name.clone(), format!("{} as u64", name), false));
    }
    for (s, fields) in &api.structs {
        c.push_str(&format!("\tV(sizeof(struct {s})) V(_Alignof(struct {s}))\n", s = s));
        rust.push((format!("sizeof(struct {})", s), format!("core::mem::size_of::<{}>() as u64", s), false));
        rust.push((format!("_Alignof(struct {})", s), format!("core::mem::align_of::<{}>() as u64", s), false));
        for f in fields {
            c.push_str(&format!("\tF({}, {})\n", s, f));
            rust.push((format!("offsetof(struct {}, {})", s, f), format!("offset_of!({}, {})", s, f), false));
            rust.push((format!("sizeof(struct {}.{})", s, f), format!("field_size!({}, {})", s, f), false));
        }
    }
    for g in GRID {
        let args = format!("{}, {}, {}, {}, {}", g.0, g.1, g.2, g.3, g.4);
        c.push_str(&format!("\tV(TLBPOL_ENGINE_SIZE({}))\n", args));
        rust.push((format!("TLBPOL_ENGINE_SIZE({})", args), format!("TLBPOL_ENGINE_SIZE({})", args), false));
    }
    for e in ["EINVAL", "ERANGE", "ENOMEM", "EBUSY", "EEXIST"] {
        c.push_str(&format!("\tV({})\n", e));
        rust.push((e.to_string(), format!("errno::{} as u64", e), false));
    }
    c.push_str("\tV((char)-1 < 0)\n");
    rust.push(("char is signed".to_string(), "(c_char::MIN != 0) as u64".to_string(), false));
    c.push_str("\treturn 0;\n}\n");
    let src = out.join("layout.c");
    write_if_changed(&src, &c);

    let target = env::var("TARGET").unwrap();
    let host = env::var("HOST").unwrap();
    let mut checks = String::from("// Generated by tlbpol-sys's build.rs from include/tlbpol/tlbpol.h.\n");
    if target != host {
        // The program cannot run here; the check is skipped, and says so.
        checks.push_str("const LAYOUT_MEASURED: bool = false;\nfn checks(_c: &mut Checker) {}\n");
        write_if_changed(&out.join("checks.rs"), &checks);
        println!("cargo:warning=tlbpol-sys: cross build: the layout checks are not run");
        return;
    }
    let exe = out.join("layout");
    let mut cmd = cc.cmd();
    cmd.arg("-std=c11").arg("-I").arg(root.join("include")).arg("-I").arg(inc_out).arg(&src).arg("-o").arg(&exe);
    run(cmd, "compiling the layout program");
    let printed = run(Command::new(&exe), "running the layout program");
    let values: Vec<&str> = printed.lines().collect();
    assert_eq!(values.len(), rust.len(), "tlbpol-sys: the layout program printed a different count");
    checks.push_str("const LAYOUT_MEASURED: bool = true;\n#[allow(unused_unsafe)]\nfn checks(c: &mut Checker) {\n");
    for ((what, expr, is_str), v) in rust.iter().zip(values) {
        if *is_str {
            checks.push_str(&format!("    c.str({:?}, {}, {:?});\n", what, expr, v));
        } else {
            checks.push_str(&format!("    c.num({:?}, {}, {});\n", what, expr, v));
        }
    }
    for (name, ty, hosted) in &api.functions {
        let gate = if *hosted { "#[cfg(feature = \"hosted\")] " } else { "" };
        checks.push_str(&format!("    {}{{ let f: {} = {}; c.function({:?}, f as usize); }}\n", gate, ty, name, name));
    }
    checks.push_str("}\n");
    write_if_changed(&out.join("checks.rs"), &checks);
}

// ---------------------------------------------------------------------------
// Linking

fn link_hosted(root: &Path) {
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
    let end = rest.find(|c| c == ')' || c == ']').unwrap();
    rest[..end].split('\'').skip(1).step_by(2).map(str::to_string).collect()
}

fn build_core(root: &Path, inc_out: &Path, out: &Path, cc: &Tool, meson: &str) {
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
