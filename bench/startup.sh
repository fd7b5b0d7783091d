#!/usr/bin/env bash
# Process start-up: what linking cuBLAS costs a process that never calls it, and what dtbench costs to start.
# Three programs, alternated within each round: an empty main() linked with libcublas (no call into it), the same
# main() without it, and `DTBENCH --version` (which starts, prints and exits). Each round launches each program N
# times; the figures are the medians over rounds of the wall and CPU (user + system) seconds per launch, with the
# load average. Nothing else of ours should run meanwhile.
#
# Usage: bench/startup.sh DTBENCH   Environment: ROUNDS (7), N (10), CUDA_LIB (/usr/local/cuda/lib).
set -euo pipefail
dtbench=$(realpath "$1")
rounds=${ROUNDS:-7} n=${N:-10} lib=${CUDA_LIB:-/usr/local/cuda/lib}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo 'int main() { return 0; }' >"$work/empty.cpp"
g++ -O2 "$work/empty.cpp" -o "$work/empty"
g++ -O2 "$work/empty.cpp" -o "$work/empty_cublas" -L"$lib" -Wl,--no-as-needed -lcublas -Wl,-rpath,"$lib"
readelf -d "$work/empty_cublas" | grep -q 'NEEDED.*libcublas' || { echo "startup.sh: the cuBLAS twin does not need libcublas" >&2; exit 1; }
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$rounds" "$n" "$work/empty_cublas" "$work/empty" "$dtbench" <<'EOF'
import os, resource, statistics, subprocess, sys, time
rounds, n = int(sys.argv[1]), int(sys.argv[2])
progs = {"empty main, libcublas linked": [sys.argv[3]], "empty main": [sys.argv[4]],
         "dtbench --version": [sys.argv[5], "--version"]}
wall = {k: [] for k in progs}
cpu = {k: [] for k in progs}
for r in range(rounds):
    for name, cmd in (progs.items() if r % 2 == 0 else reversed(list(progs.items()))):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        for _ in range(n):
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        wall[name].append((time.perf_counter() - t) / n)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[name].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / n)
print(f"{rounds} rounds x {n} launches; medians per launch:")
for name in progs:
    print(f"  {name:30s} wall {statistics.median(wall[name]) * 1e3:7.1f} ms   CPU {statistics.median(cpu[name]) * 1e3:7.1f} ms")
print(f"load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
EOF
