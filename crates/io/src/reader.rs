//! Streaming a dataset as chunks of rows, decoded in parallel, delivered in
//! order.
//!
//! # How it works
//!
//! Every selected row group is one job. A small pool of decode threads
//! (owned by the [`ChunkReader`], not rayon's, so that blocking on a full
//! channel never starves the caller's compute) takes jobs in row order. A
//! worker memory-maps nothing itself: the shard's map is opened once, wrapped
//! in `bytes::Bytes`, and every worker builds its own parquet reader over a
//! cheap clone of it, so no file handle (and no file position) is shared.
//!
//! A worker cuts its row group along the chunk grid of the shard (cells of
//! `chunk_rows` rows starting at the shard's first row), converts each piece
//! to a row-major `f64` block and sends it down a bounded channel of its
//! own. The consumer drains these channels in row-group order and glues the
//! pieces of a cell together (a copy only for the cells that straddle a
//! row-group boundary). Chunk boundaries therefore depend only on the shard
//! sizes and `chunk_rows`, never on the row-group layout or the number of
//! threads.
//!
//! # Memory bound
//!
//! With `d` requested columns (features plus label), `C = chunk_rows`,
//! `P = prefetch` and `T` decode threads (`T ≤ P`), peak memory is about
//!
//! ```text
//! (P + 2T + 2) · C · d · 8 bytes                   decoded blocks
//!   + T · (compressed size of one row group)       mapped file pages
//!   + T · d · (dictionary page + data page)        parquet decoder state
//! ```
//!
//! - Blocks: at most `P` decoded pieces wait in channels or blocked sends,
//!   plus per thread one piece under construction and one Arrow batch of
//!   `C` rows, plus the chunk being assembled and the one the caller holds.
//! - Mapped pages: each thread touches the pages of the row group it
//!   decodes. With `release_pages` (the default, Unix only) they are dropped
//!   from the process with `madvise(MADV_DONTNEED)` as soon as the row group
//!   is decoded, so resident memory does not grow with the shard size. The
//!   kernel's page cache may keep them; that memory is reclaimable and not
//!   charged to the process.
//! - Decoder state: at most 1 MiB per dictionary page and about 1 MiB per
//!   data page with default writer settings.
//!
//! No term depends on the number of rows of a shard or of the dataset
//! (files written by kapprox have row groups of at most 65536 rows). The
//! test `tests/memory.rs` checks this bound on a 1M-row shard: the peak
//! grows by ~48 MB with page release and by more than the file's 160 MB
//! without.

use crate::dataset::{Dataset, ShardMeta, map_file};
use crate::error::{BadValue, IoError, Result};
use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{self as adt, DataType};
use arrow::error::ArrowError;
use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use memmap2::Mmap;
use ndarray::{Array1, Array2, Axis, s};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::VecDeque;
use std::iter::FusedIterator;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Default rows per chunk.
pub const DEFAULT_CHUNK_ROWS: usize = 8192;
/// Default number of decoded pieces (of at most `chunk_rows` rows) allowed
/// in flight ahead of the consumer.
pub const DEFAULT_PREFETCH: usize = 4;
/// Default number of decode threads: 0 means `min(available cores, prefetch)`.
pub const DEFAULT_THREADS: usize = 0;
/// Default policy for NaN, ±Inf and null cells.
pub const DEFAULT_NAN_POLICY: NanPolicy = NanPolicy::Refuse;
/// Default for releasing mapped pages after each row group.
pub const DEFAULT_RELEASE_PAGES: bool = true;

/// What to do with a row that has a NaN, ±Inf or null in a requested column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NanPolicy {
    /// Fail with an error naming the file, row and column.
    #[default]
    Refuse,
    /// Drop the row and count it.
    Skip,
    /// Pass the value through (nulls become NaN). For reading back outputs
    /// such as predictions; never for training input.
    Keep,
}

/// Options of [`Dataset::reader`], built with `with_*` setters.
///
/// | Name | Default | Purpose |
/// |---|---|---|
/// | `columns` | (given to `new`) | feature columns, in the order of `x`'s columns |
/// | `label` | none | label column, read into `y` |
/// | `chunk_rows` | [`DEFAULT_CHUNK_ROWS`] | rows per chunk, ≥ 1 |
/// | `shards` | all | which shards to read (read in ascending order) |
/// | `nan_policy` | [`DEFAULT_NAN_POLICY`] | NaN/±Inf/null handling |
/// | `prefetch` | [`DEFAULT_PREFETCH`] | decoded pieces in flight, ≥ 1 |
/// | `threads` | [`DEFAULT_THREADS`] | decode threads (0 = auto), capped by `prefetch` |
/// | `release_pages` | [`DEFAULT_RELEASE_PAGES`] | drop mapped pages after each row group |
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Feature columns, in output order.
    pub columns: Vec<String>,
    /// Label column.
    pub label: Option<String>,
    /// Rows per chunk.
    pub chunk_rows: usize,
    /// Shard indices to read (`None`: all).
    pub shards: Option<Vec<usize>>,
    /// NaN/±Inf/null handling.
    pub nan_policy: NanPolicy,
    /// Decoded pieces in flight.
    pub prefetch: usize,
    /// Decode threads (0: automatic).
    pub threads: usize,
    /// Release mapped pages after each row group.
    pub release_pages: bool,
}

