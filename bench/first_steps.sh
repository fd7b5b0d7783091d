#!/usr/bin/env bash
# Where a short run's time goes: the first steps against the rest, from `--trace` (per-step spans), for ResNet-8 on
# Fashion-MNIST at batch 32 in fp32, bf16 and fp16, with CUDA's lazy and eager module loading (eager loads every
# kernel when the context is made, so a first-step cost that stays is not kernel loading). Prints, per run, the
# first three forward and backward spans and the median of the rest, then each record's per-step means.
# Usage: bench/first_steps.sh DTBENCH OUT_DIR [STEPS]   (the gpu backend: a machine with an NVIDIA GPU)
set -euo pipefail
dtbench=$1
out=$2
steps=${3:-60}
mkdir -p "$out"
for m in LAZY EAGER; do
  for p in fp32 bf16 fp16; do
    t0=$EPOCHREALTIME
    CUDA_MODULE_LOADING=$m "$dtbench" train --set name="r8-$p-$m" --set backend=gpu --set precision="$p" \
      --set model.arch=resnet8 --set batch.per_rank=32 --set duration.steps="$steps" --set eval.every_steps="$steps" \
      --set eval.batch=1000 --set output.dir="$out" --trace "$out/t-$p-$m.json" >"$out/r8-$p-$m.log" 2>&1
    echo "$m $p: $(awk "BEGIN{print $EPOCHREALTIME - $t0}") s for the whole command"
  done
done
python3 - "$out" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "t-*.json"))):
    ev = json.load(open(f))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    row = []
    for name in ("forward", "backward"):
        d = [e["dur"] / 1000 for e in ev if e.get("name") == name and e.get("ph") == "X" and e.get("pid", 0) == 0]
        row.append(f"{name}: first 3 {[round(x, 2) for x in d[:3]]} ms, median of the other {len(d) - 3} "
                   f"{statistics.median(d[3:]):.3f} ms")
    print(os.path.basename(f), "|", "; ".join(row))
for f in sorted(glob.glob(os.path.join(out, "r8-*.json"))):
    r = json.load(open(f))
    t = r["timing"]
    print(os.path.basename(f), "| record means: forward %.2f ms, backward %.2f ms, %d images/s"
          % (1e3 * t["forward"], 1e3 * t["backward"], r["throughput"]["images_per_second"]))
PY
