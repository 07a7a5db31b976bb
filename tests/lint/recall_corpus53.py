"""The recall corpus, round 19 part C: classes sets 27 and 28 showed for TW203, TW204, TW301,
TW403 and TW104 - each written in our own words and reduced to its shape, with look-alikes that
must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW203 a script's __main__ hands loaders to the project's trainer
# An entry script with one helper of its own (its argument parser) whose `__main__` block builds the
# loaders and hands them to `train()` of another module, which moves every batch with `.cuda()`.
_QA_TRAIN = d("""
    import torch
    def fit(net, loader, val_loader, epochs):
        opt = torch.optim.Adam(net.parameters())
        for _ in range(epochs):
            for feats, labels in loader:
                feats, labels = feats.cuda(), labels.cuda()
                loss = net(feats, labels)
                opt.zero_grad()
                loss.backward()
                opt.step()
""")
_QA_MAIN = d("""
    import argparse
    import torch
    from torch.utils.data import DataLoader
    from qa_data import QuestionSet
    from qa_net import Answerer
    from trainer import fit

    def options():
        p = argparse.ArgumentParser()
        p.add_argument("--epochs", type=int, default=10)
        return p.parse_args()

    if __name__ == "__main__":
        args = options()
        net = Answerer().cuda()
        train_set, val_set = QuestionSet("train"), QuestionSet("val")
        tl = DataLoader(train_set, 64, shuffle=True, num_workers=2)
        vl = DataLoader(val_set, 64, shuffle=False, num_workers=2)
        fit(net, tl, vl, args.epochs)
""")
_QA_EVAL = d("""
    import torch
    from torch.utils.data import DataLoader
    from qa_data import QuestionSet

    def options():
        return None

    if __name__ == "__main__":
        if options() is None:
            from trainer import fit
        net = torch.load("net.pt").cuda()
        loader = DataLoader(QuestionSet("val"), 32, num_workers=1)
        fit(net, loader, None, 1)
""")
PROJECTS += [
    ProjectShape("TW203", "a script's __main__ block hands its loaders to train() of another module that moves each batch",
                 {"trainer.py": _QA_TRAIN, "run.py": _QA_MAIN, "qa_data.py": "class QuestionSet:\n    pass\n",
                  "qa_net.py": "class Answerer:\n    pass\n"}, (("run.py", 17), ("run.py", 18))),
    ProjectShape("TW203", "the project function is imported inside the __main__ block",
                 {"trainer.py": _QA_TRAIN, "check.py": _QA_EVAL, "qa_data.py": "class QuestionSet:\n    pass\n"},
                 (("check.py", 12),)),
    ProjectShape("TW203", "look-alike: the project function the loaders go to moves nothing (it counts the labels)",
                 {"trainer.py": "def fit(net, loader, val_loader, epochs):\n    return sum(len(y) for _, y in loader)\n",
                  "run.py": _QA_MAIN, "qa_data.py": "class QuestionSet:\n    pass\n", "qa_net.py": "class Answerer:\n    pass\n"}),
]

# ------------------------------------------------------------- TW203 loaders built in a returned dict comprehension
_SPLITS = d("""
    from torch.utils.data import DataLoader
    from molecules.data import load_splits

    def make_loaders(batch_size, workers=1):
        splits = load_splits()
        loaders = {name: DataLoader(ds, batch_size=batch_size, shuffle=name == "train", num_workers=workers)
                   for name, ds in splits.items()}
        return loaders
""")
_SPLITS_MAIN = d("""
    import torch
    from molecules import loaders as L
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for batch in L.make_loaders(32)["train"]:
        x = batch["pos"].to(device)
""")
PROJECTS += [
    ProjectShape("TW203", "a data module returns {split: DataLoader(...) for ...} to a script that moves batches to CUDA",
                 {"molecules/loaders.py": _SPLITS, "molecules/data.py": "def load_splits():\n    return {}\n",
                  "train.py": _SPLITS_MAIN}, (("molecules/loaders.py", 6),)),
    ProjectShape("TW203", "look-alike: the same data module in a project that never names a GPU",
                 {"molecules/loaders.py": _SPLITS, "molecules/data.py": "def load_splits():\n    return {}\n",
                  "train.py": "from molecules import loaders as L\nfor batch in L.make_loaders(32)['train']:\n    print(batch)\n"}),
]

# ------------------------------------------------------------- TW204 pinned loaders kept on self, unpacked or handed in
_FACE_DATA = d("""
    from torch.utils.data import DataLoader
    def train_loader(cfg):
        ds = cfg.dataset()
        loader = DataLoader(ds, batch_size=cfg.batch, shuffle=True, pin_memory=cfg.pin, num_workers=4)
        return loader, ds.n_classes
