#!/usr/bin/env bash
# The apps suite: rgtrain alone (test_rgtrain.sh), its --zero 1 checkpoints
# (test_zero_checkpoint.sh), then rgtrain under rgrun with injected faults (test_faults.sh). Exit status: the number of failed checks.
set -u
DIR=$(dirname "$0")
RGTRAIN=$1
RGRUN=$2
FAILS=0
bash "$DIR/test_rgtrain.sh" "$RGTRAIN" "$RGRUN" || FAILS=$((FAILS + $?))
bash "$DIR/test_zero_checkpoint.sh" "$RGTRAIN" "$RGRUN" || FAILS=$((FAILS + $?))
bash "$DIR/test_faults.sh" "$RGRUN" "$RGTRAIN" || FAILS=$((FAILS + $?))
exit $FAILS
