#!/usr/bin/env bash
# Fetches the pinned CUDA 11.8 pieces gvr needs into a per-user cache, without a
# system-wide toolkit install (see DESIGN.md, "Building against CUDA"):
#   ptxas    ensure $CACHE/bin/ptxas exists; print its path
#   headers  ensure $CACHE/include/cuda.h and $CACHE/lib/stubs/libcuda.so; print $CACHE
#   env      ensure headers; print CGO_CFLAGS=... and CGO_LDFLAGS=... lines for cgo
#            builds against gorgonia.org/cu (which adds -lcuda itself)
# The files come from Debian bookworm's non-free nvidia-cuda-toolkit and
# nvidia-cuda-dev packages, which are downloaded and unpacked, never installed.
# Once the files are in the cache nothing is downloaded. Progress goes to stderr.
set -euo pipefail

# Outside the repo, so a fresh clone on the same machine reuses it.
CACHE=${GVR_CUDA_CACHE:-$HOME/.cache/gvr/cuda-11.8}
SOURCES=/etc/apt/sources.list.d/gvr-nonfree.sources
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

log() { echo "cuda-tools: $*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root or sudo to run: $*"; fi
}

# Make bookworm non-free known to apt and refresh only that source's index (so a
# broken unrelated source on the machine cannot fail us). Adding the source
# installs nothing; it only lets `apt-get download` find the packages.
apt_nonfree() {
  command -v apt-get >/dev/null || die "apt-get not found: this script needs Debian; elsewhere set CUDA_HOME to a CUDA 11.x/12.x toolkit"
  [ -f "$KEYRING" ] || die "$KEYRING missing (apt-get install debian-archive-keyring)"
  if [ ! -f "$SOURCES" ]; then
    log "adding $SOURCES (bookworm non-free)"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: non-free\nSigned-By: %s\n' \
      "$KEYRING" | as_root tee "$SOURCES" >/dev/null
  fi
  as_root apt-get update -qq -o Dir::Etc::sourcelist="$SOURCES" \
    -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
}

# fetch PKG MEMBER... : download PKG's .deb into a scratch dir next to the cache
# (same filesystem, so the final mv is atomic) and unpack MEMBERs (tar patterns)
# into $STAGE. The .deb is deleted on exit: nvidia-cuda-dev is ~774 MB.
fetch() {
  local pkg=$1; shift
  mkdir -p "$(dirname "$CACHE")"
  STAGE=$(mktemp -d "$CACHE.tmp.XXXXXX")
  trap 'rm -rf "$STAGE"' EXIT
  apt_nonfree
  log "downloading $pkg"
  # As root, apt drops to the _apt user, which cannot write to our scratch dir.
  local sandbox=()
  [ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
  (cd "$STAGE" && apt-get download -qq "${sandbox[@]}" "$pkg") || die "apt-get download $pkg failed"
  local deb
  deb=$(echo "$STAGE"/"$pkg"_*.deb)
  [ -f "$deb" ] || die "no .deb for $pkg in $STAGE"
  log "unpacking $(basename "$deb")"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$STAGE" --wildcards "$@"
  rm -f "$deb"
}

ensure_ptxas() {
  local out=$CACHE/bin/ptxas
  [ -x "$out" ] && return
  fetch nvidia-cuda-toolkit ./usr/bin/ptxas
  local v
  v=$("$STAGE/usr/bin/ptxas" --version) || die "extracted ptxas does not run"
  grep -q 'release 11\.8' <<<"$v" || die "expected ptxas 11.8, got: $v"
  mkdir -p "$CACHE/bin"
  mv "$STAGE/usr/bin/ptxas" "$out"
  log "installed $out ($(tail -n 2 <<<"$v" | head -n 1))"
}

ensure_headers() {
  [ -f "$CACHE/include/cuda.h" ] && [ -f "$CACHE/lib/stubs/libcuda.so" ] && return
  # The stub's directory is the multiarch triplet (x86_64-linux-gnu on amd64).
  fetch nvidia-cuda-dev ./usr/include/cuda.h './usr/lib/*/stubs/libcuda.so'
  grep -q '^#define CUDA_VERSION 11080' "$STAGE/usr/include/cuda.h" \
    || die "cuda.h is not CUDA 11.8: $(grep -m1 '^#define CUDA_VERSION' "$STAGE/usr/include/cuda.h")"
  local stub
  stub=$(echo "$STAGE"/usr/lib/*/stubs/libcuda.so)
  [ -f "$stub" ] || die "libcuda.so stub not found in nvidia-cuda-dev"
  mkdir -p "$CACHE/include" "$CACHE/lib/stubs"
  # Link-time only: the stub must never be found at run time (it fails every
  # call), so it stays out of any rpath; the driver provides libcuda.so.1.
  mv "$stub" "$CACHE/lib/stubs/libcuda.so"
  mv "$STAGE/usr/include/cuda.h" "$CACHE/include/cuda.h"
  log "installed $CACHE/include/cuda.h and $CACHE/lib/stubs/libcuda.so (CUDA 11.8)"
}

case ${1:-} in
  ptxas) ensure_ptxas; echo "$CACHE/bin/ptxas" ;;
  headers) ensure_headers; echo "$CACHE" ;;
  env)
    ensure_headers
    echo "CGO_CFLAGS=-I$CACHE/include"
    echo "CGO_LDFLAGS=-L$CACHE/lib/stubs"
    ;;
  *) echo "usage: $0 ptxas|headers|env  (cache: $CACHE, set GVR_CUDA_CACHE to move it)" >&2; exit 2 ;;
esac
