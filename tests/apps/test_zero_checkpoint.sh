#!/usr/bin/env bash
# rgtrain --zero 1 (and 2, 3) checkpoints under rgrun: each rank saves its optimizer shard beside
# ckpt.safetensors, and --resume reads them. A 2-rank run stopped after step 4 and resumed to
# step 8 equals the uninterrupted 8-step run bit for bit (weights and the shards' tensors; each
# run writes its own id into the metadata); resumed at 1 or
# 4 ranks it equals it to 1e-10 in f64 (measured ~4e-14: the sums run in another order), far
# below the ~0.5 of a resume with fresh moments. Plain checkpoints change world size too,
# unless an epoch would have another number of steps. A shard's stale temp file is removed;
# a missing or stale shard, or optimizer state of the other kind (sharded vs whole), fails
# with one line.
set -u
RGTRAIN=$1
RGRUN=$2
source "$(dirname "$0")/job_helpers.sh"  # TMP, FAILS, ok, bad
# --micro-batch 2 divides the global batch of 8 at world 1, 2 and 4.
# f64 (--precision f64): a resume at another world size sums in another order, which in f32
# AdamW amplifies to ~5e-5 in 8 steps, too close to the differences that matter.
BASE=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 2 --threads 1
      --eval-every 0 --warmup 2 --steps 8 --precision f64)
zrun() {  # zrun RANKS FLAGS...: rgtrain --zero 1 under rgrun
  local n=$1
  shift
  "$RGRUN" --nproc-per-node "$n" -- "$RGTRAIN" "${BASE[@]}" --zero 1 "$@"
}
# shard DIR STEP RANK WORLD: the path of that shard file (its name also holds the writing run's
# id: optim-<run id>-step-<S>-shard-<r>-of-<N>.safetensors), or a path that does not exist.
shard() {
  local name
  name=$(ls "$1" 2>/dev/null | grep -E "^optim-[0-9a-f]+-step-$2-shard-$3-of-$4\.safetensors\$" | head -1)
  echo "$1/${name:-no-shard-$2-$3-of-$4}"
}
# same_tensors A B: two safetensors files hold the same tensors, bit for bit (their metadata
# differ: each run writes its own id).
same_tensors() { "$RGTRAIN" --compare "$1" "$2" >/dev/null; }

# weights_differ_by A B LOW HIGH: the checkpoints' weights differ by a relative LOW..HIGH.
weights_differ_by() { python3 "$(dirname "$0")/weights_diff.py" "$@"; }

# Errors: one "rgtrain: error:" line naming the file.
fails_with() {  # fails_with NAME PATTERN COMMAND...
  local name=$1 pattern=$2
  shift 2
  "$@" >"$TMP/out" 2>&1
  local rc=$? lines
  lines=$(grep -c 'rgtrain: error: ' "$TMP/out")
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -q -- "$pattern" "$TMP/out"; then
    ok "$name: $(grep 'rgtrain: error: ' "$TMP/out")"
  else bad "$name (rc $rc, $lines error lines): $(cat "$TMP/out")"; fi
}
zrun 2 --checkpoint "$TMP/z8" >"$TMP/z8.out" 2>&1 || bad "--zero 1: 8 steps: $(tail -3 "$TMP/z8.out")"
zrun 2 --checkpoint "$TMP/z4" --checkpoint-every 4 --stop-after 4 >"$TMP/z4.out" 2>&1
if [ -f "$(shard "$TMP/z4" 4 0 2)" ] && [ -f "$(shard "$TMP/z4" 4 1 2)" ] &&
   grep -q '"zero_shards":"2"' "$TMP/z4/ckpt.safetensors"; then
  ok "--zero 1 saves one optimizer shard per rank; the ckpt records zero_shards=2"
else bad "--zero 1 shards: $(ls "$TMP/z4") $(tail -3 "$TMP/z4.out")"; fi

