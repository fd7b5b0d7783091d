"""The PyTorch peer of a dtbench recipe run: the same network (workloads/reference/torch_resnet.py,
the twin of dtbench's models), data, augmentation, optimizer, schedule and evaluation cadence, so that
time and epochs to a target accuracy can be set side by side with a dtbench record.

    /usr/bin/python3 bench/torch_recipe.py --arch resnet20 --epochs 10 --batch 128 --lr 0.1 \
        --crop-padding 2 --flip --target 0.91 --threads 2 --out results/reference/torch-resnet20.json

On a GPU (`--device cuda`, any PyTorch with CUDA): the data set lives on the device and is augmented there,
cuDNN picks its algorithms by timing (cudnn.benchmark), fp32 runs without TF32 (as dtbench's GPU backend), and
`--precision bf16|fp16` trains under autocast (fp16 with a dynamic loss scale), the usual mixed-precision recipe.

Recipe (mirrors dtbench's config keys): SGD, momentum 0.9, weight decay 5e-4 on conv and fc weights only
(no decay on bias and batch norm, dtbench's /optimizer/no_decay_bn_bias), cosine LR per epoch to 0 over
the run, per-channel normalisation with the training set's mean and std, random crop with zero padding
and horizontal flip. The data order and augmentation draws differ from dtbench's (torch's RNG): compare
curves and time to accuracy, not bits.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "reference"))
from torch_resnet import make_model  # noqa: E402

def idx(root, name):
    """An IDX file, gzipped (name) or not (name less .gz)."""
    path = os.path.join(root, name)
    if os.path.exists(path):
        with gzip.open(path) as f:
            data = f.read()
    else:
        with open(path[:-len(".gz")], "rb") as f:
            data = f.read()
    if name.startswith(("train-images", "t10k-images")):
        return np.frombuffer(data, np.uint8, offset=16).reshape(-1, 1, 28, 28)
    return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)


def augment(x, padding, flip, gen):
    """Random crop after zero padding, then a random horizontal flip; the draws come from gen (on the CPU),
    the crop is one gather on x's device."""
    n, c, h, w = x.shape
    if padding:
        padded = F.pad(x, (padding,) * 4)
        dy = torch.randint(0, 2 * padding + 1, (n,), generator=gen).to(x.device)
        dx = torch.randint(0, 2 * padding + 1, (n,), generator=gen).to(x.device)
        rows = (dy[:, None] + torch.arange(h, device=x.device))[:, :, None]  # n x h x 1
        cols = (dx[:, None] + torch.arange(w, device=x.device))[:, None, :]  # n x 1 x w
        x = padded[torch.arange(n, device=x.device)[:, None, None], :, rows, cols]  # n x h x w x c
        x = x.permute(0, 3, 1, 2).contiguous()
    if flip:
        mask = (torch.rand(n, generator=gen) < 0.5).to(x.device)
        x[mask] = x[mask].flip(3)
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="resnet20")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--crop-padding", type=int, default=2)
    ap.add_argument("--flip", action="store_true")
    ap.add_argument("--target", type=float, default=0.91)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="folder of the IDX files, gzipped or not")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.precision != "fp32" and a.device != "cuda":
        ap.error("--precision bf16/fp16 is the GPU's autocast recipe: use --device cuda")
    dev = torch.device(a.device)
    if a.device == "cuda":
        # Fails here, not silently later, where the cuDNN the loader finds is not the one PyTorch was built with
        # (an LD_LIBRARY_PATH made for another program, say).
        if not (torch.backends.cudnn.is_available() and torch.backends.cudnn.version()):
            raise SystemExit("torch_recipe.py: PyTorch cannot use cuDNN here")
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False  # fp32 is fp32, as in dtbench's GPU backend
        torch.backends.cuda.matmul.allow_tf32 = False
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.precision)
    scaler = None
    if a.precision == "fp16":  # dynamic loss scale
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)

    xtr, ytr = idx(a.data, "train-images-idx3-ubyte.gz"), idx(a.data, "train-labels-idx1-ubyte.gz")
    xte, yte = idx(a.data, "t10k-images-idx3-ubyte.gz"), idx(a.data, "t10k-labels-idx1-ubyte.gz")
    mean, std = xtr.mean() / 255.0, xtr.std() / 255.0
    to_t = lambda x: (torch.from_numpy(x.astype(np.float32) / 255.0) - mean) / std  # noqa: E731
    xtr_t, xte_t = to_t(xtr).to(dev), to_t(xte).to(dev)
    pad_value = (0.0 - mean) / std  # torchvision pads raw 0 before normalising; we pad normalised data
    ytr_t, yte_t = torch.from_numpy(ytr).to(dev), torch.from_numpy(yte).to(dev)

    model = make_model(a.arch, 1, 10).to(dev)
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": a.weight_decay},
                           {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, momentum=a.momentum)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs)
    steps_per_epoch = len(ytr) // a.batch  # the remainder is dropped, as dtbench does
    curve, tta = [], None
    start = time.time()
    train_time = 0.0
    for epoch in range(a.epochs):
        model.train()
        perm = torch.randperm(len(ytr), generator=gen)
        t0 = time.time()
        loss_sum = torch.zeros((), device=dev)  # summed on the device: no host round trip per step
        for s in range(steps_per_epoch):
            ix = perm[s * a.batch:(s + 1) * a.batch].to(dev)
            x = xtr_t[ix] - pad_value  # shift so zero padding is raw black, then shift back
            x = augment(x, a.crop_padding, a.flip, gen) + pad_value
            with torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
                loss = F.cross_entropy(model(x), ytr_t[ix])
            opt.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            loss_sum += loss.detach().float()
        loss_sum = loss_sum.item()  # waits for the epoch's last step
        epoch_time = time.time() - t0
        train_time += epoch_time
        sched.step()
        model.eval()
        correct, test_loss = 0, 0.0
        with torch.no_grad():
            for i in range(0, len(yte), 1000):
                with torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
                    out = model(xte_t[i:i + 1000]).float()
                test_loss += F.cross_entropy(out, yte_t[i:i + 1000], reduction="sum").item()
                correct += (out.argmax(1) == yte_t[i:i + 1000]).sum().item()
        acc = correct / len(yte)
        wall = time.time() - start
        curve.append({"epoch": epoch + 1, "wall_seconds": wall, "train_loss": loss_sum / steps_per_epoch,
                      "test_loss": test_loss / len(yte), "test_accuracy": acc, "lr": sched.get_last_lr()[0],
                      "train_seconds": epoch_time})
        print(f"epoch {epoch + 1} acc {acc:.4f} wall {wall:.0f}s img/s {steps_per_epoch * a.batch * (epoch + 1) / train_time:.0f}",
              flush=True)
        if tta is None and acc >= a.target:
            tta = {"seconds": wall, "epoch": epoch + 1}
    result = {"peer": f"PyTorch {torch.__version__}", "threads": torch.get_num_threads(), "recipe": vars(a),
              "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu",
              "cudnn": torch.backends.cudnn.version() if a.device == "cuda" else None,
              "images_per_second": steps_per_epoch * a.batch * a.epochs / train_time,
              # After the first epoch (cuDNN's benchmarking and the first launches): the figure to set beside a
              # dtbench record's steady_images_per_second, which leaves out its first step.
              "steady_images_per_second": (steps_per_epoch * a.batch * (a.epochs - 1) /
                                           sum(c["train_seconds"] for c in curve[1:])) if a.epochs > 1 else None,
              "curve": curve,
              "time_to_accuracy": tta, "final_accuracy": curve[-1]["test_accuracy"]}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
