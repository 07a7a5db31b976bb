"""The recall corpus, round 21 part E: classes sets 31 and 32 showed in lint's dead-code analysis
(ruling R5) and in TW209, TW220, TW405, TW507, TW508 - each written in our own words and reduced
to its shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- dead code: calls commented out
# A generation helper named test_*_epoch, called only by a completion routine whose one call in
# the entry script is commented out: it never runs, so per-call rules (TW104) stay quiet there.
_GEN = d("""
    import torch
    def test_partial_epoch(model, loader):
        model.eval()
        for x in loader:
            out = model(x.cuda())
        return out
    def complete_graphs(model, loader):
        return [test_partial_epoch(model, loader) for _ in range(3)]
    def test_full_epoch(model, loader):
        model.eval()
        for x in loader:
            out = model(x.cuda())
        return out
    def fit(model, loader):
        return test_full_epoch(model, loader)
""")
_MAIN = d("""
    from generation import *
    def run(model, loader):
        fit(model, loader)
        # complete_graphs(model, loader)
    run(None, [])
""")
_MAIN_LIVE = _MAIN.replace("# complete_graphs(model, loader)", "complete_graphs(model, loader)  # graph completion")
PROJECTS += [
    ProjectShape("TW104", "test_*_epoch helper reached only from a routine whose one call is commented out (# name(...)); "
                 "the helper the live fit() calls is still reported", {"generation.py": _GEN, "main.py": _MAIN},
                 (("generation.py", 12),)),
    ProjectShape("TW104", "look-alike: the same routine called in code (a comment after the call)",
                 {"generation.py": _GEN, "main.py": _MAIN_LIVE}, (("generation.py", 5), ("generation.py", 12))),
]

# A diagnostics script whose __main__ block has `# train()` commented out: its train() never runs,
# though other scripts of the project use the word `train` (a `train=True` dataset argument).
_DIAG = d("""
    import torch
    def train():
        model = torch.nn.Linear(2, 2).cuda()
        for step in range(100):
            loss = model(torch.randn(8, 2).cuda()).sum()
            loss.backward()
            print(loss.item())
    def evaluate():
        print("done")
    if __name__ == "__main__":
        # train()
        evaluate()
""")
_OTHER = d("""
    import torch
    from torchvision import datasets
    def fit(model, root):
        data = datasets.MNIST(root, train=True)
        for x, _ in data:
            model(x).sum().backward()
    if __name__ == "__main__":
        fit(torch.nn.Linear(2, 2), ".")
""")
PROJECTS += [
    ProjectShape("TW207", "a script's train() only called in a comment of its __main__, while another script "
                 "passes train=True", {"diagnostics/approx_error.py": _DIAG, "train_main.py": _OTHER}),
    ProjectShape("TW207", "look-alike: the same script with train() called", {
        "diagnostics/approx_error.py": _DIAG.replace("# train()", "train()"), "train_main.py": _OTHER},
        (("diagnostics/approx_error.py", 7),)),
    ProjectShape("TW207", "look-alike: the script hands its functions to a command line by name (fire.Fire())", {
        "diagnostics/approx_error.py": _DIAG.replace("    # train()\n    evaluate()", "    import fire\n    fire.Fire()"),
        "train_main.py": _OTHER}, (("diagnostics/approx_error.py", 7),)),
]

# A left-over script that imports its helpers from a module that was renamed (utils -> utils_lm):
# it stops at import, but it is an entry script whose fix is one line - ruling R18 counts it as
# live, so per-call rules report there as in any script.
_LM_UTILS = d("""
    import torch
    def batchify(data, bsz):
        return data.view(bsz, -1).t().contiguous()
    def get_batch(source, i):
        return source[i:i + 35]
""")
_POINTER = d("""
    import torch
    from utils import batchify, get_batch
    def evaluate(model, data):
        model.eval()
        for i in range(0, data.size(0), 35):
            out = model(get_batch(data, i))
        return out
    model = torch.load("best.pt")
    evaluate(model, batchify(torch.zeros(100), 10))
