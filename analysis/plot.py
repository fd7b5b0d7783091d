#!/usr/bin/python3
"""Figures from dtbench run records and allreduce sweeps (matplotlib; run with Debian's /usr/bin/python3).

    plot.py scaling CAMPAIGN... --out DIR   throughput and scaling efficiency against the rank count K,
                                            with the ideal (linear) line
    plot.py curves  CAMPAIGN... --out DIR   test accuracy against wall time and against epochs, one
                                            colour per configuration
    plot.py batch   CAMPAIGN... --out DIR   steps to the target accuracy against the global batch size,
                                            with the fit S(B) = S_min (1 + B_crit / B), the three regimes
                                            of Shallue et al. (2018) and the online B_simple estimate
    plot.py busbw   ALLREDUCE.json... --out DIR
                                            allreduce bus bandwidth against message size per reducer
                                            (`dtbench allreduce --json` output)
    plot.py all     CAMPAIGN... [--allreduce FILE] --out DIR
    plot.py pbt     PBT_DIR... --out DIR    population-based training (`dtbench pbt --out` folders, lineage.json):
                                            every member's test accuracy against steps (from each member's last
                                            record, whose curve holds its whole ancestry) with the ready points,
                                            and the best member's hyperparameter schedule (its ancestry's values
                                            per interval); one figure per folder
    plot.py claims  REPORT_DIR [--out DIR]  the figures of a `dtbench reproduce` report from its report.json
                                            (default --out REPORT_DIR/figures): accuracy against batch per
                                            optimizer or warmup, steps to target against batch with the fit
                                            and regimes, bytes per rank against K, the communication crossover

CAMPAIGN is a `dtbench sweep --out` folder (its campaign.json lists every run) or any folder of run
records. Every figure is written as PNG and SVG. Series are the sweep's axis values other than the
ones that set K (or --series KEY,...).

Critical batch size (McCandlish et al. 2018, arXiv:1812.06162; Shallue et al. 2019, JMLR 20(112)):
the number of steps S to reach a fixed target at batch size B follows S(B) = S_min (1 + B_crit / B).
Below B_crit, doubling B nearly halves S (perfect scaling); far above it, S approaches S_min and a larger
batch buys nothing (maximal data parallelism); in between returns diminish. We mark the regimes where S
is within 25% of an asymptote: B <= B_crit / 4 (S <= 1.25 S_min B_crit / B) and B >= 4 B_crit
(S <= 1.25 S_min). The fit minimises the squared error of log S; for a fixed B_crit the best log S_min
is the mean of log S_i - log(1 + B_crit / B_i), so only B_crit is searched (a log grid, then golden
section). B_simple = tr(Sigma) / |G|^2 is the trainer's online estimate of the gradient noise scale,
which McCandlish et al. show approximates B_crit.
"""
import argparse
import glob
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RANK_KEYS = {"ranks", "slurm.nodes", "slurm.tasks_per_node"}
DONE = {"completed", "reached-target", "diverged"}


# ----------------------------------------------------------------------------------------------------
# Loading
#
# Run records are read by dtbench itself (`dtbench table DIR --format json`: RunRecord's checks, the same reading
# as `dtbench table` and `dtbench reproduce`), so that a record the table calls unreadable is unreadable here too,
# and a figure is never drawn from a field that is missing, of the wrong type or out of range.

class BadInput(Exception):
    """Input at fault: exit 2, nothing written."""


DTBENCH = None  # the binary (find_dtbench)
UNREADABLE = []  # problems dtbench reported: exit 1 once the figures are written, as `dtbench table` does


def find_dtbench(given):
    """--dtbench, else $DTBENCH, else the newest build of this checkout, else dtbench on PATH."""
    if given or os.environ.get("DTBENCH"):
        path = given or os.environ["DTBENCH"]
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BadInput(f"{path}: not an executable dtbench binary (--dtbench, $DTBENCH)")
        return path
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    built = [p for p in glob.glob(os.path.join(root, "build", "*", "apps", "dtbench")) if os.access(p, os.X_OK)]
    if built:
        return max(built, key=os.path.getmtime)
    found = shutil.which("dtbench")
    if not found:
        raise BadInput("cannot find the dtbench binary: build it (README) or pass --dtbench PATH")
    return found


def _finite(text):
    """A JSON number as a float; one that overflows (1e400 reads as inf) is no value a figure can show."""
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is not a finite number")
    return x


def _read(path, what):
    """A JSON file of `what`, or BadInput naming the file."""
    try:
        with open(path) as f:
            return json.load(f, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")),
                             parse_float=_finite)
    except OSError as e:
        raise BadInput(f"{path}: cannot read the {what}: {e.strerror}")
    except ValueError as e:
        raise BadInput(f"{path}: not a valid {what}: {e}")


def load_runs(path):
    """Runs of a campaign folder (campaign.json), of any folder of records or of one record, as dtbench reads
    them: dicts with the record (None when missing or unreadable), the point's axis values, the run's config and
    rank count; and the axis keys and zipped groups."""
    p = subprocess.run([DTBENCH, "table", path, "--format", "json"], capture_output=True, text=True, errors="replace")
    if p.returncode == 2:
        raise BadInput(p.stderr.strip().replace("dtbench: error: ", "", 1))
    if p.returncode not in (0, 1) or not p.stdout:  # killed, or failed: not the input's fault
        sys.exit(f"plot.py: error: {DTBENCH} table {path} --format json exited {p.returncode}: {p.stderr.strip()}")
    try:
        data = json.loads(p.stdout)
        if not isinstance(data, dict) or data.get("kind") != "dtbench-campaign-data":
            raise ValueError("not dtbench's campaign data")
    except ValueError:
        raise BadInput(f"{DTBENCH} table {path} --format json printed no campaign data: is {DTBENCH} dtbench "
                       "(--dtbench, $DTBENCH)?")
    UNREADABLE.extend(data["unreadable"])
    runs = []
    for point in data["points"]:
        for r in point["runs"]:
            runs.append({"record": r["record"], "record_path": r["record_path"], "values": dict(point["values"]),
                         "config": r["config"],
                         "slurm": r["slurm"], "ranks": r["ranks"], "state": r["state"], "campaign": data["name"],
                         "global_batch": r["global_batch"], "per_rank_batch": r["per_rank_batch"]})
    return runs, data["keys"], data["zip_groups"]


