//! Fuzzing for kapprox on stable Rust.
//!
//! cargo-fuzz needs a nightly toolchain, which CI does not have, so this is
//! a plain mutation loop ([`run`]): start from the seeds of a [`Target`]
//! (built in, plus `corpus/<target>/` and `regressions/<target>/`), mutate
//! a random corpus entry ([`mutate::mutate`]), run the target, and keep the
//! mutant when the target answers in a way not seen before: a new *shape*
//! of error message (digits, quoted text and the scratch path blanked out),
//! which stands in for the coverage feedback that stable Rust cannot give.
//! Everything is derived from one seed, so a run can be replayed.
//!
//! A panic on any thread (the chunk reader decodes on its own threads) is a
//! failure. The `kapprox-fuzz` binary adds what cannot be caught in
//! process: it runs each target in a child process with an allocation
//! limit and a hang watchdog, and saves the input that killed it.

pub mod mutate;
pub mod targets;

pub use targets::{TARGETS, Target};

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Largest input the mutator produces.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Most inputs kept in the in-memory corpus.
pub const MAX_CORPUS: usize = 4096;

/// What one input did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Read without error.
    Accepted,
    /// Refused with this message.
    Refused(String),
    /// Panicked (on any thread) with this message.
    Panicked(String),
}

/// A panic in kapprox's own code happened since the last input.
static PANICKED: AtomicBool = AtomicBool::new(false);
/// A panic inside a dependency happened since the last input.
static DEPENDENCY_PANICKED: AtomicBool = AtomicBool::new(false);
static PANIC_MESSAGE: Mutex<String> = Mutex::new(String::new());
/// `execute` is running: panics now are the target's. Outside it (a test's
/// own assertion, another test reading damaged files) the panic is left to
/// the previous hook, so test failures keep their message and the flags
/// above only ever describe the input being executed.
static EXECUTING: AtomicBool = AtomicBool::new(false);
/// One `execute` at a time: the flags above are process-wide.
static EXECUTION: Mutex<()> = Mutex::new(());

/// Installs (once) a panic hook that records panics of every thread.
fn watch_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !EXECUTING.load(Ordering::SeqCst) {
                return previous(info);
            }
            let at = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            if let Ok(mut m) = PANIC_MESSAGE.lock()
                && m.is_empty()
            {
                *m = format!("{msg}{at}");
            }
            let in_dependency = info.location().is_some_and(|l| l.file().contains(".cargo/registry"));
            if in_dependency { &DEPENDENCY_PANICKED } else { &PANICKED }.store(true, Ordering::SeqCst);
        }));
    });
}

/// Runs `target` on `input` in `scratch` (a directory the target may fill).
///
/// A panic is a failure when it escapes the target or happens in kapprox's
/// own code on any thread. One inside a dependency that kapprox catches and
/// reports as an error (the parquet decoder on some damaged pages) is a
/// refusal: the user gets an error, not a crash.
pub fn execute(target: &Target, scratch: &Path, input: &[u8]) -> Outcome {
    watch_panics();
    let _one_at_a_time = EXECUTION.lock().unwrap_or_else(|e| e.into_inner());
    PANICKED.store(false, Ordering::SeqCst);
    DEPENDENCY_PANICKED.store(false, Ordering::SeqCst);
    PANIC_MESSAGE.lock().unwrap_or_else(|e| e.into_inner()).clear();
    EXECUTING.store(true, Ordering::SeqCst);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| (target.run)(scratch, input)));
    EXECUTING.store(false, Ordering::SeqCst);
    let caught_in_dependency = DEPENDENCY_PANICKED.swap(false, Ordering::SeqCst);
    if PANICKED.swap(false, Ordering::SeqCst)
        || result.is_err()
        || (caught_in_dependency && matches!(result, Ok(Ok(()))))
    {
        let msg = std::mem::take(&mut *PANIC_MESSAGE.lock().unwrap_or_else(|e| e.into_inner()));
        return Outcome::Panicked(msg);
    }
    PANIC_MESSAGE.lock().unwrap_or_else(|e| e.into_inner()).clear();
    match result {
        Ok(Ok(())) => Outcome::Accepted,
        Ok(Err(e)) => Outcome::Refused(e),
        Err(_) => unreachable!("handled above"),
    }
}

/// The shape of an outcome: its kind and message with the scratch path,
/// quoted text and digits blanked out.
pub fn signature(outcome: &Outcome, scratch: &Path) -> String {
    let msg = match outcome {
        Outcome::Accepted => return "accepted".into(),
        Outcome::Refused(m) | Outcome::Panicked(m) => m.replace(&scratch.display().to_string(), "<dir>"),
    };
    let mut shape = String::with_capacity(msg.len());
    // A word with a digit in it (a number, a line:column) or that could be
    // a hex byte is blanked whole.
    let mut word = String::new();
    let flush = |word: &mut String, shape: &mut String| {
        let hex_byte = word.len() == 2 && word.bytes().all(|b| matches!(b, b'a'..=b'f'));
        if hex_byte || word.bytes().any(|b| b.is_ascii_digit()) {
            shape.push('#');
        } else {
            shape.push_str(word);
        }
        word.clear();
    };
    let (mut quoted, mut escaped) = (false, false);
    for c in msg.chars() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    quoted = false;
                    shape.push('"');
                }
                _ => {}
            }
        } else if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut shape);
            if c == '"' {
                quoted = true;
            }
            shape.push(c);
        }
    }
    flush(&mut word, &mut shape);
    shape
}

