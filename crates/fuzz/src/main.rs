//! `kapprox-fuzz`: runs the fuzz targets for a bounded time.
//!
//! ```text
//! kapprox-fuzz [--seconds S] [--seed N] [--list] [TARGET ...]
//! ```
//!
//! Each target runs in a child process (this executable with `--worker`),
//! which saves every input before running it; when the child dies (a panic,
//! the allocation limit, the hang watchdog, a stack overflow) the parent
//! keeps that input under `artifacts/<target>/`. Exit status: 0 when every
//! target ran clean, 1 when one failed, 2 on a usage error.

use kapprox_fuzz::{TARGETS, Target, targets};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Largest single allocation a target may ask for: far above what any
/// input of at most `MAX_INPUT_BYTES` legitimately needs, far below what the
/// machine has. Past it the worker aborts and the input is kept.
const MAX_ALLOCATION: usize = 1 << 30;

/// An input that runs longer than this is a hang.
const HANG_LIMIT: Duration = Duration::from_secs(20);

struct LimitedAlloc;

fn too_large() -> ! {
    // No formatting: allocating here would recurse.
    let _ = std::io::stderr()
        .write_all(b"kapprox-fuzz: the target asked for a single allocation of more than 1 GiB; aborting\n");
    std::process::abort()
}

// SAFETY: every call is forwarded to the system allocator unchanged; only
// sizes past the limit are refused first.
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            too_large();
        }
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            too_large();
        }
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            too_large();
        }
        // SAFETY: as `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LimitedAlloc = LimitedAlloc;

struct Args {
    seconds: f64,
    seed: u64,
    list: bool,
    worker: bool,
    targets: Vec<&'static Target>,
    current: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { seconds: 60.0, seed: 0, list: false, worker: false, targets: Vec::new(), current: None };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag}: expected a value"));
        match arg.as_str() {
            "--seconds" => {
                a.seconds = value("--seconds")?
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or("--seconds: expected a positive number")?
            }
            "--seed" => a.seed = value("--seed")?.parse().map_err(|_| "--seed: expected an integer")?,
            "--current" => a.current = Some(PathBuf::from(value("--current")?)),
            "--list" => a.list = true,
            "--worker" => a.worker = true,
            "-h" | "--help" => return Err(String::new()),
            name => a.targets.push(targets::find(name).ok_or_else(|| format!("unknown target {name:?} (see --list)"))?),
        }
    }
    if a.targets.is_empty() {
        a.targets = TARGETS.iter().collect();
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("kapprox-fuzz: {e}");
            }
            eprintln!("usage: kapprox-fuzz [--seconds S] [--seed N] [--list] [TARGET ...]");
            return ExitCode::from(2);
        }
    };
    if args.list {
        for t in TARGETS {
            println!("{:<10} {}", t.name, t.about);
        }
        return ExitCode::SUCCESS;
    }
    if args.worker {
        return worker(&args);
    }
    let mut failed = Vec::new();
    for target in &args.targets {
        if !supervise(target, &args) {
            failed.push(target.name);
        }
    }
    if failed.is_empty() {
        println!("kapprox-fuzz: {} target(s) ran clean", args.targets.len());
        ExitCode::SUCCESS
    } else {
        println!("kapprox-fuzz: FAILED: {}", failed.join(", "));
        ExitCode::from(1)
    }
}

/// A scratch directory in memory where there is one (`/dev/shm`): the
/// targets write and fsync small files at every input.
fn scratch_dir(tag: &str) -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() { base.to_path_buf() } else { std::env::temp_dir() };
    base.join(format!("kapprox-fuzz-{}-{tag}", std::process::id()))
}

/// Runs one target in a child process; true if it ran clean.
fn supervise(target: &Target, args: &Args) -> bool {
    let scratch = scratch_dir(target.name);
    let _ = std::fs::create_dir_all(&scratch);
    let current = scratch.join("current-input");
    let exe = std::env::current_exe().expect("the fuzzer's own executable");
    let status = Command::new(exe)
        .args(["--worker", "--seconds", &args.seconds.to_string(), "--seed", &args.seed.to_string()])
        .arg("--current")
        .arg(&current)
        .arg(target.name)
        .status();
    let ok = matches!(&status, Ok(s) if s.success());
    if !ok {
        eprintln!("kapprox-fuzz: {}: the worker failed ({status:?})", target.name);
        match std::fs::read(&current) {
            Ok(input) => save_artifact(target, &input),
            Err(e) => eprintln!("kapprox-fuzz: {}: no input to keep: {e}", target.name),
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    ok
}

fn save_artifact(target: &Target, input: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("artifacts").join(target.name);
    let name = format!("crash-{:016x}", kapprox_core::rng::mix64(input.iter().fold(0u64, |h, &b| h * 31 + b as u64)));
    let path = dir.join(name);
    match std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, input)) {
        Ok(()) => eprintln!(
            "kapprox-fuzz: {}: input kept at {}; move it to {} once fixed",
            target.name,
            path.display(),
            kapprox_fuzz::regressions_dir(target).display()
        ),
        Err(e) => eprintln!("kapprox-fuzz: {}: cannot keep the input at {}: {e}", target.name, path.display()),
    }
}

static CURRENT: OnceLock<PathBuf> = OnceLock::new();
/// Milliseconds since `EPOCH` at which the running input started (0: idle).
static STARTED_MS: AtomicU64 = AtomicU64::new(0);
static EPOCH: OnceLock<Instant> = OnceLock::new();

fn now_ms() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

fn save_current(input: &[u8]) {
    if let Some(p) = CURRENT.get() {
        let _ = std::fs::write(p, input);
    }
    STARTED_MS.store(now_ms(), Ordering::SeqCst);
}

fn worker(args: &Args) -> ExitCode {
    let target = args.targets[0];
    let Some(current) = &args.current else {
        eprintln!("kapprox-fuzz: --worker needs --current");
        return ExitCode::from(2);
    };
    let _ = CURRENT.set(current.clone());
    std::thread::spawn(|| {
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let started = STARTED_MS.load(Ordering::SeqCst);
            if started != 0 && now_ms().saturating_sub(started) > HANG_LIMIT.as_millis() as u64 {
                let _ = std::io::stderr().write_all(b"kapprox-fuzz: an input ran past the hang limit; aborting\n");
                std::process::abort();
            }
        }
    });
    let scratch = current.parent().expect("inside the scratch directory").join("work");
    let _ = std::fs::create_dir_all(&scratch);
    let cfg = kapprox_fuzz::RunConfig {
        time: Duration::from_secs_f64(args.seconds),
        max_execs: u64::MAX,
        seed: args.seed,
        before_each: Some(save_current),
    };
    let r = kapprox_fuzz::run(target, &scratch, &cfg);
    println!(
        "{:<10} {} inputs ({} accepted, {} of them not a seed; {} refused), {} outcome shapes, corpus {}",
        target.name, r.execs, r.accepted, r.accepted_mutants, r.refused, r.shapes, r.corpus
    );
    match r.failure {
        None => ExitCode::SUCCESS,
        Some((_, msg)) => {
            eprintln!("kapprox-fuzz: {}: panic: {msg}", target.name);
            ExitCode::from(1)
        }
    }
}
