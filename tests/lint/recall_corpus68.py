"""The recall corpus, round 22 part E: classes the sets 33 and 34 showed on their first look (dead
code, TW301, TW105, TW209, TW201...) - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW201 a frozen extractor a builder method returns
# A metric class builds its feature network in a method that returns the DataParallel wrapper (around a
# small module that wraps the frozen network); the class stores it as self.X and only calls it under
# inference_mode/no_grad.
_STATS = d("""
    import torch
    import torch.nn as nn
    from torchvision.models import inception_v3
    class FeatureStats(nn.Module):
        def __init__(self, devices):
            super().__init__()
            self.devices = devices
            self.net = self.build()
        def build(self):
            net = inception_v3(weights=None)
            net.eval()
            net.requires_grad_(False)
            if isinstance(self.devices, list):
                net.to(self.devices[0])
                return nn.DataParallel(nn.Sequential(net, nn.Flatten()), device_ids=self.devices)
            return net.to(self.devices)
        def forward(self, x):
            with torch.inference_mode():
                feats = self.net(x).cpu().numpy()
            return feats.mean(0)
""")
_STATS_TRAIN = d("""
    import torch
    from metrics import FeatureStats
    def main(model, loader, opt):
        stats = FeatureStats([0, 1])
        for x, y in loader:
            loss = model(x).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(stats(x))
    if __name__ == "__main__":
        main(None, [], None)
""")
PROJECTS += [
    ProjectShape("TW201", "look-alike: a metric's builder method returns the wrapper, the class runs it only under inference_mode", {
        "metrics.py": _STATS, "train.py": _STATS_TRAIN}),
    ProjectShape("TW201", "look-alike: the builder's wrapper stored under self, called in a no_grad method", {
        "metrics.py": _STATS.replace("        with torch.inference_mode():\n            feats = self.net(x).cpu().numpy()\n",
                                     "        feats = self.embed(x)\n").replace(
            "    def forward(self, x):", "    @torch.no_grad()\n    def embed(self, x):\n        return self.net(x).cpu().numpy()\n    def forward(self, x):"),
        "train.py": _STATS_TRAIN}),
    ProjectShape("TW201", "a builder's wrapper stored under self and trained by the class (a probe fitted with autograd on)", {
        "metrics.py": _STATS.replace("        with torch.inference_mode():\n            feats = self.net(x).cpu().numpy()\n",
                                     "        feats = self.net(x)\n        feats.sum().backward()\n"),
        "train.py": _STATS_TRAIN}, (("metrics.py", 15),)),
    ProjectShape("TW201", "a builder's wrapper whose parameters the class hands to an optimizer", {
        "metrics.py": _STATS.replace("        self.net = self.build()\n",
                                     "        self.net = self.build()\n        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)\n"),
        "train.py": _STATS_TRAIN}, (("metrics.py", 16),)),
]

# ------------------------------------------------------------- TW301 another program of the project seeds NumPy
# A collection of RL algorithms, a folder per algorithm with its own main.py: one main.py seeds NumPy
# and torch, another seeds torch only while its agent module draws from NumPy every step.
_SEEDS_BOTH = d("""
    import argparse
    import numpy as np
    import torch
    from agent import Agent
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    opt = parser.parse_args()
    def main():
        np.random.seed(opt.seed)
        torch.manual_seed(opt.seed)
        agent = Agent()
        for step in range(1000):
            agent.train()
    if __name__ == "__main__":
        main()
""")
_SEEDS_TORCH = _SEEDS_BOTH.replace("    np.random.seed(opt.seed)\n", "")
_EPS_AGENT = d("""
    import numpy as np
    import torch
    class Agent:
        def __init__(self):
            self.q = torch.nn.Linear(4, 2)
            self.opt = torch.optim.Adam(self.q.parameters())
        def act(self, s, eps):
            if np.random.rand() < eps:
                return np.random.randint(0, 2)
            return self.q(s).argmax().item()
        def train(self):
            a = self.act(torch.zeros(4), 0.1)
            loss = self.q(torch.zeros(4)).sum()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
