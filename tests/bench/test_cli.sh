#!/usr/bin/env bash
# The benches' command lines (CLI11, bench/cli.h): --help exits 0 and lists every flag or
# positional of the bench with a description and its default (`=value`, or "default:" for
# an on/off flag); a bad value exits 2 with an error naming the bench and the flag. Runs one
# benchmark, as a smoke test: bench/ddp on a tiny GPT, on threads and on tcp processes (it
# crashed on AVX-512 machines, issue 10).
# Usage: test_cli.sh OPS TRAIN_STEP KERNELS ALLREDUCE DDP SUPPORTED [SIMULATE] (paths of the
# built programs; SUPPORTED exits 77 when the CPU lacks RG_CPU_CAPABILITY: then this test is
# skipped)
set -u
ops=$1 train_step=$2 kernels=$3 allreduce=$4 ddp=$5 supported=$6 simulate=${7:-}
# 77 from SUPPORTED skips; any other failure of it (a crash) fails the test.
"$supported"
supported_rc=$?
case $supported_rc in
  0) ;;
  77) exit 77 ;;
  *) echo "FAIL: $supported exited $supported_rc (crashed?)"; exit 1 ;;
esac
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_help PROGRAM NAME...: --help exits 0 and each NAME appears on a line with a default.
expect_help() {
  local program=$1
  shift
  local out rc
  out=$("$program" --help 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || fail "$(basename "$program") --help exited $rc"
  for name in "$@"; do
    local line
    line=$(grep -E -- "^ *${name}( |,|$)" <<<"$out" | head -1)
    if [ -z "$line" ]; then
      fail "$(basename "$program") --help does not list $name"
    elif ! grep -qE '=[^ ]|default: ' <<<"$line"; then
      fail "$(basename "$program") --help shows no default for $name: $line"
    fi
  done
}

# expect_error PROGRAM NEEDLE ARGS...: exits 2, stderr names the program and contains NEEDLE.
expect_error() {
  local program=$1 needle=$2
  shift 2
  local err rc
  err=$("$program" "$@" 2>&1 >/dev/null)
  rc=$?
  local name
  name=$(basename "$program")
  [ "$rc" -eq 2 ] || fail "$name $* exited $rc, expected 2"
  grep -qF -- "$name: " <<<"$err" || fail "$name $*: error does not name the bench: $err"
  grep -qF -- "$needle" <<<"$err" || fail "$name $*: error does not mention '$needle': $err"
}

"$ops" --help | grep -q "ops: CPU op dispatch latency" || fail "ops --help has no description"
expect_error "$ops" "--bogus" --bogus

expect_help "$train_step" n_layer n_embd batch seq steps threads step_only
expect_error "$train_step" "n_layer" 0
expect_error "$train_step" "step_only" 2 128 8 64 10 1 3
expect_error "$train_step" "multiple of --heads 4" 2 130
expect_error "$train_step" "multiple of --heads 12" 2 128 --heads 12
expect_help "$train_step" --heads --vocab --bf16 --cuda-graphs
# GPT-2's step as the GPU check runs it (--heads, --vocab, --bf16, graphs, event timing),
# shrunk for sim: head size 64, so bf16 attention takes the tensor-core kernel.
out=$("$train_step" 1 128 2 16 1 1 1 --device sim --heads 2 --vocab 40 --bf16 --cuda-graphs 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "train_step --bf16 --cuda-graphs on sim exited $rc: $out"
for needle in "n_head=2 vocab=40 (bf16 autocast)" "host synchronizations per step on sim: 1.0" \
  "graph: replayed step" "(device events, medians)"; do
  grep -qF -- "$needle" <<<"$out" || fail "train_step --bf16 --cuda-graphs on sim: no '$needle': $out"
done

expect_help "$kernels" --device --quick --part --environment
expect_error "$kernels" "--device" --device tpu
expect_error "$kernels" "--part" --part everything
# On sim (figures meaningless) the bench runs every kernel and prints the floors a cuda run
# enforces, without enforcing them.
kernels_out=$("$kernels" --device sim 2>&1)
kernels_rc=$?
[ "$kernels_rc" -eq 0 ] || fail "kernels --device sim exited $kernels_rc: $kernels_out"
for part in "adamw .* floor 0.70$" "softmax rows of 1024 .* floor 0.50$" \
  "matmul 128^3 f32: .* floor 0.90 x raw cuBLAS" "floors: printed, enforced on cuda only" \
  "^attention fwd bf16 causal T 64 head 64 x1: .* TFLOP/s" \
  "^attention bwd bf16 causal T 128 head 128 x1: .* TFLOP/s"; do
  grep -q -- "$part" <<<"$kernels_out" || fail "kernels --device sim prints no line matching '$part'"
done
# --part: one table (bench/gpu_check.sh times them as separate steps); --environment: the
# CUDA runtime and libraries found, or that the build has no CUDA, and nothing else.
out=$("$kernels" --device sim --part attention 2>&1)
grep -q "^attention fwd" <<<"$out" && ! grep -q "floor" <<<"$out" ||
  fail "kernels --part attention: not the attention table alone: $out"
out=$("$kernels" --device sim --part floors 2>&1)
grep -q "floors: printed" <<<"$out" && ! grep -q "^attention" <<<"$out" ||
  fail "kernels --part floors: not the floors' tables alone: $out"
out=$("$kernels" --environment 2>&1)
grep -qE "^libnccl.so.[0-9]+: |built without CUDA" <<<"$out" && ! grep -q "memcpy" <<<"$out" ||
  fail "kernels --environment: $out"

expect_help "$allreduce" --backend --nproc --min-bytes --max-bytes --factor --dtype --baseline \
  --rounds
expect_error "$allreduce" "--nproc" --nproc 0
expect_error "$allreduce" "--factor" --factor 1
expect_error "$allreduce" "--max-bytes" --max-bytes 64Q
expect_error "$allreduce" "--dtype" --dtype f16
expect_error "$allreduce" "above --max-bytes" --min-bytes 1M --max-bytes 4K
expect_error "$allreduce" "--baseline" --baseline nccl
expect_error "$allreduce" "--rounds" --rounds 0
expect_error "$allreduce" "needs --backend tcp" --baseline mpi --backend threads
expect_error "$allreduce" "f32 only" --baseline mpi --backend tcp --dtype bf16
# The MPI twin (bench/allreduce_mpi) is built only where Meson finds MPI: check its command
# line when it is there (no mpirun needed), else the one-line error of --baseline mpi.
twin="$(dirname "$allreduce")/allreduce_mpi"
if [ -x "$twin" ]; then
  expect_help "$twin" --min-bytes --max-bytes --factor
  expect_error "$twin" "--factor" --factor 1
else
  expect_error "$allreduce" "was not built" --baseline mpi --backend tcp
fi

expect_help "$ddp" layers width steps --backend --bucket-cap-mb --zero --device
expect_error "$ddp" "--device" --device tpu
expect_error "$ddp" "--zero" --zero 2
expect_error "$ddp" "width" 4 abc
expect_error "$ddp" "--backend" --backend carrier-pigeon
# --backend mpi outside mpirun (or in a build without MPI) says what it needs.
(
  unset OMPI_COMM_WORLD_SIZE PMI_SIZE PMIX_RANK SLURM_PROCID
  before=$failures
  expect_error "$ddp" "--backend mpi: " --backend mpi
  exit $((failures > before))
) || failures=$((failures + 1))
expect_error "$ddp" "--bucket-cap-mb" --bucket-cap-mb 0
# Tiny runs on 2 thread ranks and on 2 forked tcp processes finish and print every part of
# their report (no figure is checked: speed is not a test).
for backend in threads tcp; do
  ddp_out=$("$ddp" 1 16 1 --backend "$backend" 2>&1)
  ddp_rc=$?
  [ "$ddp_rc" -eq 0 ] || fail "ddp 1 16 1 --backend $backend exited $ddp_rc: $ddp_out"
  for part in "== backend $backend" "no communication (baseline)" "DDP, bucket_cap_mb 1 " \
    "all-reduce per step" "bucket_cap_mb sweep" "gradient_as_bucket_view"; do
    grep -qF -- "$part" <<<"$ddp_out" || fail "ddp 1 16 1 --backend $backend prints no '$part' line"
  done
  ddp_out=$("$ddp" 1 16 1 --backend "$backend" --zero 3 --rounds 1 2>&1)
  ddp_rc=$?
  [ "$ddp_rc" -eq 0 ] || fail "ddp 1 16 1 --backend $backend --zero 3 exited $ddp_rc: $ddp_out"
  grep -qF -- "medians: DDP " <<<"$ddp_out" || fail "ddp --zero 3 --backend $backend prints no medians"
done

# bench/simulate (the model of docs/scale.md): its flags, and the GPT-2 prediction's tables.
if [ -n "$simulate" ]; then
  expect_help "$simulate" --calibration --validate --trace --nproc --predict --gpus --bucket-cap-mb \
    --fit-hosts --validate-hosts --hosts --per-host --nics
  expect_error "$simulate" "--nproc" --nproc 0
  expect_error "$simulate" "--per-host" --per-host 0
  # --validate-hosts on a bench/two_hosts.sh table: model and measured network bytes per cell.
  sim_dir=$(mktemp -d)
  tier='{"split_bytes": [], "tiers": [{"alpha_us": 10, "beta_ns_per_byte": 8, "gamma_ns_per_byte": 0.2}]}'
  echo "{\"shm\": $tier, \"net\": $tier, \"hosts_net\": $tier}" >"$sim_dir/cal.json"
  printf '%s\n' '| bytes | ring ms | two-level ms | network B: ring | network B: two-level |' \
    '|---|---|---|---|---|' '| 1024 | 0.3 | 0.2 | 3072 | 2048 |' >"$sim_dir/t.md"
  sim_out=$("$simulate" --calibration "$sim_dir/cal.json" --validate-hosts "$sim_dir/t.md" 2>&1)
  grep -q '^| 1024 | two-level | 0.200 | .* | 2048 | 2048 |$' <<<"$sim_out" ||
    fail "simulate --validate-hosts: no two-level row with 2048 network bytes: $sim_out"
  rm -rf "$sim_dir"
  sim_out=$("$simulate" --predict --gpus 8 16 2>&1)
  sim_rc=$?
  [ "$sim_rc" -eq 0 ] || fail "simulate --predict exited $sim_rc: $sim_out"
  for part in "all-reduce of all" "exposed communication" "step time, 25 MiB buckets"; do
    grep -qF -- "$part" <<<"$sim_out" || fail "simulate --predict prints no '$part' line"
  done
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "bench command lines: all checks passed"
