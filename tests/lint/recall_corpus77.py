"""The recall corpus, round 24 part D: classes the 37th and 38th sets (the tuning sets of round 24)
still missed - each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 modules picked by a run-time name
# A continual-learning entry point falls back to the CPU (after printing a warning) and imports the
# method it runs by name from a package; the method modules take the device they are handed and
# move with `.to(self.device)`, yet hard-code CUDA on a line or two.
_CL_MAIN = d("""
    import argparse
    import importlib
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--method", default="replay")
    args = p.parse_args()
    if torch.cuda.is_available():
        dev = "cuda"
    else:
        print("no GPU found, running on the CPU")
        dev = "cpu"
    Method = getattr(importlib.import_module(name="methods." + args.method), "Method")
    Method(torch.nn.Linear(4, 2), dev).fit()
""")
_CL_REPLAY = d("""
    import torch
    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1, device="cuda"))
    class Method:
        def __init__(self, net, device):
            self.net, self.device = net, device
            self.scale = Scale()
        def fit(self):
            x = torch.randn(8, 4).to(self.device)
            return self.net(x)
""")
_CL_DISTILL = d("""
    import torch
    class Method:
        def __init__(self, net, device):
            self.net, self.device = net, device
        def fit(self, loader=()):
            for xb, yb in loader:
                xb, yb = xb.cuda(), yb.to(self.device)
                self.net(xb)
""")
_ZOO_MAIN = d("""
    import importlib
    import torch
    def main(name):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        trainer = importlib.import_module(f"trainers.{name}").Trainer(device)
        trainer.run()
    if __name__ == "__main__":
        main("sgd")
""")
_ZOO_TRAINER = d("""
    import torch
    class Trainer:
        def __init__(self, device):
            self.device = device
        def run(self):
            noise = torch.randn(4, 3).cuda()
            return noise.to(self.device)
""")
PROJECTS += [
    ProjectShape("TW403", "method module picked by import_module('pkg.' + name) hard-codes device='cuda'",
                 {"main.py": _CL_MAIN, "methods/__init__.py": "", "methods/replay.py": _CL_REPLAY},
                 (("methods/replay.py", 5),)),
    ProjectShape("TW403", "method module picked by import_module moves its batches with a bare .cuda()",
                 {"main.py": _CL_MAIN, "methods/__init__.py": "", "methods/replay.py": _CL_DISTILL,
                  "methods/distill.py": _CL_DISTILL},
                 (("methods/distill.py", 7), ("methods/replay.py", 7))),
    ProjectShape("TW403", "trainer module picked by an f-string import_module makes noise with .cuda()",
                 {"run.py": _ZOO_MAIN, "trainers/__init__.py": "", "trainers/sgd.py": _ZOO_TRAINER},
                 (("trainers/sgd.py", 6),)),
]
_GPU_MAIN = d("""
    import importlib
    import torch
    def main(name):
        trainer = importlib.import_module("trainers." + name).Trainer("cuda")
        trainer.run()
    if __name__ == "__main__":
        main("sgd")
""")
_CL_GUARDED = d("""
    import torch
    class Method:
        def __init__(self, net, device):
            self.net, self.device = net, device
        def fit(self, loader=()):
            for xb, yb in loader:
                if self.device != "cpu":
                    xb = xb.cuda()
                self.net(xb.to(self.device))
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: trainers picked by name from an entry that only ever runs on CUDA",
                 {"run.py": _GPU_MAIN, "trainers/__init__.py": "", "trainers/sgd.py": _ZOO_TRAINER,
                  "trainers/adam.py": _ZOO_TRAINER}),
    ProjectShape("TW403", "look-alike: the method module's .cuda() sits under a test of the device it is handed",
                 {"main.py": _CL_MAIN, "methods/__init__.py": "", "methods/replay.py": _CL_GUARDED}),
]

