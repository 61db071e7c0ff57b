#!/usr/bin/env bash
# Fetches the pinned CUDA pieces gvr needs into a per-user cache, without a
# system-wide toolkit install (see DESIGN.md, "Building against CUDA"):
#   ptxas    ensure $CACHE/bin/ptxas (CUDA 11.8) exists; print its path
#   ptxas12  ensure $CACHE12/bin/ptxas (CUDA 12.4, for PTX 8.0: sm_90a, bulk
#            copies, cluster qualifiers) exists; print its path
#   cuobjdump12  ensure $CACHE12/bin/cuobjdump and nvdisasm (CUDA 12.4, the same
#            package as ptxas12: SASS of what ptxas12 assembles) exist; print its path
#   headers  ensure $CACHE/include/cuda.h and $CACHE/lib/stubs/libcuda.so; print $CACHE
#   env      ensure headers; print CGO_CFLAGS=... and CGO_LDFLAGS=... lines for cgo
#            builds against gorgonia.org/cu (which adds -lcuda itself)
# The 11.8 files come from Debian bookworm's non-free nvidia-cuda-toolkit and
# nvidia-cuda-dev packages; ptxas 12.4 from trixie's non-free nvidia-cuda-toolkit
# (pinned version, PTXAS12_DEB). They are downloaded and unpacked, never installed.
# Once the files are in the cache nothing is downloaded. Progress goes to stderr.
set -euo pipefail

# Outside the repo, so a fresh clone on the same machine reuses it.
CACHE=${GVR_CUDA_CACHE:-$HOME/.cache/gvr/cuda-11.8}
CACHE12=${GVR_CUDA12_CACHE:-$HOME/.cache/gvr/cuda-12.4}
# The trixie package that ships /usr/bin/ptxas 12.4 (an 87 MB .deb), by exact version.
PTXAS12_DEB=nvidia-cuda-toolkit=12.4.131~12.4.1-2
SOURCES=/etc/apt/sources.list.d/gvr-nonfree.sources
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# As root, apt drops to the _apt user, which cannot write to our scratch dirs.
SANDBOX=()
[ "$(id -u)" -ne 0 ] || SANDBOX=(-o APT::Sandbox::User=root)

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

# Trixie non-free for one download, without touching the machine's apt setup:
# the sources list, the package lists and apt's caches all live in $STAGE/apt
# (gone on exit), and the machine's update hooks (which may clean or index
# apt's system caches) do not run, so a later apt-get install on this bookworm
# machine never sees trixie. Its other settings (a proxy, say) still apply.
# Needs no root, only trixie's keys in the archive keyring. Sets APT_OPTS.
apt_trixie() {
  command -v apt-get >/dev/null || die "apt-get not found: this script needs Debian; elsewhere set PTXAS12 to a CUDA 12.x ptxas"
  [ -f "$KEYRING" ] || die "$KEYRING missing (apt-get install debian-archive-keyring)"
  # Trixie's keys came to bookworm in debian-archive-keyring 2023.3+deb12u2.
  if [ ! -f /usr/share/keyrings/debian-archive-trixie-automatic.gpg ]; then
    log "debian-archive-keyring lacks trixie's keys: upgrading it (a bookworm stable update)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --only-upgrade debian-archive-keyring
    [ -f /usr/share/keyrings/debian-archive-trixie-automatic.gpg ] \
      || die "debian-archive-keyring still lacks trixie's keys (need 2023.3+deb12u2 or later)"
  fi
  local dir=$STAGE/apt
  mkdir -p "$dir/sources.d" "$dir/lists/partial" "$dir/cache/archives/partial"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: non-free\nSigned-By: %s\n' \
    "$KEYRING" >"$dir/trixie.sources"
  # Read after the machine's apt.conf and apt.conf.d, so these win.
  cat >"$dir/apt.conf" <<EOF
Dir::Etc::sourcelist "$dir/trixie.sources";
Dir::Etc::sourceparts "$dir/sources.d";
Dir::State::Lists "$dir/lists";
Dir::Cache "$dir/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
EOF
  APT_OPTS=(-c "$dir/apt.conf")
  log "reading trixie non-free's index into $dir"
  apt-get update -qq "${SANDBOX[@]}" "${APT_OPTS[@]}" || die "apt-get update of trixie non-free failed"
}

