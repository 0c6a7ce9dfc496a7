#!/usr/bin/env bash
# rgtrain --backend mpi under mpirun (defined only where Meson found MPI and mpirun):
#   - 4 ranks (mpirun -np 4 --oversubscribe) with --verify --precision f64 end with the
#     weights of one process trained on the whole batch, to 1e-12, and mpirun exits 0;
#   - a bad --backend value is refused naming the flag and the value;
#   - ranks started with different settings fail, naming the setting (the agreement check);
#   - kill -9 of one rank stops the whole job (mpirun exits nonzero), and mpirun's output
#     names that rank;
#   - kill -STOP of rank 1 (2 and 3 ranks, and under --zero 3): rank 0 times out naming it,
#     calls MPI_Abort, and mpirun ends every rank, the stopped one included (it used to wait
#     in MPI_Finalize for ever).
# Waits are bounded by LIMIT seconds; nothing asserts on time.
set -u
MPIRUN=$1
RGTRAIN=$2
source "$(dirname "${BASH_SOURCE[0]}")/job_helpers.sh"  # TMP, FAILS, ok, bad, expect, has
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RG_DIST_TIMEOUT=20
LIMIT=60
COMMON=(--layers 1 --heads 2 --width 16 --digits 1 --micro-batch 2 --eval-every 0 --warmup 2
        --threads 1)
TINY=("${COMMON[@]}" --global-batch 8)

# ---- 4 ranks over MPI equal one process on the whole batch
"$MPIRUN" -np 4 --oversubscribe "$RGTRAIN" --backend mpi --verify --precision f64 --steps 3 \
  --print-every 1 "${TINY[@]}" >"$TMP/verify.out" 2>&1
rc=$?
expect "mpi: mpirun -np 4 rgtrain --backend mpi --verify exits 0 ($rc)" [ "$rc" = 0 ]
if python3 - "$TMP/verify.out" <<'PY'; then
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"verify: max \|param difference\| = (\S+) \(relative \S+, world 4,", text)
sys.exit(0 if m and float(m.group(1)) <= 1e-12 else 1)
PY
  ok "mpi: 4 ranks equal one process on the whole batch (f64, <= 1e-12)"
else bad "mpi: --verify: $(cat "$TMP/verify.out")"; fi

# ---- a bad --backend names the flag and the value
"$RGTRAIN" --backend carrier-pigeon "${TINY[@]}" --steps 1 >"$TMP/bad.out" 2>&1
rc=$?
expect "mpi: --backend carrier-pigeon exits 2 ($rc)" [ "$rc" = 2 ]
expect "mpi: --backend carrier-pigeon is named" has "$TMP/bad.out" "--backend: carrier-pigeon"

# ---- ranks started with different settings (mpirun's MPMD form) fail naming the setting
"$MPIRUN" -np 1 "$RGTRAIN" --backend mpi "${TINY[@]}" --steps 2 --seed 1 : \
  -np 1 "$RGTRAIN" --backend mpi "${TINY[@]}" --steps 2 --seed 2 >"$TMP/seed.out" 2>&1
rc=$?
expect "mpi: ranks with different --seed: mpirun exits nonzero ($rc)" [ "$rc" != 0 ]
expect "mpi: ranks with different --seed: named" \
  has "$TMP/seed.out" "the ranks disagree on --seed: rank 0: 1; rank 1: 2"

# rank_of_mpi_job R: the pid of rank R among mpirun's children
rank_of_mpi_job() {
  local p
  for p in $(pgrep -P "$JOB"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
  done
}
# job_ends: true once mpirun has ended (within LIMIT seconds), false while it still runs
job_ends() {
  local i
  for ((i = 0; i < LIMIT * 10; ++i)); do
    kill -0 "$JOB" 2>/dev/null || return 0
    sleep 0.1
  done
  ! kill -0 "$JOB" 2>/dev/null
}

# ---- kill -STOP rank 1: the others time out naming it, and mpirun ends the whole job
stopped_rank_ends_job() {  # stopped_rank_ends_job NAME RANKS [RGTRAIN FLAGS...]
  local name=$1 np=$2 victim i rc p
  shift 2
  start_job "$name" RG_DIST_TIMEOUT=6 "$MPIRUN" -np "$np" --oversubscribe "$RGTRAIN" \
    --backend mpi --steps 1000000 --print-every 20 "${COMMON[@]}" --global-batch $((4 * np)) "$@"
  victim=
  wait_for "step 20/" && victim=$(rank_of_mpi_job 1)
  if [ -z "$victim" ]; then
    bad "$name: training did not start, or rank 1 not found: $(tail -c 2000 "$OUT")"
    kill -KILL "$JOB" 2>/dev/null
    return
  fi
  kill -STOP "$victim"
  if ! job_ends; then
    bad "$name: mpirun still runs $LIMIT s after rank 1 was stopped: $(tail -c 1500 "$OUT")"
    for p in $(pgrep -P "$JOB"); do kill -KILL "$p"; done
    kill -KILL "$JOB" 2>/dev/null
    return
  fi
  wait "$JOB"
  rc=$?
  expect "$name: mpirun exits nonzero ($rc)" [ "$rc" != 0 ]
  expect "$name: rank 0 names the stopped rank 1" grep -q "timed out after 6000 ms waiting for rank 1" "$OUT"
  for ((i = 0; i < 100; ++i)); do kill -0 "$victim" 2>/dev/null || break; sleep 0.1; done
  expect "$name: the stopped rank is gone too" bash -c "! kill -0 $victim 2>/dev/null"
}
LIMIT=90
stopped_rank_ends_job "stop rank 1 of 2" 2
stopped_rank_ends_job "stop rank 1 of 3" 3
stopped_rank_ends_job "stop rank 1 of 2 under --zero 3" 2 --zero 3
LIMIT=60

# ---- kill -9 one rank: mpirun stops the job and names the rank
start_job kill "$MPIRUN" -np 4 --oversubscribe "$RGTRAIN" --backend mpi --steps 1000000 \
  --print-every 20 "${TINY[@]}"
victim=
wait_for "step 20/" && victim=$(rank_of_mpi_job 2)
if [ -n "$victim" ]; then
  kill -KILL "$victim"
  if ! job_ends; then
    bad "kill -9 rank 2: mpirun still runs after $LIMIT s"
  else
    wait "$JOB"
    rc=$?
    expect "kill -9 rank 2: mpirun exits nonzero ($rc)" [ "$rc" != 0 ]
    expect "kill -9 rank 2: the output names rank 2" grep -q "rank 2 with PID" "$OUT"
  fi
else
  bad "kill -9 rank 2: training did not start, or rank 2 not found: $(tail -c 2000 "$OUT")"
fi

echo "mpi: $FAILS failed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
