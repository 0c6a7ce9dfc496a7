#!/usr/bin/env bash
# Checkpoints that know whose they are (issue 57), with rgtrain --zero 3 under rgrun:
#   - a checkpoint committed by run A is byte for byte unchanged by anything a later run B in
#     the same directory does before its own commit (B killed at rank 0 or 1, held in the write
#     of its ckpt or of its shards, or rgrun interrupted), and A resumes to the uninterrupted
#     run bit for bit;
#   - a resume refuses, naming the file, a shard of another run (another --seed, another
#     --lr), a ckpt.safetensors of another run (another --lr: the config names it; the same
#     config: its shards are not there), a shard changed after the commit, and (with the
#     shard's record rewritten to match, tamper_shard.py) an exp_avg_sq piece moved, a step of
#     1000, an inf in exp_avg_sq, an integer exp_avg;
#   - ranks that resume from different directories at the same step fail, naming the
#     checkpoint id they disagree on.
# Waits are bounded by LIMIT seconds; nothing asserts on time.
set -u
RGTRAIN=$1
RGRUN=$2
HERE=$(dirname "$0")
source "$HERE/job_helpers.sh"  # TMP, FAILS, ok, bad, expect, has, start_job, wait_for, rank_pid
BASE=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 2 --threads 1
      --eval-every 0 --warmup 2 --steps 8 --precision f64)
z3() {  # z3 FLAGS...: rgtrain --zero 3 at 2 ranks
  "$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${BASE[@]}" --zero 3 "$@"
}
shard_of() { ls "$1" | grep -E "^optim-.*-shard-$2-of-2\.safetensors$"; }  # shard_of DIR RANK
fails_with() {  # fails_with NAME PATTERN COMMAND...: nonzero exit, the error has PATTERN
  local name=$1 pattern=$2
  shift 2
  "$@" >"$TMP/fail.out" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] && grep 'rgtrain: error: ' "$TMP/fail.out" | grep -qF -- "$pattern"; then
    ok "$name: $(grep -m1 'rgtrain: error: ' "$TMP/fail.out" | cut -c1-300)"
  else bad "$name (rc $rc): $(tail -c 1500 "$TMP/fail.out")"; fi
}

z3 --checkpoint "$TMP/U" >"$TMP/U.out" 2>&1 || bad "uninterrupted run: $(tail -3 "$TMP/U.out")"
z3 --checkpoint "$TMP/A" --checkpoint-every 4 --stop-after 4 >"$TMP/A.out" 2>&1
[ -n "$(shard_of "$TMP/A" 1)" ] || bad "run A left no step-4 shards: $(ls "$TMP/A") $(tail -3 "$TMP/A.out")"
cp -a "$TMP/A" "$TMP/A.committed"

