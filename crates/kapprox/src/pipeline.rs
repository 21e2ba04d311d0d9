//! One pass over the data: read -> scale -> featurize -> sink.
//!
//! The reader (kapprox-io) decodes row groups on its own threads and hands
//! over chunks in global row order through a bounded channel, so reading
//! overlaps with compute. Each chunk is scaled, then transformed by every
//! feature map of the pass in parallel over row blocks (rayon), and the
//! sink sees the chunk and its features in row order. Sinks accumulate
//! mergeable statistics whose summation order is fixed by the global row
//! order (see `kapprox_core::moments`), so the result of a pass does not
//! depend on the chunk size, the shard layout or the thread count.
//!
//! Peak memory of a pass: the reader's in-flight chunks
//! (`prefetch × chunk_rows × d` doubles) + one feature buffer (`chunk_rows
//! × l` doubles for [`Pass::run`], at most [`tile_rows`]`(l) × l` for
//! [`Pass::run_tiled`]) + whatever the sink accumulates + the decoded rows a
//! [`ChunkStore`] keeps for the next pass (at most its budget). Nothing
//! grows with the number of rows.
//!
//! A job of several passes over the same rows (`fit` with `--sigma auto` or
//! Nyström landmarks: a prepare pass, then the fit pass) hands its passes
//! a [`ChunkStore`]: a pass that reads keeps its decoded chunks while they
//! fit the budget, and the next pass with the same reading options replays
//! them instead of decoding the files again. The chunks are the same, so
//! the result is bitwise the same; data beyond the budget is read every
//! pass, as before.

use crate::observer::{Observer, PassProgress};
use anyhow::{Context, Result};
use kapprox_core::SparseRows;
use kapprox_features::{FeatureMap, OutputKind};
use kapprox_io::{Chunk, Dataset, ReadOptions, Scaler};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, s};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Rows per parallel transform task. Small enough to balance two to a few
/// dozen threads on an 8192-row chunk, large enough that each task runs one
/// efficient GEMM.
const TRANSFORM_BLOCK_ROWS: usize = 256;

/// Largest feature buffer of [`Pass::run_tiled`], in bytes. A chunk of
/// 8192 rows at `l = 1024` is 64 MiB of features: above glibc's largest
/// reuse threshold (32 MiB), so every pass mapped it afresh and paid a
/// page fault per 4 KiB written (13 % of an RFF fit's cycles at 30k rows),
/// and at `l = 8192` the buffer alone was 512 MiB. Tiles of a few MiB are
/// reused from the allocator and are still read back by the Gram update
/// from the cache.
const TILE_BYTES: usize = 8 << 20;

/// Rows per tile of [`Pass::run_tiled`] for maps of at most `l` outputs: as
/// many whole transform blocks as fit in `TILE_BYTES` (8 MiB), at least two.
pub fn tile_rows(l: usize) -> usize {
    (TILE_BYTES / (8 * l.max(1)) / TRANSFORM_BLOCK_ROWS).max(2) * TRANSFORM_BLOCK_ROWS
}

/// What [`Pass::run_tiled`] calls: `(chunk, rows of the tile, map, features)`.
pub type TileSink<'a> = dyn FnMut(&Chunk, Range<usize>, usize, &Features) -> Result<()> + 'a;

static PASSES: AtomicU64 = AtomicU64::new(0);

/// Number of full passes over a dataset made by this process so far.
pub fn passes_made() -> u64 {
    PASSES.load(Ordering::Relaxed)
}

/// The features of one chunk under one map.
#[derive(Debug)]
pub enum Features {
    /// Dense rows `(n, l)`.
    Dense(Array2<f64>),
    /// Fixed-nnz sparse rows.
    Sparse(SparseRows),
}

impl Features {
    fn empty_for(map: &dyn FeatureMap) -> Features {
        match map.output_kind() {
            OutputKind::Dense => Features::Dense(Array2::zeros((0, map.n_output()))),
            OutputKind::Sparse { nnz_per_row } => Features::Sparse(SparseRows::zeros(0, nnz_per_row, map.n_output())),
        }
    }

