//! Model files: what `fit` writes and `predict` reads.
//!
//! # Format
//!
//! A safetensors file (see [`crate::tensorfile`]) with
//! - tensors `coef` `(l, k)` and `intercept` `(k)` (f64), one column per
//!   target (regression: `k = 1`; classification: one per class, in the
//!   order of `classes`), and `map.<name>` for every learned tensor of the
//!   feature map (Nyström landmarks, TEFM's Q, ...);
//! - a JSON document under the metadata key `"kapprox"`: [`ModelDoc`], with
//!   the map spec (kind, parameters, seed — never the random matrix), the
//!   input columns, the scaler statistics, the task and the training report.
//!
//! From Python:
//! ```text
//! from safetensors import safe_open
//! import json
//! with safe_open("model.safetensors", "numpy") as f:
//!     doc = json.loads(f.metadata()["kapprox"]); coef = f.get_tensor("coef")
//! ```

use crate::inputs::Inputs;
use crate::tensorfile::TensorFile;
use anyhow::{Context, Result, bail};
use kapprox_features::{FeatureMap, MapSpec, Tensors};
use kapprox_io::Scaler;
use ndarray::{Array1, Array2, ArrayView2, Ix1, Ix2};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The format identifier in every model document.
pub const MODEL_FORMAT: &str = "kapprox-model";
/// The current model format version.
pub const MODEL_VERSION: u32 = 1;

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
    /// Writes the model atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut f = TensorFile { doc: serde_json::to_value(&self.doc)?, ..Default::default() };
        f.tensors.insert("coef".into(), self.coef.clone().into_dyn());
        f.tensors.insert("intercept".into(), self.intercept.clone().into_dyn());
        for (name, t) in self.map.tensors() {
            f.tensors.insert(format!("map.{name}"), t.into_dyn());
        }
        f.write_atomic(path)
    }

    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<Model> {
        let f = TensorFile::read(path)?;
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
        let mut map_tensors = Tensors::new();
        for (name, t) in &f.tensors {
            if let Some(short) = name.strip_prefix("map.") {
                map_tensors.insert(short.to_string(), t.clone().into_dimensionality::<Ix2>()?);
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
