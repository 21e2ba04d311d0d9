//! Streaming a dataset as chunks of rows, decoded in parallel, delivered in
//! order.
//!
//! # How it works
//!
//! Every selected row group is one job. When the dataset has fewer row
//! groups than threads, a job splits its row group's columns into groups of
//! about equal compressed size, decoded side by side (scoped threads) and
//! joined batch by batch. A small pool of decode threads
//! (owned by the [`ChunkReader`], not rayon's, so that blocking on a full
//! channel never starves the caller's compute) takes jobs in row order. A
//! worker memory-maps nothing itself: the shard's map is opened once, wrapped
//! in `bytes::Bytes`, and every worker builds its own parquet reader over a
//! cheap clone of it, so no file handle (and no file position) is shared.
//!
//! On object storage a job first fetches the byte ranges of its row
//! group's requested column chunks (one request, adjacent ranges merged)
//! and decodes from that buffer; see [`store`](crate::store).
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
//! With `d` requested columns (numeric, indicator, label, categorical and
//! kept columns; kept strings count by their length / 8), `C = chunk_rows`,
//! `P = prefetch` and `T` decode threads (`T ≤ P`), peak memory is about
//!
//! ```text
//! (P + 2T + 2) · C · d · 8 bytes                   decoded blocks
//!   + T · (compressed size of one row group)       mapped file pages, or
//!                                                  fetched column chunks
//!   + T · d · (dictionary page + data page)        parquet decoder state
//! ```
//!
//! - Blocks: at most `P` decoded pieces wait in channels or blocked sends,
//!   plus per thread one piece under construction and one Arrow batch of
//!   `C` rows, plus the chunk being assembled and the one the caller holds.
//!   A job decoding by column groups holds at most one more batch of its
//!   row group's columns (each group thread's next batch waits in a channel
//!   of one), so `2T` becomes at most `3T` then; the groups only split
//!   the decoder state below, they do not add to it.
//! - Mapped pages: each thread touches the pages of the row group it
//!   decodes. With `release_pages` (the default, Unix only) they are dropped
//!   from the process with `madvise(MADV_DONTNEED)` as soon as the row group
//!   is decoded, so resident memory does not grow with the shard size. The
//!   kernel's page cache may keep them; that memory is reclaimable and not
//!   charged to the process.
//! - Fetched column chunks (object storage): each thread holds the
//!   requested column chunks of the row group it decodes, and drops them
//!   when done; nothing else of the object is downloaded.
//! - Category counts (counting mode only): one entry per distinct value of
//!   a piece, at most `C` per column and piece.
//! - Decoder state: at most 1 MiB per dictionary page and about 1 MiB per
//!   data page with default writer settings.
//!
//! No term depends on the number of rows of a shard or of the dataset
//! (files written by kapprox have row groups of at most 65536 rows; files
//! of other writers may have larger ones, and that term is theirs). The
//! test `tests/memory.rs` checks this bound on a 1M-row shard: the peak
//! grows by ~48 MB with page release and by more than the file's 160 MB
//! without.

mod chunk;
mod decode;
mod options;
pub(crate) mod values;

pub use chunk::{Chunk, RowIds};
pub use options::{
    DEFAULT_CHUNK_ROWS, DEFAULT_NAN_POLICY, DEFAULT_PREFETCH, DEFAULT_RELEASE_PAGES, DEFAULT_THREADS, NanPolicy,
    ReadOptions,
};

use crate::categorical::CategoryCounts;
use crate::dataset::Dataset;
use crate::dataset::footer::ShardMeta;
use crate::dataset::schema::{Kind, kind};
use crate::error::{IoError, Result};
use arrow::array::{Array, ArrayRef};
use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use decode::{OpenShard, Spec};
use ndarray::{Array1, Array2, Axis};
use std::collections::VecDeque;
use std::iter::FusedIterator;
use std::sync::Arc;
use std::thread::JoinHandle;

