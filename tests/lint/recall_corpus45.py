"""The recall corpus, round 17 part C: classes the sets 21-24 still missed for TW201-TW205 and
TW209 - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- torch names handed on by project modules
# A speech project whose layers module imports torch under a short name; the network module
# star-imports the layers, and the training scripts star-import the network (two hops) and take
# DataLoader from the data module, which imported it from torch. Every rule must see those names.
_LAYERS = d("""
    import torch as th
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)
        def forward(self, x):
            return self.fc(x)
""")
_NET = d("""
    from layers import *
    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.block = Block(n)
        def forward(self, x):
            steps = x.size(1)
            future = th.triu(th.ones(steps, steps).cuda(), diagonal=1)
            return self.block(x) + future.sum()
""")
_DATA = d("""
    from torch.utils.data import Dataset, DataLoader
    class Frames(Dataset):
        def __len__(self):
            return 10
        def __getitem__(self, i):
            return i
    def frames():
        return Frames()
""")
_TRAIN = d("""
    from data import frames, DataLoader
    from net import *

    def main():
        model = nn.DataParallel(Net(8).cuda())
        opt = th.optim.Adam(model.parameters())
        for epoch in range(10):
            loader = DataLoader(frames(), batch_size=4, shuffle=True, num_workers=4)
            for x in loader:
                loss = model(x.cuda()).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()

    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW201", "nn.DataParallel with nn handed on through two star imports of project modules", {
        "layers.py": _LAYERS, "net.py": _NET, "data.py": _DATA, "train.py": _TRAIN,
    }, (("train.py", 5),)),
    ProjectShape("TW203", "DataLoader imported from the project's data module, which took it from torch", {
        "layers.py": _LAYERS, "net.py": _NET, "data.py": _DATA, "train.py": _TRAIN,
    }, (("train.py", 8),)),
    ProjectShape("TW205", "a factory of torch imported as th in a module the file star-imports", {
        "layers.py": _LAYERS, "net.py": _NET, "data.py": _DATA, "train.py": _TRAIN,
    }, (("net.py", 8),)),
    ProjectShape("TW203", "look-alike: the data module's own DataLoader class (not torch's)", {
        "layers.py": _LAYERS, "net.py": _NET,
        "data.py": _DATA.replace("from torch.utils.data import Dataset, DataLoader", "from torch.utils.data import Dataset\n"
                                 "class DataLoader:\n    def __init__(self, ds, **kw):\n        self.ds = ds\n"
                                 "    def __iter__(self):\n        return iter(self.ds)"),
        "train.py": _TRAIN,
    }),
    ProjectShape("TW205", "look-alike: the star-imported th is rebound in the file to the project's own helper", {
        "layers.py": _LAYERS, "data.py": _DATA, "train.py": _TRAIN,
        "net.py": _NET.replace("from layers import *\n", "from layers import *\nimport helpers as th\n"),
        "helpers.py": "def ones(*s):\n    return [1] * s[0]\ndef triu(x, diagonal=0):\n    return x\n",
    }),
]

