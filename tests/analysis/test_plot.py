"""analysis/plot.py: the critical-batch fit against known parameters, and every figure drawn from a
folder of records (synthetic records made here, only to exercise the plotting), checked for its
title, axis labels and legend in the SVG text.

The records are whole (RunRecord's fields): plot.py reads them through `dtbench table --format json`, which
refuses anything less. Then the contract on bad input: exit 2 and nothing written for input at fault (a --series
key no run has, a malformed sweep or report, the same folder twice or a copy of it), exit 1 after the figures when a
record could not be read.

Usage: /usr/bin/python3 test_plot.py SOURCE_DIR WORK_DIR DTBENCH
"""
import json
import math
import os
import shutil
import subprocess
import sys

src, work, dtbench = sys.argv[1], sys.argv[2], sys.argv[3]
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(src, "analysis"))
import plot  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# --- The fit: exact data from S(B) = 1000 (1 + 512 / B) must give the parameters back to 1e-4 (a closed form:
# only rounding remains); data with +-5% multiplicative noise within 15%; steps growing with B fit on B_crit = 0.
bs = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
exact = [1000 * (1 + 512 / b) for b in bs]
smin, bcrit, rms = plot.fit_critical_batch(bs, exact)
check(abs(smin / 1000 - 1) < 1e-4 and abs(bcrit / 512 - 1) < 1e-4 and rms < 1e-6, f"exact fit {smin} {bcrit} {rms}")
noise = [1.05, 0.95, 1.03, 0.97, 1.0, 1.04, 0.96, 1.02, 0.98]
smin, bcrit, rms = plot.fit_critical_batch(bs, [s * n for s, n in zip(exact, noise)])
check(abs(smin / 1000 - 1) < 0.15 and abs(bcrit / 512 - 1) < 0.15, f"noisy fit {smin} {bcrit}")
try:
    plot.fit_critical_batch([64, 64], [10, 11])
    check(False, "the fit accepted a single batch size")
except ValueError:
    pass
# Steps that grow with the batch, or stay flat, are fitted on the bound B_crit = 0 (as reproduce_test.cpp): the
# constant sum(1/S) / sum(1/S^2) on relative error; a flat curve was "no fit" (its free B_crit came out -3e-11).
smin, bcrit, rms = plot.fit_critical_batch([16, 64, 256], [100, 400, 1600])
check(bcrit == 0 and abs(smin / (0.013125 / 1.06640625e-4) - 1) < 1e-9 and rms > 1, f"growing curve {smin} {bcrit} {rms}")
smin, bcrit, rms = plot.fit_critical_batch([64, 128, 256, 512], [500] * 4)
check(abs(smin / 500 - 1) < 1e-9 and abs(bcrit) < 1e-9 and rms < 1e-9, f"flat curve {smin} {bcrit} {rms}")

# --- Series keys: a key zipped with the rank count is dropped only where it moves with it (one value per rank
# count); claim a zips threads beside tasks_per_node, K = 1 with 1 and 2 threads, and the figure pooled them (100.6%
# efficiency at K = 2 where the table says 82.7%; a hunt). Then threads tells the series apart, as in the table.
def zipped_run(ranks, threads):
    return {"values": {"slurm.tasks_per_node": ranks, "threads": threads}, "ranks": ranks, "config": {}, "slurm": {},
            "record": None, "state": "done"}
keys, zips = ["slurm.tasks_per_node", "threads"], [["slurm.tasks_per_node", "threads"]]
check(plot.series_keys(keys, zips, None, [zipped_run(1, 1), zipped_run(1, 2), zipped_run(2, 1), zipped_run(4, 1)]) ==
      ["threads"], "a zipped key with two values at one rank count is a series key")
check(plot.series_keys(keys, zips, None, [zipped_run(1, 4), zipped_run(2, 2), zipped_run(4, 1)]) == [],
      "a zipped key that moves with the rank count is not a series key")

# --- The steps the fit is given, chosen as the criterion chooses them (critical_batch.cpp): per batch, the point
# (learning rate) with the smallest median over its seeds, among points whose every seed reached the target. Found by
# a hunt: the figure pooled every run at a batch (S_min 411, B_crit 39 on claim e's records, the criterion's rule
# 200 and 64). At batch 64: lr 0.1 (steps 100, 120, 110), lr 0.2 (90, 95, 400: median 95, the best), lr 0.4 (50, 60,
# and one run that missed: left out). At batch 128: lr 0.1 only (70, 80).
def run_of(lr, b, step, b_simple=None):
    curve = [{"b_simple": b_simple}] if b_simple else []
    return {"values": {"optimizer.lr": lr, "batch.global": b}, "state": "done",
            "record": {"status": "completed", "global_batch": b, "curve": curve,
                       "time_to_accuracy": {"target": 0.9, "reached": step is not None, "step": step}}}
