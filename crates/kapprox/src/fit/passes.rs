//! The passes of `fit` and their mergeable states.
//!
//! Each pass runs over a subset of shards (all of them in one process; a
//! slice per worker in a distributed fit) and returns a state that merges
//! with the states of the other shards' passes. The result of a pass is
//! the merge of all states in shard order; later passes only need that.
//!
//! - **prepare**: column statistics (when the footers hold none) and a
//!   reservoir sample of rows (the bandwidth rule, Nyström's landmarks);
//! - **sketch** (multi-pass TEFM): `Fᵀ(FΩ)` per bandwidth candidate for the
//!   test matrix `Ω`, then one `Fᵀ(FQ)` per power iteration;
//! - **fit**: per candidate and per split part, the ridge statistics (for
//!   one-pass TEFM, of the base map: its basis follows from them, see
//!   `tefm_gram`). Selection needs nothing else (no row is kept,
//!   classification included; see `select`).

use super::FitConfig;
use super::acc::Acc;
use super::config::Precision;
use super::nystrom_gram::KernelGram;
use crate::observer::Observer;
use crate::pipeline::{ChunkStore, Features, Pass, PassReport};
use anyhow::Result;
use kapprox_features::FeatureMap;
use kapprox_io::{CategoryCounts, ColumnStats, Dataset, ReadOptions, Scaler};
use kapprox_sketch::{ProductAccumulator, Reservoir, SketchKind, range_finder_start};
use ndarray::{Array2, s};

/// The reading options of every pass.
pub fn read_options(cfg: &FitConfig, features: &[String], label: &str, shards: &[usize]) -> ReadOptions {
    ReadOptions::new(features.to_vec())
        .with_label(Some(label.to_string()))
        .with_chunk_rows(cfg.read.chunk_rows)
        .with_nan_policy(cfg.read.nan)
        .with_shards(shards.iter().copied())
        // `--threads` bounds the decode threads too (the default pool has
        // one thread per core, the reader's default).
        .with_threads(rayon::current_num_threads())
}

/// State of the prepare pass.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PrepareState {
    /// Column statistics, when the footers hold none.
    pub stats: Option<ColumnStats>,
    /// Value counts of the categorical columns (empty when there is none).
    #[serde(default)]
    pub counts: Vec<CategoryCounts>,
    /// Unscaled sampled rows, when a sample is needed: the numeric values
    /// (missing ones as NaN under `--nan impute`), then one
    /// [`kapprox_io::value_code`] per categorical column.
    pub sample: Option<Reservoir>,
    /// What the pass read.
    pub rows: u64,
}

impl PrepareState {
    /// Merges another shard subset's state.
    pub fn merge(&mut self, other: &PrepareState) -> Result<()> {
        if let (Some(a), Some(b)) = (self.stats.as_mut(), other.stats.as_ref()) {
            a.merge(b);
        }
        if self.counts.len() != other.counts.len() {
            anyhow::bail!(
                "states counting {} and {} categorical columns cannot be merged",
                self.counts.len(),
                other.counts.len()
            );
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            a.merge(b)?;
        }
        if let (Some(a), Some(b)) = (self.sample.as_mut(), other.sample.as_ref()) {
            a.merge(b)?;
        }
        self.rows += other.rows;
        Ok(())
    }
}

