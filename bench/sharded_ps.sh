#!/usr/bin/env bash
# The sharded parameter server (reducer.servers, workloads/train/async_ps.hpp) against one server: the same
# asynchronous run on K ranks with S = 1 and S = SERVERS servers, alternated 1 S 1 S ..., on a model whose
# server work (an optimizer step and a send of the whole model per push) outweighs a worker's step: an MLP with
# a wide hidden layer on Fashion-MNIST at a small per-rank batch. Prints each round's images per second and
# mean step time (the record's throughput and timing.total), then the medians over rounds, the median of the
# per-round throughput ratio S/1, and the load average.
#
# Usage: bench/sharded_ps.sh DTBENCH [K] [--set key=value ...]
# Environment: ROUNDS (5), SERVERS (2), OUT (a folder to keep the records in; default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
shift
k=2
if [[ $# -gt 0 && $1 != --set ]]; then k=$1; shift; fi
rounds=${ROUNDS:-5}
servers=${SERVERS:-2}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
sets=("$@")
if [[ ${#sets[@]} -eq 0 ]]; then
  sets=(--set model.arch=mlp --set model.hidden=2048 --set batch.per_rank=16 --set duration.steps=150
        --set eval.every_steps=150 --set threads=1 --set optimizer.name=sgd --set optimizer.momentum=0.9
        --set optimizer.lr=0.01)
fi
run() {  # servers round
  local s=$1 r=$2
  mpirun -np "$k" --oversubscribe --bind-to none "$bin" train "${sets[@]}" --set parallel.mode=async \
    --set reducer.name=async_parameter_server --set reducer.servers="$s" --set output.dir="$out/current" \
    --set name=sharded >/dev/null
  mv "$out/current" "$out/s$s-r$r"
}
for ((r = 1; r <= rounds; r++)); do
  run 1 "$r"
  run "$servers" "$r"
done
/usr/bin/python3 - "$out" "$rounds" "$servers" "$k" <<'PY'
import json, os, statistics, sys
out, rounds, servers, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rec = {s: [json.load(open(f"{out}/s{s}-r{r}/sharded.json")) for r in range(1, rounds + 1)] for s in (1, servers)}
ips = {s: [x["throughput"]["images_per_second"] for x in rec[s]] for s in rec}
step = {s: [x["timing"]["total"] for x in rec[s]] for s in rec}
for r in range(rounds):
    print(f"round {r + 1}: 1 server {ips[1][r]:.0f} img/s ({step[1][r] * 1e3:.2f} ms/step), "
          f"{servers} servers {ips[servers][r]:.0f} img/s ({step[servers][r] * 1e3:.2f} ms/step)")
ratio = [b / a for a, b in zip(ips[1], ips[servers])]
print(f"median over {rounds} rounds, {k} ranks: 1 server {statistics.median(ips[1]):.0f} img/s, {servers} servers "
      f"{statistics.median(ips[servers]):.0f} img/s; per-round ratio {servers}/1: median {statistics.median(ratio):.2f}x "
      f"[{min(ratio):.2f}, {max(ratio):.2f}]")
print("load average:", open("/proc/loadavg").read().split()[:3])
PY
