//! How far a download of outputs is, on stderr: one line redrawn in place
//! on a terminal (files, bytes, a bar, the rate, the file under way), at
//! most ten times a second; one line per finished file otherwise, for logs.
//! Our own renderer: one line with `\r` and "erase to the end of the line"
//! is all it needs, and the names in it are the program's, made visible
//! ([`crate::safe::visible`]) like every other text from a Task.

use std::io::Write;
use std::time::{Duration, Instant};

use crds::outputs::human_size;

/// Longest file name shown on the bar, in characters (the line must not
/// wrap, or `\r` cannot redraw it).
const NAME_WIDTH: usize = 32;
const BAR_WIDTH: usize = 20;
const REDRAW: Duration = Duration::from_millis(100);

/// The progress of downloading `files` files of `bytes` bytes in all.
pub struct Progress {
    out: Box<dyn Write + Send>,
    terminal: bool,
    files: usize,
    bytes: u64,
    done_files: usize,
    done_bytes: u64,
    name: String,
    size: u64,
    at: u64,
    started: Instant,
    drawn: Option<Instant>,
}

impl Progress {
    /// Progress to `out`, redrawn in place when `terminal`.
    pub fn new(out: Box<dyn Write + Send>, terminal: bool, files: usize, bytes: u64) -> Progress {
        Progress {
            out,
            terminal,
            files,
            bytes,
            done_files: 0,
            done_bytes: 0,
            name: String::new(),
            size: 0,
            at: 0,
            started: Instant::now(),
            drawn: None,
        }
    }

    /// Progress on stderr, a bar when stderr is a terminal.
    pub fn stderr(files: usize, bytes: u64) -> Progress {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        Progress::new(Box::new(std::io::stderr()), terminal, files, bytes)
    }

    /// A file of `size` bytes starts.
    pub fn start(&mut self, name: &str, size: u64) {
        self.name = crate::safe::visible(name).into_owned();
        self.size = size;
        self.at = 0;
        self.draw(true);
    }

    /// `bytes` of the current file have arrived so far.
    pub fn advance(&mut self, bytes: u64) {
        self.at = bytes.min(self.size);
        self.draw(false);
    }

    /// The current file is written and checked.
    pub fn finish(&mut self) {
        self.done_files += 1;
        self.done_bytes += self.size;
        self.at = 0;
        if self.terminal {
            self.draw(true);
        } else {
            let line = format!("downloaded {} ({})\n", self.name, human_size(self.size));
            let _ = self.out.write_all(line.as_bytes());
        }
    }

    /// The end: the bar cleared and one line saying what was done (or
    /// nothing more when `ok` is false: the error says it).
    pub fn end(&mut self, ok: bool, to: &str) {
        if self.terminal {
            let _ = self.out.write_all(b"\r\x1b[K");
        }
        if ok {
            let secs = self.started.elapsed().as_secs_f64();
            let line = format!(
                "downloaded {} to {} in {secs:.1}s ({}/s)\n",
                count(self.done_files, self.done_bytes),
                crate::safe::visible(to),
                human_size(rate(self.done_bytes, secs)),
            );
            let _ = self.out.write_all(line.as_bytes());
        }
        let _ = self.out.flush();
    }

    fn draw(&mut self, now: bool) {
        if !self.terminal {
            return;
        }
        if !now && self.drawn.is_some_and(|d| d.elapsed() < REDRAW) {
            return;
        }
        self.drawn = Some(Instant::now());
        let secs = self.started.elapsed().as_secs_f64();
        let done = self.done_bytes + self.at;
        let line = bar_line(
            (self.done_files, self.files),
            (done, self.bytes),
            rate(done, secs),
            &self.name,
        );
        let _ = self.out.write_all(format!("\r\x1b[K{line}").as_bytes());
        let _ = self.out.flush();
    }
}

/// Bytes per second.
fn rate(bytes: u64, secs: f64) -> u64 {
    match secs > 0.0 {
        true => (bytes as f64 / secs) as u64,
        false => 0,
    }
}

/// "3 files, 2.0Gi".
fn count(files: usize, bytes: u64) -> String {
    let noun = if files == 1 { "file" } else { "files" };
    format!("{files} {noun}, {}", human_size(bytes))
}

/// Pure: the terminal's line: `[####----] 45% 3/10 1.2Gi/2.0Gi 85.3Mi/s name`.
pub fn bar_line(files: (usize, usize), bytes: (u64, u64), per_sec: u64, name: &str) -> String {
    let (done, total) = bytes;
    let percent = match total {
        0 => 100,
        t => (done.min(t) * 100 / t) as usize,
    };
    let filled = percent * BAR_WIDTH / 100;
    let bar = format!("{}{}", "#".repeat(filled), "-".repeat(BAR_WIDTH - filled));
    format!(
        "[{bar}] {percent:>3}% {}/{} {}/{} {}/s {}",
        files.0,
        files.1,
        human_size(done),
        human_size(total),
        human_size(per_sec),
        shorten(name, NAME_WIDTH)
    )
}

/// `name` cut to `width` characters, its end kept (the file's own name
/// is at the end of its path): `…lots/2026/a.png`.
fn shorten(name: &str, width: usize) -> String {
    let n = name.chars().count();
    if n <= width {
        return name.to_owned();
    }
    let tail: String = name.chars().skip(n - (width - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer whose bytes the test reads afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
        }
    }

    #[test]
    fn the_bar_says_files_bytes_rate_and_name() {
        let line = bar_line((3, 10), (1536, 4096), 2048, "plots/a.png");
        assert_eq!(
            line,
            "[#######-------------]  37% 3/10 1.5Ki/4.0Ki 2.0Ki/s plots/a.png"
        );
        let empty = bar_line((0, 1), (0, 0), 0, "e");
        assert!(
            empty.starts_with("[####################] 100% 0/1 0/0 0/s e"),
            "{empty}"
        );
        let long = bar_line((0, 1), (0, 1), 0, &"d/".repeat(40));
        assert!(long.ends_with("…/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/"), "{long}");
    }

    #[test]
    fn without_a_terminal_one_line_per_file() {
        let out = Shared::default();
        let mut p = Progress::new(Box::new(out.clone()), false, 2, 3000);
        p.start("a\u{1b}[2J.bin", 1000);
        p.advance(500);
        p.finish();
        p.start("b.bin", 2000);
        p.finish();
        p.end(true, "out");
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..2],
            ["downloaded a^[[2J.bin (1000)", "downloaded b.bin (2.0Ki)"]
        );
        assert!(
            lines[2].starts_with("downloaded 2 files, 2.9Ki to out in "),
            "{text}"
        );
        assert!(!text.contains('\r') && !text.contains('\u{1b}'), "{text:?}");
    }

    #[test]
    fn on_a_terminal_one_line_redrawn_then_cleared() {
        let out = Shared::default();
        let mut p = Progress::new(Box::new(out.clone()), true, 1, 100);
        p.start("a", 100);
        for i in 0..1000 {
            p.advance(i % 100);
        }
        p.finish();
        p.end(false, "out");
        let text = out.text();
        let draws = text.matches("\r\x1b[K[").count();
        assert!(
            (2..10).contains(&draws),
            "{draws} redraws, at most every 100 ms: {text:?}"
        );
        assert!(
            text.ends_with("\r\x1b[K"),
            "cleared, no summary after an error: {text:?}"
        );
        assert!(!text.contains('\n'), "{text:?}");
    }
}
