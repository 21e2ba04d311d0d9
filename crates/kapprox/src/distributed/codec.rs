//! Pass states and progress <-> a JSON description plus named f64 tensors
//! (the content of part and pass-result files).
//!
//! Large arrays (Grams, sketches, sampled rows, bases) become tensors —
//! never JSON numbers; small things (counts, labels, row ids, column
//! statistics, map specs) stay in the JSON. Every value round-trips
//! exactly, so merging decoded states gives bitwise the same result as
//! merging the originals.
//!
//! A `Moments` Gram is stored as its packed lower triangle (column-major,
//! `w(w+1)/2` values for width `w = l + 1 + k`), half the bytes of the
//! square.

use crate::fit::acc::Acc;
use crate::fit::class_moments::ClassMoments;
use crate::fit::passes::{FitState, PrepareState, SketchState};
use crate::fit::{PassState, Prepared, Progress};
use anyhow::{Context, Result, bail};
use kapprox_core::Moments;
use kapprox_features::{FeatureMap, MapSpec, Tensors};
use kapprox_sketch::Reservoir;
use ndarray::{Array1, Array2, ArrayD, ArrayView2, Ix1, Ix2, ShapeBuilder, s};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Named tensors being written.
#[derive(Default)]
pub struct Encoder {
    /// The tensors so far.
    pub tensors: BTreeMap<String, ArrayD<f64>>,
}

impl Encoder {
    /// Stores `a` under `name`; returns the JSON reference to it.
    fn put(&mut self, name: String, a: ArrayD<f64>) -> Value {
        debug_assert!(!self.tensors.contains_key(&name), "tensor {name} written twice");
        self.tensors.insert(name.clone(), a);
        json!({ "tensor": name })
    }
}

/// Named tensors being read; each is taken once.
pub struct Decoder {
    tensors: BTreeMap<String, ArrayD<f64>>,
}

impl Decoder {
    /// Reads from these tensors.
    pub fn new(tensors: BTreeMap<String, ArrayD<f64>>) -> Self {
        Decoder { tensors }
    }

    fn take(&mut self, r: &Value) -> Result<ArrayD<f64>> {
        let name =
            r.get("tensor").and_then(Value::as_str).with_context(|| format!("expected a tensor reference, got {r}"))?;
        self.tensors.remove(name).with_context(|| format!("tensor {name:?} is missing"))
    }

    fn take2(&mut self, r: &Value) -> Result<Array2<f64>> {
        let a = self.take(r)?;
        let shape = a.shape().to_vec();
        a.into_dimensionality::<Ix2>().with_context(|| format!("tensor {r} has shape {shape:?}, expected 2-D"))
    }

