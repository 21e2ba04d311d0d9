//! A killed `featurize` leaves only complete shards under final names, and
//! a rerun completes.

use crate::util::{columns, parts};
use kapprox::io::{Dataset, read_column, read_columns};
use std::process::Stdio;
use std::time::{Duration, Instant};

const SHARDS: u64 = 8;
const SHARD_ROWS: u64 = 10_000;

/// Checks that `file` is a whole feature shard of input shard `shard`:
/// readable, all rows, global row ids in order.
#[track_caller]
fn check_complete(file: &std::path::Path, shard: u64) {
    let ids = read_column(file, "row_id").unwrap_or_else(|e| panic!("{}: not a readable shard: {e}", file.display()));
    assert_eq!(ids.len() as u64, SHARD_ROWS, "{}", file.display());
    let first = shard * SHARD_ROWS;
    assert!(ids.iter().enumerate().all(|(i, &id)| id == (first + i as u64) as f64), "{}: row ids", file.display());
}

kapprox_test!(killed_featurize_leaves_no_partial_shard_and_a_rerun_completes, |dir| {
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
    loop {
        if out.is_dir() && !parts(&out).is_empty() {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("featurize ended ({status}) before its first shard was seen");
        }
        assert!(start.elapsed() < Duration::from_secs(300), "no shard after 300 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    let running = child.try_wait().unwrap().is_none();
    child.kill().expect("SIGKILL"); // `Child::kill` sends SIGKILL on Unix.
    child.wait().unwrap();
    assert!(running, "featurize finished before it could be killed; give it more work");

    // Every file under a final name is whole; anything else is a hidden
    // temporary that readers skip.
    let done = parts(&out);
    eprintln!("killed with {} of {SHARDS} shards complete", done.len());
    assert!(!done.is_empty() && (done.len() as u64) < SHARDS, "{done:?}");
    for name in &done {
        let shard: u64 = name["part-".len()..name.len() - ".parquet".len()].parse().unwrap();
        check_complete(&out.join(name), shard);
    }
    for entry in std::fs::read_dir(&out).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(done.contains(&name) || (name.starts_with('.') && name.ends_with(".tmp")), "stray file {name:?}");
    }
    assert_eq!(Dataset::open(&out).unwrap().n_rows(), done.len() as u64 * SHARD_ROWS);

    // The rerun replaces everything and removes the temporaries; its output
    // equals that of a run that was never interrupted.
    dir.cmd(&featurize).stdout();
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
});
