//! The test harness: a temporary directory per test, commands run in it,
//! and checks that print everything needed to see why they failed.

use kapprox::model::Model;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `kapprox` binary cargo built for this test run.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_kapprox");

/// Exit code of every failed command.
pub(crate) const ERROR_EXIT: i32 = 2;

/// A file of the small real dataset shipped in the repository's `data/`.
pub(crate) fn repo_data(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(name);
    assert!(p.exists(), "{} is missing: the repository ships it", p.display());
    p
}

/// The CPU training rows (6554 rows, 21 features, label last).
pub(crate) fn cpu_train() -> PathBuf {
    repo_data("cpu_rks_train.tsv.gz")
}

/// The CPU test rows (819 rows).
pub(crate) fn cpu_test() -> PathBuf {
    repo_data("cpu_rks_test.tsv.gz")
}

/// A fresh temporary directory; commands run with it as working directory,
/// so paths in messages are the short relative ones the test passed.
pub(crate) struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    /// Creates the directory. `KAPPROX_TEST_KEEP=1` keeps it for inspection.
    pub(crate) fn new(name: &str) -> Dir {
        let mut tmp = tempfile::Builder::new().prefix(&format!("kapprox-cli-{name}-")).tempdir().expect("temp dir");
        if std::env::var_os("KAPPROX_TEST_KEEP").is_some() {
            tmp.disable_cleanup(true);
            eprintln!("keeping {}", tmp.path().display());
        }
        Dir { tmp }
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// A path inside the directory.
    pub(crate) fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path().join(rel)
    }

    /// Writes a text file (creating parent directories).
    pub(crate) fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&p, contents).expect("write fixture");
        p
    }

    /// Creates a subdirectory.
    pub(crate) fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(&p).expect("mkdir");
        p
    }

    /// `kapprox <args>` run in this directory.
    pub(crate) fn cmd(&self, args: &[&str]) -> TestCommand {
        let mut cmd = Command::new(BIN);
        cmd.args(args).current_dir(self.path());
        TestCommand { cmd }
    }

    /// Every file and directory below this one (hidden ones included), as
    /// sorted relative paths: compared before and after a failed command to
    /// prove it left nothing behind, temporaries included.
    pub(crate) fn listing(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(self.path(), self.path(), &mut out);
        out.sort();
        out
    }

    /// `kapprox convert` of a shipped CPU file into `out`, label last.
    pub(crate) fn convert(&self, input: &Path, out: &str, extra: &[&str]) -> PathBuf {
        let input = input.to_str().expect("utf-8 path");
        let mut args = vec!["convert", input, "--out", out, "--label", "last"];
        args.extend_from_slice(extra);
        self.cmd(&args).stdout();
        self.join(out)
    }

    /// Loads a model file written by `fit`.
    pub(crate) fn model(&self, rel: &str) -> Model {
        Model::load(&self.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e:#}"))
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("list") {
        let p = entry.expect("entry").path();
        out.push(p.strip_prefix(root).expect("below root").display().to_string());
        if p.is_dir() {
            walk(root, &p, out);
        }
    }
}

/// A command about to run.
pub(crate) struct TestCommand {
    cmd: Command,
}

impl TestCommand {
    /// Adds arguments.
    pub(crate) fn args(mut self, args: &[&str]) -> TestCommand {
        self.cmd.args(args);
        self
    }

    /// The underlying command (to spawn and kill it).
    pub(crate) fn into_command(self) -> Command {
        self.cmd
    }

    fn run(&mut self) -> Output {
        self.cmd.output().unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"))
    }

    /// Runs; asserts success; returns stdout.
    #[track_caller]
    pub(crate) fn stdout(mut self) -> String {
        let o = self.run();
        if !o.status.success() {
            panic!("{}", describe(&self.cmd, &o, "expected success"));
        }
        String::from_utf8(o.stdout).expect("utf-8 stdout")
    }

    /// Runs; asserts success; parses stdout as one JSON document.
    #[track_caller]
    pub(crate) fn json(self) -> serde_json::Value {
        let out = self.stdout();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{out}"))
    }

    /// Runs; asserts exit code 2 and an empty stdout; returns stderr.
    #[track_caller]
    pub(crate) fn fails(mut self) -> String {
        let o = self.run();
        if o.status.code() != Some(ERROR_EXIT) || !o.stdout.is_empty() {
            panic!("{}", describe(&self.cmd, &o, "expected exit code 2 and no stdout"));
        }
        String::from_utf8(o.stderr).expect("utf-8 stderr")
    }
}

fn describe(cmd: &Command, o: &Output, what: &str) -> String {
    let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    format!(
        "{what}: `kapprox {}` exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        args.join(" "),
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts that stderr is exactly the one-line error `kapprox: <message>`.
#[track_caller]
pub(crate) fn check_error(stderr: &str, message: &str) {
    let want = format!("kapprox: {message}\n");
    assert!(stderr == want, "error message differs\n--- expected ---\n{want}--- actual ---\n{stderr}");
}

/// Asserts that stderr is one `kapprox: ` line holding every part.
#[track_caller]
pub(crate) fn check_error_parts(stderr: &str, parts: &[&str]) {
    assert!(
        stderr.starts_with("kapprox: ") && stderr.lines().count() == 1,
        "expected one `kapprox: ` error line, got:\n{stderr}"
    );
    for p in parts {
        assert!(stderr.contains(p), "error message lacks {p:?}:\n{stderr}");
    }
}

/// `max |a - b| / max |a|`.
pub(crate) fn rel_max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "arrays differ in length");
    let diff = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    let scale = a.iter().map(|x| x.abs()).fold(0.0, f64::max);
    assert!(scale > 0.0, "reference array is all zeros");
    diff / scale
}

/// A model's weights, `coef` then `intercept`, as one vector.
pub(crate) fn weights(m: &Model) -> Vec<f64> {
    m.coef.iter().chain(m.intercept.iter()).copied().collect()
}

/// Names of the `part-*.parquet` files of a directory, sorted.
pub(crate) fn parts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("part-") && n.ends_with(".parquet"))
        .collect();
    v.sort();
    v
}

/// Column names of a Parquet file or dataset, in schema order.
pub(crate) fn columns(path: &Path) -> Vec<String> {
    kapprox::io::Dataset::open(path).unwrap_or_else(|e| panic!("{e}")).columns().to_vec()
}

/// Whether `python3` with pyarrow is available; prints a note when not.
pub(crate) fn have_pyarrow() -> bool {
    let ok = Command::new("python3").args(["-c", "import pyarrow.parquet"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: python3 with pyarrow not found; skipping the pyarrow half of this test");
    }
    ok
}

/// Runs a Python script (argv[1..] = `args`) and parses its stdout as JSON.
pub(crate) fn python_json(script: &str, args: &[&Path]) -> serde_json::Value {
    let o = Command::new("python3").arg("-c").arg(script).args(args).output().expect("python3 runs");
    assert!(
        o.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("python printed JSON")
}
