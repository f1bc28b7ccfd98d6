//! Pure: what `result` writes where, from the Task's status and the flags,
//! and where each output lands below `-o DIR`.
//!
//! - `--file NAME` (repeatable): those outputs, into DIR with `-o DIR`, or
//!   one of them to stdout without `-o`.
//! - `-o PATH` when the Task has output files: PATH is a directory and
//!   every output goes into it under its name.
//! - `-o PATH` when it has none: PATH is a file and receives the result:
//!   the output `.longtask/result` when the result was too large to keep
//!   inline, else the inline result (as before outputs existed).
//! - neither: the result to stdout, the same way.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crds::outputs::{OutputFile, RESULT_OUTPUT, check_name};

use super::Error;

/// Where `result`'s bytes come from and go.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan<'a> {
    /// The inline result (ConfigMap, or the status's copy) to stdout or
    /// to a file: what `result` always did.
    Inline { to: Option<&'a Path> },
    /// One output's bytes to stdout or to a file.
    One {
        file: &'a OutputFile,
        to: Option<&'a Path>,
    },
    /// Outputs into a directory, under their names.
    Dir {
        root: &'a Path,
        files: Vec<&'a OutputFile>,
    },
}

/// The plan for Task `task` whose status lists `files`, given `-o`
/// (`output`) and `--file` (`wanted`).
pub fn plan<'a>(
    task: &str,
    files: &'a [OutputFile],
    output: Option<&'a Path>,
    wanted: &[String],
) -> Result<Plan<'a>, Error> {
    if !wanted.is_empty() {
        let chosen = pick(task, files, wanted)?;
        return match (output, chosen.as_slice()) {
            (Some(root), _) => Ok(Plan::Dir {
                root,
                files: chosen,
            }),
            (None, [one]) => Ok(Plan::One {
                file: one,
                to: None,
            }),
            (None, _) => Err(Error::ManyToStdout),
        };
    }
    let result = files.iter().find(|f| f.name == RESULT_OUTPUT);
    let others = files.iter().any(|f| f.name != RESULT_OUTPUT);
    match (output, others, result) {
        (Some(root), true, _) => Ok(Plan::Dir {
            root,
            files: files.iter().collect(),
        }),
        (to, _, Some(file)) => Ok(Plan::One { file, to }),
        (to, _, None) => Ok(Plan::Inline { to }),
    }
}

/// The outputs named in `wanted`, in the status's order, each once.
fn pick<'a>(
    task: &str,
    files: &'a [OutputFile],
    wanted: &[String],
) -> Result<Vec<&'a OutputFile>, Error> {
    if files.is_empty() {
        return Err(Error::NoOutputs {
            task: task.to_owned(),
        });
    }
    if let Some(missing) = wanted.iter().find(|w| !files.iter().any(|f| &f.name == *w)) {
        return Err(Error::NotListed {
            task: task.to_owned(),
            file: missing.clone(),
            known: known(files),
        });
    }
    Ok(files.iter().filter(|f| wanted.contains(&f.name)).collect())
}

/// The first few names, for a message: `a, b, c and 12 more`.
pub fn known(files: &[OutputFile]) -> String {
    const SHOWN: usize = 5;
    let mut names: Vec<String> = files
        .iter()
        .take(SHOWN)
        .map(|f| format!("{:?}", f.name))
        .collect();
    if files.len() > SHOWN {
        names.push(format!("{} more", files.len() - SHOWN));
    }
    match names.len() {
        0 => "none".to_owned(),
        1 => names.remove(0),
        n => {
            let last = names.remove(n - 1);
            format!("{} and {last}", names.join(", "))
        }
    }
}

