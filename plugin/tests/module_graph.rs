//! The plugin's modules import each other in layers (issue 38). `main.rs`
//! is the entry and the dispatch, and no module imports from it; a verb
//! of `cmd/` imports no other verb; the web page (`ui/`) imports no verb
//! at all, and nothing but `main.rs` imports `cmd/` or `ui/` from outside;
//! and no two modules, nor two top-level folders as wholes, import each
//! other. What the verbs and the page share sits beside `client.rs`:
//! `task/`, `outputs/`, `show`, `print`, `safe`.
//!
//! Reads the sources as tokens (comments and string literals dropped,
//! `#[cfg(test)]` items left out): each `use` tree and each path in code
//! that starts at `crate`, `$crate`, `self`, `super` or a child module is
//! an arrow to the deepest module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`""` for main.rs, `cmd::get`, `task::logs`) → its source.
type Sources = BTreeMap<String, String>;
/// Module → the modules it imports from.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every non-test source file below `dir`, by module path.
fn read_tree(dir: &Path, module: &[String], out: &mut Sources) {
    let listing = std::fs::read_dir(dir).and_then(|d| d.collect::<Result<Vec<_>, _>>());
    let mut files: Vec<_> = listing
        .expect("list src")
        .iter()
        .map(|e| e.path())
        .collect();
    // In name order, so a failure names the same cycle each run.
    files.sort();
    for p in files {
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        // Test-only modules: `#[cfg(test)] mod fixtures;`, `tests/`.
        if stem == "tests" || stem == "fixtures" {
            continue;
        }
        let mut path = module.to_vec();
        if p.is_dir() {
            path.push(stem.to_owned());
            read_tree(&p, &path, out);
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        if stem != "mod" && stem != "main" {
            path.push(stem.to_owned());
        }
        let text = std::fs::read_to_string(&p).expect("read source");
        out.insert(path.join("::"), text);
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Colons,
    Punct(char),
}

/// The index just past a string literal's closing quote; `at` is the
/// index of its first character after the opening quote, `hashes` the
/// `#`s of a raw string (`None`: not raw, so `\` escapes).
fn string_end(s: &[char], mut at: usize, hashes: Option<usize>) -> usize {
    while at < s.len() {
        match (s[at], hashes) {
            ('\\', None) => at += 2,
            ('"', None) => return at + 1,
            ('"', Some(n)) if s[at + 1..].iter().take(n).filter(|c| **c == '#').count() == n => {
                return at + 1 + n;
            }
            _ => at += 1,
        }
    }
    at
}

/// `text` as words, `::` and single punctuation; comments, string and
/// character literals and lifetimes' quotes left out.
fn tokens(text: &str) -> Vec<Tok> {
    let s: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let (c, next) = (s[i], s.get(i + 1).copied());
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            i = s[i..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(s.len(), |n| i + n);
        } else if c == '/' && next == Some('*') {
            let rest: String = s[i + 2..].iter().collect();
            i = rest
                .find("*/")
                .map_or(s.len(), |n| i + 2 + rest[..n].chars().count() + 2);
        } else if c == '"' {
            i = string_end(&s, i + 1, None);
        } else if c == '\'' {
            // 'x' and '\n' are characters; 'a alone is a lifetime.
            i += match (next, s.get(i + 2)) {
                (Some('\\'), _) => s[i + 3..]
                    .iter()
                    .position(|c| *c == '\'')
                    .map_or(1, |n| n + 4),
                (_, Some('\'')) => 3,
                _ => 1,
            };
        } else if c == ':' && next == Some(':') {
            out.push(Tok::Colons);
            i += 2;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
                i += 1;
            }
            let word: String = s[start..i].iter().collect();
            let hashes = s[i..].iter().take_while(|c| **c == '#').count();
            match (word.as_str(), s.get(i + hashes)) {
                ("r" | "br", Some('"')) => i = string_end(&s, i + hashes + 1, Some(hashes)),
                ("b" | "c", Some('"')) if hashes == 0 => i = string_end(&s, i + 1, None),
                _ => out.push(Tok::Word(word)),
            }
        } else {
            out.push(Tok::Punct(c));
            i += 1;
        }
    }
    out
}

