#!/usr/bin/env bash
# What claim d's full grid costs on one GPU: a few runs of results/claims/d/simple-cnn-full.json (Shallue et al.'s
# Simple CNN on Fashion-MNIST, 2 ranks a run through the host-staged ring, evaluation on the whole test set at the
# spec's cadence, stop at 0.9) on the gpu backend, all at once on the one GPU as `--jobs N` would run them, each
# with a time limit. The sweep writes the configs exactly as for the CPU; only backend and data.path are set here.
# The limit sends SIGUSR1, which mpirun forwards: the run stops after its step with a `preempted` record (SIGKILL
# 30 s later if it has not; then its log says how far it got). Prints a table last: per run, its
# status, steps, the step at the target, wall seconds, seconds per step and images/s from the record.
# Usage: bench/gpu_claim_d_cost.sh DTBENCH DATA_DIR OUT_DIR [CONFIG_NAME ...]
#   CONFIG_NAME: names under the sweep's configs/ (default: four of the grid, batches 16, 256, 1024 and 8192).
#   LIMIT_S (default 100): each run's time limit. MPIRUN (default mpirun). BACKEND (default gpu; cpu to try the script).
set -uo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: bench/gpu_claim_d_cost.sh DTBENCH DATA_DIR OUT_DIR [CONFIG_NAME ...]" >&2
  exit 2
fi
dtbench=$1
data=$2
out=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
runs=("$@")
if [[ ${#runs[@]} -eq 0 ]]; then
  runs=(p00-lr0.01-momentum0.9-global16-every_steps100-s1 p14-lr0.03-momentum0.9-global256-every_steps8-s1
        p27-lr0.1-momentum0.9-global1024-every_steps4-s1 p29-lr0.1-momentum0.9-global8192-every_steps1-s1)
fi
mkdir -p "$out"
"$dtbench" sweep "$here/results/claims/d/simple-cnn-full.json" --out "$out/sweep" > "$out/sweep.log" 2>&1 ||
  { echo "sweep: exit $? (see $out/sweep.log)"; exit 1; }
for r in "${runs[@]}"; do
  [[ -f $out/sweep/configs/$r.json ]] || { echo "no config $r in the sweep" >&2; exit 2; }
done
uptime > "$out/load.txt"
start=$SECONDS
for r in "${runs[@]}"; do
  timeout -s USR1 -k 30 "${LIMIT_S:-100}" "${MPIRUN:-mpirun}" -np 2 --oversubscribe --bind-to none "$dtbench" train \
    "$out/sweep/configs/$r.json" --set backend="${BACKEND:-gpu}" --set data.path="$data" --set output.dir="$out/records" \
    > "$out/$r.log" 2>&1 &
done
wait
echo "all runs ended after $((SECONDS - start)) s" | tee -a "$out/load.txt"
uptime >> "$out/load.txt"
python3 - "$out" "${runs[@]}" <<'PYEOF'
import json, os, sys
out, runs = sys.argv[1], sys.argv[2:]
print("| run | status | steps | step at 0.9 | wall s | s per step | images/s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for r in runs:
    f = os.path.join(out, "records", r + ".json")
    if not os.path.exists(f):
        print(f"| {r} | no record (see {r}.log) | | | | | |")
        continue
    d = json.load(open(f))
    tta = d["time_to_accuracy"]
    at = next((c["step"] for c in d["curve"] if c.get("test_accuracy", 0) >= 0.9), None) if tta.get("reached") else None
    print(f"| {r} | {d['status']} | {d['steps']} | {at if at is not None else '-'} | {d['wall_seconds']:.1f} | "
          f"{d['timing']['total']:.4f} | {d['throughput']['images_per_second']:.0f} |")
PYEOF
