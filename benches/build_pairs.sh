#!/bin/bash
# One `kapprox fit` command run by two sides in alternation (OLD, NEW,
# OLD, NEW, ...): each run's seconds from its --json report (the whole
# fit, its pass and its solve, and solve / pass), the medians, each pair's
# NEW / OLD fit time with their median, and whether the two sides wrote
# byte-identical model files.
# For a change to one stage on a noisy host, alternation is what makes
# two builds comparable.
#
#   [OLD_ARGS=...] [NEW_ARGS=...] benches/build_pairs.sh OLD_BINARY NEW_BINARY PAIRS FIT_ARGS...
#
# FIT_ARGS are `fit`'s arguments without --out and --json, e.g.
#   benches/build_pairs.sh old/kapprox target/release/kapprox 5 --train DIR --label label \
#     --map binning --kernel laplacian --features 1024 --sigma 10 --task classification
# OLD_ARGS and NEW_ARGS (split on spaces) are appended to one side's
# arguments, so one binary can time two methods on the same data and grid,
# e.g. issue 15's item 4 (TEFM-G with l = 1024, d = 4l, against RFF with 4l,
# on the default grid of 4 σ × 17 α):
#   OLD_ARGS="--map rff --features 4096" NEW_ARGS="--map tefm-g --features 1024" \
#     benches/build_pairs.sh target/release/kapprox target/release/kapprox 5 \
#     --train DIR --label label --seed 0 --task regression
set -euo pipefail
OLD=$1
NEW=$2
PAIRS=$3
shift 3
read -r -a old_args <<< "${OLD_ARGS:-}"
read -r -a new_args <<< "${NEW_ARGS:-}"
W=$(mktemp -d /tmp/kapprox-build-pairs.XXXXXX)
trap 'rm -rf "$W"' EXIT
same=yes
for _ in $(seq "$PAIRS"); do
  for side in old new; do
    bin=$OLD
    side_args=("${old_args[@]}")
    if [ "$side" = new ]; then
      bin=$NEW
      side_args=("${new_args[@]}")
    fi
    "$bin" -q fit "$@" "${side_args[@]}" --out "$W/model-$side" --overwrite --json > "$W/report.json"
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
python3 -c 'import statistics, sys
old, new = ([float(line.split()[0]) for line in open(p)] for p in sys.argv[1:3])
r = [n / o for o, n in zip(old, new)]
print("new/old fit: " + " ".join(f"{v:.3f}" for v in r) + f"  median {statistics.median(r):.3f}")' \
  "$W/seconds-old" "$W/seconds-new"
echo "identical model files: $same"