/// Runs the prepare pass over `shards`: statistics of `read.columns` (if
/// `need_stats`), counts of `read.categorical`, and a sample of
/// `sample_rows` rows.
pub fn prepare_pass(
    ds: &Dataset,
    read: ReadOptions,
    need_stats: bool,
    sample_rows: usize,
    seed: u64,
    observer: &dyn Observer,
    store: Option<&ChunkStore>,
) -> Result<(PrepareState, PassReport)> {
    let (d, n_cat) = (read.columns.len(), read.categorical.len());
    let mut stats = need_stats.then(|| BlockedStats::new(ColumnStats::new(read.columns.clone())));
    let mut counts: Vec<CategoryCounts> = read.categorical.iter().map(CategoryCounts::new).collect();
    let mut sample = (sample_rows > 0).then(|| Reservoir::new(sample_rows, d + n_cat, seed));
    // The sample needs each row's categories: read them as kept columns.
    let read = if sample.is_some() && n_cat > 0 { read.clone().with_keep(read.categorical.clone()) } else { read };
    let label = if need_stats { "statistics" } else { "sample" };
    let identity = Scaler::None;
    let report = Pass { dataset: ds, read, scaler: &identity, maps: vec![], label, observer, store }.run_chunks(
        &mut |chunk| {
            if let Some(s) = stats.as_mut() {
                s.update(chunk.shard, ds.shards()[chunk.shard].first_row, &chunk.row_ids, chunk.x.view());
            }
            for (a, b) in counts.iter_mut().zip(&chunk.category_counts) {
                a.merge(b)?;
            }
            if let Some(r) = sample.as_mut() {
                let ids = chunk.row_ids.to_vec();
                if n_cat == 0 {
                    r.update_ids(chunk.x.view(), &ids)?;
                } else {
                    let mut rows = Array2::zeros((chunk.n_rows(), d + n_cat));
                    rows.slice_mut(ndarray::s![.., ..d]).assign(&chunk.x);
                    for (c, values) in chunk.keep.iter().enumerate() {
                        let codes = kapprox_io::value_codes(values)?;
                        rows.column_mut(d + c).assign(&ndarray::ArrayView1::from(&codes));
                    }
                    r.update_ids(rows.view(), &ids)?;
                }
            }
            Ok(())
        },
    )?;
    let stats = stats.map(BlockedStats::finish);
    Ok((PrepareState { stats, counts, sample, rows: report.rows }, report))
}

/// Rows per block of [`BlockedStats`].
const STATS_BLOCK_ROWS: u64 = 1024;

/// Column statistics fed in fixed blocks of each shard's rows (rows
/// `k·STATS_BLOCK_ROWS ..` of the shard, minus skipped ones), whatever the
/// chunks they arrive in: [`ColumnStats::update`] rounds per block, so
/// blocks that followed the chunks would make the statistics, and so the
/// model, depend on `--chunk-rows`.
struct BlockedStats {
    stats: ColumnStats,
    block: Option<(usize, u64)>,
    rows: Vec<f64>,
}

impl BlockedStats {
    fn new(stats: ColumnStats) -> Self {
        BlockedStats { stats, block: None, rows: Vec::new() }
    }

    /// Adds rows `x` with global ids `ids` of shard `shard` (whose first
    /// row has id `first_row`).
    fn update(&mut self, shard: usize, first_row: u64, ids: &kapprox_io::RowIds, x: ndarray::ArrayView2<'_, f64>) {
        for (i, id) in ids.iter().enumerate() {
            let block = Some((shard, (id - first_row) / STATS_BLOCK_ROWS));
            if block != self.block {
                self.flush();
                self.block = block;
            }
            self.rows.extend(x.row(i).iter());
        }
    }

    fn flush(&mut self) {
        let d = self.stats.n_columns();
        if d > 0 && !self.rows.is_empty() {
            let view = ndarray::ArrayView2::from_shape((self.rows.len() / d, d), &self.rows).expect("whole rows");
            self.stats.update(view);
        }
        self.rows.clear();
    }

    fn finish(mut self) -> ColumnStats {
        self.flush();
        self.stats
    }
}

/// What a sketch pass multiplies by.
#[derive(Clone, Debug)]
pub enum SketchInput {
    /// The first pass: `Fᵀ(FΩ)` for the start `Ω (d, l)` of the range
    /// finder of this kind and power ([`kapprox_sketch::range_finder_start`]),
    /// the start one-pass TEFM computes as `(FᵀF)Ω`.
    TestMatrix {
        /// Kind of `Ω`.
        kind: SketchKind,
        /// Columns of `Ω`, `l`.
        n_components: usize,
        /// Seed of `Ω`.
        seed: u64,
        /// Power iterations `q` of the range finder (the Gaussian kind
        /// starts from a sparse sign `Ω` when `q ≥ 1`).
        power_iterations: usize,
    },
    /// A power-iteration pass: `Fᵀ(FQ)` with the current `Q` of each candidate.
    Product(Vec<Array2<f64>>),
}

