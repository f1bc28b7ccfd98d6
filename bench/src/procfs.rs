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
    let [utime, stime, _, _] = stat_times(pid)?;
    Ok(Sample {
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
        cpu_s: (utime + stime) as f64 / ticks,
    })
}

/// CPU seconds used so far by each devcluster component of the cluster in
/// `dir` (its state.json), counting the children it reaped (a node agent's:
/// the programs of its pods, workers included), plus the whole machine
/// ("machine", busy time of every CPU from /proc/stat).
pub fn cluster_cpu(dir: &Path, ticks: f64) -> Result<std::collections::BTreeMap<String, f64>> {
    #[derive(serde::Deserialize)]
    struct Proc {
        name: String,
        pid: u32,
    }
    #[derive(serde::Deserialize)]
    struct State {
        procs: Vec<Proc>,
    }
    let path = dir.join("state.json");
    let st: State = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("read {}", path.display()))?,
    )
    .with_context(|| format!("parse {}", path.display()))?;
    let mut out = std::collections::BTreeMap::new();
    for p in st.procs {
        // Every node agent together: the pods' programs run under them.
        let name = if p.name.starts_with("node-") {
            "nodes".to_owned()
        } else {
            p.name
        };
        *out.entry(name).or_insert(0.0) += with_children(p.pid, ticks);
    }
    out.insert("machine".to_owned(), machine_busy(ticks)?);
    Ok(out)
}

/// utime+stime+cutime+cstime of `pid`, in seconds (0 when it is gone).
fn with_children(pid: u32, ticks: f64) -> f64 {
    stat_times(pid).map_or(0.0, |t| t.iter().sum::<u64>() as f64 / ticks)
}

/// utime, stime, cutime and cstime of `pid`, in clock ticks.
fn stat_times(pid: u32) -> Result<[u64; 4]> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("read /proc/{pid}/stat"))?;
    // Split after the parenthesised command name (which may hold spaces):
    // field 3 (state) is then index 0, so utime (14) .. cstime (17) are 11 .. 14.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    Ok([t(11), t(12), t(13), t(14)])
}

/// Busy CPU seconds of the whole machine (all but idle and iowait).
fn machine_busy(ticks: f64) -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/stat").context("read /proc/stat")?;
    let line = stat.lines().next().unwrap_or_default();
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest is in user).
    let busy: u64 = v
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, n)| n)
        .sum();
    Ok(busy as f64 / ticks)
}

/// `after - before`, per key.
pub fn cpu_spent(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
) -> std::collections::BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our own process reads; a pid that does not exist counts nothing.
    #[test]
    fn stat_times_read_and_missing() {
        let me = std::process::id();
        assert!(stat_times(me).is_ok());
        assert!(sample(me, clock_ticks()).is_ok_and(|s| s.rss_kib > 0));
        assert_eq!(with_children(u32::MAX, 100.0), 0.0);
    }
}
