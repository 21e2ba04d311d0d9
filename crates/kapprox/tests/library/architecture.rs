//! The invariants of ARCHITECTURE.md that the manifests and sources show:
//! which crate may depend on which, which may use Parquet, a terminal or
//! the file system, and how long a source file may be.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The names of a manifest's `[dependencies]` (not dev- or build-).
fn dependencies(krate: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join("crates").join(krate).join("Cargo.toml")).unwrap();
    let mut deps = Vec::new();
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap().trim();
            deps.push(name.to_string());
        }
    }
    deps
}

fn kapprox_deps(krate: &str) -> Vec<String> {
    let mut d: Vec<String> = dependencies(krate).into_iter().filter(|d| d.starts_with("kapprox")).collect();
    d.sort();
    d
}

#[test]
fn crates_depend_only_downwards() {
    let leaf = ["kapprox-core"];
    assert!(kapprox_deps("core").is_empty());
    for numerical in ["io", "features", "sketch", "solve"] {
        assert_eq!(kapprox_deps(numerical), leaf, "{numerical}");
    }
    assert_eq!(
        kapprox_deps("kapprox"),
        ["kapprox-core", "kapprox-features", "kapprox-io", "kapprox-sketch", "kapprox-solve"]
    );
    assert_eq!(kapprox_deps("experiments"), ["kapprox"]);
    assert_eq!(kapprox_deps("cli"), ["kapprox", "kapprox-experiments"]);
}

#[test]
fn parquet_is_io_s_and_the_terminal_the_front_ends() {
    for numerical in ["core", "features", "sketch", "solve"] {
        let deps = dependencies(numerical);
        for banned in ["arrow", "parquet", "memmap2"] {
            assert!(!deps.iter().any(|d| d == banned), "{numerical} depends on {banned}");
        }
    }
    let deps = dependencies("kapprox");
    for banned in ["clap", "indicatif", "plotters", "image"] {
        assert!(!deps.iter().any(|d| d == banned), "the library depends on {banned}");
    }
}

/// The `.rs` files under `dir`, tests excepted.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() && name != "tests" {
            sources(&p, out);
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.starts_with("test") {
            out.push(p);
        }
    }
}

/// The code of a source file: without comments (doc examples print) and
/// without its `#[cfg(test)]` module (a trailing one, by the style of this
/// workspace).
fn non_test(text: &str) -> String {
    let code = text.find("#[cfg(test)]").map_or(text, |i| &text[..i]);
    code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

#[test]
fn numerical_crates_do_no_io_and_the_library_never_prints() {
    for (krate, may_do_io) in
        [("core", false), ("features", false), ("sketch", false), ("solve", false), ("kapprox", true)]
    {
        let mut files = Vec::new();
        sources(&root().join("crates").join(krate).join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let code = non_test(&text);
            for printing in ["println!", "eprintln!", "print!(", "eprint!(", "std::io::stdout", "std::io::stderr"] {
                assert!(!code.contains(printing), "{} prints ({printing})", f.display());
            }
            for io in ["std::fs", "std::io::Read", "std::io::Write", "File::open"] {
                assert!(may_do_io || !code.contains(io), "{} does I/O ({io})", f.display());
            }
        }
    }
}

#[test]
fn no_source_file_is_over_800_lines() {
    let known: [&str; 0] = [];
    let mut files = Vec::new();
    sources(&root().join("crates"), &mut files);
    for f in files {
        let rel = f.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/");
        let rel = rel.trim_start_matches("./").to_string();
        if known.contains(&rel.as_str()) || rel.contains("/benches/") || rel.contains("/examples/") {
            continue;
        }
        let lines = std::fs::read_to_string(&f).unwrap().lines().count();
        assert!(lines <= 800, "{rel}: {lines} lines (split the file by idea)");
    }
}
