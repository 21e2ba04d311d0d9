//! The output mechanism: inputs are never overwritten, outputs appear whole
//! or not at all, concurrent runs do not mix, killed runs are cleaned up,
//! and files get the user's umask.

use crate::util::assert_contains;
use kapprox_io::{ConvertOptions, IoError, OutputOptions, Overlap, StagedOutput, convert};
use std::path::{Path, PathBuf};
use std::process::Command;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Writes `files` files tagged `tag` into a staged directory `target`.
fn write_tagged(target: &Path, tag: &str, files: usize, opts: &OutputOptions) -> kapprox_io::Result<()> {
    let out = StagedOutput::directory(target, opts)?;
    for k in 0..files {
        std::fs::write(out.path().join(format!("part-{k:05}")), tag).unwrap();
    }
    out.commit()
}

/// The tag of a whole output: every file present and carrying one tag.
#[track_caller]
fn whole_tag(target: &Path, files: usize) -> String {
    let found = names(target);
    assert_eq!(found.len(), files, "{found:?}");
    let tags: Vec<String> = found.iter().map(|n| std::fs::read_to_string(target.join(n)).unwrap()).collect();
    assert!(tags.iter().all(|t| t == &tags[0]), "mixed output: {tags:?}");
    tags[0].clone()
}

#[test]
fn an_output_that_touches_an_input_is_refused_before_anything_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let csv = t.join("data/train.csv");
    std::fs::create_dir(t.join("data")).unwrap();
    std::fs::write(&csv, "a,b\n1,2\n").unwrap();
    for (out, relation) in [
        (csv.clone(), Overlap::Same),
        (t.join("data"), Overlap::Contains),
        (t.join("data/../data/train.csv"), Overlap::Same),
        (csv.join("sub"), Overlap::Inside),
    ] {
        let err = convert(&csv, &out, &ConvertOptions::new().with_overwrite(true), &mut |_| {}).unwrap_err();
        match &err {
            IoError::OutputIsInput { relation: r, .. } => assert_eq!(*r, relation, "{err}"),
            other => panic!("{}: {other}", out.display()),
        }
        assert_contains(&err.to_string(), &["expected an output apart from every input"]);
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(t.join("data"), t.join("alias")).unwrap();
        let err = convert(&csv, &t.join("alias"), &ConvertOptions::new().with_overwrite(true), &mut |_| {});
        assert!(matches!(err, Err(IoError::OutputIsInput { relation: Overlap::Contains, .. })), "{err:?}");
        std::fs::hard_link(&csv, t.join("same.csv")).unwrap();
        let err = convert(&csv, &t.join("same.csv"), &ConvertOptions::new().with_overwrite(true), &mut |_| {});
        assert!(matches!(err, Err(IoError::OutputIsInput { relation: Overlap::Same, .. })), "{err:?}");
    }
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "a,b\n1,2\n");
    assert_eq!(names(&t.join("data")), ["train.csv"]);
    // Two outputs of one command must not overlap either.
    let opts = OutputOptions::new().with_inputs([t.join("split/train")]);
    let err = StagedOutput::directory(t.join("split/train"), &opts).unwrap_err();
    assert!(matches!(err, IoError::OutputIsInput { relation: Overlap::Same, .. }), "{err}");
}

#[test]
fn outputs_are_kept_unless_overwriting_and_replaced_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("out");
    let new = OutputOptions::new();
    write_tagged(&target, "first", 3, &new).unwrap();
    let err = write_tagged(&target, "second", 2, &new).unwrap_err();
    assert!(matches!(err, IoError::OutputExists { .. }));
    assert_contains(&err.to_string(), &["out: output exists", "pass --overwrite"]);
    assert_eq!(whole_tag(&target, 3), "first");
    write_tagged(&target, "second", 2, &new.clone().with_overwrite(true)).unwrap();
    assert_eq!(whole_tag(&target, 2), "second", "no file of the replaced output is left");
    // A file output over a file, and an empty directory taken over.
    let file = tmp.path().join("model.bin");
    std::fs::write(&file, "old").unwrap();
    assert!(matches!(StagedOutput::file(&file, &new), Err(IoError::OutputExists { .. })));
    let staged = StagedOutput::file(&file, &new.clone().with_overwrite(true)).unwrap();
    std::fs::write(staged.path(), "new").unwrap();
    staged.commit().unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
    // Overwriting never turns a directory into a file or the reverse.
    let err = StagedOutput::file(&target, &new.clone().with_overwrite(true)).unwrap_err();
    assert_contains(&err.to_string(), &["out: output exists as a directory; expected a file"]);
    let err = StagedOutput::directory(&file, &new.clone().with_overwrite(true)).unwrap_err();
    assert_contains(&err.to_string(), &["model.bin: output exists as a file; expected a directory"]);
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    write_tagged(&tmp.path().join("empty"), "e", 1, &new).unwrap();
    assert_eq!(names(tmp.path()), ["empty", "model.bin", "out"], "no staging area is left");
}