impl ReadOptions {
    /// Reads the given feature columns, with every other option at its
    /// default.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Self {
        ReadOptions {
            columns: columns.into_iter().map(Into::into).collect(),
            label: None,
            chunk_rows: DEFAULT_CHUNK_ROWS,
            shards: None,
            nan_policy: DEFAULT_NAN_POLICY,
            prefetch: DEFAULT_PREFETCH,
            threads: DEFAULT_THREADS,
            release_pages: DEFAULT_RELEASE_PAGES,
        }
    }

    /// Reads this column into [`Chunk::y`]. No label by default.
    pub fn with_label(mut self, label: Option<impl Into<String>>) -> Self {
        self.label = label.map(Into::into);
        self
    }

    /// Rows per chunk. Default [`DEFAULT_CHUNK_ROWS`].
    pub fn with_chunk_rows(mut self, chunk_rows: usize) -> Self {
        self.chunk_rows = chunk_rows;
        self
    }

    /// Reads only these shards (indices into [`Dataset::shards`]), e.g. a
    /// `Vec<usize>` or a range. They are read in ascending order, so chunks
    /// still come in global row order. All shards by default.
    pub fn with_shards(mut self, shards: impl IntoIterator<Item = usize>) -> Self {
        self.shards = Some(shards.into_iter().collect());
        self
    }

    /// NaN/±Inf/null handling. Default [`NanPolicy::Refuse`].
    pub fn with_nan_policy(mut self, policy: NanPolicy) -> Self {
        self.nan_policy = policy;
        self
    }

    /// Decoded pieces allowed in flight. Default [`DEFAULT_PREFETCH`].
    pub fn with_prefetch(mut self, prefetch: usize) -> Self {
        self.prefetch = prefetch;
        self
    }

    /// Decode threads; 0 picks `min(available cores, prefetch)`. Always
    /// capped by `prefetch`. Default [`DEFAULT_THREADS`].
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Whether to drop each row group's mapped pages once decoded. Enabled
    /// by default ([`DEFAULT_RELEASE_PAGES`]); has no effect off Unix.
    pub fn with_release_pages(mut self, release: bool) -> Self {
        self.release_pages = release;
        self
    }
}

/// Global row ids of the rows of a [`Chunk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowIds {
    /// Consecutive ids (no row was skipped).
    Range(Range<u64>),
    /// Explicit ids, increasing (some rows were skipped).
    List(Vec<u64>),
}

impl RowIds {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            RowIds::Range(r) => (r.end - r.start) as usize,
            RowIds::List(v) => v.len(),
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The id of row `i`.
    ///
    /// # Panics
    /// `i < self.len()`.
    #[track_caller]
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        match self {
            RowIds::Range(r) => {
                assert!(i < self.len(), "row {i} out of range for {} rows", self.len());
                r.start + i as u64
            }
            RowIds::List(v) => v[i],
        }
    }

    /// The ids in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let (range, list) = match self {
            RowIds::Range(r) => (r.clone(), &[][..]),
            RowIds::List(v) => (0..0, &v[..]),
        };
        RowIdIter { range, list: list.iter() }
    }

    /// The ids as a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        match self {
            RowIds::Range(r) => r.clone().collect(),
            RowIds::List(v) => v.clone(),
        }
    }

    /// The range, when the ids are consecutive.
    pub fn as_range(&self) -> Option<Range<u64>> {
        match self {
            RowIds::Range(r) => Some(r.clone()),
            RowIds::List(_) => None,
        }
    }
}

struct RowIdIter<'a> {
    range: Range<u64>,
    list: std::slice::Iter<'a, u64>,
}

impl Iterator for RowIdIter<'_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.range.next().or_else(|| self.list.next().copied())
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.range.end - self.range.start) as usize + self.list.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for RowIdIter<'_> {}

