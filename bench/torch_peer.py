#!/usr/bin/python3
"""PyTorch 1.13 peer of bench_train_step: the same network, batch and step, timed the same way.

One training step = forward, softmax cross-entropy, backward, SGD with momentum 0.9 and weight decay 5e-4
(torch.optim.SGD), on a fixed random batch (normal inputs, uniform labels), in float32 NCHW (PyTorch's default
layout). The first --warmup steps are not timed; then --steps steps are timed one by one and the median
step time gives images per second. Prints one JSON object.

Run with /usr/bin/python3 (the only interpreter with torch here), e.g.
  /usr/bin/python3 bench/torch_peer.py --arch resnet20 --input 1,28,28 --batch 128 --threads 2
"""
import argparse
import json
import os
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

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
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
    }))


if __name__ == "__main__":
    main()
