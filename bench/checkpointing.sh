#!/usr/bin/env bash
# Gradient checkpointing: memory against step time, dtbench and PyTorch 1.13, in one run.
#
# Part 1. ResNet-50 (3 x 224 x 224, 1000 classes) at each batch of BATCHES (16 32): bench_train_step with 0 (off),
# 1, 2, 4 (= round(sqrt(17 units)), the default) and 8 segments, and bench/torch_peer.py without checkpointing and
# with 4 segments (torch.utils.checkpoint over the same units cut the same way; the summary checks the cut),
# ROUNDS rounds, the order of the settings reversed every other round. Each run builds its plan, takes one
# untimed step and STEPS timed ones; it reports the median step, the bytes the training plan holds (dtbench) and
# the process's peak resident memory (VmHWM; ru_maxrss for PyTorch). The summary gives per setting the median
# over rounds, and the step-time ratio to the same side's run without checkpointing in the same round (paired,
# then the median).
#
# Part 2. The largest batch that fits a memory limit of LIMIT_GIB GiB (4), enforced by a cgroup v1 memory
# controller as Slurm's cgroup plugin does (memory and memory+swap limits): for dtbench with 0 and 4 segments and
# PyTorch with 0 and 4, a binary search over even batches up to 256 for the largest one whose first training
# steps (one untimed, one timed) complete; the kernel kills a process that exceeds the limit. Skipped, saying
# why, where /sys/fs/cgroup/memory cannot be written (not root, cgroup v2 only).
#
# It builds nothing: build bench_train_step first (cmake --preset ci && cmake --build build/ci --target
# bench_train_step). Usage: bench/checkpointing.sh [BUILD_DIR] (default build/ci); environment: THREADS (2),
# ROUNDS (3), STEPS (3), BATCHES ("16 32"), LIMIT_GIB (4), PART ("1 2"), OUT (a file to append the raw JSON to),
# SETTINGS and LIMIT_SETTINGS (IMPL:SEGMENTS lists for parts 1 and 2, e.g. "pytorch:0 pytorch:4"; defaults as above).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build/ci}"
bin="$build/bench/bench_train_step"
threads="${THREADS:-2}"
rounds="${ROUNDS:-3}"
steps="${STEPS:-3}"
batches="${BATCHES:-16 32}"
limit_gib="${LIMIT_GIB:-4}"
parts="${PART:-1 2}"
py=/usr/bin/python3  # the only interpreter with torch 1.13 on this machine

if [[ ! -x "$bin" ]]; then
  echo "checkpointing: $bin not found; build the bench_train_step target first" >&2
  exit 2
fi
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "checkpointing: $py has no torch (install python3-torch)" >&2
  exit 2
fi

export OMP_NUM_THREADS="$threads"
raw="$(mktemp)"
trap 'rm -f "$raw"' EXIT
model="--arch resnet50 --input 3,224,224 --classes 1000"

# One run: impl (dtbench|pytorch), segments, batch, warmup, steps. Prints its JSON line.
run() {
  local impl=$1 k=$2 b=$3 warm=$4 n=$5
  if [[ $impl == dtbench ]]; then
    "$bin" $model --batch "$b" --warmup "$warm" --steps "$n" --checkpoint-segments "$k"
  else
    "$py" "$root/bench/torch_peer.py" $model --batch "$b" --threads "$threads" --warmup "$warm" --steps "$n" \
      --checkpoint-segments "$k"
  fi
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), $(nproc) CPUs, OMP_NUM_THREADS=$threads, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

