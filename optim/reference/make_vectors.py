#!/usr/bin/python3
"""Reference vectors for tests/optim: optimizer trajectories and learning-rate schedules.

Run with Debian's interpreter, which has python3-torch 1.13 and numpy:

    /usr/bin/python3 optim/reference/make_vectors.py

It rewrites, beside itself:
  optimizers.json  one entry per case: the "/optimizer" config section the C++ factory reads, the
                   source of the reference, and where its arrays are in optimizers.bin
  optimizers.bin   little-endian float32 arrays: the shared problem (initial weights, curvature,
                   targets, per-step gradient noise, SGLD's fixed noise) and each case's weights after
                   steps 1, 10 and 50
  schedules.json   one entry per case: the "/optimizer", "/lr_scaling" and "/schedule" sections, the
                   run's shape, the evaluation metrics fed to plateau, and the LR of every step

The problem. Seven tensors of different kinds and sizes share one flat buffer (conv 8x4x3x3, two
batch-norm vectors of 8, fc 10x16, an fc bias of size 1, a zero tensor whose weights and gradients stay
0, and a "frozen" tensor with weights but a zero gradient). The loss is a separable quadratic plus
noise, so gradients depend on the weights:
    g_t = c * (w - target) + xi_t
with c, target and xi_t fixed per element (xi_t drawn per step from a seeded generator). The learning
rate varies per step, lr_t = lr * (1 - 0.5 (t - 1) / 50), so that the per-step learning rate is
exercised too. Every case runs 50 steps.

References:
  - PyTorch 1.13 for every optimizer torch has: SGD (plain, momentum, dampening, Nesterov, L2 weight
    decay), Adam, AdamW, Adamax, NAdam, Adagrad, RMSprop (plain, centred with momentum), Adadelta, with
    torch.nn.utils.clip_grad_norm_/clip_grad_value_ for clipping. Bias and batch-norm tensors go into a
    parameter group with weight_decay 0 (the no_decay_bn_bias rule). The seeds' decoupled SGD weight
    decay is torch SGD without weight decay after p.mul_(1 - 2 lr wd) (the same order as torch AdamW).
    NAdam runs with foreach=True: torch 1.13's default single-tensor NAdam multiplies mu_t into the
    product for the momentum term twice (mu_product * mu * mu_next), unlike its documentation and its
    foreach code (fixed in later PyTorch releases).
  - NumPy in float64, written from the papers' formulas (cited at each function), for LARS, LAMB, FTRL,
    DCASGD and SGLD.
The C++ runs in float32; the tests state their tolerances.
"""

import json
import math
import os

import numpy as np
import torch

torch.set_num_threads(1)
HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 50
CHECKPOINTS = [1, 10, 50]

# name, shape, kind (conv_weight, fc_weight, bias, bn)
TENSORS = [
    ("conv1.weight", (8, 4, 3, 3), "conv_weight"),
    ("bn1.gamma", (8,), "bn"),
    ("bn1.beta", (8,), "bn"),
    ("fc.weight", (10, 16), "fc_weight"),
    ("fc.bias", (1,), "bias"),
    ("zero.weight", (6,), "conv_weight"),
    ("frozen.weight", (4,), "fc_weight"),
]


def build_problem():
    rng = np.random.default_rng(20240611)
    table, init, c, target, xi_scale = [], [], [], [], []
    offset = 0
    for name, shape, kind in TENSORS:
        n = int(np.prod(shape))
        table.append({"name": name, "offset": offset, "size": n, "kind": kind})
        offset += n
        if name == "zero.weight":
            init.append(np.zeros(n)); c.append(np.ones(n)); target.append(np.zeros(n)); xi_scale.append(np.zeros(n))
        elif name == "frozen.weight":
            init.append(rng.normal(0, 0.5, n)); c.append(np.zeros(n)); target.append(np.zeros(n))
            xi_scale.append(np.zeros(n))
        elif name == "bn1.gamma":
            init.append(1.0 + rng.normal(0, 0.1, n)); c.append(rng.uniform(0.5, 2.0, n))
            target.append(rng.normal(1.0, 0.2, n)); xi_scale.append(np.full(n, 0.3))
        else:
            init.append(rng.normal(0, 0.3, n)); c.append(rng.uniform(0.5, 2.0, n))
            target.append(rng.normal(0, 0.5, n)); xi_scale.append(np.full(n, 0.3))
    f32 = lambda parts: np.concatenate(parts).astype(np.float32)
    init, c, target, xi_scale = f32(init), f32(c), f32(target), f32(xi_scale)
    xi = (rng.normal(0, 1, (STEPS, offset)) * xi_scale).astype(np.float32)
    sgld_noise = rng.normal(0, 1, (STEPS, offset)).astype(np.float32)
    lr_scale = [1.0 - 0.5 * (t - 1) / STEPS for t in range(1, STEPS + 1)]
    return {"table": table, "n": offset, "init": init, "c": c, "target": target, "xi": xi,
            "sgld_noise": sgld_noise, "lr_scale": lr_scale}


