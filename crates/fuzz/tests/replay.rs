//! Replays every seed and every kept regression through its target, runs a
//! short deterministic fuzz of each target, and mutates a Parquet shard one
//! byte at a time.

use kapprox_fuzz::{Outcome, RunConfig, TARGETS, execute, regressions_dir, seeds, targets};
use std::time::Duration;

/// The panic flags of `execute` are process-wide and another test's
/// damaged reads panic inside the parquet decoder on purpose: the tests of
/// this file run one at a time so that no test sees another's panics.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scratch directory, in memory where there is one: the targets fsync
/// what they write.
fn scratch(name: &str) -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    tempfile::Builder::new().prefix(&format!("kapprox-fuzz-{name}-")).tempdir_in(base).expect("scratch directory")
}

#[test]
fn seeds_and_regressions_run_without_panic() {
    let _serial = one_at_a_time();
    for target in TARGETS {
        let dir = scratch(target.name);
        let all = seeds(target);
        assert!(!all.is_empty(), "{}: no seeds", target.name);
        let mut accepted = 0;
        for (i, input) in all.iter().enumerate() {
            match execute(target, dir.path(), input) {
                Outcome::Panicked(msg) => panic!("{} input {i}: panic: {msg}", target.name),
                Outcome::Accepted => accepted += 1,
                Outcome::Refused(_) => {}
            }
        }
        // The built-in seeds are valid inputs: a target that refuses them
        // all tests nothing.
        assert!(accepted > 0, "{}: every seed was refused", target.name);
    }
}

/// Every file kept under `regressions/<target>/` once broke its target.
#[test]
fn kept_regressions_are_refused_or_read() {
    let _serial = one_at_a_time();
    for target in TARGETS {
        let Ok(entries) = std::fs::read_dir(regressions_dir(target)) else { continue };
        let dir = scratch(target.name);
        for entry in entries.flatten() {
            let input = std::fs::read(entry.path()).expect("regression input");
            if let Outcome::Panicked(msg) = execute(target, dir.path(), &input) {
                panic!("{}: {} panics again: {msg}", target.name, entry.path().display());
            }
        }
    }
}

#[test]
fn a_short_fuzz_of_every_target_finds_nothing() {
    let _serial = one_at_a_time();
    for target in TARGETS {
        let dir = scratch(target.name);
        let cfg = RunConfig { time: Duration::from_secs(30), max_execs: 300, seed: 1, before_each: None };
        let r = kapprox_fuzz::run(target, dir.path(), &cfg);
        if let Some((input, msg)) = r.failure {
            panic!("{}: panic on {:?}: {msg}", target.name, String::from_utf8_lossy(&input));
        }
        assert!(r.refused > 0 && r.accepted > 0, "{}: {r:?}", target.name);
        eprintln!("{}: {} inputs, {} shapes", target.name, r.execs, r.shapes);
    }
}

/// What a mutated shard did.
#[derive(Debug, Default)]
struct Counts {
    refused_at_open: usize,
    refused_reading: usize,
    read_unchanged: usize,
    read_changed: usize,
}

/// Reads every numeric column of a one-shard dataset in `dir`: `Err` with
/// the stage that refused it, or the values.
fn read_all(dir: &std::path::Path) -> Result<Vec<u64>, &'static str> {
    use kapprox_io::{Dataset, LabelSpec, NanPolicy, ReadOptions};
    let ds = Dataset::open(dir).map_err(|_| "open")?;
    let (features, _) = ds.resolve_columns(&LabelSpec::None).map_err(|_| "open")?;
    let mut values = Vec::new();
    for chunk in ds.reader(ReadOptions::new(features).with_nan_policy(NanPolicy::Keep)).map_err(|_| "read")? {
        let chunk = chunk.map_err(|_| "read")?;
        values.extend(chunk.x.iter().map(|v| v.to_bits()));
    }
    if values.len() as u64 != ds.n_rows() * ds.columns().len() as u64 && !ds.columns().is_empty() {
        return Err("read");
    }
    Ok(values)
}

