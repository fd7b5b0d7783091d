#!/usr/bin/python3
"""Makes the K-FAC reference data for tests/workloads/test_kfac.cpp.

K-FAC written in NumPy from the papers, independently of dtbench's C++ (optim/kfac.hpp, optim/kfac_factors.hpp):
Martens and Grosse 2015 (arXiv:1503.05671) for fully connected layers, Grosse and Martens 2016 (KFC,
arXiv:1602.01407) for convolutions, with the factored Tikhonov damping of Martens and Grosse 2015 section 6.3
and the KL clip of Ba et al. 2017. PyTorch serves only as the automatic differentiation that gives each layer's
input a and the gradient dy of the mean loss with respect to its output (hooks); everything K-FAC computes from
them is NumPy below:
    patches a_{n,t}: im2col of the layer input (zero padding), element c k^2 + r k + s
    Omega = (1/N) sum_n sum_t a a^T                    Gamma = (N / T) sum_n sum_t dy dy^T
    running averages F = xi F + (1 - xi) F_step (the first step sets F), every step here (factor_interval 1)
    pi = sqrt((tr Omega / dim Omega) / (tr Gamma / dim Gamma))
    inverses of Omega + pi sqrt(gamma) I and Gamma + sqrt(gamma) / pi I (np.linalg.inv), on steps 1 and 3
    (inverse_interval 2, so step 2 uses step 1's)
    P = Gamma_d^-1 dW Omega_d^-1 (dW as rows x cols);  nu = min(1, sqrt(kl_clip / (lr^2 sum <P, dW>)))
    d = nu P + wd w (conv and fc weights), d = g + wd w (biases, batch norm);  b = d (step 1) else mu b + d;
    w = w - lr b
(the Simple CNN without the clip, kl_clip 0) on the two twins of make_torch_reference.py (ResNet-8 and the Simple CNN at test widths), from the same initial
weights and batches (its SplitMix64 generator), for three steps. Weight decay is on every tensor (dtbench's test
sets no_decay_bn_bias false).

Everything is in float64; the same computation from float32 activations in float32 arithmetic is compared with it
and its error stored in the manifest ("numpy_float32_vs_float64") as the yardstick for the test's tolerances.

Writes workloads/reference/kfac_<arch>/: manifest.json, weights1.f32 and weights3.f32 (all weights after steps 1
and 3), factors3.f32 (every layer's running Omega then Gamma after step 3, in parameter order).

Run: /usr/bin/python3 workloads/reference/make_kfac_reference.py resnet8|simple_cnn
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_torch_reference as twins  # noqa: E402

STEPS = 3
OPTIONS = {"lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "damping": 0.01, "factor_decay": 0.95,
           "factor_interval": 1, "inverse_interval": 2, "kl_clip": 1e-3}
# The Simple CNN runs without the KL clip, so that its steps are the preconditioned gradient itself; ResNet-8 with it.
KL_CLIP = {"resnet8": 1e-3, "simple_cnn": 0.0}


def im2col(x, kernel, stride, pad):
    """x: N x C x H x W -> patches (N T) x (C k k), row n T + p Q + q, column c k k + r k + s."""
    n, c, h, w = x.shape
    p_out = (h + 2 * pad - kernel) // stride + 1
    q_out = (w + 2 * pad - kernel) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.zeros((n, p_out, q_out, c, kernel, kernel), dtype=x.dtype)
    for r in range(kernel):
        for s in range(kernel):
            cols[:, :, :, :, r, s] = xp[:, :, r:r + stride * p_out:stride, s:s + stride * q_out:stride].transpose(0, 2, 3, 1)
    return cols.reshape(n * p_out * q_out, c * kernel * kernel)


def layer_factors(module, a, dy):
    """Omega and Gamma of one layer from its input a and output gradient dy (NumPy arrays)."""
    n = a.shape[0]
    if isinstance(module, torch.nn.Linear):
        x = a.reshape(n, -1)
        return x.T @ x / n, n * (dy.T @ dy)
    k, st, pd = module.kernel_size[0], module.stride[0], module.padding[0]
    patches = im2col(a, k, st, pd)
    t = dy.shape[2] * dy.shape[3]
    d = dy.transpose(0, 2, 3, 1).reshape(-1, dy.shape[1])  # (N T) x rows
    return patches.T @ patches / n, (n / t) * (d.T @ d)


def damped_inverses(a, g, gamma):
    pi = np.sqrt((np.trace(a) / a.shape[0]) / (np.trace(g) / g.shape[0]))
    root = np.sqrt(gamma)
    return (np.linalg.inv(a + pi * root * np.eye(a.shape[0])),
            np.linalg.inv(g + root / pi * np.eye(g.shape[0])))


def run(arch, dtype, init, batches):
    """K-FAC for STEPS steps; arithmetic in `dtype` (np.float64 or np.float32)."""
    torch_dtype = torch.float64 if dtype == np.float64 else torch.float32
    model = twins.make_model(arch).to(torch_dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(init[name]).to(torch_dtype))
    model.train()
    kinds = twins.param_kinds(model)
    modules = dict(model.named_modules())
    layers = [name[:-len(".weight")] for name, _ in model.named_parameters() if kinds[name] == "weight"]
    seen = {}

    def hook(name):
        def forward_hook(module, inputs, output):
            seen[name] = {"a": inputs[0].detach().numpy().astype(dtype)}
            output.register_hook(lambda g: seen[name].__setitem__("dy", g.detach().numpy().astype(dtype)))
        return forward_hook

    for name in layers:
        modules[name].register_forward_hook(hook(name))

    o = OPTIONS
    lr, mu, wd = dtype(o["lr"]), dtype(o["momentum"]), dtype(o["weight_decay"])
    w = {name: p.detach().numpy().astype(dtype).copy() for name, p in model.named_parameters()}
    buf, running, inverses, nus, weights = {}, {}, {}, [], []
    loss_fn = torch.nn.CrossEntropyLoss()
    for s, (x, y) in enumerate(batches):
        t = s + 1
        model.zero_grad()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(w[name]))
        loss = loss_fn(model(torch.from_numpy(x).to(torch_dtype)), torch.from_numpy(y))
        loss.backward()
        grads = {name: p.grad.detach().numpy().astype(dtype) for name, p in model.named_parameters()}
        xi = dtype(o["factor_decay"]) if running else dtype(0)
        for name in layers:
            a_step, g_step = layer_factors(modules[name], seen[name]["a"], seen[name]["dy"])
            if name in running:
                running[name] = (xi * running[name][0] + (1 - xi) * a_step, xi * running[name][1] + (1 - xi) * g_step)
            else:
                running[name] = (a_step, g_step)
        if (t - 1) % o["inverse_interval"] == 0:
            for name in layers:
                inverses[name] = damped_inverses(*running[name], dtype(o["damping"]))
        direction, vg = {}, dtype(0)
        for name in layers:
            dw = grads[name + ".weight"]
            rows = dw.shape[0]
            p = inverses[name][1] @ dw.reshape(rows, -1) @ inverses[name][0]
            vg += (p * dw.reshape(rows, -1)).sum()
            direction[name + ".weight"] = p.reshape(dw.shape)
        nu = min(1.0, float(np.sqrt(o["kl_clip"] / (o["lr"] ** 2 * vg)))) if o["kl_clip"] > 0 and vg > 0 else 1.0
        nus.append(nu)
        for name in w:
            d = (dtype(nu) * direction[name] if name in direction else grads[name]) + wd * w[name]
            buf[name] = d if t == 1 else mu * buf[name] + d
            w[name] = w[name] - lr * buf[name]
        weights.append(np.concatenate([w[name].reshape(-1) for name in w]).astype(np.float64))
    factors = np.concatenate([np.concatenate([running[n][0].reshape(-1), running[n][1].reshape(-1)])
                              for n in layers]).astype(np.float64)
    return {"layers": layers, "weights1": weights[0], "weights3": weights[-1], "factors3": factors, "nu": nus}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in twins.ARCHS:
        sys.exit("usage: make_kfac_reference.py " + "|".join(twins.ARCHS))
    arch = sys.argv[1]
    torch.set_num_threads(1)
    OPTIONS["kl_clip"] = KL_CLIP[arch]
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kfac_" + arch)
    os.makedirs(out_dir, exist_ok=True)
    init = twins.initial_params(twins.make_model(arch))
    batches = [twins.batch(s) for s in range(STEPS)]
    ref = run(arch, np.float64, init, batches)
    f32 = run(arch, np.float32, init, batches)
    w0 = np.concatenate([init[n].reshape(-1) for n in init]).astype(np.float64)

    def update_err(w):  # max |w - w_ref| / max |w_ref - w0|
        return float(np.abs(f32[w] - ref[w]).max() / np.abs(ref[w] - w0).max())

    manifest = {
        "what": "K-FAC, 3 steps on the " + arch + " twin of make_torch_reference.py (batch 8, 1x28x28, 10 classes)",
        "made_by": "workloads/reference/make_kfac_reference.py " + arch,
        "numpy": np.__version__, "torch": torch.__version__,
        "reference_dtype": "float64 (stored as float32)",
        "options": OPTIONS,
        "layers": ref["layers"],
        "nu": ref["nu"],
        "numpy_float32_vs_float64": {
            "weights1_err_over_update": update_err("weights1"),
            "weights3_err_over_update": update_err("weights3"),
            "factors3_rel_max_err": float(np.abs(f32["factors3"] - ref["factors3"]).max() /
                                          np.abs(ref["factors3"]).max()),
            "nu_abs_err": [abs(a - b) for a, b in zip(f32["nu"], ref["nu"])],
        },
    }
    for name in ("weights1", "weights3", "factors3"):
        ref[name].astype("<f4").tofile(os.path.join(out_dir, name + ".f32"))
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(json.dumps(manifest["numpy_float32_vs_float64"], indent=1), "nu", ref["nu"])


if __name__ == "__main__":
    main()
