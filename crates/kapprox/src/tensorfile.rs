//! Named f64 tensors plus one JSON document, in a safetensors file.
//!
//! Model files and partial-statistics files share this container: the
//! safetensors format is trivially readable from Python
//! (`safetensors.numpy.load_file` and `safe_open(..).metadata()`), and its
//! header carries a string map where we keep our JSON document under the
//! key `"kapprox"`. Files are written atomically: to a temporary sibling,
//! fsync'd, then renamed over the final name.

use anyhow::{Context, Result, bail};
use ndarray::{ArrayD, IxDyn};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

/// The metadata key holding kapprox's JSON document.
pub const METADATA_KEY: &str = "kapprox";

/// The metadata key holding the checksum of a checked file (see
/// [`TensorFile::to_bytes_checked`]), 16 hex digits.
pub const CHECKSUM_KEY: &str = "kapprox.checksum";

/// A streaming 64-bit hash (SplitMix64 finaliser over 8-byte words) for
/// detecting corrupt files and fingerprinting results. Not cryptographic.
#[derive(Clone, Copy, Debug)]
pub struct Checksum(u64);

impl Default for Checksum {
    fn default() -> Self {
        Checksum(0x6b61_7070_726f_7821)
    }
}

impl Checksum {
    /// Adds one word.
    #[inline]
    pub fn word(&mut self, w: u64) {
        self.0 = kapprox_core::rng::mix64(self.0 ^ w).wrapping_add(0x9e37_79b9_7f4a_7c15);
    }

    /// Adds a byte string (with its length).
    pub fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }

    /// Adds a named tensor: name, shape and the bits of every value.
    pub fn tensor(&mut self, name: &str, a: &ArrayD<f64>) {
        self.bytes(name.as_bytes());
        self.word(a.ndim() as u64);
        for &d in a.shape() {
            self.word(d as u64);
        }
        match a.as_slice() {
            Some(v) => v.iter().for_each(|x| self.word(x.to_bits())),
            None => a.iter().for_each(|x| self.word(x.to_bits())),
        }
    }

    /// The hash as 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// A JSON document plus named f64 tensors of any rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorFile {
    /// The document stored under [`METADATA_KEY`].
    pub doc: serde_json::Value,
    /// Tensors by name, in name order.
    pub tensors: BTreeMap<String, ArrayD<f64>>,
}

