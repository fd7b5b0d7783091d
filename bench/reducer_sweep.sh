#!/usr/bin/env bash
# The reducer comparison of BENCHMARKS.md ("## Reducers"): in one run, `dtbench allreduce` sweeps
# 4 KiB..64 MiB for every reducer and MPI_Allreduce under mpirun with 2 ranks (one per core) and with 4
# ranks (oversubscribed on a 2-core machine), fits the cost model to both sweeps, and writes the busbw
# ratios against MPI_Allreduce (measured in the same run) between the reducer_sweep markers of
# BENCHMARKS.md. It builds nothing: build the dtbench target first, e.g.
#   cmake --preset release && cmake --build build/release --target dtbench
#
# The machine is shared, so each sweep is repeated ROUNDS times; a table cell is the median over the
# rounds of the busbw from each round's median iteration time, and a ratio the median over the rounds
# of that round's ratio (the reducers of one size run back to back, so a round's ratio compares like
# with like). The cost model is fitted to the 2-rank rounds only: with one rank per core they measure
# the transport, while 4 ranks on 2 cores mostly measure the scheduler (a step waits for a descheduled
# rank: alpha comes out 6-14 us instead of 0.4-4 us, and no single alpha-beta fits both).
# Usage: bench/reducer_sweep.sh [BUILD_DIR] [OUT_DIR]   (defaults: build/release, BUILD_DIR/reducer_sweep)
# Environment: REUSE (1: keep the sweeps already in OUT_DIR, redo only the model and the tables), ROUNDS (3), ITERS (20), WARMUP (5), MAXBYTES (64M), MODEL_BYTES (102228128: ResNet-50's
# 25,557,032 fp32 parameters), COMPUTE_US_PER_IMAGE (312500: ResNet-50 training on this 2-core machine,
# 3.2 images/s, shared/MACHINE-FACTS.md), FIT_MAX_BYTES (4M: the model is fitted to the sizes this
# shared machine measures reliably; larger ones are predicted), GPU_US_PER_IMAGE (7250: one P100 in He et al. 2016, 90 epochs
# of 1.28M images in 29 h on 8 GPUs), BENCHMARKS_MD (the file to update; default the repository's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
out=${2:-$build/reducer_sweep}
dtbench=$build/apps/dtbench
rounds=${ROUNDS:-3}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
maxbytes=${MAXBYTES:-64M}
compute_us=${COMPUTE_US_PER_IMAGE:-312500}
gpu_us=${GPU_US_PER_IMAGE:-7250}
fitmax=${FIT_MAX_BYTES:-4M}
model_bytes=${MODEL_BYTES:-102228128}
md=${BENCHMARKS_MD:-$root/BENCHMARKS.md}
if [ ! -x "$dtbench" ]; then
  echo "reducer_sweep: $dtbench not found; build the dtbench target first" >&2
  exit 2
fi
mkdir -p "$out"
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

sweep=(allreduce -b 4K -e "$maxbytes" -f 2 -n "$iters" -w "$warmup" -c 1 --reducer all)
cmd2="mpirun -np 2 --bind-to core --map-by core $dtbench ${sweep[*]} --json $out/sweep_2ranks_rR.json"
cmd4="OMPI_MCA_mpi_yield_when_idle=1 mpirun -np 4 --oversubscribe --bind-to none $dtbench ${sweep[*]} --json $out/sweep_4ranks_rR.json"
fits=()
for r in $(seq 1 "$rounds"); do
  fits+=(--fit "$out/sweep_2ranks_r$r.json")
  if [ "${REUSE:-0}" = 1 ]; then continue; fi
  echo "+ ${cmd2/rR/r$r}"
  mpirun -np 2 --bind-to core --map-by core "$dtbench" "${sweep[@]}" --json "$out/sweep_2ranks_r$r.json" \
    | tee "$out/sweep_2ranks_r$r.txt"
  echo "+ ${cmd4/rR/r$r}"
  OMPI_MCA_mpi_yield_when_idle=1 mpirun -np 4 --oversubscribe --bind-to none "$dtbench" "${sweep[@]}" \
    --json "$out/sweep_4ranks_r$r.json" | tee "$out/sweep_4ranks_r$r.txt"
