//! The examples of the "never lose or corrupt data" catalogue: outputs that
//! would destroy inputs, sizes that would exhaust memory, damaged or
//! degenerate models, non-finite results, and closed or full stdout. Each
//! gets one clear error line and exit code 2 (or the correct result), never
//! exit 0 with lost data, never a panic.

use crate::util::{Dir, check_error_parts};
use kapprox::io::Dataset;
use kapprox::model::Model;
use kapprox::tensorfile::TensorFile;
use std::process::Stdio;

/// A dataset `data` (4 shards), a model `m.st` fitted on it, and the two
/// halves of the fit as part files.
fn fitted(dir: &Dir) {
    dir.cmd(&["generate", "--out", "data", "--rows", "800", "--features", "4", "--rows-per-shard", "200"]).stdout();
    let fit = ["fit", "--train", "data", "--features", "32", "--sigma", "2", "--alpha", "1e-3"];
    dir.cmd(&fit).args(&["--out", "m.st"]).stdout();
    dir.cmd(&fit).args(&["--out", "p1.kpart", "--part", "1/2"]).stdout();
    dir.cmd(&fit).args(&["--out", "p2.kpart", "--part", "2/2"]).stdout();
}

/// Runs a command that must fail, leaving the directory as it was.
#[track_caller]
fn refused(dir: &Dir, args: &[&str], parts: &[&str]) {
    let before = dir.listing();
    let err = dir.cmd(args).fails();
    check_error_parts(&err, parts);
    assert_eq!(dir.listing(), before, "`kapprox {}` changed the directory", args.join(" "));
}

kapprox_test!(outputs_that_would_destroy_an_input_are_refused, |dir| {
    fitted(&dir);
    let rows = Dataset::open(dir.join("data")).unwrap().n_rows();
    std::os::unix::fs::symlink("data", dir.join("alias")).unwrap();
    refused(&dir, &["predict", "--model", "m.st", "--data", "data", "--out", "data", "--overwrite"], &["data"]);
    refused(&dir, &["predict", "--model", "m.st", "--data", "data", "--out", "alias", "--overwrite"], &["alias"]);
    refused(&dir, &["predict", "--model", "m.st", "--data", "data", "--out", "m.st", "--overwrite"], &["m.st"]);
    refused(&dir, &["featurize", "--data", "data", "--out", "data", "--sigma", "1", "--overwrite"], &["data"]);
    refused(&dir, &["featurize", "--data", "data/part-00000.parquet", "--out", "data", "--sigma", "1"], &["data"]);
    let fit = ["fit", "--train", "data", "--sigma", "1", "--alpha", "1", "--overwrite", "--out"];
    refused(&dir, &[&fit[..], &["data/part-00000.parquet"]].concat(), &["data/part-00000.parquet"]);
    refused(&dir, &["reduce", "p1.kpart", "p2.kpart", "--out", "p1.kpart", "--overwrite"], &["p1.kpart"]);
    refused(&dir, &["split", "data", "--train", "d2", "--test", "d2"], &["d2"]);
    refused(&dir, &["split", "data", "--train", "data/x", "--test", "t"], &["data/x"]);
    refused(&dir, &["convert", "data/part-00000.parquet", "--out", "data", "--overwrite"], &["data"]);
    assert_eq!(Dataset::open(dir.join("data")).unwrap().n_rows(), rows, "the input survived");
});

kapprox_test!(existing_outputs_are_kept_unless_overwrite_and_then_replaced_whole, |dir| {
    fitted(&dir);
    let predict = ["predict", "--model", "m.st", "--data", "data", "--out", "pred"];
    dir.cmd(&predict).stdout();
    // A stale shard from some earlier run: without --overwrite the output
    // is refused; with it, replaced whole (the stale shard is gone).
    std::fs::copy(dir.join("pred/part-00000.parquet"), dir.join("pred/part-00099.parquet")).unwrap();
    refused(&dir, &predict, &["pred", "--overwrite"]);
    dir.cmd(&predict).args(&["--overwrite"]).stdout();
    assert!(!dir.join("pred/part-00099.parquet").exists());
    assert_eq!(Dataset::open(dir.join("pred")).unwrap().n_rows(), 800);
    // An empty directory made beforehand is fine.
    dir.mkdir("empty");
    dir.cmd(&["predict", "--model", "m.st", "--data", "data", "--out", "empty"]).stdout();
    // A model file is kept unless --overwrite.
    let fit = ["fit", "--train", "data", "--features", "32", "--sigma", "2", "--alpha", "1e-3", "--out", "m.st"];
    refused(&dir, &fit, &["m.st", "--overwrite"]);
    dir.cmd(&fit).args(&["--overwrite"]).stdout();
    refused(&dir, &["reduce", "p1.kpart", "p2.kpart", "--out", "m.st"], &["m.st", "--overwrite"]);
});

