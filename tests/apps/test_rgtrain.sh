#!/usr/bin/env bash
# rgtrain end to end: resume equals uninterrupted (bit for bit), and bad input fails with one
# "rgtrain: error:" line (naming the flag, file or tensor) without touching an existing
# checkpoint: bad flags, files that are not regular or too large, integer or non-finite
# weights, a checkpoint without optimizer state, a model too large for memory. Also --help,
# --trace in one process, stale temp files removed at start, and a rank without rgrun.
set -u
RGTRAIN=$1
RGRUN=$2
source "$(dirname "$0")/job_helpers.sh"  # TMP, FAILS, ok, bad
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 4 --threads 1
      --eval-every 0 --warmup 2)

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
check_bad "init metadata mismatch" --layers 1 --heads 4 --width 16 --digits 1 --steps 1 --init "$GOOD"
grep -q "n_head is 2 in the file, 4 in this run (--heads)" "$TMP/err" || bad "metadata mismatch names field, values, flag"
check_bad "resume config mismatch" --layers 1 --heads 2 --width 16 --digits 1 --steps 9 --global-batch 16 --micro-batch 4 --checkpoint "$TMP/straight" --resume
check_bad "--init /dev/zero" "${TINY[@]}" --steps 1 --init /dev/zero
grep -q "'/dev/zero' is a character device" "$TMP/err" || bad "--init /dev/zero names the file and kind"
check_bad "--data /dev/zero" "${TINY[@]}" --steps 1 --data /dev/zero
grep -q -- "--data: '/dev/zero' is a character device" "$TMP/err" || bad "--data /dev/zero names it"
check_bad "--init directory" "${TINY[@]}" --steps 1 --init "$TMP"
RG_MAX_FILE_BYTES=1000 check_bad "--init over RG_MAX_FILE_BYTES" "${TINY[@]}" --steps 1 --init "$GOOD"
grep -q "more than the limit of 1000" "$TMP/err" || bad "RG_MAX_FILE_BYTES limit named"
check_bad "--layers 1000000" --layers 1000000 --steps 1
grep -q "needs .* GiB" "$TMP/err" || bad "--layers 1000000 says how many GiB it needs"
check_bad "--max-model-memory" "${TINY[@]}" --steps 1 --max-model-memory 0.00001
check_bad "--grace is not an rgtrain flag" --grace 1
check_bad "--no-decay with an unknown kind" --no-decay biases,weights
grep -q -- "--no-decay: .*unknown kind 'weights'" "$TMP/err" || bad "--no-decay names the bad kind"
check_bad "--beta2 1" --beta2 1

