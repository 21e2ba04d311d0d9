//! How a dataset's raw columns become the map's input matrix: numeric
//! columns as they are (missing values replaced by the training means
//! under `--nan impute`), then, per categorical column, one indicator
//! column per vocabulary value plus "other".
//!
//! The selection, the vocabularies and the means are learned once (the
//! prepare pass of `fit`) and stored in the model, so every later pass and
//! `predict` build the same matrix, reading the columns by name.

use anyhow::{Result, bail};
use kapprox_io::{ColumnSelection, Dataset, LabelSpec, NanPolicy, ReadOptions, SelectedColumns, Vocabulary};
use serde::{Deserialize, Serialize};

/// The input columns of a model, and how they are encoded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    /// The training data's columns: numeric and categorical inputs, label.
    pub columns: SelectedColumns,
    /// One per categorical column, in the order of `columns.categorical`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vocabularies: Vec<Vocabulary>,
    /// `--nan impute`: the fill value of each numeric column (its training mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impute: Option<Vec<f64>>,
}

impl Inputs {
    /// Names of the input matrix's columns: numeric, then indicators.
    pub fn x_columns(&self) -> Vec<String> {
        self.encode(ReadOptions::new(self.columns.numeric.clone())).x_column_names()
    }

    /// Width of the input matrix.
    pub fn n_x(&self) -> usize {
        self.columns.numeric.len() + self.vocabularies.iter().map(Vocabulary::width).sum::<usize>()
    }

    /// `read` with the vocabularies and fill values of these inputs.
    pub fn encode(&self, read: ReadOptions) -> ReadOptions {
        let read = read.with_vocabularies(self.vocabularies.clone());
        match &self.impute {
            Some(means) => read.with_impute_values(means.clone()),
            None => read,
        }
    }

    /// The reading options of data passed through a model with these
    /// inputs, under the missing-value policy `nan` (`None`: impute when
    /// the model has means, else refuse).
    ///
    /// # Errors
    /// `--nan impute` with a model that has no means.
    pub fn read_options(&self, label: Option<String>, nan: Option<NanPolicy>) -> Result<ReadOptions> {
        let nan = match (nan, &self.impute) {
            (Some(NanPolicy::Impute), None) => {
                bail!("--nan impute: the model has no training means; it was fitted without --nan impute")
            }
            (Some(p), _) => p,
            (None, Some(_)) => NanPolicy::Impute,
            (None, None) => NanPolicy::Refuse,
        };
        Ok(self.encode(ReadOptions::new(self.columns.numeric.clone()).with_label(label)).with_nan_policy(nan))
    }

    /// Checks that `ds` holds every column these inputs read (in any
    /// order, among any others), naming the first missing one.
    ///
    /// # Errors
    /// A missing input column.
    pub fn check_dataset(&self, ds: &Dataset) -> Result<()> {
        let c = &self.columns;
        for name in c.numeric.iter().chain(&c.categorical) {
            if !ds.columns().contains(name) {
                bail!(
                    "{}: column {name:?} that the model needs is missing (the model reads {}; the data has {})",
                    ds.path().display(),
                    c.numeric.iter().chain(&c.categorical).cloned().collect::<Vec<_>>().join(", "),
                    ds.columns().join(", ")
                );
            }
        }
        Ok(())
    }
}

/// The column flags of the commands that choose input columns
/// (`--columns`, `--exclude`, `--categorical`, `--max-categories`).
///
/// Stored in part files flattened beside the other reading options; empty
/// lists are left out, so files of earlier versions read as "all columns".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnFlags {
    /// Input columns (names or globs); empty: every column but the label
    /// and partition keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
    /// Columns left out (names or globs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Categorical columns, one-hot encoded (names or globs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categorical: Vec<String>,
    /// Most values kept per categorical column, besides "other" (≥ 1;
    /// default [`kapprox_io::DEFAULT_MAX_CATEGORIES`]).
    #[serde(default = "default_max_categories")]
    pub max_categories: usize,
}

fn default_max_categories() -> usize {
    kapprox_io::DEFAULT_MAX_CATEGORIES
}

impl Default for ColumnFlags {
    fn default() -> Self {
        ColumnFlags {
            columns: Vec::new(),
            exclude: Vec::new(),
            categorical: Vec::new(),
            max_categories: default_max_categories(),
        }
    }
}

impl ColumnFlags {
    /// Resolves the flags against `ds` with `label`; the row-id column
    /// written by `featurize` is never an input.
    ///
    /// With [`LabelSpec::Hint`] and no recorded label, there is no label
    /// unless `need_label`, which makes that an error.
    ///
    /// # Errors
    /// A pattern that matches nothing, a non-numeric input column (the
    /// message names the flag that fixes it), a missing label.
    pub fn select(&self, ds: &Dataset, label: &LabelSpec, need_label: bool) -> Result<SelectedColumns> {
        let label = match (label, ds.label_hint()) {
            (LabelSpec::Hint, None) if !need_label => LabelSpec::None,
            (l, _) => l.clone(),
        };
        let sel = ColumnSelection::new()
            .with_columns(self.columns.clone())
            .with_exclude(self.exclude.clone())
            .with_categorical(self.categorical.clone())
            .with_label(label);
        let mut cols = ds.select_columns(&sel)?;
        cols.numeric.retain(|c| c != kapprox_io::writer::ROW_ID_COLUMN);
        if cols.numeric.is_empty() && cols.categorical.is_empty() {
            bail!("{}: no input columns are left (see --columns and --exclude)", ds.path().display());
        }
        Ok(cols)
    }

    /// Refuses what a command that does not learn vocabularies cannot do.
    ///
    /// # Errors
    /// `--categorical` given.
    pub fn refuse_categorical(&self, command: &str) -> Result<()> {
        if !self.categorical.is_empty() {
            bail!(
                "--categorical: {command} cannot learn a vocabulary (only fit does, from its statistics pass); fit a \
                 model and featurize with --model MODEL, or leave the column out with --exclude"
            );
        }
        Ok(())
    }
}
