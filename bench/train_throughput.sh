#!/usr/bin/env bash
# Training throughput of dtbench (oneDNN) against PyTorch 1.13 on the same machine, in one run.
#
# For each workload it runs bench_train_step (dtbench) and bench/torch_peer.py (PyTorch) back to back with the
# same number of threads, ROUNDS times alternating, and keeps each side's best round (the least disturbed
# by other processes on a shared machine; every round is printed too). It prints images per second for each
# side, their ratio, and dtbench's achieved GFLOP/s (convolution and fully connected FLOPs, 6 x MACs per
# image) as a fraction of the peak fp32 FMA rate that bench_train_step measures in the same run. dtbench
# in bf16 is timed as well (no PyTorch counterpart; recorded, not claimed).
#
# It builds nothing: build bench_train_step first, e.g.
#   cmake --preset release && cmake --build build/release --target bench_train_step
# Usage: bench/train_throughput.sh [BUILD_DIR] (default build/release); environment: THREADS (2), ROUNDS (2),
# OUT (a file to append the raw JSON lines to).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build/release}"
bin="$build/bench/bench_train_step"
threads="${THREADS:-2}"
rounds="${ROUNDS:-2}"
py=/usr/bin/python3  # the only interpreter with torch 1.13 on this machine

if [[ ! -x "$bin" ]]; then
  echo "train_throughput: $bin not found; build the bench_train_step target first" >&2
  exit 2
fi
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "train_throughput: $py has no torch (install python3-torch)" >&2
  exit 2
fi

export OMP_NUM_THREADS="$threads"
raw="$(mktemp)"
trap 'rm -f "$raw"' EXIT

# name | model args | steps (dtbench) | steps (torch)
workloads=(
  "resnet20|--arch resnet20 --input 1,28,28 --classes 10 --batch 128|20|10"
  "resnet50|--arch resnet50 --input 3,224,224 --classes 1000 --batch 16|6|4"
)

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) CPUs, OMP_NUM_THREADS=$threads, $rounds rounds" >&2
for w in "${workloads[@]}"; do
  IFS='|' read -r name args dsteps tsteps <<<"$w"
  for ((r = 1; r <= rounds; r++)); do
    echo "# $name round $r: dtbench fp32" >&2
    "$bin" $args --warmup 2 --steps "$dsteps" --peak | sed "s/^{/{\"workload\":\"$name\",\"round\":$r,/" >>"$raw"
    echo "# $name round $r: pytorch" >&2
    "$py" "$root/bench/torch_peer.py" $args --threads "$threads" --warmup 2 --steps "$tsteps" |
      sed "s/^{/{\"workload\":\"$name\",\"round\":$r,/" >>"$raw"
  done
  echo "# $name: dtbench bf16" >&2
  "$bin" $args --precision bf16 --warmup 2 --steps "$dsteps" | sed "s/^{/{\"workload\":\"$name\",\"round\":1,/" >>"$raw"
done

if [[ -n "${OUT:-}" ]]; then cat "$raw" >>"$OUT"; fi

"$py" - "$raw" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| workload | round | implementation | images/s (median step) | images/s (fastest step) | GFLOP/s (median) | peak FMA GFLOP/s |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    impl = r["impl"] + ("" if r["impl"] == "pytorch" else " " + r["precision"])
    gf = "%.1f" % r["gflops"] if "gflops" in r else ""
    peak = "%.1f" % r["peak_fma_gflops"] if "peak_fma_gflops" in r else ""
    print("| %s | %d | %s | %.1f | %.1f | %s | %s |" % (r["workload"], r["round"], impl, r["images_per_s"],
                                                         r["batch"] / r["step_s_min"], gf, peak))
print()
print("Summary: each side's best round (by median step time); 'fastest' uses each side's fastest single step")
print("over all rounds (the least disturbed by other processes). Of peak: dtbench GFLOP/s over the highest")
print("peak FMA rate measured in this run.")
print()
print("| workload | dtbench fp32 images/s | PyTorch images/s | ratio | ratio (fastest steps) | dtbench GFLOP/s | of peak | of peak (fastest step) | dtbench bf16 images/s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
peak = max(r["peak_fma_gflops"] for r in rows if "peak_fma_gflops" in r)
for name in dict.fromkeys(r["workload"] for r in rows):
    ds = [r for r in rows if r["workload"] == name and r["impl"] == "dtbench" and r["precision"] == "fp32"]
    ts = [r for r in rows if r["workload"] == name and r["impl"] == "pytorch"]
    bs = [r for r in rows if r["workload"] == name and r["impl"] == "dtbench" and r["precision"] == "bf16"]
    d = max(ds, key=lambda r: r["images_per_s"])
    t = max(ts, key=lambda r: r["images_per_s"])
    d_min = min(r["step_s_min"] for r in ds)
    t_min = min(r["step_s_min"] for r in ts)
    flops = d["flops_per_image_train"] * d["batch"]
    print("| %s (batch %d) | %.1f | %.1f | %.2fx | %.2fx | %.1f | %.1f%% | %.1f%% | %s |" % (
        name, d["batch"], d["images_per_s"], t["images_per_s"], d["images_per_s"] / t["images_per_s"],
        t_min / d_min, d["gflops"], 100 * d["gflops"] / peak, 100 * flops / d_min / 1e9 / peak,
        "%.1f" % max(r["images_per_s"] for r in bs) if bs else ""))
print()
print("peak fp32 FMA rate: %.1f GFLOP/s (highest of %d measurements)" % (
    peak, sum("peak_fma_gflops" in r for r in rows)))
EOF
