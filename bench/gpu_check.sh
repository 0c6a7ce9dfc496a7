#!/usr/bin/env bash
# The GPU machine's check, in one call of at most 8 minutes, from prebuilt binaries: the
# bundle scripts/gpu-bundle makes here (the GPU machine has nvcc but not the project's build
# dependencies, and no time to build). Steps, most important first, each with its own limit
# (seconds; together 450, under the 470 s budget):
#    1 environment       15  the bundle's files; nvidia-smi (GPU, driver >= 580, MIG, clocks);
#                            what bench/kernels --environment finds: the CUDA runtime and
#                            driver, the GPU, where cuBLAS/cuBLASLt/NCCL load from
#    2 kernel tests      90  every cuda kernel test against the cpu kernels; on a failure the
#                            first failing case alone again with CUDA_LAUNCH_BLOCKING=1 (the
#                            fault then names its own kernel), not the whole suite
#    3 cuda graph        20  a computation captured and replayed on cuda equals eager
#    4 dist-nccl         45  the nccl backend (its "no GPU" exit 77 is a failure here)
#    5 ddp               40  bench/ddp --device cuda: 2 nccl processes, comm and hidden share
#                            from device events
#    6 attention         35  bench/kernels --part attention: forward and backward TFLOP/s at
#                            T 1024 and 4096, head 64 and 128
#    7 GPT-2 bf16 step   90  bench/train_step at GPT-2 small's shape in bf16, eager and
#                            replayed as a CUDA graph (device events)
#    8 memcheck          40  compute-sanitizer memcheck over a subset of the kernel tests
#    9 racecheck         30  compute-sanitizer racecheck over the shared-memory kernels' tests
#   10 kernel floors     45  bench/kernels --part floors: exits 1 when a kernel misses its floor
# A step's limit is cut to what is left of the budget; a failed or timed-out step is reported
# and the check goes on. After every step $OUT/gpu_check.md (a summary table first, then each
# step's key lines and the tail of its output) and $OUT/gpu_check.log (every step's whole
# output) are rewritten, so a call cut short still returns what ran. Exit status: 0 when every
# step passed (or, in a dry run, passed or was skipped).
# --dry-run: the same steps on the sim device, at small sizes (a minute or so, no GPU; each
#   step's limit and the budget times 3, for a shared CI machine's sim, not a GPU): what
#   needs a real GPU (nvidia-smi, NCCL, compute-sanitizer) is reported SKIP with the reason,
#   and the sanitizer steps run their test subsets on sim without the sanitizer. Where no GPU
#   is, each GPU step's own command line is checked too: its test filter selects tests, its
#   bench's flags parse (the command stops at the missing device, exit 1, not 2). CI runs it
#   (tests/bench/test_gpu_check_dry_run.sh), so the check still works when a GPU session comes.
# --steps 3,7: only those steps (a rerun of what failed).
# The bundle: RG_GPU_BUNDLE (default gpu-bundle), unpacked from RG_GPU_BUNDLE.tar.gz (what a
#   session carries) where the folder is missing.
# Environment: RG_GPU_CHECK_BUDGET (470), OUT (default
#   gpu-check-report), RG_COMPUTE_SANITIZER (its path, where not on PATH or under
#   /usr/local/cuda*). NCCL from pip's nvidia-nccl-cu13 wheel is found through the python3 on
#   PATH (its site-packages' nvidia/*/lib folders go on RG_CUDA_LIBRARY_PATH).
# Usage (from the repository's root on the GPU machine): bash bench/gpu_check.sh [--dry-run]
#   [--steps LIST]; docs/gpu-check.md says how a session runs it with the device tool.
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
ONLY=""
while (($#)); do
  case $1 in
    --dry-run) DRY=1 ;;
    --steps) ONLY=,${2:?--steps needs a list, e.g. 3,7},; shift ;;
    --steps=*) ONLY=,${1#--steps=}, ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
BUNDLE=${RG_GPU_BUNDLE:-gpu-bundle}
BUDGET=${RG_GPU_CHECK_BUDGET:-470}
# A dry run's steps get DRY_SCALE times their limits (and budget): the sim device on a shared
# CI machine is no GPU (bench/ddp's 2 sim ranks take 30 s there); the table keeps the GPU's.
DRY_SCALE=3
OUT=${OUT:-gpu-check-report}
MIN_DRIVER=580
DEV=cuda
((DRY)) && DEV=sim && BUDGET=$((BUDGET * DRY_SCALE))
mkdir -p "$OUT"
START=$(date +%s)
# A session carries the bundle compressed (scripts/gpu-bundle makes both).
if [[ ! -d $BUNDLE && -f $BUNDLE.tar.gz ]]; then
  tar -xzf "$BUNDLE.tar.gz" -C "$(dirname "$BUNDLE")" && echo "unpacked $BUNDLE.tar.gz"
fi
STATUS=0
ROWS=()  # the summary table's rows
DETAILS=$(mktemp)
trap 'rm -f "$DETAILS"' EXIT
: >"$OUT/gpu_check.log"
elapsed() { echo $(($(date +%s) - START)); }

# The kernel tests each sanitizer step runs (doctest -tc filters, "DEV: " prefixed below).
MEMCHECK_TESTS='attention_and_backward*,tensor_core_attention_bf16*,softmax_and_backward*,layernorm_and_backward*,cross_entropy_and_backward*,row_kernels_match_cpu_at_every*,reduce_ops_match*,embedding_and_backward*,copy_transposes*,adamw_multi_matches*'
RACECHECK_TESTS='attention_and_backward*,tensor_core_attention_bf16*,reduce_ops_match*,row_kernels_match_cpu_at_every*,copy_transposes*,layernorm_parameter*'
# The dry run's kernel tests: a sample of every kind of kernel (the meson test `kernels`
# runs them all in CI; the dry run checks the step, not the kernels again).
DRY_KERNEL_TESTS='unary_ops_match*,binary_ops_match*,where_selects*,copy_converts*,fill_writes*,softmax_and_backward*,reduce_ops_match*,matmul_matches_cpu_on_odd*,adamw_multi_matches*,random_draws*'
# prefixed LIST: each test of the comma-separated LIST as "DEV: name".
prefixed() { sed "s/^/$DEV: /; s/,/,$DEV: /g" <<<"$1"; }

# Writes the report: the summary table, then every step's details (atomically).
publish() {
  {
    echo "# ringgrad gpu_check$( ((DRY)) && echo ' (dry run on sim)'): $(date -u +%FT%TZ)," \
      "bundle of $(cat "$BUNDLE/COMMIT" 2>/dev/null || echo '?'), tree $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
    echo "| # | step | verdict | took s | limit s | note |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "total $(elapsed) s of the ${BUDGET} s budget"
    cat "$DETAILS"
  } >"$OUT/gpu_check.md.tmp" && mv "$OUT/gpu_check.md.tmp" "$OUT/gpu_check.md"
}

# doctest_run ARGS...: the kernel tests binary; fails when the filter matched no test case.
doctest_run() {
  local log rc
  log=$(mktemp)
  "$BUNDLE/tests/kernels/test_kernels" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if grep -Eq 'test cases: +0 \|' "$log"; then
    echo "FAIL: no test case matched $*"
    rc=1
  fi
  rm -f "$log"
  return "$rc"
}

# step NUMBER NAME LIMIT KEY FUNCTION: runs FUNCTION within min(LIMIT, what is left of the
# budget), appends its output to the log, and its verdict to the table: PASS; SKIP (exit 77,
# or a "SKIP: reason" line); FAIL (exit status, or timed out). KEY: an extended regex of the
# lines worth reading in the summary (the figures).
step() {
  local num=$1 name=$2 limit=$3 key=$4 fn=$5
  [[ -z $ONLY || $ONLY == *,$num,* ]] || return 0
  local left=$((BUDGET - $(elapsed)))
  ((DRY)) && left=$((left / DRY_SCALE))
  ((limit > left)) && limit=$left
  if ((limit <= 0)); then
    STATUS=1
    ROWS+=("| $num | $name | NOT RUN | 0 | 0 | no time left of the ${BUDGET} s budget |")
    publish
    return
  fi
  local log began rc took verdict note run_limit=$limit
  ((DRY)) && run_limit=$((limit * DRY_SCALE))
  log=$(mktemp)
  began=$(date +%s)
  echo "== $num $name (limit $run_limit s)"
  timeout -k 5 "$run_limit" bash -c "$fn" >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - began))
  note=$(grep -m1 -E '^(SKIP|NOTE|FAIL): ' "$log" | cut -c1-160 | tr '|' '/')
  if ((rc == 124 || rc == 137)); then
    verdict="FAIL (timed out)"
    note="stopped at its $run_limit s limit; ${note}"
  elif ((rc == 77)) || { ((rc == 0)) && [[ $note == SKIP:* ]]; }; then
    verdict=SKIP
  elif ((rc == 0)); then
    verdict=PASS
  else
    verdict="FAIL (exit $rc)"
    [[ -n $note ]] || note=$(grep -v '^ *$' "$log" | tail -1 | cut -c1-160 | tr '|' '/')
  fi
  [[ $verdict == FAIL* || ($verdict == SKIP && $DRY == 0) ]] && STATUS=1
  echo "   $verdict in $took s${note:+: $note}"
  ROWS+=("| $num | $name | $verdict | $took | $limit | ${note#NOTE: } |")
  {
    echo
    echo "## $num $name: $verdict in $took s (limit $limit s)"
    if [[ -n $key ]] && grep -Eq "$key" "$log"; then
      echo '```'
      grep -E "$key" "$log" | head -30
      echo '```'
    fi
    echo 'last lines:'
    echo '```'
    tail -n 12 "$log"
    echo '```'
  } >>"$DETAILS"
  { echo "==== $num $name: $verdict in $took s (limit $limit s)"; cat "$log"; } >>"$OUT/gpu_check.log"
  rm -f "$log"
  publish
}

