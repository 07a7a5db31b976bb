"""The recall corpus, round 16 part A: reachability for the per-call rules (code nothing runs gets
no per-call advice, METHOD R5) and TW403 both ways, from the classes sets 21 and 22 showed - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet (or keep
their findings). ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# A project that offers a CPU run (its training script chooses the device).
_TRAIN = d("""
    import torch
    from layers import Pool
    def main():
        device = "cuda" if torch.cuda.is_available() else "cpu"
        scores = Pool().to(device)(torch.rand(4, 8, device=device))
        return scores.argmax(1)
    if __name__ == "__main__":
        main()
""")
_LAYERS = d("""
    import torch.nn as nn
    class Pool(nn.Module):
        def forward(self, x):
            return x.max(1)[0]
""")

# ------------------------------------------------------------- R5 a scratch script with no __main__ guard
# A check script of a custom layer runs a few lines at its top level (print(...)); the helpers it
# defines above them - a GPU timing check, an argmax test - are called by nothing. Other files name
# `argmax` only as a tensor method (`scores.argmax(1)`).
_SCRATCH = d("""
    import torch
    from layers import Pool
    def timing_check():
        x = torch.rand(64, 8).cuda()
        return Pool()(x)
    def argmax():
        x = torch.randn(10).cuda()
        return x.argmax()
    pool = Pool()
    print(pool(torch.rand(4, 8)))
""")
PROJECTS += [
    ProjectShape("TW403", "helpers of a scratch script (top-level print, no __main__ guard) that nothing calls", {
        "train.py": _TRAIN, "layers.py": _LAYERS, "check_pool.py": _SCRATCH}),
    ProjectShape("TW403", "look-alike: the scratch script calls one of its helpers at its top level" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": _TRAIN, "layers.py": _LAYERS, "check_pool.py": _SCRATCH + "print(timing_check())\n"},
        ()),
]

# ------------------------------------------------------------- R5 the only call quoted out in a string
# An evaluation module keeps an old classifier whose one call sits in a triple-quoted block.
_EVAL = d('''
    import torch
    def linear_probe(x, y):
        w = torch.zeros(x.shape[1], 10).cuda()
        return (x.cuda() @ w).argmax(1)
    def evaluate(emb, labels):
        acc = 0.0
        """
        acc = linear_probe(emb, labels)
        """
        return acc
''')
_EVAL_TRAIN = _TRAIN.replace("from layers import Pool", "from layers import Pool\nfrom evaluation import evaluate").replace(
    "return scores.argmax(1)", "return evaluate(scores, None)")
PROJECTS += [
    ProjectShape("TW403", "a helper whose only call is quoted out with triple quotes", {
        "train.py": _EVAL_TRAIN, "layers.py": _LAYERS, "evaluation.py": _EVAL}),
    ProjectShape("TW403", "look-alike: the same call in code", {
        "train.py": _EVAL_TRAIN, "layers.py": _LAYERS, "evaluation.py": _EVAL.replace('    """\n', "")},
        (("evaluation.py", 3), ("evaluation.py", 4))),
]

# ------------------------------------------------------------- R5 a class nothing builds, beside a lookup elsewhere
# A graph project's model module defines a discriminator nobody builds; another sub-project, in its
# own folder with its own model.py, picks classes by eval(args.model) - not from this module.
_GRAPH_MODEL = d("""
    import torch
    import torch.nn as nn
    class Encoder(nn.Module):
        def forward(self, x):
            return x
    class Critic(nn.Module):
        def forward(self, x):
            return torch.ones(x.shape[0]).cuda()
""")
_GRAPH_TRAIN = d("""
    import torch
    from model import *
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = Encoder().to(device)
""")
_OTHER_RUN = d("""
    import argparse
    from model import GNN, GIN
    args = argparse.ArgumentParser().parse_args()
    net = eval(args.model)()
""")
PROJECTS += [
    ProjectShape("TW403", "a class nothing builds; the eval(args.model) lookup is in another folder with its own model.py", {
        "unsup/model.py": _GRAPH_MODEL, "unsup/train.py": _GRAPH_TRAIN, "chem/model.py": "class GNN:\n    pass\nclass GIN:\n    pass\n",
        "chem/run.py": _OTHER_RUN}),
    ProjectShape("TW403", "look-alike: the module's own importer picks classes by eval(args.model)", {
        "unsup/model.py": _GRAPH_MODEL, "unsup/train.py": _GRAPH_TRAIN + "critic = eval(args.critic)()\n"},
        (("unsup/model.py", 8),)),
]