def value_of(run, key):
    """A key's value for a run, as `dtbench table --group-by` takes it (analysis::key_value): the point's axis value,
    else ranks, status, global_batch or per_rank_batch, slurm.KEY from the point's Slurm section, or a dot path into
    the config; None when absent."""
    if key in run["values"]:
        return run["values"][key]
    rec = run["record"]
    if key == "ranks":
        return run["ranks"] or None
    if key == "status":
        return rec["status"] if rec else ("missing" if run["state"] == "missing" else None)
    if key in ("global_batch", "per_rank_batch"):
        # The table's (key_value: the record's, else the config's); a run made by hand has its record's.
        return run[key] if key in run else (rec[key] if rec else None)
    node, path = run["config"], key
    if key.startswith("slurm."):
        node, path = run["slurm"], key[len("slurm."):]
    for word in path.split("."):
        if not isinstance(node, dict) or word not in node:
            return None
        node = node[word]
    return node


def load_all(paths):
    seen = {}
    for p in paths:
        real = os.path.realpath(p)
        if real in seen:
            raise BadInput(f"{p}: given twice (also as {seen[real]}): its runs would count twice")
        seen[real] = p
    runs, keys, zips = [], [], []
    records = {}  # a record's text -> its file
    for p in paths:
        r, k, z = load_runs(p)
        # One run, one record, across the folders too, as `dtbench table` refuses within one: a copy of a folder given
        # beside it counted every run twice in each median.
        for run in r:
            if run["record"] is None:
                continue
            text = json.dumps(run["record"], sort_keys=True)
            if text in records:
                raise BadInput(f"{run['record_path']}: the same record as {records[text]} (run "
                               f"'{run['record'].get('name')}'); a run is counted once: give one of the copies")
            records[text] = run["record_path"]
        runs += r
        keys += [x for x in k if x not in keys]
        zips += z
    if not runs:
        raise BadInput("no run records in " + ", ".join(paths))
    return runs, keys, zips


def check_series(runs, wanted):
    for k in wanted:
        # Unreadable records hold no config to look in: the key may be theirs (they are named at the end).
        if all(value_of(r, k) is None for r in runs) and not any(r["state"] == "unreadable" for r in runs):
            raise BadInput(f"--series: no run has the key '{k}' (a config key such as reducer.name, or ranks)")


def series_keys(keys, zips, wanted, runs):
    """The keys that tell series apart: every axis key but the rank count's, and but a key zipped with it that moves
    with it (one value per rank count: strong scaling's per-rank batch). One that takes several values at one rank
    count (a thread count zipped beside it) is a setting of its own and a series key, as the table's scaling
    efficiency takes it (analysis/campaign_table.cpp): pooled, claim a's figure put K = 1's runs of 1 and of 2
    threads in one series and drew 100.6% at K = 2 where the table says 82.7% (found by a hunt)."""
    if wanted:
        return wanted
    drop = set(RANK_KEYS)
    for z in zips:
        if not set(RANK_KEYS) & set(z):
            continue
        for k in z:
            per_rank_count = {}
            for r in runs:
                per_rank_count.setdefault(r["ranks"], set()).add(json.dumps(value_of(r, k), sort_keys=True))
            if k in RANK_KEYS or all(len(v) == 1 for v in per_rank_count.values()):
                drop.add(k)
    return [k for k in keys if k not in drop]


def short_key(key):
    """reducer.name -> reducer, optimizer.lr -> lr, slurm.nodes -> nodes."""
    words = key.split(".")
    return words[-2] if words[-1] == "name" and len(words) > 1 else words[-1]


def group_series(runs, skeys):
    """Runs by series: {sort key: (label, [runs])}, in numeric order of the values; keys whose value
    is the same in every series are left out of the labels."""
    varying = [k for k in skeys if len({json.dumps(value_of(r, k)) for r in runs}) > 1]
    groups = {}
    for r in runs:
        vals = [value_of(r, k) for k in varying]
        order = tuple((0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, json.dumps(v))
                      for v in vals)
        label = ", ".join(f"{short_key(k)}={_value_text(v)}" for k, v in zip(varying, vals)) or "all runs"
        groups.setdefault(order, (label, []))[1].append(r)
    return [groups[k] for k in sorted(groups)]


def _value_text(v):
    """A key's value as the table's key cells show it (analysis/text_table.cpp): a section given whole as its name
    and its other fields, "lamb lr=0.005" (its name alone gave lamb at lr 0.005 and at 0.02 one label; a hunt)."""
    if isinstance(v, dict) and isinstance(v.get("name"), str):
        return " ".join([v["name"]] + [f"{k}={_value_text(x)}" for k, x in v.items() if k != "name"])
    return v if isinstance(v, str) else json.dumps(v)


