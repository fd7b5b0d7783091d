#!/usr/bin/python3
"""End-to-end checks of population-based training (dtbench pbt) and the --init-from it builds on.

  init_from   a run continued with --init-from from another's kept checkpoint (output.keep_checkpoint) with the
              same hyperparameters ends with the very weights of one uninterrupted run; with another learning
              rate it differs, and its curve holds the first run's evaluations; a change outside the allowed keys,
              a checkpoint at the run's last step, and a missing folder are exit 2 naming what is wrong.
  campaign    4 members of an MLP on synthetic data, 3 intervals of 10 steps, 2 at a time, with member 2's
              second interval made to fail: the lineage says who continued whom (every exploited member's next
              run starts from its source's checkpoint, with each hyperparameter the source's times 0.8 or 1.2),
              the failure is reported and replaced, old checkpoints are removed, `dtbench table` prints the
              tables; a campaign whose members all fail in interval 2 exits 1 and a rerun continues it from its
              lineage to the same result; another spec on the same folder is exit 2 and --dry-run writes nothing.
"""
import argparse
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import mllog_rules  # noqa: E402  (tests/train/mllog_rules.py: MLPerf's logging rules, and dtbench's own)

args = None
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
           OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")


def run(cmd, expect=0, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env or ENV)
    if expect is not None and p.returncode != expect:
        print(" ".join(cmd))
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise SystemExit(f"exit {p.returncode}, expected {expect}")
    return p


