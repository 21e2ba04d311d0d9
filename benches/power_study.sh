#!/bin/bash
# TEFM-G's power iterations, `--power 1` (the default) against `--power 0`,
# on the shipped datasets: default grid (4 σ × 17 α), l = 256 (d = 1024),
# seeds 0, 1, 2; prints the test metric of each (the table in
# docs/PERFORMANCE.md, issue 15's item 4).
#
#   benches/power_study.sh [KAPPROX_BINARY] [WORK_DIR]
#
# Data as in precision_study.sh (shipped_data.sh's `prepare`).
set -euo pipefail
K=${1:-target/release/kapprox}
W=${2:-/tmp/kapprox-power-study}
. "$(dirname "$0")/shipped_data.sh"
for n in 197_cpu_act 227_cpu_small 574_house_16H magic letter covtype_random15k adult shuttle; do
  prepare "$n"
  for seed in 0 1 2; do
    for q in 1 0; do
      "$K" -q fit --train "$W/$n-train" --out "$W/$n.st" --overwrite --map tefm-g --features 256 --power $q \
        --task $task --label "$label" --seed $seed > /dev/null 2> "$W/$n.fit.log"
      "$K" -q eval --model "$W/$n.st" --data "$W/$n-test" --json > "$W/$n.eval.json"
      python3 -c "import json, sys; print(f\"$n seed $seed q $q: test $metric {json.load(open(sys.argv[1]))['$metric']:.4f}\")" \
        "$W/$n.eval.json"
    done
  done
done