# NCCL and cuBLAS from pip's nvidia wheels of the python3 on PATH (the GPU machine has NCCL
# only there; its wheel cuBLAS is PyTorch's, tried before the toolkit's): a C++ program maps
# no site-packages, so library_search.cpp would not look there. Step 1 says which loaded.
wheel_library_dirs() {
  timeout 20 python3 -c 'import glob, os, site
dirs = []
for s in site.getsitepackages():
    for lib in ("nccl", "cublas"):
        if glob.glob(f"{s}/nvidia/{lib}/lib/lib*.so*"):
            dirs.append(f"{s}/nvidia/{lib}/lib")
print(":".join(dirs))' 2>/dev/null
}
WHEEL_DIRS=$(wheel_library_dirs)
export RG_CUDA_LIBRARY_PATH=${RG_CUDA_LIBRARY_PATH:-}${RG_CUDA_LIBRARY_PATH:+${WHEEL_DIRS:+:}}$WHEEL_DIRS

# The files the steps run (scripts/gpu-bundle's list holds them all).
BUNDLED='libringgrad.so tests/kernels/test_kernels tests/dist/test_dist_nccl bench/kernels
  bench/train_step bench/ddp'
environment() {
  local f missing=0 line major
  for f in $BUNDLED; do
    [[ -f $BUNDLE/$f ]] || { echo "FAIL: $BUNDLE/$f is missing (scripts/gpu-bundle makes it)"; missing=1; }
  done
  ((missing)) && return 1
  echo "bundle $BUNDLE: $(du -sm "$BUNDLE" | cut -f1) MiB; kernel $(uname -r); $(nproc) cores"
  echo "RG_CUDA_LIBRARY_PATH=${RG_CUDA_LIBRARY_PATH:-(empty)}"
  if ldd "$BUNDLE/libringgrad.so" | grep 'not found'; then
    echo "FAIL: libringgrad.so needs a library the loader cannot find (above)"
    return 1
  fi
  local report
  report=$("$BUNDLE/bench/kernels" --environment) || { echo "$report"; return 1; }
  echo "$report"
  if ((!DRY)) && grep -qE 'NOT FOUND|GPUs: none' <<<"$report"; then
    echo "FAIL: $(grep -m1 -E 'NOT FOUND|GPUs: none' <<<"$report" | cut -c1-120)"
    return 1
  fi
  if ! command -v nvidia-smi >/dev/null; then
    ((DRY)) && { echo "SKIP: no nvidia-smi (dry run: no GPU); the bundle's libraries load"; return 0; }
    echo "FAIL: no nvidia-smi: no GPU driver"
    return 1
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_mode,mig.mode.current,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
    --format=csv 2>&1
  line=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)
  major=$(sed -n 's/.*, \([0-9]\+\)\.[0-9.]*$/\1/p' <<<"$line")
  [[ -n $major ]] || { echo "FAIL: no usable GPU driver: nvidia-smi said: $line"; return 1; }
  ((major >= MIN_DRIVER)) || { echo "FAIL: driver $major is older than CUDA 13 needs (>= $MIN_DRIVER)"; return 1; }
  echo "NOTE: $line (driver >= $MIN_DRIVER)"
}

