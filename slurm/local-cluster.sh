#!/usr/bin/env bash
# A Slurm cluster on one machine, without systemd: one munged, one slurmctld and four slurmd daemons
# that pose as nodes n1..n4 on the loopback address (Debian's slurm-wlm 22.05 is built with
# multiple-slurmd support: NodeName=n[1-4] NodeHostname=<this host> Port=[...]).
#
#   slurm/local-cluster.sh start   [--dir DIR] [--nodes N] [--cpus C] [--port P]
#   slurm/local-cluster.sh stop    [--dir DIR]
#   slurm/local-cluster.sh status  [--dir DIR]
#   slurm/local-cluster.sh env     [--dir DIR]     prints "export SLURM_CONF=..." for eval
#
# Everything lives in DIR (default /tmp/dtbench-slurm-$UID, or $DTBENCH_SLURM_DIR): config, munge key and
# socket, state, spool, logs, pid files. The daemons fork into the background and write pid files;
# `stop` cancels the jobs, shuts Slurm down and ends only the processes it started (the pid files'
# daemons and the job-step daemons they spawned, found by a marker in their environment), never
# anything matched by name. Ports: slurmctld on P (default 17000, or $DTBENCH_SLURM_PORT), the
# slurmd of node i on P+i.
#
# Pitfalls handled here (shared/MACHINE-FACTS.md): the emulated nodes share one host, so each gets
# its own TmpFS (PMIx server directories) and, through the TaskProlog, its own Open MPI shared-memory
# directory (OMPI_MCA_btl_vader_backing_directory), otherwise ranks on "different" nodes collide;
# oversubscribed ranks must not busy-poll (OMPI_MCA_mpi_yield_when_idle=1); use srun --mpi=pmix
# (pmi2 does not work with Debian's Open MPI), with every PMIx fence a ring (mpi.conf; see write_config).
# hostname is the same on every node: SLURMD_NODENAME tells them apart.
# Two partitions over the same nodes: debug (the default) and urgent, whose jobs preempt debug's (PreemptMode=CANCEL),
# so that the tests preempt a job as a site does rather than cancel it.
set -euo pipefail

die() { echo "local-cluster: $*" >&2; exit 1; }

cmd=${1:-}
[ -n "$cmd" ] || die "usage: $0 start|stop|status|env [--dir DIR] [--nodes N] [--cpus C] [--port P]"
shift
dir=${DTBENCH_SLURM_DIR:-/tmp/dtbench-slurm-$(id -u)}
nodes=4
# At least 2 CPUs a node, whatever this machine has (SlurmdParameters=config_overrides lets a node claim more
# than it has): on a 1-CPU machine, 2 tasks per node (the hierarchical reducer's test) could not be placed.
cpus=$(nproc)
[ "$cpus" -ge 2 ] || cpus=2
port=${DTBENCH_SLURM_PORT:-17000}
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
[[ "$nodes" =~ ^[1-9][0-9]?$ ]] || die "--nodes must be 1..99, got $nodes"
[[ "$cpus" =~ ^[1-9][0-9]*$ ]] || die "--cpus must be a positive integer, got $cpus"
[[ "$port" =~ ^[1-9][0-9]*$ ]] && [ "$port" -lt 65000 ] || die "--port must be below 65000, got $port"
# One spelling of the folder (absolute, no ./ or trailing /): the shared-memory folders are named after its hash.
dir=$(realpath -m -- "$dir")

conf=$dir/slurm.conf
sock=$dir/munge/munge.socket.2
# Every daemon started here carries this variable; slurmstepd inherits it from slurmd, so stop can
# find leftover step daemons by it without matching anything by name.
marker="DTBENCH_LOCAL_CLUSTER=$dir"

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { [ -s "$1" ] && cat "$1" || true; }

# Processes whose environment holds the marker (only daemons started by this script and their forks).
marked_pids() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] && continue
    if { tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | grep -qxF "$marker"; then echo "$p"; fi
  done
}

# The children, grandchildren, ... of the given pids (job processes started by slurmstepd).
descendants() {
  local all parents=" $* " found=1 pid ppid
  all=$(ps -e -o pid=,ppid=)
  local out=""
  while [ $found = 1 ]; do
    found=0
    while read -r pid ppid; do
      if [[ "$parents" == *" $ppid "* && "$parents" != *" $pid "* ]]; then
        parents+="$pid "
        out+="$pid "
        found=1
      fi
    done <<<"$all"
  done
  echo "$out"
}

