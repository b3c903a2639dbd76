//! The library's modules form layers (`docs/architecture.md`): every `crate::` path in every file
//! under `src/`, test modules included, names a module of the same layer or one below, the modules
//! import each other in no cycle, and no two files name each other. `super::` and `self::` paths
//! count as the `crate::` paths they stand for (inline modules such as `mod tests` included).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The layers, bottom first. A module may use its own layer and the layers below.
const LAYERS: [(&str, &[&str]); 9] = [
    (
        "leaves",
        &[
            "digest",
            "json_error",
            "plural",
            "text",
            "time",
            "secrets",
            "fault",
            "output",
            "terminal",
            "stats",
            "scratch_file",
        ],
    ),
    ("run facts", &["run"]),
    (
        "tools, models, gate",
        &["process", "tools", "model", "gate"],
    ),
    ("loop", &["agent"]),
    ("trace format", &["trace"]),
    (
        "replay, import, report, export",
        &["replay", "import", "report", "export", "proxy"],
    ),
    ("evaluation", &["eval"]),
    ("renderers", &["html"]),
    ("command line", &["cli"]),
];

/// Every `.rs` file under `src/`, by its path relative to `src/`, with its text.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).expect("src/ lists") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let rel = path.strip_prefix(root).expect("under src/");
                let text = fs::read_to_string(&path).expect("a source file reads");
                out.insert(rel.to_string_lossy().into_owned(), text);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out
}

/// The text without comments (doc links name modules without importing them) and without the
/// contents of string literals.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            // A raw string, `r#"..."#`: it ends at a quote followed by as many `#`.
            'r' if matches!(chars.peek(), Some('#' | '"'))
                && !out.ends_with(|c: char| c.is_alphanumeric() || c == '_') =>
            {
                let mut hashes = 0;
                while chars.next_if_eq(&'#').is_some() {
                    hashes += 1;
                }
                if chars.next() != Some('"') {
                    continue;
                }
                let mut closing = 0;
                for c in chars.by_ref() {
                    closing = match c {
                        '"' => 1,
                        '#' if closing > 0 => closing + 1,
                        _ => 0,
                    };
                    if closing == hashes + 1 {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push('"');
            }
            // A char literal holding a quote would open a string: skip `'"'`.
            '\'' if chars.peek() == Some(&'"') => {
                chars.next();
                chars.next();
            }
            c => out.push(c),
        }
    }
    out
}

/// Every path after `crate::` in `code`, with `use crate::{a::b, c}` groups expanded: `a::b`,
/// `c`.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        expand(rest, Vec::new(), &mut out);
    }
    out
}

/// The module path of a file under `src/`: `a/b.rs` and `a/b/mod.rs` are `a::b`, the crate roots
/// are the crate.
fn module_path(file: &str) -> Vec<String> {
    let file = file.strip_suffix(".rs").unwrap_or(file);
    let mut path: Vec<String> = file.split('/').map(str::to_owned).collect();
    if path.last().is_some_and(|last| last == "mod")
        || (path.len() == 1 && (path[0] == "lib" || path[0] == "main"))
    {
        path.pop();
    }
    path
}

