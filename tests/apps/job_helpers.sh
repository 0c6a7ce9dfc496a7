# Shared by the tests that drive rgrun jobs in the background (test_faults.sh,
# test_elastic.sh); sourced after RGRUN/RGTRAIN are set. A temporary directory removed at
# exit (killing a job still running), check reporting that counts failures in FAILS, and a
# background job with its output file, a bounded wait for a line, the pid of a rank, and a
# free port.
TMP=$(mktemp -d)
JOB=
cleanup() {
  [ -n "$JOB" ] && kill -KILL "$JOB" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
FAILS=0
LIMIT=120  # seconds any wait may take; nothing asserts on time
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; FAILS=$((FAILS + 1)); }
expect() {  # expect NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}
has() { grep -qF -- "$2" "$1"; }
hasnt() { ! grep -qF -- "$2" "$1"; }
# start_job NAME [ENV=VALUE...] COMMAND ARGS...: in the background, output in $TMP/NAME.out
start_job() {
  local name=$1
  shift
  : >"$TMP/$name.out"  # there before the first wait_for looks
  env "$@" >"$TMP/$name.out" 2>&1 &
  JOB=$!
  OUT="$TMP/$name.out"
}
wait_for() {  # true once the job's output has $1; false when it ended or LIMIT passed first
  local i
  for ((i = 0; i < LIMIT * 10; ++i)); do
    grep -qF -- "$1" "$OUT" && return 0
    kill -0 "$JOB" 2>/dev/null || { grep -qF -- "$1" "$OUT"; return; }
    sleep 0.1
  done
  return 1
}
rank_pid() {  # the pid of rank $1 among rgrun's children (from its environment)
  local p
  for p in $(pgrep -P "$JOB"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$1" && { echo "$p"; return; }
  done
}
free_port() {  # a port free on 127.0.0.1 now
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