# Resume at 2 ranks: bit for bit, the ckpt and both shards of step 8.
cp -r "$TMP/z4" "$TMP/r2"
zrun 2 --checkpoint "$TMP/r2" --resume >"$TMP/r2.out" 2>&1 || bad "resume at 2: $(tail -3 "$TMP/r2.out")"
if "$RGTRAIN" --compare "$TMP/z8/ckpt.safetensors" "$TMP/r2/ckpt.safetensors" &&
   same_tensors "$(shard "$TMP/z8" 8 0 2)" "$(shard "$TMP/r2" 8 0 2)" &&
   same_tensors "$(shard "$TMP/z8" 8 1 2)" "$(shard "$TMP/r2" 8 1 2)" && [ ! -e "$(shard "$TMP/r2" 4 0 2)" ]; then
  ok "--zero 1 resume at 2 ranks == uninterrupted (weights and shards bit for bit; step-4 shards removed)"
else bad "--zero 1 resume at 2 ranks differs: $(ls "$TMP/r2")"; fi

# The --zero 1 checkpoint resumed with --zero 2 (gradients sharded too): the same run bit for
# bit, since stage 2 reduces and updates the same shards.
cp -r "$TMP/z4" "$TMP/s2"
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${BASE[@]}" --zero 2 --checkpoint "$TMP/s2" --resume \
  >"$TMP/s2.out" 2>&1 || bad "resume with --zero 2: $(tail -3 "$TMP/s2.out")"
if "$RGTRAIN" --compare "$TMP/z8/ckpt.safetensors" "$TMP/s2/ckpt.safetensors" &&
   same_tensors "$(shard "$TMP/z8" 8 0 2)" "$(shard "$TMP/s2" 8 0 2)" &&
   same_tensors "$(shard "$TMP/z8" 8 1 2)" "$(shard "$TMP/s2" 8 1 2)"; then
  ok "a --zero 1 checkpoint resumed with --zero 2 at 2 ranks == uninterrupted (bit for bit)"
else bad "--zero 2 resume differs: $(ls "$TMP/s2")"; fi

# --zero 3 (FSDP) checkpoints: the same shard files (FsdpAdamW saves ZeroAdamW's pieces) and
# the whole weights in ckpt.safetensors. Stopped after step 4 and resumed at 2 ranks: bit for
# bit the uninterrupted --zero 3 run; at 1 and 4 ranks, and the --zero 1 checkpoint resumed
# with --zero 3: equal to 1e-10 (f64). The uninterrupted --zero 3 run equals --zero 1's too.
z3run() {  # z3run RANKS FLAGS...: rgtrain --zero 3 under rgrun
  local n=$1
  shift
  "$RGRUN" --nproc-per-node "$n" -- "$RGTRAIN" "${BASE[@]}" --zero 3 "$@"
}
z3run 2 --checkpoint "$TMP/f8" >"$TMP/f8.out" 2>&1 || bad "--zero 3: 8 steps: $(tail -3 "$TMP/f8.out")"
z3run 2 --checkpoint "$TMP/f4" --checkpoint-every 4 --stop-after 4 >"$TMP/f4.out" 2>&1
cp -r "$TMP/f4" "$TMP/fr2"
z3run 2 --checkpoint "$TMP/fr2" --resume >"$TMP/fr2.out" 2>&1 || bad "--zero 3 resume at 2: $(tail -3 "$TMP/fr2.out")"
if [ -f "$(shard "$TMP/f4" 4 1 2)" ] &&
   "$RGTRAIN" --compare "$TMP/f8/ckpt.safetensors" "$TMP/fr2/ckpt.safetensors" &&
   same_tensors "$(shard "$TMP/f8" 8 0 2)" "$(shard "$TMP/fr2" 8 0 2)" &&
   same_tensors "$(shard "$TMP/f8" 8 1 2)" "$(shard "$TMP/fr2" 8 1 2)"; then
  ok "--zero 3 saves a shard per rank; resumed at 2 ranks == uninterrupted (bit for bit)"
