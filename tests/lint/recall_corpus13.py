"""The recall corpus, round 9 part A: classes the ninth set (a tuning set since round 9) still
missed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------------ TW209 BatchNorm subclass / held norm
# A tracker backbone that normalises with its own BatchNorm subclass (other eps/momentum), and a
# residual block whose norm layer is chosen by a string and then put in a Sequential by attribute.
_BN_SUBCLASS = d("""
    import torch.nn as nn
    class _Norm2d(nn.BatchNorm2d):
        def __init__(self, channels, eps=1e-6, momentum=0.05):
            super().__init__(channels, eps=eps, momentum=momentum)
    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 48, 7, 2),
                _Norm2d(48),
                nn.ReLU(inplace=True))
""")
FIND += [
    Shape("TW209", "a biased conv before the file's own BatchNorm2d subclass (other eps/momentum) in a Sequential",
          _BN_SUBCLASS, 9),
    Shape("TW209", "a subclass of a subclass, used in a forward pair self.bn(self.conv(x))", d("""
        import torch.nn as nn
        class TunedBN(nn.BatchNorm1d):
            pass
        class QuietBN(TunedBN):
            def __init__(self, n):
                super().__init__(n, momentum=0.01)
        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(16, 32, 3)
                self.bn = QuietBN(32)
            def forward(self, x):
                return self.bn(self.conv(x))
    """), 10),
    Shape("TW209", "the norm chosen by a norm_fn string, held as self.norm_down and put after a biased conv in a Sequential", d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, cin, cout, norm_fn="batch", stride=1):
                super().__init__()
                if norm_fn == "group":
                    self.norm_down = nn.GroupNorm(8, cout)
                elif norm_fn == "batch":
                    self.norm_down = nn.BatchNorm2d(cout)
                else:
                    self.norm_down = nn.Sequential()
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride), self.norm_down)
    """), 12),
]
QUIET += [
    Shape("TW209", "look-alike: a BatchNorm subclass with its own forward (may not normalise the conv's output)", d("""
        import torch.nn as nn
        class ScaledBN(nn.BatchNorm2d):
            def forward(self, x):
                return x * self.weight[None, :, None, None]
        block = nn.Sequential(nn.Conv2d(3, 8, 3), ScaledBN(8))
    """)),
    Shape("TW209", "look-alike: a subclass of InstanceNorm, and a conv with bias=False before the BN subclass", d("""
        import torch.nn as nn
        class _BN(nn.BatchNorm2d):
            pass
        class _IN(nn.InstanceNorm2d):
            pass
        a = nn.Sequential(nn.Conv2d(3, 8, 3), _IN(8))
        b = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), _BN(8))
    """)),
    Shape("TW209", "look-alike: the held norm is only ever a GroupNorm or an identity", d("""
        import torch.nn as nn
        class Block(nn.Module):
            def __init__(self, cin, cout, norm_fn="group"):
                super().__init__()
                if norm_fn == "group":
                    self.norm_down = nn.GroupNorm(8, cout)
                else:
                    self.norm_down = nn.Identity()
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1), self.norm_down)
    """)),
]

# ------------------------------------------------------------------ TW205 typed copy of the model's input
# A recommender whose forward/predict take NumPy index arrays and copy each into a new CPU tensor
# with a typed constructor, then again to the device, every call.
_RECOMMENDER = d("""
    import numpy as np
    import torch
    import torch.nn as nn
    class SeqRec(nn.Module):
        def __init__(self, items, dim, dev):
            super().__init__()
            self.dev = dev
            self.items = nn.Embedding(items + 1, dim)
            self.pos = nn.Embedding(64, dim)
        def encode(self, history):
            h = self.items(torch.LongTensor(history).to(self.dev))
            steps = np.tile(np.arange(history.shape[1]), [history.shape[0], 1])
            steps *= history != 0
            return h + self.pos(torch.LongTensor(steps).to(self.dev))
        def score(self, history, candidates):
            cand = self.items(torch.LongTensor(candidates).cuda())
            return (self.encode(history)[:, -1:, :] * cand).sum(-1)
""")
# The index arrays handed in (`history`, `candidates`) are the model's input data: Round 13 (sets 15 and 16, which count host data that has to cross anyway - env observations,
# NumPy batches - as no TW205 pitfall): `torch.as_tensor(x, device=...)` copies the same data from the host,
# so these are look-alikes now (recall_corpus26 has the class).
FIND += [
    Shape("TW205", "torch.LongTensor(NumPy array made in the method, then masked in place).to(self.dev)", _RECOMMENDER, 14),
]
PROJECTS += [
    ProjectShape("TW205", "look-alike (round 13): typed copies of the index arrays a model method is handed; only the "
                 "positions NumPy makes there from sizes are found", {"train.py": _RECOMMENDER}, (("train.py", 14),)),
]
QUIET += [
    Shape("TW205", "look-alike: the model's input kept on the host, and a typed copy made in __init__", d("""
        import torch
        import torch.nn as nn
        class Table(nn.Module):
            def __init__(self, ids, dev):
                super().__init__()
                self.ids = torch.LongTensor(ids).to(dev)
            def forward(self, history):
                return torch.LongTensor(history)
    """)),
]