# Crafted safetensors files (python3 rewrites the header or the bytes of a good checkpoint).
craft() {  # craft OUT MODE: i32 (wte's dtype says I32), nan (wpe), huge (c_fc), no-optim,
           # no-head (the tied lm_head.weight stored once), head-differs (its copy changed)
  python3 - "$GOOD" "$1" "$2" <<'PY'
import json, struct, sys
src, out, mode = sys.argv[1:]
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
w = head["transformer.wte.weight"]
b, e = head["transformer.wpe.weight"]["data_offsets"]
if mode == "i32":
    w["dtype"] = "I32"
elif mode == "nan":
    data[b:e] = struct.pack("<f", float("nan")) * ((e - b) // 4)
elif mode == "huge":  # finite, but the MLP's products overflow
    b, e = head["transformer.h.0.mlp.c_fc.weight"]["data_offsets"]
    data[b:e] = struct.pack("<f", 3e38) * ((e - b) // 4)
elif mode == "head-differs":
    b, e = head["lm_head.weight"]["data_offsets"]
    data[b:e] = struct.pack("<f", 0.5) * ((e - b) // 4)
if mode in ("no-optim", "no-head"):
    drop = "optim." if mode == "no-optim" else "lm_head.weight"
    keep = [(k, v) for k, v in head.items() if k != "__metadata__" and not k.startswith(drop)]
    new, off = bytearray(), 0
    for k, v in keep:
        b0, e0 = v["data_offsets"]
        new += data[b0:e0]
        v["data_offsets"] = [off, off + e0 - b0]
        off += e0 - b0
    head = dict(keep, __metadata__=head["__metadata__"])
    data = new
text = json.dumps(head).encode()
text += b" " * (-len(text) % 8)
open(out, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
PY
}
craft "$TMP/i32.safetensors" i32
check_bad "I32 tensor in --init" "${TINY[@]}" --steps 1 --init "$TMP/i32.safetensors"
grep -q "i32.safetensors: tensor 'transformer.wte.weight' has dtype int32" "$TMP/err" ||
  bad "I32 init names tensor, file and dtype"
craft "$TMP/nan.safetensors" nan
check_bad "NaN weights in --init" "${TINY[@]}" --steps 3 --init "$TMP/nan.safetensors"
grep -q "before step 1) (from --init '$TMP/nan.safetensors') are not finite: first non-finite parameter 'transformer.wpe.weight'" "$TMP/err" ||
  bad "NaN init names the parameter"
craft "$TMP/huge.safetensors" huge
check_bad "3e38 weights in --init" "${TINY[@]}" --steps 3 --init "$TMP/huge.safetensors"
grep -q "at step 1: loss .*nan.*first non-finite gradient" "$TMP/err" || bad "3e38 weights stop at step 1"
if "$RGTRAIN" "${TINY[@]}" --steps 2 --init "$TMP/nan.safetensors" --allow-nonfinite >"$TMP/out" 2>&1 &&
   grep -q "final loss nan" "$TMP/out"; then
  ok "--allow-nonfinite trains on"
else bad "--allow-nonfinite: $(cat "$TMP/out")"; fi
# Activation checkpointing recomputes the same kernels in the same order: the same run.
"$RGTRAIN" "${TINY[@]}" --steps 3 --checkpoint-activations >"$TMP/ckpt" 2>&1
"$RGTRAIN" "${TINY[@]}" --steps 3 >"$TMP/nockpt" 2>&1
if [ "$(grep "final loss" "$TMP/ckpt")" = "$(grep "final loss" "$TMP/nockpt")" ] &&
   grep -q "final loss [0-9]" "$TMP/ckpt"; then ok "--checkpoint-activations: the same final loss"
else bad "--checkpoint-activations: $(grep "final loss" "$TMP/ckpt" "$TMP/nockpt")"; fi
# --tf32: sim rounds f32 matmul operands to TF32 as tensor cores do, so the second step's
# loss (after one update) moves, by little.
"$RGTRAIN" "${TINY[@]}" --device sim --steps 2 --metrics "$TMP/plain.jsonl" >"$TMP/plain" 2>&1
"$RGTRAIN" "${TINY[@]}" --device sim --steps 2 --tf32 --metrics "$TMP/tf32.jsonl" >"$TMP/tf32" 2>&1
if python3 -c '
import json, sys
plain, tf32 = ([json.loads(l)["loss"] for l in open(f)] for f in sys.argv[1:])
sys.exit(0 if len(plain) == len(tf32) == 2 and plain != tf32 and
         all(abs(a - b) < 1e-2 for a, b in zip(plain, tf32)) else 1)' "$TMP/plain.jsonl" "$TMP/tf32.jsonl"
then ok "--tf32 on sim: the losses move, by less than 1e-2"
else bad "--tf32 on sim: $(cat "$TMP/plain.jsonl" "$TMP/tf32.jsonl")"; fi
craft "$TMP/nohead.safetensors" no-head
if "$RGTRAIN" "${TINY[@]}" --steps 1 --init "$TMP/nohead.safetensors" >"$TMP/out" 2>&1; then
  ok "--init from a file storing the tied weight once (no lm_head.weight)"
else bad "--init without lm_head.weight: $(cat "$TMP/out")"; fi
craft "$TMP/headdiff.safetensors" head-differs
check_bad "tied copies differ in --init" "${TINY[@]}" --steps 1 --init "$TMP/headdiff.safetensors"
grep -q "transformer.wte.weight and lm_head.weight" "$TMP/err" || bad "differing tied copies name both keys"
mkdir -p "$TMP/noopt"
craft "$TMP/noopt/ckpt.safetensors" no-optim
check_bad "--resume without optimizer state" "${TINY[@]}" --steps 8 --checkpoint "$TMP/noopt" --resume
grep -q -- "--reset-optimizer" "$TMP/err" || bad "missing optimizer state points to --reset-optimizer"
"$RGTRAIN" "${TINY[@]}" --steps 8 --checkpoint "$TMP/noopt" --resume --reset-optimizer >/dev/null 2>&1 &&
  ok "--reset-optimizer resumes" || bad "--reset-optimizer"

# Stale temp files of the checkpoint are removed at start.
touch "$TMP/straight/.ckpt.safetensors.tmp.99999.0"
"$RGTRAIN" "${TINY[@]}" --steps 6 --checkpoint "$TMP/straight" >"$TMP/out" 2>&1 || bad "rerun"
if [ ! -e "$TMP/straight/.ckpt.safetensors.tmp.99999.0" ] && grep -q "left by an interrupted save" "$TMP/out"
then ok "stale temp file removed at start"; else bad "stale temp file: $(cat "$TMP/out")"; fi
SUM=$(cksum <"$GOOD")  # the rerun wrote GOOD again: the same tensors under its own run id

# Optimizer flags: the defaults spelled out give the same run bit for bit; each flag changes it.
"$RGTRAIN" "${TINY[@]}" --steps 6 --checkpoint "$TMP/spelled" --beta1 0.9 --beta2 0.99 \
  --eps 1e-8 --weight-decay 0.1 --no-decay norms,biases >/dev/null 2>&1
if "$RGTRAIN" --compare "$GOOD" "$TMP/spelled/ckpt.safetensors" >/dev/null 2>&1; then
  ok "optimizer defaults: --beta1 0.9 --beta2 0.99 --eps 1e-8 --weight-decay 0.1 --no-decay biases,norms"
else bad "spelled-out optimizer defaults differ from the defaults"; fi
# Each flag's run must succeed and write its own checkpoint (a fresh directory): a refused
# or crashing flag, or one that wrote nothing, is a failure, not a "change".
FLAG_RUN=0
for FLAGS in "--beta1 0.8" "--beta2 0.95" "--eps 1e-4" "--no-decay biases,norms,embeddings" \
  "--no-decay none"; do
  FLAG_RUN=$((FLAG_RUN + 1))
  # shellcheck disable=SC2086
  if ! "$RGTRAIN" "${TINY[@]}" --steps 6 --checkpoint "$TMP/flag$FLAG_RUN" $FLAGS \
    >"$TMP/flag_out" 2>&1; then
    bad "$FLAGS: rgtrain failed: $(tail -3 "$TMP/flag_out")"
    continue
  fi
  "$RGTRAIN" --compare "$GOOD" "$TMP/flag$FLAG_RUN/ckpt.safetensors" >"$TMP/flag_cmp" 2>&1
  case $? in
    0) bad "$FLAGS changes nothing" ;;
    1) ok "$FLAGS changes the run" ;;
    *) bad "$FLAGS: --compare could not compare: $(cat "$TMP/flag_cmp")" ;;
  esac
done

"$RGRUN" --nproc-per-node 2 -- sh -c 'exec "$0" "$@" --no-decay biases$([ "$RANK" = 1 ] && echo ,norms)' \
  "$RGTRAIN" "${TINY[@]}" --steps 2 >"$TMP/out" 2>&1
if grep -q "the ranks disagree on --no-decay: rank 0: biases; rank 1: biases,norms" "$TMP/out"
then ok "the ranks agree on the optimizer settings before training"
else bad "ranks with different --no-decay: $(cat "$TMP/out")"; fi

# --trace in a single process, --help
"$RGTRAIN" "${TINY[@]}" --steps 2 --trace "$TMP/one.json" >/dev/null 2>&1
if python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["traceEvents"]; sys.exit(0 if any(x["name"]=="optimizer step" for x in e) else 1)' "$TMP/one.json"
then ok "--trace in one process"; else bad "--trace in one process wrote no trace"; fi
"$RGTRAIN" --help >"$TMP/help" 2>&1
if grep -q -- "--max-model-memory" "$TMP/help" && grep -q -- "--steps INT.*=1200" "$TMP/help"
then ok "--help lists flags with defaults"; else bad "--help: $(head -5 "$TMP/help")"; fi

# --save-config writes the flags as TOML; --config replays them (here: the straight run).
"$RGTRAIN" "${TINY[@]}" --steps 6 --save-config "$TMP/run.toml" >/dev/null 2>&1
"$RGTRAIN" --config "$TMP/run.toml" --checkpoint "$TMP/replay" >/dev/null 2>&1
if "$RGTRAIN" --compare "$GOOD" "$TMP/replay/ckpt.safetensors" >/dev/null 2>&1; then
  ok "--config replays --save-config's flags bit for bit"
else bad "--config replay differs"; fi

# --verify under rgrun: the 2-rank run equals the single-process reference (f32 rounding).
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 4 --verify \
  --metrics "$TMP/m.jsonl" >"$TMP/out" 2>&1
if python3 - "$TMP/out" "$TMP/m.jsonl" <<'PY'
import json, re, sys
out = open(sys.argv[1]).read()
m = re.search(r"verify: max \|param difference\| = (\S+)", out)
rows = [json.loads(line) for line in open(sys.argv[2])]
sys.exit(0 if m and float(m.group(1)) < 1e-4 and [r["step"] for r in rows] == [1, 2, 3, 4] else 1)
PY
then ok "--verify: 2 ranks equal one process; --metrics has one JSON line per step"
else bad "--verify/--metrics: $(cat "$TMP/out")"; fi

# --zero 1 under rgrun: the same final weights as plain DDP up to f32 rounding (the
# reduce-scatter sums in another order), clipping across the shards; its optimizer state is in
# one shard file per rank (resume: test_zero_checkpoint.sh), so one process without --zero
# refuses to resume it.
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 4 --clip 0.5 \
  --checkpoint "$TMP/ddp2" >"$TMP/ddp2.out" 2>&1
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 4 --clip 0.5 --zero 1 \
  --checkpoint "$TMP/zero2" >"$TMP/zero2.out" 2>&1
if grep -aq '"optim\.' "$TMP/ddp2/ckpt.safetensors" &&
   python3 "$(dirname "$0")/weights_diff.py" "$TMP/ddp2/ckpt.safetensors" \
     "$TMP/zero2/ckpt.safetensors" 0 1e-5
then ok "--zero 1 under rgrun: the checkpoint's weights equal plain DDP's (f32 rounding)"
else bad "--zero 1 differs from DDP: $(tail -3 "$TMP/zero2.out")"; fi
check_bad "--zero 1 with sgd" "${TINY[@]}" --steps 1 --zero 1 --optimizer sgd
check_bad "--resume of a --zero 1 checkpoint in one process" "${TINY[@]}" --steps 4 --zero 1 \
  --clip 0.5 --checkpoint "$TMP/zero2" --resume
grep -q "sharded into 2 files by --zero 1" "$TMP/err" || bad "names the sharded optimizer state"
check_bad "--zero 4" "${TINY[@]}" --steps 1 --zero 4
check_bad "--fsdp with --zero 1" "${TINY[@]}" --steps 1 --fsdp --zero 1

# --zero 2 under rgrun (gradients sharded too): --verify against one process in f64 to 1e-12.
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 4 --clip 0.5 --zero 2 --verify \
  --precision f64 >"$TMP/zero2v.out" 2>&1
if python3 - "$TMP/zero2v.out" <<'PY'
import re, sys
m = re.search(r"verify: max \|param difference\| = (\S+)", open(sys.argv[1]).read())
sys.exit(0 if m and float(m.group(1)) <= 1e-12 else 1)
PY
then ok "--zero 2 under rgrun: --verify equals one process (f64, <= 1e-12)"
else bad "--zero 2 --verify: $(tail -3 "$TMP/zero2v.out")"; fi

# --zero 3 (FSDP) under rgrun: --verify against one process in f64 to 1e-12, with 2
# micro-batches per rank (no_sync accumulation), with the blocks kept after forward too, and
# with activation checkpointing (the recomputation gathers each block again).
ACCUM2=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 2 --threads 1
        --eval-every 0 --warmup 2)
