#!/usr/bin/env bash
# dtbench sweep on a real Slurm cluster (slurm/local-cluster.sh: munged, slurmctld and four slurmd
# posing as nodes n1..n4), with the mpi_steps fixture as the program so the plumbing is tested on
# its own:
#   - srun --mpi=pmix spans the emulated nodes (each rank reports its SLURMD_NODENAME);
#   - a 2 x 2 sweep (2 "reducers" x 1 or 2 nodes) is submitted and waited for; every record exists,
#     is schema-valid, names its Slurm job id and node list; output files lie beside the records in
#     a folder whose name holds a space and '%'; the job name with shell metacharacters reaches Slurm
#     literally; the regenerated table holds every point;
#   - a rerun skips everything; a lost record is resubmitted alone;
#   - a job array (one script for the runs that share their resources) runs every task, and a rerun
#     resubmits only the missing task;
#   - a rerun while an array's tasks are queued names each as Slurm does (123_4);
#   - a running job preempted with `scontrol requeue` checkpoints, is requeued and resumes to
#     completion; a job whose batch shell gets USR1 (what --signal=B:USR1@N sends before the time
#     limit) checkpoints, requeues itself and completes;
#   - a running job preempted by a job of partition urgent (PreemptMode=CANCEL: Slurm cancels it, final state
#     PREEMPTED) checkpoints; --wait submits the run again and it resumes to completion;
#   - a running job its user cancels (scancel, final state CANCELLED) checkpoints; --wait does not submit it again
#     and says why (exit 1); a sweep with --submit then resumes it;
#   - the cluster stops cleanly and leaves none of its processes behind.
# Usage: cluster_test.sh DTBENCH MPI_STEPS SOURCE_DIR BINARY_DIR
set -euo pipefail
dtbench=$1 steps=$2 src=$3
# shellcheck disable=SC1091
source "$src/tests/slurm/lib.sh"
require_cluster
py=/usr/bin/python3
work=$(mktemp -d /tmp/dtbench-cluster-test.XXXXXX)
cd "$work"

echo "== start the cluster"
start_cluster "$src" "$work"
touch "$work/marker"

echo "== srun --mpi=pmix across 4 emulated nodes"
"$dtbench" config --set name=hello --set duration.steps=3 --set data.dataset=synthetic --set batch.global=8 \
  --set output.dir="$work/hello" >"$work/hello.json"
# --kill-on-bad-exit, as dtbench's sbatch scripts pass it: a task that dies ends the step at once, with srun naming
# the task and signal, instead of leaving the other ranks waiting for it until the test's timeout. (Under load, 10
# of 260 such steps lost a task to SIGSEGV in MPI_Init before slurm/local-cluster.sh set every PMIx fence to a ring;
# the cluster's configuration is checked to say so.)
config=$(scontrol show config)
grep -Eq '^PMIxCollFence += ring$' <<<"$config" ||
  { echo "FAIL: the cluster's PMIx fences are not rings (scontrol show config)"; exit 1; }
srun -N4 --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=1 "$steps" --step-seconds=0.01 "$work/hello.json" |
  sed 's/^/    /'

echo "== the hierarchical reducer's nodes are the emulated nodes (SLURM_NODEID), though all share this host"
srun -N2 --ntasks-per-node=2 --mpi=pmix --kill-on-bad-exit=1 "$dtbench" allreduce --reducer hierarchical,ring \
  -b 4K -e 64K -n 2 -w 1 \
  --json "$work/hierarchical.json" | sed 's/^/    /'
/usr/bin/python3 - "$work/hierarchical.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["nodes"] == [0, 0, 1, 1], doc["nodes"]  # ranks 0, 1 on the first node, 2, 3 on the second
rows = [r for r in doc["rows"] if r["reducer"] == "hierarchical"]
assert rows and doc["wrong"] == 0
for r in rows:
    t, S = r["traffic"], r["bytes"]
    # Leaders 0 and 2: one buffer in and out within their node plus a 2-rank ring between them (S each way).
    assert t["sent_bytes"] == t["expected_sent_bytes"] == [2 * S, S, 2 * S, S], (S, t)
