#!/usr/bin/env bash
# A GPT-2 in HuggingFace's exact layout, written by the `safetensors` package with NumPy
# (gpt2_hf_reference.py, which also computes its logits), loaded by ringgrad and compared
# (gpt2_hf_check). Without the safetensors package this fails: it is in scripts/python-env.
#   gpt2_hf.sh PYTHON CHECK_PROGRAM
set -euo pipefail
py=$1 check=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" "$(dirname "$0")/gpt2_hf_reference.py" "$work"
"$check" "$work/model.safetensors" "$work/reference.safetensors" 4