    /// Whether this buffer has `map`'s output kind and width.
    fn matches(&self, map: &dyn FeatureMap) -> bool {
        match (self, map.output_kind()) {
            (Features::Dense(z), OutputKind::Dense) => z.ncols() == map.n_output(),
            (Features::Sparse(z), OutputKind::Sparse { nnz_per_row }) => {
                z.n_cols == map.n_output() && z.nnz_per_row() == nnz_per_row
            }
            _ => false,
        }
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        match self {
            Features::Dense(z) => z.nrows(),
            Features::Sparse(z) => z.n_rows(),
        }
    }

    /// Resizes the buffer to `n` rows, reusing the allocation when it is
    /// large enough (chunks of a pass have the same size but the last).
    fn resize(&mut self, n: usize) {
        match self {
            Features::Dense(z) => {
                if z.nrows() != n {
                    // Keep the allocation: a pass's last, shorter chunk or
                    // tile would otherwise map (and fault in) a new buffer.
                    let cols = z.ncols();
                    let (mut values, _) = std::mem::replace(z, Array2::zeros((0, cols))).into_raw_vec_and_offset();
                    values.resize(n * cols, 0.0);
                    *z = Array2::from_shape_vec((n, cols), values).expect("n rows of cols values");
                }
            }
            Features::Sparse(z) => {
                if z.n_rows() != n {
                    *z = SparseRows::zeros(n, z.nnz_per_row(), z.n_cols);
                }
            }
        }
    }
}

/// Transforms `x` by `map` into `out`, in parallel over row blocks.
pub fn transform_parallel(map: &dyn FeatureMap, x: ArrayView2<'_, f64>, out: &mut Features) {
    out.resize(x.nrows());
    match out {
        Features::Dense(z) => {
            let zs: Vec<ArrayViewMut2<'_, f64>> = z.axis_chunks_iter_mut(Axis(0), TRANSFORM_BLOCK_ROWS).collect();
            let xs: Vec<ArrayView2<'_, f64>> = x.axis_chunks_iter(Axis(0), TRANSFORM_BLOCK_ROWS).collect();
            zs.into_par_iter().zip(xs).for_each(|(zb, xb)| map.transform_into(xb, zb));
        }
        Features::Sparse(z) => {
            let n_cols = z.n_cols;
            let is: Vec<_> = z.indices.axis_chunks_iter_mut(Axis(0), TRANSFORM_BLOCK_ROWS).collect();
            let vs: Vec<_> = z.values.axis_chunks_iter_mut(Axis(0), TRANSFORM_BLOCK_ROWS).collect();
            let xs: Vec<ArrayView2<'_, f64>> = x.axis_chunks_iter(Axis(0), TRANSFORM_BLOCK_ROWS).collect();
            is.into_par_iter().zip(vs).zip(xs).for_each(|((ib, vb), xb)| {
                map.transform_sparse_into(
                    xb,
                    kapprox_core::sparse::SparseRowsViewMut { n_cols, indices: ib, values: vb },
                )
            });
        }
    }
}

/// What a pass reads and how it transforms rows.
pub struct Pass<'a> {
    /// The dataset.
    pub dataset: &'a Dataset,
    /// Columns, label, chunking, shard subset, NaN policy.
    pub read: ReadOptions,
    /// Scaling applied to every chunk before the maps.
    pub scaler: &'a Scaler,
    /// Feature maps applied to every chunk (may be empty).
    pub maps: Vec<&'a dyn FeatureMap>,
    /// The pass's name, for progress reports.
    pub label: &'a str,
    /// Receives the pass's progress.
    pub observer: &'a dyn Observer,
    /// Where decoded chunks are kept for the next pass over the same rows,
    /// or replayed from.
    pub store: Option<&'a ChunkStore>,
}

/// Decoded chunks kept from one pass for the next with the same reading
/// options, up to a budget of bytes; see the module docs.
#[derive(Debug)]
pub struct ChunkStore {
    /// Bytes a pass may keep; 0 once no later pass would replay them.
    budget: AtomicUsize,
    kept: Mutex<Option<Kept>>,
}

/// A whole pass's chunks, unscaled, and what its reader counted.
#[derive(Debug)]
struct Kept {
    read: ReadOptions,
    chunks: Vec<Chunk>,
    source_rows: u64,
    skipped: u64,
    imputed: u64,
    other: Vec<u64>,
}

/// The default budget of a [`ChunkStore`]: 256 MiB, a million rows of
/// 32 columns (the shards are read again above it).
pub const CHUNK_STORE_BYTES: usize = 256 << 20;