    fn take1(&mut self, r: &Value) -> Result<Array1<f64>> {
        let a = self.take(r)?;
        let shape = a.shape().to_vec();
        a.into_dimensionality::<Ix1>().with_context(|| format!("tensor {r} has shape {shape:?}, expected 1-D"))
    }
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value> {
    v.get(key).with_context(|| format!("missing field {key:?}"))
}

fn u64_of(v: &Value, key: &str) -> Result<u64> {
    field(v, key)?.as_u64().with_context(|| format!("field {key:?} is not a count"))
}

fn usize_of(v: &Value, key: &str) -> Result<usize> {
    Ok(u64_of(v, key)? as usize)
}

fn from<T: serde::de::DeserializeOwned>(v: &Value, key: &str) -> Result<T> {
    serde_json::from_value(field(v, key)?.clone()).with_context(|| format!("field {key:?}"))
}

/// The packed lower triangle of a square matrix, column by column.
fn pack_lower(g: ArrayView2<'_, f64>) -> Array1<f64> {
    let w = g.nrows();
    let mut v = Vec::with_capacity(w * (w + 1) / 2);
    for j in 0..w {
        v.extend(g.column(j).iter().skip(j));
    }
    Array1::from(v)
}

fn unpack_lower(v: &Array1<f64>, w: usize) -> Result<Array2<f64>> {
    if v.len() != w * (w + 1) / 2 {
        bail!("a packed Gram of width {w} needs {} values, found {}", w * (w + 1) / 2, v.len());
    }
    // Column-major, as `Moments` keeps it: the columns are filled in place
    // and the array is taken without a copy.
    let mut g = Array2::zeros((w, w).f());
    let mut k = 0;
    for (j, mut col) in g.columns_mut().into_iter().enumerate() {
        col.slice_mut(s![j..]).assign(&v.slice(s![k..k + w - j]));
        k += w - j;
    }
    Ok(g)
}

fn encode_moments(m: &Moments, name: String, enc: &mut Encoder) -> Value {
    let g = pack_lower(m.augmented_gram());
    json!({
        "n_features": m.n_features(),
        "n_targets": m.n_targets(),
        "gram": enc.put(name, g.into_dyn()),
    })
}

fn decode_moments(v: &Value, dec: &mut Decoder) -> Result<Moments> {
    let (l, k) = (usize_of(v, "n_features")?, usize_of(v, "n_targets")?);
    let g = unpack_lower(&dec.take1(field(v, "gram")?)?, l + 1 + k)?;
    Ok(Moments::from_augmented_gram_owned(l, k, g))
}

fn encode_reservoir(r: &Reservoir, name: String, enc: &mut Encoder) -> Value {
    let (ids, rows) = r.clone().finish();
    json!({
        "capacity": r.capacity(),
        "n_features": r.n_features(),
        "seed": r.seed(),
        "ids": ids,
        "rows": enc.put(name, rows.into_dyn()),
    })
}

fn decode_reservoir(v: &Value, dec: &mut Decoder) -> Result<Reservoir> {
    let (cap, d, seed) = (usize_of(v, "capacity")?, usize_of(v, "n_features")?, u64_of(v, "seed")?);
    let ids: Vec<u64> = from(v, "ids")?;
    let rows = dec.take2(field(v, "rows")?)?;
    if rows.dim() != (ids.len(), d) || ids.len() > cap {
        bail!("a reservoir of {cap} rows of {d} columns cannot hold {:?} rows for {} ids", rows.dim(), ids.len());
    }
    let mut r = Reservoir::new(cap, d, seed);
    r.update_ids(rows.view(), &ids)?;
    Ok(r)
}

fn encode_acc(a: &mut Acc, name: &str, enc: &mut Encoder) -> Value {
    a.flush();
    match a {
        Acc::Regression(m) => json!({"type": "regression", "moments": encode_moments(m, format!("{name}.gram"), enc)}),
        Acc::Classification(cm) => {
            let moments = encode_moments(cm.feature_moments(), format!("{name}.gram"), enc);
            let l = cm.feature_moments().n_features();
            let sums: Vec<(f64, &Array1<f64>, f64)> = cm.class_sums().collect();
            let mut s = Array2::zeros((sums.len(), l));
            for (r, (_, v, _)) in sums.iter().enumerate() {
                s.row_mut(r).assign(v);
            }
            let labels: Vec<f64> = sums.iter().map(|t| t.0).collect();
            let counts: Vec<f64> = sums.iter().map(|t| t.2).collect();
            json!({
                "type": "classification",
                "moments": moments,
                "labels": labels,
                "counts": counts,
                "sums": enc.put(format!("{name}.class_sums"), s.into_dyn()),
            })
        }
    }
}

fn decode_acc(v: &Value, dec: &mut Decoder) -> Result<Acc> {
    let m = decode_moments(field(v, "moments")?, dec)?;
    match field(v, "type")?.as_str() {
        Some("regression") => Ok(Acc::Regression(m)),
        Some("classification") => {
            let labels: Vec<f64> = from(v, "labels")?;
            let counts: Vec<f64> = from(v, "counts")?;
            let sums = dec.take2(field(v, "sums")?)?;
            if m.n_targets() != 0 || sums.dim() != (labels.len(), m.n_features()) || counts.len() != labels.len() {
                bail!("class statistics of inconsistent shapes");
            }
            let parts = labels.into_iter().zip(counts).enumerate().map(|(r, (y, n))| (y, sums.row(r).to_owned(), n));
            Ok(Acc::Classification(ClassMoments::from_parts(m, parts)))
        }
        other => bail!("unknown accumulator type {other:?}"),
    }
}

/// Encodes a pass state (flushing its accumulators first).
pub fn encode_state(state: &mut PassState, enc: &mut Encoder) -> Value {
    match state {
        PassState::Prepare(s) => json!({
            "pass": "prepare",
            "rows": s.rows,
            "stats": s.stats,
            "counts": s.counts,
            "sample": s.sample.as_ref().map(|r| encode_reservoir(r, "prepare.sample".into(), enc)),
        }),
        PassState::Sketch(s) => json!({
            "pass": "sketch",
            "basis": SKETCH_BASIS,
            "rows": s.rows,
            "accs": s.accs.iter().enumerate().map(|(c, a)| enc.put(format!("sketch.c{c}"), a.clone().into_dyn())).collect::<Vec<_>>(),
        }),
        PassState::Fit(s) => {
            let candidates: Vec<Value> = s
                .parts
                .iter_mut()
                .enumerate()
                .map(|(c, parts)| {
                    json!({
                        "parts": parts.iter_mut().enumerate().map(|(p, a)| encode_acc(a, &format!("fit.c{c}.p{p}"), enc)).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "pass": "fit",
                "kernel_columns": FIT_KERNEL_COLUMNS,
                "rows": s.rows,
                "skipped": s.skipped,
                "imputed": s.imputed,
                "other": s.other,
                "candidates": candidates,
            })
        }
    }
}

/// What a sketch pass's accumulators are: `Fᵀ(FΩ)` and `Fᵀ(FQ)` from the
/// Gram's range finder. Parts without it hold an earlier version's row
/// sketch and are refused.
const SKETCH_BASIS: &str = "gram-product";

/// What a fit pass's projected Nyström candidates accumulate: their kernel
/// columns minus the landmarks' mean column (`fit::nystrom_gram`). An
/// earlier version accumulated the raw columns, and for other bandwidths
/// the features themselves, in statistics of the same shapes, so fit parts
/// without it are refused.
const FIT_KERNEL_COLUMNS: &str = "shifted";

/// Decodes a pass state written by [`encode_state`].
pub fn decode_state(v: &Value, dec: &mut Decoder) -> Result<PassState> {
    let rows = u64_of(v, "rows")?;
    Ok(match field(v, "pass")?.as_str() {
        Some("prepare") => {
            let sample = match field(v, "sample")? {
                Value::Null => None,
                r => Some(decode_reservoir(r, dec)?),
            };
            let counts = match v.get("counts") {
                Some(c) => serde_json::from_value(c.clone()).context("field \"counts\"")?,
                None => Vec::new(),
            };
            PassState::Prepare(PrepareState { stats: from(v, "stats")?, counts, sample, rows })
        }
        Some("sketch") => {
            // Same shapes, other numbers: an earlier version's first TEFM pass
            // accumulated the row sketch FᵀΘ, not Fᵀ(FΩ), and reducing the two
            // together would give a basis of neither.
            if v.get("basis").and_then(Value::as_str) != Some(SKETCH_BASIS) {
                bail!(
                    "a TEFM sketch part written by an earlier kapprox version, whose sketch is FᵀΘ where \
                     this version accumulates Fᵀ(FΩ); rerun that part with this version"
                );
            }
            let refs = field(v, "accs")?.as_array().context("field \"accs\" is not a list")?;
            let accs = refs.iter().map(|r| dec.take2(r)).collect::<Result<_>>()?;
            PassState::Sketch(SketchState { accs, rows })
        }
        Some("fit") => {
            if v.get("kernel_columns").and_then(Value::as_str) != Some(FIT_KERNEL_COLUMNS) {
                bail!(
                    "a fit part written by an earlier kapprox version, whose Nyström statistics hold other \
                     numbers in the same shapes (unshifted kernel columns); rerun that part with this version"
                );
            }
            let cands = field(v, "candidates")?.as_array().context("field \"candidates\" is not a list")?;
            let mut parts = Vec::new();
            for c in cands {
                let ps = field(c, "parts")?.as_array().context("field \"parts\" is not a list")?;
                parts.push(ps.iter().map(|a| decode_acc(a, dec)).collect::<Result<Vec<_>>>()?);
            }
            let imputed = v.get("imputed").and_then(Value::as_u64).unwrap_or(0);
            let other = match v.get("other") {
                Some(o) => serde_json::from_value(o.clone()).context("field \"other\"")?,
                None => Vec::new(),
            };
            PassState::Fit(FitState { parts, rows, skipped: u64_of(v, "skipped")?, imputed, other })
        }
        other => bail!("unknown pass state {other:?}"),
    })
}

fn encode_map(map: &dyn FeatureMap, name: &str, enc: &mut Encoder) -> Value {
    let tensors: serde_json::Map<String, Value> =
        map.tensors().into_iter().map(|(k, t)| (k.clone(), enc.put(format!("{name}.{k}"), t.into_dyn()))).collect();
    json!({ "spec": map.spec(), "tensors": tensors })
}

fn decode_map(v: &Value, dec: &mut Decoder) -> Result<Box<dyn FeatureMap>> {
    let spec: MapSpec = from(v, "spec")?;
    let mut tensors = Tensors::new();
    if let Some(o) = field(v, "tensors")?.as_object() {
        for (k, r) in o {
            tensors.insert(k.clone(), dec.take2(r)?);
        }
    }
    spec.build(&tensors).context("cannot rebuild a feature map")
}

/// Encodes what a job has established.
pub fn encode_progress(p: &Progress, enc: &mut Encoder) -> Value {
    let prepared = p.prepared.as_ref().map(|pr| {
        json!({
            "features": pr.features,
            "inputs": pr.inputs,
            "label": pr.label,
            "scaler": pr.scaler,
            "median": pr.median,
            "sigmas": pr.sigmas,
            "landmarks": pr.landmarks.as_ref().map(|l| enc.put("landmarks".into(), l.clone().into_dyn())),
        })
    });
    let qs = p.qs.as_ref().map(|qs| {
        qs.iter().enumerate().map(|(c, q)| enc.put(format!("q.c{c}"), q.clone().into_dyn())).collect::<Vec<_>>()
    });
    let maps = p.maps.as_ref().map(|ms| {
        ms.iter().enumerate().map(|(c, m)| encode_map(m.as_ref(), &format!("map.c{c}"), enc)).collect::<Vec<_>>()
    });
    json!({ "done": p.done, "prepared": prepared, "qs": qs, "maps": maps })
}

/// Decodes progress written by [`encode_progress`].
pub fn decode_progress(v: &Value, dec: &mut Decoder) -> Result<Progress> {
    let prepared = match field(v, "prepared")? {
        Value::Null => None,
        pr => Some(Prepared {
            features: from(pr, "features")?,
            inputs: from(pr, "inputs")?,
            label: from(pr, "label")?,
            scaler: from(pr, "scaler")?,
            median: from(pr, "median")?,
            sigmas: from(pr, "sigmas")?,
            landmarks: match field(pr, "landmarks")? {
                Value::Null => None,
                r => Some(dec.take2(r)?),
            },
        }),
    };
    let qs = match field(v, "qs")? {
        Value::Null => None,
        Value::Array(a) => Some(a.iter().map(|r| dec.take2(r)).collect::<Result<Vec<_>>>()?),
        _ => bail!("field \"qs\" is not a list"),
    };
    let maps = match field(v, "maps")? {
        Value::Null => None,
        Value::Array(a) => Some(a.iter().map(|m| decode_map(m, dec)).collect::<Result<Vec<_>>>()?),
        _ => bail!("field \"maps\" is not a list"),
    };
    Ok(Progress { done: usize_of(v, "done")?, prepared, qs, maps })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_grams_round_trip() {
        let mut m = Moments::new(5, 2);
        let z = Array2::from_shape_fn((700, 5), |(i, j)| ((i * 3 + j * 7) % 11) as f64 - 4.5);
        let y = Array2::from_shape_fn((700, 2), |(i, j)| (i % 5) as f64 + j as f64);
        m.update(z.view(), y.view());
        m.flush();
        let mut enc = Encoder::default();
        let v = encode_moments(&m, "g".into(), &mut enc);
        let back = decode_moments(&v, &mut Decoder::new(enc.tensors)).unwrap();
        assert_eq!(back.augmented_gram(), m.augmented_gram());
    }

    #[test]
    fn sketch_states_of_an_earlier_version_are_refused() {
        let mut state = PassState::Sketch(SketchState { accs: vec![Array2::eye(3)], rows: 9 });
        let mut enc = Encoder::default();
        let v = encode_state(&mut state, &mut enc);
        let tensors = enc.tensors.clone();
        let back = decode_state(&v, &mut Decoder::new(tensors.clone())).unwrap();
        assert!(matches!(back, PassState::Sketch(SketchState { rows: 9, .. })));
        let mut earlier = v.clone();
        earlier.as_object_mut().unwrap().remove("basis");
        let err = decode_state(&earlier, &mut Decoder::new(tensors)).expect_err("refused").to_string();
        assert!(err.contains("earlier kapprox version"), "{err}");
    }

    #[test]
    fn fit_states_of_an_earlier_version_are_refused() {
        let mut m = Moments::new(2, 1);
        m.update(Array2::eye(2).view(), Array2::ones((2, 1)).view());
        m.flush();
        let mut state = PassState::Fit(FitState {
            parts: vec![vec![Acc::Regression(m)]],
            rows: 2,
            skipped: 0,
            imputed: 0,
            other: Vec::new(),
        });
        let mut enc = Encoder::default();
        let v = encode_state(&mut state, &mut enc);
        let tensors = enc.tensors.clone();
        assert!(matches!(decode_state(&v, &mut Decoder::new(tensors.clone())).unwrap(), PassState::Fit(_)));
        let mut earlier = v.clone();
        earlier.as_object_mut().unwrap().remove("kernel_columns");
        let err = decode_state(&earlier, &mut Decoder::new(tensors)).expect_err("refused").to_string();
        assert!(err.contains("earlier kapprox version"), "{err}");
    }

    #[test]
    fn reservoirs_round_trip_with_their_seed() {
        let rows = Array2::from_shape_fn((50, 3), |(i, j)| (i * 3 + j) as f64);
        let mut r = Reservoir::new(10, 3, 77);
        r.update(rows.view(), 100).unwrap();
        let mut enc = Encoder::default();
        let v = encode_reservoir(&r, "r".into(), &mut enc);
        assert_eq!(v["seed"], 77);
        let back = decode_reservoir(&v, &mut Decoder::new(enc.tensors)).unwrap();
        assert_eq!(back.finish(), r.finish());
    }
}
