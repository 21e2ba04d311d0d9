//! Fits across processes (issue 4): `fit --workers P`, partial statistics
//! (`fit --part I/N`, pass by pass with `--after`) reduced by `kapprox
//! reduce`, and `mpirun` (cargo feature `mpi`) give the model of one
//! process — to 1e-9 relative, and bitwise for the same partition into
//! parts. Bad or missing parts and dead workers are refused with a message
//! naming them, and no model is written.
//!
//! The data: the CPU training rows in 7 shards of 937 rows, so 3 and 5
//! parts cut the shards unevenly (5 parts: shards 0, 1, 2-3, 4, 5-6).

use crate::util::{Dir, check_error, check_error_parts, cpu_train, rel_max_diff, weights};
use std::path::Path;

/// Relative agreement across partitions: only the association of the sums
/// at part boundaries differs.
const TOLERANCE: f64 = 1e-9;

/// One method under test.
struct Method {
    name: &'static str,
    args: &'static [&'static str],
    /// Passes in the plan (`fit --plan`).
    passes: usize,
    /// Compare over the base features (`Q·w`): TEFM's basis is defined up
    /// to rounding of its orthonormalisation.
    over_base: bool,
}

/// The common flags (small and fast).
const COMMON: &[&str] = &["--train", "seven", "--alpha", "0.01,1"];

const RFF: Method = Method {
    name: "rff",
    // `--sigma auto` adds the prepare pass (the median sample by row-id hash).
    args: &["--map", "rff", "--features", "64", "--sigma", "auto,auto*2"],
    passes: 2,
    over_base: false,
};

const NYSTROM: Method = Method {
    name: "nystrom",
    // Landmarks sampled in the prepare pass, then the fit pass.
    args: &["--map", "nystrom", "--features", "48", "--sigma", "10"],
    passes: 2,
    over_base: false,
};

const TEFM_MULTI: Method = Method {
    name: "tefm-g multi-pass",
    // Fᵀ(FΩ), one power iteration Fᵀ(FQ), then the fit pass.
    args: &["--map", "tefm-g", "--features", "24", "--power", "1", "--sigma", "10", "--tefm-strategy", "multi-pass"],
    passes: 3,
    over_base: true,
};

const TEFM_ONE: Method = Method {
    name: "tefm-g one-pass",
    args: &["--map", "tefm-g", "--features", "24", "--power", "1", "--sigma", "10", "--tefm-strategy", "one-pass"],
    passes: 1,
    over_base: true,
};

const TEFM_NYSTROM: Method = Method {
    name: "tefm-g over nystrom",
    // The landmark sample (96 = 4l rows), Fᵀ(FΩ), one power iteration, the fit.
    args: &[
        "--map",
        "tefm-g",
        "--base",
        "nystrom",
        "--features",
        "24",
        "--power",
        "1",
        "--sigma",
        "10",
        "--tefm-strategy",
        "multi-pass",
    ],
    passes: 4,
    over_base: true,
};

fn seven(dir: &Dir) {
    dir.convert(&cpu_train(), "seven", &["--rows-per-shard", "937"]);
}

/// `fit` with the method's flags plus `extra`.
fn fit_args<'a>(m: &'a Method, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["fit"];
    v.extend_from_slice(COMMON);
    v.extend_from_slice(m.args);
    v.extend_from_slice(extra);
    v
}

/// The weights to compare: `coef` and `intercept`, or for TEFM `Q·coef`.
fn compared(dir: &Dir, model: &str, over_base: bool) -> Vec<f64> {
    let m = dir.model(model);
    if !over_base {
        return weights(&m);
    }
    let t = m.map.tensors();
    let q = t.get("q").expect("TEFM model stores q");
    q.dot(&m.coef).iter().chain(m.intercept.iter()).copied().collect()
}

