"""The recall corpus, round 22 part C (TW402, TW403): classes the sets 33 and 34 showed on their
first look - each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 a CPU fallback in a helper the file calls
# A GAN trainer wraps its batches and noise with the project's `to_gpu(x)`, which moves to CUDA
# only when a GPU is there, yet builds its networks and its gradient-penalty tensors with a bare
# `.cuda()`; a few-shot script builds its model with the project's factory (which moves it only
# when a GPU is there) and moves its episodes with `.cuda()`. The helper is the CPU path the
# project offers (METHOD R17: a helper the file itself calls is linked evidence).
_HELPERS = d("""
    import torch
    from torch.autograd import Variable

    def to_gpu(x, grad=False):
        if torch.cuda.is_available():
            x = x.cuda()
        return Variable(x, requires_grad=grad)
""")
_GAN_TRAINER = d("""
    import torch
    from nets import Gen, Critic
    from helpers import *

    class GanTrainer:
        def __init__(self, loader, z_dim):
            self.loader = loader
            self.z_dim = z_dim
            self.gen = Gen(z_dim).cuda()
            self.critic = Critic().cuda()
            self.opt = torch.optim.Adam(self.gen.parameters(), 1e-4)

        def fit(self):
            for real in self.loader:
                real = to_gpu(real)
                fake = self.gen(to_gpu(torch.randn(real.size(0), self.z_dim)))
                eps = torch.rand(real.size(0), 1, 1, 1).cuda()
                mixed = eps * real + (1 - eps) * fake
                loss = self.critic(mixed).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
""")
_NETS = d("""
    import torch.nn as nn

    class Gen(nn.Module):
        def __init__(self, z):
            super().__init__()
            self.fc = nn.Linear(z, 64)
        def forward(self, z):
            return self.fc(z)

    class Critic(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 1)
        def forward(self, x):
            return self.fc(x)
""")
_RUN_GAN = d("""
    from trainer import GanTrainer
    if __name__ == "__main__":
        GanTrainer([], 16).fit()
""")
_ZOO = d("""
    import torch
    import torch.nn as nn

    registry = {}

    def register(name):
        def wrap(cls):
            registry[name] = cls
            return cls
        return wrap

    @register("conv4")
    class Conv4(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 5)
        def forward(self, x):
            return self.fc(x)

    def build(name, **kw):
        net = registry[name](**kw)
        if torch.cuda.is_available():
            net.cuda()
        return net
""")
_ZOO_INIT = d("""
    from .zoo import build, register
