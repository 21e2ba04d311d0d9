//! Named f64 tensors plus one JSON document, in a safetensors file.
//!
//! Model files and partial-statistics files share this container: the
//! safetensors format is trivially readable from Python
//! (`safetensors.numpy.load_file` and `safe_open(..).metadata()`), and its
//! header carries a string map where we keep our JSON document under the
//! key `"kapprox"`. Files are written atomically: to a temporary sibling,
//! fsync'd, then renamed over the final name.

use anyhow::{Context, Result, bail};
use kapprox_io::{OutputOptions, StagedOutput};
use ndarray::{ArrayD, IxDyn};
use safetensors::tensor::{Metadata, TensorInfo, TensorView};
use safetensors::{Dtype, SafeTensors};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

/// The metadata key holding kapprox's JSON document.
pub const METADATA_KEY: &str = "kapprox";

/// The metadata key holding the checksum of a checked file (see
/// [`TensorFile::to_bytes_checked`]), 16 hex digits.
pub const CHECKSUM_KEY: &str = "kapprox.checksum";

/// The metadata key holding the digest of a whole checked file (see
/// [`TensorFile::to_bytes_checked`]), 16 hex digits. Files of earlier
/// versions carry [`CHECKSUM_KEY`] instead.
pub const DIGEST_KEY: &str = "kapprox.digest";

const DIGEST_HEX_LEN: usize = 16;
const DIGEST_PLACEHOLDER: &str = "0000000000000000";

/// Whether a file's checksum was verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integrity {
    /// The file's digest (or earlier versions' checksum) matched.
    Verified,
    /// The file has no checksum: written before checksums existed.
    Unchecked,
}

/// The checksum a file stores.
enum Stored {
    None,
    /// [`DIGEST_KEY`]: of the whole file.
    Digest(String),
    /// [`CHECKSUM_KEY`]: of the document and the tensors.
    Legacy(String),
}

/// The checksum entry of a file's metadata; any key besides the document
/// and one checksum is refused, so that a damaged checksum key cannot make
/// a file pass for one written before checksums.
fn stored_checksum(meta: &HashMap<String, String>) -> Result<Stored> {
    let mut stored = Stored::None;
    for (key, value) in meta {
        match key.as_str() {
            METADATA_KEY => {}
            DIGEST_KEY if matches!(stored, Stored::None) => stored = Stored::Digest(value.clone()),
            CHECKSUM_KEY if matches!(stored, Stored::None) => stored = Stored::Legacy(value.clone()),
            other => bail!("unexpected metadata entry {other:?}: the file is damaged or not a kapprox file"),
        }
    }
    Ok(stored)
}

/// Where the digest's hex digits sit in a checked file's bytes: after the
/// one occurrence of `"kapprox.digest":"` in the header (inside the escaped
/// document text every quote is preceded by a backslash, so the pattern
/// cannot occur there).
fn digest_position(bytes: &[u8]) -> Result<usize> {
    let pattern = format!("\"{DIGEST_KEY}\":\"");
    let header_len = bytes.get(..8).map_or(0, |n| u64::from_le_bytes(n.try_into().expect("8 bytes")));
    let header = usize::try_from(header_len)
        .ok()
        .and_then(|n| bytes.get(8..8usize.checked_add(n)?))
        .ok_or_else(|| anyhow::anyhow!("truncated: the header is longer than the file"))?;
    let mut found = header.windows(pattern.len()).enumerate().filter(|(_, w)| *w == pattern.as_bytes());
    match (found.next(), found.next()) {
        (Some((i, _)), None) if 8 + i + pattern.len() + DIGEST_HEX_LEN <= bytes.len() => Ok(8 + i + pattern.len()),
        _ => bail!("the {DIGEST_KEY:?} entry is damaged"),
    }
}

/// The digest of `bytes` with the digest digits at `at` read as `0`
/// (what [`Checksum::bytes`] gives for that copy, without copying).
fn whole_file_digest(bytes: &[u8], at: usize) -> Checksum {
    let digits = at..at + DIGEST_HEX_LEN;
    let mut h = Checksum::default();
    h.word(bytes.len() as u64);
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        // Only the few words that hold digest digits need a look per byte.
        if 8 * i < digits.end && 8 * i + 8 > digits.start {
            for (j, b) in w.iter_mut().enumerate().take(chunk.len()) {
                if digits.contains(&(8 * i + j)) {
                    *b = b'0';
                }
            }
        }
        h.word(u64::from_le_bytes(w));
    }
    h
}

