#!/usr/bin/env bash
# rgtrain end to end: resume equals uninterrupted (bit for bit), and bad input fails with one
# "rgtrain: error:" line without touching an existing checkpoint.
set -u
RGTRAIN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 4 --threads 1
      --eval-every 0 --warmup 2)
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; FAILS=$((FAILS + 1)); }

"$RGTRAIN" "${TINY[@]}" --steps 6 --checkpoint "$TMP/straight" >/dev/null || bad "straight run"
"$RGTRAIN" "${TINY[@]}" --steps 6 --checkpoint "$TMP/r3" --checkpoint-every 3 --stop-after 3 \
  >/dev/null 2>&1
if [ -f "$TMP/r3/ckpt.safetensors" ]; then
  "$RGTRAIN" "${TINY[@]}" --steps 6 --checkpoint "$TMP/r3" --resume >/dev/null || bad "resume"
  if "$RGTRAIN" --compare "$TMP/straight/ckpt.safetensors" "$TMP/r3/ckpt.safetensors"; then
    ok "resume == uninterrupted"
  else bad "resume differs"; fi
else bad "no step-3 checkpoint"; fi

# Bad input: each exits non-zero with exactly one line, and the good checkpoint stays.
GOOD="$TMP/straight/ckpt.safetensors"
SUM=$(cksum <"$GOOD")
printf '' >"$TMP/empty.txt"
head -c 100 "$GOOD" >"$TMP/trunc.safetensors"
head -c 1030 /dev/zero >"$TMP/bad.bin"
check_bad() {
  local name=$1
  shift
  "$RGTRAIN" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$TMP/err")
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -q '^rgtrain: error: ' "$TMP/err" &&
     [ "$(cksum <"$GOOD")" = "$SUM" ]; then
    ok "$name: $(cat "$TMP/err")"
  else
    bad "$name (rc $rc, $lines lines): $(cat "$TMP/err")"
  fi
}
check_bad "unknown flag" --bogus
check_bad "non-number" --steps abc
check_bad "negative steps" --steps -3
check_bad "indivisible batch" --global-batch 10 --micro-batch 4
check_bad "missing data" --data "$TMP/nope.txt"
check_bad "empty data" --data "$TMP/empty.txt"
check_bad "bad bin header" --data "$TMP/bad.bin"
check_bad "truncated init" "${TINY[@]}" --steps 1 --init "$TMP/trunc.safetensors" --checkpoint "$TMP/straight"
check_bad "init shape mismatch" --layers 1 --heads 2 --width 32 --digits 1 --steps 1 --init "$GOOD" --checkpoint "$TMP/straight"
check_bad "resume config mismatch" --layers 1 --heads 2 --width 16 --digits 1 --steps 9 --global-batch 16 --micro-batch 4 --checkpoint "$TMP/straight" --resume
[ $FAILS -eq 0 ] && echo "all rgtrain checks passed"
exit $FAILS
