//! Raw command-line arguments (clap): every subcommand and flag, with its
//! help text. Validation into the library's configurations happens in
//! `validate`; handlers live in `commands`.

use crate::featurize_args::FeaturizeOutputArgs;
use crate::help;
use crate::output_args::{CompressionArg, OverwriteArg};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

mod columns;
pub(crate) use columns::{ColumnArgs, OutputArgs};

/// kapprox: kernel methods at scale through explicit feature maps,
/// streaming Parquet shards and sufficient statistics.
#[derive(Debug, Parser)]
#[command(name = "kapprox", version, about, long_about = None, max_term_width = 100)]
pub(crate) struct Cli {
    /// Worker threads (default: all cores).
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) threads: Option<usize>,
    /// No progress bars.
    #[arg(long, short, global = true, help_heading = "Global options")]
    pub(crate) quiet: bool,
    /// The command.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Convert CSV/TSV, LIBSVM or IDX (optionally .gz/.bz2) into a directory of Parquet shards.
    Convert(ConvertArgs),
    /// Split a Parquet dataset into train and test directories by a hash of the row id.
    Split(SplitArgs),
    /// Map a Parquet dataset through a feature map into Parquet feature shards.
    Featurize(FeaturizeArgs),
    /// Fit ridge regression or one-vs-rest classification on mapped features; writes a model file.
    Fit(FitArgs),
    /// Predict with a model: Parquet in, Parquet predictions out.
    Predict(PredictArgs),
    /// Evaluate a model on labelled data (RMSE, relative RMSE, MAE, R², accuracy, macro-F1).
    Eval(EvalArgs),
    /// Run convert -> fit -> evaluate on the CPU data shipped in data/ and print test metrics.
    Demo(DemoArgs),
    /// Write a synthetic dataset of any size (Gaussian inputs, a random smooth target).
    Generate(GenerateArgs),
    /// Measure ‖K − ZZᵀ‖₂/‖K‖₂ and the Frobenius error of a feature map on data.
    KernelError(KernelErrorArgs),
    /// Run a source paper's experiment (kernel-approx, accuracy-vs-time, rmse-table, nystrom-vs-rff,
    /// eof-sparsity); writes results.csv and NAME.png into --out.
    Experiment(ExperimentArgs),
    /// Merge the part files of one fit pass (from `fit --part`) and solve, or write the pass
    /// result the next pass starts from (`fit --after`).
    Reduce(ReduceArgs),
    /// One part of one pass for `fit --workers` (internal).
    #[command(hide = true)]
    Worker(WorkerArgs),
}

/// Arguments of `reduce`.
#[derive(Debug, Args)]
#[command(after_help = help::REDUCE)]
pub(crate) struct ReduceArgs {
    /// Part files written by `fit --part I/N` (or `--shards`), all of the same pass.
    pub(crate) parts: Vec<PathBuf>,
    /// Also reduce every `*.kpart` file of this directory.
    #[arg(long)]
    pub(crate) parts_dir: Option<PathBuf>,
    /// The pass result the parts were computed after (default: the path recorded in the parts).
    #[arg(long)]
    pub(crate) after: Option<PathBuf>,
    /// Output: the model after the last pass, else the pass result for `fit --after`.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Replacing an existing output.
    #[command(flatten)]
    pub(crate) output: OverwriteArg,
    /// Storing the map's random parameters in the model.
    #[command(flatten)]
    pub(crate) store: crate::store_map_args::StoreMapArgs,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of the hidden `worker` command.
#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The pass result to continue from (written by the coordinator).
    #[arg(long)]
    pub(crate) job: PathBuf,
    /// Part I/N of the pass.
    #[arg(long)]
    pub(crate) part: String,
    /// The part file to write.
    #[arg(long)]
    pub(crate) out: PathBuf,
}