/// A serialised checked tensor file that is not assembled in memory: the
/// length prefix and header (digest included), then each tensor's bytes.
/// A model at l = 4096 holds a 134 MB Nyström normalization; assembling
/// the file took three copies of it (the tensor's bytes, safetensors'
/// buffer, the digest splice), each into freshly faulted pages.
#[derive(Debug)]
pub struct Encoded<'a> {
    head: Vec<u8>,
    data: Vec<Cow<'a, [u8]>>,
}

impl Encoded<'_> {
    /// The file's length in bytes.
    fn len(&self) -> usize {
        self.head.len() + self.data.iter().map(|d| d.len()).sum::<usize>()
    }

    /// Writes the file's bytes to `w`.
    pub fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(&self.head)?;
        self.data.iter().try_for_each(|d| w.write_all(d))
    }

    /// The file's bytes in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        bytes.extend_from_slice(&self.head);
        self.data.iter().for_each(|d| bytes.extend_from_slice(d));
        bytes
    }
}

/// The checked file of `doc` and `tensors` (in name order, as a
/// `BTreeMap` gives them), as [`TensorFile::to_bytes_checked`] lays it
/// out. The header is safetensors' own serialisation of its
/// [`Metadata`](safetensors::tensor::Metadata), built as
/// `safetensors::serialize` builds it (tensors of one dtype in name order,
/// spaces to a multiple of 8); a test holds the two to the same bytes.
pub(crate) fn encode_checked<'a>(
    doc: &serde_json::Value,
    tensors: impl IntoIterator<Item = (&'a str, ndarray::ArrayViewD<'a, f64>)>,
) -> Result<Encoded<'a>> {
    const START: &[u8] = b"{\"__metadata__\":{";
    let mut infos = Vec::new();
    let mut data = Vec::new();
    let mut offset = 0;
    for (name, a) in tensors {
        let shape = a.shape().to_vec();
        let bytes = le_bytes(a);
        infos.push((
            name.to_string(),
            TensorInfo { dtype: Dtype::F64, shape, data_offsets: (offset, offset + bytes.len()) },
        ));
        offset += bytes.len();
        data.push(bytes);
    }
    if !infos.windows(2).all(|w| w[0].0 < w[1].0) {
        bail!("tensor names must be distinct and in order");
    }
    let info = HashMap::from([(METADATA_KEY.to_string(), serde_json::to_string(doc)?)]);
    let metadata = Metadata::new(Some(info), infos).map_err(|e| anyhow::anyhow!("cannot lay out the tensors: {e}"))?;
    let plain = serde_json::to_string(&metadata)?.into_bytes();
    if !plain.starts_with(START) {
        bail!("unexpected safetensors header layout: cannot add a digest");
    }
    let plain_len = plain.len().next_multiple_of(8);
    let entry = format!("\"{DIGEST_KEY}\":\"{DIGEST_PLACEHOLDER}\",");
    // Header lengths stay multiples of 8 (trailing spaces, as safetensors pads).
    let header_len = (plain_len + entry.len()).next_multiple_of(8);
    let mut head = Vec::with_capacity(8 + header_len);
    head.extend_from_slice(&(header_len as u64).to_le_bytes());
    head.extend_from_slice(START);
    head.extend_from_slice(entry.as_bytes());
    head.extend_from_slice(&plain[START.len()..]);
    head.resize(8 + header_len, b' ');
    let mut encoded = Encoded { head, data };
    // The placeholder's digits are the zeros the digest reads them as.
    let at = digest_position(&encoded.head)?;
    let mut h = Checksum::default();
    h.word(encoded.len() as u64);
    h.aligned_words(&encoded.head);
    encoded.data.iter().for_each(|d| h.aligned_words(d));
    encoded.head[at..at + DIGEST_HEX_LEN].copy_from_slice(h.hex().as_bytes());
    Ok(encoded)
}

