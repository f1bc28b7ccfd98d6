//! The operator's modules import each other without cycles (issue 10): a
//! module that needs another's item imports it from that module, never
//! through a parent that re-exports it, and no two modules lean on each
//! other. Reads the sources: every `crate::` path (in `use` and in code)
//! is an edge to the deepest module it names. Test code is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Module path (`status::facts`) of every non-test source file.
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        if name == "tests" || name == "fixtures" {
            continue;
        }
        if p.is_dir() {
            let mut next = prefix.to_vec();
            next.push(name);
            modules(&p, &next, out);
        } else if p.extension().is_some_and(|e| e == "rs") && name != "main" {
            let mut path = prefix.to_vec();
            if name != "mod" && name != "lib" {
                path.push(name);
            }
            out.insert(path.join("::"), p);
        }
    }
}

/// The deepest known module that `path` (segments after `crate`) names.
fn resolve(path: &[&str], known: &BTreeMap<String, PathBuf>) -> String {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|m| known.contains_key(m))
        .unwrap_or_default()
}

/// Source with `#[cfg(test)] mod tests { ... }` blocks and comments removed.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut depth = 0;
    let mut pending_cfg_test = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let trimmed = code.trim();
        if skip_depth.is_none() && trimmed == "#[cfg(test)]" {
            pending_cfg_test = true;
            continue;
        }
        if pending_cfg_test {
            pending_cfg_test = false;
            if trimmed.ends_with('{') {
                skip_depth = Some(depth);
            } else {
                continue; // `mod tests;` or a test-only item on one line
            }
        }
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every `crate::…` path in `code`, with `{a, b::c}` groups expanded.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let base: Vec<String> = rest[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if rest[end..].starts_with('{') {
            let close = rest[end..].find('}').map_or(rest.len(), |c| end + c);
            for item in rest[end + 1..close].split(',') {
                let item = item.split_whitespace().next().unwrap_or_default();
                let mut p = base.clone();
                p.extend(
                    item.split("::")
                        .filter(|s| !s.is_empty() && *s != "self")
                        .map(str::to_owned),
                );
                out.push(p);
            }
        } else {
            out.push(base);
        }
    }
    out
}

/// Modules named relative to `module`: `child::…` (not after `::`), and
/// `super::…`.
fn relative_paths(code: &str, module: &str, known: &BTreeMap<String, PathBuf>) -> Vec<String> {
    let parent = module.rsplit_once("::").map_or("", |(p, _)| p);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if !(c.is_ascii_alphabetic() || c == '_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && ((bytes[i] as char).is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        let ident = &code[start..i];
        let after_colons = start >= 2 && &code[start - 2..start] == "::";
        if after_colons || !code[i..].starts_with("::") {
            continue;
        }
        let (base, rest) = match ident {
            "super" => (parent, &code[i + 2..]),
            "self" => (module, &code[i + 2..]),
            _ => (module, &code[start..]),
        };
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let mut segs: Vec<&str> = base.split("::").filter(|s| !s.is_empty()).collect();
        segs.extend(rest[..end].split("::").filter(|s| !s.is_empty()));
        let to = resolve(&segs, known);
        if to.len() > base.len() || ident == "super" {
            out.push(to);
        }
    }
    out
}

fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if !state.contains_key(n.as_str())
            && let Some(c) = visit(n, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

/// Every module's imports of the crate's other modules (the crate root's
/// left out: it only declares modules).
fn crate_edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut known = BTreeMap::new();
    modules(&src(), &[], &mut known);
    assert!(known.len() > 20, "found only {:?}", known.keys());
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &known {
        let text = std::fs::read_to_string(file).expect("read source");
        let code = without_tests(&text);
        for path in crate_paths(&code) {
            let segs: Vec<&str> = path.iter().map(String::as_str).collect();
            let to = resolve(&segs, &known);
            if &to != module {
                edges.entry(module.clone()).or_default().insert(to);
            }
        }
        for to in relative_paths(&code, module, &known) {
            if &to != module {
                edges.entry(module.clone()).or_default().insert(to);
            }
        }
    }
    // The crate root only declares modules.
    edges.remove("");
    edges
}

#[test]
fn modules_import_each_other_without_cycles() {
    let edges = crate_edges();
    if let Some(cycle) = find_cycle(&edges) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
    // And between the folders (features) as wholes: `cache` using
    // `status::observe` while `status` leans on `queue`, which uses
    // `cache`, is a cycle no file-level edge shows.
    if let Some(cycle) = find_cycle(&top_level(&edges)) {
        panic!("import cycle between features: {}", cycle.join(" -> "));
    }
}

