#!/usr/bin/env bash
# The trainer under Slurm, end to end (issue 7): starts the local cluster, submits a small sweep
# (2 reducers x 2 node counts, a few dozen steps of ResNet-8 on Fashion-MNIST, srun --mpi=pmix),
# waits, and checks that every record exists, is schema-valid, names its Slurm job id and node list,
# and that the regenerated table holds every point. A sweep over parallel.model_parallel runs the 2-D layout
# (2 replicas of 2-rank model-parallel groups) as Slurm jobs, and one over parallel.pipeline_stages 2 pipelines of 2
# stages. Then a longer run is preempted with
# `scontrol requeue`: it must checkpoint, be requeued, resume and complete. The cluster is stopped.
# Skipped (exit 77) until `dtbench train --help` works, or without root, Slurm, munge or the data.
# Usage: e2e_train_test.sh DTBENCH MPI_STEPS SOURCE_DIR BINARY_DIR
set -euo pipefail
dtbench=$1 src=$3
if ! "$dtbench" train --help >/dev/null 2>&1; then
  echo "SKIP: dtbench train is not available in this build"
  exit 77
fi
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  { echo "SKIP: Fashion-MNIST missing (scripts/setup.sh installs dataset-fashion-mnist)"; exit 77; }
# shellcheck disable=SC1091
source "$src/tests/slurm/lib.sh"
require_cluster
py=/usr/bin/python3
work=$(mktemp -d /tmp/dtbench-e2e-train.XXXXXX)
cd "$work"
SECONDS=0

echo "== start the cluster"
start_cluster "$src" "$work"

$py - <<'EOF'
import json
base = {
    "model": {"arch": "resnet8"},
    "data": {"dataset": "fashion-mnist"},
    "batch": {"global": 32},
    "duration": {"steps": 40},
    "optimizer": {"name": "sgd", "lr": 0.05},
    # small plans (tests/train/train_checks.py); the test set's first 2000 images
    "eval": {"every_steps": 20, "target_accuracy": 0.3, "batch": 200, "test_samples": 2000},
    "threads": 1,
}
spec = {
    "name": "e2e-train",
    "base": base,
    "axes": {"reducer.name": ["ring", "tree"], "slurm.nodes": [1, 2]},
    "slurm": {"tasks_per_node": 1, "time": "00:15:00", "mpi": "pmix"},
}
json.dump(spec, open("spec.json", "w"), indent=2)
long = dict(base, duration={"steps": 1000}, eval={"every_steps": 200, "target_accuracy": 0, "batch": 200,
                                                  "test_samples": 2000})
json.dump({"name": "e2e-preempt", "base": long, "axes": {"slurm.nodes": [2]},
           "slurm": {"tasks_per_node": 1, "time": "00:15:00"}}, open("preempt.json", "w"), indent=2)
EOF

echo "== 2 reducers x 2 node counts under Slurm"
out=$work/camp
expect 0 "submitted 4 runs" -- "$dtbench" sweep spec.json --out "$out" --submit --wait --poll 1 --timeout 600
grep -qF "4 runs: 4 done" <<<"$LAST_OUT" || fail "not all 4 runs done"
$py "$src/tests/core/validate_record.py" "$src/results/schema/run-record.schema.json" "$out"/runs/p*.json
OUT=$out $py - <<'EOF'
import json, os
out = os.environ["OUT"]
camp = json.load(open(os.path.join(out, "campaign.json")))
jobs = {s["run"]: s["job_id"] for s in json.load(open(os.path.join(out, "jobs.json")))["submissions"]}
for p in camp["points"]:
    run = p["runs"][0]
    r = json.load(open(os.path.join(out, run["record"])))
    slurm = r["provenance"]["slurm"]
    assert slurm and slurm["job_id"] == jobs[run["name"]], (slurm, jobs[run["name"]])
    assert slurm["node_list"], slurm
    assert r["ranks"] == p["values"]["slurm.nodes"], r["ranks"]
    assert r["config"]["reducer"]["name"] == p["values"]["reducer.name"]
    assert r["steps"] == 40 and r["curve"], (r["steps"], len(r["curve"]))
    print(f"    {run['name']}: {r['status']}, job {slurm['job_id']} on {slurm['node_list']}, "
          f"{r['throughput']['images_per_second']:.0f} img/s, accuracy {r['curve'][-1]['test_accuracy']:.3f}")
