#!/usr/bin/env bash
# Runs gvr's GPU checks on a GPU machine, from the repo root, with what
# `make gpu-test` built into gpubin/ (no Go toolchain needed there):
#   runtime  gpubin/runtime.test -test.v   (device, buffers, JIT logs, launches by contract,
#            streams and events, graphs, clusters)
#   topk     gpubin/topk.test -test.v      (adversarial exactness, determinism, decode loop, graphs,
#            errors, a shared selector, streams, the cluster kernels and the selector's choice, two GPUs where there are two, the interpreter
#            against the GPU, TestFuzzGPU), in groups of tests, one process each (see TOPK_GROUPS)
#   sanitize compute-sanitizer's memcheck, racecheck, initcheck and synccheck over
#            gpubin/topk.test's SANITIZE_TESTS (small sizes), then over
#            SANITIZE_GROUP_TESTS (rows shared by clusters); any reported error fails
#   ptxas    that machine's ptxas (CUDA 13) on gpubin/*_sm_{90,100,120}.ptx and
#            golden/*.ptx; all must assemble, every sm_100 one included
#   bench    gpubin/gvrbench               (the benchmark table)
# Each step's full output goes to $OUT (or gpubin/out when OUT is unset);
# stdout gets a short summary per step, failures in full. Every step runs
# even if an earlier one fails; the exit status is 1 if any failed.
#
# Environment:
#   STEPS       steps to run, in order (default: "runtime topk sanitize ptxas bench")
#   GVR_SUITE   full (default) or quick: the size of the adversarial suite
#   BENCHFLAGS  flags for gvrbench (default: its full table); e.g. "-batch 1,8 -iters 50"
#   TESTFLAGS   extra flags for both test binaries, e.g. "-test.run Decode"
#   GVR_FUZZ_CASES, GVR_FUZZ_SEED  TestFuzzGPU's random cases (default 200) and seed (default: the time)
#   SANITIZE_TESTS  the topk tests the sanitize step runs (a -test.run pattern)
#   SANITIZE_GROUP_TESTS  the topk tests of rows shared by clusters it runs after them
#               (a -test.run pattern; empty: none)
#   SANITIZER   the compute-sanitizer to use (default: on PATH, else /usr/local/cuda/bin/compute-sanitizer)
#   PTXAS       the ptxas to use (default: ptxas on PATH, else /usr/local/cuda/bin/ptxas)
set -uo pipefail
cd "$(dirname "$0")/.."

STEPS=${STEPS:-runtime topk sanitize ptxas bench}
GVR_FUZZ_CASES=${GVR_FUZZ_CASES:-200}
GVR_FUZZ_SEED=${GVR_FUZZ_SEED:-$(date +%s)}
SANITIZE_TESTS=${SANITIZE_TESTS:-'^Test(Determinism|SelectHost|DecodeLoop|SharedSelector|MisalignedViews|GraphReplay|ClusterKernels)$'}
SANITIZE_GROUP_TESTS=${SANITIZE_GROUP_TESTS-'^TestAdversarialGroups$'}
GVR_SUITE=${GVR_SUITE:-full}
BENCHFLAGS=${BENCHFLAGS:-}
TESTFLAGS=${TESTFLAGS:-}
OUT=${OUT:-gpubin/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd) # the test binaries run from their packages' directories
export GVR_REQUIRE_GPU=1 # a test binary that finds no GPU fails instead of skipping

failed=()
note() { echo "gpu-run: $*"; }
fail() { failed+=("$1"); note "$1 FAILED${2:+: $2}"; }
secs() { echo $(( $(date +%s) - $1 ))s; }

[ -x gpubin/runtime.test ] && [ -x gpubin/topk.test ] && [ -x gpubin/gvrbench ] \
  || { note "gpubin/ lacks the binaries: run 'make gpu-test' on the build machine and carry gpubin/"; exit 1; }

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
} >"$OUT/summary.txt"
note "$(tail -n +3 "$OUT/summary.txt" | head -n 3 | tr '\n' ' ')"

