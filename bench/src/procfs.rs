//! The operator is a host process on the devcluster's node agent: find it
//! and read its memory and CPU time from /proc.

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, Result};

/// Pid of the one process running the binary `exe` (other clusters on
/// this machine may run an operator of their own, from another path);
/// None when there is none or more than one.
pub fn operator_pid(exe: &Path) -> Option<u32> {
    match operator_pids(exe)[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// Pids of the processes running the binary `exe`.
pub fn operator_pids(exe: &Path) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
        if !argv0.ends_with(b"longtask-operator") {
            continue;
        }
        if std::fs::read_link(e.path().join("exe")).is_ok_and(|p| p == exe) {
            out.push(pid);
        }
    }
    out
}

#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Sample {
    pub rss_kib: u64,
    pub hwm_kib: u64,
    pub cpu_s: f64,
}

/// Clock ticks per second of /proc/PID/stat times.
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// VmRSS, VmHWM and utime+stime of `pid`.
pub fn sample(pid: u32, ticks: f64) -> Result<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("read /proc/{pid}/status"))?;
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("read /proc/{pid}/stat"))?;
    // Split after the parenthesised command name (which may hold spaces):
    // field 3 (state) is then index 0, so utime (14) and stime (15) are 11, 12.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    Ok(Sample {
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
        cpu_s: (t(11) + t(12)) as f64 / ticks,
    })
}