""")
_EPISODES = d("""
    import argparse
    import torch
    import torch.nn.functional as F
    import zoo

    def main(cfg):
        model = zoo.build(cfg.model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for data, label in cfg.loader:
            data, label = data.cuda(), label.cuda()
            loss = F.cross_entropy(model(data), label)
            opt.zero_grad()
            loss.backward()
            opt.step()

    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--model", default="conv4")
        main(parser.parse_args())
""")
PROJECTS += [
    ProjectShape("TW403", "GAN trainer wraps batches with the project's to_gpu() (GPU check inside) but builds its nets with .cuda()",
                 {"helpers.py": _HELPERS, "nets.py": _NETS, "trainer.py": _GAN_TRAINER, "main.py": _RUN_GAN},
                 (("trainer.py", 9), ("trainer.py", 10), ("trainer.py", 17))),
    ProjectShape("TW403", "the same with Windows line ends in the helper module (CRLF)",
                 {"helpers.py": _HELPERS.replace("\n", "\r\n"), "nets.py": _NETS, "trainer.py": _GAN_TRAINER,
                  "main.py": _RUN_GAN},
                 (("trainer.py", 9), ("trainer.py", 10), ("trainer.py", 17))),
    ProjectShape("TW403", "model built by the project's factory (zoo.build moves it only when a GPU is there), episodes moved with .cuda()",
                 {"zoo.py": _ZOO, "train_episodes.py": _EPISODES}, (("train_episodes.py", 10), ("train_episodes.py", 10))),
]
# look-alikes: a helper whose GPU check ends in an error (no CPU path), a helper the trainer never
# calls (a sibling script's), and a check that moves nothing it is handed or returns
_HELPERS_NO_CPU = d("""
    import torch

    def to_gpu(x):
        if torch.cuda.is_available():
            x = x.cuda()
        else:
            raise RuntimeError("a GPU is required")
        return x
""")
_HELPERS_UNUSED = d("""
    import torch

    def to_gpu(x):
        if torch.cuda.is_available():
            x = x.cuda()
        return x
""")
_TRAINER_NO_HELPER = d("""
    import torch
    from nets import Gen, Critic

    class GanTrainer:
        def __init__(self, loader, z_dim):
            self.loader = loader
            self.gen = Gen(z_dim).cuda()
            self.critic = Critic().cuda()
            self.opt = torch.optim.Adam(self.gen.parameters(), 1e-4)

        def fit(self):
            for real in self.loader:
                real = real.cuda()
                loss = self.critic(self.gen(torch.randn(real.size(0), 16).cuda())).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
""")
_HELPERS_WARMUP = d("""
    import torch

    def warm_up(n):
        if torch.cuda.is_available():
            torch.ones(n).cuda()
        return n
""")
_TRAINER_WARMUP = _TRAINER_NO_HELPER.replace("from nets import Gen, Critic", "from nets import Gen, Critic\nfrom helpers import warm_up") \
    .replace("self.loader = loader", "self.loader = loader\n        warm_up(4)")
PROJECTS += [
    ProjectShape("TW403", "look-alike: the helper's GPU check raises without a GPU (GPU-only by design)",
                 {"helpers.py": _HELPERS_NO_CPU, "nets.py": _NETS, "trainer.py": _GAN_TRAINER, "main.py": _RUN_GAN}),
    ProjectShape("TW403", "look-alike: a fallback helper exists, but the GPU-only trainer never calls it",
                 {"helpers.py": _HELPERS_UNUSED, "nets.py": _NETS, "trainer.py": _TRAINER_NO_HELPER, "main.py": _RUN_GAN}),
    ProjectShape("TW403", "look-alike: the helper's GPU check moves a scratch tensor, nothing it is handed or returns",
                 {"helpers.py": _HELPERS_WARMUP, "nets.py": _NETS, "trainer.py": _TRAINER_WARMUP, "main.py": _RUN_GAN}),
]

# ------------------------------------------------------------- TW402 resume beside a fallback helper
# The GAN trainer above also resumes its networks from the step it was given: the project offers a
# CPU run through its helper, and the checkpoint holds CUDA tensors.
_RUN_RESUME = _RUN_GAN.replace("GanTrainer([], 16).fit()", "trainer = GanTrainer([], 16)\n    trainer.resume(\"ckpt/last\")\n    trainer.fit()")
_GAN_RESUME = _GAN_TRAINER + """
    def resume(self, path):
        self.gen.load_state_dict(torch.load(path + "_G.pth"))
        self.critic.load_state_dict(torch.load(path + "_D.pth"))

    def save(self, path):
        torch.save(self.gen.state_dict(), path + "_G.pth")
        torch.save(self.critic.state_dict(), path + "_D.pth")
"""
PROJECTS += [
    ProjectShape("TW402", "resume of a GPU checkpoint in a trainer whose batches go through the project's to_gpu() fallback",
                 {"helpers.py": _HELPERS, "nets.py": _NETS, "trainer.py": _GAN_RESUME, "main.py": _RUN_RESUME},
                 (("trainer.py", 25), ("trainer.py", 26))),
]

# ------------------------------------------------------------- TW403 a GPU switch declared over several lines
# `parser.add_argument(` with the option name on the next line (black's layout): `--gpu` with
# `action="store_const", const=True, default=False` is the script's CPU/GPU switch.
_EXPLAIN_MAIN = d("""
    import argparse
    import torch
    import nets

    def parse():
        parser = argparse.ArgumentParser()
        parser.add_argument(
            "--gpu",
            dest="gpu",
            action="store_const",
            const=True,
            default=False,
        )
        return parser.parse_args()

    def main():
        args = parse()
        args.weight = torch.tensor([1.0, 5.0]).cuda()
        model = nets.Critic()
        if args.gpu:
            model = model.cuda()
        return model

    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW403", "--gpu switch declared over several lines; a class-weight tensor moved with a bare .cuda()",
                 {"nets.py": _NETS, "explain_main.py": _EXPLAIN_MAIN}, (("explain_main.py", 18),)),
]
_EXPLAIN_MAIN_ID = _EXPLAIN_MAIN.replace('action="store_const",\n        const=True,\n        default=False,', 'default="0",') \
    .replace("if args.gpu:", "if args.gpu is not None:")
PROJECTS += [
    ProjectShape("TW403", "look-alike: the multi-line --gpu option holds a GPU id, no CPU switch",
                 {"nets.py": _NETS, "explain_main.py": _EXPLAIN_MAIN_ID}),
]

