"""The recall corpus, round 20 part B: classes sets 29 and 30 showed for TW205, TW206 and TW209 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 target builders a loss forward calls
# A detector's utilities build the training targets on the CPU and move them; a YOLO layer's forward
# in the model module calls the builder for every layer of every step. The `build_` prefix reads
# like set-up, but the caller decides.
_TARGETS = d("""
    import torch
    def build_targets(boxes, n_anchors, gh, gw):
        nb = len(boxes)
        conf = torch.zeros(nb, n_anchors, gh, gw).cuda()
        ids = torch.LongTensor(nb, n_anchors, gh, gw).fill_(-1).cuda()
        for b in range(nb):
            conf[b, 0, 0, 0] = 1
        return conf, ids
""")
_HEAD = d("""
    import torch.nn as nn
    from utils.targets import *
    class DetectHead(nn.Module):
        def __init__(self, na):
            super().__init__()
            self.na = na
        def forward(self, p, boxes=None):
            if boxes is not None:
                conf, ids = build_targets(boxes, self.na, p.shape[-2], p.shape[-1])
                return ((p[:, :1] - conf) ** 2).mean()
            return p
""")
_SETUP_HEAD = d("""
    import torch.nn as nn
    from utils.targets import build_targets
    class Cached(nn.Module):
        def __init__(self, boxes):
            super().__init__()
            self.conf, self.ids = build_targets(boxes, 3, 8, 8)
        def forward(self, p):
            return p * self.conf