""")
_SHUFFLE_AGENT = d("""
    import math
    import numpy as np
    import torch
    class Agent:
        def __init__(self):
            self.pi = torch.nn.Linear(4, 2)
            self.opt = torch.optim.Adam(self.pi.parameters())
        def train(self):
            perm = np.arange(256)
            np.random.shuffle(perm)
            for i in range(math.ceil(256 / 64)):
                idx = perm[i * 64:(i + 1) * 64]
                loss = self.pi(torch.zeros(len(idx), 4)).sum()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
""")
PROJECTS += [
    ProjectShape("TW301", "one program's main.py seeds torch only; its agent draws epsilon-greedy actions from NumPy; another program seeds NumPy", {
        "dqn/main.py": _SEEDS_TORCH, "dqn/agent.py": _EPS_AGENT, "td3/main.py": _SEEDS_BOTH, "td3/agent.py": _EPS_AGENT,
    }, (("dqn/main.py", 9),)),
    ProjectShape("TW301", "a PPO program seeds torch only and shuffles its minibatches with NumPy; a sibling program seeds NumPy", {
        "ppo/main.py": _SEEDS_TORCH, "ppo/agent.py": _SHUFFLE_AGENT, "sac/main.py": _SEEDS_BOTH, "sac/agent.py": _EPS_AGENT,
    }, (("ppo/main.py", 9),)),
    ProjectShape("TW301", "look-alike: the program's own utils module seeds NumPy (the run seeds it)", {
        "dqn/main.py": _SEEDS_TORCH.replace("from agent import Agent\n", "from agent import Agent\nimport utils\n"),
        "dqn/utils.py": "import numpy as np\nnp.random.seed(0)\n", "dqn/agent.py": _EPS_AGENT,
        "td3/main.py": _SEEDS_BOTH, "td3/agent.py": _EPS_AGENT,
    }),
    ProjectShape("TW301", "look-alike: the agent's NumPy draw is in a method nothing calls", {
        "dqn/main.py": _SEEDS_TORCH, "dqn/agent.py": _EPS_AGENT.replace("        a = self.act(torch.zeros(4), 0.1)\n", ""),
        "td3/main.py": _SEEDS_BOTH, "td3/agent.py": _EPS_AGENT,
    }),
    ProjectShape("TW301", "look-alike: the program's agent draws only from torch (which it seeds)", {
        "dqn/main.py": _SEEDS_TORCH, "dqn/agent.py": _SHUFFLE_AGENT.replace("np.random.shuffle(perm)", "perm = torch.randperm(256)"),
        "td3/main.py": _SEEDS_BOTH, "td3/agent.py": _EPS_AGENT,
    }),
]

# ------------------------------------------------------------- TW301 a literal seed that picks a dataset's subset
# A dataset's constructor seeds NumPy with a literal to pick a fixed subset of classes: not a per-epoch reseed.
PROJECTS += [
    ProjectShape("TW301", "look-alike: np.random.seed(0) in a dataset's __init__ fixes which classes form the subset", {
        "data/tiered.py": d("""
            import numpy as np
            from torch.utils.data import Dataset
            class Tiered(Dataset):
                def __init__(self, images, labels, mini=False):
                    if mini:
                        np.random.seed(0)
                        keep = np.random.choice(max(labels) + 1, 64, replace=False).tolist()
                        images = [x for x, y in zip(images, labels) if y in keep]
                    self.images = images
                def __len__(self):
                    return len(self.images)
                def __getitem__(self, i):
                    return self.images[i]
        """),
        "train.py": d("""
            import torch
            from torch.utils.data import DataLoader
            from data.tiered import Tiered
            def main(model, opt):
                loader = DataLoader(Tiered([], []), batch_size=8, shuffle=True)
                for x in loader:
                    loss = model(x).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            if __name__ == "__main__":
                main(None, None)
        """)}),
]

# ------------------------------------------------------------- dead code: mentions that cannot reach the method
# A per-call rule (TW205) in a method that nothing reaches: its name is common, but the other mentions are
# a module's attribute (torch.load, json.load) or other classes' own methods of that name.
_MEMNET = d("""
    import torch
    import torch.nn as nn
    class MemNet(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)
        def position_weight(self, memory, lengths):
            weight = torch.ones(memory.size(0), memory.size(1)).cuda()
            return memory * weight.unsqueeze(2)
        def forward(self, memory, lengths):
            # memory = self.position_weight(memory, lengths)
            return self.fc(memory.sum(1))
