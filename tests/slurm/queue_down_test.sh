#!/usr/bin/env bash
# A sweep whose jobs.json lists submissions, while the queue cannot be asked (slurmctld down: squeue exits 1).
# `--submit --dry-run` only shows the plan: it says the queue could not be asked and exits 0 (it was exit 1);
# `--submit` itself still refuses (exit 1), since it cannot know which runs are queued. sbatch and squeue are
# stand-ins on PATH: no cluster is needed.
# Usage: queue_down_test.sh DTBENCH
set -euo pipefail
dtbench=$1
work=$(mktemp -d /tmp/dtbench-queue-down.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
printf '#!/bin/sh\necho 4242\n' > "$work/bin/sbatch"
printf '#!/bin/sh\necho "slurm_load_jobs error: Unable to contact slurm controller" >&2\nexit 1\n' > "$work/bin/squeue"
chmod +x "$work/bin/sbatch" "$work/bin/squeue"
cd "$work"
echo '{"name": "q", "base": {"duration": {"steps": 2}}, "axes": {"optimizer.lr": [0.1, 0.2]}}' > spec.json
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp --submit > first.log
grep -q '"job_id": *"4242"' camp/jobs.json || { echo "FAIL: no submission in jobs.json"; cat camp/jobs.json; exit 1; }
rc=0
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp --submit --dry-run > dry.log 2>&1 || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: --dry-run exit $rc"; cat dry.log; exit 1; }
grep -q "the queue could not be asked: squeue failed (exit 1)" dry.log || { echo "FAIL: not said"; cat dry.log; exit 1; }
rc=0
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp --submit > real.log 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "squeue failed" real.log || { echo "FAIL: --submit exit $rc"; cat real.log; exit 1; }
# --local asks the queue too where the campaign was submitted (its dry run did, and said such runs were skipped,
# while the run itself ran them here beside their jobs): refused while the queue cannot be asked, ...
rc=0
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp --local > local.log 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "squeue failed" local.log || { echo "FAIL: --local with the queue down: exit $rc"; cat local.log; exit 1; }
# ... and, with both jobs running, leaves their runs alone (exit 1: the campaign is not complete yet).
printf '#!/bin/sh
echo "4242|4242|N/A|RUNNING"
' > "$work/bin/squeue"
rc=0
PATH="$work/bin:$PATH" "$dtbench" sweep spec.json --out camp --local > local2.log 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "skipping 2 runs whose jobs are still queued" local2.log && grep -q "0 runs to do" local2.log &&
  ! grep -q "^\[1/" local2.log || { echo "FAIL: --local beside running jobs: exit $rc"; cat local2.log; exit 1; }
echo "queue down: --dry-run says so (exit 0), --submit and --local refuse (exit 1); --local leaves running jobs' runs alone"
