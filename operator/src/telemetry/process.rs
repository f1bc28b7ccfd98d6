//! The process's own figures, under the names Prometheus' client
//! libraries give them (`process_*`), read from `/proc` at each scrape.

/// Resident set size in bytes, from the `VmRSS:` line of
/// `/proc/self/status` (in kB there).
pub fn resident_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => n.checked_mul(1024),
        _ => None,
    }
}

/// This process's resident set size, where `/proc` tells it.
pub fn resident_now() -> Option<u64> {
    resident_bytes(&std::fs::read_to_string("/proc/self/status").ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_from_proc_status() {
        let status = "Name:\tlongtask\nVmPeak:\t  99 kB\nVmRSS:\t   30716 kB\nThreads:\t9\n";
        assert_eq!(resident_bytes(status), Some(30716 * 1024));
        assert_eq!(resident_bytes("Name:\tx\n"), None);
        assert_eq!(resident_bytes("VmRSS:\t12 MB\n"), None);
        // This process has one on Linux.
        assert!(resident_now().is_some_and(|b| b > 0));
    }
}
