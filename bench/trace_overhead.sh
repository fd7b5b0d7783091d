#!/usr/bin/env bash
# What --trace costs: the same training run without and with `--trace`, alternated off on on off off on ..., on
# K ranks. Prints each round's mean step time (the record's timing.total) and images per second, then the
# medians over rounds and the median of the per-round ratio on/off of the step time, and the load average.
# The goal (issue 17): the step time changes by less than 2% with the trace on.
#
# Usage: bench/trace_overhead.sh DTBENCH [K] [--set key=value ...]
# Environment: ROUNDS (5), OUT (a folder to keep the records and traces in; default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
shift
k=2
if [[ $# -gt 0 && $1 != --set ]]; then k=$1; shift; fi
rounds=${ROUNDS:-5}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
sets=("$@")
if [[ ${#sets[@]} -eq 0 ]]; then
  sets=(--set model.arch=resnet8 --set batch.global=128 --set duration.steps=200 --set eval.every_steps=200
        --set threads=1)
fi
run() {  # side round
  local side=$1 r=$2 extra=()
  [[ $side == on ]] && extra=(--trace "$out/trace$r.json")
  mpirun -np "$k" --oversubscribe --bind-to none "$bin" train "${sets[@]}" --set output.dir="$out/current" \
    --set name=traced "${extra[@]}" >/dev/null
  mv "$out/current" "$out/$side$r"
}
# Odd rounds run off then on, even rounds on then off, so that a drift of the machine's speed within a round
# does not favour the side that always runs first.
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then run off "$r"; run on "$r"; else run on "$r"; run off "$r"; fi
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, math, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rec = {s: [json.load(open(f"{out}/{s}{r}/traced.json")) for r in range(1, rounds + 1)] for s in ("off", "on")}
step = {s: [x["timing"]["total"] for x in rec[s]] for s in rec}
ips = {s: [x["throughput"]["images_per_second"] for x in rec[s]] for s in rec}
for r in range(rounds):
    print(f"round {r + 1}: off {step['off'][r] * 1e3:.2f} ms/step {ips['off'][r]:.0f} img/s   "
          f"on {step['on'][r] * 1e3:.2f} ms/step {ips['on'][r]:.0f} img/s   on/off {step['on'][r] / step['off'][r]:.4f}")
ratio = [y / x for x, y in zip(step["off"], step["on"])]
# A distribution-free 95% interval for the median ratio: the order statistics k and n + 1 - k with k the largest
# such that P(Binomial(n, 1/2) < k) <= 0.025 (none below 6 rounds).
n, k = len(ratio), 0
while sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n <= 0.025:
    k += 1
srt = sorted(ratio)
interval = (f", 95% interval of the median [{srt[k - 1]:.4f}, {srt[n - k]:.4f}]" if k >= 1
            else ", no 95% interval below 6 rounds")
spans = len([e for e in json.load(open(f"{out}/trace1.json"))["traceEvents"] if e.get("ph") == "X"])
print(f"median step time: off {statistics.median(step['off']) * 1e3:.2f} ms, on {statistics.median(step['on']) * 1e3:.2f} ms, "
      f"on/off {statistics.median(ratio):.4f} (min {min(ratio):.4f}, max {max(ratio):.4f}{interval}); "
      f"{spans} spans in a trace; load average {os.getloadavg()[0]:.2f}")
PY
