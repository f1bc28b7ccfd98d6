//! What the commands and the page print: text to stdout made visible, a
//! program's own bytes exact into a pipe, a line on stderr, and an error
//! with its causes on one line. `main` keeps only the entry and dispatch.

use crate::safe;

/// Writes text to stdout, its control characters made visible
/// ([`safe::visible`]); an error (e.g. a closed pipe) is returned, never a
/// panic as with `print!`.
pub fn out(text: impl AsRef<str>) -> std::io::Result<()> {
    write_stdout(safe::visible(text.as_ref()).as_bytes())
}

/// Writes a program's own bytes (a result, a log line) to stdout: exact
/// into a pipe or a file, control characters made visible on a terminal.
pub fn out_data(bytes: &[u8]) -> std::io::Result<()> {
    write_stdout(&safe::for_stdout(bytes))
}

fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()
}

/// An error and its causes on one line, each cause once.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

/// `eprintln!` for text that may hold what a Task's users wrote: one line
/// on stderr, made visible. Called by its path, `crate::print::note!`.
macro_rules! note {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::safe::visible(&format!($($arg)*)))
    };
}
pub(crate) use note;
