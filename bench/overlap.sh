#!/usr/bin/env bash
# Exposed communication with and without overlapping the gradient allreduce with backward:
# ResNet-20 on Fashion-MNIST, 2 ranks (one per core), the same steps with reducer.overlap true and
# false, for each reducer given (default: ring). Prints one line per run from the records.
# Usage: bench/overlap.sh [BUILD_DIR] [STEPS] [REDUCERS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
steps=${2:-120}
shift 2 2>/dev/null || true
reducers=("${@:-ring}")
source scripts/mpi-env.sh
out=$(mktemp -d /tmp/dtbench-overlap-XXXXXX)
for reducer in "${reducers[@]}"; do
  for overlap in true false; do
    mpirun -np 2 --bind-to core "$build/apps/dtbench" train \
      --set model.arch=resnet20 --set batch.per_rank=64 --set duration.steps="$steps" \
      --set eval.every_steps="$steps" --set reducer.name="$reducer" --set reducer.overlap=$overlap \
      --set reducer.bucket_mib=0.25 --set threads=1 --set output.dir="$out" \
      --set name="overlap-$reducer-$overlap" >/dev/null
  done
done
/usr/bin/python3 - "$out" <<'PY'
import glob, json, sys
print(f"{'run':28} {'img/s':>8} {'step ms':>8} {'backward ms':>12} {'comm ms':>8} {'exposed ms':>11} {'exposed share':>14}")
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    r = json.load(open(path))
    t = r["timing"]
    print(f"{r['name']:28} {r['throughput']['images_per_second']:8.0f} {t['total']*1e3:8.2f} {t['backward']*1e3:12.2f} "
          f"{t['comm']*1e3:8.2f} {t['exposed_comm']*1e3:11.2f} {t['exposed_comm']/t['total']:14.1%}")
PY
echo "records: $out"
