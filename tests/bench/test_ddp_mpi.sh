#!/usr/bin/env bash
# bench/ddp --backend mpi under mpirun -np 2 (defined where MPI and mpirun were found): a tiny
# GPT's run finishes and rank 0 prints every part of the report, once (no figure is checked:
# speed is not a test).
# Usage: test_ddp_mpi.sh MPIRUN DDP
set -u
MPIRUN=$1 DDP=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$("$MPIRUN" -np 2 --oversubscribe "$DDP" 1 16 1 --backend mpi --rounds 1 2>&1)
rc=$?
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
[ "$rc" -eq 0 ] || fail "mpirun -np 2 ddp 1 16 1 --backend mpi exited $rc: $out"
for part in "== backend mpi" "world 2" "no communication (baseline)" "DDP, bucket_cap_mb 1 " \
  "all-reduce per step" "bucket_cap_mb sweep" "gradient_as_bucket_view"; do
  n=$(grep -cF -- "$part" <<<"$out")
  [ "$n" -eq 1 ] || fail "'$part' printed $n times (want once, by rank 0): $out"
done
[ "$failures" -eq 0 ] && echo "ok: bench/ddp --backend mpi" || echo "$failures failure(s)"
exit "$failures"
