#!/usr/bin/env bash
# Two hosts on one machine: two network namespaces joined by a veth pair shaped to 1 Gbit/s
# (tests/apps/netns_hosts.sh), an rgrun launcher in each (--nnodes 2, 2 local ranks each,
# world 4), every cross-host byte over the veth link.
#   - rgtrain --verify --precision f64: the weights equal one process on the whole batch;
#   - the all-reduce's bytes by link tier (tests/dist/rank_helper tiers): the flat ring sends
#     3 B over the network for a buffer of B bytes, the two-level all-reduce (the default
#     across hosts) 2 B, the least possible (dist/two_level_allreduce.cpp), recursive
#     doubling (forced: its default is up to 8 KiB) 4 B, B per rank in its one crossing swap;
#   - kill -9 of a rank on either host stops both launchers, each naming that rank.
# Skipped (exit 77, with the reason printed) where network namespaces cannot be made. The
# namespaces are removed at exit, also when a check fails or the test is stopped.
set -u
RGRUN=$1
RGTRAIN=$2
RANK_HELPER=$3
HERE=$(dirname "${BASH_SOURCE[0]}")
source "$HERE/job_helpers.sh"  # TMP, FAILS, ok, bad, expect, has
source "$HERE/netns_hosts.sh"  # hosts_up, hosts_down, NS_A, NS_B, HOST_A_ADDR
export RG_DIST_TIMEOUT=8
TINY=(--layers 1 --heads 2 --width 16 --digits 1 --global-batch 8 --micro-batch 2
      --eval-every 0 --warmup 2 --print-every 1 --threads 1)
MASTER_ADDR=$HOST_A_ADDR
NODE_WRAP=("ip netns exec $NS_A" "ip netns exec $NS_B")
node_port() { echo 29500; }  # the namespaces are fresh: nothing else listens in them
source "$HERE/two_node_jobs.sh"  # start_nodes, check_verify, check_kills, ...
NODE_PID=()
trap 'cleanup_nodes; hosts_down; [ -n "${KEEP_TMP:-}" ] && echo "$TMP" || cleanup' EXIT
trap 'exit 143' TERM INT

if ! hosts_up 1gbit; then
  echo "two hosts: skipped: $HOSTS_WHY"
  exit 77
fi

# ---- training: the same model as one process
start_nodes train -- "$RGTRAIN" "${TINY[@]}" --steps 3 --precision f64 --verify
wait_nodes
check_verify train "two hosts"
expect "two hosts: ranks 0 and 2 reach each other over tcp" \
  has "$TMP/train.node0" "[rank 0] rg-dist: rank 0 of 4 (tcp): links 0 self, 1 shm, 2 tcp, 3 tcp"

# ---- bytes by link tier: the two-level all-reduce sends 2/3 of the flat ring's
COUNT=262144  # floats: B = 1 MiB
B=$((COUNT * 4))
network_bytes() {  # network_bytes NAME: the network bytes all 4 ranks sent
  cat "$TMP/$1.node0" "$TMP/$1.node1" |
    sed -n 's/.*tiers: within_host=[0-9]* network=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'
}
declare -A NET
for ALGORITHM in ring two_level recursive_doubling auto; do
  start_nodes "tiers_$ALGORITHM" RG_DIST_ALLREDUCE=$ALGORITHM -- "$RANK_HELPER" tiers $COUNT
  wait_nodes
  expect "two hosts: $ALGORITHM all-reduce: right sums, both launchers exit 0" \
    [ "${NODE_RC[0]}" = 0 -a "${NODE_RC[1]}" = 0 ]
  NET[$ALGORITHM]=$(network_bytes "tiers_$ALGORITHM")
done
declare -A WANT=([ring]=$((3 * B)) [two_level]=$((2 * B)) [recursive_doubling]=$((4 * B))
                [auto]=$((2 * B)))
for ALGORITHM in ring two_level recursive_doubling auto; do
  expect "two hosts: $ALGORITHM sends ${WANT[$ALGORITHM]} bytes over the network (${NET[$ALGORITHM]})" \
    [ "${NET[$ALGORITHM]}" = "${WANT[$ALGORITHM]}" ]
done

# ---- kill -9 a rank on either host: both launchers stop, each naming it
check_kills "two hosts"

echo "two hosts: $FAILS failed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
