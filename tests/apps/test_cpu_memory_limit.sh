#!/usr/bin/env bash
# rgtrain on the cpu under a tight virtual-memory limit (ulimit -v 262144, 256 MiB): it starts
# and trains, and never loads cuBLAS, cuBLASLt or NCCL. A CUDA build opens those at first use
# (kernels/cuda/lazy_libraries.cpp); linked the ordinary way they were mapped at start
# (libcublasLt alone is a 541 MB file) and the run failed before main. Without CUDA it passes
# trivially. A third argument `sanitized` (an ASan build reserves terabytes of shadow memory)
# leaves out the limit and keeps the check of what is loaded.
set -u
RGTRAIN=$1
RGRUN=$2  # unused: the calling convention of tests/apps
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

[ $FAILS -eq 0 ] && echo "all cpu memory limit checks passed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