for extra in "--fsdp-reshard-after-forward true" "--fsdp-reshard-after-forward false" \
  "--checkpoint-activations"; do
  # shellcheck disable=SC2086  # $extra is two words or one
  "$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${ACCUM2[@]}" --steps 4 --clip 0.5 --zero 3 --verify \
    $extra --precision f64 >"$TMP/zero3v.out" 2>&1
  # The weights after step 1, gathered from the shards for --verify's per-step line, agree too.
  if python3 - "$TMP/zero3v.out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"verify: max \|param difference\| = (\S+)", text)
first = re.search(r"verify: after step 1: max \|param difference\| = (\S+)", text)
sys.exit(0 if m and first and max(float(m.group(1)), float(first.group(1))) <= 1e-12 else 1)
PY
  then ok "--zero 3 $extra under rgrun: --verify equals one process after step 1 and at the end (f64, <= 1e-12)"
  else bad "--zero 3 --verify: $(tail -3 "$TMP/zero3v.out")"; fi
done

# --zero 3 --trace: each block's all-gather and reduce-scatter on the comm lane, and the
# second block's all-gather (prefetched as the first block starts) overlapping the first
# block's forward on the compute lane of the same rank: it was issued before that forward
# began, so this holds by program order, not by timing.
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" --layers 2 --heads 2 --width 16 --digits 1 \
  --global-batch 8 --micro-batch 2 --threads 1 --eval-every 0 --steps 2 --zero 3 \
  --trace "$TMP/z3.json" >"$TMP/z3trace.out" 2>&1