# ------------------------------------------------------------- TW402 quiet: the best checkpoint this run's training returns
# A classifier's `_train()` saves the best state_dict during its epochs and returns that path;
# `run()` reloads it for the test right away: the same process, the same device (R2).
QUIET += [
    Shape("TW402", "look-alike: best_path = self._train(...) saved the best state in its loop; run() reloads it", d("""
        import torch
        import torch.nn.functional as F

        class Instructor:
            def __init__(self, model, opt):
                self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                self.model = model.to(self.device)
                self.opt = opt

            def _train(self, optimizer, loader, epochs):
                best, path = 0.0, None
                for _ in range(epochs):
                    for x, y in loader:
                        loss = F.cross_entropy(self.model(x.to(self.device)), y.to(self.device))
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                    acc = self._evaluate(loader)
                    if acc > best:
                        best, path = acc, "state_dict/best_{:.4f}".format(acc)
                        torch.save(self.model.state_dict(), path)
                return path

            def _evaluate(self, loader):
                return 1.0

            def run(self, loader):
                optimizer = torch.optim.Adam(self.model.parameters())
                best_path = self._train(optimizer, loader, 3)
                self.model.load_state_dict(torch.load(best_path))
                return self._evaluate(loader)
    """)),
]

# ------------------------------------------------------------- TW402 quiet: a load in a method only a dead method calls
# A checkpoint keeper's `restore()` is called only by the model's `load()`, which nothing calls:
# the other "load" words of the project are library functions (`pickle.load(`, `torch.load(`)
# and prose in a help text ("pre-load"), which call no method of the project.
_KEEPER = d("""
    import os
    import torch

    class Keeper:
        def __init__(self, model, folder):
            self.model = model
            self.folder = folder
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def save(self, step):
            torch.save(self.model.state_dict(), os.path.join(self.folder, "w_%d" % step))

        def restore(self):
            self.model.load_state_dict(torch.load(os.path.join(self.folder, "w_last")))

    class Base(torch.nn.Module):
        def keep(self, folder, step):
            Keeper(self, folder).save(step)

        def load(self, folder):
            Keeper(self, folder).restore()
""")
_KEEPER_TRAIN = d("""
    import argparse
    import pickle
    import torch
    from keeper import Base

    class Net(Base):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--ckpt", default=None, help="checkpoint to pre-load before training")
        args = parser.parse_args()
        stats = pickle.load(open("stats.pkl", "rb"))
        net = Net().cuda()
        net.keep("ckpt", 0)
        return stats

    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: Keeper.restore() reached only from Base.load(), which nothing calls (pickle.load, 'pre-load')",
                 {"keeper.py": _KEEPER, "train.py": _KEEPER_TRAIN}),
]

# ------------------------------------------------------------- TW403 a factory's .cuda() in a function handed its device
# A speech-enhancement GAN's `train(..., device='cpu')` moves its batches with `.to(device)` but
# makes its real/fake labels with `torch.ones(d.size()).cuda()`: the CPU run the parameter's
# default promises fails there.
FIND += [
    Shape("TW403", "torch.ones(...).cuda() labels in a train() whose device parameter defaults to 'cpu'", d("""
        import torch
        import torch.nn.functional as F

        class Enhancer:
            def __init__(self, gen, disc):
                self.gen, self.disc = gen, disc

            def train(self, loader, opt, device="cpu"):
                for clean, noisy in loader:
                    clean, noisy = clean.to(device), noisy.to(device)
                    d_real = self.disc(clean)
                    real = torch.ones(d_real.size()).cuda()
                    loss = F.mse_loss(d_real, real)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
    """), 12),
]
QUIET += [
    Shape("TW403", "look-alike: the labels follow the device parameter (torch.ones(..., device=device))", d("""
        import torch
        import torch.nn.functional as F

        class Enhancer:
            def __init__(self, gen, disc):
                self.gen, self.disc = gen, disc

            def train(self, loader, opt, device="cpu"):
                for clean, noisy in loader:
                    clean, noisy = clean.to(device), noisy.to(device)
                    d_real = self.disc(clean)
                    real = torch.ones(d_real.size(), device=device)
                    if clean.is_cuda:
                        real = real.cuda()
                    loss = F.mse_loss(d_real, real)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
    """)),
    Shape("TW403", "look-alike: the device parameter defaults to 'cuda' (a GPU function; the caller chooses)", d("""
        import torch

        def sample(gen, n, device="cuda"):
            z = torch.randn(n, 16).to(device)
            noise = torch.randn(n, 16).cuda()
            return gen(z + noise)
    """)),
]
