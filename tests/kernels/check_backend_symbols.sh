#!/usr/bin/env bash
# Every kernel file is compiled twice, by nvcc for cuda and by g++ for sim, into one library.
# What the shared dialect (kernels/cuda/portability.cuh) defines must live in the backend's
# namespace, or both objects emit the same weak symbols (rg::launch<...> at -O0) and the
# linker keeps one for both: a cuda kernel could then launch through the sim interpreter.
# This compiles one kernel file (softmax.cu, whose kernels take plain pointer parameters) both ways at -O0 and checks that no launch-path symbol is
# defined by both, and that each object defines its own backend's launch.
# usage: check_backend_symbols.sh SOURCE_ROOT BUILD_ROOT NVCC
set -euo pipefail
src=$1 build=$2 nvcc=$3
work=$(mktemp -d /tmp/rg-symbols.XXXXXX)
trap "rm -rf $work" EXIT
common=(-std=c++20 -O0 -I"$src" -I"$build" -I"$build/kernels" -DRG_WITH_CUDA=1)
echo '#include "kernels/cuda/softmax.cu"' >"$work/softmax_sim.cpp"
c++ "${common[@]}" -c "$work/softmax_sim.cpp" -o "$work/sim.o"
"$nvcc" "${common[@]}" --expt-relaxed-constexpr -gencode=arch=compute_90,code=sm_90 \
  -c "$src/kernels/cuda/softmax.cu" -o "$work/cuda.o"
# Names of defined symbols; with -g only those the linker may merge across objects.
defined() { nm -C --defined-only "$@" | sed -E 's/^[0-9a-f]+ [A-Za-z] //' | sort -u; }
defined "$work/sim.o" >"$work/sim.txt"
defined "$work/cuda.o" >"$work/cuda.txt"
defined -g "$work/sim.o" >"$work/sim_external.txt"
defined -g "$work/cuda.o" >"$work/cuda_external.txt"
status=0
grep -q '^void rg::sim::launch<' "$work/sim.txt" || { echo "sim object defines no rg::sim::launch"; status=1; }
grep -q '^void rg::cuda::launch<' "$work/cuda.txt" || { echo "cuda object defines no rg::cuda::launch"; status=1; }
shared=$(comm -12 "$work/sim_external.txt" "$work/cuda_external.txt" |
  grep -E 'rg::(launch|LaunchConfig|min_of|max_of|ceil_div|gpu_stream_t)' || true)
if [[ -n $shared ]]; then
  echo "defined by both the sim and the cuda object:"; echo "$shared"; status=1
fi
((status == 0)) && echo "backend symbols: sim and cuda define their own launch path, none shared"
exit $status
