//! The files a program left in `$LONGTASK_OUTPUTS`: every regular file,
//! recursively, named by its path below the directory. Names are checked
//! (`crds::outputs::check_name`); symbolic links and special files are
//! refused rather than followed, so nothing outside the directory is ever
//! read; more files than the grant allows stop the walk.

use std::io;
use std::path::{Path, PathBuf};

use crds::Reason;
use crds::outputs::{NameError, RESULT_OUTPUT, check_name};

/// Names below this are the worker's own (the result too large to keep
/// inline goes to `.longtask/result`).
const RESERVED: &str = ".longtask/";

/// One file to upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Path below the outputs directory, components joined by `/`.
    pub name: String,
    pub path: PathBuf,
}

/// Why the outputs directory cannot be uploaded as it is.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("cannot read the directory {}", dir.display())]
    ReadDir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot inspect {}", path.display())]
    Inspect {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("output {name:?} has an invalid name")]
    Name {
        name: String,
        #[source]
        source: NameError,
    },
    #[error("output {name:?} is under {RESERVED}, which longtask keeps for itself")]
    Reserved { name: String },
    #[error("output {name:?} is a symbolic link: only regular files are uploaded")]
    Symlink { name: String },
    #[error("output {name:?} is neither a regular file nor a directory")]
    Special { name: String },
    #[error("more than {max} output files: the store allows at most {max}")]
    TooMany { max: u32 },
}

impl WalkError {
    /// The reason a Task fails with for this.
    pub fn reason(&self) -> Reason {
        match self {
            WalkError::ReadDir { .. } | WalkError::Inspect { .. } => Reason::OutputUploadFailed,
            WalkError::TooMany { .. } => Reason::OutputQuotaExceeded,
            WalkError::Name { .. }
            | WalkError::Reserved { .. }
            | WalkError::Symlink { .. }
            | WalkError::Special { .. } => Reason::OutputNameInvalid,
        }
    }
}

/// Every regular file below `dir`, sorted by name; at most `max_files`.
/// A missing `dir` has no files.
pub fn walk(dir: &Path, max_files: u32) -> Result<Vec<Found>, WalkError> {
    let mut found = Vec::new();
    let Ok(top) = dir.symlink_metadata() else {
        return Ok(found);
    };
    // The directory itself replaced by a link would lead anywhere.
    let name = crds::names::env::OUTPUTS.to_owned();
    if top.file_type().is_symlink() {
        return Err(WalkError::Symlink { name });
    }
    if !top.is_dir() {
        return Err(WalkError::Special { name });
    }
    let mut pending = vec![(dir.to_path_buf(), String::new())];
    while let Some((here, prefix)) = pending.pop() {
        let entries = std::fs::read_dir(&here).map_err(|source| WalkError::ReadDir {
            dir: here.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| WalkError::ReadDir {
                dir: here.clone(),
                source,
            })?;
            let path = entry.path();
            let name = format!("{prefix}{}", component(&entry.file_name(), &prefix)?);
            let kind = entry.file_type().map_err(|source| WalkError::Inspect {
                path: path.clone(),
                source,
            })?;
            if kind.is_dir() {
                pending.push((path, format!("{name}/")));
            } else if kind.is_file() {
                if found.len() >= max_files as usize {
                    return Err(WalkError::TooMany { max: max_files });
                }
                check(&name)?;
                found.push(Found { name, path });
            } else if kind.is_symlink() {
                return Err(WalkError::Symlink { name });
            } else {
                return Err(WalkError::Special { name });
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// A file name as UTF-8, or the error naming it.
fn component(name: &std::ffi::OsStr, prefix: &str) -> Result<String, WalkError> {
    name.to_str()
        .map(str::to_owned)
        .ok_or_else(|| WalkError::Name {
            name: format!("{prefix}{}", name.to_string_lossy()),
            source: NameError::NotUtf8,
        })
}

/// A whole name: valid, and not one of the worker's own.
fn check(name: &str) -> Result<(), WalkError> {
    check_name(name).map_err(|source| WalkError::Name {
        name: name.to_owned(),
        source,
    })?;
    if name.starts_with(RESERVED) || name == RESULT_OUTPUT {
        return Err(WalkError::Reserved {
            name: name.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt as _;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("lt-walk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn files_recursively_sorted_and_empty_dirs_ignored() {
        let dir = scratch("tree");
        std::fs::create_dir_all(dir.join("plots/2024")).unwrap();
        std::fs::create_dir_all(dir.join("empty")).unwrap();
        for f in ["model.bin", "plots/a b.png", "plots/2024/z.csv", ".hidden"] {
            std::fs::write(dir.join(f), f).unwrap();
        }
        let names: Vec<String> = walk(&dir, 10)
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            names,
            [".hidden", "model.bin", "plots/2024/z.csv", "plots/a b.png"]
        );
        assert!(walk(&dir.join("missing"), 10).unwrap().is_empty());
        std::os::unix::fs::symlink("/etc", dir.join("elsewhere")).unwrap();
        let e = walk(&dir.join("elsewhere"), 10).unwrap_err();
        assert!(matches!(e, WalkError::Symlink { .. }), "{e:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn links_special_files_bad_names_and_too_many_are_refused() {
        let dir = scratch("bad");
        std::fs::write(dir.join("a"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).unwrap();
        let e = walk(&dir, 10).unwrap_err();
        assert!(
            matches!(&e, WalkError::Symlink { name } if name == "link"),
            "{e:?}"
        );
        assert_eq!(e.reason(), Reason::OutputNameInvalid);
        std::fs::remove_file(dir.join("link")).unwrap();

        nix_mkfifo(&dir.join("fifo"));
        let e = walk(&dir, 10).unwrap_err();
        assert!(
            matches!(&e, WalkError::Special { name } if name == "fifo"),
            "{e:?}"
        );
        std::fs::remove_file(dir.join("fifo")).unwrap();

        let bad = std::ffi::OsStr::from_bytes(b"caf\xe9");
        std::fs::write(dir.join(bad), "x").unwrap();
        let e = walk(&dir, 10).unwrap_err();
        assert!(
            matches!(
                &e,
                WalkError::Name {
                    source: NameError::NotUtf8,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.reason(), Reason::OutputNameInvalid);
        std::fs::remove_file(dir.join(bad)).unwrap();

        std::fs::write(dir.join("tab\there"), "x").unwrap();
        let e = walk(&dir, 10).unwrap_err();
        assert!(
            matches!(
                &e,
                WalkError::Name {
                    source: NameError::ControlCharacter,
                    ..
                }
            ),
            "{e:?}"
        );
        std::fs::remove_file(dir.join("tab\there")).unwrap();

        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reserved_names_and_too_many_are_refused() {
        let dir = scratch("limits");
        std::fs::write(dir.join("a"), "a").unwrap();
        std::fs::create_dir_all(dir.join(".longtask")).unwrap();
        std::fs::write(dir.join(".longtask/result"), "x").unwrap();
        let e = walk(&dir, 10).unwrap_err();
        assert!(matches!(&e, WalkError::Reserved { .. }), "{e:?}");
        std::fs::remove_dir_all(dir.join(".longtask")).unwrap();

        std::fs::write(dir.join("b"), "b").unwrap();
        let e = walk(&dir, 1).unwrap_err();
        assert!(matches!(e, WalkError::TooMany { max: 1 }), "{e:?}");
        assert_eq!(e.reason(), Reason::OutputQuotaExceeded);
        assert_eq!(walk(&dir, 2).unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn nix_mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }
}