if python3 - "$TMP/z3.json" <<'PY'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
def spans(name):
    return [e for e in events if e["name"] == name and e["pid"] == 0]
forwards, gathers = spans("forward transformer.h.0"), spans("all-gather transformer.h.1")
overlap = any(g["ts"] <= f["ts"] < g["ts"] + g["dur"] or f["ts"] <= g["ts"] < f["ts"] + f["dur"]
              for f in forwards for g in gathers)
ok = forwards and overlap and spans("reduce-scatter transformer.h.0") and spans("backward transformer.h.1")
sys.exit(0 if ok else 1)
PY
then ok "--zero 3 --trace: the prefetched all-gather of block 1 overlaps block 0's forward"
else bad "--zero 3 --trace: $(tail -3 "$TMP/z3trace.out")"; fi

# The printed and recorded loss is the global batch's mean: world 1 and 2 agree (same weights
# at step 1; later steps differ only by the rounding of the gradient average).
"$RGTRAIN" "${TINY[@]}" --steps 3 --print-every 1 --metrics "$TMP/w1.jsonl" >"$TMP/w1.out" 2>&1
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 3 --print-every 1 \
  --metrics "$TMP/w2.jsonl" >"$TMP/w2.out" 2>&1
if python3 - "$TMP/w1.out" "$TMP/w2.out" "$TMP/w1.jsonl" "$TMP/w2.jsonl" <<'PY'
import json, re, sys
pattern = re.compile(r"^(?:\[rank 0\] )?step \d+/3 \| loss (\S+)", re.M)
printed = [[float(x) for x in pattern.findall(open(f).read())] for f in sys.argv[1:3]]
logged = [[json.loads(line)["loss"] for line in open(f)] for f in sys.argv[3:5]]
ok = len(printed[0]) == len(printed[1]) == len(logged[0]) == len(logged[1]) == 3
ok = ok and all(abs(a - b) <= 1.5e-4 for a, b in zip(*printed))  # printed with 4 decimals
ok = ok and all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(*logged))
print("world 1:", printed[0], logged[0], "\nworld 2:", printed[1], logged[1])
sys.exit(0 if ok else 1)
PY
then ok "the printed and --metrics loss is the global mean (world 1 == world 2)"
else bad "loss differs between world 1 and 2: $(cat "$TMP/w2.out")"; fi

