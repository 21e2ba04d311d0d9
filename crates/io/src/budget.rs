//! A memory budget, consulted before allocating anything whose size comes
//! from the input or the options.
//!
//! Sizes read from files (a LIBSVM index, an IDX header, a CSV header's
//! column count) or given as flags are checked against the budget before
//! memory is reserved, so that a 20-byte file cannot ask for terabytes and
//! end in an allocation failure. The default is
//! [`DEFAULT_BUDGET_FRACTION`] of the machine's memory (physical memory,
//! or the cgroup limit when that is lower). Only this crate reads the
//! machine; the numerical crates take a budget in bytes.

use std::fmt;

/// The share of the machine's memory that [`MemoryBudget::from_machine`]
/// allows: one half, leaving the rest to the page cache (the reader
/// memory-maps its shards) and to other processes.
pub const DEFAULT_BUDGET_FRACTION: f64 = 0.5;

/// The budget when the machine's memory cannot be read (not Linux, or
/// `/proc` not mounted): 4 GiB.
pub const FALLBACK_BUDGET_BYTES: u64 = 4 << 30;

/// A cap, in bytes, on the memory one step may reserve for things sized by
/// its input or options.
///
/// ```
/// use kapprox_io::MemoryBudget;
///
/// let budget = MemoryBudget::new(1 << 30);
/// assert!(budget.allows(512 << 20));
/// assert!(!budget.allows(2 << 30));
/// assert!(MemoryBudget::from_machine().bytes() > 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    bytes: u64,
}

impl MemoryBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Self {
        MemoryBudget { bytes }
    }

    /// No limit (`u64::MAX` bytes).
    pub fn unlimited() -> Self {
        MemoryBudget { bytes: u64::MAX }
    }

    /// [`DEFAULT_BUDGET_FRACTION`] of [`machine_memory_bytes`], or
    /// [`FALLBACK_BUDGET_BYTES`] when the machine cannot say.
    pub fn from_machine() -> Self {
        match machine_memory_bytes() {
            Some(total) => MemoryBudget { bytes: (total as f64 * DEFAULT_BUDGET_FRACTION) as u64 },
            None => MemoryBudget { bytes: FALLBACK_BUDGET_BYTES },
        }
    }

    /// `bytes` when given, else [`MemoryBudget::from_machine`].
    pub fn or_machine(bytes: Option<u64>) -> Self {
        bytes.map_or_else(Self::from_machine, Self::new)
    }

    /// The budget in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether `needed` bytes fit.
    pub fn allows(&self, needed: u64) -> bool {
        needed <= self.bytes
    }
}

impl Default for MemoryBudget {
    /// [`MemoryBudget::from_machine`].
    fn default() -> Self {
        Self::from_machine()
    }
}

/// The memory this process may use: `MemTotal` of `/proc/meminfo`, or the
/// cgroup's limit (v2 `memory.max`, v1 `memory.limit_in_bytes`) when lower.
/// `None` when neither can be read.
pub fn machine_memory_bytes() -> Option<u64> {
    let physical = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| meminfo_total(&t));
    let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| t.trim().parse::<u64>().ok())
        .min();
    match (physical, cgroup) {
        (Some(p), Some(c)) => Some(p.min(c)),
        (p, c) => p.or(c),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A byte count for people: `512 B`, `3.0 KiB`, `44.7 GiB`; `u64::MAX`
/// (a size that overflowed while being computed) reads as "more than 16 EiB".
#[derive(Clone, Copy, Debug)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        if self.0 == u64::MAX {
            return f.write_str("more than 16 EiB");
        }
        if self.0 < 1024 {
            return write!(f, "{} B", self.0);
        }
        let mut v = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        write!(f, "{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(ByteSize(512).to_string(), "512 B");
        assert_eq!(ByteSize(3 << 10).to_string(), "3.0 KiB");
        assert_eq!(ByteSize(48_000_000_008).to_string(), "44.7 GiB");
        assert_eq!(ByteSize(u64::MAX).to_string(), "more than 16 EiB");
    }

    #[test]
    fn meminfo_total_is_parsed_in_bytes() {
        let text = "MemTotal:       24594868 kB\nMemFree:         1000 kB\n";
        assert_eq!(meminfo_total(text), Some(24594868 * 1024));
        assert_eq!(meminfo_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn the_machine_budget_is_half_of_what_linux_reports() {
        if let Some(total) = machine_memory_bytes() {
            let b = MemoryBudget::from_machine().bytes();
            assert!(b <= total / 2 + 1 && b + 1 >= total / 2, "{b} vs {total}");
        }
        assert_eq!(MemoryBudget::or_machine(Some(7)).bytes(), 7);
    }
}
