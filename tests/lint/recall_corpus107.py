"""The recall corpus, round 31 part A: code that never runs (rulings R5, R18, R26) where per-call
rules reported: an interface method the project's own base class declares and every model
overrides but no script, module or notebook calls; a class only looked for with ``isinstance``
and never built; a class only a package ``__init__`` re-exports (the project imports the package
for other names); a left-over module whose file stem is a common word other files use for
something else (a local ``vae``, ``torch.distributions``). Each written in our own words and
reduced to its shape, with live look-alikes that must still be reported. ``recall_corpus.py`` adds
these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, d

FIND: list = []
QUIET: list = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- an interface of the project's own classes, never called
# A recommender library: its abstract base declares rank()/score_all(); every model overrides both;
# the scripts call only rank(). score_all() is an interface nothing calls (R26: dead).
_BASE = d("""
    import torch.nn as nn
    class BaseRec(nn.Module):
        def rank(self, users):
            raise NotImplementedError
        def score_all(self, u):
            raise NotImplementedError
""")
_MF = d("""
    import torch
    from recs.base import BaseRec
    class MatrixFact(BaseRec):
        def __init__(self, n, k):
            super().__init__()
            self.emb = torch.nn.Embedding(n, k)
        def rank(self, users):
            return self.emb(users).sum(1).argsort()
        def score_all(self, u):
            bias = torch.zeros(self.emb.num_embeddings).cuda()
            return self.emb.weight @ self.emb(u).t() + bias
""")
_POP = d("""
    import torch
    from recs.base import BaseRec
    class Popular(BaseRec):
        def rank(self, users):
            return users
        def score_all(self, u):
            return torch.ones(10).cuda()
""")
_RUN = d("""
    import torch
    from recs.mf import MatrixFact
    from recs.pop import Popular
    def main(kind):
        model = (MatrixFact(100, 8) if kind == "mf" else Popular()).cuda()
        print(model.rank(torch.arange(4).cuda()))
    if __name__ == "__main__":
        main("mf")
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: score_all() declared by the project's base class, overridden by every model, called by nothing", {
        "recs/__init__.py": "", "recs/base.py": _BASE, "recs/mf.py": _MF, "recs/pop.py": _POP, "run.py": _RUN}),
    ProjectShape("TW205", "the same interface, called by an evaluation script: live", {
        "recs/__init__.py": "", "recs/base.py": _BASE, "recs/mf.py": _MF, "recs/pop.py": _POP, "run.py": _RUN,
        "evaluate.py": d("""
            import torch
            from recs.mf import MatrixFact
            model = MatrixFact(100, 8).cuda()
            print(model.score_all(torch.arange(3).cuda()))
        """)}, (("recs/mf.py", 10), ("recs/pop.py", 7))),
    ProjectShape("TW205", "the same interface, called only by the project's tests: live", {
        "recs/__init__.py": "", "recs/base.py": _BASE, "recs/mf.py": _MF, "recs/pop.py": _POP, "run.py": _RUN,
        "tests/test_scores.py": d("""
            import torch
            from recs.pop import Popular
            def test_scores():
                assert Popular().score_all(torch.tensor([1])).shape == (10,)
        """)}, (("recs/mf.py", 10), ("recs/pop.py", 7))),
    ProjectShape("TW205", "the interface's base is a library class that may call it by name: live", {
        "recs/__init__.py": "", "recs/base.py": _BASE.replace("import torch.nn as nn", "import torch.nn as nn\nfrom lib.engine import Recommender")
        .replace("class BaseRec(nn.Module)", "class BaseRec(Recommender)"),
        "recs/mf.py": _MF, "recs/pop.py": _POP, "run.py": _RUN}, (("recs/mf.py", 10), ("recs/pop.py", 7))),
]

