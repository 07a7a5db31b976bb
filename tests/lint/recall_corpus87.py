"""The recall corpus, round 26 part D: classes sets 41 and 42 showed for TW501, TW502, TW209 and
TW205's dead-code test - each written in our own words and reduced to its shape, with look-alikes
that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 hasattr on an instance is no version probe
# An init helper applied with model.apply(): `if hasattr(m, 'weight')` guards the old init name.
FIND += [
    Shape("TW502", "init helper guarded by hasattr(m, 'weight') calls nn.init without the underscore", d("""
        from torch import nn
        def init_weights(m):
            if hasattr(m, 'weight') and m.weight.dim() > 1:
                nn.init.xavier_normal(m.weight.data)
    """), 4),
    Shape("TW502", "method guarded by hasattr(self, ...) calls the old init name", d("""
        import torch.nn as nn
        class Head(nn.Module):
            def reset(self):
                if hasattr(self, 'proj'):
                    nn.init.orthogonal(self.proj.weight)
    """), 5),
]
QUIET += [
    Shape("TW502", "look-alike: the old name in the branch of a probe of torch itself", d("""
        import torch
        import torch.nn.functional as F
        if not hasattr(F, 'interpolate'):
            resize = F.upsample
        else:
            resize = F.interpolate
    """)),
]

# ------------------------------------------------------------- TW502 verbose= of a torch LR scheduler
FIND += [
    Shape("TW502", "plateau scheduler built with verbose=True through optim.lr_scheduler", d("""
        from torch import optim
        def make(opt):
            return optim.lr_scheduler.ReduceLROnPlateau(optimizer=opt, verbose=True, factor=0.5, patience=3)
    """), 3),
    Shape("TW502", "step scheduler imported by name, verbose from an option", d("""
        from torch.optim.lr_scheduler import MultiStepLR
        def make(opt, args):
            return MultiStepLR(opt, [30, 60], gamma=0.1, verbose=args.verbose)
    """), 3),
]
QUIET += [
    Shape("TW502", "look-alike: a scheduler class of another library with verbose=", d("""
        from mytools.sched import ReduceLROnPlateau
        def make(opt):
            return ReduceLROnPlateau(opt, verbose=True)
    """)),
    Shape("TW502", "look-alike: the project's own scheduler class named like torch's", d("""
        class CosineAnnealingLR:
            def __init__(self, opt, t_max, verbose=False):
                self.opt, self.t_max, self.verbose = opt, t_max, verbose
        def make(opt):
            return CosineAnnealingLR(opt, 100, verbose=True)
    """)),
]

# ------------------------------------------------------------- TW501 deleted torch.nn._functions submodules
FIND += [
    Shape("TW501", "test imports a padding Function from torch.nn._functions.padding", d("""
        import torch
        from torch.nn._functions.padding import ConstantPad2d
        def pad(x):
            return ConstantPad2d((1, 1, 1, 1))(x)
    """), 2),
    Shape("TW501", "custom RNN imports the old recurrence helpers", d("""
        import torch
        from torch.nn._functions.rnn import Recurrent, StackedRNN
    """), 2),
]
QUIET += [
    Shape("TW501", "look-alike: a name torch.nn._functions still has", d("""
        import torch
        from torch.nn._functions import SyncBatchNorm
    """)),
]

# ------------------------------------------------------------- TW501 legacy autograd Function used as an instance
FIND += [
    Shape("TW501", "Function with __init__ state and a plain forward(self, x)", d("""
        import torch
        from torch.autograd import Function
        class Crop(Function):
            def __init__(self, size):
                super().__init__()
                self.size = size
            def forward(self, x):
                return x[..., :self.size].clone()
            def backward(self, g):
                return torch.nn.functional.pad(g, (0, 1))
    """), 3),
    Shape("TW501", "Function without __init__ instantiated per call in the same file", d("""
        import torch
        class ScaleGrad(torch.autograd.Function):
            def forward(self, x):
                return x.view_as(x)
            def backward(self, g):
                return g * 0.5
        def scale(x):
            return ScaleGrad()(x)
    """), 2),
]
QUIET += [
    Shape("TW501", "look-alike: a static forward(ctx, x) used through .apply", d("""
        import torch
        class Clamp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clamp(0, 1)
            @staticmethod
            def backward(ctx, g):
                return g
        y = Clamp.apply(torch.ones(2))
    """)),
    Shape("TW501", "look-alike: a non-static forward(ctx, x) used only through .apply", d("""
        import torch
        class Ident(torch.autograd.Function):
            def forward(ctx, x):
                return x
            def backward(ctx, g):
                return g
        def ident(x):
            return Ident.apply(x)
    """)),
    Shape("TW501", "look-alike: another framework's Function with __init__", d("""
        from chainer import Function
        class Mul(Function):
            def __init__(self, k):
                self.k = k
            def forward(self, inputs):
                return inputs[0] * self.k,
    """)),
]

# ------------------------------------------------------------- TW209 layers of nn.Sequential(OrderedDict([...]))
FIND += [
    Shape("TW209", "projection MLP: biased Linear before SyncBatchNorm in named pairs", d("""
        from collections import OrderedDict
        import torch.nn as nn
        def projector(d_in, d_hid, d_out):
            return nn.Sequential(OrderedDict([
                ("fc1", nn.Linear(d_in, d_hid)),
                ("bn1", nn.SyncBatchNorm(d_hid)),
                ("act1", nn.ReLU(inplace=True)),
                ("fc2", nn.Linear(d_hid, d_out)),
            ]))
    """), 5),
    Shape("TW209", "stem: biased Conv2d before BatchNorm2d in named pairs", d("""
        import collections
        import torch.nn as nn
        stem = nn.Sequential(collections.OrderedDict([("conv", nn.Conv2d(3, 32, 3)), ("bn", nn.BatchNorm2d(32))]))
    """), 3),
]
QUIET += [
    Shape("TW209", "look-alike: named pairs whose Linear has bias=False, and a ReLU between", d("""
        from collections import OrderedDict
        import torch.nn as nn
        head = nn.Sequential(OrderedDict([
            ("fc1", nn.Linear(8, 16, bias=False)),
            ("bn1", nn.BatchNorm1d(16)),
            ("fc2", nn.Linear(16, 16)),
            ("act", nn.ReLU()),
            ("bn2", nn.BatchNorm1d(16)),
        ]))
    """)),
]

# ------------------------------------------------------------- TW205 a class named elsewhere only in prose
# A layer module whose old propagation class no model builds any more; the training scripts
# mention its name only inside a help text ('prop alpha').
_LAYERS = d("""
    import torch
    import torch.nn as nn
    class prop(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
        def forward(self, x, adj):
            adj = adj + torch.eye(adj.size(0)).to(x.device)
            return adj @ x
    class mixprop(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
        def forward(self, x, adj):
            adj = adj + torch.eye(adj.size(0)).to(x.device)
            return adj @ x
""")
_NET = d("""
    import torch.nn as nn
    from layer import *
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gc = mixprop(8)
        def forward(self, x, adj):
            return self.gc(x, adj)
""")
_TRAIN = d("""
    import argparse
    import torch
    from net import Net
    parser = argparse.ArgumentParser()
    parser.add_argument('--propalpha', type=float, default=0.05, help='prop alpha')
    args = parser.parse_args()
    model = Net().cuda()
    for x, adj in []:
        loss = model(x.cuda(), adj.cuda()).sum()
        loss.backward()
""")
PROJECTS += [
    ProjectShape("TW205", "graph layers: only the class the model builds reports its per-step eye().to(device); "
                 "the other is named elsewhere only in a help text", {
                     "layer.py": _LAYERS, "net.py": _NET, "train.py": _TRAIN,
                 }, (("layer.py", 15),)),
    ProjectShape("TW205", "look-alike: a config string names the class exactly (a lookup key): both stay live", {
        "layer.py": _LAYERS, "net.py": _NET,
        "train.py": _TRAIN.replace("help='prop alpha')", "help='prop alpha')\nLAYERS = {'prop': 'prop'}"),
    }, (("layer.py", 8), ("layer.py", 15))),
]
