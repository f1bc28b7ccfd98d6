//! Opening the page in the user's browser without putting the token on a
//! command line (`/proc/PID/cmdline` is readable by every local user, for
//! as long as the opener and a browser it starts run). The token goes
//! into a small HTML file that sends the browser on to the page, mode
//! 0600 in a fresh 0700 directory (under `$XDG_RUNTIME_DIR`, else the
//! temporary directory); only the file's `file://` URL is handed to
//! xdg-open (or `open` on macOS). Jupyter opens its notebooks the same
//! way. The file and its directory go when the server stops.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why no redirect file could be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("create the private directory {path}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("write the page that opens the ui, {path}")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is readable by others (mode {mode:o})")]
    NotPrivate { path: PathBuf, mode: u32 },
}

/// Pure: the file's text, which sends the browser to `url` (the page's
/// URL with the token in its fragment) and tells nothing to any server:
/// a file has no Referer to leak.
pub fn redirect_page(url: &str) -> String {
    let url = escape(url);
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta http-equiv=\"refresh\" content=\"0;url={url}\">\n\
         <title>longtask ui</title>\n</head>\n\
         <body><p>Opening <a href=\"{url}\">the longtask page</a>…</p></body>\n</html>\n"
    )
}

fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// Pure: `file://` and `path`, every byte but unreserved ones and `/`
/// percent-encoded.
pub fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut url = "file://".to_owned();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// The written file; removed with its directory on drop.
#[derive(Debug)]
pub struct Redirect {
    dir: PathBuf,
    pub file: PathBuf,
}

impl Redirect {
    /// Writes the page that opens `url` into a fresh private directory.
    /// `unique` names it (random: a name another user guessed and made
    /// first makes this fail, never share).
    pub fn write(url: &str, unique: &str) -> Result<Redirect, Error> {
        let base = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|d| d.is_absolute() && d.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        let dir = base.join(format!("longtask-ui-{unique}"));
        // mkdir fails if the name exists: the directory is ours alone.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|source| Error::Dir {
                path: dir.clone(),
                source,
            })?;
        // From here on, drop cleans up whatever was made.
        let made = Redirect {
            file: dir.join("open.html"),
            dir,
        };
        let mode = std::fs::metadata(&made.dir)
            .map_err(|source| Error::Dir {
                path: made.dir.clone(),
                source,
            })?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(Error::NotPrivate {
                path: made.dir.clone(),
                mode,
            });
        }
        let file_err = |source| Error::File {
            path: made.file.clone(),
            source,
        };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&made.file)
            .map_err(file_err)?;
        f.write_all(redirect_page(url).as_bytes())
            .map_err(file_err)?;
        Ok(made)
    }

    /// What to hand to the opener.
    pub fn url(&self) -> String {
        file_url(&self.file)
    }
}

impl Drop for Redirect {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_sends_the_browser_on_without_a_referrer() {
        let p = redirect_page("http://127.0.0.1:8123/#token=abc");
        assert!(p.contains("content=\"0;url=http://127.0.0.1:8123/#token=abc\""));
        assert!(p.contains("href=\"http://127.0.0.1:8123/#token=abc\""));
        assert!(p.contains("<meta name=\"referrer\" content=\"no-referrer\">"));
        assert!(redirect_page("x\"><script>").contains("x&quot;&gt;&lt;script&gt;"));
    }

    #[test]
    fn file_urls_encode_what_is_not_a_plain_path() {
        assert_eq!(
            file_url(Path::new("/run/user/1000/longtask-ui-ab/open.html")),
            "file:///run/user/1000/longtask-ui-ab/open.html"
        );
        assert_eq!(
            file_url(Path::new("/tmp/a b/%#?")),
            "file:///tmp/a%20b/%25%23%3F"
        );
    }

    #[test]
    fn the_file_is_private_and_goes_on_drop() {
        let name = format!("unit-{}", std::process::id());
        let r = Redirect::write("http://127.0.0.1:1/#token=t", &name).expect("write");
        let file = r.file.clone();
        let dir = file.parent().expect("dir").to_owned();
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert!(
            std::fs::read_to_string(&file)
                .expect("read")
                .contains("#token=t")
        );
        // A second writer with the same name is refused, not shared.
        assert!(matches!(
            Redirect::write("x", &name),
            Err(Error::Dir { .. })
        ));
        drop(r);
        assert!(!file.exists() && !dir.exists());
    }
}