# --memory-report: after step 1, a table of every category in each phase. One process: the
# optimizer state appears in the optimizer phase (AdamW's moments: 2x the parameters) and no
# buckets; 2 ranks: DDP's buckets appear. The live line carries the peak.
"$RGTRAIN" "${TINY[@]}" --steps 2 --print-every 1 --memory-report >"$TMP/mem1.out" 2>&1
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}" --steps 2 --memory-report \
  >"$TMP/mem2.out" 2>&1
if python3 - "$TMP/mem1.out" "$TMP/mem2.out" <<'PY'
import re, sys
def table(path):
    rows = {}
    for line in open(path):
        m = re.match(r"^(?:\[rank 0\] )?(parameters|buffers|gradients|optimizer state|buckets|"
                     r"activations|other|total \(peak\))\s+(\S+)\s+(\S+)\s+(\S+)$", line.rstrip())
        if m: rows[m.group(1)] = [float(x) for x in m.groups()[1:]]
    return rows
one, two = table(sys.argv[1]), table(sys.argv[2])
ok = len(one) == 8 and len(two) == 8
ok = ok and one["parameters"][0] > 0 and one["activations"][0] > 0 and one["buckets"] == [0, 0, 0]
ok = ok and abs(one["optimizer state"][2] - 2 * one["parameters"][2]) <= 0.02
ok = ok and one["gradients"][1] > 0 and two["buckets"][1] > 0
ok = ok and re.search(r"\| peak \d+\.\d MiB \|", open(sys.argv[1]).read()) is not None
print(one, "\n", two)
sys.exit(0 if ok else 1)
PY
then ok "--memory-report: every category per phase; buckets only under DDP; peak on the live line"
else bad "--memory-report: $(cat "$TMP/mem1.out" "$TMP/mem2.out")"; fi

