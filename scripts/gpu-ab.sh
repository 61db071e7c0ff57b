#!/usr/bin/env bash
# A/B of gvrbench binaries on a GPU machine, the project's method for a
# kernel change: a base and one or more new binaries run on the same
# flags, in turn (base, new, new2, ...), RUNS times each (default 2), in
# one session on one device; then each new binary's medians, and its
# instrumented kernels' phases, are printed against the base run of the same
# round (gvrbench -from -compare).
#   scripts/gpu-ab.sh gpubin/gvrbench-base gpubin/gvrbench -kernels gvr,auto -batch 1,8 -n 65536,262144
#   scripts/gpu-ab.sh gpubin/gvrbench gpubin/gvrbench-tie gpubin/gvrbench-ov -kernels auto
# The binaries are the arguments before the first flag. Reports go to $OUT
# (or gpubin/out): ab-base-N.json, ab-new-N.json (ab-new2-N.json, ...).
set -uo pipefail
cd "$(dirname "$0")/.."
bins=()
while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do
  bins+=("$1")
  shift
done
[ ${#bins[@]} -ge 2 ] || { echo "usage: $0 BASE_GVRBENCH NEW_GVRBENCH [NEW...] [gvrbench flags...]" >&2; exit 2; }
RUNS=${RUNS:-2}
OUT=${OUT:-gpubin/out}
mkdir -p "$OUT"
side() { if [ "$1" -eq 0 ]; then echo base; elif [ "$1" -eq 1 ]; then echo new; else echo "new$1"; fi; }
rc=0
for i in $(seq "$RUNS"); do
  for j in "${!bins[@]}"; do
    s=$(side "$j") bin=${bins[$j]}
    "$bin" "$@" -o "$OUT/ab-$s-$i.json" >/dev/null 2>"$OUT/ab-$s-$i.err" || { echo "gpu-ab: $bin run $i failed:"; tail -n 5 "$OUT/ab-$s-$i.err"; rc=1; }
    rm -f "$OUT/ab-$s-$i.err"
  done
done
for j in "${!bins[@]}"; do
  [ "$j" -gt 0 ] || continue
  s=$(side "$j")
  for i in $(seq "$RUNS"); do
    echo "=== ${bins[$j]} against ${bins[0]}, run $i"
    "${bins[$j]}" -from "$OUT/ab-$s-$i.json" -compare "$OUT/ab-base-$i.json" || rc=1
  done
done
exit $rc
