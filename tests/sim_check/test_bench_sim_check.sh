#!/usr/bin/env bash
# bench/kernels --sim-check prints a full row for every op: traffic figures and an occupancy
# read from the build's ptxas table. With CUDA built ($2 = cuda) every row must have one
# ("NN% L"); without, every row says n/a. A "?" (a launched kernel missing from the table)
# fails either way.
set -euo pipefail
kernels=$1 cuda=$2
out=$("$kernels" --sim-check)
echo "$out"
rows=$(echo "$out" | awk '/^op /{on=1; next} /^sect\/req/{on=0} on')
count=$(echo "$rows" | grep -c . || true)
if ((count < 10)); then echo "FAIL: only $count op rows"; exit 1; fi
if [[ $cuda == cuda ]]; then
  bad=$(echo "$rows" | grep -Ev '[0-9]+% [WBRS]$' || true)
else
  bad=$(echo "$rows" | grep -Ev ' n/a$' || true)
fi
if [[ -n $bad ]]; then echo "FAIL: rows without the expected occupancy:"; echo "$bad"; exit 1; fi
echo "ok: $count rows"