# --memory-report on a device: the allocator's line (segments, splits, fragmentation) closes
# each table; on the cpu there is none.
"$RGTRAIN" "${TINY[@]}" --device sim --steps 2 --memory-report >"$TMP/mem_sim.out" 2>&1
if [ "$(grep -cE '^allocator: reserved [0-9.]+ MiB, active [0-9.]+, allocated [0-9.]+, inactive split [0-9.]+, largest free block [0-9.]+; [1-9][0-9]* segments, [0-9]+ splits, [0-9]+ merges; fragmentation 0\.[0-9]{3}$' "$TMP/mem_sim.out")" = 2 ] &&
   ! grep -q '^allocator:' "$TMP/mem1.out"
then ok "--memory-report on sim: the allocator's segments and fragmentation after each step"
else bad "--memory-report on sim: $(cat "$TMP/mem_sim.out")"; fi

# --memory-report under --zero 1 and --zero 2 (2 ranks, one micro-batch per step, a model of
# ~1.5 MiB of gradients): stage 2 holds about half the gradient bytes in the optimizer phase (its
# shards; every .grad freed) and no bucket buffers before the first backward.
MEM=(--layers 2 --heads 4 --width 128 --digits 1 --global-batch 8 --micro-batch 4 --threads 1
     --eval-every 0 --steps 2 --memory-report)
for z in 0 1 2 3; do
  "$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${MEM[@]}" --zero $z >"$TMP/memz$z.out" 2>&1
done
if python3 - "$TMP/memz1.out" "$TMP/memz2.out" <<'PY'
import re, sys
def row(path, name):
    for line in open(path):
        m = re.match(r"^\[rank 0\] " + name + r"\s+(\S+)\s+(\S+)\s+(\S+)$", line.rstrip())
        if m: return [float(x) for x in m.groups()]