P = build_problem()
SLICES = [(t["offset"], t["offset"] + t["size"]) for t in P["table"]]
KINDS = [t["kind"] for t in P["table"]]


def is_bn_or_bias(kind):
    return kind in ("bn", "bias")


def per_tensor_decay(cfg):
    wd = cfg.get("weight_decay", 0.0)
    return [0.0 if cfg.get("no_decay_bn_bias", True) and is_bn_or_bias(k) else wd for k in KINDS]


# --------------------------------------------------------------------------------------------------
# PyTorch 1.13 trajectories

def torch_run(cfg):
    params = [torch.tensor(P["init"][a:b].copy(), requires_grad=True) for a, b in SLICES]
    c = [torch.tensor(P["c"][a:b]) for a, b in SLICES]
    target = [torch.tensor(P["target"][a:b]) for a, b in SLICES]
    decay = per_tensor_decay(cfg)
    name = cfg["name"]
    decoupled_sgd = name == "sgd" and cfg.get("decoupled_weight_decay", False)
    wd = cfg.get("weight_decay", 0.0)
    decayed = [p for p, d in zip(params, decay) if d > 0]
    exempt = [p for p, d in zip(params, decay) if d == 0]
    group_wd = 0.0 if decoupled_sgd else wd
    groups = [{"params": decayed, "weight_decay": group_wd}] if decayed else []
    if exempt:
        groups.append({"params": exempt, "weight_decay": 0.0})
    lr = cfg["lr"]
    if name == "sgd":
        opt = torch.optim.SGD(groups, lr=lr, momentum=cfg.get("momentum", 0.9), dampening=cfg.get("dampening", 0.0),
                              nesterov=cfg.get("nesterov", False))
    elif name == "adam":
        opt = torch.optim.Adam(groups, lr=lr, betas=(cfg.get("beta1", 0.9), cfg.get("beta2", 0.999)),
                               eps=cfg.get("eps", 1e-8))
    elif name == "adamw":
        opt = torch.optim.AdamW(groups, lr=lr, betas=(cfg.get("beta1", 0.9), cfg.get("beta2", 0.999)),
                                eps=cfg.get("eps", 1e-8))
    elif name == "adamax":
        opt = torch.optim.Adamax(groups, lr=lr, betas=(cfg.get("beta1", 0.9), cfg.get("beta2", 0.999)),
                                 eps=cfg.get("eps", 1e-8))
    elif name == "nadam":
        opt = torch.optim.NAdam(groups, lr=lr, betas=(cfg.get("beta1", 0.9), cfg.get("beta2", 0.999)),
                                eps=cfg.get("eps", 1e-8), momentum_decay=cfg.get("momentum_decay", 0.004),
                                foreach=True)
    elif name == "adagrad":
        opt = torch.optim.Adagrad(groups, lr=lr, lr_decay=cfg.get("lr_decay", 0.0),
                                  initial_accumulator_value=cfg.get("initial_accumulator_value", 0.0),
                                  eps=cfg.get("eps", 1e-10))
    elif name == "rmsprop":
        opt = torch.optim.RMSprop(groups, lr=lr, alpha=cfg.get("alpha", 0.99), eps=cfg.get("eps", 1e-8),
                                  momentum=cfg.get("momentum", 0.0), centered=cfg.get("centered", False))
    elif name == "adadelta":
        opt = torch.optim.Adadelta(groups, lr=lr, rho=cfg.get("rho", 0.9), eps=cfg.get("eps", 1e-6))
    else:
        raise ValueError(name)

    checkpoints = {}
    for t in range(1, STEPS + 1):
        lr_t = lr * P["lr_scale"][t - 1]
        for g in opt.param_groups:
            g["lr"] = lr_t
        with torch.no_grad():
            for k, (a, b) in enumerate(SLICES):
                xi = torch.tensor(P["xi"][t - 1, a:b])
                params[k].grad = c[k] * (params[k] - target[k]) + xi
        if cfg.get("clip_grad_norm", 0.0) > 0:
            torch.nn.utils.clip_grad_norm_(params, cfg["clip_grad_norm"])
        if cfg.get("clip_grad_value", 0.0) > 0:
            torch.nn.utils.clip_grad_value_(params, cfg["clip_grad_value"])
        if decoupled_sgd:
            with torch.no_grad():
                for p in decayed:
                    p.mul_(1.0 - 2.0 * lr_t * wd)
        opt.step()
        if t in CHECKPOINTS:
            checkpoints[t] = np.concatenate([p.detach().numpy().copy() for p in params]).astype(np.float32)
    return checkpoints