else bad "--zero 3 resume at 2 ranks differs: $(ls "$TMP/fr2") $(tail -3 "$TMP/fr2.out")"; fi
for n in 1 4; do
  cp -r "$TMP/f4" "$TMP/fr$n"
  z3run $n --checkpoint "$TMP/fr$n" --resume >"$TMP/fr$n.out" 2>&1 || bad "--zero 3 resume at $n"
  if weights_differ_by "$TMP/f8/ckpt.safetensors" "$TMP/fr$n/ckpt.safetensors" 0 1e-10; then
    ok "--zero 3: the 2-rank checkpoint resumed at $n rank(s) == uninterrupted (f64, 1e-10)"
  else bad "--zero 3 resume at $n ranks: $(ls "$TMP/fr$n") $(tail -3 "$TMP/fr$n.out")"; fi
done
# The --zero 3 checkpoint's ckpt.safetensors holds the whole weights (rank 0 writes what the
# ranks gathered): one process starts from it with --init and, at learning rate 0, writes the
# same weights back, bit for bit (every tensor read; the file is plain safetensors).
"$RGTRAIN" "${BASE[@]}" --init "$TMP/f8/ckpt.safetensors" --lr 0 \
  --checkpoint "$TMP/finit" >"$TMP/finit.out" 2>&1 || bad "--init from --zero 3: $(tail -3 "$TMP/finit.out")"
if weights_differ_by "$TMP/f8/ckpt.safetensors" "$TMP/finit/ckpt.safetensors" 0 1e-300; then
  ok "--init reads the --zero 3 checkpoint's whole weights (lr 0: the same bits back)"
else bad "--init from the --zero 3 checkpoint: $(tail -3 "$TMP/finit.out")"; fi
cp -r "$TMP/z4" "$TMP/z1to3"
z3run 2 --checkpoint "$TMP/z1to3" --resume >"$TMP/z1to3.out" 2>&1 || bad "--zero 1 -> 3 resume"
if weights_differ_by "$TMP/z8/ckpt.safetensors" "$TMP/z1to3/ckpt.safetensors" 0 1e-10 &&
   weights_differ_by "$TMP/z8/ckpt.safetensors" "$TMP/f8/ckpt.safetensors" 0 1e-10; then
  ok "a --zero 1 checkpoint resumed with --zero 3 == uninterrupted --zero 1 == uninterrupted --zero 3 (f64, 1e-10)"
else bad "--zero 1 -> 3: $(tail -3 "$TMP/z1to3.out")"; fi

# Resume the 2-rank checkpoint at 1 and at 4 ranks; the shards of world 2 go after the commit.
for n in 1 4; do
  cp -r "$TMP/z4" "$TMP/r$n"
  zrun $n --checkpoint "$TMP/r$n" --resume >"$TMP/r$n.out" 2>&1 || bad "resume at $n: $(tail -3 "$TMP/r$n.out")"
  if weights_differ_by "$TMP/z8/ckpt.safetensors" "$TMP/r$n/ckpt.safetensors" 0 1e-10 &&
     [ "$(ls "$TMP/r$n" | grep -c optim-)" -eq "$n" ] && [ -f "$(shard "$TMP/r$n" 8 0 $n)" ]; then
    ok "--zero 1: the 2-rank checkpoint resumed at $n rank(s) == uninterrupted (f64, 1e-10)"
  else bad "--zero 1 resume at $n ranks: $(ls "$TMP/r$n") $(tail -3 "$TMP/r$n.out")"; fi
done

# The same world-size change without --zero: a plain 2-rank checkpoint resumed in one process.
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${BASE[@]}" --checkpoint "$TMP/p8" >/dev/null 2>&1
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${BASE[@]}" --checkpoint "$TMP/p4" --checkpoint-every 4 \
  --stop-after 4 >/dev/null 2>&1
