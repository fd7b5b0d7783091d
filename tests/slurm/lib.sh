# Shared by the Slurm test scripts (source it): checks that print and fail, and the local cluster's
# start and guaranteed stop.

fail() {
  echo "FAIL: $*"
  if [ -n "${cdir:-}" ] && [ -f "$cdir/log/slurmctld.log" ]; then
    echo "--- last lines of $cdir/log/slurmctld.log"
    tail -20 "$cdir/log/slurmctld.log"
  fi
  exit 1
}

# expect RC PATTERN -- COMMAND...: runs COMMAND, shows its output, and fails unless it exits with RC
# and its output holds PATTERN (a fixed string). The output is left in LAST_OUT.
expect() {
  local want=$1 pattern=$2 out rc
  shift 3
  set +e
  out=$("$@" 2>&1)
  rc=$?
  set -e
  echo "$out" | sed 's/^/    /'
  [ "$rc" = "$want" ] || fail "expected exit $want, got $rc from: $*"
  grep -qF -- "$pattern" <<<"$out" || fail "output lacks: $pattern"
  LAST_OUT=$out
}

# Skips (exit 77) unless the local cluster can run here.
require_cluster() {
  [ "$(id -u)" = 0 ] || { echo "SKIP: the local Slurm cluster needs root"; exit 77; }
  local b
  for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd; do
    [ -x "$b" ] || { echo "SKIP: $b missing (scripts/setup.sh installs slurm-wlm and munge)"; exit 77; }
  done
}

# start_cluster SOURCE_DIR WORK_DIR: starts slurm/local-cluster.sh in WORK_DIR/cluster, exports
# SLURM_CONF, and stops the cluster (and removes WORK_DIR) when the script exits.
start_cluster() {
  cluster="$1/slurm/local-cluster.sh"
  cdir=$2/cluster
  # A watchdog. CTest ends a test that runs past its TIMEOUT with SIGKILL, which skips the EXIT trap: the cluster's
  # daemons and its jobs' ranks (once, three ranks spinning at 50% of a core each, waiting for a fourth that had
  # died) would live on and slow every later test. So after DTBENCH_CLUSTER_TEST_LIMIT seconds (60 s under each
  # cluster test's TIMEOUT: dtbench_local_cluster_test in tests/CMakeLists.txt; 540 unless set) the watchdog stops
  # the cluster itself, which ends any srun the test waits on, and then TERM ends the test through its EXIT trap.
  local limit=${DTBENCH_CLUSTER_TEST_LIMIT:-540} me=$$
  (
    trap 'kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "$limit" &
    nap=$!
    wait "$nap"
    echo "FAIL: the test ran past $limit s (DTBENCH_CLUSTER_TEST_LIMIT): stopping the cluster" >&2
    bash "$cluster" stop --dir "$cdir" >&2 || true
    kill -TERM "$me"
  ) &
  watchdog=$!
  trap 'exit 124' TERM
  trap 'kill -TERM "$watchdog" 2>/dev/null; bash "$cluster" stop --dir "$cdir" || true; rm -rf "'"$2"'"' EXIT
  chmod 755 "$2"  # mktemp -d makes it 0700; munged (user munge) must reach the cluster folder inside
  # The first block of 5 free ports from 17000 on: another cluster (another build's tests) may hold one.
  local base p busy
  for base in 17000 17100 17200 17300 17400 17500; do
    busy=0
    for ((p = base; p <= base + 4; p++)); do
      if (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; then busy=1; fi
    done
    [ $busy = 0 ] && break
  done
  local t0=$SECONDS
  bash "$cluster" start --dir "$cdir" --port "$base"
  echo "    up in $((SECONDS - t0)) s"
  eval "$(bash "$cluster" env --dir "$cdir")"
  [ "$(sinfo -h -N -p debug -o '%N %T' | grep -c idle)" = 4 ] || fail "not 4 idle nodes"
}

# stop_cluster_checked: stops the cluster now and fails if any of its processes is left.
stop_cluster_checked() {
  local t0=$SECONDS left
  bash "$cluster" stop --dir "$cdir"
  echo "    down in $((SECONDS - t0)) s"
  left=$(ps -eo pid=,args= | grep -F "$cdir/" | grep -v grep || true)
  [ -z "$left" ] || fail "processes left behind: $left"
}

# wait_for_text FILE TEXT [SECONDS] [COUNT]: until FILE holds TEXT on COUNT lines (default 1).
wait_for_text() {
  local deadline=$((SECONDS + ${3:-120})) want=${4:-1} n
  # grep -c prints nothing when FILE does not exist yet: count that as 0 lines.
  until n=$(grep -cF -- "$2" "$1" 2>/dev/null || true); [ "${n:-0}" -ge "$want" ]; do
    [ $SECONDS -lt $deadline ] || fail "$1 never showed $want line(s) with: $2"
    sleep 0.2
  done
}

# last_job CAMPAIGN_DIR: the job id of the latest submission.
last_job() {
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["submissions"][-1]["job_id"])' "$1/jobs.json"
}
