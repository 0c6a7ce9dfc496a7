#!/usr/bin/env bash
# GPU machine check, in one go and within 9 minutes (540 s) on a 16-core GPU machine:
#   1. driver: nvidia-smi answers and its driver is new enough for CUDA 13 (>= 580); then the
#      GPU's state for the record: compute mode, MIG mode, clocks, power, temperature;
#   2. configure and build ringgrad with CUDA (only what the checks need), unless prebuilt;
#   3. the kernel tests on the cuda device (every kernel against the cpu kernels); when they
#      fail, once more with CUDA_LAUNCH_BLOCKING=1, so that a fault is reported by the kernel
#      that caused it rather than by the next one to synchronize;
#   4. the NCCL test (tests/dist/test_nccl.cpp): it must build, run and pass (its "no GPU"
#      skip is a failure here); its limit (100 s) is above its own deadline (90 s);
#   5. compute-sanitizer, the real-GPU check of what sim-check models: memcheck over every
#      cuda kernel test, racecheck and synccheck over the row, reduce, softmax, layer norm,
#      cross-entropy and attention tests (a missing compute-sanitizer fails the step);
#   6. bench/kernels, which exits 1 when a kernel misses its floor (x memcpy, x cuBLAS);
#   7. bench/ddp --device cuda: 2 nccl processes on the GPU, DDP's step against no
#      communication, the hidden share and host syncs per step (figures; fails only on errors);
#   8. bench/train_step on cuda: GPU step times, eager and replayed as a CUDA graph (figures,
#      not a check; it fails only on errors): the 4x256 GPT, then GPT-2's shape in bf16
#      (12 x 768, 12 heads, T 1024, batch 8, vocabulary 50257), timed with device events.
# Each step prints its time; every step's limit is cut to what is left of the budget, in this
# order of importance. After every step the report so far is written to $OUT/gpu_check.md
# (atomically) and the step's whole output to $OUT/<step>.log, so a machine that times out
# still leaves what it did. Exit status: 0 when every step passed.
# Usage: bench/gpu_check.sh [--driver-only]   (--driver-only: step 1 alone;
#          RG_GPU_BUILD: build folder, default build-gpu; RG_GPU_CHECK_BUDGET: seconds, 540;
#          RG_COMPUTE_SANITIZER: its path, where it is not on PATH or under /usr/local/cuda*;
#          RG_GPU_PREBUILT=1: the build folder holds binaries built on another machine with
#          the same layout (libringgrad.so, tests/..., bench/...), for a GPU machine that lacks
#          the project's build dependencies: no configure, no build)
# Libraries the loader cannot find (NCCL or cuBLAS installed as Python wheels, say) are looked
# for under /usr and /opt and their folders put on LD_LIBRARY_PATH.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${RG_GPU_BUILD:-build-gpu}
BUDGET=${RG_GPU_CHECK_BUDGET:-540}
MIN_DRIVER=580
REPORT=$(mktemp)
trap 'rm -f "$REPORT"' EXIT
START=$(date +%s)
STATUS=0

note() { printf '%s\n' "$@" | tee -a "$REPORT"; }
elapsed() { echo $(($(date +%s) - START)); }
publish() {
  [[ -n ${OUT:-} ]] || return 0
  mkdir -p "$OUT" && cp "$REPORT" "$OUT/gpu_check.md.tmp" && mv "$OUT/gpu_check.md.tmp" "$OUT/gpu_check.md"
}
# step NAME LIMIT_S COMMAND...: runs within min(LIMIT_S, what is left of the budget), keeps
# the tail of its output in the report, publishes the report.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - $(elapsed)))
  ((limit > left)) && limit=$left
  if ((limit <= 0)); then
    STATUS=1
    note "" "## $name: FAIL (no time left of the ${BUDGET} s budget)"
    publish
    return 1
  fi
  local log began rc
  log=$(mktemp)
  began=$(date +%s)
  timeout "$limit" "$@" >"$log" 2>&1
  rc=$?
  ((rc != 0)) && STATUS=1
  local verdict=PASS
  ((rc != 0)) && verdict="FAIL (exit $rc$( ((rc == 124)) && echo ", timed out after $limit s"))"
  note "" "## $name: $verdict in $(($(date +%s) - began)) s (total $(elapsed) s)"
  note '```'
  tail -n "${TAIL:-25}" "$log" | tee -a "$REPORT"
  note '```'
  [[ -n ${OUT:-} ]] && cp "$log" "$OUT/$(tr -c 'A-Za-z0-9\n' _ <<<"$name" | head -c 40).log"
  rm -f "$log"
  publish
  return $rc
}

# The driver's major version, or nothing when nvidia-smi is missing or fails.
driver_check() {
  local line major
  line=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)
  echo "GPU: $line"
  major=$(sed -n 's/.*, \([0-9]\+\)\.[0-9.]*$/\1/p' <<<"$line")
  if [[ -z $major ]]; then
    echo "no usable GPU driver: nvidia-smi said: $line"
    return 1
  fi
  if ((major < MIN_DRIVER)); then
    echo "driver $major is older than CUDA 13 needs (>= $MIN_DRIVER)"
    return 1
  fi
  echo "driver $major >= $MIN_DRIVER: ok"
}

# The GPU's state, for the record (never fails: older drivers lack some fields).
gpu_state() {
  nvidia-smi --query-gpu=name,compute_mode,mig.mode.current,clocks.sm,clocks.max.sm,clocks.mem,\
power.draw,power.limit,temperature.gpu --format=csv 2>&1
  return 0
}

