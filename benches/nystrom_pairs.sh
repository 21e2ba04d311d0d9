#!/bin/bash
# Nyström fit time over RFF fit time with the same l, in back-to-back pairs
# (issue 15: "a Nyström fit takes ≤ 1.5× the time of an RFF fit"): the
# bench's data shape (30 081 training rows × 100 columns, `kapprox
# generate` + `split` as in benches/sklearn_grid.py), `--sigma auto`, the
# default 17 α; prints each pair's wall seconds and their ratio. KERNEL
# (default gaussian) is both maps' `--kernel`.
#
#   benches/nystrom_pairs.sh [KAPPROX_BINARY] [PAIRS] [L] [WORK_DIR] [KERNEL]
#
# The machines are noisy: judge the ratio over the pairs, not one.
set -euo pipefail
K=${1:-target/release/kapprox}
PAIRS=${2:-3}
L=${3:-4096}
W=${4:-/tmp/kapprox-nystrom-pairs}
KERNEL=${5:-gaussian}
mkdir -p "$W"
for task in regression classification; do
  classes=0
  [ "$task" = classification ] && classes=5
  if [ ! -d "$W/$task-train" ]; then
    "$K" -q generate --out "$W/$task-all" --rows 37500 --features 100 --classes $classes --seed 0
    "$K" -q split "$W/$task-all" --train "$W/$task-train" --test "$W/$task-test" --test-fraction 0.2
    rm -rf "$W/$task-all"
  fi
  for _ in $(seq "$PAIRS"); do
    line="$task $KERNEL l=$L"
    for map in rff nystrom; do
      start=$(date +%s.%N)
      "$K" -q fit --train "$W/$task-train" --out "$W/model.st" --overwrite --map $map --kernel "$KERNEL" --features "$L" \
        --sigma auto --task $task --seed 0 --label label > /dev/null 2> "$W/fit.log" || { cat "$W/fit.log"; exit 2; }
      end=$(date +%s.%N)
      secs=$(echo "$end - $start" | bc -l)
      eval "t_$map=$secs"
      line="$line $map $(printf %.2f "$secs") s"
    done
    echo "$line nystrom/rff $(printf %.3f "$(echo "$t_nystrom / $t_rff" | bc -l)")"
  done
done
