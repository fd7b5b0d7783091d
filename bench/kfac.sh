#!/usr/bin/env bash
# K-FAC against SGD with momentum on ResNet-20 / Fashion-MNIST (issue 16), one rank, 2 OpenMP threads.
#   overhead: seconds per training step at a small and a large batch (32 and 1024), K-FAC with its defaults
#             (statistics every 10 steps, inverses every 100), the two optimizers alternated, ROUNDS rounds (3),
#             median of each run's mean step time (the record's timing.total) and of its backward and optimizer
#             phases, where K-FAC's statistics and its inverses and preconditioning land. STEPS32 (200) and
#             STEPS1024 (50) steps per run; the inverse is computed at step 1 of each run (and 101, 201, ...).
#             At batch 1024 also "kfac128": K-FAC with its factors estimated from 128 of the 1024 images
#             (/optimizer/statistics_images). BATCHES ("32 1024") picks the batches.
#   tta:      the four runs of results/kfac/configs (batch 128 and 1024, each optimizer, cosine over 10 epochs,
#             evaluation every half epoch, stop at 91% test accuracy): steps and seconds to 91%.
# Usage: bench/kfac.sh BUILD_DIR [overhead|tta|all]   (records: results/kfac/overhead/ and results/kfac/tta/;
# the figure: /usr/bin/python3 analysis/plot.py curves results/kfac/tta --out results/kfac/figures
#             --series optimizer.name,batch.global)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: bench/kfac.sh BUILD_DIR [overhead|tta|all]}
part=${2:-all}
dtbench=$build/apps/dtbench
rounds=${ROUNDS:-3}
out=results/kfac/overhead
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "$part" = overhead ] || [ "$part" = all ]; then
  mkdir -p "$out"
  for round in $(seq 1 "$rounds"); do
    for batch in ${BATCHES:-32 1024}; do
      steps=$([ "$batch" = 32 ] && echo "${STEPS32:-200}" || echo "${STEPS1024:-50}")
      # Alternate which optimizer goes first from round to round.
      opts=$([ "$batch" = 32 ] && echo "sgd kfac" || echo "sgd kfac kfac128")
      order=$([ $((round % 2)) = 1 ] && echo "$opts" || echo "$opts" | tr ' ' '\n' | tac | tr '\n' ' ')
      for opt in $order; do
        name=overhead-b$batch-$opt-r$round
        rm -f "$out/$name.json" "$out/$name.mllog"
        extra=()
        [ "$opt" = kfac128 ] && extra=(--set optimizer.statistics_images=128)
        "$dtbench" train --set name="$name" --set model.arch=resnet20 --set data.dataset=fashion-mnist \
          --set batch.global="$batch" --set duration.steps="$steps" --set optimizer.name="${opt%128}" \
          --set optimizer.lr=0.1 --set eval.every_epochs=0 --set output.dir="$out" "${extra[@]}" >/dev/null
      done
    done
  done
  /usr/bin/python3 - "$out" <<'EOF'
import glob, json, statistics, sys
out = sys.argv[1]
rows = {}
for path in glob.glob(out + "/overhead-*.json"):
    r = json.load(open(path))
    _, b, opt, _ = r["name"].split("-")
    t = r["timing"]
    rows.setdefault((int(b[1:]), opt), []).append((t["total"], t["backward"], t["optimizer"], r["steps"]))
print("| batch | optimizer | runs | steps | step (ms) | backward (ms) | optimizer (ms) | K-FAC / SGD step |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for b in sorted({k[0] for k in rows}):
    sgd = statistics.median(x[0] for x in rows[(b, "sgd")])
    for opt in ("sgd", "kfac", "kfac128"):
        if (b, opt) not in rows:
            continue
        v = rows[(b, opt)]
        med = [statistics.median(x[i] for x in v) * 1e3 for i in range(3)]
        ratio = statistics.median(x[0] for x in v) / sgd
        print(f"| {b} | {opt} | {len(v)} | {v[0][3]} | {med[0]:.1f} | {med[1]:.1f} | {med[2]:.1f} | {ratio:.2f} |")
EOF
fi

if [ "$part" = tta ] || [ "$part" = all ]; then
  for b in 128 1024; do
    for opt in sgd kfac; do
      name=resnet20-fmnist-b$b-$opt
      rm -f "results/kfac/tta/$name.json" "results/kfac/tta/$name.mllog"
      "$dtbench" train "results/kfac/configs/$name.json" | tail -3
    done
  done
  /usr/bin/python3 - <<'EOF'
import json
print("| batch | optimizer | status | steps to 91% | epochs to 91% | seconds to 91% | best accuracy | step (ms) |")
print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
for b in (128, 1024):
    for opt in ("sgd", "kfac"):
        r = json.load(open(f"results/kfac/tta/resnet20-fmnist-b{b}-{opt}.json"))
        tta = r["time_to_accuracy"]
        best = max(p["test_accuracy"] for p in r["curve"])
        cells = [tta["step"], f'{tta["epoch"]:.1f}', f'{tta["seconds"]:.0f}'] if tta else ["-", "-", "-"]
        print(f'| {b} | {opt} | {r["status"]} | ' + " | ".join(map(str, cells)) +
              f' | {100 * best:.2f}% | {1e3 * r["timing"]["total"]:.0f} |')
EOF
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