/// `original` with one byte, chosen by `rng`, changed to another value;
/// with the position and the old value.
fn flip_one_byte(original: &[u8], rng: &mut kapprox_fuzz::mutate::Rng) -> (Vec<u8>, usize, u8) {
    let mut bytes = original.to_vec();
    let at = rng.below(bytes.len());
    let old = bytes[at];
    bytes[at] = loop {
        let b = rng.next_u64() as u8;
        if b != old {
            break b;
        }
    };
    (bytes, at, old)
}

/// 1,000 single-byte changes of a shard kapprox wrote: none panics or
/// hangs; each is refused or read as what the file now says. Parquet has
/// no checksum over data pages unless the writer adds page CRCs, so a
/// change inside a value is read as the changed value; the counts are
/// printed.
#[test]
fn single_byte_mutations_of_a_parquet_shard_are_refused_or_read() {
    let _serial = one_at_a_time();
    let parquet = targets::find("parquet").expect("target");
    let shard = (parquet.seeds)().remove(0);
    let dir = scratch("mutations");
    let ds_dir = dir.path().join("ds");
    std::fs::create_dir_all(&ds_dir).unwrap();
    let file = ds_dir.join("part-00000.parquet");
    std::fs::write(&file, &shard).unwrap();
    let original = read_all(&ds_dir).expect("the seed shard reads");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            for _ in 0..1200 {
                if done.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!("single-byte mutations: no end after 120 s: a mutated shard hangs the reader");
            std::process::abort();
        })
    };
    let mut counts = Counts::default();
    let mut rng = kapprox_fuzz::mutate::Rng::new(7);
    for _ in 0..1000 {
        let (bytes, at, old) = flip_one_byte(&shard, &mut rng);
        std::fs::write(&file, &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| read_all(&ds_dir));
        match outcome {
            Err(_) => panic!("byte {at}: {old:#04x} -> {:#04x} panics", bytes[at]),
            Ok(Err("open")) => counts.refused_at_open += 1,
            Ok(Err(_)) => counts.refused_reading += 1,
            Ok(Ok(v)) if v == original => counts.read_unchanged += 1,
            Ok(Ok(_)) => counts.read_changed += 1,
        }
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    watchdog.join().unwrap();
    eprintln!("1000 single-byte mutations of a {}-byte shard: {counts:?}", shard.len());
    assert_eq!(counts.refused_at_open + counts.refused_reading + counts.read_unchanged + counts.read_changed, 1000);
    assert!(counts.refused_at_open > 0);
}

/// 1,000 single-byte changes each of a model file and a part file: every
/// one is refused (the whole-file digest), none panics.
#[test]
fn single_byte_mutations_of_model_and_part_files_are_all_refused() {
    for name in ["model", "part"] {
        let target = targets::find(name).expect("target");
        let file = (target.seeds)().remove(0);
        let dir = scratch(name);
        assert_eq!(execute(target, dir.path(), &file), Outcome::Accepted, "{name}: the unchanged file");
        let mut rng = kapprox_fuzz::mutate::Rng::new(11);
        let mut reasons = std::collections::BTreeMap::<String, usize>::new();
        for _ in 0..1000 {
            let (bytes, at, old) = flip_one_byte(&file, &mut rng);
            match execute(target, dir.path(), &bytes) {
                Outcome::Refused(msg) => {
                    let kind = if msg.contains("checksum") { "checksum" } else { "other" };
                    *reasons.entry(kind.to_string()).or_default() += 1;
                }
                other => panic!("{name}: byte {at}: {old:#04x} -> {:#04x}: {other:?}", bytes[at]),
            }
        }
        eprintln!("1000 single-byte mutations of a {}-byte {name} file, all refused: {reasons:?}", file.len());
    }
}