# --------------------------------------------------------------------------------------------------
# NumPy references from the papers (float64)

def grads_at(w):
    """Gradient of the quadratic problem at w, for each step: a closure over xi_t."""
    c = P["c"].astype(np.float64)
    target = P["target"].astype(np.float64)
    return lambda t, at: c * (at - target) + P["xi"][t - 1].astype(np.float64)


def clip_transform(cfg, g):
    """Clip by global norm (torch.nn.utils.clip_grad_norm_), then by value (clip_grad_value_)."""
    max_norm = cfg.get("clip_grad_norm", 0.0)
    if max_norm > 0:
        coef = max_norm / (np.sqrt(np.sum(g * g)) + 1e-6)
        if coef < 1:
            g = g * coef
    limit = cfg.get("clip_grad_value", 0.0)
    if limit > 0:
        g = np.clip(g, -limit, limit)
    return g


def numpy_run(cfg, update):
    """Runs `update(t, lr_t, w, g, state) -> w` for 50 steps on the shared problem."""
    w = P["init"].astype(np.float64)
    grad = grads_at(w)
    state = {}
    history = [w.copy()]
    delay = cfg.get("_delay", 0)
    checkpoints = {}
    for t in range(1, STEPS + 1):
        lr_t = cfg["lr"] * P["lr_scale"][t - 1]
        at = history[max(t - 1 - delay, 0)]  # the weights the gradient was computed at
        g = clip_transform(cfg, grad(t, at))
        state["w_bak"] = at
        w = update(t, lr_t, w.copy(), g, state)
        history.append(w.copy())
        if t in CHECKPOINTS:
            checkpoints[t] = w.astype(np.float32)
    return checkpoints


def lars_update(cfg):
    """LARS, You, Gitman and Ginsburg 2017 (arXiv:1708.03888), Algorithm 1, with the MLPerf ResNet
    reference's epsilon and exclusions (mlcommons/training image_classification lars_optimizer.py):
        local_lr = eta * ||w|| / (||g|| + beta ||w|| + eps), 1 when a norm is 0 or the tensor is skipped
        v = m v + lr * local_lr * (g + beta w);  w = w - v
    beta is the weight decay; bias and bn tensors are skipped (trust 1, and no decay by the
    no_decay_bn_bias rule)."""
    decay = per_tensor_decay(cfg)
    eta, eps, mom = cfg.get("eta", 0.001), cfg.get("eps", 0.0), cfg.get("momentum", 0.9)
    exclude = cfg.get("trust_exclude_bn_bias", True)

    def update(t, lr, w, g, s):
        v = s.setdefault("v", np.zeros_like(w))
        for k, (a, b) in enumerate(SLICES):
            wn, gn = np.linalg.norm(w[a:b]), np.linalg.norm(g[a:b])
            beta = decay[k]
            skip = exclude and is_bn_or_bias(KINDS[k])
            local = 1.0 if (skip or wn == 0 or gn == 0) else eta * wn / (gn + beta * wn + eps)
            v[a:b] = mom * v[a:b] + lr * local * (g[a:b] + beta * w[a:b])
            w[a:b] = w[a:b] - v[a:b]
        return w
    return update