# ------------------------------------------------------------- a class only tested with isinstance
# A flow library keeps a spectral-norm layer its builders no longer pick: the training script only
# asks isinstance(m, layers.SpecLinear) when it updates the norms; nothing builds one.
_LAYERS = d("""
    import torch
    import torch.nn as nn
    __all__ = ["SpecLinear", "LipLinear", "make_linear"]
    class SpecLinear(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n, n))
        def forward(self, x):
            scale = torch.ones(1).to(x.device)
            return x @ self.weight.t() / scale
    class LipLinear(nn.Linear):
        def forward(self, x):
            scale = torch.ones(1).to(x.device)
            return super().forward(x) / scale
    def make_linear(n):
        return LipLinear(n, n)
""")
_TRAIN_FLOW = d("""
    import torch
    from flows import layers
    def train(steps):
        net = torch.nn.Sequential(layers.make_linear(4), layers.make_linear(4)).cuda()
        opt = torch.optim.Adam(net.parameters())
        for _ in range(steps):
            loss = net(torch.randn(8, 4, device="cuda")).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            for m in net.modules():
                if isinstance(m, layers.SpecLinear) or isinstance(m, (layers.LipLinear, torch.nn.Conv2d)):
                    m.zero_grad()
    if __name__ == "__main__":
        train(100)
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: SpecLinear is only looked for with isinstance (and listed in __all__), never built", {
        "flows/__init__.py": "", "flows/layers.py": _LAYERS, "train.py": _TRAIN_FLOW}, (("flows/layers.py", 13),)),
    ProjectShape("TW205", "the same layer built by the builder: live", {
        "flows/__init__.py": "", "flows/layers.py": _LAYERS.replace("return LipLinear(n, n)", "return SpecLinear(n) if n > 2 else LipLinear(n, n)"),
        "train.py": _TRAIN_FLOW}, (("flows/layers.py", 9), ("flows/layers.py", 13))),
    ProjectShape("TW205", "the same layer listed in __all__ and picked from the module's namespace by name: live", {
        "flows/__init__.py": "", "flows/layers.py": _LAYERS, "train.py": _TRAIN_FLOW.replace(
            "net = torch.nn.Sequential(layers.make_linear(4), layers.make_linear(4)).cuda()",
            "net = torch.nn.Sequential(*[vars(layers)[k](4) for k in ('SpecLinear', 'make_linear')]).cuda()")},
        (("flows/layers.py", 9), ("flows/layers.py", 13))),
]

# ------------------------------------------------------------- a class only a package __init__ re-exports
# A detector's layers package re-exports its loss from a sub-package; the project imports the
# package for its prior boxes, never names the loss.
_LOSS = d("""
    import torch
    import torch.nn as nn
    class BoxLoss(nn.Module):
        def forward(self, pred, target):
            weights = torch.ones(pred.size(0)).cuda()
            return ((pred - target).pow(2).sum(1) * weights).mean()
""")
_PRIORS = d("""
    import torch
    def priors(n):
        return torch.linspace(0, 1, n)
""")
_DETECT = d("""
    import torch
    from det.layers.functions.priors import priors
    def detect(model, image):
        return model(image.cuda()), priors(16)
    if __name__ == "__main__":
        print(detect(torch.nn.Identity(), torch.zeros(1, 3, 8, 8)))
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a loss only re-exported by layers/modules/__init__.py, named by no other file", {
        "det/__init__.py": "", "det/layers/__init__.py": "from .functions import *\nfrom .modules import *\n",
        "det/layers/functions/__init__.py": "from .priors import priors\n", "det/layers/functions/priors.py": _PRIORS,
        "det/layers/modules/__init__.py": "from .box_loss import BoxLoss\n\n__all__ = ['BoxLoss']\n",
        "det/layers/modules/box_loss.py": _LOSS, "detect.py": _DETECT}),
    ProjectShape("TW205", "the same loss built by a training script through the package: live", {
        "det/__init__.py": "", "det/layers/__init__.py": "from .functions import *\nfrom .modules import *\n",
        "det/layers/functions/__init__.py": "from .priors import priors\n", "det/layers/functions/priors.py": _PRIORS,
        "det/layers/modules/__init__.py": "from .box_loss import BoxLoss\n\n__all__ = ['BoxLoss']\n",
        "det/layers/modules/box_loss.py": _LOSS, "detect.py": _DETECT,
        "train.py": d("""
            import torch
            from det.layers import BoxLoss
            crit = BoxLoss()
            print(crit(torch.zeros(2, 4).cuda(), torch.ones(2, 4).cuda()))
        """)}, (("det/layers/modules/box_loss.py", 5),)),
]

# ------------------------------------------------------------- a left-over module whose stem is a common word
# An image-generation project moved from models/vae.py to models/vqvae.py; no file imports vae.py,
# but the scripts call their autoencoder `vae` and other files say `torch.distributions`.
_VAE = d("""
    import torch
    import torch.nn as nn
    class VAE(nn.Module):
        def encode(self, x):
            noise = torch.randn(x.shape).to(x.device)
            return x + noise
""")
_VQ = d("""
    import torch
    import torch.nn as nn
    class VQVAE(nn.Module):
        def encode(self, x):
            return x.round()
""")
_SAMPLE = d("""
    import torch
    from torch.distributions import Normal
    from models.vqvae import VQVAE
    def sample(vae, n):
        z = Normal(0, 1).sample((n, 4)).cuda()
        return vae.encode(z)
    if __name__ == "__main__":
        vae = VQVAE().cuda()
        print(sample(vae, 2), "scope", dict(scope='vae'))
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: models/vae.py imported by nothing; `vae` is only a local variable and a keyword's value elsewhere", {
        "models/__init__.py": "", "models/vae.py": _VAE, "models/vqvae.py": _VQ, "tools/sample.py": _SAMPLE}),
    ProjectShape("TW205", "the same module imported by another tool: live", {
        "models/__init__.py": "", "models/vae.py": _VAE, "models/vqvae.py": _VQ, "tools/sample.py": _SAMPLE,
        "tools/train_vae.py": d("""
            import torch
            from models import vae
            net = vae.VAE().cuda()
            print(net.encode(torch.zeros(2, 4).cuda()))
        """)}, (("models/vae.py", 5),)),
    ProjectShape("TW205", "the same module run by a shell string 'python -m models.vae': live", {
        "models/__init__.py": "", "models/vae.py": _VAE, "models/vqvae.py": _VQ, "tools/sample.py": _SAMPLE,
        "tools/launch.py": d("""
            import os
            if __name__ == "__main__":
                os.system("python -m models.vae --check")
        """)}, (("models/vae.py", 5),)),
]
