#!/bin/bash
# One `kapprox fit` command run by two builds in alternation (OLD, NEW,
# OLD, NEW, ...): each run's `fit` seconds from its --json report, the
# medians, and whether the two builds wrote byte-identical model files.
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
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["report"]["seconds"]["total"])' \
      "$W/report.json" >> "$W/seconds-$side"
  done
  cmp -s "$W/model-old" "$W/model-new" || same=no
done
for side in old new; do
  python3 -c 'import statistics, sys
s = [float(v) for v in open(sys.argv[1])]
print(f"{sys.argv[2]}: " + " ".join(f"{v:.3f}" for v in s) + f"  median {statistics.median(s):.3f} s")' \
    "$W/seconds-$side" "$side"
done
echo "identical model files: $same"