# ------------------------------------------------------------- TW209 between the conv and the norm
# Speech and pose models: a project wrapper around nn.Conv1d that keeps the bias by default, used
# as self.convN before self.bnN; causal convolutions trimmed by a slice (or a method that only
# slices) before the norm; banks of convolutions in ModuleLists zipped with ModuleLists of norms.
_WRAPPER = d("""
    import torch.nn as nn
    class Conv1dLayer(nn.Module):
        def __init__(self, c_in, c_out, k=1, pad=0, bias=True):
            super().__init__()
            self.conv = nn.Conv1d(c_in, c_out, k, padding=pad, bias=bias)
        def forward(self, x):
            return self.conv(x)
""")
FIND += [
    Shape("TW209", "causal trim by a slice of the time axis between a conv and its norm", d("""
        import torch.nn as nn
        class Causal(nn.Module):
            def __init__(self, c, k):
                super().__init__()
                self.pad = k - 1
                self.conv = nn.Conv1d(c, c, k, padding=k - 1)
                self.bn = nn.BatchNorm1d(c)
            def forward(self, x):
                h = self.conv(x)[:, :, :-self.pad]
                return self.bn(h).tanh()
    """), 6),
    Shape("TW209", "conv bank in a ModuleList comprehension zipped with norms, trimmed by a slicing method", d("""
        import torch
        import torch.nn as nn
        class Bank(nn.Module):
            def __init__(self, c, K):
                super().__init__()
                self.convs = nn.ModuleList([nn.Conv1d(c, c, k, padding=k // 2) for k in range(1, K + 1)])
                self.norms = nn.ModuleList([nn.BatchNorm1d(c) for _ in range(K)])
            def _trim(self, y, k):
                if k % 2 == 0:
                    return y[:, :, :-1]
                return y
            def forward(self, x):
                outs = []
                for k, (conv, norm) in enumerate(zip(self.convs, self.norms)):
                    outs.append(torch.relu(norm(self._trim(conv(x), k + 1).contiguous())))
                return torch.cat(outs, 1)
    """), 6),
]
PROJECTS += [
    ProjectShape("TW209", "the project's conv wrapper (bias on by default) as self.conv, then self.norm", {
        "blocks.py": _WRAPPER,
        "prenet.py": d("""
        import torch.nn as nn
        from blocks import Conv1dLayer
        class Prenet(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = Conv1dLayer(c, c, 5, pad=2)
                self.norm = nn.BatchNorm1d(c)
            def forward(self, x):
                return self.norm(self.conv(x)).relu()
    """),
    }, (("prenet.py", 6),)),
    ProjectShape("TW209", "look-alike: the wrapper called with bias=False", {
        "blocks.py": _WRAPPER,
        "prenet.py": d("""
        import torch.nn as nn
        from blocks import Conv1dLayer
        class Prenet(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = Conv1dLayer(c, c, 5, pad=2, bias=False)
                self.norm = nn.BatchNorm1d(c)
            def forward(self, x):
                return self.norm(self.conv(x))
    """),
    }),
    ProjectShape("TW209", "copies of the project's wrapper made by a clones() helper, zipped with copies of a norm", {
        "blocks.py": _WRAPPER,
        "post.py": d("""
            import copy
            import torch.nn as nn
            from blocks import Conv1dLayer
            def clones(layer, n):
                return nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])
            class Post(nn.Module):
                def __init__(self, c):
                    super().__init__()
                    self.convs = clones(Conv1dLayer(c, c, 5, pad=4), 3)
                    self.norms = clones(nn.BatchNorm1d(c), 3)
                def forward(self, x):
                    for norm, conv in zip(self.norms, self.convs):
                        x = norm(conv(x)[:, :, :-4]).tanh()
                    return x
        """),
    }, (("post.py", 9),)),
]
QUIET += [
    Shape("TW209", "look-alike: pre-activation order in a zip loop (norm first, then conv)", d("""
        import torch.nn as nn
        class PreAct(nn.Module):
            def __init__(self, c, n):
                super().__init__()
                self.convs = nn.ModuleList([nn.Conv1d(c, c, 3, padding=1) for _ in range(n)])
                self.norms = nn.ModuleList([nn.BatchNorm1d(c) for _ in range(n)])
            def forward(self, x):
                for conv, norm in zip(self.convs, self.norms):
                    x = conv(norm(x).relu())
                return x
    """)),
    Shape("TW209", "look-alike: a method that transforms the conv output (an activation) before the norm", d("""
        import torch.nn as nn
        class Act(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.conv = nn.Conv1d(c, c, 3, padding=1)
                self.bn = nn.BatchNorm1d(c)
            def _act(self, y):
                return y.relu()
            def forward(self, x):
                return self.bn(self._act(self.conv(x)))
    """)),
    Shape("TW209", "look-alike: a conv bank zipped with LayerNorms", d("""
        import torch.nn as nn
        class Bank(nn.Module):
            def __init__(self, c, K):
                super().__init__()
                self.convs = nn.ModuleList([nn.Conv1d(c, c, 3, padding=1) for _ in range(K)])
                self.norms = nn.ModuleList([nn.LayerNorm(c) for _ in range(K)])
            def forward(self, x):
                for conv, norm in zip(self.convs, self.norms):
                    x = norm(conv(x).transpose(1, 2)).transpose(1, 2)
                return x
    """)),
]

