"""The recall corpus, round 18 part D: classes the twenty-fifth and twenty-sixth sets (the tuning sets
of round 18) still missed for TW402, TW203, TW204, TW103, TW104, TW109, TW404, TW405 and TW506 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW506 the in-place logarithm
# A numerically careful inverse hyperbolic function that works on a double copy in place:
# `torch.log_(1 + z)` (the function form) or `(1 + z).log_()` (the method form).
FIND += [
    Shape("TW506", "torch.log_(1 + z) inside an autograd Function's forward", d("""
        import torch
        class Atanh(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                z = x.double()
                return (torch.log_(1 + z).sub_(torch.log_(1 - z))).mul_(0.5).to(x.dtype)
    """), 6),
    Shape("TW506", "(z + 1).log_() as a tensor method on a fresh sum", d("""
        import torch
        def softplus_inv(z):
            return (z + 1).log_()
    """), 3),
]
QUIET += [
    Shape("TW506", "look-alike: torch.log_ of a value that is not one plus something", d("""
        import torch
        def entropy(p):
            return -(p * torch.log_(p.clamp(min=1e-12))).sum()
    """)),
    Shape("TW506", "look-alike: log_ of one plus a count", d("""
        import torch
        def damp(counts):
            return (counts.float() + 1).log_()
    """)),
]

# ------------------------------------------------------------- TW103 a part only the subclasses build
# An abstract graph encoder/decoder base (an nn.Module) whose shared method runs `self.layers.forward(x)`
# or `self.head.forward(x)`, while only its concrete subclasses in the same file assign the part.
FIND += [
    Shape("TW103", "abstract encoder base: self.stack.forward(...) built as nn.Sequential by every subclass", d("""
        import torch.nn as nn
        class BaseEncoder(nn.Module):
            def __init__(self, curv):
                super().__init__()
                self.curv = curv
            def encode(self, feats, graph):
                if self.takes_graph:
                    out, _ = self.stack.forward((feats, graph))
                else:
                    out = self.stack.forward(feats)
                return out
        class Plain(BaseEncoder):
            def __init__(self, curv, dims):
                super().__init__(curv)
                self.stack = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(dims, dims[1:])])
                self.takes_graph = False
        class Graph(BaseEncoder):
            def __init__(self, curv, dims):
                super().__init__(curv)
                self.stack = nn.Sequential(GraphLayer(dims[0], dims[1]))
                self.takes_graph = True
    """), 10),
    Shape("TW103", "decoder base: self.head.forward(x) where the subclasses build a project layer", d("""
        from torch import nn
        from layers import GraphConv, Dense
        class Readout(nn.Module):
            def decode(self, x, adj):
                return self.head.forward(x)
        class ConvReadout(Readout):
            def __init__(self, d, k):
                super().__init__()
                self.head = GraphConv(d, k)
        class DenseReadout(ConvReadout):
            def __init__(self, d, k):
                super().__init__(d, k)
                self.head = Dense(d, k)
    """), 5),
]
QUIET += [
    Shape("TW103", "look-alike: the subclasses hand in a plain callable under the same name", d("""
        import torch.nn as nn
        class Base(nn.Module):
            def run(self, x):
                return self.engine.forward(x)
        class Exported(Base):
            def __init__(self, session):
                super().__init__()
                self.engine = session
    """)),
    Shape("TW103", "look-alike: a base whose subclasses build the part with a factory function", d("""
        import torch.nn as nn
        from backends import make_runner
        class Base(nn.Module):
            def run(self, x):
                return self.runner.forward(x)
        class Child(Base):
            def __init__(self, cfg):
                super().__init__()
                self.runner = make_runner(cfg)
    """)),
    Shape("TW103", "look-alike: a plain base class (no nn.Module) whose subclasses build a wrapper", d("""
        class Predictor:
            def predict(self, x):
                return self.backend.forward(x)
        class OnnxPredictor(Predictor):
            def __init__(self, path):
                self.backend = OrtSession(path)
    """)),
]

# ------------------------------------------------------------- TW103 a project loss class under a lower-case name
# A depth-estimation script builds its loss from the project's `class scale_inv_loss(nn.Module)` (reached
# through an import or a star import) and calls `.forward(...)` on it every step.
_LOWER_LOSS = d("""
    import torch
    import torch.nn as nn
    class scale_inv_loss(nn.Module):
        def __init__(self, focus):
            super().__init__()
            self.focus = focus
        def forward(self, est, gt, mask):
            d = torch.log(est[mask]) - torch.log(gt[mask])
            return torch.sqrt((d ** 2).mean() - self.focus * d.mean() ** 2) * 10.0
""")
_LOWER_MAIN = d("""
    import torch
    from depthnet import *

    def main(args, model, loader, opt):
        crit = scale_inv_loss(focus=args.focus)
        for img, gt in loader:
            est = model(img.cuda())
            loss = crit.forward(est, gt.cuda(), gt.cuda() > 0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW103", "a project nn.Module loss with a lower-case class name, reached by a star import",
                 {"depthnet.py": _LOWER_LOSS, "train.py": _LOWER_MAIN}, (("train.py", 8),)),
    ProjectShape("TW103", "look-alike: the lower-case name is also a function of the project",
                 {"depthnet.py": _LOWER_LOSS, "helpers.py": "def scale_inv_loss(focus):\n    return Wrapped(focus)\n",
                  "train.py": _LOWER_MAIN.replace("from depthnet import *", "from helpers import *")}),
]
