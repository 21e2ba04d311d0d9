//! LIBSVM / svmlight text: `label index:value index:value ...`, 1-based
//! increasing indices, optional `# comment`; expanded to dense columns.

use super::{ConvertOptions, RowSource, input::open_text_input, within_magnitude};
use crate::error::{IoError, LibsvmProblem, Result};
use crate::reader::NanPolicy;
use arrow::datatypes::DataType;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Name of the label column of converted LIBSVM and IDX input.
pub(crate) const LABEL: &str = "label";

pub(crate) struct Libsvm {
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    line: String,
    line_no: u64,
    n_features: usize,
    names: Vec<String>,
    types: Vec<DataType>,
    nan_policy: NanPolicy,
    skipped: u64,
}

/// The data part of a line (comment stripped) if it is not blank.
fn content(line: &str) -> Option<&str> {
    let data = line.split_once('#').map_or(line, |(d, _)| d).trim();
    (!data.is_empty()).then_some(data)
}

/// What the first pass over a file finds: the largest index, the line it
/// is on, and the number of data lines.
struct Scan {
    max_index: usize,
    max_line: u64,
    rows: u64,
}

/// The largest index in the file: a first pass, reading indices only.
/// Malformed tokens are left for the second pass to report with context.
fn scan(path: &Path, max_line_bytes: u64) -> Result<Scan> {
    let mut reader = open_text_input(path, max_line_bytes)?;
    let mut line = String::new();
    let mut found = Scan { max_index: 0, max_line: 0, rows: 0 };
    let mut line_no = 0u64;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| IoError::os(path, "cannot read", e))? == 0 {
            return Ok(found);
        }
        line_no += 1;
        let Some(data) = content(&line) else { continue };
        found.rows += 1;
        for tok in data.split_ascii_whitespace().skip(1) {
            if let Some(i) = tok.split_once(':').and_then(|(i, _)| i.parse::<usize>().ok())
                && i > found.max_index
            {
                found.max_index = i;
                found.max_line = line_no;
            }
        }
    }
}

impl Libsvm {
    pub(crate) fn open(path: &Path, opts: &ConvertOptions) -> Result<Libsvm> {
        let n_features = match opts.n_features {
            Some(d) => {
                opts.check_columns(
                    path,
                    None,
                    || format!("n_features {d} ({} columns with the label)", (d as u64).saturating_add(1)),
                    (d as u64).saturating_add(1),
                    None,
                    "expected a smaller n_features, or a larger --max-memory",
                )?;
                d
            }
            None => {
                let s = scan(path, opts.max_line_bytes())?;
                opts.check_columns(
                    path,
                    Some(s.max_line),
                    || {
                        format!(
                            "feature index {} ({} columns with the label)",
                            s.max_index,
                            (s.max_index as u64).saturating_add(1)
                        )
                    },
                    (s.max_index as u64).saturating_add(1),
                    Some(s.rows),
                    "expected feature indices of a plausible size (or give n_features, or a larger --max-memory)",
                )?;
                s.max_index
            }
        };
        let mut names: Vec<String> = (1..=n_features).map(|j| format!("f{j}")).collect();
        names.push(LABEL.to_string());
        Ok(Libsvm {
            path: path.to_path_buf(),
            reader: open_text_input(path, opts.max_line_bytes())?,
            line: String::new(),
            line_no: 0,
            n_features,
            types: vec![DataType::Float64; names.len()],
            names,
            nan_policy: opts.nan_policy,
            skipped: 0,
        })
    }

    fn problem(&self, token: &str, problem: LibsvmProblem) -> IoError {
        IoError::Libsvm { path: self.path.clone(), line: self.line_no, token: token.to_string(), problem }
    }

    /// Parses a number; `Ok(None)` for a non-finite one under `Skip`.
    fn number(&self, text: &str, field: usize, column: &str) -> Result<Option<f64>> {
        let v = text.parse::<f64>().map_err(|_| IoError::ParseNumber {
            path: self.path.clone(),
            line: self.line_no,
            field,
            column: column.to_string(),
            text: text.to_string(),
        })?;
        if !within_magnitude(v) {
            return Err(IoError::ValueTooLarge {
                max: super::MAX_MAGNITUDE,
                path: self.path.clone(),
                line: self.line_no,
                field,
                column: column.to_string(),
                text: text.to_string(),
            });
        }
        match self.nan_policy {
            _ if v.is_finite() => Ok(Some(v)),
            NanPolicy::Keep | NanPolicy::Impute => Ok(Some(v)),
            NanPolicy::Skip => Ok(None),
            NanPolicy::Refuse => Err(IoError::NonFiniteText {
                path: self.path.clone(),
                line: self.line_no,
                field,
                column: column.to_string(),
                text: text.to_string(),
            }),
        }
    }

    /// Parses the current line into `row`; false if it is to be skipped.
    fn parse_line(&self, data: &str, row: &mut [f64]) -> Result<bool> {
        let d = self.n_features;
        row.fill(0.0);
        let mut keep = true;
        let mut tokens = data.split_ascii_whitespace();
        let label = tokens.next().expect("content() returns non-blank data");
        match self.number(label, 1, LABEL)? {
            Some(v) => row[d] = v,
            None => keep = false,
        }
        let mut previous = 0u64;
        for (k, tok) in tokens.enumerate() {
            let Some((idx, val)) = tok.split_once(':') else {
                return Err(self.problem(tok, LibsvmProblem::Pair));
            };
            let idx: u64 = idx.parse().map_err(|_| self.problem(tok, LibsvmProblem::Index))?;
            if idx == 0 {
                return Err(self.problem(tok, LibsvmProblem::ZeroIndex));
            }
            if idx <= previous {
                return Err(self.problem(tok, LibsvmProblem::NotIncreasing { previous }));
            }
            if idx > d as u64 {
                return Err(self.problem(tok, LibsvmProblem::TooLarge { n_features: d }));
            }
            previous = idx;
            let column = &self.names[(idx - 1) as usize];
            match self.number(val, k + 2, column)? {
                Some(v) => row[(idx - 1) as usize] = v,
                None => keep = false,
            }
        }
        Ok(keep)
    }
}

impl RowSource for Libsvm {
    fn columns(&self) -> &[String] {
        &self.names
    }

    fn column_types(&self) -> &[DataType] {
        &self.types
    }

    fn label(&self) -> Option<&str> {
        Some(LABEL)
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn next_row(&mut self, row: &mut [f64]) -> Result<bool> {
        loop {
            // The line buffer is taken out so that parsing can borrow `self`.
            let mut line = std::mem::take(&mut self.line);
            line.clear();
            let n = self.reader.read_line(&mut line).map_err(|e| IoError::os(&self.path, "cannot read", e))?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            let keep = match content(&line) {
                None => None,
                Some(data) => Some(self.parse_line(data, row)?),
            };
            self.line = line;
            match keep {
                Some(true) => return Ok(true),
                Some(false) => self.skipped += 1,
                None => {}
            }
        }
    }
}