/// State of a sketch pass: per bandwidth candidate, the finished (flushed)
/// pass result `(d, l)` over the pass's rows. Merging adds them: the
/// sketches and products are linear in the rows.
#[derive(Clone, Debug, PartialEq)]
pub struct SketchState {
    /// Per candidate.
    pub accs: Vec<Array2<f64>>,
    /// Rows read.
    pub rows: u64,
}

impl SketchState {
    /// Merges another shard subset's state.
    pub fn merge(&mut self, other: &SketchState) -> Result<()> {
        if self.accs.len() != other.accs.len() {
            anyhow::bail!("sketch states of {} and {} candidates cannot be merged", self.accs.len(), other.accs.len());
        }
        for (a, b) in self.accs.iter_mut().zip(&other.accs) {
            if a.dim() != b.dim() {
                anyhow::bail!("sketch states of shapes {:?} and {:?} cannot be merged", a.dim(), b.dim());
            }
            *a += b;
        }
        self.rows += other.rows;
        Ok(())
    }
}

/// Runs a sketch pass over the rows of `read` with the candidates' base maps.
pub fn sketch_pass(
    ds: &Dataset,
    read: ReadOptions,
    scaler: &Scaler,
    maps: &[Box<dyn FeatureMap>],
    input: &SketchInput,
    label: &str,
    observer: &dyn Observer,
    store: Option<&ChunkStore>,
) -> Result<(SketchState, PassReport)> {
    let mut accs: Vec<ProductAccumulator> = match input {
        SketchInput::TestMatrix { kind, n_components, seed, power_iterations } => {
            // Every candidate's base map has the same d: one Ω serves all.
            let mut omega: Option<Array2<f64>> = None;
            let mut accs = Vec::with_capacity(maps.len());
            for m in maps {
                if omega.as_ref().is_none_or(|o| o.nrows() != m.n_output()) {
                    omega = Some(range_finder_start(*kind, m.n_output(), *n_components, *seed, *power_iterations)?);
                }
                accs.push(ProductAccumulator::new(omega.as_ref().expect("built above").view()));
            }
            accs
        }
        SketchInput::Product(qs) => qs.iter().map(|q| ProductAccumulator::new(q.view())).collect(),
    };
    let map_refs: Vec<&dyn FeatureMap> = maps.iter().map(|m| m.as_ref()).collect();
    let report = Pass { dataset: ds, read, scaler, maps: map_refs, label, observer, store }.run(&mut |_, m, z| {
        let Features::Dense(z) = z else { anyhow::bail!("TEFM needs a dense base map") };
        accs[m].update(z.view())?;
        Ok(())
    })?;
    let state = SketchState { accs: accs.into_iter().map(ProductAccumulator::finish).collect(), rows: report.rows };
    Ok((state, report))
}

/// State of the fit pass.
#[derive(Clone, Debug)]
pub struct FitState {
    /// Per candidate: one accumulator per split part.
    pub parts: Vec<Vec<Acc>>,
    /// Rows seen and skipped.
    pub rows: u64,
    /// Rows dropped under `--nan skip` (or for a missing label under `--nan impute`).
    pub skipped: u64,
    /// Missing values imputed (`--nan impute`).
    pub imputed: u64,
    /// Per categorical column: values read as "other".
    pub other: Vec<u64>,
}

impl FitState {
    /// Merges another shard subset's state (in shard order).
    pub fn merge(&mut self, other: &FitState) -> Result<()> {
        for (a, b) in self.parts.iter_mut().zip(&other.parts) {
            for (x, y) in a.iter_mut().zip(b) {
                x.merge(y);
            }
        }
        self.rows += other.rows;
        self.skipped += other.skipped;
        self.imputed += other.imputed;
        if self.other.len() < other.other.len() {
            self.other.resize(other.other.len(), 0);
        }
        for (a, b) in self.other.iter_mut().zip(&other.other) {
            *a += b;
        }
        Ok(())
    }

    /// Flushes every buffered accumulator (before reading or saving).
    pub fn flush(&mut self) {
        for c in &mut self.parts {
            for a in c {
                a.flush();
            }
        }
    }
}

/// Whether accumulating sparse rows with `nnz` stored entries beats the
/// dense GEMM over `l` columns. A sparse update scatters `nnz²/2` entries
/// (~1 ns each); the blocked GEMM does `l²/2` multiply-adds at ~0.01 ns
/// each on these machines, so sparse pays when `nnz ≲ l/10`. The choice
/// depends only on the map's shape, never on the chunking.
pub fn sparse_pays(nnz: usize, l: usize) -> bool {
    nnz * 16 <= l
}