/// A block of consecutive rows of one shard.
///
/// A chunk covers one cell of its shard's chunk grid: source rows
/// `first_row .. first_row + n_rows + skipped` (global ids), where cells
/// start every `chunk_rows` rows from the shard's first row and the last
/// cell of a shard may be shorter. Rows dropped under [`NanPolicy::Skip`]
/// are missing from `x`, `y` and `row_ids`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Chunk {
    /// Index of the shard in [`Dataset::shards`].
    pub shard: usize,
    /// Global row id of the first source row of the cell (which may itself
    /// have been skipped).
    pub first_row: u64,
    /// Global ids of the rows of `x`.
    pub row_ids: RowIds,
    /// Features, row-major (standard layout), shape `(n_rows, n_features)`,
    /// columns in the order of [`ReadOptions::columns`].
    pub x: Array2<f64>,
    /// Label, length `n_rows`, if a label column was requested.
    pub y: Option<Array1<f64>>,
    /// Rows of the cell dropped under [`NanPolicy::Skip`].
    pub skipped: usize,
}

impl Chunk {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.x.nrows()
    }

    /// Global id of row `i`.
    ///
    /// # Panics
    /// `i < self.n_rows()`.
    #[track_caller]
    #[inline]
    pub fn row_id(&self, i: usize) -> u64 {
        self.row_ids.get(i)
    }

    /// Global ids of the source rows this chunk covers, skipped rows
    /// included.
    pub fn source_rows(&self) -> Range<u64> {
        self.first_row..self.first_row + (self.n_rows() + self.skipped) as u64
    }
}

/// What every job of one reader shares.
#[derive(Debug)]
struct Spec {
    columns: Vec<String>,
    label: Option<String>,
    chunk_rows: usize,
    nan_policy: NanPolicy,
    release_pages: bool,
}

/// A shard being read: its map and projection, shared by its jobs.
struct OpenShard {
    meta: Arc<ShardMeta>,
    bytes: Bytes,
    mmap: Arc<Mmap>,
    projection: ProjectionMask,
    spec: Arc<Spec>,
}

impl OpenShard {
    fn path(&self) -> PathBuf {
        self.meta.info.path.clone()
    }
}

struct Job {
    shard: Arc<OpenShard>,
    row_group: usize,
    tx: Sender<Result<Piece>>,
}

/// Part of one chunk cell decoded from one row group.
struct Piece {
    /// First source row, relative to the shard.
    start: u64,
    source_rows: usize,
    x: Array2<f64>,
    y: Option<Array1<f64>>,
    /// Global ids of the kept rows, when some were skipped.
    kept: Option<Vec<u64>>,
    skipped: usize,
}

/// A row group whose pieces the consumer is waiting for.
struct OpenRowGroup {
    rx: Receiver<Result<Piece>>,
    plan_pos: usize,
    row_group: usize,
    expected: u64,
    received: u64,
}

/// Iterator over the [`Chunk`]s of a dataset, in global row order.
///
/// Created by [`Dataset::reader`]. Dropping it stops and joins its decode
/// threads. After an error the iterator ends.
pub struct ChunkReader {
    spec: Arc<Spec>,
    metas: Vec<Arc<ShardMeta>>,
    /// Shard indices to read, ascending.
    plan: Vec<usize>,
    /// Next row group to dispatch: (position in plan, row group).
    next_job: (usize, usize),
    dispatching: Option<Arc<OpenShard>>,
    open: VecDeque<OpenRowGroup>,
    channel_capacity: usize,
    max_open: usize,
    jobs: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    cell: Vec<Piece>,
    cell_rows: u64,
    skipped: u64,
    n_source_rows: u64,
    done: bool,
}

