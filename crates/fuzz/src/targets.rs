//! The fuzz targets: every reader of bytes that a user hands to kapprox.
//!
//! A target writes the bytes where its reader expects a file (inside a
//! scratch directory of its own), runs the reader, and returns `Ok` or the
//! error message. A panic, a hang or an allocation past the harness's limit
//! is a failure; so is a broken promise the target checks (e.g. a shard
//! that opens but does not hold the rows its footer declares).
//!
//! Adding a target: a `run` function and a `seeds` function below, and one
//! entry in [`TARGETS`].

use kapprox_io::{
    AtomicParquetWriter, ConvertOptions, Dataset, DatasetWriter, InputFormat, LabelSpec, NanPolicy, ReadOptions,
    convert,
};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// A fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The name used on the command line and for corpus directories.
    pub name: &'static str,
    /// What it exercises.
    pub about: &'static str,
    /// Runs the reader on the bytes inside the scratch directory.
    pub run: fn(&Path, &[u8]) -> Result<(), String>,
    /// Built-in seed inputs (the corpus directory adds more).
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// The files carry a whole-file digest: any input other than a seed
    /// must be refused, and one accepted is a failure.
    pub checksummed: bool,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "csv",
        about: "convert: delimited text, delimiter and header detected",
        run: csv,
        seeds: csv_seeds,
        checksummed: false,
    },
    Target {
        name: "tsv",
        about: "convert: tab-separated and whitespace text",
        run: tsv,
        seeds: tsv_seeds,
        checksummed: false,
    },
    Target {
        name: "libsvm",
        about: "convert: LIBSVM text, feature count from the file",
        run: libsvm,
        seeds: libsvm_seeds,
        checksummed: false,
    },
    Target { name: "idx", about: "convert: IDX images (MNIST layout)", run: idx, seeds: idx_seeds, checksummed: false },
    Target {
        name: "parquet",
        about: "Dataset::open and the chunk reader on one shard",
        run: parquet,
        seeds: parquet_seeds,
        checksummed: false,
    },
    Target {
        name: "model",
        about: "Model::load, then predicting one chunk",
        run: model,
        seeds: model_seeds,
        checksummed: true,
    },
    Target {
        name: "part",
        about: "read_part: a part file of a distributed fit",
        run: part,
        seeds: part_seeds,
        checksummed: true,
    },
];

/// The target named `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The memory budget of the convert targets: small, so that sizes read
/// from the input are refused long before the harness's allocation limit.
pub const CONVERT_BUDGET: u64 = 64 << 20;

fn convert_and_read(dir: &Path, bytes: &[u8], file: &str, opts: ConvertOptions) -> Result<(), String> {
    let input = dir.join(file);
    std::fs::write(&input, bytes).map_err(|e| e.to_string())?;
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    // Small shards and row groups, so that short inputs cross their edges.
    let opts = opts.with_max_memory(Some(CONVERT_BUDGET)).with_rows_per_shard(5).with_row_group_rows(2);
    let report = convert(&input, &out, &opts, &mut |_| {}).map_err(|e| e.to_string())?;
    // What was written must read back as written.
    let ds = Dataset::open(&out).unwrap_or_else(|e| panic!("convert's output does not open: {e}"));
    assert_eq!(ds.n_rows(), report.rows_written, "rows in the footers vs the report");
    assert_eq!(ds.columns(), report.columns.as_slice());
    let read = ReadOptions::new(report.columns.clone()).with_nan_policy(NanPolicy::Keep);
    let mut rows = 0;
    for chunk in ds.reader(read).unwrap_or_else(|e| panic!("convert's output cannot be read: {e}")) {
        rows += chunk.unwrap_or_else(|e| panic!("convert's output cannot be read: {e}")).n_rows() as u64;
    }
    assert_eq!(rows, report.rows_written, "rows read back vs written");
    Ok(())
}

fn csv(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    convert_and_read(dir, bytes, "in.csv", ConvertOptions::new().with_label(LabelSpec::Last))
}

fn tsv(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let opts = ConvertOptions::new().with_format(Some(InputFormat::Tsv)).with_nan_policy(NanPolicy::Skip);
    convert_and_read(dir, bytes, "in.tsv", opts)
}

fn libsvm(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    convert_and_read(dir, bytes, "in.svm", ConvertOptions::new().with_format(Some(InputFormat::Libsvm)))
}

