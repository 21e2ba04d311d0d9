//! Help texts that differ from `args`' doc comments: each subcommand's
//! examples (`after_help`) and the shared flags whose meaning or default
//! differs for one command (applied with `mut_arg`).
//!
//! Every example runs from the repository root on the shipped CPU data and
//! writes under `out/`; `tests/cli/readme.rs` runs all of them, in an
//! order where each finds what the earlier ones wrote, so they cannot drift
//! from the flags.

use clap::Arg;

/// `convert`.
pub(crate) const CONVERT: &str = "\
Examples (from the repository root):
  kapprox convert data/cpu_rks_train.tsv.gz --out out/cpu --label last
  kapprox convert data/cpu_rks_test.tsv.gz --out out/cpu-test --json";

/// `split`.
pub(crate) const SPLIT: &str = "\
Examples:
  kapprox split out/cpu --train out/cpu-train --test out/cpu-valid --overwrite";

/// `fit`.
pub(crate) const FIT: &str = "\
Examples:
  kapprox fit --train out/cpu-train --out out/cpu.safetensors --features 512
  kapprox fit --train out/cpu-train --out out/nys.safetensors --map nystrom --features 256 --folds 3
  kapprox fit --train out/cpu-train --out out/cpu.safetensors --plan";

/// `eval`.
pub(crate) const EVAL: &str = "\
Examples:
  kapprox eval --model out/cpu.safetensors --data out/cpu-test
  kapprox eval --model out/cpu.safetensors --data out/cpu-test --json";

/// `predict`.
pub(crate) const PREDICT: &str = "\
Output: one Parquet file per input shard, with the columns row_id (u64) and prediction
(f64; the class label for classification), target when the input holds the model's label
column, and score_<class> (one per class) for classification.

Examples:
  kapprox predict --model out/cpu.safetensors --data out/cpu-test --out out/predictions";

/// `featurize`.
pub(crate) const FEATURIZE: &str = "\
Output: one Parquet file per input shard, with the columns row_id, z0..z{l-1} (dense maps) or
indices/values list columns (binning, eof), and the label column when the input has one.
Without --model, the scaling and σ come from the data given; --save-map stores them with the
map, and --model MAP applies the very same map to another directory (train/test consistent).

Examples:
  kapprox featurize --data out/cpu-train --out out/features-train --save-map out/map.safetensors
  kapprox featurize --data out/cpu-test --out out/features-test --model out/map.safetensors
  kapprox featurize --data out/cpu-test --out out/features-nys --model out/nys.safetensors";

/// `kernel-error`.
pub(crate) const KERNEL_ERROR: &str = "\
Examples:
  kapprox kernel-error --data out/cpu-train
  kapprox kernel-error --data out/cpu-train --map tefm-g --features 200 --repeats 3 --rows 2000";

/// `generate`.
pub(crate) const GENERATE: &str = "\
Examples (200 000 rows x 54 columns: about 90 MB):
  kapprox generate --out out/big --rows 200000 --columns 54 --classes 7 --rows-per-shard 50000";

/// `reduce`.
pub(crate) const REDUCE: &str = "\
Examples (two parts of one pass over the 4 shards `generate --help` writes, then the reduce):
  kapprox fit --train out/big --out out/p1.kpart --features 256 --sigma 4 --part 1/2
  kapprox fit --train out/big --out out/p2.kpart --features 256 --sigma 4 --part 2/2
  kapprox reduce out/p1.kpart out/p2.kpart --out out/big-parts.safetensors";

/// `demo`.
pub(crate) const DEMO: &str = "\
Examples (from the repository root, which holds data/):
  kapprox demo
  kapprox demo --features 512 --json";

/// `experiment`.
pub(crate) const EXPERIMENT: &str = "\
Examples (a small run; without --data, the shared data sets are used):
  kapprox experiment kernel-approx --data out/cpu-train --out out/ka --features 16,64 --rows 500";

/// `--sigma` of the commands that take one bandwidth (featurize,
/// kernel-error): `auto` by default, no validation split.
pub(crate) fn one_sigma(arg: Arg) -> Arg {
    arg.default_value("auto").help(
        "Kernel bandwidth: a number, `auto` (the median Euclidean distance between 1000 sampled rows after \
         scaling) or `auto*F`",
    )
}

/// `--map` of the commands that map data (no `exact`, which is a fit only).
pub(crate) fn map_only(arg: Arg) -> Arg {
    arg.help(
        "Feature map. Data-independent: rff (alias rff-gaussian), orf, sorf, qmc, fastfood, binning, comp. Learned \
         from data (featurize: through --model of a fit; kernel-error: fitted on its rows): nystrom, tefm-g, tefm-s, \
         tefm-c, eof",
    )
}