/// `toks` without the items under `#[cfg(test)]`: each runs to its `;`
/// or to the `}` that closes its body.
fn without_tests(toks: &[Tok]) -> Vec<Tok> {
    let cfg_test: Vec<Tok> = tokens("#[cfg(test)]");
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !toks[i..].starts_with(&cfg_test) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        i += cfg_test.len();
        let mut depth = 0;
        while i < toks.len() {
            match toks[i] {
                Tok::Punct('{' | '(' | '[') => depth += 1,
                Tok::Punct('}') if depth == 1 => break,
                Tok::Punct('}' | ')' | ']') => depth -= 1,
                Tok::Punct(';') if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    out
}

/// The paths of the `use` tree starting at `i`, each after `prefix`;
/// returns the index after the tree.
fn use_tree(toks: &[Tok], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    while let Some(t) = toks.get(i) {
        match t {
            Tok::Word(w) if w == "as" => i += 2,
            Tok::Word(w) => {
                path.push(w.clone());
                i += 1;
            }
            Tok::Colons | Tok::Punct('*') => i += 1,
            Tok::Punct('{') => {
                i += 1;
                while !matches!(toks.get(i), None | Some(Tok::Punct('}'))) {
                    i = use_tree(toks, i, &path, out);
                    if toks.get(i) == Some(&Tok::Punct(',')) {
                        i += 1;
                    }
                }
                return i + 1;
            }
            _ => break,
        }
    }
    out.push(path);
    i
}

/// Every path in `toks`: the leaves of each `use` tree, and each
/// `a::b::c` in code (read from its first word).
fn paths(toks: &[Tok]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let after_colons = i > 0 && toks[i - 1] == Tok::Colons;
        match &toks[i] {
            Tok::Word(w) if w == "use" => i = use_tree(toks, i + 1, &[], &mut out),
            Tok::Word(w) if !after_colons && toks.get(i + 1) == Some(&Tok::Colons) => {
                let mut path = vec![w.clone()];
                i += 1;
                while toks.get(i) == Some(&Tok::Colons) {
                    match toks.get(i + 1) {
                        Some(Tok::Word(next)) => path.push(next.clone()),
                        _ => break,
                    }
                    i += 2;
                }
                out.push(path);
            }
            _ => i += 1,
        }
    }
    out
}

/// The deepest known module that `path`, written in `module`, names;
/// `None` for a path into another crate or to a local item.
fn target(module: &str, path: &[String], known: &BTreeSet<String>) -> Option<String> {
    let mut base: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    let first = path.first()?.as_str();
    let rest = match first {
        "crate" => {
            base.clear();
            &path[1..]
        }
        "self" => &path[1..],
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            base.truncate(base.len().saturating_sub(ups));
            &path[ups..]
        }
        child if known.contains(&join(&base, &[child])) => path,
        _ => return None,
    };
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    (0..=rest.len())
        .rev()
        .map(|n| join(&base, &rest[..n]))
        .find(|m| known.contains(m))
}

fn join(base: &[&str], rest: &[&str]) -> String {
    base.iter()
        .chain(rest)
        .copied()
        .collect::<Vec<_>>()
        .join("::")
}

/// Who imports from whom.
fn graph(sources: &Sources) -> Graph {
    let known: BTreeSet<String> = sources.keys().cloned().collect();
    let mut g = Graph::new();
    for (module, text) in sources {
        let toks = without_tests(&tokens(text));
        for p in paths(&toks) {
            if let Some(to) = target(module, &p, &known).filter(|t| t != module) {
                g.entry(module.clone()).or_default().insert(to);
            }
        }
    }
    g
}

/// A cycle in `g`, as the modules around it (the first one again last).
fn cycle(g: &Graph) -> Option<Vec<String>> {
    fn walk(n: &str, g: &Graph, done: &mut BTreeSet<String>, path: &mut Vec<String>) -> bool {
        if let Some(at) = path.iter().position(|p| p == n) {
            path.drain(..at);
            path.push(n.to_owned());
            return true;
        }
        if done.contains(n) {
            return false;
        }
        path.push(n.to_owned());
        for m in g.get(n).into_iter().flatten() {
            if walk(m, g, done, path) {
                return true;
            }
        }
        path.pop();
        done.insert(n.to_owned());
        false
    }
    let mut done = BTreeSet::new();
    g.keys().find_map(|n| {
        let mut path = Vec::new();
        walk(n, g, &mut done, &mut path).then_some(path)
    })
}

/// The top-level module (folder or file) `m` belongs to.
fn top(m: &str) -> &str {
    m.split("::").next().unwrap_or_default()
}

/// The verb of `cmd/` that `m` belongs to, if any.
fn verb(m: &str) -> Option<&str> {
    m.strip_prefix("cmd::")?.split("::").next()
}

