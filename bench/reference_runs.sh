#!/usr/bin/env bash
# The recorded 2-rank Fashion-MNIST ResNet-20 runs of BENCHMARKS.md ("Reference runs on 2 ranks"): ring + SGD,
# parameter server + SGD, butterfly + LARS, ring + LAMB, and asynchronous SGD, each to 91% test accuracy
# (stop_at_target; 10 epochs at most). Configs: results/reference/configs/resnet20-fmnist-k2-*.json; records
# and MLLOG files land in results/reference/. A run whose record exists is skipped (dtbench would refuse it).
#
# Usage: bench/reference_runs.sh [DTBENCH] [NAME ...] (default build/release/apps/dtbench, all five runs).
# Each rank runs one compute thread (OMP_NUM_THREADS=1), one rank per core on a 2-core machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build/release/apps/dtbench}"
shift || true
runs=("$@")
if [[ ${#runs[@]} -eq 0 ]]; then
  runs=(k2-ring-sgd k2-ps-sgd k2-butterfly-lars k2-ring-lamb k2-async-sgd)
fi
source "$root/scripts/mpi-env.sh"
cd "$root"
for r in "${runs[@]}"; do
  name="resnet20-fmnist-$r"
  if [[ -e "results/reference/$name.json" ]]; then
    echo "reference_runs: results/reference/$name.json exists; skipped"
    continue
  fi
  echo "reference_runs: $name ($(date -u +%FT%TZ))"
  OMP_NUM_THREADS=1 mpirun -np 2 "$bin" train "results/reference/configs/$name.json" \
    --baseline results/reference/resnet20-fmnist-fp32.json
done