# ------------------------------------------------------------- R5 a left-over module nobody imports
# A vendored loss package: the model imports gan_losses; dim_losses beside it is imported, run
# and named by nothing (no file, config or shell script), and the project is no installable package.
_GAN = "import torch.nn.functional as F\ndef gan_loss(x):\n    return F.softplus(-x).mean()\n"
_DIM = d("""
    import torch
    def fenchel_loss(l, m):
        mask = torch.eye(l.shape[0]).cuda()
        return (l * m * mask).mean()
""")
_DIM_MODEL = d("""
    import torch.nn as nn
    from losses.gan_losses import gan_loss
    class Net(nn.Module):
        def forward(self, x):
            return gan_loss(x)
""")
_DIM_TRAIN = d("""
    import torch
    from model import Net
    if __name__ == "__main__":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        Net().to(device)
""")
_DIM_FILES = {"train.py": _DIM_TRAIN, "model.py": _DIM_MODEL, "losses/gan_losses.py": _GAN, "losses/dim_losses.py": _DIM}
PROJECTS += [
    ProjectShape("TW403", "a left-over module beside a sibling the model imports: named nowhere, never runs", _DIM_FILES),
    ProjectShape("TW403", "look-alike: the same module in an installable package (setup.py): an API for other code" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]",
                 {**_DIM_FILES, "setup.py": "from setuptools import setup, find_packages\nsetup(name='dim', packages=find_packages())\n"},
                 ()),
    ProjectShape("TW403", "look-alike: a shell script runs the module's function by name" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        **_DIM_FILES, "scripts/ablate.sh": "python -c 'from losses.dim_losses import fenchel_loss'\n"},
        ()),
    ProjectShape("TW403", "look-alike: a module defining main() (a launcher's entry point)" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        **_DIM_FILES, "losses/dim_losses.py": _DIM + "def main():\n    print(fenchel_loss(1, 1))\n"},
        ()),
]

