//! No function on the reconcile path is over 60 lines (a standing budget).
//! Every file under `src/` is read, and those of the crates the reconcile
//! calls into (`crds/src`, `store/src`), so that no new module on the path
//! (cron, ha, telemetry, the crate root) is missed; test code is left out:
//! `tests` folders and `tests.rs` files by name, inline `#[cfg(test)] mod
//! tests { .. }` from where it starts.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 60;

/// Functions off the reconcile path, each with why: (file under `src/`,
/// function). A listed function that is gone or shrank fails the test, so
/// the list cannot go stale.
const OFF_PATH: [(&str, &str); 1] = [
    // The metrics registry, built once at start: one registration per
    // metric, in the order of the generated table in docs/operations.md.
    ("telemetry/metrics.rs", "new"),
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
            // Test code: `tests/`, `tests.rs`, and `fixtures/` (the test
            // builders, `#[cfg(test)] mod fixtures` in lib.rs).
            if !["tests", "tests.rs", "fixtures"].contains(&name) {
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
        .position(|w| {
            let m = w[1].trim();
            // An inline `mod tests {`, not a `mod tests;` declaration (its
            // file is left out by name in `sources`).
            w[0].trim() == "#[cfg(test)]" && m.starts_with("mod tests") && !m.ends_with(';')
        })
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
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = here.join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 45, "found only {} files", files.len());
    // The crates the reconcile calls into: the API types and contract
    // (crds) and the S3 signing and client (store).
    for other in ["crds", "store"] {
        sources(&here.join("..").join(other).join("src"), &mut files);
    }
    let mut long = Vec::new();
    let mut excused = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read source");
        let rel = f.strip_prefix(&src).map_or_else(
            |_| {
                f.strip_prefix(here.join(".."))
                    .expect("in the workspace")
                    .to_string_lossy()
            },
            |r| r.to_string_lossy(),
        );
        for (name, at, n) in functions(&without_tests(&text)) {
            if n <= MAX_LINES {
                continue;
            }
            if OFF_PATH.contains(&(rel.as_ref(), name.as_str())) {
                excused.push((rel.to_string(), name));
            } else {
                long.push(format!("{}:{at} {name}: {n} lines", f.display()));
            }
        }
    }
    for (file, name) in OFF_PATH {
        assert!(
            excused.iter().any(|(f, n)| f == file && n == name),
            "{file} {name} is listed in OFF_PATH but is no longer over {MAX_LINES} lines: remove it"
        );
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

/// A planted example: a function of 61 lines after a `#[cfg(test)] mod
/// tests;` declaration (as in `reconcile/mod.rs`) is still measured, and
/// one inside an inline `#[cfg(test)] mod tests { .. }` is not.
#[test]
fn the_guard_fails_on_a_planted_long_function() {
    let body = "    let _ = 1;\n".repeat(59);
    let long = format!("fn planted() {{\n{body}}}\n");
    let text =
        format!("#[cfg(test)]\nmod tests;\n\n{long}\n#[cfg(test)]\nmod tests {{\n{long}}}\n");
    let found = functions(&without_tests(&text));
    assert_eq!(found, vec![("planted".to_owned(), 4, 61)]);
    assert!(found.iter().any(|(_, _, n)| *n > MAX_LINES));
}

/// The two functions on the reconcile path that sit just at the budget
/// and were once unseen (issue 38): the guard measures them.
#[test]
fn the_guard_measures_reconcile_run_and_status_assemble() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (file, name) in [("reconcile/mod.rs", "run"), ("status/mod.rs", "assemble")] {
        let text = std::fs::read_to_string(src.join(file)).expect("read source");
        let found = functions(&without_tests(&text));
        let n = found
            .iter()
            .find(|(f, _, _)| f == name)
            .map(|(_, _, n)| *n)
            .unwrap_or_else(|| panic!("{file}: {name} is not measured"));
        assert!((10..=MAX_LINES).contains(&n), "{file}: {name}: {n} lines");
    }
}