impl ChunkStore {
    /// A store that keeps at most `budget` bytes of decoded rows.
    pub fn new(budget: usize) -> Self {
        ChunkStore { budget: AtomicUsize::new(budget), kept: Mutex::new(None) }
    }

    /// From now on passes only replay: the job's last pass keeps nothing.
    pub fn stop_keeping(&self) {
        self.budget.store(0, Ordering::Relaxed);
    }

    /// Drops the kept chunks and keeps no more (the job needs the memory
    /// for what follows its passes).
    pub fn clear(&self) {
        self.stop_keeping();
        *self.lock() = None;
    }

    /// Whether a pass with `read` would replay kept chunks.
    pub fn holds(&self, read: &ReadOptions) -> bool {
        self.lock().as_ref().is_some_and(|k| k.read == *read)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        // A poisoned lock only means a pass panicked; whatever it left is
        // either a complete `Kept` or nothing.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Bytes a kept chunk holds: its values, labels and row ids. Chunks with
/// kept Arrow columns or category counts are not kept (see
/// [`Pass::run_chunks`]).
fn chunk_bytes(chunk: &Chunk) -> usize {
    let ids = match &chunk.row_ids {
        kapprox_io::RowIds::Range(_) => 0,
        kapprox_io::RowIds::List(v) => v.len(),
    };
    8 * (chunk.x.len() + chunk.y.as_ref().map_or(0, |y| y.len()) + ids) + std::mem::size_of::<Chunk>()
}

/// What a pass saw.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PassReport {
    /// Rows delivered to the sink.
    pub rows: u64,
    /// Rows dropped under `--nan skip` (or for a missing label under `--nan impute`).
    pub skipped: u64,
    /// Missing values imputed under `--nan impute`.
    pub imputed: u64,
    /// Per categorical column read with a vocabulary: values sent to "other".
    pub other: Vec<u64>,
    /// Wall time of the pass in seconds.
    pub seconds: f64,
}

impl Pass<'_> {
    /// Runs the pass; `sink(chunk, m, z)` sees each scaled chunk and its
    /// features under map `m`, for every map in order, chunks in global
    /// row order. One feature buffer is reused for all maps of the same
    /// output shape, so memory does not grow with the number of maps.
    pub fn run(self, sink: &mut dyn FnMut(&Chunk, usize, &Features) -> Result<()>) -> Result<PassReport> {
        self.run_in_tiles(usize::MAX, &mut |chunk, _, m, z| sink(chunk, m, z))
    }

    /// [`Pass::run`] in tiles: `sink(chunk, rows, m, z)` sees the features
    /// `z` of the chunk rows `rows` under map `m`, tiles of at most
    /// [`tile_rows`] rows in row order, every map of a tile before the next
    /// tile. The features of a row do not depend on the tiling, so a sink
    /// that adds rows in order gets the result [`Pass::run`] gives, while the
    /// feature buffer holds a tile instead of a chunk.
    pub fn run_tiled(self, sink: &mut TileSink<'_>) -> Result<PassReport> {
        let tile = tile_rows(self.maps.iter().map(|m| m.n_output()).max().unwrap_or(1));
        self.run_in_tiles(tile, sink)
    }

    /// Both of the above: tiles of at most `tile` rows (a whole chunk for
    /// `usize::MAX`).
    fn run_in_tiles(self, tile: usize, sink: &mut TileSink<'_>) -> Result<PassReport> {
        let maps = self.maps.clone();
        let mut buf: Option<Features> = None;
        self.run_chunks(&mut |chunk| {
            let n = chunk.x.nrows();
            for start in (0..n).step_by(tile) {
                let rows = start..start.saturating_add(tile).min(n);
                let x = chunk.x.slice(s![rows.clone(), ..]);
                for (m, map) in maps.iter().enumerate() {
                    let fits = buf.as_ref().is_some_and(|b| b.matches(*map));
                    if !fits {
                        buf = Some(Features::empty_for(*map));
                    }
                    let z = buf.as_mut().expect("allocated above");
                    transform_parallel(*map, x, z);
                    sink(chunk, rows.clone(), m, z)?;
                }
            }
            Ok(())
        })
    }