impl std::fmt::Debug for ChunkReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkReader")
            .field("spec", &self.spec)
            .field("plan", &self.plan)
            .field("threads", &self.workers.len())
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl ChunkReader {
    pub(crate) fn new(ds: &Dataset, opts: ReadOptions) -> Result<ChunkReader> {
        if opts.chunk_rows == 0 {
            return Err(IoError::InvalidOption {
                option: "chunk_rows",
                value: "0".into(),
                expected: "a positive number of rows",
            });
        }
        if opts.prefetch == 0 {
            return Err(IoError::InvalidOption {
                option: "prefetch",
                value: "0".into(),
                expected: "a positive number of chunks",
            });
        }
        let schema = ds.schema();
        let first_path = &ds.shards()[0].path;
        for c in opts.columns.iter().chain(opts.label.iter()) {
            let field = schema.field_with_name(c).map_err(|_| ds.not_found(c))?;
            if !is_numeric(field.data_type()) {
                return Err(IoError::NotNumeric {
                    path: first_path.clone(),
                    column: c.clone(),
                    data_type: field.data_type().clone(),
                });
            }
        }
        let n_shards = ds.shards().len();
        let plan: Vec<usize> = match &opts.shards {
            None => (0..n_shards).collect(),
            Some(list) => {
                let mut v = list.clone();
                v.sort_unstable();
                v.dedup();
                if let Some(&bad) = v.iter().find(|&&i| i >= n_shards) {
                    return Err(IoError::InvalidOption {
                        option: "shard index",
                        value: bad.to_string(),
                        expected: "an index below the number of shards",
                    });
                }
                v
            }
        };
        let metas: Vec<Arc<ShardMeta>> = ds.meta().to_vec();
        let n_row_groups: usize = plan.iter().map(|&i| metas[i].info.n_row_groups).sum();
        let n_source_rows = plan.iter().map(|&i| metas[i].info.n_rows).sum();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let wanted = if opts.threads == 0 { cores } else { opts.threads };
        let n_threads = wanted.min(opts.prefetch).min(n_row_groups).max(1);
        // Each thread can hold `capacity` pieces in its channel plus one in a
        // blocked send, so `threads · (capacity + 1) ≤ prefetch`.
        let channel_capacity = opts.prefetch / n_threads - 1;
        let spec = Arc::new(Spec {
            columns: opts.columns,
            label: opts.label,
            chunk_rows: opts.chunk_rows,
            nan_policy: opts.nan_policy,
            release_pages: opts.release_pages,
        });
        let (jobs_tx, jobs_rx) = unbounded::<Job>();
        let mut workers = Vec::with_capacity(n_threads);
        for _ in 0..n_threads {
            let rx = jobs_rx.clone();
            let h = std::thread::Builder::new()
                .name("kapprox-io-decode".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        run_job(job);
                    }
                })
                .map_err(|e| IoError::os(ds.path(), "cannot start a decode thread", e))?;
            workers.push(h);
        }
        Ok(ChunkReader {
            spec,
            metas,
            plan,
            next_job: (0, 0),
            dispatching: None,
            open: VecDeque::new(),
            channel_capacity,
            max_open: n_threads,
            jobs: Some(jobs_tx),
            workers,
            cell: Vec::new(),
            cell_rows: 0,
            skipped: 0,
            n_source_rows,
            done: false,
        })
    }

    /// Feature column names, in the order of `x`'s columns.
    pub fn columns(&self) -> &[String] {
        &self.spec.columns
    }

    /// The label column, if any.
    pub fn label(&self) -> Option<&str> {
        self.spec.label.as_deref()
    }

    /// Rows per chunk.
    pub fn chunk_rows(&self) -> usize {
        self.spec.chunk_rows
    }

    /// Source rows of the selected shards (skipped rows included).
    pub fn n_source_rows(&self) -> u64 {
        self.n_source_rows
    }

    /// Rows dropped under [`NanPolicy::Skip`] so far. This is the
    /// authoritative total: a cell whose rows were all skipped yields no
    /// chunk, so its count appears here only.
    pub fn rows_skipped(&self) -> u64 {
        self.skipped
    }

    /// Number of decode threads.
    pub fn n_threads(&self) -> usize {
        self.workers.len()
    }

    /// Dispatches row groups until `max_open` are in flight.
    fn fill(&mut self) {
        while self.open.len() < self.max_open {
            let (pos, rg) = self.next_job;
            let Some(&shard) = self.plan.get(pos) else { return };
            let meta = &self.metas[shard];
            if rg >= meta.info.n_row_groups {
                self.next_job = (pos + 1, 0);
                self.dispatching = None;
                continue;
            }
            self.next_job = (pos, rg + 1);
            let expected = meta.row_group_starts[rg + 1] - meta.row_group_starts[rg];
            if expected == 0 {
                continue;
            }
            if self.dispatching.is_none() {
                match open_shard(meta.clone(), &self.spec) {
                    Ok(s) => self.dispatching = Some(Arc::new(s)),
                    Err(e) => {
                        // Deliver the error in row order, after the rows before it.
                        let (tx, rx) = bounded(1);
                        let _ = tx.send(Err(e));
                        self.open.push_back(OpenRowGroup { rx, plan_pos: pos, row_group: rg, expected, received: 0 });
                        self.next_job = (self.plan.len(), 0);
                        return;
                    }
                }
            }
            let shard = self.dispatching.clone().expect("shard opened above");
            let (tx, rx) = bounded(self.channel_capacity);
            let jobs = self.jobs.as_ref().expect("jobs channel open while iterating");
            if jobs.send(Job { shard, row_group: rg, tx }).is_err() {
                return;
            }
            self.open.push_back(OpenRowGroup { rx, plan_pos: pos, row_group: rg, expected, received: 0 });
        }
    }

    fn fail(&mut self, e: IoError) -> Option<Result<Chunk>> {
        self.done = true;
        self.shutdown();
        Some(Err(e))
    }

    /// Adds a piece to the current cell; returns the chunk when the cell is
    /// complete.
    fn add_piece(&mut self, plan_pos: usize, piece: Piece) -> Option<Chunk> {
        let shard = self.plan[plan_pos];
        let meta = &self.metas[shard];
        let c = self.spec.chunk_rows as u64;
        let cell_start = piece.start / c * c;
        let cell_len = c.min(meta.info.n_rows - cell_start);
        self.cell_rows += piece.source_rows as u64;
        self.skipped += piece.skipped as u64;
        self.cell.push(piece);
        if self.cell_rows < cell_len {
            return None;
        }
        debug_assert_eq!(self.cell_rows, cell_len);
        self.cell_rows = 0;
        let first_row = meta.info.first_row + cell_start;
        let mut pieces = std::mem::take(&mut self.cell);
        let skipped: usize = pieces.iter().map(|p| p.skipped).sum();
        let (x, y, row_ids) = if pieces.len() == 1 {
            let p = pieces.pop().expect("one piece");
            let ids = match p.kept {
                Some(v) => RowIds::List(v),
                None => RowIds::Range(first_row..first_row + p.x.nrows() as u64),
            };
            (p.x, p.y, ids)
        } else {
            let views: Vec<_> = pieces.iter().map(|p| p.x.view()).collect();
            let x = ndarray::concatenate(Axis(0), &views).expect("pieces share the column count");
            let y = self.spec.label.as_ref().map(|_| {
                let ys: Vec<_> = pieces.iter().map(|p| p.y.as_ref().expect("label read").view()).collect();
                ndarray::concatenate(Axis(0), &ys).expect("1-d pieces")
            });
            let ids = if pieces.iter().all(|p| p.kept.is_none()) {
                RowIds::Range(first_row..first_row + x.nrows() as u64)
            } else {
                let mut v = Vec::with_capacity(x.nrows());
                for p in &pieces {
                    match &p.kept {
                        Some(k) => v.extend_from_slice(k),
                        None => {
                            let a = meta.info.first_row + p.start;
                            v.extend(a..a + p.source_rows as u64);
                        }
                    }
                }
                RowIds::List(v)
            };
            (x, y, ids)
        };
        if x.nrows() == 0 {
            return None;
        }
        Some(Chunk { shard, first_row, row_ids, x, y, skipped })
    }

    fn shutdown(&mut self) {
        // Dropping the receivers makes blocked sends fail; dropping the job
        // sender lets idle workers leave their loop.
        self.open.clear();
        self.dispatching = None;
        self.jobs = None;
        for h in self.workers.drain(..) {
            let _ = h.join();
        }
    }
}

