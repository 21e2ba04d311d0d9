//! The README is executable: every ```sh block runs verbatim, in order, in
//! one scratch directory, so the documented commands cannot drift. Every
//! subcommand's `--help` examples run too.
//!
//! The scratch directory stands for the repository root: it holds `data/`
//! (a link to the shipped data) and nothing else, and `kapprox` on `PATH` is
//! the binary cargo built for this test. A block is skipped only when the
//! line before it says why: `<!-- not run: REASON -->`. Inside a block,
//! `cargo` is a shell function: `cargo install` and `cargo test` are what
//! this test run itself is (the binary under test, the suite), `cargo run
//! --release -- ARGS` runs `kapprox ARGS`, and any other cargo command fails
//! the test (mark its block instead). A ```text block right after a run
//! block lists lines its standard output must contain, to the last digit.

use crate::util::BIN;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One fenced block of the README.
#[derive(Debug)]
struct Block {
    /// The info string: `sh`, `text`, `rust`, ...
    lang: String,
    /// Line number of the opening fence (1-based).
    line: usize,
    /// The lines between the fences.
    body: Vec<String>,
    /// The reason of a `<!-- not run: REASON -->` line right before it.
    not_run: Option<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut previous = "";
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                let not_run = previous
                    .trim()
                    .strip_prefix("<!-- not run:")
                    .and_then(|r| r.strip_suffix("-->"))
                    .map(|r| r.trim().to_string());
                let lang = line.trim_start().trim_start_matches('`').trim().to_string();
                open = Some(Block { lang, line: i + 1, body: Vec::new(), not_run });
            }
            (Some(_), true) => out.push(open.take().expect("open block")),
            (Some(b), false) => b.body.push(line.to_string()),
            (None, false) => {}
        }
        previous = line;
    }
    assert!(open.is_none(), "README.md: a fenced block is not closed");
    out
}

/// `cargo` inside README blocks (see the module docs).
const CARGO_SHIM: &str = r#"
cargo() {
  case "$1" in
    install|test) return 0 ;;
    run) shift; while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done; shift; kapprox "$@" ;;
    *) echo "README block runs 'cargo $*': mark the block <!-- not run: REASON -->" >&2; return 1 ;;
  esac
}
"#;

/// A scratch "repository root": `data/` and `kapprox` on PATH.
struct Scratch {
    dir: tempfile::TempDir,
    path_var: String,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = tempfile::Builder::new().prefix(&format!("kapprox-{name}-")).tempdir().expect("temp dir");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::os::unix::fs::symlink(repo.join("data").canonicalize().unwrap(), dir.path().join("data")).unwrap();
        let bin = dir.path().join(".bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(BIN, bin.join("kapprox")).unwrap();
        let path_var = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        Scratch { dir, path_var }
    }

    /// Runs a shell script here; panics with its output when it fails.
    fn run(&self, what: &str, script: &str) -> String {
        let started = std::time::Instant::now();
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &format!("{CARGO_SHIM}\n{script}")])
            .current_dir(self.dir.path())
            .env("PATH", &self.path_var)
            .output()
            .expect("bash");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(
            out.status.success(),
            "{what} failed ({}):\n{script}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
            out.status
        );
        eprintln!("{what}: ok in {:.1} s", started.elapsed().as_secs_f64());
        stdout.into_owned()
    }

    fn du(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            let meta = std::fs::symlink_metadata(p).unwrap();
            if meta.is_dir() {
                std::fs::read_dir(p).unwrap().map(|e| walk(&e.unwrap().path())).sum()
            } else if meta.is_file() {
                meta.len()
            } else {
                0
            }
        }
        walk(self.dir.path())
    }
}

fn readme_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")
}

