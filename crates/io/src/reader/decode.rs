//! One row group of one shard -> pieces of chunks: fetching its bytes,
//! decoding its columns, applying the missing-value policy.

use super::values::{CatColumn, NumColumn, to_numeric};
use super::{NanPolicy, Piece};
use crate::categorical::{CategoryCounts, Vocabulary};
use crate::dataset::discover::Location;
use crate::dataset::footer::{ShardMeta, map_file};
use crate::error::{BadValue, IoError, Result};
use crate::store::{RemoteFile, RowGroupBytes};
use arrow::array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::DataType;
use arrow::error::ArrowError;
use bytes::Bytes;
use crossbeam_channel::Sender;
use memmap2::Mmap;
use ndarray::{Array1, Array2, s};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::ChunkReader;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What every job of one reader shares.
#[derive(Debug)]
pub(super) struct Spec {
    pub(super) columns: Vec<String>,
    pub(super) label: Option<String>,
    pub(super) categorical: Vec<String>,
    pub(super) vocabularies: Vec<Vocabulary>,
    pub(super) keep: Vec<String>,
    /// The dataset's types of the kept columns: a shard of another width
    /// is cast, so every chunk's arrays have one type.
    pub(super) keep_types: Vec<DataType>,
    pub(super) chunk_rows: usize,
    pub(super) nan_policy: NanPolicy,
    pub(super) impute: Vec<f64>,
    pub(super) release_pages: bool,
    /// The dataset's partition keys and their types.
    pub(super) partitions: Vec<(String, DataType)>,
    /// Threads that decode one row group, each a share of its columns
    /// (more than one when the dataset has fewer row groups than threads).
    pub(super) column_groups: usize,
}

impl Spec {
    /// Columns of `x`.
    fn width(&self) -> usize {
        self.columns.len() + self.vocabularies.iter().map(Vocabulary::width).sum::<usize>()
    }

    /// Counted, then encoded categorical columns.
    fn categorical_names(&self) -> Vec<&str> {
        let encoded = self.vocabularies.iter().map(|v| v.column.as_str());
        self.categorical.iter().map(String::as_str).chain(encoded).collect()
    }

    /// Every column the reader needs, each once.
    fn needed(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        let all = self.columns.iter().chain(&self.label).chain(&self.categorical).chain(&self.keep);
        for n in all.map(String::as_str).chain(self.vocabularies.iter().map(|v| v.column.as_str())) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        names
    }
}

/// Where an open shard's bytes come from.
enum Source {
    /// The whole file, memory-mapped.
    Mapped { bytes: Bytes, mmap: Arc<Mmap> },
    /// An object; each row group fetches its column chunks.
    Remote(Arc<RemoteFile>),
}

/// A shard being read: its bytes and projection, shared by its jobs.
pub(super) struct OpenShard {
    pub(super) meta: Arc<ShardMeta>,
    source: Source,
    projection: ProjectionMask,
    /// The projected root columns, in `projection`.
    roots: Vec<usize>,
    /// Per needed column: its partition value when it is a partition key.
    partition_values: HashMap<String, (Option<String>, DataType)>,
    pub(super) spec: Arc<Spec>,
}

impl OpenShard {
    /// Maps a local shard (checking it kept its size) or takes the open
    /// remote object, and projects the needed file columns.
    pub(super) fn open(meta: Arc<ShardMeta>, spec: &Arc<Spec>) -> Result<OpenShard> {
        let source = match (&meta.location, &meta.remote) {
            (Location::Local(path), _) => {
                let (mmap, bytes, len) = map_file(path)?;
                if len != meta.file_len {
                    return Err(IoError::ShardChanged { path: path.clone(), expected: meta.file_len, found: len });
                }
                Source::Mapped { bytes, mmap }
            }
            (Location::Remote { .. }, Some(file)) => Source::Remote(file.clone()),
            (Location::Remote { .. }, None) => unreachable!("remote shards keep their object open"),
        };
        let mut partition_values = HashMap::new();
        let mut leaves = Vec::new();
        for name in spec.needed() {
            if let Some(k) = spec.partitions.iter().position(|(p, _)| p == name) {
                let value = meta.info.partitions[k].1.clone();
                partition_values.insert(name.to_string(), (value, spec.partitions[k].1.clone()));
            } else {
                let root = meta.arrow.schema().index_of(name).map_err(|_| IoError::SchemaMismatch {
                    path: meta.info.path.clone(),
                    reference: meta.info.path.clone(),
                    column: name.to_string(),
                    expected: None,
                    found: None,
                })?;
                leaves.push(root);
            }
        }
        let projection = ProjectionMask::roots(meta.arrow.metadata().file_metadata().schema_descr(), leaves.clone());
        Ok(OpenShard { meta, source, projection, roots: leaves, partition_values, spec: spec.clone() })
    }