impl Iterator for ChunkReader {
    type Item = Result<Chunk>;

    fn next(&mut self) -> Option<Result<Chunk>> {
        loop {
            if self.done {
                return None;
            }
            self.fill();
            let Some(front) = self.open.front_mut() else {
                self.done = true;
                self.shutdown();
                return None;
            };
            match front.rx.recv() {
                Ok(Ok(piece)) => {
                    front.received += piece.source_rows as u64;
                    let pos = front.plan_pos;
                    if let Some(chunk) = self.add_piece(pos, piece) {
                        return Some(Ok(chunk));
                    }
                }
                Ok(Err(e)) => return self.fail(e),
                Err(_) => {
                    if front.received == front.expected {
                        self.open.pop_front();
                    } else {
                        let shard = self.plan[front.plan_pos];
                        let e = IoError::WorkerLost {
                            path: self.metas[shard].info.path.clone(),
                            row_group: front.row_group,
                        };
                        return self.fail(e);
                    }
                }
            }
        }
    }
}

impl FusedIterator for ChunkReader {}

impl Drop for ChunkReader {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn open_shard(meta: Arc<ShardMeta>, spec: &Arc<Spec>) -> Result<OpenShard> {
    let (mmap, bytes, len) = map_file(&meta.info.path)?;
    if len != meta.file_len {
        return Err(IoError::ShardChanged { path: meta.info.path.clone(), expected: meta.file_len, found: len });
    }
    let schema = meta.arrow.schema();
    let roots: Vec<usize> = spec
        .columns
        .iter()
        .chain(spec.label.iter())
        .map(|c| schema.index_of(c).expect("columns were checked against the shared schema"))
        .collect();
    let projection = ProjectionMask::roots(meta.arrow.metadata().file_metadata().schema_descr(), roots);
    Ok(OpenShard { meta, bytes, mmap, projection, spec: spec.clone() })
}

pub(crate) fn is_numeric(dt: &DataType) -> bool {
    use DataType::*;
    matches!(
        dt,
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32 | Float64
    )
}

fn run_job(job: Job) {
    let Job { shard, row_group, tx } = job;
    if let Err(e) = decode_row_group(&shard, row_group, &tx) {
        let _ = tx.send(Err(e));
    }
    if shard.spec.release_pages {
        release_pages(&shard, row_group);
    }
}

/// Drops the mapped pages of a decoded row group's requested column chunks.
#[cfg(unix)]
fn release_pages(shard: &OpenShard, row_group: usize) {
    let rg = shard.meta.arrow.metadata().row_group(row_group);
    for (leaf, col) in rg.columns().iter().enumerate() {
        if !shard.projection.leaf_included(leaf) {
            continue;
        }
        let (start, len) = col.byte_range();
        let (start, len) = (start as usize, len as usize);
        if start.saturating_add(len) > shard.mmap.len() || len == 0 {
            continue;
        }
        // SAFETY: the map is a read-only shared file mapping. MADV_DONTNEED
        // only drops its pages from this process; the next access (e.g. a
        // neighbouring row group sharing a boundary page) faults them back in
        // from the file, so every reader still sees the file's bytes.
        let _ = unsafe { shard.mmap.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
    }
}

#[cfg(not(unix))]
fn release_pages(_shard: &OpenShard, _row_group: usize) {}

fn decode_error(shard: &OpenShard, row_group: usize, column: Option<String>, error: ArrowError) -> IoError {
    IoError::Decode { path: shard.path(), row_group, column, error }
}

/// Runs the parquet decoder, turning a panic into an error: some damaged
/// pages make the parquet crate panic instead of failing (e.g. a
/// dictionary-encoded page without a dictionary page), and a damaged file
/// is bad input, not a bug.
fn guarded<T>(decode: impl FnOnce() -> std::result::Result<T, ArrowError>) -> std::result::Result<T, ArrowError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(ArrowError::ParquetError(format!("corrupt data, the decoder gave up: {msg}")))
    })
}

