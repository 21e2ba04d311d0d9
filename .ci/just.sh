#!/usr/bin/env bash
# Optional CI step: install `just` (from crates.io, about 2 min) and run the
# justfile's recipes through their test. Without `just` that test checks the
# header examples only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v just >/dev/null 2>&1 || cargo install just --locked
cargo test --release -p kapprox-cli --test cli readme::justfile -- --nocapture
