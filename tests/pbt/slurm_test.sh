#!/usr/bin/env bash
# dtbench pbt --submit on a real Slurm cluster started here (slurm/local-cluster.sh): 3 members of 2 ranks, each
# member interval a job on 2 of the cluster's emulated nodes (srun --mpi=pmix), 3 intervals of 10 steps of an MLP.
# Member 1's second interval is preempted by the trainer at step 13 (its job leaves the queue with exit 3): dtbench
# pbt must submit it again and the job resume from its checkpoint. While member 2's second interval waits, the
# campaign process is killed: run here, the campaign is refused (a job is queued); continued with --submit, it
# waits for that job, which `scontrol requeue` then restarts (Slurm's own requeue). The campaign
# must then hold the very lineage of the same spec trained here with mpirun (2 ranks, no faults but the same
# preemption, resumed here), every record must name its Slurm job, and a rerun must submit nothing. Last, a
# campaign killed as if between a member's sbatch and its jobs.json line: the rerun finds the job by its name and
# script, lists it and waits for it instead of submitting the member again. And a member's job cancelled by its user
# (scancel): not submitted again, said once, exit 1; a rerun with --submit finishes the campaign. And one Slurm
# preempts (a job of partition urgent) before the member wrote anything: submitted again, the campaign finishes.
# Skipped (exit 77) without root, Slurm or munge.
# Usage: slurm_test.sh DTBENCH SOURCE_DIR
set -euo pipefail
dtbench=$1 src=$2
# shellcheck disable=SC1091
source "$src/tests/slurm/lib.sh"
require_cluster
py=/usr/bin/python3
work=$(mktemp -d /tmp/dtbench-pbt-slurm.XXXXXX)
cd "$work"
SECONDS=0

# same_lineage A B: the lineages of campaign folders A and B are equal but for the members' wall times.
same_lineage() {
  $py - "$1" "$2" <<'PY'
import json, os, sys
def lineage(d):
    l = json.load(open(os.path.join(d, "lineage.json")))
    for iv in l["intervals"]:
        for m in iv["members"]:
            m.pop("wall_seconds")
    return l
sys.exit(0 if lineage(sys.argv[1]) == lineage(sys.argv[2]) else 1)
PY
}

echo "== start the cluster"
start_cluster "$src" "$work"

