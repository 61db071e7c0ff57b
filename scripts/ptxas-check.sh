#!/usr/bin/env bash
# Assembles PTX files with ptxas, for the arch named at the end of each file name
# (golden/<kernel>_<config>_sm_90.ptx -> -arch=sm_90), and fails on any error.
# Arguments: .ptx files and/or directories (searched for *.ptx); default: golden.
# ptxas is the pinned 11.8 from scripts/cuda-tools.sh unless PTXAS names another.
# Arches this ptxas does not know (11.8: sm_90a, sm_100...) and files whose
# .version is newer than it reads (11.8: PTX 8.0+, such as bulk copies on sm_90)
# are skipped with a note; `make ptxas12-check` assembles those with ptxas 12.4.
# Fails when no file gets checked, so a broken glob cannot pass silently.
set -euo pipefail

PTXAS=${PTXAS:-$("$(dirname "$0")/cuda-tools.sh" ptxas)}
# The -arch values this ptxas accepts, from its --help ("'sm_80','sm_86',...").
known=" $("$PTXAS" --help | grep -o "'sm_[0-9]*[a-z]*'" | tr -d "'" | tr '\n' ' ') "
version=$("$PTXAS" --version | grep -o 'release [0-9.]*')
# The newest PTX ISA it reads, from its refusal of .version 99.9
# ("Unsupported .version 99.9; current version is '7.8'").
probe=$(mktemp --suffix=.ptx)
trap 'rm -f "$probe"' EXIT
printf '.version 99.9\n.target sm_80\n.address_size 64\n' >"$probe"
maxptx=$("$PTXAS" -arch=sm_80 -o /dev/null "$probe" 2>&1 | sed -n "s/.*current version is '\([0-9]*\.[0-9]*\)'.*/\1/p" || true)
[ -n "$maxptx" ] || { echo "ptxas-check: cannot tell which PTX versions $PTXAS reads" >&2; exit 1; }
vnum() { echo $((${1%%.*} * 100 + ${1#*.})); }

files=()
for a in "${@:-golden}"; do
  if [ -d "$a" ]; then
    shopt -s nullglob; files+=("$a"/*.ptx); shopt -u nullglob
  elif [ -f "$a" ]; then
    files+=("$a")
  else
    echo "ptxas-check: $a: no such file or directory" >&2; exit 1
  fi
done
[ ${#files[@]} -gt 0 ] || { echo "ptxas-check: no .ptx files found in: ${*:-golden}" >&2; exit 1; }

ok=0 skipped=0 failed=0
for f in "${files[@]}"; do
  if [[ ! $f =~ _(sm_[0-9]+[a-z]?)\.ptx$ ]]; then
    echo "FAIL $f: name does not end in _sm_NN.ptx, cannot tell the arch" >&2
    failed=$((failed + 1)); continue
  fi
  arch=${BASH_REMATCH[1]}
  if [[ $known != *" $arch "* ]]; then
    echo "skip $f: ptxas $version does not know $arch"
    skipped=$((skipped + 1)); continue
  fi
  # No .version line: ptxas says what is wrong below.
  fver=$(awk '$1 == ".version" {print $2; exit}' "$f")
  if [[ $fver =~ ^[0-9]+\.[0-9]+$ ]] && [ "$(vnum "$fver")" -gt "$(vnum "$maxptx")" ]; then
    echo "skip $f: ptxas $version reads PTX up to $maxptx, not $fver"
    skipped=$((skipped + 1)); continue
  fi
  if out=$("$PTXAS" -arch="$arch" -v -o /dev/null "$f" 2>&1); then
    # "Compiling entry function 'k' for 'sm_90'" then "Used 32 registers, 4096 bytes smem, ..."
    summary=$(awk -F"'" '/Compiling entry function/ {k = $2}
      /Used [0-9]+ registers/ {
        r = $0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r)
        s = 0; if (match($0, /[0-9]+ bytes smem/)) s = substr($0, RSTART, RLENGTH - 11)
        printf "%s%s: %s regs, %s B smem", sep, k, r, s; sep = "; " }' <<<"$out")
    echo "ok   $f ($arch) $summary"
    grep -i warning <<<"$out" || true
    ok=$((ok + 1))
  else
    echo "FAIL $f ($arch):" >&2
    echo "$out" >&2
    failed=$((failed + 1))
  fi
done

if [ "$failed" -gt 0 ]; then echo "ptxas-check: $failed of ${#files[@]} files FAILED" >&2; exit 1; fi
if [ "$ok" -eq 0 ]; then echo "ptxas-check: no file checked ($skipped skipped)" >&2; exit 1; fi
msg="ptxas-check: $ok files OK"
[ "$skipped" -eq 0 ] || msg+=" ($skipped skipped)"
echo "$msg"