def series_style(i):
    """Series i's colour and marker: ten colours, then the next marker, so that series 0 and 10 differ (with one
    marker, 16 series drew two as the same blue line; a hunt)."""
    return f"C{i % 10}", "osD^v<>ph*"[(i // 10) % 10]


def done(runs):
    """The finished runs, as the table counts them (state "done"): not a run stopped early by --stop-at, whose record
    says completed (the figure's range took such a run's throughput where the table left it out; a hunt)."""
    return [r for r in runs if r["record"] and r["state"] == "done" and r["record"]["status"] in DONE]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


PENDING = []  # (figure, folder, name): written only once every figure has been drawn (write_all)


def save(fig, out, name):
    """Keeps the figure; write_all writes it, so that input found bad while drawing a later figure leaves no
    file written."""
    PENDING.append((fig, out, name))


def write_all():
    for fig, out, name in PENDING:
        # The folder, or the nearest name above it that exists, must be a folder (a file there is the input's
        # fault: exit 2, as dtbench's own --out).
        at = os.path.abspath(out)
        while not os.path.lexists(at) and os.path.dirname(at) != at:
            at = os.path.dirname(at)
        if not os.path.isdir(at):
            raise BadInput(f"--out {out}: " + ("not a folder" if at == os.path.abspath(out) else f"{at} is not a folder"))
        # A folder (or a link to one, a FIFO) where a figure goes failed after the other figures were written.
        for ext in ("png", "svg"):
            p = os.path.join(out, f"{name}.{ext}")
            if os.path.lexists(p) and (os.path.isdir(p) or not os.path.isfile(p)):
                raise BadInput(f"{p}: not a file; the figure {name}.{ext} goes there")
    # Every figure rendered in memory first: values a record may hold but no axis can show (1e308 seconds, a label
    # of 100000 characters) fail in matplotlib's drawing, which must leave no file and no folder behind.
    rendered = []
    for fig, out, name in PENDING:
        images = {}
        for ext in ("png", "svg"):
            buf = io.BytesIO()
            try:
                fig.savefig(buf, format=ext, dpi=120, bbox_inches="tight")
            except (ValueError, OverflowError, IndexError, TypeError) as e:
                raise BadInput(f"figure {name}: the inputs hold values no plot can draw ({type(e).__name__}: "
                               f"{str(e)[:200]})")
            images[ext] = buf.getvalue()
        rendered.append((fig, out, name, images))
    written = []
    for fig, out, name, images in rendered:
        try:
            os.makedirs(out, exist_ok=True)
            paths = []
            for ext, data in images.items():
                p = os.path.join(out, f"{name}.{ext}")
                tmp = f"{p}.tmp{os.getpid()}"  # whole or not at all: a reader never sees half a figure
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, p)
                paths.append(p)
        except OSError as e:
            sys.exit(f"plot.py: error: cannot write {e.filename or out}: {e.strerror}")  # exit 1: a run failure
        plt.close(fig)
        print("wrote", " ".join(paths))
        written += paths
    PENDING.clear()
    return written


def caption(ax, text):
    ax.text(0.0, -0.16, text, transform=ax.transAxes, fontsize=8, va="top", wrap=True)


# ----------------------------------------------------------------------------------------------------
# Throughput and scaling efficiency against K

def scaling(runs, keys, zips, out, wanted=None):
    skeys = series_keys(keys, zips, wanted, runs)
    groups = []
    for label, members in group_series(runs, skeys):
        byk = {}
        for r in done(members):
            # A run that took no step (diverged at its first) measured no throughput, as in the table.
            if (r["record"]["throughput"]["images_per_second"] or 0) > 0:
                byk.setdefault(r["record"]["ranks"], []).append(r["record"])
        # The baseline is the series' smallest rank count, finished or not (as the table's, campaign_table.cpp): with
        # every run there failed it moved to the next one unsaid (a hunt); the series then has no computed efficiency.
        k_all = [r["ranks"] for r in members if r["ranks"]]
        if byk:
            groups.append((label, byk, min(k_all) if k_all else min(byk)))
    if len({k for _, byk, _ in groups for k in byk}) < 2:
        print("scaling: completed runs at fewer than two rank counts; skipped")
        return []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    allk = sorted({k for _, byk, _ in groups for k in byk})
    any_efficiency = False
    for i, (label, byk, k_base) in enumerate(groups):
        ks = sorted(byk)
        thr = [[x["throughput"]["images_per_second"] for x in byk[k]] for k in ks]
        med = [median(t) for t in thr]
        lo = [m - min(t) for m, t in zip(med, thr)]
        hi = [max(t) - m for m, t in zip(med, thr)]
        color, marker = series_style(i)
        ax1.errorbar(ks, med, yerr=[lo, hi], marker=marker, capsize=3, color=color, label=label)
        ax1.plot(ks, [med[0] * k / ks[0] for k in ks], ls="--", color=color, alpha=0.6, lw=1)
        # Computed against K0 = k_base when it finished, and only with another rank count to compare (the table's "-").
        k0, t0 = k_base, med[0] if ks[0] == k_base and len(ks) > 1 else 0.0
        eff = []
        for k, m, recs in zip(ks, med, [byk[k] for k in ks]):
            # Only a number counts, as in `dtbench table` (campaign_table.cpp): a record may hold null there,
            # which is no value and falls back to the computed efficiency like an absent one.
            own = [e for e in (x.get("extra", {}).get("scaling_efficiency") for x in recs)
                   if isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e)]
            # No throughput at the smallest K (a record of 0 images/s): no efficiency against it.
            eff.append(100 * median(own) if own else 100 * (m / k) / (t0 / k0) if t0 > 0 else float("nan"))
        any_efficiency = any_efficiency or any(math.isfinite(e) for e in eff)
        ax2.plot(ks, eff, marker=marker, color=color, label=label)
    if not any_efficiency:
        # Two rank counts over all, one per series: no efficiency to draw, and a log axis with no data had no limits
        # (matplotlib's "Data has no positive values" lost every figure of the call; a hunt).
        ax2.text(0.5, 0.5, "no series has two rank counts: no efficiency", transform=ax2.transAxes, ha="center",
                 va="center", color="gray")
    ax1.plot([], [], ls="--", color="gray", label="ideal: linear in K")
    ax2.axhline(100, ls="--", color="gray", label="ideal: 100%")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlim(allk[0] / 1.25, allk[-1] * 1.25)
        ax.set_xticks(allk)
        ax.set_xticklabels([str(k) for k in allk])
        ax.set_xlabel("ranks K (data-parallel workers)")
        ax.grid(alpha=0.3)
    # Inside the panels while few; beside them when many, where 18 series hid the data and the axis label (a hunt).
    if len(groups) <= 6:
        for ax in (ax1, ax2):
            ax.legend(fontsize=8)
    else:
        ax1.plot([], [], ls="--", color="gray", label="ideal: 100% (right)")
        handles, labels = ax1.get_legend_handles_labels()
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, title="configuration")
    ax1.set_yscale("log")
    ax1.set_ylabel("throughput (images/s, median; bars: min-max)")
    ax1.set_title("Training throughput against K")
    ax2.set_ylabel("scaling efficiency (%)")
    ax2.set_ylim(bottom=0)
    ax2.set_title("Scaling efficiency against K")
    caption(ax1, "Dashed: ideal scaling from the smallest K of each series. Efficiency = (X_K / K) / (X_K0 / K0) "
                 "of median throughputs X, or the record's /extra/scaling_efficiency.")
    return save(fig, out, "scaling")