wait_gone() {  # wait_gone SECONDS PID...: true when all have exited
  local deadline=$((SECONDS + $1)) p alive
  shift
  while :; do
    alive=0
    for p in "$@"; do pid_alive "$p" && alive=1; done
    [ $alive = 0 ] && return 0
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.2
  done
}

# The emulated nodes' Open MPI shared-memory folders, named after a hash of the whole cluster folder: the tests'
# clusters all live in folders named "cluster", and with the base name alone one cluster's stop removed the folders
# of another still running beside it.
shm_prefix() { echo "/dev/shm/dtbench-slurm-$(printf '%s' "$dir" | md5sum | cut -c1-12)"; }

node_names() { local i; for ((i = 1; i <= nodes; i++)); do echo "n$i"; done; }

write_config() {
  local host
  host=$(hostname -s)
  cat >"$conf" <<EOF
# Written by slurm/local-cluster.sh: a $nodes-node cluster on one host ($host).
ClusterName=dtbench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$dir/tmp/%n
TaskProlog=$dir/task-prolog.sh
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
JobRequeue=1
# A job in partition urgent (the same nodes, a higher PriorityTier) preempts the jobs of debug, which Slurm then
# cancels (final state PREEMPTED, not requeued): how a site without requeue ends a job, for the tests to do for real.
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
# Seconds from SIGTERM to SIGKILL: time enough for a test run's checkpoint, and short, so that a step whose
# peer died (a rank blocked in MPI) is killed soon.
KillWait=10
MinJobAge=600
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=20
NodeName=n[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((port + 1))-$((port + nodes))] CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=n[1-$nodes] MaxTime=INFINITE State=UP PriorityTier=2
EOF
  # Every PMIx fence as a ring. Slurm 22.05 runs a fence that collects data (Open MPI's modex in MPI_Init) as a ring
  # and one that does not (MPI_Init's closing barrier) as a tree, unless PMIxCollFence names one. Under load, ranks
  # here left MPI_Init while another rank was still in its modex wait (read from the cores: ompi_mpi_init,
  # opal_progress, the TCP BTL, a call through a null callback). Their first messages reached a process whose PML
  # had not registered its handlers yet, and it died of SIGSEGV. How a rank gets past the barrier inside Slurm or
  # PMIx was not traced. Measured with two busy loops beside the steps (in part alternating the settings step by step):
  #   srun -N4 (1 task a node) of tests/slurm/mpi_steps: default 10 of 260 failed, tree 0 of 340, ring 0 of 100;
  #   srun -N2 (2 tasks a node) of dtbench allreduce: default 0 of 40, tree 2 of 40, ring 0 of 140.
  # Only the ring failed in neither. Ring fences need Slurm's direct connections between nodes (the default).
  echo "PMIxCollFence=ring" >"$dir/mpi.conf"
  # The TaskProlog's "export" lines land in every task's environment, per emulated node.
  cat >"$dir/task-prolog.sh" <<EOF
#!/bin/sh
shm=$(shm_prefix)-\$SLURMD_NODENAME
mkdir -p "\$shm"
echo "export OMPI_MCA_btl_vader_backing_directory=\$shm"
echo "export OMPI_MCA_mpi_yield_when_idle=1"
EOF
  chmod 755 "$dir/task-prolog.sh"
}

start_munge() {
  mkdir -p "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/munge.key"
  chown -R munge:munge "$dir/munge"
  chmod 700 "$dir/munge"
  chmod 400 "$dir/munge/munge.key"
  env "$marker" runuser -u munge -- /usr/sbin/munged --socket="$sock" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" \
    --force
  local deadline=$((SECONDS + 10))
  until munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "munged did not come up (log: $dir/munge/munged.log)"
    sleep 0.1
  done
  cp "$dir/munge/munged.pid" "$dir/run/munged.pid"
}

cluster_running() { pid_alive "$(pid_of "$dir/run/slurmctld.pid")" || pid_alive "$(pid_of "$dir/run/munged.pid")"; }

