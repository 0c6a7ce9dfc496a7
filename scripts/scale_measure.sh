#!/usr/bin/env bash
# Measures what bench/simulate is calibrated and validated against (docs/scale.md): bench/allreduce
# runs on this host, one table per file in OUTDIR (default bench/scale_measurements).
#   calib_{shm,net}_{ring,direct}.txt  2 ranks, ring only / direct exchange only; shm = tcp
#                                      backend with shared memory, net = loopback TCP (RG_DIST_SHM=0)
#   valid_shm_nN.txt                   N = 2 4 8 ranks, ringgrad's own choice (direct up to 32 KiB,
#                                      else the ring; the single-copy path off, it is not modeled)
#   hosts_2x1.md, hosts_2x2.md         bench/two_hosts.sh: 2 hosts (network namespaces, veth link
#                                      shaped to 1 Gbit/s) x 1 rank (calibrates the network tier,
#                                      bench/simulate --fit-hosts) and x 2 ranks (--validate-hosts),
#                                      1 KiB-16 MiB doubling, medians of 3 rounds; needs root
#                                      (skipped, saying why, without it)
# Each bench/allreduce table has 3 rounds; bench/simulate takes the fastest of them per size (the least
# disturbed by other processes on a shared host).
# Usage: scripts/scale_measure.sh [BUILD_DIR] [OUTDIR]
set -euo pipefail
build=${1:-build}
out=${2:-bench/scale_measurements}
mkdir -p "$out"
ar() { "$build/bench/allreduce" --backend tcp --min-bytes 1K --max-bytes 64M --factor 2 --rounds 3 "$@"; }
export RG_DIST_SINGLE_COPY_BYTES=0
for tier in shm net; do
  shm=1; [ "$tier" = net ] && shm=0
  RG_DIST_SHM=$shm RG_DIST_DIRECT_BYTES=0 ar --nproc 2 > "$out/calib_${tier}_ring.txt"
  RG_DIST_SHM=$shm RG_DIST_DIRECT_BYTES=1073741824 ar --nproc 2 > "$out/calib_${tier}_direct.txt"
done
for n in 2 4 8; do
  ar --nproc "$n" > "$out/valid_shm_n$n.txt"
done
for per_host in 1 2; do
  f=$out/hosts_2x$per_host.md
  bench/two_hosts.sh "$build" 1gbit 3 1024 16777216 2 "$per_host" >"$f" ||
    { echo "scale_measure: no two-host tables: $(tail -1 "$f")" >&2; rm -f "$f"; break; }
done
