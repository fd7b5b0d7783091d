#!/usr/bin/env bash
# The main job on the embedded default: installs what is missing, builds, then reproduces the seeds' claims at the
# quick scale (results/claims/<id>: each claim's experiments, its criterion fixed before the runs) on local MPI
# ranks, prints the verdict table and writes REPORT.md and its figures. About 10 minutes on a 2-core machine
# with the build.
#   bash scripts/run-default.sh            # local mpirun, no Slurm needed
#   bash scripts/run-default.sh --slurm    # the sweep experiments submitted with sbatch (waits for them)
# OUT overrides the report folder (default results/reproduce-quick); BUILD_DIR the build folder (a Ninja one: the ci
# preset's). A rerun skips the runs whose records are complete; after a claim's definition changed (results/claims),
# the folder of its earlier runs is refused: remove it or set OUT. The full scale (the committed results/reproduce
# was written by the command below; rerun it into a new folder: the committed records predate config keys added
# since, which a rerun refuses)
#   dtbench reproduce --scale full --local --out results/reproduce
set -euo pipefail
cd "$(dirname "$0")/.."
mode=--local
if [ "${1:-}" = "--slurm" ]; then mode="--submit --wait"; fi
out=${OUT:-results/reproduce-quick}
build=${BUILD_DIR:-build/ci}

bash scripts/setup.sh
# The test command's build (the release build compiled as unity builds: 3.3 instead of 5.9 minutes for dtbench on
# 2 cores, BENCHMARKS.md), so that either README command reuses the other's.
cmake --preset ci -B "$build" >/dev/null
cmake --build "$build" -j"$(nproc)" --target dtbench
source scripts/mpi-env.sh

start=$(date +%s)
# shellcheck disable=SC2086
"$build/apps/dtbench" reproduce --scale quick $mode --out "$out"
/usr/bin/python3 analysis/plot.py claims "$out" >/dev/null
echo
echo "reproduction finished in $(( $(date +%s) - start )) s"
echo "report: $out/REPORT.md   figures: $out/figures/   records: $out/<claim>/<experiment>/runs/"
