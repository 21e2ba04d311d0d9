//! What identifies a run (the configuration and the dataset), and the
//! first setting in which two runs differ.

use crate::fit::{FitConfig, FitJob, JobBase};
use serde::{Deserialize, Serialize};

/// What identifies a run: the configuration and the dataset as its footers
/// describe it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunDoc {
    /// The fit configuration.
    pub config: FitConfig,
    /// Columns, stored statistics and shards.
    pub base: JobBase,
}

impl RunDoc {
    /// The run of `job`.
    pub fn of(job: &FitJob) -> RunDoc {
        RunDoc { config: job.config().clone(), base: job.base().clone() }
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