# fetch CACHEDIR APTSETUP PKG[=VERSION] MEMBER... : download PKG's .deb into a
# scratch dir next to CACHEDIR (same filesystem, so the final mv is atomic),
# with the apt sources APTSETUP (apt_nonfree or apt_trixie) sets up, and unpack
# MEMBERs (tar patterns) into $STAGE. The .deb is deleted on exit:
# nvidia-cuda-dev is ~774 MB.
fetch() {
  local cachedir=$1 setup=$2 pkg=$3; shift 3
  mkdir -p "$(dirname "$cachedir")"
  STAGE=$(mktemp -d "$cachedir.tmp.XXXXXX")
  trap 'rm -rf "$STAGE"' EXIT
  APT_OPTS=()
  "$setup"
  log "downloading $pkg"
  (cd "$STAGE" && apt-get download -qq "${SANDBOX[@]}" "${APT_OPTS[@]}" "$pkg") || die "apt-get download $pkg failed"
  local deb
  deb=$(echo "$STAGE"/"${pkg%%=*}"_*.deb)
  [ -f "$deb" ] || die "no .deb for $pkg in $STAGE"
  log "unpacking $(basename "$deb")"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$STAGE" --wildcards "$@"
  rm -f "$deb"
}

# install_ptxas CACHE APT_FN PKG RELEASE_RE: unpacks ptxas from package PKG
# (fetched with APT_FN) into CACHE/bin, once, and checks its --version
# matches RELEASE_RE.
install_ptxas() {
  local cache=$1 aptfn=$2 pkg=$3 want=$4 out=$1/bin/ptxas
  [ -x "$out" ] && return
  fetch "$cache" "$aptfn" "$pkg" ./usr/bin/ptxas
  local v
  v=$("$STAGE/usr/bin/ptxas" --version) || die "extracted ptxas does not run"
  grep -q "$want" <<<"$v" || die "expected ptxas matching '$want', got: $v"
  mkdir -p "$cache/bin"
  mv "$STAGE/usr/bin/ptxas" "$out"
  log "installed $out ($(tail -n 2 <<<"$v" | head -n 1))"
}

ensure_ptxas() { install_ptxas "$CACHE" apt_nonfree nvidia-cuda-toolkit 'release 11\.8'; }

ensure_ptxas12() { install_ptxas "$CACHE12" apt_trixie "$PTXAS12_DEB" 'release 12\.4, V12\.4\.131'; }

ensure_cuobjdump12() {
  local out=$CACHE12/bin/cuobjdump
  [ -x "$out" ] && [ -x "$CACHE12/bin/nvdisasm" ] && return
  # cuobjdump disassembles sm_90 through the nvdisasm beside it.
  fetch "$CACHE12" apt_trixie "$PTXAS12_DEB" ./usr/bin/cuobjdump ./usr/bin/nvdisasm
  local v
  v=$("$STAGE/usr/bin/cuobjdump" --version) || die "extracted cuobjdump does not run"
  grep -q 'release 12\.4' <<<"$v" || die "expected cuobjdump 12.4, got: $v"
  mkdir -p "$CACHE12/bin"
  mv "$STAGE/usr/bin/nvdisasm" "$CACHE12/bin/nvdisasm"
  mv "$STAGE/usr/bin/cuobjdump" "$out"
  log "installed $out and nvdisasm"
}

ensure_headers() {
  [ -f "$CACHE/include/cuda.h" ] && [ -f "$CACHE/lib/stubs/libcuda.so" ] && return
  # The stub's directory is the multiarch triplet (x86_64-linux-gnu on amd64).
  fetch "$CACHE" apt_nonfree nvidia-cuda-dev ./usr/include/cuda.h './usr/lib/*/stubs/libcuda.so'
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
  ptxas12) ensure_ptxas12; echo "$CACHE12/bin/ptxas" ;;
  cuobjdump12) ensure_cuobjdump12; echo "$CACHE12/bin/cuobjdump" ;;
  headers) ensure_headers; echo "$CACHE" ;;
  env)
    ensure_headers
    echo "CGO_CFLAGS=-I$CACHE/include"
    echo "CGO_LDFLAGS=-L$CACHE/lib/stubs"
    ;;
  *) echo "usage: $0 ptxas|ptxas12|cuobjdump12|headers|env  (caches: $CACHE and $CACHE12, set GVR_CUDA_CACHE and GVR_CUDA12_CACHE to move them)" >&2; exit 2 ;;
esac