""")
_FACE_LEARNER = d("""
    import torch
    from data.pipe import train_loader
    class Learner:
        def __init__(self, cfg, net):
            self.net = net.to(cfg.device)
            self.loader, self.n_classes = train_loader(cfg)
            self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
        def train(self, cfg, epochs):
            for _ in range(epochs):
                for imgs, ids in self.loader:
                    imgs = imgs.to(cfg.device)
                    ids = ids.to(cfg.device)
                    loss = self.net(imgs, ids)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
""")
_AUDIO_TRAIN = d("""
    import torch
    from data import loaders
    class Trainer:
        def __init__(self, train_ds, test_ds, gpu):
            self.train_ds = train_ds
            self.test_ds = test_ds
            self.gpu = gpu
        def step(self, batch):
            clean = batch[0].to(self.gpu)
            noisy = batch[1].to(self.gpu)
            return (clean - noisy).abs().mean()
        def train(self):
            for batch in self.train_ds:
                self.step(batch).backward()
    def main(rank):
        train_ds, test_ds = loaders.load_data("data", 4)
        Trainer(train_ds, test_ds, rank).train()
""")
_AUDIO_DATA = d("""
    import torch
    from torch.utils.data import DataLoader
    def load_data(root, batch):
        tr = DataLoader(root + "/train", batch_size=batch, pin_memory=True, num_workers=2)
        te = DataLoader(root + "/test", batch_size=batch, pin_memory=True, num_workers=2)
        return tr, te