/// Fits `m` pass by pass as `n` part jobs (`fit --part i/n`, with `--after`
/// the previous pass's result) and one `reduce` per pass; writes `model`.
/// Checks the pass counters of every `--json` report on the way.
fn fit_in_parts(dir: &Dir, m: &Method, n: usize, prefix: &str, model: &str) {
    let mut after: Option<String> = None;
    for pass in 0..m.passes {
        let mut parts = Vec::new();
        for i in 1..=n {
            let out = format!("{prefix}-pass{pass}-{i}.kpart");
            let part = format!("{i}/{n}");
            let mut extra = vec!["--part", part.as_str(), "--out", out.as_str(), "--json"];
            if let Some(a) = &after {
                extra.extend_from_slice(&["--after", a.as_str()]);
            }
            let r = dir.cmd(&fit_args(m, &extra)).json();
            assert_eq!(r["pass"]["index"].as_u64(), Some(pass as u64), "{}: part {part}: {r}", m.name);
            assert_eq!(r["pass"]["of"].as_u64(), Some(m.passes as u64), "{}: part {part}: {r}", m.name);
            parts.push(out);
        }
        let last = pass + 1 == m.passes;
        let out = if last { model.to_string() } else { format!("{prefix}-pass{pass}.kresult") };
        let mut args = vec!["reduce"];
        args.extend(parts.iter().map(String::as_str));
        args.extend_from_slice(&["--out", out.as_str(), "--json"]);
        let r = dir.cmd(&args).json();
        assert_eq!(r["parts"].as_array().map(Vec::len), Some(n), "{}: reduce of pass {pass}: {r}", m.name);
        if last {
            assert_eq!(r["report"]["passes"].as_u64(), Some(m.passes as u64), "{}: reduce report: {r}", m.name);
            assert_eq!(r["report"]["rows"].as_u64(), Some(6554), "{}: reduce report: {r}", m.name);
        } else {
            assert_eq!(r["done"].as_u64(), Some(pass as u64 + 1), "{}: pass result: {r}", m.name);
            assert_eq!(r["of"].as_u64(), Some(m.passes as u64), "{}: pass result: {r}", m.name);
        }
        after = Some(out);
    }
}

/// One process, `--workers 3`, 3 parts and 5 parts (pass by pass): equal to
/// `TOLERANCE`; `--workers 3` and 3 parts bitwise.
fn same_model_from_every_partition(dir: &Dir, m: &Method) {
    let plan = dir.cmd(&fit_args(m, &["--out", "unused", "--plan"])).json();
    assert_eq!(plan["passes"].as_array().map(Vec::len), Some(m.passes), "{}: plan {plan}", m.name);
    assert_eq!(plan["shards"].as_u64(), Some(7));

    let r = dir.cmd(&fit_args(m, &["--out", "one.safetensors", "--json"])).json();
    assert_eq!(r["report"]["passes"].as_u64(), Some(m.passes as u64), "{}: one process: {r}", m.name);
    let r = dir.cmd(&fit_args(m, &["--out", "w3.safetensors", "--workers", "3", "--json"])).json();
    assert_eq!(r["report"]["passes"].as_u64(), Some(m.passes as u64), "{}: --workers 3: {r}", m.name);
    assert_eq!(r["report"]["rows"].as_u64(), Some(6554), "{}: --workers 3: {r}", m.name);
    assert_eq!(r["distributed"]["processes"].as_u64(), Some(3), "{}: --workers 3: {r}", m.name);
    assert_eq!(r["distributed"]["passes"].as_array().map(Vec::len), Some(m.passes), "{}: --workers 3: {r}", m.name);
    fit_in_parts(dir, m, 3, "p3", "p3.safetensors");
    fit_in_parts(dir, m, 5, "p5", "p5.safetensors");

    let reference = compared(dir, "one.safetensors", m.over_base);
    for other in ["w3", "p3", "p5"] {
        let d = rel_max_diff(&reference, &compared(dir, &format!("{other}.safetensors"), m.over_base));
        eprintln!("{}: one process vs {other}: relative max difference {d:.3e}", m.name);
        assert!(d <= TOLERANCE, "{}: {other} differs from one process by {d:e} relative", m.name);
    }
    let bytes = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert!(bytes("w3.safetensors") == bytes("p3.safetensors"), "{}: --workers 3 != 3 parts + reduce", m.name);
    // Scratch files of the workers are gone.
    let stray: Vec<String> = dir.listing().into_iter().filter(|n| n.starts_with(".kapprox-workers")).collect();
    assert!(stray.is_empty(), "scratch files left: {stray:?}");
}

kapprox_test!(rff_model_is_the_same_from_workers_and_parts, |dir| {
    seven(&dir);
    same_model_from_every_partition(&dir, &RFF);
});

