#!/usr/bin/env bash
# bench/ddp --device sim: the device measurement of --device cuda (no communication against
# DDP, hidden share, host syncs per step) on 2 thread ranks on sim:0 and sim:1. A tiny run
# finishes, prints its table and medians with the clock its hidden share was measured by (the
# threads backend's collectives are on the host: its clock), and each DDP step takes one host
# synchronization (the loss read that ends it); no time is checked. --device cuda with --zero is refused.
set -uo pipefail
ddp=$1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

out=$("$ddp" 1 8 1 --device sim --rounds 1 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "ddp 1 8 1 --device sim exited $rc: $out"
for part in "device sim" "syncs/step" "medians: no communication" "hidden behind backward" \
  "(measured by host clock)" "1.00 host syncs per DDP step"; do
  grep -qF -- "$part" <<<"$out" || fail "ddp --device sim prints no '$part': $out"
done
out=$("$ddp" 1 8 1 --device cuda --zero 3 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "ddp --device cuda --zero 3 exited $rc, expected 2: $out"
grep -qF -- "--device cuda measures DDP only" <<<"$out" || fail "no reason for --zero: $out"
exit $((failures > 0))
