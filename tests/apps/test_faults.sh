#!/usr/bin/env bash
# rgtrain under rgrun with real processes and injected faults. For each: rgrun's exit code,
# the rank it names, every survivor's own "rgtrain: error:" line, nothing left in /dev/shm by
# the job's ranks or in the checkpoint directory, and a --resume that then works.
#   kill -9 rank 0 / rank 1 mid-training; SIGSTOP rank 0 mid-training and before it joins;
#   SIGKILL rank 0 while it writes a checkpoint; SIGTERM to rgrun during that write;
#   ranks started with different --seed; --trace with several ranks.
# Waits are bounded by LIMIT seconds; nothing asserts on time. The faults_reworded test runs
# it with RG_TEST_REWORD_ERRORS=1: rgrun names the same ranks from the failure records.
set -u
RGRUN=$1
RGTRAIN=$2
source "$(dirname "${BASH_SOURCE[0]}")/job_helpers.sh"
export RG_DIST_TIMEOUT=8  # a stopped rank is noticed after 8 s (ample for a loaded machine)
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 12 --micro-batch 2
      --eval-every 0 --warmup 2 --print-every 1)
# the same model trained on a text file (--data)
TEXT_MODEL=(--layers 1 --heads 2 --width 16 --global-batch 12 --micro-batch 2 --context 8
            --eval-every 0 --steps 3)
all_rank_pids() { for r in "$@"; do rank_pid "$r"; done; }
finish_job() {  # waits for the job; sets RC
  wait "$JOB"
  RC=$?
  JOB=
}
# No /dev/shm segment made by these pids is left (dist names them /rg-<pid>-..., /rg-bell-<pid>-...).
shm_clean() {
  local p
  for p in "$@"; do
    if ls /dev/shm 2>/dev/null | grep -qE "^rg-(bell-)?$p-"; then return 1; fi
  done
  return 0
}
no_temp_files() { [ -z "$(find "$1" -name '*.tmp.*' 2>/dev/null)" ]; }
checkpoint_step() {
  python3 -c 'import json,struct,sys
f=open(sys.argv[1],"rb"); n=struct.unpack("<Q",f.read(8))[0]
print(json.loads(f.read(n))["__metadata__"]["step"])' "$1"
}
# resume_works DIR: --resume from DIR's checkpoint trains two more steps and leaves no temp file.
resume_works() {
  local step
  step=$(checkpoint_step "$1/ckpt.safetensors") || return 1
  "$RGRUN" --nproc-per-node 3 -- "$RGTRAIN" "${TINY[@]}" --steps 100000 --checkpoint "$1" \
    --resume --stop-after $((step + 2)) >"$TMP/resume.out" 2>&1 || { cat "$TMP/resume.out"; return 1; }
  grep -q "stopped after step $((step + 2))" "$TMP/resume.out" &&
    [ "$(checkpoint_step "$1/ckpt.safetensors")" = $((step + 2)) ] && no_temp_files "$1"
}

# ---- kill -9 rank K mid-training
for K in 0 1; do
  D="$TMP/kill$K"
  start_job "kill$K" "$RGRUN" --nproc-per-node 3 -- "$RGTRAIN" "${TINY[@]}" --steps 100000 \
    --checkpoint "$D" --checkpoint-every 3
  wait_for "step 7/" || bad "kill$K: training did not start: $(cat "$OUT")"
  PIDS=$(all_rank_pids 0 1 2)
  kill -KILL "$(rank_pid $K)"
  finish_job
  expect "kill -9 rank $K: rgrun exits 137" [ "$RC" = 137 ]
  expect "kill -9 rank $K: rgrun names rank $K" has "$OUT" "rgrun: rank $K was killed by signal 9 (SIGKILL)"
  for r in 0 1 2; do
    [ "$r" = "$K" ] && continue
    expect "kill -9 rank $K: rank $r prints its own error" has "$OUT" "[rank $r] rgtrain: error:"
  done
  # shellcheck disable=SC2086
  expect "kill -9 rank $K: no shared memory left" shm_clean $PIDS
  expect "kill -9 rank $K: --resume works, no temp file left" resume_works "$D"