    pub(super) fn path(&self) -> PathBuf {
        self.meta.info.path.clone()
    }

    /// Byte ranges of the projected column chunks of a row group, sorted,
    /// adjacent ones merged.
    fn column_ranges(&self, row_group: usize) -> Vec<std::ops::Range<u64>> {
        let rg = self.meta.arrow.metadata().row_group(row_group);
        let mut ranges: Vec<std::ops::Range<u64>> = rg
            .columns()
            .iter()
            .enumerate()
            .filter(|(leaf, _)| self.projection.leaf_included(*leaf))
            .map(|(_, c)| {
                let (start, len) = c.byte_range();
                start..start + len
            })
            .collect();
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<std::ops::Range<u64>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }

    /// The projection split into at most `groups` masks of about equal
    /// compressed size in `row_group` (largest column first to the lightest
    /// group), one per decoding thread; the whole projection when one.
    fn column_groups(&self, row_group: usize, groups: usize) -> Vec<ProjectionMask> {
        let groups = groups.min(self.roots.len()).max(1);
        if groups == 1 {
            return vec![self.projection.clone()];
        }
        let schema = self.meta.arrow.metadata().file_metadata().schema_descr();
        let rg = self.meta.arrow.metadata().row_group(row_group);
        let mut sizes = vec![0u64; schema.root_schema().get_fields().len()];
        for (leaf, column) in rg.columns().iter().enumerate() {
            sizes[schema.get_column_root_idx(leaf)] += column.compressed_size().max(0) as u64;
        }
        let mut roots = self.roots.clone();
        roots.sort_by_key(|&r| (std::cmp::Reverse(sizes[r]), r));
        let mut members: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); groups];
        for r in roots {
            let lightest = members.iter_mut().min_by_key(|(load, _)| *load).expect("at least one group");
            lightest.0 += sizes[r].max(1);
            lightest.1.push(r);
        }
        members.into_iter().map(|(_, roots)| ProjectionMask::roots(schema, roots)).collect()
    }

    /// A needed column of a batch: the file's, or the partition value
    /// repeated.
    fn column(&self, batch: &RecordBatch, name: &str) -> ArrayRef {
        match self.partition_values.get(name) {
            Some((value, dt)) => partition_array(value.as_deref(), dt, batch.num_rows()),
            None => batch.column(batch.schema_ref().index_of(name).expect("projected column present")).clone(),
        }
    }
}

/// A partition value as a constant array of `n` rows of the key's type.
fn partition_array(value: Option<&str>, dt: &DataType, n: usize) -> ArrayRef {
    match dt {
        DataType::Int64 => Arc::new(Int64Array::from(vec![value.and_then(|v| v.parse().ok()); n])),
        DataType::Float64 => Arc::new(Float64Array::from(vec![value.and_then(|v| v.parse().ok()); n])),
        _ => Arc::new(StringArray::from(vec![value; n])),
    }
}

/// Decodes a row group and sends its pieces; on failure sends the error.
pub(super) fn run_job(shard: &OpenShard, row_group: usize, tx: &Sender<Result<Piece>>) {
    let result = match &shard.source {
        Source::Mapped { bytes, .. } => decode_row_group(shard, row_group, bytes.clone(), tx),
        Source::Remote(file) => RowGroupBytes::fetch(file, shard.column_ranges(row_group))
            .and_then(|input| decode_row_group(shard, row_group, input, tx)),
    };
    if let Err(e) = result {
        let _ = tx.send(Err(e));
    }
    if shard.spec.release_pages {
        release_pages(shard, row_group);
    }
}

