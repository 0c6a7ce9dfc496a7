#!/usr/bin/env bash
# bench/gpu_check.sh fails when it should, and says why in $OUT/gpu_check.md, before it
# spends any time building: with no driver (nvidia-smi missing), and with a driver older
# than CUDA 13 needs (a fake nvidia-smi); and a new enough driver passes --driver-only.
set -uo pipefail
script=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

fake_smi() {  # fake_smi DRIVER_VERSION: an nvidia-smi printing one H200 with that driver
  mkdir -p "$work/bin"
  printf '#!/bin/sh\necho "NVIDIA H200, 143771 MiB, %s"\n' "$1" >"$work/bin/nvidia-smi"
  chmod +x "$work/bin/nvidia-smi"
}
# run NAME PATH: runs the check, leaves its exit status in rc and report in $work/NAME
run() {
  OUT="$work/$1" PATH="$2" RG_GPU_BUILD="$work/build" bash "$script" "${@:3}" >"$work/$1.log" 2>&1
  rc=$?
}
expect_report() {  # expect_report NAME NEEDLE
  grep -qF -- "$2" "$work/$1/gpu_check.md" 2>/dev/null ||
    fail "$1: report lacks '$2': $(cat "$work/$1/gpu_check.md" 2>/dev/null || echo '(none)')"
}

base_path=$(dirname "$(command -v bash)"):$(dirname "$(command -v timeout)"):/usr/bin:/bin
run none "$base_path"
((rc == 1)) || fail "no driver: exit $rc, expected 1"
expect_report none "no usable GPU driver"
expect_report none "FAILED at the driver check"

fake_smi 575.57.08
run old "$work/bin:$base_path"
((rc == 1)) || fail "old driver: exit $rc, expected 1"
expect_report old "driver 575 is older than CUDA 13 needs (>= 580)"

fake_smi 580.95.05
run new "$work/bin:$base_path" --driver-only
((rc == 0)) || fail "new driver, --driver-only: exit $rc, expected 0"
expect_report new "driver 580 >= 580: ok"
expect_report new "driver only: PASSED"
[ ! -e "$work/build" ] || fail "--driver-only made a build folder"

# A full run on fake prebuilt binaries: kernel tests that fault (naming another kernel when
# launches block), a fake compute-sanitizer, the other steps passing.
pre="$work/pre"
mkdir -p "$pre/tests/kernels" "$pre/tests/dist" "$pre/bench"
: >"$pre/libringgrad.so"
printf '#!/bin/sh\nif [ "$CUDA_LAUNCH_BLOCKING" = 1 ]; then echo "illegal address in layernorm_backward"; else echo "illegal address seen at softmax"; fi\nexit 1\n' \
  >"$pre/tests/kernels/test_kernels"
for f in tests/dist/test_dist_nccl bench/kernels bench/ddp bench/train_step; do
  printf '#!/bin/sh\necho "%s ran"\n' "$f" >"$pre/$f"
done
printf '#!/bin/sh\necho "sanitizer args: $*"\n' >"$work/bin/compute-sanitizer"
chmod +x "$pre"/tests/*/* "$pre"/bench/* "$work/bin/compute-sanitizer"
full() {  # full NAME SANITIZER
  OUT="$work/$1" PATH="$work/bin:$base_path" RG_GPU_BUILD="$pre" RG_GPU_PREBUILT=1 \
    RG_COMPUTE_SANITIZER="$2" bash "$script" >"$work/$1.log" 2>&1
  rc=$?
}
full prebuilt "$work/bin/compute-sanitizer"
((rc == 1)) || fail "faulting kernel tests: exit $rc, expected 1"
expect_report prebuilt "## gpu state: PASS"
expect_report prebuilt "NVIDIA H200"
expect_report prebuilt "## kernel tests on cuda: FAIL (exit 1"
expect_report prebuilt "again with CUDA_LAUNCH_BLOCKING=1:"
expect_report prebuilt "illegal address in layernorm_backward"
expect_report prebuilt "## dist-nccl: PASS"
expect_report prebuilt "sanitizer args: --tool memcheck --error-exitcode 1"
expect_report prebuilt "## compute-sanitizer racecheck: PASS"
expect_report prebuilt "-tc=cuda:*row*,cuda:*reduce*"
expect_report prebuilt "--tool synccheck"
expect_report prebuilt "## bench/kernels (floors enforced): PASS"
expect_report prebuilt "## ddp on cuda (2 nccl processes): PASS"
expect_report prebuilt "bench/ddp ran"
expect_report prebuilt "## train_step on cuda: PASS"
expect_report prebuilt "## GPT-2 width bf16 step on cuda: PASS"
expect_report prebuilt "SOME STEPS FAILED"
full no_sanitizer "$work/nowhere/compute-sanitizer"
expect_report no_sanitizer "## compute-sanitizer memcheck: FAIL"
expect_report no_sanitizer "compute-sanitizer not found"

if ((failures)); then exit 1; fi
echo "gpu_check: fails without a driver and with an old one, passes a new one; reruns failing" \
  "kernel tests with CUDA_LAUNCH_BLOCKING=1, runs compute-sanitizer's three tools, fails without it"
