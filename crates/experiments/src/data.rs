//! Datasets of the experiments: Parquet directories as they are, raw files
//! converted on the fly, test sets found or split off.

use anyhow::{Context, Result, bail};
use kapprox::io::{ConvertOptions, Dataset, LabelSpec};
use kapprox::split::SplitConfig;
use kapprox::{Observer, Task};
use std::path::{Path, PathBuf};

/// A dataset to resolve.
#[derive(Clone, Debug)]
pub struct Source {
    /// Parquet directory, raw file, or a directory of IDX files.
    pub input: PathBuf,
    /// Explicit test set (Parquet directory or raw file).
    pub test: Option<PathBuf>,
    /// Label column of raw CSV/TSV files: a name or `last`.
    pub label: String,
    /// Regression or classification.
    pub task: Task,
}

impl Source {
    /// A file of the shared data directory, label last.
    pub fn shared(dir: &Path, rel: &str, task: Task) -> Source {
        Source { input: dir.join(rel), test: None, label: "last".into(), task }
    }
}

/// A resolved dataset: Parquet training and test directories.
#[derive(Clone, Debug)]
pub struct DataSet {
    /// Short name for tables and plots (`cpu_rks`, `574_house_16H`, `a9a`, ...).
    pub name: String,
    /// Training rows (Parquet).
    pub train: PathBuf,
    /// Test rows (Parquet).
    pub test: PathBuf,
    /// Regression or classification.
    pub task: Task,
    /// Training rows.
    pub n_train: u64,
    /// Test rows.
    pub n_test: u64,
    /// Input columns.
    pub n_features: usize,
}

/// Where converted and split datasets go: a temporary directory removed at
/// the end, or a kept `--work-dir` whose conversions later runs reuse.
pub struct Workspace {
    root: PathBuf,
    /// The temporary directory (removed on drop); `None` for a kept `--work-dir`.
    tmp: Option<tempfile::TempDir>,
}

/// The shared data directory: as given, else relative to the workspace this
/// binary was built from (`<repo>/../shared/data`).
pub fn locate_shared(dir: &Path) -> Result<PathBuf> {
    if dir.is_dir() {
        return Ok(dir.to_path_buf());
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(dir);
    if built.is_dir() {
        return Ok(built);
    }
    bail!("{}: the shared data directory is missing (pass --shared-data DIR, or --data)", dir.display())
}

/// Strips compression and text extensions: `cpu_rks_train.tsv.gz` -> `cpu_rks_train`.
fn stem(path: &Path) -> String {
    let mut s = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for ext in [".gz", ".bz2", ".tsv", ".csv", ".txt", ".libsvm", ".svm", ".trn"] {
        if let Some(t) = s.strip_suffix(ext) {
            s = t.to_string();
        }
    }
    s
}

/// The dataset's short name: the stem without a `train` part.
fn short_name(path: &Path) -> String {
    let s = stem(path);
    for suffix in ["_train", "-train", ".train"] {
        if let Some(t) = s.strip_suffix(suffix) {
            return t.to_string();
        }
    }
    if s.starts_with("train-images") {
        // IDX files: name the set after its directory (fashion-mnist).
        return path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).unwrap_or(s);
    }
    s
}

/// The test file that goes with a raw training file, if one exists.
fn companion(train: &Path) -> Option<PathBuf> {
    let name = train.file_name()?.to_string_lossy().into_owned();
    let dir = train.parent().unwrap_or(Path::new("."));
    let mut candidates = Vec::new();
    if name.contains("train-images") {
        candidates.push(name.replace("train-images", "t10k-images"));
    }
    if name.contains("train") {
        candidates.push(name.replacen("train", "test", 1));
    }
    if name.contains(".trn") {
        candidates.push(name.replacen(".trn", ".tst", 1));
    }
    candidates.push(format!("{name}.t"));
    candidates.into_iter().map(|c| dir.join(c)).find(|p| p.is_file())
}

fn is_parquet_dir(p: &Path) -> bool {
    Dataset::open(p).is_ok()
}

impl Workspace {
    /// A workspace in `dir` (kept) or in a new temporary directory.
    pub fn new(dir: Option<&Path>) -> Result<Workspace> {
        match dir {
            Some(d) => {
                std::fs::create_dir_all(d).with_context(|| format!("{}: cannot create --work-dir", d.display()))?;
                Ok(Workspace { root: d.to_path_buf(), tmp: None })
            }
            None => {
                let tmp = tempfile::Builder::new().prefix("kapprox-experiment-").tempdir()?;
                Ok(Workspace { root: tmp.path().to_path_buf(), tmp: Some(tmp) })
            }
        }
    }

