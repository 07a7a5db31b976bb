"""The recall corpus, round 20 part C: classes the twenty-ninth and thirtieth sets showed for
TW403, TW402, TW201, TW104, TW301 and TW303 - each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 GPU-only lines beside a device chosen with a CPU alternative
# A vocoder's synthesis script picks "cuda" or "cpu", moves its inputs with .to(device) and then
# times the generation with torch.cuda.synchronize(); a classifier moves its net with a bare .cuda().
FIND += [
    Shape("TW403", "synchronize() around a timed generation in a script whose device falls back to the CPU", d("""
        import time
        import torch
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def generate(net, feats):
            feats = feats.to(dev)
            torch.cuda.synchronize()
            t0 = time.time()
            with torch.no_grad():
                out = net.infer(feats)
            return out, time.time() - t0
    """), 6),
    Shape("TW403", "the trained net moved with a bare .cuda() while batches go to a device string chosen with 'cpu'", d("""
        import torch
        from nets import Small
        target = "cuda" if torch.cuda.is_available() else "cpu"
        net = Small()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        def step(x, y):
            x, y = x.to(target), y.to(target)
            loss = (net(x) - y).pow(2).mean()
            loss.backward()
            opt.step()
        net.cuda()
    """), 11),
]
QUIET += [
    Shape("TW403", "look-alike: the synchronize() only under an opt-in timing switch", d("""
        import time
        import torch
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def run(net, x, opts):
            x = x.to(dev)
            if opts.profile:
                torch.cuda.synchronize()
            return net(x)
    """)),
    Shape("TW403", "look-alike: the synchronize() under a test of the chosen device", d("""
        import torch
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def run(net, x):
            x = x.to(dev)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            return net(x)
    """)),
]

# ------------------------------------------------------------- TW403 a mode flag derived from the GPU check
# A graph network offers a CPU/GPU split mode: the flag is set as `opt.split = opt.cpu and
# opt.split and torch.cuda.is_available()`, so code under `if opt.split:` only runs with a GPU.
QUIET += [
    Shape("TW403", "look-alike: moves under a mode flag that conjoins torch.cuda.is_available()", d("""
        import argparse
        import torch
        from gnn import Net
        p = argparse.ArgumentParser()
        p.add_argument("--cpu", action="store_true")
        p.add_argument("--split", action="store_true")
        opt = p.parse_args()
        opt.split = opt.cpu and opt.split and torch.cuda.is_available()
        net = Net()
        if torch.cuda.is_available():
            net = net.cuda()
        optimizer = torch.optim.Adam(net.parameters())
        def fit(graph, feats):
            for _ in range(100):
                g = graph.sample()
                if opt.split:
                    g = g.cuda()
                optimizer.zero_grad()
                net(feats, g).sum().backward()
                optimizer.step()
    """)),
]

# ------------------------------------------------------------- TW403 a module-level CUDA device used only by an opt-in mode
_SPLIT_NET = d("""
    import torch
    import torch.nn as nn
    gpu = torch.device("cuda:0")
    class Stack(nn.Module):
        def __init__(self, n, hybrid=False):
            super().__init__()
            self.hybrid = hybrid
            self.first = nn.Linear(n, n)
            self.rest = nn.Linear(n, n)
            if hybrid:
                self.rest = self.rest.to(gpu)
        def forward(self, x):
            x = self.first(x)
            if self.hybrid:
                x = x.to(gpu)
            return self.rest(x)
""")
_SPLIT_MAIN = d("""
    import argparse
    import torch
    from stack import Stack
    p = argparse.ArgumentParser()
    p.add_argument("--no_cuda", action="store_true")
    args = p.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    model = Stack(8)
    if args.cuda:
        model = model.cuda()
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: models file's cuda:0 device only used under a mode parameter that defaults to False",
                 {"stack.py": _SPLIT_NET, "main.py": _SPLIT_MAIN}),
]

# ------------------------------------------------------------- TW402 a reload through the same file object name
QUIET += [
    Shape("TW402", "look-alike: saved through `with open(name, 'wb') as f`, read back with torch.load(open(name, 'rb'))", d("""
        import argparse
        import torch
        from seqnet import Net
        p = argparse.ArgumentParser()
        p.add_argument("--cuda", action="store_true")
        args = p.parse_args()
        model = Net()
        if args.cuda:
            model.cuda()
        def train():
            pass
        if __name__ == "__main__":
            name = "seq_best.pt"
            for ep in range(10):
                train()
                with open(name, "wb") as f:
                    torch.save(model, f)
            model = torch.load(open(name, "rb"))
    """)),
]

