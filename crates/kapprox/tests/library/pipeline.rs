//! Passes that keep their decoded chunks for the next pass over the same
//! rows, and what they replay.

use crate::util::Fixture;
use kapprox::Silent;
use kapprox::io::{Chunk, Dataset, ReadOptions, Scaler};
use kapprox::pipeline::{ChunkStore, Pass, PassReport};

fn read_options() -> ReadOptions {
    ReadOptions::new(["x1", "x2", "x3", "x4"]).with_label(Some("label".to_string())).with_chunk_rows(64)
}

/// Every chunk the pass delivers (scaled by `scaler`) and its report.
fn run(
    ds: &Dataset,
    read: ReadOptions,
    scaler: &Scaler,
    store: Option<&ChunkStore>,
) -> anyhow::Result<(Vec<Chunk>, PassReport)> {
    let mut seen = Vec::new();
    let pass = Pass { dataset: ds, read, scaler, maps: vec![], label: "test", observer: &Silent, store };
    let report = pass.run_chunks(&mut |c| {
        seen.push(c.clone());
        Ok(())
    })?;
    Ok((seen, report))
}

#[test]
fn a_pass_with_the_same_options_replays_the_kept_chunks() {
    let f = Fixture::new();
    let ds = Dataset::open(f.data()).unwrap();
    let store = ChunkStore::new(1 << 20);
    let (read_chunks, read_report) = run(&ds, read_options(), &Scaler::None, Some(&store)).unwrap();
    assert!(store.holds(&read_options()));
    assert_eq!(read_chunks.iter().map(|c| c.x.nrows()).sum::<usize>(), 600);
    // The replay cannot read the files: they are gone.
    std::fs::remove_dir_all(f.data()).unwrap();
    let (replayed, report) = run(&ds, read_options(), &Scaler::None, Some(&store)).unwrap();
    assert_eq!(replayed, read_chunks);
    assert_eq!(
        (report.rows, report.skipped, report.imputed),
        (read_report.rows, read_report.skipped, read_report.imputed)
    );
    // A scaler applies to the replayed copy, not to what is kept.
    let scaler = Scaler::Standard { mean: vec![0.5, -0.25, 1.0, 0.0], scale: vec![2.0, 0.5, 1.5, 3.0] };
    for _ in 0..2 {
        let (scaled, _) = run(&ds, read_options(), &scaler, Some(&store)).unwrap();
        for (s, r) in scaled.iter().zip(&read_chunks) {
            let mut want = r.x.clone();
            scaler.apply_in_place(want.view_mut());
            assert_eq!(s.x, want);
        }
    }
    // Other options read the files again, and drop what was kept.
    let other = read_options().with_chunk_rows(100);
    assert!(run(&ds, other.clone(), &Scaler::None, Some(&store)).is_err());
    assert!(!store.holds(&read_options()) && !store.holds(&other));
}

#[test]
fn chunks_beyond_the_budget_are_read_again() {
    let f = Fixture::new();
    let ds = Dataset::open(f.data()).unwrap();
    // Room for a few 64-row chunks of 5 values, not for 600 rows.
    let store = ChunkStore::new(8 * 5 * 200);
    let (chunks, _) = run(&ds, read_options(), &Scaler::None, Some(&store)).unwrap();
    assert_eq!(chunks.iter().map(|c| c.x.nrows()).sum::<usize>(), 600);
    assert!(!store.holds(&read_options()), "a pass over the budget keeps nothing");
    std::fs::remove_dir_all(f.data()).unwrap();
    assert!(run(&ds, read_options(), &Scaler::None, Some(&store)).is_err());
}

#[test]
fn a_fit_gives_the_same_model_with_and_without_kept_chunks() {
    use kapprox::{FitConfig, MethodParams, SigmaSpec, fit};
    let f = Fixture::new();
    for map in ["rff", "nystrom"] {
        let method = MethodParams { map: map.into(), n_components: 4, ..Default::default() }.check(1, None).unwrap();
        let cfg = FitConfig { sigmas: vec![SigmaSpec::Auto(1.0)], ..FitConfig::new(f.data(), method) };
        // 64 KiB of --max-memory holds the statistics (2 parts of
        // (4 + 1 + 1)² + 512 · 6 doubles, 49 KB) but leaves the store 16 KiB,
        // under the 24 KB of 600 rows of 5 values: every pass reads.
        let small = FitConfig { max_memory: Some(64 << 10), ..cfg.clone() };
        let (kept, report) = fit(&cfg, &Silent).unwrap();
        let (read, _) = fit(&small, &Silent).unwrap();
        assert_eq!(report.passes, 2, "{map}: a prepare pass, then the fit pass");
        assert_eq!(kept.coef, read.coef, "{map}");
        assert_eq!(kept.intercept, read.intercept, "{map}");
    }
}

#[test]
fn a_pass_that_scales_keeps_the_chunks_as_read() {
    let f = Fixture::new();
    let ds = Dataset::open(f.data()).unwrap();
    let (want, _) = run(&ds, read_options(), &Scaler::None, None).unwrap();
    let scaler = Scaler::Standard { mean: vec![0.5, -0.25, 1.0, 0.0], scale: vec![2.0, 0.5, 1.5, 3.0] };
    let store = ChunkStore::new(1 << 20);
    let (scaled, _) = run(&ds, read_options(), &scaler, Some(&store)).unwrap();
    assert_ne!(scaled, want);
    std::fs::remove_dir_all(f.data()).unwrap();
    let (replayed, _) = run(&ds, read_options(), &Scaler::None, Some(&store)).unwrap();
    assert_eq!(replayed, want);
}
