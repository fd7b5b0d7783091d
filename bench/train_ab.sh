#!/usr/bin/env bash
# Two dtbench binaries on the same training run, alternated A B A B ..., for a change that must not alter
# results or speed (a refactoring). For each round it runs `mpirun -np K A train` then the same with B
# (same config, same seed) and prints both runs' images per second; at the end the median over rounds of
# each side and of the per-round ratio A/B, the load average, and the difference between the two first
# records with the fields that are expected to differ left out (provenance, timestamps, wall and
# per-step seconds, throughput, time to accuracy's seconds, the curve's wall seconds). "identical" means
# every other field, weights-derived losses and accuracies included, is equal.
#
# Usage: bench/train_ab.sh DTBENCH_A DTBENCH_B [K] [--set key=value ...]
# Environment: ROUNDS (3), OUT (a folder to keep the records in; default a temporary one), A_SET and B_SET
# (one side's own key=value settings, space-separated: the same binary twice compares two settings, e.g.
# A_SET=reducer.name=ring B_SET=reducer.name=shared_memory; the records then differ in those keys).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
a=$1 b=$2
shift 2
k=2
if [[ $# -gt 0 && $1 != --set ]]; then k=$1; shift; fi
rounds=${ROUNDS:-3}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
sets=("$@")
if [[ ${#sets[@]} -eq 0 ]]; then
  sets=(--set model.arch=resnet8 --set batch.global=128 --set duration.steps=60 --set eval.every_steps=30
        --set eval.target_accuracy=0.5 --set threads=1)
fi
run() {  # side round
  local bin=$1 side=$2 r=$3 own=()
  local kv
  if [[ $side == a ]]; then kv=${A_SET:-}; else kv=${B_SET:-}; fi
  for x in $kv; do own+=(--set "$x"); done
  # Both sides write to the same folder (the resolved config names it), then the run is moved aside.
  mpirun -np "$k" --oversubscribe --bind-to none "$bin" train "${sets[@]}" "${own[@]}" --set output.dir="$out/current" \
    --set name=ab >/dev/null
  mv "$out/current" "$out/$side$r"
}
for ((r = 1; r <= rounds; r++)); do
  run "$a" a "$r"
  run "$b" b "$r"
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rec = {s: [json.load(open(f"{out}/{s}{r}/ab.json")) for r in range(1, rounds + 1)] for s in "ab"}
ips = {s: [x["throughput"]["images_per_second"] for x in rec[s]] for s in "ab"}
for r in range(rounds):
    print(f"round {r + 1}: A {ips['a'][r]:.1f} img/s  B {ips['b'][r]:.1f} img/s  A/B {ips['a'][r] / ips['b'][r]:.3f}")
ratio = [x / y for x, y in zip(ips["a"], ips["b"])]
print(f"median: A {statistics.median(ips['a']):.1f} img/s, B {statistics.median(ips['b']):.1f} img/s, "
      f"A/B {statistics.median(ratio):.3f} (min {min(ratio):.3f}, max {max(ratio):.3f}); "
      f"load average {os.getloadavg()[0]:.2f}")
# Fields that measure time or name the build: expected to differ between two runs of any binary.
TIMED = {"provenance", "started_utc", "finished_utc", "wall_seconds", "timing", "throughput", "per_rank_timing",
         "achieved_gflops", "exposed_comm_share", "exposed_comm_split", "seconds"}
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in TIMED}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
def diff(x, y, path=""):
    if type(x) != type(y):
        return [f"{path}: {x!r} != {y!r}"]
    if isinstance(x, dict):
        d = [f"{path}/{k}: only in {'A' if k in x else 'B'}" for k in sorted(set(x) ^ set(y))]
        if list(x) != list(y) and not d:
            d.append(f"{path}: key order differs")
        return d + [e for k in x if k in y for e in diff(x[k], y[k], f"{path}/{k}")]
    if isinstance(x, list):
        if len(x) != len(y):
            return [f"{path}: {len(x)} items != {len(y)}"]
        return [e for i, (u, v) in enumerate(zip(x, y)) for e in diff(u, v, f"{path}/{i}")]
    return [] if x == y else [f"{path}: {x!r} != {y!r}"]
a, b = rec["a"][0], rec["b"][0]
for c in a["curve"] + b["curve"]:
    c.pop("wall_seconds", None)
d = diff(strip(a), strip(b))
print("records (round 1, untimed fields):", "identical" if not d else f"{len(d)} differences")
for line in d[:40]:
    print("  ", line)
print("left out as timed or provenance:", ", ".join(sorted(TIMED)), "and /curve/*/wall_seconds")
PY
