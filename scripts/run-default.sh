#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, then runs the default campaign
# (slurm/specs/default.json: ResNet-8 on Fashion-MNIST on 2 local MPI ranks, three reducers x two
# optimizers, one epoch each), prints the regenerated table and writes the plots.
#   bash scripts/run-default.sh            # local mpirun, no Slurm needed
#   bash scripts/run-default.sh --slurm    # the same campaign submitted with sbatch (waits for it)
# OUT overrides the campaign folder (default results/default); BUILD_DIR the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=--local
if [ "${1:-}" = "--slurm" ]; then mode="--submit --wait"; fi
out=${OUT:-results/default}
build=${BUILD_DIR:-build/release}

bash scripts/setup.sh
cmake --preset release -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" --target dtbench
source scripts/mpi-env.sh

dtbench="$build/apps/dtbench"
start=$(date +%s)
# A rerun skips the runs whose records exist and are complete.
# shellcheck disable=SC2086
"$dtbench" sweep slurm/specs/default.json --out "$out" $mode
echo
"$dtbench" table "$out" --format md | tee "$out/table.md"
# The reducers' bus bandwidth on the same 2 ranks, for the busbw figure (kept on reruns).
if [ ! -f "$out/allreduce.json" ]; then
  mpirun -np 2 --bind-to core "$dtbench" allreduce -b 4K -e 16M -f 4 -n 10 -w 3 --reducer all \
    --json "$out/allreduce.json" >/dev/null
fi
/usr/bin/python3 analysis/plot.py all "$out" --allreduce "$out/allreduce.json" --out "$out/plots"
echo
echo "campaign finished in $(( $(date +%s) - start )) s"
echo "records: $out/runs/   table: $out/table.md   plots: $out/plots/"