#[test]
fn an_abandoned_or_panicking_output_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("out");
    let staged = StagedOutput::directory(&target, &OutputOptions::new()).unwrap();
    std::fs::write(staged.path().join("half"), "x").unwrap();
    assert_eq!(names(tmp.path()).len(), 1, "one staging area");
    assert!(!target.exists());
    drop(staged);
    assert!(names(tmp.path()).is_empty());
    let t = target.clone();
    let r = std::panic::catch_unwind(move || {
        let staged = StagedOutput::directory(&t, &OutputOptions::new()).unwrap();
        std::fs::write(staged.path().join("half"), "x").unwrap();
        panic!("a bug while writing");
    });
    assert!(r.is_err());
    assert!(names(tmp.path()).is_empty());
}

#[test]
fn concurrent_runs_on_one_output_never_mix() {
    const RUNS: usize = 6;
    const FILES: usize = 20;
    for overwrite in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("out");
        let opts = OutputOptions::new().with_overwrite(overwrite);
        let results: Vec<kapprox_io::Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..RUNS)
                .map(|i| {
                    let (target, opts) = (&target, &opts);
                    s.spawn(move || write_tagged(target, &format!("run {i}"), FILES, opts))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won = results.iter().filter(|r| r.is_ok()).count();
        for r in &results {
            if let Err(e) = r {
                assert!(
                    !overwrite && matches!(e, IoError::OutputRaced { .. } | IoError::OutputExists { .. }),
                    "overwrite {overwrite}: {e}"
                );
            }
        }
        if overwrite {
            assert_eq!(won, RUNS);
        } else {
            assert_eq!(won, 1, "{results:?}");
        }
        whole_tag(&target, FILES);
        assert_eq!(names(tmp.path()), ["out"], "staging areas left behind");
    }
}

/// The child half of the kill test: stages `target`, writes two of four
/// files, then SIGKILLs itself.
#[test]
fn child_that_kills_itself_mid_write() {
    let Some(target) = std::env::var_os("KAPPROX_IO_KILL_TARGET") else { return };
    let staged = StagedOutput::directory(PathBuf::from(target), &OutputOptions::new()).unwrap();
    for k in 0..2 {
        std::fs::write(staged.path().join(format!("part-{k:05}")), "killed run").unwrap();
    }
    let pid = std::process::id().to_string();
    if Command::new("kill").args(["-KILL", &pid]).status().is_ok() {
        std::thread::sleep(std::time::Duration::from_secs(30));
    }
    // No `kill` program here: SIGABRT runs no destructor either.
    std::process::abort();
}

fn run_child(test: &str, env: (&str, &Path), umask: Option<&str>) -> std::process::ExitStatus {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match umask {
        Some(mask) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(format!("umask {mask} && exec \"$0\" \"$@\"")).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"]).env(env.0, env.1).status().unwrap()
}

#[cfg(unix)]
#[test]
fn a_killed_run_leaves_nothing_at_the_target_and_the_next_run_cleans_up() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("out");
    let status = run_child("output::child_that_kills_itself_mid_write", ("KAPPROX_IO_KILL_TARGET", &target), None);
    assert!(matches!(status.signal(), Some(9 | 6)), "{status:?}");
    assert!(!target.exists(), "a killed run left something at the final path");
    let left = names(tmp.path());
    assert!(left.len() == 1 && left[0].starts_with(".out.kapprox-") && left[0].ends_with(".tmp"), "{left:?}");
    write_tagged(&target, "rerun", 4, &OutputOptions::new()).unwrap();
    assert_eq!(whole_tag(&target, 4), "rerun");
    assert_eq!(names(tmp.path()), ["out"], "the dead run's staging area was not removed");
}

/// The child half of the umask test: writes a directory output and a file
/// output under the umask its parent set.
#[test]
fn child_that_writes_under_a_umask() {
    let Some(dir) = std::env::var_os("KAPPROX_IO_UMASK_DIR") else { return };
    let dir = PathBuf::from(dir);
    write_tagged(&dir.join("out"), "u", 1, &OutputOptions::new()).unwrap();
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(vec![arrow::datatypes::Field::new(
        "a",
        arrow::datatypes::DataType::Float64,
        false,
    )]));
    let mut w = kapprox_io::AtomicParquetWriter::create(dir.join("file.parquet"), schema.clone()).unwrap();
    let column = std::sync::Arc::new(arrow::array::Float64Array::from(vec![1.0]));
    w.write(&arrow::array::RecordBatch::try_new(schema, vec![column]).unwrap()).unwrap();
    w.finish().unwrap();
}

#[cfg(unix)]
#[test]
fn outputs_get_the_users_umask() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for (mask, dir_mode, file_mode) in [("027", 0o750, 0o640), ("002", 0o775, 0o664)] {
        let tmp = tempfile::tempdir().unwrap();
        let status =
            run_child("output::child_that_writes_under_a_umask", ("KAPPROX_IO_UMASK_DIR", tmp.path()), Some(mask));
        assert!(status.success(), "{status:?}");
        let out = tmp.path().join("out");
        assert_eq!(mode(&out), dir_mode, "umask {mask}: directory");
        assert_eq!(mode(&out.join("part-00000")), file_mode, "umask {mask}: file in a directory output");
        assert_eq!(
            mode(&tmp.path().join("file.parquet")),
            file_mode,
            "umask {mask}: file output (not tempfile's 0600)"
        );
    }
}
