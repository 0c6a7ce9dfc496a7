# Shared by test_two_nodes.sh (two nodes on 127.0.0.1) and test_two_hosts.sh (two nodes in
# two network namespaces joined by a veth pair): one job of two rgrun launchers
# (--nnodes 2, --node-rank 0 and 1) with 2 local ranks each, world 4. Sourced after
# job_helpers.sh, with RGRUN, RGTRAIN and TINY set, and:
#   MASTER_ADDR   rank 0's store address, as node 0 reaches it
#   NODE_WRAP     an array of 2 strings: words run before node i's rgrun ("" on one host,
#                 "ip netns exec NS" in a namespace)
#   node_port     a function printing a free port for the store
# A multi-node rgrun needs a shared secret besides --rdzv-id.
export RG_JOB_TOKEN="two-nodes-test-$$-$RANDOM$RANDOM"

# start_nodes NAME [ENV=VALUE...] -- COMMAND ARGS...: both launchers in the background, each
# running COMMAND as its 2 ranks; outputs in $TMP/NAME.node{0,1}.
start_nodes() {
  local name=$1 port node
  shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  port=$(node_port)
  for node in 0 1; do
    ${NODE_WRAP[node]} env RG_DIST_DEBUG=1 "${envs[@]}" "$RGRUN" --nproc-per-node 2 --nnodes 2 \
      --node-rank $node --master-addr "$MASTER_ADDR" --master-port "$port" \
      --rdzv-id "$name-$$" -- "$@" >"$TMP/$name.node$node" 2>&1 &
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

# check_verify NAME WHAT: rgtrain --verify's printed difference in node 0's output is below
# 1e-10 (f64), and both launchers exited 0.
check_verify() {
  expect "$2: both launchers exit 0 (${NODE_RC[0]}, ${NODE_RC[1]})" \
    [ "${NODE_RC[0]}" = 0 -a "${NODE_RC[1]}" = 0 ]
  if python3 - "$TMP/$1.node0" <<'PY'; then
import re, sys
m = re.search(r"verify: max \|param difference\| = (\S+)", open(sys.argv[1]).read())
print("verify difference:", m and m.group(1))
sys.exit(0 if m and float(m.group(1)) < 1e-10 else 1)
PY
    ok "$2: 4 ranks equal one process on the whole batch (f64)"
  else bad "$2: --verify: $(cat "$TMP/$1.node0" "$TMP/$1.node1")"; fi
}

# check_kills WHAT: kill -9 rank 1 (node 0), then rank 2 (node 1) mid-training; both
# launchers stop, each naming the rank.
check_kills() {
  local K node other
  for K in 1 2; do
    start_nodes "kill$K" -- "$RGTRAIN" "${TINY[@]}" --steps 100000
    wait_line "$TMP/kill$K.node0" "step 3/" || bad "kill$K: training did not start"
    node=$((K / 2))
    kill -KILL "$(rank_of "${NODE_PID[node]}" "$K")"
    wait_nodes
    other=$((1 - node))
    expect "$1: kill -9 rank $K: its launcher exits 137" [ "${NODE_RC[node]}" = 137 ]
    expect "$1: kill -9 rank $K: its launcher names it" \
      has "$TMP/kill$K.node$node" "rgrun: rank $K was killed by signal 9 (SIGKILL)"
    expect "$1: kill -9 rank $K: the other node's launcher fails too (${NODE_RC[other]})" \
      [ "${NODE_RC[other]}" != 0 ]
    expect "$1: kill -9 rank $K: the other node's launcher names it" \
      has "$TMP/kill$K.node$other" "rgrun: rank $K failed on another node"
  done
}