done
model=("$dtbench" model "${fits[@]}" --fit-max-bytes "$fitmax" --ranks 2,16,256,4096 --bytes 100M --batch 1024 --model-bytes "$model_bytes")
cmdm="${model[*]} --compute-us-per-image $compute_us --json $out/model.json"
cmdg="${model[*]} --compute-us-per-image $gpu_us"
echo "+ $cmdm"
"${model[@]}" --compute-us-per-image "$compute_us" --json "$out/model.json" | tee "$out/model.txt"
echo "+ $cmdg"
"${model[@]}" --compute-us-per-image "$gpu_us" | sed -n '/^# batch/,$p' | tee "$out/model_gpu.txt"

CMD2=$cmd2 CMD4=$cmd4 CMDM=$cmdm CMDG=$cmdg python3 - "$out" "$md" "$rounds" <<'PY'
import json, os, statistics, sys
out, md, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
BEGIN, END = "<!-- reducer_sweep:begin -->", "<!-- reducer_sweep:end -->"
order = ["mpi", "shared_memory", "ring", "halving_doubling", "butterfly", "tree", "parameter_server", "hierarchical"]

def size(b):
    for unit, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << s and b % (1 << s) == 0:
            return f"{b >> s} {unit}"
    return f"{b} B"

def load_round(ranks, k):
    doc = json.load(open(os.path.join(out, f"sweep_{ranks}ranks_r{k}.json")))
    rows = {}
    for r in doc["rows"]:
        # busbw from the median per-iteration time (robust to preemption on a shared machine); the
        # mean-based busbw (nccl-tests' definition) is in the JSON and the .txt tables.
        t = r["time_median_us"] * 1e-6
        rows[(r["bytes"], r["reducer"])] = dict(r, busbw_med=r["bytes"] / t / 1e9 * r["bus_factor"] if t > 0 else 0)
    return doc, rows

def load(ranks):
    """Per (size, reducer): median busbw over rounds, median ratio to mpi over rounds, total #wrong."""
    docs = [load_round(ranks, k) for k in range(1, rounds + 1)]
    merged = {}
    for key in docs[0][1]:
        per = [rows[key] for _, rows in docs if key in rows]
        mpis = [rows.get((key[0], "mpi")) for _, rows in docs if key in rows]
        ratios = [r["busbw_med"] / m["busbw_med"] for r, m in zip(per, mpis) if m and m["busbw_med"] > 0]
        times = [r["time_median_us"] / m["time_median_us"] for r, m in zip(per, mpis) if m and m["time_median_us"] > 0]
        merged[key] = {"busbw_med": statistics.median(r["busbw_med"] for r in per),
                       "ratio": statistics.median(ratios) if ratios else None,
                       "time_ratio": statistics.median(times) if times else None,
                       "wrong": sum(r["wrong"] for r in per)}
    return docs[0][0], merged

lines = []
doc2, _ = load(2)
prov = doc2.get("provenance", {})
def pget(*path):
    d = prov
    for k in path:
        d = d.get(k, {}) if isinstance(d, dict) else {}
    return d if d not in ({}, None) else "?"
lines.append(f"Measured by `bench/reducer_sweep.sh` at {pget('time_utc')}; dtbench {pget('dtbench', 'git_sha')}, "
             f"CPU {pget('cpu', 'model')}, {pget('cpu', 'logical_cores')} logical cores, host {pget('host')}, "
             f"{pget('mpi', 'library')}.")
lines.append("")
lines.append("```")
lines.append(f"# rounds r = 1..{rounds} of:")
for c in ("CMD2", "CMD4", "CMDM", "CMDG"):
    lines.append(os.environ[c])
