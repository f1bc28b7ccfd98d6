//! Where the program writes its result and progress.
//!
//! The operator mounts a per-pod `emptyDir` at `$LONGTASK_WORK_DIR`
//! (`/longtask`). Nodes that ignore volumes (the devcluster runs pods as
//! host processes) would share that path between pods, so the worker always
//! makes a private directory in it, named after the pod and its own pid. It
//! never creates the base itself: when the base is missing or not writable
//! it uses the system temp directory (`$TMPDIR`, else `/tmp`) instead.

use std::path::{Path, PathBuf};

/// The files handed to the program as `$LONGTASK_RESULT` / `$LONGTASK_PROGRESS`.
#[derive(Clone, Debug)]
pub struct Files {
    pub dir: PathBuf,
    pub result: PathBuf,
    pub progress: PathBuf,
}

/// Creates a private run directory in `base` if that is an existing
/// directory, else in the temp dir.
pub fn prepare(base: Option<&Path>, run_name: &str) -> std::io::Result<Files> {
    let leaf = format!("run-{}-{}", sanitize(run_name), std::process::id());
    let mut last_err = None;
    let temp = std::env::temp_dir();
    let base = base.filter(|b| b.is_dir());
    for root in base.into_iter().chain(std::iter::once(temp.as_path())) {
        let dir = root.join(&leaf);
        match try_dir(&dir) {
            Ok(()) => {
                let result = dir.join("result");
                let progress = dir.join("progress");
                for stale in [&result, &progress] {
                    let _ = std::fs::remove_file(stale);
                }
                return Ok(Files {
                    dir,
                    result,
                    progress,
                });
            }
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| std::io::Error::other("no writable directory")))
}

fn try_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dir).or_else(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => Ok(()),
        _ => Err(e),
    })?;
    let probe = dir.join(".probe");
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
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
}