/// Arguments of `kernel-error`.
#[derive(Debug, Args)]
#[command(after_help = help::KERNEL_ERROR, mut_arg("sigma", help::one_sigma), mut_arg("map", help::map_only))]
pub(crate) struct KernelErrorArgs {
    /// Parquet file or directory (the label column, if recorded, is not an input).
    #[arg(long)]
    pub(crate) data: PathBuf,
    /// The map (--sigma must be one value; the seeds are --seed, --seed+1, ...).
    #[command(flatten)]
    pub(crate) map: MapArgs,
    /// Number of independent maps (seeds) to average.
    #[arg(long, default_value_t = 1)]
    pub(crate) repeats: u64,
    /// Compare on at most this many rows (a seeded sample beyond; K takes rows² doubles).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) rows: usize,
    /// Label column to leave out: a name, `last`, `auto` (recorded by convert) or `none`.
    #[arg(long, default_value = "auto")]
    pub(crate) label: String,
    /// Input columns.
    #[command(flatten)]
    pub(crate) columns: ColumnArgs,
    /// Input scaling (eof always uses minmax).
    #[arg(long, value_enum, default_value_t)]
    pub(crate) scale: ScaleArg,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `generate`.
#[derive(Debug, Args)]
#[command(after_help = help::GENERATE)]
pub(crate) struct GenerateArgs {
    /// Output directory of Parquet shards.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Number of rows.
    #[arg(long)]
    pub(crate) rows: u64,
    /// Number of input columns (besides the target).
    #[arg(long = "columns", visible_alias = "features", default_value_t = 54)]
    pub(crate) features: usize,
    /// Number of classes; 0 writes a regression target.
    #[arg(long, default_value_t = 0)]
    pub(crate) classes: usize,
    /// Rows per shard.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) rows_per_shard: u64,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Replace an existing output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// Input format of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    /// Comma-separated values.
    Csv,
    /// Tab-separated values.
    Tsv,
    /// LIBSVM / SVMlight sparse text.
    Libsvm,
    /// MNIST-style IDX images (labels from --labels).
    Idx,
}

/// What to do with NaN or infinite values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum NanArg {
    /// Refuse the input with an error naming the file, row and column.
    #[default]
    Refuse,
    /// Drop the row and count it.
    Skip,
    /// Replace a missing number by its training mean and a missing category by "other"
    /// (stored in the model; rows with a missing label are skipped). convert: keep the value.
    Impute,
}