# ------------------------------------------------------------- TW201 wrappers that only evaluate
QUIET += [
    Shape("TW201", "look-alike: DataParallel then model.cuda().eval() in a test function of a training project", d("""
        import torch
        from detector import Net
        def test(weights, loader):
            model = Net()
            model.load_state_dict(torch.load(weights, map_location="cpu"))
            model = torch.nn.DataParallel(model)
            model.cuda().eval()
            with torch.no_grad():
                return [model(x.cuda()) for x in loader]
        def train(loader):
            model = Net().cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            for x, y in loader:
                opt.zero_grad()
                model(x.cuda()).sum().backward()
                opt.step()
            test("last.pt", loader)
    """)),
    Shape("TW201", "look-alike: a list of wrapped checkpoints, each put in eval mode by index", d("""
        import torch
        from scorenet import Score
        class Runner:
            def train(self, loader):
                net = Score().cuda()
                opt = torch.optim.Adam(net.parameters())
                for x in loader:
                    opt.zero_grad()
                    net(x.cuda()).mean().backward()
                    opt.step()
            def ensemble(self, paths):
                nets = [Score().cuda() for _ in paths]
                nets = [torch.nn.DataParallel(n) for n in nets]
                for i, p in enumerate(paths):
                    nets[i].load_state_dict(torch.load(p, map_location="cuda"))
                    nets[i].eval()
                return nets
    """)),
]

# ------------------------------------------------------------- TW104 a model frozen by the caller
QUIET += [
    Shape("TW104", "look-alike: evaluate() gets a model its caller froze with requires_grad_(False)", d("""
        import torch
        from det import Net
        def evaluate(images, model):
            model.eval()
            return [model(torch.from_numpy(im)) for im in images]
        if __name__ == "__main__":
            net = Net()
            net.load_state_dict(torch.load("w.pth", map_location="cpu"))
            net.requires_grad_(False)
            net.eval()
            evaluate([], net)
    """)),
]
FIND += [
    Shape("TW104", "evaluate() also called with a model nobody froze", d("""
        import torch
        from det import Net
        def evaluate(images, model):
            model.eval()
            return [model(torch.from_numpy(im)) for im in images]
        if __name__ == "__main__":
            net = Net()
            net.requires_grad_(False)
            evaluate([], net)
            other = Net()
            evaluate([], other)
    """), 5),
]

# ------------------------------------------------------------- TW301/TW303 seeds split over the branches of a GPU check
FIND += [
    Shape("TW301", "torch.cuda.manual_seed on the GPU branch, torch.manual_seed only on the CPU one", d("""
        import torch
        from agent import Policy
        def train(opt):
            if torch.cuda.is_available():
                torch.cuda.manual_seed(7)
            else:
                torch.manual_seed(7)
            net = Policy()
            order = torch.randperm(512)
            return net, order
    """), 5),
    Shape("TW303", "the same split in a script that trains on several GPUs", d("""
        import torch
        from det import Net
        def train(cfg):
            if torch.cuda.is_available():
                torch.cuda.manual_seed(42)
            else:
                torch.manual_seed(42)
            net = Net()
            if cfg.num_gpus > 1:
                net = torch.nn.DataParallel(net)
            return net
    """), 5),
]
QUIET += [
    Shape("TW301", "look-alike: torch.manual_seed on every run, the CUDA seed only added on the GPU branch", d("""
        import torch
        from agent import Policy
        def train(opt):
            torch.manual_seed(7)
            if torch.cuda.is_available():
                torch.cuda.manual_seed_all(7)
            net = Policy()
            return net, torch.randperm(512)
    """)),
    Shape("TW303", "look-alike: the split in a single-GPU script (TW301 reports it)", d("""
        import torch
        from agent import Policy
        def train(opt):
            if torch.cuda.is_available():
                torch.cuda.manual_seed(7)
            else:
                torch.manual_seed(7)
            return Policy()
    """)),
]

# ------------------------------------------------------------- TW301 (R11) workers named in a loader's keyword dict
_AUG = d("""
    import numpy as np
    class Flip:
        def __call__(self, sample):
            if np.random.rand() < 0.5:
                sample = sample[:, ::-1]
            return sample
""")
_AUG_TRAIN = d("""
    import argparse
    import torch
    from torch.utils.data import DataLoader
    from aug import Flip
    from data import Boxes
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=8)
    opt = p.parse_args()
    torch.manual_seed(3)
    params = {"batch_size": 8, "shuffle": True, "num_workers": opt.workers}
    loader = DataLoader(Boxes(transform=Flip()), **params)
""")
PROJECTS += [
    ProjectShape("TW301", "look-alike: NumPy draws in a transform's __call__, loader workers given in a keyword dict (R11)",
                 {"aug.py": _AUG, "train.py": _AUG_TRAIN, "data.py": "class Boxes:\n    def __init__(self, transform):\n        pass\n"}),
]
