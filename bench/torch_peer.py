#!/usr/bin/python3
"""PyTorch 1.13 peer of bench_train_step: the same network, batch and step, timed the same way.

One training step = forward, softmax cross-entropy, backward, SGD with momentum 0.9 and weight decay 5e-4
(torch.optim.SGD), on a fixed random batch (normal inputs, uniform labels), in float32 NCHW (PyTorch's default
layout). The first --warmup steps are not timed; then --steps steps are timed one by one and the median
step time gives images per second. Prints one JSON object, with the process's peak resident memory
(getrusage's ru_maxrss).

--checkpoint-segments K (ResNets) trains with gradient checkpointing as dtbench does (workloads/cpu/plan.hpp):
the stem and each residual block are the units, cut into K segments as dtbench cuts them
(workloads/models/checkpointing.hpp: each unit weighted by the values its convolutions, batch norms and max pool
write per image, measured here with forward hooks on one image; the cut that minimises the largest segment, then
the sum of squared segments), every segment but the last run under torch.utils.checkpoint.checkpoint
(use_reentrant=False, so the parameters get gradients whatever the input) and recomputed in the backward. The
cut is printed ("segment_of_units") so that a script can check it is dtbench's. Unlike dtbench, PyTorch's
recomputation updates the batch-norm running statistics a second time; that changes no timing or memory figure.

Run with /usr/bin/python3 (the only interpreter with torch here), e.g.
  /usr/bin/python3 bench/torch_peer.py --arch resnet20 --input 1,28,28 --batch 128 --threads 2
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "reference"))

import torch  # noqa: E402
import torch_resnet  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True)
    ap.add_argument("--input", default="1,28,28", help="C,H,W")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--checkpoint-segments", type=int, default=0, help="gradient checkpointing segments; 0 = off")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    c, h, w = (int(v) for v in args.input.split(","))
    model = torch_resnet.make_model(args.arch, c, args.classes, in_hw=(h, w))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, c, h, w)
    y = torch.randint(0, args.classes, (args.batch,))

    forward, cut = (model, []) if args.checkpoint_segments == 0 else segmented(model, args.checkpoint_segments, (c, h, w))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({
        "impl": "pytorch",
        "torch": torch.__version__,
        "arch": args.arch,
        "input": [c, h, w],
        "batch": args.batch,
        "threads": torch.get_num_threads(),
        "steps": args.steps,
        "step_s_median": med,
        "step_s_min": min(times),
        "images_per_s": args.batch / med,
        "params": sum(p.numel() for p in model.parameters()),
        "checkpoint_segments": args.checkpoint_segments,
        "segment_of_units": cut,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }))


def unit_costs(model, units, chw):
    """Values per image that each unit's convolutions, batch norms and max pool write (dtbench's unit cost)."""
    counted = (torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.MaxPool2d)
    total = [0]
    hooks = [m.register_forward_hook(lambda mod, inp, out: total.__setitem__(0, total[0] + out.numel()))
             for m in model.modules() if isinstance(m, counted)]
    costs = []
    with torch.no_grad():
        was = model.training
        model.eval()
        x = torch.zeros(1, *chw)
        for unit in units:
            total[0] = 0
            x = unit(x)
            costs.append(float(total[0]))
        model.train(was)
    for hk in hooks:
        hk.remove()
    return costs


def segment_of_units(costs, k):
    """dtbench's cut: the smallest largest segment, then among those the smallest sum of squared segments."""
    n = len(costs)
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    worst = [[inf] * (n + 1) for _ in range(k + 1)]
    worst[0][0] = 0.0
    for j in range(1, k + 1):
        for i in range(j, n + 1):
            worst[j][i] = min(max(worst[j - 1][m], prefix[i] - prefix[m]) for m in range(j - 1, i))
    limit = worst[k][n]
    sq = [[inf] * (n + 1) for _ in range(k + 1)]
    start = [[0] * (n + 1) for _ in range(k + 1)]
    sq[0][0] = 0.0
    for j in range(1, k + 1):
        for i in range(j, n + 1):
            for m in range(j - 1, i):
                c = prefix[i] - prefix[m]
                if c > limit or sq[j - 1][m] == inf:
                    continue
                if sq[j - 1][m] + c * c < sq[j][i]:
                    sq[j][i], start[j][i] = sq[j - 1][m] + c * c, m
    out, i = [0] * n, n
    for j in range(k, 0, -1):
        m = start[j][i]
        for u in range(m, i):
            out[u] = j - 1
        i = m
    return out


def segmented(model, k, chw):
    """The model's forward with gradient checkpointing over k segments of its units (stem, then blocks), and the
    segment of each unit."""
    from torch.utils.checkpoint import checkpoint

    def stem(t):
        t = model.relu(model.bn1(model.conv1(t)))
        return t if model.maxpool is None else model.maxpool(t)

    units = [stem] + list(model.blocks())
    n = len(units)
    if not 1 <= k <= n:
        raise SystemExit("--checkpoint-segments must be in [1, %d] for this network" % n)
    cut = segment_of_units(unit_costs(model, units, chw), k)
    groups = [[units[u] for u in range(n) if cut[u] == s] for s in range(k)]

    def run(group):
        def f(t):
            for unit in group:
                t = unit(t)
            return t
        return f

    def forward(x):
        for s, group in enumerate(groups):
            x = checkpoint(run(group), x, use_reentrant=False) if s + 1 < k else run(group)(x)
        x = torch.flatten(model.avgpool(x), 1)
        if model.dropout is not None:
            x = model.dropout(x)
        return model.fc(x)

    return forward, cut


if __name__ == "__main__":
    main()
