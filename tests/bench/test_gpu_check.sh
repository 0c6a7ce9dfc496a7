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

if ((failures)); then exit 1; fi
echo "gpu_check: fails without a driver and with an old one, passes a new one"