/// Re-decodes the row group column by column to name the one that fails.
/// Only runs on the error path.
fn failing_column(shard: &OpenShard, row_group: usize) -> Option<String> {
    let schema = shard.meta.arrow.schema();
    for c in shard.spec.columns.iter().chain(shard.spec.label.iter()) {
        let root = schema.index_of(c).ok()?;
        let mask = ProjectionMask::roots(shard.meta.arrow.metadata().file_metadata().schema_descr(), [root]);
        let failed = guarded(|| {
            let reader =
                ParquetRecordBatchReaderBuilder::new_with_metadata(shard.bytes.clone(), shard.meta.arrow.clone())
                    .with_row_groups(vec![row_group])
                    .with_projection(mask)
                    .with_batch_size(shard.spec.chunk_rows)
                    .build();
            Ok(match reader {
                Err(_) => true,
                Ok(mut r) => r.any(|b| b.is_err()),
            })
        })
        .unwrap_or(true);
        if failed {
            return Some(c.clone());
        }
    }
    None
}

/// Decodes one row group into pieces along the chunk grid and sends them.
/// Returns `Ok` early if the consumer has gone.
fn decode_row_group(shard: &OpenShard, row_group: usize, tx: &Sender<Result<Piece>>) -> Result<()> {
    let spec = &*shard.spec;
    let meta = &shard.meta;
    let rg_start = meta.row_group_starts[row_group];
    let rg_end = meta.row_group_starts[row_group + 1];
    let c = spec.chunk_rows as u64;
    let mut reader = guarded(|| {
        Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(shard.bytes.clone(), meta.arrow.clone())
            .with_row_groups(vec![row_group])
            .with_projection(shard.projection.clone())
            .with_batch_size(spec.chunk_rows)
            .build()?)
    })
    .map_err(|e| decode_error(shard, row_group, failing_column(shard, row_group), e))?;
    let batch_schema = arrow::array::RecordBatchReader::schema(&reader);
    let positions: Vec<usize> = spec
        .columns
        .iter()
        .chain(spec.label.iter())
        .map(|name| batch_schema.index_of(name).expect("projected column present"))
        .collect();
    let d = spec.columns.len();
    let mut cur = rg_start;
    let mut piece: Option<PieceBuf> = None;
    while let Some(batch) = guarded(|| reader.next().transpose())
        .map_err(|e| decode_error(shard, row_group, failing_column(shard, row_group), e))?
    {
        let cols: Vec<NumColumn<'_>> =
            positions.iter().map(|&p| NumColumn::new(batch.column(p))).collect::<Option<_>>().ok_or_else(|| {
                // The schema was checked at open, so only a writer that lies
                // about its types gets here.
                decode_error(
                    shard,
                    row_group,
                    None,
                    ArrowError::SchemaError("decoded column is not numeric".to_string()),
                )
            })?;
        let nb = batch.num_rows();
        let mut off = 0;
        while off < nb {
            if piece.is_none() {
                if cur >= rg_end {
                    return Err(IoError::RowGroupRows {
                        path: shard.path(),
                        row_group,
                        expected: rg_end - rg_start,
                        found: cur - rg_start + (nb - off) as u64,
                    });
                }
                let end = ((cur / c + 1) * c).min(rg_end);
                piece = Some(PieceBuf::new(cur, (end - cur) as usize, d, spec.label.is_some()));
            }
            let p = piece.as_mut().expect("piece allocated above");
            let take = (nb - off).min(p.len - p.filled);
            p.fill(&cols, off, take);
            if spec.nan_policy != NanPolicy::Keep {
                p.check(&cols, off, take, shard, spec.nan_policy)?;
            }
            p.filled += take;
            off += take;
            if p.filled == p.len {
                let done = piece.take().expect("piece present");
                cur += done.len as u64;
                if tx.send(Ok(done.finish(shard))).is_err() {
                    return Ok(());
                }
            }
        }
    }
    if cur != rg_end {
        let found = cur - rg_start + piece.map_or(0, |p| p.filled as u64);
        return Err(IoError::RowGroupRows { path: shard.path(), row_group, expected: rg_end - rg_start, found });
    }
    Ok(())
}