    /// Converts a raw file into `<root>/<out>` (reused when a kept work
    /// directory already holds it). `n_features` pins a LIBSVM test file to
    /// the training file's width.
    fn convert(&self, input: &Path, out: &str, label: &str, n_features: Option<usize>) -> Result<(PathBuf, usize)> {
        let dest = self.root.join(out);
        if self.tmp.is_none()
            && let Ok(ds) = Dataset::open(&dest)
        {
            let n_inputs = ds.resolve_columns(&LabelSpec::Hint).map(|(f, _)| f.len()).unwrap_or(0);
            return Ok((dest, n_inputs));
        }
        let mut input = input.to_path_buf();
        let mut labels = None;
        if input.is_dir() {
            // A directory of IDX files: its training images and labels.
            input = input.join("train-images-idx3-ubyte.gz");
        }
        let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.contains("images-idx3") {
            labels = Some(input.with_file_name(name.replace("images-idx3", "labels-idx1")));
        }
        let label = match label {
            "last" => LabelSpec::Last,
            name => LabelSpec::Name(name.to_string()),
        };
        let opts = ConvertOptions::new()
            .with_label(label)
            .with_labels_path(labels)
            .with_n_features(n_features)
            .with_overwrite(true);
        eprintln!("converting {} ...", input.display());
        let report = kapprox::io::convert(&input, &dest, &opts, &mut |_| {})
            .with_context(|| format!("{}: cannot convert", input.display()))?;
        let n_inputs = report.columns.len() - usize::from(report.label.is_some());
        Ok((dest, n_inputs))
    }

    /// A Parquet directory for `input` (converted when raw), training rows only.
    pub fn resolve_train_only(&mut self, input: &Path, label: &str) -> Result<PathBuf> {
        if is_parquet_dir(input) {
            return Ok(input.to_path_buf());
        }
        if !input.exists() {
            bail!("{}: no such file or directory", input.display());
        }
        Ok(self.convert(input, &format!("{}-train", short_name(input)), label, None)?.0)
    }

    /// Training and test Parquet directories for `src`: the given test set,
    /// the raw file's companion, or a seeded split of `test_fraction`.
    pub fn resolve(&mut self, src: &Source, test_fraction: f64, observer: &dyn Observer) -> Result<DataSet> {
        let input = &src.input;
        if !input.exists() {
            bail!("{}: no such file or directory", input.display());
        }
        let name = if input.is_dir() && !input.join("train-images-idx3-ubyte.gz").is_file() {
            let n = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let n = n.strip_suffix("-train").or(n.strip_suffix("_train")).map(str::to_string).unwrap_or(n);
            // The training half of a split kept in a --work-dir.
            n.strip_suffix("-split").map(str::to_string).unwrap_or(n)
        } else if input.is_dir() {
            input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            short_name(input)
        };
        let parquet = is_parquet_dir(input);
        let (train, n_in) =
            if parquet { (input.clone(), 0) } else { self.convert(input, &format!("{name}-train"), &src.label, None)? };
        let raw_test = match &src.test {
            Some(t) => Some(t.clone()),
            None if parquet => None,
            None if input.is_dir() => Some(input.join("t10k-images-idx3-ubyte.gz")).filter(|p| p.is_file()),
            None => companion(input),
        };
        let (train, test) = match raw_test {
            Some(t) if is_parquet_dir(&t) => (train, t),
            Some(t) => {
                // LIBSVM: the test file may not use the last feature index.
                let width = (!parquet && n_in > 0).then_some(n_in);
                (train, self.convert(&t, &format!("{name}-test"), &src.label, width)?.0)
            }
            None => {
                let (tr, te) =
                    (self.root.join(format!("{name}-split-train")), self.root.join(format!("{name}-split-test")));
                let reuse = self.tmp.is_none() && is_parquet_dir(&tr) && is_parquet_dir(&te);
                if !reuse {
                    eprintln!("splitting {} ({:.0}% test) ...", train.display(), 100.0 * test_fraction);
                    let cfg = SplitConfig {
                        input: train.clone(),
                        train: tr.clone(),
                        test: te.clone(),
                        label: LabelSpec::Hint,
                        test_fraction,
                        seed: 0,
                        chunk_rows: kapprox::io::DEFAULT_CHUNK_ROWS,
                        rows_per_shard: 1_000_000,
                        overwrite: true,
                    };
                    kapprox::split::split(&cfg, observer)?;
                }
                (tr, te)
            }
        };
        let (ds_train, ds_test) = (Dataset::open(&train)?, Dataset::open(&test)?);
        let (features, label) = ds_train.resolve_columns(&LabelSpec::Hint)?;
        if label.is_none() {
            bail!("{}: no label column recorded; convert it with --label", train.display());
        }
        Ok(DataSet {
            name,
            n_train: ds_train.n_rows(),
            n_test: ds_test.n_rows(),
            n_features: features.iter().filter(|c| *c != kapprox::io::writer::ROW_ID_COLUMN).count(),
            train,
            test,
            task: src.task,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_companions() {
        assert_eq!(short_name(Path::new("/d/cpu_rks_train.tsv.gz")), "cpu_rks");
        assert_eq!(short_name(Path::new("/d/pmlb/574_house_16H.tsv.gz")), "574_house_16H");
        assert_eq!(short_name(Path::new("/d/libsvm/a9a")), "a9a");
        assert_eq!(short_name(Path::new("/d/fashion-mnist/train-images-idx3-ubyte.gz")), "fashion-mnist");
        let dir = tempfile::tempdir().unwrap();
        let train = dir.path().join("x_train.csv");
        std::fs::write(&train, "a,b\n").unwrap();
        assert_eq!(companion(&train), None);
        std::fs::write(dir.path().join("x_test.csv"), "a,b\n").unwrap();
        assert_eq!(companion(&train), Some(dir.path().join("x_test.csv")));
        let a9a = dir.path().join("a9a");
        std::fs::write(&a9a, "").unwrap();
        std::fs::write(dir.path().join("a9a.t"), "").unwrap();
        assert_eq!(companion(&a9a), Some(dir.path().join("a9a.t")));
    }
}
