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
        Ok(safetensors::serialize(views, Some(info))?)
    }

    /// Parses bytes written by [`TensorFile::to_bytes`] (or any safetensors
    /// file with f64 tensors and a `"kapprox"` metadata entry).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (_, meta) =
            SafeTensors::read_metadata(bytes).map_err(|e| anyhow::anyhow!("not a safetensors file: {e}"))?;
        let doc_text = meta
            .metadata()
            .as_ref()
            .and_then(|m| m.get(METADATA_KEY))
            .ok_or_else(|| anyhow::anyhow!("no {METADATA_KEY:?} metadata entry: not a kapprox file"))?;
        let doc = serde_json::from_str(doc_text).context("metadata is not valid JSON")?;
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
        Ok(TensorFile { doc, tensors })
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
