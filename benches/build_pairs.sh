#!/bin/bash
# One `kapprox fit` command run by two builds in alternation (OLD, NEW,
# OLD, NEW, ...): each run's seconds from its --json report (the whole
# fit, its pass and its solve, and solve / pass), the medians, and whether
# the two builds wrote byte-identical model files.
# For a change to one stage on a noisy host, alternation is what makes
# two builds comparable.
#
#   benches/build_pairs.sh OLD_BINARY NEW_BINARY PAIRS FIT_ARGS...
#
# FIT_ARGS are `fit`'s arguments without --out and --json, e.g.
#   benches/build_pairs.sh old/kapprox target/release/kapprox 5 --train DIR --label label \
#     --map binning --kernel laplacian --features 1024 --sigma 10 --task classification
set -euo pipefail
OLD=$1
NEW=$2
PAIRS=$3
shift 3
W=$(mktemp -d /tmp/kapprox-build-pairs.XXXXXX)
trap 'rm -rf "$W"' EXIT
same=yes
for _ in $(seq "$PAIRS"); do
  for side in old new; do
    bin=$OLD
    [ "$side" = new ] && bin=$NEW
    "$bin" -q fit "$@" --out "$W/model-$side" --overwrite --json > "$W/report.json"
    python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["report"]["seconds"]
print(s["total"], s["pass"], s["solve"])' "$W/report.json" >> "$W/seconds-$side"
  done
  cmp -s "$W/model-old" "$W/model-new" || same=no
done
for side in old new; do
  python3 -c 'import statistics, sys
runs = [[float(v) for v in line.split()] for line in open(sys.argv[1])]
columns = {"fit": [r[0] for r in runs], "pass": [r[1] for r in runs], "solve": [r[2] for r in runs]}
columns["solve/pass"] = [r[2] / r[1] if r[1] > 0 else float("nan") for r in runs]
for name, s in columns.items():
    print(f"{sys.argv[2]} {name}: " + " ".join(f"{v:.3f}" for v in s) + f"  median {statistics.median(s):.3f}")' \
    "$W/seconds-$side" "$side"
done
echo "identical model files: $same"