/// A piece being filled by a worker.
struct PieceBuf {
    start: u64,
    len: usize,
    filled: usize,
    d: usize,
    x: Array2<f64>,
    y: Option<Array1<f64>>,
    /// Rows to drop under `Skip` (allocated on the first bad row).
    bad: Option<Vec<bool>>,
}

impl PieceBuf {
    fn new(start: u64, len: usize, d: usize, label: bool) -> PieceBuf {
        PieceBuf {
            start,
            len,
            filled: 0,
            d,
            x: Array2::zeros((len, d)),
            y: label.then(|| Array1::zeros(len)),
            bad: None,
        }
    }

    /// Copies `take` rows starting at batch row `off` into rows
    /// `filled..filled + take`.
    fn fill(&mut self, cols: &[NumColumn<'_>], off: usize, take: usize) {
        let d = self.d;
        let out = self.x.as_slice_mut().expect("standard layout");
        // Transpose in blocks of rows so that the destination rows of a block
        // stay in cache while every column writes into them.
        const BLOCK: usize = 64;
        let mut r = 0;
        while r < take {
            let n = BLOCK.min(take - r);
            for (j, col) in cols[..d].iter().enumerate() {
                col.write(off + r, n, out, (self.filled + r) * d + j, d);
            }
            r += n;
        }
        if let (Some(y), Some(col)) = (self.y.as_mut(), cols.get(d)) {
            let ys = y.as_slice_mut().expect("contiguous");
            col.write(off, take, ys, self.filled, 1);
        }
    }

    /// Looks for non-finite cells in the rows just filled: the first one is
    /// an error under `Refuse`; under `Skip` their rows are marked.
    fn check(
        &mut self,
        cols: &[NumColumn<'_>],
        off: usize,
        take: usize,
        shard: &OpenShard,
        policy: NanPolicy,
    ) -> Result<()> {
        let d = self.d;
        let rows = self.filled..self.filled + take;
        let xs = &self.x.as_slice().expect("standard layout")[rows.start * d..rows.end * d];
        let ys = self.y.as_ref().map(|y| &y.as_slice().expect("contiguous")[rows.clone()]);
        let all_finite = xs.iter().all(|v| v.is_finite()) && ys.is_none_or(|y| y.iter().all(|v| v.is_finite()));
        if all_finite {
            return Ok(());
        }
        for i in 0..take {
            let row = &xs[i * d..(i + 1) * d];
            let bad_col =
                row.iter().position(|v| !v.is_finite()).or_else(|| ys.filter(|y| !y[i].is_finite()).map(|_| d));
            let Some(j) = bad_col else { continue };
            match policy {
                NanPolicy::Refuse => {
                    let value = if cols[j].is_null(off + i) {
                        BadValue::Null
                    } else if j < d {
                        BadValue::Value(row[j])
                    } else {
                        BadValue::Value(ys.expect("label present")[i])
                    };
                    let column = if j < d { &shard.spec.columns[j] } else { shard.spec.label.as_ref().expect("label") };
                    let row_in_file = self.start + (rows.start + i) as u64;
                    return Err(IoError::NonFinite {
                        path: shard.path(),
                        row_id: shard.meta.info.first_row + row_in_file,
                        row_in_file,
                        column: column.clone(),
                        value,
                    });
                }
                NanPolicy::Skip => {
                    let len = self.len;
                    self.bad.get_or_insert_with(|| vec![false; len])[rows.start + i] = true;
                }
                NanPolicy::Keep => {}
            }
        }
        Ok(())
    }

    /// Drops marked rows and turns the buffer into a piece.
    fn finish(self, shard: &OpenShard) -> Piece {
        let PieceBuf { start, len, d, mut x, mut y, bad, .. } = self;
        let Some(bad) = bad else {
            return Piece { start, source_rows: len, x, y, kept: None, skipped: 0 };
        };
        let base = shard.meta.info.first_row + start;
        let mut kept = Vec::with_capacity(len);
        let xs = x.as_slice_mut().expect("standard layout");
        let mut w = 0;
        for r in 0..len {
            if bad[r] {
                continue;
            }
            if w != r {
                xs.copy_within(r * d..(r + 1) * d, w * d);
                if let Some(y) = y.as_mut() {
                    y[w] = y[r];
                }
            }
            kept.push(base + r as u64);
            w += 1;
        }
        x.slice_collapse(s![..w, ..]);
        if let Some(y) = y.as_mut() {
            y.slice_collapse(s![..w]);
        }
        Piece { start, source_rows: len, x, y, kept: Some(kept), skipped: len - w }
    }
}

type F16 = <adt::Float16Type as adt::ArrowPrimitiveType>::Native;

/// A numeric Arrow column, downcast once per batch.
struct NumColumn<'a> {
    values: NumValues<'a>,
    nulls: Option<&'a NullBuffer>,
}

enum NumValues<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
    F16(&'a [F16]),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    Bool(&'a BooleanArray),
}