chosen, b_simples, tgt = plot.best_steps(
    [run_of(0.1, 64, s) for s in (100, 120, 110)] + [run_of(0.2, 64, s, 300.0) for s in (90, 95, 400)] +
    [run_of(0.4, 64, s) for s in (50, 60, None)] + [run_of(0.1, 128, s, 500.0) for s in (70, 80)])
check(chosen == {64: [90, 95, 400], 128: [70, 80]} and b_simples == [300.0, 500.0] and tgt == 0.9,
      f"best steps per batch {chosen} {b_simples} {tgt}")
# With claim d's 3 seeds, batch 128's two do not count; the same grid in another campaign is another point.
chosen, _, _ = plot.best_steps([run_of(0.1, 64, s) for s in (100, 120, 110)] + [run_of(0.1, 128, s) for s in (70, 80)],
                               min_seeds=3)
check(chosen == {64: [100, 120, 110]}, f"min_seeds 3: {chosen}")
other = [dict(run_of(0.1, 64, s), campaign="other") for s in (10, 20, 30)]
chosen, _, _ = plot.best_steps([dict(run_of(0.1, 64, s), campaign="one") for s in (100, 120, 110)] + other, min_seeds=3)
check(chosen == {64: [10, 20, 30]}, f"two campaigns' points apart: {chosen}")

# --- Synthetic records: 2 reducers x K in {1, 2, 4} (throughput 1000 K^0.9 for ring, 800 K^0.8 for
# tree) and a batch-size sweep whose steps to target follow S(B) = 300 (1 + 256 / B).
if os.path.exists(work):
    shutil.rmtree(work)
recs = os.path.join(work, "records")
os.makedirs(recs)


def record(name, reducer, ranks, batch, ips, steps_to_target, b_simple):
    # The target 0.8 is first reached at the fourth point, step steps_to_target: the time to accuracy's point, as
    # the trainer writes it (a record whose time to accuracy is no point of its curve is unreadable).
    curve = []
    for i in range(1, 6):
        step = i * steps_to_target // 4
        curve.append({"epoch": step * batch / 60000, "step": step, "samples": step * batch,
                      "wall_seconds": step * batch / ips, "train_loss": 1.0 / i, "test_loss": 1.1 / i,
                      "test_accuracy": min(0.9, 0.4 + 0.1 * i), "lr": 0.1, "b_simple": b_simple})
    steps = curve[-1]["step"]
    return {"schema_version": 1, "kind": "dtbench-run-record", "name": name, "status": "reached-target",
            "status_detail": "", "seed": 1, "ranks": ranks, "global_batch": batch, "per_rank_batch": batch // ranks,
            "config": {"name": name, "seed": 1, "reducer": {"name": reducer}, "batch": {"global": batch},
                       "output": {"dir": recs}},
            "started_utc": "2026-11-28T00:00:00Z", "finished_utc": "2026-11-28T00:01:00Z",
            "wall_seconds": steps * batch / ips, "steps": steps, "epochs": steps * batch / 60000,
            "samples": steps * batch,
            "timing": {"unit": "seconds per step (mean)", "data": 0.0, "forward": 0.01, "backward": 0.02,
                       "exposed_comm": 0.0, "comm": 0.0, "optimizer": 0.0, "total": batch / ips},
            "throughput": {"images_per_second": ips, "bytes_communicated_per_step": 0.0}, "extra": {},
            "curve": curve,
            "time_to_accuracy": {"target": 0.8, "reached": True, "seconds": steps_to_target * batch / ips,
                                 "step": steps_to_target, "epoch": steps_to_target * batch / 60000,
                                 "samples": steps_to_target * batch},
            "provenance": {}}


n = 0
for reducer, base, exp in (("ring", 1000, 0.9), ("tree", 800, 0.8)):
    for k in (1, 2, 4):
        json.dump(record(f"r{n}", reducer, k, 128, base * k ** exp, 900, 300.0), open(os.path.join(recs, f"r{n}.json"), "w"))
        n += 1
bdir = os.path.join(work, "batch")
os.makedirs(bdir)
for b in (32, 64, 128, 256, 512, 1024, 2048):
    s = round(300 * (1 + 256 / b))
    json.dump(record(f"b{b}", "ring", 2, b, 2000, s, 240.0), open(os.path.join(bdir, f"b{b}.json"), "w"))