fn idx(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let opts = ConvertOptions::new().with_format(Some(InputFormat::Idx)).with_nan_policy(NanPolicy::Keep);
    convert_and_read(dir, bytes, "images.idx", opts)
}

/// Opens the bytes as a one-shard dataset and reads every numeric column.
fn parquet(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let ds_dir = dir.join("ds");
    std::fs::create_dir_all(&ds_dir).map_err(|e| e.to_string())?;
    std::fs::write(ds_dir.join("part-00000.parquet"), bytes).map_err(|e| e.to_string())?;
    let ds = Dataset::open(&ds_dir).map_err(|e| e.to_string())?;
    let _ = ds.label_hint();
    let (features, _) = ds.resolve_columns(&LabelSpec::None).map_err(|e| e.to_string())?;
    let read = ReadOptions::new(features).with_nan_policy(NanPolicy::Keep).with_chunk_rows(3);
    let mut rows = 0;
    for chunk in ds.reader(read).map_err(|e| e.to_string())? {
        rows += chunk.map_err(|e| e.to_string())?.n_rows() as u64;
    }
    // The footer's row count is what the dataset promises.
    assert_eq!(rows, ds.n_rows(), "rows read vs the footer's count");
    Ok(())
}

/// Loads the bytes as a model file and predicts one chunk of rows: a model
/// that loads must also predict.
fn model(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join("model.safetensors");
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    let m = kapprox::Model::load(&path).map_err(|e| format!("{e:#}"))?;
    let mut x = ndarray::Array2::from_shape_fn((3, m.map.n_input()), |(i, j)| (i + j) as f64 * 0.25);
    m.doc.scaler.apply_in_place(x.view_mut());
    let s = m.scores(m.map.transform(x.view()).view());
    assert_eq!(s.dim(), (3, m.coef.ncols()), "scores of a loaded model");
    Ok(())
}

/// Reads the bytes as a part file (document and decoded state).
fn part(dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join("p.kpart");
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    kapprox::distributed::files::read_part(&path).map(|_| ()).map_err(|e| format!("{e:#}"))
}

/// A model file and a part file from a tiny fit (RFF, 16 features, 60 rows).
fn fitted_files() -> (Vec<u8>, Vec<u8>) {
    use kapprox::distributed::ShardSelection;
    use kapprox::distributed::files::part_bytes;
    use kapprox::distributed::part::{part_job, run_part};
    let dir = seed_dir();
    let tmp = dir.path();
    let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
    let mut w = DatasetWriter::create(tmp.join("ds"), &names, Some("y"), 20, false).expect("seed dataset");
    let x = ndarray::Array2::from_shape_fn((60, 3), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * 0.3 - 1.0);
    let y = x.column(0).mapv(f64::sin) + x.column(1);
    w.push_rows(x.view(), Some(y.view())).expect("seed rows");
    w.finish().expect("seed dataset");
    let params = kapprox::MethodParams { map: "rff".into(), n_components: 16, ..Default::default() };
    let mut cfg = kapprox::FitConfig::new(tmp.join("ds"), params.check(1, None).expect("rff"));
    cfg.sigmas = vec![kapprox::SigmaSpec::Value(1.5)];
    cfg.alphas = Some(vec![1e-3]);
    let (model, _) = kapprox::fit(&cfg, &kapprox::Silent).expect("seed fit");
    let (mut job, after) = part_job(&cfg, None).expect("seed job");
    let sel = ShardSelection::parse_part("1/2").expect("part");
    let (doc, state) = run_part(&mut job, after, &sel, &kapprox::Silent).expect("seed part");
    (model.to_bytes().expect("model bytes"), part_bytes(doc, state).expect("part bytes"))
}

/// A fresh directory to build seed files in, removed when dropped (on a
/// panic too). Tests build seeds on several threads of one process at
/// once: a name from the process id alone let one builder's clean-up
/// delete another's dataset mid-fit ("seed dataset: NotFound").
fn seed_dir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("kapprox-fuzz-seeds-").tempdir().expect("temporary directory")
}

fn model_seeds() -> Vec<Vec<u8>> {
    vec![fitted_files().0]
}

fn part_seeds() -> Vec<Vec<u8>> {
    vec![fitted_files().1]
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).expect("in memory");
    e.finish().expect("in memory")
}