/// Arguments of `convert`.
#[derive(Debug, Args)]
#[command(after_help = help::CONVERT)]
pub(crate) struct ConvertArgs {
    /// Input file (CSV, TSV, LIBSVM or IDX; gzip and bzip2 are read transparently).
    pub(crate) input: PathBuf,
    /// Output directory of Parquet shards (must not exist or be empty, unless --overwrite).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Input format (default: from the file name, else sniffed).
    #[arg(long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// Field delimiter for CSV/TSV, one character (default: detected).
    #[arg(long)]
    pub(crate) delimiter: Option<char>,
    /// Whether the first line is a header (default: detected).
    #[arg(long)]
    pub(crate) header: Option<bool>,
    /// Label column: a column name, or `last` (CSV/TSV).
    #[arg(long, default_value = "last")]
    pub(crate) label: String,
    /// IDX labels file (idx1) to pair with an IDX images file.
    #[arg(long)]
    pub(crate) labels: Option<PathBuf>,
    /// Number of features of a LIBSVM file (default: the largest index seen).
    #[arg(long)]
    pub(crate) n_features: Option<usize>,
    /// Rows per output shard.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) rows_per_shard: usize,
    /// NaN / Inf handling.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) nan: NanArg,
    /// Replace an existing output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
    #[command(flatten)]
    pub(crate) written: CompressionArg,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `split`.
#[derive(Debug, Args)]
#[command(after_help = help::SPLIT)]
pub(crate) struct SplitArgs {
    /// Input Parquet file or directory.
    pub(crate) input: PathBuf,
    /// Output directory for the training rows.
    #[arg(long)]
    pub(crate) train: PathBuf,
    /// Output directory for the test rows.
    #[arg(long)]
    pub(crate) test: PathBuf,
    /// Fraction of rows in the test part.
    #[arg(long, default_value_t = 0.2)]
    pub(crate) test_fraction: f64,
    /// Seed of the row hash.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Rows per read chunk.
    #[arg(long, default_value_t = kapprox::io::DEFAULT_CHUNK_ROWS)]
    pub(crate) chunk_rows: usize,
    /// Rows per output shard.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) rows_per_shard: u64,
    /// Label column: a name, `last`, or `auto` (the label recorded by convert).
    #[arg(long, default_value = "auto")]
    pub(crate) label: String,
    /// Replace existing output directories.
    #[arg(long)]
    pub(crate) overwrite: bool,
}

/// The feature map and its parameters.
#[derive(Debug, Args, Clone)]
pub(crate) struct MapArgs {
    /// Feature map. Data-independent: rff (alias rff-gaussian), orf, sorf, qmc, fastfood,
    /// binning, comp. Learned from the data: nystrom, tefm-g, tefm-s, tefm-c (TEFM with a
    /// Gaussian, block-SRHT or CountSketch sketch), eof (sparse-grid entropic optimal features).
    /// Reference: exact (exact kernel ridge on all rows; fit only, n ≤ 20 000).
    #[arg(long, default_value = "rff")]
    pub(crate) map: String,
    /// Kernel: gaussian, laplacian, cauchy, matern (eof: laplacian or sobolev).
    #[arg(long, default_value = "gaussian")]
    pub(crate) kernel: String,
    /// Matérn smoothness ν.
    #[arg(long, default_value_t = 1.5)]
    pub(crate) nu: f64,
    /// RFF form: pairs ([cos, sin], lower variance; the default) or phase (cos(wx + b)).
    #[arg(long)]
    pub(crate) form: Option<String>,
    /// Number of output features l (nystrom: landmarks m; eof: the budget M unless --level).
    #[arg(long, short = 'l', default_value_t = 1024)]
    pub(crate) features: usize,
    /// Kernel bandwidth(s): numbers, `auto` (the median rule) or `auto*F`, comma-separated.
    /// Several values are fitted in the same pass and chosen on the validation split.
    /// `auto` = median Euclidean distance between 1000 sampled rows after scaling
    /// (rows picked by a seeded hash of their row id).
    #[arg(long, default_value = "auto*0.5,auto,auto*2,auto*4")]
    pub(crate) sigma: String,
    /// Seed of every random choice (map, splits, samples).
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// binning: number of random grids P (default 256).
    #[arg(long)]
    pub(crate) grids: Option<usize>,
    /// comp: inner RFF dimension d before the random projection to l (default 2l).
    #[arg(long)]
    pub(crate) inner: Option<usize>,
    /// tefm-*: the base map (rff, orf, sorf, qmc, fastfood, comp, or nystrom: d landmarks sampled in a first pass).
    #[arg(long, default_value = "rff")]
    pub(crate) base: String,
    /// tefm-*: features d of the base map (default 4l).
    #[arg(long)]
    pub(crate) sketch_features: Option<usize>,
    /// tefm-*: power iterations q.
    #[arg(long, default_value_t = 1)]
    pub(crate) power: usize,
    /// tefm-*: one-pass (FᵀF in memory: d² doubles per split part) or multi-pass (1 + q
    /// product passes); auto picks one-pass when it fits --max-memory (fit; default: half of RAM)
    /// and does less work per row (always at the default d = 4l).
    #[arg(long, default_value = "auto")]
    pub(crate) tefm_strategy: String,
    /// nystrom: relative eigenvalue cut-off of K_mm.
    #[arg(long, default_value_t = kapprox::features::nystrom::DEFAULT_REL_TOL)]
    pub(crate) rel_tol: f64,
    /// eof: sparse-grid level n (instead of the feature budget --features).
    #[arg(long)]
    pub(crate) level: Option<u32>,
    /// eof: the 1-D basis. centred (default: complete and sparse),
    /// boundary (complete, nearly dense in many dimensions), or paper (the
    /// EOF paper's hats only: sparse, but zero on the faces of the cube).
    #[arg(long, value_parser = ["centred", "boundary", "paper"])]
    pub(crate) eof_basis: Option<String>,
    /// eof: which M functions a budget keeps: nested (all coarser levels,
    /// default) or uniform (the paper's draw from the whole level: sparser,
    /// less accurate).
    #[arg(long, value_parser = ["nested", "uniform"])]
    pub(crate) eof_subset: Option<String>,
}

/// Reading and scaling options shared by the commands that read Parquet.
#[derive(Debug, Args, Clone)]
pub(crate) struct ReadArgs {
    /// Label column: a name, `last`, or `auto` (the label recorded by convert).
    #[arg(long, default_value = "auto")]
    pub(crate) label: String,
    /// Rows per chunk (bounds memory; does not change the result).
    #[arg(long, default_value_t = kapprox::io::DEFAULT_CHUNK_ROWS)]
    pub(crate) chunk_rows: usize,
    /// NaN / Inf handling.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) nan: NanArg,
}

/// Input scaling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ScaleArg {
    /// Zero mean, unit variance per column.
    #[default]
    Standard,
    /// Map each column's [min, max] to [0, 1].
    Minmax,
    /// No scaling.
    None,
}

