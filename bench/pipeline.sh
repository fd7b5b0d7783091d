#!/usr/bin/env bash
# Pipeline stages against data parallelism at the same rank count (parallel.pipeline_stages,
# workloads/train/pipeline.hpp): K ranks as one pipeline of S = K stages against K data-parallel replicas, the
# same network on Fashion-MNIST and the same global batch, alternated DP GPipe 1F1B DP GPipe 1F1B ... for each
# micro-batch count M.
#
# Prints per M the medians over rounds of images per second and of the per-round ratio to DP, the measured bubble
# fraction (the record's extra.pipeline.bubble_fraction_measured: each stage's seconds waiting for its neighbours
# over its seconds in the step's forwards and backwards, averaged over the stages) beside GPipe's (S - 1) / (M + S -
# 1), the stages' cut and the imbalance of their measured costs, the model's memory per rank (the record's
# memory_per_rank: weights, gradients, optimizer state and the training plans' activations, rank 0's, which holds
# stage 0) and the load average. The measured bubble counts the imbalance of the stages as idle time too: with
# stages of costs c_s it is at least 1 - mean(c) / max(c) even for large M.
#
# Usage: bench/pipeline.sh DTBENCH [K]
# Environment: ROUNDS (3), ARCH (resnet20), HIDDEN (the mlp's or simple_cnn's hidden width; default the config's),
# BATCH (128), MICRO ("1 2 4 8 16"), STEPS (12), OUT (a folder to keep the records in; default a temporary one).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin=$1
k=${2:-2}
rounds=${ROUNDS:-3}
arch=${ARCH:-resnet20}
batch=${BATCH:-128}
micro=${MICRO:-"1 2 4 8 16"}
steps=${STEPS:-12}
width=()
[[ -n ${HIDDEN:-} ]] && width=(--set model.hidden="$HIDDEN")
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
run() {  # mode micro round
  local mode=$1 m=$2 r=$3 stages=$k schedule=1f1b
  [[ $mode == dp ]] && stages=1 && m=1
  [[ $mode == gpipe ]] && schedule=gpipe
  local dir="$out/$mode-m$2-r$r"
  mpirun -np "$k" --oversubscribe --bind-to none "$bin" train \
    --set model.arch="$arch" "${width[@]}" --set data.dataset=fashion-mnist --set batch.global="$batch" \
    --set batch.micro_batches="$m" --set parallel.sync_bn=false --set duration.steps="$steps" \
    --set eval.every_steps="$steps" --set threads=1 --set optimizer.name=sgd --set optimizer.momentum=0.9 \
    --set optimizer.lr=0.01 --set parallel.pipeline_stages="$stages" --set parallel.pipeline_schedule="$schedule" \
    --set output.dir="$dir" --set name=run >/dev/null
}
for m in $micro; do
  for ((r = 1; r <= rounds; r++)); do
    run dp "$m" "$r"
    run gpipe "$m" "$r"
    run 1f1b "$m" "$r"
  done
done
/usr/bin/python3 - "$out" "$rounds" "$k" "$micro" "$arch" "$batch" <<'PY'
import json, statistics, sys
out, rounds, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
micro, arch, batch = [int(x) for x in sys.argv[4].split()], sys.argv[5], int(sys.argv[6])
print(f"{arch}, global batch {batch}, {k} ranks: data parallel (DP, {k} replicas) against one pipeline of S = {k} "
      f"stages with M micro-batches; medians over {rounds} rounds")
print("| M | schedule | img/s | / DP per round, median [min, max] | bubble measured | (S-1)/(M+S-1) | "
      "stage costs max/mean | units per stage | model MiB rank 0 | activation MiB rank 0 |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
def load(mode, m, r):
    return json.load(open(f"{out}/{mode}-m{m}-r{r}/run.json"))
def mib(rec, keys=("weights_and_gradients_bytes", "optimizer_state_bytes", "activation_bytes")):
    return sum(rec["extra"]["memory_per_rank"][key] for key in keys) / 2**20
for m in micro:
    dp = [load("dp", m, r) for r in range(1, rounds + 1)]
    dp_ips = [x["throughput"]["images_per_second"] for x in dp]
    if m == micro[0]:
        print(f"| - | DP | {statistics.median(dp_ips):.0f} | 1 | - | - | - | - | {mib(dp[0]):.1f} | "
              f"{mib(dp[0], ('activation_bytes',)):.1f} |")
    for mode in ("gpipe", "1f1b"):
        recs = [load(mode, m, r) for r in range(1, rounds + 1)]
        ips = [x["throughput"]["images_per_second"] for x in recs]
        ratio = [q / p for p, q in zip(dp_ips, ips)]
        pp = recs[0]["extra"]["pipeline"]
        costs = [sum(pp["unit_seconds_measured"][st["first_unit"]:st["end_unit"]]) for st in pp["per_stage"]]
        units = " / ".join(str(st["end_unit"] - st["first_unit"]) for st in pp["per_stage"])
        bubble = statistics.median(x["extra"]["pipeline"]["bubble_fraction_measured"] for x in recs)
        print(f"| {m} | {mode} | {statistics.median(ips):.0f} | {statistics.median(ratio):.2f}x [{min(ratio):.2f}, "
              f"{max(ratio):.2f}] | {bubble:.3f} | {pp['bubble_fraction_ideal']:.3f} | "
              f"{max(costs) / statistics.mean(costs):.2f} | {units} | {mib(recs[0]):.1f} | "
              f"{mib(recs[0], ('activation_bytes',)):.1f} |")
print("load average:", open("/proc/loadavg").read().split()[:3])
PY
