//! How the commands read a dataset: which column is the label, rows per
//! chunk, and what to do with NaN or infinite values.

use crate::inputs::ColumnFlags;
use anyhow::Result;
use kapprox_io::{Dataset, LabelSpec, NanPolicy, ReadOptions};
use serde::{Deserialize, Serialize};

/// Reading options common to every command.
///
/// | Name | Default | Purpose | Range |
/// |---|---|---|---|
/// | `label` | [`LabelSpec::Hint`] (the label recorded by convert) | label column | a name, the last column, the hint, or none |
/// | `chunk_rows` | [`kapprox_io::DEFAULT_CHUNK_ROWS`] | rows per chunk: bounds memory, never changes a result | ≥ 1 |
/// | `nan` | [`NanPolicy::Refuse`] | missing values (null, NaN, ±Inf): refuse, skip the row, or impute | |
/// | `select` | [`ColumnFlags::default`] (every column but the label) | input columns, categorical columns | |
///
/// Stored in part files as `label` (`{"name": "y"}`, `"last"`, `"auto"`,
/// `"none"`), `chunk_rows`, `nan` and the fields of [`ColumnFlags`],
/// beside the fit's other settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadConfig {
    /// Label column choice.
    #[serde(with = "label_doc")]
    pub label: LabelSpec,
    /// Rows per chunk.
    pub chunk_rows: usize,
    /// NaN policy.
    pub nan: NanPolicy,
    /// Input and categorical columns.
    #[serde(flatten)]
    pub select: ColumnFlags,
}

impl Default for ReadConfig {
    fn default() -> Self {
        ReadConfig {
            label: LabelSpec::Hint,
            chunk_rows: kapprox_io::DEFAULT_CHUNK_ROWS,
            nan: NanPolicy::default(),
            select: ColumnFlags::default(),
        }
    }
}

impl ReadConfig {
    /// The reading options for `columns` and `label`, with this
    /// configuration's chunk size and NaN policy.
    pub fn options(&self, columns: Vec<String>, label: Option<String>) -> ReadOptions {
        ReadOptions::new(columns).with_label(label).with_chunk_rows(self.chunk_rows).with_nan_policy(self.nan)
    }
}

/// Features and label; with the label hint and no recorded label, every
/// numeric column is a feature.
pub fn resolve_optional_label(ds: &Dataset, label: &LabelSpec) -> Result<(Vec<String>, Option<String>)> {
    match (label, ds.label_hint()) {
        (LabelSpec::Hint, None) => Ok(ds.resolve_columns(&LabelSpec::None)?),
        _ => Ok(ds.resolve_columns(label)?),
    }
}

/// [`LabelSpec`] as stored in part files: `{"name": ...}`, `"last"`,
/// `"auto"` (the hint) or `"none"`.
mod label_doc {
    use kapprox_io::LabelSpec;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum LabelDoc {
        Name(String),
        Last,
        Auto,
        None,
    }

    pub(super) fn serialize<S: Serializer>(label: &LabelSpec, s: S) -> Result<S::Ok, S::Error> {
        match label {
            LabelSpec::Name(n) => LabelDoc::Name(n.clone()),
            LabelSpec::Last => LabelDoc::Last,
            LabelSpec::Hint => LabelDoc::Auto,
            LabelSpec::None => LabelDoc::None,
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LabelSpec, D::Error> {
        Ok(match LabelDoc::deserialize(d)? {
            LabelDoc::Name(n) => LabelSpec::Name(n),
            LabelDoc::Last => LabelSpec::Last,
            LabelDoc::Auto => LabelSpec::Hint,
            LabelDoc::None => LabelSpec::None,
        })
    }
}
