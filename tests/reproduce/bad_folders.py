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

# Found by a hunt of the run path (each case wrote files, or ran, where it should not have).
def run(*args, expect):
    p = subprocess.run([dtbench, "reproduce", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == expect, (args, p.returncode, p.stdout[-300:], p.stderr[-500:])
    return p


# No mode: exit 2 (it wrote the folder and a report of nothing, exit 0); a --claims folder without claims likewise.
d = os.path.join(work, "no-mode")
p = run("h", "--out", d, expect=2)
assert "give --local, --submit or --dry-run" in p.stderr and not os.path.exists(d), p.stderr
empty = os.path.join(work, "no-claims")
os.makedirs(empty)
p = run("--claims", empty, "--out", d, "--local", expect=2)
assert "no claims there" in p.stderr and not os.path.exists(d), p.stderr
# A loop of links as --out: exit 2 naming --out (an internal error, exit 1).
loop = os.path.join(work, "loop")
os.symlink(loop, loop)
p = run("h", "--out", loop, "--dry-run", expect=2)
assert p.stderr.startswith("dtbench: error: --out: ") and "internal error" not in p.stderr, p.stderr
print("no mode, no claims, a loop of links as --out: exit 2, nothing written")

# A claim's copy removed from the folder does not let a changed definition in: reproduce.json's digests decide.
claims = os.path.join(work, "claims")
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "results", "claims", "h")
shutil.copytree(src, os.path.join(claims, "h"))
d = os.path.join(work, "moved-criterion")
run("h", "--claims", claims, "--out", d, "--local", expect=0)
claim_file = os.path.join(claims, "h", "claim.json")
text = open(claim_file).read()
write(claim_file, text.replace('"text": "', '"text": "Looser. ', 1))
os.remove(os.path.join(d, "h", "claim.json"))
before = {f: open(os.path.join(d, f), "rb").read() for f in listing(d)}
p = run("h", "--claims", claims, "--out", d, "--local", expect=2)
assert "h/claim.json: differs from the claim's definition as its runs started here" in p.stderr, p.stderr
assert {f: open(os.path.join(d, f), "rb").read() for f in listing(d)} == before
write(claim_file, text)
print("a changed criterion with the folder's copy removed: exit 2, nothing written")

# A published copy that no longer reads: exit 2 before anything is written (after the session was recorded).
copy = os.path.join(d, "h", "inputs", "imagenet-resnet50.json")
write(copy, "{")
before = {f: open(os.path.join(d, f), "rb").read() for f in listing(d)}
p = run("h", "--claims", claims, "--out", d, "--local", expect=2)
assert "imagenet-resnet50.json" in p.stderr and "the copy the claim is judged on" in p.stderr, p.stderr
assert {f: open(os.path.join(d, f), "rb").read() for f in listing(d)} == before
print("a damaged published copy: exit 2, nothing written")

# One reproduce at a time on a folder: a second one is refused (it ran beside the first, and the first, ending,
# dropped its session from reproduce.json).
import fcntl
d = os.path.join(work, "busy")
os.makedirs(d)
with open(os.path.join(d, ".lock"), "w") as held:
    fcntl.flock(held, fcntl.LOCK_EX)
    p = run("h", "--out", d, "--local", expect=1)
    assert "another dtbench reproduce works on this folder" in p.stderr, p.stderr
    assert listing(d) == [".lock"], listing(d)
print("a folder another reproduce works on: exit 1, nothing written")

# Allreduce results that do not read as their rank count's file are run again: damaged rows, and another rank
# count's file copied there (it was counted finished: every later report refused it, or counted 2 ranks as 3).
d = os.path.join(work, "allreduce-redone")
run("g", "--out", d, "--local", expect=0)
bytes_dir = os.path.join(d, "g", "bytes")
write(os.path.join(bytes_dir, "allreduce-k3.json"), '{"rows": [1]}')
shutil.copy(os.path.join(bytes_dir, "allreduce-k2.json"), os.path.join(bytes_dir, "allreduce-k4.json"))
p = run("g", "--out", d, "--local", expect=0)
for k in (3, 4):
    import json
    assert json.load(open(os.path.join(bytes_dir, f"allreduce-k{k}.json")))["ranks"] == k
assert "g  supported" in p.stdout, p.stdout[-600:]
print("damaged allreduce results: run again, claim g supported")