/// Checks that `files` can all be written below one directory: valid
/// names, none twice, and no name that is also another's directory
/// (`a` and `a/b`).
pub fn check_all(task: &str, files: &[&OutputFile]) -> Result<(), Error> {
    let mut names = BTreeSet::new();
    for f in files {
        check_name(&f.name).map_err(|source| Error::BadName {
            file: f.name.clone(),
            source,
        })?;
        if !names.insert(f.name.as_str()) {
            return Err(Error::Duplicate {
                task: task.to_owned(),
                file: f.name.clone(),
            });
        }
    }
    // In sorted order, a directory's files follow right after "name/"
    // sorts; checking each name against the next name with its prefix
    // finds every clash.
    for name in &names {
        let dir = format!("{name}/");
        if let Some(inside) = names.range(dir.as_str()..).next()
            && inside.starts_with(&dir)
        {
            return Err(Error::FileAndDirectory {
                task: task.to_owned(),
                file: (*name).to_owned(),
                inside: (*inside).to_owned(),
            });
        }
    }
    Ok(())
}

/// Where output `name` goes below `root`: `root/<its components>`, its
/// name checked again ([`check_name`]), so nothing lands outside `root`
/// whatever the status says.
pub fn destination(root: &Path, name: &str) -> Result<PathBuf, Error> {
    check_name(name).map_err(|source| Error::BadName {
        file: name.to_owned(),
        source,
    })?;
    let mut dest = root.to_path_buf();
    for part in name.split('/') {
        // check_name refuses empty, `.` and `..` components; a component
        // that still is not a plain name (a Windows prefix) is refused too.
        let plain = matches!(
            Path::new(part).components().next(),
            Some(Component::Normal(_))
        ) && Path::new(part).components().count() == 1;
        if !plain {
            return Err(Error::Outside {
                file: name.to_owned(),
                dest: root.join(name),
                root: root.to_path_buf(),
            });
        }
        dest.push(part);
    }
    Ok(dest)
}