print(f"    nodes {doc['nodes']}; hierarchical traffic per rank = [2S, S, 2S, S] at {len(rows)} sizes")
PY
# The same with MPI_Allreduce among the leaders (a communicator of ranks 0 and 2 split from the job's): correct
# sums, and only the transfers within the nodes counted (the leaders' bytes move inside MPI).
srun -N2 --ntasks-per-node=2 --mpi=pmix --kill-on-bad-exit=1 "$dtbench" allreduce --reducer hierarchical \
  --leader mpi -b 4K -e 64K -n 2 -w 1 -c 1 --json "$work/hierarchical-mpi.json" | sed 's/^/    /'
/usr/bin/python3 - "$work/hierarchical-mpi.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["nodes"] == [0, 0, 1, 1] and doc["wrong"] == 0 and doc["rows"], (doc["nodes"], doc["wrong"])
for r in doc["rows"]:
    t, S = r["traffic"], r["bytes"]
    assert t["sent_bytes"] == t["expected_sent_bytes"] == [S, S, S, S], (S, t)
print(f"    leader mpi: traffic per rank = [S, S, S, S] within the nodes at {len(doc['rows'])} sizes, no wrong value")
PY
REC="$work/hello/hello.json" $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["ranks"] == 4 and sorted(r["extra"]["rank_nodes"]) == ["n1", "n2", "n3", "n4"], r["extra"]
assert r["provenance"]["slurm"]["job_id"], r["provenance"]["slurm"]
print("    ranks on", r["extra"]["rank_nodes"])'

echo "== shared_memory runs on the ranks of one node and is refused across emulated nodes (exit 2, naming them)"
srun -N1 --ntasks-per-node=2 --mpi=pmix --kill-on-bad-exit=1 "$dtbench" allreduce --reducer shared_memory \
  -b 4K -e 4M -f 4 -n 2 -w 1 \
  --json "$work/shm.json" | sed 's/^/    /'
/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["wrong"] == 0 and d["rows"], d' \
  "$work/shm.json"
expect 2 "needs every rank on one node" -- srun -N2 --ntasks-per-node=1 --mpi=pmix "$dtbench" allreduce \
  --reducer shared_memory -b 4K -e 4K -n 1 -w 0
srun -N2 --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=1 "$dtbench" allreduce --reducer all -b 4K -e 4K -n 1 -w 0 \
  --json "$work/all.json" >/dev/null
/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert "shared_memory" not in {r["reducer"] for r in d["rows"]}' \
  "$work/all.json"

echo "== a request Slurm refuses (a partition that does not exist) is exit 2 before anything is written or queued"
$py -c 'import json; json.dump({"name": "nopart", "base": {"duration": {"steps": 2}, "data": {"dataset": "synthetic"}},
  "axes": {"slurm.partition": ["debug", "nosuch"]}, "slurm": {"time": "00:05:00"}}, open("nopart.json", "w"))'
expect 2 "nopart.json: /slurm: Slurm refuses the request of point p1 (slurm.partition=nosuch): sbatch: error: " \
  -- "$dtbench" sweep nopart.json --out "$work/nopart" --submit --wait --poll 0.5
[ "$(grep -c "dtbench: error" <<<"$LAST_OUT")" = 1 ] || fail "the refusal took more than one line"
[ ! -e "$work/nopart" ] || fail "the refused campaign was written"
[ -z "$(squeue -h -n nopart/p0-debug-s1)" ] || fail "a job of the refused campaign was queued"

echo "== options sbatch itself refuses together (fatal: mutually exclusive) are exit 2 before anything is written"
# p0 alone is a valid request (held: it would never run); p1's sbatch failed after p0 was queued (a hunt).
$py -c 'import json; json.dump({"name": "fatal", "base": {"duration": {"steps": 2}, "data": {"dataset": "synthetic"}},
  "axes": {"slurm.sbatch": [["--hold"], ["--hold", "--ntasks-per-gpu=1"]]}, "slurm": {"time": "00:05:00"}},
  open("fatal.json", "w"))'
