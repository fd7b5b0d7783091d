#!/usr/bin/env python3
"""The bad-input corpus: every case runs one dtbench command in a scratch folder and asserts the README's contract.

Usage: corpus.py [--sanitized] DTBENCH CASES.json [CASE-NAME ...]

A cases file is a JSON list of cases. A case:
  name      a short name, unique in its file
  args      the command's arguments after `dtbench` ("{dir}" is the scratch folder)
  files     optional {relative path: content}; content is a text, or an object with one of
            {"hex": "1f8b..."}            bytes
            {"repeat": "[", "count": N, "before": "..", "then": ".."} a head, a text repeated N times, a tail
            {"fifo": true}                a named pipe (reading it would block forever)
            {"dir": true}                 an empty folder
            {"symlink": "target"}         a symbolic link
            {"copy": "results/x.json"}    a copy of a file of the source tree
            {"hardlink": "../cfg.json"}   another name of a file made before it (relative to this one's folder)
  rc        the expected exit code (2 for bad input unless the case says otherwise)
  message   a fixed string the output must contain ("{dir}" is substituted)
  mpirun    optional rank count: run as `mpirun -np K dtbench ...`
  env       optional {variable: value} added to the environment ("{dir}" is substituted)
  stdout    optional file standard output is written to instead of a pipe ("/dev/full": the disk is full)
  timeout   optional seconds (default 30): a hang is a failure
  writes    optional list of paths the command may create (default none: bad input writes nothing)

What is asserted, for every case: the exit code; the message; the output is at most 16 KiB (an error echoes a
capped part of a bad value, README "Errors"); no signal, no "terminate called", no sanitizer report; and the scratch
folder is byte for byte what it was before (every file's content, every folder, every link), beyond `writes`.
The process runs with a 4 GiB address-space limit so an unbounded read fails fast instead of swapping. With
--sanitized (AddressSanitizer reserves terabytes of address space for its shadow memory) the limit is AddressSanitizer's
own instead: any one allocation above 4 GiB is a sanitizer report, so a case that sizes a buffer from its input fails.
"""
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_btl_tcp_if_include="lo",
           OMPI_MCA_oob_tcp_if_include="lo", OMP_NUM_THREADS="1")
OUTPUT_LIMIT = 16 * 1024
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMORY_LIMIT = 4 << 30


def make_file(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(content, str):
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(content)
    elif "hex" in content:
        with open(path, "wb") as f:
            f.write(bytes.fromhex(content["hex"]))
    elif "repeat" in content:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(content.get("before", "") + content["repeat"] * content["count"] + content.get("then", ""))
    elif content.get("fifo"):
        os.mkfifo(path)
    elif content.get("dir"):
        os.makedirs(path)
    elif "symlink" in content:
        os.symlink(content["symlink"], path)
    elif "hardlink" in content:
        os.link(os.path.join(os.path.dirname(path), content["hardlink"]), path)
    elif "copy" in content:
        shutil.copyfile(os.path.join(SOURCE_DIR, content["copy"]), path)
    else:
        raise SystemExit(f"unknown file content {content!r}")


def snapshot(root):
    """Every entry under root: kind and, for a regular file, its SHA-256."""
    seen = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                seen[rel] = "link " + os.readlink(path)
            elif os.path.isdir(path):
                seen[rel] = "dir"
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    seen[rel] = "file " + hashlib.sha256(f.read()).hexdigest()
            else:
                seen[rel] = "special"
    return seen


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_case(dtbench, case, sanitized):
    """Returns a list of what broke (empty when the case holds the contract)."""
    scratch = tempfile.mkdtemp(prefix="dtbench-corpus-")
    try:
        sub = lambda s: s.replace("{dir}", scratch)
        for rel, content in case.get("files", {}).items():
            make_file(os.path.join(scratch, rel), content)
        before = snapshot(scratch)
        cmd = [dtbench] + [sub(a) for a in case["args"]]
        if "mpirun" in case:
            cmd = ["mpirun", "-np", str(case["mpirun"]), "--oversubscribe", "--bind-to", "none"] + cmd
        try:
            # "stdout": a file standard output goes to instead of a pipe (/dev/full: a result that cannot be written)
            with open(case["stdout"] if "stdout" in case else os.devnull, "wb") as redirect:
                p = subprocess.run(cmd, cwd=scratch, env=dict(ENV, **{k: sub(v) for k, v in case.get("env", {}).items()}), stdout=redirect if "stdout" in case else subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=case.get("timeout", 30),
                                   preexec_fn=None if "mpirun" in case or sanitized else limit_memory)
            if p.stdout is None:
                p.stdout = b""
        except subprocess.TimeoutExpired:
            return [f"no answer in {case.get('timeout', 30)} s (a hang)"]
        out = (p.stdout + p.stderr).decode("utf-8", "replace")
        broken = []
        want = case.get("rc", 2)
        if p.returncode != want:
            what = f"signal {signal.Signals(-p.returncode).name}" if p.returncode < 0 else f"exit {p.returncode}"
            broken.append(f"{what}, expected exit {want}")
        if sub(case["message"]) not in out:
            broken.append(f"the output lacks {sub(case['message'])!r}")
        if len(p.stdout) + len(p.stderr) > OUTPUT_LIMIT:
            broken.append(f"{len(p.stdout) + len(p.stderr)} bytes of output (limit {OUTPUT_LIMIT})")
        for bad in ("terminate called", "Sanitizer", "runtime error:", "Segmentation fault", "core dumped"):
            if bad in out:
                broken.append(f"the output says {bad!r}")
        after = snapshot(scratch)
        allowed = {os.path.normpath(w) for w in case.get("writes", [])}
        changed = sorted(k for k in before.keys() | after.keys()
                         if before.get(k) != after.get(k) and not any(k == a or k.startswith(a + os.sep)
                                                                      for a in allowed))
        if changed:
            broken.append("the scratch folder changed: " + ", ".join(changed[:8]))
        if broken:
            broken.append("output: " + out[:1500])
        return broken
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    argv = sys.argv[1:]
    sanitized = bool(argv) and argv[0] == "--sanitized"
    argv = argv[1:] if sanitized else argv
    if sanitized:
        ENV["ASAN_OPTIONS"] = ":".join(filter(None, [ENV.get("ASAN_OPTIONS"), f"max_allocation_size_mb={MEMORY_LIMIT >> 20}"]))
    if len(argv) < 2:
        raise SystemExit(__doc__)
    dtbench, cases_path, only = os.path.abspath(argv[0]), argv[1], set(argv[2:])
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    names = [c["name"] for c in cases]
    if len(set(names)) != len(names):
        raise SystemExit(f"{cases_path}: duplicate case names")
    failed = 0
    for case in cases:
        if only and case["name"] not in only:
            continue
        broken = run_case(dtbench, case, sanitized)
        if broken:
            failed += 1
            print(f"FAIL {case['name']}: " + "\n    ".join(broken))
        else:
            print(f"ok   {case['name']}")
    print(f"{len(cases) - failed} of {len(cases)} cases hold the contract")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
