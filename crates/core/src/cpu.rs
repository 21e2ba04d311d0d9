//! Which SIMD instructions this CPU has, detected at run time.
//!
//! kapprox is not built with `target-cpu=native`, so one binary runs on any
//! x86-64 (or other) machine; the hot kernels are compiled for several
//! instruction sets and pick one here. Detection only executes `cpuid`
//! (through `std::is_x86_feature_detected!`, which caches it).

/// The instruction set the dense kernels of [`crate::gram`] use.
///
/// Every level computes every output element with the same sequence of
/// fused multiply-adds, so the level changes the speed, never the bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Simd {
    /// AVX-512F: 8 doubles per register, 32 registers.
    Avx512,
    /// AVX2 with FMA: 4 doubles per register, 16 registers.
    Avx2Fma,
    /// Plain Rust with `f64::mul_add` (fast where the target has FMA, e.g.
    /// aarch64; a library call on x86-64 CPUs older than Haswell).
    Portable,
}

impl Simd {
    /// The best level this CPU supports.
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Simd::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Simd::Avx2Fma;
            }
        }
        Simd::Portable
    }

    /// Whether this CPU can run kernels compiled for `self`.
    pub fn is_available(self) -> bool {
        match self {
            Simd::Portable => true,
            Simd::Avx2Fma => matches!(Simd::detect(), Simd::Avx2Fma | Simd::Avx512),
            Simd::Avx512 => Simd::detect() == Simd::Avx512,
        }
    }

    /// Doubles per vector register (1 for [`Simd::Portable`]).
    pub fn f64_lanes(self) -> usize {
        match self {
            Simd::Avx512 => 8,
            Simd::Avx2Fma => 4,
            Simd::Portable => 1,
        }
    }

    /// A short name: `"avx512f"`, `"avx2+fma"` or `"portable"`.
    pub fn name(self) -> &'static str {
        match self {
            Simd::Avx512 => "avx512f",
            Simd::Avx2Fma => "avx2+fma",
            Simd::Portable => "portable",
        }
    }
}

/// The CPU's brand string from `cpuid` (e.g. `"AMD EPYC 7B13"`), if the
/// CPU reports one.
pub fn brand() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // Leaf 0x8000_0000 reports the highest extended leaf; the brand
        // string is in leaves 0x8000_0002..=0x8000_0004.
        let max = __cpuid(0x8000_0000).eax;
        if max < 0x8000_0004 {
            return None;
        }
        let mut bytes = Vec::with_capacity(48);
        for leaf in 0x8000_0002u32..=0x8000_0004 {
            let r = __cpuid(leaf);
            for word in [r.eax, r.ebx, r.ecx, r.edx] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
        }
        let s: String = String::from_utf8_lossy(&bytes).trim_matches(char::from(0)).trim().to_string();
        (!s.is_empty()).then_some(s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The size in bytes of the largest-level data or unified cache, from
/// `cpuid` (Intel's leaf 4, AMD's leaf `0x8000_001D`, which describe the
/// caches in one format), if the CPU reports it. On a virtual machine this
/// is the host's cache, which other tenants may share.
pub fn last_level_cache_bytes() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        let topology_extensions = __cpuid(0x8000_0000).eax >= 0x8000_001D && (__cpuid(0x8000_0001).ecx >> 22) & 1 == 1;
        let leaf = if topology_extensions {
            0x8000_001D
        } else if __cpuid(0).eax >= 4 {
            4
        } else {
            return None;
        };
        let mut best: Option<(u32, usize)> = None;
        for sub in 0..16 {
            let r = __cpuid_count(leaf, sub);
            // Type 0: no more caches; 2: instruction cache.
            match r.eax & 0x1f {
                0 => break,
                2 => continue,
                _ => {}
            }
            let level = (r.eax >> 5) & 0x7;
            let field = |word: u32, shift: u32, bits: u32| ((word >> shift) & ((1 << bits) - 1)) as usize + 1;
            let (ways, partitions, line) = (field(r.ebx, 22, 10), field(r.ebx, 12, 10), field(r.ebx, 0, 12));
            let bytes = ways * partitions * line * (r.ecx as usize + 1);
            if best.is_none_or(|(l, _)| level > l) {
                best = Some((level, bytes));
            }
        }
        best.map(|(_, bytes)| bytes)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detected_level_is_available_and_portable_always_is() {
        let s = Simd::detect();
        assert!(s.is_available());
        assert!(Simd::Portable.is_available());
        assert!(s.f64_lanes() >= 1);
    }

    /// `"32768K"`, `"32M"` or `"4096"` (bytes), as Linux's sysfs writes
    /// cache sizes.
    fn sysfs_size(s: &str) -> Option<usize> {
        let (digits, unit) = match s.as_bytes().last()? {
            b'K' => (&s[..s.len() - 1], 1 << 10),
            b'M' => (&s[..s.len() - 1], 1 << 20),
            _ => (s, 1),
        };
        digits.parse::<usize>().ok()?.checked_mul(unit)
    }

    /// The largest-level non-instruction cache of cpu0 in Linux's sysfs.
    fn sysfs_last_level_cache() -> Option<usize> {
        let mut best: Option<(u32, usize)> = None;
        for entry in std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?.flatten() {
            let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
            let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else { continue };
            let (Ok(level), Some(bytes)) = (level.trim().parse::<u32>(), sysfs_size(size.trim())) else { continue };
            if kind.trim() != "Instruction" && best.is_none_or(|(l, _)| level > l) {
                best = Some((level, bytes));
            }
        }
        best.map(|(_, bytes)| bytes)
    }

    #[test]
    fn last_level_cache_is_what_the_kernel_reports() {
        let ours = last_level_cache_bytes();
        if let Some(bytes) = ours {
            assert!(bytes >= 1 << 16, "{bytes} bytes");
        }
        match (ours, sysfs_last_level_cache()) {
            // Linux derives these from the same cpuid leaves on x86 (where
            // they exist: without them it reads older leaves, and so does
            // no product here, which then uses its fixed phase size).
            (Some(bytes), Some(linux)) => assert_eq!(bytes, linux),
            other => eprintln!("cpuid and sysfs last-level cache sizes: {other:?}; nothing to compare"),
        }
    }
}