#[test]
fn every_readme_command_runs_verbatim() {
    let readme = std::fs::read_to_string(readme_path()).unwrap();
    let blocks = blocks(&readme);
    let scratch = Scratch::new("readme");
    let mut ran = 0;
    let mut expected_output: Option<String> = None;
    for b in &blocks {
        if b.lang == "text"
            && let Some(stdout) = expected_output.take()
        {
            for line in &b.body {
                assert!(
                    stdout.lines().any(|l| l.trim_end() == line.trim_end()),
                    "README.md:{}: the line {line:?} is not in the output of the block before it:\n{stdout}",
                    b.line
                );
            }
            continue;
        }
        expected_output = None;
        if b.lang != "sh" {
            continue;
        }
        if let Some(reason) = &b.not_run {
            assert!(!reason.is_empty(), "README.md:{}: say why the block is not run", b.line);
            continue;
        }
        let stdout = scratch.run(&format!("README.md:{}", b.line), &b.body.join("\n"));
        expected_output = Some(stdout);
        ran += 1;
    }
    assert!(ran >= 2, "only {ran} README blocks ran: the parser lost them");
    eprintln!("{ran} README blocks ran; the scratch directory holds {:.1} MB", scratch.du() as f64 / 1e6);
}

/// The `kapprox ...` lines of a `--help` text's examples (indented lines
/// after a line starting with `Examples`).
fn examples(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line.starts_with("Examples") {
            inside = true;
        } else if inside && let Some(cmd) = line.trim().strip_prefix("kapprox ") {
            out.push(cmd.to_string());
        } else if inside && !line.starts_with(' ') {
            inside = false;
        }
    }
    out
}

#[test]
fn every_subcommand_has_help_examples_that_run() {
    let listing = Command::new(BIN).arg("--help").output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    // The subcommands clap lists (hidden ones are not), in help order.
    let commands: Vec<String> = listing
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // Wrapped descriptions continue on deeper-indented lines.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 10, "subcommands not found in:\n{listing}");
    // The order in which examples build on each other (crates/cli/src/help.rs).
    let order = [
        "convert",
        "split",
        "fit",
        "eval",
        "predict",
        "featurize",
        "kernel-error",
        "generate",
        "reduce",
        "demo",
        "experiment",
    ];
    for c in &commands {
        assert!(order.contains(&c.as_str()), "{c} has no place in the example order");
    }
    let scratch = Scratch::new("help-examples");
    for c in order {
        // At the widest help (100 columns), no example line is wrapped.
        let help = Command::new(BIN).args([c, "--help"]).env("COLUMNS", "100").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        let lines = examples(&help);
        assert!(!lines.is_empty(), "`kapprox {c} --help` shows no example:\n{help}");
        for line in lines {
            scratch.run(&format!("`kapprox {c} --help` example"), &format!("kapprox {line}"));
        }
    }
}

/// The justfile: its header examples name real variables and recipes, and
/// (when `just` is installed: `cargo install just`; `.ci/just.sh` does it)
/// its recipes run from a fresh checkout, creating what they need.
#[test]
fn justfile_examples_and_recipes_run() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../justfile");
    let text = std::fs::read_to_string(&path).unwrap();
    let variables: Vec<&str> =
        text.lines().filter_map(|l| l.split_once(" := ").map(|(v, _)| v.trim())).filter(|v| !v.contains(' ')).collect();
    let recipes: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with([' ', '#', '\t']) && !l.contains(":=") && !l.starts_with("set "))
        .filter_map(|l| l.split_once(':').map(|(r, _)| r.split_whitespace().next().unwrap_or("")))
        .filter(|r| !r.is_empty())
        .collect();
    let examples: Vec<&str> =
        text.lines().filter_map(|l| l.trim_start_matches('#').trim().strip_prefix("just ")).collect();
    assert!(!examples.is_empty(), "the justfile header shows no example");
    for ex in &examples {
        let words: Vec<&str> = ex.split_whitespace().collect();
        let (assignments, rest): (Vec<&str>, Vec<&str>) = words.iter().partition(|w| w.contains('='));
        for a in assignments {
            let name = a.split('=').next().unwrap();
            assert!(variables.contains(&name), "justfile example `just {ex}` sets {name}, which is no variable");
        }
        assert!(rest.len() == 1 && recipes.contains(&rest[0]), "justfile example `just {ex}`: no recipe {rest:?}");
    }
    let have_just = Command::new("just").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have_just {
        println!("skipping the recipes: `just` is not installed (cargo install just)");
        return;
    }
    let scratch = Scratch::new("justfile");
    std::fs::copy(&path, scratch.dir.path().join("justfile")).unwrap();
    // The built binary stands for `cargo run`; featurize converts first.
    scratch.run("just featurize", "just kapprox=kapprox featurize");
    scratch.run("just eval", "just kapprox=kapprox features=256 eval");
}