allreduce = os.path.join(work, "allreduce.json")
rows = [{"bytes": 4096 << i, "count": 1024 << i, "reducer": r, "ranks": 4, "time_us": 10.0 * (i + 1),
         "algbw_gbps": 0.4 * (i + 1), "busbw_gbps": 0.6 * (i + 1) * f, "bus_factor": 1.5, "wrong": 0}
        for r, f in (("ring", 1.0), ("tree", 0.7)) for i in range(8)]
json.dump({"ranks": 4, "transport": "mpi", "rows": rows, "wrong": 0}, open(allreduce, "w"))

out = os.path.join(work, "figures")
plot.main(["scaling", recs, "--out", out, "--dtbench", dtbench])
plot.main(["curves", recs, "--out", out, "--dtbench", dtbench])
plot.main(["batch", bdir, "--out", out, "--dtbench", dtbench])
plot.main(["busbw", allreduce, "--out", out])


def exit_code(argv):
    """plot.main's exit code (0 when it returns)."""
    try:
        plot.main(argv + ["--dtbench", dtbench] if argv[0] not in ("busbw", "claims") else argv)
        return 0
    except SystemExit as e:
        return e.code


# Input at fault: exit 2, and no figure written (each is drawn first, written once all are).
bad_out = os.path.join(work, "never")
bad_sweep = os.path.join(work, "bad-sweep.json")
json.dump({"ranks": 4, "rows": rows[:3] + [dict(rows[3], busbw_gbps="fast")]}, open(bad_sweep, "w"))
bad_report = os.path.join(work, "bad-report")
os.makedirs(bad_report)
json.dump({"claims": [{"id": "x", "verdict": "supported", "figure": {"kind": "pie", "series": [1]}}]},
          open(os.path.join(bad_report, "report.json"), "w"))
# Found by a hunt: a claim id that leaves --out (it wrote there) or holds a "/" (exit 1 after other figures), a
# batch of 0 and a number that overflows to inf in report.json (a traceback, a figure drawn), a program that is not
# dtbench (a traceback), --out below a file (exit 1).
reports = {}
for name, claim in (("escape", {"id": "../../escaped"}), ("slash", {"id": "sub/c"}),
                    ("zero-batch", {"figure": {"kind": "steps_vs_batch", "batch": [0, 64], "median": [5, 3],
                                               "min": [5, 3], "max": [5, 3], "s_min": 1, "b_crit": 10}})):
    reports[name] = os.path.join(work, "report-" + name)
    os.makedirs(reports[name])
    c = {"id": "b", "verdict": "supported", "figure": {"kind": "steps_vs_batch", "batch": [32, 64], "median": [5, 3],
                                                       "min": [5, 3], "max": [5, 3], "s_min": 1, "b_crit": 10}}
    c.update(claim)
    json.dump({"claims": [c]}, open(os.path.join(reports[name], "report.json"), "w"))
reports["inf"] = os.path.join(work, "report-inf")
os.makedirs(reports["inf"])
open(os.path.join(reports["inf"], "report.json"), "w").write(open(os.path.join(reports["zero-batch"], "report.json"))
                                                             .read().replace("[0, 64]", "[32, 1e400]"))
a_file = os.path.join(work, "a-file")
open(a_file, "w").close()
for argv in (["claims", reports["escape"], "--out", bad_out], ["claims", reports["slash"], "--out", bad_out],
             ["claims", reports["zero-batch"], "--out", bad_out], ["claims", reports["inf"], "--out", bad_out],
             ["busbw", allreduce, "--out", os.path.join(a_file, "figs")]):
    code = exit_code(argv)
    check(code == 2, f"{argv}: exit {code}, expected 2")
    check(not os.path.exists(bad_out) and not os.path.exists(os.path.join(work, "..", "escaped.png")),
          f"{argv}: a figure was written")
try:
    plot.main(["curves", recs, "--out", bad_out, "--dtbench", "/bin/echo"])
    check(False, "--dtbench /bin/echo: no error")
except SystemExit as e:
    check(e.code == 2, f"--dtbench /bin/echo: exit {e.code}, expected 2")
