//! `kubectl longtask result NAME -o DIR [--file NAME]...`: a finished
//! Task's output files, downloaded with the links in its Secret
//! `<task>-outputs` (read as the user), each streamed to a temporary file
//! beside its place, checked against the size and sha256 that
//! `status.outputs` lists, and only then renamed into place. One output
//! (`--file NAME`, or the result too large to keep inline) may go to
//! stdout instead, checked as it streams.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use crds::Task;
use crds::outputs::OutputFile;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;

use crate::client::{Error, Kube};
use crate::outputs::progress::Progress;
use crate::outputs::{self, Error as OutputError, checked, fetch, grant, select};

/// Downloads `files` of `task` into the directory `root`, made if missing.
pub async fn into_dir(
    k: &Kube,
    task: &Task,
    root: &Path,
    files: &[&OutputFile],
) -> Result<(), Error> {
    let name = outputs::task_name(task);
    select::check_all(&name, files)?;
    // In name order: the store's download writes `<dest>.part` first, so
    // output `x` must take its name before output `x.part` exists.
    let mut files = files.to_vec();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    let root = make_root(&name, root)?;
    let http = fetch::client()?;
    let mut links = grant::read(&k.client, &k.namespace, &name).await?;
    let total: u64 = files.iter().map(|f| size(f)).sum();
    let mut progress = Progress::stderr(files.len(), total);
    let mut done = Ok(());
    for f in &files {
        if links.expiring(Timestamp::now()) {
            links = grant::read(&k.client, &k.namespace, &name).await?;
        }
        done = one_file(&http, &links, &root, f, &mut progress).await;
        if done.is_err() {
            break;
        }
    }
    progress.end(done.is_ok(), &root.display().to_string());
    Ok(done?)
}

/// The directory `root`, made if missing, as an absolute path without
/// symbolic links (what every destination must stay below).
fn make_root(task: &str, root: &Path) -> Result<PathBuf, OutputError> {
    let write = |source| OutputError::Write {
        path: root.to_path_buf(),
        source,
    };
    if root.exists() && !root.is_dir() {
        return Err(OutputError::NotADirectory {
            task: task.to_owned(),
            path: root.to_path_buf(),
        });
    }
    std::fs::create_dir_all(root).map_err(write)?;
    root.canonicalize().map_err(write)
}

fn size(f: &OutputFile) -> u64 {
    u64::try_from(f.size).unwrap_or_default()
}

/// Downloads `f` to its place below `root` (an absolute, resolved path).
async fn one_file(
    http: &reqwest::Client,
    links: &grant::Links,
    root: &Path,
    f: &OutputFile,
    progress: &mut Progress,
) -> Result<(), OutputError> {
    let dest = select::destination(root, &f.name)?;
    place(root, &f.name, &dest)?;
    let url = links.url(&f.name)?;
    let hex = checked::sha256_hex(f)?.to_ascii_lowercase();
    progress.start(&f.name, size(f));
    let mut advance = |n: u64| progress.advance(n);
    longtask_store::download(http, url, &dest, size(f), &hex, &mut advance)
        .await
        .map_err(|source| OutputError::Download {
            file: f.name.clone(),
            dest: dest.clone(),
            source: Box::new(source),
        })?;
    progress.finish();
    Ok(())
}

