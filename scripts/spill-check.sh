#!/usr/bin/env bash
# Checks what ptxas 12.4 spills in the kernels the Selector runs on sm_90
# (the H100 and H200) against golden/spills_sm_90.txt, and fails on any
# difference. A spill is local memory on a kernel's path: a change that made
# ptxas spill 1.2 KB in gvr_topk made it 5.6x slower (perf notes 69), and
# nothing but a GPU run would have said so. A kernel change that moves the
# spills rewrites the file (-update) and says why in docs/perf-notes.md.
#
# Each line of the file is "<spill store bytes> <spill load bytes> <ptxgen
# flags>"; lines starting with # are comments. -update rewrites the numbers
# of the listed kernels, keeping the list and the comments.
# ptxas is the pinned 12.4 from scripts/cuda-tools.sh unless PTXAS12 names
# another (the numbers are that ptxas's: another version spills differently).
set -euo pipefail
cd "$(dirname "$0")/.."

update=0
[ "${1:-}" = -update ] && update=1
file=golden/spills_sm_90.txt
ptxas=${PTXAS12:-$(scripts/cuda-tools.sh ptxas12)}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/ptxgen" ./cmd/ptxgen

failed=0 checked=0
while IFS= read -r line; do
  if [[ -z $line || $line == \#* ]]; then echo "$line" >>"$dir/new"; continue; fi
  read -r wantS wantL flags <<<"$line"
  # shellcheck disable=SC2086 # flags are words
  "$dir/ptxgen" $flags -arch sm_90 -o "$dir/k.ptx"
  out=$("$ptxas" -arch=sm_90 -v -o /dev/null "$dir/k.ptx" 2>&1) \
    || { echo "FAIL $flags: ptxas:" >&2; echo "$out" >&2; exit 1; }
  # "120 bytes stack frame, 140 bytes spill stores, 172 bytes spill loads"
  gotS=$(sed -n 's/.* \([0-9]*\) bytes spill stores.*/\1/p' <<<"$out")
  gotL=$(sed -n 's/.* \([0-9]*\) bytes spill loads.*/\1/p' <<<"$out")
  [[ $gotS =~ ^[0-9]+$ && $gotL =~ ^[0-9]+$ ]] \
    || { echo "spill-check: no single spill line from ptxas for $flags:" >&2; echo "$out" >&2; exit 1; }
  printf '%d %d %s\n' "$gotS" "$gotL" "$flags" >>"$dir/new"
  checked=$((checked + 1))
  if [ "$gotS $gotL" = "$wantS $wantL" ]; then
    echo "ok   $flags: $gotS B spill stores, $gotL B spill loads"
  else
    echo "DIFF $flags: $gotS B spill stores, $gotL B spill loads; $file says $wantS and $wantL"
    failed=$((failed + 1))
  fi
done <"$file"

[ "$checked" -gt 0 ] || { echo "spill-check: $file lists no kernel" >&2; exit 1; }
if [ "$update" = 1 ]; then
  cp "$dir/new" "$file"
  echo "spill-check: $file rewritten ($failed of $checked changed)"
elif [ "$failed" -gt 0 ]; then
  echo "spill-check: $failed of $checked kernels spill other than $file says; if the kernel change meant it," \
    "run scripts/spill-check.sh -update and say why in docs/perf-notes.md" >&2
  exit 1
else
  echo "spill-check: $checked kernels spill as $file says"
fi
