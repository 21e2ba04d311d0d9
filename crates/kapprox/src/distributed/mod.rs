//! Fits beyond one process: partial-statistics files, `reduce`, local
//! worker processes and MPI — all the same [`FitJob`] passes.
//!
//! Every pass of a fit produces a state that is a sum over rows (see
//! `fit::passes`), so a pass can run on disjoint shard sets anywhere and
//! the states merge into the state of one pass over all shards. This module
//! moves states between processes:
//!
//! - [`files`]: the part file (one pass's state over some shards, with the
//!   run's configuration, the dataset's fingerprint, the shard list and row
//!   ranges, and a checksum) and the pass-result file (what a reduced pass
//!   established, which the next pass starts from);
//! - [`reduce`](mod@reduce): checks that parts belong to the same run and pass and
//!   cover every shard exactly once, merges them in shard order and
//!   advances the job;
//! - [`workers`]: `fit --workers P`, the same through child processes;
//! - `mpi` (cargo feature `mpi`): the same through MPI ranks;
//! - [`cli`]: the command-line handlers.
//!
//! # Determinism
//!
//! Inside a part every accumulator sums rows in a fixed order (blocks of
//! consecutive rows, `kapprox_core::moments`), and parts are merged in
//! shard order. The result is a function of the data, the seed and the
//! partition into parts only: the same partition gives bitwise the same
//! model whether the parts ran as files, workers or MPI ranks; another
//! partition changes only the association of the sums at part boundaries
//! (~1e-16 relative).

pub mod cli;
pub mod codec;
pub mod files;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod reduce;
pub mod workers;

use crate::config::{ReadConfig, SigmaSpec};
use crate::fit::job::JobBase;
use crate::fit::method::Method;
use crate::fit::{FitConfig, Split};
use crate::model::Task;
use anyhow::{Result, bail};
use kapprox_io::{LabelSpec, NanPolicy, ScalerKind};
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::path::PathBuf;

pub use crate::fit::job::FitJob;

/// A bandwidth candidate as stored in files.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SigmaDoc {
    /// σ given explicitly.
    Value(f64),
    /// σ = factor × the median distance.
    Auto(f64),
}

/// The label choice as stored in files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabelDoc {
    /// A column name.
    Name(String),
    /// The last column.
    Last,
    /// The label recorded by `convert`.
    Auto,
    /// No label.
    None,
}

/// A [`FitConfig`] as stored in part and pass-result files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfigDoc {
    /// Training data path as given.
    pub train: PathBuf,
    /// The map family and its parameters.
    pub method: Method,
    /// Bandwidth candidates.
    pub sigmas: Vec<SigmaDoc>,
    /// Ridge penalties (`None`: the default grid).
    pub alphas: Option<Vec<f64>>,
    /// Regression or classification.
    pub task: Task,
    /// Input scaling.
    pub scale: ScalerKind,
    /// Label column choice.
    pub label: LabelDoc,
    /// Rows per chunk.
    pub chunk_rows: usize,
    /// NaN policy.
    pub nan: NanPolicy,
    /// Hold-out or k folds.
    pub split: Split,
    /// Seed.
    pub seed: u64,
    /// `--max-memory`.
    pub max_memory: Option<u64>,
}

impl ConfigDoc {
    /// The stored form of `cfg`.
    pub fn of(cfg: &FitConfig) -> ConfigDoc {
        ConfigDoc {
            train: cfg.train.clone(),
            method: cfg.method.clone(),
            sigmas: cfg
                .sigmas
                .iter()
                .map(|s| match *s {
                    SigmaSpec::Value(v) => SigmaDoc::Value(v),
                    SigmaSpec::Auto(f) => SigmaDoc::Auto(f),
                })
                .collect(),
            alphas: cfg.alphas.clone(),
            task: cfg.task,
            scale: cfg.scale,
            label: match &cfg.read.label {
                LabelSpec::Name(n) => LabelDoc::Name(n.clone()),
                LabelSpec::Last => LabelDoc::Last,
                LabelSpec::Hint => LabelDoc::Auto,
                LabelSpec::None => LabelDoc::None,
            },
            chunk_rows: cfg.read.chunk_rows,
            nan: cfg.read.nan,
            split: cfg.split,
            seed: cfg.seed,
            max_memory: cfg.max_memory,
        }
    }