expect 2 "Slurm refuses the request of point p1" -- "$dtbench" sweep fatal.json --out "$work/fatal" --submit
grep -qF "mutually exclusive" <<<"$LAST_OUT" || fail "the refusal does not say sbatch's reason"
[ ! -e "$work/fatal" ] || fail "the refused campaign was written"
[ -z "$(squeue -h -o %i)" ] || fail "a job of the refused campaign was queued"

echo "== with nodes drained, a request they could meet is submitted and waits in the queue, as sbatch queues it"
# sbatch --test-only says "Requested node configuration is not available" while n2..n4 are drained; the sweep took
# that as a refusal for good (exit 2): no campaign could be submitted during a maintenance (a hunt).
scontrol update nodename=n2,n3,n4 state=drain reason=dtbench-test
$py -c 'import json; json.dump({"name": "drained", "base": {"duration": {"steps": 2}, "data": {"dataset": "synthetic"}},
  "slurm": {"nodes": 2, "time": "00:05:00"}}, open("drained.json", "w"))'
expect 0 "submitted" -- "$dtbench" sweep drained.json --out "$work/drained" --submit
[ "$(squeue -h -n drained/p0-s1 -o %T)" = PENDING ] || { scontrol update nodename=n2,n3,n4 state=resume; fail "not pending"; }
scancel -n drained/p0-s1
scontrol update nodename=n2,n3,n4 state=resume
for _ in $(seq 100); do [ -z "$(squeue -h -o %i)" ] && break; sleep 0.2; done
[ "$(sinfo -h -N -p debug -o '%N %T' | grep -c idle)" = 4 ] || fail "the nodes did not come back idle"

echo "== a 2 x 2 sweep, submitted and waited for"
out="$work/camp 100%"
name='cluster "q" $(touch pwned) #1'
NAME=$name STEPS=$steps $py - <<'EOF'
import json, os
spec = {
    "name": os.environ["NAME"],
    "base": {"duration": {"steps": 20}, "batch": {"global": 8}, "data": {"dataset": "synthetic"}},
    "axes": {"reducer.name": ["ring", "tree"], "slurm.nodes": [1, 2]},
    "slurm": {"tasks_per_node": 1, "time": "00:05:00", "signal_seconds": 60},
    "program": [os.environ["STEPS"], "--step-seconds=0.05"],
}
json.dump(spec, open("spec.json", "w"), indent=2)
spec["name"] = "preempt"
spec["axes"] = {"slurm.nodes": [2]}
spec["base"]["duration"]["steps"] = 150
spec["program"] = [os.environ["STEPS"], "--step-seconds=0.1"]
json.dump(spec, open("preempt.json", "w"), indent=2)
EOF
expect 0 "submitted 4 runs" -- "$dtbench" sweep spec.json --out "$out" --submit --wait --poll 0.5 --timeout 300
grep -qF "4 runs: 4 done" <<<"$LAST_OUT" || fail "not all 4 runs done"
$py "$src/tests/core/validate_record.py" "$src/results/schema/run-record.schema.json" "$out"/runs/p*.json
OUT=$out NAME=$name $py - <<'EOF'
import json, os, subprocess
out, name = os.environ["OUT"], os.environ["NAME"]
camp = json.load(open(os.path.join(out, "campaign.json")))
jobs = {s["run"]: s["job_id"] for s in json.load(open(os.path.join(out, "jobs.json")))["submissions"]}
for p in camp["points"]:
    run = p["runs"][0]
    r = json.load(open(os.path.join(out, run["record"])))
    slurm = r["provenance"]["slurm"]
    assert slurm["job_id"] == jobs[run["name"]], (slurm, jobs[run["name"]])
    assert slurm["node_list"], slurm
    nodes = p["values"]["slurm.nodes"]
    assert r["ranks"] == nodes and len(set(r["extra"]["rank_nodes"])) == nodes, r["extra"]
    assert r["config"]["reducer"]["name"] == p["values"]["reducer.name"]
    log = os.path.join(out, "runs", run["name"] + ".out")
    assert "mpi_steps: completed" in open(log).read(), log
    show = subprocess.run(["scontrol", "show", "job", slurm["job_id"]], capture_output=True, text=True).stdout
    job_name = show.split("JobName=", 1)[1].split("\n", 1)[0]
    assert job_name == name + "/" + run["name"], (job_name, name)
    print(f"    {run['name']}: job {slurm['job_id']} on {slurm['node_list']}, ranks on {r['extra']['rank_nodes']}")
