#!/usr/bin/env bash
# The SASS between an instrumented kernel's clock reads, without a GPU: what
# ptxas 12.4 makes of each step gvrbench times (topk.Steps), to read beside
# the measured step times. The arguments are ptxgen's (-instrument is
# added), e.g.
#   scripts/sass-steps.sh -kernel gvr_topk -arch sm_90
#   scripts/sass-steps.sh -kernel gvr_topk_cluster -arch sm_90 -cluster 8 -mbarrier-rounds
# For each pair of consecutive clock reads in code order (the PTX comments
# "clock: NAME" name them; ptxas keeps their order), it prints the static
# SASS instruction count between them and some of its kinds: barriers,
# global and shared loads and stores, shuffles, branches, and the local
# loads and stores of spilled registers (LDL, STL). Static: a loop
# counts once and both sides of a branch count, so read a step's count as
# its code, not its time. SASS=1 also prints the instructions.
set -euo pipefail
cd "$(dirname "$0")/.."
ptxas=$(scripts/cuda-tools.sh ptxas12)
cuobjdump=$(scripts/cuda-tools.sh cuobjdump12)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./cmd/ptxgen "$@" -instrument -o "$dir/k.ptx"
arch=$(grep -m1 -oE '^\.target sm_[0-9]+a?' "$dir/k.ptx" | cut -d' ' -f2)
"$ptxas" -arch="$arch" -o "$dir/k.cubin" "$dir/k.ptx"
"$cuobjdump" -sass "$dir/k.cubin" | grep -E '^ +/\*[0-9a-f]{4,6}\*/' \
  | sed -E 's#^ +/\*[0-9a-f]+\*/ +##; s#/\* 0x[0-9a-f]+ \*/##; s/ +;? *$//' >"$dir/k.sass"
grep -oE 'clock: .*' "$dir/k.ptx" | sed 's/clock: //' >"$dir/names"
nclock=$(grep -c 'SR_CLOCKLO' "$dir/k.sass" || true)
[ "$nclock" -eq "$(wc -l <"$dir/names")" ] \
  || { echo "sass-steps: $nclock clock reads in the SASS, $(wc -l <"$dir/names") in the PTX" >&2; exit 1; }
echo "$* ($arch, ptxas 12.4): $(wc -l <"$dir/k.sass") SASS instructions, $nclock clock reads"
printf '%-32s %6s %5s %5s %5s %5s %5s %5s %5s %5s\n' "from -> to" instrs BAR LDG STG LDS/STS SHFL BRA LDL STL
awk -v names="$dir/names" -v show="${SASS:-0}" '
  BEGIN { while ((getline l < names) > 0) name[++n] = l }
  function flush() {
    if (k == 0) return
    printf "%-32s %6d %5d %5d %5d %5d %5d %5d %5d %5d\n", name[k] " -> " (k < n ? name[k+1] : "exit"), c, bar, ldg, stg, lds, shfl, bra, ldl, stl
  }
  /SR_CLOCKLO/ { flush(); k++; c = bar = ldg = stg = lds = shfl = bra = ldl = stl = 0; next }
  k > 0 {
    c++
    if (/BAR\./) bar++
    if (/LDG|ULDC.*global|LD\.E/) ldg++
    if (/STG|ST\.E/) stg++
    if (/LDS|STS|ATOMS/) lds++
    if (/SHFL/) shfl++
    if (/BRA/) bra++
    if (/LDL/) ldl++
    if (/STL/) stl++
    if (show == 1) print "    " $0
  }
  END { flush() }
' "$dir/k.sass"