z1, z2 = [row(p, "gradients") for p in sys.argv[1:]]
buckets2 = row(sys.argv[2], "buckets")
print("gradients --zero 1", z1, "--zero 2", z2, "buckets --zero 2", buckets2)
sys.exit(0 if z1[2] > 1 and z2[2] <= 0.6 * z1[2] and buckets2[0] == 0 else 1)
PY
then ok "--memory-report: --zero 2 holds about half --zero 1's gradient bytes at 2 ranks"
else bad "--zero 2 memory report: $(cat "$TMP/memz1.out" "$TMP/memz2.out")"; fi
# --zero 3 at 2 ranks: in the optimizer phase about half plain DDP's parameter, gradient and
# optimizer-state bytes (every rank keeps its shards only), and no bucket at all.
if python3 - "$TMP/memz0.out" "$TMP/memz3.out" <<'PY'
import re, sys
def row(path, name):
    for line in open(path):
        m = re.match(r"^\[rank 0\] " + name + r"\s+(\S+)\s+(\S+)\s+(\S+)$", line.rstrip())
        if m: return [float(x) for x in m.groups()]
names = ["parameters", "gradients", "optimizer state"]
z1, z3 = [[row(p, n)[2] for n in names] for p in sys.argv[1:]]
buckets3 = row(sys.argv[2], "buckets")
print("optimizer phase", names, "DDP", z1, "--zero 3", z3, "buckets --zero 3", buckets3)
ok = all(a > 1 and b <= 0.6 * a for a, b in zip(z1, z3)) and buckets3 == [0, 0, 0]
sys.exit(0 if ok else 1)
PY
then ok "--memory-report: --zero 3 holds about half DDP's parameter, gradient and optimizer bytes at 2 ranks"
else bad "--zero 3 memory report: $(cat "$TMP/memz0.out" "$TMP/memz3.out")"; fi

# The model state's real peak (the "model state" row), in the first step and in the second
# (steady state: AdamW's moments live through backward): under --zero 3 at 2 ranks below DDP's
# in both (with 2 small blocks the gathered and in-flight buffers are most of the saving:
# 0.65 and 0.92 of DDP's here), and no more than the sum of its three categories' peaks.
if python3 - "$TMP/memz0.out" "$TMP/memz3.out" <<'PY'
import re, sys
def rows(path, name):
    out = []
    for line in open(path):
        m = re.match(r"^\[rank 0\] " + name + r"\s+(\S+)\s+(\S+)\s+(\S+)$", line.rstrip())
        if m: out.append([float(x) for x in m.groups()])
    return out
ddp, z3 = rows(sys.argv[1], "model state"), rows(sys.argv[2], "model state")
parts = [rows(sys.argv[2], n)[0] for n in ["parameters", "gradients", "optimizer state"]]
print("model state: DDP", ddp, "--zero 3", z3)
ok = len(ddp) == 2 and len(z3) == 2
ok = ok and all(max(b) < max(a) for a, b in zip(ddp, z3))
ok = ok and all(z3[0][k] <= sum(p[k] for p in parts) + 1e-9 for k in range(3))
sys.exit(0 if ok else 1)
PY
then ok "--memory-report: model state rows for steps 1 and 2, --zero 3 below DDP's"
else bad "--memory-report model state: $(cat "$TMP/memz0.out" "$TMP/memz3.out")"; fi

# --max-model-memory at 4 ranks: a 4x64 GPT (2.0e5 parameters) whose DDP run needs 0.00375 GiB
# (weights, gradients, AdamW state, buckets) is refused under a 0.0025 GiB cap, and its
# --zero 3 run (1/4 of those plus a block's gathers) trains under the same cap.
CAP=(--layers 4 --heads 4 --width 64 --digits 1 --global-batch 8 --micro-batch 2 --threads 1
     --eval-every 0 --steps 1 --max-model-memory 0.0025)
"$RGRUN" --nproc-per-node 4 -- "$RGTRAIN" "${CAP[@]}" >"$TMP/cap0.out" 2>&1
cap0=$?
"$RGRUN" --nproc-per-node 4 -- "$RGTRAIN" "${CAP[@]}" --zero 3 >"$TMP/cap3.out" 2>&1
cap3=$?
if [ $cap0 -ne 0 ] && grep -q "needs 0.00375 GiB for weights, gradients and optimizer state" \
     "$TMP/cap0.out" && [ $cap3 -eq 0 ] && grep -q "final loss" "$TMP/cap3.out"; then
  ok "--max-model-memory: the DDP run is refused at 4 ranks, the --zero 3 run trains under the same cap"