"$RGTRAIN" "${BASE[@]}" --checkpoint "$TMP/p4" --resume >"$TMP/out" 2>&1
if grep -q "resuming a world-size-2 checkpoint at world size 1" "$TMP/out" &&
   weights_differ_by "$TMP/p8/ckpt.safetensors" "$TMP/p4/ckpt.safetensors" 0 1e-10; then
  ok "a plain 2-rank checkpoint resumed in one process == uninterrupted (f64, 1e-10)"
else bad "plain resume at another world size: $(cat "$TMP/out")"; fi

# 20000 examples in global batches of 3: 6667 steps per epoch at 3 ranks (6667 examples per
# rank, one of them padding), 6666 in one process, so the data order would differ: refused.
EPOCH=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 3 --micro-batch 1 --threads 1
       --eval-every 0 --steps 2)
"$RGRUN" --nproc-per-node 3 -- "$RGTRAIN" "${EPOCH[@]}" --checkpoint "$TMP/e3" --checkpoint-every 1 \
  --stop-after 1 >/dev/null 2>&1
fails_with "another world size with other epochs" "an epoch has 6666 steps instead of 6667" \
  "$RGTRAIN" "${EPOCH[@]}" --checkpoint "$TMP/e3" --resume

# A shard's temp file left by a killed save is removed at start.
cp -r "$TMP/z8" "$TMP/tmpfile"
STALE="$TMP/tmpfile/.$(basename "$(shard "$TMP/tmpfile" 8 1 2)").tmp.99999.0"
echo partial >"$STALE"
zrun 2 --checkpoint "$TMP/tmpfile" --resume >"$TMP/out" 2>&1
if [ ! -e "$STALE" ] && grep -q "removed $STALE" "$TMP/out"; then
  ok "a shard's stale temp file is removed at start"
else bad "stale shard temp file: $(ls -a "$TMP/tmpfile") $(cat "$TMP/out")"; fi

cp -r "$TMP/z4" "$TMP/miss"
MISSING=$(shard "$TMP/miss" 4 1 2)
rm "$MISSING"
fails_with "a missing shard" "$(basename "$MISSING") is missing" \
  zrun 1 --checkpoint "$TMP/miss" --resume
cp -r "$TMP/z4" "$TMP/stale"
STALE_SHARD=$(shard "$TMP/stale" 4 1 2)
cp "$(shard "$TMP/z8" 8 1 2)" "$STALE_SHARD"
fails_with "a shard of another step" "$(basename "$STALE_SHARD") does not belong to" \
  zrun 1 --checkpoint "$TMP/stale" --resume
fails_with "a --zero 1 checkpoint without --zero" "sharded into 2 files by --zero 1" \
  "$RGTRAIN" "${BASE[@]}" --checkpoint "$TMP/z4" --resume
"$RGTRAIN" "${BASE[@]}" --checkpoint "$TMP/plain" --checkpoint-every 4 --stop-after 4 >/dev/null 2>&1
fails_with "a whole-state checkpoint with --zero 1" "optimizer state is whole" \
  zrun 1 --checkpoint "$TMP/plain" --resume
if zrun 2 --checkpoint "$TMP/plain" --resume --reset-optimizer >"$TMP/out" 2>&1 &&
   "$RGTRAIN" "${BASE[@]}" --checkpoint "$TMP/z4" --resume --reset-optimizer >"$TMP/out" 2>&1 &&
   weights_differ_by "$TMP/z8/ckpt.safetensors" "$TMP/z4/ckpt.safetensors" 1e-2 inf; then
  ok "--reset-optimizer resumes either kind with fresh moments (which change the weights)"
else bad "--reset-optimizer: $(cat "$TMP/out")"; fi

[ $FAILS -eq 0 ] && echo "all --zero 1 checkpoint checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
