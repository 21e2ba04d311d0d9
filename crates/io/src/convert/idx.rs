//! IDX (MNIST-style) binary arrays: `00 00 <type> <ndim>`, `ndim` big-endian
//! `u32` dimensions, then the items, big-endian. An item (image) of shape
//! `dims[1..]` becomes one row of `prod(dims[1..])` columns `px0, px1, ...`
//! stored in the file's own element type; an optional idx1 labels file adds
//! the `label` column.

use super::libsvm::LABEL;
use super::{ConvertOptions, RowSource, input::open_input, within_magnitude};
use crate::error::{IdxProblem, IoError, Result};
use crate::reader::NanPolicy;
use arrow::datatypes::DataType;
use std::io::{BufRead, ErrorKind, Read};
use std::path::{Path, PathBuf};

/// Bytes per element of an IDX type code.
pub(crate) fn type_size(code: u8) -> Option<usize> {
    match code {
        0x08 | 0x09 => Some(1),
        0x0B => Some(2),
        0x0C | 0x0D => Some(4),
        0x0E => Some(8),
        _ => None,
    }
}

fn arrow_type(code: u8) -> DataType {
    match code {
        0x08 => DataType::UInt8,
        0x09 => DataType::Int8,
        0x0B => DataType::Int16,
        0x0C => DataType::Int32,
        0x0D => DataType::Float32,
        _ => DataType::Float64,
    }
}

/// Decodes element `i` of a big-endian item.
#[inline]
fn element(code: u8, buf: &[u8], i: usize) -> f64 {
    match code {
        0x08 => buf[i] as f64,
        0x09 => buf[i] as i8 as f64,
        0x0B => i16::from_be_bytes([buf[2 * i], buf[2 * i + 1]]) as f64,
        0x0C => i32::from_be_bytes(buf[4 * i..4 * i + 4].try_into().expect("4 bytes")) as f64,
        0x0D => f32::from_be_bytes(buf[4 * i..4 * i + 4].try_into().expect("4 bytes")) as f64,
        _ => f64::from_be_bytes(buf[8 * i..8 * i + 8].try_into().expect("8 bytes")),
    }
}

struct Stream {
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    code: u8,
    ndim: u8,
    n_items: u64,
    /// Elements per item.
    item_len: usize,
    buf: Vec<u8>,
}

impl Stream {
    fn open(path: &Path, opts: &ConvertOptions) -> Result<Stream> {
        let mut reader = open_input(path)?;
        let mut magic = [0u8; 4];
        let got = read_full(&mut reader, &mut magic).map_err(|e| IoError::os(path, "cannot read", e))?;
        if got == 0 {
            return Err(IoError::EmptyInput { path: path.to_path_buf() });
        }
        if got < 4 || magic[0] != 0 || magic[1] != 0 {
            return Err(IoError::Idx { path: path.to_path_buf(), problem: IdxProblem::Magic { found: magic } });
        }
        let code = magic[2];
        let size = type_size(code)
            .ok_or_else(|| IoError::Idx { path: path.to_path_buf(), problem: IdxProblem::TypeCode { code } })?;
        let ndim = magic[3];
        if ndim == 0 {
            return Err(IoError::Idx { path: path.to_path_buf(), problem: IdxProblem::Magic { found: magic } });
        }
        let mut dims = vec![0u32; ndim as usize];
        for d in &mut dims {
            let mut b = [0u8; 4];
            if read_full(&mut reader, &mut b).map_err(|e| IoError::os(path, "cannot read", e))? < 4 {
                return Err(IoError::Idx {
                    path: path.to_path_buf(),
                    problem: IdxProblem::Truncated { expected_items: 0, found_items: 0 },
                });
            }
            *d = u32::from_be_bytes(b);
        }
        let bad_dims =
            || IoError::Idx { path: path.to_path_buf(), problem: IdxProblem::Dimensions { dims: dims.clone() } };
        if dims[1..].contains(&0) {
            return Err(bad_dims());
        }
        let item_len = dims[1..].iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).ok_or_else(bad_dims)?;
        // The budget check comes before the item buffer and the column
        // names are allocated: a 20-byte header may declare terabytes.
        opts.check_columns(
            path,
            None,
            || {
                let shown: Vec<String> = dims[1..].iter().map(u32::to_string).collect();
                format!("items of {} = {item_len} values (columns)", shown.join(" x "))
            },
            item_len,
            Some(dims[0] as u64),
            "expected item dimensions of a plausible size (check the header), or a larger --max-memory",
        )?;
        let item_len = usize::try_from(item_len).map_err(|_| bad_dims())?;
        Ok(Stream {
            path: path.to_path_buf(),
            reader,
            code,
            ndim,
            n_items: dims[0] as u64,
            item_len,
            buf: vec![0; item_len * size],
        })
    }

    /// Reads item `i` into `buf`.
    fn read_item(&mut self, i: u64) -> Result<()> {
        match self.reader.read_exact(&mut self.buf) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Err(IoError::Idx {
                path: self.path.clone(),
                problem: IdxProblem::Truncated { expected_items: self.n_items, found_items: i },
            }),
            Err(e) => Err(IoError::os(&self.path, "cannot read", e)),
        }
    }

    fn check_end(&mut self) -> Result<()> {
        let mut b = [0u8; 1];
        if read_full(&mut self.reader, &mut b).map_err(|e| IoError::os(&self.path, "cannot read", e))? > 0 {
            return Err(IoError::Idx {
                path: self.path.clone(),
                problem: IdxProblem::TrailingData { items: self.n_items },
            });
        }
        Ok(())
    }
}

