# Sourced by the studies on the shipped datasets (precision_study.sh,
# selection_study.sh): `prepare NAME` converts ../shared/data's NAME with
# `kapprox convert` and splits it 80/20 with `kapprox split` into
# $W/NAME-train and $W/NAME-test (kept between runs), and sets `label`,
# `task` and `metric` for it. Needs $K (the kapprox binary) and $W.
DATA=${KAPPROX_SHARED_DATA:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/data}
src() {
  case $1 in
    covtype_random15k) echo "$DATA/covtype_subsets/$1.csv" ;;
    *) echo "$DATA/pmlb/$1.tsv.gz" ;;
  esac
}
prepare() {
  local n=$1
  mkdir -p "$W"
  if [ ! -d "$W/$n-train" ]; then
    "$K" -q convert "$(src "$n")" --out "$W/$n-all" --json > "$W/$n.conv.json"
    "$K" -q split "$W/$n-all" --train "$W/$n-train" --test "$W/$n-test" --test-fraction 0.2
    rm -rf "$W/$n-all"
  fi
  label=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['label'])" "$W/$n.conv.json")
  task=classification; metric=accuracy
  case $n in 197*|227*|574*) task=regression; metric=rmse ;; esac
}
