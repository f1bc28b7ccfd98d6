//! kubectl, run the way a user runs it, against the test cluster.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

/// Runs `f`, which waits on a child process, after telling the async
/// runtime so: the tasks queued on this worker thread move to another one
/// meanwhile. Without it, 70 concurrent cases on 16 threads starved each
/// other: a case's 100 ms poll returned 20 s late while kubectl calls held
/// the threads (retention_deletes_after_time in CI). On a current-thread
/// runtime, or outside one, `f` just runs.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[derive(Clone, Debug)]
pub struct Kubectl {
    kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn new(kubeconfig: &Path) -> Kubectl {
        Kubectl {
            kubeconfig: kubeconfig.to_path_buf(),
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig").arg(&self.kubeconfig);
        c
    }

    /// Runs kubectl; Ok(stdout) on success, Err(stderr and stdout) otherwise.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = blocking(|| self.command().args(args).output()).context("run kubectl")?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!(
                "kubectl {} failed ({}):\n{}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                stdout
            );
        }
        Ok(stdout)
    }

    /// `kubectl auth can-i ARGS... --as USER`: the API server's answer, yes
    /// or no (kubectl exits 1 on no, so the exit code alone is no error).
    pub fn can_i(&self, user: &str, args: &[&str]) -> Result<bool> {
        let out = blocking(|| {
            self.command()
                .args(["auth", "can-i"])
                .args(args)
                .args(["--as", user])
                .output()
        })
        .context("run kubectl auth can-i")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        match stdout.lines().last().map(str::trim) {
            Some("yes") => Ok(true),
            Some(l) if l == "no" || l.starts_with("no ") => Ok(false),
            _ => bail!(
                "kubectl auth can-i {} --as {user}: {}{stdout}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// `kubectl -n NS apply -f -` with the YAML on stdin.
    pub fn apply(&self, ns: &str, yaml: &str) -> Result<String> {
        self.stdin(&["-n", ns, "apply", "-f", "-"], yaml)
    }

    /// Runs kubectl with `input` on stdin.
    pub fn stdin(&self, args: &[&str], input: &str) -> Result<String> {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawn kubectl")?;
        let mut pipe = child.stdin.take().context("kubectl stdin")?;
        let out = blocking(|| {
            pipe.write_all(input.as_bytes())?;
            drop(pipe);
            child.wait_with_output()
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!(
                "kubectl {} failed ({}):\n{}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                stdout
            );
        }
        Ok(stdout)
    }

    /// `kubectl longtask -n NS ARGS...`: the plugin, found by kubectl's own
    /// plugin discovery (`kubectl-longtask` in `target/debug`, first on
    /// PATH). kubectl stops looking for a plugin at the first flag, so the
    /// kubeconfig goes in KUBECONFIG and `-n` after the plugin's name.
    fn plugin_command(&self, ns: &str, args: &[&str]) -> Command {
        self.plugin_command_with(ns, args, None)
    }

    /// `plugin_command`, with `first` (if any) ahead of everything on PATH:
    /// a test's stand-in for a program the plugin runs (xdg-open).
    fn plugin_command_with(&self, ns: &str, args: &[&str], first: Option<&Path>) -> Command {
        let bin = crate::root().join("target/debug");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs: Vec<PathBuf> = first.map(Path::to_path_buf).into_iter().collect();
        dirs.push(bin);
        dirs.extend(std::env::split_paths(&path));
        let mut c = Command::new("kubectl");
        c.env("PATH", std::env::join_paths(dirs).unwrap())
            .env("KUBECONFIG", &self.kubeconfig)
            .args(["longtask", "-n", ns])
            .args(args)
            .stdin(Stdio::null());
        c
    }

    /// Runs the plugin to its end; its exit code and output, whatever they are.
    pub fn plugin(&self, ns: &str, args: &[&str]) -> Result<Output> {
        let out =
            blocking(|| self.plugin_command(ns, args).output()).context("run kubectl longtask")?;
        Ok(Output {
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Starts the plugin and reads its stdout line by line as it comes,
    /// noting when each line arrived; stopped on drop if still running.
    pub fn plugin_spawn(&self, ns: &str, args: &[&str]) -> Result<Streaming> {
        self.plugin_spawn_with(ns, args, None)
    }

    /// `plugin_spawn` with `first` ahead of everything on PATH.
    pub fn plugin_spawn_with(
        &self,
        ns: &str,
        args: &[&str],
        first: Option<&Path>,
    ) -> Result<Streaming> {
        let mut child = self
            .plugin_command_with(ns, args, first)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawn kubectl longtask")?;
        let start = Instant::now();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let stdout = child.stdout.take().context("plugin stdout")?;
        let mut err = child.stderr.take().context("plugin stderr")?;
        let seen = Arc::clone(&lines);
        let out_reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                seen.lock().unwrap().push((start.elapsed(), line));
            }
        });
        let said = Arc::clone(&stderr);
        let err_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                said.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Ok(Streaming {
            child,
            lines,
            stderr,
            readers: vec![out_reader, err_reader],
        })
    }
}

/// What a finished plugin run printed, and its exit code (None: killed).
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Output {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            self.stdout(),
            self.stderr
        )
    }
}

/// A plugin run in progress (`Kubectl::plugin_spawn`).
pub struct Streaming {
    child: Child,
    /// Each stdout line with the time it arrived, from the start.
    lines: Arc<Mutex<Vec<(Duration, String)>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Streaming {
    /// The stdout lines so far, with their arrival times.
    pub fn lines(&self) -> Vec<(Duration, String)> {
        self.lines.lock().unwrap().clone()
    }

    /// The process id (kubectl execs the plugin: the plugin's own).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits up to `timeout` for the plugin to exit; its exit code, or an
    /// error (the process killed) when it runs longer.
    pub async fn exit(&mut self, timeout: Duration) -> Result<Option<i32>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait()? {
                for r in self.readers.drain(..) {
                    let _ = r.join();
                }
                return Ok(st.code());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                bail!(
                    "kubectl longtask still running after {timeout:?}; stdout: {:?}; stderr: {}",
                    self.lines(),
                    self.stderr()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