if [[ " $parts " == *" 1 "* ]]; then
  read -r -a settings <<<"${SETTINGS:-dtbench:0 dtbench:1 dtbench:2 dtbench:4 dtbench:8 pytorch:0 pytorch:4}"
  for b in $batches; do
    for ((r = 1; r <= rounds; r++)); do
      order=("${settings[@]}")
      if ((r % 2 == 0)); then
        order=()
        for ((i = ${#settings[@]} - 1; i >= 0; i--)); do order+=("${settings[i]}"); done
      fi
      for s in "${order[@]}"; do
        impl=${s%%:*} k=${s##*:}
        echo "# batch $b round $r: $impl, $k segments (load $(cut -d' ' -f1 /proc/loadavg))" >&2
        run "$impl" "$k" "$b" 1 "$steps" | sed "s/^{/{\"part\":1,\"round\":$r,\"load1\":$(cut -d' ' -f1 /proc/loadavg),/" >>"$raw"
      done
    done
  done
fi

if [[ " $parts " == *" 2 "* ]]; then
  cg=/sys/fs/cgroup/memory/dtbench-checkpointing-$$
  if ! mkdir "$cg" 2>/dev/null; then
    echo "# part 2 skipped: cannot create a memory cgroup at $cg (needs root and the cgroup v1 memory controller)" >&2
  else
    trap 'rmdir "$cg" 2>/dev/null; rm -f "$raw"' EXIT
    limit=$((limit_gib * 1024 * 1024 * 1024))
    echo "$limit" >"$cg/memory.limit_in_bytes"
    if [[ -e $cg/memory.memsw.limit_in_bytes ]]; then echo "$limit" >"$cg/memory.memsw.limit_in_bytes"; fi
    # Does batch b fit? One untimed and one timed step inside the cgroup.
    fits() {
      (echo "$BASHPID" >"$cg/cgroup.procs" && exec > /dev/null 2>&1 && run "$1" "$2" "$3" 1 1)
    }
    for s in ${LIMIT_SETTINGS:-dtbench:0 dtbench:4 pytorch:0 pytorch:4}; do
      impl=${s%%:*} k=${s##*:}
      lo=0 hi=258  # lo: the largest even batch known to fit (0: none yet); hi: the smallest known not to
      while ((hi - lo > 2)); do
        mid=$(((lo + hi) / 4 * 2))
        if ((mid <= lo)); then mid=$((lo + 2)); fi
        if fits "$impl" "$k" "$mid"; then lo=$mid; r=fits; else hi=$mid; r="does not fit"; fi
        echo "# limit $limit_gib GiB: $impl, $k segments, batch $mid $r" >&2
      done
      echo "{\"part\":2,\"impl\":\"$impl\",\"checkpoint_segments\":$k,\"limit_gib\":$limit_gib,\"largest_batch\":$lo}" >>"$raw"
    done
  fi
fi

if [[ -n "${OUT:-}" ]]; then cat "$raw" >>"$OUT"; fi

"$py" - "$raw" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
one = [r for r in rows if r["part"] == 1]
for k in sorted({r["checkpoint_segments"] for r in one if r["checkpoint_segments"]}):
    cuts = {tuple(r.get("segment_of_units", [])) for r in one if r["checkpoint_segments"] == k}
    print("%d segments: %s" % (k, "the same cut on both sides, " + str(list(next(iter(cuts))))
                               if len(cuts) == 1 else "THE CUTS DIFFER: " + str(sorted(cuts))))
if one:
    print("| batch | implementation | segments | step s (median of rounds) | step / without (paired median) | plan GB | peak RSS GB | rounds | load1 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    keys = dict.fromkeys((r["batch"], r["impl"], r["checkpoint_segments"]) for r in one)
    for b, impl, k in keys:
        rs = [r for r in one if (r["batch"], r["impl"], r["checkpoint_segments"]) == (b, impl, k)]
        base = {r["round"]: r["step_s_median"] for r in one
                if (r["batch"], r["impl"], r["checkpoint_segments"]) == (b, impl, 0)}
        paired = [r["step_s_median"] / base[r["round"]] for r in rs if r["round"] in base]
        ratio = "%.2f" % statistics.median(paired) if paired else "-"
        plan = "%.2f" % (rs[0]["plan_bytes"] / 1e9) if "plan_bytes" in rs[0] else "-"
        print("| %d | %s | %s | %.2f | %s | %s | %.2f | %d | %s |" % (
            b, impl, k if k else "off", statistics.median(r["step_s_median"] for r in rs), ratio, plan,
            statistics.median(r["peak_rss_bytes"] for r in rs) / 1e9, len(rs),
            "-".join("%.1f" % x for x in (min(r["load1"] for r in rs), max(r["load1"] for r in rs)))))
two = [r for r in rows if r["part"] == 2]
if two:
    print()
    print("| implementation | segments | largest batch under %d GiB (cgroup) |" % two[0]["limit_gib"])
    print("| --- | --- | --- |")
    for r in two:
        print("| %s | %s | %d |" % (r["impl"], r["checkpoint_segments"] or "off", r["largest_batch"]))
EOF
