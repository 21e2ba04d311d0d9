//! Model files: what `fit` writes and `predict` reads.
//!
//! # Format
//!
//! A safetensors file (see [`crate::tensorfile`]) with
//! - tensors `coef` `(l, k)` and `intercept` `(k)` (f64), one column per
//!   target (regression: `k = 1`; classification: one per class, in the
//!   order of `classes`), and `map.<name>` for every learned tensor of the
//!   feature map (Nyström landmarks, TEFM's Q, ...) and, when small
//!   ([`StoreMap`]), its realised random parameters (RFF frequencies, ...);
//! - a JSON document under the metadata key `"kapprox"`: [`ModelDoc`], with
//!   the map spec (kind, parameters, seed), the input columns, the scaler
//!   statistics, the task and the training report.
//!
//! FORMAT.md specifies every tensor and key.
//!
//! From Python:
//! ```text
//! from safetensors import safe_open
//! import json
//! with safe_open("model.safetensors", "numpy") as f:
//!     doc = json.loads(f.metadata()["kapprox"]); coef = f.get_tensor("coef")
//! ```

use crate::inputs::Inputs;
pub use crate::tensorfile::Integrity;
use crate::tensorfile::{Encoded, TensorFile};
use anyhow::{Context, Result, bail};
use kapprox_features::{FeatureMap, MapSpec, Tensors};
use kapprox_io::{MemoryBudget, Scaler};
use ndarray::{Array1, Array2, ArrayView2, Ix1, Ix2};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The format identifier in every model document.
pub const MODEL_FORMAT: &str = "kapprox-model";
/// The current model format version.
pub const MODEL_VERSION: u32 = 1;

/// Realised random parameters of at most this many bytes are stored by
/// [`StoreMap::Auto`]: 64 MiB, e.g. RFF with `d · l/2 ≤ 8 Mi` frequencies
/// (`d = 512`, `l = 32768`). Larger ones would dominate the model file
/// (and its write) for a benefit only to other languages.
pub const STORE_MAP_AUTO_BYTES: usize = 64 << 20;

/// Whether a model file stores the realised random parameters of its map
/// (frequencies, phases, Fastfood's and SORF's diagonals and permutations,
/// Comp's projection: [`FeatureMap::random_parameters`]) besides its seed,
/// so that other languages can compute the features (FORMAT.md).
///
/// A model that stores them is rebuilt from them, not from the seed: they
/// are the parameters it was trained with, whatever later versions of
/// kapprox's random streams or the platform's math library would draw.
/// The file's checksum covers them like every other tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreMap {
    /// Only the seed: kapprox regenerates the parameters.
    Never,
    /// Store them when they take at most [`STORE_MAP_AUTO_BYTES`] (the default).
    #[default]
    Auto,
    /// Always store them.
    Always,
}

impl StoreMap {
    /// The random parameters of `map` to store under this policy.
    pub fn tensors(self, map: &dyn FeatureMap) -> Tensors {
        match self {
            StoreMap::Never => Tensors::new(),
            StoreMap::Always => map.random_parameters(),
            // `parameter_bytes` bounds the stored bytes from above (Fastfood
            // and SORF also count their f32 copies): a map clearly too large
            // is not copied only to be dropped.
            StoreMap::Auto if map.parameter_bytes() > 2 * STORE_MAP_AUTO_BYTES => Tensors::new(),
            StoreMap::Auto => {
                let t = map.random_parameters();
                let bytes: usize = t.values().map(|a| a.len() * 8).sum();
                if bytes <= STORE_MAP_AUTO_BYTES { t } else { Tensors::new() }
            }
        }
    }
}

/// Regression or one-vs-rest classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Ridge regression on one target column.
    Regression,
    /// One-vs-rest ridge on ±1 targets; predicted class = argmax of scores.
    Classification,
}

/// The JSON document of a model file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ModelDoc {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// Format version.
    pub version: u32,
    /// Learning task.
    pub task: Task,
    /// Columns of the map's input matrix, in order: the numeric input
    /// columns, then each categorical column's indicators (`cat=value`,
    /// `cat=<other>`).
    pub feature_columns: Vec<String>,
    /// The data columns read and how they are encoded (vocabularies,
    /// imputation means). Absent in models written before kapprox read
    /// categorical columns: their inputs are `feature_columns`, numeric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Inputs>,
    /// Label column name in the training data, if any.
    pub label_column: Option<String>,
    /// Input scaling applied before the map.
    pub scaler: Scaler,
    /// The feature map.
    pub map: MapSpec,
    /// Class labels (classification), ascending; column `c` of `coef` scores class `classes[c]`.
    pub classes: Option<Vec<f64>>,
    /// The ridge penalty used.
    pub alpha: f64,
    /// How the model was trained (free-form report: selection curves, passes, timings).
    pub training: serde_json::Value,
    /// kapprox version that wrote the file.
    pub kapprox_version: String,
}