impl TensorFile {
    /// Serialises to bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.to_bytes_with(None)
    }

    /// The checksum of the document text `doc_text` and the tensors.
    fn checksum_of(&self, doc_text: &str) -> Checksum {
        let mut h = Checksum::default();
        h.bytes(doc_text.as_bytes());
        h.word(self.tensors.len() as u64);
        for (name, a) in &self.tensors {
            h.tensor(name, a);
        }
        h
    }

    /// Serialises to bytes with a checksum of the document and every tensor
    /// value under [`CHECKSUM_KEY`], verified by [`TensorFile::from_bytes_checked`].
    pub fn to_bytes_checked(&self) -> Result<Vec<u8>> {
        let doc_text = serde_json::to_string(&self.doc)?;
        let sum = self.checksum_of(&doc_text).hex();
        self.to_bytes_with(Some(sum))
    }

    fn to_bytes_with(&self, checksum: Option<String>) -> Result<Vec<u8>> {
        let buffers: Vec<(String, Vec<usize>, Vec<u8>)> = self
            .tensors
            .iter()
            .map(|(name, a)| {
                let bytes: Vec<u8> = a.iter().flat_map(|v| v.to_le_bytes()).collect();
                (name.clone(), a.shape().to_vec(), bytes)
            })
            .collect();
        let views = buffers
            .iter()
            .map(|(name, shape, bytes)| Ok((name.clone(), TensorView::new(Dtype::F64, shape.clone(), bytes)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut info = HashMap::new();
        info.insert(METADATA_KEY.to_string(), serde_json::to_string(&self.doc)?);
        if let Some(sum) = checksum {
            info.insert(CHECKSUM_KEY.to_string(), sum);
        }
        Ok(safetensors::serialize(views, Some(info))?)
    }

    /// Parses bytes written by [`TensorFile::to_bytes`] (or any safetensors
    /// file with f64 tensors and a `"kapprox"` metadata entry).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(Self::parse(bytes)?.0)
    }

    /// Parses bytes written by [`TensorFile::to_bytes_checked`] and verifies
    /// the checksum: a file cut short or altered is refused.
    pub fn from_bytes_checked(bytes: &[u8]) -> Result<Self> {
        let (f, sum, doc_text) = Self::parse(bytes)?;
        let Some(sum) = sum else { bail!("no {CHECKSUM_KEY:?} metadata entry: not a checked kapprox file") };
        let actual = f.checksum_of(&doc_text).hex();
        if actual != sum {
            bail!("checksum mismatch (stored {sum}, computed {actual}): the file is corrupt");
        }
        Ok(f)
    }

    /// Parses; returns the file, its stored checksum and its document text.
    fn parse(bytes: &[u8]) -> Result<(Self, Option<String>, String)> {
        let (_, meta) =
            SafeTensors::read_metadata(bytes).map_err(|e| anyhow::anyhow!("not a safetensors file: {e}"))?;
        let doc_text = meta
            .metadata()
            .as_ref()
            .and_then(|m| m.get(METADATA_KEY))
            .ok_or_else(|| anyhow::anyhow!("no {METADATA_KEY:?} metadata entry: not a kapprox file"))?;
        let checksum = meta.metadata().as_ref().and_then(|m| m.get(CHECKSUM_KEY)).cloned();
        let doc_text = doc_text.clone();
        let doc = serde_json::from_str(&doc_text).context("metadata is not valid JSON")?;
        let st = SafeTensors::deserialize(bytes).map_err(|e| anyhow::anyhow!("corrupt safetensors data: {e}"))?;
        let mut tensors = BTreeMap::new();
        for (name, view) in st.tensors() {
            if view.dtype() != Dtype::F64 {
                bail!("tensor {name:?} has dtype {:?}, expected F64", view.dtype());
            }
            let values: Vec<f64> =
                view.data().chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
            let a = ArrayD::from_shape_vec(IxDyn(view.shape()), values)?;
            tensors.insert(name, a);
        }
        Ok((TensorFile { doc, tensors }, checksum, doc_text))
    }

    /// Writes the file atomically (temporary sibling, fsync, rename).
    pub fn write_atomic(&self, path: &Path) -> Result<()> {
        write_atomic(path, &self.to_bytes()?)
    }

    /// Reads a file, naming it in every error.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        Self::from_bytes(&bytes).with_context(|| format!("{}", path.display()))
    }

    /// Writes the file with a checksum, atomically.
    pub fn write_atomic_checked(&self, path: &Path) -> Result<()> {
        write_atomic(path, &self.to_bytes_checked()?)
    }

    /// Reads a file written by [`TensorFile::write_atomic_checked`] and
    /// verifies its length and checksum, naming it in every error.
    pub fn read_checked(path: &Path) -> Result<Self> {
        // The header check first: it says "truncated" rather than "corrupt".
        read_doc(path)?;
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        Self::from_bytes_checked(&bytes).with_context(|| format!("{}", path.display()))
    }
}

