#!/usr/bin/env bash
# rgtrain --cuda-graphs on sim: 2 eager steps, then the whole step captured once and replayed.
# The replayed run equals the eager one bit for bit -- every step's loss and gradient norm
# (clipping active: the norms are above --clip 1), and the final checkpoint byte for byte but
# for the run's id (weights, AdamW's moments and step counts; same_checkpoint.py) -- in f32, bf16 autocast and f64, with two
# micro-batches per step; and the combinations it does not support (cpu, --zero, sgd, DDP)
# are refused by name.
set -u
RGTRAIN=$1
RGRUN=$2
source "$(dirname "$0")/job_helpers.sh"  # TMP, FAILS, ok, bad

TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 4 --threads 1
  --device sim --steps 6 --print-every 1)
for precision in f32 bf16 f64; do
  "$RGTRAIN" "${TINY[@]}" --precision $precision --metrics "$TMP/e.jsonl" \
    --checkpoint "$TMP/e$precision" >"$TMP/e.out" 2>&1 || bad "eager $precision: $(cat "$TMP/e.out")"
  "$RGTRAIN" "${TINY[@]}" --precision $precision --cuda-graphs --metrics "$TMP/g.jsonl" \
    --checkpoint "$TMP/g$precision" >"$TMP/g.out" 2>&1 || bad "graphs $precision: $(cat "$TMP/g.out")"
  if python3 - "$TMP/e.jsonl" "$TMP/g.jsonl" <<'PY'
import json, sys
e, g = ([(r["loss"], r["grad_norm"]) for r in map(json.loads, open(f))] for f in sys.argv[1:])
sys.exit(0 if len(e) == len(g) == 6 and e == g and min(n for _, n in e) > 1 else 1)
PY
  then ok "--cuda-graphs $precision: 6 steps' losses and gradient norms equal eager's"
  else bad "--cuda-graphs $precision: $(cat "$TMP/e.jsonl" "$TMP/g.jsonl")"; fi
  expect "--cuda-graphs $precision: the checkpoint equals eager's byte for byte (but the run id)" \
    python3 "$(dirname "$0")/same_checkpoint.py" "$TMP/e$precision/ckpt.safetensors" \
    "$TMP/g$precision/ckpt.safetensors"
  expect "--cuda-graphs $precision: says it captured after 2 eager steps" \
    has "$TMP/g.out" "the training step is captured after 2 eager steps"
done

refused() {  # refused WORDS FLAGS...: rgtrain exits 2 naming the combination
  local words=$1
  shift
  "$RGTRAIN" --layers 1 --heads 2 --width 16 --digits 1 --steps 1 --cuda-graphs "$@" \
    >"$TMP/r.out" 2>&1
  local rc=$?
  if [ $rc -eq 2 ] && has "$TMP/r.out" "$words"; then ok "refused: $words"
  else bad "not refused ($rc): $words: $(cat "$TMP/r.out")"; fi
}
refused "--cuda-graphs needs --device sim or cuda" --device cpu
refused "--cuda-graphs with --zero 1 is not supported" --device sim --zero 1
refused "--cuda-graphs needs --optimizer adamw" --device sim --optimizer sgd
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" --layers 1 --heads 2 --width 16 --digits 1 --steps 1 \
  --device sim --cuda-graphs >"$TMP/ddp.out" 2>&1
if [ $? -ne 0 ] && has "$TMP/ddp.out" "--cuda-graphs is not supported with DDP (world 2)"; then
  ok "refused: --cuda-graphs under DDP"
else bad "not refused: --cuda-graphs under DDP: $(tail -5 "$TMP/ddp.out")"; fi

[ "$FAILS" -eq 0 ] && echo "all passed" || echo "$FAILS failed"
exit $((FAILS > 0))