/// The little-endian bytes of `a`'s values in logical order: its own
/// memory when that is what they are.
fn le_bytes(a: ndarray::ArrayViewD<'_, f64>) -> Cow<'_, [u8]> {
    match a.to_slice() {
        Some(values) if cfg!(target_endian = "little") => Cow::Borrowed(bytemuck::cast_slice(values)),
        _ => {
            // Sized up front: a flat_map's size hint is unknown, so
            // collecting it grew (and copied) a large tensor's bytes many
            // times over.
            let mut bytes = Vec::with_capacity(a.len() * 8);
            a.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
            Cow::Owned(bytes)
        }
    }
}

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

    /// Adds the 8-byte words of `b`, whose length is a multiple of 8 (no
    /// length word: [`whole_file_digest`] hashes a file's words this way).
    fn aligned_words(&mut self, b: &[u8]) {
        debug_assert_eq!(b.len() % 8, 0, "whole words only");
        for c in b.chunks_exact(8) {
            self.word(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
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
        let bytes: Vec<Cow<'_, [u8]>> = self.tensors.values().map(|a| le_bytes(a.view())).collect();
        let views = self
            .tensors
            .iter()
            .zip(&bytes)
            .map(|((name, a), b)| Ok((name.clone(), TensorView::new(Dtype::F64, a.shape().to_vec(), b)?)))
            .collect::<Result<Vec<_>>>()?;
        let info = HashMap::from([(METADATA_KEY.to_string(), serde_json::to_string(&self.doc)?)]);
        Ok(safetensors::serialize(views, Some(info))?)
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

    /// Serialises to bytes with a digest of the whole file under
    /// [`DIGEST_KEY`], verified by [`TensorFile::from_bytes_checked`]: any
    /// byte changed, header padding included, makes the file refused.
    ///
    /// The digest is computed over the serialised bytes with the digest's
    /// own 16 hex digits set to `0`, then written into them (same length,
    /// so no offset moves). To write a file without holding its bytes
    /// twice, use [`TensorFile::encode_checked`].
    pub fn to_bytes_checked(&self) -> Result<Vec<u8>> {
        Ok(self.encode_checked()?.to_vec())
    }

    /// The bytes of [`TensorFile::to_bytes_checked`] without assembling
    /// them: the header and each tensor's values, borrowed where the
    /// array's memory already holds them as little-endian `f64`.
    pub fn encode_checked(&self) -> Result<Encoded<'_>> {
        encode_checked(&self.doc, self.tensors.iter().map(|(name, a)| (name.as_str(), a.view())))
    }

    /// Parses bytes written by [`TensorFile::to_bytes`] (or any safetensors
    /// file with f64 tensors and a `"kapprox"` metadata entry).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(Self::parse(bytes)?.0)
    }

    /// Parses bytes written by [`TensorFile::to_bytes_checked`] (or by
    /// earlier versions' checked writer) and verifies them: a file cut
    /// short or altered is refused, and so is a file without a checksum.
    pub fn from_bytes_checked(bytes: &[u8]) -> Result<Self> {
        match Self::from_bytes_verified(bytes)? {
            (f, Integrity::Verified) => Ok(f),
            (_, Integrity::Unchecked) => {
                bail!("no {DIGEST_KEY:?} metadata entry: not a checked kapprox file")
            }
        }
    }

    /// Parses and verifies the digest (or an earlier version's checksum)
    /// when the file has one; a file without either parses as
    /// [`Integrity::Unchecked`] (files written before checksums existed).
    ///
    /// # Errors
    /// Not a kapprox tensor file; a metadata key other than the document
    /// and one checksum (a damaged key must not pass for an unchecked
    /// file); a checksum that does not match.
    pub fn from_bytes_verified(bytes: &[u8]) -> Result<(Self, Integrity)> {
        let (f, sums, doc_text) = Self::parse(bytes)?;
        match sums {
            Stored::None => Ok((f, Integrity::Unchecked)),
            Stored::Digest(sum) => {
                let at = digest_position(bytes)?;
                let actual = whole_file_digest(bytes, at).hex();
                if actual != sum {
                    bail!("checksum mismatch (stored {sum}, computed {actual}): the file is corrupt");
                }
                Ok((f, Integrity::Verified))
            }
            Stored::Legacy(sum) => {
                let actual = f.checksum_of(&doc_text).hex();
                if actual != sum {
                    bail!("checksum mismatch (stored {sum}, computed {actual}): the file is corrupt");
                }
                Ok((f, Integrity::Verified))
            }
        }
    }

    /// Parses; returns the file, its stored checksum and its document text.
    fn parse(bytes: &[u8]) -> Result<(Self, Stored, String)> {
        let (_, meta) =
            SafeTensors::read_metadata(bytes).map_err(|e| anyhow::anyhow!("not a safetensors file: {e}"))?;
        let doc_text = meta
            .metadata()
            .as_ref()
            .and_then(|m| m.get(METADATA_KEY))
            .ok_or_else(|| anyhow::anyhow!("no {METADATA_KEY:?} metadata entry: not a kapprox file"))?;
        let checksum = stored_checksum(meta.metadata().as_ref().expect("has the document"))?;
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
        let out = StagedOutput::file(path, &OutputOptions::new().with_overwrite(true))?;
        write_staged_encoded(out, &self.encode_checked()?)
    }

    /// Reads a file written by [`TensorFile::write_atomic_checked`] and
    /// verifies its length and checksum, naming it in every error.
    pub fn read_checked(path: &Path) -> Result<Self> {
        // The header check first: it says "truncated" rather than "corrupt".
        read_doc(path)?;
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        Self::from_bytes_checked(&bytes).with_context(|| format!("{}", path.display()))
    }

    /// Reads a file and verifies its checksum when it has one (see
    /// [`TensorFile::from_bytes_verified`]), naming it in every error.
    pub fn read_verified(path: &Path) -> Result<(Self, Integrity)> {
        read_doc(path)?;
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        Self::from_bytes_verified(&bytes).with_context(|| format!("{}", path.display()))
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
/// complete new one, never a prefix: through a [`StagedOutput`] that
/// replaces `path` (and removes what killed runs left next to it).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_staged(StagedOutput::file(path, &OutputOptions::new().with_overwrite(true))?, bytes)
}

/// Writes `bytes` as the staged file `out` and commits it (created with
/// the user's umask; flushed before the rename).
pub fn write_staged(out: StagedOutput, bytes: &[u8]) -> Result<()> {
    write_staged_with(out, |f| f.write_all(bytes))
}

/// [`write_staged`] for a file that is not assembled in memory.
pub fn write_staged_encoded(out: StagedOutput, file: &Encoded<'_>) -> Result<()> {
    write_staged_with(out, |f| file.write_to(f))
}

fn write_staged_with(out: StagedOutput, write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> Result<()> {
    let mut f = std::fs::File::create(out.path())
        .with_context(|| format!("{}: cannot create a temporary file", out.target().display()))?;
    write(&mut f).with_context(|| format!("{}: write failed", out.target().display()))?;
    drop(f);
    Ok(out.commit()?)
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

    /// The streamed checked file is safetensors' own layout with the
    /// digest entry spliced into the header: the data bytes are those of
    /// `safetensors::serialize`, the header its header plus the entry and
    /// padding, whatever the arrays' memory order; and writing it gives
    /// the same bytes as assembling it.
    #[test]
    fn a_streamed_checked_file_is_safetensors_layout_with_the_digest_spliced_in() {
        let mut f = TensorFile { doc: serde_json::json!({"model": "x", "n": [1, 2, 3]}), ..Default::default() };
        f.tensors.insert("zeta".into(), array![[1.0, -2.5], [3.0, 4.0], [5.0, 6.5]].into_dyn());
        f.tensors.insert("alpha".into(), array![0.25, f64::MIN_POSITIVE, -0.0].into_dyn());
        // Column-major memory: the file holds the values in logical order.
        f.tensors.insert("mid".into(), array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]].reversed_axes().into_dyn());
        f.tensors.insert("empty".into(), ndarray::Array2::<f64>::zeros((0, 4)).into_dyn());
        let encoded = f.encode_checked().unwrap();
        let bytes = encoded.to_vec();
        assert_eq!(bytes.len(), encoded.len());
        let mut written = Vec::new();
        encoded.write_to(&mut written).unwrap();
        assert_eq!(written, bytes);

        let plain = f.to_bytes().unwrap();
        let header_len = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        let (n, m) = (header_len(&plain), header_len(&bytes));
        assert_eq!(&bytes[8 + m..], &plain[8 + n..], "the tensors' bytes differ from safetensors'");
        let at = digest_position(&bytes).unwrap();
        let start = b"{\"__metadata__\":{";
        let entry = format!("\"{DIGEST_KEY}\":\"{}\",", std::str::from_utf8(&bytes[at..at + 16]).unwrap());
        let mut expected = start.to_vec();
        expected.extend_from_slice(entry.as_bytes());
        expected.extend_from_slice(&plain[8 + start.len()..8 + n]);
        expected.resize(m, b' ');
        assert_eq!(&bytes[8..8 + m], &expected[..]);
        assert_eq!(m % 8, 0);

        assert_eq!(TensorFile::from_bytes_checked(&bytes).unwrap(), f);
        let mut damaged = bytes.clone();
        *damaged.last_mut().unwrap() ^= 1;
        assert!(TensorFile::from_bytes_checked(&damaged).is_err());
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