# unchanged DIR: every file of A's committed checkpoint is in DIR, byte for byte.
unchanged() {
  local f
  for f in "$TMP"/A.committed/*; do cmp -s "$f" "$1/$(basename "$f")" || return 1; done
}
# resumes_as_uninterrupted DIR: A resumed there ends bit for bit as the uninterrupted run.
resumes_as_uninterrupted() {
  z3 --checkpoint "$1" --resume >"$TMP/resume.out" 2>&1 &&
    "$RGTRAIN" --compare "$TMP/U/ckpt.safetensors" "$1/ckpt.safetensors" >/dev/null
}

# ---- a later run B (fresh, another --lr) in A's directory, stopped before its commit
later_run() {  # later_run NAME HOLD WAIT_FOR STOP: STOP is kill0, kill1 or int (SIGINT to rgrun)
  local name=$1 hold=$2 line=$3 how=$4 dir="$TMP/later_$1" i
  cp -a "$TMP/A" "$dir"
  start_job "$name" "$hold" "$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${BASE[@]}" --zero 3 \
    --lr 0.002 --checkpoint "$dir" --checkpoint-every 4
  if ! wait_for "$line"; then
    bad "$name: B did not reach its held write: $(tail -c 1500 "$OUT")"
    kill -KILL "$JOB" 2>/dev/null
  else
    case $how in
      kill0) kill -KILL "$(rank_pid 0)" ;;
      kill1) kill -KILL "$(rank_pid 1)" ;;
      int) kill -INT "$JOB" ;;
    esac
  fi
  for ((i = 0; i < LIMIT * 10; ++i)); do kill -0 "$JOB" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$JOB" 2>/dev/null && { bad "$name: rgrun still runs"; kill -KILL "$JOB"; }
  wait "$JOB" 2>/dev/null
  JOB=
  expect "$name: A's committed checkpoint is unchanged, byte for byte" unchanged "$dir"
  expect "$name: A resumes to the uninterrupted run, bit for bit" resumes_as_uninterrupted "$dir"
}
later_run "B killed at rank 0 in its ckpt write" RG_TEST_HOLD_CHECKPOINT=4 \
  "checkpoint: holding the write of step 4" kill0
later_run "B killed at rank 1 while rank 0 writes its ckpt" RG_TEST_HOLD_CHECKPOINT=4 \
  "checkpoint: holding the write of step 4" kill1
later_run "B killed at rank 1 in its shard write" RG_TEST_HOLD_SHARD=4 \
  "checkpoint: rank 1 holding the write of its shard of step 4" kill1
later_run "B's rgrun interrupted (SIGINT) in its ckpt write" RG_TEST_HOLD_CHECKPOINT=4 \
  "checkpoint: holding the write of step 4" int

# ---- files of other runs at the same step
z3 --checkpoint "$TMP/seed2" --seed 2 --checkpoint-every 4 --stop-after 4 >/dev/null 2>&1
z3 --checkpoint "$TMP/lr2" --lr 0.002 --checkpoint-every 4 --stop-after 4 >/dev/null 2>&1
z3 --checkpoint "$TMP/T" --checkpoint-every 4 --stop-after 4 >/dev/null 2>&1  # A's config again
mixed() {  # mixed NAME: a copy of A's committed checkpoint in $TMP/mixed_NAME (printed)
  cp -a "$TMP/A.committed" "$TMP/mixed_$1"
  echo "$TMP/mixed_$1"
}
for other in seed2 lr2; do
  D=$(mixed "$other")
  cp "$TMP/$other/$(shard_of "$TMP/$other" 1)" "$D/$(shard_of "$D" 1)"
  fails_with "a shard of a run with another ${other%2}" "$(shard_of "$D" 1) does not belong to" \
    z3 --checkpoint "$D" --resume
done
D=$(mixed ckpt_lr2)
cp "$TMP/lr2/ckpt.safetensors" "$D/ckpt.safetensors"
fails_with "the ckpt of a run with another --lr" "this run has '" z3 --checkpoint "$D" --resume
grep -q "lr=0.002" "$TMP/fail.out" || bad "the config's difference does not show the --lr"
D=$(mixed ckpt_T)
cp "$TMP/T/ckpt.safetensors" "$D/ckpt.safetensors"
fails_with "the ckpt of another run with the same config" "$(shard_of "$TMP/T" 0) is missing" \
  z3 --checkpoint "$D" --resume
D=$(mixed changed)
printf 'x' | dd of="$D/$(shard_of "$D" 0)" bs=1 seek=$(($(stat -c %s "$D/$(shard_of "$D" 0)") - 1)) \
  conv=notrunc 2>/dev/null
fails_with "a shard changed after the commit" "the checkpoint recorded" z3 --checkpoint "$D" --resume

# Contents that match their record: only the checks of the optimizer state see them.
tampered() {  # tampered NAME ACTION PATTERN
  local D
  D=$(mixed "$2")
  python3 "$HERE/tamper_shard.py" "$D/$(shard_of "$D" 1)" "$D/ckpt.safetensors" 1 "$2" ||
    bad "$1: tamper_shard.py failed"
  fails_with "$1" "$3" z3 --checkpoint "$D" --resume
  grep -q "$(shard_of "$D" 1)" "$TMP/fail.out" || [ "$2" = rename-exp-avg-sq ] ||
    bad "$1: the error does not name the shard file"
}
tampered "a moved exp_avg_sq piece" rename-exp-avg-sq "the saved exp_avg_sq pieces cover"
tampered "a shard's step of 1000" step-1000 "is at step 1000, but the file's metadata says optimizer_step 4"
tampered "an inf in exp_avg_sq" inf-exp-avg-sq "holds a non-finite value (inf"
tampered "an integer exp_avg" int-exp-avg "has dtype int64, this run's optimizer state is float64"

# ---- ranks resuming from different directories holding the same step
cp -a "$TMP/A.committed" "$TMP/div_0"
cp -a "$TMP/T" "$TMP/div_1"
fails_with "ranks resuming from different checkpoints" \
  "the ranks disagree on the checkpoint id of --checkpoint's ckpt.safetensors" \
  "$RGRUN" --nproc-per-node 2 -- sh -c 'exec "$0" "$@" --checkpoint "'"$TMP"'/div_$RANK"' \
  "$RGTRAIN" "${BASE[@]}" --zero 3 --resume

[ $FAILS -eq 0 ] && echo "all checkpoint identity checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