recs_copy = os.path.join(work, "recs-copy")  # a copy of a folder beside it: every run twice (noticed in stop 58)
shutil.copytree(recs, recs_copy)
for argv in (["all", recs, "--series", "reducer.nmae", "--out", bad_out],
             ["all", recs, recs, "--out", bad_out],
             ["all", recs, recs_copy, "--out", bad_out],
             ["all", recs, "--allreduce", bad_sweep, "--out", bad_out],
             ["scaling", os.path.join(work, "no-such-folder"), "--out", bad_out],
             ["claims", bad_report, "--out", bad_out]):
    code = exit_code(argv)
    check(code == 2, f"{argv}: exit {code}, expected 2")
    check(not os.path.exists(bad_out), f"{argv}: {bad_out} was written")
# A record that cannot be read (cut short): the figures from the others, then exit 1, as `dtbench table` does.
cut_dir = os.path.join(work, "cut")
shutil.copytree(recs, cut_dir)
with open(os.path.join(cut_dir, "r0.json"), "r+") as f:
    f.truncate(200)
plot.UNREADABLE.clear()
code = exit_code(["scaling", cut_dir, "--out", os.path.join(work, "cut-figures")])
check(code == 1, f"a cut record: exit {code}, expected 1")
check(os.path.exists(os.path.join(work, "cut-figures", "scaling.png")), "a cut record: no figure from the others")
check(not os.path.exists(bad_out), f"{bad_out} was written after all")
# Nothing to draw at all (one run, no evaluation): every kind says why it skipped, then exit 1 (it was exit 0 with
# an empty figure folder).
none_dir = os.path.join(work, "none")
os.makedirs(none_dir)
lone = record("lone", "ring", 2, 128, 1000, 900, 300.0)
lone.update(curve=[], status="completed", time_to_accuracy={"target": 0.8, "reached": False})
json.dump(lone, open(os.path.join(none_dir, "lone.json"), "w"))
plot.UNREADABLE.clear()
code = exit_code(["all", none_dir, "--out", os.path.join(work, "none-figures")])
check(code == 1, f"nothing to draw: exit {code}, expected 1")
check(not os.path.exists(os.path.join(work, "none-figures")), "nothing to draw: a folder was made")

# Found by a hunt: values the records may hold and `dtbench table` prints, but that crashed a figure.
# A negative B_simple (its trace estimate is a difference of two noisy terms, so it can fall below 0 early in
# training): 3 seeds at each of 4 batches, all at the target, every point's B_simple -50, was a math domain error
# (log2 of the regime widths with the axis reaching below 0). The estimate is left out, the caption says so. With
# one batch's points negative and the rest at 300, the median (the report's number) is 300 and is drawn.
for name, bsim in (("neg-bsimple", lambda b: -50.0), ("some-neg-bsimple", lambda b: -50.0 if b == 64 else 300.0)):
    d = os.path.join(work, name)
    os.makedirs(d)
    for b in (64, 128, 256, 512):
        for seed in (1, 2, 3):
            r = record(f"b{b}-s{seed}", "ring", 2, b, 2000, round(300 * (1 + 256 / b)), bsim(b))
            r["seed"] = r["config"]["seed"] = seed
            json.dump(r, open(os.path.join(d, f"b{b}-s{seed}.json"), "w"))
    plot.UNREADABLE.clear()
    figs = os.path.join(work, name + "-figures")
    code = exit_code(["batch", d, "--out", figs])
    check(code == 0, f"{name}: exit {code}, expected 0")
    png, svg = os.path.join(figs, "critical_batch.png"), os.path.join(figs, "critical_batch.svg")
    check(os.path.exists(png) and os.path.getsize(png) > 10000, f"{name}: {png} missing or empty")
    body = open(svg).read() if os.path.exists(svg) else ""
    check("B_crit = 256" in body, f"{name}: the fit is not in the figure")
    if name == "neg-bsimple":
        check("= -50 is not positive: not drawn on the log axis" in body, f"{name}: the caption does not say why")
    else:
        check("B_simple (online estimate, median) = 300" in body and "not positive" not in body,
              f"{name}: B_simple 300 not drawn")
# A null /extra/scaling_efficiency (K=2 records) was a TypeError in median; `dtbench table` takes only a number there
# and computes the efficiency otherwise, and so does the figure. At K=4 one record holds 0.85, one null: 85%.
eff_dir = os.path.join(work, "null-efficiency")
os.makedirs(eff_dir)
for k, effs in ((1, [None]), (2, [None, None]), (4, [0.85, None])):
    for i, e in enumerate(effs):
        r = record(f"k{k}-{i}", "ring", k, 128, 1000 * k ** 0.9, 900, 300.0)
        r["extra"] = {} if k == 1 else {"scaling_efficiency": e}
        json.dump(r, open(os.path.join(eff_dir, f"k{k}-{i}.json"), "w"))
