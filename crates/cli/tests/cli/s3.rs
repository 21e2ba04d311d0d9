//! Object storage (issue 12): every command reads `s3://bucket/prefix`
//! from a local S3-compatible server (moto, started on 127.0.0.1 by the
//! test) and gives what it gives on the same local directory; a missing
//! bucket, wrong credentials and a truncated object fail with exit code 2
//! and a message naming the URL.
//!
//! Skipped, with the reason printed, when moto cannot be installed.

use crate::s3_server::S3;
use crate::util::{Dir, check_error_parts, cpu_train};
use std::process::Output;

/// `kapprox <args>` in `dir` with the server's environment.
fn run(dir: &Dir, s3: &S3, key: (&str, &str), args: &[&str]) -> Output {
    let mut cmd = dir.cmd(args).into_command();
    cmd.envs(s3.env(key.0, key.1));
    cmd.output().expect("kapprox runs")
}

#[track_caller]
fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[track_caller]
fn fails(o: Output, parts: &[&str]) {
    assert_eq!(o.status.code(), Some(crate::util::ERROR_EXIT), "{}", String::from_utf8_lossy(&o.stderr));
    check_error_parts(&String::from_utf8_lossy(&o.stderr), parts);
}

kapprox_test!(every_command_reads_s3_like_a_local_directory, |dir| {
    dir.convert(&cpu_train(), "upload/train", &["--rows-per-shard", "2000"]);
    let bytes = std::fs::read(dir.join("upload/train/part-00001.parquet")).unwrap();
    crate::columns::write_sales(&dir.join("upload/sales"));
    dir.mkdir("upload/broken");
    std::fs::write(dir.join("upload/broken/part-0.parquet"), &bytes[..bytes.len() - 100]).unwrap();
    let Some(s3) = S3::start(&dir.join("upload"), "kapprox-cli", false) else { return };
    let key = (s3.key_id.clone(), s3.secret.clone());
    let key = (key.0.as_str(), key.1.as_str());

    let fit = ["fit", "--features", "128", "--map", "nystrom", "--seed", "3"];
    ok(run(&dir, &s3, key, &[&fit[..], &["--train", "s3://kapprox-cli/train", "--out", "s3.safetensors"]].concat()));
    ok(run(&dir, &s3, key, &[&fit[..], &["--train", "upload/train", "--out", "local.safetensors"]].concat()));
    let file = |f: &str| std::fs::read(dir.join(f)).unwrap();
    assert!(file("s3.safetensors") == file("local.safetensors"), "s3 and local fits differ");
    // Two workers read their shards from the store too.
    ok(run(
        &dir,
        &s3,
        key,
        &[&fit[..], &["--train", "s3://kapprox-cli/train", "--out", "w.safetensors", "--workers", "2"]].concat(),
    ));

    for (data, out) in [("s3://kapprox-cli/train", "p-s3"), ("upload/train", "p-local")] {
        ok(run(&dir, &s3, key, &["predict", "--model", "local.safetensors", "--data", data, "--out", out]));
    }
    for part in ["part-00000.parquet", "part-00003.parquet"] {
        assert!(file(&format!("p-s3/{part}")) == file(&format!("p-local/{part}")), "{part}");
    }
    let eval =
        |data: &str| ok(run(&dir, &s3, key, &["eval", "--model", "local.safetensors", "--data", data, "--json"]));
    assert_eq!(eval("s3://kapprox-cli/train"), eval("upload/train"));
    let feat = ["featurize", "--map", "rff", "--features", "16", "--sigma", "3", "--data"];
    ok(run(&dir, &s3, key, &[&feat[..], &["s3://kapprox-cli/train", "--out", "f-s3"]].concat()));
    ok(run(&dir, &s3, key, &[&feat[..], &["upload/train", "--out", "f-local"]].concat()));
    assert!(file("f-s3/part-00002.parquet") == file("f-local/part-00002.parquet"));

    // The README's s3:// command, on the README's example data.
    let readme = crate::columns::readme_commands();
    let line = readme.iter().find(|a| a.iter().any(|x| x.starts_with("s3://"))).expect("an s3 example");
    let args: Vec<String> = line.iter().map(|a| a.replace("s3://my-bucket/", "s3://kapprox-cli/")).collect();
    // The README writes s3.safetensors, which the fit above already wrote.
    std::fs::remove_file(dir.join("s3.safetensors")).unwrap();
    ok(run(&dir, &s3, key, &args.iter().map(String::as_str).collect::<Vec<_>>()));
    let m = dir.model("s3.safetensors");
    assert_eq!(m.doc.inputs.as_ref().unwrap().columns.categorical, ["store"]);

    let bad = |data: &str| run(&dir, &s3, key, &["fit", "--train", data, "--out", "bad.safetensors"]);
    fails(bad("s3://kapprox-cli/broken"), &["s3://kapprox-cli/broken/part-0.parquet", "footer"]);
    fails(bad("s3://no-such-bucket/train"), &["s3://no-such-bucket/train", "bucket not found"]);
    assert!(!dir.join("bad.safetensors").exists());
    drop(s3);

    let empty = dir.mkdir("empty");
    let guarded = S3::start(&empty, "kapprox-private", true).expect("moto is installed");
    let o = run(
        &dir,
        &guarded,
        ("AKIAWRONGWRONGWRONG", "wrong"),
        &["fit", "--train", "s3://kapprox-private/t", "--out", "x"],
    );
    fails(o, &["s3://kapprox-private/t", "access denied"]);
});
