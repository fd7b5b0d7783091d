#!/usr/bin/env bash
# Tensor model parallelism against data parallelism at the same rank count (parallel.model_parallel,
# workloads/cpu/split_layer.hpp): K ranks as one model-parallel group (M = K) against K data-parallel
# replicas (M = 1), the same MLP (or ARCH) on Fashion-MNIST and the same global batch, alternated DP MP DP MP ... for
# each (hidden width, global batch) point. Data parallelism allreduces every weight's gradient each step
# (2 (K-1)/K x 4 P bytes for P weights); model parallelism exchanges activations instead (per step about
# 4 B ((K-1)/K (H + C) + (K-1) H) bytes for a global batch B, hidden width H, C classes), so it should win where
# P is large against B H: wide layers, small batches (the seeds: data parallelism for few weights, model
# parallelism for huge models).
#
# Prints per point the medians over rounds of images per second, the median of the per-round ratio MP/DP,
# parameters per rank, the model's memory per rank (the record's memory_per_rank: weights, gradients, optimizer
# state, the training plan's activations), the largest rank's peak RSS (GNU time's maximum resident set size of
# mpirun's children, the data set included), MP's activation bytes received per training step, and the load
# average.
#
# Usage: bench/model_parallel.sh DTBENCH [K]
# Environment: ROUNDS (3), ARCH (mlp; another arch, e.g. resnet20, has no hidden width: HIDDEN is then ignored),
# HIDDEN ("1024 8192"), BATCHES ("32 512"), STEPS (40), OUT (a folder to keep the records in; default a temporary
# one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
k=${2:-2}
rounds=${ROUNDS:-3}
arch=${ARCH:-mlp}
hidden=${HIDDEN:-"1024 8192"}
[[ $arch == mlp ]] || hidden=0  # 0: the arch's own widths
batches=${BATCHES:-"32 512"}
steps=${STEPS:-40}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
run() {  # mode hidden batch round
  local mode=$1 h=$2 b=$3 r=$4 m=1
  [[ $mode == mp ]] && m=$k
  local dir="$out/$mode-h$h-b$b-r$r" width=()
  [[ $h == 0 ]] || width=(--set model.hidden="$h")
  /usr/bin/time -f "%M" -o "$out/rss" mpirun -np "$k" --oversubscribe --bind-to none "$bin" train \
    --set model.arch="$arch" "${width[@]}" --set data.dataset=fashion-mnist --set batch.global="$b" \
    --set duration.steps="$steps" --set eval.every_steps="$steps" --set threads=1 --set optimizer.name=sgd \
    --set optimizer.momentum=0.9 --set optimizer.lr=0.01 --set parallel.model_parallel="$m" \
    --set output.dir="$dir" --set name=run >/dev/null
  cp "$out/rss" "$dir/rss_kib"
}
for h in $hidden; do
  for b in $batches; do
    for ((r = 1; r <= rounds; r++)); do
      run dp "$h" "$b" "$r"
      run mp "$h" "$b" "$r"
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" "$k" "$hidden" "$batches" "$arch" <<'PY'
import json, statistics, sys
out, rounds, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hidden, batches = [int(x) for x in sys.argv[4].split()], [int(x) for x in sys.argv[5].split()]
print(f"{sys.argv[6]}, {k} ranks; data parallel (DP: {k} replicas) against model parallel (MP: one group of {k}); "
      f"medians over {rounds} rounds (hidden 0: the arch's own widths)")
print("| hidden | global batch | DP img/s | MP img/s | MP/DP per round, median [min, max] | DP params/rank | "
      "MP params/rank | DP model MiB/rank | MP model MiB/rank | DP peak RSS MiB | MP peak RSS MiB | MP activation MiB/step |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for h in hidden:
    for b in batches:
        rec = {m: [json.load(open(f"{out}/{m}-h{h}-b{b}-r{r}/run.json")) for r in range(1, rounds + 1)] for m in ("dp", "mp")}
        rss = {m: [int(open(f"{out}/{m}-h{h}-b{b}-r{r}/rss_kib").read()) / 1024 for r in range(1, rounds + 1)]
               for m in ("dp", "mp")}
        ips = {m: [x["throughput"]["images_per_second"] for x in rec[m]] for m in rec}
        ratio = [q / p for p, q in zip(ips["dp"], ips["mp"])]
        mp = rec["mp"][0]["extra"]["model_parallel"]
        # Weights, gradients, optimizer state and the training plan's activations (the record's memory_per_rank).
        model = {m: sum(rec[m][0]["extra"]["memory_per_rank"][key] for key in
                        ("weights_and_gradients_bytes", "optimizer_state_bytes", "activation_bytes")) / 2**20 for m in rec}
        print(f"| {h} | {b} | {statistics.median(ips['dp']):.0f} | {statistics.median(ips['mp']):.0f} | "
              f"{statistics.median(ratio):.2f}x [{min(ratio):.2f}, {max(ratio):.2f}] | "
              f"{rec['dp'][0]['extra']['parameters']} | {mp['parameters_per_rank']} | {model['dp']:.1f} | {model['mp']:.1f} | "
              f"{statistics.median(rss['dp']):.0f} | {statistics.median(rss['mp']):.0f} | "
              f"{mp['activation_bytes_received_per_step'] / 2**20:.2f} |")
print("load average:", open("/proc/loadavg").read().split()[:3])
PY
