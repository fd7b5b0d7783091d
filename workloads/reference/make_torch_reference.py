#!/usr/bin/python3
"""Makes the PyTorch reference data for tests/workloads/test_torch_twins.cpp.

One of the twins of torch_resnet.py on 1x28x28 inputs, 10 classes, batch 8, in training mode, three steps
of SGD (lr 0.1, momentum 0.9, weight decay 5e-4 on every tensor, as torch.optim.SGD applies it):
  resnet8:    the CIFAR-style ResNet-8;
  simple_cnn: Shallue et al.'s Simple CNN at test widths (conv_filters 4, 8; hidden 32: the architecture of
              the default 32, 64, 1024, with reference files of 55 KB rather than 13 MB).
Everything is computed in float64 (model.double()) so that the reference is exact to about 1e-15 and a
test's error is dtbench's own; the same run in float32 is compared with it, and PyTorch's own float32 error
is stored in the manifest as the yardstick for the test's tolerances.

Inputs and initial weights come from dtbench's SplitMix64 generator (core/rng.hpp), reimplemented below
with exact integer arithmetic: uniform() is an integer times 2^-53, and every derived value is a correctly
rounded double operation, so the C++ test regenerates bit-identical float32 weights and batches instead of
reading them from disk:
  tensor i of named_parameters(), element k, u_k = Rng(SEED, [i]).uniform() in order:
    conv and fc weights: (2u - 1) * sqrt(6 / fan_in)   (He et al. 2015, uniform variant)
    conv and fc biases:  (2u - 1) * 0.1
    bn weight (gamma):   1 + (2u - 1) * 0.2
    bn bias (beta):      (2u - 1) * 0.1
  then rounded to float32. Running means start at 0, running variances at 1.
  batch of step s: x = (u - 0.5) * 4 from Rng(SEED, [1000 + s]) (N x C x H x W order), labels below(10)
  from Rng(SEED, [2000 + s]).

Writes workloads/reference/ARCH/: manifest.json, grads0.f32 (all gradients of step 0), weights3.f32 (all
weights after 3 steps), buffers3.f32 (running means and variances after 3 steps; empty without batch norm),
logits.f32 (logits of the 3 training steps, then of an evaluation forward of batch 0 after the 3 steps).
Little-endian float32, in the order of named_parameters() / named_buffers() (without num_batches_tracked).

Run: /usr/bin/python3 workloads/reference/make_torch_reference.py resnet8|simple_cnn
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_resnet  # noqa: E402

SEED = 2024
N, C, H, W, CLASSES = 8, 1, 28, 28, 10
STEPS = 3
LR, MOMENTUM, WEIGHT_DECAY = 0.1, 0.9, 5e-4
# Per arch: what the manifest says, and make_model's keyword arguments.
ARCHS = {
    "resnet8": ("ResNet-8 (CIFAR style, option-B shortcuts) on 1x28x28, 10 classes, batch 8, 3 SGD steps", {}),
    "simple_cnn": ("Simple CNN (Shallue et al.) with conv_filters [4, 8] and hidden 32 on 1x28x28, 10 classes, "
                   "batch 8, 3 SGD steps", {"conv_filters": (4, 8), "hidden": 32}),
}
M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z):
    z = (z + GOLDEN) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """dtbench::Rng (core/rng.hpp), bit for bit."""

    def __init__(self, seed, ids=()):
        self.state = mix(seed & M64)
        for i in ids:
            self.state = mix(self.state ^ mix((i + 0x632BE59BD9B4E019) & M64))

    def next_u64(self):
        self.state = (self.state + GOLDEN) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def uniform(self):
        return float(self.next_u64() >> 11) * 2.0 ** -53

    def below(self, n):
        while True:
            m = self.next_u64() * n
            low = m & M64
            if low >= n or low >= ((1 << 64) - n) % n:
                return m >> 64


def param_kinds(model):
    """'weight', 'bias' (conv and fc), 'bn_weight' or 'bn_bias' for every parameter name."""
    kinds = {}
    for mname, m in model.named_modules():
        for pname, _ in m.named_parameters(recurse=False):
            full = mname + "." + pname if mname else pname
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                kinds[full] = "weight" if pname == "weight" else "bias"
            elif isinstance(m, torch.nn.BatchNorm2d):
                kinds[full] = "bn_" + pname
    return kinds


def initial_value(kind, shape, u):
    if kind == "weight":
        fan_in = int(np.prod(shape[1:]))
        return (2.0 * u - 1.0) * math.sqrt(6.0 / fan_in)
    if kind == "bias":
        return (2.0 * u - 1.0) * 0.1
    if kind == "bn_weight":
        return 1.0 + (2.0 * u - 1.0) * 0.2
    return (2.0 * u - 1.0) * 0.1  # bn_bias


def initial_params(model):
    kinds = param_kinds(model)
    out = {}
    for i, (name, p) in enumerate(model.named_parameters()):
        rng = Rng(SEED, [i])
        vals = [initial_value(kinds[name], tuple(p.shape), rng.uniform()) for _ in range(p.numel())]
        out[name] = np.array(vals, dtype=np.float64).astype(np.float32).reshape(tuple(p.shape))
    return out


def batch(step):
    rx = Rng(SEED, [1000 + step])
    x = np.array([(rx.uniform() - 0.5) * 4.0 for _ in range(N * C * H * W)], dtype=np.float64)
    x = x.astype(np.float32).reshape(N, C, H, W)
    rl = Rng(SEED, [2000 + step])
    y = np.array([rl.below(CLASSES) for _ in range(N)], dtype=np.int64)
    return x, y


def make_model(arch):
    return torch_resnet.make_model(arch, C, CLASSES, **ARCHS[arch][1])


def run(arch, dtype, init, batches):
    torch.manual_seed(0)
    model = make_model(arch).to(dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(init[name]).to(dtype))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses, logits, grads0 = [], [], None
    for s, (x, y) in enumerate(batches):
        opt.zero_grad()
        z = model(torch.from_numpy(x).to(dtype))
        loss = loss_fn(z, torch.from_numpy(y))
        loss.backward()
        if s == 0:
            grads0 = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).detach().clone()
        losses.append(loss.item())
        logits.append(z.detach().reshape(-1).clone())
        opt.step()
    weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    bufs = torch.cat([b.detach().reshape(-1).to(dtype) for n, b in model.named_buffers()
                      if not n.endswith("num_batches_tracked")] + [torch.zeros(0, dtype=dtype)])
    model.eval()
    with torch.no_grad():
        z = model(torch.from_numpy(batches[0][0]).to(dtype))
        eval_loss = loss_fn(z, torch.from_numpy(batches[0][1])).item()
        logits.append(z.reshape(-1).clone())
    return {"losses": losses, "eval_loss": eval_loss, "logits": torch.cat(logits), "grads0": grads0,
            "weights3": weights, "buffers3": bufs, "model": model}


def rel_max_err(a, b):
    a, b = a.double(), b.double()
    return float((a - b).abs().max() / b.abs().max())


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ARCHS:
        sys.exit("usage: make_torch_reference.py " + "|".join(ARCHS))
    arch = sys.argv[1]
    torch.set_num_threads(1)
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), arch)
    os.makedirs(out_dir, exist_ok=True)
    template = make_model(arch)
    init = initial_params(template)
    batches = [batch(s) for s in range(STEPS)]
    ref = run(arch, torch.float64, init, batches)
    f32 = run(arch, torch.float32, init, batches)

    w0 = torch.cat([torch.from_numpy(init[n]).reshape(-1) for n, _ in template.named_parameters()]).double()
    params, offset = [], 0
    for name, p in template.named_parameters():
        params.append({"name": name, "shape": list(p.shape), "offset": offset})
        offset += p.numel()
    buffers, boff = [], 0
    for name, b in template.named_buffers():
        if name.endswith("num_batches_tracked"):
            continue
        buffers.append({"name": name, "shape": list(b.shape), "offset": boff})
        boff += b.numel()

    manifest = {
        "what": ARCHS[arch][0],
        "made_by": "workloads/reference/make_torch_reference.py " + arch,
        "torch": torch.__version__,
        "reference_dtype": "float64 (stored as float32)",
        "seed": SEED,
        "batch": N, "input": [C, H, W], "classes": CLASSES, "steps": STEPS,
        "sgd": {"lr": LR, "momentum": MOMENTUM, "weight_decay": WEIGHT_DECAY},
        "bn": {"eps": 1e-5, "momentum": 0.1},
        "losses": ref["losses"],
        "eval_loss": ref["eval_loss"],
        "initial_weights_sum": float(w0.sum()),
        "initial_weights_sum_sq": float((w0 * w0).sum()),
        "labels": [[int(v) for v in b[1]] for b in batches],
        "params": params,
        "num_params": offset,
        "buffers": buffers,
        "num_buffers": boff,
        "torch_float32_vs_float64": {
            "logits_rel_max_err": rel_max_err(f32["logits"], ref["logits"]),
            "grads0_rel_max_err": rel_max_err(f32["grads0"], ref["grads0"]),
            "grads0_rel_norm_err": float((f32["grads0"].double() - ref["grads0"]).norm() / ref["grads0"].norm()),
            "update3_rel_max_err": rel_max_err(f32["weights3"].double() - w0, ref["weights3"] - w0),
            "losses_abs_err": [abs(a - b) for a, b in zip(f32["losses"], ref["losses"])],
        },
    }
    # Per-tensor gradient error of PyTorch float32, for the worst-case tensor.
    worst = 0.0
    for p in params:
        size = int(np.prod(p["shape"]))
        a = f32["grads0"][p["offset"]:p["offset"] + size].double()
        b = ref["grads0"][p["offset"]:p["offset"] + size]
        worst = max(worst, rel_max_err(a, b))
    manifest["torch_float32_vs_float64"]["grads0_worst_tensor_rel_max_err"] = worst
    # Weights after 3 steps, per tensor: max |w3 - w3_ref| / max |w3_ref - w0| (fp32 storage of w included).
    worst = 0.0
    for p in params:
        size = int(np.prod(p["shape"]))
        sl = slice(p["offset"], p["offset"] + size)
        err = (f32["weights3"][sl].double() - ref["weights3"][sl]).abs().max()
        worst = max(worst, float(err / (ref["weights3"][sl] - w0[sl]).abs().max()))
    manifest["torch_float32_vs_float64"]["weights3_worst_tensor_err_over_update"] = worst

    def save(name, t):
        t.to(torch.float32).numpy().astype("<f4").tofile(os.path.join(out_dir, name))

    save("grads0.f32", ref["grads0"])
    save("weights3.f32", ref["weights3"])
    save("buffers3.f32", ref["buffers3"])
    save("logits.f32", ref["logits"])
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(json.dumps(manifest["torch_float32_vs_float64"], indent=1))
    print("losses", ref["losses"], "eval", ref["eval_loss"])


if __name__ == "__main__":
    main()
