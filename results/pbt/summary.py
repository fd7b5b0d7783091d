#!/usr/bin/python3
"""The PBT-against-random-search table of BENCHMARKS.md from the campaign folders' lineage files.

    /usr/bin/python3 results/pbt/summary.py results/pbt [--target 0.87]

Per campaign (pbt-seedS, random-seedS): the best member's test accuracy at the last ready point, the median
over the members, and the time to the target: the first ready point at which some member's test accuracy
reached it, in steps per member (every member trains in lock step, so the population's compute is this times
the population). Then the median over seeds per mode.
"""
import argparse
import glob
import json
import os
import statistics


def campaign(path, target):
    l = json.load(open(os.path.join(path, "lineage.json")))
    last = l["intervals"][-1]["members"]
    accs = [m["test_accuracy"] for m in last if m["test_accuracy"] is not None]
    ttt = None
    for iv in l["intervals"]:
        if any(m["test_accuracy"] is not None and m["test_accuracy"] >= target for m in iv["members"]):
            ttt = iv["end_step"]
            break
    events = [e["kind"] for iv in l["intervals"] for e in iv["events"]]
    diverged = sum(m["status"] == "diverged" and m["run"] for iv in l["intervals"] for m in iv["members"])
    return {"name": os.path.basename(path), "mode": l["mode"], "seed": l["seed"], "best": l["best"]["test_accuracy"],
            "median": statistics.median(accs), "ttt": ttt, "population": l["population"],
            "exploits": sum(k != "replace_failed" for k in events), "diverged": diverged,
            "total": l["total_steps"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--target", type=float, default=0.87)
    a = ap.parse_args()
    rows = [campaign(d, a.target) for d in sorted(glob.glob(os.path.join(a.folder, "*-seed*"))) if os.path.isdir(d)]
    print(f"| campaign | mode | seed | best final accuracy | median member | steps to {a.target:.0%} (per member) | "
          "replacements | diverged runs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        t = str(r["ttt"]) if r["ttt"] is not None else f"not in {r['total']}"
        print(f"| {r['name']} | {r['mode']} | {r['seed']} | {r['best']:.4f} | {r['median']:.4f} | {t} | "
              f"{r['exploits']} | {r['diverged']} |")
    print()
    print(f"| mode | campaigns | median best final accuracy | median steps to {a.target:.0%} | reached |")
    print("| --- | --- | --- | --- | --- |")
    for mode in ("pbt", "random_search"):
        rs = [r for r in rows if r["mode"] == mode]
        if not rs:
            continue
        reached = [r["ttt"] for r in rs if r["ttt"] is not None]
        med = statistics.median(reached) if len(reached) == len(rs) else "-"
        print(f"| {mode} | {len(rs)} | {statistics.median(r['best'] for r in rs):.4f} | {med} | "
              f"{len(reached)} of {len(rs)} |")


if __name__ == "__main__":
    main()