/// Makes the directories `dest` goes in, and refuses a `dest` whose
/// directory resolves outside `root` (a symbolic link already there).
fn place(root: &Path, name: &str, dest: &Path) -> Result<(), OutputError> {
    let parent = dest.parent().unwrap_or(root);
    let write = |source| OutputError::Write {
        path: parent.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(parent).map_err(write)?;
    let resolved = parent.canonicalize().map_err(write)?;
    if !resolved.starts_with(root) || dest.is_symlink() || dest.is_dir() {
        return Err(OutputError::Outside {
            file: name.to_owned(),
            dest: dest.to_path_buf(),
            root: root.to_path_buf(),
        });
    }
    Ok(())
}

/// Writes output `f` of `task` to the file `to` (checked, then renamed
/// into place) or, without one, to stdout as it streams, checked: an
/// error before the last chunk when the bytes are not the listed ones.
pub async fn one(k: &Kube, task: &Task, f: &OutputFile, to: Option<&Path>) -> Result<(), Error> {
    let name = outputs::task_name(task);
    let http = fetch::client()?;
    let links = grant::read(&k.client, &k.namespace, &name).await?;
    match to {
        Some(path) => {
            let mut progress = Progress::stderr(1, size(f));
            progress.start(&f.name, size(f));
            let hex = checked::sha256_hex(f)?.to_ascii_lowercase();
            let url = links.url(&f.name)?;
            let mut advance = |n: u64| progress.advance(n);
            let done = longtask_store::download(&http, url, path, size(f), &hex, &mut advance)
                .await
                .map_err(|source| OutputError::Download {
                    file: f.name.clone(),
                    dest: path.to_path_buf(),
                    source: Box::new(source),
                });
            if done.is_ok() {
                progress.finish();
            }
            progress.end(done.is_ok(), &path.display().to_string());
            Ok(done?)
        }
        None => to_stdout(&http, &links, f).await,
    }
}

/// Streams `f` to stdout through [`checked::checked`].
async fn to_stdout(
    http: &reqwest::Client,
    links: &grant::Links,
    f: &OutputFile,
) -> Result<(), Error> {
    let res = fetch::open(http, links.url(&f.name)?, f).await?;
    let mut bytes = Box::pin(checked::checked(res.bytes_stream(), f)?);
    let mut text = Utf8Carry::default();
    while let Some(chunk) = bytes.next().await {
        let chunk: Bytes = chunk?;
        text.write(&chunk)?;
    }
    text.flush()?;
    Ok(())
}

/// Chunks to stdout as `out_data` writes them; on a terminal, where bytes
/// are made visible, a character cut between two chunks is kept for the
/// next one rather than shown as two broken halves.
#[derive(Default)]
struct Utf8Carry(Vec<u8>);

impl Utf8Carry {
    fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.0.extend_from_slice(chunk);
        let whole = complete_prefix(&self.0);
        crate::print::out_data(&self.0[..whole])?;
        self.0.drain(..whole);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let rest = std::mem::take(&mut self.0);
        crate::print::out_data(&rest)
    }
}

/// Pure: how many bytes of `b` end on a character boundary: all but an
/// unfinished UTF-8 sequence at its end (at most 3 bytes).
pub fn complete_prefix(b: &[u8]) -> usize {
    let start = b.len().saturating_sub(3);
    for i in (start..b.len()).rev() {
        let byte = b[i];
        let len = match byte {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            0x80..=0xbf => continue,
            _ => return b.len(),
        };
        return if b.len() - i < len { i } else { b.len() };
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_at_the_end_waits_for_the_next_chunk() {
        let euro = "€".as_bytes();
        assert_eq!(complete_prefix(b"abc"), 3);
        assert_eq!(complete_prefix(&[b'a', euro[0]]), 1);
        assert_eq!(complete_prefix(&[b'a', euro[0], euro[1]]), 1);
        assert_eq!(complete_prefix(&[b'a', euro[0], euro[1], euro[2]]), 4);
        assert_eq!(complete_prefix(&[0xff, 0xfe]), 2, "not UTF-8: passed on");
        assert_eq!(complete_prefix(&[0x80, 0x80, 0x80, 0x80]), 4);
        assert_eq!(complete_prefix(b""), 0);
    }

    #[test]
    fn nothing_lands_outside_the_directory() {
        let base = std::env::temp_dir().join(format!("lt-place-{}", std::process::id()));
        let root = base.join("out");
        std::fs::create_dir_all(&root).expect("root");
        let root = root.canonicalize().expect("root");
        let inside = root.join("plots/a/b.png");
        place(&root, "plots/a/b.png", &inside).expect("inside");
        assert!(root.join("plots/a").is_dir());
        // A link already in the directory that points out of it.
        let away = base.join("away");
        std::fs::create_dir_all(&away).expect("away");
        std::os::unix::fs::symlink(&away, root.join("link")).expect("symlink");
        let e = place(&root, "link/x", &root.join("link/x")).expect_err("outside");
        assert!(matches!(e, OutputError::Outside { .. }), "{e}");
        std::os::unix::fs::symlink(away.join("f"), root.join("f")).expect("symlink");
        assert!(
            place(&root, "f", &root.join("f")).is_err(),
            "a link as the file"
        );
        std::fs::write(&inside, b"").expect("a file");
        let e = make_root("t", &inside.join("x")).expect_err("under a file");
        assert!(matches!(e, OutputError::Write { .. }), "{e}");
        std::fs::write(base.join("file"), b"").expect("file");
        let e = make_root("t", &base.join("file")).expect_err("a file");
        assert!(
            e.to_string()
                .contains("is not a directory: task t has output files"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