# ------------------------------------------------------------------ TW205 helper with its own loop, called per batch
# Adversarial-example helpers: a random start drawn on the host (also through a typed constructor
# and a chain) before the helper's own attack loop; the helper is called for every batch.
_ATTACK = """
    import torch
    def pgd(model, x, y, eps, steps):
        delta = torch.FloatTensor(*x.shape).uniform_(-eps, eps).to(x.device)
        for _ in range(steps):
            delta.requires_grad_(True)
            loss = torch.nn.functional.cross_entropy(model(x + delta), y)
            grad, = torch.autograd.grad(loss, delta)
            delta = (delta + eps / 4 * grad.sign()).clamp(-eps, eps).detach()
        return x + delta
    def perturb(model, x):
        adv = x.detach() + 0.001 * torch.randn(x.shape).cuda().detach()
        for _ in range(10):
            adv = adv.detach()
        return adv
"""
FIND += [
    Shape("TW205", "typed constructor chain .uniform_().to() before the attack's own loop, the attack run for every test batch", d(_ATTACK + """
        def robust_accuracy(model, test_loader, eps):
            hits = 0
            for x, y in test_loader:
                hits += (model(pgd(model, x, y, eps, 20)).argmax(1) == y).sum().item()
            return hits
    """), 3),
    Shape("TW205", "torch.randn(shape).cuda() before the helper's own loop, the helper called in the training loop", d(_ATTACK + """
        def train(model, loader, opt):
            for i, (x, y) in enumerate(loader):
                x_adv = perturb(model, x)
                loss = torch.nn.functional.cross_entropy(model(x_adv), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 11),
]
QUIET += [
    Shape("TW205", "look-alike: a helper with its own loop called once per epoch (for epoch in range(n))", d("""
        import torch
        def error_count(model, loader, device):
            wrong = torch.zeros(1).to(device)
            for x, y in loader:
                wrong += (model(x.to(device)).argmax(1) != y.to(device)).sum()
            return wrong
        def fit(model, loader, opt, device, epochs):
            for epoch in range(epochs):
                for x, y in loader:
                    loss = model(x.to(device)).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                print(epoch, error_count(model, loader, device).item())
    """)),
]

# ------------------------------------------------------------------ TW220 alias of the old autocast
FIND += [
    Shape("TW220", "autocast = torch.cuda.amp.autocast inside try:, a dummy class as the fallback, then used", d("""
        import torch
        try:
            autocast = torch.cuda.amp.autocast
        except Exception:
            class autocast:
                def __init__(self, enabled):
                    pass
                def __enter__(self):
                    pass
                def __exit__(self, *args):
                    pass
        def step(model, x, mixed):
            with autocast(enabled=mixed):
                return model(x)
    """), 3),
    Shape("TW220", "a module-level alias of the old GradScaler, called in the training function", d("""
        import torch
        Scaler = torch.cuda.amp.GradScaler
        def train(model, opt):
            scaler = Scaler(enabled=True)
            return scaler
    """), 2),
]
QUIET += [
    Shape("TW220", "look-alike: the old alias only in the fallback of the new API, and an alias never called", d("""
        import torch
        try:
            autocast = torch.amp.autocast
        except AttributeError:
            autocast = torch.cuda.amp.autocast
        old_scaler = torch.cuda.amp.GradScaler
        def step(model, x):
            with autocast("cuda"):
                return model(x)
    """)),
]

# ------------------------------------------------------------------ TW402 host checkpoints, DataParallel-only resume
# A style-transfer project: the training script moves every entry of the decoder's state dict to
# the CPU in a loop before saving; the encoder weights come from a conversion script that builds
# its model on the CPU; the test script has a CPU path and restores both.
_TRAIN_SAVE = d("""
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    def train(net, loader, opt, steps, out):
        net.to(device)
        for i, batch in enumerate(loader):
            loss = net(batch.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if (i + 1) % 1000 == 0:
                sd = net.decoder.state_dict()
                for k in sd.keys():
                    sd[k] = sd[k].{where}
                torch.save(sd, out / "decoder_{{}}.pth".format(i + 1))
""")
_CONVERT = d("""
    import torch
    import torch.nn as nn
    def convert(layers, name):
        n = nn.Sequential()
        for layer in layers:
            n.add_module(str(len(n)), layer)
        torch.save(n.state_dict(), name + ".pth")
""")
_TEST = d("""
    import argparse
    import torch
    from net import Decoder
    parser = argparse.ArgumentParser()
    parser.add_argument("--decoder")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    decoder = Decoder()
    decoder.load_state_dict(torch.load(args.decoder))
    decoder.to(device)
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: every checkpoint is written from the host (state-dict entries moved in a loop, a CPU conversion)", {
        "train.py": _TRAIN_SAVE.format(where='to(torch.device("cpu"))'),
        "convert.py": _CONVERT,
        "test.py": _TEST,
    }),
    ProjectShape("TW402", "the same project, but the loop only halves the entries (still on the GPU): the test script's CPU path reads CUDA tensors", {
        "train.py": _TRAIN_SAVE.format(where="half()"),
        "test.py": _TEST,
    }, (("test.py", 9),)),
]
_SOLVER = d("""
    import torch
    class Solver:
        def __init__(self, model, optimizer, resume):
            self.model, self.optimizer = model, optimizer
            if resume:
                package = torch.load(resume)
                self.model.module.load_state_dict(package["state_dict"])
                self.optimizer.load_state_dict(package["optim_dict"])
        def step(self, batch, use_cuda):
            if use_cuda:
                batch = batch.cuda()
            return self.model(batch)
        def save(self, path):
            torch.save({"state_dict": self.model.module.state_dict()}, path)
""")
_MAIN = d("""
    import torch
    from solver import Solver
    def main(args, model, optimizer):
        if args.use_cuda:
            model = torch.nn.{wrap}(model)
            model.cuda()
        Solver(model, optimizer, args.resume)
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: a resume that only works on the DataParallel-wrapped CUDA model (self.model.module), one process", {
        "solver.py": _SOLVER,
        "train.py": _MAIN.format(wrap="DataParallel"),
    }),
    ProjectShape("TW402", "the same resume in a DistributedDataParallel project: every rank restores rank 0's tensors onto cuda:0", {
        "solver.py": _SOLVER,
        "train.py": _MAIN.format(wrap="parallel.DistributedDataParallel"),
    }, (("solver.py", 6),)),
]

# ------------------------------------------------------------------ TW205 x.new_tensor(host tensor)
# An overlap-add helper in a utility module: frame indices built with torch.arange on the CPU and
# copied to the signal's device with signal.new_tensor(...), called by a model's forward in
# another module; the utility module calls it itself only in its __main__ smoke test.
_OVERLAP = d("""
    import torch
    def overlap_add(signal, step):
        frames, length = signal.size()[-2:]
        total = step * (frames - 1) + length
        index = torch.arange(0, total // step).unfold(0, length // step, 1)
        index = signal.new_tensor(index).long()
        out = signal.new_zeros(*signal.size()[:-2], total // step, step)
        return out.index_add_(-2, index.view(-1), signal.view(*signal.size()[:-2], -1, step))
    if __name__ == "__main__":
        print(overlap_add(torch.randn(2, 4, 6), 3))
""")
PROJECTS += [
    ProjectShape("TW205", "torch.arange(...).unfold(...) copied with signal.new_tensor(...) in a helper a forward of another module calls", {
        "utils.py": _OVERLAP,
        "model.py": d("""
            import torch.nn as nn
            from utils import overlap_add
            class Decoder(nn.Module):
                def forward(self, frames):
                    return overlap_add(frames, 3)
        """),
    }, (("utils.py", 5),)),
    ProjectShape("TW205", "look-alike: the same helper that nothing outside its __main__ block calls", {
        "utils.py": _OVERLAP,
        "model.py": d("""
            import torch.nn as nn
            class Decoder(nn.Module):
                def forward(self, frames):
                    return frames.sum(-1)
        """),
    }),
]
QUIET += [
    Shape("TW205", "look-alike: new_tensor of data read from a file, and of a factory already on the device", d("""
        import numpy as np
        import torch
        def forward_table(x, path, n):
            table = np.load(path)
            t = x.new_tensor(table)
            idx = torch.arange(n, device=x.device)
            return t[x.new_tensor(idx)]
    """)),
]

# ------------------------------------------------------------------ TW403 a factory's .cuda() beside a device flag
_FLAGGED_SCRIPT = d("""
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    def perturb(model, x):
        adv = x.detach() + 0.001 * {noise}.detach()
        for _ in range(10):
            adv = adv.detach()
        return adv
""")
FIND += [
    Shape("TW403", "torch.randn(shape).cuda() in a helper of a script that chooses cuda/cpu by a --no-cuda flag",
          _FLAGGED_SCRIPT.format(noise="torch.randn(x.shape).cuda()"), 9),
]
QUIET += [
    Shape("TW403", "look-alike: the same helper drawing on the chosen device, and a .cuda() under the flag", _FLAGGED_SCRIPT.format(
        noise="torch.randn(x.shape, device=x.device)") + d("""
        if use_cuda:
            table = torch.zeros(4).cuda()
    """)),
]
