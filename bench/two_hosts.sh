#!/usr/bin/env bash
# The flat ring against the two-level all-reduce between two hosts: two network namespaces
# joined by a veth pair shaped with tc tbf (tests/apps/netns_hosts.sh), 2 ranks per host
# under one rgrun per host, bench/allreduce_hosts in each rank. The two algorithms alternate
# ROUNDS times (RG_DIST_ALLREDUCE=ring, then two_level); the table gives each size's median
# time of each, the ratio two_level / ring, and the network bytes per all-reduce.
#   bench/two_hosts.sh BUILD_DIR [RATE=1gbit] [ROUNDS=3]
# Needs root (network namespaces); removes the namespaces at exit.
set -u
BUILD=$(cd "${1:?usage: bench/two_hosts.sh BUILD_DIR [RATE] [ROUNDS]}" && pwd)
RATE=${2:-1gbit}
ROUNDS=${3:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../tests/apps/netns_hosts.sh"
TMP=$(mktemp -d)
trap 'hosts_down; rm -rf "$TMP"' EXIT
trap 'exit 143' TERM INT
hosts_up "$RATE" || { echo "two_hosts: $HOSTS_WHY"; exit 1; }
export RG_JOB_TOKEN="two-hosts-bench-$$-$RANDOM$RANDOM"

run() {  # run ALGORITHM ROUND: one job, rank 0's lines in $TMP/ALGORITHM.ROUND
  local node pids=()
  for node in 0 1; do
    local ns=$NS_A
    [ $node = 1 ] && ns=$NS_B
    ip netns exec "$ns" env RG_DIST_ALLREDUCE="$1" "$BUILD/apps/rgrun" --nproc-per-node 2 \
      --nnodes 2 --node-rank $node --master-addr "$HOST_A_ADDR" --master-port 29500 \
      --rdzv-id "bench-$1-$2" -- "$BUILD/bench/allreduce_hosts" >"$TMP/$1.$2.node$node" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}" || { cat "$TMP/$1.$2".node*; exit 1; }
  grep -h '^\[rank 0\] size' "$TMP/$1.$2.node0" >"$TMP/$1.$2"
}
echo "two hosts x 2 ranks, link $RATE (tc tbf), $ROUNDS alternating rounds; $(nproc) cpus"
for ((round = 1; round <= ROUNDS; ++round)); do
  run ring $round
  run two_level $round
done
python3 - "$TMP" "$ROUNDS" <<'PY'
import glob, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for alg in ("ring", "two_level"):
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{alg}.{r}"):
            f = line.split()
            size = int(f[f.index("size") + 1])
            rows.setdefault(size, {}).setdefault(alg, []).append(
                (float(f[f.index("time_us") + 1]), float(f[f.index("network_bytes") + 1])))
print("| bytes | ring ms | two-level ms | two-level / ring | ring network B | two-level network B |")
print("|---|---|---|---|---|---|")
for size in sorted(rows):
    ring = statistics.median(t for t, _ in rows[size]["ring"]) / 1e3
    two = statistics.median(t for t, _ in rows[size]["two_level"]) / 1e3
    print(f"| {size} | {ring:.2f} | {two:.2f} | {two / ring:.2f} | "
          f"{rows[size]['ring'][0][1]:.0f} | {rows[size]['two_level'][0][1]:.0f} |")
PY