# ------------------------------------------------------------- TW403 a CPU option, then the model on CUDA
# A training script parses `--no_cuda` (or a `--device` naming a device type) and checks it when it
# moves the batches, but pins its GPU and moves the model with bare calls: the CPU run it offers fails.
FIND += [
    Shape("TW403", "--no_cuda offered, torch.cuda.set_device(args.gpu) unconditionally", d("""
        import argparse
        import torch
        from nets import Net
        def main(args):
            torch.cuda.set_device(args.gpu)
            model = Net()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in []:
                if not args.no_cuda and torch.cuda.is_available():
                    x = x.cuda(args.gpu, non_blocking=True)
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            p.add_argument("--gpu", default=0, type=int)
            p.add_argument("--no_cuda", action="store_true")
            main(p.parse_args())
    """), 5),
    Shape("TW403", "--device option (default 'cuda') for the batches, the model wrapped around a bare .cuda()", d("""
        import argparse
        import torch
        from nets import Net
        p = argparse.ArgumentParser()
        p.add_argument("--device", type=str, default="cuda")
        args = p.parse_args()
        device = torch.device(args.device)
        model = torch.nn.DataParallel(Net().cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def evaluate(net, loader, device):
            return [net(x.to(device)) for x, _ in loader]
        for x, y in []:
            x = x.to(device)
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
        evaluate(model, [], device)
    """), 8),
]
_OPT_MAIN = d("""
    import argparse
    import torch
    from nets import Net
    from aug import shuffle_mix
    def main(args):
        model = Net()
        model.cuda(args.gpu)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in []:
            if not args.no_cuda and torch.cuda.is_available():
                x = x.cuda(args.gpu, non_blocking=True)
            x = shuffle_mix(x)
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--gpu", default=0, type=int)
        p.add_argument("--no_cuda", action="store_true")
        main(p.parse_args())
""")
_OPT_AUG = d("""
    import torch
    def shuffle_mix(x):
        order = torch.randperm(x.size(0)).cuda()
        return 0.5 * (x + x[order])
""")
PROJECTS += [
    ProjectShape("TW403", "--no_cuda offered, model.cuda(args.gpu) as a whole statement; a helper's bare .cuda()",
                 {"main.py": _OPT_MAIN, "aug.py": _OPT_AUG, "nets.py": "import torch\nNet = torch.nn.Linear\n"},
                 (("aug.py", 3), ("main.py", 7))),
]
QUIET += [
    Shape("TW403", "look-alike: --device holds a GPU id (default '0')", d("""
        import argparse
        import os
        import torch
        from nets import Net
        p = argparse.ArgumentParser()
        p.add_argument("--device", type=str, default="0")
        args = p.parse_args()
        os.environ["CUDA_VISIBLE_DEVICES"] = args.device
        assert torch.cuda.is_available(), "this script trains on a GPU"
        model = Net().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in []:
            opt.zero_grad()
            model(x.cuda()).sum().backward()
            opt.step()
    """)),
    Shape("TW403", "look-alike: --no_cuda honoured by every move (if-statements and conditional expressions)", d("""
        import argparse
        import torch
        from nets import Net
        p = argparse.ArgumentParser()
        p.add_argument("--no_cuda", action="store_true")
        args = p.parse_args()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        if args.cuda:
            torch.cuda.set_device(0)
        model = Net()
        if args.cuda:
            model.cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in []:
            x = x.cuda() if args.cuda else x
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    """)),
]

# ------------------------------------------------------------- TW403 a yes/no GPU switch, methods by name
# The entry point takes `--cuda` as a 'yes'/'no' string (default 'no') and imports the learner it
# runs by name; the learner moves its buffers under its flag but one label with a bare `.cuda()`.
_YN_MAIN = d("""
    import argparse
    import importlib
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--learner", type=str, default="buffer")
    p.add_argument("--cuda", type=str, default="no", help="yes or no")
    args = p.parse_args()
    args.cuda = args.cuda == "yes"
    Learner = importlib.import_module("learners." + args.learner).Learner
    net = Learner(args)
    if args.cuda:
        net.cuda()
    for x, y in []:
        if args.cuda:
            x, y = x.cuda(), y.cuda()
        net.observe(x, y)
""")
_YN_LEARNER = d("""
    import torch
    class Learner(torch.nn.Module):
        def __init__(self, args):
            super().__init__()
            self.gpu = args.cuda
            self.fc = torch.nn.Linear(4, 3)
            self.opt = torch.optim.SGD(self.parameters(), lr=0.1)
        def observe(self, x, y):
            labels = torch.unique(y)
            first = labels[0].cuda()
            self.opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.fc(x), y) + (y == first).float().mean()
            loss.backward()
            self.opt.step()
""")
PROJECTS += [
    ProjectShape("TW403", "--cuda 'yes'/'no' switch; a learner imported by name moves a label with a bare .cuda()",
                 {"main.py": _YN_MAIN, "learners/__init__.py": "", "learners/buffer.py": _YN_LEARNER},
                 (("learners/buffer.py", 10),)),
]

# the `__main__` smoke test of a module handed its device (the entry's CPU run never runs it), and
# a parameter default every caller replaces with the device it hands
_SMOKE_NET = d("""
    import torch
    def grid(h, w, device=torch.device("cuda")):
        return torch.zeros(h, w).to(device)
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)
        def forward(self, x, device):
            return self.fc(x.to(device)) + grid(1, 2, device=x.device)
    if __name__ == "__main__":
        net = Net().cuda()
        print(net(torch.zeros(1, 4), "cuda").shape)
""")
_SMOKE_MAIN = d("""
    import torch
    from net import Net
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in []:
        opt.zero_grad()
        model(x, device).sum().backward()
        opt.step()
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: a handed-device module's __main__ .cuda() and a device default its callers replace",
                 {"train.py": _SMOKE_MAIN, "net.py": _SMOKE_NET, "other.py": "import torch\nx = torch.zeros(1).cuda()\n"}),
]
