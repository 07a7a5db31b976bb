"""The recall corpus, round 18 part C: TW207, TW205 and TW206 classes the sets 25 and 26 (tuning
sets of round 18) showed - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a Python number weighted into the loss
# Semi-supervised scripts weight an unsupervised term by a ramp-up factor that a helper computes
# on the host (`return w * rampup(step, n)`, the ramp returning `float(np.exp(...))` or a
# `math` function) and log it with `writer.add_scalar(tag, weight, step)` beside the losses. The
# weight is a Python float: logging it reads nothing from the device.
_RAMPS = d("""
    import numpy as np
    def exp_rampup(current, length):
        if length == 0:
            return 1.0
        phase = 1.0 - np.clip(current, 0.0, length) / length
        return float(np.exp(-5.0 * phase * phase))
""")
_SEMI = d("""
    import argparse
    import torch
    import torch.nn.functional as F
    from torch.utils.tensorboard import SummaryWriter
    from helpers import schedule
    ap = argparse.ArgumentParser()
    ap.add_argument("--unsup-weight", type=float, default=0.1)
    args = ap.parse_args()
    def unsup_weight(it):
        return args.unsup_weight * schedule.exp_rampup(it, 40.0)
    def fit(net, loader, opt):
        writer = SummaryWriter()
        for it, (x, y) in enumerate(loader):
            x, y = x.cuda(), y.cuda()
            out = net(x)
            sup = F.cross_entropy(out, y)
            w = unsup_weight(it // 100)
            loss = sup + w * out.softmax(1).var()
            opt.zero_grad()
            loss.backward()
            opt.step()
            writer.add_scalar("train/unsup_weight", w, it)
""")
PROJECTS += [
    ProjectShape("TW207", "look-alike: add_scalar of a ramp-up weight a helper of another module returns as float(np.exp(...))",
                 {"helpers/__init__.py": "", "helpers/schedule.py": _RAMPS, "train.py": _SEMI}),
]
QUIET += [
    Shape("TW207", "look-alike: add_scalar of a weight a helper of the file returns from math.exp or a constant", d("""
        import math
        import torch
        from torch.utils.tensorboard import SummaryWriter
        def ramp(step, total):
            return 1.0 if step >= total else math.exp(-5.0 * (1.0 - step / total) ** 2)
        def train(model, loader, optimizer, crit, total):
            writer = SummaryWriter()
            for step, (x, y) in enumerate(loader):
                out = model(x.cuda())
                weight = ramp(step, total)
                loss = crit(out, y.cuda()) + weight * out.pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                writer.add_scalar("weight", weight, step)
    """)),
    Shape("TW207", "look-alike: add_scalar of a KL weight cast with float() in the loop", d("""
        import torch
        from torch.utils.tensorboard import SummaryWriter
        def train(vae, loader, opt, anneal):
            writer = SummaryWriter()
            for i, x in enumerate(loader):
                x = x.cuda()
                recon, kl = vae(x)
                beta = float(min(1.0, i / anneal))
                loss = recon + beta * kl
                opt.zero_grad()
                loss.backward()
                opt.step()
                writer.add_scalar("beta", beta, i)
    """)),
]

# ------------------------------------------------------------- TW207 a synchronize that times the batch for a meter
# The ImageNet-example loop keeps a `batch_time` meter: after the step (and the meters' reads)
# it calls `torch.cuda.synchronize()` so that `time.time() - end` covers the GPU work. Timing
# every batch that way makes the host wait for the GPU on every step of a real training run; a
# benchmark of the step (a function or file named for it) waits on purpose.
_TIMED = d("""
    import time
    import torch
    def train_one_epoch(loader, model, crit, opt, batch_time, losses):
        end = time.time()
        for i, (x, y) in enumerate(loader):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = crit(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.update(loss.detach(), x.size(0))
            torch.cuda.synchronize()
            batch_time.update(time.time() - end)
            end = time.time()
""")
FIND += [
    Shape("TW207", "torch.cuda.synchronize() before a batch_time meter update, every training step", _TIMED, 12),
    Shape("TW207", "the same after the meters' .item() reads (the synchronize still waits every step)",
          _TIMED.replace("loss.detach()", "loss.item()"), 12),
]
QUIET += [
    Shape("TW207", "look-alike: a function named for benchmarking the training step times it on purpose",
          _TIMED.replace("def train_one_epoch", "def benchmark_train_step")),
    Shape("TW207", "look-alike: the same loop in a throughput benchmark script", _TIMED, path="bench_training.py"),
]

# ------------------------------------------------------------- TW206 a clip sliced from a decoded video, per item
# A video dataset decodes the file in `__getitem__` (`skvideo.io.vread`, `imageio.mimread`),
# slices a clip or picks frames, and, when no transform is given, copies the array with
# `torch.tensor(clip)` in the `else` arm of `if self.transform:` - every item.
_VIDEO = d("""
    import random
    import imageio
    import torch
    from torch.utils.data import Dataset
    class Clips(Dataset):
        def __init__(self, files, n, transform=None):
            self.files, self.n, self.transform = files, n, transform
        def __len__(self):
            return len(self.files)
        def __getitem__(self, idx):
            video = imageio.mimread(self.files[idx])
            start = random.randint(0, len(video) - self.n)
            clip = video[start:start + self.n]
            if self.transform:
                clip = torch.stack([self.transform(f) for f in clip])
            else:
                clip = torch.tensor(clip)
            return clip
    train_set = Clips(["a.mp4", "b.mp4"], 16)
""")
FIND += [
    Shape("TW206", "torch.tensor() of a clip sliced from a decoded video in __getitem__ (the no-transform arm)", _VIDEO, 17),
    Shape("TW206", "torch.tensor() of one frame picked from a decoded video per item",
          _VIDEO.replace("clip = video[start:start + self.n]", "clip = video[start]"), 17),
]
QUIET += [
    Shape("TW206", "look-alike: the decoded clip converted with torch.from_numpy", _VIDEO.replace("torch.tensor(clip)", "torch.from_numpy(clip)")),
    Shape("TW206", "look-alike: torch.tensor() of a pixel read from a decoded image", _VIDEO.replace(
        "clip = video[start:start + self.n]", "clip = video[start][0, 0]")),
]