print("    job names reached Slurm literally:", repr(name))
EOF
if [ -n "$(find "$work" /tmp "$HOME" -maxdepth 4 -name 'pwned*' -newer "$work/marker" 2>/dev/null | head -1)" ]; then
  fail "the campaign name was executed"
fi
expect 0 "ranks" -- "$dtbench" table "$out"
[ "$(grep -c '1/1 done' <<<"$LAST_OUT")" = 4 ] || fail "the table lacks a point"

echo "== a rerun skips everything; a lost record is resubmitted alone"
expect 0 "skipping 4 runs whose records are complete" -- "$dtbench" sweep spec.json --out "$out" --submit --wait --poll 0.5
grep -qF "submitted 0 runs" <<<"$LAST_OUT" || fail "rerun submitted something"
rm "$out/runs/p3-tree-nodes2-s1.json"
expect 0 "submitted 1 run;" -- "$dtbench" sweep spec.json --out "$out" --submit --wait --poll 0.5 --timeout 300
grep -qF "submitted job" <<<"$LAST_OUT" && grep -qF "p3-tree-nodes2-s1" <<<"$LAST_OUT" || fail "did not resubmit p3"

echo "== a job array beyond Slurm's MaxArraySize (1001) is exit 2 before anything is written or queued"
# (It was accepted, the campaign written, and its sbatch failed with exit 1: the test of the requests ran per run.)
$py -c 'import json; json.dump({"name": "huge", "base": {"duration": {"steps": 2}, "data": {"dataset": "synthetic"}},
  "axes": {"optimizer.lr": [0.1, 0.2]}, "repeats": 501, "slurm": {"time": "00:05:00", "array": True}},
  open("huge.json", "w"))'
expect 2 "huge.json: /slurm/array: Slurm refuses job array 0 of 1002 tasks (tasks 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15...): allocation failure: Invalid job array specification" \
  -- "$dtbench" sweep huge.json --out "$work/huge" --submit
[ ! -e "$work/huge" ] || fail "the refused campaign was written"

echo "== a job array over the runs that share their resources"
aout=$work/array
STEPS=$steps $py -c '
import json, os
json.dump({"name": "array", "base": {"duration": {"steps": 10}, "batch": {"global": 8}, "data": {"dataset": "synthetic"}},
           "axes": {"reducer.name": ["ring", "tree"]}, "repeats": 2,
           "slurm": {"nodes": 2, "time": "00:05:00", "signal_seconds": 60, "array": True},
           "program": [os.environ["STEPS"], "--step-seconds=0.02"]}, open("array.json", "w"))'
expect 0 "(tasks 0,1,2,3)" -- "$dtbench" sweep array.json --out "$aout" --submit --wait --poll 0.5 --timeout 300
grep -qF "4 runs: 4 done" <<<"$LAST_OUT" || fail "not all array tasks done"
[ "$(ls "$aout"/scripts)" = "array-0.sbatch" ] || fail "expected one array script"
for r in p0-ring-s1 p0-ring-s2 p1-tree-s1 p1-tree-s2; do
  grep -qF "mpi_steps: completed" "$aout/runs/$r.out" || fail "no output beside the record of $r"
done
rm "$aout/runs/p1-tree-s2.json"
expect 0 "(tasks 3)" -- "$dtbench" sweep array.json --out "$aout" --submit --wait --poll 0.5 --timeout 300
grep -qF "4 runs: 4 done" <<<"$LAST_OUT" || fail "the resubmitted task did not complete"

echo "== a rerun while an array's tasks are queued names each task as Slurm does (JOB_TASK)"
qout=$work/array-queued
STEPS=$steps $py -c '
import json, os
json.dump({"name": "slow-array", "base": {"duration": {"steps": 10}, "batch": {"global": 8}, "data": {"dataset": "synthetic"}},
           "repeats": 2, "slurm": {"nodes": 2, "time": "00:05:00", "array": True},
           "program": [os.environ["STEPS"], "--step-seconds=1"]}, open("slow-array.json", "w"))'