/// Reads only the JSON document of a tensor file (its header), and checks
/// that the file is as long as the header says: a cheap way to inspect many
/// large files, which also detects a file cut short.
pub fn read_doc(path: &Path) -> Result<serde_json::Value> {
    use std::io::Read;
    let ctx = || format!("{}", path.display());
    let mut f = std::fs::File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let len = f.metadata().with_context(ctx)?.len();
    let mut n = [0u8; 8];
    if len < 8 {
        bail!("{}: truncated: {len} bytes is too short for a kapprox file", path.display());
    }
    f.read_exact(&mut n).with_context(ctx)?;
    let n = u64::from_le_bytes(n);
    if n > len - 8 || n > 1 << 32 {
        bail!("{}: truncated or not a kapprox file: the header claims {n} bytes, the file has {len}", path.display());
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).with_context(ctx)?;
    let header: serde_json::Value = serde_json::from_slice(&header)
        .map_err(|e| anyhow::anyhow!("{}: not a kapprox file: its header is not JSON ({e})", path.display()))?;
    let end = header
        .as_object()
        .into_iter()
        .flat_map(|o| o.values())
        .filter_map(|t| t.get("data_offsets")?.get(1)?.as_u64())
        .max()
        .unwrap_or(0);
    let want = 8 + n + end;
    if len != want {
        bail!("{}: truncated or damaged: the file has {len} bytes, its header promises {want}", path.display());
    }
    let text = header
        .get("__metadata__")
        .and_then(|m| m.get(METADATA_KEY))
        .and_then(|t| t.as_str())
        .with_context(|| format!("{}: no {METADATA_KEY:?} metadata entry: not a kapprox file", path.display()))?;
    serde_json::from_str(text).with_context(|| format!("{}: metadata is not valid JSON", path.display()))
}

/// Writes `bytes` to `path` so that readers see either the old file or the
/// complete new one, never a prefix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().with_context(|| format!("{}: not a file path", path.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("{}: cannot create a temporary file", dir.display()))?;
    tmp.write_all(bytes).with_context(|| format!("{}: write failed", path.display()))?;
    tmp.as_file().sync_all().with_context(|| format!("{}: fsync failed", path.display()))?;
    tmp.persist(path).map_err(|e| e.error).with_context(|| format!("{}: cannot rename into place", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn round_trips_and_rejects_truncation() {
        let mut f = TensorFile { doc: serde_json::json!({"a": 1, "b": [1.5, 2.5]}), ..Default::default() };
        f.tensors.insert("coef".into(), array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]].into_dyn());
        f.tensors.insert("b".into(), array![0.25].into_dyn());
        let bytes = f.to_bytes().unwrap();
        assert_eq!(TensorFile::from_bytes(&bytes).unwrap(), f);
        assert!(TensorFile::from_bytes(&bytes[..bytes.len() - 3]).is_err());
        assert!(TensorFile::from_bytes(b"garbage").is_err());
    }

    #[test]
    fn checked_files_refuse_truncation_and_bit_flips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.kpart");
        let mut f = TensorFile { doc: serde_json::json!({"a": 1}), ..Default::default() };
        f.tensors.insert("g".into(), ndarray::Array1::from_iter((0..1000).map(f64::from)).into_dyn());
        f.write_atomic_checked(&p).unwrap();
        assert_eq!(TensorFile::read_checked(&p).unwrap(), f);
        assert_eq!(read_doc(&p).unwrap(), f.doc);
        let bytes = std::fs::read(&p).unwrap();
        // Cut short: the header check names it.
        std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
        let e = format!("{:#}", TensorFile::read_checked(&p).unwrap_err());
        assert!(e.contains("truncated"), "{e}");
        // One flipped bit in a value: the checksum catches it.
        let mut flipped = bytes.clone();
        let i = flipped.len() - 5;
        flipped[i] ^= 1;
        std::fs::write(&p, &flipped).unwrap();
        let e = format!("{:#}", TensorFile::read_checked(&p).unwrap_err());
        assert!(e.contains("checksum mismatch"), "{e}");
        // An unchecked file is refused by the checked reader.
        f.write_atomic(&p).unwrap();
        assert!(TensorFile::read_checked(&p).is_err());
    }

    #[test]
    fn atomic_write_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.safetensors");
        let f = TensorFile { doc: serde_json::json!({}), ..Default::default() };
        f.write_atomic(&p).unwrap();
        f.write_atomic(&p).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert_eq!(TensorFile::read(&p).unwrap(), f);
    }
}
