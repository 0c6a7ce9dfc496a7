#!/usr/bin/env bash
# The apps suite: rgtrain alone (test_rgtrain.sh), its --zero 1 checkpoints
# (test_zero_checkpoint.sh), then rgtrain under rgrun with injected faults (test_faults.sh). Exits 1 when any of them fails.
set -u
DIR=$(dirname "$0")
RGTRAIN=$1
RGRUN=$2
FAILS=0
bash "$DIR/test_rgtrain.sh" "$RGTRAIN" "$RGRUN" || FAILS=$((FAILS + 1))
bash "$DIR/test_zero_checkpoint.sh" "$RGTRAIN" "$RGRUN" || FAILS=$((FAILS + 1))
bash "$DIR/test_faults.sh" "$RGRUN" "$RGTRAIN" || FAILS=$((FAILS + 1))
exit $((FAILS > 0))