def base(steps=20):
    return {"seed": 5, "model": {"arch": "mlp", "hidden": 16},
            "data": {"dataset": "synthetic", "synthetic": {"channels": 1, "height": 8, "width": 8, "classes": 4,
                                                           "train_size": 480, "test_size": 100}},
            "batch": {"global": 16}, "duration": {"steps": steps},
            "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9}, "eval": {"every_steps": 5}}


def write(name, doc):
    path = os.path.join(args.work, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def train(name, cfg, *extra, expect=0):
    cfg = dict(cfg, name=name, output=dict(cfg.get("output", {}), dir=os.path.join(args.work, "runs")))
    return run([args.dtbench, "train", write(name + ".json", cfg), *extra], expect=expect)


def weights(name):
    return np.fromfile(os.path.join(args.work, "runs", name + ".weights"), dtype=np.float32)


def check_init_from():
    # A cosine schedule over the whole run and a split at step 7, where no evaluation falls: the first run stops
    # there (--stop-at, its schedule still spanning 20 steps) and keeps its checkpoint; the second continues it.
    cosine = dict(base(20), schedule={"name": "cosine"})
    ckpt = os.path.join(args.work, "runs", "first.ckpt")
    train("straight", dict(cosine, output={"save_weights": True}))
    train("first", dict(cosine, output={"keep_checkpoint": True}), "--stop-at", "7")
    assert os.path.isfile(os.path.join(ckpt, "header.json")), "no checkpoint kept"
    first = json.load(open(os.path.join(args.work, "runs", "first.json")))
    assert first["status"] == "completed" and first["status_detail"] == "stopped at step 7 of 20 (--stop-at)", first["status_detail"]
    assert [p["step"] for p in first["curve"]] == [5, 7] and first["extra"]["stop_at"] == 7
    train("second", dict(cosine, output={"save_weights": True}), "--init-from", ckpt)
    assert np.array_equal(weights("straight").view(np.uint32), weights("second").view(np.uint32)), \
        "7 + 13 steps through --stop-at and --init-from differ from 20 steps"
    second = json.load(open(os.path.join(args.work, "runs", "second.json")))
    assert second["extra"]["init_from"] == ckpt, second["extra"]
    straight = json.load(open(os.path.join(args.work, "runs", "straight.json")))
    assert [p["lr"] for p in second["curve"] if p["step"] != 7] == [p["lr"] for p in straight["curve"]]
    # The kept checkpoint carries the elapsed time on: the continued curve's wall times do not restart.
    walls = [p["wall_seconds"] for p in second["curve"]]
    assert walls == sorted(walls), walls
    print("--stop-at 7 then --init-from, cosine schedule: bitwise the uninterrupted run")
    other = dict(cosine, optimizer=dict(cosine["optimizer"], lr=0.02, momentum=0.5))
    train("other-lr", dict(other, output={"save_weights": True}), "--init-from", ckpt)
    assert not np.array_equal(weights("straight"), weights("other-lr")), "another learning rate changed nothing"
    rec = json.load(open(os.path.join(args.work, "runs", "other-lr.json")))
    steps = [p["step"] for p in rec["curve"]]
    assert steps == [5, 7, 10, 15, 20], steps  # the first run's evaluations, then its own
    # Its own points follow the same cosine at the new base lr: 0.02 / 0.05 of the straight run's.
    for p, q in zip(rec["curve"][2:], straight["curve"][1:]):
        assert abs(p["lr"] - q["lr"] * 0.4) <= 1e-12 * max(1.0, q["lr"]), (p["lr"], q["lr"])
    print("--init-from with another lr and momentum: the curve continues the first run's, at the new lr")
    # Its MLLOG file holds only its own part, from step 7, within the first epoch (30 steps): it opens that epoch
    # (it had an epoch_stop without an epoch_start, or neither, which MLCommons' checker refuses).
    for name in ("second", "other-lr"):
        log = os.path.join(args.work, "runs", name + ".mllog")
        assert not mllog_rules.problems(log, open_benchmark=False), (name, mllog_rules.problems(log, open_benchmark=False))
    # A first part that reached its target (0.95, at step 7; the synthetic task is easy): a continuation with the
    # same target has reached it in its curve (the record says so), but its MLLOG file says success only if one of
    # its own evaluations did (a learning rate of 5 spoils them). With another target (0.85), the point where the
    # curve reached it is that target's (step 5), not the first part's.
    targeted = dict(cosine, eval=dict(cosine["eval"], target_accuracy=0.95, stop_at_target=False))
    train("donor", dict(targeted, output={"keep_checkpoint": True}), "--stop-at", "7")
    donor = json.load(open(os.path.join(args.work, "runs", "donor.json")))
    assert donor["status"] == "reached-target" and donor["time_to_accuracy"]["step"] == 7, donor["curve"]
    dckpt = os.path.join(args.work, "runs", "donor.ckpt")
    train("spoilt", dict(targeted, optimizer=dict(cosine["optimizer"], lr=5.0)), "--init-from", dckpt)
    spoilt = json.load(open(os.path.join(args.work, "runs", "spoilt.json")))
    assert spoilt["status"] == "reached-target", spoilt["status"]
    log = os.path.join(args.work, "runs", "spoilt.mllog")
    own = [p["test_accuracy"] for p in spoilt["curve"] if p["step"] > 7]
    success = [e for e in mllog_rules.read_events(log) if e["key"] == "run_stop"][0]["metadata"]["status"] == "success"
    assert success == any(a >= 0.95 for a in own), (success, own)
    assert not mllog_rules.problems(log, open_benchmark=False), mllog_rules.problems(log, open_benchmark=False)
    lower = dict(cosine, eval=dict(cosine["eval"], target_accuracy=0.85, stop_at_target=False))
    train("lower", lower, "--init-from", dckpt)
    lower = json.load(open(os.path.join(args.work, "runs", "lower.json")))
    assert lower["time_to_accuracy"]["step"] == 5, (lower["time_to_accuracy"], lower["curve"][:2])
    print(f"--init-from a run that reached its target: own evaluations {own}, MLLOG success {success}; "
          "another target is reached where the curve reached it")
    wider = dict(cosine, model={"arch": "mlp", "hidden": 32})
    p = train("wider", wider, "--init-from", ckpt, expect=2)
    assert "--init-from: the checkpoint's config differs at /model/hidden" in p.stderr, p.stderr
    # Another optimizer: named as such (it said /optimizer/dampening, the first of sgd's keys that adam lacks).
    p = train("adam", dict(cosine, optimizer={"name": "adam", "lr": 0.001}), "--init-from", ckpt, expect=2)
    assert "--init-from: the checkpoint's config differs at /optimizer/name" in p.stderr, p.stderr
    p = train("short", cosine, "--init-from", ckpt, "--stop-at", "7", expect=2)
    assert "the checkpoint is at step 7 and this run ends at step 7" in p.stderr, p.stderr
    p = train("past", cosine, "--stop-at", "21", expect=2)
    assert "--stop-at 21 is past the run's last step, 20" in p.stderr, p.stderr
    p = train("nowhere", cosine, "--init-from", os.path.join(args.work, "missing.ckpt"), expect=2)
    assert "--init-from: no checkpoint there" in p.stderr, p.stderr
    for name in ("wider", "adam", "short", "past", "nowhere"):
        assert not os.path.exists(os.path.join(args.work, "runs", name + ".json")), f"{name}: a record was written"
    print("--init-from and --stop-at refusals: exit 2, nothing written")


def spec(program):
    # A target the members reach early (records "reached-target"): they keep training and are not failures.
    b = dict(base(30), eval={"every_steps": 5, "target_accuracy": 0.3})
    return {"name": "tiny", "population": 4, "ready_steps": 10, "seed": 3, "base": b,
            "exploit": {"truncation": 0.25}, "explore": {"perturb": [0.8, 1.2]},
            "hyperparameters": {"optimizer.lr": {"prior": "log_uniform", "min": 0.005, "max": 0.5},
                                "optimizer.momentum": {"prior": "uniform", "min": 0.0, "max": 0.95}},
            "local": {"concurrency": 2}, "program": program}


def check_lineage(camp, l):
    assert len(l["intervals"]) == 3, len(l["intervals"])
    for i, iv in enumerate(l["intervals"]):
        assert (iv["start_step"], iv["end_step"]) == (10 * i, 10 * i + 10)
        if i + 1 == len(l["intervals"]):
            assert iv["events"] == []
            continue
        nxt = l["intervals"][i + 1]["members"]
        moved = {e["member"]: e for e in iv["events"]}
        for m, after in enumerate(nxt):
            if m in moved:
                e = moved[m]
                src = iv["members"][e["from"]]
                assert after["init_from"] == src["run"], (after, src)
                assert src["status"] == "completed"
                for k, v in src["hyperparameters"].items():
                    f = e["hyperparameters_after"][k] / v
                    lo, hi = (0.005, 0.5) if k == "optimizer.lr" else (0.0, 0.95)
                    clamped = e["hyperparameters_after"][k] in (lo, hi)
                    assert clamped or abs(f - 0.8) < 1e-9 or abs(f - 1.2) < 1e-9, (k, f)
                assert after["hyperparameters"] == e["hyperparameters_after"]
            else:
                assert after["init_from"] == iv["members"][m]["run"], after
                assert after["hyperparameters"] == iv["members"][m]["hyperparameters"]
        # Truncation: the bottom member (1 of 4) copies the top one; a failed member is replaced as well.
        done = [m for m in iv["members"] if m["status"] == "completed"]
        best = max(done, key=lambda m: (m["test_accuracy"], -m["member"]))
        for e in iv["events"]:
            assert e["from"] == best["member"], (e, best)
    for iv in l["intervals"][:-1]:
        for m in iv["members"]:
            assert not os.path.exists(os.path.join(camp, "runs", m["run"] + ".ckpt")), m["run"] + ": checkpoint left"
    for m in l["intervals"][-1]["members"]:
        assert os.path.isfile(os.path.join(camp, "runs", m["run"] + ".ckpt", "header.json"))


def check_lock_released():
    # A member is given the campaign's folder lock (an inherited descriptor): it must be free the moment the member
    # has exited. A 1-rank member's MPI_Init starts Open MPI's singleton daemon, which outlived it by ~10 ms holding
    # the lock, and a rerun right after a campaign ended was refused now and then (the flake of pbt.campaign).
    import fcntl
    lock = os.path.join(args.work, "member.lock")
    for i in range(3):
        fd = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_EX)
        cfg = dict(base(5), name=f"locked{i}", output={"dir": os.path.join(args.work, "locked")})
        # Output to a file, not a pipe: reading a pipe to its end would wait for the daemon too (it shares them);
        # and a wait without a timeout, which returns at the exit (with one, Python polls every few milliseconds).
        # The test's own time limit (ctest's) bounds a hang.
        with open(os.path.join(args.work, f"locked{i}.err"), "w+") as err:
            p = subprocess.Popen([args.dtbench, "train", write(f"locked{i}.json", cfg)], pass_fds=(fd,), env=ENV,
                                 stdout=subprocess.DEVNULL, stderr=err)
            p.wait()
            os.close(fd)
            err.seek(0)
            assert p.returncode == 0, err.read()
        probe = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"run {i}: a descriptor given to a 1-rank run is still held after it exited")
        finally:
            os.close(probe)
    print("lock: a 1-rank run's inherited descriptor is released when it exits (3 runs)")