# ------------------------------------------------------------- TW205 branches no construction selects
# A few-shot project whose head class picks a solver function by a string option; the scripts
# build it only with some of the names, so the other solvers never run. A dropout wrapper whose
# variational mode is off by default and never turned on by its one construction.
_HEADS = d("""
    import torch
    import torch.nn as nn
    def ridge_head(q, s):
        return q @ s.t()
    def svm_ww_head(q, s):
        eye = torch.eye(s.size(0)).cuda()
        return q @ (s.t() + eye[: s.size(1)])
    class Head(nn.Module):
        def __init__(self, kind='ridge'):
            super(Head, self).__init__()
            if 'ridge' in kind:
                self.solve = ridge_head
            elif 'svm-ww' in kind:
                self.solve = svm_ww_head
        def forward(self, q, s):
            return self.solve(q, s)
""")
_DROP = d("""
    import torch
    import torch.nn as nn
    class WeightNoise(nn.Module):
        def __init__(self, module, p=0.5, variational=False):
            super().__init__()
            self.module, self.p = module, p
            self.variational = variational
        def forward(self, x):
            w = self.module.weight
            if self.variational:
                mask = torch.ones(w.size(0), 1).cuda()
                w = w * mask
            return x @ w.t()
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a head solver only named in a branch no construction selects", {
        "heads.py": _HEADS,
        "train.py": d("""
            from heads import Head
            def main(args):
                head = Head('ridge').cuda() if args.head == 'ridge' else Head(kind='ridge-exact').cuda()
                return head
        """),
    }),
    ProjectShape("TW205", "look-alike: a mode of a wrapper off by default that its one construction leaves off", {
        "noise.py": _DROP,
        "model.py": d("""
            import torch.nn as nn
            from noise import WeightNoise
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = WeightNoise(nn.Linear(4, 4), p=0.2)
        """),
    }),
]

# ------------------------------------------------------------- TW201 a trainer looked up in a registry
# A distillation launcher wraps the model in DataParallel and hands it to a trainer class picked
# from a dictionary by the config; the training steps live in the trainer's module.
_ENGINE = d("""
    class BaseTrainer:
        def __init__(self, name, model, loader):
            self.model, self.loader = model, loader
        def train(self):
            for x, y in self.loader:
                self.model(x, y).backward()
    trainer_dict = {"base": BaseTrainer}
""")
PROJECTS += [
    ProjectShape("TW201", "DataParallel handed to a trainer class picked from a registry dict", {
        "engine.py": _ENGINE,
        "launch.py": d("""
            import torch
            from engine import trainer_dict
            def main(cfg, model, loader):
                model = torch.nn.DataParallel(model.cuda())
                trainer = trainer_dict[cfg.trainer]("run", model, loader)
                trainer.train()
        """),
    }, (("launch.py", 4),)),
    ProjectShape("TW201", "look-alike: DataParallel handed to an evaluator picked from a registry dict", {
        "engine.py": _ENGINE + "class Evaluator:\n    def __init__(self, model):\n        self.model = model\n"
                               "    def run(self, xs):\n        return [self.model(x) for x in xs]\nevaluator_dict = {'top1': Evaluator}\n",
        "evaluate.py": d("""
            import torch
            from engine import evaluator_dict
            def main(cfg, model, xs):
                model = torch.nn.DataParallel(model.cuda())
                return evaluator_dict[cfg.metric](model).run(xs)
        """),
    }),
]