expect 0 "(tasks 0,1)" -- "$dtbench" sweep slow-array.json --out "$qout" --submit
job=$(last_job "$qout")
expect 0 "p0-s1: queued (job ${job}_0 still queued)" -- "$dtbench" sweep slow-array.json --out "$qout" --dry-run
grep -qF "p0-s2: queued (job ${job}_1 still queued)" <<<"$LAST_OUT" || fail "the second task is not named ${job}_1"
expect 0 "skipping 2 runs whose jobs are still queued" -- "$dtbench" sweep slow-array.json --out "$qout" --submit \
  --wait --poll 0.5 --timeout 300
grep -qF "2 runs: 2 done" <<<"$LAST_OUT" || fail "the array's tasks did not complete"

check_resumed() {  # check_resumed RECORD
  REC=$1 $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] == "completed", r["status"]
assert r["extra"]["resumed_from_step"] > 0, r["extra"]
assert r["provenance"]["slurm"].get("restart_count") == "1", r["provenance"]["slurm"]
print("    completed after a restart, resumed from step", r["extra"]["resumed_from_step"])'
}

echo "== preemption by scontrol requeue: checkpoint, requeue, resume"
pout=$work/preempt
expect 0 "submitted 1 run" -- "$dtbench" sweep preempt.json --out "$pout" --submit
job=$(last_job "$pout")
wait_for_text "$pout/runs/p0-nodes2-s1.out" "mpi_steps: rank" 120 2  # both ranks have their handlers
sleep 1
scontrol requeue "$job"
expect 0 "skipping 1 run whose jobs are still queued" -- "$dtbench" sweep preempt.json --out "$pout" --submit --wait --poll 0.5 --timeout 300
grep -qF "mpi_steps: preempted" "$pout/runs/p0-nodes2-s1.out" || fail "the first attempt did not checkpoint"
check_resumed "$pout/runs/p0-nodes2-s1.json"

echo "== USR1 to the batch shell (--signal=B:USR1@N): checkpoint, self-requeue, resume"
sout=$work/signal
expect 0 "submitted 1 run" -- "$dtbench" sweep preempt.json --out "$sout" --submit
job=$(last_job "$sout")
wait_for_text "$sout/runs/p0-nodes2-s1.out" "mpi_steps: rank" 120 2
sleep 1
scancel --batch --signal=USR1 "$job"
expect 0 "sweep: 1 run: 1 done" -- "$dtbench" sweep preempt.json --out "$sout" --submit --wait --poll 0.5 --timeout 300
grep -qF "requeueing job $job" "$sout/runs/p0-nodes2-s1.out" || fail "the script did not requeue itself"
check_resumed "$sout/runs/p0-nodes2-s1.json"

# end_while_waiting HOW SPEC OUT LOG TIMEOUT FILE TEXT COUNT: `sweep SPEC --out OUT --submit --wait` in the
# background (its output to LOG), its job ended once FILE holds COUNT lines with TEXT: HOW `scancel` cancels it,
# `preempt` submits a job to partition urgent that needs every node whole, so Slurm preempts it. Sets `ended` (the job id)
# and `rc` (the sweep's exit code), and shows LOG.
end_while_waiting() {
  local how=$1
  shift
  "$dtbench" sweep "$1" --out "$2" --submit --wait --poll 0.5 --timeout "$4" >"$3" 2>&1 &
  local pid=$!
  wait_for_text "$5" "$6" 120 "$7"
  sleep 1  # a running job's ranks have their signal handlers by then
  ended=$(last_job "$2")
  if [ "$how" = scancel ]; then scancel "$ended"
  else sbatch -p urgent -N4 --exclusive -J urgent -o /dev/null --wrap 'sleep 1' >/dev/null; fi
  set +e
  wait $pid
  rc=$?
  set -e
  sed 's/^/    /' "$3"
}

