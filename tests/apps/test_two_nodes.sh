#!/usr/bin/env bash
# Two nodes on one machine: two rgrun launchers (--nnodes 2, --node-rank 0 and 1) on
# 127.0.0.1 with 2 local ranks each, world 4.
#   - rgtrain --verify trains a few DDP steps; the weights equal the single-process run on
#     the whole batch (f64: 1e-10), and both launchers exit 0;
#   - every rank reaches the rank of its own node over shared memory and the other node's
#     ranks over tcp (RG_DIST_DEBUG=1 prints each rank's links);
#   - kill -9 of a rank on either node stops both launchers, each naming that rank.
# Waits are bounded by LIMIT seconds; nothing asserts on time.
set -u
RGRUN=$1
RGTRAIN=$2
source "$(dirname "${BASH_SOURCE[0]}")/job_helpers.sh"  # TMP, FAILS, ok, bad, expect, has
export RG_DIST_TIMEOUT=8
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 2
      --eval-every 0 --warmup 2 --print-every 1 --threads 1)

# The secret both launchers share (a multi-node job refuses --rdzv-id alone).
export RG_JOB_TOKEN="two-nodes-test-$$-$RANDOM$RANDOM"
# start_nodes NAME ARGS...: both launchers in the background; outputs in $TMP/NAME.node{0,1}
start_nodes() {
  local name=$1 port node
  shift
  port=$(free_port)
  for node in 0 1; do
    RG_DIST_DEBUG=1 "$RGRUN" --nproc-per-node 2 --nnodes 2 --node-rank $node \
      --master-addr 127.0.0.1 --master-port "$port" --rdzv-id "$name-$$" -- \
      "$RGTRAIN" "${TINY[@]}" "$@" >"$TMP/$name.node$node" 2>&1 &
    NODE_PID[node]=$!
  done
}
# wait_nodes: waits for both launchers; sets NODE_RC[0], NODE_RC[1]
wait_nodes() {
  local node
  for node in 0 1; do
    wait "${NODE_PID[node]}"
    NODE_RC[node]=$?
  done
}
# The pid of global rank $2 among the children of launcher $1.
rank_of() {
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2" && { echo "$p"; return; }
  done
}
wait_line() {  # wait_line FILE TEXT: true once FILE has TEXT, false after LIMIT seconds
  local i
  for ((i = 0; i < LIMIT * 10; ++i)); do
    grep -qF -- "$2" "$1" && return 0
    sleep 0.1
  done
  return 1
}
cleanup_nodes() { kill -KILL "${NODE_PID[@]}" 2>/dev/null; }
trap 'cleanup_nodes; [ -n "${KEEP_TMP:-}" ] && echo "$TMP" || cleanup' EXIT

# ---- training: the same model as one process, links by node
start_nodes train --steps 3 --precision f64 --verify
wait_nodes
expect "two nodes: both launchers exit 0 (${NODE_RC[0]}, ${NODE_RC[1]})" \
  [ "${NODE_RC[0]}" = 0 -a "${NODE_RC[1]}" = 0 ]
if python3 - "$TMP/train.node0" <<'PY'; then
import re, sys
m = re.search(r"verify: max \|param difference\| = (\S+)", open(sys.argv[1]).read())
sys.exit(0 if m and float(m.group(1)) < 1e-10 else 1)
PY
  ok "two nodes: 4 ranks equal one process on the whole batch (f64)"
else bad "two nodes: --verify: $(cat "$TMP/train.node0" "$TMP/train.node1")"; fi
links_ok=1
for r in 0 1 2 3; do
  node=$((r / 2))
  want=""
  for q in 0 1 2 3; do
    if [ $q = $r ]; then kind=self; elif [ $((q / 2)) = $node ]; then kind=shm; else kind=tcp; fi
    want+="${want:+, }$q $kind"
  done
  has "$TMP/train.node$node" "[rank $r] rg-dist: rank $r of 4 (tcp): links $want" || {
    links_ok=0
    bad "rank $r's links: want '$want' in: $(grep rg-dist "$TMP/train.node$node")"
  }
done
[ $links_ok = 1 ] && ok "two nodes: shared memory within a node, tcp between the nodes"

# ---- kill -9 a rank on either node: both launchers stop, each naming it
for K in 1 2; do
  start_nodes "kill$K" --steps 100000
  wait_line "$TMP/kill$K.node0" "step 3/" || bad "kill$K: training did not start"
  node=$((K / 2))
  kill -KILL "$(rank_of "${NODE_PID[node]}" "$K")"
  wait_nodes
  other=$((1 - node))
  expect "kill -9 rank $K: its launcher exits 137" [ "${NODE_RC[node]}" = 137 ]
  expect "kill -9 rank $K: its launcher names it" \
    has "$TMP/kill$K.node$node" "rgrun: rank $K was killed by signal 9 (SIGKILL)"
  expect "kill -9 rank $K: the other node's launcher fails too (${NODE_RC[other]})" \
    [ "${NODE_RC[other]}" != 0 ]
  expect "kill -9 rank $K: the other node's launcher names it" \
    has "$TMP/kill$K.node$other" "rgrun: rank $K failed on another node"
done

echo "two nodes: $FAILS failed"
exit $FAILS