""")
PROJECTS += [
    ProjectShape("TW205", "a build_targets() helper in a utilities module that a YOLO layer's forward calls every step "
                 "(star import)", {"utils/targets.py": _TARGETS, "model.py": _HEAD},
                 (("utils/targets.py", 4), ("utils/targets.py", 5))),
    ProjectShape("TW205", "look-alike: the same builder called once, from a module's __init__",
                 {"utils/targets.py": _TARGETS, "model.py": _SETUP_HEAD}),
]

# ------------------------------------------------------------- TW205 meshgrid of CPU aranges, moved
FIND += [
    Shape("TW205", "anchor mesh: meshgrid of two aranges unpacked, each grid moved with .cuda() in a per-step helper", d("""
        import torch
        import torch.nn as nn
        def anchor_mesh(gh, gw, wh):
            yy, xx = torch.meshgrid(torch.arange(gh), torch.arange(gw))
            xx, yy = xx.cuda(), yy.cuda()
            mesh = torch.stack([xx, yy], dim=0).float()
            return torch.cat([mesh.unsqueeze(0), wh], 1)
        class Layer(nn.Module):
            def forward(self, p, wh):
                return p + anchor_mesh(p.shape[-2], p.shape[-1], wh)
    """), 4),
    Shape("TW205", "list-form meshgrid joined with torch.stack and moved .to(x.device) in a forward", d("""
        import torch
        import torch.nn as nn
        class Decode(nn.Module):
            def forward(self, x):
                ny, nx = x.shape[2], x.shape[3]
                gy, gx = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
                grid = torch.stack((gx, gy), 2).view(1, ny, nx, 2).float().to(x.device)
                return x.permute(0, 2, 3, 1)[..., :2] + grid
    """), 6),
    Shape("TW205", "cell corners: torch.stack(torch.meshgrid(...)) scaled, retyped and moved in a per-call helper", d("""
        import torch
        def cell_corners(heat, w):
            hc, wc = heat.shape[2] // w, heat.shape[3] // w
            cells = torch.stack(torch.meshgrid(torch.arange(hc), torch.arange(wc)), dim=2) * w
            cells = cells.type(torch.FloatTensor).to(heat.device)
            return heat[:, :2] + cells.permute(2, 0, 1)
    """), 5),
]
QUIET += [
    Shape("TW205", "look-alike: meshgrid of aranges made on the device already", d("""
        import torch
        import torch.nn as nn
        class Decode(nn.Module):
            def forward(self, x):
                d = x.device
                gy, gx = torch.meshgrid(torch.arange(x.shape[2], device=d), torch.arange(x.shape[3], device=d))
                return x + torch.stack((gx, gy), 0).to(x.dtype)
    """)),
    Shape("TW205", "look-alike: meshgrid of the input's own coordinate tensors (already on its device)", d("""
        import torch
        import torch.nn as nn
        class Warp(nn.Module):
            def forward(self, x, ys, xs):
                gy, gx = torch.meshgrid(ys, xs)
                gy, gx = gy.to(x.device), gx.to(x.device)
                return x + gy + gx
    """)),
]

# ------------------------------------------------------------- TW205 one-time set-up the rule took for per step
QUIET += [
    Shape("TW205", "set-up in a runner's train() before its epoch loop (the loop holds the steps)", d("""
        import torch
        class Runner:
            def train(self, model, loader, opt, n):
                fixed = torch.randn(16, 64).to(self.device)
                for epoch in range(n):
                    for x in loader:
                        loss = model(x.to(self.device)).mean()
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                    self.show(model(fixed))
    """)),
    Shape("TW205", "hidden caches made per layer in a comprehension before the iteration loop", d("""
        import torch
        def launch(model, data, opt, device, n_iter):
            caches = [[torch.zeros(data.size(0), 8, 32).to(device) for layer in model.module.layers]
                      for _ in range(2)]
            for it in range(n_iter):
                loss = model(data, caches[0]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
    Shape("TW205", "two losses a routine returned (unpacked) sent to the device once per block for a reduce", d("""
        import torch
        import torch.distributed as dist
        def run(model, opt, blocks, device):
            for it in range(blocks):
                loss_tr, pos = train_block(model, opt)
                loss_va, pos = eval_block(model)
                stats = torch.tensor([loss_tr, loss_va]).to(device)
                dist.reduce(stats, 0)
    """)),
    Shape("TW205", "an empty placeholder returned early from a forward when nothing was matched", d("""
        import torch
        import torch.nn as nn
        class EmbHead(nn.Module):
            def forward(self, emb, ids):
                if emb.numel() == 0 or ids.numel() == 0:
                    return torch.zeros(0, self.dim + 1).cuda()
                return torch.cat([emb, ids.float()], 1)
    """)),
]
_SCHEDULE = d("""
    import numpy as np
    import torch
    def get_levels(cfg):
        return torch.tensor(np.linspace(cfg.lo, cfg.hi, cfg.n)).float().to(cfg.device)
""")
_NET = d("""
    import torch.nn as nn
    from . import get_levels
    class Score(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.register_buffer("levels", get_levels(cfg))
        def forward(self, x):
            return x / self.levels[0]
""")
_RUNNER = d("""
    from nets import get_levels
    from nets.score import Score
    class Runner:
        def train(self, cfg, loader, opt):
            model = Score(cfg)
            levels = get_levels(cfg)
            for epoch in range(cfg.epochs):
                for x in loader:
                    loss = (model(x) * levels[0]).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a package __init__.py helper (noise levels) called by a model's __init__ "
                 "(from . import) and by a runner's train() before its loop",
                 {"nets/__init__.py": _SCHEDULE, "nets/score.py": _NET, "runner.py": _RUNNER}),
    ProjectShape("TW206", "look-alike: the same levels helper - copied from NumPy, but once at set-up",
                 {"nets/__init__.py": _SCHEDULE.replace(".float().to(cfg.device)", ""), "nets/score.py": _NET,
                  "runner.py": _RUNNER}),
]

# ------------------------------------------------------------- TW206 one-time set-up
QUIET += [
    Shape("TW206", "initial weights drawn with NumPy in a create_mlp() loop over layers, called by __init__", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                self.mlp = self.create_mlp(sizes)
            def create_mlp(self, sizes):
                layers = nn.ModuleList()
                for n, m in zip(sizes[:-1], sizes[1:]):
                    lin = nn.Linear(n, m)
                    w = np.random.normal(0.0, np.sqrt(2 / (n + m)), size=(m, n)).astype(np.float32)
                    lin.weight.data = torch.tensor(w, requires_grad=True)
                    layers.append(lin)
                return layers
    """)),
    Shape("TW206", "relative positions built by a helper only an attention module's __init__ calls", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        def offsets(w):
            idx = torch.tensor(np.array([[i, j] for i in range(w) for j in range(w)]))
            return idx[None, :, :] - idx[:, None, :]
        class Attn(nn.Module):
            def __init__(self, w):
                super().__init__()
                self.rel = offsets(w) + w - 1
    """)),
    Shape("TW206", "table sizes converted once in the set-up of a training function, before its loop", d("""
        import numpy as np
        import torch
        def run(args, model, loader, opt):
            sizes = np.array([int(t) for t in args.tables.split("-")])
            dims = solver(torch.tensor(sizes), args.alpha)
            for x, y in loader:
                loss = model(x, dims).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]
