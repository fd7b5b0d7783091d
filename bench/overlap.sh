#!/usr/bin/env bash
# Exposed communication with and without overlapping the gradient allreduce with backward:
# ResNet-20 on Fashion-MNIST, 2 ranks (one per core), the same steps with reducer.overlap true and
# false, for each reducer given (default: ring) and each MPI waiting policy in POLL_US (default "0": block in
# MPI; N > 0: test, then sleep N microseconds, reducer.poll_us). Prints one line per run from the records.
# ROUNDS (default 1) repeats the whole set, alternating, and the summary gives each configuration's mean over
# rounds (exposed communication includes waiting for the slower rank, which drifts with the machine's load;
# alternating rounds spread that drift over every configuration).
# Usage: [POLL_US="0 50"] [ROUNDS=3] bench/overlap.sh [BUILD_DIR] [STEPS] [REDUCERS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
steps=${2:-120}
shift 2 2>/dev/null || true
reducers=("${@:-ring}")
source scripts/mpi-env.sh
out=$(mktemp -d /tmp/dtbench-overlap-XXXXXX)
for round in $(seq 1 "${ROUNDS:-1}"); do
for reducer in "${reducers[@]}"; do
  for poll in ${POLL_US:-0}; do
    for overlap in true false; do
      mpirun -np 2 --bind-to core "$build/apps/dtbench" train \
        --set model.arch=resnet20 --set batch.per_rank=64 --set duration.steps="$steps" \
        --set eval.every_steps="$steps" --set reducer.name="$reducer" --set reducer.overlap=$overlap \
        --set reducer.poll_us="$poll" --set reducer.bucket_mib=0.25 --set threads=1 --set output.dir="$out" \
        --set name="overlap-$reducer-poll$poll-$overlap-r$round" >/dev/null
    done
  done
done
done
/usr/bin/python3 - "$out" <<'PY'
import collections, glob, json, sys
rows = collections.defaultdict(list)
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(path))
    rows[r["name"].rsplit("-r", 1)[0]].append(r)
cols = ["images_per_second", "total", "backward", "comm", "exposed_comm"]
print(f"{'run (mean over rounds)':30} {'rounds':>6} {'img/s':>8} {'step ms':>8} {'backward ms':>12} {'comm ms':>8} "
      f"{'exposed ms':>11} {'of which imbalance':>19} {'after last bwd':>15} {'exposed (each round)':>24}")
for name, rs in sorted(rows.items()):
    mean = lambda f: sum(f(r) for r in rs) / len(rs)
    # extra.exposed_comm_split: the wait for the slowest rank's backward, and the communication after it.
    split = lambda key: (f"{mean(lambda r: r['extra']['exposed_comm_split'][key])*1e3:.2f}"
                         if all("exposed_comm_split" in r["extra"] for r in rs) else "n/a")
    each = " ".join(f"{r['timing']['exposed_comm']*1e3:.2f}" for r in rs)
    print(f"{name:30} {len(rs):6} {mean(lambda r: r['throughput']['images_per_second']):8.0f} "
          f"{mean(lambda r: r['timing']['total'])*1e3:8.2f} {mean(lambda r: r['timing']['backward'])*1e3:12.2f} "
          f"{mean(lambda r: r['timing']['comm'])*1e3:8.2f} {mean(lambda r: r['timing']['exposed_comm'])*1e3:11.2f} "
          f"{split('waiting_for_slowest_backward'):>19} {split('after_last_backward'):>15} {each:>24}")
PY
echo "records: $out"
