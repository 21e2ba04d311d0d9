//! Which shards a process takes: `--part I/N` (contiguous ranges, so part
//! order is shard order) or an explicit list.

use crate::fit::JobBase;
use anyhow::{Result, bail};
use std::ops::Range;

/// Most shard indices `--shards` may list: more than any dataset has, and
/// few enough that the list itself is small.
pub const MAX_LISTED_SHARDS: usize = 1 << 24;

/// Which shards a process takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardSelection {
    /// Part `index` (1-based) of `of` contiguous parts.
    Part {
        /// 1-based part number.
        index: usize,
        /// Number of parts.
        of: usize,
    },
    /// Explicit shard indices.
    List(Vec<usize>),
}

impl ShardSelection {
    /// Parses `--part I/N`.
    pub fn parse_part(text: &str) -> Result<ShardSelection> {
        let bad = || anyhow::anyhow!("--part: {text:?} is not I/N with 1 <= I <= N (e.g. 3/10)");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, of): (usize, usize) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if index == 0 || index > of {
            return Err(bad());
        }
        Ok(ShardSelection::Part { index, of })
    }

    /// Parses `--shards 0,3,5-9` (at most [`MAX_LISTED_SHARDS`] indices).
    pub fn parse_list(text: &str) -> Result<ShardSelection> {
        let mut v = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = || anyhow::anyhow!("--shards: {item:?} is not a shard index or a range like 5-9");
            match item.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (usize, usize) =
                        (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
                    if a > b {
                        return Err(bad());
                    }
                    if b - a >= MAX_LISTED_SHARDS - v.len().min(MAX_LISTED_SHARDS) {
                        bail!("--shards: {text:?} lists more than {MAX_LISTED_SHARDS} shards");
                    }
                    v.extend(a..=b);
                }
                None => v.push(item.parse().map_err(|_| bad())?),
            }
        }
        if v.is_empty() {
            bail!("--shards: {text:?} lists no shard");
        }
        Ok(ShardSelection::List(v))
    }

    /// The shard indices, ascending, for a dataset of `n_shards` shards.
    pub fn resolve(&self, n_shards: usize) -> Result<Vec<usize>> {
        match self {
            ShardSelection::Part { index, of } => Ok(part_shards(index - 1, *of, n_shards).collect()),
            ShardSelection::List(v) => {
                let mut v = v.clone();
                v.sort_unstable();
                if let Some(w) = v.windows(2).find(|w| w[0] == w[1]) {
                    bail!("--shards: shard {} is listed twice", w[0]);
                }
                if let Some(&bad) = v.iter().find(|&&s| s >= n_shards) {
                    bail!("--shards: shard {bad} does not exist; the dataset has shards 0-{}", n_shards - 1);
                }
                Ok(v)
            }
        }
    }

    /// `Some((index, of))` for a part.
    pub fn part(&self) -> Option<(usize, usize)> {
        match self {
            ShardSelection::Part { index, of } => Some((*index, *of)),
            ShardSelection::List(_) => None,
        }
    }
}

/// The shards of part `index` (0-based) of `of`: contiguous, in order, as
/// even as the shard count allows (`⌊i·S/N⌋ .. ⌊(i+1)·S/N⌋`), so part order
/// is shard order.
pub fn part_shards(index: usize, of: usize, n_shards: usize) -> Range<usize> {
    let at = |i: usize| (i as u128 * n_shards as u128 / of as u128) as usize;
    at(index)..at(index + 1)
}

/// `[0, 1, 2, 5, 7, 8]` -> `"0-2,5,7-8"`.
pub fn format_shards(shards: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < shards.len() {
        let mut j = i;
        while j + 1 < shards.len() && shards[j + 1] == shards[j] + 1 {
            j += 1;
        }
        out.push(if i == j { shards[i].to_string() } else { format!("{}-{}", shards[i], shards[j]) });
        i = j + 1;
    }
    if out.is_empty() { "none".into() } else { out.join(",") }
}

/// Global row ranges `[start, end)` of the shards (contiguous shards joined).
pub fn row_ranges(base: &JobBase, shards: &[usize]) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &s in shards {
        let start = base.first_row(s);
        let end = start + base.shards[s].rows;
        match out.last_mut() {
            Some(last) if last[1] == start => last[1] = end,
            _ => out.push([start, end]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_shards_in_order() {
        for n in [1, 2, 7, 100] {
            for of in [1, 2, 3, 5, 150] {
                let all: Vec<usize> = (0..of).flat_map(|i| part_shards(i, of, n)).collect();
                assert_eq!(all, (0..n).collect::<Vec<_>>(), "{n} shards, {of} parts");
            }
        }
        assert_eq!(part_shards(2, 5, 100), 40..60);
    }

    #[test]
    fn selections_parse() {
        assert_eq!(ShardSelection::parse_part("3/10").unwrap(), ShardSelection::Part { index: 3, of: 10 });
        assert!(ShardSelection::parse_part("0/10").is_err());
        assert!(ShardSelection::parse_part("11/10").is_err());
        assert!(ShardSelection::parse_part("3").is_err());
        let l = ShardSelection::parse_list("7, 0,3-5").unwrap();
        assert_eq!(l.resolve(10).unwrap(), vec![0, 3, 4, 5, 7]);
        assert!(l.resolve(6).unwrap_err().to_string().contains("shard 7 does not exist"));
        assert!(ShardSelection::parse_list("1,1").unwrap().resolve(4).unwrap_err().to_string().contains("twice"));
        assert!(ShardSelection::parse_list("5-3").is_err());
        assert_eq!(format_shards(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_shards(&[]), "none");
    }
}