/// Seeds of `target`: built in, then the files of `corpus/<name>/` and
/// `regressions/<name>/` beside this crate's manifest.
pub fn seeds(target: &Target) -> Vec<Vec<u8>> {
    let mut all = (target.seeds)();
    for dir in [corpus_dir(target), regressions_dir(target)] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
        files.sort();
        all.extend(files.iter().filter_map(|p| std::fs::read(p).ok()));
    }
    all
}

/// `corpus/<target>/`: inputs worth starting from.
pub fn corpus_dir(target: &Target) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target.name)
}

/// `regressions/<target>/`: inputs that once failed, replayed by the tests.
pub fn regressions_dir(target: &Target) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions").join(target.name)
}

/// Limits of a [`run`].
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Stop after this long.
    pub time: Duration,
    /// Stop after this many inputs.
    pub max_execs: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Called with each input just before it runs (the binary saves it, so
    /// that an input that kills the process is not lost).
    pub before_each: Option<fn(&[u8])>,
}

/// What a [`run`] did.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// Inputs run.
    pub execs: u64,
    /// Inputs in the corpus at the end.
    pub corpus: usize,
    /// Distinct outcome shapes seen.
    pub shapes: usize,
    /// Inputs accepted / refused.
    pub accepted: u64,
    /// Accepted inputs that differ from every seed (for a
    /// [`checksummed`](Target::checksummed) target the first one is a
    /// failure). Saved under the directory `KAPPROX_FUZZ_ACCEPTED` names,
    /// when set.
    pub accepted_mutants: u64,
    /// Inputs refused.
    pub refused: u64,
    /// The first failure: the input and the panic message.
    pub failure: Option<(Vec<u8>, String)>,
}

/// Runs the mutation loop on `target` until the limits of `cfg` or the
/// first failure.
pub fn run(target: &Target, scratch: &Path, cfg: &RunConfig) -> RunReport {
    let start = Instant::now();
    let mut rng = mutate::Rng::new(cfg.seed);
    let mut corpus = seeds(target);
    let mut shapes = HashSet::new();
    let mut report = RunReport::default();
    let show_shapes = std::env::var_os("KAPPROX_FUZZ_SHAPES").is_some();
    let keep_accepted = std::env::var_os("KAPPROX_FUZZ_ACCEPTED").map(std::path::PathBuf::from);
    let originals: HashSet<Vec<u8>> = corpus.iter().cloned().collect();
    // The seeds themselves first, then mutants.
    let mut queue: Vec<Vec<u8>> = corpus.iter().rev().cloned().collect();
    if corpus.is_empty() {
        corpus.push(Vec::new());
    }
    while report.execs < cfg.max_execs && start.elapsed() < cfg.time {
        let input = queue.pop().unwrap_or_else(|| {
            let parent = &corpus[rng.below(corpus.len())];
            mutate::mutate(parent, &mut rng, &corpus, MAX_INPUT_BYTES)
        });
        if let Some(save) = cfg.before_each {
            save(&input);
        }
        let outcome = execute(target, scratch, &input);
        report.execs += 1;
        match &outcome {
            Outcome::Panicked(msg) => {
                report.failure = Some((input, msg.clone()));
                break;
            }
            Outcome::Accepted => {
                report.accepted += 1;
                if !originals.contains(&input) {
                    report.accepted_mutants += 1;
                    if target.checksummed {
                        let msg = "a changed file was accepted: its digest should have refused it".to_string();
                        report.failure = Some((input, msg));
                        break;
                    }
                    if let Some(dir) = &keep_accepted {
                        let _ = std::fs::create_dir_all(dir);
                        let name = format!("{}-{:016x}", target.name, kapprox_core::rng::mix64(report.execs));
                        let _ = std::fs::write(dir.join(name), &input);
                    }
                }
            }
            Outcome::Refused(_) => report.refused += 1,
        }
        let shape = signature(&outcome, scratch);
        if !shapes.contains(&shape) {
            if show_shapes {
                eprintln!("new shape: {shape}");
            }
            shapes.insert(shape);
            if corpus.len() < MAX_CORPUS {
                corpus.push(input);
            }
        }
    }
    report.corpus = corpus.len();
    report.shapes = shapes.len();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checksummed_target_that_accepts_a_changed_input_fails() {
        fn accept_all(_: &Path, _: &[u8]) -> Result<(), String> {
            Ok(())
        }
        fn one_seed() -> Vec<Vec<u8>> {
            vec![b"kapprox seed file".to_vec()]
        }
        let scratch = tempfile::tempdir().unwrap();
        let cfg = RunConfig { time: Duration::from_secs(5), max_execs: 50, seed: 1, before_each: None };
        for checksummed in [false, true] {
            let target = Target { name: "accept-all-test", about: "", run: accept_all, seeds: one_seed, checksummed };
            let r = run(&target, scratch.path(), &cfg);
            assert!(r.accepted_mutants > 0, "the mutants differ from the seed");
            assert_eq!(r.failure.is_some(), checksummed, "{r:?}");
        }
    }

    #[test]
    fn shapes_ignore_numbers_quotes_and_the_scratch_path() {
        let dir = Path::new("/tmp/x");
        let a = Outcome::Refused("/tmp/x/in.csv:12:3: column \"a\": expected a number, found \"zz\"".into());
        let b = Outcome::Refused("/tmp/x/in.csv:7:1: column \"b\": expected a number, found \"1.2.3\"".into());
        assert_eq!(signature(&a, dir), signature(&b, dir));
        assert_eq!(signature(&a, dir), "<dir>/in.csv:#:#: column \"\": expected a number, found \"\"");
        assert_eq!(signature(&Outcome::Accepted, dir), "accepted");
        let escaped = Outcome::Refused(r#"x: found "a\"b,c" here"#.into());
        assert_eq!(signature(&escaped, dir), "x: found \"\" here");
    }
}
