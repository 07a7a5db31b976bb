"""The recall corpus, round 24 part B (TW207 recall on sets 37-38): loss helpers the training step
reaches through a helper of another module, masks combined with ``*``, and Python tests of
reductions of the step's tensors inside loss functions - each written in our own words and reduced
to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_SEG_LOSS = d("""
    import torch
    import torch.nn.functional as F
    def pixel_ce(logits, labels):
        keep_mask = (labels >= 0) * (labels != 255)
        picked = labels[keep_mask]
        return F.cross_entropy(logits.permute(0, 2, 3, 1)[keep_mask], picked)
""")
_HELPERS = d("""
    from seg.losses import pixel_ce
    def seg_loss(out, gt, device):
        gt = gt.long().to(device)
        return pixel_ce(out, gt)
""")
_TRAIN = d("""
    import torch
    from seg.helpers import seg_loss
    def train(net, loader, opt, device):
        for step, (x, y) in enumerate(loader):
            out = net(x.to(device))
            {call}
            opt.zero_grad()
            loss.backward()
            opt.step()
""")

# ------------------------------------------------------------- TW207 a loss reached through another module's helper
# The step calls a helper of a utilities module, which hands its own arguments to a loss function of a
# third module: the loss's selections run every step all the same.
PROJECTS += [
    ProjectShape("TW207", "mask product selection in a loss function called through a helper of another module", {
        "seg/losses.py": _SEG_LOSS, "seg/helpers.py": _HELPERS,
        "train.py": _TRAIN.format(call="loss = seg_loss(out, y, device)"),
    }, (("seg/losses.py", 5), ("seg/losses.py", 6))),
    ProjectShape("TW207", "look-alike: the helper of the other module is called only every 100 steps", {
        "seg/losses.py": _SEG_LOSS, "seg/helpers.py": _HELPERS,
        "train.py": _TRAIN.format(call="loss = out.mean()\n        if step % 100 == 0:\n            print(seg_loss(out.detach(), y, device))"),
    }),
]

# ------------------------------------------------------------- TW207 tests of reductions in a loss function
_STEP = d("""
    import torch
    import torch.nn.functional as F
    {loss}
    def train(model, loader, opt):
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            loss = {call}
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
FIND += [
    Shape("TW207", "if torch.sum(flag) > 0: guarding an empty selection in a loss function", _STEP.format(loss=d("""
        def mixed_loss(logits, y):
            loss = F.cross_entropy(logits, y.clamp(min=0), reduction="mean")
            unlabeled = (y == -1)
            if torch.sum(unlabeled) > 0:
                loss = loss + logits[unlabeled].softmax(1).mean()
            return loss
    """).replace("\n", "\n    "), call="mixed_loss(model(x), y)"), 6),
    Shape("TW207", "a count bound to mask.sum() tested and asserted in the learner's criterion method", d("""
        import torch
        import torch.nn.functional as F
        class Learner:
            def __init__(self, model, opt):
                self.model, self.opt = model.cuda(), opt
            def train_epoch(self, loader, n_old):
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    loss = self.criterion(self.model(x), y, n_old)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
            def criterion(self, out, y, n_old):
                loss = F.cross_entropy(out, y)
                old = y < n_old
                n_old_hits = old.sum()
                if n_old_hits > 0:
                    loss = loss + out.gather(1, y[:, None]).mean()
                assert out.size(0) >= n_old_hits
                return loss
    """), 17),
    Shape("TW207", "mask product (p > t) * valid.bool() selecting in a loss function", _STEP.format(loss=d("""
        def anchor_loss(feat, prob, valid):
            sure = (prob > 0.9) * valid.bool()
            return feat[sure].pow(2).mean()
    """).replace("\n", "\n    "), call="anchor_loss(model(x), y.float(), y)"), 5),
]
QUIET += [
    Shape("TW207", "look-alike: an empty selection skips a pass of the loss's loop (R9)", _STEP.format(loss=d("""
        def per_class_loss(logits, y):
            total = logits.sum() * 0
            for c in range(3):
                m = y == c
                if m.sum() == 0:
                    continue
                total = total + logits[:, c].mean()
            return total
    """).replace("\n", "\n    "), call="per_class_loss(model(x), y)")),
    Shape("TW207", "look-alike: a test of state an optional argument carries in", _STEP.format(loss=d("""
        def proto_loss(feat, y, proto=None):
            loss = feat.pow(2).mean()
            if proto is not None:
                if not (proto == 0).all():
                    loss = loss + (feat.mean(0) - proto).pow(2).sum()
            return loss
    """).replace("\n", "\n    "), call="proto_loss(model(x), y)")),
    Shape("TW207", "look-alike: tests of sizes in a loss function", _STEP.format(loss=d("""
        def sized_loss(logits, y):
            if logits.size(0) > 0 and y.numel() > 0:
                return F.cross_entropy(logits, y)
            return logits.sum() * 0
    """).replace("\n", "\n    "), call="sized_loss(model(x), y)")),
    Shape("TW207", "look-alike: a product of two weight tensors used as a weight, not a selection", _STEP.format(loss=d("""
        def weighted_loss(logits, y, w):
            scale = (w * w.mean())
            return (F.cross_entropy(logits, y, reduction="none") * scale).mean()
    """).replace("\n", "\n    "), call="weighted_loss(model(x), y, y.float())")),
]