/// What breaks the layering, one line each.
fn violations(sources: &Sources) -> Vec<String> {
    let mut g = graph(sources);
    let mut out = Vec::new();
    for (from, to) in g.iter().flat_map(|(f, ts)| ts.iter().map(move |t| (f, t))) {
        if to.is_empty() && !from.is_empty() {
            out.push(format!("{from} imports from main.rs"));
        }
        if let (Some(a), Some(b)) = (verb(from), verb(to))
            && a != b
        {
            out.push(format!("{from} imports {to}: verbs share through task/"));
        }
        if top(from) == "ui" && top(to) == "cmd" {
            out.push(format!(
                "{from} imports {to}: the page uses task/, not cmd/"
            ));
        } else if ["cmd", "ui"].contains(&top(to)) && ![top(to), ""].contains(&top(from)) {
            out.push(format!("{from} imports {to}: only main.rs reaches into it"));
        }
    }
    // The entry dispatches to everything and is imported by nothing.
    g.remove("");
    if let Some(c) = cycle(&g) {
        out.push(format!("import cycle: {}", c.join(" -> ")));
    }
    let mut folders = Graph::new();
    for (from, to) in g.iter().flat_map(|(f, ts)| ts.iter().map(move |t| (f, t))) {
        if top(from) != top(to) && !to.is_empty() {
            let tos = folders.entry(top(from).to_owned()).or_default();
            tos.insert(top(to).to_owned());
        }
    }
    if let Some(c) = cycle(&folders) {
        out.push(format!("import cycle between folders: {}", c.join(" -> ")));
    }
    out
}

#[test]
fn the_plugin_is_layered() {
    let mut sources = Sources::new();
    read_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &[],
        &mut sources,
    );
    for m in ["", "cmd::get", "task::logs", "ui::rows", "print"] {
        assert!(
            sources.contains_key(m),
            "{m:?} not found in {:?}",
            sources.keys()
        );
    }
    let bad = violations(&sources);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn fake(modules: &[(&str, &str)]) -> Sources {
    modules
        .iter()
        .map(|(m, text)| ((*m).to_owned(), (*text).to_owned()))
        .collect()
}

#[test]
fn the_guard_sees_a_planted_bad_edge_of_each_kind() {
    let sources = fake(&[
        (
            "",
            "mod cmd; mod print; mod ui;\nfn main() { cmd::get::run(); }\npub fn out() {}",
        ),
        ("cmd", "pub mod cron;\npub mod get;"),
        (
            "cmd::get",
            "use crate::cmd::{cron::table, get as _};\nfn f() { crate::out(\"x\"); }",
        ),
        (
            "cmd::cron",
            "pub fn table() { crate::print::note!(\"t\"); }",
        ),
        (
            "print",
            "macro_rules! note { () => { $crate::ui::rows::p() } }",
        ),
        ("ui", "mod rows;"),
        ("ui::rows", "pub fn p() { super::super::cmd::get::f() }"),
    ]);
    assert_eq!(
        violations(&sources),
        [
            "cmd::get imports from main.rs",
            "cmd::get imports cmd::cron: verbs share through task/",
            "print imports ui::rows: only main.rs reaches into it",
            "ui::rows imports cmd::get: the page uses task/, not cmd/",
            "import cycle: cmd::cron -> print -> ui::rows -> cmd::get -> cmd::cron",
            "import cycle between folders: cmd -> print -> ui -> cmd",
        ]
    );
}

#[test]
fn test_code_comments_and_strings_are_not_imports() {
    let sources = fake(&[
        ("", "mod a; mod b;"),
        ("a", "use crate::b;"),
        (
            "b",
            "// crate::a::x\nlet s = \"crate::a\"; let r = r#\"crate::a\"#; let c = '\"'; let q = '\\'';\n\
             /* crate::a */ fn f<'a>(x: &'a str) {}\n\
             #[cfg(test)]\nmod tests { use crate::a; }\n#[cfg(test)]\nuse crate::a::y;",
        ),
    ]);
    assert_eq!(violations(&sources), Vec::<String>::new());
    let planted = fake(&[
        ("", "mod a; mod b;"),
        ("a", "use crate::b;"),
        ("b", "use super::a;"),
    ]);
    assert_eq!(
        violations(&planted),
        [
            "import cycle: a -> b -> a",
            "import cycle between folders: a -> b -> a"
        ]
    );
}