# A dry run's check of a GPU step's own command line, where no GPU is (with one, the dry
# run's sim commands are enough): cuda_filter_matches FILTER: the cuda kernel tests FILTER
# selects, at least one; cuda_command_parses COMMAND...: the command stops at the missing
# device (exit 1), not at its flags (exit 2).
no_gpu() { ((DRY)) && ! command -v nvidia-smi >/dev/null; }
cuda_filter_matches() {
  local pattern n total=0
  while read -r -d, pattern; do  # each pattern of the list on its own: none may go stale
    n=$("$BUNDLE/tests/kernels/test_kernels" --list-test-cases -tc="$pattern" --no-skip=true |
      sed -n 's/.*passing the current filters: //p')
    ((${n:-0} > 0)) || { echo "FAIL: the GPU's filter '$pattern' selects no test case"; return 1; }
    total=$((total + n))
  done <<<"$1,"
  echo "the GPU's filter -tc='$1' selects $total test cases, each pattern some"
}
cuda_command_parses() {
  local out rc
  out=$(timeout 60 "$@" 2>&1)
  rc=$?
  if ((rc == 2)) || grep -q -- '--help' <<<"$out"; then
    echo "FAIL: the GPU's command line does not parse: ${*#"$BUNDLE"/}: $(tail -2 <<<"$out")"
    return 1
  fi
  echo "the GPU's command line parses: ${*#"$BUNDLE"/} (exit $rc here:" \
    "$({ grep -m1 -E 'not available|failed' <<<"$out" || tail -1 <<<"$out"; } | cut -c1-100))"
}

