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
