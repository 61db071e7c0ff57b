#!/usr/bin/env bash
# Builds gvrbench (cuda tag) as it is at a git ref, for an A/B on a GPU
# machine against the work tree's (scripts/gpu-ab.sh):
#   scripts/gvrbench-at.sh 40746cb            -> gpubin/gvrbench-40746cb
#   scripts/gvrbench-at.sh exp/tie-span tie   -> gpubin/gvrbench-tie
# The ref is checked out in a temporary worktree; the CUDA headers are the
# pinned ones (scripts/cuda-tools.sh), as for make gpu-test.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 REF [NAME]" >&2; exit 2; }
ref=$1 name=${2:-$1}
name=${name//\//-}
out=$PWD/gpubin/gvrbench-$name
env=$(scripts/cuda-tools.sh env)
wt=$(mktemp -d)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT
git worktree add -q --detach "$wt" "$ref"
mkdir -p gpubin
# Stripped (-s -w: panics still name functions): several of these travel
# to the GPU machine at once, within its 64 MiB (xz them: ~3.7 MB each).
(cd "$wt" && env $env CGO_ENABLED=1 go build -tags cuda -ldflags='-s -w' -o "$out" ./cmd/gvrbench)
echo "$out ($(git rev-parse --short "$ref"))"