/// Learning task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum TaskArg {
    /// Ridge regression on the label.
    #[default]
    Regression,
    /// One-vs-rest ridge on ±1 targets, predicted class = argmax.
    Classification,
}

/// Arguments of `featurize`.
#[derive(Debug, Args)]
#[command(after_help = help::FEATURIZE, mut_arg("sigma", help::one_sigma), mut_arg("map", help::map_only))]
pub(crate) struct FeaturizeArgs {
    /// Input Parquet file or directory.
    #[arg(long)]
    pub(crate) data: PathBuf,
    /// Output directory: one feature shard per input shard.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Use the map and scaling of a fitted model (or a map file of --save-map) instead of
    /// --map/--sigma.
    #[arg(long)]
    pub(crate) model: Option<PathBuf>,
    /// The map (ignored with --model; --sigma must be one value).
    #[command(flatten)]
    pub(crate) map: MapArgs,
    /// Reading options.
    #[command(flatten)]
    pub(crate) read: ReadArgs,
    /// Input scaling (ignored with --model).
    #[arg(long, value_enum, default_value_t)]
    pub(crate) scale: ScaleArg,
    /// Write features as float32.
    #[arg(long)]
    pub f32: bool,
    /// Input columns (ignored with --model).
    #[command(flatten)]
    pub(crate) columns: ColumnArgs,
    /// Kept columns and compression.
    #[command(flatten)]
    pub(crate) written: OutputArgs,
    /// Map files and the report.
    #[command(flatten)]
    pub(crate) map_output: FeaturizeOutputArgs,
    /// Replacing an existing output.
    #[command(flatten)]
    pub(crate) output: OverwriteArg,
}

/// Arguments of `fit`.
#[derive(Debug, Args)]
#[command(after_help = help::FIT)]
pub(crate) struct FitArgs {
    /// Training data: Parquet file or directory of shards.
    #[arg(long)]
    pub(crate) train: PathBuf,
    /// Model file to write (safetensors + JSON metadata); with --part or --shards, the part file.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Replacing an existing output.
    #[command(flatten)]
    pub(crate) output: OverwriteArg,
    /// Storing the map's random parameters in the model.
    #[command(flatten)]
    pub(crate) store: crate::store_map_args::StoreMapArgs,
    /// Extending the selection grids.
    #[command(flatten)]
    pub(crate) selection: crate::store_map_args::ExtendGridArg,
    /// The map.
    #[command(flatten)]
    pub(crate) map: MapArgs,
    /// Reading options.
    #[command(flatten)]
    pub(crate) read: ReadArgs,
    /// Input and categorical columns.
    #[command(flatten)]
    pub(crate) columns: ColumnArgs,
    /// Ridge penalty α of ‖Zw + b − y‖² + α‖w‖² (scikit-learn's `alpha`; the intercept b is not
    /// penalised): a number, a comma list, or a log range `LO..HI[:N]`. Several values are
    /// chosen on the validation split. Default: n_train × 10^(−9..−1), 17 values.
    #[arg(long)]
    pub(crate) alpha: Option<String>,
    /// Learning task.
    #[arg(long, value_enum, default_value_t)]
    pub(crate) task: TaskArg,
    /// Input scaling (statistics stored in the model and applied by predict). Default: standard;
    /// eof needs minmax (its default).
    #[arg(long, value_enum)]
    pub(crate) scale: Option<ScaleArg>,
    /// Fraction of training rows held out (by a seeded hash of the row id) to choose σ and α.
    /// The final model is refitted on all rows from the same statistics.
    #[arg(long, default_value_t = 0.2)]
    pub(crate) validation: f64,
    /// Choose σ and α by k-fold cross-validation instead of one held-out part (same single
    /// pass; memory grows with k).
    #[arg(long)]
    pub(crate) folds: Option<usize>,
    /// Refuse to start when the statistics would need more than this many bytes (e.g. 4G);
    /// also the budget of TEFM's one-pass strategy. Default: half of the machine's memory
    /// (or of the cgroup's limit), 4G when it cannot be read.
    #[arg(long)]
    pub(crate) max_memory: Option<String>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run only part I of N of the next pass (shards split into N contiguous ranges) and write
    /// its partial statistics to --out; merge the parts with `kapprox reduce`.
    #[arg(long, value_name = "I/N", help_heading = "Running on many processes")]
    pub(crate) part: Option<String>,
    /// Like --part, with explicit shard indices, e.g. 0,3,5-9.
    #[arg(long, value_name = "LIST", conflicts_with = "part", help_heading = "Running on many processes")]
    pub(crate) shards: Option<String>,
    /// Continue after this pass result (written by `kapprox reduce`): run the next pass.
    #[arg(long, value_name = "RESULT", help_heading = "Running on many processes")]
    pub(crate) after: Option<PathBuf>,
    /// Run every pass in P worker processes over disjoint shard sets and reduce their parts
    /// (isolates memory and crashes; threads are the default inside one process).
    #[arg(
        long,
        value_name = "P",
        conflicts_with_all = ["part", "shards", "after"],
        help_heading = "Running on many processes"
    )]
    pub(crate) workers: Option<usize>,
    /// Print the passes this fit makes (JSON) and exit without reading data.
    #[arg(long, help_heading = "Running on many processes")]
    pub(crate) plan: bool,
    /// Accumulation precision (perf: issue 15).
    #[command(flatten)]
    pub(crate) precision: crate::precision::PrecisionArgs,
}