kernel_tests() {
  if ((DRY)); then
    doctest_run -tc="$(prefixed "$DRY_KERNEL_TESTS")" --no-skip=true || return
    no_gpu && cuda_filter_matches 'cuda:*'
    return
  fi
  local log rc first
  log=$(mktemp)
  doctest_run -tc='cuda:*' --no-skip=true | tee "$log"
  rc=${PIPESTATUS[0]}
  if ((rc != 0)); then
    # A fault is sticky: the cases after the first failure fail with it. That one again,
    # alone, with every launch waiting for its kernel.
    first=$(sed -n 's/^TEST CASE: *//p' "$log" | head -1)
    if [[ -n $first ]]; then
      echo "NOTE: first failure: $first; it alone again with CUDA_LAUNCH_BLOCKING=1:"
      CUDA_LAUNCH_BLOCKING=1 timeout 30 "$BUNDLE/tests/kernels/test_kernels" -tc="$first" \
        --no-skip=true 2>&1 | tail -40
    fi
  fi
  rm -f "$log"
  return "$rc"
}

graph() {
  if ((DRY)); then
    doctest_run -tc='sim graph: a replay equals eager*' || return
    no_gpu && cuda_filter_matches 'cuda graph: *'
  else
    doctest_run -tc='cuda graph: *' --no-skip=true
  fi
}

nccl() {
  "$BUNDLE/tests/dist/test_dist_nccl"
  local rc=$?
  if ((rc == 77)); then
    ((DRY)) && { echo "SKIP: no GPU with NCCL (the test ran and exited 77)"; return 0; }
    echo "FAIL: the NCCL test found no GPU with NCCL (exit 77)"
    return 1
  fi
  return "$rc"
}