/// Drops the mapped pages of a decoded row group's requested column chunks.
#[cfg(unix)]
fn release_pages(shard: &OpenShard, row_group: usize) {
    let Source::Mapped { mmap, .. } = &shard.source else { return };
    for range in shard.column_ranges(row_group) {
        let (start, len) = (range.start as usize, (range.end - range.start) as usize);
        if start.saturating_add(len) > mmap.len() || len == 0 {
            continue;
        }
        // SAFETY: the map is a read-only shared file mapping. MADV_DONTNEED
        // only drops its pages from this process; the next access (e.g. a
        // neighbouring row group sharing a boundary page) faults them back in
        // from the file, so every reader still sees the file's bytes.
        let _ = unsafe { mmap.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
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
fn failing_column<T: ChunkReader + Clone + 'static>(shard: &OpenShard, row_group: usize, input: &T) -> Option<String> {
    let schema = shard.meta.arrow.schema();
    for c in shard.spec.needed() {
        let Ok(root) = schema.index_of(c) else { continue };
        let mask = ProjectionMask::roots(shard.meta.arrow.metadata().file_metadata().schema_descr(), [root]);
        let failed = guarded(|| {
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(input.clone(), shard.meta.arrow.clone())
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
            return Some(c.to_string());
        }
    }
    None
}

/// Decodes one row group into pieces along the chunk grid and sends them.
/// Returns `Ok` early if the consumer has gone.
///
/// With more than one column group, each group's columns are decoded by its
/// own reader on its own thread, in batches of the same size, and the
/// batches are joined column-wise: a dataset of one large row group (what
/// pyarrow and polars write for up to a million rows) then decodes on every
/// core instead of one.
fn decode_row_group<T: ChunkReader + Clone + Send + 'static>(
    shard: &OpenShard,
    row_group: usize,
    input: T,
    tx: &Sender<Result<Piece>>,
) -> Result<()> {
    let spec = &*shard.spec;
    let meta = &shard.meta;
    let fail = |e: ArrowError| decode_error(shard, row_group, failing_column(shard, row_group, &input), e);
    let open = |mask: ProjectionMask| {
        guarded(|| {
            Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(input.clone(), meta.arrow.clone())
                .with_row_groups(vec![row_group])
                .with_projection(mask)
                .with_batch_size(spec.chunk_rows)
                .build()?)
        })
    };
    let mut masks = shard.column_groups(row_group, spec.column_groups);
    let first = open(masks.remove(0)).map_err(fail)?;
    if masks.is_empty() {
        let mut reader = first;
        return cut_into_pieces(shard, row_group, &mut || guarded(|| reader.next().transpose()).map_err(fail), tx);
    }
    let others = masks.into_iter().map(|m| open(m).map_err(fail)).collect::<Result<Vec<_>>>()?;
    std::thread::scope(|scope| {
        let mut receivers = Vec::with_capacity(others.len());
        for mut reader in others {
            let (batch_tx, batch_rx) = crossbeam_channel::bounded(1);
            scope.spawn(move || {
                while let Some(batch) = guarded(|| reader.next().transpose()).transpose() {
                    let failed = batch.is_err();
                    // The receiver is gone when the row group ended early.
                    if batch_tx.send(batch).is_err() || failed {
                        break;
                    }
                }
            });
            receivers.push(batch_rx);
        }
        let mut reader = first;
        let mut next = || -> Result<Option<RecordBatch>> {
            let head = guarded(|| reader.next().transpose()).map_err(fail)?;
            let mut parts = Vec::with_capacity(receivers.len() + 1);
            for rx in &receivers {
                // A finished reader has dropped its sender: no batch.
                if let Ok(batch) = rx.recv() {
                    parts.push(batch.map_err(fail)?);
                }
            }
            let Some(head) = head else {
                return match parts.first() {
                    None => Ok(None),
                    Some(b) => Err(join_mismatch(shard, row_group, 0, b.num_rows())),
                };
            };
            if parts.len() != receivers.len() || parts.iter().any(|b| b.num_rows() != head.num_rows()) {
                let found = parts.iter().map(RecordBatch::num_rows).find(|&n| n != head.num_rows()).unwrap_or(0);
                return Err(join_mismatch(shard, row_group, head.num_rows(), found));
            }
            parts.insert(0, head);
            join_columns(&parts).map(Some).map_err(fail)
        };
        cut_into_pieces(shard, row_group, &mut next, tx)
    })
}

/// Batches of column groups that should line up but do not: the file's
/// column chunks disagree on the row group's rows.
fn join_mismatch(shard: &OpenShard, row_group: usize, expected: usize, found: usize) -> IoError {
    let error = ArrowError::ParquetError(format!(
        "its column chunks hold different numbers of rows ({expected} and {found} in one batch)"
    ));
    decode_error(shard, row_group, None, error)
}

/// The columns of equally long batches side by side, as one batch.
fn join_columns(parts: &[RecordBatch]) -> std::result::Result<RecordBatch, ArrowError> {
    let fields: Vec<_> = parts.iter().flat_map(|b| b.schema().fields().iter().cloned().collect::<Vec<_>>()).collect();
    let columns = parts.iter().flat_map(|b| b.columns().iter().cloned()).collect();
    RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), columns)
}

