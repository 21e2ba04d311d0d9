//! Opening inputs (transparently decompressed) and detecting their format.

use crate::error::{IoError, Result};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

const BUFFER: usize = 256 * 1024;

/// Opens `path` for reading, decompressing gzip (`1f 8b`) or bzip2 (`BZh`)
/// as detected from the first bytes, whatever the file name says.
pub(crate) fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let file = File::open(path).map_err(|e| IoError::os(path, "cannot open", e))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(IoError::Os {
            path: path.to_path_buf(),
            what: "cannot read",
            error: std::io::Error::other("is a directory, expected a file"),
        });
    }
    let mut raw = BufReader::with_capacity(BUFFER, file);
    let head = raw.fill_buf().map_err(|e| IoError::os(path, "cannot read", e))?;
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        // Multi-member: concatenated gzip files (`cat a.gz b.gz`) are valid.
        Box::new(BufReader::with_capacity(BUFFER, flate2::read::MultiGzDecoder::new(raw)))
    } else if head.starts_with(b"BZh") {
        Box::new(BufReader::with_capacity(BUFFER, bzip2::read::MultiBzDecoder::new(raw)))
    } else {
        Box::new(raw)
    })
}

/// Like [`open_input`], for text: a line longer than `max_line` bytes
/// becomes a read error naming the line, instead of a buffer that grows
/// without bound (a gigabyte-long line, or a compressed file that expands
/// to one).
pub(crate) fn open_text_input(path: &Path, max_line: u64) -> Result<Box<dyn BufRead + Send>> {
    let inner = open_input(path)?;
    Ok(Box::new(BufReader::with_capacity(BUFFER, BoundedLines { inner, max_line, run: 0, line: 1 })))
}

/// Whether `path` starts with a gzip or bzip2 signature.
pub(crate) fn is_compressed(path: &Path) -> bool {
    let mut head = [0u8; 3];
    File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok()
        && (head.starts_with(&[0x1f, 0x8b]) || head.starts_with(b"BZh"))
}

/// A reader that fails on a line longer than `max_line` bytes.
struct BoundedLines<R> {
    inner: R,
    max_line: u64,
    /// Bytes since the last newline.
    run: u64,
    /// 1-based number of the current line.
    line: u64,
}

impl<R: Read> Read for BoundedLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        for (k, piece) in buf[..n].split(|&b| b == b'\n').enumerate() {
            if k > 0 {
                self.line += 1;
                self.run = 0;
            }
            self.run += piece.len() as u64;
            if self.run > self.max_line {
                return Err(std::io::Error::other(format!(
                    "line {} is longer than {}; expected lines of text",
                    self.line,
                    crate::budget::ByteSize(self.max_line)
                )));
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overlong_line_is_an_error_naming_it() {
        let text = format!("a,b\n1,2\n{}\n", "9".repeat(5000));
        let mut r = BoundedLines { inner: text.as_bytes(), max_line: 4096, run: 0, line: 1 };
        let mut sink = Vec::new();
        let err = std::io::copy(&mut std::io::BufReader::with_capacity(1000, &mut r), &mut sink).unwrap_err();
        assert!(err.to_string().starts_with("line 3 is longer than 4.0 KiB"), "{err}");
        let mut ok = BoundedLines { inner: "a\nbb\n".as_bytes(), max_line: 2, run: 0, line: 1 };
        std::io::copy(&mut ok, &mut sink).unwrap();
    }
}