# run_test NAME ARGS...: runs gpubin/NAME.test with ARGS, appends to
# $OUT/NAME.log, prints failed and skipped tests and the tests' own summary
# lines; returns the test binary's status (a skip counts as a failure).
run_test() {
  local name=$1; shift
  local log=$OUT/$name.log tmp; tmp=$(mktemp)
  # shellcheck disable=SC2086 # TESTFLAGS is a list of flags
  # From the package's directory, as go test runs it (testdata/ is there).
  (cd "$name" && ../gpubin/"$name".test -test.v -test.timeout 3m "$@" $TESTFLAGS) >"$tmp" 2>&1
  local rc=$?
  { echo "=== gpubin/$name.test $* $TESTFLAGS (exit $rc)"; cat "$tmp"; } >>"$log"
  grep -E '^ *--- (FAIL|SKIP)|^(FAIL|panic)|(suite|bit-identical|steps:|replays| regs,|sm_[0-9]+:|device [0-9]:)' "$tmp" \
    | cut -c1-200 | head -n 40
  if [ $rc -ne 0 ]; then
    echo "--- $name $*: failures (first 80 lines; the last test started: $(grep '^=== RUN' "$tmp" | tail -n 1 | cut -c9-))"
    { grep -B2 -A14 -E -- '--- FAIL|^panic:|^fatal error|^SIGSEGV|^SIGBUS|^unexpected fault' "$tmp" || tail -n 30 "$tmp"; } | head -n 80
  elif grep -q -- '--- SKIP' "$tmp"; then
    rc=1
  fi
  echo "$name $*: $(grep -cE '^ *--- PASS' "$tmp") passed, $(grep -cE '^ *--- FAIL' "$tmp") failed, $(grep -cE '^ *--- SKIP' "$tmp") skipped"
  rm -f "$tmp"
  return $rc
}

# The topk tests run in groups, one process each, so that a kernel fault
# (which poisons the CUDA context for the rest of the process) in one group
# does not hide the others' results.
TOPK_GROUPS=(Adversarial Determinism 'DecodeLoop|GraphReplay|DependentLaunch|SelectHost|SelectorErrors|SelectNoAllocs|ConcurrentSelectors'
  'SharedSelector|MisalignedViews|LayerAcrossStreams' 'ClusterKernels|AdversarialCluster|AdversarialGroups|SelectorChoice|SelectNextN|SelectPages|SelectWindows|SelectScoreTypes')
# Needs two GPUs: run (and required to pass) only on a machine with two or more.
TWO_GPU_TESTS='TwoGPUs'

step_test() {
  local name=$1 t0 ok=1; t0=$(date +%s)
  : >"$OUT/$name.log"
  if [ "$name" = topk ] && [ -z "$TESTFLAGS" ]; then
    local all; all=$(IFS='|'; echo "${TOPK_GROUPS[*]}|$TWO_GPU_TESTS|FuzzGPU")
    for g in "${TOPK_GROUPS[@]}"; do
      run_test topk "-gvr.suite=$GVR_SUITE" -test.run "^Test($g)\$" || ok=0
    done
    # Differential fuzzing: random kernels, configurations and rows against
    # the reference and the interpreter; a new seed each run unless given.
    # Its own timeout (the later flag wins): 150 cases took 2 to 6 minutes
    # on an H100 by seed (the interpreter's share and the JIT of the
    # seed's configurations), past the groups' 3 minutes.
    run_test topk -test.run '^TestFuzzGPU$' -gvr.fuzz-cases="$GVR_FUZZ_CASES" -gvr.fuzz-seed="$GVR_FUZZ_SEED" -test.timeout 12m || ok=0
    local ngpu; ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    if [ "$ngpu" -ge 2 ]; then
      GVR_REQUIRE_GPUS=2 run_test topk -test.run "^Test($TWO_GPU_TESTS)\$" || ok=0
    else
      note "topk: $TWO_GPU_TESTS not run: $ngpu GPU here (they need two)"
    fi
    run_test topk -test.skip "^Test($all)\$" || ok=0 # the CPU tests
  elif [ "$name" = topk ]; then
    run_test topk "-gvr.suite=$GVR_SUITE" || ok=0
  else
    run_test "$name" || ok=0
  fi
  if [ $ok = 1 ]; then note "$name: PASS ($(secs "$t0"))"; else fail "$name" "log in $OUT/$name.log"; fi
}

