//! CSV/TSV and whitespace-separated text.

use super::input::{is_compressed, open_text_input};
use super::{ConvertOptions, Delimiter, InputFormat, RowSource, within_magnitude};
use crate::dataset::{LabelSpec, check_unique};
use crate::error::{IoError, Result};
use crate::reader::NanPolicy;
use arrow::datatypes::DataType;
use std::io::{BufRead, Cursor, Read};
use std::path::{Path, PathBuf};

enum Mode {
    Csv { reader: csv::Reader<Box<dyn Read + Send>>, record: csv::ByteRecord },
    Whitespace { reader: Box<dyn BufRead + Send>, line: String, line_no: u64 },
}

pub(crate) struct Delimited {
    path: PathBuf,
    mode: Mode,
    names: Vec<String>,
    types: Vec<DataType>,
    label: Option<String>,
    nan_policy: NanPolicy,
    skipped: u64,
    /// Blank lines before the first line, which the CSV parser never saw.
    line_offset: u64,
}

/// Whether a cell parses as a number (quotes and spaces aside).
fn numeric(cell: &str) -> bool {
    cell.trim().trim_matches('"').trim().parse::<f64>().is_ok()
}

fn sniff_delimiter(line: &str) -> Delimiter {
    if line.contains('\t') {
        Delimiter::Byte(b'\t')
    } else if line.contains(',') {
        Delimiter::Byte(b',')
    } else if line.contains(';') {
        Delimiter::Byte(b';')
    } else {
        Delimiter::Whitespace
    }
}

fn split_simple(line: &str, delim: Delimiter) -> Vec<&str> {
    match delim {
        Delimiter::Whitespace => line.split_ascii_whitespace().collect(),
        Delimiter::Byte(b) => line.split(b as char).collect(),
    }
}

impl Delimited {
    pub(crate) fn open(path: &Path, format: InputFormat, opts: &ConvertOptions) -> Result<Delimited> {
        let mut input = open_text_input(path, opts.max_line_bytes())?;
        let mut first = String::new();
        let mut blank = 0u64;
        loop {
            first.clear();
            let n = input.read_line(&mut first).map_err(|e| IoError::os(path, "cannot read", e))?;
            if n == 0 {
                return Err(IoError::EmptyInput { path: path.to_path_buf() });
            }
            if blank == 0 && first.starts_with('\u{feff}') {
                // A byte-order mark (spreadsheet exports) is not part of the
                // first column's name.
                first.drain(..'\u{feff}'.len_utf8());
            }
            if !first.trim().is_empty() {
                break;
            }
            blank += 1;
        }
        let delim = match (opts.delimiter, format) {
            (Some(d), _) => d,
            (None, InputFormat::Tsv) => Delimiter::Byte(b'\t'),
            (None, _) => sniff_delimiter(first.trim_end_matches(['\n', '\r'])),
        };
        let first_fields = split_simple(first.trim_end_matches(['\n', '\r']), delim);
        let header = opts.header.unwrap_or_else(|| !first_fields.iter().all(|f| numeric(f)));
        let first_len = first_fields.len();
        // Each row takes at least two bytes per field ("1,"), which bounds
        // the rows of a row group for uncompressed text.
        let row_bound = (!is_compressed(path)).then(|| {
            let len = std::fs::metadata(path).map_or(u64::MAX, |m| m.len());
            len / (2 * first_len as u64).max(1) + 1
        });
        opts.check_columns(
            path,
            Some(blank + 1),
            || format!("{first_len} columns"),
            first_len as u64,
            row_bound,
            "expected fewer columns (check the delimiter), or a larger --max-memory",
        )?;
        // Hand the first line back to the parser in front of the rest.
        let rest: Box<dyn Read + Send> = Box::new(Cursor::new(first.into_bytes()).chain(input));
        let mut mode = match delim {
            Delimiter::Byte(b) => Mode::Csv {
                reader: csv::ReaderBuilder::new()
                    .delimiter(b)
                    .has_headers(false)
                    .flexible(true)
                    .trim(csv::Trim::All)
                    .from_reader(rest),
                record: csv::ByteRecord::new(),
            },
            Delimiter::Whitespace => Mode::Whitespace {
                reader: Box::new(std::io::BufReader::new(rest)),
                line: String::new(),
                line_no: blank,
            },
        };
        let n_fields;
        let mut names: Vec<String> = if header {
            let fields = read_header(&mut mode, path)?;
            n_fields = fields.len();
            fields.into_iter().enumerate().map(|(j, f)| if f.is_empty() { format!("x{}", j + 1) } else { f }).collect()
        } else {
            n_fields = first_len;
            (1..=n_fields).map(|j| format!("x{j}")).collect()
        };
        let label_index =
            match &opts.label {
                LabelSpec::None => None,
                LabelSpec::Last => {
                    if !header {
                        // Without a header the label gets a recognisable name.
                        names[n_fields - 1] = "label".to_string();
                    }
                    Some(n_fields - 1)
                }
                LabelSpec::Name(n) => Some(names.iter().position(|c| c == n).ok_or_else(|| {
                    IoError::ColumnNotFound { path: path.to_path_buf(), column: n.clone(), available: names.clone() }
                })?),
                LabelSpec::Hint => {
                    return Err(IoError::InvalidOption {
                        option: "label",
                        value: "hint".into(),
                        expected: "a column name, the last column or none for text input",
                    });
                }
            };
        check_unique(path, &names)?;
        Ok(Delimited {
            path: path.to_path_buf(),
            mode,
            label: label_index.map(|j| names[j].clone()),
            types: vec![DataType::Float64; names.len()],
            names,
            nan_policy: opts.nan_policy,
            skipped: 0,
            line_offset: blank,
        })
    }
}

