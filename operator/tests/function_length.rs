//! No function on the reconcile path is over 60 lines (a standing budget):
//! the modules a reconcile runs through, from the watches that wake it to
//! the status it writes. Reads the sources; test code is left out.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 60;

/// The reconcile path: these folders and files under `src/`.
const PATH: [&str; 7] = [
    "reconcile",
    "status",
    "controller",
    "queue",
    "retention",
    "cache.rs",
    "store.rs",
];

fn sources(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .expect("read dir")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for e in entries {
            let name = e.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name != "tests" && name != "tests.rs" {
                sources(&e, out);
            }
        }
    } else if p.extension().is_some_and(|e| e == "rs") {
        out.push(p.to_owned());
    }
}

/// The code before a file's `#[cfg(test)] mod tests`.
fn without_tests(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod tests"))
        .unwrap_or(lines.len());
    lines[..end].to_vec()
}

/// (name, first line, lines) of every function with a body in `lines`.
fn functions(lines: &[&str]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or_default().trim_start();
        let Some(at) = code.find("fn ") else { continue };
        let head = &code[..at];
        let is_fn = head.split_whitespace().all(|w| {
            [
                "pub",
                "pub(crate)",
                "pub(super)",
                "async",
                "const",
                "unsafe",
            ]
            .contains(&w)
        });
        if !is_fn {
            continue;
        }
        let name: String = code[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let mut depth = 0i32;
        let mut opened = false;
        for (j, l) in lines.iter().enumerate().skip(i) {
            let c = l.split("//").next().unwrap_or_default();
            if !opened && c.contains(';') && !c.contains('{') {
                break; // a declaration without a body
            }
            depth += c.matches('{').count() as i32 - c.matches('}').count() as i32;
            opened |= c.contains('{');
            if opened && depth <= 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
    out
}

#[test]
fn no_function_on_the_reconcile_path_is_over_60_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for p in PATH {
        sources(&src.join(p), &mut files);
    }
    assert!(files.len() > 20, "found only {files:?}");
    let mut long = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        for (name, at, n) in functions(&without_tests(&text)) {
            if n > MAX_LINES {
                long.push(format!("{}:{at} {name}: {n} lines", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_counter_sees_bodies_and_skips_declarations() {
    let code = "pub async fn a(x: u8) -> u8 {\n    if x > 0 {\n        1\n    } else {\n        0\n    }\n}\nfn b();\nfn c() {}\n";
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(
        functions(&lines),
        vec![("a".to_owned(), 1, 7), ("c".to_owned(), 9, 1)]
    );
}