for step in $STEPS; do
  case $step in
  runtime) step_test runtime ;;
  topk) step_test topk ;;
  ptxas)
    PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
    if [ ! -x "$PTXAS" ]; then
      fail ptxas "no ptxas found (set PTXAS)"
      continue
    fi
    log=$OUT/ptxas.log
    "$PTXAS" --version | tail -n 2 >"$log"
    nok=0 nbad=0 n100=0
    n100want=$(ls gpubin/*_sm_100.ptx golden/*_sm_100.ptx 2>/dev/null | wc -l)
    for f in gpubin/*.ptx golden/*.ptx; do
      [[ $f =~ _(sm_[0-9]+[a-z]?)\.ptx$ ]] || continue
      arch=${BASH_REMATCH[1]}
      if out=$("$PTXAS" -arch="$arch" -v -o /dev/null "$f" 2>&1); then
        nok=$((nok + 1))
        [ "$arch" != sm_100 ] || n100=$((n100 + 1))
        echo "ok   $f: $(grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' <<<"$out" | tr '\n' ' ')" >>"$log"
      else
        nbad=$((nbad + 1))
        { echo "FAIL $f ($arch):"; echo "$out"; } >>"$log"
      fi
    done
    if [ "$nbad" -gt 0 ] || [ "$n100" -lt "$n100want" ] || [ "$n100want" -lt 6 ]; then
      grep -A8 '^FAIL' "$log" | head -n 40
      fail ptxas "$nbad files failed, $n100 of $n100want sm_100 files assembled (log in $log)"
    else
      note "ptxas: $nok files assembled, all $n100want sm_100 ones included, by $(head -n 1 "$log")"
      grep '_sm_100.ptx' "$log" | grep -v instrumented
    fi
    ;;
  bench)
    t0=$(date +%s)
    # shellcheck disable=SC2086 # BENCHFLAGS is a list of flags
    if timeout 5m gpubin/gvrbench $BENCHFLAGS -o "$OUT/bench.json" >"$OUT/bench.txt" 2>"$OUT/bench-progress.log"; then
      cat "$OUT/bench.txt"
      note "bench: done ($(secs "$t0")), JSON in $OUT/bench.json"
    else
      cat "$OUT/bench.txt"
      tail -n 20 "$OUT/bench-progress.log"
      fail bench "log in $OUT/bench-progress.log"
    fi
    ;;
  sanitize)
    SANITIZER=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
    if [ ! -x "$SANITIZER" ]; then
      fail sanitize "no compute-sanitizer found (set SANITIZER)"
      continue
    fi
    log=$OUT/sanitize.log
    : >"$log"
    # Racecheck is slow over long rows in large clusters: the grouped
    # kernels' suite in clusters of 8 and 16 does not end in 150 s (rows up
    # to 65537 in clusters of 8: ~60 s; H100, CUDA 13.0, perf notes 174), so
    # racecheck takes the grouped kernels twice: clusters of up to 4 with
    # every row, then every cluster size with rows up to 5000.
    sets=("tests:$SANITIZE_TESTS")
    [ -z "$SANITIZE_GROUP_TESTS" ] || sets+=("groups:$SANITIZE_GROUP_TESTS")
    for set in "${sets[@]}"; do
      name=${set%%:*} pattern=${set#*:}
      for tool in memcheck racecheck initcheck synccheck; do
        # --error-exitcode makes a reported error fail the run even when the
        # tests pass; the ERROR SUMMARY line is checked as well.
        # Under synccheck a cluster of 16 (non-portable) ends in an illegal
        # address that memcheck, racecheck and plain runs do not see (H100,
        # CUDA 13.0): synccheck runs clusters up to 8.
        variants=("")
        [ "$tool" != synccheck ] || variants=("-gvr.max-cluster=8")
        [ "$tool:$name" != racecheck:groups ] || variants=("-gvr.max-cluster=4" "-gvr.groups-max-n=5000")
        for v in "${variants[@]}"; do
          t0=$(date +%s) tmp=$(mktemp)
          read -ra extra <<<"$v"
          what="$tool, $name${v:+ ($v)}"
          (cd topk && timeout 8m "$SANITIZER" --tool "$tool" --error-exitcode 99 --print-limit 50 \
            ../gpubin/topk.test -test.v -test.timeout 8m -test.run "$pattern" -gvr.suite=quick -gvr.runs=3 "${extra[@]}") >"$tmp" 2>&1
          rc=$?
          { echo "=== $what: $pattern (exit $rc, $(secs "$t0"))"; cat "$tmp"; } >>"$log"
          # racecheck ends with a RACECHECK SUMMARY line, the others with ERROR SUMMARY.
          summary=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$tmp" | tail -n 1)
          tests="$(grep -cE '^ *--- PASS' "$tmp") passed, $(grep -cE '^ *--- (FAIL|SKIP)' "$tmp") failed or skipped"
          if [ $rc -ne 0 ] || ! grep -qE 'ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\)' <<<"$summary" || grep -qE '^ *--- (FAIL|SKIP)' "$tmp"; then
            grep -E '^=========|--- FAIL|^FAIL|^panic' "$tmp" | head -n 40
            fail "sanitize:$tool:$name${v:+:$v}" "exit $rc, ${summary:-no ERROR SUMMARY line}, $tests (log in $log)"
          else
            note "sanitize: $what: ${summary#========= }, $tests ($(secs "$t0"))"
          fi
          rm -f "$tmp"
        done
      done
    done
    ;;
  *) fail "$step" "unknown step (runtime, topk, sanitize, ptxas, bench)" ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  note "FAILED: ${failed[*]}"
  exit 1
fi
note "all steps passed: $STEPS"