def check_campaign():
    check_lock_released()
    wrapper = os.path.join(args.work, "member.sh")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nrun=$(basename "$1" .json)\n'
                'if [ "$run" = m02-i001 ]; then echo "injected failure of $run" >&2; exit 7; fi\n'
                'case "$run" in *-i002) if [ -n "$PBT_FAIL_ALL" ]; then echo injected >&2; exit 9; fi;; esac\n'
                # PBT_KILL: the campaign process itself is killed when member 2's last interval starts, and
                # member 1's second interval is preempted once at step 13 (it must resume from its checkpoint).
                # The member's parent is the guard that passes the campaign's death on (slurm/process.hpp); the
                # campaign is the guard's parent.
                'if [ -n "$PBT_KILL" ] && [ "$run" = m02-i002 ]; then kill -KILL $(cut -d" " -f4 /proc/$PPID/stat); exit 1; fi\n'
                f'if [ -n "$PBT_KILL" ] && [ "$run" = m01-i001 ] && mkdir {args.work}/preempted-once 2>/dev/null; then '
                f'exec {args.dtbench} train "$@" --inject-fault sigusr1@13; fi\n'
                f'exec {args.dtbench} train "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
    spec_file = write("pbt.json", spec([wrapper]))
    camp = os.path.join(args.work, "camp")

    p = run([args.dtbench, "pbt", spec_file, "--out", camp, "--dry-run"])
    assert not os.path.exists(camp), "--dry-run wrote the campaign folder"
    assert p.stdout.count("member ") == 4, p.stdout

    # Every member fails in interval 2: exit 1, two intervals recorded.
    p = run([args.dtbench, "pbt", spec_file, "--out", camp], expect=1, env=dict(ENV, PBT_FAIL_ALL="1"))
    assert "no member has an evaluation at ready point 2" in p.stderr, p.stderr
    l = json.load(open(os.path.join(camp, "lineage.json")))
    assert len(l["intervals"]) == 2
    first_two = l["intervals"]
    m2 = first_two[1]["members"][2]
    assert m2["status"] == "failed" and m2["exit_code"] == 7 and m2["test_accuracy"] is None, m2
    replaced = [e for e in first_two[1]["events"] if e["member"] == 2]
    assert replaced and replaced[0]["kind"] == "replace_failed" and replaced[0]["exit_code"] == 7, first_two[1]["events"]
    assert "member 2 failed in interval 1" in p.stderr and "injected failure of m02-i001" in p.stderr, p.stderr

    # A dry run names the interval a run would train next (it printed the first interval's members whatever the
    # lineage held), and says a finished campaign trains nothing.
    p = run([args.dtbench, "pbt", spec_file, "--out", camp, "--dry-run"])
    # Numbered from 0, as the run's own lines ("interval 2 (steps ...): best member ...") and lineage.json.
    assert re.search(r"interval 2 \(steps \d+-\d+; intervals 0 to 2\) would train:", p.stdout), p.stdout
    assert p.stdout.count("member ") == 4, p.stdout
    # The rerun continues from the lineage: interval 2 only.
    p = run([args.dtbench, "pbt", spec_file, "--out", camp])
    l = json.load(open(os.path.join(camp, "lineage.json")))
    assert l["intervals"][:2] == first_two, "the recorded intervals changed"
    check_lineage(camp, l)
    assert l["best"]["run"].endswith("-i002")
    print("campaign: lineage consistent, failure replaced, interrupted campaign continued")
    # Its final runs' records hold each member's whole curve: evaluations every 5 steps from step 5.
    rec = json.load(open(os.path.join(camp, "runs", l["best"]["run"] + ".json")))
    assert [p["step"] for p in rec["curve"]] == [5, 10, 15, 20, 25, 30], [p["step"] for p in rec["curve"]]
    assert rec["status"] == "reached-target", rec["status"]
    # Every interval's run spans the whole campaign (its schedule) and stops at its ready point.
    mid = json.load(open(os.path.join(camp, "runs", "m00-i001.json")))
    assert mid["config"]["duration"]["steps"] == 30 and mid["extra"]["stop_at"] == 20, (mid["config"]["duration"], mid["extra"])
    assert sum(m["status"] == "failed" for iv in l["intervals"] for m in iv["members"]) == 1

    before = open(os.path.join(camp, "lineage.json")).read()
    run([args.dtbench, "pbt", spec_file, "--out", camp])
    assert open(os.path.join(camp, "lineage.json")).read() == before, "a finished campaign changed on rerun"
    p = run([args.dtbench, "pbt", spec_file, "--out", camp, "--dry-run"])
    assert "finished: lineage.json holds all 3 intervals; nothing to train" in p.stdout and "member " not in p.stdout, p.stdout
    t = run([args.dtbench, "table", camp])
    assert "Best member" in t.stdout and "population-based training" in t.stdout, t.stdout
    print(t.stdout)

    # Found by a hunt: a lineage older than its runs (restored from a copy after the first interval). The campaign has
    # deleted interval 0's checkpoints that interval 1's members continue from: it removed the finished records of
    # interval 1, failed every member and exited 1. Now exit 2 naming the checkpoint, nothing removed.
    old = os.path.join(args.work, "camp-old-lineage")
    shutil.copytree(camp, old)
    doc = json.load(open(os.path.join(old, "lineage.json")))
    doc["intervals"] = doc["intervals"][:1]
    json.dump(doc, open(os.path.join(old, "lineage.json"), "w"))
    files = sorted(os.listdir(os.path.join(old, "runs")))
    p = run([args.dtbench, "pbt", spec_file, "--out", old], expect=2)
    # Named by the first record of an interval the lineage has not reached (it was the missing checkpoint before
    # later intervals' records were refused; the checkpoint's case stays below, with no such record).
    assert "m00-i002.json: a record of interval 2, but " in p.stderr and "lineage.json records 1 interval (" in p.stderr, \
        p.stderr
    assert sorted(os.listdir(os.path.join(old, "runs"))) == files, "files of the runs were removed"
    for f in [f for f in files if "-i002." in f]:  # as if it had stopped after interval 1
        shutil.rmtree(os.path.join(old, "runs", f)) if os.path.isdir(os.path.join(old, "runs", f)) else \
            os.remove(os.path.join(old, "runs", f))
    files = sorted(os.listdir(os.path.join(old, "runs")))
    p = run([args.dtbench, "pbt", spec_file, "--out", old], expect=2)
    assert "-i000.ckpt: missing; member 0's interval 1 continues from it" in p.stderr, p.stderr
    assert sorted(os.listdir(os.path.join(old, "runs"))) == files, "files of the runs were removed"
    print("a lineage older than its runs: exit 2 naming the later record, or the missing checkpoint; nothing removed")

    # A campaign killed in the middle of its last interval and run again ends with the lineage of one that was not
    # (wall times aside): the runs that had finished are kept, the others run again from the same checkpoints.
    killed = os.path.join(args.work, "camp-killed")
    p = subprocess.run([args.dtbench, "pbt", spec_file, "--out", killed], capture_output=True, text=True,
                       timeout=300, env=dict(ENV, PBT_KILL="1"))
    assert p.returncode == 128 + 9 or p.returncode == -9, p.returncode
    assert "member 1: preempted in interval 1; resuming from its checkpoint" in p.stdout, p.stdout
    resumed = json.load(open(os.path.join(killed, "runs", "m01-i001.json")))
    stops = [e["at_step"] for e in resumed["extra"].get("preemptions", [])]
    assert len(stops) == 1 and 13 <= stops[0] < 20, resumed["extra"].get("preemptions")
    for _ in range(600):  # members started before the kill stop (SIGUSR1 when their parent dies) as preempted
        if subprocess.run(["pgrep", "-f", killed + "/configs"], capture_output=True).returncode != 0:
            break
        time.sleep(0.1)
    assert len(json.load(open(os.path.join(killed, "lineage.json")))["intervals"]) == 2
    # Found by a hunt: a damaged checkpoint a member continues from, or a member record that cannot be read, failed
    # that member only (it was replaced; exit 0), or had its checkpoint removed and its interval trained again. Now
    # exit 2 naming the file, before any member trains: nothing changes.
    def snapshot(folder):
        return sorted((os.path.relpath(os.path.join(d, f), folder), os.stat(os.path.join(d, f)).st_mtime_ns)
                      for d, _, fs in os.walk(folder) for f in fs)
    for what, message in [("checkpoint", "'s interval 2 continues from it"),
                          ("record", "member 1's record of interval 2")]:
        bad = os.path.join(args.work, "camp-damaged-" + what)
        shutil.copytree(killed, bad)
        runs = os.path.join(bad, "runs")
        if what == "checkpoint":  # every checkpoint of interval 1, so the one an unfinished member goes on from
            for ckpt in [d for d in os.listdir(runs) if d.endswith("-i001.ckpt")]:
                for name in [f for f in os.listdir(os.path.join(runs, ckpt)) if f.endswith(".bin")]:
                    with open(os.path.join(runs, ckpt, name), "r+b") as f:
                        f.seek(100)
                        byte = f.read(1)
                        f.seek(100)
                        f.write(bytes([byte[0] ^ 0xFF]))
        else:
            path = os.path.join(runs, "m01-i002.json")
            if not os.path.exists(path):  # no record of interval 2 yet for member 1: one cut short stands in for it
                shutil.copy(os.path.join(runs, "m00-i001.json"), path)
            with open(path, "r+b") as f:
                f.truncate(50)
        before = snapshot(bad)
        p = run([args.dtbench, "pbt", spec_file, "--out", bad], expect=2)
        assert message in p.stderr and p.stderr.count("dtbench: error") == 1, p.stderr
        assert snapshot(bad) == before, "files changed"
        print(f"a damaged {what} a member goes on from: exit 2, {p.stderr.strip()[:160]}...; nothing changed")
    # Found by a hunt, with the lineage cut back to interval 0 (interval 1's finished members are then reused): a
    # damaged checkpoint of a reused member, which interval 2 continues from, failed the members that continued from
    # it (replaced, exit 0, the damaged file deleted); and a record of interval 2 was reused under a plan that had not
    # made it. Now exit 2 naming the file; nothing changes.
    for what, message in [("checkpoint", "(member 0's interval 1, finished: the next interval continues from it)"),
                          ("later record", "-i002.json: a record of interval 2, but ")]:
        bad = os.path.join(args.work, "camp-cut-lineage-" + what.replace(" ", "-"))
        shutil.copytree(killed, bad)
        doc = json.load(open(os.path.join(bad, "lineage.json")))
        doc["intervals"] = doc["intervals"][:1]
        json.dump(doc, open(os.path.join(bad, "lineage.json"), "w"))
        runs = os.path.join(bad, "runs")
        if what == "checkpoint":  # killed in interval 1: none of interval 2's files yet
            for f in [f for f in os.listdir(runs) if "-i002." in f]:
                shutil.rmtree(os.path.join(runs, f)) if os.path.isdir(os.path.join(runs, f)) else os.remove(os.path.join(runs, f))
            ckpt = os.path.join(runs, "m00-i001.ckpt")
            name = [f for f in os.listdir(ckpt) if f.endswith(".bin")][0]
            with open(os.path.join(ckpt, name), "r+b") as f:
                f.seek(100)
                byte = f.read(1)
                f.seek(100)
                f.write(bytes([byte[0] ^ 0xFF]))
        elif not any(f.endswith("-i002.json") for f in os.listdir(runs)):
            shutil.copy(os.path.join(runs, "m01-i001.json"), os.path.join(runs, "m01-i002.json"))
        before = snapshot(bad)
        p = run([args.dtbench, "pbt", spec_file, "--out", bad], expect=2)
        assert message in p.stderr and p.stderr.count("dtbench: error") == 1, p.stderr
        assert snapshot(bad) == before, "files changed"
        print(f"lineage cut back, a {what}: exit 2, {p.stderr.strip()[:160]}...; nothing changed")
    run([args.dtbench, "pbt", spec_file, "--out", killed])

    def no_walls(lineage):
        for iv in lineage["intervals"]:
            for m in iv["members"]:
                m.pop("wall_seconds")
        return lineage
    assert no_walls(json.load(open(os.path.join(killed, "lineage.json")))) == \
        no_walls(json.load(open(os.path.join(camp, "lineage.json")))), "the killed and rerun campaign chose otherwise"
    print("campaign killed mid-interval (and a member preempted and resumed) and rerun: the same lineage as the "
          "uninterrupted one")

    # Found by a hunt: bad input that was exit 1 (an internal error), or was written before it failed every member.
    good = write("good.json", spec([args.dtbench, "train"]))
    blocked = os.path.join(args.work, "blocked")
    os.makedirs(blocked)
    open(os.path.join(blocked, "runs"), "w").close()
    for cmd, message, folder in [
            ([good, "--out", ""], "--out: an empty folder name", None),
            ([good, "--out", blocked], "blocked/runs exists and is not a folder", None),
            ([write("noprog.json", spec(["/nonexistent/dtbench", "train"])), "--out", os.path.join(args.work, "np")],
             "/program/0: '/nonexistent/dtbench' is not an executable file here", os.path.join(args.work, "np")),
            ([good, "--out", os.path.join(args.work, "poll"), "--poll", "nan"], "--poll: must be a finite number (in [0.1, 3600]",
             os.path.join(args.work, "poll"))]:
        p = run([args.dtbench, "pbt", *cmd], expect=2)
        assert message in p.stderr and p.stderr.count("dtbench: error") == 1, (message, p.stderr)
        assert folder is None or not os.path.exists(folder), folder
    assert os.listdir(blocked) == ["runs"], os.listdir(blocked)
    print("bad --out, /program and --poll: exit 2, nothing written")

    other = spec([wrapper])
    other["population"] = 3
    p = run([args.dtbench, "pbt", write("other.json", other), "--out", camp], expect=2)
    assert "holds the campaign of another spec (they differ at /population)" in p.stderr, p.stderr

    # Random search: the same members, never exploited (member 2's failure is still replaced).
    rs = spec([wrapper])
    rs["mode"] = "random_search"
    camp_rs = os.path.join(args.work, "camp-rs")
    run([args.dtbench, "pbt", write("rs.json", rs), "--out", camp_rs])
    l = json.load(open(os.path.join(camp_rs, "lineage.json")))
    kinds = [e["kind"] for iv in l["intervals"] for e in iv["events"]]
    assert kinds == ["replace_failed"], kinds
    first = [m["hyperparameters"] for m in l["intervals"][0]["members"]]
    assert first == [m["hyperparameters"] for m in first_two[0]["members"]], "random search drew other members"
    print("random search: same initial members, only the failure replaced")

    # Selection on a validation set held out of the training set: the lineage says so, every member has both
    # accuracies, and each exploited member copies the member with the best validation accuracy.
    val = spec([args.dtbench, "train"])
    val["base"]["data"]["validation_size"] = 120
    camp_val = os.path.join(args.work, "camp-val")
    p = run([args.dtbench, "pbt", write("val.json", val), "--out", camp_val])
    assert "ranked on validation" in p.stdout, p.stdout
    l = json.load(open(os.path.join(camp_val, "lineage.json")))
    assert l["select_on"] == "validation" and "validation_accuracy" in l["best"], l.get("best")
    for iv in l["intervals"]:
        done = [m for m in iv["members"] if m["status"] == "completed"]
        assert all(m["validation_accuracy"] is not None and m["test_accuracy"] is not None for m in done)
        best = max(done, key=lambda m: (m["validation_accuracy"], -m["member"]))
        for e in iv["events"]:
            assert e["from"] == best["member"], (e, best)
    rec = json.load(open(os.path.join(camp_val, "runs", l["best"]["run"] + ".json")))
    assert rec["curve"][-1]["validation_accuracy"] == l["best"]["validation_accuracy"]
    print("selection on the validation set: lineage, accuracies and exploits consistent")

    # Ctrl-C in a terminal (SIGINT to the foreground process group) while members train: the members, each leading its
    # own process group, do not get it; the campaign dies of it, and its death (PR_SET_PDEATHSIG) makes each member
    # checkpoint and record itself preempted, so that a rerun resumes it. SIGINT killed them without a checkpoint.
    long = spec([args.dtbench, "train"])
    long.update(population=2, ready_steps=1000000)
    long["base"]["duration"]["steps"] = 2000000
    camp_int = os.path.join(args.work, "camp-int")
    proc = subprocess.Popen([args.dtbench, "pbt", write("int.json", long), "--out", camp_int], env=ENV,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    logs = [os.path.join(camp_int, "runs", f"m0{m}-i000.mllog") for m in (0, 1)]
    for _ in range(600):  # both members train (their logs say run_start)
        if all(os.path.exists(f) and "run_start" in open(f).read() for f in logs):
            break
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == -signal.SIGINT
    for _ in range(600):
        if subprocess.run(["pgrep", "-f", camp_int + "/configs"], capture_output=True).returncode != 0:
            break
        time.sleep(0.1)
    for m in (0, 1):
        rec = json.load(open(os.path.join(camp_int, "runs", f"m0{m}-i000.json")))
        assert rec["status"] == "preempted" and 0 < rec["steps"] < 1000000, (rec["status"], rec["steps"])
        assert os.path.isdir(os.path.join(camp_int, "runs", f"m0{m}-i000.ckpt")), os.listdir(os.path.join(camp_int, "runs"))
    print("Ctrl-C to the campaign's process group: every member checkpointed and recorded itself preempted")


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["init_from", "campaign"])
    ap.add_argument("--dtbench", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.work = os.path.join(args.work, args.check)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    globals()["check_" + args.check]()


if __name__ == "__main__":
    main()