""")
_TRAIN_LM = d("""
    import torch
    from utils_lm import batchify, get_batch
    def evaluate(model, data):
        model.eval()
        for i in range(0, data.size(0), 35):
            out = model(get_batch(data, i))
        return out
    evaluate(torch.nn.Linear(2, 2), batchify(torch.zeros(100), 10))
""")
PROJECTS += [
    ProjectShape("TW104", "an entry script importing names from a module renamed beside it (utils -> utils_lm) "
                 "is still live (R18)", {
                     "lm/utils_lm.py": _LM_UTILS, "lm/pointer.py": _POINTER, "lm/train.py": _TRAIN_LM,
                     "utils/display.py": "def show(x):\n    print(x)\n"}, (("lm/pointer.py", 6), ("lm/train.py", 6))),
]

# ------------------------------------------------------------- TW507 1 - exp(x)
FIND += [
    Shape("TW507", "1. - torch.exp(-x) in a benchmark's reference formula", d("""
        import torch
        def reference(x):
            return torch.exp(-x) / (1. - torch.exp(-x))
    """), 3),
    Shape("TW507", "alpha compositing: 1 - (-sigma * delta).exp()", d("""
        import torch
        def alphas(sigma, delta):
            return 1 - (-sigma * delta).exp()
    """), 3),
]
QUIET += [
    Shape("TW507", "look-alike: 1 - np.exp(x) on NumPy arrays", d("""
        import numpy as np
        import torch
        def decay(t):
            return 1 - np.exp(-t)
    """)),
    Shape("TW507", "look-alike: 2 - torch.exp(x) (no cancellation near 0)", d("""
        import torch
        def f(x):
            return 2 - torch.exp(x)
    """)),
]

# ------------------------------------------------------------- TW508 the stable form through a name
QUIET += [
    Shape("TW508", "stable log-sum-exp: the shifted tensor bound to a name first", d("""
        import torch
        def log_sum_exp(value, dim=1):
            m, _ = torch.max(value, dim=dim, keepdim=True)
            shifted = value - m
            return m.squeeze(dim) + torch.log(torch.sum(torch.exp(shifted), dim=dim))
    """)),
]
FIND += [
    Shape("TW508", "a name bound to something else than x - max(x)", d("""
        import torch
        def lse(value, dim=1):
            scaled = value * 2
            return torch.log(torch.sum(torch.exp(scaled), dim=dim))
    """), 4),
]

# ------------------------------------------------------------- TW220 apex.amp through the package
FIND += [
    Shape("TW220", "apex.amp.register_half_function written through the apex package", d("""
        import torch
        def setup(model, optimizer):
            import apex
            apex.amp.register_half_function(torch, "einsum")
            return model, optimizer
    """), 4),
]
QUIET += [
    Shape("TW220", "look-alike: apex's DistributedDataParallel, no amp", d("""
        import apex
        def wrap(model):
            return apex.parallel.DistributedDataParallel(model)
    """)),
]

# ------------------------------------------------------------- TW405 the spawned worker sets the rendezvous
_LEARNER = d("""
    import os
    import torch
    def train_distributed(rank, world, port, args):
        os.environ['MASTER_ADDR'] = 'localhost'
        os.environ['MASTER_PORT'] = str(port)
        torch.distributed.init_process_group('nccl', rank=rank, world_size=world)
""")
_LAUNCH = d("""
    from torch.multiprocessing import spawn
    from pkg.learner import train_distributed
    def main(args):
        spawn(train_distributed, args=(2, 29500, args), nprocs=2, join=True)
