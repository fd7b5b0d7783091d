#!/usr/bin/env bash
# dtbench's GPU backend against PyTorch on one GPU: the ResNet-20 Fashion-MNIST reference recipe (10 epochs, batch
# 128, target 91%) in fp32, bf16 and fp16, the two sides alternated per precision (dtbench fp32, torch fp32, dtbench
# bf16, ...), ROUNDS times (default 1). dtbench runs results/reference/configs/resnet20-fmnist-gpu-*.json; PyTorch
# runs bench/torch_recipe.py --device cuda (eager mode, cudnn.benchmark, no TF32 in fp32, autocast in bf16/fp16).
# Writes the records, PyTorch's result files and the logs under OUT_DIR/rR/ and prints a table of images/s and time
# to 91% last: dtbench's steady figure (its first step left out) beside PyTorch's after its first epoch (cuDNN's
# benchmarking and first launches left out), and both sides' overall figures. Each run has a time limit (LIMIT_S,
# default 120). Exits 1 when a run failed.
# Usage: bench/gpu_resnet20_vs_torch.sh DTBENCH DATA_DIR OUT_DIR
#   DATA_DIR: the Fashion-MNIST IDX files, gzipped or not. PYTHON (default python3) must have PyTorch with CUDA.
set -uo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: bench/gpu_resnet20_vs_torch.sh DTBENCH DATA_DIR OUT_DIR" >&2
  exit 2
fi
dtbench=$1
data=$2
out=$3
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
limit=${LIMIT_S:-120}
status=0
for ((r = 1; r <= ${ROUNDS:-1}; r++)); do
  o="$out/r$r"
  mkdir -p "$o"
  uptime >> "$o/load.txt"
  for p in fp32 bf16 fp16; do
    timeout "$limit" "$dtbench" train "$here/results/reference/configs/resnet20-fmnist-gpu-$p.json" \
      --set output.dir="$o" --set data.path="$data" > "$o/dtbench-$p.log" 2>&1 || { echo "dtbench $p: exit $?"; status=1; }
    # PyTorch with its own libraries: the LD_LIBRARY_PATH set up for dtbench (gpu-unpack.sh) puts the system's
    # cuDNN before the one PyTorch's wheel brings; the machine's own path is kept in DTB_MACHINE_LD_LIBRARY_PATH.
    timeout "$limit" env LD_LIBRARY_PATH="${DTB_MACHINE_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" "$py" "$here/bench/torch_recipe.py" --device cuda --precision "$p" --arch resnet20 --epochs 10 \
      --batch 128 --lr 0.1 --crop-padding 2 --flip --target 0.91 --threads 2 --data "$data" \
      --out "$o/torch-resnet20-fmnist-gpu-$p.json" > "$o/torch-$p.log" 2>&1 || { echo "torch $p: exit $?"; status=1; }
    uptime >> "$o/load.txt"
  done
done
"$py" - "$out" <<'PYEOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
print("| precision | dtbench steady images/s | PyTorch images/s after epoch 1 | ratio | overall images/s, dtbench / PyTorch | "
      "dtbench epochs, s to 91% | PyTorch epochs, s to 91% | rounds |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for p in ("fp32", "bf16", "fp16"):
    d = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, "r*", f"resnet20-fmnist-gpu-{p}.json")))]
    t = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, "r*", f"torch-resnet20-fmnist-gpu-{p}.json")))]
    if not d or not t:
        print(f"| {p} | {len(d)} dtbench record(s) | {len(t)} PyTorch result(s) | | | | |")
        continue
    # A run stopped by its time limit can lack a figure: the median of those that have one, "-" when none has.
    def med(values):
        values = [v for v in values if v]
        return statistics.median(values) if values else None
    di = med(r["throughput"].get("steady_images_per_second") for r in d)
    ti = med(r.get("steady_images_per_second") for r in t)
    do = med(r["throughput"].get("images_per_second") for r in d)
    to = med(r.get("images_per_second") for r in t)
    fmt = lambda v: f"{v:.0f}" if v else "-"  # noqa: E731
    ratio = f"{di / ti:.2f}" if di and ti else "-"
    overall = f"{fmt(do)} / {fmt(to)} = {do / to:.2f}" if do and to else "-"
    dt = [r["time_to_accuracy"] for r in d]
    tt = [r["time_to_accuracy"] for r in t]
    dts = (f"{statistics.median(x['epoch'] for x in dt):g}, {statistics.median(x['seconds'] for x in dt):.1f}"
           if all(x and x.get("reached") for x in dt) else "not reached in every round")
    tts = (f"{statistics.median(x['epoch'] for x in tt):g}, {statistics.median(x['seconds'] for x in tt):.1f}"
           if all(tt) else "not reached in every round")
    print(f"| {p} | {fmt(di)} | {fmt(ti)} | {ratio} | {overall} | {dts} | {tts} | {min(len(d), len(t))} |")
PYEOF
exit $status
