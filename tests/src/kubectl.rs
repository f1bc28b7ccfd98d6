//! kubectl, run the way a user runs it, against the test cluster.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};

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
        let out = self.command().args(args).output().context("run kubectl")?;
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
        child
            .stdin
            .take()
            .context("kubectl stdin")?
            .write_all(input.as_bytes())?;
        let out = child.wait_with_output()?;
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
}