    /// Runs the pass without feature maps: `sink` sees each scaled chunk.
    ///
    /// With a [`ChunkStore`], replays its chunks when they were read with
    /// the same options, and otherwise keeps what it reads there (replacing
    /// what it held) unless that exceeds the budget. Chunks that carry kept
    /// columns or category counts are never kept: the passes that read them
    /// (a prepare pass over categorical columns) differ from the next.
    pub fn run_chunks(self, sink: &mut dyn FnMut(&Chunk) -> Result<()>) -> Result<PassReport> {
        let start = Instant::now();
        if let Some(store) = self.store {
            let mut kept = store.lock();
            if let Some(k) = kept.as_ref().filter(|k| k.read == self.read) {
                return self.replay(k, start, sink);
            }
            *kept = None;
        }
        let mut reader = self.dataset.reader(self.read.clone())?;
        // Keep only what will fit, judged from the footers' row count before
        // any row is kept; the per-chunk test below is the bound itself.
        let budget = self.store.map_or(0, |s| s.budget.load(Ordering::Relaxed));
        let expected = (reader.n_source_rows() as usize)
            .saturating_mul(8 * (self.read.n_x_columns() + usize::from(self.read.label.is_some())));
        let mut keep: Option<(Vec<Chunk>, usize)> = (expected <= budget && budget > 0).then(|| (Vec::new(), 0));
        let progress = PassProgress::start(self.observer, self.label, reader.n_source_rows());
        let mut report = PassReport::default();
        // An unscaled chunk is kept by moving it after the sink; a scaled
        // one is copied before scaling.
        let unscaled = matches!(self.scaler, Scaler::None);
        for chunk in reader.by_ref() {
            let mut chunk = chunk?;
            let mut kept_copy = None;
            if let Some((_, bytes)) = keep.as_mut() {
                let size = chunk_bytes(&chunk);
                if chunk.keep.is_empty() && chunk.category_counts.is_empty() && *bytes + size <= budget {
                    *bytes += size;
                    kept_copy = Some((!unscaled).then(|| chunk.clone()));
                } else {
                    keep = None;
                }
            }
            self.scaler.apply_in_place(chunk.x.view_mut());
            sink(&chunk).with_context(|| format!("rows from {}", chunk.first_row))?;
            report.rows += chunk.x.nrows() as u64;
            progress.rows_done((chunk.x.nrows() + chunk.skipped) as u64);
            if let (Some((chunks, _)), Some(copy)) = (keep.as_mut(), kept_copy) {
                chunks.push(copy.unwrap_or(chunk));
            }
        }
        // The reader's count, not the sum over chunks: a chunk whose rows
        // were all skipped is never delivered, so only the reader saw it.
        report.skipped = reader.rows_skipped();
        report.imputed = reader.values_imputed();
        report.other = reader.categories_other().to_vec();
        drop(progress);
        if let (Some(store), Some((chunks, _))) = (self.store, keep) {
            *store.lock() = Some(Kept {
                read: self.read.clone(),
                chunks,
                source_rows: reader.n_source_rows(),
                skipped: report.skipped,
                imputed: report.imputed,
                other: report.other.clone(),
            });
        }
        PASSES.fetch_add(1, Ordering::Relaxed);
        report.seconds = start.elapsed().as_secs_f64();
        Ok(report)
    }

    /// The pass over kept chunks, in the order they were read; a scaler
    /// applies to a copy (the kept chunk stays as read).
    fn replay(&self, kept: &Kept, start: Instant, sink: &mut dyn FnMut(&Chunk) -> Result<()>) -> Result<PassReport> {
        let progress = PassProgress::start(self.observer, self.label, kept.source_rows);
        let mut report = PassReport::default();
        for chunk in &kept.chunks {
            let scaled;
            let chunk = if matches!(self.scaler, Scaler::None) {
                chunk
            } else {
                let mut copy = chunk.clone();
                self.scaler.apply_in_place(copy.x.view_mut());
                scaled = copy;
                &scaled
            };
            sink(chunk).with_context(|| format!("rows from {}", chunk.first_row))?;
            report.rows += chunk.x.nrows() as u64;
            progress.rows_done((chunk.x.nrows() + chunk.skipped) as u64);
        }
        report.skipped = kept.skipped;
        report.imputed = kept.imputed;
        report.other = kept.other.clone();
        drop(progress);
        PASSES.fetch_add(1, Ordering::Relaxed);
        report.seconds = start.elapsed().as_secs_f64();
        Ok(report)
    }
}
