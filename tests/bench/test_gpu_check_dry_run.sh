#!/usr/bin/env bash
# The GPU check, kept working between GPU sessions: scripts/gpu-bundle --from bundles this
# build (its files, the libraries it needs, checked by scripts/gpu-bundle-check with the
# loader's path empty), then bench/gpu_check.sh --dry-run runs every step from that bundle on
# sim. Asserts: each of the 10 steps in the summary table, PASS or SKIP with a reason (the GPU
# steps skip without a GPU), the GPU steps' own command lines checked (flags, test filters),
# its limits adding up to under 480 s, the summary table first, at most 3 files written, and
# --steps reruns only what it names.
# Usage: test_gpu_check_dry_run.sh SOURCE_ROOT BUILD_ROOT 'ALLOWED_LIBRARY_GLOBS'
set -uo pipefail
src=$1 build=$2 allow=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A normal build is bigger than the bundle build (sim-check, no strip of a static cudart):
# the size limit is the bundle's, not this test's.
if ! RG_GPU_BUNDLE_MIB=1000 "$src/scripts/gpu-bundle" --from "$build" --out "$work/bundle" \
  --allow "$allow" >"$work/bundle.log" 2>&1; then
  cat "$work/bundle.log"
  echo "FAIL: scripts/gpu-bundle --from $build"
  exit 1
fi
tail -1 "$work/bundle.log"

began=$SECONDS
OUT=$work/out RG_GPU_BUNDLE=$work/bundle bash "$src/bench/gpu_check.sh" --dry-run >"$work/run.log" 2>&1
rc=$?
took=$((SECONDS - began))
report=$work/out/gpu_check.md
((rc == 0)) || fail "the dry run exited $rc: $(cat "$work/run.log")"
[[ -f $report ]] || { cat "$work/run.log"; echo "FAIL: no $report"; exit 1; }
files=$(find "$work/out" -type f | wc -l)
((files <= 3)) || fail "$files files in \$OUT (the device returns 8; the check keeps to 3)"
sed -n 3p "$report" | grep -q '^| # | step | verdict' || fail "the summary table is not first: $(head -5 "$report")"
rows=$(grep -cE '^\| [0-9]+ \|' "$report")
((rows == 10)) || fail "$rows steps in the table, expected 10: $(cat "$report")"
limits=$(awk -F'|' '/^\| [0-9]+ \|/ {s += $6} END {print s}' "$report")
((limits < 480)) || fail "the step limits add up to $limits s, over 480"
while IFS='|' read -r _ num name verdict _ _ note _; do
  case $verdict in
    *PASS*) ;;
    *SKIP*) [[ $note == *[a-z]* ]] || fail "step $num ($name) skipped without a reason" ;;
    *) fail "step $num ($name): $verdict: $note" ;;
  esac
done < <(grep -E '^\| [0-9]+ \|' "$report")
# Without a GPU these skip, saying why; with one (a dry run there), they pass.
for needle in "| 4 | dist-nccl |" "| 8 | compute-sanitizer memcheck" "| 9 | compute-sanitizer racecheck"; do
  grep -qF -- "$needle" "$report" || fail "no row '$needle'"
done
if ! command -v nvidia-smi >/dev/null; then
  grep -qE '^\| 4 \| dist-nccl \| SKIP .*no GPU with NCCL' "$report" || fail "nccl: no skip reason"
  grep -qE '^\| 8 \|.*\| SKIP \|.*compute-sanitizer needs a GPU' "$report" || fail "memcheck: no skip reason"
  # the GPU steps' own command lines: 4 benches' flags parse, 4 test filters select tests
  log=$work/out/gpu_check.log
  (($(grep -c "^the GPU's command line parses: bench/" "$log") == 4)) ||
    fail "not 4 GPU command lines checked: $(grep "GPU's" "$log")"
  (($(grep -c "^the GPU's filter .* each pattern some" "$log") == 4)) ||
    fail "not 4 GPU test filters checked: $(grep "GPU's" "$log")"
fi
grep -q '^attention fwd bf16 causal T 128 head 128' "$report" || fail "no attention figure in the report"
grep -q '^attention bwd bf16 causal T 64 head 64' "$report" || fail "no attention backward figure"
grep -q 'graph: replayed step' "$report" || fail "no graph figure of the GPT step"
grep -q '==== 2 kernel tests on sim: PASS' "$work/out/gpu_check.log" || fail "no full log of step 2"

OUT=$work/rerun RG_GPU_BUNDLE=$work/bundle bash "$src/bench/gpu_check.sh" --dry-run --steps 3,6 \
  >"$work/rerun.log" 2>&1 || fail "--steps 3,6: exit $?: $(cat "$work/rerun.log")"
rerun_rows=$(grep -E '^\| [0-9]+ \|' "$work/rerun/gpu_check.md" | cut -d'|' -f2 | tr -d ' ' | tr '\n' ,)
[[ $rerun_rows == 3,6, ]] || fail "--steps 3,6 ran steps $rerun_rows"

if ((failures)); then
  cat "$report"
  exit 1
fi
echo "gpu_check --dry-run: 10 steps from a bundle of this build in $took s (limits $limits s):"
grep -E '^\| [0-9]+ \|' "$report"