""")
PROJECTS += [
    ProjectShape("TW405", "a worker function that sets MASTER_ADDR itself, started by spawn(worker, ...) in another module",
                 {"pkg/learner.py": _LEARNER, "pkg/__main__.py": _LAUNCH}, (("pkg/learner.py", 4),)),
    ProjectShape("TW405", "look-alike: the same worker called directly by a launcher (torchrun sets the rest)",
                 {"pkg/learner.py": _LEARNER, "pkg/__main__.py": _LAUNCH.replace(
                     "spawn(train_distributed, args=(2, 29500, args), nprocs=2, join=True)", "train_distributed(0, 1, 29500, args)")}),
]

# ------------------------------------------------------------- TW209 lists under a flag, a flattened Linear
FIND += [
    Shape("TW209", "conv list in both branches of an if, BatchNorm list applied under `if self.is_bn:` after a name", d("""
        import torch.nn as nn
        class Edges(nn.Module):
            def __init__(self, c, n, dilated=False, is_bn=True):
                super().__init__()
                self.is_bn = is_bn
                if dilated:
                    self.convs = nn.ModuleList([nn.Conv1d(c, c, 3, dilation=2 ** i, padding=2 ** i) for i in range(n)])
                else:
                    self.convs = nn.ModuleList([nn.Conv1d(c, c, 3, padding=1) for i in range(n)])
                self.bns = nn.ModuleList([nn.BatchNorm1d(c) for i in range(n)])
            def forward(self, h):
                for i in range(len(self.convs)):
                    h = self.convs[i](h)
                    if self.is_bn:
                        h = self.bns[i](h)
                return h
    """), 7),
    Shape("TW209", "biased Linear whose output is flattened with .view(-1, c) into a BatchNorm1d of its size", d("""
        import torch.nn as nn
        class Gate(nn.Module):
            def __init__(self, a, b):
                super().__init__()
                self.fc = nn.Linear(2 * a + b, 2 * a)
                self.bn = nn.BatchNorm1d(2 * a)
            def forward(self, x):
                n, m, _ = x.shape
                h = self.fc(x)
                return self.bn(h.view(-1, h.shape[-1])).view(n, m, -1)
    """), 5),
]
QUIET += [
    Shape("TW209", "look-alike: the Linear's output split in two by the view before a BatchNorm1d of half its size", d("""
        import torch.nn as nn
        class Halves(nn.Module):
            def __init__(self, a):
                super().__init__()
                self.fc = nn.Linear(a, 2 * a)
                self.bn = nn.BatchNorm1d(a)
            def forward(self, x):
                h = self.fc(x)
                return self.bn(h.view(-1, self.a))
    """)),
]

# ------------------------------------------------------------- TW301 a dataset's fixed order
# A dataset that seeds Python's random with a literal default of its __init__ and shuffles its own
# items once: the order its train/validation/test indices are cut from, no run's seeding.
_CRYSTALS = d("""
    import random
    import torch
    from torch.utils.data import Dataset
    class Crystals(Dataset):
        def __init__(self, rows, random_seed=123):
            self.rows = list(rows)
            random.seed(random_seed)
            random.shuffle(self.rows)
        def __len__(self):
            return len(self.rows)
        def __getitem__(self, i):
            return torch.tensor(self.rows[i])
""")
_FIT = d("""
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader
    from ds.data import Crystals
    def main():
        model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
        loader = DataLoader(Crystals([[0.0] * 4] * 10), batch_size=2, shuffle=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            model(x).sum().backward()
            opt.step()
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW301", "dataset __init__ seeding random with a literal default (random_seed=123) to shuffle its own "
                 "items once; the project seeds nothing else", {"ds/__init__.py": "", "ds/data.py": _CRYSTALS, "main.py": _FIT}),
    ProjectShape("TW301", "look-alike: the seed is handed in with no default (the run's seed)", {
        "ds/__init__.py": "", "ds/data.py": _CRYSTALS.replace("random_seed=123", "random_seed"),
        "main.py": _FIT.replace("Crystals([[0.0] * 4] * 10)", "Crystals([[0.0] * 4] * 10, 7)")}, (("ds/data.py", 7),)),
]
