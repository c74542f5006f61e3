//! The header, read just well enough for its own regular style: its
//! macros, enum values, structures and function signatures.

#[derive(Default)]
pub(crate) struct Api {
    /// Object-like macros: name, whether its value is a string literal.
    pub(crate) defines: Vec<(String, bool)>,
    pub(crate) enum_values: Vec<String>,
    /// Structures: name, fields.
    pub(crate) structs: Vec<(String, Vec<String>)>,
    /// Functions: name, Rust fn-pointer type, hosted build only (declared
    /// `TLBPOL_HOSTED_API`: unavailable under `TLBPOL_FREESTANDING`).
    pub(crate) functions: Vec<(String, String, bool)>,
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

pub(crate) fn parse_header(text: &str, api: &mut Api) {
    let text = strip_comments(text);
    // Conditional stack: whether each open #if is a C++-only region.  The
    // hosted-only functions are not in a region: each is declared with
    // TLBPOL_HOSTED_API instead of TLBPOL_API (see statement()).
    let mut stack: Vec<bool> = Vec::new();
    let mut stmt = String::new();
    let mut depth = 0i32;
    for line in text.lines() {
        let t = line.trim();
        let cplusplus = stack.iter().any(|&s| s);
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim();
            if d.starts_with("if") {
                let words: Vec<&str> = d.split_whitespace().collect();
                stack.push(words == ["ifdef", "__cplusplus"]);
            } else if d.starts_with("endif") {
                stack.pop();
            } else if let Some(def) = d.strip_prefix("define") {
                let def = def.trim_start();
                let name_end = def.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(def.len());
                let name = &def[..name_end];
                let rest = &def[name_end..];
                // Include guards and declaration attributes, not constants
                // (gen/tlbpol_api.py's NOT_CONSTANTS).
                let guard = matches!(
                    name,
                    "TLBPOL_TLBPOL_H" | "TLBPOL_VERSION_H" | "TLBPOL_API" | "TLBPOL_HOSTED_API" | "TLBPOL_FREESTANDING"
                );
                if !rest.starts_with('(') && !guard && name.starts_with("TLBPOL") {
                    api.defines.push((name.to_string(), rest.trim().starts_with('"')));
                }
            }
            continue;
        }
        if cplusplus || t.is_empty() {
            continue;
        }
        stmt.push_str(t);
        stmt.push(' ');
        depth += t.matches('{').count() as i32 - t.matches('}').count() as i32;
        if depth == 0 && t.ends_with(';') {
            statement(stmt.trim(), api);
            stmt.clear();
        }
    }
    assert!(stack.is_empty() && stmt.trim().is_empty(), "tlbpol-sys: could not read the header to its end");
}

fn statement(s: &str, api: &mut Api) {
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
    } else if let Some((f, hosted)) = s
        .strip_prefix("TLBPOL_API ")
        .map(|f| (f, false))
        .or_else(|| s.strip_prefix("TLBPOL_HOSTED_API ").map(|f| (f, true)))
    {
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
