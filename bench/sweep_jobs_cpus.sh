#!/usr/bin/env bash
# Where `dtbench sweep --local --jobs J` runs its runs side by side: J single-rank training runs at once, placed by
# Open MPI's default (each mpirun binds its rank to the first core, blind to the others: what ran before; emulated
# with `--bind-to core` in /local/mpirun_args, which the sweep leaves to Open MPI) and on the runners' own CPUs
# (now: taskset --cpu-list around mpirun --bind-to none, slurm::cpu_slice), alternated before slices slices before
# ... Prints each round's wall time of the whole sweep, the runs' mean step time (the records' timing.total) and threads, the medians over rounds, the
# median of the per-round ratio, and the load average before and after.
#
# Usage: bench/sweep_jobs_cpus.sh DTBENCH [J]
# Environment: ROUNDS (5), OUT (a folder to keep the campaigns in; default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
jobs=${2:-2}
rounds=${ROUNDS:-5}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
source "$root/bench/ab_rounds.sh"
unset OMP_NUM_THREADS
cpus=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
JOBS=$jobs python3 - "$out" <<'PY'
import json, os, sys
spec = {"name": "jobs-cpus",
        "base": {"model": {"arch": "resnet8"}, "data": {"dataset": "fashion-mnist"}, "batch": {"per_rank": 32},
                 "duration": {"steps": 48}, "eval": {"every_steps": 48, "batch": 200, "test_samples": 2000},
                 "optimizer": {"lr": 0.1}},
        "axes": {}, "repeats": int(os.environ["JOBS"])}
json.dump(spec, open(sys.argv[1] + "/slices.json", "w"), indent=1)
spec["local"] = {"mpirun_args": ["--oversubscribe", "--bind-to", "core"]}
json.dump(spec, open(sys.argv[1] + "/before.json", "w"), indent=1)
PY
run() {  # side round
  local side=$1 r=$2 t0 t1
  t0=$(date +%s.%N)
  "$bin" sweep "$out/$side.json" --out "$out/$side$r" --local --jobs "$jobs" >/dev/null
  t1=$(date +%s.%N)
  python3 - "$out/$side$r/runs" "$side" "$r" "$t0" "$t1" <<'PY'
import glob, json, statistics, sys
recs = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
step = statistics.mean(r["timing"]["total"] for r in recs)
threads = sorted({r["provenance"]["onednn"]["threads"] for r in recs})
print(f"{sys.argv[2]:6s} round {sys.argv[3]}: {float(sys.argv[5]) - float(sys.argv[4]):6.2f} s wall, "
      f"{step * 1e3:7.1f} ms a step, {threads[0]} threads a run ({len(recs)} runs)")
PY
}
ab_rounds "$rounds" "$out" "--jobs $jobs, $cpus CPUs" run before slices
