#!/bin/bash
# What one kapprox binary picks on the shipped datasets with its default
# grid (4 σ × 17 α), seed 0: the chosen σ and α, the test metric (`kapprox
# eval`) and the fit's stage seconds. Run it with two binaries to compare
# their picks: docs/PERFORMANCE.md's "accuracy pick" / "MSE pick" table is
# this script with a binary built at df6e2ee and one after it.
#
#   benches/selection_study.sh [KAPPROX_BINARY] [WORK_DIR]
#
# MAP (rff), FEATURES (512) and SETS (the five classification sets) choose
# what is fitted. Data as in precision_study.sh (benches/shipped_data.sh).
set -euo pipefail
K=${1:-target/release/kapprox}
W=${2:-/tmp/kapprox-selection-study}
MAP=${MAP:-rff}
FEATURES=${FEATURES:-512}
SETS=${SETS:-adult letter magic shuttle covtype_random15k}
. "$(dirname "$0")/shipped_data.sh"
tag=$(basename "$K")
for n in $SETS; do
  prepare "$n"
  "$K" -q fit --train "$W/$n-train" --out "$W/$n-$tag.st" --overwrite --map "$MAP" --features "$FEATURES" \
    --task $task --label "$label" --seed 0 --json > "$W/$n-$tag.fit.json"
  "$K" -q eval --model "$W/$n-$tag.st" --data "$W/$n-test" --json > "$W/$n-$tag.eval.json"
  python3 - "$W/$n-$tag.fit.json" "$W/$n-$tag.eval.json" "$n" "$metric" <<'PY'
import json, sys
fit, ev = json.load(open(sys.argv[1]))["report"], json.load(open(sys.argv[2]))
secs = ", ".join(f"{k} {v:.2f}" for k, v in fit["seconds"].items() if v)
print(f"{sys.argv[3]}: sigma {fit['sigma']:.4g}, alpha {fit['alpha']:.3g}, test {sys.argv[4]} {ev[sys.argv[4]]:.6f} ({secs} s)")
PY
done
