#!/usr/bin/env bash
# Elastic restarts: rgrun --max-restarts N with rgtrain --resume auto. A rank killed mid-run
# (while rank 0 holds a checkpoint write, so the kill lands at a known step) makes rgrun start
# the job again; it resumes from the last whole checkpoint, or starts fresh when there is none,
# finishes with exit 0, and its final checkpoint (weights and optimizer state) is bit-identical
# to an uninterrupted run's. Also: --max-restarts 0 fails as before; a rank that fails every
# time uses up the restarts (each attempt with a new job token and RG_RESTART_COUNT); SIGTERM
# to rgrun never restarts; --resume auto on an empty directory starts fresh; bad values name
# the flag. Waits are bounded by LIMIT seconds; nothing asserts on time.
set -u
RGRUN=$1
RGTRAIN=$2
source "$(dirname "${BASH_SOURCE[0]}")/job_helpers.sh"
export RG_DIST_TIMEOUT=60  # no check here waits for a timeout
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 12 --micro-batch 2
      --eval-every 0 --warmup 2 --print-every 1 --checkpoint-every 2)
count() { grep -cF -- "$2" "$1"; }
finish_job() {  # waits for the job (at most LIMIT seconds, then kills it); sets RC
  local i
  for ((i = 0; i < LIMIT * 10; ++i)); do
    kill -0 "$JOB" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$JOB" 2>/dev/null
  wait "$JOB"
  RC=$?
  JOB=
}
no_temp_files() { [ -z "$(find "$1" -name '*.tmp.*' 2>/dev/null)" ]; }
checkpoint_step() {
  python3 -c 'import json,struct,sys
f=open(sys.argv[1],"rb"); n=struct.unpack("<Q",f.read(8))[0]
print(json.loads(f.read(n))["__metadata__"]["step"])' "$1"
}
same_as_reference() {  # every tensor (--compare), and the whole file but for the run's id
  "$RGTRAIN" --compare "$TMP/ref/ckpt.safetensors" "$1/ckpt.safetensors" >/dev/null &&
    python3 "$(dirname "$0")/same_checkpoint.py" "$TMP/ref/ckpt.safetensors" "$1/ckpt.safetensors"
}

# The reference: the same job, uninterrupted.
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 10 --checkpoint "$TMP/ref" \
  >"$TMP/ref.out" 2>&1 || bad "uninterrupted run failed: $(cat "$TMP/ref.out")"

# held_job NAME HOLD_STEP MAX_RESTARTS: the elastic job; on its first attempt only, rank 0
# stops inside the save of step HOLD_STEP (before the rename) until a signal ends it.
held_job() {
  start_job "$1" "$RGRUN" --nproc-per-node 2 --max-restarts "$3" -- sh -c \
    'if [ "$RG_RESTART_COUNT" = 0 ]; then export RG_TEST_HOLD_CHECKPOINT='"$2"'; fi; exec "$0" "$@"' \
    "$RGTRAIN" "${TINY[@]}" --steps 10 --checkpoint "$TMP/$1" --resume auto
  wait_for "checkpoint: holding the write of step $2" || bad "$1: no held write: $(cat "$OUT")"
}

# ---- kill -9 rank 1 mid-run (the step-4 checkpoint exists): restart, resume, same result
held_job kill1 6 2
kill -KILL "$(rank_pid 1)"
finish_job
expect "kill -9 rank 1: the job finishes with exit 0" [ "$RC" = 0 ]
expect "kill -9 rank 1: one restart line naming rank 1" \
  eval '[ "$(count "$OUT" "; restart ")" = 1 ] &&
        has "$OUT" "rgrun: rank 1 failed (was killed by signal 9 (SIGKILL)); restart 1 of 2"'
expect "kill -9 rank 1: resumed from step 4" \
  has "$OUT" "[rank 0] rgtrain: --resume auto: resuming from step 4 of $TMP/kill1/ckpt.safetensors"
expect "kill -9 rank 1: final checkpoint bit-identical to the uninterrupted run's" \
  same_as_reference "$TMP/kill1"
expect "kill -9 rank 1: no temp file left" no_temp_files "$TMP/kill1"

# ---- kill -9 rank 0 in the middle of a save: the half-written file is never resumed from
held_job kill0 6 2
kill -KILL "$(rank_pid 0)"
finish_job
expect "kill -9 rank 0 in a save: exit 0 after one restart" \
  eval '[ "$RC" = 0 ] && has "$OUT" "rgrun: rank 0 failed (was killed by signal 9 (SIGKILL)); restart 1 of 2"'
expect "kill -9 rank 0 in a save: the partial file is removed, step 4 resumed" \
  eval 'has "$OUT" "left by an interrupted save" &&
        has "$OUT" "rgtrain: --resume auto: resuming from step 4"'
expect "kill -9 rank 0 in a save: final checkpoint bit-identical" same_as_reference "$TMP/kill0"
expect "kill -9 rank 0 in a save: no temp file left" no_temp_files "$TMP/kill0"

