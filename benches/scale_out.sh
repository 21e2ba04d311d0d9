#!/usr/bin/env bash
# Scale-out measurements of issue 4. Run on a quiet machine; not part of CI
# (tests never assert on time).
#
#   benches/scale_out.sh kdd    # (a) kddcup, RFF l = 2048, --threads 1: wall time of
#                               #     `mpirun -n 1` vs `mpirun -n 2`, and the reduce's share
#   benches/scale_out.sh big    # (b) 10M generated rows (54 features, 100 shards), RFF l = 1000,
#                               #     as partial jobs + reduce pass by pass: each part's peak RSS,
#                               #     the reduce's, and the total time
#   benches/scale_out.sh all    # both
#
# Environment, with defaults:
#   WORK=/tmp/kapprox-scale-out    scratch directory (converted data, parts, models)
#   KAPPROX=                       the binary; by default built here with `--features mpi`
#   KDD_FILE=../shared/data/pmlb/kddcup.tsv.gz   KDD_SHARDS=16
#   KDD_FLAGS="--task classification --map rff --features 2048 --sigma auto --alpha 1e-3"
#   MPIRUN_FLAGS="--bind-to core"  (plus --allow-run-as-root when root)
#   BIG_ROWS=10000000  BIG_SHARDS=100  BIG_PARTS=10  PARALLEL=1 (part jobs at a time)
#   BIG_FLAGS="--map rff --features 1000 --sigma 8 --alpha 1e-3"
#
# Small sizes to try the script: BIG_ROWS=200000 BIG_PARTS=5 KDD_FILE=small.tsv.gz
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${WORK:-/tmp/kapprox-scale-out}
mkdir -p "$WORK"

if [ -z "${KAPPROX:-}" ]; then
  echo "== cargo build --release -p kapprox --features mpi" >&2
  cargo build --release -p kapprox --features mpi >&2
  KAPPROX="${CARGO_TARGET_DIR:-$ROOT/target}/release/kapprox"
fi
KAPPROX=$(realpath "$KAPPROX")

