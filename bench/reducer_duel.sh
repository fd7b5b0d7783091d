#!/usr/bin/env bash
# Issue 17's reducer-speed goal at the sizes where it is closest: dtbench's best reducer against MPI_Allreduce on
# 2 ranks, alternated. Each round runs `dtbench allreduce` once per reducer (same sizes), so a round's ratio
#     MPI_Allreduce's median iteration time / the fastest listed dtbench reducer's
# compares runs seconds apart. The order matters on this machine: with MPI always first, then always second, the
# medians moved by up to 40% (measured). So odd rounds run MPI first and even rounds last, a pair of rounds
# gives the geometric mean of its two ratios (the order's bias cancels), and the figure per size is the median
# over the pairs, beside each order's own median and the count of pairs at or above 1.0.
# Usage: bench/reducer_duel.sh [BUILD_DIR] [OUT_DIR]   (defaults: build/release, BUILD_DIR/reducer_duel)
# Environment: ROUNDS (16, even), ITERS (40), WARMUP (5), MIN (4M), MAX (16M), REDUCERS (shared_memory,halving_doubling,ring).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
out=${2:-$build/reducer_duel}
dtbench=$build/apps/dtbench
rounds=${ROUNDS:-16} iters=${ITERS:-40} warmup=${WARMUP:-5} min=${MIN:-4M} max=${MAX:-16M}
reducers=${REDUCERS:-shared_memory,halving_doubling,ring}
if [ ! -x "$dtbench" ]; then
  echo "reducer_duel: $dtbench not found; build the dtbench target first" >&2
  exit 2
fi
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/load.txt"
for r in $(seq 1 "$rounds"); do
  order="mpi ${reducers//,/ }"
  if [ $((r % 2)) = 0 ]; then order="${reducers//,/ } mpi"; fi
  for red in $order; do
    mpirun -np 2 "$dtbench" allreduce -b "$min" -e "$max" -n "$iters" -w "$warmup" --reducer "$red" \
      --json "$out/r$r-$red.json" > /dev/null
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
/usr/bin/python3 - "$out" "$rounds" "$reducers" <<'PY'
import json, statistics, sys
out, rounds, reducers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
ratios = {}
for r in range(1, rounds + 1):
    t = {}
    for red in ["mpi"] + reducers:
        for row in json.load(open(f"{out}/r{r}-{red}.json"))["rows"]:
            t[(red, row["bytes"])] = row["time_median_us"]
    for b in sorted({b for _, b in t}):
        ratios.setdefault(b, []).append(t[("mpi", b)] / min(t[(red, b)] for red in reducers))
print(f"| size | MPI_Allreduce / best of {', '.join(reducers)}: median over {rounds // 2} pairs | pairs >= 1.0 | "
      "MPI first (median) | MPI last (median) |")
print("| --- | ---: | ---: | ---: | ---: |")
for b, v in ratios.items():
    pairs = [(v[i] * v[i + 1]) ** 0.5 for i in range(0, len(v) - 1, 2)]
    print(f"| {b >> 20} MiB | {statistics.median(pairs):.3f}x | {sum(x >= 1 for x in pairs)}/{len(pairs)} | "
          f"{statistics.median(v[0::2]):.2f}x | {statistics.median(v[1::2]):.2f}x |")
PY
