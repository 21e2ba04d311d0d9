//! What a [`ChunkReader`](super::ChunkReader) reads and how.

use crate::categorical::Vocabulary;

/// Default rows per chunk.
pub const DEFAULT_CHUNK_ROWS: usize = 8192;
/// Default number of decoded pieces (of at most `chunk_rows` rows) allowed
/// in flight ahead of the consumer.
pub const DEFAULT_PREFETCH: usize = 4;
/// Default number of decode threads: 0 means `min(available cores, prefetch)`.
pub const DEFAULT_THREADS: usize = 0;
/// Default policy for missing values.
pub const DEFAULT_NAN_POLICY: NanPolicy = NanPolicy::Refuse;
/// Default for releasing mapped pages after each row group.
pub const DEFAULT_RELEASE_PAGES: bool = true;

/// What to do with a missing value: NaN, ±Inf or null in a numeric column
/// or the label, null in a categorical column. Nulls and NaN are treated
/// alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NanPolicy {
    /// Fail with an error naming the file, row and column.
    #[default]
    Refuse,
    /// Drop the row and count it ([`ChunkReader::rows_skipped`](super::ChunkReader::rows_skipped)).
    Skip,
    /// Pass the value through (nulls become NaN). For reading back outputs
    /// such as predictions, and for the statistics pass before imputation
    /// ([`ColumnStats`](crate::ColumnStats) leaves missing values out);
    /// never for training input.
    Keep,
    /// Replace a missing numeric value by its column's fill value
    /// ([`ReadOptions::with_impute_values`], the training mean) and a
    /// missing category by the "other" slot, and count them
    /// ([`ChunkReader::values_imputed`](super::ChunkReader::values_imputed));
    /// a row with a missing label is skipped, since a target cannot be
    /// made up.
    Impute,
}

impl std::str::FromStr for NanPolicy {
    type Err = crate::IoError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "refuse" => Ok(NanPolicy::Refuse),
            "skip" => Ok(NanPolicy::Skip),
            "keep" => Ok(NanPolicy::Keep),
            "impute" => Ok(NanPolicy::Impute),
            _ => Err(crate::IoError::InvalidOption {
                option: "missing-value policy",
                value: s.to_string(),
                expected: "one of refuse, skip, impute, keep",
            }),
        }
    }
}

/// Options of [`Dataset::reader`](crate::Dataset::reader), built with
/// `with_*` setters.
///
/// `x`'s columns are the numeric `columns` in order, then, for each
/// vocabulary given to [`with_vocabularies`](Self::with_vocabularies), its
/// indicator columns ([`Vocabulary::column_names`]).
///
/// | Name | Default | Purpose |
/// |---|---|---|
/// | `columns` | (given to `new`) | numeric feature columns, in the order of `x`'s columns |
/// | `label` | none | label column, read into `y` |
/// | `categorical` | none | categorical columns to count ([`Chunk::category_counts`](crate::Chunk::category_counts)) |
/// | `vocabularies` | none | categorical columns to one-hot encode into `x` |
/// | `keep` | none | columns delivered unchanged ([`Chunk::keep`](crate::Chunk::keep)) |
/// | `chunk_rows` | [`DEFAULT_CHUNK_ROWS`] | rows per chunk, ≥ 1 |
/// | `shards` | all | which shards to read (read in ascending order) |
/// | `nan_policy` | [`DEFAULT_NAN_POLICY`] | missing-value handling |
/// | `impute_values` | none | fill values of `columns`, required by [`NanPolicy::Impute`] |
/// | `prefetch` | [`DEFAULT_PREFETCH`] | decoded pieces in flight, ≥ 1 |
/// | `threads` | [`DEFAULT_THREADS`] | decode threads (0 = auto), capped by `prefetch` |
/// | `release_pages` | [`DEFAULT_RELEASE_PAGES`] | drop mapped pages after each row group |
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Numeric feature columns, in output order.
    pub columns: Vec<String>,
    /// Label column.
    pub label: Option<String>,
    /// Categorical columns whose values are counted.
    pub categorical: Vec<String>,
    /// Categorical columns one-hot encoded into `x`.
    pub vocabularies: Vec<Vocabulary>,
    /// Columns delivered unchanged.
    pub keep: Vec<String>,
    /// Rows per chunk.
    pub chunk_rows: usize,
    /// Shard indices to read (`None`: all).
    pub shards: Option<Vec<usize>>,
    /// Missing-value handling.
    pub nan_policy: NanPolicy,
    /// Fill values of `columns` under [`NanPolicy::Impute`].
    pub impute_values: Option<Vec<f64>>,
    /// Decoded pieces in flight.
    pub prefetch: usize,
    /// Decode threads (0: automatic).
    pub threads: usize,
    /// Release mapped pages after each row group.
    pub release_pages: bool,
}

