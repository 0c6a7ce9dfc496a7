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

MASTER_ADDR=127.0.0.1
NODE_WRAP=("" "")
node_port() { free_port; }
source "$(dirname "${BASH_SOURCE[0]}")/two_node_jobs.sh"  # start_nodes, check_verify, ...
trap 'cleanup_nodes; [ -n "${KEEP_TMP:-}" ] && echo "$TMP" || cleanup' EXIT

# ---- training: the same model as one process, links by node
start_nodes train -- "$RGTRAIN" "${TINY[@]}" --steps 3 --precision f64 --verify
wait_nodes
check_verify train "two nodes"
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
check_kills "two nodes"

echo "two nodes: $FAILS failed"
exit $((FAILS > 0))  # 1 on any failure, never the count (77 reads as a skip, 256 as a pass)
