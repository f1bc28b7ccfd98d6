//! Runs the program: stdout and stderr pass through unchanged while the
//! tail of stdout (the fallback result) and the last lines of both together
//! (the log tail) are kept; SIGTERM/SIGINT are forwarded; the exit is decoded.

use std::collections::VecDeque;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};
use tokio::task::JoinHandle;

use crate::say;

/// How the program ended.
#[derive(Debug)]
pub struct Outcome {
    /// `Ok` when it exited with code 0, else what went wrong.
    pub ended: Result<(), RunError>,
    /// The last bytes of the program's stdout.
    pub stdout_tail: Vec<u8>,
    /// The last lines of stdout and stderr together.
    pub log_tail: String,
}

impl Outcome {
    /// Exit code; 128+N when killed by signal N; 127 not found; 126 not executable.
    pub fn exit_code(&self) -> i32 {
        self.ended.as_ref().map_or_else(RunError::exit_code, |_| 0)
    }

    /// Empty on success, else what went wrong.
    pub fn message(&self) -> String {
        self.ended
            .as_ref()
            .map_or_else(|e| crate::chain(e), |_| String::new())
    }
}

/// Why the program did not run, or did not end with exit code 0.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("no program given")]
    NoProgram,
    #[error("program not found: {program}")]
    NotFound {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot execute {program}")]
    NotExecutable {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot start {program}")]
    Start {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot wait for the program {program}")]
    Wait {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("the program exited with code {code}")]
    Exited { code: i32 },
    #[error("the program was killed by signal {signal} ({number})")]
    Killed { signal: &'static str, number: i32 },
    #[error("the program ended without an exit code")]
    NoExitCode,
}

impl RunError {
    /// The exit code the worker reports, and exits with, for this failure:
    /// as a shell would (127 not found, 126 not executable, 128+N killed
    /// by signal N).
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::NoProgram => 2,
            Self::NotFound { .. } => 127,
            Self::NotExecutable { .. } | Self::Start { .. } => 126,
            Self::Wait { .. } | Self::NoExitCode => 1,
            Self::Exited { code } => *code,
            Self::Killed { number, .. } => 128 + number,
        }
    }
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
        return failed(RunError::NoProgram);
    };
    let mut child = match spawn(name, args, env) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let tail = Arc::new(Mutex::new(Tail::new(tail_cap)));
    let log = Arc::new(Mutex::new(Tail::new(log_cap)));
    let copiers = copy_output(&mut child, &tail, &log);
    let status = wait_forwarding_signals(&mut child).await;
    // The program may leave a background process holding stdout open: wait
    // a little for the copy to finish, not forever.
    for c in copiers {
        let _ = tokio::time::timeout(Duration::from_secs(2), c).await;
    }
    let stdout_tail = tail.lock().map(|t| t.bytes()).unwrap_or_default();
    let log_tail = log
        .lock()
        .map(|t| last_lines(&t.bytes(), log_lines, t.full()))
        .unwrap_or_default();
    let ended = status
        .map_err(|source| RunError::Wait {
            program: name.to_owned(),
            source,
        })
        .and_then(decode);
    Outcome {
        ended,
        stdout_tail,
        log_tail,
    }
}

/// Starts `name` with `args` and the extra environment `env`, its stdout
/// and stderr piped. The upload grant is the worker's, never the
/// program's: it is removed from the program's environment; and so are
/// the variables carrying the upstreams' results, which the program gets
/// as files (`inputs`).
fn spawn(name: &str, args: &[String], env: &[(String, String)]) -> Result<Child, RunError> {
    let mut cmd = Command::new(name);
    for (var, _) in std::env::vars_os() {
        if var.to_str().is_some_and(crate::inputs::is_carrier) {
            cmd.env_remove(var);
        }
    }
    cmd.args(args)
        .env_remove(crds::names::env::UPLOAD_GRANT)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().map_err(|source| {
        let program = name.to_owned();
        match source.kind() {
            io::ErrorKind::NotFound => RunError::NotFound { program, source },
            io::ErrorKind::PermissionDenied => RunError::NotExecutable { program, source },
            _ => RunError::Start { program, source },
        }
    })
}

/// Passes the child's stdout and stderr through, keeping stdout in `tail`
/// and both in `log`; the copies end when the pipes close.
fn copy_output(
    child: &mut Child,
    tail: &Arc<Mutex<Tail>>,
    log: &Arc<Mutex<Tail>>,
) -> Vec<JoinHandle<()>> {
    let out = child.stdout.take().map(|out| {
        let tails = vec![tail.clone(), log.clone()];
        tokio::spawn(tee(out, tokio::io::stdout(), tails))
    });
    let err = child
        .stderr
        .take()
        .map(|err| tokio::spawn(tee(err, tokio::io::stderr(), vec![log.clone()])));
    out.into_iter().chain(err).collect()
}

/// Waits for the child to end, forwarding SIGTERM and SIGINT to it meanwhile.
async fn wait_forwarding_signals(child: &mut Child) -> io::Result<ExitStatus> {
    let pid = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .map(Pid::from_raw);
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    loop {
        tokio::select! {
            st = child.wait() => return st,
            Some(()) = recv(&mut term) => forward(pid, Signal::SIGTERM),
            Some(()) = recv(&mut int) => forward(pid, Signal::SIGINT),
        }
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

fn failed(e: RunError) -> Outcome {
    Outcome {
        ended: Err(e),
        stdout_tail: Vec::new(),
        log_tail: String::new(),
    }
}

/// How a finished program ended: `Ok` for exit code 0.
pub fn decode(st: ExitStatus) -> Result<(), RunError> {
    match (st.code(), st.signal()) {
        (Some(0), _) => Ok(()),
        (Some(code), _) => Err(RunError::Exited { code }),
        (None, Some(number)) => Err(RunError::Killed {
            signal: Signal::try_from(number).map_or("unknown", |s| s.as_str()),
            number,
        }),
        (None, None) => Err(RunError::NoExitCode),
    }
}
