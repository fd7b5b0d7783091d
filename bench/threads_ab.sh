# Sourced by bench/threads_default.sh and bench/sweep_jobs_threads.sh: rounds of two sides, `all` (OMP_NUM_THREADS
# = every CPU, what ran before) and `share` (OMP_NUM_THREADS unset: dtbench shares the CPUs out), alternated
# all share share all ..., and their summary. The caller defines run SIDE ROUND, which prints one line
# "SIDE round R: W s wall, S ms a step, T threads a UNIT ...".
#
# threads_ab ROUNDS OUT HEADER UNIT: runs the rounds (their lines also in OUT/rounds.txt), prints HEADER and the load
# average before, the load average after, each side's medians and the median of the per-round ratios.
threads_ab() {
  local rounds=$1 out=$2 header=$3 unit=$4 r
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $header, $rounds rounds"
  for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then run all "$r"; run share "$r"; else run share "$r"; run all "$r"; fi
  done | tee "$out/rounds.txt"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$out/rounds.txt" "$unit" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+)\s+round (\d+): +([\d.]+) s wall, +([\d.]+) ms a step, (\d+) threads", line)
    rows.setdefault(m[1], {})[int(m[2])] = (float(m[3]), float(m[4]), int(m[5]))
for side in ("all", "share"):
    v = rows[side].values()
    print(f"{side:5s}: median {statistics.median(x[0] for x in v):.2f} s wall, "
          f"{statistics.median(x[1] for x in v):.1f} ms a step, {next(iter(v))[2]} threads a {sys.argv[2]}")
ratio = statistics.median(rows["all"][r][0] / rows["share"][r][0] for r in rows["all"])
step = statistics.median(rows["all"][r][1] / rows["share"][r][1] for r in rows["all"])
print(f"median ratio all/share: {ratio:.2f}x the wall time, {step:.2f}x the step time")
PY
}