EOF
expect 0 "ranks" -- "$dtbench" table "$out"
[ "$(grep -c '1/1 done' <<<"$LAST_OUT")" = 4 ] || fail "the table lacks a point"

echo "== a sweep over the model-parallel group size: 2 nodes x 2 tasks as 4 data-parallel ranks, or one group of 4 across both nodes"
$py - <<'EOF'
import json
base = {"seed": 5, "model": {"arch": "mlp", "hidden": 32}, "threads": 1,
        "data": {"dataset": "synthetic", "synthetic": {"channels": 1, "height": 8, "width": 8, "classes": 4,
                                                       "train_size": 960, "test_size": 200}},
        "batch": {"global": 16}, "duration": {"steps": 20}, "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9},
        "eval": {"every_steps": 10}}
json.dump({"name": "e2e-mp", "base": base, "axes": {"parallel.model_parallel": [1, 4]},
           "slurm": {"nodes": 2, "tasks_per_node": 2, "time": "00:10:00", "mpi": "pmix"}},
          open("mp.json", "w"), indent=2)
# Four pipeline stages, one per node: the Simple CNN's 4 units (as train.pipeline's S = 4 case), 4 micro-batches.
cnn = dict(base, model={"arch": "simple_cnn", "conv_filters": [4, 8], "hidden": 16},
           batch={"global": 16, "micro_batches": 4})
json.dump({"name": "e2e-pp", "base": cnn, "axes": {"parallel.pipeline_stages": [1, 4]},
           "slurm": {"nodes": 4, "tasks_per_node": 1, "time": "00:10:00", "mpi": "pmix"}},
          open("pp.json", "w"), indent=2)
EOF
# The two points of a sweep over AXIS (1 and SIZE) as Slurm jobs of 4 ranks with the same global batch of 16: the
# record of SIZE has extra.EXTRA with a group (or pipeline) of SIZE ranks and 4 / SIZE replicas, run on NODES
# nodes, so that the activations cross the emulated nodes; the record of 1 has none. Their final test losses agree
# to fp32 rounding (neither model has batch norm, so the two layouts compute the same step).
check_group_sweep() {  # SPEC AXIS EXTRA SIZE NODES
  local out=$work/${1%.json}
  expect 0 "submitted 2 runs" -- "$dtbench" sweep "$1" --out "$out" --submit --wait --poll 1 --timeout 600
  OUT=$out AXIS=$2 EXTRA=$3 SIZE=$4 NODES=$5 $py - <<'EOF'
import json, os
out, axis, extra = os.environ["OUT"], os.environ["AXIS"], os.environ["EXTRA"]
size, nodes = int(os.environ["SIZE"]), int(os.environ["NODES"])
camp = json.load(open(os.path.join(out, "campaign.json")))
rec = {p["values"][axis]: json.load(open(os.path.join(out, p["runs"][0]["record"]))) for p in camp["points"]}
assert rec[1]["ranks"] == rec[size]["ranks"] == 4 and rec[1]["global_batch"] == rec[size]["global_batch"] == 16
x = rec[size]["extra"][extra]
got = x["group_size"] if extra == "model_parallel" else x["stages"]
replicas = 4 // size
assert got == size and x["replicas"] == replicas and rec[size]["per_rank_batch"] == 16 // replicas, \
    (x, rec[size]["per_rank_batch"])
assert extra not in rec[1]["extra"] and rec[1]["per_rank_batch"] == 4
slurm = rec[size]["provenance"]["slurm"]
assert slurm["nodes"] == str(nodes) and slurm["ntasks"] == "4", slurm
a, b = rec[1]["curve"][-1]["test_loss"], rec[size]["curve"][-1]["test_loss"]
assert abs(a - b) <= 1e-5 * abs(a), (a, b)
print(f"    {axis} 1: 4 replicas; {size}: {replicas} replica(s) of {size} ranks, job {slurm['job_id']} on "
      f"{slurm['node_list']}; final test loss {a:.6f} and {b:.6f}")
EOF
}
check_group_sweep mp.json parallel.model_parallel model_parallel 4 2

echo "== a sweep over pipeline stages: 4 nodes x 1 task as 4 data-parallel ranks, or one pipeline of 4 stages, a stage per node"
check_group_sweep pp.json parallel.pipeline_stages pipeline 4 4