impl ReadOptions {
    /// Reads the given numeric feature columns, with every other option at
    /// its default.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Self {
        ReadOptions {
            columns: columns.into_iter().map(Into::into).collect(),
            label: None,
            categorical: Vec::new(),
            vocabularies: Vec::new(),
            keep: Vec::new(),
            chunk_rows: DEFAULT_CHUNK_ROWS,
            shards: None,
            nan_policy: DEFAULT_NAN_POLICY,
            impute_values: None,
            prefetch: DEFAULT_PREFETCH,
            threads: DEFAULT_THREADS,
            release_pages: DEFAULT_RELEASE_PAGES,
        }
    }

    /// Reads this column into [`Chunk::y`](crate::Chunk::y). No label by default.
    pub fn with_label(mut self, label: Option<impl Into<String>>) -> Self {
        self.label = label.map(Into::into);
        self
    }

    /// Counts the values of these categorical columns in each chunk
    /// ([`Chunk::category_counts`](crate::Chunk::category_counts), one entry
    /// per column in this order), for learning a [`Vocabulary`]. Any column
    /// type can be counted (values as text). None by default.
    pub fn with_categorical<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.categorical = columns.into_iter().map(Into::into).collect();
        self
    }

    /// One-hot encodes these categorical columns into `x`, after the numeric
    /// columns, in this order. None by default.
    pub fn with_vocabularies(mut self, vocabularies: impl IntoIterator<Item = Vocabulary>) -> Self {
        self.vocabularies = vocabularies
            .into_iter()
            .map(|mut v| {
                v.rebuild_index();
                v
            })
            .collect();
        self
    }

    /// Delivers these columns unchanged, as Arrow arrays aligned with the
    /// chunk's rows ([`Chunk::keep`](crate::Chunk::keep)). None by default.
    pub fn with_keep<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.keep = columns.into_iter().map(Into::into).collect();
        self
    }

    /// Rows per chunk. Default [`DEFAULT_CHUNK_ROWS`].
    pub fn with_chunk_rows(mut self, chunk_rows: usize) -> Self {
        self.chunk_rows = chunk_rows;
        self
    }

    /// Reads only these shards (indices into
    /// [`Dataset::shards`](crate::Dataset::shards)), e.g. a `Vec<usize>` or
    /// a range. They are read in ascending order, so chunks still come in
    /// global row order. All shards by default.
    pub fn with_shards(mut self, shards: impl IntoIterator<Item = usize>) -> Self {
        self.shards = Some(shards.into_iter().collect());
        self
    }

    /// Missing-value handling. Default [`NanPolicy::Refuse`].
    pub fn with_nan_policy(mut self, policy: NanPolicy) -> Self {
        self.nan_policy = policy;
        self
    }

    /// Fill values, one per numeric column, used under
    /// [`NanPolicy::Impute`] (typically
    /// [`ColumnStats::mean`](crate::ColumnStats::mean) of a statistics pass
    /// read with [`NanPolicy::Keep`]). None by default.
    pub fn with_impute_values(mut self, values: Vec<f64>) -> Self {
        self.impute_values = Some(values);
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
    /// by default ([`DEFAULT_RELEASE_PAGES`]); has no effect off Unix or on
    /// object storage (whose row groups are dropped after decoding anyway).
    pub fn with_release_pages(mut self, release: bool) -> Self {
        self.release_pages = release;
        self
    }

    /// Width of `x`: numeric columns plus indicator columns.
    pub fn n_x_columns(&self) -> usize {
        self.columns.len() + self.vocabularies.iter().map(Vocabulary::width).sum::<usize>()
    }

    /// Names of `x`'s columns: the numeric columns, then each vocabulary's
    /// indicator columns.
    pub fn x_column_names(&self) -> Vec<String> {
        let mut names = self.columns.clone();
        for v in &self.vocabularies {
            names.extend(v.column_names());
        }
        names
    }
}
