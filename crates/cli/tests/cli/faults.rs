//! Fault injection: every writing command killed (SIGKILL) at random
//! moments leaves at its final path either nothing or the complete output,
//! and a rerun completes and leaves no staging area; the workers of a
//! killed `fit --workers` die with it; concurrent runs on one output never
//! mix; a full disk fails cleanly.
//!
//! The default suite kills each command twice; the 100-kill catalogue is
//! `#[ignore]`d (`cargo test --release -p kapprox-cli --test cli -- --ignored faults`).

use crate::util::{Dir, check_error_parts};
use kapprox::io::Dataset;
use kapprox::model::Model;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

const ROWS: u64 = 12_000;
const MAP: [&str; 8] = ["--features", "64", "--sigma", "3", "--alpha", "1e-3", "--chunk-rows", "64"];

/// What a complete output is.
#[derive(Clone, Copy, Debug)]
enum Complete {
    /// A dataset of this many rows.
    Rows(u64),
    /// A model file that loads (its checksum verified).
    Model,
}

/// One writing command and its outputs.
struct Case {
    name: &'static str,
    args: Vec<String>,
    outputs: Vec<(&'static str, Complete)>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A CSV `in.csv` of `ROWS` rows.
fn write_csv(dir: &Dir) {
    let mut csv = String::from("a,b,c,y\n");
    for i in 0..ROWS {
        let x = i as f64 / ROWS as f64;
        csv.push_str(&format!("{x},{},{},{}\n", (7.0 * x).sin(), (3.0 * x).cos(), x * x));
    }
    dir.write("in.csv", &csv);
}

/// The inputs every case reads: a CSV, a dataset, a model, two part files.
fn setup(dir: &Dir) -> Vec<Case> {
    write_csv(dir);
    dir.cmd(&["generate", "--out", "data", "--rows", &ROWS.to_string(), "--features", "8"])
        .args(&["--rows-per-shard", "1500"])
        .stdout();
    let fit = |out: &str, extra: &[&str]| {
        let mut a = strings(&["fit", "--train", "data", "--out", out]);
        a.extend(strings(&MAP));
        a.extend(strings(extra));
        a
    };
    let run = |a: Vec<String>| dir.cmd(&a.iter().map(String::as_str).collect::<Vec<_>>()).stdout();
    run(fit("model.st", &[]));
    run(fit("p1.kpart", &["--part", "1/2"]));
    run(fit("p2.kpart", &["--part", "2/2"]));
    // The split's sizes, from a run that is not killed.
    dir.cmd(&["split", "data", "--train", "tr0", "--test", "te0"]).stdout();
    let (train, test) = (rows(&dir.join("tr0")), rows(&dir.join("te0")));
    let mut featurize = strings(&["featurize", "--data", "data", "--out", "feat"]);
    featurize.extend(strings(&MAP[..4]));
    featurize.extend(strings(&MAP[6..]));
    vec![
        Case {
            name: "convert",
            args: strings(&["convert", "in.csv", "--out", "conv"]),
            outputs: vec![("conv", Complete::Rows(ROWS))],
        },
        Case {
            name: "split",
            args: strings(&["split", "data", "--train", "tr", "--test", "te"]),
            outputs: vec![("tr", Complete::Rows(train)), ("te", Complete::Rows(test))],
        },
        Case { name: "featurize", args: featurize, outputs: vec![("feat", Complete::Rows(ROWS))] },
        Case {
            name: "predict",
            args: strings(&["predict", "--model", "model.st", "--data", "data", "--out", "pred", "--chunk-rows", "64"]),
            outputs: vec![("pred", Complete::Rows(ROWS))],
        },
        Case { name: "fit", args: fit("fit.st", &[]), outputs: vec![("fit.st", Complete::Model)] },
        Case {
            name: "fit --workers",
            args: fit("fw.st", &["--workers", "2"]),
            outputs: vec![("fw.st", Complete::Model)],
        },
        Case {
            name: "reduce",
            args: strings(&["reduce", "p1.kpart", "p2.kpart", "--out", "red.st"]),
            outputs: vec![("red.st", Complete::Model)],
        },
    ]
}

fn rows(path: &Path) -> u64 {
    Dataset::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).n_rows()
}

/// Asserts that `out` holds the whole output, or nothing.
#[track_caller]
fn nothing_or_complete(dir: &Dir, out: &str, complete: Complete, context: &str) -> bool {
    let p = dir.join(out);
    if !p.exists() {
        return false;
    }
    match complete {
        Complete::Rows(n) => {
            let ds = Dataset::open(&p).unwrap_or_else(|e| panic!("{context}: {out} is there but unreadable: {e}"));
            assert_eq!(ds.n_rows(), n, "{context}: {out} is there but partial");
        }
        Complete::Model => {
            Model::load(&p).unwrap_or_else(|e| panic!("{context}: {out} is there but not a whole model: {e:#}"));
        }
    }
    true
}

/// Names in the test directory that a run left behind: staging areas and
/// temporaries of any kind.
fn leftovers(dir: &Dir) -> Vec<String> {
    dir.listing().into_iter().filter(|p| p.contains(".kapprox-") || p.ends_with(".tmp")).collect()
}

/// Worker processes still running in this test directory.
fn orphan_workers(dir: &Dir) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let here = std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir.path());
        if here && text.contains(" worker --job ") {
            found.push(text);
        }
    }
    found
}