cat >member.sh <<SH
#!/bin/sh
run=\$(basename "\$1" .json)
# Before the step past 13 the trainer signals itself (a resumed run is past it: the fault does not fire again).
if [ "\$run" = m01-i001 ]; then exec "$dtbench" train "\$@" --inject-fault sigusr1@13; fi
# The first start of this job waits to be requeued.
if [ -n "\${PBT_REQUEUE:-}" ] && [ "\$run" = m02-i001 ] && [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
  touch "$work/m02-waiting"; sleep 120; exit 1
fi
# The first job of it waits to be preempted, before the member writes anything; the next one trains.
if [ -n "\${PBT_PREEMPT:-}" ] && [ "\$run" = m02-i001 ] && mkdir "$work/m02-once" 2>/dev/null; then
  touch "$work/m02-waiting"; sleep 120; exit 1
fi
exec "$dtbench" train "\$@"
SH
chmod 755 member.sh
WORK=$work $py - <<'PY'
import json, os
work = os.environ["WORK"]
base = {"seed": 5, "model": {"arch": "mlp", "hidden": 16}, "threads": 1,
        "data": {"dataset": "synthetic", "synthetic": {"channels": 1, "height": 8, "width": 8, "classes": 8,
                                                       "train_size": 480, "test_size": 100}},
        "batch": {"global": 16}, "duration": {"steps": 30},
        "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}, "eval": {"every_steps": 5}}
spec = {"name": "pbt-slurm", "population": 3, "ready_steps": 10, "seed": 3, "base": base,
        "hyperparameters": {"optimizer.lr": {"prior": "log_uniform", "min": 0.002, "max": 0.2}},
        "slurm": {"nodes": 2, "tasks_per_node": 1, "time": "00:10:00", "mpi": "pmix"},
        "local": {"concurrency": 1}, "program": [os.path.join(work, "member.sh")]}
json.dump(spec, open("spec.json", "w"), indent=1)
PY

# waiting_campaign VAR OUT LOG: `dtbench pbt --submit` on OUT in the background with VAR=1 (member.sh), its output
# to LOG, until member 2's second interval waits in member.sh. Sets `pbt` (its pid) and `job` (that interval's job).
waiting_campaign() {
  rm -f "$work/m02-waiting"
  env "$1=1" "$dtbench" pbt spec.json --out "$2" --submit --poll 0.5 --timeout 600 >"$3" 2>&1 &
  pbt=$!
  local deadline=$((SECONDS + 300))
  until [ -f "$work/m02-waiting" ]; do
    [ $SECONDS -lt $deadline ] || { cat "$3"; fail "member 2's second interval never started"; }
    kill -0 $pbt 2>/dev/null || { cat "$3"; fail "dtbench pbt ended before member 2's second interval started"; }
    sleep 0.2
  done
  job=$($py -c 'import json,sys; print([s["job_id"] for s in json.load(open(sys.argv[1]))["submissions"] if s["run"] == "m02-i001"][-1])' "$2/jobs.json")
}

# finish_campaign LOG...: waits for the campaign `pbt` and sets `rc` to its exit code; shows the LOGs.
finish_campaign() {
  set +e
  wait $pbt
  rc=$?
  set -e
  sed 's/^/    /' "$@"
}

echo "== a request Slurm refuses (a partition that does not exist): exit 2, nothing written or queued"
$py -c 'import json; s = json.load(open("spec.json")); s["slurm"]["partition"] = "nosuch"; json.dump(s, open("nopart.json", "w"))'
expect 2 "nopart.json: /slurm: Slurm refuses the members' request: sbatch: error: " \
  -- "$dtbench" pbt nopart.json --out "$work/nopart" --submit --poll 0.5
[ ! -e "$work/nopart" ] || fail "the refused campaign was written"

echo "== the campaign as Slurm jobs, one requeued by Slurm, one preempted"
camp=$work/camp
waiting_campaign PBT_REQUEUE "$camp" pbt.out
# The campaign process dies while its jobs are queued: run here, the campaign is refused; continued with
# --submit, it waits for the queued job instead of submitting it again.
kill -KILL $pbt
wait $pbt 2>/dev/null || true
expect 2 "is still queued; continue with --submit, or wait for it" -- "$dtbench" pbt spec.json --out "$camp"
PBT_REQUEUE=1 "$dtbench" pbt spec.json --out "$camp" --submit --poll 0.5 --timeout 600 >pbt2.out 2>&1 &
pbt=$!
wait_for_text pbt2.out "member 2: job $job of an earlier dtbench pbt is still queued; waiting for it" 60
scontrol requeue "$job"
echo "    requeued job $job (member 2, interval 1)"
finish_campaign pbt.out pbt2.out
[ "$rc" = 0 ] || fail "dtbench pbt --submit exited $rc"

echo "== the same spec here (mpirun -np 2)"
expect 0 "member 1: preempted in interval 1; resuming from its checkpoint" -- "$dtbench" pbt spec.json --out "$work/here"

same_lineage "$camp" "$work/here" || fail "the Slurm campaign chose otherwise than the one trained here"
CAMP=$camp HERE=$work/here JOB=$job $py - <<'PY'
import json, os
camp, here = os.environ["CAMP"], os.environ["HERE"]
ls = json.load(open(os.path.join(camp, "lineage.json")))
assert len(ls["intervals"]) == 3 and all(m["status"] == "completed" for iv in ls["intervals"] for m in iv["members"])
subs = json.load(open(os.path.join(camp, "jobs.json")))["submissions"]
runs = [s["run"] for s in subs]
assert runs.count("m01-i001") == 2 and len(runs) == 10, runs  # 9 member intervals, member 1's twice
for iv in ls["intervals"]:
    for m in iv["members"]:
        r = json.load(open(os.path.join(camp, "runs", m["run"] + ".json")))
        slurm = r["provenance"]["slurm"]
        assert r["ranks"] == 2 and slurm["job_id"] == [s["job_id"] for s in subs if s["run"] == m["run"]][-1], (m, slurm)
        assert slurm["node_list"], slurm
        h = json.load(open(os.path.join(here, "runs", m["run"] + ".json")))
        walls = lambda c: [{k: v for k, v in p.items() if k != "wall_seconds"} for p in c]
        assert h["ranks"] == 2 and walls(h["curve"]) == walls(r["curve"]), m["run"]  # losses bitwise
pre = json.load(open(os.path.join(camp, "runs", "m01-i001.json")))
stops = [p["at_step"] for p in pre["extra"]["preemptions"]]
assert len(stops) == 1 and 13 <= stops[0] < 20, pre["extra"]["preemptions"]  # the next step boundary
req = json.load(open(os.path.join(camp, "runs", "m02-i001.json")))
assert req["provenance"]["slurm"]["job_id"] == os.environ["JOB"] and req["provenance"]["slurm"]["restart_count"] == "1", req["provenance"]["slurm"]
print("    lineage equal to the campaign trained here; member 1 resumed in a second job after step 13; member 2's job "
      "restarted by Slurm; every record names its job and 2 ranks")
PY

echo "== killed between sbatch and its jobs.json line: the rerun finds the job instead of submitting it again"
camp3=$work/camp3
PBT_REQUEUE=1 "$dtbench" pbt spec.json --out "$camp3" --submit --poll 0.5 --timeout 600 >pbt3.out 2>&1 &
pbt=$!
deadline=$((SECONDS + 300))
until grep -qF '"m02-i001"' "$camp3/jobs.json" 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || { cat pbt3.out; fail "member 2's second interval was never submitted"; }
  sleep 0.2
done
kill -KILL $pbt
wait $pbt 2>/dev/null || true
# As if the process had died right after sbatch: the job is not listed, the marker is left.
job3=$($py - "$camp3/jobs.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
job = [s["job_id"] for s in doc["submissions"] if s["run"] == "m02-i001"][-1]
doc["submissions"] = [s for s in doc["submissions"] if s["run"] != "m02-i001"]
json.dump(doc, open(sys.argv[1], "w"))
print(job)
PY
)
touch "$camp3/runs/m02-i001.submitting"
PBT_REQUEUE=1 "$dtbench" pbt spec.json --out "$camp3" --submit --poll 0.5 --timeout 600 >pbt4.out 2>&1 &
pbt=$!
wait_for_text pbt4.out "member 2: job $job3 was submitted by an earlier dtbench pbt that did not list it" 60
# Its first start waits to be requeued (member.sh): requeue it once it runs.
deadline=$((SECONDS + 300))
until [ "$(squeue -h -j "$job3" -o %T 2>/dev/null)" = RUNNING ]; do
  [ $SECONDS -lt $deadline ] || fail "job $job3 never ran"
  sleep 0.2
done
scontrol requeue "$job3"
finish_campaign pbt4.out
[ "$rc" = 0 ] || fail "the rerun exited $rc"
[ ! -e "$camp3/runs/m02-i001.submitting" ] || fail "the marker was left"
same_lineage "$camp3" "$camp" || fail "the continued campaign chose otherwise"
CAMP3=$camp3 JOB=$job3 $py - <<'PY'
import json, os
subs = json.load(open(os.path.join(os.environ["CAMP3"], "jobs.json")))["submissions"]
m2 = [s["job_id"] for s in subs if s["run"] == "m02-i001"]
assert m2 == [os.environ["JOB"]], m2  # listed again, never submitted again
print("    the unlisted job was found and listed, not submitted again; the lineage is the first campaign's")
PY

echo "== a member's job cancelled by its user: exit 1, said once, the interval unfinished; --submit again finishes it"
camp5=$work/camp5
waiting_campaign PBT_REQUEUE "$camp5" pbt5.out
job5=$job
scancel "$job5"
finish_campaign pbt5.out
[ "$rc" = 1 ] || fail "a cancelled member: dtbench pbt exited $rc, expected 1"
said=$(grep -cF "member 2: preempted, not submitted again: its job $job5 was cancelled (scancel), not preempted by Slurm" pbt5.out || true)
[ "$said" = 1 ] || fail "the cancel was said $said times, expected once"
grep -qF "interval 1 is left unfinished: the job of member 2 (job $job5) was cancelled (scancel)" pbt5.out ||
  fail "no word that interval 1 is left unfinished"
[ ! -e "$camp5/runs/m02-i001.json" ] || fail "the cancelled member has a record"
expect 0 "best: member" -- "$dtbench" pbt spec.json --out "$camp5" --submit --poll 0.5 --timeout 600
same_lineage "$camp5" "$camp" || fail "the campaign continued after the cancel chose otherwise"
CAMP5=$camp5 JOB=$job5 $py - <<'PY'
import json, os
subs = json.load(open(os.path.join(os.environ["CAMP5"], "jobs.json")))["submissions"]
m2 = [s["job_id"] for s in subs if s["run"] == "m02-i001"]
assert len(m2) == 2 and m2[0] == os.environ["JOB"], m2  # submitted again by the rerun only
print("    the cancelled member was not submitted again until the rerun, which finished the campaign as the first")
PY

echo "== a member's job preempted by Slurm before it wrote a record: submitted again; the campaign finishes"
camp6=$work/camp6
waiting_campaign PBT_PREEMPT "$camp6" pbt6.out
job6=$job
# A job of partition urgent that needs the member's nodes whole: Slurm preempts the member's job (PreemptMode=CANCEL).
sbatch -p urgent -N2 --exclusive -w "$(squeue -h -j "$job6" -o %N)" -J urgent -o /dev/null --wrap 'sleep 1' >/dev/null
finish_campaign pbt6.out
[ "$rc" = 0 ] || fail "a member preempted before it wrote a record: dtbench pbt exited $rc, expected 0"
[ "$(squeue -h -t all -j "$job6" -o %T)" = PREEMPTED ] || fail "job $job6 was not preempted"
grep -qF "member 2: its job was preempted before it wrote a record; submitting it again" pbt6.out ||
  fail "the preempted member was not said to be submitted again"
same_lineage "$camp6" "$camp" || fail "the campaign with a preempted member chose otherwise"

echo "== a rerun of the finished campaign submits nothing"
before=$(cat "$camp/lineage.json")
expect 0 "best: member" -- "$dtbench" pbt spec.json --out "$camp" --submit --poll 0.5
[ "$(cat "$camp/lineage.json")" = "$before" ] || fail "the lineage changed"
[ "$($py -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["submissions"]))' "$camp/jobs.json")" = 10 ] ||
  fail "the rerun submitted jobs"

echo "== stop the cluster"
stop_cluster_checked
echo "PASS in $SECONDS s"
