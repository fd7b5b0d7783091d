#!/usr/bin/env bash
# What `threads` 0 (the default) gives K ranks unbound on one host (mpirun --bind-to none): the same training run
# with OMP_NUM_THREADS set to every CPU of the host (OpenMP's own default, which `threads` 0 was before 25500b8)
# and with it unset (now: each rank's share of the CPUs, World::default_threads), alternated all share share all
# all share ... Prints each round's wall time of the whole run and its mean step time (the record's timing.total),
# the medians over rounds, the median of the per-round ratio, and the load average before and after.
#
# Usage: bench/threads_default.sh DTBENCH [K]
# Environment: ROUNDS (5), OUT (a folder to keep the records in; default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
k=${2:-2}
rounds=${ROUNDS:-5}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
source "$root/bench/ab_rounds.sh"
unset OMP_NUM_THREADS
cpus=$(nproc)
sets=(--set model.arch=resnet8 --set data.dataset=fashion-mnist --set batch.per_rank=32 --set duration.steps=48
      --set eval.every_steps=48 --set eval.batch=200 --set eval.test_samples=2000 --set optimizer.lr=0.1)
run() {  # side round
  local side=$1 r=$2 env=()
  [[ $side == all ]] && env=(env OMP_NUM_THREADS="$cpus")
  local t0 t1
  t0=$(date +%s.%N)
  "${env[@]}" mpirun -np "$k" --oversubscribe --bind-to none "$bin" train "${sets[@]}" \
    --set output.dir="$out/$side$r" --set name=threads >/dev/null
  t1=$(date +%s.%N)
  python3 - "$out/$side$r/threads.json" "$side" "$r" "$t0" "$t1" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:5s} round {sys.argv[3]}: {float(sys.argv[5]) - float(sys.argv[4]):6.2f} s wall, "
      f"{rec['timing']['total'] * 1e3:7.1f} ms a step, {rec['provenance']['onednn']['threads']} threads a rank")
PY
}
ab_rounds "$rounds" "$out" "$k ranks, $cpus CPUs" rank all share
