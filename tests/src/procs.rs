//! Processes of this machine: a devcluster's pods run on it (process nodes
//! run them as host processes, container nodes in namespaces whose
//! processes this machine's /proc shows too), so a test finds a pod's
//! program through /proc and signals it directly.

use std::path::PathBuf;

fn pid_dirs() -> Vec<(i32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<i32>().ok()?;
            Some((pid, e.path()))
        })
        .collect()
}

/// Pids whose command line contains `needle`.
pub fn with_cmdline(needle: &str) -> Vec<i32> {
    pid_dirs()
        .into_iter()
        .filter(|(_, p)| {
            std::fs::read(p.join("cmdline"))
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// Pids of workers (`longtask-worker run -- ...`) whose program's command
/// line contains `marker`, minus those in `except`.
pub fn workers_with(marker: &str, except: &[i32]) -> Vec<i32> {
    with_cmdline(marker)
        .into_iter()
        .filter(|p| !except.contains(p))
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains("longtask-worker"))
        })
        .collect()
}

/// Pids whose command line contains `cmd` and whose environment holds `var` exactly.
pub fn with_env(cmd: &str, var: &str) -> Vec<i32> {
    with_cmdline(cmd)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|b| b.split(|c| *c == 0).any(|kv| kv == var.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Whether `pid` runs: it exists and is no zombie (a killed process stays
/// a zombie until its parent reaps it).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        // The state follows the command name, which is in parentheses and
        // may itself hold spaces or parentheses.
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Sends `sig` (e.g. "KILL", "STOP", "CONT") to `pid` with kill(1).
pub fn signal(pid: i32, sig: &str) -> anyhow::Result<()> {
    let st = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()?;
    anyhow::ensure!(st.success(), "kill -{sig} {pid}: {st}");
    Ok(())
}