echo "== a running job preempted (PreemptMode=CANCEL): checkpoint; --wait submits it again, it resumes"
cout=$work/preempted
end_while_waiting preempt preempt.json "$cout" "$work/preempted.log" 300 "$cout/runs/p0-nodes2-s1.out" "mpi_steps: rank" 2
[ "$(squeue -h -t all -j "$ended" -o %T)" = PREEMPTED ] || fail "job $ended was not preempted"
[ "$rc" = 0 ] || fail "a preempted running job: --wait exit $rc, expected 0 after submitting it again"
grep -qF "1 run preempted after its job left the queue: submitting again" "$work/preempted.log" ||
  fail "the preempted run was not submitted again"
[ "$(last_job "$cout")" != "$ended" ] || fail "no second job in jobs.json"
grep -qF "sweep: 1 run: 1 done" "$work/preempted.log" || fail "the resubmitted run did not complete"
REC=$cout/runs/p0-nodes2-s1.json $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] == "completed", r["status"]
assert r["extra"]["resumed_from_step"] > 0, r["extra"]
print("    completed in a second job, resumed from step", r["extra"]["resumed_from_step"])'

echo "== a running job its user cancels (scancel): checkpoint; --wait leaves it (exit 1), a sweep --submit resumes it"
cout=$work/cancelled
end_while_waiting scancel preempt.json "$cout" "$work/cancelled.log" 300 "$cout/runs/p0-nodes2-s1.out" "mpi_steps: rank" 2
[ "$rc" = 1 ] || fail "a cancelled running job: --wait exit $rc, expected 1"
grep -qF "p0-nodes2-s1: preempted, not submitted again: its job $ended was cancelled (scancel), not preempted by Slurm" \
  "$work/cancelled.log" || fail "why the cancelled run was not submitted again is not said"
! grep -qF "submitting again" "$work/cancelled.log" || fail "the cancelled run was submitted again"
[ "$(last_job "$cout")" = "$ended" ] || fail "a second job in jobs.json"
expect 0 "sweep: 1 run: 1 done" -- "$dtbench" sweep preempt.json --out "$cout" --submit --wait --poll 0.5 --timeout 300

echo "== a job cancelled while pending: --wait ends with exit 1, saying the run never started (no .err to see)"
$py -c 'import json; s = json.load(open("preempt.json")); s["name"] = "held"; s["slurm"]["sbatch"] = ["--hold"]; json.dump(s, open("held.json", "w"))'
hout=$work/held
end_while_waiting scancel held.json "$hout" "$work/held.log" 120 "$hout/jobs.json" '"job_id"' 1
[ "$rc" = 1 ] || fail "a cancelled pending job: exit $rc, expected 1"
grep -qF "p0-nodes2-s1: missing (no $hout/runs/p0-nodes2-s1.err: the run never started)" "$work/held.log" ||
  fail "a cancelled pending job: the message names an error file that does not exist"

echo "== reproduce --submit --wait: a claim's sweep through the cluster, then its report"
# (Its check of the folders before writing ran the sweeps as dry runs with --wait, which they refuse without
# --submit: every reproduce --submit --wait was exit 2 until this case.)
claims=$work/claims
mkdir -p "$claims/tiny"
STEPS=$steps $py - "$claims/tiny" <<'EOF'
import json, os, sys
d = sys.argv[1]
json.dump({"name": "tiny-claim", "base": {"duration": {"steps": 4}, "data": {"dataset": "synthetic"}},
           "axes": {"batch.global": [8, 16]},
           "slurm": {"tasks_per_node": 1, "time": "00:05:00", "signal_seconds": 60},
           "program": [os.environ["STEPS"], "--step-seconds=0.01"]}, open(os.path.join(d, "s.json"), "w"))
json.dump({"id": "tiny", "title": "a claim of two runs", "seed": {"file": "f", "quote": "q"}, "setup": "s",
           "criterion": {"kind": "critical_batch", "text": "t", "min_seeds": 1, "max_fit_rms": 0.5},
           "experiments": {"quick": [{"name": "s", "sweep": "s.json"}], "full": [{"name": "s", "sweep": "s.json"}]}},
          open(os.path.join(d, "claim.json"), "w"))
