#!/usr/bin/env bash
# bench/gpu_check.sh's verdicts, on a fake bundle of shell scripts and a fake nvidia-smi (no
# GPU, no build): a driver older than CUDA 13, or a library the bundle cannot load, fails the
# environment step and the check goes on; failing kernel tests rerun their first failing case alone with CUDA_LAUNCH_BLOCKING=1
# (not the whole suite); a missing bundle file, a missing compute-sanitizer and the NCCL
# test's "no GPU" exit fail their steps; a step past its limit is stopped and reported; the
# budget running out leaves the rest NOT RUN; the report is the table first, in 2 files.
set -uo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

fake_smi() {  # fake_smi DRIVER_VERSION: an nvidia-smi printing one H200 with that driver
  mkdir -p "$work/bin"
  printf '#!/bin/sh\necho "NVIDIA H200, %s"\n' "$1" >"$work/bin/nvidia-smi"
  chmod +x "$work/bin/nvidia-smi"
}
script_file() {  # script_file PATH BODY: an executable shell script
  mkdir -p "$(dirname "$1")"
  printf '#!/bin/sh\n%s\n' "$2" >"$1"
  chmod +x "$1"
}
b=$work/bundle
script_file "$b/libringgrad.so" ":"
# The kernel tests: the whole cuda run fails at softmax; the rerun of that case alone, with
# launches blocking, names the kernel that faulted.
script_file "$b/tests/kernels/test_kernels" 'case "$*" in
  *"-tc=cuda: softmax_and_backward"*) echo "rerun: CUDA_LAUNCH_BLOCKING=$CUDA_LAUNCH_BLOCKING: illegal address in layernorm_backward"; exit 1 ;;
  *"-tc=cuda:*"*) printf "TEST CASE:  cuda: softmax_and_backward\n\nERROR: illegal address\n[doctest] test cases: 40 | 20 passed | 20 failed |\n"; exit 1 ;;
  *) echo "test_kernels $*"; echo "[doctest] test cases: 3 | 3 passed | 0 failed |" ;;
esac'
script_file "$b/tests/dist/test_dist_nccl" 'echo "dist-nccl: no GPU with NCCL on this machine: skipped (exit 77)"; exit 77'
script_file "$b/bench/kernels" 'case "$*" in
  *--environment*) echo "cuda runtime 13.0 (in this build)"; [ -z "$FAKE_NO_NCCL" ] || echo "libnccl.so.2: NOT FOUND: tried" ;;
  *attention*) echo "attention fwd bf16 causal T 1024 head 64 x96: 1.0 ms 300.0 TFLOP/s" ;;
  *) echo "kernels bench: OK" ;;
esac'
script_file "$b/bench/ddp" 'sleep "${FAKE_DDP_SLEEP:-0}"; echo "DDP, bucket_cap_mb 25 1.05"'
script_file "$b/bench/train_step" 'echo "graph: replayed step 12.0 ms"'
script_file "$work/bin/compute-sanitizer" 'echo "sanitizer args: $*"; echo "ERROR SUMMARY: 0 errors"'

base_path=$(dirname "$(command -v bash)"):$(dirname "$(command -v timeout)"):/usr/bin:/bin
# run NAME [ENV...] -- ARGS: the check on the fake bundle; rc and the report $work/NAME/gpu_check.md
run() {
  local name=$1
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env OUT="$work/$name" PATH="$work/bin:$base_path" RG_GPU_BUNDLE="$b" \
    RG_COMPUTE_SANITIZER="$work/bin/compute-sanitizer" "${envs[@]}" bash "$script" "$@" \
    >"$work/$name.log" 2>&1
  rc=$?
}
row() { grep -E "^\| $2 \|" "$work/$1/gpu_check.md"; }
expect_row() {  # expect_row NAME STEP REGEX: the table row of STEP matches REGEX
  row "$1" "$2" | grep -qE -- "$3" || fail "$1: step $2 is not /$3/: $(row "$1" "$2")"
}
expect_report() {  # expect_report NAME NEEDLE
  grep -qF -- "$2" "$work/$1/gpu_check.md" 2>/dev/null ||
    fail "$1: report lacks '$2': $(cat "$work/$1/gpu_check.md" 2>/dev/null || echo '(none)')"
}

fake_smi 575.57.08
run old -- --steps 1
((rc == 1)) || fail "old driver: exit $rc, expected 1"
expect_row old 1 "FAIL .*driver 575 is older than CUDA 13 needs \(>= 580\)"

fake_smi 580.95.05
run full --
((rc == 1)) || fail "full run with failing steps: exit $rc, expected 1"
sed -n 3p "$work/full/gpu_check.md" | grep -q '^| # | step' || fail "the table is not first"
(($(find "$work/full" -type f | wc -l) == 2)) || fail "files written: $(ls "$work/full")"
expect_row full 1 "PASS .*NVIDIA H200, 580.95.05"
expect_row full 2 "FAIL \(exit 1\) .*first failure: cuda: softmax_and_backward"
expect_report full "rerun: CUDA_LAUNCH_BLOCKING=1: illegal address in layernorm_backward"
expect_row full 3 "PASS"
expect_row full 4 "FAIL .*no GPU with NCCL"
expect_row full 5 "PASS"
expect_report full "attention fwd bf16 causal T 1024 head 64"
expect_row full 7 "PASS"
expect_report full "sanitizer args: --tool memcheck --error-exitcode 1"
expect_report full "-tc=cuda: attention_and_backward*,cuda: tensor_core_attention_bf16*"
expect_row full 9 "PASS"
expect_row full 10 "PASS"
grep -q "==== 4 dist-nccl: FAIL" "$work/full/gpu_check.log" || fail "no step 4 in the full log"

run no_sanitizer RG_COMPUTE_SANITIZER="$work/nowhere" -- --steps 8
expect_row no_sanitizer 8 "FAIL .*compute-sanitizer not found"

run slow FAKE_DDP_SLEEP=60 RG_GPU_CHECK_BUDGET=4 -- --steps 5,6
expect_row slow 5 "FAIL \(timed out\) .*stopped at its [34] s limit"
expect_row slow 6 "NOT RUN .*no time left of the 4 s budget"

run no_nccl FAKE_NO_NCCL=1 -- --steps 1
expect_row no_nccl 1 "FAIL .*libnccl.so.2: NOT FOUND"

rm "$b/bench/ddp"
run missing -- --steps 1
expect_row missing 1 "FAIL .*bench/ddp is missing"

if ((failures)); then exit 1; fi
echo "gpu_check: an old driver, failing kernel tests (the first failing case rerun alone," \
  "launches blocking), no NCCL GPU, no compute-sanitizer, a step past its limit, the budget" \
  "spent and a missing bundle file are each reported, and the check goes on"
