//! The memory of a fit's statistics, estimated before any data is read.

use super::FitConfig;
use anyhow::{Result, bail};

/// Bytes of statistics the fit pass holds for `s` candidates accumulating
/// `l` features (one-pass TEFM: its base map's `d`) with `k` targets over
/// `parts` split parts.
pub fn estimate_memory(s: usize, l: usize, k: usize, parts: usize) -> u64 {
    let w = (l + 1 + k) as u64;
    let per = w * w * 8 + (kapprox_core::moments::BLOCK_ROWS as u64) * w * 8;
    s as u64 * parts as u64 * per
}

/// Refuses statistics of `bytes` beyond the configuration's memory limit.
pub fn check_memory(cfg: &FitConfig, bytes: u64, n_candidates: usize, l: usize) -> Result<()> {
    if let Some(limit) = cfg.max_memory
        && bytes > limit
    {
        bail!(
            "the statistics of {n_candidates} bandwidth candidate(s) with {l} accumulated features and {} split \
             parts need {} (candidates x parts x (l+1+k)² doubles), more than --max-memory {}; use fewer --sigma \
             values, fewer --features or folds, or raise --max-memory",
            cfg.split.n_parts(),
            human_bytes(bytes),
            human_bytes(limit)
        );
    }
    Ok(())
}

/// `1234567` -> `"1.2 MiB"`.
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} B") } else { format!("{v:.1} {}", units[u]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
    }

    #[test]
    fn the_estimate_counts_every_candidate_and_part() {
        let one = estimate_memory(1, 10, 1, 2);
        assert_eq!(estimate_memory(3, 10, 1, 2), 3 * one);
        assert_eq!(one, 2 * (12 * 12 * 8 + 512 * 12 * 8));
    }
}