fn csv_seeds() -> Vec<Vec<u8>> {
    let plain: Vec<&[u8]> = vec![
        b"a,b,y\n1,2,3\n4.5,-6e2,7\n",
        b"1;2;3\n4;5;6\n\n7;8;9\n",
        b"\xef\xbb\xbf\"x 1\",\"x2\",label\n\"1\", 2 ,0\n3,4,1\n",
        b"a\tb\n1\t2\n",
        b"x y z\n1 2 3\n4 5 6\n",
        b"a,a,b\n1,2,3\n",
        b"a,b\n1,nan\n2,inf\n",
        b"a,b\r\n1,2\r\n3,4\r\n",
    ];
    let mut seeds: Vec<Vec<u8>> = plain.iter().map(|s| s.to_vec()).collect();
    seeds.push(gzip(plain[0]));
    seeds
}

fn tsv_seeds() -> Vec<Vec<u8>> {
    vec![b"a\tb\ty\n1\t2\t3\n4\t5\t6\n".to_vec(), b"1\t2\n3\tnan\n5\t6\n".to_vec(), gzip(b"a\tb\n1\t2\n")]
}

fn libsvm_seeds() -> Vec<Vec<u8>> {
    vec![
        b"1 1:0.5 3:2\n-1 2:1e3 # comment\n\n0 1:1\n".to_vec(),
        b"+1 4:1\n-1 1:1 2:1 3:1 4:1\n".to_vec(),
        b"3.5 10:-2.25\n".to_vec(),
        gzip(b"1 1:1\n0 2:1\n"),
    ]
}

/// An IDX file: type `code`, dimensions, then the data bytes.
fn idx_file(code: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut b = vec![0, 0, code, dims.len() as u8];
    for d in dims {
        b.extend_from_slice(&d.to_be_bytes());
    }
    b.extend_from_slice(data);
    b
}

fn idx_seeds() -> Vec<Vec<u8>> {
    let f64s: Vec<u8> = [1.5f64, -2.0, 0.25, 1e3, -7.0, 3.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    let i16s: Vec<u8> = [1i16, -2, 300, -400].iter().flat_map(|v| v.to_be_bytes()).collect();
    vec![
        idx_file(0x08, &[3, 2, 2], &(0..12).collect::<Vec<u8>>()),
        idx_file(0x0E, &[2, 3], &f64s),
        idx_file(0x0B, &[4], &i16s),
        idx_file(0x0D, &[1, 1, 2], &[0x3f, 0x80, 0, 0, 0x7f, 0xc0, 0, 0]),
        gzip(&idx_file(0x08, &[2, 2], &[1, 2, 3, 4])),
    ]
}

/// Shards written by kapprox itself: a converted dataset (label and
/// statistics in the footer, one row group) and a file of mixed types
/// with nulls and several row groups.
fn parquet_seeds() -> Vec<Vec<u8>> {
    let dir = seed_dir();
    let tmp = dir.path();
    let names = vec!["a".to_string(), "b".to_string()];
    let mut w = DatasetWriter::create(tmp.join("ds"), &names, Some("y"), 1000, false).expect("seed dataset");
    let x = ndarray::Array2::from_shape_fn((12, 2), |(i, j)| (i * 3 + j) as f64 * 0.5 - 2.0);
    let y = ndarray::Array1::from_shape_fn(12, |i| (i % 2) as f64);
    w.push_rows(x.view(), Some(y.view())).expect("seed rows");
    w.finish().expect("seed dataset");
    let converted = std::fs::read(tmp.join("ds/part-00000.parquet")).expect("seed shard");

    use arrow::array::{ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch, UInt8Array};
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("f64", DataType::Float64, true),
        Field::new("f32", DataType::Float32, false),
        Field::new("i32", DataType::Int32, false),
        Field::new("u8", DataType::UInt8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from(vec![Some(1.0), None, Some(-3.5), Some(1e10), Some(0.0), Some(2.0), Some(7.0)])),
        Arc::new(Float32Array::from(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])),
        Arc::new(Int32Array::from(vec![1, -2, 3, -4, 5, -6, 7])),
        Arc::new(UInt8Array::from(vec![0u8, 1, 2, 3, 250, 255, 9])),
    ];
    let path = tmp.join("mixed.parquet");
    let mut w = AtomicParquetWriter::create_with(&path, schema.clone(), 3, vec![("k".into(), "v".into())])
        .expect("seed writer");
    w.write(&RecordBatch::try_new(schema, columns).expect("seed batch")).expect("seed batch");
    w.finish().expect("seed file");
    let mixed = std::fs::read(&path).expect("seed file");
    vec![converted, mixed]
}
