//! `longtask-worker install DIR`: the init container of a Task that runs in
//! its own image copies this (static) binary into DIR, a volume the
//! program's container mounts, so that any image can run it: no shell, no
//! libc, any uid.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crds::names::WORKER_BINARY;

/// Why the binary could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("cannot find this program's own file")]
    OwnPath(#[source] io::Error),
    #[error("cannot copy {from} to {to}")]
    Copy {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Copies the running binary to `dir/longtask-worker`, readable and
/// executable by every uid, whole or not at all (a temporary file renamed
/// into place); returns the installed path.
pub fn install(dir: &Path) -> Result<PathBuf, InstallError> {
    let from = std::env::current_exe().map_err(InstallError::OwnPath)?;
    let to = dir.join(WORKER_BINARY);
    let tmp = dir.join(format!(".{WORKER_BINARY}.tmp"));
    let copy = || -> io::Result<()> {
        fs::copy(&from, &tmp)?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
        fs::rename(&tmp, &to)
    };
    copy().map_err(|source| InstallError::Copy {
        from: from.clone(),
        to: to.clone(),
        source,
    })?;
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_an_executable_copy_of_itself() {
        let dir = std::env::temp_dir().join(format!("lt-install-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = install(&dir).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        let own = fs::metadata(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(meta.len(), own.len());
        assert!(!dir.join(".longtask-worker.tmp").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