else bad "--max-model-memory with --zero 3: $(tail -2 "$TMP/cap0.out") $(tail -2 "$TMP/cap3.out")"; fi

# --memory-budget under --zero 3 (2 ranks) counts 1/2 of weights, gradients and AdamW state
# plus two gathered blocks: the budget that leaves DDP a micro-batch of 1 fits all 8.
ZBUDGET=(--layers 2 --heads 4 --width 64 --digits 1 --global-batch 16 --threads 1 --eval-every 0
         --warmup 2 --steps 2 --memory-budget 2MiB)
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${ZBUDGET[@]}" >"$TMP/zb0.out" 2>&1
"$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${ZBUDGET[@]}" --zero 3 >"$TMP/zb3.out" 2>&1
if grep -q "micro-batch 1 of 8 per rank" "$TMP/zb0.out" &&
   grep -q "micro-batch 8 of 8 per rank .*accumulation 1$" "$TMP/zb3.out" &&
   grep -q "final loss" "$TMP/zb3.out"; then
  ok "--memory-budget 2MiB at 2 ranks: micro-batch 1 under DDP, 8 under --zero 3 (which trains)"
else bad "--memory-budget with --zero 3: $(grep -h memory-budget "$TMP/zb0.out" "$TMP/zb3.out")"; fi

# --memory-budget: two budgets pick different micro-batches (8 and 2 of the 8 per rank) and give
# the same weights after 3 steps to 1e-10 in f64 (--precision f64); the run with the picked
# micro-batch equals a plain --micro-batch run bit for bit. SGD: AdamW's first steps are about
# lr * sign(gradient), which turns a rounding difference in a near-zero gradient into a step.
BUDGET=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --threads 1 --eval-every 0
        --warmup 2 --steps 3 --optimizer sgd --precision f64)
"$RGTRAIN" "${BUDGET[@]}" --memory-budget 400KiB --checkpoint "$TMP/b180" >"$TMP/b180.out" 2>&1
"$RGTRAIN" "${BUDGET[@]}" --memory-budget 144KiB --checkpoint "$TMP/b90" >"$TMP/b90.out" 2>&1
"$RGTRAIN" "${BUDGET[@]}" --micro-batch 2 --checkpoint "$TMP/m2" >/dev/null 2>&1
if grep -q "micro-batch 8 of 8 per rank .*accumulation 1$" "$TMP/b180.out" &&
   grep -q "micro-batch 2 of 8 per rank .*accumulation 4$" "$TMP/b90.out" &&
   "$RGTRAIN" --compare "$TMP/b90/ckpt.safetensors" "$TMP/m2/ckpt.safetensors" >/dev/null 2>&1 &&
   python3 "$(dirname "$0")/weights_diff.py" "$TMP/b180/ckpt.safetensors" \
     "$TMP/b90/ckpt.safetensors" 0 1e-10
then ok "--memory-budget: micro-batch 8 or 2 by budget, same weights (f64, 1e-10); equals --micro-batch 2"
else bad "--memory-budget: $(cat "$TMP/b180.out" "$TMP/b90.out")"; fi
check_bad "budget not a size" "${BUDGET[@]}" --memory-budget 2x
check_bad "budget too small" "${BUDGET[@]}" --memory-budget 1KiB

# A rank started by hand without the others prints its error (not only rank 0 does).
RANK=1 WORLD_SIZE=2 MASTER_PORT=1 RG_DIST_TIMEOUT=1 "$RGTRAIN" "${TINY[@]}" --steps 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ] && grep -q '^rgtrain: error: ' "$TMP/err"; then ok "rank 1 alone prints its error"
else bad "rank 1 alone (rc $rc): $(cat "$TMP/err")"; fi

[ $FAILS -eq 0 ] && echo "all rgtrain checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
