#!/usr/bin/env python3
"""The include rules between dtbench's folders (DESIGN.md, "Layers"), checked on every source file.

Each project include ("folder/.../file.hpp") of a file under a folder must name a folder that folder may know.
The most specific rule applies (workloads/train before workloads). Tests, benchmarks, fuzzers and the entry point may
include anything. A violation prints the file, the line and the rule, and the test fails; an include of a
folder that no rule names fails too, so a new folder cannot slip past the rules.

The link-level twin of these rules is cmake/layering.cmake (a library must not link what it must not know).
"""
import os
import re
import sys

# folder -> the folders its files may include (itself always). Order does not matter: longest prefix wins.
ALLOWED = {
    "core": [],
    "core/cuda": ["core"],
    "optim": ["core"],
    "optim/gpu": ["core", "optim", "core/cuda"],
    "reducers": ["core", "core/cuda"],
    "config": ["core", "optim", "reducers"],
    "workloads/data": ["core"],
    "workloads/models": ["core", "optim"],
    "workloads/backend": ["core", "workloads/models", "optim", "reducers"],
    "workloads/cpu": ["core", "workloads/models", "workloads/backend", "optim", "reducers"],
    "workloads/gpu": ["core", "core/cuda", "workloads/models", "workloads/backend", "optim", "optim/gpu", "reducers"],
    "workloads/train": ["core", "core/cuda", "config", "workloads/data", "workloads/models", "workloads/backend",
                        "workloads/cpu", "workloads/gpu", "optim", "reducers"],
    "slurm": ["core", "config"],
    "analysis": ["core", "config"],
    "reproduce": ["core", "config", "slurm", "analysis", "reducers"],
    "pbt": ["core", "config", "slurm"],
}
ANYTHING = ("apps", "tests", "bench", "fuzz")
SOURCES = (".hpp", ".cpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rule_of(path):
    best = None
    for folder in ALLOWED:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def main(root):
    tops = {f.split("/")[0] for f in ALLOWED} | set(ANYTHING)
    errors, checked = [], 0
    for dirpath, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        top = rel_dir.split(os.sep)[0]
        if rel_dir == "." :
            dirs[:] = [d for d in dirs if d in tops]
            continue
        if top in ANYTHING:
            continue
        for name in files:
            if not name.endswith(SOURCES):
                continue
            rel = os.path.join(rel_dir, name).replace(os.sep, "/")
            own = rule_of(rel)
            if own is None:
                errors.append(f"{rel}: no layering rule covers this folder (add it to tests/layering/layering.py "
                              "and DESIGN.md)")
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1) or m.group(1).split("/")[0] not in tops:
                        continue  # a system or generated header, or one beside the file
                    target = rule_of(m.group(1))
                    checked += 1
                    if target is None:
                        errors.append(f"{rel}:{lineno}: includes {m.group(1)}, which no layering rule covers")
                    elif target != own and target not in ALLOWED[own]:
                        errors.append(f"{rel}:{lineno}: {own}/ may not include {m.group(1)} ({target}/); "
                                      f"it may include {', '.join(ALLOWED[own]) or 'only itself'}")
    for e in errors:
        print(e)
    print(f"layering: {checked} project includes checked, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")))