""")
_RAM = d("""
    import torch
    import torch.nn as nn
    class RAM(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)
        def position_weight(self, memory, lengths):
            return memory * lengths.unsqueeze(2)
        def forward(self, memory, lengths):
            memory = self.position_weight(memory, lengths)
            return self.fc(memory.sum(1))
""")
_TRAIN_MODELS = d("""
    import torch
    from models.memnet import MemNet
    from models.ram import RAM
    def main(args, loader):
        model = {"memnet": MemNet, "ram": RAM}[args.model](8).cuda()
        opt = torch.optim.Adam(model.parameters())
        for memory, lengths in loader:
            loss = model(memory.cuda(), lengths.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        main(None, [])
""")
_MEMNET_LOAD = _MEMNET.replace("import torch\n", "import json\nimport torch\n", 1).replace("    def forward(", """    def load(self, path):
        state = torch.load(path)
        cfg = json.load(open(path + ".json"))
        return self.position_weight(state["memory"], cfg["lengths"])
    def forward(""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a method whose only call in its class is commented out; other classes call their own method of that name", {
        "models/memnet.py": _MEMNET, "models/ram.py": _RAM, "models/__init__.py": "", "train.py": _TRAIN_MODELS}),
    ProjectShape("TW205", "a subclass that does not define the method calls it on self: the method runs", {
        "models/memnet.py": _MEMNET, "models/ram.py": _RAM.replace("class RAM(nn.Module):", "from models.memnet import MemNet\nclass RAM(MemNet):").replace(
            "    def position_weight(self, memory, lengths):\n        return memory * lengths.unsqueeze(2)\n", ""),
        "models/__init__.py": "", "train.py": _TRAIN_MODELS}, (("models/memnet.py", 8),)),
    ProjectShape("TW205", "look-alike: a helper reached only from a method `load` nothing calls (torch.load and json.load are other names)", {
        "models/memnet.py": _MEMNET_LOAD, "models/ram.py": _RAM, "models/__init__.py": "", "train.py": _TRAIN_MODELS}),
    ProjectShape("TW205", "the model's `load` is called on an instance: the helper it calls runs", {
        "models/memnet.py": _MEMNET_LOAD, "models/ram.py": _RAM, "models/__init__.py": "",
        "train.py": _TRAIN_MODELS.replace("    opt = torch.optim", "    model.load(args.init)\n    opt = torch.optim")},
        (("models/memnet.py", 9),)),
]