def lamb_update(cfg):
    """LAMB, You et al. 2019 (arXiv:1904.00962), Algorithm 2:
        m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
        m^ = m / (1 - b1^t);  v^ = v / (1 - b2^t)          (bias correction optional)
        r = m^ / (sqrt(v^) + eps)
        w = w - lr * phi(||w||) / ||r + lambda w|| * (r + lambda w)
    with phi the identity and the ratio ||w|| / ||r + lambda w|| clamped at trust_clip when > 0, and 1
    when a norm is 0 or the tensor is excluded (bias, bn)."""
    decay = per_tensor_decay(cfg)
    b1, b2, eps = cfg.get("beta1", 0.9), cfg.get("beta2", 0.999), cfg.get("eps", 1e-6)
    bc, clip = cfg.get("bias_correction", True), cfg.get("trust_clip", 0.0)
    exclude = cfg.get("trust_exclude_bn_bias", True)

    def update(t, lr, w, g, s):
        m = s.setdefault("m", np.zeros_like(w))
        v = s.setdefault("v", np.zeros_like(w))
        m[:] = b1 * m + (1 - b1) * g
        v[:] = b2 * v + (1 - b2) * g * g
        mh = m / (1 - b1 ** t) if bc else m
        vh = v / (1 - b2 ** t) if bc else v
        r = mh / (np.sqrt(vh) + eps)
        for k, (a, b) in enumerate(SLICES):
            u = r[a:b] + decay[k] * w[a:b]
            wn, un = np.linalg.norm(w[a:b]), np.linalg.norm(u)
            skip = exclude and is_bn_or_bias(KINDS[k])
            ratio = 1.0 if (skip or wn == 0 or un == 0) else wn / un
            if clip > 0 and not skip:
                ratio = min(ratio, clip)
            w[a:b] = w[a:b] - lr * ratio * u
        return w
    return update


def ftrl_update(cfg):
    """FTRL-Proximal, McMahan et al. 2013 ("Ad click prediction: a view from the trenches"), Algorithm 1,
    per coordinate i, with alpha = lr and the learning-rate power p of the tf.keras Ftrl documentation
    (p = -0.5 is the paper's sqrt):
        sigma = (n_i + g_i^2)^(-p) - n_i^(-p)) / alpha
        z_i = z_i + g_i - sigma w_i;   n_i = n_i + g_i^2
        w_i = 0 if |z_i| <= lambda1, else -(z_i - sgn(z_i) lambda1) / ((beta + n_i^(-p)) / alpha + lambda2)
    Weight decay enters the gradient as L2 (g + wd w), as for the other optimizers."""
    decay = np.concatenate([np.full(b - a, d) for (a, b), d in zip(SLICES, per_tensor_decay(cfg))])
    l1, l2, beta = cfg.get("l1", 0.0), cfg.get("l2", 0.0), cfg.get("beta", 1.0)
    p, n0 = cfg.get("lr_power", -0.5), cfg.get("initial_accumulator_value", 0.1)

    def update(t, lr, w, g, s):
        z = s.setdefault("z", np.zeros_like(w))
        n = s.setdefault("n", np.full_like(w, np.float32(n0)))
        g = g + decay * w
        n_new = n + g * g
        sigma = (n_new ** (-p) - n ** (-p)) / lr
        z[:] = z + g - sigma * w
        n[:] = n_new
        return np.where(np.abs(z) <= l1, 0.0, -(z - np.sign(z) * l1) / ((beta + n ** (-p)) / lr + l2))
    return update


def dcasgd_update(cfg):
    """DC-ASGD, Zheng et al. 2017 ("Asynchronous stochastic gradient descent with delay compensation"),
    the constant-lambda variant: a gradient g computed at the backup w_bak is applied at w as
        g + lambda g * g * (w - w_bak)
    then as in MXNet's DCASGD optimizer: v = mu v - lr (that + wd w); w = w + v. With "_delay": the
    gradient is computed at the weights `_delay` steps back and that backup is passed to the C++ step;
    without it, MXNet's own rule: w_bak = the weights before the previous update (w itself on the first
    step)."""
    decay = np.concatenate([np.full(b - a, d) for (a, b), d in zip(SLICES, per_tensor_decay(cfg))])
    lam, mom = cfg.get("lambda", 0.04), cfg.get("momentum", 0.0)
    passed_backup = cfg.get("_delay", 0) > 0

    def update(t, lr, w, g, s):
        w_bak = s["w_bak"] if passed_backup else s.get("previous", w)
        d = g + decay * w + lam * g * g * (w - w_bak)
        s["previous"] = w.copy()
        v = s.setdefault("v", np.zeros_like(w))
        v[:] = mom * v - lr * d
        return w + v
    return update


