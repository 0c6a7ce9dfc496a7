#!/usr/bin/env bash
# rgtrain against hostile neighbours and values that parse but make no sense (issue 44):
#  - a second job on a checkpoint directory is refused, naming the holder's pid, and leaves
#    the first job's in-flight temp file alone; stale temp files go only when their writer is
#    gone;
#  - optimizer state of the wrong dtype or shape is refused, naming the tensor, and the good
#    checkpoint stays;
#  - outputs that are symlinks or FIFOs are written through, not replaced;
#  - nan/inf/negative/out-of-range flags and unknown or unparsable --config files are errors;
#  - ranks that disagree on a flag that changes the collectives are told which flag;
#  - ranks resuming different checkpoints are told the step, not "another rgtrain version";
#  - --save-config and --metrics write errors say why.
set -u
RGTRAIN=$1
RGRUN=$2
source "$(dirname "$0")/job_helpers.sh"  # TMP, FAILS, ok, bad, expect, start_job, wait_for
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 4 --threads 1
      --eval-every 0 --warmup 2)

# check_bad NAME EXPECTED-TEXT ARGS...: rgtrain fails with one "rgtrain: error:" line holding
# EXPECTED-TEXT.
check_bad() {
  local name=$1 want=$2
  shift 2
  "$RGTRAIN" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$? lines
  lines=$(wc -l <"$TMP/err")
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -q '^rgtrain: error: ' "$TMP/err" &&
     grep -qF -- "$want" "$TMP/err"; then
    ok "$name: $(cat "$TMP/err")"
  else
    bad "$name (rc $rc, $lines lines, want '$want'): $(cat "$TMP/err")"
  fi
}

# ---- values that parse but make no sense
check_bad "--clip nan" "--clip: 'nan' is not a finite number" "${TINY[@]}" --steps 1 --clip nan
check_bad "--clip inf" "--clip: 'inf' is not a finite number" "${TINY[@]}" --steps 1 --clip inf
check_bad "--lr nan" "--lr: 'nan'" "${TINY[@]}" --steps 1 --lr nan
check_bad "--max-model-memory nan" "--max-model-memory: 'nan'" "${TINY[@]}" --steps 1 \
  --max-model-memory nan
check_bad "--bucket-cap-mb nan" "--bucket-cap-mb: 'nan'" "${TINY[@]}" --steps 1 --bucket-cap-mb nan
check_bad "--seed -1" "--seed: '-1' is not a whole number" "${TINY[@]}" --steps 1 --seed -1
check_bad "--seed 2^64" "--seed: '18446744073709551616' is not a whole number" "${TINY[@]}" \
  --steps 1 --seed 18446744073709551616
"$RGTRAIN" "${TINY[@]}" --steps 1 --seed 18446744073709551615 >"$TMP/out" 2>&1
expect "--seed 2^64-1 is accepted" has "$TMP/out" "seed=18446744073709551615"

printf 'steps = 2\nbogus_flag = 3\n' >"$TMP/unknown.toml"
check_bad "--config with an unknown key" "--config '$TMP/unknown.toml'" "${TINY[@]}" \
  --config "$TMP/unknown.toml"
grep -qF "bogus_flag" "$TMP/err" || bad "--config names the unknown key"
head -c 3000 /dev/urandom >"$TMP/random.toml"
printf '\nsteps = 2\n' >>"$TMP/random.toml"
check_bad "--config of random bytes" "--config" "${TINY[@]}" --config "$TMP/random.toml"
check_bad "--config missing" "nope.toml" "${TINY[@]}" --config "$TMP/nope.toml"
printf 'steps = 2\n' >"$TMP/good.toml"
"$RGTRAIN" "${TINY[@]}" --config "$TMP/good.toml" >"$TMP/out" 2>&1
expect "--config with known keys is read" has "$TMP/out" "steps 0->2"

# ---- write errors say why
check_bad "--save-config into a missing directory" "No such file or directory" \
  --save-config "$TMP/no/such/dir/run.toml"
check_bad "--metrics into a missing directory" "No such file or directory" "${TINY[@]}" \
  --steps 1 --metrics "$TMP/no/such/dir/m.jsonl"

# ---- outputs that are links or FIFOs are written through them
mkdir -p "$TMP/real"
ln -s real/trace.json "$TMP/link.json"
"$RGTRAIN" "${TINY[@]}" --steps 1 --trace "$TMP/link.json" >/dev/null 2>&1
expect "--trace through a symlink: the link stays a link" test -L "$TMP/link.json"
expect "--trace through a symlink: its target holds the trace" \
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/real/trace.json"
mkfifo "$TMP/fifo"
timeout 60 cat "$TMP/fifo" >"$TMP/from_fifo" &
READER=$!
"$RGTRAIN" "${TINY[@]}" --steps 1 --trace "$TMP/fifo" >/dev/null 2>&1
kill $READER 2>/dev/null  # a reader still waiting: the FIFO was replaced
wait $READER
expect "--trace into a FIFO: the FIFO stays a FIFO" test -p "$TMP/fifo"
expect "--trace into a FIFO: the reader got the trace" has "$TMP/from_fifo" "traceEvents"

# ---- one job per checkpoint directory
D="$TMP/shared"
start_job holder RG_TEST_HOLD_CHECKPOINT=2 "$RGTRAIN" "${TINY[@]}" --steps 4 --checkpoint "$D" \
  --checkpoint-every 2
