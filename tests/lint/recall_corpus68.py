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
