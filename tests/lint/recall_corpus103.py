"""The recall corpus, round 30 part B: TW207's data-dependent-shape syncs in code that runs every
training step although no training loop of its own file calls it - a functional loss reached
through a loss module's ``forward`` in another module, a loss or mining helper reached through a
model method the training loop of a third module calls, and a loss class a config picks by name
(``eval(name)`` over the module's ``__all__``). Each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a functional loss behind a loss module's forward
# An image-retrieval package keeps its losses as functions in one module and wraps each in a thin
# nn.Module of another (`forward(self, x, label): return F_.pair_loss(x, label)`); the training
# script builds the wrapper and calls it every step. The functions select columns with a device
# mask (`x[:, label == 1]`) and read a count with `.item()`. (Seen in an image-retrieval trainer,
# set 47; the wrapper-module layout recurs in metric-learning and re-identification projects.)
_FUNCTIONAL = d("""
    import torch
    def pair_loss(x, tag, margin=0.5):
        anchors = x[:, tag == -1]
        others = x[:, tag != -1]
        same = tag[tag != -1].float()
        d = (anchors.repeat(1, others.size(1) // anchors.size(1)) - others).norm(dim=0)
        return (same * d ** 2 + (1 - same) * torch.clamp(margin - d, min=0) ** 2).sum()
    def triple_loss(x, tag, margin=0.1):
        groups = torch.sum(tag == -1).item()
        a = x[:, tag == -1]
        p = x[:, tag == 1]
        n = x[:, tag == 0]
        return torch.clamp((a - p).pow(2).sum(0) - (a - n).pow(2).sum(0) + margin, min=0).sum() / groups
""")
_WRAPPERS = d("""
    import torch.nn as nn
    import retr.functional as RF
    class PairLoss(nn.Module):
        def __init__(self, margin=0.5):
            super().__init__()
            self.margin = margin
        def forward(self, x, tag):
            return RF.pair_loss(x, tag, margin=self.margin)
    class TripleLoss(nn.Module):
        def forward(self, x, tag):
            return RF.triple_loss(x, tag)
""")
_RETR_TRAIN = d("""
    import torch
    from retr.wrappers import PairLoss, TripleLoss
    def run(net, loader, opt, kind):
        crit = (PairLoss() if kind == "pair" else TripleLoss()).cuda()
        for x, tag in loader:
            out = net(x.cuda())
            loss = crit(out, tag.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "functional losses wrapped by loss modules of another module, built and called by the step", {
        "retr/functional.py": _FUNCTIONAL, "retr/wrappers.py": _WRAPPERS, "train.py": _RETR_TRAIN,
    }, tuple(("retr/functional.py", n) for n in (3, 4, 5, 9, 10, 11, 12))),
]
PROJECTS += [
    ProjectShape("TW207", "look-alike: the same functional loss wrapped by a module nothing builds", {
        "retr/functional.py": _FUNCTIONAL,
        "retr/wrappers.py": _WRAPPERS,
        "train.py": d("""
            import torch
            import torch.nn.functional as F
            def run(net, loader, opt):
                for x, y in loader:
                    loss = F.cross_entropy(net(x.cuda()), y.cuda())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """),
    }),
]

# ------------------------------------------------------------- TW207 a loss helper behind a model method the loop calls
# A model class of one module has a method that computes the training losses (`net.losses(feat,
# logits, labels)`), calling mining and loss helpers of another module (often star-imported)
# with its own arguments; the training loop of a third module calls that method every step with
# the batch moved to the GPU. The helpers run `.nonzero()` of a device mask. (Seen in a whale
# re-identification model, set 46; the model-owned loss method recurs in sets 43 and 48.)
_MINING = d("""
    import torch
    def hardest_pairs(dist, ids):
        unknown = (ids == 0).nonzero()
        pos = ids.unsqueeze(0).eq(ids.unsqueeze(1))
        for k in unknown:
            pos[k, :] = 0
        return (dist * pos.float()).max(1)[0]
    def margin_loss(scores, ids, k=5):
        err = (1 - torch.sigmoid(scores)).topk(k, 1)[0].mean()
        known = (ids != 0).nonzero().view(-1)
        return err + scores[known, ids[known]].neg().sigmoid().mean()
""")
_WHALE_MODEL = d("""
    import torch
    import torch.nn as nn
    from parts.mining import *
    class Matcher(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.body = nn.Linear(32, 16)
            self.head = nn.Linear(16, n)
        def forward(self, x):
            f = self.body(x)
            return f, self.head(f)
        def losses(self, feat, scores, ids):
            dist = torch.cdist(feat, feat)
            self.loss = hardest_pairs(dist, ids).mean() + margin_loss(scores, ids)
""")
_WHALE_TRAIN = d("""
    import torch
    from parts.model import Matcher
    def main(loader):
        net = Matcher(100).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, ids in loader:
            x, ids = x.cuda(), ids.cuda()
            feat, scores = net(x)
            net.losses(feat, scores, ids)
            opt.zero_grad()
            net.loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "mining helpers of a star-imported module, called by a model method the training loop calls", {
        "parts/mining.py": _MINING, "parts/model.py": _WHALE_MODEL, "train.py": _WHALE_TRAIN,
    }, (("parts/mining.py", 3), ("parts/mining.py", 10))),
    ProjectShape("TW207", "look-alike: the model method called only at a logging interval of the loop", {
        "parts/mining.py": _MINING, "parts/model.py": _WHALE_MODEL,
        "train.py": d("""
            import torch
            import torch.nn.functional as F
            from parts.model import Matcher
            def main(loader):
                net = Matcher(100).cuda()
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for step, (x, ids) in enumerate(loader):
                    x, ids = x.cuda(), ids.cuda()
                    feat, scores = net(x)
                    loss = F.cross_entropy(scores, ids)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    if step % 200 == 0:
                        net.losses(feat.detach(), scores.detach(), ids)
        """),
    }),
    ProjectShape("TW207", "look-alike: the model method called with host ids taken off the device", {
        "parts/mining.py": _MINING, "parts/model.py": _WHALE_MODEL.replace("def losses(", "def probe("),
        "train.py": d("""
            import torch
            import torch.nn.functional as F
            from parts.model import Matcher
            def main(loader):
                net = Matcher(100)
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for x, ids in loader:
                    feat, scores = net(x)
                    net.probe(feat.detach().cpu(), scores.detach().cpu(), ids.numpy())
                    loss = F.cross_entropy(scores, ids)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """),
    }),
    ProjectShape("TW207", "look-alike: the model method called only by the evaluation loop", {
        "parts/mining.py": _MINING, "parts/model.py": _WHALE_MODEL.replace("def losses(", "def evaluate_batch("),
        "train.py": d("""
            import torch
            import torch.nn.functional as F
            from parts.model import Matcher
            def main(loader, val_loader):
                net = Matcher(100).cuda()
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for x, ids in loader:
                    x, ids = x.cuda(), ids.cuda()
                    loss = F.cross_entropy(net(x)[1], ids)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                net.eval()
                with torch.no_grad():
                    for x, ids in val_loader:
                        feat, scores = net(x.cuda())
                        net.evaluate_batch(feat, scores, ids.cuda())
        """),
    }),
]

# ------------------------------------------------------------- TW207 a loss class a config picks by name
# A module of losses lists its classes in `__all__` and builds the one a config names with
# `eval(name)(...)` (or `globals()[name]`): no file names the class, yet the default config trains
# with it. Its forward selects the valid labels with a device mask. (Seen in a segmentation
# toolkit, set 45; the dead-class look-alike - a class nothing picks - is set 49's.)
_PICKED = d("""
    import torch
    from torch import nn
    class PlainCE(nn.Module):
        def __init__(self, ignore=255):
            super().__init__()
            self.ce = nn.CrossEntropyLoss(ignore_index=ignore)
        def forward(self, logits, labels):
            return self.ce(logits, labels)
    class HardPixelCE(nn.Module):
        def __init__(self, ignore=255):
            super().__init__()
            self.ignore = ignore
            self.ce = nn.CrossEntropyLoss(ignore_index=ignore, reduction="none")
        def forward(self, logits, labels):
            keep = labels[labels != self.ignore].numel() // 8
            return self.ce(logits, labels).view(-1).topk(keep)[0].mean()
    __all__ = ["PlainCE", "HardPixelCE"]
    def make_loss(name="PlainCE", ignore=255):
        assert name in __all__
        return eval(name)(ignore)
""")
_SEG_TRAIN = d("""
    import torch
    from seg.losses import make_loss
    def fit(net, loader, opt, cfg):
        crit = make_loss(cfg["loss"], 255)
        for img, lbl in loader:
            img, lbl = img.cuda(), lbl.cuda()
            loss = crit(net(img), lbl)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW207", "a loss class picked by eval(name) over the losses module's __all__", {
        "seg/losses.py": _PICKED, "train.py": _SEG_TRAIN,
    }, (("seg/losses.py", 15),)),
    ProjectShape("TW207", "look-alike: a loss class only listed in __all__, the builder picks from a fixed table", {
        "seg/losses.py": _PICKED.replace("return eval(name)(ignore)", "return {\"plain\": PlainCE}[name](ignore)").replace(
            '"PlainCE", "HardPixelCE"]', '"PlainCE", "HardPixelCE"]  # (HardPixelCE: work in progress)'),
        "train.py": _SEG_TRAIN,
    }),
]