done

# ---- SIGSTOP rank 0 mid-training: rank 0 is named, not a survivor that timed out
D="$TMP/stop"
start_job stop "$RGRUN" --nproc-per-node 3 -- "$RGTRAIN" "${TINY[@]}" --steps 100000 \
  --checkpoint "$D" --checkpoint-every 3
wait_for "step 7/" || bad "stop: training did not start: $(cat "$OUT")"
PIDS=$(all_rank_pids 0 1 2)
kill -STOP "$(rank_pid 0)"
finish_job
expect "SIGSTOP rank 0: rgrun exits 128+SIGSTOP" [ "$RC" = 147 ]
expect "SIGSTOP rank 0: rgrun names rank 0" has "$OUT" "rgrun: rank 0 was stopped (SIGSTOP)"
expect "SIGSTOP rank 0: no other rank is blamed" hasnt "$OUT" "rgrun: rank 2"
expect "SIGSTOP rank 0: survivors' errors name rank 0" \
  grep -qiE '^\[rank [12]\] rgtrain: error: .*rank 0' "$OUT"  # -i: RG_TEST_REWORD_ERRORS
# shellcheck disable=SC2086
expect "SIGSTOP rank 0: no shared memory left" shm_clean $PIDS
expect "SIGSTOP rank 0: --resume works, no temp file left" resume_works "$D"

# ---- SIGSTOP rank 0 before it joins the group (rendezvous)
start_job stop_rdzv "$RGRUN" --nproc-per-node 3 -- sh -c \
  '[ "$RANK" = 0 ] && kill -STOP $$; exec "$0" "$@"' "$RGTRAIN" "${TINY[@]}" --steps 5
wait_for "rgrun: rank 0 is stopped" || bad "stop in rendezvous: rank 0 did not stop"
finish_job
expect "SIGSTOP rank 0 in rendezvous: rgrun names rank 0" has "$OUT" "rgrun: rank 0 was stopped (SIGSTOP)"
expect "SIGSTOP rank 0 in rendezvous: exit 147" [ "$RC" = 147 ]
expect "SIGSTOP rank 0 in rendezvous: ranks 1 and 2 print errors" \
  eval 'has "$OUT" "[rank 1] rgtrain: error:" && has "$OUT" "[rank 2] rgtrain: error:"'

# ---- a checkpoint write interrupted: SIGKILL of rank 0, then SIGTERM to rgrun
for HOW in kill term; do
  D="$TMP/save_$HOW"
  start_job "save_$HOW" RG_TEST_HOLD_CHECKPOINT=6 "$RGRUN" --nproc-per-node 3 -- "$RGTRAIN" \
    "${TINY[@]}" --steps 100000 --checkpoint "$D" --checkpoint-every 3
  wait_for "checkpoint: holding the write of step 6" || bad "save_$HOW: no held write: $(cat "$OUT")"
  expect "save_$HOW: a temp file is being written" eval '! no_temp_files "$D"'
  PIDS=$(all_rank_pids 0 1 2)
  if [ $HOW = kill ]; then kill -KILL "$(rank_pid 0)"; else kill -TERM "$JOB"; fi
  finish_job
  if [ $HOW = kill ]; then
    expect "SIGKILL in save: rgrun names rank 0" has "$OUT" "rgrun: rank 0 was killed by signal 9"
    expect "SIGKILL in save: exit 137" [ "$RC" = 137 ]
  else
    expect "SIGTERM in save: rgrun exits 143" [ "$RC" = 143 ]
    expect "SIGTERM in save: the partial file is removed at once" no_temp_files "$D"
  fi
  expect "save_$HOW: the last whole checkpoint (step 3) is intact" \
    [ "$(checkpoint_step "$D/ckpt.safetensors")" = 3 ]
  # shellcheck disable=SC2086
  expect "save_$HOW: no shared memory left" shm_clean $PIDS
  expect "save_$HOW: --resume works, no temp file left" resume_works "$D"
