#!/usr/bin/env bash
# The cost model's quality against the fastest round instead of the median (BENCHMARKS.md, "Cost model
# quality"): this machine switches between a fast state and one 3-5x slower for every reducer alike
# (BENCHMARKS.md, issue 17's goal), and the median over 5 rounds mixes the two. This script takes the sweeps that
# bench/cost_model_fit.sh left in DIR, keeps each row's fastest round (the uncontended time the model describes),
# and fits and holds out exactly as that script does. It measures nothing itself.
# Usage: bench/cost_model_min.sh [BUILD_DIR] [DIR]   (defaults: build/release, results/cost_model)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
dir=${2:-$root/results/cost_model}
dtbench=$build/apps/dtbench
if [ ! -x "$dtbench" ]; then
  echo "cost_model_min: $dtbench not found; build the dtbench target first" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$dir" "$tmp" <<'PY'
import copy, glob, json, sys
src, dst = sys.argv[1], sys.argv[2]
for base in ["fit_2ranks", "fit_4ranks", "holdout_3ranks", "holdout_large_2ranks", "holdout_large_4ranks"]:
    docs = [json.load(open(f)) for f in sorted(glob.glob(f"{src}/{base}_r*.json"))]
    if not docs:
        sys.exit(f"cost_model_min: no {base}_r*.json in {src} (run bench/cost_model_fit.sh first)")
    fastest = {}
    for d in docs:
        for r in d["rows"]:
            key = (r["reducer"], r["ranks"], r["bytes"])
            fastest[key] = min(fastest.get(key, float("inf")), r["time_median_us"])
    out = copy.deepcopy(docs[0])
    for r in out["rows"]:
        r["time_median_us"] = fastest[(r["reducer"], r["ranks"], r["bytes"])]
    json.dump(out, open(f"{dst}/{base}.json", "w"))
    print(f"{base}: the fastest of {len(docs)} rounds per row")
PY
fit=(--fit "$tmp/fit_2ranks.json" --fit "$tmp/fit_4ranks.json")
echo "== held out: K = 3"
"$dtbench" model "${fit[@]}" --holdout "$tmp/holdout_3ranks.json" --ranks 2 --bytes 1M | sed -n '/reducer  alpha/,/^$/p'
echo "== held out: 32..64 MiB at K = 2 and 4"
"$dtbench" model "${fit[@]}" --holdout "$tmp/holdout_large_2ranks.json" --holdout "$tmp/holdout_large_4ranks.json" \
  --ranks 2 --bytes 1M | sed -n '/reducer  alpha/,/^$/p'
