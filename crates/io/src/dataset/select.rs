//! Choosing a dataset's input columns by name or glob, with type checks
//! that explain how to fix a refused column.

use super::schema::{Kind, kind};
use super::{Dataset, LabelSpec};
use crate::error::{IoError, Result};
use globset::{Glob, GlobMatcher};

/// Which columns are inputs, categorical, carried along or the label; each
/// field is one command-line flag. Built with `with_*` setters.
///
/// Patterns are column names or globs (`*`, `?`, `[abc]`, `{a,b}`); every
/// pattern must match at least one column.
///
/// | Name | Flag | Default | Purpose |
/// |---|---|---|---|
/// | `columns` | `--columns` | all but partition keys | input columns |
/// | `exclude` | `--exclude` | none | columns left out of the inputs |
/// | `categorical` | `--categorical` | none | columns one-hot encoded (see [`Vocabulary`](crate::Vocabulary)) |
/// | `keep` | `--keep` | none | columns carried unchanged into outputs |
/// | `label` | `--label` | [`LabelSpec::None`] | the target column |
///
/// Rules: the inputs are the `columns` matches (every column but the Hive
/// partition keys when `columns` is empty) plus the `categorical` matches,
/// minus the `exclude` matches and the label. Numbers (booleans, integers,
/// floats, decimals, dictionaries of these) are numeric inputs.
/// Date/time columns are refused unless named exactly (not by a glob) in
/// `columns`, and are then read as numbers (days, or time units, since the
/// epoch). String columns must be categorical or excluded. `keep` columns
/// may have any type and may also be inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ColumnSelection {
    /// Input column names or globs; empty: every column but partition keys.
    pub columns: Vec<String>,
    /// Names or globs of columns to leave out.
    pub exclude: Vec<String>,
    /// Names or globs of categorical columns.
    pub categorical: Vec<String>,
    /// Names or globs of columns to carry into outputs.
    pub keep: Vec<String>,
    /// The label column.
    pub label: LabelSpec,
}

impl ColumnSelection {
    /// Every column but the partition keys, no label.
    pub fn new() -> Self {
        Self::default()
    }

    /// Input columns (names or globs). All by default.
    pub fn with_columns<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.columns = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Columns to leave out (names or globs). None by default.
    pub fn with_exclude<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.exclude = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Categorical columns (names or globs). None by default.
    pub fn with_categorical<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.categorical = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Columns carried into outputs (names or globs). None by default.
    pub fn with_keep<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.keep = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// The label column. [`LabelSpec::None`] by default.
    pub fn with_label(mut self, label: LabelSpec) -> Self {
        self.label = label;
        self
    }
}

/// The columns a [`ColumnSelection`] resolves to, each list in dataset
/// column order. Store it in a model: `predict` reads these names from data
/// that may have more columns, in any order.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SelectedColumns {
    /// Numeric input columns ([`ReadOptions::columns`](crate::ReadOptions::columns)).
    pub numeric: Vec<String>,
    /// Categorical input columns.
    pub categorical: Vec<String>,
    /// The label column.
    pub label: Option<String>,
    /// Columns carried into outputs.
    pub keep: Vec<String>,
}

/// One pattern: an exact name or a glob.
struct Pattern {
    text: String,
    glob: Option<GlobMatcher>,
}

impl Pattern {
    fn new(option: &'static str, text: &str) -> Result<Pattern> {
        let is_glob = text.contains(['*', '?', '[', '{']);
        let glob = if is_glob {
            let g = Glob::new(text).map_err(|_| IoError::InvalidOption {
                option,
                value: text.to_string(),
                expected: "a column name or a glob such as x*",
            })?;
            Some(g.compile_matcher())
        } else {
            None
        };
        Ok(Pattern { text: text.to_string(), glob })
    }

    fn matches(&self, column: &str) -> bool {
        match &self.glob {
            Some(g) => g.is_match(column),
            None => self.text == column,
        }
    }
}

/// Compiled patterns of one option; each must match some column.
struct Patterns(Vec<Pattern>);

impl Patterns {
    fn new(ds: &Dataset, option: &'static str, texts: &[String]) -> Result<Patterns> {
        let pats = texts.iter().map(|t| Pattern::new(option, t)).collect::<Result<Vec<_>>>()?;
        for p in &pats {
            if !ds.columns().iter().any(|c| p.matches(c)) {
                return Err(IoError::PatternMatchesNothing {
                    path: ds.path().to_path_buf(),
                    option,
                    pattern: p.text.clone(),
                    available: ds.columns().to_vec(),
                });
            }
        }
        Ok(Patterns(pats))
    }

    fn matches(&self, column: &str) -> bool {
        self.0.iter().any(|p| p.matches(column))
    }

    fn names_exactly(&self, column: &str) -> bool {
        self.0.iter().any(|p| p.glob.is_none() && p.text == column)
    }
}

impl Dataset {
    /// Resolves a [`ColumnSelection`] against this dataset's columns and
    /// types; see there for the rules.
    ///
    /// # Errors
    /// A pattern that matches no column ([`IoError::PatternMatchesNothing`]);
    /// a string input column that is not categorical
    /// ([`IoError::TextColumn`]); a date/time input not named exactly
    /// ([`IoError::TemporalColumn`]); another non-numeric input
    /// ([`IoError::NotNumeric`]); a label problem as in
    /// [`resolve_columns`](Self::resolve_columns).
    pub fn select_columns(&self, sel: &ColumnSelection) -> Result<SelectedColumns> {
        let label = self.resolve_label(&sel.label)?;
        let columns = Patterns::new(self, "--columns", &sel.columns)?;
        let exclude = Patterns::new(self, "--exclude", &sel.exclude)?;
        let categorical = Patterns::new(self, "--categorical", &sel.categorical)?;
        let keep = Patterns::new(self, "--keep", &sel.keep)?;
        let path = self.shards()[0].path.clone();
        let mut out = SelectedColumns { label: label.clone(), ..Default::default() };
        for field in self.schema().fields() {
            let name = field.name();
            if keep.matches(name) {
                out.keep.push(name.clone());
            }
            let wanted =
                if sel.columns.is_empty() { !self.partition_columns().contains(name) } else { columns.matches(name) };
            let is_categorical = categorical.matches(name);
            if !(wanted || is_categorical) || exclude.matches(name) || Some(name) == label.as_ref() {
                continue;
            }
            if is_categorical {
                out.categorical.push(name.clone());
                continue;
            }
            let data_type = field.data_type().clone();
            let column = name.clone();
            match kind(field.data_type()) {
                Kind::Number => out.numeric.push(column),
                Kind::Temporal if columns.names_exactly(name) => out.numeric.push(column),
                Kind::Temporal => return Err(IoError::TemporalColumn { path, column, data_type }),
                Kind::Text => return Err(IoError::TextColumn { path, column, data_type }),
                Kind::Other => return Err(IoError::NotNumeric { path, column, data_type }),
            }
        }
        Ok(out)
    }
}
