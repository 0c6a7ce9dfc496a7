#!/usr/bin/env bash
# The figures of docs/scale.md, drawn with gnuplot from bench/simulate's own tables:
#   docs/scale_validation.png  predicted (ranks taking turns on the cores: x N/cores) vs measured
#                              all-reduce time per size, 2/4/8 ranks
#   docs/scale_prediction.png  GPT-2 124M: all-reduce busbw and step time, 8-1024 GPUs
# Usage: scripts/scale_figures.sh [BUILD_DIR]   (after scripts/scale_measure.sh and the fit)
set -euo pipefail
build=${1:-build}
sim="$build/bench/simulate"
m=bench/scale_measurements
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" --validate $m/valid_shm_n2.txt $m/valid_shm_n4.txt $m/valid_shm_n8.txt |
  awk '$1 ~ /^N=/ { n = substr($1, 3); print $2, $3, $6 > "'"$tmp"'/valid_" n ".dat" }'
"$sim" --predict | awk -v dir="$tmp" '
  /^all-reduce of all/ { t = "ar"; next }
  /^exposed/ { t = "" }
  /^step time/ { t = "step"; next }
  t != "" && $1 ~ /^[0-9]+$/ { print $0 > (dir "/" t ".dat") }'
gnuplot <<GP
set terminal pngcairo size 900,600
set output 'docs/scale_validation.png'
set logscale xy
set xlabel 'bytes'; set ylabel 'µs per all-reduce'
set title 'bench/simulate vs bench/allreduce (tcp backend, shared memory, one 2-core host)'
set key top left
plot for [n in "2 4 8"] '$tmp/valid_'.n.'.dat' using 1:2 with points pt 7 title n.' ranks measured', \
     for [n in "2 4 8"] '$tmp/valid_'.n.'.dat' using 1:3 with lines title n.' ranks model (x N/cores)'
set output 'docs/scale_prediction.png'
set multiplot layout 1,2 title 'GPT-2 124M data-parallel, 8 GPUs per node (model)'
set logscale x; unset logscale y
set xlabel 'GPUs'; set ylabel 'busbw GB/s (all 498 MB of f32 gradients)'
set title 'all-reduce bus bandwidth'
plot '$tmp/ar.dat' using 1:3 with linespoints title 'flat ring', \
     '$tmp/ar.dat' using 1:5 with linespoints title 'two-level'
set ylabel 'ms per step (25 MiB buckets)'; set title 'step time'
plot '$tmp/step.dat' using 1:2 with linespoints title 'flat ring', \
     '$tmp/step.dat' using 1:3 with linespoints title 'two-level'
unset multiplot
GP
echo "wrote docs/scale_validation.png docs/scale_prediction.png"
