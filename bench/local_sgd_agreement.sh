#!/usr/bin/env bash
# What a local SGD step's agreement on a refused gradient costs (sync_step.cpp: one 8-byte MPI_Allreduce per local
# step, so that a rank whose own gradient overflowed does not stop alone). Alternated over rounds on 2 ranks: the
# latency of an 8-byte MPI_Allreduce (`dtbench allreduce --reducer mpi`, the collective World::sum makes), and the
# mean step time of a local SGD run (an MLP, H = 4, from its record), then the medians and their ratio, the upper
# bound of the agreement's share of a local step. Prints the 1-minute load average before each round.
#
# Usage: bench/local_sgd_agreement.sh [BUILD_DIR] (default build/ci); ROUNDS (default 5)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${1:-$root/build/ci}/apps/dtbench"
rounds=${ROUNDS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source "$root/scripts/mpi-env.sh"
lat=() step=()
for r in $(seq 1 "$rounds"); do
  echo "round $r: load $(cut -d' ' -f1 /proc/loadavg)"
  lat+=("$(mpirun -np 2 --bind-to core "$bin" allreduce -b 8 -e 8 -n 5000 -w 500 --reducer mpi |
           awk '$1 == 8 && $3 == "mpi" {print $4}')")
  mpirun -np 2 --bind-to core "$bin" train --set model.arch=mlp --set model.hidden=64 --set data.dataset=synthetic \
    --set batch.global=64 --set duration.steps=400 --set eval.every_steps=400 --set parallel.mode=local_sgd \
    --set parallel.local_steps=4 --set threads=1 --set name=r$r --set output.dir="$out" > /dev/null
  step+=("$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['timing']['total'] * 1e6)" "$out/r$r.json")")
done
/usr/bin/python3 - "${lat[*]}" "${step[*]}" <<'PY'
import statistics, sys
lat = [float(x) for x in sys.argv[1].split()]
step = [float(x) for x in sys.argv[2].split()]
print("8-byte MPI_Allreduce on 2 ranks (us):", ", ".join(f"{x:.2f}" for x in lat), f"median {statistics.median(lat):.2f}")
print("local SGD step, MLP 64 hidden, batch 32 a rank (us):", ", ".join(f"{x:.0f}" for x in step),
      f"median {statistics.median(step):.0f}")
print(f"agreement's share of a local step, at most: {100 * statistics.median(lat) / statistics.median(step):.2f}%")
PY
