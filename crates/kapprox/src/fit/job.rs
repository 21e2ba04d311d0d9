//! A fit as an explicit sequence of passes with mergeable states between
//! them: the one code path behind a local fit, partial-statistics files,
//! local worker processes and MPI.
//!
//! A [`FitJob`] holds the validated configuration, what the dataset's
//! footers say ([`JobBase`]), the plan of passes and the [`Progress`] made
//! so far. Driving it is a loop:
//!
//! 1. [`FitJob::run_pass`] runs the next pass over some shards and returns
//!    its [`PassState`] (a local fit passes all shards; a worker its own);
//! 2. the states of all shards are merged in shard order
//!    ([`PassState::merge`]);
//! 3. [`FitJob::advance`] turns the merged state into the progress the next
//!    pass needs (scaler, bandwidths, landmarks, TEFM bases, the fit pass's
//!    maps), or, after the fit pass, selects σ and α and returns the model.
//!
//! Every step is deterministic, and everything a later pass needs lives in
//! [`Progress`], which `crate::distributed` serialises into pass-result
//! files, so the passes can run in other processes or on other machines.

use super::nystrom_gram::{KernelGram, accumulated_width, kernel_gram};
use super::passes::{
    FitState, PrepareState, SketchInput, SketchState, fit_pass, prepare_pass, read_options, sketch_pass,
};
use super::plan::{JobBase, PassKind, plan, sample_rows};
use super::prepare::{Prepared, finish_prepare};
use super::select::select;
use super::{FitConfig, FitReport, GridExtension, Timings, check_memory, estimate_memory, sketch_kind};
use crate::method::MethodSpec;
use crate::model::{MODEL_FORMAT, MODEL_VERSION, Model, ModelDoc, Task};
use crate::observer::Observer;
use crate::pipeline::{CHUNK_STORE_BYTES, ChunkStore};
use anyhow::{Result, bail};
use kapprox_features::FeatureMap;
use kapprox_io::{ColumnStats, Dataset, NanPolicy, ReadOptions};
use kapprox_sketch::PowerIteration;
use ndarray::Array2;
use std::time::Instant;

/// The state of one pass over some shards; states of disjoint shard sets
/// merge into the state of their union.
// One state per pass, moved a handful of times: boxing the larger
// prepare state would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum PassState {
    /// See [`PrepareState`].
    Prepare(PrepareState),
    /// See [`SketchState`].
    Sketch(SketchState),
    /// See [`FitState`].
    Fit(FitState),
}

impl PassState {
    /// Short name: `prepare`, `sketch` or `fit`.
    pub fn name(&self) -> &'static str {
        match self {
            PassState::Prepare(_) => "prepare",
            PassState::Sketch(_) => "sketch",
            PassState::Fit(_) => "fit",
        }
    }

    /// Rows the pass read.
    pub fn rows(&self) -> u64 {
        match self {
            PassState::Prepare(s) => s.rows,
            PassState::Sketch(s) => s.rows,
            PassState::Fit(s) => s.rows,
        }
    }

    /// Adds the state of the shards after this one's (merge in shard order:
    /// the result is then a deterministic function of the partition).
    pub fn merge(&mut self, other: &PassState) -> Result<()> {
        match (self, other) {
            (PassState::Prepare(a), PassState::Prepare(b)) => a.merge(b),
            (PassState::Sketch(a), PassState::Sketch(b)) => a.merge(b),
            (PassState::Fit(a), PassState::Fit(b)) => a.merge(b),
            (a, b) => bail!("cannot merge the state of a {} pass with that of a {} pass", a.name(), b.name()),
        }
    }
}

/// What the passes so far established: all a later pass needs.
#[derive(Debug, Default)]
pub struct Progress {
    /// Passes completed.
    pub done: usize,
    /// Scaler, bandwidths and landmarks (after the prepare pass, or from the
    /// footers when there is none).
    pub prepared: Option<Prepared>,
    /// Multi-pass TEFM: the current basis `Q (d, l)` per candidate.
    pub qs: Option<Vec<Array2<f64>>>,
    /// The fit pass's map per candidate (built once, then shipped, so every
    /// process accumulates with bitwise the same map).
    pub maps: Option<Vec<Box<dyn FeatureMap>>>,
}

/// The bytes of decoded rows a job keeps from one pass for the next:
/// [`CHUNK_STORE_BYTES`], and at most a quarter of `--max-memory`.
fn store_budget(cfg: &FitConfig) -> usize {
    let limit = cfg.max_memory.map_or(usize::MAX, |m| usize::try_from(m / 4).unwrap_or(usize::MAX));
    CHUNK_STORE_BYTES.min(limit)
}

