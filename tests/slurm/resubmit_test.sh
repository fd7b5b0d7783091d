#!/usr/bin/env bash
# `sweep --submit --wait` submits a run again when its job left the queue with a preempted record that job wrote
# (Slurm cancelled it instead of requeueing it), once per attempt that got further; a record of an earlier attempt
# never does (the new job may have been cancelled while pending, or failed before it trained): a review saw one run
# submitted 21 times in a second. A job its user cancelled (scancel: Slurm's final state CANCELLED, which squeue
# -t all tells for MinJobAge) is not submitted again; one Slurm preempted before it wrote a record is. A rerun with
# an edited spec over a queued job's config is refused. sbatch and squeue are stand-ins on PATH (sbatch prints ids
# 101, 102, ...; squeue shows the job in the file `running` as running until the test removes it, and with -t all
# the lines of the file `ended`), and "job 101" is a real `dtbench train` preempted at step 3 with
# SLURM_JOB_ID=101, which its record's provenance names.
# Usage: resubmit_test.sh DTBENCH
set -euo pipefail
dtbench=$1
work=$(mktemp -d /tmp/dtbench-resubmit.XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
pid=
mkdir "$work/bin"
cat > "$work/bin/sbatch" <<EOS
#!/bin/sh
[ "\$1" = --test-only ] && exit 0
n=\$(cat "$work/next" 2>/dev/null || echo 101)
echo \$((n + 1)) > "$work/next"
[ -e "$work/autorun" ] && echo "\$n" > "$work/running"  # the new job runs at once
echo "\$n"
EOS
cat > "$work/bin/squeue" <<EOS
#!/bin/sh
[ -e "$work/running" ] && echo "\$(cat "$work/running")|\$(cat "$work/running")|N/A|RUNNING|None"
case "\$*" in *"-t all"*) [ -e "$work/ended" ] && cat "$work/ended" ;; esac
exit 0
EOS
chmod +x "$work/bin/sbatch" "$work/bin/squeue"
cd "$work"
echo '{"name": "rs", "base": {"model": {"arch": "mlp", "hidden": 8}, "data": {"dataset": "synthetic",
 "synthetic": {"train_size": 256, "test_size": 64}}, "batch": {"global": 32}, "duration": {"steps": 6},
 "eval": {"every_steps": 3}, "threads": 1}}' > spec.json
# wait_through CAMP STATE [train]: `sweep spec.json --out CAMP --submit --wait` in the background, its job (the id
# the stand-in sbatch gives next) running; with "train", that job is a real `dtbench train` stopped at step 3 (the
# ranks checkpoint and write a preempted record); then it leaves the queue, squeue -t all saying STATE. Sets `job`
# and `rc` (the wait's exit code) and shows CAMP.log.
wait_through() {
  local camp=$1 state=$2 train=${3:-}
  job=$(cat next 2>/dev/null || echo 101)
  echo "$job" > running
  PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out "$camp" --submit --wait --poll 0.2 --timeout 60 > "$camp.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q '"job_id": *"'"$job"'"' "$camp/jobs.json" 2>/dev/null && break; sleep 0.1; done
  grep -q '"job_id": *"'"$job"'"' "$camp/jobs.json" || { echo "FAIL: job $job not listed"; cat "$camp.log"; exit 1; }
  if [ -n "$train" ]; then
    rc=0
    SLURM_JOB_ID=$job "$dtbench" train "$camp/configs/p0-s1.json" --resume --inject-fault sigusr1@3 > "$camp.train.log" 2>&1 || rc=$?
    [ "$rc" = 3 ] || { echo "FAIL: the run was not preempted (exit $rc)"; cat "$camp.train.log"; exit 1; }
  else
    sleep 0.5
  fi
  echo "$job|$job|N/A|$state|None" > ended
  rm running
  rc=0
  wait $pid || rc=$?
  pid=
  cat "$camp.log"
}

# Job 101, preempted by Slurm at step 3.
wait_through camp PREEMPTED train
# Job 102 never ran: its run is left preempted (exit 1), submitted once again and not more.
[ "$rc" = 1 ] || { echo "FAIL: --wait exit $rc, expected 1"; exit 1; }
[ "$(grep -c "submitting again" camp.log)" = 1 ] || { echo "FAIL: not submitted again exactly once"; exit 1; }
grep -qF "p0-s1: preempted, not submitted again: its record is not its latest job's (job 102 wrote none)" camp.log ||
  { echo "FAIL: why the run was left preempted is not said"; exit 1; }
ids=$(/usr/bin/python3 -c 'import json; print(" ".join(s["job_id"] for s in json.load(open("camp/jobs.json"))["submissions"]))')
[ "$ids" = "101 102" ] || { echo "FAIL: jobs.json lists $ids, expected 101 102"; exit 1; }
echo "a run preempted by its own job is submitted again once; the record of an earlier attempt is not enough"

