//! Which reader a converted file needs: by its name, else by its first
//! bytes. Above the readers, so that they never import it.

use super::InputFormat;
use super::idx::type_size;
use super::input::open_input;
use crate::error::{IoError, Result};
use std::io::Read;
use std::path::Path;

/// The file name without a compression suffix, lower-cased.
fn stem_without_compression(path: &Path) -> String {
    let mut name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    for ext in [".gz", ".gzip", ".bz2", ".bz"] {
        if let Some(s) = name.strip_suffix(ext) {
            name = s.to_string();
            break;
        }
    }
    name
}

/// Detects the format from the file name, else from the first bytes of the
/// (decompressed) content.
pub(crate) fn detect_format(path: &Path) -> Result<InputFormat> {
    let name = stem_without_compression(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "csv" => return Ok(InputFormat::Csv),
        "tsv" | "tab" => return Ok(InputFormat::Tsv),
        "svm" | "libsvm" | "svmlight" => return Ok(InputFormat::Libsvm),
        "idx" => return Ok(InputFormat::Idx),
        _ => {}
    }
    if name.contains("-idx") && name.contains("ubyte") {
        return Ok(InputFormat::Idx);
    }
    let mut r = open_input(path)?;
    let mut head = Vec::with_capacity(64 * 1024);
    (&mut r).take(64 * 1024).read_to_end(&mut head).map_err(|e| IoError::os(path, "cannot read", e))?;
    if head.len() >= 4 && head[0] == 0 && head[1] == 0 && type_size(head[2]).is_some() && head[3] >= 1 {
        return Ok(InputFormat::Idx);
    }
    let text = String::from_utf8_lossy(&head);
    let Some(line) = text.lines().find(|l| !l.trim().is_empty()) else {
        return Err(IoError::EmptyInput { path: path.to_path_buf() });
    };
    let mut tokens = line.split_ascii_whitespace();
    let first = tokens.next().unwrap_or("");
    let rest: Vec<&str> = tokens.take_while(|t| !t.starts_with('#')).collect();
    if first.parse::<f64>().is_ok() && !rest.is_empty() && rest.iter().all(|t| t.contains(':')) {
        return Ok(InputFormat::Libsvm);
    }
    if line.contains('\0') {
        return Err(IoError::UnknownFormat { path: path.to_path_buf() });
    }
    Ok(InputFormat::Csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_decide_before_content() {
        assert_eq!(stem_without_compression(Path::new("a/B.TSV.GZ")), "b.tsv");
        assert_eq!(stem_without_compression(Path::new("ijcnn1.tst.bz2")), "ijcnn1.tst");
        assert_eq!(detect_format(Path::new("x/train-images-idx3-ubyte.gz")).unwrap(), InputFormat::Idx);
        assert_eq!(detect_format(Path::new("no/such/file.csv")).unwrap(), InputFormat::Csv);
    }
}