/// The fields of the first (non-blank) line, as text.
fn read_header(mode: &mut Mode, path: &Path) -> Result<Vec<String>> {
    let fields = match mode {
        Mode::Csv { reader, record } => {
            reader.read_byte_record(record).map_err(|e| csv_error(path, e))?;
            record.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect()
        }
        Mode::Whitespace { reader, line, line_no } => {
            line.clear();
            reader.read_line(line).map_err(|e| IoError::os(path, "cannot read", e))?;
            *line_no += 1;
            line.split_ascii_whitespace().map(str::to_string).collect()
        }
    };
    Ok(fields)
}

fn csv_error(path: &Path, e: csv::Error) -> IoError {
    IoError::Os { path: path.to_path_buf(), what: "cannot read", error: std::io::Error::other(e) }
}

/// Parses one cell into `out`; returns false for a non-finite value under
/// `Skip`.
#[inline]
fn parse_cell(
    src_path: &Path,
    names: &[String],
    policy: NanPolicy,
    raw: &[u8],
    line: u64,
    j: usize,
    out: &mut f64,
) -> Result<bool> {
    let text = std::str::from_utf8(raw).unwrap_or("").trim();
    let text = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).map_or(text, str::trim);
    match text.parse::<f64>() {
        Ok(v) => {
            *out = v;
            if !within_magnitude(v) {
                return Err(IoError::ValueTooLarge {
                    max: super::MAX_MAGNITUDE,
                    path: src_path.to_path_buf(),
                    line,
                    field: j + 1,
                    column: names[j].clone(),
                    text: text.to_string(),
                });
            }
            if v.is_finite() || policy == NanPolicy::Keep {
                Ok(true)
            } else if policy == NanPolicy::Skip {
                Ok(false)
            } else {
                Err(IoError::NonFiniteText {
                    path: src_path.to_path_buf(),
                    line,
                    field: j + 1,
                    column: names[j].clone(),
                    text: text.to_string(),
                })
            }
        }
        Err(_) => Err(IoError::ParseNumber {
            path: src_path.to_path_buf(),
            line,
            field: j + 1,
            column: names[j].clone(),
            text: String::from_utf8_lossy(raw).trim().to_string(),
        }),
    }
}

impl RowSource for Delimited {
    fn columns(&self) -> &[String] {
        &self.names
    }

    fn column_types(&self) -> &[DataType] {
        &self.types
    }

    fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn next_row(&mut self, row: &mut [f64]) -> Result<bool> {
        let n = self.names.len();
        loop {
            let mut keep = true;
            match &mut self.mode {
                Mode::Csv { reader, record } => {
                    let more = reader.read_byte_record(record).map_err(|e| csv_error(&self.path, e))?;
                    if !more {
                        return Ok(false);
                    }
                    if record.len() == 1 && record[0].iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let line = record.position().map_or(0, |p| p.line()) + self.line_offset;
                    if record.len() != n {
                        return Err(IoError::RaggedRow {
                            path: self.path.clone(),
                            line,
                            expected: n,
                            found: record.len(),
                        });
                    }
                    for (j, raw) in record.iter().enumerate() {
                        keep &= parse_cell(&self.path, &self.names, self.nan_policy, raw, line, j, &mut row[j])?;
                    }
                }
                Mode::Whitespace { reader, line, line_no } => {
                    line.clear();
                    if reader.read_line(line).map_err(|e| IoError::os(&self.path, "cannot read", e))? == 0 {
                        return Ok(false);
                    }
                    *line_no += 1;
                    let found = line.split_ascii_whitespace().count();
                    if found == 0 {
                        continue;
                    }
                    if found != n {
                        return Err(IoError::RaggedRow { path: self.path.clone(), line: *line_no, expected: n, found });
                    }
                    for (j, tok) in line.split_ascii_whitespace().enumerate() {
                        keep &= parse_cell(
                            &self.path,
                            &self.names,
                            self.nan_policy,
                            tok.as_bytes(),
                            *line_no,
                            j,
                            &mut row[j],
                        )?;
                    }
                }
            }
            if keep {
                return Ok(true);
            }
            self.skipped += 1;
        }
    }
}