""")
PROJECTS += [
    ProjectShape("TW204", "a pinned loader unpacked into self.loader from a project function, its batches copied with .to()",
                 {"data/pipe.py": _FACE_DATA, "learner.py": _FACE_LEARNER}, (("learner.py", 11), ("learner.py", 12))),
    ProjectShape("TW204", "look-alike: the project function builds the loader without pinning",
                 {"data/pipe.py": _FACE_DATA.replace("pin_memory=cfg.pin, ", ""), "learner.py": _FACE_LEARNER}),
    ProjectShape("TW204", "pinned loaders handed to a class's constructor, kept on self, batches copied in a step method",
                 {"data/loaders.py": _AUDIO_DATA, "train.py": _AUDIO_TRAIN}, (("train.py", 9), ("train.py", 10))),
    ProjectShape("TW204", "look-alike: the loaders handed to the constructor are not pinned",
                 {"data/loaders.py": _AUDIO_DATA.replace("pin_memory=True", "pin_memory=False"), "train.py": _AUDIO_TRAIN}),
]

# ------------------------------------------------------------- TW301 a --seed option nothing uses
_NBODY = d("""
    import argparse
    import torch
    from systems.model import Net
    from systems.data import Trajectories
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default: 1)")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    net = Net()
    opt = torch.optim.Adam(net.parameters())
    def train(epoch, loader):
        for x, y in loader:
            loss = (net(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        for epoch in range(args.epochs):
            train(epoch, Trajectories())
""")
_NBODY_MODEL = "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
_MARL_MAIN = d("""
    from runner import Runner
    from common.arguments import common_args
    if __name__ == "__main__":
        args = common_args()
        runner = Runner(args)
        runner.run()
""")
_MARL_ARGS = d("""
    import argparse
    def common_args():
        p = argparse.ArgumentParser()
        p.add_argument("--seed", type=int, default=123, help="random seed")
        p.add_argument("--epsilon", type=float, default=0.1)
        return p.parse_args()
""")
_MARL_RUNNER = d("""
    import numpy as np
    class Runner:
        def __init__(self, args):
            self.args = args
        def run(self):
            return np.random.uniform() < self.args.epsilon
""")
PROJECTS += [
    ProjectShape("TW301", "a training script's --seed (its help names the seed) seeds nothing; its model module builds layers",
                 {"main.py": _NBODY, "systems/model.py": _NBODY_MODEL, "systems/data.py": "class Trajectories(list):\n    pass\n"},
                 (("main.py", 6),)),
    ProjectShape("TW301", "look-alike: the script seeds torch from the option",
                 {"main.py": _NBODY.replace("net = Net()", "torch.manual_seed(args.seed)\nnet = Net()"),
                  "systems/model.py": _NBODY_MODEL, "systems/data.py": "class Trajectories(list):\n    pass\n"}),
    ProjectShape("TW301", "the options of a shared parser go to the project's runner, and no file names a seed otherwise",
                 {"main.py": _MARL_MAIN, "common/arguments.py": _MARL_ARGS, "runner.py": _MARL_RUNNER}, (("main.py", 4),)),
    ProjectShape("TW301", "look-alike: the runner seeds from the options",
                 {"main.py": _MARL_MAIN, "common/arguments.py": _MARL_ARGS,
                  "runner.py": _MARL_RUNNER.replace("self.args = args", "self.args = args\n        np.random.seed(args.seed)")}),
    ProjectShape("TW301", "look-alike: an evaluation script that trains nothing, in a project that seeds elsewhere",
                 {"main.py": _NBODY.replace("loss.backward()", "pass").replace("opt.step()", "pass").replace(
                     "opt.zero_grad()", "pass"),
                  "systems/model.py": _NBODY_MODEL, "systems/data.py": "import random\nclass Trajectories(list):\n    pass\n",
                  "fit.py": "import torch\ntorch.manual_seed(0)\n"}),
]

# ------------------------------------------------------------- TW403 bare .cuda() beside a guarded model
FIND += [
    Shape("TW403", "GAN script: models moved only if a GPU exists, batches and noise with a bare .cuda()", d("""
        import torch
        from torch import nn
        D, G = nn.Linear(784, 1), nn.Linear(100, 784)
        if torch.cuda.is_available():
            D = D.cuda()
            G = G.cuda()
        d_opt = torch.optim.Adam(D.parameters())
        g_opt = torch.optim.Adam(G.parameters())
        for img, _ in []:
            real = img.view(img.size(0), -1).cuda()
            z = torch.randn(img.size(0), 100).cuda()
            loss = D(real).mean() - D(G(z)).mean()
            d_opt.zero_grad()
            loss.backward()
            d_opt.step()
    """), 10),
    Shape("TW403", "a device flag honouring --no-cuda, and the model moved under a bare is_available() test", d("""
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument("--no-cuda", action="store_true")
        args = p.parse_args()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        device = torch.device("cuda" if args.cuda else "cpu")
        model = torch.nn.Linear(3, 3)
        if torch.cuda.is_available():
            model = model.cuda()
        x = torch.ones(2, 3).to(device)
        print(model(x))
    """), 10),
]
QUIET += [
    Shape("TW403", "look-alike: the batches are moved under the same check as the models", d("""
        import torch
        from torch import nn
        D = nn.Linear(784, 1)
        use_gpu = torch.cuda.is_available()
        if use_gpu:
            D = D.cuda()
        opt = torch.optim.Adam(D.parameters())
        for img, _ in []:
            if use_gpu:
                img = img.cuda()
            loss = D(img).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)),
    Shape("TW403", "look-alike: the model moved under the flag that honours --no-cuda", d("""
        import argparse
        import torch
        p = argparse.ArgumentParser()
        p.add_argument("--no-cuda", action="store_true")
        args = p.parse_args()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        model = torch.nn.Linear(3, 3)
        if args.cuda:
            model = model.cuda()
        print(model(torch.ones(2, 3)))
    """)),
]

# ------------------------------------------------------------- TW104 a bare pass feeding an inference script's no_grad block
FIND += [
    Shape("TW104", "style transfer script: encoder run bare, its features used by the passes under no_grad", d("""
        import torch
        from nets import Encoder, Decoder, Transform
        enc, dec, tf = Encoder(), Decoder(), Transform()
        enc.load_state_dict(torch.load("enc.pth"))
        for content, style in []:
            s_feat = enc(style)
            c_feat = enc(content)
            with torch.no_grad():
                out = dec(tf(c_feat, s_feat))
            print(out.shape)
    """), 6),
]
QUIET += [
    Shape("TW104", "look-alike: the bare result is only printed, not handed to the no_grad passes", d("""
        import torch
        from nets import Encoder, Decoder
        enc, dec = Encoder(), Decoder()
        for content in []:
            feat = enc(content)
            print(feat.shape)
            with torch.no_grad():
                out = dec(content)
    """)),
    Shape("TW104", "look-alike: the script trains the encoder it runs bare", d("""
        import torch
        from nets import Encoder, Decoder
        enc, dec = Encoder(), Decoder()
        opt = torch.optim.Adam(enc.parameters())
        for content in []:
            feat = enc(content)
            with torch.no_grad():
                target = dec(content)
            loss = (feat - target).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)),
]