lines.append("```")
lines.append("")
verdict = {}
for ranks in (2, 4):
    doc, rows = load(ranks)
    sizes = sorted({b for b, _ in rows})
    present = [n for n in order if any((b, n) in rows for b in sizes)]
    lines.append(f"### {ranks} ranks: busbw (GB/s, from the median iteration time) and ratio to MPI_Allreduce "
                 f"(medians over {rounds} rounds)")
    lines.append("")
    lines.append("| size | " + " | ".join(present) + " | #wrong |")
    lines.append("|---:|" + "---:|" * len(present) + "---:|")
    for b in sizes:
        mpi = rows.get((b, "mpi"))
        cells = []
        wrong = 0
        for n in present:
            r = rows.get((b, n))
            if r is None:
                cells.append("-")
                continue
            wrong += r["wrong"]
            if n == "mpi" or r["ratio"] is None:
                cells.append(f"{r['busbw_med']:.2f}")
            else:
                cells.append(f"{r['busbw_med']:.2f} ({r['ratio']:.2f}x)")
        lines.append(f"| {size(b)} | " + " | ".join(cells) + f" | {wrong} |")
    lines.append("")
    if ranks == 2:
        big = [b for b in sizes if b >= 4 << 20 and (b, "mpi") in rows]
        for n in ("ring", "halving_doubling"):
            ratios = [rows[(b, n)]["ratio"] for b in big if (b, n) in rows and rows[(b, n)]["ratio"] is not None]
            if ratios:
                verdict[n] = (min(ratios), sum(ratios) / len(ratios))
        # Issue 17's goal: at every size from 4 MiB the best of our reducers reaches MPI_Allreduce's busbw.
        best = [max((rows[(b, n)]["ratio"], n) for n in order if n != "mpi" and (b, n) in rows
                    and rows[(b, n)]["ratio"] is not None) for b in big]
        if best:
            verdict["best"] = [(size(b), r, n) for b, (r, n) in zip(big, best)]
        if (4096, "butterfly") in rows and (4096, "mpi") in rows:
            verdict["butterfly_4k"] = rows[(4096, "butterfly")]["time_ratio"]

lines.append("### Goals (2 ranks, same run)")
lines.append("")
for n in ("ring", "halving_doubling"):
    if n in verdict:
        lo, mean = verdict[n]
        lines.append(f"- {n} busbw / MPI_Allreduce busbw at >= 4 MiB, per size: min {lo:.2f}x, mean {mean:.2f}x "
                     f"(goal >= 0.9x: {'met' if lo >= 0.9 else 'not met at every size'})")
if "best" in verdict:
    worst = min(r for _, r, _ in verdict["best"])
    lines.append("- the best reducer's busbw / MPI_Allreduce busbw at each size >= 4 MiB: " +
                 ", ".join(f"{s} {r:.2f}x ({n})" for s, r, n in verdict["best"]) +
                 f" (issue 17's goal >= 1.0x at every size: {'met' if worst >= 1.0 else 'not met'}, lowest {worst:.2f}x)")
if "butterfly_4k" in verdict:
    v = verdict["butterfly_4k"]
    lines.append(f"- butterfly time / MPI_Allreduce time at 4 KiB: {v:.2f}x (goal <= 1.5x: {'met' if v <= 1.5 else 'not met'})")
lines.append("")
lines.append("### Cost model (`dtbench model`, fitted to the 2-rank sweeps up to FIT_MAX_BYTES)")
lines.append("")
lines.append("```")
lines.extend(open(os.path.join(out, "model.txt")).read().rstrip().splitlines())
lines.append("```")
lines.append("")
lines.append("The batch split again with a GPU's compute time per image (GPU_US_PER_IMAGE):")
lines.append("")
lines.append("```")
lines.extend(open(os.path.join(out, "model_gpu.txt")).read().rstrip().splitlines())
lines.append("```")

block = BEGIN + "\n" + "\n".join(lines) + "\n" + END
text = open(md).read() if os.path.exists(md) else "# dtbench benchmarks\n"
if BEGIN in text and END in text:
    pre, rest = text.split(BEGIN, 1)
    _, post = rest.split(END, 1)
    text = pre + block + post
else:
    text = text.rstrip("\n") + "\n\n## Reducers\n\n" + block + "\n"
tmp = md + ".tmp"
open(tmp, "w").write(text)
os.replace(tmp, md)
print(f"reducer_sweep: wrote the Reducers tables into {md}")
PY