/// Arguments of `predict`.
#[derive(Debug, Args)]
#[command(after_help = help::PREDICT)]
pub(crate) struct PredictArgs {
    /// Model file written by fit.
    #[arg(long)]
    pub(crate) model: PathBuf,
    /// Input Parquet file or directory.
    #[arg(long)]
    pub(crate) data: PathBuf,
    /// Output directory: one prediction shard per input shard.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Replacing an existing output.
    #[command(flatten)]
    pub(crate) output: OverwriteArg,
    /// Rows per chunk.
    #[arg(long, default_value_t = kapprox::io::DEFAULT_CHUNK_ROWS)]
    pub(crate) chunk_rows: usize,
    /// Missing values (null, NaN, Inf). Default: impute if the model was fitted with
    /// --nan impute, else refuse.
    #[arg(long, value_enum)]
    pub(crate) nan: Option<NanArg>,
    /// Kept columns and compression.
    #[command(flatten)]
    pub(crate) written: OutputArgs,
}

/// Arguments of `eval`.
#[derive(Debug, Args)]
#[command(after_help = help::EVAL)]
pub(crate) struct EvalArgs {
    /// Model file written by fit.
    #[arg(long)]
    pub(crate) model: PathBuf,
    /// Labelled Parquet file or directory.
    #[arg(long)]
    pub(crate) data: PathBuf,
    /// Rows per chunk.
    #[arg(long, default_value_t = kapprox::io::DEFAULT_CHUNK_ROWS)]
    pub(crate) chunk_rows: usize,
    /// Missing values (null, NaN, Inf). Default: impute if the model was fitted with
    /// --nan impute, else refuse.
    #[arg(long, value_enum)]
    pub(crate) nan: Option<NanArg>,
    /// Print the metrics as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Arguments of `demo`.
#[derive(Debug, Args)]
#[command(after_help = help::DEMO)]
pub(crate) struct DemoArgs {
    /// Directory holding cpu_rks_train.tsv.gz and cpu_rks_test.tsv.gz.
    #[arg(long, default_value = "data")]
    pub(crate) data: PathBuf,
    /// Number of features l.
    #[arg(long, short = 'l', default_value_t = 2048)]
    pub(crate) features: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Keep the intermediate files here instead of a temporary directory.
    #[arg(long)]
    pub(crate) work_dir: Option<PathBuf>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The experiments. Each variant's text, with its defaults, is its `--help` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExperimentArg {
    /// TEFM paper Fig. 1: ‖K − ZZᵀ‖₂/‖K‖₂ against the number of features l, per map. Defaults: 3000
    /// rows sampled from the CPU training set, RFF, Quasi, Comp, Fastfood, ORF, Nyström, TEFM-G,
    /// TEFM-S (d = 4l) at l = 16..512 (powers of two), seeds 0,1,2, σ by the median rule.
    KernelApprox,
    /// TEFM paper Figs. 2–3: test error against l and against fit time (map + train), per map.
    /// Defaults: CPU (relative RMSE) and a9a (error rate), the eight maps of kernel-approx at
    /// l = 16..512, seeds 0,1,2.
    AccuracyVsTime,
    /// Fastfood paper Table 3: test RMSE of exact / Nyström / RFF / Fastfood, Gaussian and Matérn
    /// (ν = 1.5). Defaults: CPU (with its test file) and census house_16H (an 80/20 split), l = 2048,
    /// seed 0, exact kernel ridge up to --exact-rows training rows.
    RmseTable,
    /// Nyström-vs-RFF paper Fig. 2: test RMSE or accuracy against the number of landmarks / features.
    /// Defaults: CPU, census house_16H, a9a and a 15k Covertype sample, m = 10..1000, seeds 0,1,2.
    NystromVsRff,
    /// EOF paper Table 2: nnz of the feature matrix, fit time and test error of EOF vs dense maps.
    /// Defaults: CPU, RKS (Laplacian), ORF (Gaussian), EOF and the paper's EOF at M = 256, 1024,
    /// 2048, seeds 0,1,2.
    EofSparsity,
}

/// Arguments of `experiment`.
#[derive(Debug, Args)]
#[command(after_help = help::EXPERIMENT)]
pub(crate) struct ExperimentArgs {
    /// The experiment: kernel-approx, accuracy-vs-time, rmse-table, nystrom-vs-rff or eof-sparsity.
    #[arg(value_enum)]
    pub(crate) name: ExperimentArg,
    /// Dataset (repeatable): a Parquet directory, or a raw CSV/TSV/LIBSVM/IDX file (or a directory
    /// of IDX files) converted on the fly. Default: the experiment's sets from --shared-data.
    #[arg(long)]
    pub(crate) data: Vec<PathBuf>,
    /// Test set for the --data at the same position (Parquet directory or raw file). Default: the raw
    /// file's companion (`*_test*`, `*.t`, `t10k-*`), else a seeded split of --test-fraction.
    #[arg(long)]
    pub(crate) test: Vec<PathBuf>,
    /// Fraction of rows held out as the test set when a dataset has no test companion.
    #[arg(long, default_value_t = 0.2)]
    pub(crate) test_fraction: f64,
    /// Output directory: results.csv and NAME.png (created if missing; files replaced atomically).
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Seeds, comma-separated; results are averaged over them. Default: per experiment.
    #[arg(long, value_delimiter = ',')]
    pub(crate) seeds: Option<Vec<u64>>,
    /// Feature counts l (landmarks m, EOF budget M), comma-separated. Default: per experiment.
    #[arg(long, value_delimiter = ',')]
    pub(crate) features: Option<Vec<usize>>,
    /// Methods, comma-separated. Default: all of the experiment's: kernel-approx and accuracy-vs-time
    /// rff, qmc, comp, fastfood, orf, nystrom, tefm-g, tefm-s; rmse-table exact, nystrom, rff,
    /// fastfood, exact-matern, rff-matern, fastfood-matern; nystrom-vs-rff nystrom, rff; eof-sparsity
    /// rff-phase, orf, nystrom, eof, eof-uniform, eof-boundary, eof-paper.
    #[arg(long, value_delimiter = ',')]
    pub(crate) methods: Option<Vec<String>>,
    /// kernel-approx: rows sampled to form K (n² doubles: 72 MB at 3000). Default: 3000.
    #[arg(long)]
    pub(crate) rows: Option<usize>,
    /// One bandwidth for every method: a number, `auto` or `auto*F`. Default: chosen per dataset on
    /// validation by RFF among auto*0.5, auto, auto*2, auto*4, auto*8 (kernel-approx: auto).
    #[arg(long)]
    pub(crate) sigma: Option<String>,
    /// Learning task of user-given datasets. Default: the experiment's.
    #[arg(long, value_enum)]
    pub(crate) task: Option<TaskArg>,
    /// Label column of raw CSV/TSV files: a name or `last`.
    #[arg(long, default_value = "last")]
    pub(crate) label: String,
    /// rmse-table: exact kernel ridge only for training sets of at most this many rows (the
    /// eigendecomposition costs n³).
    #[arg(long, default_value_t = 8_000)]
    pub(crate) exact_rows: usize,
    /// Where the default datasets are looked for (relative paths: from the current directory, else
    /// from the source tree this binary was built from).
    #[arg(long, default_value = "../shared/data")]
    pub(crate) shared_data: PathBuf,
    /// Keep converted datasets here (reused by later runs) instead of a temporary directory.
    #[arg(long)]
    pub(crate) work_dir: Option<PathBuf>,
    /// Print the rows as one JSON array instead of a markdown table.
    #[arg(long)]
    pub(crate) json: bool,
}
