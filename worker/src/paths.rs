//! Where the program writes its result and progress.
//!
//! The operator mounts a per-pod `emptyDir` at `$LONGTASK_WORK_DIR`
//! (`/longtask`). Nodes that ignore volumes (the devcluster runs pods as
//! host processes) would share that path between pods, so the worker always
//! makes a private directory in it, named after the pod and its own pid. It
//! never creates the base itself: when the base is missing or not writable
//! it uses the system temp directory (`$TMPDIR`, else `/tmp`) instead.

use std::io;
use std::path::{Path, PathBuf};

/// The files handed to the program as `$LONGTASK_RESULT` / `$LONGTASK_PROGRESS`.
#[derive(Clone, Debug)]
pub struct Files {
    pub dir: PathBuf,
    pub result: PathBuf,
    pub progress: PathBuf,
}

/// Why no private run directory could be made.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot create the directory {}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}", file.display())]
    WriteProbe {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot remove {}", file.display())]
    RemoveProbe {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Creates a private run directory in `base` if that is an existing
/// directory, else in the temp dir; the error is the temp dir's.
pub fn prepare(base: Option<&Path>, run_name: &str) -> Result<Files, PathsError> {
    let leaf = format!("run-{}-{}", sanitize(run_name), std::process::id());
    if let Some(base) = base.filter(|b| b.is_dir())
        && let Ok(files) = files_in(&base.join(&leaf))
    {
        return Ok(files);
    }
    files_in(&std::env::temp_dir().join(leaf))
}

/// Makes `dir` (or takes it, if it exists) and checks that it is writable.
fn files_in(dir: &Path) -> Result<Files, PathsError> {
    try_dir(dir)?;
    let result = dir.join("result");
    let progress = dir.join("progress");
    for stale in [&result, &progress] {
        let _ = std::fs::remove_file(stale);
    }
    Ok(Files {
        dir: dir.to_owned(),
        result,
        progress,
    })
}

fn try_dir(dir: &Path) -> Result<(), PathsError> {
    std::fs::create_dir(dir)
        .or_else(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(e),
        })
        .map_err(|source| PathsError::CreateDir {
            dir: dir.to_owned(),
            source,
        })?;
    let file = dir.join(".probe");
    if let Err(source) = std::fs::write(&file, b"") {
        return Err(PathsError::WriteProbe { file, source });
    }
    std::fs::remove_file(&file).map_err(|source| PathsError::RemoveProbe { file, source })
}

fn sanitize(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("x{s}")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dir_and_fallback() {
        let base = std::env::temp_dir().join(format!("longtask-test-{}", std::process::id()));
        // A missing base is not created: the temp dir is used.
        let files = prepare(Some(&base), "p").unwrap();
        assert!(!base.exists() && files.dir.starts_with(std::env::temp_dir()));
        std::fs::remove_dir_all(&files.dir).unwrap();
        std::fs::create_dir(&base).unwrap();
        let files = prepare(Some(&base), "pod/1").unwrap();
        assert!(files.dir.starts_with(&base));
        assert!(files.dir.to_string_lossy().contains("run-pod_1-"));
        assert!(!files.result.exists());
        // A base that cannot be a directory falls back to the temp dir.
        let blocker = base.join("file");
        std::fs::write(&blocker, b"x").unwrap();
        let files = prepare(Some(&blocker), "p").unwrap();
        assert!(files.dir.starts_with(std::env::temp_dir()));
        std::fs::remove_dir_all(&base).unwrap();
        std::fs::remove_dir_all(&files.dir).unwrap();
    }

    #[test]
    fn errors_name_the_directory() {
        let name = format!("longtask-test-blocker-{}", std::process::id());
        let blocker = std::env::temp_dir().join(name);
        std::fs::write(&blocker, b"x").unwrap();
        let dir = blocker.join("run");
        let e = files_in(&dir).unwrap_err();
        assert!(
            matches!(&e, PathsError::CreateDir { dir: d, .. } if *d == dir),
            "{e:?}"
        );
        let text = format!("cannot create the directory {}", dir.display());
        assert_eq!(e.to_string(), text);
        std::fs::remove_file(&blocker).unwrap();
    }
}