/// A fit in progress; see the module docs.
pub struct FitJob {
    cfg: FitConfig,
    base: JobBase,
    plan: Vec<PassKind>,
    progress: Progress,
    dataset: Option<Dataset>,
    /// Per candidate, how its Nyström statistics are projected (see
    /// `nystrom_gram`): made from the maps once per process, used by the
    /// fit pass and by selection.
    kernel_grams: Option<Vec<Option<KernelGram>>>,
    /// Decoded rows kept from one pass for the next (see
    /// `pipeline::ChunkStore`).
    store: ChunkStore,
    stat_bytes: u64,
    timings: Timings,
    started: Instant,
}

impl FitJob {
    /// Plans a fit of `cfg`: reads the footers, decides the passes, and
    /// prepares the first one.
    ///
    /// # Errors
    /// Exact kernel ridge (which [`super::fit`] runs without a job), an
    /// invalid split, unreadable footers, a missing label column, or
    /// statistics beyond the memory limit.
    pub fn new(cfg: &FitConfig) -> Result<FitJob> {
        let started = Instant::now();
        if cfg.method.is_exact() {
            bail!("--map exact fits in one process; --part, --shards, --after, --workers, --plan and MPI do not apply");
        }
        cfg.split.check()?;
        let (base, ds) = JobBase::open(cfg)?;
        let mut job = FitJob::resume(cfg.clone(), base, Progress::default())?;
        job.dataset = Some(ds);
        job.started = started;
        job.timings.prepare += started.elapsed().as_secs_f64();
        Ok(job)
    }

    /// A job that continues from `progress` (read from a pass-result file
    /// or received from another process); opens the dataset only when a
    /// pass runs.
    pub fn resume(cfg: FitConfig, base: JobBase, progress: Progress) -> Result<FitJob> {
        cfg.split.check()?;
        let plan = plan(&cfg, &base);
        if progress.done >= plan.len() {
            bail!("all {} passes of this fit are done; nothing is left to run", plan.len());
        }
        let budget = store_budget(&cfg);
        let mut job = FitJob {
            cfg,
            base,
            plan,
            progress,
            dataset: None,
            kernel_grams: None,
            store: ChunkStore::new(budget),
            stat_bytes: 0,
            timings: Timings::default(),
            started: Instant::now(),
        };
        job.enter()?;
        Ok(job)
    }

    /// The configuration.
    pub fn config(&self) -> &FitConfig {
        &self.cfg
    }

    /// The footers' facts.
    pub fn base(&self) -> &JobBase {
        &self.base
    }

    /// The passes, in order.
    pub fn plan(&self) -> &[PassKind] {
        &self.plan
    }

    /// What is established so far.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Replaces the progress (a process that receives the reduced result
    /// of a pass from another) and prepares the next pass.
    pub fn set_progress(&mut self, progress: Progress) -> Result<()> {
        self.progress = progress;
        self.kernel_grams = None;
        self.enter()
    }

    /// Index of the next pass.
    pub fn pass_index(&self) -> usize {
        self.progress.done
    }

    /// The next pass.
    pub fn next_pass(&self) -> PassKind {
        self.plan[self.progress.done]
    }

    /// Number of shards.
    pub fn n_shards(&self) -> usize {
        self.base.shards.len()
    }

    /// Bytes of statistics the fit pass holds (known once the fit pass is next).
    pub fn statistics_bytes(&self) -> u64 {
        self.stat_bytes
    }

    /// Adds `seconds` to the stage of `kind` (a coordinator's wall time
    /// while workers run a pass).
    pub fn add_pass_seconds(&mut self, kind: PassKind, seconds: f64) {
        match kind {
            PassKind::Prepare => self.timings.prepare += seconds,
            PassKind::Sketch { .. } => self.timings.sketch += seconds,
            PassKind::Fit => self.timings.pass += seconds,
        }
    }

    fn n_input(&self) -> usize {
        self.prepared().features.len()
    }

    fn prepared(&self) -> &Prepared {
        self.progress.prepared.as_ref().expect("prepared before any pass that needs it")
    }

    fn dataset(&mut self) -> Result<&Dataset> {
        if self.dataset.is_none() {
            let ds = Dataset::open(&self.cfg.train)?;
            self.base.check_dataset(&ds)?;
            self.dataset = Some(ds);
        }
        Ok(self.dataset.as_ref().expect("just opened"))
    }