/// The pure Job builder is on the ground floor: `job` imports nothing else
/// of the crate (only `crds`, k8s-openapi, std), so it can be read, tested
/// and moved on its own.
#[test]
fn the_job_builder_imports_nothing_else_of_the_crate() {
    let edges = crate_edges();
    assert!(edges.keys().any(|m| m == "job::build"), "no job::build");
    let up: Vec<String> = edges
        .iter()
        .filter(|(from, _)| *from == "job" || from.starts_with("job::"))
        .flat_map(|(from, tos)| {
            tos.iter()
                .filter(|to| *to != "job" && !to.starts_with("job::"))
                .map(move |to| format!("{from} -> {to}"))
        })
        .collect();
    assert!(up.is_empty(), "job imports the crate: {up:?}");
}

/// `edges` between the crate's top-level modules, each file's edges
/// counted for the module it belongs to; a module's edges to itself left out.
fn top_level(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap_or_default().to_owned();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in edges {
        for to in tos {
            let (a, b) = (top(from), top(to));
            if a != b && !b.is_empty() {
                out.entry(a).or_default().insert(b);
            }
        }
    }
    out
}

#[test]
fn features_are_checked_as_wholes() {
    let mut edges = BTreeMap::new();
    edges.insert(
        "cache".to_owned(),
        BTreeSet::from(["status::observe".to_owned()]),
    );
    edges.insert("status".to_owned(), BTreeSet::from(["queue".to_owned()]));
    edges.insert(
        "queue::state".to_owned(),
        BTreeSet::from(["cache".to_owned()]),
    );
    assert_eq!(find_cycle(&edges), None, "no file-level cycle");
    let cycle = find_cycle(&top_level(&edges)).expect("a cycle between features");
    assert_eq!(cycle.len(), 4, "{cycle:?}");
}

#[test]
fn the_checker_sees_a_cycle_and_group_imports() {
    let paths = crate_paths(
        "use crate::status::{self, Next, events::Note};\nlet x = crate::queue::plan(y);",
    );
    assert_eq!(
        paths,
        vec![
            vec!["status".to_owned()],
            vec!["status".to_owned(), "Next".to_owned()],
            vec!["status".to_owned(), "events".to_owned(), "Note".to_owned()],
            vec!["queue".to_owned(), "plan".to_owned()],
        ]
    );
    let mut edges = BTreeMap::new();
    edges.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    edges.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(
        find_cycle(&edges),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
    let stripped = without_tests(
        "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\nuse crate::c;\n",
    );
    assert_eq!(crate_paths(&stripped).len(), 2);
}

/// Edges from a module to one of its own ancestors (`reconcile::read` →
/// `reconcile`): an arrow back up, which a cycle check alone lets pass
/// when the parent only declares the child.
fn arrows_up(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    edges
        .iter()
        .flat_map(|(from, tos)| {
            tos.iter()
                .filter(move |to| from.starts_with(&format!("{to}::")))
                .map(move |to| format!("{from} -> {to}"))
        })
        .collect()
}

#[test]
fn no_module_imports_from_its_parent() {
    let up = arrows_up(&crate_edges());
    assert!(up.is_empty(), "arrows back up: {up:?}");
    // A planted one is seen.
    let mut edges = BTreeMap::new();
    edges.insert(
        "reconcile::read".to_owned(),
        BTreeSet::from(["reconcile".to_owned(), "status".to_owned()]),
    );
    assert_eq!(arrows_up(&edges), vec!["reconcile::read -> reconcile"]);
}

/// The folders from the top down, as `src/lib.rs` lists them: a folder
/// imports only folders of a later layer (none of its own or above).
const LAYERS: [&[&str]; 10] = [
    &["controller"],
    &["collector"],
    &["reconcile", "cron"],
    &["ha"],
    &["api"],
    &["context"],
    &["cache"],
    &["status"],
    &["queue"],
    &["retention", "outputs", "telemetry", "store", "job", "after"],
];

/// Top-level edges that do not point down the layers, and folders that
/// no layer lists.
fn against_layers(top: &BTreeMap<String, BTreeSet<String>>, all: &BTreeSet<String>) -> Vec<String> {
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut bad: Vec<String> = all
        .iter()
        .filter(|m| layer(m).is_none())
        .map(|m| format!("{m}: in no layer of LAYERS"))
        .collect();
    for (from, tos) in top {
        for to in tos {
            if layer(from) >= layer(to) {
                bad.push(format!("{from} -> {to}: not down the layers"));
            }
        }
    }
    bad
}

#[test]
fn folders_import_only_down_the_layers() {
    let edges = crate_edges();
    let mut known = BTreeMap::new();
    modules(&src(), &[], &mut known);
    let all: BTreeSet<String> = known
        .keys()
        .filter_map(|m| m.split("::").next())
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect();
    let bad = against_layers(&top_level(&edges), &all);
    assert!(bad.is_empty(), "{bad:#?}");
    // A planted arrow up, and a folder nobody placed, are seen.
    let top = BTreeMap::from([("job".to_owned(), BTreeSet::from(["api".to_owned()]))]);
    let all = BTreeSet::from(["job".to_owned(), "api".to_owned(), "newfolder".to_owned()]);
    assert_eq!(
        against_layers(&top, &all),
        vec![
            "newfolder: in no layer of LAYERS",
            "job -> api: not down the layers"
        ]
    );
}