def sgld_update(cfg):
    """SGLD, Welling and Teh 2011 ("Bayesian learning via stochastic gradient Langevin dynamics"), eq. 4,
    with MXNet's weight decay and a temperature T on the injected noise:
        w = w - lr/2 (g + wd w) + N(0, lr T)
    The N(0, 1) draws are the fixed sequence stored in optimizers.bin (sgld_noise)."""
    decay = np.concatenate([np.full(b - a, d) for (a, b), d in zip(SLICES, per_tensor_decay(cfg))])
    temp = cfg.get("temperature", 1.0)

    def update(t, lr, w, g, s):
        xi = P["sgld_noise"][t - 1].astype(np.float64)
        return w - lr / 2 * (g + decay * w) + math.sqrt(lr * temp) * xi
    return update


NUMPY = {"lars": lars_update, "lamb": lamb_update, "ftrl": ftrl_update, "dcasgd": dcasgd_update,
         "sgld": sgld_update}

# --------------------------------------------------------------------------------------------------
# Cases: (case name, "/optimizer" section; keys starting with "_" are test instructions, not config)

OPTIMIZER_CASES = [
    ("sgd_plain", {"name": "sgd", "lr": 0.1, "momentum": 0.0, "weight_decay": 0.01}),
    ("sgd_momentum", {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
    ("sgd_dampening", {"name": "sgd", "lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("sgd_nesterov", {"name": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("sgd_decay_all", {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.02,
                       "no_decay_bn_bias": False}),
    ("sgd_decoupled", {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.02,
                       "decoupled_weight_decay": True}),
    ("sgd_clip_norm", {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.01, "clip_grad_norm": 2.0}),
    ("adam", {"name": "adam", "lr": 0.01, "weight_decay": 0.01}),
    ("adam_clip_value", {"name": "adam", "lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6,
                         "weight_decay": 0.01, "clip_grad_value": 0.4}),
    ("adamw", {"name": "adamw", "lr": 0.01, "weight_decay": 0.05}),
    ("adamax", {"name": "adamax", "lr": 0.02, "weight_decay": 0.01}),
    ("nadam", {"name": "nadam", "lr": 0.01, "weight_decay": 0.01, "momentum_decay": 0.004}),
    ("adagrad", {"name": "adagrad", "lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1,
                 "weight_decay": 0.01}),
    ("rmsprop", {"name": "rmsprop", "lr": 0.01, "alpha": 0.9, "weight_decay": 0.01}),
    ("rmsprop_centered_momentum", {"name": "rmsprop", "lr": 0.005, "alpha": 0.9, "momentum": 0.5,
                                   "centered": True, "weight_decay": 0.01}),
    ("adadelta", {"name": "adadelta", "lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.01}),
    ("lars", {"name": "lars", "lr": 2.0, "momentum": 0.9, "eta": 0.02, "weight_decay": 0.01}),
    ("lars_no_exclusions", {"name": "lars", "lr": 2.0, "momentum": 0.9, "eta": 0.02, "eps": 1e-9,
                            "weight_decay": 0.01, "no_decay_bn_bias": False, "trust_exclude_bn_bias": False,
                            "clip_grad_value": 0.5}),
    ("lamb", {"name": "lamb", "lr": 0.02, "weight_decay": 0.01}),
    ("lamb_no_bias_correction_clip", {"name": "lamb", "lr": 0.02, "weight_decay": 0.01, "bias_correction": False,
                                      "trust_clip": 0.5, "clip_grad_norm": 3.0}),
    ("ftrl", {"name": "ftrl", "lr": 0.1, "l1": 0.0, "l2": 0.0, "beta": 1.0}),
    ("ftrl_l1_l2", {"name": "ftrl", "lr": 0.2, "l1": 0.05, "l2": 0.1, "beta": 1.0, "lr_power": -0.6,
                    "initial_accumulator_value": 0.2, "weight_decay": 0.01}),
    ("dcasgd", {"name": "dcasgd", "lr": 0.05, "lambda": 0.04, "weight_decay": 0.01}),
    ("dcasgd_momentum_delayed", {"name": "dcasgd", "lr": 0.05, "momentum": 0.5, "lambda": 0.5,
                                 "weight_decay": 0.01, "_delay": 2}),
    ("sgld", {"name": "sgld", "lr": 0.01, "temperature": 0.5, "weight_decay": 0.01}),
]


def write_optimizers():
    blob = bytearray()
    arrays = {}

    def put(key, a):
        a = np.ascontiguousarray(a, dtype="<f4")
        arrays[key] = {"offset": len(blob), "count": int(a.size)}
        blob.extend(a.tobytes())

    put("init", P["init"])
    put("c", P["c"])
    put("target", P["target"])
    put("xi", P["xi"])
    put("sgld_noise", P["sgld_noise"])
    cases = []
    for case_name, cfg in OPTIMIZER_CASES:
        if cfg["name"] in NUMPY:
            source = "numpy float64, " + {"lars": "You et al. 2017 + MLPerf", "lamb": "You et al. 2019",
                                          "ftrl": "McMahan et al. 2013", "dcasgd": "Zheng et al. 2017 + MXNet",
                                          "sgld": "Welling and Teh 2011 + MXNet"}[cfg["name"]]
            cps = numpy_run(cfg, NUMPY[cfg["name"]](cfg))
        else:
            source = "torch " + torch.__version__ + " float32"
            cps = torch_run(cfg)
        entry = {"case": case_name, "source": source,
                 "optimizer": {k: v for k, v in cfg.items() if not k.startswith("_")},
                 "delay": cfg.get("_delay", 0), "checkpoints": {}}
        for t, w in cps.items():
            key = "%s/w%d" % (case_name, t)
            put(key, w)
            entry["checkpoints"][str(t)] = key
        cases.append(entry)
    manifest = {
        "about": "written by optim/reference/make_vectors.py; arrays are little-endian float32 in optimizers.bin",
        "steps": STEPS, "table": P["table"], "lr_scale": P["lr_scale"],
        "gradient": "g_t = c * (w - target) + xi[t-1] at the weights the gradient is computed at",
        "arrays": arrays, "cases": cases,
    }
    with open(os.path.join(HERE, "optimizers.bin"), "wb") as f:
        f.write(bytes(blob))
    with open(os.path.join(HERE, "optimizers.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


# --------------------------------------------------------------------------------------------------
# Schedules

def torch_schedule(peak, spe, epochs, per_step=(), per_epoch=(), plateau=None, metrics=None):
    """LRs of every step from PyTorch schedulers driving one optimizer: `per_step` factories are
    stepped after every update, `per_epoch` ones (and ReduceLROnPlateau with metrics[e]) after each
    epoch."""
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=peak)
    step_scheds = [f(opt) for f in per_step]
    epoch_scheds = [f(opt) for f in per_epoch]
    plat = plateau(opt) if plateau else None
    lrs = []
    for e in range(epochs):
        for _ in range(spe):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            for s in step_scheds:
                s.step()
        for s in epoch_scheds:
            s.step()
        if plat:
            plat.step(metrics[e])
    return lrs


def closed_form(peak, spe, epochs, unit, decay, warmup_steps=0, start_factor=0.0):
    """The documented formula lr = warmup(step) * decay(t), written out independently of the C++."""
    lrs = []
    for step in range(spe * epochs):
        t = step // spe if unit == "epoch" else step
        w = 1.0 if step >= warmup_steps else start_factor + (1 - start_factor) * step / warmup_steps
        lrs.append(w * decay(t))
    return lrs


def write_schedules():
    sched = torch.optim.lr_scheduler
    cases = []

    def add(name, source, optimizer, scaling, schedule, spe, epochs, batch, lrs, metrics=None):
        cases.append({"case": name, "source": source, "optimizer": optimizer, "lr_scaling": scaling,
                      "schedule": schedule,
                      "run": {"global_batch": batch, "steps_per_epoch": spe, "total_steps": spe * epochs},
                      "metrics": metrics, "lr": lrs})

    none = {"rule": "none", "reference_batch": 256}
    sgd = lambda lr: {"name": "sgd", "lr": lr}
    tv = "torch " + torch.__version__

    add("step_epoch", tv + " StepLR per epoch", sgd(0.1), none,
        {"name": "step", "unit": "epoch", "step_size": 3, "gamma": 0.5}, 4, 12, 256,
        torch_schedule(0.1, 4, 12, per_epoch=[lambda o: sched.StepLR(o, 3, 0.5)]))
    add("step_per_step", tv + " StepLR per iteration", sgd(0.1), none,
        {"name": "step", "unit": "step", "step_size": 7, "gamma": 0.7}, 5, 6, 256,
        torch_schedule(0.1, 5, 6, per_step=[lambda o: sched.StepLR(o, 7, 0.7)]))
    add("multistep_epoch", tv + " MultiStepLR per epoch", sgd(0.2), none,
        {"name": "multistep", "unit": "epoch", "milestones": [2, 5, 7], "gamma": 0.1}, 3, 10, 256,
        torch_schedule(0.2, 3, 10, per_epoch=[lambda o: sched.MultiStepLR(o, [2, 5, 7], 0.1)]))
    add("exponential_epoch", tv + " ExponentialLR per epoch", sgd(0.1), none,
        {"name": "exponential", "unit": "epoch", "gamma": 0.8}, 2, 10, 256,
        torch_schedule(0.1, 2, 10, per_epoch=[lambda o: sched.ExponentialLR(o, 0.8)]))
    add("exponential_step", tv + " ExponentialLR per iteration", sgd(0.1), none,
        {"name": "exponential", "unit": "step", "gamma": 0.95}, 4, 5, 256,
        torch_schedule(0.1, 4, 5, per_step=[lambda o: sched.ExponentialLR(o, 0.95)]))
    add("cosine_epoch", tv + " CosineAnnealingLR per epoch, T_max = run", sgd(0.1), none,
        {"name": "cosine", "unit": "epoch", "t_max": 0, "eta_min": 0.001}, 3, 10, 256,
        torch_schedule(0.1, 3, 10, per_epoch=[lambda o: sched.CosineAnnealingLR(o, 10, 0.001)]))
    add("polynomial_epoch", tv + " PolynomialLR per epoch (end_lr 0)", sgd(0.1), none,
        {"name": "polynomial", "unit": "epoch", "power": 2.0, "end_lr": 0.0, "total": 8}, 2, 10, 256,
        torch_schedule(0.1, 2, 10, per_epoch=[lambda o: sched.PolynomialLR(o, 8, 2.0)]))
    add("linear_scaling_warmup_multistep",
        tv + " LinearLR per iteration + MultiStepLR per epoch on one optimizer; peak 0.1 * 1024 / 256",
        sgd(0.1), {"rule": "linear", "reference_batch": 256},
        {"name": "multistep", "unit": "epoch", "milestones": [4, 7], "gamma": 0.1,
         "warmup": {"epochs": 2, "start_factor": 0.25}}, 5, 10, 1024,
        torch_schedule(0.4, 5, 10, per_step=[lambda o: sched.LinearLR(o, 0.25, 1.0, total_iters=10)],
                       per_epoch=[lambda o: sched.MultiStepLR(o, [4, 7], 0.1)]))
    add("warmup_cosine_step", tv + " LinearLR + CosineAnnealingLR, both per iteration", sgd(0.05), none,
        {"name": "cosine", "unit": "step", "t_max": 0, "eta_min": 0.0, "warmup": {"steps": 12, "start_factor": 0.1}},
        6, 5, 256,
        torch_schedule(0.05, 6, 5, per_step=[lambda o: sched.LinearLR(o, 0.1, 1.0, total_iters=12),
                                              lambda o: sched.CosineAnnealingLR(o, 30, 0.0)]))
    acc = [0.30, 0.45, 0.50, 0.50, 0.503, 0.49, 0.52, 0.52, 0.52, 0.52, 0.521, 0.60, 0.60, 0.60, 0.59,
           0.58, 0.61, 0.61, 0.61, 0.61]
    add("plateau_max", tv + " ReduceLROnPlateau mode max", sgd(0.1), none,
        {"name": "plateau", "unit": "epoch", "mode": "max", "factor": 0.5, "patience": 2, "threshold": 0.01,
         "cooldown": 1, "min_lr": 0.02}, 2, 20, 256,
        torch_schedule(0.1, 2, 20, plateau=lambda o: sched.ReduceLROnPlateau(
            o, mode="max", factor=0.5, patience=2, threshold=0.01, cooldown=1, min_lr=0.02), metrics=acc), acc)
    loss = [2.0, 1.5, 1.4, 1.4, 1.39, 1.41, 1.2, 1.2, 1.21, 1.19, 1.0, 1.0]
    add("plateau_min_warmup", tv + " LinearLR per iteration + ReduceLROnPlateau mode min", sgd(0.1), none,
        {"name": "plateau", "unit": "epoch", "mode": "min", "factor": 0.1, "patience": 1, "threshold": 0.001,
         "cooldown": 0, "min_lr": 0.0, "warmup": {"epochs": 1, "start_factor": 0.5}}, 3, 12, 256,
        torch_schedule(0.1, 3, 12, per_step=[lambda o: sched.LinearLR(o, 0.5, 1.0, total_iters=3)],
                       plateau=lambda o: sched.ReduceLROnPlateau(o, mode="min", factor=0.1, patience=1,
                                                                  threshold=0.001), metrics=loss), loss)

    # Not in torch 1.13: the formulas, written out here.
    add("polynomial_end_lr", "formula: TF polynomial_decay (eta - end) (1 - t/T)^p + end", sgd(0.1), none,
        {"name": "polynomial", "unit": "epoch", "power": 2.0, "end_lr": 1e-4, "total": 0}, 3, 10, 256,
        closed_form(0.1, 3, 10, "epoch", lambda t: (0.1 - 1e-4) * (1 - min(t, 10) / 10) ** 2 + 1e-4))
    add("inverse_sqrt", "formula: seeds' eta = alpha / sqrt(beta + t)", sgd(0.3), none,
        {"name": "inverse_sqrt", "unit": "step", "beta": 4.0}, 5, 4, 256,
        closed_form(0.3, 5, 4, "step", lambda t: 0.3 / math.sqrt(4.0 + t)))
    add("warmup_from_zero", "formula: Goyal et al. gradual warmup from 0 over 3 epochs", sgd(0.1), none,
        {"name": "constant", "unit": "epoch", "warmup": {"epochs": 3, "start_factor": 0.0}}, 4, 6, 256,
        closed_form(0.1, 4, 6, "epoch", lambda t: 0.1, warmup_steps=12))
    add("goyal_from_reference_lr",
        "formula: Goyal et al. 2017, eta = 0.1 at 256, k = 8: warmup from eta to k eta over 5 epochs, /10 at 8 and 10",
        sgd(0.1), {"rule": "linear", "reference_batch": 256},
        {"name": "multistep", "unit": "epoch", "milestones": [8, 10], "gamma": 0.1,
         "warmup": {"epochs": 5, "from_reference_lr": True}}, 3, 12, 2048,
        closed_form(0.8, 3, 12, "epoch", lambda t: 0.8 * 0.1 ** sum(1 for m in (8, 10) if t >= m),
                    warmup_steps=15, start_factor=0.1 / 0.8))
    add("sqrt_scaling_fractional_warmup", "formula: sqrt rule 0.1 * sqrt(1024/256), warmup 1.5 epochs",
        sgd(0.1), {"rule": "sqrt", "reference_batch": 256},
        {"name": "constant", "unit": "epoch", "warmup": {"epochs": 1.5, "start_factor": 0.0}}, 4, 3, 1024,
        closed_form(0.2, 4, 3, "epoch", lambda t: 0.2, warmup_steps=6))

    with open(os.path.join(HERE, "schedules.json"), "w") as f:
        json.dump({"about": "written by optim/reference/make_vectors.py", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    write_optimizers()
    write_schedules()
    for name in ("optimizers.json", "optimizers.bin", "schedules.json"):
        print("%-16s %8d bytes" % (name, os.path.getsize(os.path.join(HERE, name))))
