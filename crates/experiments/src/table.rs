//! Writers of the experiments' results: CSV, markdown, and the names
//! plots and tables use.

use anyhow::{Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Mean and (population) standard deviation.
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// Writes `rows` as CSV (header from the field names) to `dir/results.csv`,
/// atomically; creates `dir`.
pub fn write_csv<R: Serialize>(rows: &[R], dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the output directory", dir.display()))?;
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    let path = dir.join("results.csv");
    kapprox::tensorfile::write_atomic(&path, &bytes)?;
    Ok(path)
}

/// A markdown table.
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// The name of a dataset in plot titles: the shared sets by what the papers
/// call them, others as they are.
pub fn dataset_title(name: &str) -> String {
    match name {
        "cpu_rks" => "CPU (cpu_rks)".into(),
        "574_house_16H" => "census house_16H".into(),
        "a9a" => "a9a (Adult)".into(),
        "covtype_random15k" => "Covertype, random 15k".into(),
        "covtype_balanced10k" => "Covertype, balanced 10k".into(),
        "magic" => "MAGIC gamma".into(),
        other => other.into(),
    }
}

/// The display name of a method in plots and tables (the TEFM paper's).
pub fn display_name(method: &str) -> &str {
    match method {
        "rff" => "RFF",
        "rff-phase" => "RKS",
        "qmc" => "Quasi",
        "comp" => "Comp",
        "fastfood" => "Fastfood",
        "orf" => "ORF",
        "sorf" => "SORF",
        "nystrom" => "Nyström",
        "tefm-g" => "TEFM-G",
        "tefm-s" => "TEFM-S",
        "eof" => "EOF",
        "eof-uniform" => "EOF (uniform M)",
        "eof-boundary" => "EOF (boundary basis)",
        "eof-paper" => "EOF (paper)",
        "exact" => "Exact",
        other => other,
    }
}