HOLDER=$JOB
if wait_for "checkpoint: holding the write of step 2"; then
  temps() { find "$D" -name '.ckpt.safetensors.tmp.*' | wc -l; }
  expect "the holder's temp file exists" [ "$(temps)" = 1 ]
  check_bad "a second job on the directory" "belongs to another running job (pid $HOLDER on" \
    "${TINY[@]}" --steps 4 --checkpoint "$D" --seed 7
  expect "the second job left the holder's temp file" [ "$(temps)" = 1 ]
  expect "the second job wrote no checkpoint" [ ! -e "$D/ckpt.safetensors" ]
  kill -TERM "$HOLDER"
  wait "$HOLDER" 2>/dev/null
  JOB=
  expect "SIGTERM removed the holder's temp file" [ "$(temps)" = 0 ]
else bad "the holder did not reach its held save: $(cat "$OUT")"; fi
# A dead writer's temp file is removed at start; a running one's is not.
sleep 300 >/dev/null 2>&1 &
LIVE=$!
sh -c 'exit 0' &
DEAD=$!
wait $DEAD
touch "$D/.ckpt.safetensors.tmp.$LIVE.0" "$D/.ckpt.safetensors.tmp.$DEAD.0"
"$RGTRAIN" "${TINY[@]}" --steps 2 --checkpoint "$D" >"$TMP/out" 2>&1 || bad "run on $D"
expect "a dead writer's temp file is removed" test ! -e "$D/.ckpt.safetensors.tmp.$DEAD.0"
expect "a running writer's temp file stays" test -e "$D/.ckpt.safetensors.tmp.$LIVE.0"
kill $LIVE
rm -f "$D/.ckpt.safetensors.tmp.$LIVE.0"

# ---- corrupted optimizer state is refused, naming the tensor; the good checkpoint stays
"$RGTRAIN" "${TINY[@]}" --steps 2 --checkpoint "$TMP/good" >/dev/null 2>&1 || bad "good run"
corrupt() {  # corrupt MODE: optim.state.3.exp_avg (16x16) stored as I32 (i32) or flat (shape)
  mkdir -p "$TMP/$1"
  python3 - "$TMP/good/ckpt.safetensors" "$TMP/$1/ckpt.safetensors" "$1" <<'PY'
import json, struct, sys
src, out, mode = sys.argv[1:]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
t = head["optim.state.3.exp_avg"]
if mode == "i32":
    t["dtype"] = "I32"
else:  # [16, 16] as [256]: the same bytes, another shape
    t["shape"] = [t["shape"][0] * t["shape"][1]]
text = json.dumps(head).encode()
text += b" " * (-len(text) % 8)
open(out, "wb").write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
PY
}
for MODE in i32 shape; do
  corrupt $MODE
  SUM=$(cksum <"$TMP/$MODE/ckpt.safetensors")
  check_bad "optimizer state: $MODE" "'optim.state.3.exp_avg' has" "${TINY[@]}" --steps 4 \
    --checkpoint "$TMP/$MODE" --resume
  expect "optimizer state: $MODE: the checkpoint is unchanged" \
    [ "$(cksum <"$TMP/$MODE/ckpt.safetensors")" = "$SUM" ]
done

# ---- ranks started by hand that disagree
# two_ranks NAME "RANK0 ARGS" "RANK1 ARGS": both ranks, outputs in $TMP/NAME.{0,1}
two_ranks() {
  local name=$1 port r
  port=$(free_port)
  for r in 0 1; do
    local extra=$2
    [ $r = 1 ] && extra=$3
    # shellcheck disable=SC2086
    RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RG_DIST_TIMEOUT=60 \
      "$RGTRAIN" "${TINY[@]}" $extra >"$TMP/$name.$r" 2>&1 &
    PIDS[r]=$!
  done
  wait "${PIDS[0]}" "${PIDS[1]}"
}
two_ranks bucket "--steps 2" "--steps 2 --bucket-cap-mb 0.001"
expect "--bucket-cap-mb disagreement is named on rank 0" has "$TMP/bucket.0" \
  "the ranks disagree on --bucket-cap-mb"
expect "--bucket-cap-mb disagreement is named on rank 1" has "$TMP/bucket.1" \
  "the ranks disagree on --bucket-cap-mb"
two_ranks view "--steps 2" "--steps 2 --grad-as-bucket-view"
expect "--grad-as-bucket-view disagreement is named" has "$TMP/view.1" \
  "the ranks disagree on --grad-as-bucket-view"
"$RGTRAIN" "${TINY[@]}" --steps 4 --checkpoint "$TMP/c2" --stop-after 2 --checkpoint-every 2 \
  >/dev/null 2>&1
"$RGTRAIN" "${TINY[@]}" --steps 4 --checkpoint "$TMP/c3" --stop-after 3 --checkpoint-every 3 \
  >/dev/null 2>&1
two_ranks dirs "--steps 4 --checkpoint $TMP/c2 --resume" "--steps 4 --checkpoint $TMP/c3 --resume"
expect "different checkpoints: the step is named" has "$TMP/dirs.0" \
  "the ranks disagree on the step of --checkpoint's ckpt.safetensors: rank 0: 2; rank 1: 3"
expect "different checkpoints: not 'another rgtrain version'" hasnt "$TMP/dirs.0" "another rgtrain"

[ $FAILS -eq 0 ] && echo "all hostile-input checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
