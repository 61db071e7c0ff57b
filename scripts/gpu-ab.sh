#!/usr/bin/env bash
# A/B of two gvrbench binaries on a GPU machine, the project's method for a
# kernel change: both run on the same flags, alternating, RUNS times each
# (default 2), in one session on one device; then each new run's medians
# are printed against the base run before it (gvrbench -from -compare).
#   scripts/gpu-ab.sh gpubin/gvrbench-base gpubin/gvrbench -kernels gvr,auto -batch 1,8 -n 65536,262144
# Reports go to $OUT (or gpubin/out): ab-base-N.json, ab-new-N.json.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 BASE_GVRBENCH NEW_GVRBENCH [gvrbench flags...]" >&2; exit 2; }
base=$1 new=$2
shift 2
RUNS=${RUNS:-2}
OUT=${OUT:-gpubin/out}
mkdir -p "$OUT"
rc=0
for i in $(seq "$RUNS"); do
  for side in base new; do
    bin=$base
    [ $side = base ] || bin=$new
    "$bin" "$@" -o "$OUT/ab-$side-$i.json" >/dev/null 2>"$OUT/ab-$side-$i.err" || { echo "gpu-ab: $bin run $i failed:"; tail -n 5 "$OUT/ab-$side-$i.err"; rc=1; }
    rm -f "$OUT/ab-$side-$i.err"
  done
done
for i in $(seq "$RUNS"); do
  echo "=== run $i"
  "$new" -from "$OUT/ab-new-$i.json" -compare "$OUT/ab-base-$i.json" || rc=1
done
exit $rc
