"""The recall corpus, round 17 part D: classes the twenty-third and twenty-fourth sets (and what
was left on the twenty-first and twenty-second) showed for TW103, TW301, TW402, TW501, TW502,
TW506 and TW507 - each written in our own words and reduced to its shape, with look-alikes that
must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW501 the LAPACK-named functions
# Deleted in PyTorch 1.2/1.3 (renamed first): function and tensor-method forms.
FIND += [
    Shape("TW501", "a ridge-regression head solving with torch.gesv", d("""
        import torch
        def head(k, y, lam):
            eye = torch.eye(k.size(0))
            sol, _ = torch.gesv(y, k + lam * eye)
            return sol
    """), 4),
    Shape("TW501", "a Gaussian-process helper factorising with the potrf method", d("""
        import torch
        def chol(cov):
            upper = cov.potrf()
            return upper
    """), 3),
    Shape("TW501", "batched LU through btrifact before a solve", d("""
        import torch as T
        def lu_solve(a, b):
            lu, piv = T.btrifact(a)
            return T.lu_solve(b, lu, piv)
    """), 3),
]
QUIET += [
    Shape("TW501", "look-alike: SciPy's LAPACK wrapper of the same routine", d("""
        import numpy as np
        from scipy.linalg import lapack
        def chol(a):
            c, info = lapack.dpotrf(a)
            return c
    """)),
    Shape("TW501", "look-alike: a project class with its own gesv method", d("""
        import torch
        class Solver:
            def gesv(self, a, b):
                return torch.linalg.solve(a, b)
        def run(s, a, b):
            return s.gesv(a, b)
    """)),
]

# ------------------------------------------------------------- TW502 saved_variables
FIND += [
    Shape("TW502", "a custom Cholesky Function reading ctx.saved_variables in backward", d("""
        import torch
        class Chol(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                l = torch.linalg.cholesky(a)
                ctx.save_for_backward(l)
                return l
            @staticmethod
            def backward(ctx, g):
                l, = ctx.saved_variables
                return g @ l
    """), 10),
    Shape("TW502", "an old-style Function reading self.saved_variables", d("""
        import torch
        class Jagged(torch.autograd.Function):
            def backward(self, grad):
                prefix, out = self.saved_variables
                return grad * out
    """), 4),
]
QUIET += [
    Shape("TW502", "look-alike: a session object's saved_variables attribute in a plain helper", d("""
        import torch
        def restore(store, session):
            names = session.saved_variables
            return [store[n] for n in names]
    """)),
]

# ------------------------------------------------------------- TW506/TW507 the tensor-method forms
FIND += [
    Shape("TW507", "a VP noise schedule written with the exp method minus one", d("""
        import torch
        class Schedule:
            def sigma(self, t):
                t = torch.as_tensor(t)
                return ((0.5 * self.beta_d * t ** 2 + self.beta_min * t).exp() - 1).sqrt()
    """), 5),
    Shape("TW506", "the inverse schedule with (1 + s ** 2).log()", d("""
        import torch
        def sigma_inv(sigma, beta_min, beta_d):
            sigma = torch.as_tensor(sigma)
            return ((beta_min ** 2 + 2 * beta_d * (1 + sigma ** 2).log()).sqrt() - beta_min) / beta_d
    """), 4),
    Shape("TW506", "a lambda of a sampler with (s ** 2 + 1).log()", d("""
        import torch
        inv = lambda bd, bm: lambda s: ((bm ** 2 + 2 * bd * (s ** 2 + 1).log()).sqrt() - bm) / bd
    """), 2),
]
QUIET += [
    Shape("TW506", "look-alike: the log of one plus a count, as a method", d("""
        import torch
        def weight(n_tokens):
            return (n_tokens.float() + 1).log()
    """)),
    Shape("TW507", "look-alike: the exp method minus one rounded to whole frames", d("""
        import torch
        def frames(log_d):
            return (log_d.exp() - 1).round().long()
    """)),
    Shape("TW507", "look-alike: a file that does not import torch", d("""
        import sympy
        def f(x):
            return x.exp() - 1
    """)),
]

# ------------------------------------------------------------- TW103 forward on looped and optional submodules
FIND += [
    Shape("TW103", "a highway layer calling forward on the parts of zip(self.linears, self.gates)", d("""
        import torch
        import torch.nn as nn
        class Highway(nn.Module):
            def __init__(self, n, layers=2):
                super().__init__()
                self.linears = nn.ModuleList([nn.Linear(n, n) for _ in range(layers)])
                self.gates = nn.ModuleList([nn.Linear(n, n) for _ in range(layers)])
            def forward(self, x):
                for lin, gate in zip(self.linears, self.gates):
                    t = torch.sigmoid(gate.forward(x))
                    x = t * torch.relu(lin(x)) + (1 - t) * x
                return x
    """), 10),
    Shape("TW103", "forward on the items of enumerate(self.blocks)", d("""
        import torch.nn as nn
        class Stack(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            def forward(self, x):
                for i, blk in enumerate(self.blocks):
                    x = blk.forward(x)
                return x
    """), 8),
]
QUIET += [
    Shape("TW103", "look-alike: a Caffe web demo's net.forward() (no torch in the file)", d("""
        import caffe
        import numpy as np
        class Classifier:
            def __init__(self, proto, weights):
                self.net = caffe.Classifier(proto, weights)
        def warm(app):
            app.clf.net.forward()
    """)),
]
_LOSS = d("""
    import torch
    def adversarial(feats, probs, disc, random_layer=None):
        if random_layer is None:
            joint = torch.bmm(probs.unsqueeze(2), feats.unsqueeze(1)).flatten(1)
        else:
            joint = random_layer.forward([feats, probs])
        return disc(joint)
""")
_TRAIN = d("""
    import torch
    import loss
    import network
    def main(cfg, feats, probs, disc):
        if cfg.random:
            random_layer = network.RandomLayer([256, 10], 1024)
        else:
            random_layer = None
        return loss.adversarial(feats, probs, disc, random_layer)
    def step(feats, probs, disc, random_layer):
        return loss.adversarial(feats, probs, disc, random_layer)
""")
_NETWORK = d("""
    import torch
    import torch.nn as nn
    class RandomLayer(nn.Module):
        def __init__(self, dims, out):
            super().__init__()
            self.mats = [torch.randn(d, out) for d in dims]
        def forward(self, xs):
            return xs[0] @ self.mats[0] * (xs[1] @ self.mats[1])
""")
PROJECTS += [
    ProjectShape("TW103", "an optional module passed as None in one branch, handed on by another caller",
                 {"loss.py": _LOSS, "train.py": _TRAIN, "network.py": _NETWORK}, (("loss.py", 6),)),
    ProjectShape("TW103", "look-alike: the optional argument is a plain object in the other branch",
                 {"loss.py": _LOSS, "train.py": _TRAIN.replace("random_layer = None", "random_layer = Projector()")
                  .replace("import network\n", "import network\nclass Projector:\n    def forward(self, xs):\n        return xs[0]\n"),
                  "network.py": _NETWORK}),
]

# ------------------------------------------------------------- TW402 evaluate mode, gradient attacks, trainer snapshots
_RESUME_MAIN = d("""
    import argparse
    import torch
    import torch.nn as nn
    from utils import save_checkpoint
    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--resume", default="")
        p.add_argument("-e", "--evaluate", action="store_true")
        args = p.parse_args()
        model = nn.DataParallel(nn.Linear(4, 2).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if args.resume:
            ckpt = torch.load(args.resume)
            model.load_state_dict(ckpt["state_dict"])
        if args.evaluate:
            validate(model)
            return
        for _ in range(10):
            loss = model(torch.randn(8, 4).cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        save_checkpoint({"state_dict": model.state_dict()}, "ckpt.pth")
    def validate(model):
        model.eval()
    if __name__ == "__main__":
        main()
""")
_SAVER = "import torch\ndef save_checkpoint(state, filename):\n    torch.save(state, filename)\n"
PROJECTS += [
    ProjectShape("TW402", "a --resume load that the -e evaluation branch after it serves (GPU-only project)",
                 {"main.py": _RESUME_MAIN, "utils.py": _SAVER}, (("main.py", 13),)),
    ProjectShape("TW402", "look-alike: the GPU-only training script resumes with no evaluation branch",
                 {"main.py": _RESUME_MAIN.replace("    if args.evaluate:\n        validate(model)\n        return\n", ""),
                  "utils.py": _SAVER}),
]
_ATTACK_EVAL = d("""
    import argparse
    import torch
    import torch.nn.functional as F
    from net import Net
    def pgd(model, x, y, eps):
        delta = torch.zeros_like(x, requires_grad=True)
        for _ in range(10):
            loss = F.cross_entropy(model(x + delta), y)
            loss.backward()
            delta.data = (delta + 0.01 * delta.grad.sign()).clamp(-eps, eps)
            delta.grad.zero_()
        return delta.detach()
    def main():
        p = argparse.ArgumentParser()
        p.add_argument("--fname")
        args = p.parse_args()
        model = Net().cuda()
        state = torch.load(args.fname)
        model.load_state_dict(state)
        model.eval()
    if __name__ == "__main__":
        main()
""")
_ROBUST_TRAIN = d("""
    import torch
    from net import Net
    def main():
        model = Net().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in []:
            loss = model(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save(model.state_dict(), "model.pth")
""")
_NET = "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"
PROJECTS += [
    ProjectShape("TW402", "an evaluation script whose only backward passes attack its inputs",
                 {"evaluate.py": _ATTACK_EVAL, "train.py": _ROBUST_TRAIN, "net.py": _NET}, (("evaluate.py", 18),)),
]
_TRAINER = d("""
    import os
    import time
    import torch
    class Trainer:
        def __init__(self, model, out):
            self.model = model
            self.snapshot_path = os.path.join(out, "%s.pt" % time.strftime("%Y%m%d%H%M%S"))
        def train(self, epochs):
            opt = torch.optim.Adam(self.model.parameters())
            for _ in range(epochs):
                loss = self.model(torch.randn(4, 3).cuda()).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                torch.save(self.model, self.snapshot_path)
""")
_MAIN = d("""
    import argparse
    import torch
    import torch.nn as nn
    from trainer import Trainer
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=3)
        args = p.parse_args()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = nn.Linear(3, 1).to(device)
        trainer = Trainer(model, "runs")
        trainer.train(args.epochs)
        model = torch.load(trainer.snapshot_path)
        model.eval()
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: the trainer's own snapshot read back after its train() in the same run",
                 {"trainer.py": _TRAINER, "main.py": _MAIN}),
]

# ------------------------------------------------------------- TW301 a data module's per-epoch seeds
_EPISODES = d("""
    import random
    import numpy as np
    class Episodes:
        def __init__(self, classes):
            self.classes = classes
        def get_iterator(self, epoch=0):
            random.seed(epoch)
            np.random.seed(epoch)
            return [random.sample(self.classes, 5) for _ in range(10)]
""")
_META_TRAIN = d("""
    import argparse
    import torch
    import torch.nn as nn
    from episodes import Episodes
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        args = p.parse_args()
        net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for epoch in range(3):
            for batch in Episodes(list(range(20))).get_iterator(epoch):
                loss = net(torch.randn(5, 8)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
""")
PROJECTS += [
    ProjectShape("TW301", "a data module reseeding random and NumPy per epoch; the training script draws from torch",
                 {"episodes.py": _EPISODES, "train.py": _META_TRAIN}, (("episodes.py", 7),)),
    ProjectShape("TW301", "look-alike: the training script seeds torch too",
                 {"episodes.py": _EPISODES,
                  "train.py": _META_TRAIN.replace("args = p.parse_args()\n", "args = p.parse_args()\n    torch.manual_seed(0)\n")}),
    ProjectShape("TW301", "look-alike: a seeding helper of a utilities module (its callers may seed torch)",
                 {"episodes.py": _EPISODES.replace("def get_iterator(self, epoch=0):\n        random.seed(epoch)\n        np.random.seed(epoch)\n",
                                                   "def get_iterator(self, epoch=0):\n        set_seeds(epoch)\n")
                  + "def set_seeds(s):\n    random.seed(s)\n    np.random.seed(s)\n",
                  "train.py": _META_TRAIN}),
]
