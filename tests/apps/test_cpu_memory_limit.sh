#!/usr/bin/env bash
# rgtrain on the cpu under a tight virtual-memory limit (ulimit -v 262144, 256 MiB): it starts
# and trains, and never loads cuBLAS, cuBLASLt or NCCL. A CUDA build opens those at first use
# (kernels/cuda/lazy_libraries.cpp); linked the ordinary way they were mapped at start
# (libcublasLt alone is a 541 MB file) and the run failed before main. Without CUDA it passes
# trivially. A third argument `sanitized` (an ASan build reserves terabytes of shadow memory)
# leaves out the limit and keeps the check of what is loaded.
set -u
RGTRAIN=$1
RGRUN=$2
MODE=${3:-plain}
source "$(dirname "$0")/job_helpers.sh"  # TMP, FAILS, ok, bad
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 4 --threads 1
      --eval-every 0 --warmup 2 --steps 2)

# Every library the dynamic loader opens, at start or by dlopen later, is a "file=" line.
LD_DEBUG=files LD_DEBUG_OUTPUT="$TMP/ld" "$RGTRAIN" "${TINY[@]}" >"$TMP/out" 2>&1 ||
  bad "cpu run (no limit): $(tail -3 "$TMP/out")"
cat "$TMP"/ld.* 2>/dev/null | grep -oE 'file=[^ ]+' | sort -u >"$TMP/loaded"
if grep -q '^file=libc\.so' "$TMP/loaded"; then
  for lib in libcublas.so libcublasLt.so libnccl.so; do
    if grep -q "^file=$lib" "$TMP/loaded"; then
      bad "a cpu run loaded $(grep "^file=$lib" "$TMP/loaded" | head -1 | cut -d= -f2)"
    else
      ok "a cpu run does not load $lib"
    fi
  done
else
  bad "LD_DEBUG=files listed no libraries (libc.so missing): the check above would prove nothing"
fi

if [ "$MODE" = sanitized ]; then
  echo "skip: ulimit -v under a sanitizer (its shadow memory alone is larger)"
else
  (ulimit -v 262144 && exec "$RGTRAIN" "${TINY[@]}") >"$TMP/limited" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    ok "rgtrain --steps 2 on the cpu under ulimit -v 262144"
  else
    bad "rgtrain under ulimit -v 262144 exited with $rc: $(tail -3 "$TMP/limited")"
  fi
fi

# Memory limits are named (core/memory_limits.h): the model-memory estimate compares with the
# smallest of RAM, RLIMIT_AS and the cgroup's limit; an allocation that fails, or a thread that
# cannot start, is one error naming the bytes (or the thread) and the limit in force; rgrun's
# last line shows the failing rank's own message.
limited() {  # limited KIB NAME PATTERN... COMMAND...: exits nonzero, its output has each PATTERN
  local kib=$1 name=$2
  shift 2
  local patterns=()
  while [ "$1" != -- ]; do patterns+=("$1"); shift; done
  shift
  (ulimit -v "$kib" && exec "$@") >"$TMP/limited" 2>&1
  local rc=$? p missing=
  for p in "${patterns[@]}"; do grep -qF -- "$p" "$TMP/limited" || missing="$missing '$p'"; done
  if [ $rc -ne 0 ] && [ -z "$missing" ]; then ok "$name: $(grep -m1 'error' "$TMP/limited")"
  else bad "$name (rc $rc, missing$missing): $(tail -c 1500 "$TMP/limited")"; fi
}
WIDE=(--layers 1 --heads 2 --width 4096 --digits 1 --global-batch 8 --micro-batch 2 --threads 1
      --eval-every 0 --steps 2)
if [ "$MODE" != sanitized ]; then
  limited 2097152 "a 4096-wide model under a 2 GiB RLIMIT_AS" \
    "rgtrain: error: the model (" "more than 3/4 of RLIMIT_AS 2 GiB, the smallest of" -- \
    "$RGTRAIN" "${WIDE[@]}"
  limited 262144 "an allocation past a 256 MiB RLIMIT_AS" \
    "rgtrain: error: cpu allocator: out of memory allocating " \
    "the limit in force: RLIMIT_AS 256 MiB" -- "$RGTRAIN" "${WIDE[@]}" --max-model-memory 100
  limited 65536 "2 ranks under a 64 MiB RLIMIT_AS" "the limit in force: RLIMIT_AS 64 MiB" \
    "rgrun: rank " "(its error: " -- "$RGRUN" --nproc-per-node 2 -- "$RGTRAIN" "${TINY[@]}"
fi

[ $FAILS -eq 0 ] && echo "all cpu memory limit checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