/// The file name a browser should save output `name` as: its last
/// component, with anything a file name or a header should not hold
/// (quotes, slashes, control and bidirectional characters) made `_`.
pub fn safe_file_name(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    let cleaned: String = last
        .chars()
        .map(|c| match c {
            '"' | '\\' | '/' | ':' | '*' | '?' | '<' | '>' | '|' => '_',
            c if c.is_control() || crate::safe::is_bidi_control(c) => '_',
            c => c,
        })
        .collect();
    let trimmed = cleaned.trim_matches(|c: char| c == '.' || c.is_whitespace());
    match trimmed.is_empty() {
        true => "output".to_owned(),
        false => trimmed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::output;

    fn names(p: &Plan) -> Vec<String> {
        match p {
            Plan::Inline { .. } => vec!["<inline>".into()],
            Plan::One { file, .. } => vec![file.name.clone()],
            Plan::Dir { files, .. } => files.iter().map(|f| f.name.clone()).collect(),
        }
    }

    #[test]
    fn without_outputs_the_inline_result_goes_where_it_went() {
        let out = Path::new("out.bin");
        assert_eq!(
            plan("t", &[], None, &[]).expect("plan"),
            Plan::Inline { to: None }
        );
        assert_eq!(
            plan("t", &[], Some(out), &[]).expect("plan"),
            Plan::Inline { to: Some(out) }
        );
    }

    #[test]
    fn a_result_too_large_to_keep_inline_is_the_result() {
        let files = [output(RESULT_OUTPUT, b"big")];
        let out = Path::new("out.bin");
        for to in [None, Some(out)] {
            let p = plan("t", &files, to, &[]).expect("plan");
            assert_eq!(
                p,
                Plan::One {
                    file: &files[0],
                    to
                }
            );
        }
    }

    #[test]
    fn output_files_make_o_a_directory_with_every_one() {
        let files = [
            output("model.bin", b"m"),
            output(RESULT_OUTPUT, b"r"),
            output("plots/a.png", b"a"),
        ];
        let dir = Path::new("outdir");
        let p = plan("t", &files, Some(dir), &[]).expect("plan");
        assert!(matches!(p, Plan::Dir { root, .. } if root == dir));
        assert_eq!(names(&p), ["model.bin", RESULT_OUTPUT, "plots/a.png"]);
        // Without -o: the inline result, as before (the files need -o).
        assert_eq!(
            plan("t", &files[..1], None, &[]).expect("plan"),
            Plan::Inline { to: None }
        );
    }

    #[test]
    fn file_picks_outputs_by_name() {
        let files = [output("a", b"a"), output("b/c", b"c"), output("d", b"d")];
        let dir = Path::new("o");
        let want = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let p = plan("t", &files, Some(dir), &want(&["d", "b/c"])).expect("plan");
        assert_eq!(names(&p), ["b/c", "d"], "in the status's order");
        let p = plan("t", &files, None, &want(&["b/c"])).expect("plan");
        assert_eq!(
            p,
            Plan::One {
                file: &files[1],
                to: None
            }
        );
        let e = plan("t", &files, None, &want(&["a", "d"])).expect_err("two to stdout");
        assert!(e.to_string().contains("needs -o DIR"), "{e}");
        let e = plan("t", &files, Some(dir), &want(&["x"])).expect_err("unknown");
        assert_eq!(
            e.to_string(),
            r#"task t has no output named "x" (it has "a", "b/c" and "d")"#
        );
        let e = plan("t", &[], Some(dir), &want(&["x"])).expect_err("none");
        assert_eq!(
            e.to_string(),
            "task t has no output files (status.outputs lists none)"
        );
    }

    #[test]
    fn long_lists_are_cut_in_messages() {
        let files: Vec<OutputFile> = (0..8).map(|i| output(&format!("f{i}"), b"")).collect();
        assert_eq!(known(&files), r#""f0", "f1", "f2", "f3", "f4" and 3 more"#);
    }

    #[test]
    fn names_that_clash_are_refused_before_any_download() {
        let ok = [output("a", b""), output("ab/c", b""), output("a-b", b"")];
        let refs: Vec<&OutputFile> = ok.iter().collect();
        assert!(check_all("t", &refs).is_ok());
        let clash = [output("a/b/c", b""), output("x", b""), output("a/b", b"")];
        let refs: Vec<&OutputFile> = clash.iter().collect();
        let e = check_all("t", &refs).expect_err("clash").to_string();
        assert!(e.contains(r#""a/b" and "a/b/c""#), "{e}");
        let twice = [output("x", b""), output("x", b"")];
        let refs: Vec<&OutputFile> = twice.iter().collect();
        assert!(matches!(
            check_all("t", &refs),
            Err(Error::Duplicate { .. })
        ));
        let bad = [output("../x", b"")];
        let refs: Vec<&OutputFile> = bad.iter().collect();
        assert!(matches!(check_all("t", &refs), Err(Error::BadName { .. })));
    }

    #[test]
    fn destinations_stay_below_the_root() {
        let root = Path::new("/tmp/out");
        assert_eq!(
            destination(root, "plots/a b.png").expect("ok"),
            Path::new("/tmp/out/plots/a b.png")
        );
        assert_eq!(
            destination(root, RESULT_OUTPUT).expect("ok"),
            Path::new("/tmp/out/.longtask/result")
        );
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            "",
            "a\u{1b}b",
        ] {
            let d = destination(root, bad);
            assert!(
                matches!(d, Err(Error::BadName { .. })),
                "{bad:?} gave {d:?}"
            );
        }
    }

    #[test]
    fn browsers_get_a_plain_file_name() {
        assert_eq!(safe_file_name("plots/a b.png"), "a b.png");
        assert_eq!(safe_file_name(RESULT_OUTPUT), "result");
        assert_eq!(
            safe_file_name("x\"; filename=evil.exe"),
            "x_; filename=evil.exe"
        );
        assert_eq!(safe_file_name("a\\b:c"), "a_b_c");
        assert_eq!(safe_file_name("txt\u{202e}exe.pdf"), "txt_exe.pdf");
        assert_eq!(safe_file_name("..."), "output");
        assert_eq!(safe_file_name(" .hidden "), "hidden");
    }
}