impl<'a> NumColumn<'a> {
    fn new(a: &'a ArrayRef) -> Option<NumColumn<'a>> {
        use NumValues::*;
        let values = match a.data_type() {
            DataType::Float64 => F64(a.as_primitive::<adt::Float64Type>().values()),
            DataType::Float32 => F32(a.as_primitive::<adt::Float32Type>().values()),
            DataType::Float16 => F16(a.as_primitive::<adt::Float16Type>().values()),
            DataType::Int8 => I8(a.as_primitive::<adt::Int8Type>().values()),
            DataType::Int16 => I16(a.as_primitive::<adt::Int16Type>().values()),
            DataType::Int32 => I32(a.as_primitive::<adt::Int32Type>().values()),
            DataType::Int64 => I64(a.as_primitive::<adt::Int64Type>().values()),
            DataType::UInt8 => U8(a.as_primitive::<adt::UInt8Type>().values()),
            DataType::UInt16 => U16(a.as_primitive::<adt::UInt16Type>().values()),
            DataType::UInt32 => U32(a.as_primitive::<adt::UInt32Type>().values()),
            DataType::UInt64 => U64(a.as_primitive::<adt::UInt64Type>().values()),
            DataType::Boolean => Bool(a.as_boolean()),
            _ => return None,
        };
        Some(NumColumn { values, nulls: a.nulls().filter(|n| n.null_count() > 0) })
    }

    fn is_null(&self, i: usize) -> bool {
        self.nulls.is_some_and(|n| n.is_null(i))
    }

    /// Writes `n` values from row `src` to `out[at], out[at + stride], ...`;
    /// nulls become NaN.
    #[inline]
    fn write(&self, src: usize, n: usize, out: &mut [f64], at: usize, stride: usize) {
        macro_rules! copy {
            ($v:expr, $conv:expr) => {
                for (k, &v) in $v[src..src + n].iter().enumerate() {
                    out[at + k * stride] = $conv(v);
                }
            };
        }
        match &self.values {
            NumValues::F64(v) => copy!(v, |x: f64| x),
            NumValues::F32(v) => copy!(v, |x: f32| x as f64),
            NumValues::F16(v) => copy!(v, f64::from),
            NumValues::I8(v) => copy!(v, |x: i8| x as f64),
            NumValues::I16(v) => copy!(v, |x: i16| x as f64),
            NumValues::I32(v) => copy!(v, |x: i32| x as f64),
            NumValues::I64(v) => copy!(v, |x: i64| x as f64),
            NumValues::U8(v) => copy!(v, |x: u8| x as f64),
            NumValues::U16(v) => copy!(v, |x: u16| x as f64),
            NumValues::U32(v) => copy!(v, |x: u32| x as f64),
            NumValues::U64(v) => copy!(v, |x: u64| x as f64),
            NumValues::Bool(b) => {
                for k in 0..n {
                    out[at + k * stride] = if b.value(src + k) { 1.0 } else { 0.0 };
                }
            }
        }
        if let Some(nulls) = self.nulls {
            for k in 0..n {
                if nulls.is_null(src + k) {
                    out[at + k * stride] = f64::NAN;
                }
            }
        }
    }
}
