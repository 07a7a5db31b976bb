"""The recall corpus, round 23 part D: false classes of TW205, TW201, TW301 and TW303 that the
held-out sets 35 and 36 showed - each written in our own words and reduced to its shape, with
look-alikes that must keep being reported. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW205 a tensor cached under `if not hasattr(self, name)`
# A re-parameterisable block that builds its identity kernel the first time a conversion asks for
# it and keeps it on the object: made once, not per call.
_FUSE = d("""
    import numpy as np
    import torch
    import torch.nn as nn
    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
            self.bn = nn.BatchNorm2d(c)
        def _identity(self, ref):
            if not hasattr(self, "eye_kernel"):
                k = np.zeros((self.c, self.c, 3, 3), dtype=np.float32)
                for i in range(self.c):
                    k[i, i, 1, 1] = 1
                self.eye_kernel = torch.from_numpy(k).to(ref.device)
            return self.eye_kernel
        def fused(self):
            return self._identity(self.bn.weight) * self.bn.weight.view(-1, 1, 1, 1)
""")
QUIET += [
    Shape("TW205", "look-alike: an identity kernel built under `if not hasattr(self, ...)` and kept on the object", _FUSE),
    Shape("TW205", "look-alike: a coordinate table cached on the module the first forward", d("""
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def forward(self, x):
                if not hasattr(self, 'cols'):
                    self.cols = torch.arange(x.shape[-1]).float().cuda()
                return x * self.cols
    """)),
]
FIND += [
    Shape("TW205", "the hasattr test guards another attribute than the one stored: rebuilt every forward", d("""
        import torch
        import torch.nn as nn
        class Head(nn.Module):
            def forward(self, x):
                if not hasattr(self, 'scale'):
                    self.cols = torch.arange(x.shape[-1]).float().cuda()
                return x * self.cols
    """), 6),
]

# ------------------------------------------------------------- TW205 a module function shadowed by a method of its name
# A point-cloud package: `ops/transforms.py` keeps a module-level helper that nothing calls beside a
# class whose static method of the same name the model calls through `from .. ops.transforms
# import Rigid as T` (a relative import written with a space).
_OPS = d("""
    import torch
    def to_homogeneous(rot, t):
        row = torch.tensor([[[0.0, 0.0, 0.0, 1.0]]]).repeat(rot.shape[0], 1, 1).to(rot)
        return torch.cat([torch.cat([rot, t.unsqueeze(-1)], 2), row], 1)
    class Rigid:
        @staticmethod
        def to_homogeneous(rot, t):
            row = torch.tensor([[[0.0, 0.0, 0.0, 1.0]]]).repeat(rot.shape[0], 1, 1).to(rot)
            return torch.cat([torch.cat([rot, t[:, 0, :].unsqueeze(-1)], 2), row], 1)
""")
_NET = d("""
    import torch
    import torch.nn as nn
    from .. ops.transforms import Rigid as T
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 7)
        def forward(self, a, b):
            pose = self.fc(torch.cat([a, b], 1))
            return T.to_homogeneous(pose[:, :9].view(-1, 3, 3), pose[:, None, 4:7])
""")
_FIT = d("""
    import torch
    from pkg.models.net import Net
    net = Net().cuda()
    opt = torch.optim.Adam(net.parameters())
    for a, b in loader:
        net(a.cuda(), b.cuda()).sum().backward()
        opt.step()
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: the module-level helper nothing calls beside a static method of its name that runs", {
        "pkg/__init__.py": "", "pkg/ops/__init__.py": "", "pkg/models/__init__.py": "",
        "pkg/ops/transforms.py": _OPS, "pkg/models/net.py": _NET, "train.py": _FIT}, (("pkg/ops/transforms.py", 8),)),
    ProjectShape("TW205", "the module-level helper is what the model calls (through its module)", {
        "pkg/__init__.py": "", "pkg/ops/__init__.py": "", "pkg/models/__init__.py": "",
        "pkg/ops/transforms.py": _OPS, "pkg/models/net.py": _NET.replace("import Rigid as T", "import Rigid as T\nfrom .. ops import transforms")
        .replace("T.to_homogeneous", "transforms.to_homogeneous"), "train.py": _FIT},
        (("pkg/ops/transforms.py", 3), ("pkg/ops/transforms.py", 8))),
]

