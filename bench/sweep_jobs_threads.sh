#!/usr/bin/env bash
# What `dtbench sweep --local --jobs J` gives its runs side by side: J single-rank training runs at once, each with
# OMP_NUM_THREADS set to every CPU of the host (what every run took before the sweep shared them out: `threads` 0
# of a run alone is all its CPUs) and with it unset (now: the sweep gives each run CPUs / (J x its ranks),
# slurm::cpu_share), alternated all share share all ... Prints each round's wall time of the whole sweep and the
# runs' mean step time (the records' timing.total), the medians over rounds, the median of the per-round ratio, and
# the load average before and after.
#
# Usage: bench/sweep_jobs_threads.sh DTBENCH [J]
# Environment: ROUNDS (5), OUT (a folder to keep the campaigns in; default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
jobs=${2:-2}
rounds=${ROUNDS:-5}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
source "$root/bench/threads_ab.sh"
unset OMP_NUM_THREADS
cpus=$(nproc)
JOBS=$jobs python3 - "$out/spec.json" <<'PY'
import json, os, sys
spec = {"name": "jobs-threads",
        "base": {"model": {"arch": "resnet8"}, "data": {"dataset": "fashion-mnist"}, "batch": {"per_rank": 32},
                 "duration": {"steps": 48}, "eval": {"every_steps": 48, "batch": 200, "test_samples": 2000},
                 "optimizer": {"lr": 0.1}},
        "axes": {}, "repeats": int(os.environ["JOBS"])}
json.dump(spec, open(sys.argv[1], "w"), indent=1)
PY
run() {  # side round
  local side=$1 r=$2 env=()
  [[ $side == all ]] && env=(env OMP_NUM_THREADS="$cpus")
  local t0 t1
  t0=$(date +%s.%N)
  "${env[@]}" "$bin" sweep "$out/spec.json" --out "$out/$side$r" --local --jobs "$jobs" >/dev/null
  t1=$(date +%s.%N)
  python3 - "$out/$side$r/runs" "$side" "$r" "$t0" "$t1" <<'PY'
import glob, json, statistics, sys
recs = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
step = statistics.mean(r["timing"]["total"] for r in recs)
threads = sorted({r["provenance"]["onednn"]["threads"] for r in recs})
print(f"{sys.argv[2]:5s} round {sys.argv[3]}: {float(sys.argv[5]) - float(sys.argv[4]):6.2f} s wall, "
      f"{step * 1e3:7.1f} ms a step, {threads[0]} threads a run ({len(recs)} runs)")
PY
}
threads_ab "$rounds" "$out" "--jobs $jobs, $cpus CPUs" run