# ---- kill -9 rank 0 in the first save, before any checkpoint exists: a fresh restart
held_job first 2 1
kill -KILL "$(rank_pid 0)"
finish_job
expect "kill before any checkpoint: exit 0, restarted fresh" \
  eval '[ "$RC" = 0 ] && has "$OUT" "restart 1 of 1" &&
        has "$OUT" "[rank 0] rgtrain: --resume auto: no checkpoint in $TMP/first, starting fresh"'
expect "kill before any checkpoint: final checkpoint bit-identical" same_as_reference "$TMP/first"

# ---- --max-restarts 0 (the default): the failure ends the job, as without the flag
held_job norestart 6 0
kill -KILL "$(rank_pid 1)"
finish_job
expect "--max-restarts 0: rgrun exits 137 naming rank 1, no restart" \
  eval '[ "$RC" = 137 ] && hasnt "$OUT" "restart 1" &&
        has "$OUT" "rgrun: rank 1 was killed by signal 9 (SIGKILL); the other ranks were stopped"'
expect "--max-restarts 0: the step-4 checkpoint is intact" \
  [ "$(checkpoint_step "$TMP/norestart/ckpt.safetensors")" = 4 ]

# ---- a rank that fails every time: the restarts run out; each attempt has a new token
start_job always "$RGRUN" --nproc-per-node 2 --max-restarts 2 -- sh -c \
  'echo "attempt=$RG_RESTART_COUNT token=$RG_JOB_TOKEN"; [ "$RANK" = 1 ] && exit 3; sleep 60'
finish_job
expect "always failing: exit 3, rank 1 named, restarts used up" \
  eval '[ "$RC" = 3 ] && has "$OUT" "rgrun: rank 1 failed (exited with code 3); restart 2 of 2" &&
        has "$OUT" "rgrun: rank 1 exited with code 3; the other ranks were stopped; no restart left (2 of 2 used)"'
expect "always failing: RG_RESTART_COUNT 0, 1, 2" \
  eval 'has "$OUT" "[rank 0] attempt=0 " && has "$OUT" "[rank 0] attempt=1 " &&
        has "$OUT" "[rank 0] attempt=2 " && hasnt "$OUT" "attempt=3"'
expect "always failing: a new job token per attempt, the same on every rank" \
  eval '[ "$(grep -o "token=[0-9a-f]*" "$OUT" | sort | uniq -c | grep -c " 2 token=")" = 3 ]'

start_job given env RG_JOB_TOKEN=given "$RGRUN" --nproc-per-node 1 --max-restarts 1 -- sh -c \
  'echo "token=$RG_JOB_TOKEN"; exit 3'
finish_job
expect "a given RG_JOB_TOKEN: attempt 1 gets it with -restart-1 appended" \
  eval '[ "$RC" = 3 ] && has "$OUT" "[rank 0] token=given" && has "$OUT" "[rank 0] token=given-restart-1"'

# ---- SIGTERM to rgrun stops the job and never restarts it
start_job term "$RGRUN" --nproc-per-node 2 --max-restarts 2 -- "$RGTRAIN" \
  "${TINY[@]}" --steps 100000 --checkpoint "$TMP/term" --resume auto
wait_for "step 3/" || bad "term: training did not start: $(cat "$OUT")"
kill -TERM "$JOB"
finish_job
expect "SIGTERM to rgrun: exit 143, no restart" \
  eval '[ "$RC" = 143 ] && hasnt "$OUT" "restart 1" && [ "$(count "$OUT" "[rank 0] rgtrain: model=")" = 1 ]'

# ---- --resume auto alone, and bad values
"$RGTRAIN" "${TINY[@]}" --threads 1 --steps 2 --checkpoint "$TMP/empty" --resume auto \
  >"$TMP/fresh.out" 2>&1
RC=$?
expect "--resume auto on an empty directory starts fresh" \
  eval '[ $RC = 0 ] && has "$TMP/fresh.out" "rgtrain: --resume auto: no checkpoint in $TMP/empty, starting fresh"'
"$RGTRAIN" "${TINY[@]}" --threads 1 --steps 4 --checkpoint "$TMP/empty" --resume \
  >"$TMP/always.out" 2>&1
RC=$?
expect "--resume alone still means always (resumes from step 2)" \
  eval '[ $RC = 0 ] && has "$TMP/always.out" "steps 2->4"'
one_error() {  # one_error OUTPUT-FILE TEXT: the program failed with one stderr line with TEXT
  [ "$(wc -l <"$1")" = 1 ] && has "$1" "$2"
}
"$RGTRAIN" --resume bogus --checkpoint "$TMP/empty" >/dev/null 2>"$TMP/err"
RC=$?
expect "--resume bogus: one error naming the flag and the value" \
  eval '[ $RC = 2 ] && one_error "$TMP/err" "rgtrain: error: --resume: '"'"'bogus'"'"' is not a mode"'
for v in -1 abc; do
  "$RGRUN" --max-restarts "$v" -- true >/dev/null 2>"$TMP/err"
  RC=$?
  expect "--max-restarts $v: one error naming the flag and the value" \
    eval '[ $RC = 2 ] && one_error "$TMP/err" "--max-restarts" && one_error "$TMP/err" "$v"'
done

[ $FAILS -eq 0 ] && echo "all elastic checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