# ----------------------------------------------------------------------------------------------------
# Accuracy against wall time and against epochs

def curves(runs, keys, zips, out, wanted=None):
    skeys = wanted or keys
    groups = [(label, [r["record"] for r in members])
              for label, members in group_series([r for r in done(runs) if r["record"]["curve"]], skeys)]
    if not groups:
        print("curves: no completed runs with evaluations; skipped")
        return []
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    targets = set()
    for i, (label, recs) in enumerate(groups):
        color, marker = series_style(i)
        for j, rec in enumerate(recs):
            c = rec["curve"]
            acc = [100 * p["test_accuracy"] for p in c]
            kw = dict(color=color, marker=marker, markersize=4, lw=1.2, alpha=0.9 if j == 0 else 0.45, label=label if j == 0 else None)
            ax1.plot([p["wall_seconds"] for p in c], acc, **kw)
            ax2.plot([p["epoch"] for p in c], acc, **kw)
            t = rec["time_to_accuracy"]["target"]
            if t > 0:
                targets.add(t)
    for ax in (ax1, ax2):
        for t in sorted(targets):
            ax.axhline(100 * t, ls=":", color="black", lw=1)
        ax.set_ylabel("test accuracy (%)")
        ax.grid(alpha=0.3)
    if targets:
        ax1.plot([], [], ls=":", color="black", label="target accuracy")
    # One legend for both panels, beside them, so it never hides a curve.
    handles, labels = ax1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, title="configuration")
    ax1.set_xlabel("wall-clock time (s)")
    ax1.set_title("Test accuracy against wall time")
    ax2.set_xlabel("epochs (passes over the training set)")
    ax2.set_title("Test accuracy against epochs")
    caption(ax1, "One colour per configuration; repeats (other seeds) in the same colour, lighter.")
    return save(fig, out, "accuracy")


# ----------------------------------------------------------------------------------------------------
# Steps to target against batch size: S(B) = S_min (1 + B_crit / B)

def fit_critical_batch(batches, steps):
    """S(B) = S_min (1 + B_crit / B) = a + c / B by least squares on relative error (weights 1/S^2, closed form):
    the estimator of the critical-batch criterion (reproduce/criteria/critical_batch.cpp), so that the figure and
    the claim report give the same S_min and B_crit. Returns (S_min, B_crit, rms of log S); ValueError when fewer
    than two batch sizes, a singular system, or a fit without S_min > 0 (B_crit >= 0 is a constraint: a curve that
    the free fit gives B_crit < 0 is fitted on its bound, 0)."""
    pts = [(float(b), float(s)) for b, s in zip(batches, steps) if b > 0 and s > 0]
    if len({b for b, _ in pts}) < 2:
        raise ValueError("the fit needs steps at two or more batch sizes")
    m11 = m12 = m22 = r1 = r2 = 0.0
    for b, s in pts:
        x1, x2 = 1 / s, 1 / (b * s)  # the row of (a, c) for the target 1 = (a + c / B) / S
        m11, m12, m22, r1, r2 = m11 + x1 * x1, m12 + x1 * x2, m22 + x2 * x2, r1 + x1, r2 + x2
    det = m11 * m22 - m12 * m12
    if abs(det) <= 1e-300:
        raise ValueError("the fit's system is singular")
    a, c = (r1 * m22 - r2 * m12) / det, (m11 * r2 - m12 * r1) / det
    if c < 0:  # B_crit >= 0: the constrained optimum lies on c = 0 (as critical_batch.cpp; a flat curve was "no fit")
        a, c = r1 / m11, 0.0
    if not a > 0:
        raise ValueError(f"no fit with S_min > 0 and B_crit >= 0 (S = {a:.4g} + {c:.4g} / B)")
    err = sum((math.log(s) - math.log(a + c / b)) ** 2 for b, s in pts)
    return a, c / a, math.sqrt(err / len(pts))


