# kapprox tasks. `just --list` shows them; variables can be overridden:
#   just fit train=out/kdd features=2048

set shell := ["bash", "-euo", "pipefail", "-c"]

kapprox := "cargo run --release --quiet --"
data := "out/cpu-train"
test_data := "out/cpu-test"
train := data
out := "out/features"
model := "out/model.safetensors"
predictions := "out/predictions"
map := "rff"
features := "1024"
sigma := "auto*0.5,auto,auto*2,auto*4"
task := "regression"
seed := "0"

# List the recipes.
default:
    @just --list

# Convert the shipped CPU data into Parquet shards under out/.
convert:
    {{kapprox}} convert data/cpu_rks_train.tsv.gz --out out/cpu-train --overwrite
    {{kapprox}} convert data/cpu_rks_test.tsv.gz --out out/cpu-test --overwrite

# Map a Parquet directory through a feature map into Parquet feature shards.
featurize data=data out=out map=map features=features seed=seed:
    {{kapprox}} featurize --data {{data}} --out {{out}} --map {{map}} --features {{features}} --sigma auto --seed {{seed}}

# Fit a model on a Parquet directory.
fit train=train model=model map=map features=features sigma=sigma task=task seed=seed:
    {{kapprox}} fit --train {{train}} --out {{model}} --map {{map}} --features {{features}} --sigma '{{sigma}}' --task {{task}} --seed {{seed}}

# Predict with a model into Parquet prediction shards.
predict data=test_data model=model out=predictions:
    {{kapprox}} predict --model {{model}} --data {{data}} --out {{out}}

# Evaluate a model on labelled data.
eval data=test_data model=model:
    {{kapprox}} eval --model {{model}} --data {{data}}

# The whole chain on the shipped data.
demo:
    {{kapprox}} demo

# The test suite (the README's command).
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