/// Cuts the row group's batches (from `next`) into pieces along the chunk
/// grid and sends them. Returns `Ok` early if the consumer has gone.
fn cut_into_pieces(
    shard: &OpenShard,
    row_group: usize,
    next: &mut dyn FnMut() -> Result<Option<RecordBatch>>,
    tx: &Sender<Result<Piece>>,
) -> Result<()> {
    let spec = &*shard.spec;
    let meta = &shard.meta;
    let rg_start = meta.row_group_starts[row_group];
    let rg_end = meta.row_group_starts[row_group + 1];
    let c = spec.chunk_rows as u64;
    let mut cur = rg_start;
    let mut piece: Option<PieceBuf> = None;
    while let Some(batch) = next()? {
        let cols =
            BatchColumns::new(shard, &batch).map_err(|(column, e)| decode_error(shard, row_group, Some(column), e))?;
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
                piece = Some(PieceBuf::new(spec, cur, (end - cur) as usize));
            }
            let p = piece.as_mut().expect("piece allocated above");
            let take = (nb - off).min(p.len - p.filled);
            p.add(&cols, off, take, shard)?;
            off += take;
            if p.filled == p.len {
                let done = piece.take().expect("piece present");
                cur += done.len as u64;
                if tx.send(Ok(done.finish(shard)?)).is_err() {
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

/// The needed columns of one batch, converted once.
struct BatchColumns {
    /// Numeric columns, then the label.
    numeric: Vec<ArrayRef>,
    /// Columns to count, then columns to encode.
    categorical: Vec<CatColumn>,
    keep: Vec<ArrayRef>,
}

impl BatchColumns {
    fn new(shard: &OpenShard, batch: &RecordBatch) -> Result<BatchColumns, (String, ArrowError)> {
        let spec = &*shard.spec;
        let numeric = spec
            .columns
            .iter()
            .chain(&spec.label)
            .map(|n| to_numeric(&shard.column(batch, n)).map_err(|e| (n.clone(), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let cat_names = spec.categorical.iter().chain(spec.vocabularies.iter().map(|v| &v.column));
        let categorical = cat_names
            .map(|n| CatColumn::new(&shard.column(batch, n)).map_err(|e| (n.clone(), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let keep = spec
            .keep
            .iter()
            .zip(&spec.keep_types)
            .map(|(n, dt)| {
                let a = shard.column(batch, n);
                if a.data_type() == dt { Ok(a) } else { arrow::compute::cast(&a, dt).map_err(|e| (n.clone(), e)) }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BatchColumns { numeric, categorical, keep })
    }
}

/// A piece being filled by a worker.
struct PieceBuf {
    start: u64,
    len: usize,
    filled: usize,
    x: Array2<f64>,
    y: Option<Array1<f64>>,
    /// Rows to drop (allocated on the first one).
    bad: Option<Vec<bool>>,
    imputed: u64,
    other: Vec<u64>,
    counts: Vec<HashMap<String, u64>>,
    missing: Vec<u64>,
    /// Per keep column, the slices of the batches seen so far.
    keep: Vec<Vec<ArrayRef>>,
}

impl PieceBuf {
    fn new(spec: &Spec, start: u64, len: usize) -> PieceBuf {
        PieceBuf {
            start,
            len,
            filled: 0,
            x: Array2::zeros((len, spec.width())),
            y: spec.label.is_some().then(|| Array1::zeros(len)),
            bad: None,
            imputed: 0,
            other: vec![0; spec.vocabularies.len()],
            counts: vec![HashMap::new(); spec.categorical.len()],
            missing: vec![0; spec.categorical.len()],
            keep: vec![Vec::new(); spec.keep.len()],
        }
    }

    fn is_bad(&self, row: usize) -> bool {
        self.bad.as_ref().is_some_and(|b| b[row])
    }

    fn mark_bad(&mut self, row: usize) {
        let len = self.len;
        self.bad.get_or_insert_with(|| vec![false; len])[row] = true;
    }

    /// Adds `take` rows starting at batch row `off`.
    fn add(&mut self, cols: &BatchColumns, off: usize, take: usize, shard: &OpenShard) -> Result<()> {
        let spec = &*shard.spec;
        let num: Vec<NumColumn<'_>> =
            cols.numeric.iter().map(|a| NumColumn::new(a).expect("to_numeric returns a readable type")).collect();
        self.fill_numbers(&num, off, take, spec.columns.len());
        let mut cat_missing = None;
        // Counted columns first, so that a missing index `k` names
        // `categorical_names()[k]`.
        for (k, col) in cols.categorical[..spec.categorical.len()].iter().enumerate() {
            col.for_each(off, take, |i, value| {
                if value.is_none() {
                    cat_missing.get_or_insert_with(|| vec![None; take])[i].get_or_insert(k);
                }
            });
        }
        self.fill_categories(&cols.categorical[spec.categorical.len()..], off, take, spec, &mut cat_missing);
        if spec.nan_policy != NanPolicy::Keep {
            self.check(&num, cat_missing.as_deref(), off, take, shard)?;
        }
        self.count(&cols.categorical[..spec.categorical.len()], off, take);
        if !spec.vocabularies.is_empty() {
            let mut at = spec.columns.len();
            for (k, v) in spec.vocabularies.iter().enumerate() {
                at += v.width();
                for r in self.filled..self.filled + take {
                    if !self.is_bad(r) && self.x[[r, at - 1]] == 1.0 {
                        self.other[k] += 1;
                    }
                }
            }
        }
        for (parts, a) in self.keep.iter_mut().zip(&cols.keep) {
            parts.push(a.slice(off, take));
        }
        self.filled += take;
        Ok(())
    }

    /// Copies the numeric columns and the label.
    fn fill_numbers(&mut self, cols: &[NumColumn<'_>], off: usize, take: usize, d: usize) {
        let width = self.x.ncols();
        let out = self.x.as_slice_mut().expect("standard layout");
        // Transpose in blocks of rows so that the destination rows of a block
        // stay in cache while every column writes into them.
        const BLOCK: usize = 64;
        let mut r = 0;
        while r < take {
            let n = BLOCK.min(take - r);
            for (j, col) in cols[..d].iter().enumerate() {
                col.write(off + r, n, out, (self.filled + r) * width + j, width);
            }
            r += n;
        }
        if let (Some(y), Some(col)) = (self.y.as_mut(), cols.get(d)) {
            let ys = y.as_slice_mut().expect("contiguous");
            col.write(off, take, ys, self.filled, 1);
        }
    }

    /// Sets the indicator of each row's slot; a null goes to "other" and
    /// is recorded in `missing` (per row, the index of the first
    /// categorical column with a null, counted columns first).
    fn fill_categories(
        &mut self,
        cols: &[CatColumn],
        off: usize,
        take: usize,
        spec: &Spec,
        missing: &mut Option<Vec<Option<usize>>>,
    ) {
        let mut at = spec.columns.len();
        let base = self.filled;
        for (k, (col, v)) in cols.iter().zip(&spec.vocabularies).enumerate() {
            let x = &mut self.x;
            col.for_each(off, take, |i, value| {
                let slot = match value {
                    Some(s) => v.slot(s),
                    None => {
                        let m = missing.get_or_insert_with(|| vec![None; take]);
                        m[i].get_or_insert(spec.categorical.len() + k);
                        v.width() - 1
                    }
                };
                x[[base + i, at + slot]] = 1.0;
            });
            at += v.width();
        }
    }

    /// Counts the values of the counted categorical columns over the rows
    /// that are kept.
    fn count(&mut self, cols: &[CatColumn], off: usize, take: usize) {
        for (k, col) in cols.iter().enumerate() {
            let (bad, base) = (self.bad.as_deref(), self.filled);
            let (counts, missing) = (&mut self.counts[k], &mut self.missing[k]);
            col.for_each(off, take, |i, value| {
                if bad.is_some_and(|b| b[base + i]) {
                    return;
                }
                match value {
                    None => *missing += 1,
                    Some(s) => match counts.get_mut(s) {
                        Some(n) => *n += 1,
                        None => {
                            counts.insert(s.to_string(), 1);
                        }
                    },
                }
            });
        }
    }

    /// Applies the missing-value policy to the rows just filled: the first
    /// missing value is an error under `Refuse`; `Skip` marks its row;
    /// `Impute` fills numbers (the categories went to "other" already) and
    /// marks rows with a missing label.
    fn check(
        &mut self,
        cols: &[NumColumn<'_>],
        cat_missing: Option<&[Option<usize>]>,
        off: usize,
        take: usize,
        shard: &OpenShard,
    ) -> Result<()> {
        let spec = &*shard.spec;
        let (d, width) = (spec.columns.len(), self.x.ncols());
        let rows = self.filled..self.filled + take;
        let finite = {
            let xs = self.x.as_slice().expect("standard layout");
            let ys = self.y.as_ref().map(|y| &y.as_slice().expect("contiguous")[rows.clone()]);
            rows.clone().all(|r| xs[r * width..r * width + d].iter().all(|v| v.is_finite()))
                && ys.is_none_or(|y| y.iter().all(|v| v.is_finite()))
        };
        if finite && cat_missing.is_none() {
            return Ok(());
        }
        for i in 0..take {
            let r = rows.start + i;
            let row_in_file = self.start + r as u64;
            let row_id = shard.meta.info.first_row + row_in_file;
            let bad_num = (0..d).find(|&j| !self.x[[r, j]].is_finite());
            let bad_label = self.y.as_ref().is_some_and(|y| !y[r].is_finite());
            let bad_cat = cat_missing.and_then(|m| m[i]);
            if bad_num.is_none() && !bad_label && bad_cat.is_none() {
                continue;
            }
            match spec.nan_policy {
                NanPolicy::Refuse => {
                    if let Some(j) = bad_num.or(bad_label.then_some(d)) {
                        let value = if cols[j].is_null(off + i) {
                            BadValue::Null
                        } else if j < d {
                            BadValue::Value(self.x[[r, j]])
                        } else {
                            BadValue::Value(self.y.as_ref().expect("label read")[r])
                        };
                        let column = if j < d { &spec.columns[j] } else { spec.label.as_ref().expect("label") };
                        return Err(IoError::NonFinite {
                            path: shard.path(),
                            row_id,
                            row_in_file,
                            column: column.clone(),
                            value,
                        });
                    }
                    let k = bad_cat.expect("some value is missing");
                    return Err(IoError::MissingCategory {
                        path: shard.path(),
                        row_id,
                        row_in_file,
                        column: spec.categorical_names()[k].to_string(),
                    });
                }
                NanPolicy::Skip => self.mark_bad(r),
                NanPolicy::Impute if bad_label => self.mark_bad(r),
                NanPolicy::Impute => {
                    for j in 0..d {
                        if !self.x[[r, j]].is_finite() {
                            self.x[[r, j]] = spec.impute[j];
                            self.imputed += 1;
                        }
                    }
                    if let Some(m) = cat_missing {
                        // A row counts once however many of its categories are null.
                        self.imputed += m[i].map_or(0, |_| 1);
                    }
                }
                NanPolicy::Keep => {}
            }
        }
        Ok(())
    }

    /// Drops marked rows and turns the buffer into a piece.
    fn finish(self, shard: &OpenShard) -> Result<Piece> {
        let PieceBuf { start, len, mut x, mut y, bad, imputed, other, counts, missing, keep, .. } = self;
        let spec = &*shard.spec;
        let category_counts = spec
            .categorical
            .iter()
            .zip(counts)
            .zip(missing)
            .map(|((column, counts), missing)| CategoryCounts {
                column: column.clone(),
                counts: counts.into_iter().collect(),
                missing,
            })
            .collect();
        let keep: Vec<ArrayRef> = keep
            .iter()
            .map(|parts| {
                let views: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                arrow::compute::concat(&views)
            })
            .collect::<Result<_, _>>()
            .map_err(|e| IoError::Decode { path: shard.path(), row_group: 0, column: None, error: e })?;
        let Some(bad) = bad else {
            return Ok(Piece {
                start,
                source_rows: len,
                x,
                y,
                kept: None,
                skipped: 0,
                imputed,
                other,
                category_counts,
                keep,
            });
        };
        let base = shard.meta.info.first_row + start;
        let width = x.ncols();
        let mut kept = Vec::with_capacity(len);
        let xs = x.as_slice_mut().expect("standard layout");
        let mut w = 0;
        for r in 0..len {
            if bad[r] {
                continue;
            }
            if w != r {
                xs.copy_within(r * width..(r + 1) * width, w * width);
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
        let mask = BooleanArray::from_iter(bad.iter().map(|b| Some(!b)));
        let keep = keep
            .iter()
            .map(|a| arrow::compute::filter(a, &mask))
            .collect::<Result<_, _>>()
            .map_err(|e| IoError::Decode { path: shard.path(), row_group: 0, column: None, error: e })?;
        Ok(Piece {
            start,
            source_rows: len,
            x,
            y,
            kept: Some(kept),
            skipped: len - w,
            imputed,
            other,
            category_counts,
            keep,
        })
    }
}