    /// The configuration back.
    pub fn to_config(&self) -> FitConfig {
        FitConfig {
            train: self.train.clone(),
            method: self.method.clone(),
            sigmas: self
                .sigmas
                .iter()
                .map(|s| match *s {
                    SigmaDoc::Value(v) => SigmaSpec::Value(v),
                    SigmaDoc::Auto(f) => SigmaSpec::Auto(f),
                })
                .collect(),
            alphas: self.alphas.clone(),
            task: self.task,
            scale: self.scale,
            read: ReadConfig {
                label: match &self.label {
                    LabelDoc::Name(n) => LabelSpec::Name(n.clone()),
                    LabelDoc::Last => LabelSpec::Last,
                    LabelDoc::Auto => LabelSpec::Hint,
                    LabelDoc::None => LabelSpec::None,
                },
                chunk_rows: self.chunk_rows,
                nan: self.nan,
            },
            split: self.split,
            seed: self.seed,
            max_memory: self.max_memory,
        }
    }
}

/// What identifies a run: the configuration and the dataset as its footers
/// describe it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunDoc {
    /// The fit configuration.
    pub config: ConfigDoc,
    /// Columns, stored statistics and shards.
    pub base: JobBase,
}

impl RunDoc {
    /// The run of `job`.
    pub fn of(job: &FitJob) -> RunDoc {
        RunDoc { config: ConfigDoc::of(job.config()), base: job.base().clone() }
    }

    /// Everything that can change the model, as JSON: the configuration
    /// without the data path (it may be mounted elsewhere on another
    /// machine; the shard fingerprint identifies the data), the chunk size
    /// and the memory limit (neither changes the result), plus the base.
    pub fn key(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("serialisable");
        if let Some(c) = v.get_mut("config").and_then(|c| c.as_object_mut()) {
            for k in ["train", "chunk_rows", "max_memory"] {
                c.remove(k);
            }
        }
        v
    }

    /// `None` when `self` and `other` are the same run; else the first
    /// setting in which they differ, e.g. `seed`: `7` vs `0`, or
    /// `method.n_components`: `16` vs `32`, or `dataset shard 3`.
    pub fn difference(&self, other: &RunDoc) -> Option<Difference> {
        let (a, b) = (self.key(), other.key());
        if a == b {
            return None;
        }
        let (sa, sb) = (&a["base"]["shards"], &b["base"]["shards"]);
        if let (Some(xs), Some(ys)) = (sa.as_array(), sb.as_array())
            && xs != ys
        {
            if xs.len() != ys.len() {
                return Some(Difference::new("number of dataset shards", &xs.len().into(), &ys.len().into()));
            }
            let i = (0..xs.len()).find(|&i| xs[i] != ys[i]).expect("the lists differ");
            return Some(Difference::new(&format!("dataset shard {i}"), &xs[i], &ys[i]));
        }
        let mut path = Vec::new();
        first_difference(&a, &b, &mut path).or_else(|| Some(Difference::new("configuration", &a, &b)))
    }
}

/// The first setting in which two runs differ (see [`RunDoc::difference`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// What differs: `seed`, `method.n_components`, `dataset label`, ...
    pub what: String,
    /// The value in the run `difference` was called on (JSON, shortened).
    pub ours: String,
    /// The value in the other run.
    pub theirs: String,
}

impl Difference {
    fn new(what: &str, ours: &serde_json::Value, theirs: &serde_json::Value) -> Difference {
        let short = |v: &serde_json::Value| {
            let s = v.to_string();
            if s.chars().count() > 100 { format!("{}...", s.chars().take(97).collect::<String>()) } else { s }
        };
        Difference { what: what.to_string(), ours: short(ours), theirs: short(theirs) }
    }
}

/// Depth-first: the first leaf (in key order) where `a` and `b` differ.
/// Paths drop the `config.` prefix and call `base.` `dataset `.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &mut Vec<String>) -> Option<Difference> {
    use serde_json::Value;
    if a == b {
        return None;
    }
    let name = |path: &[String]| -> String {
        match path.first().map(String::as_str) {
            Some("config") => path[1..].join("."),
            Some("base") => format!("dataset {}", path[1..].join(".")),
            _ => path.join("."),
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (xv, yv) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                path.push(k.clone());
                let d = first_difference(xv, yv, path);
                path.pop();
                if d.is_some() {
                    return d;
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (xv, yv)) in x.iter().zip(y).enumerate() {
                path.push(i.to_string());
                let d = first_difference(xv, yv, path);
                path.pop();
                if d.is_some() {
                    return d;
                }
            }
            None
        }
        _ => Some(Difference::new(&name(path), a, b)),
    }
}

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

    /// Parses `--shards 0,3,5-9`.
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