# ------------------------------------------------------------- TW209 a VGG builder's inline list
FIND += [
    Shape("TW209", "VGG make_layers: the biased Conv2d written in the list before BatchNorm2d", d("""
        import torch.nn as nn
        def make_layers(cfg):
            layers, c = [], 3
            for v in cfg:
                if v == "M":
                    layers += [nn.MaxPool2d(2)]
                else:
                    layers += [nn.Conv2d(c, v, kernel_size=3, padding=1), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                    c = v
            return nn.Sequential(*layers)
    """), 8),
    Shape("TW209", "layers.extend([...]) with a biased Conv1d before BatchNorm1d", d("""
        import torch.nn as nn
        def encoder(widths):
            layers = []
            for a, b in zip(widths[:-1], widths[1:]):
                layers.extend([nn.Conv1d(a, b, 5, padding=2), nn.BatchNorm1d(b), nn.GELU()])
            return nn.Sequential(*layers)
    """), 5),
]
QUIET += [
    Shape("TW209", "look-alike: the inline convolution has bias=False", d("""
        import torch.nn as nn
        def make_layers(cfg):
            layers, c = [], 3
            for v in cfg:
                layers += [nn.Conv2d(c, v, 3, padding=1, bias=False), nn.BatchNorm2d(v), nn.ReLU()]
                c = v
            return nn.Sequential(*layers)
    """)),
    Shape("TW209", "look-alike: an activation between the inline convolution and the norm", d("""
        import torch.nn as nn
        def block(c, v):
            layers = []
            layers.extend([nn.Conv2d(c, v, 3), nn.ReLU(), nn.BatchNorm2d(v)])
            return nn.Sequential(*layers)
    """)),
]

# ------------------------------------------------------------- TW209 a bias added by hand before BatchNorm
FIND += [
    Shape("TW209", "dense layer written by hand: mm, + self.bias, then its BatchNorm1d", d("""
        import torch
        import torch.nn as nn
        class Dense(nn.Module):
            def __init__(self, n_in, n_out, bias=True):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n_in, n_out))
                self.bn = nn.BatchNorm1d(n_out)
                if bias:
                    self.bias = nn.Parameter(torch.zeros(n_out))
                else:
                    self.register_parameter("bias", None)
            def forward(self, x):
                out = torch.mm(x, self.weight)
                if self.bias is not None:
                    out = out + self.bias
                return torch.relu(self.bn(out))
    """), 9),
    Shape("TW209", "graph convolution: spmm, += bias, and a BatchNorm under a flag that is on by default", d("""
        import torch
        from torch.nn import Module, Parameter, BatchNorm1d
        class GraphConv(Module):
            def __init__(self, n_in, n_out, use_bn=True):
                super().__init__()
                self.weight = Parameter(torch.empty(n_in, n_out))
                self.bias = Parameter(torch.empty(n_out))
                if use_bn:
                    self.norm = BatchNorm1d(n_out)
            def forward(self, x, adj):
                h = torch.spmm(adj, torch.mm(x, self.weight))
                h += self.bias
                if self.norm is not None:
                    h = self.norm(h)
                return h
    """), 7),
]
QUIET += [
    Shape("TW209", "look-alike: the hand-added bias goes into a LayerNorm", d("""
        import torch
        import torch.nn as nn
        class Dense(nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n_in, n_out))
                self.bias = nn.Parameter(torch.zeros(n_out))
                self.ln = nn.LayerNorm(n_out)
            def forward(self, x):
                out = x @ self.weight + self.bias
                return self.ln(out)
    """)),
    Shape("TW209", "look-alike: an activation comes between the bias and the BatchNorm", d("""
        import torch
        import torch.nn as nn
        class Dense(nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n_in, n_out))
                self.bias = nn.Parameter(torch.zeros(n_out))
                self.bn = nn.BatchNorm1d(n_out)
            def forward(self, x):
                out = torch.mm(x, self.weight) + self.bias
                out = torch.relu(out)
                return self.bn(out)
    """)),
    Shape("TW209", "look-alike: the BatchNorm is made only under a flag that is off by default", d("""
        import torch
        import torch.nn as nn
        class Dense(nn.Module):
            def __init__(self, n_in, n_out, batch_norm=False):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n_in, n_out))
                self.bias = nn.Parameter(torch.zeros(n_out))
                self.bn = None
                if batch_norm:
                    self.bn = nn.BatchNorm1d(n_out)
            def forward(self, x):
                out = torch.mm(x, self.weight) + self.bias
                if self.bn is not None:
                    out = self.bn(out)
                return out
    """)),
]