# gpu_step 'SIM COMMAND' CUDA COMMAND...: on a GPU the cuda command; in a dry run the sim one
# (the same flags at a size sim runs in seconds), then the cuda one's flags checked.
gpu_step() {
  local sim=$1
  shift
  if ((!DRY)); then
    "$@"
    return
  fi
  eval "$sim" || return
  if no_gpu; then cuda_command_parses "$@"; fi
}

ddp() {
  gpu_step '"$BUNDLE/bench/ddp" 1 8 1 --device sim --rounds 1' \
    "$BUNDLE/bench/ddp" 4 256 6 --device cuda --rounds 2
}

attention() {
  gpu_step '"$BUNDLE/bench/kernels" --part attention --device sim' \
    "$BUNDLE/bench/kernels" --part attention --device cuda
}

gpt2_step() {
  gpu_step '"$BUNDLE/bench/train_step" 1 64 2 32 1 1 1 --heads 2 --vocab 64 --bf16 --device sim --cuda-graphs' \
    "$BUNDLE/bench/train_step" 12 768 8 1024 5 1 1 --heads 12 --vocab 50257 --bf16 --device cuda \
    --cuda-graphs
}

# sanitize TOOL TESTS: compute-sanitizer's TOOL over the kernel tests TESTS; any error it
# reports fails the step. Dry run: the same tests on sim without it.
sanitize() {
  local cs=${RG_COMPUTE_SANITIZER:-}
  if ((DRY)); then
    doctest_run -tc="$(prefixed "$2")" --no-skip=true || return
    if no_gpu; then DEV=cuda cuda_filter_matches "$(DEV=cuda prefixed "$2")" || return; fi
    echo "SKIP: compute-sanitizer needs a GPU; its test subset ran on sim without it"
    return 0
  fi
  [[ -n $cs ]] || cs=$(command -v compute-sanitizer ||
    ls /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer \
      2>/dev/null | head -1)
  if [[ ! -x $cs ]]; then
    echo "FAIL: compute-sanitizer not found (RG_COMPUTE_SANITIZER, PATH, /usr/local/cuda*)"
    return 1
  fi
  "$cs" --tool "$1" --error-exitcode 1 --print-limit 20 "$BUNDLE/tests/kernels/test_kernels" \
    -tc="$(prefixed "$2")" --no-skip=true
}

floors() {
  gpu_step '"$BUNDLE/bench/kernels" --part floors --device sim' \
    "$BUNDLE/bench/kernels" --part floors --device cuda
}

export -f doctest_run prefixed environment kernel_tests graph nccl ddp attention gpt2_step \
  sanitize floors no_gpu cuda_filter_matches cuda_command_parses gpu_step
export BUNDLE BUNDLED DEV DRY MIN_DRIVER MEMCHECK_TESTS RACECHECK_TESTS DRY_KERNEL_TESTS

publish
step 1 "environment" 15 '^(GPU|cuda runtime|lib|NVIDIA|name)' environment
step 2 "kernel tests on $DEV" 90 'test cases:|first failure|ERROR' kernel_tests
step 3 "graph captured and replayed on $DEV" 20 'test cases:' graph
step 4 "dist-nccl" 45 'test cases:|skipped' nccl
step 5 "bench/ddp --device $DEV" 40 'medians|DDP,|hidden|device events|comm' ddp
step 6 "attention fwd/bwd TFLOP/s" 35 '^attention' attention
step 7 "GPT-2-shaped bf16 step, eager and graphs" 90 'eager|graph|device events|tokens/s|n_head' gpt2_step
step 8 "compute-sanitizer memcheck (subset)" 40 'ERROR SUMMARY|test cases:' 'sanitize memcheck "$MEMCHECK_TESTS"'
step 9 "compute-sanitizer racecheck (subset)" 30 'RACECHECK SUMMARY|ERROR SUMMARY|test cases:' 'sanitize racecheck "$RACECHECK_TESTS"'
step 10 "bench/kernels floors" 45 'MISSED|kernels bench|matmul' floors
echo "total $(elapsed) s: $([[ $STATUS -eq 0 ]] && echo 'ALL PASSED' || echo 'SOME STEPS FAILED'); report in $OUT/gpu_check.md"
publish
exit $STATUS
