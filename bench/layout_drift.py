#!/usr/bin/python3
"""How far a ResNet's weights drift between a 2-D layout and one rank with the whole batch, after STEPS steps, per seed:
why train.model_parallel compares ResNet-8 in one tensor-parallel group after 20 steps but 3 replicas of a group
after 2, and train.pipeline its stages against ghost batch norm after 1.

Three layouts, each against its one-rank twin (the configs of tests/train/train_checks.py, ResNet-8 on 2 x 8 x 8
synthetic images): tensor model parallelism K = 2 as one group of M = 2 (batch 8, synchronised batch norm); K = 6
as 3 replicas of M = 2 (5 classes, synchronised batch norm, 1 KiB buckets); pipeline stages K = 6 as 2 replicas
of S = 3, M = 4 micro-batches, against ghost batch norm of 4 on one rank. Prints max |w_1 - w_K| / max |w_1|.

Usage: bench/layout_drift.py DTBENCH WORK [--steps 20] [--seeds 1,2,3,4] [--lr 0.05]   (mpirun on PATH;
scripts/mpi-env.sh as root)
"""
import argparse
import json
import os
import sys
import types

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "train"))
import train_checks as tc  # noqa: E402  (the checks' configs and their one-rank-against-K harness)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dtbench")
    ap.add_argument("work")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--lr", type=float, default=0.05)
    a = ap.parse_args()
    tc.args = types.SimpleNamespace(dtbench=a.dtbench, work=a.work,
                                    schema=os.path.join(os.path.dirname(__file__), "..", "results", "schema",
                                                        "run-record.schema.json"))
    os.makedirs(os.path.join(a.work, "records"), exist_ok=True)
    opt = {"name": "sgd", "lr": a.lr, "momentum": 0.9, "weight_decay": 1e-4}
    b, steps = 8, a.steps

    def data(classes):
        return {"dataset": "synthetic", "synthetic": {"channels": 2, "height": 8, "width": 8, "classes": classes,
                                                      "train_size": 960, "test_size": 200}}

    def cfg(name, seed, **over):
        return tc.resnet_config(f"{name}-s{seed}-n{steps}-lr{a.lr}", seed=seed, optimizer=opt,
                                duration={"steps": steps}, **over)

    print(f"steps {steps}, lr {a.lr}: max |w_1 - w_K| / max |w_1|")
    for seed in [int(s) for s in a.seeds.split(",")]:
        e1, s1, _, _ = tc.one_vs_k(2, cfg("mp2-one", seed, batch={"global": b}),
                                   cfg("mp2-k", seed, batch={"global": b},
                                       parallel={"sync_bn": True, "model_parallel": 2}))
        e2, s2, _, _ = tc.one_vs_k(6, cfg("mp6-one", seed, data=data(5), batch={"global": 3 * b}),
                                   cfg("mp6-k", seed, data=data(5), batch={"per_rank": b},
                                       parallel={"sync_bn": True, "model_parallel": 2},
                                       reducer={"bucket_mib": 0.001}))
        k_cfg = cfg("pp6-k", seed, data=data(4), batch={"global": 32, "micro_batches": 4},
                    parallel={"sync_bn": False, "pipeline_stages": 3})
        _, _, w1, wk = tc.one_vs_k(6, cfg("pp6-one", seed, data=data(4), parallel={"sync_bn": False},
                                          model={"arch": "resnet8", "ghost_batch": 4}, batch={"global": 32}), k_cfg)
        rec = json.load(open(os.path.join(a.work, "records", k_cfg["name"] + ".json")))
        p = rec["extra"]["pipeline"]["parameters_whole_model"]
        e3 = float(np.abs(w1[:p] - wk[:p]).max()) / float(np.abs(w1[:p]).max())
        print(f"seed {seed}: tensor K=2 (M=2) {e1 / s1:.3g}; tensor K=6 (3 x M=2) {e2 / s2:.3g}; "
              f"pipeline K=6 (2 x S=3) {e3:.3g}", flush=True)


if __name__ == "__main__":
    main()
