#!/usr/bin/env bash
# dtbench sweep without Slurm, end to end, with the mpi_steps fixture (tests/slurm/mpi_steps.cpp):
#   - --dry-run writes nothing; a plain sweep writes configs, scripts and the campaign index;
#   - a generated sbatch script run by bash passes hostile names and values to the program literally;
#   - --local runs the missing points, a rerun skips complete records and says so, a lost record is
#     redone alone, a preempted run resumes from its checkpoint;
#   - bad specs and a changed spec on an old campaign are refused with exit code 2;
#   - dtbench table shows every point, missing ones as missing.
# Usage: sweep_local_test.sh DTBENCH MPI_STEPS SOURCE_DIR BINARY_DIR
set -euo pipefail
dtbench=$1 steps=$2 src=$3
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
# shellcheck disable=SC1091
source "$src/scripts/mpi-env.sh"
py=/usr/bin/python3

work=$(mktemp -d /tmp/dtbench-sweep-local.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
# shellcheck disable=SC1091
source "$src/tests/slurm/lib.sh"

out="$work/out dir & \$x"  # a campaign folder with a space, an ampersand and a dollar sign
nasty='$(touch pwned) `touch pwned2` "q" '"'"'s'"'"' ; #h \ end'
NASTY=$nasty STEPS=$steps $py - <<'EOF'
import json, os
nasty, steps = os.environ["NASTY"], os.environ["STEPS"]
spec = {
    "name": "local " + nasty,
    "base": {"duration": {"steps": 6}, "batch": {"global": 8}, "data": {"dataset": "synthetic"}},
    "axes": {"reducer.name": ["ring", "tree"], "slurm.tasks_per_node": [1, 2]},
    "repeats": 2,
    # The scripts are run by bash below, outside Slurm: mpirun starts 2 ranks itself, one per slot of the host
    # list (a rank count, -np 2, is refused where a point's nodes x tasks_per_node is not 2).
    "slurm": {"launcher": "mpirun", "launcher_args": ["--host", "localhost:2", "--oversubscribe"]},
    "program": [steps, "--step-seconds=0.01", "--tag=" + nasty],
}
json.dump(spec, open("spec.json", "w"), indent=2)
spec["base"]["duration"]["steps"] = 7
json.dump(spec, open("changed.json", "w"), indent=2)
EOF
touch "$work/marker"

echo "== dry run writes nothing"
expect 0 "8 runs to do" -- "$dtbench" sweep spec.json --out "$out" --dry-run
grep -qF "dry run: nothing is written or started" <<<"$LAST_OUT" || fail "no dry-run notice"
[ ! -e "$out" ] || fail "--dry-run created $out"
if command -v sbatch >/dev/null; then  # a dry run of --submit --wait says it would wait (it said nothing of --wait)
  expect 0 "then would wait for the jobs (--wait: polling every 5 s, for at most 60 s)" -- \
    "$dtbench" sweep spec.json --out "$out" --dry-run --submit --wait --poll 5 --timeout 60
  [ ! -e "$out" ] || fail "--dry-run --submit created $out"
fi

echo "== write the campaign"
expect 0 "wrote 8 configs and 8 sbatch scripts" -- "$dtbench" sweep spec.json --out "$out"
[ "$(ls "$out/configs" | wc -l)" = 8 ] || fail "expected 8 configs"
[ "$(ls "$out/scripts" | wc -l)" = 8 ] || fail "expected 8 scripts"
for s in "$out"/scripts/*.sbatch; do bash -n "$s" || fail "bash rejects $s"; done
run=p1-ring-tasks_per_node2-s1
[ -f "$out/scripts/$run.sbatch" ] || fail "no script for $run"

echo "== a generated script passes hostile values literally"
bash "$out/scripts/$run.sbatch" >"$work/script.log" 2>&1 || { cat "$work/script.log"; fail "script failed"; }
NASTY=$nasty REC="$out/runs/$run.json" $py - <<'EOF'
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] == "completed", r["status"]
assert r["extra"]["tag"] == os.environ["NASTY"], (r["extra"]["tag"], os.environ["NASTY"])
assert r["ranks"] == 2, r["ranks"]
assert r["config"]["reducer"]["name"] == "ring"
print("    tag arrived literally:", r["extra"]["tag"])
EOF
if [ -n "$(find "$work" /tmp "$HOME" -maxdepth 4 -name 'pwned*' -newer "$work/marker" 2>/dev/null | head -1)" ]; then
  fail "a value was executed (a pwned file exists)"
fi

echo "== --local runs only what is missing"
expect 0 "7 runs to do" -- "$dtbench" sweep spec.json --out "$out" --local
grep -qF "skipping 1 run whose records are complete" <<<"$LAST_OUT" || fail "did not say it skips the done run"
grep -qF "[7/7]" <<<"$LAST_OUT" || fail "did not run 7"
[ "$(ls "$out"/runs/*.json | wc -l)" = 8 ] || fail "expected 8 records"
$py "$src/tests/core/validate_record.py" "$src/results/schema/run-record.schema.json" "$out"/runs/*.json

echo "== a rerun skips everything"
expect 0 "skipping 8 runs whose records are complete" -- "$dtbench" sweep spec.json --out "$out" --local
grep -qF "0 runs to do" <<<"$LAST_OUT" || fail "rerun wanted to do something"
grep -qF "[1/" <<<"$LAST_OUT" && fail "rerun ran something"

echo "== a record of another rank count, or a failed one whose runs/failed is a file: refused, nothing written"
$py -c 'import json; s = json.load(open("spec.json")); s.setdefault("slurm", {})["nodes"] = 2; json.dump(s, open("nodes2.json", "w"))'
expect 2 "p0-ring-tasks_per_node1-s1.json: made on 1 rank, where this spec runs it on 2 (/slurm nodes x tasks_per_node)" \
  -- "$dtbench" sweep nodes2.json --out "$out" --local
rec="$out/runs/p0-ring-tasks_per_node1-s1.json"
cp "$rec" "$work/kept.json"
REC="$rec" $py -c 'import json, os; p = os.environ["REC"]; r = json.load(open(p)); r["status"] = "failed"; json.dump(r, open(p, "w"))'
touch "$out/runs/failed"
expect 2 "runs/failed exists and is not a folder" -- "$dtbench" sweep spec.json --out "$out" --local
cmp -s "$rec" "$work/kept.json" && fail "the record was not edited" || true
rm "$out/runs/failed"
cp "$work/kept.json" "$rec"

echo "== one sweep at a time per folder (two at once each ran every run, and one reported them missing)"
flock --no-fork "$out/.lock" sleep 30 &
holder=$!
sleep 1
expect 1 "$out: another dtbench sweep (or reproduce) works on this folder; wait for it to end" \
  -- "$dtbench" sweep spec.json --out "$out" --local
kill $holder 2>/dev/null || true
wait $holder 2>/dev/null || true

echo "== --local runs every rank here: a reducer of one node is taken for a spec of two nodes (refused for Slurm)"
$py -c 'import json; s = json.load(open("spec.json")); s.setdefault("slurm", {})["nodes"] = 2; s["axes"] = {"reducer.name": ["shared_memory"]}; json.dump(s, open("shm2.json", "w"))'
expect 0 "2 runs to do" -- "$dtbench" sweep shm2.json --out "$work/shm2" --local --dry-run
expect 2 "'shared_memory' needs every rank on one node; this run's ranks are on 2 nodes" \
  -- "$dtbench" sweep shm2.json --out "$work/shm2"

echo "== a lost record is redone alone"
rm "$out/runs/p2-tree-tasks_per_node1-s2.json"
expect 0 "1 run to do" -- "$dtbench" sweep spec.json --out "$out" --local
grep -qF "[1/1] p2-tree-tasks_per_node1-s2" <<<"$LAST_OUT" || fail "did not redo the lost run"

echo "== --jobs 2 runs the missing ones two at a time"
rm "$out/runs/p0-ring-tasks_per_node1-s1.json" "$out/runs/p1-ring-tasks_per_node2-s2.json" \
   "$out/runs/p3-tree-tasks_per_node2-s2.json"
# Each runner its own Open MPI session folder: two mpiruns sharing one failed to start under CTest's load (exit 1 in
# 0.1 s; open-mpi/ompi#8510). The dry run names them; the sweep removes them when its runs have ended.
expect 0 "each run under env OMPI_MCA_orte_tmpdir_base=/tmp/dtbench-sweep-" -- \
  "$dtbench" sweep spec.json --out "$out" --local --jobs 2 --dry-run
bases=$(grep -oE "/tmp/dtbench-sweep-$(id -u)-[0-9a-f]{12}-NN, NN its runner \(00-01\)" <<<"$LAST_OUT") ||
  fail "the dry run does not name the 2 runners' session folders"
bases=${bases%%NN*}
grep -qF "; taskset --cpu-list (mpirun --bind-to none), each runner its CPUs: 00: " <<<"$LAST_OUT" ||
  fail "the dry run does not name the runners' CPUs"
# Each runner its own CPUs: every mpirun maps its ranks from CPU 0 (two 1-rank runs at once both ran there while
# CPU 1 idled), so runner 00 gets the first half of this process's CPUs and runner 01 the rest (taskset),
# and every rank runs within its runner's (mpi_steps prints its Cpus_allowed_list).
slices=$($py -c 'import os; c = sorted(os.sched_getaffinity(0)); n = len(c)
s = [c[:n // 2], c[n // 2:]] if n >= 2 else [c, c]
print(" ".join(",".join(map(str, x)) for x in s))')
# Open MPI refuses to start with a local session base beside the base the sweep sets, from any source: the runs
# empty it (and the other parameters that place session files).
empties="OMPI_MCA_orte_local_tmpdir_base= OMPI_MCA_orte_remote_tmpdir_base= OMPI_MCA_orte_top_session_dir= OMPI_MCA_orte_jobfam_session_dir="
expect 0 "3 runs to do" -- env OMPI_MCA_orte_local_tmpdir_base=/tmp "$dtbench" sweep spec.json --out "$out" --local --jobs 2
for w in 00 01; do
  grep -qF "env OMPI_MCA_orte_tmpdir_base=$bases$w $empties taskset --cpu-list " <<<"$LAST_OUT" ||
    fail "no run in session folder $w"
done
SLICES=$slices RUNS="$out/runs" $py - "$LAST_OUT" <<'PY' || fail "--jobs 2: a run was not on its runner's CPUs"
import os, re, sys
def cpus(text):  # "0-2,5" -> {0, 1, 2, 5}
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
slices = [cpus(x) for x in os.environ["SLICES"].split()]
lines = re.findall(r"\] (\S+) \((\d) ranks?\): env OMPI_MCA_orte_tmpdir_base=\S+-(\d\d) (?:OMPI_MCA_\w+= )+taskset --cpu-list (\S+) "
                   r"mpirun -np \d --bind-to none ", sys.argv[1])
assert len(lines) == 3, lines
for run, k, worker, listed in lines:
    assert cpus(listed) == slices[int(worker)], (run, worker, listed, slices)
    ranks = re.findall(r"mpi_steps: rank \d+ of \d+ on node .*, cpus (\S+)", open(f"{os.environ['RUNS']}/{run}.out").read())
    assert len(ranks) >= int(k), (run, ranks)
    ranks = ranks[-int(k):]  # this run's ranks (the output file keeps the earlier attempts' lines above)
    for r in ranks:
        assert cpus(r) <= slices[int(worker)], (run, r, slices[int(worker)])
    print(f"    {run}: runner {worker}, CPUs {listed}, its ranks on {' '.join(ranks)}")
PY
if compgen -G "$bases*" >/dev/null; then fail "the session folders are left: $(echo "$bases"*)"; fi
for k in 1 2 3; do grep -qF "[$k/3]" <<<"$LAST_OUT" || fail "--jobs 2: no line for run $k of 3"; done
# Two at a time: the second run starts before the first one ends (one after another, its start follows that end).
start2=$(grep -nF "[2/3]" <<<"$LAST_OUT" | grep -v ": exit" | head -1 | cut -d: -f1)
end1=$(grep -nF "[1/3]" <<<"$LAST_OUT" | grep ": exit" | head -1 | cut -d: -f1)
[ -n "$start2" ] && [ -n "$end1" ] && [ "$start2" -lt "$end1" ] || fail "--jobs 2 ran the runs one after another"
[ "$(ls "$out"/runs/*.json | wc -l)" = 8 ] || fail "--jobs 2: expected 8 records"
$py "$src/tests/core/validate_record.py" "$src/results/schema/run-record.schema.json" "$out"/runs/*.json
echo "== the spec's /local/max_jobs caps --jobs (runs whose outcome depends on the machine's pace)"
$py -c 'import json; s = json.load(open("spec.json")); s.setdefault("local", {})["max_jobs"] = 1; json.dump(s, open("spec1.json", "w"))'
rm "$out/runs/p0-ring-tasks_per_node1-s1.json" "$out/runs/p1-ring-tasks_per_node2-s2.json"
expect 0 "at most 1 at once (the spec's /local/max_jobs)" -- "$dtbench" sweep spec1.json --out "$out" --local --jobs 2 --dry-run
expect 0 "at most 1 at once (the spec's /local/max_jobs)" -- "$dtbench" sweep spec1.json --out "$out" --local --jobs 2
start2=$(grep -nF "[2/2]" <<<"$LAST_OUT" | grep -v ": exit" | head -1 | cut -d: -f1)
end1=$(grep -nF "[1/2]" <<<"$LAST_OUT" | grep ": exit" | head -1 | cut -d: -f1)
[ -n "$start2" ] && [ -n "$end1" ] && [ "$end1" -lt "$start2" ] || fail "max_jobs 1 with --jobs 2 ran two at once"
# One at a time: nothing to divide (`dtbench train`'s `threads` 0 divides the CPUs among one run's ranks itself).
if grep -qF -- "taskset" <<<"$LAST_OUT"; then fail "a run alone was given CPUs"; fi
# Where /local/mpirun_args place the ranks, the user's placement stands: no CPUs are given.
$py -c 'import json; s = json.load(open("spec.json")); s.setdefault("local", {})["mpirun_args"] = ["--oversubscribe", "--bind-to", "none"]; json.dump(s, open("placed.json", "w"))'
expect 0 "the ranks where /local/mpirun_args place them" -- \
  "$dtbench" sweep placed.json --out "$work/placed" --local --jobs 2 --dry-run
expect 2 "--jobs: at least 1, got 0" -- "$dtbench" sweep spec.json --out "$out" --local --jobs 0
expect 2 "give --local as well" -- "$dtbench" sweep spec.json --out "$out" --jobs 2

echo "== a run that fails: exit 1 naming it and its error file, whose end is quoted"
$py -c 'import json; s = json.load(open("spec.json")); s["program"] = ["/bin/sh", "-c", "echo the reason it failed >&2; exit 1"]; s["axes"] = {}; s["repeats"] = 1; json.dump(s, open("false.json", "w"))'
expect 1 "1 of 1 runs have no complete record:" -- "$dtbench" sweep false.json --out "$work/false" --local
grep -qF "(see $work/false/runs/" <<<"$LAST_OUT" || fail "the failed run's error file is not named"
grep -qF "      | the reason it failed" <<<"$LAST_OUT" || fail "the failed run's error output is not quoted"
rm -r "$work/false"  # (the check at the end wants every other file inside $out)

echo "== a preempted run resumes from its checkpoint"
pre=p0-ring-tasks_per_node1-s1
rm "$out/runs/$pre.json"
mpirun -np 1 "$steps" --step-seconds=0.3 "$out/configs/$pre.json" >"$work/pre.log" 2>&1 &
pid=$!
# Signal only once the rank has installed its handler (it prints this line after): on a loaded machine a fixed
# sleep let SIGUSR1 reach a rank still starting, which died of it (exit 138).
wait_for_text "$work/pre.log" "mpi_steps: rank 0 of 1" 120
kill -USR1 $pid
set +e
wait $pid
rc=$?
set -e
[ "$rc" = 3 ] || { cat "$work/pre.log"; fail "preempted fixture exited $rc, not 3"; }
[ -f "$out/runs/$pre.ckpt" ] || fail "no checkpoint"
cp -r "$out/runs/$pre.ckpt" "$work/kept.ckpt"
# Without its checkpoint `train --resume` refuses the preempted record (a damaged pair): the sweep runs it again as a
# failed run, its record moved to runs/failed/ (it said "restarting from the start", and every rerun failed).
rm -r "$out/runs/$pre.ckpt"
expect 0 "retrying 1 failed run (old records move to runs/failed/)" -- "$dtbench" sweep spec.json --out "$out" --local --dry-run
grep -qF "resuming" <<<"$LAST_OUT" && fail "a preempted run without its checkpoint was said to resume"
mv "$work/kept.ckpt" "$out/runs/$pre.ckpt"
expect 0 "resuming 1 preempted run from its checkpoint" -- "$dtbench" sweep spec.json --out "$out" --local
REC="$out/runs/$pre.json" $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] == "completed" and r["extra"]["resumed_from_step"] >= 1, (r["status"], r["extra"])
print("    resumed from step", r["extra"]["resumed_from_step"])'

echo "== a killed sweep's run checkpoints (it trained on) and the rerun resumes it"
# (Before, the run trained on after the sweep died and a second sweep, finding the folder free, ran it beside it.)
$py -c 'import json, sys; s = json.load(open("spec.json")); s["axes"] = {}; s["repeats"] = 1
s["base"]["duration"]["steps"] = 40; s["program"] = [sys.argv[1], "--step-seconds=0.3"]
json.dump(s, open("slow.json", "w"))' "$steps"
setsid "$dtbench" sweep slow.json --out "$work/killed" --local >"$work/killed.log" 2>&1 &
sweep_pid=$!
wait_for_text "$work/killed/runs/p0-s1.out" "mpi_steps: rank 0 of" 120
# The run's mpirun holds the folder's lock too (inherited), so no sweep can start beside it once this one is gone.
run_pid=$(pgrep -f "mpirun.*$work/killed/configs" | head -1)
[ -n "$run_pid" ] || fail "no mpirun of the killed sweep's run"
ls -l /proc/"$run_pid"/fd | grep -qF "$work/killed/.lock" || fail "the run does not hold the sweep's lock"
kill -TERM $sweep_pid
set +e
wait $sweep_pid
set -e
# The run got SIGUSR1 when the sweep died: it checkpoints and leaves a preempted record within seconds (40 steps
# of 0.3 s would take 12 s), and its processes, which hold the folder's lock, end.
for _ in $(seq 1 600); do
  [ -f "$work/killed/runs/p0-s1.json" ] && ! pgrep -f "$work/killed/configs" >/dev/null && break
  sleep 0.1
done
pgrep -f "$work/killed/configs" >/dev/null && fail "the killed sweep's run still runs after 60 s"
REC="$work/killed/runs/p0-s1.json" $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] == "preempted", r["status"]'
[ -f "$work/killed/runs/p0-s1.ckpt" ] || fail "the killed sweep's run left no checkpoint"
# A killed sweep leaves its runners' Open MPI session folders (its destructor never runs): the campaign's next run
# removes every one of them, a runner's it does not have itself included (here a made-up runner 07).
base=$(grep -o 'OMPI_MCA_orte_tmpdir_base=/tmp/dtbench-sweep-[^ ]*' "$work/killed.log" | head -1 | cut -d= -f2)
[ -n "$base" ] || fail "no session folder named in the killed sweep's log"
stale="${base%-00}-07"
mkdir -p "$stale/left-over"
expect 0 "resuming 1 preempted run from its checkpoint" -- "$dtbench" sweep slow.json --out "$work/killed" --local
[ ! -e "$stale" ] || fail "an earlier sweep's session folder $stale is left after the rerun"
REC="$work/killed/runs/p0-s1.json" $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] == "completed" and r["extra"]["resumed_from_step"] >= 1, (r["status"], r["extra"])
print("    the killed sweep'"'"'s run checkpointed at step", r["extra"]["resumed_from_step"], "and resumed")'
rm -r "$work/killed" "$work/killed.log"  # (the check at the end wants every other file inside $out)

echo "== the table shows every point, and missing ones as missing"
expect 0 "2/2 done" -- "$dtbench" table "$out"
[ "$(grep -c '2/2 done' <<<"$LAST_OUT")" = 4 ] || fail "expected 4 rows with 2/2 done"
rm "$out"/runs/p3-tree-tasks_per_node2-s*.json
expect 0 "0/2 done, 2 missing" -- "$dtbench" table "$out"
expect 0 "reducer.name" -- "$dtbench" table "$out" --format csv --group-by reducer.name
[ "$(wc -l <<<"$LAST_OUT")" = 3 ] || fail "expected a header and 2 rows"
grep -qF 'tree,"1,2","2/4 done, 2 missing"' <<<"$(tr -d '\r' <<<"$LAST_OUT")" || fail "the tree row should count 2 missing"

echo "== bad specs and a changed spec are refused"
expect 2 "made from a different config than this spec gives (first difference at /duration/steps)" -- \
  "$dtbench" sweep changed.json --out "$out" --local
$py -c '
import json
s = json.load(open("spec.json"))
s["base"]["output"] = {"dir": "../../escape"}
json.dump(s, open("escape.json", "w"))
s = json.load(open("spec.json"))
s["axes"]["output.record"] = ["../../x.json"]
json.dump(s, open("escape2.json", "w"))
s = json.load(open("spec.json"))
s["axes"]["slurm.nodes"] = [0]
json.dump(s, open("bad.json", "w"))'
expect 2 "escape.json: /base/output/dir: set by dtbench sweep" -- "$dtbench" sweep escape.json --out "$work/e1"
expect 2 "escape2.json: /axes/output.record: set by dtbench sweep" -- "$dtbench" sweep escape2.json --out "$work/e2"
expect 2 "bad.json: /axes/slurm.nodes/0: expected an integer in [1, 100000], got 0" -- "$dtbench" sweep bad.json --out "$work/e3"
expect 2 "--wait waits for submitted jobs" -- "$dtbench" sweep spec.json --out "$work/e4" --wait
[ ! -e "$work/e1" ] && [ ! -e "$work/e2" ] && [ ! -e "$work/e3" ] || fail "a refused spec wrote files"

echo "== every file written lies inside --out"
stray=$(find "$work" -newer "$work/marker" -type f ! -path "$out/*" ! -name '*.json' ! -name '*.log')
[ -z "$stray" ] || fail "files outside --out: $stray"
echo "PASS"
