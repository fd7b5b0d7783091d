# Sourced by bench/threads_default.sh and bench/sweep_jobs_cpus.sh: rounds of two sides A (what ran before) and B
# (what runs now), alternated A B B A A B ..., and their summary. The caller defines run SIDE ROUND, which prints one
# line "SIDE round R: W s wall, S ms a step, T threads a UNIT ...".
#
# ab_rounds ROUNDS OUT HEADER UNIT A B: runs the rounds (their lines also in OUT/rounds.txt), prints HEADER and the
# load average before, the load average after, each side's medians and the median of the per-round ratios A/B.
ab_rounds() {
  local rounds=$1 out=$2 header=$3 unit=$4 a=$5 b=$6 r
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $header, $rounds rounds"
  for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then run "$a" "$r"; run "$b" "$r"; else run "$b" "$r"; run "$a" "$r"; fi
  done | tee "$out/rounds.txt"
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$out/rounds.txt" "$unit" "$a" "$b" <<'PY'
import re, statistics, sys
unit, a, b = sys.argv[2:5]
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\w+)\s+round (\d+): +([\d.]+) s wall, +([\d.]+) ms a step, (\d+) threads", line)
    rows.setdefault(m[1], {})[int(m[2])] = (float(m[3]), float(m[4]), int(m[5]))
for side in (a, b):
    v = rows[side].values()
    print(f"{side:6s}: median {statistics.median(x[0] for x in v):.2f} s wall, "
          f"{statistics.median(x[1] for x in v):.1f} ms a step, {next(iter(v))[2]} threads a {unit}")
ratio = statistics.median(rows[a][r][0] / rows[b][r][0] for r in rows[a])
step = statistics.median(rows[a][r][1] / rows[b][r][1] for r in rows[a])
print(f"median ratio {a}/{b}: {ratio:.2f}x the wall time, {step:.2f}x the step time")
PY
}