echo "== a training run preempted by scontrol requeue resumes and completes"
pout=$work/preempt
expect 0 "submitted 1 run" -- "$dtbench" sweep preempt.json --out "$pout" --submit
job=$(last_job "$pout")
wait_for_text "$pout/runs/p0-nodes2-s1.out" "step 200/1000" 300  # the first evaluation: well into the run
scontrol requeue "$job"
expect 0 "sweep: 1 run: 1 done" -- "$dtbench" sweep preempt.json --out "$pout" --submit --wait --poll 1 --timeout 600
REC="$pout/runs/p0-nodes2-s1.json" $py -c '
import json, os
r = json.load(open(os.environ["REC"]))
assert r["status"] in ("completed", "reached-target"), r["status"]
assert r["steps"] == 1000, r["steps"]
assert r["extra"].get("preemptions"), r["extra"].keys()
assert r["provenance"]["slurm"].get("restart_count") == "1", r["provenance"]["slurm"]
print("    completed after a requeue; preemptions:", r["extra"]["preemptions"])'

echo "== exit codes of dtbench train under srun (README, Exit codes)"
# A small synthetic MLP on 2 nodes, launched the way sbatch scripts launch it (--kill-on-bad-exit=1).
"$dtbench" config --set name=codes --set model.arch=mlp --set data.dataset=synthetic --set batch.global=16 \
  --set duration.steps=100000 --set eval.every_steps=100000 --set optimizer.lr=0.01 \
  --set output.dir="$work/codes" >"$work/codes.json"
launch=(srun -N2 --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=1 "$dtbench" train "$work/codes.json")
expect 2 "--set batch.global=15: /batch/global: 15 is not divisible by the rank count 2" -- "${launch[@]}" --set batch.global=15
expect 2 "--stop-at: must be greater than 0, got '0'" -- "${launch[@]}" --stop-at 0
# A config file missing on one node only (rank 1's, by --multi-prog): the ranks agree on it (exit 2, one message
# naming the rank) rather than rank 0 waiting for rank 1 in its first collective.
printf '0 %s train %s\n1 %s train %s\n' "$dtbench" "$work/codes.json" "$dtbench" "$work/missing.json" >"$work/pernode.conf"
expect 2 "): $work/missing.json: cannot open config file" -- \
  srun -N2 --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=1 --multi-prog "$work/pernode.conf"
grep -qF "dtbench: error: rank 1 of 2 (" <<<"$LAST_OUT" || fail "the per-node error does not name rank 1"
[ "$(grep -c "dtbench: error" <<<"$LAST_OUT")" = 1 ] || fail "the per-node error was not reported once"
expect 3 "preempted at step" -- "${launch[@]}" --set name=usr1 --inject-fault sigusr1@3
expect 137 "task 1: Killed" -- "${launch[@]}" --set name=killed --inject-fault kill@1:3
# signalled NAME RCS STATUS COMMAND...: starts a run named NAME, runs COMMAND once it trains ($pid is srun's),
# and checks srun's exit code (one of RCS, separated by |) and the record's status ("none": no record).
signalled() {
  local name=$1 want=$2 status=$3 rc
  shift 3
  "${launch[@]}" --set name="$name" >"$work/$name.out" 2>&1 &
  pid=$!
  wait_for_text "$work/codes/$name.mllog" "run_start" 120
  eval "$*"
  set +e
  wait $pid
  rc=$?
  set -e
  [[ "|$want|" == *"|$rc|"* ]] || { cat "$work/$name.out"; fail "$name: srun exited $rc, expected $want"; }
  if [ "$status" = none ]; then
    [ ! -e "$work/codes/$name.json" ] || fail "$name: a record was written"
  else
    grep -qF "\"status\": \"$status\"" "$work/codes/$name.json" || fail "$name: the record is not $status"
  fi
  echo "    $name: exit $rc, record ${status}"
}
running_job() { squeue -h -t RUNNING -o %i | head -1; }  # the one job this section runs at a time
signalled usr1_to_srun 3 preempted 'kill -USR1 $pid'            # srun forwards SIGUSR1 to the ranks
signalled scancel 3 preempted 'scancel $(running_job)'           # SIGTERM to the ranks, SIGKILL after KillWait
# srun cancels the step and the ranks are killed: by the SIGKILL (137), or first by a SIGPIPE (141) when a rank
# writes to srun's closed I/O stream or to a killed peer's socket (seen once, on a fresh clone, 2026-11-27).
signalled term_to_srun '137|141' none 'kill -TERM $pid'

echo "== stop the cluster"
stop_cluster_checked
echo "PASS in $SECONDS s"