/// Scatters sparse rows into a dense buffer of shape `(rows, l)`.
fn densify(sp: &kapprox_core::SparseRows, out: &mut Features) {
    let Features::Dense(d) = out else { unreachable!("dense buffer") };
    if d.dim() != (sp.n_rows(), sp.n_cols) {
        *d = Array2::zeros((sp.n_rows(), sp.n_cols));
    } else {
        d.fill(0.0);
    }
    for (r, mut row) in d.rows_mut().into_iter().enumerate() {
        for (&j, &v) in sp.indices.row(r).iter().zip(sp.values.row(r)) {
            row[j as usize] += v;
        }
    }
}

/// Runs the fit pass with the candidates' maps.
pub fn fit_pass(
    cfg: &FitConfig,
    ds: &Dataset,
    read: ReadOptions,
    scaler: &Scaler,
    maps: &[Box<dyn FeatureMap>],
    kernel_grams: &[Option<KernelGram>],
    observer: &dyn Observer,
    store: Option<&ChunkStore>,
) -> Result<(FitState, PassReport)> {
    let split = cfg.split;
    let n_parts = split.n_parts();
    // Nyström candidates whose statistics can be projected accumulate their
    // kernel columns instead (see `nystrom_gram`).
    let map_refs: Vec<&dyn FeatureMap> = maps
        .iter()
        .zip(kernel_grams)
        .map(|(m, g)| g.as_ref().map_or(m.as_ref(), |g| &g.columns as &dyn FeatureMap))
        .collect();
    let mut state = FitState {
        parts: map_refs.iter().map(|m| (0..n_parts).map(|_| Acc::new(cfg.task, m.n_output())).collect()).collect(),
        rows: 0,
        skipped: 0,
        imputed: 0,
        other: Vec::new(),
    };
    let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); n_parts];
    let mut ids: Vec<u64> = Vec::new();
    let mut split_of = (u64::MAX, usize::MAX);
    let seed = cfg.seed;
    let mut dense_buf: Option<Features> = None;
    let precision = cfg.precision;
    let mut z32 = Array2::<f32>::zeros((0, 0));
    let report = Pass { dataset: ds, read, scaler, maps: map_refs, label: "fit", observer, store }.run_tiled(
        &mut |chunk, tile, m, z| {
            let z = match z {
                Features::Sparse(sp) if !sparse_pays(sp.nnz_per_row(), sp.n_cols) => {
                    let buf = dense_buf.get_or_insert_with(|| Features::Dense(Array2::zeros((0, 0))));
                    densify(sp, buf);
                    &*buf
                }
                z => z,
            };
            let y = chunk.y.as_ref().expect("label column requested").slice(s![tile.clone()]);
            if split_of != (chunk.first_row, tile.start) {
                // The split of a tile is computed once and shared by every map.
                split_of = (chunk.first_row, tile.start);
                ids.clear();
                ids.extend(tile.clone().map(|i| chunk.row_id(i)));
                rows_of.iter_mut().for_each(Vec::clear);
                for (i, &id) in ids.iter().enumerate() {
                    rows_of[split.part_of(seed, id)].push(i);
                }
            }
            match (precision, z) {
                (Precision::F32, Features::Dense(zd)) => {
                    // Rounded once per tile and map, shared by the parts.
                    if z32.dim() != zd.dim() {
                        z32 = Array2::zeros(zd.dim());
                    }
                    z32.zip_mut_with(zd, |o, &v| *o = v as f32);
                    for (p, rows) in rows_of.iter().enumerate() {
                        state.parts[m][p].update_f32(z32.view(), y.view(), rows);
                    }
                }
                _ => {
                    for (p, rows) in rows_of.iter().enumerate() {
                        state.parts[m][p].update(z, y.view(), rows);
                    }
                }
            }
            Ok(())
        },
    )?;
    state.rows = report.rows;
    state.skipped = report.skipped;
    state.imputed = report.imputed;
    state.other = report.other.clone();
    state.flush();
    Ok((state, report))
}
