# kapprox tasks. Install `just` with `cargo install just` (or your package
# manager), then `just --list` shows the recipes. Every recipe runs from the
# repository root, writes under out/, and creates what it needs first
# (`just featurize` converts the shipped data if out/ does not hold it yet).
# Variables are overridden before the recipe name:
#   just features=2048 map=orf fit
#   just train=out/big task=classification fit

set shell := ["bash", "-euo", "pipefail", "-c"]

kapprox := "cargo run --release --quiet --"
train := "out/cpu-train"
test_data := "out/cpu-test"
features_out := "out/features"
model := "out/model.safetensors"
map_file := "out/map.safetensors"
predictions := "out/predictions"
map := "rff"
features := "1024"
sigma := "auto*0.5,auto,auto*2,auto*4"
task := "regression"
seed := "0"

# List the recipes.
default:
    @just --list

# Convert the shipped CPU data into Parquet shards under out/ (skipped when already there).
convert:
    [ -d out/cpu-train ] || {{kapprox}} convert data/cpu_rks_train.tsv.gz --out out/cpu-train --label last
    [ -d out/cpu-test ] || {{kapprox}} convert data/cpu_rks_test.tsv.gz --out out/cpu-test --label last

# Features of the training and test data through one map (fitted on the training data, saved, reused).
featurize: convert
    {{kapprox}} featurize --data {{train}} --out {{features_out}}-train --map {{map}} --features {{features}} --sigma auto --seed {{seed}} --save-map {{map_file}}
    {{kapprox}} featurize --data {{test_data}} --out {{features_out}}-test --model {{map_file}}

# Fit a model on the training data.
fit: convert
    {{kapprox}} fit --train {{train}} --out {{model}} --map {{map}} --features {{features}} --sigma '{{sigma}}' --task {{task}} --seed {{seed}}

# Predict the test data with the model into Parquet prediction shards.
predict: fit
    {{kapprox}} predict --model {{model}} --data {{test_data}} --out {{predictions}}

# Evaluate the model on the test data.
eval: fit
    {{kapprox}} eval --model {{model}} --data {{test_data}}

# The whole chain on the shipped data (the README's first command).
demo:
    {{kapprox}} demo

# The test suite (the README's second command).
test:
    cargo test --workspace --release

# Slow tests: millions of rows, memory bounds.
test-slow:
    cargo test --workspace --release -- --ignored --test-threads 1

# Criterion benches of the kernels.
bench:
    cargo bench --workspace

# What CI runs.
ci:
    .ci/run