kapprox_test!(nystrom_model_is_the_same_from_workers_and_parts, |dir| {
    seven(&dir);
    same_model_from_every_partition(&dir, &NYSTROM);
});

kapprox_test!(tefm_models_are_the_same_from_workers_and_parts, |dir| {
    seven(&dir);
    same_model_from_every_partition(&dir, &TEFM_MULTI);
    // One-pass TEFM (FᵀF and the sketch in the fit pass's state) too.
    for f in dir.listing() {
        if f.ends_with(".kpart") || f.ends_with(".kresult") || f.ends_with(".safetensors") {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
    }
    same_model_from_every_partition(&dir, &TEFM_ONE);
});

kapprox_test!(tefm_over_nystrom_is_the_same_from_workers_and_parts, |dir| {
    seven(&dir);
    same_model_from_every_partition(&dir, &TEFM_NYSTROM);
    // Bitwise, one process = one worker: the worker's coordinator takes Q's
    // QR without having built a Nyström map first, which once left faer's
    // global parallelism at its default there and changed the bits.
    dir.cmd(&fit_args(&TEFM_NYSTROM, &["--out", "single.safetensors"])).stdout();
    dir.cmd(&fit_args(&TEFM_NYSTROM, &["--out", "w1.safetensors", "--workers", "1"])).stdout();
    let bytes = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert!(bytes("single.safetensors") == bytes("w1.safetensors"), "one process != --workers 1");
});

// One worker is one process; more workers than shards leave some idle.
kapprox_test!(one_worker_is_one_process_and_idle_workers_change_nothing, |dir| {
    seven(&dir);
    let m = &RFF;
    dir.cmd(&fit_args(m, &["--out", "one.safetensors"])).stdout();
    dir.cmd(&fit_args(m, &["--out", "w1.safetensors", "--workers", "1"])).stdout();
    let r = dir.cmd(&fit_args(m, &["--out", "w10.safetensors", "--workers", "10", "--json"])).json();
    let bytes = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert!(bytes("one.safetensors") == bytes("w1.safetensors"), "--workers 1 differs from one process");
    let d = rel_max_diff(&weights(&dir.model("one.safetensors")), &weights(&dir.model("w10.safetensors")));
    assert!(d <= TOLERANCE, "--workers 10 differs from one process by {d:e} relative");
    // The report names each worker with its own part, in merge (shard) order.
    for pass in r["distributed"]["passes"].as_array().unwrap() {
        let parts = pass["parts"].as_array().unwrap();
        assert_eq!(parts.len(), 10, "{pass}");
        for p in parts {
            let worker = p["source"].as_str().unwrap().strip_prefix("worker ").expect("worker N");
            let part = p["part"].as_str().unwrap();
            assert!(part.starts_with(&format!("part {worker}/10, shards ")), "worker {worker} reported {part}");
        }
        let rows: u64 = parts.iter().map(|p| p["rows"].as_u64().unwrap()).sum();
        assert_eq!(rows, 6554, "{pass}");
    }
});

// ---------------------------------------------------------------------------
// Faults

/// Flags of the fault tests: RFF, one pass.
const FAULT: Method =
    Method { name: "rff", args: &["--map", "rff", "--features", "32", "--sigma", "10"], passes: 1, over_base: false };

/// Runs a `reduce` that must fail; checks that it wrote nothing (no model,
/// no temporary) and returns its stderr.
#[track_caller]
fn reduce_fails(dir: &Dir, parts: &[&str]) -> String {
    let before = dir.listing();
    let mut args = vec!["reduce"];
    args.extend_from_slice(parts);
    args.extend_from_slice(&["--out", "m.safetensors"]);
    let stderr = dir.cmd(&args).fails();
    eprint!("reduce {}: {stderr}", parts.join(" "));
    assert_eq!(dir.listing(), before, "a failed reduce left files behind");
    assert!(!dir.join("m.safetensors").exists());
    stderr
}

/// The five parts `p1.kpart` .. `p5.kpart` of the fault tests and the model
/// they reduce to (`ref.safetensors`).
fn five_parts(dir: &Dir) {
    seven(dir);
    for i in 1..=5 {
        let (part, out) = (format!("{i}/5"), format!("p{i}.kpart"));
        dir.cmd(&fit_args(&FAULT, &["--part", &part, "--out", &out])).stdout();
    }
    dir.cmd(&["reduce", "p1.kpart", "p2.kpart", "p3.kpart", "p4.kpart", "p5.kpart", "--out", "ref.safetensors"])
        .stdout();
}

const ALL: [&str; 5] = ["p1.kpart", "p2.kpart", "p3.kpart", "p4.kpart", "p5.kpart"];

kapprox_test!(reduce_refuses_a_part_of_another_run, |dir| {
    five_parts(&dir);
    dir.mkdir("other");
    dir.cmd(&fit_args(&FAULT, &["--part", "2/5", "--out", "other/p2.kpart", "--seed", "7"])).stdout();
    let stderr = reduce_fails(&dir, &["p1.kpart", "other/p2.kpart", "p3.kpart", "p4.kpart", "p5.kpart"]);
    check_error(
        &stderr,
        "other/p2.kpart: seed 7 differs from p1.kpart's seed 0; the parts of one fit need the same flags and data",
    );
    // Another flag (the feature count) likewise, named inside the method.
    let other = |train: &str, features: &str| {
        dir.cmd(&["fit", "--train", train, "--alpha", "0.01,1", "--map", "rff", "--features", features])
            .args(&["--sigma", "10", "--part", "2/5", "--out", "other/p2.kpart", "--overwrite"])
            .stdout();
    };
    other("seven", "16");
    let stderr = reduce_fails(&dir, &["p1.kpart", "p2.kpart", "p3.kpart", "p4.kpart", "other/p2.kpart"]);
    check_error_parts(
        &stderr,
        &["other/p2.kpart: method.n_components 16 differs from p1.kpart's method.n_components 32"],
    );
    // Other data (a shard of another size) likewise.
    dir.convert(&cpu_train(), "eight", &["--rows-per-shard", "900"]);
    other("eight", "32");
    let stderr = reduce_fails(&dir, &["p1.kpart", "other/p2.kpart", "p3.kpart", "p4.kpart", "p5.kpart"]);
    check_error_parts(&stderr, &["other/p2.kpart: number of dataset shards 8 differs from p1.kpart's"]);
});

kapprox_test!(reduce_refuses_a_shard_in_two_parts, |dir| {
    five_parts(&dir);
    dir.cmd(&fit_args(&FAULT, &["--shards", "3", "--out", "extra.kpart"])).stdout();
    let mut parts = ALL.to_vec();
    parts.push("extra.kpart");
    let stderr = reduce_fails(&dir, &parts);
    check_error(
        &stderr,
        "shard 3 (part-00003.parquet) is covered by both p3.kpart (part 3/5, shards 2-3) and extra.kpart (shards \
         3); each shard must be in exactly one part",
    );
    // The same file twice.
    let stderr = reduce_fails(&dir, &["p1.kpart", "p2.kpart", "p3.kpart", "p4.kpart", "p5.kpart", "./p5.kpart"]);
    check_error(&stderr, "./p5.kpart is given twice (also as p5.kpart); give each part file once");
});

kapprox_test!(reduce_refuses_a_missing_shard_and_names_the_part_to_rerun, |dir| {
    five_parts(&dir);
    let stderr = reduce_fails(&dir, &["p1.kpart", "p2.kpart", "p4.kpart", "p5.kpart"]);
    check_error(
        &stderr,
        "shards 2-3 (part-00002.parquet, part-00003.parquet) are covered by none of the 4 part file(s); rerun \
         `kapprox fit --part 3/5 ...` with the same flags, then reduce again",
    );
    let stderr = reduce_fails(&dir, &["p2.kpart", "p4.kpart"]);
    check_error_parts(
        &stderr,
        &[
            "shards 0,2-3,5-6 (",
            "... 5 in all",
            "`kapprox fit --part 1/5 ...`, `kapprox fit \
         --part 3/5 ...`, `kapprox fit --part 5/5 ...`",
        ],
    );
    // Parts given by shard lists: the missing shards.
    dir.cmd(&fit_args(&FAULT, &["--shards", "0-1,3", "--out", "a.kpart"])).stdout();
    let stderr = reduce_fails(&dir, &["a.kpart", "p4.kpart", "p5.kpart"]);
    check_error_parts(&stderr, &["shard 2 (part-00002.parquet) is covered by none", "--shards 2 ..."]);
});

kapprox_test!(reduce_refuses_a_truncated_or_corrupt_part, |dir| {
    five_parts(&dir);
    let bytes = std::fs::read(dir.join("p3.kpart")).unwrap();
    let with = |bad: &[u8]| {
        std::fs::write(dir.join("p3.kpart"), bad).unwrap();
        reduce_fails(&dir, &ALL)
    };
    let stderr = with(&bytes[..bytes.len() - 1000]);
    check_error_parts(&stderr, &["p3.kpart", "truncated", "rerun"]);
    let stderr = with(&bytes[..100]);
    check_error_parts(&stderr, &["p3.kpart", "truncated", "rerun"]);
    // One flipped bit in the statistics: the checksum.
    let mut flipped = bytes.clone();
    let at = bytes.len() - 4000;
    flipped[at] ^= 0x10;
    let stderr = with(&flipped);
    check_error_parts(&stderr, &["p3.kpart", "checksum", "rerun"]);
    // Not a part file at all: a model.
    let model = std::fs::read(dir.join("ref.safetensors")).unwrap();
    let stderr = with(&model);
    check_error_parts(&stderr, &["p3.kpart", "not a part file"]);
    // Restored, the parts reduce again to the same model.
    std::fs::write(dir.join("p3.kpart"), &bytes).unwrap();
    let mut args = vec!["reduce"];
    args.extend_from_slice(&ALL);
    dir.cmd(&args).args(&["--out", "again.safetensors"]).stdout();
    assert!(
        std::fs::read(dir.join("again.safetensors")).unwrap() == std::fs::read(dir.join("ref.safetensors")).unwrap()
    );
});

/// The test hook of `kapprox worker` and `fit --part`: the part whose number
/// is its value aborts before writing its file (see `distributed::workers`).
const ABORT: &str = "KAPPROX_TEST_WORKER_ABORT";

kapprox_test!(a_killed_part_job_writes_nothing_and_rerunning_only_it_completes_the_fit, |dir| {
    five_parts(&dir);
    std::fs::remove_file(dir.join("p3.kpart")).unwrap();
    let before = dir.listing();
    let mut cmd = dir.cmd(&fit_args(&FAULT, &["--part", "3/5", "--out", "p3.kpart"])).into_command();
    let o = cmd.env(ABORT, "3").output().unwrap();
    assert!(!o.status.success(), "the part job was meant to die");
    assert_eq!(dir.listing(), before, "a killed part job left files behind");
    let stderr = reduce_fails(&dir, &["p1.kpart", "p2.kpart", "p4.kpart", "p5.kpart"]);
    check_error_parts(&stderr, &["--part 3/5"]);
    // Rerun only the missing part; the reduce gives the same model as before.
    dir.cmd(&fit_args(&FAULT, &["--part", "3/5", "--out", "p3.kpart"])).stdout();
    let mut args = vec!["reduce"];
    args.extend_from_slice(&ALL);
    dir.cmd(&args).args(&["--out", "m.safetensors"]).stdout();
    assert!(std::fs::read(dir.join("m.safetensors")).unwrap() == std::fs::read(dir.join("ref.safetensors")).unwrap());
});

kapprox_test!(a_killed_worker_fails_the_fit_without_a_model_and_a_rerun_completes, |dir| {
    seven(&dir);
    for (method, pass) in [(&FAULT, "pass 1 of 1, fit"), (&NYSTROM, "pass 1 of 2, prepare")] {
        let before = dir.listing();
        let mut cmd = dir.cmd(&fit_args(method, &["--out", "w.safetensors", "--workers", "3"])).into_command();
        let o = cmd.env(ABORT, "2").output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        eprint!("{stderr}");
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        check_error_parts(&stderr, &["worker 2 of 3", pass, "shards 2-3", "SIGABRT", "no model was written"]);
        assert_eq!(dir.listing(), before, "a failed --workers fit left files behind (model or scratch)");
        // The same command without the fault.
        dir.cmd(&fit_args(method, &["--out", "w.safetensors", "--workers", "3"])).stdout();
        std::fs::remove_file(dir.join("w.safetensors")).unwrap();
    }
});

kapprox_test!(reduce_refuses_parts_of_another_pass_or_pass_result, |dir| {
    seven(&dir);
    let m = &NYSTROM;
    for i in 1..=2 {
        let (part, out) = (format!("{i}/2"), format!("a{i}.kpart"));
        dir.cmd(&fit_args(m, &["--part", &part, "--out", &out])).stdout();
    }
    dir.cmd(&["reduce", "a1.kpart", "a2.kpart", "--out", "a.kresult"]).stdout();
    dir.cmd(&fit_args(m, &["--part", "1/2", "--after", "a.kresult", "--out", "b1.kpart"])).stdout();
    // A prepare part among fit parts.
    let stderr = reduce_fails(&dir, &["b1.kpart", "a2.kpart"]);
    check_error_parts(&stderr, &["a2.kpart", "pass 1 of 2 (prepare)", "pass 2 of 2 (fit)"]);
    // A fit part computed after another pass result (another seed's landmarks).
    dir.cmd(&fit_args(m, &["--part", "1/2", "--out", "s1.kpart", "--seed", "5"])).stdout();
    dir.cmd(&fit_args(m, &["--part", "2/2", "--out", "s2.kpart", "--seed", "5"])).stdout();
    dir.cmd(&["reduce", "s1.kpart", "s2.kpart", "--out", "s.kresult"]).stdout();
    let stderr = dir.cmd(&fit_args(m, &["--part", "2/2", "--after", "s.kresult", "--out", "b2.kpart"])).fails();
    eprint!("{stderr}");
    check_error_parts(&stderr, &["s.kresult", "seed"]);
    // The next pass of a fit refuses a pass result it does not follow from.
    dir.cmd(&fit_args(m, &["--part", "2/2", "--after", "a.kresult", "--out", "b2.kpart"])).stdout();
    dir.cmd(&["reduce", "b1.kpart", "b2.kpart", "--out", "m.safetensors"]).stdout();
    assert!(Path::new(&dir.join("m.safetensors")).exists());
});

// ---------------------------------------------------------------------------
// MPI (cargo feature `mpi`; `.ci/run` runs these with
// `cargo test --release -p kapprox-cli --features mpi --test cli distributed`).

#[cfg(feature = "mpi")]
mod mpi {
    use super::*;
    use crate::util::BIN;
    use std::process::Command;

    /// `mpirun -n <n> kapprox <args>` in `dir`; asserts success; returns stdout.
    fn mpirun(dir: &Dir, n: usize, args: &[&str]) -> String {
        let o = Command::new("mpirun")
            .args(["-n", &n.to_string(), "--allow-run-as-root", "--oversubscribe", BIN])
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("mpirun runs (apt-get install openmpi-bin)");
        assert!(
            o.status.success(),
            "mpirun -n {n} kapprox {} failed:\n{}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    fn same_model_under_mpi(dir: &Dir, m: &Method) {
        dir.cmd(&fit_args(m, &["--out", "one.safetensors"])).stdout();
        dir.cmd(&fit_args(m, &["--out", "w3.safetensors", "--workers", "3"])).stdout();
        fit_in_parts(dir, m, 2, "p2", "p2.safetensors");
        for n in [2, 3] {
            let out = format!("mpi{n}.safetensors");
            let stdout = mpirun(dir, n, &fit_args(m, &["--out", &out, "--json"]));
            let r: serde_json::Value = serde_json::from_str(stdout.trim()).expect("rank 0 prints one JSON report");
            assert_eq!(r["distributed"]["mode"], "mpi", "{r}");
            assert_eq!(r["distributed"]["processes"].as_u64(), Some(n as u64), "{r}");
            assert_eq!(r["report"]["passes"].as_u64(), Some(m.passes as u64), "{}: mpirun -n {n}: {r}", m.name);
        }
        let reference = compared(dir, "one.safetensors", m.over_base);
        for other in ["mpi2", "mpi3"] {
            let d = rel_max_diff(&reference, &compared(dir, &format!("{other}.safetensors"), m.over_base));
            eprintln!("{}: one process vs {other}: relative max difference {d:.3e}", m.name);
            assert!(d <= TOLERANCE, "{}: {other} differs from one process by {d:e} relative", m.name);
        }
        let bytes = |f: &str| std::fs::read(dir.join(f)).unwrap();
        assert!(bytes("mpi2.safetensors") == bytes("p2.safetensors"), "{}: mpirun -n 2 != 2 parts", m.name);
        assert!(bytes("mpi3.safetensors") == bytes("w3.safetensors"), "{}: mpirun -n 3 != --workers 3", m.name);
    }

    kapprox_test!(mpi_rff_model_is_the_same_as_one_process_and_workers, |dir| {
        seven(&dir);
        same_model_under_mpi(&dir, &RFF);
    });

    kapprox_test!(mpi_nystrom_model_is_the_same_as_one_process_and_workers, |dir| {
        seven(&dir);
        same_model_under_mpi(&dir, &NYSTROM);
    });

    kapprox_test!(mpi_tefm_model_is_the_same_as_one_process_and_workers, |dir| {
        seven(&dir);
        same_model_under_mpi(&dir, &TEFM_MULTI);
    });

    kapprox_test!(mpi_tefm_over_nystrom_is_the_same_as_one_process_and_workers, |dir| {
        seven(&dir);
        same_model_under_mpi(&dir, &TEFM_NYSTROM);
    });

    kapprox_test!(mpi_featurize_writes_the_shards_of_one_process, |dir| {
        seven(&dir);
        let args = ["featurize", "--data", "seven", "--features", "16", "--sigma", "10"];
        dir.cmd(&args).args(&["--out", "one"]).stdout();
        let mut a = args.to_vec();
        a.extend_from_slice(&["--out", "mpi"]);
        mpirun(&dir, 3, &a);
        let names = crate::util::parts(&dir.join("one"));
        assert_eq!(names.len(), 7);
        assert_eq!(crate::util::parts(&dir.join("mpi")), names);
        for n in &names {
            let (a, b) =
                (std::fs::read(dir.join("one").join(n)).unwrap(), std::fs::read(dir.join("mpi").join(n)).unwrap());
            assert!(a == b, "{n} differs between one process and mpirun -n 3");
        }
    });

    /// The process ids of rank `rank` of kapprox jobs running in `dir`.
    fn rank_pids(dir: &Dir, rank: usize) -> Vec<String> {
        let wanted = format!("OMPI_COMM_WORLD_RANK={rank}");
        let (cwd, bin) = (std::fs::canonicalize(dir.path()).unwrap(), std::fs::canonicalize(BIN).unwrap());
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let here = std::fs::read_link(entry.path().join("cwd")).is_ok_and(|c| c == cwd);
            let exe = std::fs::read_link(entry.path().join("exe")).is_ok_and(|e| e == bin);
            let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
            if here && exe && env.split(|&b| b == 0).any(|v| v == wanted.as_bytes()) {
                found.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        found
    }

    /// Names a run left in `dir`: staging areas and temporaries.
    fn leftovers(dir: &Dir) -> Vec<String> {
        dir.listing().into_iter().filter(|p| p.contains(".kapprox-") || p.ends_with(".tmp")).collect()
    }

    /// The files under `path` (a file or a directory) with their bytes.
    fn snapshot(path: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        let mut todo = vec![path.to_path_buf()];
        while let Some(p) = todo.pop() {
            if p.is_dir() {
                todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                files.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
        files.sort();
        files
    }

    /// Removes `out` (a file or a directory) under `dir`.
    fn remove(dir: &Dir, out: &str) {
        let _ = std::fs::remove_dir_all(dir.join(out)).or_else(|_| std::fs::remove_file(dir.join(out)));
    }

    /// Waits until no rank of a job in `dir` runs (mpirun may return while
    /// the other ranks are still being stopped).
    fn ranks_stopped(dir: &Dir) {
        let stopped = std::time::Instant::now();
        while !(rank_pids(dir, 0).is_empty() && rank_pids(dir, 1).is_empty() && rank_pids(dir, 2).is_empty()) {
            assert!(stopped.elapsed() < std::time::Duration::from_secs(10), "ranks outlived the job by 10 s");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// `mpirun -n 3 kapprox <args>` with rank 1 SIGKILLed part-way through
    /// (timed by a run that is not killed): the job fails, nothing is left
    /// at `out`, and a rerun writes the whole output and removes whatever
    /// the killed run left.
    ///
    /// The kill comes after half the reference run's time, then a quarter,
    /// an eighth, a sixteenth: a run can be faster than the reference (which
    /// shares the machine with other tests), and rank 1 can outlive rank 0's
    /// write. A kill that lands after the output was written must find it
    /// whole (the bytes of the reference run), and another attempt follows;
    /// one attempt must land before the write.
    fn rank_killed_half_way(dir: &Dir, args: &[&str], out: &str) {
        let job = || {
            let mut c = Command::new("mpirun");
            c.args(["-n", "3", "--allow-run-as-root", "--oversubscribe", BIN]).args(args).current_dir(dir.path());
            c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
            c
        };
        let t = std::time::Instant::now();
        mpirun(dir, 3, args);
        let whole = t.elapsed();
        let complete = dir.listing();
        let reference = snapshot(&dir.join(out));
        remove(dir, out);
        let mut landed = false;
        for attempt in 0..4 {
            let delay = whole / (2 << attempt);
            let child = job().spawn().unwrap();
            std::thread::sleep(delay);
            let pids = rank_pids(dir, 1);
            if pids.is_empty() {
                // Rank 1 already finished (or not started): nothing to kill.
                eprintln!("{args:?}: rank 1 not running after {delay:?} of {whole:?}; trying earlier");
                let _ = child.wait_with_output();
                ranks_stopped(dir);
                remove(dir, out);
                continue;
            }
            assert_eq!(pids.len(), 1, "{args:?}: rank 1 runs as {pids:?}");
            assert!(Command::new("kill").args(["-KILL", &pids[0]]).status().unwrap().success());
            let o = child.wait_with_output().unwrap();
            eprintln!("{args:?}: rank 1 killed after {delay:?} of {whole:?}: {:?}", o.status);
            assert!(!o.status.success(), "mpirun succeeded although rank 1 was killed");
            ranks_stopped(dir);
            if dir.join(out).exists() {
                // The kill came after the write: the output must be whole.
                assert!(snapshot(&dir.join(out)) == reference, "{out}: a killed job left a partial output");
                eprintln!("{args:?}: the output was written before the kill; trying earlier");
                remove(dir, out);
                continue;
            }
            landed = true;
            break;
        }
        assert!(landed, "{args:?}: no kill landed before the output was written in 4 attempts");
        mpirun(dir, 3, args);
        assert_eq!(leftovers(dir), Vec::<String>::new(), "left over after the rerun");
        assert_eq!(dir.listing(), complete, "the rerun's output differs from the first run's");
    }

    kapprox_test!(mpi_rank_killed_mid_fit_writes_no_model, |dir| {
        seven(&dir);
        let mut args = vec!["fit"];
        args.extend_from_slice(COMMON);
        args.extend_from_slice(&["--map", "rff", "--features", "1024", "--sigma", "1,2,4,8,16", "--chunk-rows", "32"]);
        args.extend_from_slice(&["--out", "m.safetensors"]);
        rank_killed_half_way(&dir, &args, "m.safetensors");
        dir.model("m.safetensors");
    });

    kapprox_test!(mpi_rank_killed_mid_featurize_writes_no_features, |dir| {
        seven(&dir);
        let mut args = vec!["featurize", "--data", "seven", "--features", "512", "--sigma", "10", "--chunk-rows", "32"];
        args.extend_from_slice(&["--out", "feat"]);
        rank_killed_half_way(&dir, &args, "feat");
        assert_eq!(crate::util::parts(&dir.join("feat")).len(), 7);
    });

    kapprox_test!(mpi_featurize_refuses_an_existing_output_or_its_input, |dir| {
        seven(&dir);
        let args = ["featurize", "--data", "seven", "--features", "16", "--sigma", "10"];
        dir.cmd(&args).args(&["--out", "one"]).stdout();
        let before = dir.listing();
        for out in ["one", "seven", "seven/inside"] {
            let o = Command::new("mpirun")
                .args(["-n", "2", "--allow-run-as-root", "--oversubscribe", BIN])
                .args(args)
                .args(["--out", out])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(!o.status.success(), "--out {out}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("--overwrite") || err.contains("destroy the input"), "--out {out}: {err}");
            assert_eq!(dir.listing(), before, "--out {out}");
        }
    });

    kapprox_test!(mpi_fit_fails_cleanly_on_bad_flags, |dir| {
        seven(&dir);
        let before = dir.listing();
        let o = Command::new("mpirun")
            .args(["-n", "2", "--allow-run-as-root", "--oversubscribe", BIN])
            .args(fit_args(&FAULT, &["--out", "m.safetensors", "--label", "nosuch"]))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("nosuch"), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(dir.listing(), before);
    });
}