# The kernel tests on cuda; on a failure, once more with CUDA_LAUNCH_BLOCKING=1 (every launch
# waits for its kernel, so an illegal access is reported at its own kernel). Exits with the
# first run's status.
kernel_tests() {
  "$BUILD/tests/kernels/test_kernels" -tc='cuda:*' --no-skip=true && return 0
  local rc=$?
  echo "== the kernel tests failed (exit $rc); again with CUDA_LAUNCH_BLOCKING=1:"
  CUDA_LAUNCH_BLOCKING=1 "$BUILD/tests/kernels/test_kernels" -tc='cuda:*' --no-skip=true
  echo "== CUDA_LAUNCH_BLOCKING=1 run: exit $?"
  return $rc
}

# sanitize TOOL TESTS: compute-sanitizer's TOOL over the cuda kernel tests matching TESTS
# (doctest -tc filters); any error it reports fails the step.
sanitize() {
  local cs=${RG_COMPUTE_SANITIZER:-}
  [[ -n $cs ]] || cs=$(command -v compute-sanitizer ||
    ls /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer \
      2>/dev/null | head -1)
  if [[ ! -x $cs ]]; then
    echo "compute-sanitizer not found (RG_COMPUTE_SANITIZER, PATH, /usr/local/cuda*): cannot check"
    return 1
  fi
  "$cs" --tool "$1" --error-exitcode 1 --print-limit 20 "$BUILD/tests/kernels/test_kernels" \
    -tc="$2" --no-skip=true
}
ROW_TESTS='cuda:*row*,cuda:*reduce*,cuda:*softmax*,cuda:*layernorm*,cuda:*cross_entropy*,cuda:*attention*'

note "# ringgrad gpu_check ($(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
note "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
publish
export -f driver_check gpu_state kernel_tests sanitize
export MIN_DRIVER BUILD ROW_TESTS
TAIL=5 step "driver" 20 bash -c driver_check || {
  note "" "total $(elapsed) s, FAILED at the driver check"
  publish
  exit 1
}
TAIL=15 step "gpu state" 20 bash -c gpu_state
if [[ ${1:-} == --driver-only ]]; then
  note "" "total $(elapsed) s, driver only: PASSED"
  publish
  exit 0
fi

# Puts the folder of every library that libringgrad.so needs and the loader cannot find on
# LD_LIBRARY_PATH, when a copy is found under /usr or /opt.
add_missing_libraries() {
  local lib dir
  for lib in $(ldd "$BUILD/libringgrad.so" 2>/dev/null | awk '/not found/ {print $1}'); do
    dir=$(find /usr /opt -name "$lib" -print -quit 2>/dev/null)
    if [[ -n $dir ]]; then
      export LD_LIBRARY_PATH=$(dirname "$dir")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      note "library $lib: found in $(dirname "$dir")"
    else
      note "library $lib: not found"
    fi
  done
}

if [[ -n ${RG_GPU_PREBUILT:-} ]]; then
  note "prebuilt binaries in $BUILD: no configure, no build"
  for f in libringgrad.so tests/kernels/test_kernels bench/kernels bench/train_step \
    bench/ddp tests/dist/test_dist_nccl; do
    [[ -x $BUILD/$f || -f $BUILD/$f ]] || {
      note "missing: $BUILD/$f"
      STATUS=1
    }
  done
elif [[ ! -f $BUILD/build.ninja ]]; then
  TAIL=10 step "configure" 60 meson setup "$BUILD" -Dcuda=enabled -Dsim_check=disabled \
    --buildtype=release || true
fi
# Only what the checks need: the full tree costs minutes of nvcc.
[[ -n ${RG_GPU_PREBUILT:-} ]] || TAIL=15 step "build" 200 ninja -C "$BUILD" libringgrad.so \
  tests/kernels/test_kernels bench/kernels bench/train_step bench/ddp tests/dist/test_dist_nccl \
  tests/dist/rank_helper
add_missing_libraries
publish
if [[ $STATUS -eq 0 ]]; then
  TAIL=40 step "kernel tests on cuda" 120 bash -c kernel_tests
  # run directly, not through meson: its "no GPU" exit (77) must count as a failure here
  TAIL=20 step "dist-nccl" 100 "$BUILD/tests/dist/test_dist_nccl"
  TAIL=25 step "compute-sanitizer memcheck" 150 bash -c 'sanitize memcheck "cuda:*"'
  TAIL=25 step "compute-sanitizer racecheck" 60 bash -c 'sanitize racecheck "$ROW_TESTS"'
  TAIL=25 step "compute-sanitizer synccheck" 60 bash -c 'sanitize synccheck "$ROW_TESTS"'
  TAIL=40 step "bench/kernels (floors enforced)" 60 "$BUILD/bench/kernels"
  TAIL=12 step "ddp on cuda (2 nccl processes)" 60 "$BUILD/bench/ddp" 4 256 6 --device cuda --rounds 2
  TAIL=30 step "train_step on cuda" 60 "$BUILD/bench/train_step" 4 256 8 128 10 1 1 --device cuda --cuda-graphs
  TAIL=12 step "GPT-2 width bf16 step on cuda" 90 "$BUILD/bench/train_step" 12 768 8 1024 5 1 1 \
    --heads 12 --vocab 50257 --bf16 --device cuda --cuda-graphs
fi
note ""
note "total $(elapsed) s, $([[ $STATUS -eq 0 ]] && echo 'ALL PASSED' || echo 'SOME STEPS FAILED')"
publish
exit $STATUS