# ------------------------------------------------------------- dead code: a drop-in module the README only mentions
_AUX = d("""
    import torch
    def embed_all(model, loader):
        out = []
        for x in loader:
            mask = torch.ones(len(x)).cuda()
            out.append((model(x.cuda()) * mask[:, None]).cpu())
        return torch.cat(out)
    def eval_recall(model, loader):
        feats = embed_all(model, loader)
        ids = torch.arange(len(feats)).cuda()
        return (feats.argmax(1) == ids).float().mean()
""")
_AUX_TRAIN = d("""
    import torch
    import aux
    def main(model, loader, opt):
        for x in loader:
            loss = model(x.cuda()).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(aux.eval_recall(model, loader))
    if __name__ == "__main__":
        main(None, [], None)
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a drop-in variant of an imported module that only the README mentions (nothing imports it)", {
        "aux.py": _AUX, "aux_sklearn.py": _AUX, "train.py": _AUX_TRAIN,
        "README.md": "To avoid faiss, use `aux_sklearn.py` in place of `aux.py` when importing.\n"}, (("aux.py", 5),)),
    ProjectShape("TW205", "a variant module the README tells the user to import: it runs in the user's code", {
        "aux.py": _AUX, "aux_sklearn.py": _AUX, "train.py": _AUX_TRAIN,
        "README.md": "To avoid faiss:\n\n    from aux_sklearn import eval_recall\n"}, (("aux.py", 5), ("aux_sklearn.py", 5))),
]

# ------------------------------------------------------------- TW105 the log of one picked softmax probability
# A saliency helper or explainer keeps the probability of the predicted class (`p = p[label]`) and
# takes its log without a floor.
FIND += [
    Shape("TW105", "softmax module output indexed by the label into the same name, then -torch.log", d("""
        import torch
        import torch.nn as nn
        def saliency(model, x, label):
            out = model(x)
            prob = nn.Softmax(dim=0)(out[0])
            prob = prob[label]
            loss = -torch.log(prob)
            loss.backward()
            return x.grad
    """), 7),
    Shape("TW105", "F.softmax output picked by the target into another name, log taken per step", d("""
        import torch
        import torch.nn.functional as F
        def step(model, opt, x, y):
            probs = F.softmax(model(x), dim=1)
            picked = probs[torch.arange(len(y)), y]
            loss = -torch.log(picked).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """), 6),
]
QUIET += [
    Shape("TW105", "look-alike: the picked probability gets an epsilon before the log", d("""
        import torch
        import torch.nn.functional as F
        def step(model, x, y):
            probs = F.softmax(model(x), dim=1)
            picked = probs[torch.arange(len(y)), y]
            return -torch.log(picked + 1e-8).mean()
    """)),
    Shape("TW105", "look-alike: a normalised histogram (no softmax) indexed and logged", d("""
        import torch
        def surprisal(hist, y):
            p = hist / hist.sum()
            p = p[y]
            return -torch.log(p)
    """)),
]

# ------------------------------------------------------------- dead code: a base class's self call reaches the override
PROJECTS += [
    ProjectShape("TW205", "a base trainer calls self._epoch(), which it defines as abstract; the subclass's override runs", {
        "base.py": d("""
            class BaseTrainer:
                def __init__(self, model, loader):
                    self.model, self.loader = model, loader
                def fit(self, epochs):
                    for epoch in range(epochs):
                        self._epoch(epoch)
                def _epoch(self, epoch):
                    raise NotImplementedError
        """),
        "trainer.py": d("""
            import torch
            from base import BaseTrainer
            class Trainer(BaseTrainer):
                def _epoch(self, epoch):
                    for x, y in self.loader:
                        w = torch.ones(len(y)).cuda()
                        loss = (self.model(x.cuda()) * w).sum()
                        loss.backward()
        """),
        "train.py": d("""
            from trainer import Trainer
            if __name__ == "__main__":
                Trainer(None, []).fit(3)
        """)}, (("trainer.py", 6),)),
]

# ------------------------------------------------------------- TW209 a biased convolution inside a weight reparametrisation
# SAGAN-style generators wrap each transposed convolution in spectral norm (which keeps the bias) and put
# a BatchNorm right after it.
FIND += [
    Shape("TW209", "the project's SpectralNorm around a transposed convolution, appended before a BatchNorm", d("""
        import torch.nn as nn
        from spectral import SpectralNorm
        class Generator(nn.Module):
            def __init__(self, z_dim, ch):
                super().__init__()
                block = []
                block.append(SpectralNorm(nn.ConvTranspose2d(z_dim, ch * 8, 4)))
                block.append(nn.BatchNorm2d(ch * 8))
                block.append(nn.ReLU())
                self.block = nn.Sequential(*block)
            def forward(self, z):
                return self.block(z)
    """), 7),
    Shape("TW209", "torch's spectral_norm around a convolution, then BatchNorm2d in a Sequential", d("""
        import torch.nn as nn
        from torch.nn.utils import spectral_norm
        def down(c_in, c_out):
            return nn.Sequential(spectral_norm(nn.Conv2d(c_in, c_out, 4, 2, 1)), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.2))
    """), 4),
]
QUIET += [
    Shape("TW209", "look-alike: spectral norm around a convolution without bias, then BatchNorm", d("""
        import torch.nn as nn
        from torch.nn.utils import spectral_norm
        def down(c_in, c_out):
            return nn.Sequential(spectral_norm(nn.Conv2d(c_in, c_out, 4, 2, 1, bias=False)), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.2))
    """)),
    Shape("TW209", "look-alike: spectral norm around a biased convolution, no BatchNorm after it", d("""
        import torch.nn as nn
        from spectral import SpectralNorm
        class Critic(nn.Module):
            def __init__(self, ch):
                super().__init__()
                block = []
                block.append(SpectralNorm(nn.Conv2d(3, ch, 4, 2, 1)))
                block.append(nn.LeakyReLU(0.1))
                self.block = nn.Sequential(*block)
            def forward(self, x):
                return self.block(x)
    """)),
]
