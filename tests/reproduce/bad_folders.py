#!/usr/bin/python3
"""`dtbench reproduce --local` with an --out folder that cannot take the claims' files, or that holds what an earlier
run left damaged: exit 2 naming the file, with nothing written. Each case wrote reproduce.json and the claims' files
first (and the first two ended as an internal error, exit 1). And the sweep and reproduce folders exclude each other.

Usage: bad_folders.py DTBENCH WORKDIR
"""
import os
import shutil
import subprocess
import sys

dtbench, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def listing(d):
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs + [])


def refused(name, claim, prepare, message):
    d = os.path.join(work, name)
    os.makedirs(d)
    prepare(d)
    before = listing(d)
    p = subprocess.run([dtbench, "reproduce", claim, "--out", d, "--local"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (name, p.returncode, p.stdout[-300:], p.stderr[-500:])
    assert message in p.stderr and p.stderr.count("dtbench: error") == 1, (name, message, p.stderr)
    assert listing(d) == before, (name, "wrote", set(listing(d)) - set(before))
    print(f"{name}: exit 2, nothing written: {p.stderr.strip()}")


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


refused("claim-folder-is-a-file", "h", lambda d: touch(os.path.join(d, "h")), "h is not a folder")
refused("experiment-folder-is-a-file", "h", lambda d: touch(os.path.join(d, "h", "inputs")),
        "h/inputs exists and is not a folder")
refused("stale-index", "h", lambda d: write(os.path.join(d, "reproduce.json"),
        '{"kind": "dtbench-reproduction", "scale": "quick", "claims": ["zz"], "sessions": []}'),
        "zz/claim.json: cannot open claim")
refused("damaged-campaign", "b", lambda d: write(os.path.join(d, "b", "mlp", "campaign.json"), "garbage"),
        "b/mlp/campaign.json:1:1: invalid JSON (byte 0)")
refused("sweep-folder", "h", lambda d: write(os.path.join(d, "campaign.json"), "{}"),
        "campaign.json: this folder holds a dtbench sweep campaign; use another --out")

# A sweep into a reproduce folder: refused too.
spec = os.path.join(work, "s.json")
write(spec, '{"name": "x", "base": {"duration": {"steps": 1}}, "axes": {"optimizer.lr": [0.1]}}')
d = os.path.join(work, "reproduce-folder")
write(os.path.join(d, "reproduce.json"), "{}")
p = subprocess.run([dtbench, "sweep", spec, "--out", d], capture_output=True, text=True, timeout=60)
assert p.returncode == 2 and "this folder holds a dtbench reproduce report" in p.stderr, (p.returncode, p.stderr)
assert listing(d) == ["reproduce.json"], listing(d)
print("sweep into a reproduce folder: exit 2, nothing written")
