//! Python for the interop and object-storage tests.
//!
//! An interpreter with the needed modules is looked for in `KAPPROX_PYTHON`,
//! then in a virtual environment under the target directory, then as
//! `python3`. When none has them, the packages are installed from PyPI into
//! that virtual environment (set `KAPPROX_NO_PIP=1` to forbid it). When
//! that fails the caller skips its test with the printed reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The scripts of `crates/io/tests/interop` (from this crate's tests and
/// from the CLI's, which include this file).
pub(crate) fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../io/tests/interop").join(name)
}

fn venv() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("kapprox-io-venv")
}

fn has_modules(python: &Path, modules: &[&str]) -> bool {
    let code = format!("import {}", modules.join(", "));
    Command::new(python)
        .args(["-c", &code])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// An interpreter that imports `modules`, installing `packages` if needed.
/// `None` (with a printed reason) when there is none.
pub(crate) fn python_with(modules: &[&str], packages: &[&str]) -> Option<PathBuf> {
    // One installer at a time: tests run in parallel threads.
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let venv_python = venv().join("bin/python");
    let mut candidates: Vec<PathBuf> = std::env::var_os("KAPPROX_PYTHON").map(PathBuf::from).into_iter().collect();
    candidates.push(venv_python.clone());
    candidates.push(PathBuf::from("python3"));
    if let Some(p) = candidates.iter().find(|p| has_modules(p, modules)) {
        return Some(p.clone());
    }
    if std::env::var_os("KAPPROX_NO_PIP").is_some() {
        println!("skipping: no Python with {modules:?} and KAPPROX_NO_PIP is set");
        return None;
    }
    if !venv_python.exists() {
        let ok = Command::new("python3").args(["-m", "venv"]).arg(venv()).status().is_ok_and(|s| s.success());
        if !ok {
            println!("skipping: cannot create a Python virtual environment at {}", venv().display());
            return None;
        }
    }
    let ok = Command::new(&venv_python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(packages)
        .status()
        .is_ok_and(|s| s.success());
    if ok && has_modules(&venv_python, modules) {
        Some(venv_python)
    } else {
        println!("skipping: cannot install {packages:?} from PyPI into {}", venv().display());
        None
    }
}
