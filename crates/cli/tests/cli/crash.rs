//! A killed `featurize` leaves nothing at its final path (its shards were
//! being written in a staging area), and a rerun completes and removes
//! what the killed run left.

use crate::util::{columns, parts};
use kapprox::io::{Dataset, read_column, read_columns};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const SHARDS: u64 = 8;
const SHARD_ROWS: u64 = 10_000;

/// Checks that `file` is a whole feature shard of input shard `shard`:
/// readable, all rows, global row ids in order.
#[track_caller]
fn check_complete(file: &Path, shard: u64) {
    let ids = read_column(file, "row_id").unwrap_or_else(|e| panic!("{}: not a readable shard: {e}", file.display()));
    assert_eq!(ids.len() as u64, SHARD_ROWS, "{}", file.display());
    let first = shard * SHARD_ROWS;
    assert!(ids.iter().enumerate().all(|(i, &id)| id == (first + i as u64) as f64), "{}: row ids", file.display());
}

/// The staging areas of output `name` in `dir` (`.<name>.kapprox-*.tmp`).
pub(crate) fn staging_areas(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}.kapprox-");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    v.sort();
    v
}

kapprox_test!(killed_featurize_leaves_nothing_at_the_output_and_a_rerun_completes, |dir| {
    dir.cmd(&["generate", "--out", "data", "--rows", &(SHARDS * SHARD_ROWS).to_string(), "--features", "20"])
        .args(&["--rows-per-shard", &SHARD_ROWS.to_string()])
        .stdout();
    // Two-row chunks make the run last a second or more on little data,
    // so the kill lands between the first shard and the last.
    let featurize = ["featurize", "--data", "data", "--out", "feat", "--features", "64", "--sigma", "3"];
    let mut cmd = dir.cmd(&featurize).args(&["--chunk-rows", "2"]).into_command();
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn featurize");
    let out = dir.join("feat");
    let start = Instant::now();
    let staged = loop {
        let done: Vec<PathBuf> = staging_areas(dir.path(), "feat")
            .into_iter()
            .map(|a| a.join("feat"))
            .filter(|s| s.is_dir() && !parts(s).is_empty())
            .collect();
        if let Some(s) = done.first() {
            break s.clone();
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("featurize ended ({status}) before its first shard was seen");
        }
        assert!(start.elapsed() < Duration::from_secs(300), "no shard after 300 s");
        std::thread::sleep(Duration::from_millis(2));
    };
    let running = child.try_wait().unwrap().is_none();
    child.kill().expect("SIGKILL"); // `Child::kill` sends SIGKILL on Unix.
    child.wait().unwrap();
    assert!(running, "featurize finished before it could be killed; give it more work");

    // Nothing at the final path: the shards written so far sit in the
    // killed run's staging area, whole or as hidden temporaries.
    assert!(!out.exists(), "the killed run left {} behind", out.display());
    let done = parts(&staged);
    eprintln!("killed with {} of {SHARDS} shards complete in {}", done.len(), staged.display());
    assert!(!done.is_empty() && (done.len() as u64) < SHARDS, "{done:?}");
    for name in &done {
        let shard: u64 = name["part-".len()..name.len() - ".parquet".len()].parse().unwrap();
        check_complete(&staged.join(name), shard);
    }

    // The rerun writes everything, removes the killed run's area, and its
    // output equals that of a run that was never interrupted.
    dir.cmd(&featurize).stdout();
    assert_eq!(staging_areas(dir.path(), "feat"), Vec::<PathBuf>::new(), "staging areas left after the rerun");
    dir.cmd(&["featurize", "--data", "data", "--out", "clean", "--features", "64", "--sigma", "3"]).stdout();
    let names: Vec<String> = (0..SHARDS).map(|s| format!("part-{s:05}.parquet")).collect();
    let all: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(parts(&out), names);
    assert_eq!(all.len(), names.len(), "temporaries left after the rerun: {all:?}");
    for (s, name) in names.iter().enumerate() {
        check_complete(&out.join(name), s as u64);
    }
    let cols = columns(&out.join(&names[0]));
    assert_eq!(cols.len(), 64 + 2, "z0..z63, row_id, label: {cols:?}");
    assert_eq!(read_columns(&out, &cols).unwrap(), read_columns(dir.join("clean"), &cols).unwrap());
    assert_eq!(Dataset::open(&out).unwrap().n_rows(), SHARDS * SHARD_ROWS);
});