EOF
expect 0 "report: $work/repro/REPORT.md" -- "$dtbench" reproduce tiny --claims "$claims" --out "$work/repro" --submit --wait
[ -f "$work/repro/tiny/s/runs/p0-global8-s1.json" ] && [ -f "$work/repro/tiny/s/runs/p1-global16-s1.json" ] ||
  fail "the claim's runs left no records"
# A second claim whose request Slurm refuses: exit 2 before anything is written or queued (the first claim's jobs ran
# and its files were written before, as the look before writing made dry runs, which skipped Slurm's judgement).
mkdir -p "$claims/bad"
$py - "$claims/tiny" "$claims/bad" <<'EOF'
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "s.json")))
s["name"], s["slurm"]["partition"] = "bad-claim", "nosuch"
json.dump(s, open(os.path.join(sys.argv[2], "s.json"), "w"))
c = json.load(open(os.path.join(sys.argv[1], "claim.json")))
c["id"] = "bad"
json.dump(c, open(os.path.join(sys.argv[2], "claim.json"), "w"))
EOF
jobs_before=$(squeue -h -t all | wc -l)
expect 2 "claims/bad/s.json: /slurm: Slurm refuses the request of point p0" -- \
  "$dtbench" reproduce tiny bad --claims "$claims" --out "$work/repro-bad" --submit --wait
[ ! -e "$work/repro-bad" ] || fail "reproduce wrote $work/repro-bad before Slurm's refusal"
[ "$(squeue -h -t all | wc -l)" = "$jobs_before" ] || fail "reproduce queued jobs before Slurm's refusal"

echo "== Ctrl-C while submitting: every job Slurm queued is listed in jobs.json (one was not, and was queued twice)"
DTBENCH=$dtbench WORK=$work $py - <<'EOF'
import json, os, signal, subprocess, time
work, dtbench = os.environ["WORK"], os.environ["DTBENCH"]
cut_short = 0  # submissions the signal ended midway (with none, the test could not fail)
# Six fixed delays, then, until one signal came midway, delays that follow the submission's window: past the
# longest delay that came before any job was queued (a loaded machine: CTest's other tests and the sanitizer build
# beside them delayed the sweep's start past 0.2 s in one run), halfway to the shortest that came once all were.
fixed = (0.05, 0.08, 0.11, 0.14, 0.17, 0.2)
early, late = 0.0, None  # the longest delay that queued nothing, the shortest that queued every job
for k in range(len(fixed) + 12):
    if k < len(fixed):
        delay = fixed[k]
    elif cut_short:
        break
    else:
        delay = (early + late) / 2 if late is not None else early * 1.6
    name, out = f"held{k}", os.path.join(work, f"held{k}")
    json.dump({"name": name, "base": {"duration": {"steps": 2}, "data": {"dataset": "synthetic"}}, "repeats": 24,
               "slurm": {"time": "00:05:00", "sbatch": ["--hold"]}}, open(out + ".json", "w"))
    p = subprocess.Popen([dtbench, "sweep", out + ".json", "--out", out, "--submit"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(delay)
    os.killpg(p.pid, signal.SIGINT)
    p.wait(timeout=60)
    queued = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True).stdout.splitlines()
    ids = {q.split()[0] for q in queued if q.strip() and q.split(None, 1)[1].startswith(name + "/")}
    jobs = os.path.join(out, "jobs.json")
    listed = {s["job_id"] for s in json.load(open(jobs))["submissions"]} if os.path.exists(jobs) else set()
    if ids:
        subprocess.run(["scancel", *sorted(ids)], check=False)
    assert ids <= listed, f"SIGINT after {delay:.3g} s: jobs queued but not listed: {sorted(ids - listed)}"
    print(f"    SIGINT after {delay:.3g} s: {len(ids)} of 24 jobs queued, each listed in jobs.json")
    cut_short += 0 < len(ids) < 24
    if not ids:
        early = max(early, delay)
    elif len(ids) == 24:
        late = delay if late is None else min(late, delay)
assert cut_short > 0, "no SIGINT came while the sweep submitted: the window was not tested"
EOF

echo "== stop the cluster"
stop_cluster_checked
echo "PASS"
