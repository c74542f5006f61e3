//! Every `unsafe` block and `unsafe impl` in the sources of both crates has
//! a `// SAFETY:` comment right above it (clippy's
//! `undocumented_unsafe_blocks`, which `src/lib.rs` denies, for toolchains
//! without clippy), and every `unsafe fn` a `# Safety` section in its doc
//! comment (clippy's `missing_safety_doc`, private functions too).
//!
//! "Right above": the comment lines directly over the line where the
//! `unsafe` keyword stands, with nothing but other `//` lines between, one
//! of them starting `// SAFETY:`.  A line with two blocks needs one
//! comment; a block inside a longer statement needs its comment over the
//! line it is on, so write such a block on a line of its own.

use std::fs;
use std::path::{Path, PathBuf};

/// A place where `unsafe` is used that needs its justification.
#[derive(Debug, PartialEq)]
enum Use {
    /// `unsafe {` or `unsafe impl`: needs `// SAFETY:` above.
    Block,
    /// `unsafe fn` or `unsafe extern "C" fn` (a definition, not a function
    /// pointer type): needs `/// # Safety` in its doc comment.
    Fn,
}

/// Where a line starts: in code, or inside a `/* */` comment or a string
/// literal that an earlier line opened.
#[derive(Clone, Copy, PartialEq)]
enum State {
    Code,
    BlockComment,
    Str,
}

/// The code of one line: comments and string and char literals blanked,
/// so that `unsafe` in them is not taken for code.  `state` carries a
/// comment or string over lines.
fn code_of(line: &str, state: &mut State) -> String {
    let b = line.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match *state {
            State::BlockComment => {
                if b[i..].starts_with(b"*/") {
                    *state = State::Code;
                    i += 2;
                } else {
                    i += 1;
                }
                out.push(' ');
            }
            State::Str => {
                match b[i] {
                    b'\\' => i += 2,
                    b'"' => {
                        *state = State::Code;
                        i += 1;
                    }
                    _ => i += 1,
                }
                out.push(' ');
            }
            State::Code => match b[i] {
                b'/' if b[i..].starts_with(b"//") => break,
                b'/' if b[i..].starts_with(b"/*") => {
                    *state = State::BlockComment;
                    i += 2;
                    out.push(' ');
                }
                b'"' => {
                    *state = State::Str;
                    i += 1;
                    out.push(' ');
                }
                b'\'' if i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') => {
                    // a char literal ('x', '\n', '\''), not a lifetime
                    let from = if b[i + 1] == b'\\' { i + 3 } else { i + 2 };
                    let end = b.get(from..).and_then(|r| r.iter().position(|&c| c == b'\'')).map_or(b.len(), |p| from + p);
                    i = end + 1;
                    out.push_str("' '");
                }
                c => {
                    out.push(char::from(c));
                    i += 1;
                }
            },
        }
    }
    out
}

/// The uses of `unsafe` on a line of code.
fn uses(code: &str) -> Vec<Use> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(p) = rest.find("unsafe") {
        let before = rest[..p].chars().last();
        let after = &rest[p + "unsafe".len()..];
        rest = after;
        if before.map_or(false, |c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let after = after.trim_start();
        if after.starts_with('{') || after.starts_with("impl") {
            found.push(Use::Block);
        } else if (after.starts_with("fn") || after.starts_with("extern")) && is_fn_definition(after) {
            // `unsafe fn name(` and `unsafe extern "C" fn name(` define a
            // function; `unsafe extern "C" fn(` is a pointer type.
            found.push(Use::Fn);
        }
    }
    found
}

fn is_fn_definition(after_unsafe: &str) -> bool {
    match after_unsafe.find("fn") {
        Some(p) => {
            let name = after_unsafe[p + 2..].trim_start();
            name.chars().next().map_or(false, |c| c.is_alphabetic() || c == '_')
        }
        None => false,
    }
}

/// The problems of one source file: "path:line: what".
fn check_source(path: &str, text: &str) -> (usize, Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut state = State::Code;
    let mut count = 0;
    let mut problems = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        for u in uses(&code_of(line, &mut state)) {
            count += 1;
            // The lines right above: comments (and, for a function,
            // attributes) until anything else.
            let above = lines[..i].iter().rev().map(|l| l.trim()).take_while(|l| match u {
                Use::Block => l.starts_with("//") && !l.starts_with("///") && !l.starts_with("//!"),
                Use::Fn => l.starts_with("///") || l.starts_with("#["),
            });
            let ok = match u {
                Use::Block => above.clone().any(|l| l.starts_with("// SAFETY:")),
                Use::Fn => above.clone().any(|l| l == "/// # Safety"),
            };
            if !ok {
                let want = if u == Use::Block { "a `// SAFETY:` comment" } else { "a `/// # Safety` section" };
                problems.push(format!("{}:{}: {} lacks {} right above it: {}", path, i + 1, kind(&u), want, line.trim()));
            }
        }
    }
    (count, problems)
}

fn kind(u: &Use) -> &'static str {
    match u {
        Use::Block => "an unsafe block or impl",
        Use::Fn => "an unsafe fn",
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {}", dir.display(), e)) {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().map_or(false, |x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_unsafe_block_has_a_safety_comment() {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&here.join("src"), &mut files);
    rust_files(&here.join("../tlbpol-sys/src"), &mut files);
    files.sort();
    let (mut blocks, mut problems) = (0, Vec::new());
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let (n, p) = check_source(&f.display().to_string(), &text);
        blocks += n;
        problems.extend(p);
    }
    // Not vacuous: the sources are where this looked.
    assert!(blocks >= 50, "only {} uses of unsafe found in {:?}: wrong directory?", blocks, files);
    assert!(problems.is_empty(), "{} of {} uses of unsafe undocumented:\n{}", problems.len(), blocks, problems.join("\n"));
}

#[test]
fn the_checker_finds_what_it_should() {
    let good = "\
fn f(p: *const u8) -> u8 {
    // why it holds,
    // SAFETY: p is valid
    unsafe { *p }
}
// SAFETY: no state
unsafe impl Send for X {}
/// Doc.
///
/// # Safety
/// p is valid.
#[inline]
unsafe fn g(p: *const u8) {}
type F = unsafe extern \"C\" fn(u32);
struct S { f: Option<unsafe extern \"C\" fn(*mut c_void)> }
// \"unsafe {\" in a comment, and in strings and a block comment:
const S: &str = \"unsafe {\";
const T: &str = \"a \\\" unsafe { \\
    unsafe impl\";
/* unsafe {
   unsafe impl */ const C: char = '\\'';
";
    assert_eq!(check_source("good", good), (3, vec![]));

    let bad = "\
fn f(p: *const u8) -> u8 {
    let x = 1; // SAFETY: not above
    unsafe { *p }
}
/// SAFETY: a doc comment is not it
unsafe impl Send for X {}
// SAFETY: one comment
let a = 1;
let b = unsafe { g() };
/// No section.
unsafe extern \"C\" fn h(arg: *mut c_void) {}
";
    let (n, p) = check_source("bad", bad);
    assert_eq!(n, 4);
    let lines: Vec<&str> = p.iter().map(|s| s.split(": ").next().unwrap()).collect();
    assert_eq!(lines, ["bad:3", "bad:6", "bad:9", "bad:11"], "{:#?}", p);
}
