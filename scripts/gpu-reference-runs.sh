#!/usr/bin/env bash
# Issue 15's accuracy goal on a GPU: ResNet-20 on the whole of Fashion-MNIST to 91% test accuracy in fp32, bf16 and
# fp16, with the CPU reference runs' recipe (results/reference/configs/resnet20-fmnist-gpu-*.json: the same model,
# data, augmentation, optimizer, schedule and 10 epochs, with backend "gpu"). Device time is lent by the minute, so
# by default the three runs share the GPU at once (their images/s and times are then those of a shared GPU and
# host; SEQUENTIAL=1 runs them one after another). Each run has a time limit (LIMIT_S, default 300): dtbench stops
# on the SIGTERM that `timeout` sends and still writes its record. Prints a table of the records last.
# Usage: scripts/gpu-reference-runs.sh DTBENCH OUT_DIR
# Reads Fashion-MNIST from /usr/share/datasets/fashion-mnist, or from FMNIST_DIR when set (data.path).
set -uo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: scripts/gpu-reference-runs.sh DTBENCH OUT_DIR" >&2
  exit 2
fi
dtbench=$1
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
pids=()
for p in fp32 bf16 fp16; do
  cfg="$here/results/reference/configs/resnet20-fmnist-gpu-$p.json"
  timeout "${LIMIT_S:-300}" "$dtbench" train "$cfg" --set output.dir="$out" \
    ${FMNIST_DIR:+--set data.path="$FMNIST_DIR"} > "$out/resnet20-fmnist-gpu-$p.log" 2>&1 &
  pids+=($!)
  if [[ ${SEQUENTIAL:-0} == 1 ]]; then wait "${pids[-1]}"; fi
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done

python3 - "$out" <<'PYEOF2'
import json, os, sys
out = sys.argv[1]
print("| run | status | epochs to 91% | time to 91% (s) | final accuracy | images/s | steady images/s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for p in ("fp32", "bf16", "fp16"):
    name = f"resnet20-fmnist-gpu-{p}"
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path):
        print(f"| {name} | no record (see {name}.log) | | | | | |")
        continue
    r = json.load(open(path))
    t = r.get("time_to_accuracy") or {}
    reached = bool(t.get("reached"))
    curve = [c for c in r.get("curve", []) if c.get("test_accuracy") is not None]
    th = r.get("throughput", {})
    cells = [name, r["status"],
             f"{t['epoch']:g}" if reached else "-",
             f"{t['seconds']:.1f}" if reached else "-",
             f"{100 * curve[-1]['test_accuracy']:.2f}%" if curve else "-",
             f"{th.get('images_per_second', 0):.0f}",
             f"{th['steady_images_per_second']:.0f}" if th.get("steady_images_per_second") else "-"]
    print("| " + " | ".join(cells) + " |")
    print(f"  {name}: accuracy per epoch", ", ".join(f"{100 * c['test_accuracy']:.1f}" for c in curve))
PYEOF2
exit $rc