def best_steps(runs, min_seeds=1):
    """S(B) as the critical-batch criterion takes it (reproduce/criteria/critical_batch.cpp): per metaparameter point
    (a campaign's point: its campaign and axis values; in a folder of records, the records whose varying config keys
    agree), the median over its finished seeds of the steps to the target, when every one reached it and there are
    at least `min_seeds` (claim d's criterion takes 3); per batch the smallest such median, the best metaparameters'.
    Returns ({batch: that point's steps}, [each best point's median last B_simple], target). (Every run at a batch
    was pooled before, every learning rate of the grid together: another curve than the report's.)"""
    points, target = {}, None
    for r in done(runs):
        rec = r["record"]
        tta = rec["time_to_accuracy"]
        if tta["target"] > 0:
            target = tta["target"]
        p = points.setdefault((r.get("campaign"), json.dumps(r["values"], sort_keys=True), rec["global_batch"]),
                              {"steps": [], "all": True, "bsimple": []})
        if tta.get("reached"):
            p["steps"].append(tta["step"])
        else:
            p["all"] = False
        bs = [q["b_simple"] for q in rec["curve"] if q.get("b_simple") is not None]
        if bs:
            p["bsimple"].append(bs[-1])
    best = {}
    for (_, _, b), p in points.items():
        if p["all"] and len(p["steps"]) >= max(1, min_seeds) and \
                (b not in best or median(p["steps"]) < median(best[b]["steps"])):
            best[b] = p
    return ({b: p["steps"] for b, p in best.items()}, [median(p["bsimple"]) for p in best.values() if p["bsimple"]],
            target)