struct Job {
    shard: Arc<OpenShard>,
    row_group: usize,
    tx: Sender<Result<Piece>>,
}

/// Part of one chunk cell decoded from one row group.
pub(crate) struct Piece {
    /// First source row, relative to the shard.
    start: u64,
    source_rows: usize,
    x: Array2<f64>,
    y: Option<Array1<f64>>,
    /// Global ids of the kept rows, when some were skipped.
    kept: Option<Vec<u64>>,
    skipped: usize,
    imputed: u64,
    other: Vec<u64>,
    category_counts: Vec<CategoryCounts>,
    keep: Vec<ArrayRef>,
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
    imputed: u64,
    other: Vec<u64>,
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
            let (path, column, data_type) = (first_path.clone(), c.clone(), field.data_type().clone());
            match kind(field.data_type()) {
                Kind::Number | Kind::Temporal => {}
                Kind::Text => return Err(IoError::TextColumn { path, column, data_type }),
                Kind::Other => return Err(IoError::NotNumeric { path, column, data_type }),
            }
        }
        let others = opts.categorical.iter().chain(&opts.keep).chain(opts.vocabularies.iter().map(|v| &v.column));
        for c in others {
            schema.field_with_name(c).map_err(|_| ds.not_found(c))?;
        }
        let impute = match (opts.nan_policy, opts.impute_values) {
            (NanPolicy::Impute, Some(v)) if v.len() == opts.columns.len() => v,
            (NanPolicy::Impute, v) => {
                return Err(IoError::InvalidOption {
                    option: "impute values",
                    value: format!("{} values for {} columns", v.map_or(0, |v| v.len()), opts.columns.len()),
                    expected: "one fill value per numeric column under the impute policy",
                });
            }
            (_, _) => Vec::new(),
        };
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
        // Fewer row groups than threads: the spare threads share each row
        // group's columns.
        let column_groups = (wanted.min(opts.prefetch) / n_threads).max(1);
        // Each thread can hold `capacity` pieces in its channel plus one in a
        // blocked send, so `threads · (capacity + 1) ≤ prefetch`.
        let channel_capacity = opts.prefetch / n_threads - 1;
        let partitions = ds
            .partition_columns()
            .iter()
            .map(|p| (p.clone(), schema.field_with_name(p).expect("partition key in schema").data_type().clone()))
            .collect();
        let n_vocabularies = opts.vocabularies.len();
        let keep_types =
            opts.keep.iter().map(|c| schema.field_with_name(c).expect("checked above").data_type().clone()).collect();
        let spec = Arc::new(Spec {
            columns: opts.columns,
            label: opts.label,
            categorical: opts.categorical,
            vocabularies: opts.vocabularies,
            keep: opts.keep,
            keep_types,
            chunk_rows: opts.chunk_rows,
            nan_policy: opts.nan_policy,
            impute,
            release_pages: opts.release_pages,
            partitions,
            column_groups,
        });
        let (jobs_tx, jobs_rx) = unbounded::<Job>();
        let mut workers = Vec::with_capacity(n_threads);
        for _ in 0..n_threads {
            let rx = jobs_rx.clone();
            let h = std::thread::Builder::new()
                .name("kapprox-io-decode".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        decode::run_job(&job.shard, job.row_group, &job.tx);
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
            imputed: 0,
            other: vec![0; n_vocabularies],
            n_source_rows,
            done: false,
        })
    }

    /// Numeric feature column names, the first columns of `x`.
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

    /// Missing values replaced under [`NanPolicy::Impute`] so far.
    pub fn values_imputed(&self) -> u64 {
        self.imputed
    }

    /// Per vocabulary of [`ReadOptions::with_vocabularies`], values sent to
    /// the "other" slot so far (outside the vocabulary, or null).
    pub fn categories_other(&self) -> &[u64] {
        &self.other
    }

    /// Names of `x`'s columns: numeric columns, then indicator columns.
    pub fn x_columns(&self) -> Vec<String> {
        let mut names = self.spec.columns.clone();
        for v in &self.spec.vocabularies {
            names.extend(v.column_names());
        }
        names
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
                match OpenShard::open(meta.clone(), &self.spec) {
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
    fn add_piece(&mut self, plan_pos: usize, piece: Piece) -> Result<Option<Chunk>> {
        let shard = self.plan[plan_pos];
        let meta = &self.metas[shard];
        let c = self.spec.chunk_rows as u64;
        let cell_start = piece.start / c * c;
        let cell_len = c.min(meta.info.n_rows - cell_start);
        self.cell_rows += piece.source_rows as u64;
        self.skipped += piece.skipped as u64;
        self.imputed += piece.imputed;
        for (t, o) in self.other.iter_mut().zip(&piece.other) {
            *t += o;
        }
        self.cell.push(piece);
        if self.cell_rows < cell_len {
            return Ok(None);
        }
        debug_assert_eq!(self.cell_rows, cell_len);
        self.cell_rows = 0;
        let first_row = meta.info.first_row + cell_start;
        let pieces = std::mem::take(&mut self.cell);
        let chunk = if pieces.len() == 1 {
            let p = pieces.into_iter().next().expect("one piece");
            let row_ids = match p.kept {
                Some(v) => RowIds::List(v),
                None => RowIds::Range(first_row..first_row + p.x.nrows() as u64),
            };
            Chunk {
                shard,
                first_row,
                row_ids,
                x: p.x,
                y: p.y,
                skipped: p.skipped,
                imputed: p.imputed,
                other: p.other,
                category_counts: p.category_counts,
                keep: p.keep,
            }
        } else {
            self.glue(shard, first_row, pieces)?
        };
        Ok((chunk.n_rows() > 0).then_some(chunk))
    }

    /// One chunk from the pieces of a cell that straddles row groups.
    fn glue(&self, shard: usize, first_row: u64, pieces: Vec<Piece>) -> Result<Chunk> {
        let meta = &self.metas[shard];
        let views: Vec<_> = pieces.iter().map(|p| p.x.view()).collect();
        let x = ndarray::concatenate(Axis(0), &views).expect("pieces share the column count");
        let y = self.spec.label.as_ref().map(|_| {
            let ys: Vec<_> = pieces.iter().map(|p| p.y.as_ref().expect("label read").view()).collect();
            ndarray::concatenate(Axis(0), &ys).expect("1-d pieces")
        });
        let row_ids = if pieces.iter().all(|p| p.kept.is_none()) {
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
        let mut category_counts = pieces[0].category_counts.clone();
        for p in &pieces[1..] {
            for (total, c) in category_counts.iter_mut().zip(&p.category_counts) {
                total.merge(c)?;
            }
        }
        let keep = (0..self.spec.keep.len())
            .map(|k| {
                let parts: Vec<&dyn Array> = pieces.iter().map(|p| p.keep[k].as_ref()).collect();
                arrow::compute::concat(&parts)
            })
            .collect::<Result<Vec<ArrayRef>, _>>()
            .map_err(|error| IoError::Decode { path: meta.info.path.clone(), row_group: 0, column: None, error })?;
        let mut other = vec![0; self.spec.vocabularies.len()];
        for p in &pieces {
            for (t, o) in other.iter_mut().zip(&p.other) {
                *t += o;
            }
        }
        Ok(Chunk {
            shard,
            first_row,
            row_ids,
            x,
            y,
            skipped: pieces.iter().map(|p| p.skipped).sum(),
            imputed: pieces.iter().map(|p| p.imputed).sum(),
            other,
            category_counts,
            keep,
        })
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
                    match self.add_piece(pos, piece) {
                        Ok(Some(chunk)) => return Some(Ok(chunk)),
                        Ok(None) => {}
                        Err(e) => return self.fail(e),
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