# ------------------------------------------------------------- TW201 teacher and student wrappers that only validate
# Distillation: the teacher and the student are each wrapped (chained with .cuda()) to be validated
# under no_grad; training runs through the distiller's own wrapper. The student's parameters go to
# the optimizer and its weights are saved, but its wrapper never runs with autograd on.
_DISTILL = d("""
    import torch
    import torch.nn as nn
    from nets import Teacher, Student, Distiller
    def validate(loader, model):
        model.eval()
        for x, y in loader:
            with torch.no_grad():
                out = model(x.cuda())
        return out
    def fit(loader, d_net, opt):
        d_net.train()
        for x, y in loader:
            loss = d_net(x.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
    def main(train_loader, val_loader):
        t_net, s_net = Teacher(), Student()
        d_net = Distiller(t_net, s_net)
        t_net = torch.nn.DataParallel(t_net).cuda()
        s_net = torch.nn.DataParallel(s_net).cuda()
        d_net = torch.nn.DataParallel(d_net).cuda()
        opt = torch.optim.SGD(list(s_net.parameters()) + list(d_net.module.connect.parameters()), lr=0.1)
        validate(val_loader, t_net)
        for epoch in range(10):
            fit(train_loader, d_net, opt)
            validate(val_loader, s_net)
            torch.save(s_net.state_dict(), "s.pth")
""")
FIND += [
    Shape("TW201", "distiller wrapper that trains, beside teacher/student wrappers that only validate", _DISTILL, 22),
    Shape("TW201", "the student's wrapper also trains on its own (a fine-tuning stage)", _DISTILL.replace(
        "        validate(val_loader, s_net)\n", "        validate(val_loader, s_net)\n        s_net(torch.randn(2, 3)).sum().backward()\n"), 21),
    Shape("TW201", "the teacher's wrapper is validated without no_grad and handed to a training function", _DISTILL.replace(
        "    validate(val_loader, t_net)\n", "    validate(val_loader, t_net)\n    fit(train_loader, t_net, opt)\n"), 20),
]

# ------------------------------------------------------------- TW301 draws in helpers that only loader workers run
# The script seeds torch only; its loaders run workers (each seeds random and NumPy from torch). The
# draws sit one call away from __getitem__/__call__: a transform's static get_params, a data
# module's add_noise that the dataset's __getitem__ calls.
_AUG = d("""
    import random
    class Jitter:
        def __init__(self, s):
            self.s = s
        @staticmethod
        def get_params(s):
            return random.uniform(1 - s, 1 + s)
        def __call__(self, img):
            return img * self.get_params(self.s)
""")
_COMMON = d("""
    import numpy as np
    def add_noise(x, sigma):
        return x + np.random.normal(scale=sigma, size=x.shape)
""")
_DATASET = d("""
    import torch
    from data import common
    from augment import Jitter
    class Pairs(torch.utils.data.Dataset):
        def __init__(self, items):
            self.items, self.jitter = items, Jitter(0.2)
        def __len__(self):
            return len(self.items)
        def __getitem__(self, i):
            return torch.as_tensor(common.add_noise(self.jitter(self.items[i]), 5))
""")
_SEED_TORCH = d("""
    import torch
    from data.pairs import Pairs
    def main():
        torch.manual_seed(0)
        loader = torch.utils.data.DataLoader(Pairs(list(range(100))), batch_size=4, shuffle=True, num_workers=4)
        net = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for x in loader:
            net(x.float()).sum().backward()
            opt.step()
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW301", "look-alike: a transform's static get_params and a data module's add_noise, run only by loader workers", {
        "augment.py": _AUG, "data/__init__.py": "", "data/common.py": _COMMON, "data/pairs.py": _DATASET, "train.py": _SEED_TORCH}),
    ProjectShape("TW301", "the noise helper also runs in the main process (a preview drawn by the script)", {
        "augment.py": _AUG, "data/__init__.py": "", "data/common.py": _COMMON, "data/pairs.py": _DATASET,
        "train.py": _SEED_TORCH.replace("from data.pairs import Pairs\n", "from data.pairs import Pairs\nfrom data import common\n").replace(
            "    net = torch.nn.Linear(4, 1)\n", "    preview = common.add_noise(torch.zeros(4).numpy(), 5)\n    net = torch.nn.Linear(4, 1)\n")},
        (("data/common.py", 3),)),
]

# ------------------------------------------------------------- TW303 a model module under scripts that seed torch
# A model file seeds the current GPU in its constructor; the training script that builds it calls
# torch.manual_seed unconditionally (every GPU seeded): redundant. An evaluation script that imports
# a model file of the same kind and seeds nothing keeps the finding.
_MODEL = d("""
    import torch
    import torch.nn as nn
    class Predictor(nn.Module):
        def __init__(self, k):
            super().__init__()
            torch.cuda.manual_seed(233)
            self.fc = nn.Linear(k, k)
        def forward(self, x):
            return self.fc(x)
""")
_TRAIN = d("""
    import argparse
    import torch
    from model import Predictor
    def main(args):
        torch.manual_seed(args.seed)
        net = torch.nn.DataParallel(Predictor(8)).cuda()
        return net
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--seed", type=int, default=0)
        main(p.parse_args())
""")
PROJECTS += [
    ProjectShape("TW303", "look-alike: a model module's cuda seed under a script that seeds torch unconditionally", {
        "model.py": _MODEL, "train.py": _TRAIN}),
    ProjectShape("TW303", "an evaluation script imports the model module and seeds nothing", {
        "model.py": _MODEL, "train.py": _TRAIN, "evaluate.py": _TRAIN.replace("    torch.manual_seed(args.seed)\n", "")},
        (("model.py", 6),)),
    ProjectShape("TW303", "the script seeds torch only on its CPU branch", {
        "model.py": _MODEL, "train.py": _TRAIN.replace("    torch.manual_seed(args.seed)\n",
                                                       "    if not torch.cuda.is_available():\n        torch.manual_seed(args.seed)\n")},
        (("model.py", 6),)),
]