do_start() {
  [ "$(id -u)" = 0 ] || die "must run as root (slurmd and munged need it)"
  local b
  for b in munged slurmctld slurmd; do command -v "/usr/sbin/$b" >/dev/null || die "/usr/sbin/$b missing: install slurm-wlm and munge (scripts/setup.sh)"; done
  if [ -d "$dir" ] && cluster_running; then die "a cluster already runs in $dir (stop it first)"; fi
  # A port in use means another cluster (or anything else) is there: say so rather than half-start.
  local p
  for ((p = port; p <= port + nodes; p++)); do
    if (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; then die "port $p on 127.0.0.1 is in use (choose another with --port)"; fi
  done
  rm -rf "$dir"
  mkdir -p "$dir"/{state,run,log,spool,tmp}
  chmod 755 "$dir"
  # munged runs as the munge user and must reach its files under $dir.
  runuser -u munge -- test -x "$dir" ||
    die "the munge user cannot enter $dir: an enclosing folder is not world-traversable (chmod o+x it, or use a --dir under /tmp)"
  local n
  for n in $(node_names); do mkdir -p "$dir/spool/$n" "$dir/tmp/$n"; done
  write_config
  start_munge
  export SLURM_CONF=$conf
  env "$marker" /usr/sbin/slurmctld -f "$conf" -c -i
  for n in $(node_names); do env "$marker" /usr/sbin/slurmd -f "$conf" -N "$n"; done
  # Up when every node reports idle.
  local deadline=$((SECONDS + 30)) states
  while :; do
    states=$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true)
    if [ "$(grep -c ' idle$' <<<"$states" || true)" = "$nodes" ]; then break; fi
    if [ $SECONDS -ge $deadline ]; then
      echo "$states" >&2
      die "nodes did not become idle within 30 s (logs in $dir/log)"
    fi
    sleep 0.2
  done
  echo "local-cluster: $nodes nodes up ($(sinfo -h -p debug -o '%D nodes, %c CPUs each, partition %P'), and partition urgent, which preempts its jobs); export SLURM_CONF=$conf"
}

do_stop() {
  [ -d "$dir" ] || { echo "local-cluster: nothing in $dir"; return 0; }
  export SLURM_CONF=$conf
  local ctld
  ctld=$(pid_of "$dir/run/slurmctld.pid")
  if pid_alive "$ctld"; then
    # Cancel jobs first so their steps end while slurmd still runs to clean them up.
    local jobs
    jobs=$(squeue -h -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      scancel $jobs 2>/dev/null || true
      local deadline=$((SECONDS + 15))
      while [ -n "$(squeue -h -o %A 2>/dev/null || true)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    fi
    scontrol shutdown >/dev/null 2>&1 || true
  fi
  local pids=() f p
  for f in "$dir"/run/slurmctld.pid "$dir"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    p=$(pid_of "$f")
    pid_alive "$p" && pids+=("$p")
  done
  ((${#pids[@]} == 0)) || wait_gone 10 "${pids[@]}" || kill -TERM "${pids[@]}" 2>/dev/null || true
  ((${#pids[@]} == 0)) || wait_gone 5 "${pids[@]}" || kill -KILL "${pids[@]}" 2>/dev/null || true
  # Leftover step daemons (and the job processes under them) carry the marker.
  local left
  left=$(marked_pids | grep -vxF "$(pid_of "$dir/run/munged.pid")" || true)
  if [ -n "$left" ]; then
    local tree
    tree="$left $(descendants $left)"
    kill -TERM $tree 2>/dev/null || true
    wait_gone 5 $tree || kill -KILL $tree 2>/dev/null || true
  fi
  local m
  m=$(pid_of "$dir/run/munged.pid")
  if pid_alive "$m"; then
    kill -TERM "$m"
    wait_gone 5 "$m" || kill -KILL "$m" 2>/dev/null || true
  fi
  rm -rf "$(shm_prefix)"-n*
  echo "local-cluster: stopped (logs kept in $dir/log)"
}

do_status() {
  local f p state
  for f in "$dir"/run/munged.pid "$dir"/run/slurmctld.pid "$dir"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    p=$(pid_of "$f")
    if pid_alive "$p"; then state=running; else state=stopped; fi
    echo "$(basename "$f" .pid): pid $p $state"
  done
  if pid_alive "$(pid_of "$dir/run/slurmctld.pid")"; then SLURM_CONF=$conf sinfo -N -o '%N %T %c'; else return 1; fi
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  env) echo "export SLURM_CONF=$conf" ;;
  *) die "unknown command $cmd (start, stop, status, env)" ;;
esac