/// A fitted model: scaling, feature map and ridge weights.
#[derive(Debug)]
pub struct Model {
    /// The document.
    pub doc: ModelDoc,
    /// The rebuilt feature map.
    pub map: Box<dyn FeatureMap>,
    /// Weights `(l, k)`.
    pub coef: Array2<f64>,
    /// Intercepts `(k)`.
    pub intercept: Array1<f64>,
}

impl Model {
    /// Writes the model atomically, with a checksum (see [`Model::to_bytes`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.save_with(path, StoreMap::default())
    }

    /// [`Model::save`], storing the map's random parameters as `store` says.
    pub fn save_with(&self, path: &Path, store: StoreMap) -> Result<()> {
        let out = crate::io::StagedOutput::file(path, &crate::io::OutputOptions::new().with_overwrite(true))?;
        self.write_staged(out, store)
    }

    /// Writes the model as the staged file `out` and commits it (see
    /// [`Model::to_bytes`]), without a copy of its tensors: the file is
    /// streamed from the model's own arrays.
    pub fn write_staged(&self, out: crate::io::StagedOutput, store: StoreMap) -> Result<()> {
        self.with_encoded(store, |file| crate::tensorfile::write_staged_encoded(out, file))
    }

    /// The model file's bytes, with a digest of the whole file that
    /// [`Model::load`] verifies; random parameters stored by [`StoreMap::Auto`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.to_bytes_with(StoreMap::default())
    }

    /// [`Model::to_bytes`], storing the map's random parameters as `store`
    /// says (as `map.<name>` tensors beside the learned ones).
    pub fn to_bytes_with(&self, store: StoreMap) -> Result<Vec<u8>> {
        self.with_encoded(store, |file| Ok(file.to_vec()))
    }

    /// Calls `f` with the model's file, encoded from the model's own
    /// arrays: the document, the weights and the map's tensors (its random
    /// parameters as `store` says).
    fn with_encoded<R>(&self, store: StoreMap, f: impl FnOnce(&Encoded<'_>) -> Result<R>) -> Result<R> {
        let doc = serde_json::to_value(&self.doc)?;
        let learned = self.map.tensor_views();
        let random = store.tensors(self.map.as_ref());
        let mut tensors = BTreeMap::new();
        tensors.insert("coef".to_string(), self.coef.view().into_dyn());
        tensors.insert("intercept".to_string(), self.intercept.view().into_dyn());
        for (name, t) in learned.iter().map(|(k, v)| (k, v.view())).chain(random.iter().map(|(k, v)| (k, v.view()))) {
            tensors.insert(format!("map.{name}"), t.into_dyn());
        }
        f(&crate::tensorfile::encode_checked(&doc, tensors.iter().map(|(k, v)| (k.as_str(), v.view())))?)
    }

    /// Reads and checks a model file (see [`Model::load_verified`]).
    pub fn load(path: &Path) -> Result<Model> {
        Ok(Self::load_verified(path)?.0)
    }

    /// Reads and checks a model file: its checksum when it has one (files
    /// written before checksums load as [`Integrity::Unchecked`]), then
    /// every size against the document before anything is built: the
    /// map's parameters against the machine's memory budget, tensor shapes,
    /// the scaler's and the class list's lengths.
    ///
    /// # Errors
    /// A damaged or altered file, a model of another format or version, or
    /// sizes that disagree (each named).
    pub fn load_verified(path: &Path) -> Result<(Model, Integrity)> {
        let (f, integrity) = TensorFile::read_verified(path)?;
        Ok((Self::from_file(path, f)?, integrity))
    }

    fn from_file(path: &Path, f: TensorFile) -> Result<Model> {
        let ctx = || format!("{}", path.display());
        let doc: ModelDoc = serde_json::from_value(f.doc).with_context(|| format!("{}: not a kapprox model", ctx()))?;
        if doc.format != MODEL_FORMAT {
            bail!("{}: format {:?}, expected {MODEL_FORMAT:?}", ctx(), doc.format);
        }
        if doc.version != MODEL_VERSION {
            bail!("{}: model format version {}, this kapprox reads {MODEL_VERSION}", ctx(), doc.version);
        }
        let take2 = |name: &str| -> Result<Array2<f64>> {
            let t = f.tensors.get(name).with_context(|| format!("{}: missing tensor {name:?}", ctx()))?;
            t.clone().into_dimensionality::<Ix2>().with_context(|| format!("{}: tensor {name:?} is not 2-D", ctx()))
        };
        let coef = take2("coef")?;
        let intercept = f
            .tensors
            .get("intercept")
            .with_context(|| format!("{}: missing tensor \"intercept\"", ctx()))?
            .clone()
            .into_dimensionality::<Ix1>()
            .with_context(|| format!("{}: tensor \"intercept\" is not 1-D", ctx()))?;
        check_doc_sizes(&doc, coef.ncols()).with_context(ctx)?;
        doc.map
            .check_memory(MemoryBudget::from_machine().bytes())
            .with_context(|| format!("{}: the feature map is implausibly large", ctx()))?;
        let mut map_tensors = Tensors::new();
        for (name, t) in &f.tensors {
            if let Some(short) = name.strip_prefix("map.") {
                let t = t.clone().into_dimensionality::<Ix2>();
                let t = t.with_context(|| format!("{}: tensor {name:?} is not 2-D", ctx()))?;
                map_tensors.insert(short.to_string(), t);
            }
        }
        let map = doc.map.build(&map_tensors).with_context(|| format!("{}: cannot rebuild the feature map", ctx()))?;
        if coef.nrows() != map.n_output() || coef.ncols() != intercept.len() {
            bail!(
                "{}: coef is {}x{} and intercept has {} entries, but the map has {} outputs",
                ctx(),
                coef.nrows(),
                coef.ncols(),
                intercept.len(),
                map.n_output()
            );
        }
        if map.n_input() != doc.feature_columns.len() {
            bail!(
                "{}: the map takes {} inputs but {} feature columns are listed",
                ctx(),
                map.n_input(),
                doc.feature_columns.len()
            );
        }
        if let Some(inputs) = &doc.inputs
            && inputs.x_columns() != doc.feature_columns
        {
            bail!("{}: the recorded input columns do not match the feature columns", ctx());
        }
        Ok(Model { doc, map, coef, intercept })
    }

    /// Whether this is a map file written by `featurize --save-map`: a map
    /// and its scaling, no ridge weights.
    pub fn is_map_only(&self) -> bool {
        self.doc.training.get("map_only").and_then(|v| v.as_bool()).unwrap_or(false)
    }

    /// Refuses a map file where ridge weights are needed (predict, eval).
    ///
    /// # Errors
    /// When [`Self::is_map_only`].
    pub fn check_has_weights(&self) -> Result<()> {
        if self.is_map_only() {
            bail!("this is a map file (featurize --save-map) without ridge weights: fit a model to predict");
        }
        Ok(())
    }

    /// Where the model's parameters are not finite, if anywhere: the first
    /// such entry of the weights, intercepts or scaler.
    pub fn non_finite_parameter(&self) -> Option<String> {
        if let Some(((r, c), v)) = self.coef.indexed_iter().find(|(_, v)| !v.is_finite()) {
            return Some(format!("weight coef[{r}, {c}] = {v}"));
        }
        if let Some((k, v)) = self.intercept.indexed_iter().find(|(_, v)| !v.is_finite()) {
            return Some(format!("intercept[{k}] = {v}"));
        }
        scaler_problem(&self.doc.scaler)
    }

    /// The data columns this model reads and how (older models: their
    /// feature columns, all numeric).
    pub fn inputs(&self) -> Inputs {
        self.doc.inputs.clone().unwrap_or_else(|| {
            let mut columns = kapprox_io::SelectedColumns::default();
            columns.numeric = self.doc.feature_columns.clone();
            columns.label = self.doc.label_column.clone();
            Inputs { columns, ..Inputs::default() }
        })
    }

    /// Scores `(n, k)` for features `z (n, l)`.
    pub fn scores(&self, z: ArrayView2<'_, f64>) -> Array2<f64> {
        let mut s = z.dot(&self.coef);
        s += &self.intercept;
        s
    }
}