def batch(runs, keys, zips, out, wanted=None, min_seeds=1):
    by_b, bsimple, target = best_steps(runs, min_seeds)
    if len(by_b) < 2:
        print("batch: runs reached the target at fewer than two batch sizes; skipped")
        return []
    bsizes = sorted(by_b)
    med = [median(by_b[b]) for b in bsizes]
    try:
        smin, bcrit, rms = fit_critical_batch(bsizes, med)
    except ValueError as e:
        print(f"batch: no S(B) fit ({e}); skipped")
        return []
    fig, ax = plt.subplots(figsize=(7.5, 5))
    # The median over the best points as the criterion takes it (critical_batch.cpp), so the label is the report's
    # number. B_simple's trace is a difference of two noisy terms, so it can be <= 0 early in training (the records
    # and `dtbench table` keep it): such a median has no place on a log axis and is left out, with a note.
    b_est = median(bsimple) if bsimple else None
    b_note = ""
    if b_est is not None and not b_est > 0:
        b_note = f"\nB_simple (online estimate, median) = {b_est:.0f} is not positive: not drawn on the log axis."
        print(f"batch: B_simple (median) = {b_est:g} is not positive; left out of the figure")
        b_est = None
    shown = bsizes + ([b_est] if b_est else [])
    xmin, xmax = min(shown) / 2, max(shown) * 2
    ax.axvspan(xmin, min(bcrit / 4, xmax), color="tab:green", alpha=0.08, lw=0)
    ax.axvspan(max(bcrit / 4, xmin), min(4 * bcrit, xmax), color="tab:orange", alpha=0.08, lw=0)
    ax.axvspan(max(4 * bcrit, xmin), xmax, color="tab:red", alpha=0.08, lw=0)
    for x0, x1, name in ((xmin, bcrit / 4, "perfect scaling"), (bcrit / 4, 4 * bcrit, "diminishing returns"),
                         (4 * bcrit, xmax, "maximal data\nparallelism")):
        a, b = max(x0, xmin), min(x1, xmax)
        if b > a:
            narrow = math.log2(b / a) < 1.8  # too narrow for the words across: write them upwards
            ax.text(math.sqrt(a * b), 0.97, name.replace("\n", " ") if narrow else name,
                    transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=8, color="dimgray",
                    rotation=90 if narrow else 0)
    for b in bsizes:
        ax.scatter([b] * len(by_b[b]), by_b[b], color="tab:blue", alpha=0.35, s=14)
    ax.plot(bsizes, med, "o", color="tab:blue", label="measured (median over seeds)")
    xs = [xmin * (xmax / xmin) ** (i / 200) for i in range(201)]
    ax.plot(xs, [smin * (1 + bcrit / x) for x in xs], "-", color="black",
            label=f"fit S(B) = S_min (1 + B_crit/B): S_min = {smin:.0f}, B_crit = {bcrit:.0f}")
    ax.plot(xs, [smin * bcrit / x for x in xs], ":", color="gray", lw=1, label="asymptotes S_min B_crit / B and S_min")
    ax.axhline(smin, ls=":", color="gray", lw=1)
    if xmin <= bcrit <= xmax:
        ax.axvline(bcrit, ls="--", color="black", lw=1)
        ax.text(bcrit * 1.05, 0.86, "B_crit", transform=ax.get_xaxis_transform(), fontsize=8)
    if b_est:
        ax.axvline(b_est, ls="-.", color="tab:purple", lw=1.5, label=f"B_simple (online estimate, median) = {b_est:.0f}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ax.set_xlabel("global batch size B (samples per step)")
    ax.set_ylabel("steps to reach the target accuracy")
    ax.set_title("Steps to target against batch size" + (f" (target {100 * target:.0f}% test accuracy)" if target else ""))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower left")
    caption(ax, f"Regimes (Shallue et al. 2018) split where S is within 25% of an asymptote: B_crit/4 and 4 B_crit. "
                f"Fit rms error of log S: {rms:.3f}." + b_note)
    return save(fig, out, "critical_batch")


# ----------------------------------------------------------------------------------------------------
# Allreduce bus bandwidth against message size

def _number(row, key, where, minimum=0.0, integer=False, maximum=1e300):
    v = row.get(key)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and minimum <= v <= maximum
    if not ok or (integer and not float(v).is_integer()):
        kind = "an integer" if integer else "a number"
        raise BadInput(f"{where}/{key}: expected {kind} in [{minimum:g}, {maximum:g}], got {json.dumps(v)}")
    return v


def busbw(files, out):
    series, ranks = {}, set()  # (reducer, K) -> [(bytes, busbw, wrong)]
    for f in files:
        doc = _read(f, "allreduce sweep (dtbench allreduce --json)")
        rows, at = (doc.get("rows"), "/rows") if isinstance(doc, dict) else (doc, "")
        if rows is None and isinstance(doc, dict):
            rows, at = next(((v["rows"], f"/{k}/rows") for k, v in doc.items() if isinstance(v, dict) and "rows" in v),
                            (None, ""))
        if not isinstance(rows, list) or not rows:
            raise BadInput(f"{f}: no 'rows' of an allreduce sweep (dtbench allreduce --json)")
        for i, row in enumerate(rows):
            where = f"{f}: {at}/{i}"
            if not isinstance(row, dict):
                raise BadInput(f"{where}: expected an object, got {json.dumps(row)[:40]}")
            if not isinstance(row.get("reducer"), str) or not row["reducer"]:
                raise BadInput(f"{where}/reducer: expected a reducer name, got {json.dumps(row.get('reducer'))}")
            size = _number(row, "bytes" if "bytes" in row else "size", where, 1, integer=True, maximum=2 ** 40)
            bw = _number(row, "busbw_gbps" if "busbw_gbps" in row or "busbw" not in row else "busbw", where)
            # null: not checked (dtbench allreduce -c 0), as its table's N/A
            wrong = _number(row, "wrong", where, integer=True) if row.get("wrong") is not None else 0
            k = row.get("ranks", doc.get("ranks") if isinstance(doc, dict) else None)
            if k is not None:
                k = _number({"ranks": k}, "ranks", where, 1, integer=True)
            ranks.add(k)
            series.setdefault((row["reducer"], k), []).append((size, bw, wrong))
    # One colour per reducer, one line style per rank count.
    reducers = sorted({r for r, _ in series})
    ks = sorted((k for k in ranks if k is not None))
    styles = ["-", "--", ":", "-."]
    fig, ax = plt.subplots(figsize=(8, 5))
    repeated = False
    for (reducer, k), pts in sorted(series.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        pts.sort()
        color = f"C{reducers.index(reducer) % 10}"
        style = styles[ks.index(k) % len(styles)] if k in ks else "-"
        # Repeated sweeps of one rank count (rounds r1..r5, as `dtbench model` takes them): one line through each
        # size's median with the rounds' range as a band; joined point by point they drew a sawtooth (a hunt).
        by_size = {}
        for size, bw, _ in pts:
            by_size.setdefault(size, []).append(bw)
        sizes = sorted(by_size)
        repeated = repeated or any(len(v) > 1 for v in by_size.values())
        ax.plot(sizes, [median(by_size[s]) for s in sizes], marker="o", ms=3, color=color, ls=style,
                label=reducer + (f" (K={k})" if k is not None else ""))
        if any(len(v) > 1 for v in by_size.values()):
            ax.fill_between(sizes, [min(by_size[s]) for s in sizes], [max(by_size[s]) for s in sizes], color=color,
                            alpha=0.15, lw=0)
        bad = [p for p in pts if p[2]]
        if bad:
            ax.plot([p[0] for p in bad], [p[1] for p in bad], "x", color="red", ms=8)
    if any(p[2] for pts in series.values() for p in pts):
        ax.plot([], [], "x", color="red", label="wrong results (#wrong > 0)")
    if repeated:
        ax.fill_between([], [], [], color="gray", alpha=0.15, lw=0, label="repeated sweeps: median, band min-max")
    ax.set_xscale("log", base=2)
    ticks = sorted({p[0] for pts in series.values() for p in pts})
    every = max(1, math.ceil(len(ticks) / 7))
    ax.set_xticks(ticks[::every])
    ax.set_xticklabels([_bytes(t) for t in ticks[::every]])
    ax.set_xlabel("message size (bytes per rank)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("Allreduce bus bandwidth against message size" + (f", K = {', '.join(map(str, ks))}" if ks else ""))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    caption(ax, "busbw = (size / time) x 2(K-1)/K (nccl-tests' convention): comparable across K and algorithms. "
                "Line style: rank count K.")
    return save(fig, out, "busbw")


def _bytes(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


# ----------------------------------------------------------------------------------------------------
# The figures of a reproduction report (dtbench reproduce): the numbers come from report.json, which the
# C++ criteria computed; nothing is fitted or recomputed here.

def _claim_accuracy(ax, fig_data):
    for s in fig_data["series"]:
        lo = [m - a for m, a in zip(s["median"], s["min"])]
        hi = [b - m for m, b in zip(s["median"], s["max"])]
        ax.errorbar(s["batch"], s["median"], yerr=[lo, hi], marker="o", capsize=3, label=s["label"])
    if "target" in fig_data:
        ax.axhline(fig_data["target"], color="grey", ls="--", lw=1, label=f"target {fig_data['target']}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("global batch")
    ax.set_ylabel(fig_data.get("y", "final test accuracy"))
    ax.legend(fontsize=8)


def _claim_steps(ax, d):
    b = d["batch"]
    lo = [m - a for m, a in zip(d["median"], d["min"])]
    hi = [x - m for m, x in zip(d["median"], d["max"])]
    ax.errorbar(b, d["median"], yerr=[lo, hi], marker="o", ls="none", capsize=3, label="steps to target (median, range)")
    if "b_crit" in d:
        s_min, b_crit = d["s_min"], d["b_crit"]
        xs = [min(b) * (max(b) / min(b)) ** (i / 100) for i in range(101)]
        ax.plot(xs, [s_min * (1 + b_crit / x) for x in xs], "-", label=f"S_min (1 + B_crit/B), B_crit = {b_crit:.0f}")
        ax.axvspan(min(b) / 2, b_crit / 4, color="tab:green", alpha=0.08, label="perfect scaling")
        ax.axvspan(4 * b_crit, max(b) * 2, color="tab:red", alpha=0.08, label="no further gain")
        ax.axvline(b_crit, color="grey", ls=":", lw=1, label="B_crit")
    bs = [(x, y) for x, y in zip(b, d.get("b_simple", [])) if y is not None]
    if bs and median([y for _, y in bs]) > 0:  # <= 0 (a noisy early estimate) has no place on the log axis
        ax.axvline(median([y for _, y in bs]), color="tab:purple", ls="--", lw=1, label="B_simple (median)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(min(b) / 1.5, max(b) * 1.5)
    ax.set_xlabel("global batch B")
    ax.set_ylabel("steps to target")
    ax.legend(fontsize=7)


def _claim_bytes(ax, d):
    for s in d["series"]:
        ax.plot(s["ranks"], s["measured"], marker="o", ls="none", label=f"{s['label']} (counted)")
        ax.plot(s["ranks"], s["expected"], "-", lw=1, label=f"{s['label']} (closed form)")
    ax.set_xlabel("ranks K")
    ax.set_ylabel(d.get("y", "bytes sent per allreduce"))
    ax.set_yscale("log")
    ax.legend(fontsize=7)


def _claim_crossover(ax, d):
    for s in d["series"]:
        pts = [(b, t) for b, t in zip(s["per_node_batch"], s["comm_seconds"]) if t > 0]  # one node: no allreduce
        line, = ax.plot([b for b, _ in pts], [t for _, t in pts], marker=".", label=f"{s['label']}: allreduce")
        if s.get("crossover"):
            ax.axvline(s["crossover"], color=line.get_color(), ls=":", lw=1)
    b = d["series"][0]["per_node_batch"] if d["series"] else []
    if b and "compute_seconds" in d:
        ax.plot(b, d["compute_seconds"], "k--", lw=1.5, label=d.get("compute_label", "compute per step"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"per-node batch b (global {d.get('global_batch', '?')}, N = global / b nodes)")
    ax.set_ylabel("seconds per step")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))  # beside: inside, it hid a crossover (a hunt)


CLAIM_FIGURES = {"accuracy_vs_batch": _claim_accuracy, "steps_vs_batch": _claim_steps,
                 "bytes_per_rank": _claim_bytes, "crossover": _claim_crossover}


def claims(report_dir, out=None):
    path = os.path.join(report_dir, "report.json")
    report = _read(path, "reproduction report (dtbench reproduce)")
    if not isinstance(report, dict) or not isinstance(report.get("claims"), list):
        raise BadInput(f"{path}: /claims: expected the list of claims of a dtbench reproduce report")
    out = out or os.path.join(report_dir, "figures")
    for i, c in enumerate(report["claims"]):
        # The id names the figure's files: a plain folder name, as dtbench reproduce checks its claim ids (an id of
        # "../../x" wrote outside --out, one with "/" failed after other figures were written).
        cid = c.get("id") if isinstance(c, dict) else None
        if not isinstance(cid, str) or cid in (".", "..") or not re.fullmatch(r"[A-Za-z0-9._-]+", cid):
            raise BadInput(f"{path}: /claims/{i}/id: expected a claim id (letters, digits, '.', '_', '-'), got "
                           f"{json.dumps(cid)[:80]}")
        # report.json is dtbench's own output: a field of the wrong shape means another writer or damage, named
        # here by the claim (nothing is written: save() only keeps the figure).
        try:
            d = c.get("figure")
            if not d or not (d.get("series") or d.get("batch")):
                continue  # a claim without data has no figure (the report says why)
            if d.get("kind") not in CLAIM_FIGURES:
                raise BadInput(f"{path}: /claims/{i}/figure/kind: expected one of {', '.join(CLAIM_FIGURES)}, "
                               f"got {json.dumps(d.get('kind'))}")
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            CLAIM_FIGURES[d["kind"]](ax, d)
            ax.set_title(f"claim {c['id']}: {c['verdict']}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            save(fig, out, str(c["id"]))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError, OverflowError) as e:
            raise BadInput(f"{path}: /claims/{i}: not a figure this script can draw ({type(e).__name__}: {e})")


# ----------------------------------------------------------------------------------------------------
# Population-based training

def pbt_ancestry(lineage, member):
    """The MemberInterval dicts whose runs trained member's final weights, first interval first (the same rule
    as core/pbt_lineage.cpp's Lineage::ancestry: follow init_from back)."""
    ivs = lineage["intervals"]
    at = ivs[-1]["members"][member]
    chain = [at]
    for i in range(len(ivs) - 1, 0, -1):
        if not at["init_from"]:
            break  # a random-search member that diverged earlier: no run since
        at = next(m for m in ivs[i - 1]["members"] if m["run"] == at["init_from"])
        chain.insert(0, at)
    return chain


def pbt(dirs, out):
    for d in dirs:
        # dtbench reads the lineage (core/pbt_lineage.cpp's checks) and the member records before anything is drawn.
        p = subprocess.run([DTBENCH, "table", d], capture_output=True, text=True, errors="replace")
        if p.returncode != 0 or not os.path.isfile(os.path.join(d, "lineage.json")):
            raise BadInput(p.stderr.strip().replace("dtbench: error: ", "", 1) or
                           f"{d}: not a dtbench pbt folder (no lineage.json)")
        lineage = _read(os.path.join(d, "lineage.json"), "pbt lineage")
        records = {}
        if os.path.isdir(os.path.join(d, "runs")) and any(n.endswith(".json") for n in os.listdir(os.path.join(d, "runs"))):
            runs, _, _ = load_runs(os.path.join(d, "runs"))
            records = {r["record"]["name"]: r["record"] for r in runs if r["record"]}
        ivs = lineage["intervals"]
        if not ivs or "best" not in lineage:
            print(f"pbt: {d} has no evaluated interval; skipped")
            continue
        keys = list(ivs[0]["members"][0]["hyperparameters"])
        fig, axes = plt.subplots(1, 1 + len(keys), figsize=(5.2 * (1 + len(keys)), 4.2))
        ax = axes[0]
        best = lineage["best"]["member"]
        for m in ivs[-1]["members"]:
            rec = records.get(m["run"]) if m["status"] == "completed" else None
            if not rec:
                continue
            steps = [p["step"] for p in rec["curve"]]
            acc = [p["test_accuracy"] for p in rec["curve"]]
            ax.plot(steps, acc, lw=2.2 if m["member"] == best else 0.9, alpha=1.0 if m["member"] == best else 0.6,
                    label=f"member {m['member']}" + (" (best)" if m["member"] == best else ""))
        for iv in ivs[:-1]:
            ax.axvline(iv["end_step"], color="grey", lw=0.5, alpha=0.4)
        ax.set_xlabel("step")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{lineage['name']}: {lineage['mode']}, {lineage['population']} members", fontsize=10)
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
        chain = pbt_ancestry(lineage, best)
        for k, axk in zip(keys, axes[1:]):
            xs, ys = [], []
            for iv, m in zip(ivs, chain):
                xs += [iv["start_step"], iv["end_step"]]
                ys += [m["hyperparameters"][k]] * 2
            axk.plot(xs, ys, color="C3")
            if k.endswith("lr") or k.endswith("weight_decay"):
                axk.set_yscale("log")
            axk.set_xlabel("step")
            axk.set_ylabel(k)
            axk.set_title(f"best member {best}: {short_key(k)}", fontsize=10)
            axk.grid(True, which="both", alpha=0.3)
        caption(ax, "grey lines: ready points; the best member's curve and schedule follow its ancestry "
                    "(whose checkpoint it continued at each ready point)")
        save(fig, out, "pbt-" + os.path.basename(os.path.normpath(d)))


def main(argv=None):
    global DTBENCH
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["scaling", "curves", "batch", "busbw", "all", "claims", "pbt"])
    ap.add_argument("inputs", nargs="+", help="campaign folders (or record folders); allreduce JSON for busbw")
    ap.add_argument("--out", help="folder for the PNG and SVG files (claims: default REPORT_DIR/figures)")
    ap.add_argument("--series", help="comma-separated keys that name a series (default: the sweep's axes)")
    ap.add_argument("--allreduce", action="append", default=[], help="with 'all': dtbench allreduce --json output")
    ap.add_argument("--min-seeds", type=int, default=1,
                    help="batch: a metaparameter point counts with at least this many finished seeds, all at the "
                         "target (default 1; claim d's criterion takes 3)")
    ap.add_argument("--dtbench", help="the dtbench binary that reads the records (default: $DTBENCH, the newest "
                                      "build/*/apps/dtbench of this checkout, or dtbench on PATH)")
    a = ap.parse_args(argv)
    wanted = a.series.split(",") if a.series else None
    if a.what not in ("claims",) and not a.out:
        ap.error("--out is required")
    try:
        if a.what == "claims":
            claims(a.inputs[0], a.out)
        elif a.what == "busbw":
            busbw(a.inputs, a.out)
        else:
            DTBENCH = find_dtbench(a.dtbench)
            if a.what == "pbt":
                pbt(a.inputs, a.out)
            else:
                runs, keys, zips = load_all(a.inputs)
                if wanted:
                    check_series(runs, wanted)
                if a.what in ("scaling", "all"):
                    scaling(runs, keys, zips, a.out, wanted)
                if a.what in ("curves", "all"):
                    curves(runs, keys, zips, a.out, wanted)
                if a.what in ("batch", "all"):
                    batch(runs, keys, zips, a.out, wanted, a.min_seeds)
                if a.what == "all" and a.allreduce:
                    busbw(a.allreduce, a.out)
        nothing_drawn = a.what in ("scaling", "curves", "batch", "all") and not PENDING
        write_all()
    except BadInput as e:
        for fig, _, _ in PENDING:
            plt.close(fig)
        PENDING.clear()
        print(f"plot.py: error: {e}", file=sys.stderr)
        sys.exit(2)
    if UNREADABLE:
        # As `dtbench table`: the figures are written from the records that could be read; exit 1 so that no
        # script takes them for a complete result.
        print(f"plot.py: {len(UNREADABLE)} run records could not be read; the figures leave them out:", file=sys.stderr)
        for u in UNREADABLE:
            print("  " + u, file=sys.stderr)
        sys.exit(1)
    if nothing_drawn:
        # Every kind asked for was skipped (each said why above): as `dtbench table --rcps` with no point, exit 1, so
        # that no script takes an empty figure folder for a result.
        print(f"plot.py: {a.what}: no figure drawn from {', '.join(a.inputs)}: no kind had the runs it needs",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
