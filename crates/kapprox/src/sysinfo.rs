//! Facts about this process for reports.

/// Peak resident set size of this process in bytes (Linux `VmHWM`), if the
/// platform reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reports_a_plausible_peak_on_linux() {
        if cfg!(target_os = "linux") {
            let p = super::peak_rss_bytes().expect("VmHWM on Linux");
            assert!(p > 1 << 20 && p < 1 << 40, "{p}");
        }
    }
}