    /// The reading options of the next pass: the prepare pass counts the
    /// categorical values and, under `--nan impute`, keeps missing values
    /// (left out of the statistics); later passes encode the categories and
    /// impute with what it learned.
    fn read(&self, shards: &[usize]) -> ReadOptions {
        let read = read_options(&self.cfg, &self.base.features, &self.base.label, shards);
        match (self.next_pass(), self.progress.prepared.as_ref()) {
            (PassKind::Prepare, _) => {
                let nan = match self.cfg.read.nan {
                    NanPolicy::Impute => NanPolicy::Keep,
                    policy => policy,
                };
                read.with_categorical(self.base.categorical.clone()).with_nan_policy(nan)
            }
            (_, Some(prepared)) => prepared.inputs.encode(read),
            (_, None) => read,
        }
    }

    /// Makes what the next pass needs from what is established: the scaler
    /// from stored statistics when there is no prepare pass, and the fit
    /// pass's maps (checked against `--max-memory`).
    fn enter(&mut self) -> Result<()> {
        let next = self.next_pass();
        if next != PassKind::Prepare && self.progress.prepared.is_none() {
            let stats = self.base.stored_stats.clone().expect("a prepare pass computes missing statistics");
            self.progress.prepared = Some(finish_prepare(&self.cfg, &self.base, &stats, &[], None)?);
        }
        if next == PassKind::Fit {
            let t = Instant::now();
            if self.progress.maps.is_none() {
                let (cfg, n_input) = (&self.cfg, self.n_input());
                let prepared = self.prepared();
                let qs = self.progress.qs.as_ref();
                let maps: Vec<Box<dyn FeatureMap>> = prepared
                    .sigmas
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| {
                        cfg.method.fit_pass_map(s, n_input, cfg.seed, prepared.landmarks.as_ref(), qs.map(|q| &q[i]))
                    })
                    .collect::<Result<_>>()?;
                self.progress.maps = Some(maps);
                self.kernel_grams = None;
            }
            let maps = self.progress.maps.as_ref().expect("built above");
            // Nyström accumulating kernel columns holds m, not r, columns.
            let l_acc = accumulated_width(&self.cfg, maps[0].as_ref());
            let k_guess = if self.cfg.task == Task::Regression { 1 } else { 2 };
            self.stat_bytes = estimate_memory(maps.len(), l_acc, k_guess, self.cfg.split.n_parts());
            check_memory(&self.cfg, self.stat_bytes, maps.len(), l_acc)?;
            self.timings.pass += t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// Runs the next pass over `shards` (ascending indices) and returns its
    /// state. Does not advance: merge the states of all shards, then call
    /// [`FitJob::advance`].
    pub fn run_pass(&mut self, shards: &[usize], observer: &dyn Observer) -> Result<PassState> {
        let t = Instant::now();
        let kind = self.next_pass();
        if kind == PassKind::Fit {
            self.make_kernel_grams()?;
            // The fit pass is the last: it replays, and keeps nothing.
            self.store.stop_keeping();
        }
        let read = self.read(shards);
        self.dataset()?;
        let ds = self.dataset.as_ref().expect("opened above");
        let cfg = &self.cfg;
        let store = Some(&self.store);
        let state = match kind {
            PassKind::Prepare => {
                let need_stats = self.base.stored_stats.is_none();
                let (st, _) = prepare_pass(ds, read, need_stats, sample_rows(cfg), cfg.seed, observer, store)?;
                PassState::Prepare(st)
            }
            PassKind::Sketch { index } => {
                let MethodSpec::Tefm { sketch, n_components, power, .. } = &cfg.method else {
                    unreachable!("sketch passes are planned for TEFM only")
                };
                let prepared = self.progress.prepared.as_ref().expect("prepared before the sketch passes");
                let bases: Vec<Box<dyn FeatureMap>> = prepared
                    .sigmas
                    .iter()
                    .map(|&s| cfg.method.tefm_base(s, prepared.features.len(), cfg.seed, prepared.landmarks.as_ref()))
                    .collect::<Result<_>>()?;
                let input = match (index, &self.progress.qs) {
                    (0, _) => SketchInput::TestMatrix {
                        kind: sketch_kind(*sketch),
                        n_components: *n_components,
                        seed: cfg.seed,
                        power_iterations: *power,
                    },
                    (_, Some(qs)) => SketchInput::Product(qs.clone()),
                    (_, None) => bail!("sketch pass {} needs the basis of the pass before it", index + 1),
                };
                let (st, _) =
                    sketch_pass(ds, read, &prepared.scaler, &bases, &input, &kind.to_string(), observer, store)?;
                PassState::Sketch(st)
            }
            PassKind::Fit => {
                let prepared = self.progress.prepared.as_ref().expect("prepared before the fit pass");
                let maps = self.progress.maps.as_ref().expect("maps built before the fit pass");
                let grams = self.kernel_grams.as_deref().expect("made above");
                let (st, _) = fit_pass(cfg, ds, read, &prepared.scaler, maps, grams, observer, store)?;
                PassState::Fit(st)
            }
        };
        self.add_pass_seconds(kind, t.elapsed().as_secs_f64());
        Ok(state)
    }

    /// Consumes the merged state of the next pass over all shards. Returns
    /// the model and report after the fit pass, `None` before.
    pub fn advance(&mut self, state: PassState) -> Result<Option<(Model, FitReport)>> {
        let t = Instant::now();
        let kind = self.next_pass();
        match (kind, state) {
            (PassKind::Prepare, PassState::Prepare(st)) => {
                let stats: ColumnStats = match (&self.base.stored_stats, st.stats) {
                    (Some(s), _) => s.clone(),
                    (None, Some(s)) => s,
                    (None, None) => bail!("the prepare pass state holds no column statistics"),
                };
                let prepared = finish_prepare(&self.cfg, &self.base, &stats, &st.counts, st.sample)?;
                self.progress.prepared = Some(prepared);
                self.timings.prepare += t.elapsed().as_secs_f64();
            }
            (PassKind::Sketch { .. }, PassState::Sketch(st)) => {
                let qs = st
                    .accs
                    .iter()
                    .map(|acc| {
                        // One orthonormalisation step of the range finder.
                        let mut it = PowerIteration::new(0);
                        it.advance(acc.view())?;
                        it.finish()
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                self.progress.qs = Some(qs);
                self.timings.sketch += t.elapsed().as_secs_f64();
            }
            (PassKind::Fit, PassState::Fit(st)) => return self.finish(st).map(Some),
            (kind, st) => bail!("the next pass is the {kind} pass, but a {} pass state was given", st.name()),
        }
        self.progress.done += 1;
        self.enter()?;
        Ok(None)
    }

    /// Makes [`FitJob::kernel_grams`] from the fit pass's maps, once.
    fn make_kernel_grams(&mut self) -> Result<()> {
        if self.kernel_grams.is_none() {
            let maps = self.progress.maps.as_ref().expect("maps built before the fit pass");
            let grams = maps.iter().map(|m| kernel_gram(&self.cfg, m.as_ref())).collect::<Result<_>>()?;
            self.kernel_grams = Some(grams);
        }
        Ok(())
    }

    /// Runs the remaining passes in this process, each over all shards.
    pub fn run_to_end(&mut self, observer: &dyn Observer) -> Result<(Model, FitReport)> {
        let all: Vec<usize> = (0..self.n_shards()).collect();
        loop {
            let state = self.run_pass(&all, observer)?;
            if let Some(done) = self.advance(state)? {
                return Ok(done);
            }
        }
    }

    fn finish(&mut self, state: FitState) -> Result<(Model, FitReport)> {
        let t = Instant::now();
        // No pass follows: selection gets the memory.
        self.store.clear();
        let (rows, skipped, imputed) = (state.rows, state.skipped, state.imputed);
        let other = state.other.clone();
        self.make_kernel_grams()?;
        let grams = self.kernel_grams.take().expect("made above");
        let maps = self.progress.maps.take().expect("maps built before the fit pass");
        let prepared = self.progress.prepared.take().expect("prepared before the fit pass");
        let sel = select(&self.cfg, &self.cfg.method, &prepared.sigmas, state, maps, grams)?;
        self.timings.solve += t.elapsed().as_secs_f64();
        self.progress.done += 1;
        let cfg = &self.cfg;
        let mut seconds = self.timings.clone();
        seconds.total = self.started.elapsed().as_secs_f64();
        let report = FitReport {
            method: cfg.method.name().to_string(),
            rows,
            skipped,
            imputed,
            other: prepared.inputs.vocabularies.iter().map(|v| v.column.clone()).zip(other).collect(),
            validation_rows: sel.held_out_rows,
            passes: self.plan.len() as u64,
            median_distance: prepared.median,
            sigma: prepared.sigmas[sel.best],
            alpha: sel.alpha,
            n_features: sel.map.n_output(),
            candidates: sel.candidates,
            statistics_bytes: self.stat_bytes,
            extended: cfg.extend_grid.then(|| GridExtension { alphas_added: sel.alphas_added, ..Default::default() }),
            seconds,
        };
        let doc = ModelDoc {
            format: MODEL_FORMAT.into(),
            version: MODEL_VERSION,
            task: cfg.task,
            feature_columns: prepared.features,
            inputs: Some(prepared.inputs),
            label_column: Some(prepared.label),
            scaler: prepared.scaler,
            map: sel.map.spec(),
            classes: sel.classes,
            alpha: sel.alpha,
            training: report.training_record()?,
            kapprox_version: env!("CARGO_PKG_VERSION").into(),
        };
        Ok((Model { doc, map: sel.map, coef: sel.model.coef, intercept: sel.model.intercept }, report))
    }
}