# The same run in a new campaign, its job 103 cancelled by its user at step 3: not submitted again.
wait_through camp2 CANCELLED train
[ "$rc" = 1 ] || { echo "FAIL: --wait exit $rc, expected 1"; exit 1; }
! grep -q "submitting again" camp2.log || { echo "FAIL: a cancelled job's run was submitted again"; exit 1; }
grep -qF "p0-s1: preempted, not submitted again: its job 103 was cancelled (scancel), not preempted by Slurm" camp2.log ||
  { echo "FAIL: why the run was left preempted is not said"; exit 1; }
ids=$(/usr/bin/python3 -c 'import json; print(" ".join(s["job_id"] for s in json.load(open("camp2/jobs.json"))["submissions"]))')
[ "$ids" = "103" ] || { echo "FAIL: jobs.json lists $ids, expected 103"; exit 1; }
echo "a run whose job its user cancelled is not submitted again"

# A rerun with an edited spec while the run's job is queued: exit 2 before anything is written (the config file was
# rewritten under the job, which then trained the new config; a hunt).
rm -f running
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp3 --submit > submit3.log 2>&1
job=$(/usr/bin/python3 -c 'import json; print(json.load(open("camp3/jobs.json"))["submissions"][-1]["job_id"])')
echo "$job" > running
sed 's/"steps": 6/"steps": 8/' spec.json > edited.json
before=$(cat camp3/configs/p0-s1.json)
rc=0
PATH="$work/bin:$PATH" "$dtbench" sweep edited.json --out camp3 --submit > edited.log 2>&1 || rc=$?
cat edited.log
[ "$rc" = 2 ] || { echo "FAIL: a rerun over a queued job's config: exit $rc, expected 2"; exit 1; }
grep -qF "camp3/configs/p0-s1.json: run p0-s1's job $job still queued with this config, which the spec now gives otherwise (first difference at /duration/steps)" edited.log ||
  { echo "FAIL: the refusal does not say why"; exit 1; }
[ "$(cat camp3/configs/p0-s1.json)" = "$before" ] || { echo "FAIL: the queued job's config was rewritten"; exit 1; }
echo "a rerun with an edited spec over a queued job's config: exit 2, nothing written"

# A job Slurm preempted before its ranks wrote a record (in its set-up lines): no record, but squeue -t all says
# PREEMPTED. The run is submitted again, once (its next job is forgotten by Slurm here, and wrote nothing: missing).
# It was left missing, exit 1, without a word of the preemption (a hunt).
wait_through camp4 PREEMPTED
[ "$rc" = 1 ] || { echo "FAIL: --wait exit $rc, expected 1"; exit 1; }
[ "$(grep -c "1 run preempted after its job left the queue: submitting again" camp4.log)" = 1 ] ||
  { echo "FAIL: the run preempted before its record was not submitted again exactly once"; exit 1; }
[ "$(/usr/bin/python3 -c 'import json; print(len(json.load(open("camp4/jobs.json"))["submissions"]))')" = 2 ] ||
  { echo "FAIL: jobs.json does not list two jobs"; exit 1; }
echo "a run whose job Slurm preempted before it wrote a record is submitted again once"

# A run preempted with a record (job X), submitted again (job Y), and Y preempted before it wrote one: submitted
# again, from X's checkpoint. It was left preempted, "its record is not its latest job's" (a review).
listed() { for _ in $(seq 100); do grep -q '"job_id": *"'"$1"'"' camp5/jobs.json 2>/dev/null && return; sleep 0.1; done; echo "FAIL: job $1 not listed"; exit 1; }
x=$(cat next)
y=$((x + 1)) z=$((x + 2))
echo "$x" > running
touch autorun
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp5 --submit --wait --poll 0.2 --timeout 60 > camp5.log 2>&1 &
pid=$!
listed "$x"
rc=0
SLURM_JOB_ID=$x "$dtbench" train camp5/configs/p0-s1.json --resume --inject-fault sigusr1@3 > camp5.train.log 2>&1 || rc=$?
[ "$rc" = 3 ] || { echo "FAIL: the run was not preempted (exit $rc)"; cat camp5.train.log; exit 1; }
echo "$x|$x|N/A|PREEMPTED|None" > ended
rm running  # X leaves the queue: Y is submitted and runs
listed "$y"
printf '%s|%s|N/A|PREEMPTED|None\n%s|%s|N/A|PREEMPTED|None\n' "$x" "$x" "$y" "$y" > ended
rm running  # Y leaves the queue preempted, without a record of its own: Z is submitted
listed "$z"
rm -f autorun running  # Z is forgotten and wrote nothing
rc=0
wait $pid || rc=$?
pid=
cat camp5.log
[ "$rc" = 1 ] || { echo "FAIL: --wait exit $rc, expected 1"; exit 1; }
[ "$(grep -c "submitting again" camp5.log)" = 2 ] || { echo "FAIL: not submitted again after each preemption"; exit 1; }
grep -qF "p0-s1: preempted, not submitted again: its record is not its latest job's (job $z wrote none)" camp5.log ||
  { echo "FAIL: why the run was left preempted is not said"; exit 1; }
echo "a run whose second job Slurm preempted before it wrote a record is submitted again"
