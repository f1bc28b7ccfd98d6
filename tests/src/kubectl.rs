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

    /// `kubectl auth can-i ARGS... --as USER`: the API server's answer, yes
    /// or no (kubectl exits 1 on no, so the exit code alone is no error).
    pub fn can_i(&self, user: &str, args: &[&str]) -> Result<bool> {
        let out = self
            .command()
            .args(["auth", "can-i"])
            .args(args)
            .args(["--as", user])
            .output()
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
