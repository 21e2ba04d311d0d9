//! The plan of a fit, and the passes driven by hand (in memory, or through
//! part and pass-result files) against the fit of one process.

use crate::util::{Fixture, rel_diff};
use kapprox::distributed::ShardSelection;
use kapprox::distributed::files::{part_doc, write_part, write_result};
use kapprox::distributed::part::{part_job, run_part};
use kapprox::distributed::reduce::reduce_files;
use kapprox::fit::FitJob;
use kapprox::io::read_columns;
use kapprox::{FitConfig, MethodParams, MethodSpec, Model, SigmaSpec, Silent, fit};
use std::path::PathBuf;

fn method(map: &str, l: usize, f: impl FnOnce(&mut MethodParams)) -> MethodSpec {
    let mut p = MethodParams { map: map.into(), n_components: l, ..MethodParams::default() };
    f(&mut p);
    p.check(1, None).unwrap()
}

fn config(data: PathBuf, method: MethodSpec, sigmas: Vec<SigmaSpec>) -> FitConfig {
    FitConfig { sigmas, ..FitConfig::new(data, method) }
}

/// Predictions of `model` on the rows of `data`, computed directly.
fn predictions(model: &Model, data: &std::path::Path) -> ndarray::Array1<f64> {
    let mut x = read_columns(data, &model.doc.feature_columns).unwrap();
    model.doc.scaler.apply_in_place(x.view_mut());
    model.scores(model.map.transform(x.view()).view()).column(0).to_owned()
}

#[test]
fn the_plan_follows_the_method_and_the_footers() {
    let f = Fixture::new();
    let plan = |m: MethodSpec, sigmas: Vec<SigmaSpec>| -> Vec<String> {
        FitJob::new(&config(f.data(), m, sigmas)).unwrap().plan().iter().map(|p| p.to_string()).collect()
    };
    let given = || vec![SigmaSpec::Value(1.5)];
    // The footers hold the statistics: a given bandwidth needs no prepare pass.
    assert_eq!(plan(method("rff", 32, |_| {}), given()), ["fit"]);
    assert_eq!(plan(method("rff", 32, |_| {}), vec![SigmaSpec::Auto(1.0)]), ["prepare", "fit"]);
    // Landmarks come from the prepare pass's sample.
    assert_eq!(plan(method("nystrom", 40, |_| {}), given()), ["prepare", "fit"]);
    let multi = |p: &mut MethodParams| {
        p.tefm_strategy = "multi-pass".into();
        p.power = 1;
    };
    assert_eq!(plan(method("tefm-g", 8, multi), given()), ["sketch 1", "sketch 2", "fit"]);
    assert_eq!(plan(method("tefm-g", 8, |p| p.tefm_strategy = "one-pass".into()), given()), ["fit"]);
    assert_eq!(
        plan(method("tefm-s", 8, |p| (p.base, p.tefm_strategy) = ("nystrom".into(), "multi-pass".into())), given()),
        ["prepare", "sketch 1", "sketch 2", "fit"]
    );
    // Exact kernel ridge holds all rows and is no plan of passes.
    let exact = config(f.data(), MethodSpec::exact(kapprox::KernelFamily::Gaussian), given());
    assert!(FitJob::new(&exact).err().unwrap().to_string().contains("fits in one process"));
    let (model, report) = fit(&exact, &Silent).unwrap();
    assert_eq!((report.method.as_str(), model.map.n_output()), ("exact", 600));
}

/// Every pass of a TEFM fit over two shard subsets, merged in shard order,
/// gives the model of one process up to the association of the sums at the
/// subset boundary; through part and pass-result files it gives bitwise
/// the model of the in-memory merge.
#[test]
fn passes_over_shard_subsets_merge_into_the_local_fit() {
    let f = Fixture::new();
    let m = method("tefm-g", 8, |p| {
        p.tefm_strategy = "multi-pass".into();
        p.power = 1;
    });
    let cfg = config(f.data(), m, vec![SigmaSpec::Auto(1.0), SigmaSpec::Auto(2.0)]);
    let subsets = [vec![0], vec![1, 2]];

    let (local, _) = fit(&cfg, &Silent).unwrap();

    let mut job = FitJob::new(&cfg).unwrap();
    let (merged, _) = loop {
        let mut states = subsets.iter().map(|s| job.run_pass(s, &Silent).unwrap());
        let mut state = states.next().unwrap();
        for other in states {
            state.merge(&other).unwrap();
        }
        if let Some(done) = job.advance(state).unwrap() {
            break done;
        }
    };
    assert_eq!(job.plan().len(), 4);

    let mut after: Option<PathBuf> = None;
    let mut pass = 0;
    let (files, _) = loop {
        let mut parts = Vec::new();
        for (i, s) in subsets.iter().enumerate() {
            let (mut job, after_doc) = part_job(&cfg, after.as_deref()).unwrap();
            let (doc, state) = run_part(&mut job, after_doc, &ShardSelection::List(s.clone()), &Silent).unwrap();
            let path = f.path(&format!("pass{pass}-part{i}.kpart"));
            write_part(&path, doc, state).unwrap();
            parts.push(path);
        }
        let (job, reduction) = reduce_files(&parts, after.as_deref()).unwrap();
        if let Some(done) = reduction.result {
            break done;
        }
        let result = f.path(&format!("pass{pass}.kresult"));
        write_result(&result, &job, Vec::new()).unwrap();
        after = Some(result);
        pass += 1;
    };
    assert_eq!(files.coef, merged.coef, "files and memory merge the same states in the same order");
    assert_eq!(files.intercept, merged.intercept);
    assert_eq!(files.doc, merged.doc);

    let (a, b) = (predictions(&local, &f.data()), predictions(&merged, &f.data()));
    assert!(rel_diff(a.view(), b.view()) < 1e-9, "{}", rel_diff(a.view(), b.view()));
    // The part document names its pass and shards.
    let (mut job, after_doc) = part_job(&cfg, None).unwrap();
    let doc = part_doc(&job, after_doc, None, &[0], 200, 0.0);
    assert_eq!((doc.pass.name.as_str(), doc.row_ranges.as_slice()), ("prepare", &[[0u64, 200]][..]));
    assert!(job.run_pass(&[0], &Silent).is_ok());
}