/// A small deterministic generator of kill delays.
struct Delays(u64);

impl Delays {
    fn next_fraction(&mut self) -> f64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Runs every case once to time it, then `kills` times killed at a random
/// moment in [0, 1.2 × its time]; after each kill checks the outputs, the
/// workers, then reruns with `--overwrite` and checks that nothing is
/// left over. Returns (kills, kills that left a complete output).
fn kill_catalogue(dir: &Dir, kills: usize, seed: u64) -> (usize, usize) {
    let cases = setup(dir);
    let mut delays = Delays(seed);
    let (mut total, mut complete) = (0, 0);
    for case in &cases {
        let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
        let t = Instant::now();
        dir.cmd(&args).stdout();
        let seconds = t.elapsed().as_secs_f64();
        for (out, c) in &case.outputs {
            assert!(nothing_or_complete(dir, out, *c, case.name), "{}: no output {out}", case.name);
        }
        for k in 0..kills {
            for (out, _) in &case.outputs {
                let p = dir.join(out);
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
            let delay = Duration::from_secs_f64(1.2 * seconds * delays.next_fraction());
            let mut child = dir.cmd(&args).into_command().stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
            std::thread::sleep(delay);
            child.kill().expect("SIGKILL");
            child.wait().unwrap();
            total += 1;
            let context = format!("{} killed after {:.0} ms (kill {k})", case.name, delay.as_secs_f64() * 1e3);
            let mut all = true;
            for (out, c) in &case.outputs {
                all &= nothing_or_complete(dir, out, *c, &context);
            }
            complete += usize::from(all);
            let start = Instant::now();
            while !orphan_workers(dir).is_empty() {
                assert!(start.elapsed() < Duration::from_secs(5), "{context}: workers outlived their parent");
                std::thread::sleep(Duration::from_millis(20));
            }
            dir.cmd(&args).args(&["--overwrite"]).stdout();
            for (out, c) in &case.outputs {
                assert!(nothing_or_complete(dir, out, *c, &context), "{context}: the rerun wrote no {out}");
            }
            assert_eq!(leftovers(dir), Vec::<String>::new(), "{context}: left over after the rerun");
        }
    }
    (total, complete)
}

kapprox_test!(killed_writing_commands_leave_nothing_or_the_whole_output, |dir| {
    let (kills, complete) = kill_catalogue(&dir, 2, 11);
    eprintln!("{kills} kills: {complete} left the complete output, the others nothing");
});

kapprox_test!(
    #[ignore = "slow: 105 SIGKILLs across seven commands (about a minute)"]
    a_hundred_kills_leave_nothing_or_the_whole_output,
    |dir| {
        let (kills, complete) = kill_catalogue(&dir, 15, 2026);
        eprintln!("{kills} kills: {complete} left the complete output, the others nothing");
    }
);

kapprox_test!(concurrent_runs_on_one_output_never_mix, |dir| {
    write_csv(&dir);
    for overwrite in [false, true] {
        let _ = std::fs::remove_dir_all(dir.join("conv"));
        let mut args = vec!["convert", "in.csv", "--out", "conv", "--rows-per-shard", "1000"];
        if overwrite {
            args.push("--overwrite");
        }
        let children: Vec<_> = (0..4)
            .map(|_| dir.cmd(&args).into_command().stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap())
            .collect();
        let outcomes: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let won = outcomes.iter().filter(|o| o.status.success()).count();
        for o in outcomes.iter().filter(|o| !o.status.success()) {
            assert!(!overwrite, "with --overwrite every run replaces the output whole");
            assert_eq!(o.status.code(), Some(2));
            let err = String::from_utf8_lossy(&o.stderr);
            check_error_parts(&err, &["conv"]);
        }
        assert!(won >= 1, "no run won");
        if overwrite {
            assert_eq!(won, 4);
        }
        assert_eq!(rows(&dir.join("conv")), ROWS);
        assert_eq!(Dataset::open(dir.join("conv")).unwrap().shards().len(), 12, "shards of one run only");
        assert_eq!(leftovers(&dir), Vec::<String>::new());
    }
});

/// A tiny tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(path: std::path::PathBuf, size: &str) -> Result<SmallDisk, String> {
        std::fs::create_dir_all(&path).map_err(|e| e.to_string())?;
        let o = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
        }
        Ok(SmallDisk(path))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

kapprox_test!(a_full_disk_fails_cleanly_for_every_writing_command, |dir| {
    let cases = setup(&dir);
    let disk = match SmallDisk::mount(dir.join("full"), "160k") {
        Ok(d) => d,
        Err(why) => {
            eprintln!("note: skipping the full-disk test: cannot mount a tmpfs ({why}); it needs root");
            return;
        }
    };
    // Fill the disk: every command must fail at its first write.
    let filler = disk.0.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
    }
    for case in &cases {
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| if case.outputs.iter().any(|(o, _)| o == a) { format!("full/{a}") } else { a.clone() })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = dir.cmd(&args).fails();
        assert!(err.contains("No space left on device"), "{}: {err}", case.name);
        let left: Vec<_> =
            std::fs::read_dir(&disk.0).unwrap().map(|e| e.unwrap().file_name()).filter(|n| n != "filler").collect();
        assert!(left.is_empty(), "{}: left on the full disk: {left:?}", case.name);
    }
});