/// Like `read_exact`, but returns how many bytes were read before the end.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

pub(crate) struct Idx {
    images: Stream,
    labels: Option<Stream>,
    item: u64,
    names: Vec<String>,
    types: Vec<DataType>,
    nan_policy: NanPolicy,
    skipped: u64,
}

impl Idx {
    pub(crate) fn open(path: &Path, opts: &ConvertOptions) -> Result<Idx> {
        let images = Stream::open(path, opts)?;
        if images.n_items == 0 {
            return Err(IoError::EmptyInput { path: path.to_path_buf() });
        }
        let labels = match &opts.labels_path {
            None => None,
            Some(lp) => {
                let l = Stream::open(lp, opts)?;
                if l.ndim != 1 {
                    return Err(IoError::Idx { path: lp.clone(), problem: IdxProblem::LabelDims { ndim: l.ndim } });
                }
                if l.n_items != images.n_items {
                    return Err(IoError::IdxCountMismatch {
                        images: path.to_path_buf(),
                        labels: lp.clone(),
                        n_images: images.n_items,
                        n_labels: l.n_items,
                    });
                }
                Some(l)
            }
        };
        let mut names: Vec<String> = (0..images.item_len).map(|j| format!("px{j}")).collect();
        let mut types = vec![arrow_type(images.code); images.item_len];
        if labels.is_some() {
            names.push(LABEL.to_string());
            types.push(DataType::Float64);
        }
        Ok(Idx { images, labels, item: 0, names, types, nan_policy: opts.nan_policy, skipped: 0 })
    }
}

/// Checks decoded values of a float IDX stream; false to skip the row.
fn check_finite(stream: &Stream, row: &[f64], names: &[String], item: u64, policy: NanPolicy) -> Result<bool> {
    if stream.code == 0x0E
        && let Some(j) = row.iter().position(|&v| !within_magnitude(v))
    {
        return Err(IoError::ValueTooLarge {
            max: super::MAX_MAGNITUDE,
            path: stream.path.clone(),
            line: item + 1,
            field: j + 1,
            column: names[j].clone(),
            text: row[j].to_string(),
        });
    }
    if matches!(stream.code, 0x0D | 0x0E)
        && policy != NanPolicy::Keep
        && let Some(j) = row.iter().position(|v| !v.is_finite())
    {
        if policy == NanPolicy::Skip {
            return Ok(false);
        }
        return Err(IoError::NonFiniteText {
            path: stream.path.clone(),
            line: item + 1,
            field: j + 1,
            column: names[j].clone(),
            text: row[j].to_string(),
        });
    }
    Ok(true)
}

impl RowSource for Idx {
    fn columns(&self) -> &[String] {
        &self.names
    }

    fn column_types(&self) -> &[DataType] {
        &self.types
    }

    fn label(&self) -> Option<&str> {
        self.labels.as_ref().map(|_| LABEL)
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn next_row(&mut self, row: &mut [f64]) -> Result<bool> {
        loop {
            if self.item == self.images.n_items {
                self.images.check_end()?;
                if let Some(l) = self.labels.as_mut() {
                    l.check_end()?;
                }
                return Ok(false);
            }
            let i = self.item;
            self.item += 1;
            let d = self.images.item_len;
            self.images.read_item(i)?;
            for (j, out) in row[..d].iter_mut().enumerate() {
                *out = element(self.images.code, &self.images.buf, j);
            }
            let mut keep = check_finite(&self.images, &row[..d], &self.names, i, self.nan_policy)?;
            if let Some(l) = self.labels.as_mut() {
                l.read_item(i)?;
                row[d] = element(l.code, &l.buf, 0);
                keep &= check_finite(l, &row[d..], &self.names[d..], i, self.nan_policy)?;
            }
            if keep {
                return Ok(true);
            }
            self.skipped += 1;
        }
    }
}