now() { date +%s.%N; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
mib() { python3 -c "import sys; v=sys.argv[1]; print('n/a' if v in ('None','null','') else '%.1f' % (float(v)/2**20))" "$1"; }

mpirun_flags=(${MPIRUN_FLAGS:---bind-to core})
[ "$(id -u)" = 0 ] && mpirun_flags+=(--allow-run-as-root)

kdd() {
  local file=${KDD_FILE:-$ROOT/../shared/data/pmlb/kddcup.tsv.gz}
  local shards=${KDD_SHARDS:-16}
  local flags=(${KDD_FLAGS:---task classification --map rff --features 2048 --sigma auto --alpha 1e-3})
  local data="$WORK/kdd-$shards"
  if [ ! -d "$data" ]; then
    local lines rows_per_shard
    lines=$(zcat -f "$file" | wc -l)
    rows_per_shard=$(( (lines - 1 + shards - 1) / shards )) # the header line aside
    "$KAPPROX" convert "$file" --out "$data" --label last --rows-per-shard "$rows_per_shard" -q
  fi
  echo "== (a) $(basename "$file") in $(ls "$data"/*.parquet | wc -l) shards; fit ${flags[*]} --threads 1"
  local t0 t1 t2
  t0=$(now)
  mpirun -n 1 "${mpirun_flags[@]}" "$KAPPROX" fit --train "$data" --out "$WORK/kdd-n1.safetensors" \
    "${flags[@]}" --threads 1 -q --json >"$WORK/kdd-n1.json"
  t1=$(now)
  mpirun -n 2 "${mpirun_flags[@]}" "$KAPPROX" fit --train "$data" --out "$WORK/kdd-n2.safetensors" \
    "${flags[@]}" --threads 1 -q --json >"$WORK/kdd-n2.json"
  t2=$(now)
  python3 - "$t0" "$t1" "$t2" "$WORK/kdd-n1.json" "$WORK/kdd-n2.json" <<'EOF'
import json, sys
t0, t1, t2 = map(float, sys.argv[1:4])
n1, n2 = (json.load(open(p)) for p in sys.argv[4:6])
w1, w2 = t1 - t0, t2 - t1
print(f"mpirun -n 1: {w1:8.2f} s wall   ({n1['report']['rows']} rows, {n1['report']['passes']} pass(es))")
print(f"mpirun -n 2: {w2:8.2f} s wall   speed-up {w1 / w2:.2f}x (issue 4 asks for >= 1.7x)")
d = n2["distributed"]
print(f"  reduce (receive + decode + merge + broadcast): {d['reduce_seconds']:.3f} s = "
      f"{100 * d['reduce_share']:.2f}% of the fit's {d['total_seconds']:.2f} s")
for p in d["passes"]:
    r = p["reduce"]
    print(f"  pass {p['pass']}: {p['seconds']:.2f} s; rank 0 waited {p['wait']:.2f} s for the others; "
          f"read {r['read']:.3f} s, merge {r['merge']:.3f} s, advance (solve) {r['advance']:.3f} s")
    for part in p["parts"]:
        print(f"    {part['source']}: {part['part']}, {part['rows']} rows, {part['seconds']:.2f} s, "
              f"peak RSS {(part['peak_rss_bytes'] or 0) / 2**20:.1f} MiB")
EOF
}

big() {
  local rows=${BIG_ROWS:-10000000} shards=${BIG_SHARDS:-100} n=${BIG_PARTS:-10} parallel=${PARALLEL:-1}
  local flags=(${BIG_FLAGS:---map rff --features 1000 --sigma 8 --alpha 1e-3})
  local data="$WORK/big-$rows-$shards"
  if [ ! -d "$data" ]; then
    "$KAPPROX" generate --out "$data" --rows "$rows" --features 54 --rows-per-shard $(( (rows + shards - 1) / shards )) -q
  fi
  local fit=("$KAPPROX" fit --train "$data" "${flags[@]}" -q)
  local passes
  passes=$("${fit[@]}" --out "$WORK/big.safetensors" --plan | json 'len(d["passes"])')
  echo "== (b) $rows rows in $shards shards; fit ${flags[*]}; $passes pass(es) of $n part jobs ($parallel at a time) + reduce"
  local t0 after=() k i out worst=0
  t0=$(now)
  for k in $(seq 1 "$passes"); do
    rm -rf "$WORK/big-parts-$k" && mkdir -p "$WORK/big-parts-$k"
    for i in $(seq 1 "$n"); do
      "${fit[@]}" "${after[@]}" --part "$i/$n" --out "$WORK/big-parts-$k/p$i.kpart" --json \
        >"$WORK/big-parts-$k/p$i.json" &
      while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
    done
    wait
    for i in $(seq 1 "$n"); do
      local line rss
      line=$(json '"%s %s %.2f %s" % (d["pass"]["name"], ",".join(map(str, d["shards"][:1] + d["shards"][-1:])), d["seconds"], d["peak_rss_bytes"])' \
        <"$WORK/big-parts-$k/p$i.json")
      read -r pname prange psec rss <<<"$line"
      printf '  pass %s (%s) part %2d/%d: shards %-7s %8.2f s  peak RSS %8s MiB\n' "$k" "$pname" "$i" "$n" "${prange/,/-}" "$psec" "$(mib "$rss")"
      [ "$rss" != None ] && [ "$rss" -gt "$worst" ] && worst=$rss
    done
    out=$([ "$k" = "$passes" ] && echo "$WORK/big.safetensors" || echo "$WORK/big-pass-$k.kresult")
    "$KAPPROX" reduce --parts-dir "$WORK/big-parts-$k" --out "$out" --json -q >"$WORK/big-reduce-$k.json"
    printf '  pass %s reduce: %.2f s, peak RSS %s MiB\n' "$k" \
      "$(json 'd["seconds"]' <"$WORK/big-reduce-$k.json")" "$(mib "$(json 'd["peak_rss_bytes"]' <"$WORK/big-reduce-$k.json")")"
    after=(--after "$out")
  done
  local t1
  t1=$(now)
  python3 - "$t0" "$t1" "$worst" "$WORK/big-reduce-$passes.json" <<'EOF'
import json, sys
t0, t1, worst = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
r = json.load(open(sys.argv[4]))["report"]
print(f"total {t1 - t0:.1f} s wall for {r['rows']} rows; largest part peak RSS {worst / 2**20:.1f} MiB "
      f"({'under' if worst < 2**30 else 'NOT under'} 1 GiB); sigma {r['sigma']}, alpha {r['alpha']:.3g}, "
      f"statistics {r['statistics_bytes'] / 2**20:.1f} MiB")
EOF
}

case "${1:-all}" in
  kdd) kdd ;;
  big) big ;;
  all) kdd; big ;;
  *) echo "usage: $0 [kdd|big|all]" >&2; exit 2 ;;
esac
