#!/usr/bin/python3
"""`dtbench reproduce --report-only` on damaged copies of the committed report's folder (results/reproduce): a file
that is not what its claim reads is exit 2 naming the file and the JSON pointer, with REPORT.md and report.json
left as they were; a file without the rows a claim compares makes that claim inconclusive, never supported. Each
case failed before (a segmentation fault, internal errors, claim g "supported" without its N = 3 rows).

Usage: damaged_report.py DTBENCH SOURCE_DIR WORKDIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import zlib

dtbench, src, work = sys.argv[1:4]


def damaged(name, path, edit):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(src, "results", "reproduce"), d)
    p = os.path.join(d, path)
    doc = json.load(open(p))
    new = edit(doc)  # an edit returns a new document, or changes this one and returns None
    if new is not None:
        doc = new
    with open(p, "w") as f:
        json.dump(doc, f)
    return d


def report(d):
    return subprocess.run([dtbench, "reproduce", "--report-only", "--out", d], capture_output=True, text=True,
                          timeout=120)


def refused(name, path, edit, message):
    d = damaged(name, path, edit)
    before = {f: open(os.path.join(d, f), "rb").read() for f in ("REPORT.md", "report.json")}
    p = report(d)
    assert p.returncode == 2, (name, p.returncode, p.stderr[-500:])
    want = message.format(file=os.path.join(d, path))
    assert want in p.stderr, (name, want, p.stderr[-500:])
    assert {f: open(os.path.join(d, f), "rb").read() for f in before} == before, name + ": the report was rewritten"
    print(f"{name}: exit 2, {p.stderr.strip()[:160]}")


def set_row(key, value, row=0):
    def edit(doc):
        doc["rows"][row][key] = value
    return edit


g = "g/bytes/allreduce-k3.json"
refused("g-empty-object", g, lambda doc: {}, "{file}: not a `dtbench allreduce --json` file")
refused("g-bytes-text", g, set_row("bytes", "3440640"), "{file}: /rows/0/bytes: expected a number")
refused("g-reducer-null", g, set_row("reducer", None), "{file}: /rows/0/reducer: expected a string")
ring = lambda doc: next(i for i, r in enumerate(doc["rows"]) if r["reducer"] == "ring" and "traffic" in r)
refused("g-traffic-text", g, lambda doc: doc["rows"][ring(doc)]["traffic"].update(sent_bytes="x"),
        "{file}: /rows/")
# A ring row's counts for 1 rank of 3 (it was taken as a "contradicted" verdict; a hunt).
refused("g-counts-one-rank", g, lambda doc: doc["rows"][ring(doc)]["traffic"].update(sent_bytes=[0]),
        "{file}: /rows/")
refused("h-steps-1e300", "h/inputs/imagenet-resnet50.json", set_row("steps", 1e300, 1),
        "{file}: /rows/1/steps: expected a number in (0, 1e12]")
refused("h-minutes-missing", "h/inputs/imagenet-resnet50.json", lambda doc: doc["rows"][1].pop("minutes") and None,
        "{file}: /rows/1/minutes: expected a number in (0, 1e12] (steps, seconds_per_step and minutes go together), "
        "got nothing")
# A criterion moved after the runs (h's tolerance; the committed folder recorded the definitions' digests of claim e
# only, so the verdict flipped with exit 0: a hunt).
refused("h-criterion-moved", "h/claim.json", lambda doc: doc["criterion"].update(max_inconsistency=0.0001),
        "{file}: differs from the claim's definition as its runs started")
refused("h-steps-text", "h/inputs/imagenet-resnet50.json", set_row("steps", "14076", 1),
        "{file}: /rows/1/steps: expected a number in (0, 1e12]")
refused("f-wrong-negative", "f/this-machine/allreduce-k2.json", set_row("wrong", -1, 4),
        "{file}: /rows/4/wrong: expected an integer")

# No rows at all in a well-formed N = 3 file: claim g is inconclusive, naming N = 3 (it said supported).
d = damaged("g-no-rows", g, lambda doc: doc.update(rows=[]))
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["g"] == "inconclusive", verdicts
assert "N=3 (no ring or parameter_server row" in open(os.path.join(d, "REPORT.md")).read()
print("g without rows at N = 3: inconclusive")

# Wrong sums in every row at N = 3 (claim g said supported; a hunt): inconclusive, naming them. An edited expected
# count of tree's beside its edited count passed as "all equal": the formula is computed, so it differs.
def wrong_sums(doc):
    for r in doc["rows"]:
        r["wrong"] = 1000
d = damaged("g-wrong-sums", g, wrong_sums)
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["g"] == "inconclusive", verdicts
assert "Allreduces that gave wrong sums, whose bytes prove nothing: ring N=3" in open(os.path.join(d, "REPORT.md")).read()
def tree_edited(doc):
    t = next(r for r in doc["rows"] if r["reducer"] == "tree" and "traffic" in r and r["bytes"] == 3440640)["traffic"]
    t["sent_bytes"][0] += 400
    t["expected_sent_bytes"][0] += 400
d = damaged("g-tree-edited", g, tree_edited)
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
assert "(reducers/traffic.hpp): differ at tree N=3." in open(os.path.join(d, "REPORT.md")).read()
print("g with wrong sums: inconclusive; tree's edited counts: differ from the formula")

# A sweep that checked no sum (allreduce -c 0: "wrong" null, or 0 in a file from before it was null) proves no
# traffic either: inconclusive, naming the rows; it read as checked and right.
def unchecked(doc):
    doc["options"]["check_iters"] = 0
    for r in doc["rows"]:
        r["wrong"] = None
d = damaged("g-unchecked", g, unchecked)
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["g"] == "inconclusive", verdicts
assert "whose sums were not checked (check_iters 0), whose bytes prove nothing: ring N=3, parameter_server N=3" in \
    open(os.path.join(d, "REPORT.md")).read()
d = damaged("g-null-but-checked", g, lambda doc: doc["rows"][0].update(wrong=None))
p = report(d)
assert p.returncode == 2 and "/rows/0/wrong: expected a number, got null" in p.stderr, p.stderr[-500:]
print("g with unchecked sums: inconclusive; a null beside checks: exit 2")

# NaN in a compared run's saved weights (its record says finished): claim a is inconclusive naming the file. It said
# supported, with d = 0: std::max skips NaN, so the damaged file compared as equal to its reference.
d = os.path.join(work, "a-nan-weights")
shutil.rmtree(d, ignore_errors=True)
shutil.copytree(os.path.join(src, "results", "reproduce"), d)
w = os.path.join(d, "a", "mlp", "runs", "p2-tasks_per_node2-threads1-s1.weights")
with open(w, "r+b") as f:
    f.seek(4 * 10)
    f.write(b"\x00\x00\xc0\x7f")  # a quiet NaN, float 10
# As the run would have written it: its record's CRC-32 is the file's (else the file is refused as another one).
rec = w.replace(".weights", ".json")
doc = json.load(open(rec))
doc["extra"]["weights"]["crc32"] = "%08x" % zlib.crc32(open(w, "rb").read())
json.dump(doc, open(rec, "w"))
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["a"] == "inconclusive", verdicts
assert w + ": float 10 is not finite (NaN)" in open(os.path.join(d, "REPORT.md")).read()
print("a with NaN in a compared run's weights: inconclusive, naming the file")

# A record naming another run's weights file (the reference's): claim a compared the reference with itself and said
# supported (a hunt). A run's weights are its own <name>.weights beside its record.
def other_weights(doc):
    doc["extra"]["weights"]["file"] = "p0-tasks_per_node1-threads1-s1.weights"
d = damaged("a-other-weights", "a/mlp/runs/p4-tasks_per_node4-threads1-s1.json", other_weights)
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["a"] == "inconclusive", verdicts
assert ('/extra/weights/file names "p0-tasks_per_node1-threads1-s1.weights", not the run\'s own '
        "p4-tasks_per_node4-threads1-s1.weights beside the record") in open(os.path.join(d, "REPORT.md")).read()
print("a with a record naming another run's weights: inconclusive, naming the record")

# Another run's weights file of the same shape copied over a compared run's: claim a compared it and said
# contradicted (a hunt). A record keeps its file's CRC-32 (extra.weights.crc32; the committed claim-a records have
# had it since their rerun of 2026-12-02, and it is set here as zlib computes it all the same); the file whose CRC
# differs is not compared.
runs = os.path.join("a", "mlp", "runs")
w = "p1-tasks_per_node1-threads2-s1.weights"
crc = "%08x" % zlib.crc32(open(os.path.join(src, "results", "reproduce", runs, w), "rb").read())
def with_crc(doc):
    doc["extra"]["weights"]["crc32"] = crc
d = damaged("a-weights-crc", os.path.join(runs, w.replace(".weights", ".json")), with_crc)
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["a"] == "supported", verdicts  # its own file, its CRC: as before
shutil.copy(os.path.join(d, runs, "p0-tasks_per_node1-threads1-s1.weights"), os.path.join(d, runs, w))
p = report(d)
assert p.returncode == 0, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["a"] == "inconclusive", verdicts
assert "the record's /extra/weights/crc32 \"" + crc + "\": not the file this run wrote" in \
    open(os.path.join(d, "REPORT.md")).read()
print("a with another run's weights copied over a compared run's: inconclusive, naming the CRC-32")


# A record's config file cut short: the record could not be checked against it and counted as done (claim a stayed
# supported, exit 0; a hunt). The run is now not done, the report says why and claim a is inconclusive, exit 1.
d = os.path.join(work, "a-config-cut")
shutil.rmtree(d, ignore_errors=True)
shutil.copytree(os.path.join(src, "results", "reproduce"), d)
cut = os.path.join(d, "a/mlp/configs/p4-tasks_per_node4-threads1-s1.json")
with open(cut, "r+b") as f:
    f.truncate(50)
p = report(d)
assert p.returncode == 1, (p.returncode, p.stderr[-500:])
assert cut + ":" in p.stderr and "the run's record cannot be checked against its config" in p.stderr, p.stderr[-500:]
verdicts = {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}
assert verdicts["a"] == "inconclusive", verdicts
print("a with a run's config file cut short: inconclusive, exit 1, naming the file")


def verdicts_of(d, expect_rc=0):
    p = report(d)
    assert p.returncode == expect_rc, (p.returncode, p.stderr[-800:])
    return {c["id"]: c["verdict"] for c in json.load(open(os.path.join(d, "report.json")))["claims"]}, p


def copy_of(name):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(src, "results", "reproduce"), d)
    return d


# Every record's /extra/weights/parameters set to 0 compared no weight at all (d = 0, supported; a hunt): the
# reference's weights must hold the parameters its record counts.
d = copy_of("a-no-parameters")
for f in glob.glob(os.path.join(d, "a", "mlp", "runs", "*.json")):
    r = json.load(open(f))
    if "weights" in r.get("extra", {}):
        r["extra"]["weights"]["parameters"] = 0
        json.dump(r, open(f, "w"))
verdicts, _ = verdicts_of(d)
assert verdicts["a"] == "inconclusive", verdicts
assert "its weights file holds 0 parameters to compare, where its record's /extra/parameters counts 203530" in \
    open(os.path.join(d, "REPORT.md")).read()
# The index's points in another order: the reference is still the spec's first point, and the report the same.
d = copy_of("a-points-reversed")
idx = os.path.join(d, "a", "mlp", "campaign.json")
doc = json.load(open(idx))
doc["points"].reverse()
json.dump(doc, open(idx, "w"))
verdicts, _ = verdicts_of(d)
assert verdicts["a"] == "supported", verdicts
assert open(os.path.join(d, "REPORT.md")).read() == open(os.path.join(src, "results", "reproduce", "REPORT.md")).read()
print("a with no parameters counted: inconclusive; with its index's points reversed: the same report")



# Found by a hunt, each a verdict turned by an edit with exit 0. Another campaign's record copied into a run's slot
# (claim b said supported): that record is another run's, unreadable here (exit 1), and b inconclusive.
d = copy_of("b-foreign-record")
runs = os.path.join(d, "b", "mlp", "runs")
shutil.copy(os.path.join(d, "c", "mlp", "runs", "p00-global256-sgd-lr_scalingv0-constant-s1.json"),
            os.path.join(runs, "p09-epochs2.0-global256-micro_batches1-s1.json"))
v, p = verdicts_of(d, expect_rc=1)
assert v["b"] == "inconclusive", v
assert "the record of run 'p00-global256-sgd-lr_scalingv0-constant-s1', not of run " \
       "'p09-epochs2.0-global256-micro_batches1-s1'" in p.stderr, p.stderr[-800:]
print("b with another campaign's record in a run's slot: inconclusive, the record named")

# A point deleted from a campaign index (claim e gave a verdict): the index no longer lists the spec's runs, the
# claim is inconclusive naming them. Runs cut from every point (claim a judged 1 comparison of 24, then was
# inconclusive): an index whose points list fewer runs than its /repeats is no index a sweep writes, exit 2.
d = damaged("e-point-deleted", "e/mlp/campaign.json",
            lambda doc: doc.update(points=[q for q in doc["points"] if q["id"] != "p01"]))
v, _ = verdicts_of(d)
assert v["e"] == "inconclusive", v
assert "3 runs of the spec not in its campaign.json (p01-" in open(os.path.join(d, "REPORT.md")).read()
def first_run_only(doc):
    for q in doc["points"]:
        q["runs"] = q["runs"][:1]


refused("a-runs-cut", "a/mlp/campaign.json", first_run_only,
        "{file}: /points/0/runs: 1 run(s), where /repeats says 2 (one run per repeat)")
print("e with a point deleted from its index: inconclusive; a with runs cut: exit 2")

# The scale edited (full-scale records reported as quick): every sweep's campaign is another scale's.
d = damaged("scale-edited", "reproduce.json", lambda doc: doc.update(scale="quick"))
v, _ = verdicts_of(d)
assert v["a"] == "inconclusive" and v["b"] == "inconclusive", v
assert "its campaign.json is campaign 'claim-a-mlp-full', not the spec's 'claim-a-mlp'" in \
    open(os.path.join(d, "REPORT.md")).read()
print("the scale edited: every sweep claim inconclusive, the campaign named")

# A criterion edited after the runs (claim b's max_drop loosened, b said supported while quoting the old text): with
# the definitions recorded when the runs started, refused naming the file; REPORT.md untouched.
d = damaged("b-criterion-edited", "reproduce.json", lambda doc: doc.update(definitions={
    cid: {n: "%08x" % __import__("zlib").crc32(open(os.path.join(src, "results", "reproduce", cid, n), "rb").read())
          for n in os.listdir(os.path.join(src, "results", "reproduce", cid)) if n.endswith(".json")
          and os.path.isfile(os.path.join(src, "results", "reproduce", cid, n))}
    for cid in doc["claims"]}))
v, _ = verdicts_of(d)  # recorded and unedited: the same report
claim_b = os.path.join(d, "b", "claim.json")
text = open(claim_b).read()
assert '"max_drop": 0.01,' in text
open(claim_b, "w").write(text.replace('"max_drop": 0.01,', '"max_drop": 0.015,'))
before = {f: open(os.path.join(d, f), "rb").read() for f in ("REPORT.md", "report.json")}
p = report(d)
assert p.returncode == 2 and claim_b + ": differs from the claim's definition as its runs started" in p.stderr, \
    (p.returncode, p.stderr[-800:])
assert {f: open(os.path.join(d, f), "rb").read() for f in before} == before
print("b's criterion edited after its runs: refused, the report kept")

# Found by a hunt: finished records without an evaluation (an empty curve, which the record's schema allows) at the
# large batches of LARS and LAMB. Claim c said contradicted with exit 0: those batches left their rows without a word.
# Now each such run is named and c is inconclusive.
d = copy_of("c-empty-curves")
runs = os.path.join(d, "c", "mlp", "runs")
emptied = sorted(f for f in os.listdir(runs) if f.endswith(".json") and ("-lars-" in f or "-lamb-" in f)
                 and ("global4096" in f or "global8192" in f))
assert len(emptied) >= 8, emptied
for f in emptied:
    rec = json.load(open(os.path.join(runs, f)))
    rec["curve"] = []
    json.dump(rec, open(os.path.join(runs, f), "w"))
v, _ = verdicts_of(d)
assert v["c"] == "inconclusive", v
assert emptied[0][:-5] + " (finished without a value: no evaluation in its curve)" in \
    open(os.path.join(d, "REPORT.md")).read()
print("c with finished runs that have no evaluation: inconclusive, the runs named")

# Found by a hunt: a record of claim b's batch-256 point without warmup, its name and config.name edited to the
# warmup point's run at that batch (claim b's table moved a run between its groups, exit 0). The record is made from
# another config than the index gives the run: unreadable (exit 1), b inconclusive.
d = copy_of("b-config-edited")
runs = os.path.join(d, "b", "mlp", "runs")
into = "p09-epochs2.0-global256-micro_batches1-s1"
src_run = next(f for f in sorted(os.listdir(runs)) if f.endswith("-s1.json") and "global256-" in f
               and "epochs0" in f)
rec = json.load(open(os.path.join(runs, src_run)))
rec["name"] = into
rec["config"]["name"] = into
json.dump(rec, open(os.path.join(runs, into + ".json"), "w"))
v, p = verdicts_of(d, expect_rc=1)
assert v["b"] == "inconclusive", v
assert os.path.join(runs, into + ".json") + ": made from another config than " in p.stderr, p.stderr[-800:]
print("b with a record of another point renamed into a run's slot: inconclusive, the record named")

# Found by a hunt: claim b's campaign deleted. b is inconclusive (not run) and its figure has no series, which
# plot.py does not draw: REPORT.md linked figures/b.png all the same, the earlier report's figure with its old verdict.
d = copy_of("b-not-run")
shutil.rmtree(os.path.join(d, "b", "mlp"))
v, _ = verdicts_of(d)
assert v["b"] == "inconclusive", v
text = open(os.path.join(d, "REPORT.md")).read()
assert "figures/b.png" not in text and "figures/c.png" in text
print("b not run: inconclusive, and its figure not linked")

# Found by a hunt: one of claim f's fitted sweeps deleted. The fitted row changed (crossover 256 -> 512) without a
# word; the reason now says which sweep the fit lacks (the verdict is the published networks').
d = copy_of("f-sweep-missing")
os.remove(os.path.join(d, "f", "this-machine", "allreduce-k4.json"))
v, _ = verdicts_of(d)
assert v["f"] == "supported", v
assert 'The fitted profile is of part of its sweeps: K = 4 of experiment "this-machine" not run.' in \
    open(os.path.join(d, "REPORT.md")).read()
print("f with a fitted sweep missing: said so in its reason")

# Found by a hunt: claim a's rounding-only control point with its records and config files deleted. The control was
# told by its config, which was gone, so the sweep counted as having none and was judged against 1e-4 alone:
# "contradicted" (14 of 24). The spec says which point is the control: inconclusive, its runs named.
d = copy_of("a-control-deleted")
for sub in ("runs", "configs"):
    for f in glob.glob(os.path.join(d, "a", "mlp", sub, "p1-*")):
        os.remove(f)
v, _ = verdicts_of(d)
assert v["a"] == "inconclusive", v
assert "(its seed's control is missing)" in open(os.path.join(d, "REPORT.md")).read()
print("a with its control's records and configs deleted: inconclusive")

# Found by a hunt: a claim's digests emptied, or one file's digest deleted, let its edited criterion turn the verdict
# (b: contradicted -> supported, exit 0). A claim's entry keeps the digest of every file of its definition.
d = damaged("b-digests-emptied", "reproduce.json", lambda doc: doc["definitions"].update(b={}))
p = report(d)
assert p.returncode == 2 and "/definitions/b/claim.json: missing; a claim's entry holds the digests" in p.stderr, \
    (p.returncode, p.stderr[-800:])
def spec_digest_removed(doc):
    del doc["definitions"]["b"]["mlp-full.json"]
d = damaged("b-spec-digest-removed", "reproduce.json", spec_digest_removed)
p = report(d)
assert p.returncode == 2 and os.path.join(d, "b", "mlp-full.json") + ": a file of the claim's definition without " \
    "its digest" in p.stderr, (p.returncode, p.stderr[-800:])
print("a claim's digests emptied or cut: exit 2")

# Found by a hunt: `reproduce h` on a folder whose claim b was edited after its runs wrote reproduce.json (a new
# session) and h's copies before it refused b (exit 2). Every claim the folder reports is checked first.
d = copy_of("run-other-claim-edited")
claim_b = os.path.join(d, "b", "claim.json")
open(claim_b, "w").write(open(claim_b).read().replace('"max_drop": 0.01,', '"max_drop": 0.9,'))
before = open(os.path.join(d, "reproduce.json"), "rb").read()
p = subprocess.run([dtbench, "reproduce", "h", "--local", "--scale", "full", "--out", d], capture_output=True,
                   text=True, timeout=120)
assert p.returncode == 2 and claim_b + ": differs from the claim's definition as its runs started" in p.stderr, \
    (p.returncode, p.stderr[-800:])
assert open(os.path.join(d, "reproduce.json"), "rb").read() == before, "reproduce.json was rewritten"
assert not os.path.exists(os.path.join(d, ".lock")), "the lock file was made"
print("reproduce h with claim b edited: exit 2, nothing written")

# Found by a review: a folder of an earlier build without digests (or with some claims' only) was refused once a
# session had recorded the claims it ran, and so stuck. Such claims are read as before, and the next session records
# their copies' digests: the folder reports, and reports again, the same.
d = damaged("no-digests", "reproduce.json", lambda doc: doc.pop("definitions") and None)
v, _ = verdicts_of(d)
p = subprocess.run([dtbench, "reproduce", "h", "--local", "--scale", "full", "--out", d], capture_output=True,
                   text=True, timeout=120)
assert p.returncode == 0, (p.returncode, p.stderr[-800:])
index = json.load(open(os.path.join(d, "reproduce.json")))
assert sorted(index["definitions"]) == sorted(index["claims"]), index["definitions"].keys()
assert open(os.path.join(d, "REPORT.md")).read().split("| claim |")[1] == \
    open(os.path.join(src, "results", "reproduce", "REPORT.md")).read().split("| claim |")[1]
v2, _ = verdicts_of(d)
assert v2 == v, (v, v2)
print("a folder without digests: reported, run again (digests recorded for every claim), reported the same")