check(subprocess.run([dtbench, "table", eff_dir], capture_output=True).returncode == 0,
      "null scaling_efficiency: dtbench table refuses the records")
plot.UNREADABLE.clear()
code = exit_code(["scaling", eff_dir, "--out", os.path.join(work, "null-efficiency-figures")])
check(code == 0, f"null scaling_efficiency: exit {code}, expected 0")
png = os.path.join(work, "null-efficiency-figures", "scaling.png")
check(os.path.exists(png) and os.path.getsize(png) > 10000, f"null scaling_efficiency: {png} missing or empty")
# Two rank counts over all but one per series (ring at K = 2, tree at K = 4): no efficiency exists, and the empty log
# axis made matplotlib fail ("Data has no positive values"): exit 2 and no figure at all, the others' included (a
# hunt). The throughput panel is drawn, and the efficiency panel says why it is empty.
one_dir = os.path.join(work, "one-k-per-series")
os.makedirs(one_dir)
for name, reducer, k in (("ring2", "ring", 2), ("tree4", "tree", 4)):
    json.dump(record(name, reducer, k, 128, 1000 * k, 900, 300.0), open(os.path.join(one_dir, name + ".json"), "w"))
plot.UNREADABLE.clear()
code = exit_code(["scaling", one_dir, "--out", os.path.join(work, "one-k-figures")])
check(code == 0, f"one rank count per series: exit {code}, expected 0")
svg = os.path.join(work, "one-k-figures", "scaling.svg")
check(os.path.exists(svg) and "no series has two rank counts: no efficiency" in open(svg).read(),
      f"one rank count per series: {svg} missing or says nothing of the efficiency")

# Found by a hunt: a record whose file name is not UTF-8 and cannot be read (dtbench quotes the name in its message)
# was a UnicodeDecodeError traceback; now the figures from the others, then exit 1 as for any unreadable record.
bytes_dir = os.path.join(work, "non-utf8")
shutil.copytree(recs, bytes_dir)
open(os.path.join(os.fsencode(bytes_dir), b"bad\xff.json"), "wb").write(b'{"kind": "dtbench-run-record", ')
plot.UNREADABLE.clear()
code = exit_code(["scaling", bytes_dir, "--out", os.path.join(work, "non-utf8-figures")])
check(code == 1, f"a non-UTF-8 record name: exit {code}, expected 1")
check(os.path.exists(os.path.join(work, "non-utf8-figures", "scaling.png")), "a non-UTF-8 record name: no figure")
# A folder where one figure's file goes: exit 2 before any figure is written (scaling.png was written, then exit 1).
blocked = os.path.join(work, "blocked-figures")
os.makedirs(os.path.join(blocked, "scaling.svg"))
plot.UNREADABLE.clear()
code = exit_code(["scaling", recs, "--out", blocked])
check(code == 2, f"a folder where scaling.svg goes: exit {code}, expected 2")
check(sorted(os.listdir(blocked)) == ["scaling.svg"], f"a folder where scaling.svg goes: {os.listdir(blocked)} written")

expected = {
    "scaling": ["Training throughput against K", "Scaling efficiency against K", "ranks K (data-parallel workers)",
                "throughput (images/s", "scaling efficiency (%)", "ideal: linear in K", "ideal: 100%", "reducer=ring"],
    "accuracy": ["Test accuracy against wall time", "Test accuracy against epochs", "wall-clock time (s)",
                 "epochs (passes over the training set)", "test accuracy (%)", "target accuracy"],
    "critical_batch": ["Steps to target against batch size", "global batch size B (samples per step)",
                       "steps to reach the target accuracy", "perfect scaling", "diminishing returns",
                       "maximal data", "B_crit = 256", "B_simple (online estimate, median) = 240"],
    "busbw": ["Allreduce bus bandwidth against message size", "message size (bytes per rank)",
              "bus bandwidth (GB/s)", "ring (K=4)", "tree (K=4)"],
}
for name, texts in expected.items():
    png, svg = os.path.join(out, name + ".png"), os.path.join(out, name + ".svg")
    check(os.path.exists(png) and os.path.getsize(png) > 10000, f"{png} missing or empty")
    check(os.path.exists(svg), f"{svg} missing")
    if os.path.exists(svg):
        body = open(svg).read()
        for t in texts:
            # matplotlib writes text into SVG as comments "<!-- text -->" before the glyph paths.
            check(t in body, f"{name}.svg lacks '{t}'")
print("plot tests:", "ok" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