kapprox_test!(sizes_that_cannot_fit_are_refused_before_allocating, |dir| {
    dir.cmd(&["generate", "--out", "data", "--rows", "200", "--features", "4"]).stdout();
    dir.write("big.svm", "-1 2000000000:1\n");
    refused(&dir, &["convert", "big.svm", "--out", "o"], &["big.svm", "memory budget"]);
    let mut idx = vec![0u8, 0, 0x08, 3];
    for d in [0x7fff_ffffu32, 0x7fff_ffff, 0x7fff_ffff] {
        idx.extend_from_slice(&d.to_be_bytes());
    }
    std::fs::write(dir.join("huge.idx"), &idx).unwrap();
    refused(&dir, &["convert", "huge.idx", "--out", "o"], &["huge.idx"]);
    let fit = ["fit", "--train", "data", "--out", "m.st", "--sigma", "1"];
    for (flags, named) in [
        (&["--features", "100000000"][..], "features"),
        (&["--features", "10000000"][..], "memory"),
        (&["--map", "binning", "--grids", "1000000000"][..], "grids"),
        (&["--map", "comp", "--inner", "1000000000"][..], "inner"),
        (&["--map", "tefm-g", "--sketch-features", "1000000000"][..], "features"),
        (&["--map", "tefm-g", "--features", "16", "--power", "1000000"][..], "power"),
        (&["--folds", "1000000"][..], "--folds"),
        (&["--alpha", "1e-5..1:100000000"][..], "--alpha"),
        (&["--threads", "100000"][..], "--threads"),
        (&["--shards", "0-18446744073709551615"][..], "--shards"),
    ] {
        let mut args = fit.to_vec();
        args.extend_from_slice(flags);
        let before = dir.listing();
        let err = dir.cmd(&args).fails();
        assert!(err.contains(named) && err.lines().count() == 1, "{flags:?}: {err}");
        assert_eq!(dir.listing(), before, "{flags:?} left files");
    }
    // 10,001 classes: more than any classifier here is meant for.
    let mut csv = String::from("a,y\n");
    for i in 0..10_001 {
        csv.push_str(&format!("{i},{i}\n"));
    }
    dir.write("classes.csv", &csv);
    dir.cmd(&["convert", "classes.csv", "--out", "cl"]).stdout();
    refused(
        &dir,
        &["fit", "--train", "cl", "--out", "c.st", "--task", "classification", "--sigma", "1", "--features", "8"],
        &["classes"],
    );
});

/// Rewrites model `m.st` as `to`, changed by `edit` (checksum renewed).
fn edited_model(dir: &Dir, to: &str, edit: impl FnOnce(&mut Model)) {
    let mut m = Model::load(&dir.join("m.st")).unwrap();
    edit(&mut m);
    m.save(&dir.join(to)).unwrap();
}

kapprox_test!(degenerate_models_give_errors_not_nan_predictions, |dir| {
    fitted(&dir);
    edited_model(&dir, "nan.st", |m| m.coef[[3, 0]] = f64::NAN);
    edited_model(&dir, "zero-scale.st", |m| {
        if let kapprox::io::Scaler::Standard { scale, .. } = &mut m.doc.scaler {
            scale[1] = 0.0;
        }
    });
    for (model, cause) in [("nan.st", "coef[3, 0] = NaN"), ("zero-scale.st", "scale[1] = 0")] {
        let predict = ["predict", "--model", model, "--data", "data", "--out", "pred"];
        refused(&dir, &predict, &["data/part-00000.parquet: row 0", cause]);
        let featurize = ["featurize", "--model", model, "--data", "data", "--out", "feat"];
        if model == "zero-scale.st" {
            refused(&dir, &featurize, &["row 0", cause]);
        }
    }
});

kapprox_test!(damaged_models_are_refused_and_old_ones_load_with_a_note, |dir| {
    fitted(&dir);
    let bytes = std::fs::read(dir.join("m.st")).unwrap();
    // One flipped bit in a weight: refused by the checksum.
    let mut flipped = bytes.clone();
    let at = flipped.len() - 3;
    flipped[at] ^= 0x10;
    std::fs::write(dir.join("flipped.st"), &flipped).unwrap();
    refused(&dir, &["eval", "--model", "flipped.st", "--data", "data"], &["flipped.st", "checksum mismatch"]);
    // Sizes in the document that disagree, or are absurd: errors, not panics.
    let f = TensorFile::read(&dir.join("m.st")).unwrap();
    let mut scaler = f.clone();
    scaler.doc["scaler"]["mean"].as_array_mut().unwrap().pop();
    std::fs::write(dir.join("scaler.st"), scaler.to_bytes_checked().unwrap()).unwrap();
    refused(&dir, &["eval", "--model", "scaler.st", "--data", "data"], &["scaler.st", "scaler"]);
    let mut absurd = f.clone();
    let text = serde_json::to_string(&absurd.doc["map"]).unwrap().replace("32", "1000000000000");
    absurd.doc["map"] = serde_json::from_str(&text).unwrap();
    std::fs::write(dir.join("absurd.st"), absurd.to_bytes_checked().unwrap()).unwrap();
    refused(&dir, &["eval", "--model", "absurd.st", "--data", "data"], &["absurd.st"]);
    // A model written without a checksum (as before checksums existed).
    std::fs::write(dir.join("old.st"), f.to_bytes().unwrap()).unwrap();
    let o = dir.cmd(&["eval", "--model", "old.st", "--data", "data"]).into_command().output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("old.st has no checksum"), "no note");
});

kapprox_test!(a_closed_stdout_exits_quietly_and_a_full_one_is_an_error, |dir| {
    fitted(&dir);
    let eval = ["eval", "--model", "m.st", "--data", "data", "--json"];
    let mut child = dir.cmd(&eval).into_command().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "closed stdout: {}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "closed stdout printed: {}", String::from_utf8_lossy(&o.stderr));
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let o = dir.cmd(&eval).into_command().stdout(full).output().unwrap();
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        check_error_parts(&err, &["cannot write to stdout", "No space left on device"]);
    } else {
        eprintln!("note: no /dev/full here; skipping the full-stdout half");
    }
});
