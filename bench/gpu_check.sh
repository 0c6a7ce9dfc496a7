#!/usr/bin/env bash
# GPU machine check, in one go and within ~6 minutes: configure and build ringgrad with
# CUDA, run the kernel tests on the cuda device (every kernel against the cpu kernels),
# run bench/kernels (GB/s vs memcpy, matmul vs raw cuBLAS), and the NCCL test of dist/ if
# one is registered. Writes a short report to $OUT/gpu_check.md when $OUT is set.
# Usage: bench/gpu_check.sh            (exit status: 0 when every step passed)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${RG_GPU_BUILD:-build-gpu}
REPORT=$(mktemp)
START=$(date +%s)
STATUS=0

note() { echo "$*" | tee -a "$REPORT"; }
elapsed() { echo $(( $(date +%s) - START ))s; }
# step NAME TIMEOUT_S COMMAND...: runs, keeps the tail of its output in the report
step() {
  local name=$1 limit=$2; shift 2
  local log; log=$(mktemp)
  timeout "$limit" "$@" >"$log" 2>&1
  local rc=$?
  [[ $rc -ne 0 ]] && STATUS=1
  note ""
  note "## $name: $([[ $rc -eq 0 ]] && echo PASS || echo "FAIL (exit $rc$([[ $rc -eq 124 ]] && echo ', timed out'))") at $(elapsed)"
  note '```'
  tail -n "${TAIL:-25}" "$log" | tee -a "$REPORT" >/dev/null
  note '```'
  tail -n "${TAIL:-25}" "$log"
  rm -f "$log"
  return $rc
}

note "# ringgrad gpu_check ($(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
note "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
note "nvcc: $(nvcc --version 2>/dev/null | tail -1)"

if [[ ! -f $BUILD/build.ninja ]]; then
  TAIL=10 step "configure" 60 meson setup "$BUILD" -Dcuda=enabled --buildtype=release || true
fi
# Only what the checks need: the full tree costs minutes of nvcc.
TAIL=15 step "build" 240 ninja -C "$BUILD" libringgrad.so tests/kernels/test_kernels bench/kernels
if [[ $STATUS -eq 0 ]]; then
  TAIL=30 step "kernel tests on cuda" 120 "$BUILD/tests/kernels/test_kernels" -tc='cuda:*' --no-skip=true
  TAIL=40 step "bench/kernels" 90 "$BUILD/bench/kernels"
  if meson test -C "$BUILD" --list 2>/dev/null | grep -q 'dist-nccl'; then
    TAIL=20 step "dist-nccl" 120 meson test -C "$BUILD" dist-nccl --print-errorlogs
  else
    note ""
    note "## dist-nccl: not registered, skipped"
  fi
fi
note ""
note "total $(elapsed), $([[ $STATUS -eq 0 ]] && echo 'ALL PASSED' || echo 'SOME STEPS FAILED')"
if [[ -n ${OUT:-} ]]; then
  mkdir -p "$OUT" && cp "$REPORT" "$OUT/gpu_check.md"
fi
rm -f "$REPORT"
exit $STATUS
