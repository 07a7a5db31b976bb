"""The recall corpus, round 20 part A (TW207): classes the sets of round 20 (29, 30) showed -
metric objects that read what the training loop hands them, dead vendored task heads, code
switched off with ``if False:``, host numbers handed back by a training function, - each written in our own words and reduced to its shape, with look-alikes
that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW207 a metric object's method reads its arguments
# A depth or segmentation trainer builds a result object every batch and hands it the prediction
# and the target; the object's method casts reductions to Python floats and selects valid pixels
# with a mask - on the GPU tensors of the step.
_DEPTH_METRICS = d("""
    import math
    import torch
    class Scores:
        def __init__(self):
            self.rmse = 0.0
        def measure(self, pred, gt):
            valid_mask = gt > 0
            pred = pred[valid_mask]
            err = (pred - gt[valid_mask]).abs()
            self.rmse = math.sqrt((err ** 2).mean())
            self.mae = float(err.mean())
""")
_DEPTH_TRAIN = d("""
    import torch
    from scores import Scores
    def fit(loader, net, opt):
        for img, gt in loader:
            img, gt = img.cuda(), gt.cuda()
            pred = net(img)
            loss = (pred - gt).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            s = Scores()
            s.measure(pred.detach(), gt)
""")
PROJECTS += [
    ProjectShape("TW207", "a metric object built in the training loop whose method casts and masks the step's tensors", {
        "scores.py": _DEPTH_METRICS, "train.py": _DEPTH_TRAIN,
    }, (("scores.py", 8), ("scores.py", 9), ("scores.py", 10), ("scores.py", 11))),
    ProjectShape("TW207", "a metric class of the training file itself, named evaluate, with float() of a reduction", {
        "train.py": d("""
            import torch
            class Meter:
                def evaluate(self, out, y):
                    self.acc = float((out.argmax(1) == y).float().mean())
            def run(loader, net, opt, device):
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    out = net(x)
                    loss = torch.nn.functional.cross_entropy(out, y)
                    opt.zero_grad(); loss.backward(); opt.step()
                    m = Meter()
                    m.evaluate(out, y)
        """),
    }, (("train.py", 4),)),
    ProjectShape("TW207", "look-alike: the same metric object called only in the validation loop", {
        "scores.py": _DEPTH_METRICS,
        "train.py": d("""
            import torch
            from scores import Scores
            def fit(loader, val_loader, net, opt):
                for img, gt in loader:
                    img, gt = img.cuda(), gt.cuda()
                    loss = (net(img) - gt).abs().mean()
                    opt.zero_grad(); loss.backward(); opt.step()
                with torch.no_grad():
                    for img, gt in val_loader:
                        img, gt = img.cuda(), gt.cuda()
                        s = Scores()
                        s.measure(net(img), gt)
        """),
    }),
    ProjectShape("TW207", "look-alike: the metric object called under a log interval", {
        "scores.py": _DEPTH_METRICS,
        "train.py": d("""
            import torch
            from scores import Scores
            def fit(loader, net, opt):
                for step, (img, gt) in enumerate(loader):
                    img, gt = img.cuda(), gt.cuda()
                    pred = net(img)
                    loss = (pred - gt).abs().mean()
                    opt.zero_grad(); loss.backward(); opt.step()
                    if step % 100 == 0:
                        s = Scores()
                        s.measure(pred.detach(), gt)
        """),
    }),
    ProjectShape("TW207", "look-alike: a metric object whose method only keeps the tensors and casts a number it is given", {
        "train.py": d("""
            import torch
            class Keeper:
                def add(self, out, n):
                    self.last = out.detach()
                    self.count = float(n)
            def run(loader, net, opt, device):
                for x, y in loader:
                    x, y = x.to(device), y.to(device)
                    out = net(x)
                    loss = torch.nn.functional.cross_entropy(out, y)
                    opt.zero_grad(); loss.backward(); opt.step()
                    k = Keeper()
                    k.add(out, x.size(0))
        """),
    }),
]

# ------------------------------------------------------------- TW207 dead vendored task heads
# A project copies a Hugging Face modeling file and builds only its own head; the copied task
# heads (token classification: `logits[active]` selections) carry documentation decorators and
# are named only in other classes' docstrings.
PROJECTS += [
    ProjectShape("TW207", "look-alike: a vendored token-classification head no code builds, decorated with add_start_docstrings", {
        "modeling.py": d("""
            import torch
            from torch import nn
            def add_start_docstrings(*doc):
                def deco(fn):
                    return fn
                return deco
            class Encoder(nn.Module):
                def forward(self, x):
                    return x
            @add_start_docstrings("token head", "more text")
            class EncoderForTagging(nn.Module):
                def forward(self, x, labels=None, mask=None):
                    logits = self.out(x)
                    active = mask.view(-1) == 1
                    loss = nn.functional.cross_entropy(logits.view(-1, 5)[active], labels.view(-1)[active])
                    return loss
        """),
        "other_heads.py": d('''
            from modeling import Encoder
            class Reader(Encoder):
                """Example::
                    model = EncoderForTagging.from_pretrained('x')
                """
        '''),
        "train.py": d("""
            import torch
            from modeling import Encoder
            from other_heads import Reader
            def main(loader, opt):
                net = Encoder().cuda()
                r = Reader()
                for x, y in loader:
                    loss = net(x.cuda()).mean()
                    loss.backward(); opt.step()
        """),
    }),
]

# ------------------------------------------------------------- TW207 a call switched off by hand, a host number handed back
QUIET += [
    Shape("TW207", "look-alike: a training call inside `if False:` (the live call is in the else)", d("""
        import torch
        def show(t):
            print("loss %.4f" % t.item())
        def main(model, opt, x, y, epochs):
            x, y = x.cuda(), y.cuda()
            for epoch in range(epochs):
                loss = torch.nn.functional.nll_loss(model(x), y)
                loss.backward(); opt.step()
                if False:
                    show(loss)
    """)),
    Shape("TW207", "look-alike: the learning rate from param_groups, handed back in a tuple and logged", d("""
        import torch
        def current_lr(opt):
            for g in opt.param_groups:
                return g['lr']
        def step(model, opt, x, y):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward(); opt.step()
            return (loss.detach(), current_lr(opt))
        def main(model, opt, x, y, writer, epochs):
            x, y = x.cuda(), y.cuda()
            for epoch in range(epochs):
                res = step(model, opt, x, y)
                writer.add_scalar('lr', res[1], epoch)
    """)),
]
