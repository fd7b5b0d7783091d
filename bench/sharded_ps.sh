#!/usr/bin/env bash
# The sharded parameter server (reducer.servers, workloads/train/async_ps.hpp) against one server: the same
# asynchronous run on K ranks with S = 1 and S = SERVERS servers, alternated 1 S 1 S ..., on a model whose
# server work (an optimizer step and a send of the whole model per push) outweighs a worker's step: an MLP with
# a wide hidden layer on Fashion-MNIST at a small per-rank batch. Prints each round's images per second and
# mean step time (the record's throughput and timing.total), then the medians over rounds, the median of the
# per-round throughput ratio S/1, and the load average.
#
# With PEER set (another dtbench binary), each round runs PEER then DTBENCH at S = 1 and again at S = SERVERS,
# and the ratios are DTBENCH/PEER at each S: the same runs on two builds (a change to the protocol against the
# code before it).
#
# Usage: bench/sharded_ps.sh DTBENCH [K] [--set key=value ...]
# Environment: ROUNDS (5), SERVERS (2), OUT (a folder to keep the records in; default a temporary one), PEER.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
shift
k=2
if [[ $# -gt 0 && $1 != --set ]]; then k=$1; shift; fi
rounds=${ROUNDS:-5}
servers=${SERVERS:-2}
peer=${PEER:-}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
sets=("$@")
if [[ ${#sets[@]} -eq 0 ]]; then
  sets=(--set model.arch=mlp --set model.hidden=2048 --set batch.per_rank=16 --set duration.steps=150
        --set eval.every_steps=150 --set threads=1 --set optimizer.name=sgd --set optimizer.momentum=0.9
        --set optimizer.lr=0.01)
fi
run() {  # binary label servers round
  local b=$1 label=$2 s=$3 r=$4
  mpirun -np "$k" --oversubscribe --bind-to none "$b" train "${sets[@]}" --set parallel.mode=async \
    --set reducer.name=async_parameter_server --set reducer.servers="$s" --set output.dir="$out/current" \
    --set name=sharded >/dev/null
  mv "$out/current" "$out/$label-s$s-r$r"
}
for ((r = 1; r <= rounds; r++)); do
  for s in 1 "$servers"; do
    if [[ -n $peer ]]; then run "$peer" peer "$s" "$r"; fi
    run "$bin" bin "$s" "$r"
  done
done
/usr/bin/python3 - "$out" "$rounds" "$servers" "$k" "${peer:+peer}" <<'PY'
import json, os, statistics, sys
out, rounds, servers, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
labels = ["peer", "bin"] if len(sys.argv) > 5 and sys.argv[5] else ["bin"]
rec = {(b, s): [json.load(open(f"{out}/{b}-s{s}-r{r}/sharded.json")) for r in range(1, rounds + 1)]
       for b in labels for s in (1, servers)}
ips = {key: [x["throughput"]["images_per_second"] for x in v] for key, v in rec.items()}
step = {key: [x["timing"]["total"] for x in v] for key, v in rec.items()}
for r in range(rounds):
    print(f"round {r + 1}: " + ", ".join(f"{b} {s} server(s) {ips[b, s][r]:.0f} img/s ({step[b, s][r] * 1e3:.2f} ms/step)"
                                         for b in labels for s in (1, servers)))
def summary(a, b, what):
    ratio = [y / x for x, y in zip(ips[a], ips[b])]
    return (f"{what}: median {statistics.median(ratio):.2f}x [{min(ratio):.2f}, {max(ratio):.2f}]")
print(f"medians over {rounds} rounds, {k} ranks: " + ", ".join(f"{b} {s} server(s) {statistics.median(ips[b, s]):.0f} img/s"
                                                              for b in labels for s in (1, servers)))
for b in labels:
    print(f"{b}: per-round ratio {servers}/1 " + summary((b, 1), (b, servers), "images/s"))
if "peer" in labels:
    for s in (1, servers):
        print(f"{s} server(s): per-round ratio DTBENCH/PEER " + summary(("peer", s), ("bin", s), "images/s"))
print("load average:", open("/proc/loadavg").read().split()[:3])
PY
