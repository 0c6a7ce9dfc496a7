#!/usr/bin/env bash
# GPU machine check, in one go and within 6 minutes on a 16-core GPU machine:
#   1. driver: nvidia-smi answers and its driver is new enough for CUDA 13 (>= 580);
#   2. configure and build ringgrad with CUDA (only what the checks need);
#   3. the kernel tests on the cuda device (every kernel against the cpu kernels);
#   4. bench/kernels, which exits 1 when a kernel misses its floor (x memcpy, x cuBLAS);
#   5. the NCCL test (tests/dist/test_nccl.cpp): it must build, run and pass (its "no GPU"
#      skip is a failure here).
#   6. bench/train_step on cuda: GPU step times (figures, not a check; it fails only on errors).
# Each step prints its time; every step's limit is cut to what is left of the 6 minutes.
# After every step the report so far is written to $OUT/gpu_check.md (atomically) and the
# step's whole output to $OUT/<step>.log, so a machine that times out still leaves what it
# did. Exit status: 0 when every step passed.
# Usage: bench/gpu_check.sh [--driver-only]   (--driver-only: step 1 alone;
#          RG_GPU_BUILD: build folder, default build-gpu; RG_GPU_CHECK_BUDGET: seconds, 360;
#          RG_GPU_PREBUILT=1: the build folder holds binaries built on another machine with
#          the same layout (libringgrad.so, tests/..., bench/...), for a GPU machine that lacks
#          the project's build dependencies: no configure, no build)
# Libraries the loader cannot find (NCCL or cuBLAS installed as Python wheels, say) are looked
# for under /usr and /opt and their folders put on LD_LIBRARY_PATH.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${RG_GPU_BUILD:-build-gpu}
BUDGET=${RG_GPU_CHECK_BUDGET:-360}
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

note "# ringgrad gpu_check ($(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
note "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
publish
export -f driver_check
export MIN_DRIVER
TAIL=5 step "driver" 20 bash -c driver_check || {
  note "" "total $(elapsed) s, FAILED at the driver check"
  publish
  exit 1
}
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
    tests/dist/test_dist_nccl; do
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
  tests/kernels/test_kernels bench/kernels bench/train_step tests/dist/test_dist_nccl \
  tests/dist/rank_helper
add_missing_libraries
publish
if [[ $STATUS -eq 0 ]]; then
  TAIL=30 step "kernel tests on cuda" 90 "$BUILD/tests/kernels/test_kernels" -tc='cuda:*' --no-skip=true
  TAIL=40 step "bench/kernels (floors enforced)" 60 "$BUILD/bench/kernels"
  # run directly, not through meson: its "no GPU" exit (77) must count as a failure here
  TAIL=20 step "dist-nccl" 60 "$BUILD/tests/dist/test_dist_nccl"
  TAIL=30 step "train_step on cuda" 60 "$BUILD/bench/train_step" 4 256 8 128 10 1 1 --device cuda
fi
note ""
note "total $(elapsed) s, $([[ $STATUS -eq 0 ]] && echo 'ALL PASSED' || echo 'SOME STEPS FAILED')"
publish
exit $STATUS
