#!/usr/bin/env bash
# The cost model's accuracy on this machine: with MPI and 2 ranks, fit the model to one sweep and check its
# predictions against a second, independent sweep of the same sizes (inside the fitted range), within 25%.
# A measurement, not a unit test (it was one until issue 13): on a shared VM two sweeps minutes apart differ by
# 25-35% in every row at once (measured 2026-11-23 at load ~2: all rows -27% in one attempt, +30% in the next),
# which no model of the algorithms can predict. Run it on a quiet machine.
#
# Sizes 4 KiB..1 MiB: on a shared 2-core machine a larger transfer outlasts the scheduler's time slice
# when another process wants a core, and its time then measures the neighbour, not the reducer. Each
# row is the median iteration time (see `dtbench model`). A loaded machine can still spoil one pair of
# sweeps, so up to 3 independent attempts are made; the test fails only if all three do.
# Usage: bench/model_accuracy.sh DTBENCH MPIEXEC WORKDIR  (e.g. build/release/apps/dtbench mpiexec /tmp/ma)
set -uo pipefail
dtbench=$1 mpiexec=$2 work=$3
mkdir -p "$work"
sweep() {
  "$mpiexec" -n 2 --oversubscribe "$dtbench" allreduce -b 4K -e 1M -f 4 -n 50 -w 5 -c 1 --reducer all \
    --json "$1" > "$1.txt"
}
for attempt in 1 2 3; do
  sweep "$work/fit.json" || exit 1
  sweep "$work/check.json" || exit 1
  if "$dtbench" model --fit "$work/fit.json" --check "$work/check.json" --tolerance 0.25 --ranks 2,16 --bytes 1M; then
    echo "model_accuracy: passed on attempt $attempt"
    exit 0
  fi
  echo "model_accuracy: attempt $attempt outside the tolerance"
done
exit 1