# ------------------------------------------------------------- R5 classes a config names (Hydra _target_)
# An RL project builds its critics from configs (`_target_: agent.critics.DoubleCritic`); no Python
# file imports the module. The critic the configs name runs; a variant nothing names does not.
_CRITICS = d("""
    import torch
    import torch.nn as nn
    class DoubleCritic(nn.Module):
        def penalty(self, x):
            eps = torch.rand(x.shape[0], 1).cuda()
            return (eps * x).sum()
    class StateCritic(nn.Module):
        def penalty(self, x):
            eps = torch.rand(x.shape[0], 1).cuda()
            return (eps * x).sum()
""")
_RL_TRAIN = d("""
    import hydra
    import torch
    @hydra.main(config_path="conf")
    def main(cfg):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        critic = hydra.utils.instantiate(cfg.critic).to(device)
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW403", "a critic class no code and no config names, in a module a config names (the named one still reported)" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "agent/critics.py": _CRITICS, "train.py": _RL_TRAIN,
        "conf/agent.yaml": "critic:\n  _target_: agent.critics.DoubleCritic\n  hidden: 256\n"},
        ()),
    ProjectShape("TW403", "look-alike: both classes named by configs" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "agent/critics.py": _CRITICS, "train.py": _RL_TRAIN,
        "conf/agent.yaml": "critic:\n  _target_: agent.critics.DoubleCritic\n",
        "conf/state.yaml": "critic:\n  _target_: agent.critics.StateCritic\n"},
        ()),
]

# ------------------------------------------------------------- R5 TW103 in a class nothing names
_QNETS = d("""
    import torch.nn as nn
    class QNet(nn.Module):
        def forward(self, x):
            return x
    class TwinQNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.q1 = QNet()
            self.q2 = QNet()
        def forward(self, x):
            return self.q1.forward(x), self.q2.forward(x)
""")
PROJECTS += [
    ProjectShape("TW103", "submodule.forward(x) in a class no code or config names", {
        "qnets.py": _QNETS, "train.py": "from qnets import QNet\nnet = QNet()\nprint(net(1))\n"}),
    ProjectShape("TW103", "look-alike: the class is built by the training script", {
        "qnets.py": _QNETS, "train.py": "from qnets import TwinQNet\nnet = TwinQNet()\nprint(net(1))\n"},
        (("qnets.py", 11), ("qnets.py", 11))),
]

# ------------------------------------------------------------- TW403 .cuda() of a loss with no tensor
# Module.cuda() of nn.MSELoss() moves nothing (no parameters, no buffers) and runs without a GPU;
# a class weight is a buffer, and its move needs CUDA.
_LOSSES = d("""
    import torch.nn as nn
    class Heads(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.mse = nn.MSELoss().cuda()
            self.smooth = nn.SmoothL1Loss(beta=0.5).cuda()
            self.ce = nn.CrossEntropyLoss(weight=w).cuda()
            self.bce = nn.BCEWithLogitsLoss(pos_weight=w).cuda()
            self.nll = nn.NLLLoss(w).cuda()
        def l1(self, a, b):
            crit = nn.L1Loss()
            crit.cuda()
            return crit(a, b)
""")
PROJECTS += [
    ProjectShape("TW403", "built-in losses moved with .cuda(): only those holding a weight need a GPU", {
        "train.py": _TRAIN.replace("from layers import Pool", "from layers import Pool\nfrom heads import Heads").replace(
            "return scores", "Heads(None)\n    return scores"),
        "layers.py": _LAYERS, "heads.py": _LOSSES},
        (("heads.py", 7), ("heads.py", 8), ("heads.py", 9))),
]

# ------------------------------------------------------------- TW403 the project's own cuda() method
_TRAINED = _TRAIN.replace("from layers import Pool", "from layers import Pool\nfrom trainer import Trainer").replace(
    "return scores", "Trainer(None).fit([])\n    return scores")
_OWN_CUDA = d("""
    import torch
    class Trainer:
        def __init__(self, config):
            self.config = config
        def fit(self, loader):
            for items in loader:
                images, masks = self.cuda(*items)
        def cuda(self, *args):
            return (item.to(self.config.DEVICE) for item in args)
""")
PROJECTS += [
    ProjectShape("TW403", "self.cuda(*items) of the class's own cuda() that moves to its configured device", {
        "train.py": _TRAINED,
        "layers.py": _LAYERS, "trainer.py": _OWN_CUDA}),
    ProjectShape("TW403", "look-alike: the class's own cuda() hard-codes .cuda(): its call is reported", {
        "train.py": _TRAINED,
        "layers.py": _LAYERS, "trainer.py": _OWN_CUDA.replace("item.to(self.config.DEVICE)", "item.cuda()")},
        (("trainer.py", 7),)),
]

# ------------------------------------------------------------- TW403 CPU fallbacks the hard-coded line breaks
# A traffic-forecasting project: Run.py falls back to device 'cpu' and imports the trainer, whose
# training and validation steps move the output with .cuda().
_RUNNER = d("""
    import argparse
    import torch
    from model.trainer import Trainer
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        args.device = "cpu"
    Trainer(build().to(args.device), args).train()
""")
_STEPS = d("""
    import torch
    class Trainer:
        def __init__(self, model, args):
            self.model, self.args = model, args
            self.opt = torch.optim.Adam(model.parameters())
        def train(self):
            for x, y in self.loader:
                out = self.model(x.to(self.args.device))
                loss = self.loss(out.cuda(), y)
                loss.backward()
                self.opt.step()
""")
_BUILD = "import torch\ndef build():\n    return torch.nn.Linear(2, 2).cuda()\n"
PROJECTS += [
    ProjectShape("TW403", "a trainer's step hard-codes .cuda() while the entry script importing it falls back to the CPU" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "Run.py": _RUNNER, "model/trainer.py": _STEPS, "lib/nets.py": _BUILD}, (('model/trainer.py', 9),)),
    ProjectShape("TW403", "look-alike: only an inference helper (no entry point) with a GPU check imports the trainer", {
        "Run.py": _RUNNER.replace('if not torch.cuda.is_available():\n    args.device = "cpu"\n', "").replace(
            'parser.add_argument("--device", default="cuda:0")\n', ""),
        "model/trainer.py": _STEPS, "lib/nets.py": _BUILD,
        "infer.py": "import torch\nfrom model.trainer import Trainer\ndef pick():\n"
                    "    return 'cuda' if torch.cuda.is_available() else 'cpu'\n"}),
]
FIND += [
    Shape("TW403", "net.cuda() right before the device falls back to 'cpu' without GPU ids", d("""
        import torch
        class Separator:
            def __init__(self, net, gpuid):
                self.net = net.cuda()
                self.device = torch.device("cuda:{}".format(gpuid[0]) if len(gpuid) > 0 else "cpu")
    """), 4),
    Shape("TW403", "run() enters torch.cuda.device() although __init__ offers a CPU branch", d("""
        import torch
        class Trainer:
            def __init__(self, net, gpuid):
                if gpuid:
                    self.device = torch.device("cuda:{}".format(gpuid[0]))
                else:
                    self.device = torch.device("cpu")
                self.gpuid = gpuid
                self.net = net.to(self.device)
            def run(self):
                with torch.cuda.device(self.gpuid[0]):
                    self.fit()
    """), 11),
]
QUIET += [
    Shape("TW403", "look-alike: torch.cuda.device() entered only when GPU ids are given", d("""
        import torch
        class Trainer:
            def __init__(self, net, gpuid):
                if gpuid:
                    self.device = torch.device("cuda:{}".format(gpuid[0]))
                else:
                    self.device = torch.device("cpu")
                self.gpuid = gpuid
            def run(self):
                if self.gpuid:
                    with torch.cuda.device(self.gpuid[0]):
                        self.fit()
                else:
                    self.fit()
    """)),
    Shape("TW403", "look-alike: the model moved with .to() of the device chosen with a CPU alternative", d("""
        import torch
        class Separator:
            def __init__(self, net, gpuid):
                self.device = torch.device("cuda:{}".format(gpuid[0]) if len(gpuid) > 0 else "cpu")
                self.net = net.to(self.device)
    """)),
]
