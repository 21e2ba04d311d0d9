#!/bin/bash
# TEFM-G on the shipped datasets, two sides seed for seed: l = 256
# (d = 1024), the default grid (4 σ × 17 α), seeds 0 .. SEEDS-1. Each side
# is a binary plus arguments (OLD_ARGS, NEW_ARGS, split on spaces, appended
# to its `fit`), so one script compares two builds or two settings. Prints
# each fit's test metric, then per dataset both means and the paired
# difference NEW − OLD with its standard error: a single draw's metric is
# too noisy to compare by (cpu_small's RMSE spreads 3.2–5.1 across seeds).
#
#   [OLD_ARGS=...] [NEW_ARGS=...] benches/tefm_pairs.sh OLD_BINARY NEW_BINARY [SEEDS] [WORK_DIR]
#
# The tables of docs/PERFORMANCE.md (issue 15, item 4):
#   the sparse sign start, a build before it (c7407da) against one after:
#     benches/tefm_pairs.sh OLD/kapprox target/release/kapprox 10
#   --power 0 against 1 (the Gaussian start of q = 1 is the build before):
#     OLD_ARGS="--power 1" NEW_ARGS="--power 0" benches/tefm_pairs.sh OLD/kapprox target/release/kapprox 10
#   the earlier 3-seed table of --power 1 against 0 on one build:
#     OLD_ARGS="--power 1" NEW_ARGS="--power 0" benches/tefm_pairs.sh K K 3
#
# Data as in precision_study.sh (shipped_data.sh's `prepare`); the list
# of datasets can be narrowed with DATASETS="227_cpu_small letter".
set -euo pipefail
OLD=$1
NEW=$2
SEEDS=${3:-10}
W=${4:-/tmp/kapprox-tefm-pairs}
K=$NEW
read -r -a old_args <<< "${OLD_ARGS:-}"
read -r -a new_args <<< "${NEW_ARGS:-}"
. "$(dirname "$0")/shipped_data.sh"
OUT=$W/metrics.txt
mkdir -p "$W"
: > "$OUT"
for n in ${DATASETS:-197_cpu_act 227_cpu_small 574_house_16H magic letter covtype_random15k adult shuttle}; do
  prepare "$n"
  for seed in $(seq 0 $((SEEDS - 1))); do
    for side in old new; do
      bin=$OLD
      side_args=("${old_args[@]}")
      if [ "$side" = new ]; then
        bin=$NEW
        side_args=("${new_args[@]}")
      fi
      "$bin" -q fit --train "$W/$n-train" --out "$W/$n.st" --overwrite --map tefm-g --features 256 \
        --task $task --label "$label" --seed "$seed" "${side_args[@]}" > /dev/null 2> "$W/$n.fit.log"
      "$bin" -q eval --model "$W/$n.st" --data "$W/$n-test" --json > "$W/$n.eval.json"
      python3 -c "import json, sys; print(\"$n $metric $seed $side\", json.load(open(sys.argv[1]))['$metric'])" \
        "$W/$n.eval.json" | tee -a "$OUT"
    done
  done
done
python3 - "$OUT" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    name, metric, seed, side, value = line.split()
    runs[(name, metric)][(int(seed), side)] = float(value)
print("| dataset | metric | seeds | OLD mean | NEW mean | NEW − OLD (paired) |")
print("| --- | --- | --- | --- | --- | --- |")
for (name, metric), r in runs.items():
    seeds = sorted({s for s, _ in r if (s, "old") in r and (s, "new") in r})
    old = [r[(s, "old")] for s in seeds]
    new = [r[(s, "new")] for s in seeds]
    diff = [b - a for a, b in zip(old, new)]
    se = statistics.stdev(diff) / len(diff) ** 0.5 if len(diff) > 1 else float("nan")
    f = "{:.0f}" if abs(old[0]) >= 100 else "{:.4f}"
    print(f"| {name} | {metric} | {len(seeds)} | {f.format(statistics.mean(old))} | "
          f"{f.format(statistics.mean(new))} | {f.format(statistics.mean(diff))} ± {f.format(se)} |")
PY
