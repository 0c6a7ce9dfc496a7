#!/usr/bin/env bash
# The flat ring against the two-level all-reduce between two hosts: two network namespaces
# joined by a veth pair shaped with tc tbf (tests/apps/netns_hosts.sh), RANKS_PER_HOST ranks
# (default 2) per host under one rgrun per host, bench/allreduce_hosts in each rank. Three
# algorithms alternate ROUNDS times, each at every size: the flat ring, the two-level all-reduce and
# recursive doubling (all with the direct exchange off) and the direct exchange (its limits at
# 1 GiB). The table gives
# each size's median times, the ratios to the ring, and the network bytes per all-reduce.
# RATE "none" leaves the link unshaped. Needs root (network namespaces); removes the
# namespaces at exit. With 1 rank per host there is no two-level all-reduce: ring and direct
# only (a ring of 2 over the link: what bench/simulate's network tier is calibrated from).
#   bench/two_hosts.sh BUILD_DIR [RATE=1gbit] [ROUNDS=3] [MIN_BYTES=1024] [MAX_BYTES=16777216]
#                      [FACTOR=4] [RANKS_PER_HOST=2]
set -u
BUILD=$(cd "${1:?usage: bench/two_hosts.sh BUILD_DIR [RATE] [ROUNDS]}" && pwd)
RATE=${2:-1gbit}
ROUNDS=${3:-3}
MIN_BYTES=${4:-1024}
MAX_BYTES=${5:-16777216}
FACTOR=${6:-4}
PER_HOST=${7:-2}
VARIANTS="ring two_level doubling direct"
[ "$PER_HOST" = 1 ] && VARIANTS="ring doubling direct"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/../tests/apps/netns_hosts.sh"
TMP=$(mktemp -d)
trap 'hosts_down; rm -rf "$TMP"' EXIT
trap 'exit 143' TERM INT
[ "$RATE" = none ] && RATE=
hosts_up "$RATE" || { echo "two_hosts: $HOSTS_WHY"; exit 1; }
export RG_JOB_TOKEN="two-hosts-bench-$$-$RANDOM$RANDOM"
# Both "hosts" share this machine's cores, which no rank can see (each counts only its own
# host's ranks, dist/idle_wait.h): with more ranks than cores in all, waiters yield at once,
# as they would on one host with that many ranks (unless RG_DIST_IDLE_WAIT says otherwise).
if [ -z "${RG_DIST_IDLE_WAIT:-}" ] && [ $((2 * PER_HOST)) -gt "$(nproc)" ]; then
  export RG_DIST_IDLE_WAIT=yield
fi

run() {  # run VARIANT ROUND: one job, rank 0's lines in $TMP/VARIANT.ROUND
  local node pids=() how
  case $1 in
    ring | two_level) how=(RG_DIST_ALLREDUCE=$1 RG_DIST_DIRECT_BYTES=0) ;;  # the smaller applies
    doubling) how=(RG_DIST_ALLREDUCE=recursive_doubling RG_DIST_DIRECT_BYTES=0) ;;
    direct) how=(RG_DIST_DIRECT_BYTES=1073741824 RG_DIST_DIRECT_BYTES_ACROSS_HOSTS=1073741824) ;;
  esac
  for node in 0 1; do
    local ns=$NS_A
    [ $node = 1 ] && ns=$NS_B
    ip netns exec "$ns" env "${how[@]}" "$BUILD/apps/rgrun" --nproc-per-node "$PER_HOST" \
      --nnodes 2 --node-rank $node --master-addr "$HOST_A_ADDR" --master-port 29500 \
      --rdzv-id "bench-$1-$2" -- "$BUILD/bench/allreduce_hosts" \
      --min-bytes "$MIN_BYTES" --max-bytes "$MAX_BYTES" --factor "$FACTOR" >"$TMP/$1.$2.node$node" 2>&1 &
    pids+=($!)
  done
  wait "${pids[@]}" || { cat "$TMP/$1.$2".node*; exit 1; }
  grep -h '^\[rank 0\] size' "$TMP/$1.$2.node0" >"$TMP/$1.$2"
}
echo "two hosts x $PER_HOST ranks, link ${RATE:-unshaped} (tc tbf), $ROUNDS alternating rounds;" \
  "$(nproc) cpus; RG_DIST_IDLE_WAIT=${RG_DIST_IDLE_WAIT:-auto}"
for ((round = 1; round <= ROUNDS; ++round)); do
  for variant in $VARIANTS; do run $variant $round; done
done
python3 - "$TMP" "$ROUNDS" $VARIANTS <<'PY'
import statistics, sys
tmp, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for alg in variants:
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{alg}.{r}"):
            f = line.split()
            size = int(f[f.index("size") + 1])
            rows.setdefault(size, {}).setdefault(alg, []).append(
                (float(f[f.index("time_us") + 1]), float(f[f.index("network_bytes") + 1])))
names = {"ring": "ring", "two_level": "two-level", "doubling": "doubling", "direct": "direct"}
head = [f"{names[a]} ms" for a in variants] + [f"{names[a]} / ring" for a in variants[1:]]
head += [f"network B: {names[a]}" for a in variants]
print("| bytes | " + " | ".join(head) + " |")
print("|---" * (len(head) + 1) + "|")
for size in sorted(rows):
    ms = {a: statistics.median(t for t, _ in rows[size][a]) / 1e3 for a in variants}
    cells = [f"{ms[a]:.3f}" for a in variants]
    cells += [f"{ms[a] / ms['ring']:.2f}" for a in variants[1:]]
    cells += [f"{rows[size][a][0][1]:.0f}" for a in variants]
    print(f"| {size} | " + " | ".join(cells) + " |")
PY