/// Every path in the code of `file` as the `crate::` path it names: `crate::` paths as they are,
/// `super::` and `self::` paths resolved from the module they are written in (the file's, or an
/// inline `mod name { ... }` in it).
fn paths_of(file: &str, code: &str) -> Vec<Vec<String>> {
    let mut out = crate_paths(code);
    let base = module_path(file);
    // The inline modules open at each point: (name, the brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let bytes = code.as_bytes();
    let mut at = 0;
    let starts_word =
        |at: usize| at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    while at < bytes.len() {
        match bytes[at] {
            // A char literal such as `'{'` opens no block.
            b'\'' if bytes.get(at + 2) == Some(&b'\'') => {
                at += 3;
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                if inline.last().is_some_and(|(_, open)| *open == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            b'm' if starts_word(at) && code[at..].starts_with("mod ") => {
                let rest = &code[at + 4..];
                let name_len = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                if rest[name_len..].trim_start().starts_with('{') {
                    inline.push((rest[..name_len].to_owned(), depth + 1));
                }
            }
            b's' if starts_word(at)
                && (code[at..].starts_with("super::") || code[at..].starts_with("self::")) =>
            {
                let mut module: Vec<String> = base.clone();
                module.extend(inline.iter().map(|(name, _)| name.clone()));
                let mut rest = &code[at..];
                if let Some(after) = rest.strip_prefix("self::") {
                    rest = after;
                } else {
                    while let Some(after) = rest.strip_prefix("super::") {
                        module.pop();
                        rest = after;
                    }
                }
                let skipped = code.len() - at - rest.len();
                expand(rest, module, &mut out);
                at += skipped;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    out
}

/// Reads one path (or a `{...}` group of paths) at the start of `text`, under `prefix`.
fn expand(text: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    expand(&group[start..i], prefix.clone(), out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&group[start..i], prefix.clone(), out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    if end == 0 {
        if !prefix.is_empty() {
            out.push(prefix);
        }
        return;
    }
    let mut path = prefix;
    path.push(text[..end].to_owned());
    match text[end..].strip_prefix("::") {
        Some(rest) => expand(rest, path, out),
        None => out.push(path),
    }
}

/// The file a path names: the longest prefix of it that is a file (`a/b.rs` or `a/b/mod.rs`).
fn file_of(path: &[String], files: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len()).rev().find_map(|n| {
        let base = path[..n].join("/");
        [format!("{base}.rs"), format!("{base}/mod.rs")]
            .into_iter()
            .find(|candidate| files.contains_key(candidate))
    })
}

/// The top-level module a file under `src/` belongs to (`None`: the crate roots).
fn module_of(file: &str) -> Option<&str> {
    let top = file.split('/').next()?;
    let top = top.strip_suffix(".rs").unwrap_or(top);
    (top != "lib" && top != "main").then_some(top)
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

#[test]
fn no_module_imports_a_layer_above_its_own() {
    let files = sources();
    let mut upward = Vec::new();
    let mut unplaced = BTreeSet::new();
    for (file, text) in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let Some(layer) = layer_of(module) else {
            unplaced.insert(module.to_owned());
            continue;
        };
        for path in paths_of(file, &code_of(text)) {
            let Some(target) = path.first().map(String::as_str) else {
                continue;
            };
            if target == module {
                continue;
            }
            match layer_of(target) {
                Some(to) if to > layer => upward.push(format!(
                    "{file} uses crate::{} ({}) from {}",
                    path.join("::"),
                    LAYERS[to].0,
                    LAYERS[layer].0
                )),
                Some(_) => {}
                None => {
                    if file_of(&path, &files).is_some() {
                        unplaced.insert(target.to_owned());
                    }
                }
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules in no layer (add them to LAYERS and docs/architecture.md): {unplaced:?}"
    );
    assert!(
        upward.is_empty(),
        "imports up a layer:\n{}",
        upward.join("\n")
    );
}

#[test]
fn modules_import_each_other_in_no_cycle() {
    let files = sources();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let targets = graph.entry(module.to_owned()).or_default();
        for path in paths_of(file, &code_of(text)) {
            if !path.is_empty() && path[0] != module && file_of(&path[..1], &files).is_some() {
                targets.insert(path[0].clone());
            }
        }
    }
    // Depth-first search; a module met again while still on the stack closes a cycle.
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|m| m == module) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(module.to_owned());
            return Some(cycle);
        }
        if !done.insert(module.to_owned()) {
            return None;
        }
        stack.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        let cycle = visit(module, &graph, &mut Vec::new(), &mut done);
        assert_eq!(cycle, None, "modules import each other in a cycle");
    }
}

#[test]
fn no_two_files_import_each_other() {
    let files = sources();
    let mut uses: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &files {
        let targets = uses.entry(file.as_str()).or_default();
        for path in paths_of(file, &code_of(text)) {
            if let Some(target) = file_of(&path, &files).filter(|target| target != file) {
                targets.insert(target);
            }
        }
    }
    let mutual: Vec<String> = uses
        .iter()
        .flat_map(|(file, targets)| {
            targets
                .iter()
                .filter(|target| {
                    target.as_str() > *file
                        && uses.get(target.as_str()).is_some_and(|t| t.contains(*file))
                })
                .map(move |target| format!("{file} <-> {target}"))
        })
        .collect();
    assert!(
        mutual.is_empty(),
        "files that import each other:\n{}",
        mutual.join("\n")
    );
}

#[test]
fn the_reader_finds_paths_in_groups_and_skips_comments_and_strings() {
    let code = code_of(
        "use crate::{a::b, c::{d, e::F}};\n// crate::hidden\nlet s = \"crate::quoted\";\nlet r = r#\"\"crate::raw\"\"#;\nlet q = '\"';\nx = crate::g::h(1);",
    );
    let paths: Vec<String> = crate_paths(&code).iter().map(|p| p.join("::")).collect();
    assert_eq!(paths, ["a::b", "c::d", "c::e::F", "g::h"]);
}

#[test]
fn the_reader_resolves_super_and_self_paths_from_their_module() {
    let code = code_of(
        "use super::a::B;\nuse self::c::{d, e};\nfn f() { super::super::g(); }\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::h;\n}\nuse super::i;",
    );
    let paths: Vec<String> = paths_of("x/y/z.rs", &code)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "x::y::a::B",
            "x::y::z::c::d",
            "x::y::z::c::e",
            "x::g",
            "x::y::z",
            "x::y::h",
            "x::y::i"
        ]
    );
    assert_eq!(module_path("x/mod.rs"), ["x"]);
    assert_eq!(module_path("lib.rs"), Vec::<String>::new());
}
