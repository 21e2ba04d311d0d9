//! The compression of the Parquet files kapprox writes.
//!
//! Reading needs no option: every codec of the Parquet format is read
//! (uncompressed, snappy, gzip, zstd, lz4, lz4-raw, brotli). snappy, gzip
//! (miniz_oxide), lz4 (lz4_flex) and brotli are pure Rust; zstd is the C
//! library, compiled with the C compiler that Rust's linker needs anyway.
//!
//! Page checksums: the parquet crate verifies a page's CRC32 when the
//! writer stored one (enabled here), but it cannot write them yet, so files
//! written by kapprox carry none.

use crate::error::IoError;
use parquet::basic::{BrotliLevel, GzipLevel, ZstdLevel};
use std::fmt;
use std::str::FromStr;

/// The codec of written files (`--compression`). Parses from `none`,
/// `snappy`, `lz4` (LZ4_RAW, the format's current LZ4), `gzip`, `zstd`,
/// `brotli`, the last three optionally with a level, e.g. `zstd:3`.
///
/// Default [`DEFAULT_COMPRESSION`], zstd level 1: files about as small as
/// gzip's at snappy's speed, and the default of polars, DuckDB and recent
/// Spark; decompression speed hardly depends on the level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// No compression.
    None,
    /// Snappy.
    Snappy,
    /// LZ4_RAW.
    Lz4,
    /// Gzip at a level 0..=9.
    Gzip(u32),
    /// Zstandard at a level 1..=22.
    Zstd(i32),
    /// Brotli at a level 0..=11.
    Brotli(u32),
}

/// Default compression of written files: zstd level 1.
pub const DEFAULT_COMPRESSION: Compression = Compression::Zstd(1);

impl Default for Compression {
    fn default() -> Self {
        DEFAULT_COMPRESSION
    }
}

impl Compression {
    /// The parquet writer's setting.
    pub(crate) fn to_parquet(self) -> parquet::basic::Compression {
        use parquet::basic::Compression as P;
        // Levels are checked when parsed; out-of-range ones built in code
        // fall back to the codec's default level rather than failing a write.
        match self {
            Compression::None => P::UNCOMPRESSED,
            Compression::Snappy => P::SNAPPY,
            Compression::Lz4 => P::LZ4_RAW,
            Compression::Gzip(l) => P::GZIP(GzipLevel::try_new(l).unwrap_or_default()),
            Compression::Zstd(l) => P::ZSTD(ZstdLevel::try_new(l).unwrap_or_default()),
            Compression::Brotli(l) => P::BROTLI(BrotliLevel::try_new(l).unwrap_or_default()),
        }
    }
}

impl FromStr for Compression {
    type Err = IoError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || IoError::InvalidOption {
            option: "compression",
            value: s.to_string(),
            expected: "one of none, snappy, lz4, gzip[:0-9], zstd[:1-22], brotli[:0-11]",
        };
        let lower = s.to_ascii_lowercase();
        let (name, level) = match lower.split_once(':') {
            Some((n, l)) => (n, Some(l.parse::<i64>().map_err(|_| bad())?)),
            None => (lower.as_str(), None),
        };
        let in_range = |lo: i64, hi: i64, default: i64| match level {
            None => Ok(default),
            Some(l) if (lo..=hi).contains(&l) => Ok(l),
            Some(_) => Err(bad()),
        };
        match name {
            "none" | "uncompressed" if level.is_none() => Ok(Compression::None),
            "snappy" if level.is_none() => Ok(Compression::Snappy),
            "lz4" | "lz4-raw" | "lz4_raw" if level.is_none() => Ok(Compression::Lz4),
            "gzip" => Ok(Compression::Gzip(in_range(0, 9, 6)? as u32)),
            "zstd" => Ok(Compression::Zstd(in_range(1, 22, 1)? as i32)),
            "brotli" => Ok(Compression::Brotli(in_range(0, 11, 1)? as u32)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => f.write_str("none"),
            Compression::Snappy => f.write_str("snappy"),
            Compression::Lz4 => f.write_str("lz4"),
            Compression::Gzip(l) => write!(f, "gzip:{l}"),
            Compression::Zstd(l) => write!(f, "zstd:{l}"),
            Compression::Brotli(l) => write!(f, "brotli:{l}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_levels_and_round_trips() {
        assert_eq!("zstd".parse::<Compression>().unwrap(), Compression::Zstd(1));
        assert_eq!("ZSTD:7".parse::<Compression>().unwrap(), Compression::Zstd(7));
        assert_eq!("gzip".parse::<Compression>().unwrap(), Compression::Gzip(6));
        assert_eq!("lz4-raw".parse::<Compression>().unwrap(), Compression::Lz4);
        for c in [
            Compression::None,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Gzip(3),
            Compression::Zstd(9),
            Compression::Brotli(4),
        ] {
            assert_eq!(c.to_string().parse::<Compression>().unwrap(), c);
        }
        for bad in ["zstd:0", "zstd:23", "snappy:1", "lzo", "gzip:x"] {
            let e = bad.parse::<Compression>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("zstd"), "{e}");
        }
    }
}
