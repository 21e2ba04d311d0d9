#!/bin/bash
# f64 against f32 (`fit --precision`) on the shipped datasets: default grid
# (4 σ × 17 α), rff with 1024 features, seed 0; prints the chosen σ, α and
# the test metric of each (the table in docs/PERFORMANCE.md).
#
#   benches/precision_study.sh [KAPPROX_BINARY] [WORK_DIR]
#
# Data: ../shared/data (pmlb regression sets and adult, letter, magic,
# shuttle, covtype_random15k), converted by `kapprox convert` and split
# 80/20 by `kapprox split`; WORK_DIR keeps them between runs.
set -euo pipefail
K=${1:-target/release/kapprox}
W=${2:-/tmp/kapprox-precision-study}
. "$(dirname "$0")/shipped_data.sh"
for n in 197_cpu_act 227_cpu_small 574_house_16H adult letter magic shuttle covtype_random15k; do
  prepare "$n"
  for p in f64 f32; do
    "$K" -q fit --train "$W/$n-train" --out "$W/$n-$p.st" --overwrite --map rff --features 1024 --task $task \
      --label "$label" --seed 0 --precision $p --json > "$W/$n-$p.fit.json"
    "$K" -q eval --model "$W/$n-$p.st" --data "$W/$n-test" --json > "$W/$n-$p.eval.json"
    python3 - "$W/$n-$p.fit.json" "$W/$n-$p.eval.json" "$n" "$p" "$metric" <<'PY'
import json, sys
fit, ev = json.load(open(sys.argv[1]))["report"], json.load(open(sys.argv[2]))
print(f"{sys.argv[3]} {sys.argv[4]}: sigma {fit['sigma']:.3g}, alpha {fit['alpha']:.2g}, test {sys.argv[5]} {ev[sys.argv[5]]:.4f}")
PY
  done
done
