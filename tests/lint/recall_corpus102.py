"""The recall corpus, round 30 part A (TW207): host reads behind one call in code that runs every
training step - a metric or logging helper of another module that the training loop hands its
device tensors every step. The call was reported in the loop; the read itself, in the helper
(where the fix goes), was not. Written in our own words, reduced to the shape, with look-alikes
that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_LOOP = d("""
    import torch
    from {imp}

    def train(model, loader, opt):
        model.cuda()
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = model(x)
            loss = torch.nn.functional.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            {call}
""")

# ------------------------------------------------------------- TW207 a helper of another module reads what the step hands it
PROJECTS += [
    ProjectShape("TW207", "a top-1 accuracy helper of utils.py ends in .item(); the training loop calls it every step", {
        "utils.py": d("""
            import torch

            def top1(logits, labels):
                hits = (logits.argmax(dim=1) == labels).float().sum()
                return hits.item() * 100.0 / labels.size(0)
        """),
        "train.py": _LOOP.format(imp="utils import top1", call="acc = top1(out, y)"),
    }, (("utils.py", 5), ("train.py", 13))),
    ProjectShape("TW207", "a ranking metric copies both arguments to NumPy, reached through a package's star import", {
        "helpers/__init__.py": "from .ranking import *\n",
        "helpers/ranking.py": d("""
            import numpy as np

            def mean_ap(targets, scores, k=5):
                _, best = scores.topk(k, 1)
                t = targets.data.cpu().numpy()
                b = best.data.cpu().numpy()
                return float(np.mean([float(a in row) for a, row in zip(t, b)]))
        """),
        "train.py": _LOOP.format(imp="helpers import *", call="score = mean_ap(y, out)"),
    }, (("helpers/ranking.py", 5), ("helpers/ranking.py", 6), ("train.py", 13))),
    ProjectShape("TW207", "a running-average logger's update() calls .item() on every tensor it is handed", {
        "tools/meters.py": d("""
            import torch

            class Meters:
                def __init__(self):
                    self.sums = {}

                def update(self, **values):
                    for key, v in values.items():
                        if isinstance(v, torch.Tensor):
                            v = v.item()
                        self.sums[key] = self.sums.get(key, 0.0) + v
        """),
        "train.py": _LOOP.format(imp="tools.meters import Meters\nmeters = Meters()", call="meters.update(loss=loss)"),
    }, (("tools/meters.py", 10), ("train.py", 14))),
    ProjectShape("TW207", "an accuracy helper with a CPU branch: only the GPU branch's read runs on a GPU", {
        "lib/metrics.py": d("""
            import torch

            def hit_rate(logits, label):
                pred = torch.argmax(logits, dim=1)
                if torch.cuda.is_available():
                    return (pred == label).type(torch.cuda.FloatTensor).mean().item()
                else:
                    return (pred == label).type(torch.FloatTensor).mean().item()
        """),
        "train.py": _LOOP.format(imp="lib.metrics import hit_rate", call="acc = hit_rate(out, y)"),
    }, (("lib/metrics.py", 6), ("train.py", 13))),
]
PROJECTS += [
    ProjectShape("TW207", "look-alike: the helper is called only under a log interval", {
        "utils.py": d("""
            def top1(logits, labels):
                return (logits.argmax(dim=1) == labels).float().mean().item()
        """),
        "train.py": _LOOP.format(imp="utils import top1", call="if len(opt.state) % 100 == 0:\n                acc = top1(out, y)"),
    }),
    ProjectShape("TW207", "look-alike: the helper is called only by a validation pass under no_grad", {
        "utils.py": d("""
            def top1(logits, labels):
                return (logits.argmax(dim=1) == labels).float().mean().item()
        """),
        "train.py": d("""
            import torch
            from utils import top1

            def validate(model, loader):
                model.eval()
                with torch.no_grad():
                    for x, y in loader:
                        x, y = x.cuda(), y.cuda()
                        print(top1(model(x), y))

            def train(model, loader, opt):
                for x, y in loader:
                    loss = model(x.cuda()).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """),
    }),
    ProjectShape("TW207", "look-alike: the helper is handed host numbers the loop already keeps", {
        "utils.py": d("""
            def smooth(history, value):
                history.append(value)
                return sum(history[-10:]) / len(history[-10:])
        """),
        "train.py": _LOOP.format(imp="utils import smooth\nhist = []", call="avg = smooth(hist, 0.5)"),
    }),
]