done

# ---- ranks started with different settings fail before training, naming the setting
start_job seeds "$RGRUN" --nproc-per-node 3 -- sh -c \
  'exec "$0" "$@" --seed $((7 + RANK / 2))' "$RGTRAIN" "${TINY[@]}" --steps 5
finish_job
expect "different --seed: rgrun exits 2" [ "$RC" = 2 ]
expect "different --seed: the error names the flag and the ranks" \
  has "$OUT" "the ranks disagree on --seed: ranks 0, 1: 7; rank 2: 8"
expect "different --seed: no training step ran" hasnt "$OUT" "step 1/"
start_job steps "$RGRUN" --nproc-per-node 3 -- sh -c \
  'exec "$0" "$@" --steps $((5 + RANK % 2))' "$RGTRAIN" "${TINY[@]}"
finish_job
expect "different --steps: the error names the flag and the ranks" \
  eval '[ "$RC" = 2 ] && has "$OUT" "the ranks disagree on --steps: ranks 0, 2: 5; rank 1: 6"'
# same size, other bytes: only the content fingerprint can tell the two files apart
printf 'abcdefgh\n%.0s' $(seq 500) >"$TMP/data_a.txt"
printf 'hgfedcba\n%.0s' $(seq 500) >"$TMP/data_b.txt"
start_job datafiles DIR="$TMP" "$RGRUN" --nproc-per-node 3 -- sh -c \
  'exec "$0" "$@" --data "$DIR/data_$([ "$RANK" = 2 ] && echo b || echo a).txt"' \
  "$RGTRAIN" "${TEXT_MODEL[@]}"
finish_job
expect "different --data contents: the error names the file setting and rank 2" \
  eval '[ "$RC" = 2 ] && has "$OUT" "the ranks disagree on --data file" && has "$OUT" "rank 2:"'
expect "different --data contents: no training step ran" hasnt "$OUT" "step 1/"

# ---- a file only one rank cannot read: it fails, and the others at once, naming it
python3 -c 'import random; random.seed(1)
open("'"$TMP"'/text.txt", "w").write("".join(random.choice("abcdefgh \n") for _ in range(20000)))'
start_job missing DIR="$TMP" "$RGRUN" --nproc-per-node 3 -- sh -c \
  'exec "$0" "$@" --data "$([ "$RANK" = 1 ] && echo "$DIR/missing.txt" || echo "$DIR/text.txt")"' \
  "$RGTRAIN" "${TEXT_MODEL[@]}"
finish_job
expect "missing file on rank 1: rgrun exits 2, naming rank 1" \
  eval '[ "$RC" = 2 ] && has "$OUT" "rgrun: rank 1 exited with code 2"'
expect "missing file on rank 1: its own error names the file" \
  has "$OUT" "[rank 1] rgtrain: error: --data: cannot open '$TMP/missing.txt'"
# (each survivor names the peer it lost: rank 1, or rank 0 when rank 0 left first)
expect "missing file on rank 1: ranks 0 and 2 print their own errors" \
  eval 'has "$OUT" "[rank 0] rgtrain: error: " && has "$OUT" "[rank 2] rgtrain: error: "'

# ---- --trace with several ranks: one file, one process lane per rank, no temp files
mkdir -p "$TMP/trace"
"$RGRUN" --nproc-per-node 3 -- "$RGTRAIN" "${TINY[@]}" --steps 3 --trace "$TMP/trace/t.json" \
  >"$TMP/trace.out" 2>&1 || bad "trace run failed: $(cat "$TMP/trace.out")"
expect "--trace with 3 ranks: one Chrome trace with pids 0, 1, 2" python3 -c '
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
pids = sorted({e["pid"] for e in events})
names = {e["name"] for e in events}
sys.exit(0 if pids == [0, 1, 2] and "optimizer step" in names else 1)' "$TMP/trace/t.json"
expect "--trace with 3 ranks: only the trace in its directory" [ "$(ls -A "$TMP/trace")" = t.json ]

[ $FAILS -eq 0 ] && echo "all fault checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
