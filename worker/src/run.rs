//! Runs the program: stdout and stderr pass through unchanged while the
//! tail of stdout (the fallback result) and the last lines of both together
//! (the log tail) are kept; SIGTERM/SIGINT are forwarded; the exit is decoded.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Command;
use tokio::signal::unix::{SignalKind, signal};

use crate::say;

/// How the program ended.
#[derive(Debug)]
pub struct Outcome {
    /// Exit code; 128+N when killed by signal N; 127 not found; 126 not executable.
    pub exit_code: i32,
    /// Empty on success, else what went wrong.
    pub message: String,
    /// The last bytes of the program's stdout.
    pub stdout_tail: Vec<u8>,
    /// The last lines of stdout and stderr together.
    pub log_tail: String,
}

/// A bounded buffer keeping the last `cap` bytes written to it.
#[derive(Debug)]
pub struct Tail {
    cap: usize,
    buf: VecDeque<u8>,
}

impl Tail {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            buf: VecDeque::with_capacity(cap),
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(self.cap)..];
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        self.buf.drain(..overflow);
        self.buf.extend(bytes);
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.buf.iter().copied().collect()
    }

    /// True once bytes were dropped from the front.
    fn full(&self) -> bool {
        self.buf.len() == self.cap
    }
}

/// The last `n` lines of `bytes` (lossy UTF-8); when the buffer dropped
/// bytes (`cut`), its first, partial line is left out.
pub fn last_lines(bytes: &[u8], n: usize, cut: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if cut && lines.len() > 1 {
        lines.remove(0);
    }
    let start = lines.len().saturating_sub(n);
    lines[start..].concat()
}

/// Copies `from` to `to` chunk by chunk, keeping the tail; keeps draining
/// `from` even when `to` fails, so the program never blocks on a full pipe.
pub async fn tee(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    tails: Vec<Arc<Mutex<Tail>>>,
) {
    let mut chunk = vec![0u8; 8192];
    let mut out_ok = true;
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if out_ok && (to.write_all(&chunk[..n]).await.is_err() || to.flush().await.is_err()) {
            out_ok = false;
        }
        for tail in &tails {
            if let Ok(mut t) = tail.lock() {
                t.push(&chunk[..n]);
            }
        }
    }
}

/// Runs `program` (name and arguments) with extra environment `env`,
/// keeping `tail_cap` bytes of stdout and `log_lines` lines (at most
/// `log_cap` bytes) of stdout and stderr together.
pub async fn run(
    program: &[String],
    env: &[(String, String)],
    tail_cap: usize,
    log_lines: usize,
    log_cap: usize,
) -> Outcome {
    let Some((name, args)) = program.split_first() else {
        return failed(2, "no program given".to_owned());
    };
    let mut cmd = Command::new(name);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return failed(127, format!("program not found: {name}"));
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return failed(126, format!("cannot execute {name}: permission denied"));
        }
        Err(e) => return failed(126, format!("cannot start {name}: {e}")),
    };
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .map(Pid::from_raw);
    let tail = Arc::new(Mutex::new(Tail::new(tail_cap)));
    let log = Arc::new(Mutex::new(Tail::new(log_cap)));
    let copier = child.stdout.take().map(|out| {
        tokio::spawn(tee(
            out,
            tokio::io::stdout(),
            vec![tail.clone(), log.clone()],
        ))
    });
    let err_copier = child
        .stderr
        .take()
        .map(|err| tokio::spawn(tee(err, tokio::io::stderr(), vec![log.clone()])));

    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    let status = loop {
        tokio::select! {
            st = child.wait() => break st,
            Some(()) = recv(&mut term) => forward(pid, Signal::SIGTERM),
            Some(()) = recv(&mut int) => forward(pid, Signal::SIGINT),
        }
    };
    // The program may leave a background process holding stdout open: wait
    // a little for the copy to finish, not forever.
    for c in [copier, err_copier].into_iter().flatten() {
        let _ = tokio::time::timeout(Duration::from_secs(2), c).await;
    }
    let stdout_tail = tail.lock().map(|t| t.bytes()).unwrap_or_default();
    let log_tail = log
        .lock()
        .map(|t| last_lines(&t.bytes(), log_lines, t.full()))
        .unwrap_or_default();
    let (exit_code, message) = match status {
        Ok(st) => decode(st),
        Err(e) => (1, format!("cannot wait for the program: {e}")),
    };
    Outcome {
        exit_code,
        message,
        stdout_tail,
        log_tail,
    }
}

async fn recv(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match s {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

fn forward(pid: Option<Pid>, sig: Signal) {
    say(&format!("received {sig}, forwarding it to the program"));
    if let Some(pid) = pid
        && let Err(e) = kill(pid, sig)
    {
        say(&format!("cannot forward {sig}: {e}"));
    }
}

fn failed(exit_code: i32, message: String) -> Outcome {
    Outcome {
        exit_code,
        message,
        stdout_tail: Vec::new(),
        log_tail: String::new(),
    }
}

/// Exit code and message of a finished program.
pub fn decode(st: ExitStatus) -> (i32, String) {
    if let Some(code) = st.code() {
        let msg = if code == 0 {
            String::new()
        } else {
            format!("the program exited with code {code}")
        };
        return (code, msg);
    }
    match st.signal() {
        Some(n) => {
            let name = Signal::try_from(n).map(|s| s.as_str()).unwrap_or("unknown");
            (
                128 + n,
                format!("the program was killed by signal {name} ({n})"),
            )
        }
        None => (1, "the program ended without an exit code".to_owned()),
    }
}