/// The document's sizes against each other and against the `k` columns of
/// `coef`: scaler statistics per input column, one class per column.
fn check_doc_sizes(doc: &ModelDoc, k: usize) -> Result<()> {
    let d = doc.feature_columns.len();
    let (a, b) = match &doc.scaler {
        Scaler::None => (d, d),
        Scaler::Standard { mean, scale } => (mean.len(), scale.len()),
        Scaler::MinMax { min, range } => (min.len(), range.len()),
    };
    if a != d || b != d {
        bail!("the scaler has statistics for {a} and {b} columns, but {d} feature columns are listed");
    }
    match (doc.task, &doc.classes) {
        (Task::Classification, None) => bail!("a classification model without a class list"),
        (Task::Classification, Some(c)) if c.len() != k => {
            bail!("{} classes are listed, but coef has {k} columns (one per class)", c.len())
        }
        // A map file (`featurize --save-map`) holds a map and no weights.
        (Task::Regression, _) if k == 0 && doc.training.get("map_only").and_then(|v| v.as_bool()) == Some(true) => {
            Ok(())
        }
        (Task::Regression, _) if k != 1 => bail!("a regression model with {k} coef columns, expected 1"),
        _ => Ok(()),
    }
}

/// Where a scaler would make values non-finite: a non-finite statistic or a
/// zero scale (range).
pub(crate) fn scaler_problem(scaler: &Scaler) -> Option<String> {
    let (shift, scale, names) = match scaler {
        Scaler::None => return None,
        Scaler::Standard { mean, scale } => (mean, scale, ("mean", "scale")),
        Scaler::MinMax { min, range } => (min, range, ("min", "range")),
    };
    if let Some((j, v)) = shift.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Some(format!("scaler {}[{j}] = {v}", names.0));
    }
    let bad = scale.iter().enumerate().find(|(_, v)| !v.is_finite() || **v == 0.0);
    bad.map(|(j, v)| format!("scaler {}[{j}] = {v}", names.1))
}
