"""The recall corpus, round 24 part C: false findings the sets 37-38 showed for TW207, TW104 and
TW301 - each written in our own words and reduced to its shape, with the shapes that must still be
reported. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d  # noqa: F401

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW301 a seed handed in as a required parameter
# A data manager's setup method takes the run's seed (no default) and seeds NumPy with it before
# drawing the class order; the model modules draw from NumPy later in training.
PROJECTS += [
    ProjectShape("TW301", "look-alike: NumPy seeded in a data manager's method from a required seed parameter", {
        "data_manager.py": d("""
            import numpy as np
            class Manager:
                def __init__(self, name, seed):
                    self._setup(name, True, seed)
                def _setup(self, name, shuffle, seed):
                    if shuffle:
                        np.random.seed(seed)
                        self.order = np.random.permutation(10).tolist()
        """),
        "train.py": d("""
            import random
            import torch
            from data_manager import Manager
            import herding
            def run(args):
                random.seed(args.seed)
                torch.manual_seed(args.seed)
                data = Manager("cifar", args.seed)
                net = torch.nn.Linear(4, 2)
                opt = torch.optim.SGD(net.parameters(), 0.1)
                for x in range(10):
                    loss = herding.mix_loss(net, torch.randn(8, 4))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        """),
        "herding.py": d("""
            import numpy as np
            def mix_loss(net, x):
                idx = np.random.choice(len(x), len(x))
                return net(x[idx]).pow(2).mean()
        """),
    }),
]
