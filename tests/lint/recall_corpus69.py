"""The recall corpus, round 23 part A: the mechanisms behind TW204's misses on plain training loops
(a device named by a global set in another function or by ``args.device.type``, loaders pinned by a
settings dict, loops reached through star imports, loader builders handed ``**kwargs``, batches
handed to a method of a model class or a helper of another module) and TW203's pin_memory taken from
an option that is off by default - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204 the device is a global set inside main()
# A video-representation script: main() declares `global cuda` and sets it, the epoch functions copy
# the batches of a pinned loader to it.
_GLOBAL_DEV = d("""
    import torch
    from torch.utils.data import DataLoader

    def run_epoch(loader, net, opt):
        for clip in loader:
            clip = clip.to(cuda)
            loss = net(clip).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    def main(ds, net):
        global cuda
        cuda = torch.device("cuda")
        loader = DataLoader(ds, batch_size=16, num_workers=4, pin_memory=True)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for epoch in range(10):
            run_epoch(loader, net.to(cuda), opt)
""")
FIND += [
    Shape("TW204", "device name set under `global` in main(), batch copied to it in the epoch function", _GLOBAL_DEV, 6),
    Shape("TW204", "a module placeholder `accel = None`, set under `global` in main()", d("""
        import torch
        from torch.utils.data import DataLoader
        accel = None

        def evaluate(loader, net):
            with torch.no_grad():
                for feats, labels in loader:
                    feats = feats.to(accel)
                    print(net(feats).argmax(1).eq(labels.to(accel)).sum())

        def main(ds, net):
            global accel
            accel = torch.device("cuda:0")
            evaluate(DataLoader(ds, batch_size=64, pin_memory=True), net)
    """), 8),
    Shape("TW204", "copy to args.device.type (the device's kind) from a pinned loader", d("""
        import torch
        from torch.utils.data import DataLoader

        def train(args, ds, net, opt):
            loader = DataLoader(ds, batch_size=128, shuffle=True, num_workers=8, pin_memory=True)
            for x, y in loader:
                x = x.to(args.device.type)
                y = y.to(args.device.type)
                loss = torch.nn.functional.cross_entropy(net(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 7),
]
QUIET += [
    Shape("TW204", "look-alike: the global device, but the loader is not pinned",
          _GLOBAL_DEV.replace(", pin_memory=True", "")),
    Shape("TW204", "look-alike: the global is a number of epochs, not a device", d("""
        import torch
        from torch.utils.data import DataLoader

        def run_epoch(loader, net):
            for clip in loader:
                clip = clip.to(width)
                net(clip)

        def main(ds, net):
            global width
            width = 3
            run_epoch(DataLoader(ds, pin_memory=True), net)
    """)),
    Shape("TW204", "look-alike: args.device.type copies from an unpinned loader", d("""
        import torch
        from torch.utils.data import DataLoader

        def train(args, ds, net):
            for x, y in DataLoader(ds, batch_size=128, num_workers=8):
                net(x.to(args.device.type)).sum().backward()
    """)),
]

# ------------------------------------------------------------- TW204 loops reached through `from train import *`
# A pruning project: a data module builds every loader with `**({'pin_memory': True} if cuda else {})`,
# the experiment scripts take the train/eval loops with `from train import *` and hand the loaders in.
_LOAD = d("""
    import torch
    from torchvision import datasets

    def dataloader(name, batch_size, train):
        ds = datasets.CIFAR10("Data", train=train, download=True)
        cuda = torch.cuda.is_available()
        extra = {"num_workers": 4, "pin_memory": True} if cuda else {}
        return torch.utils.data.DataLoader(dataset=ds, batch_size=batch_size, shuffle=train, **extra)
""")
_LOOPS = d("""
    import torch

    def fit_epoch(net, crit, opt, data, device):
        net.train()
        for inputs, labels in data:
            inputs, labels = inputs.to(device), labels.to(device)
            opt.zero_grad()
            crit(net(inputs), labels).backward()
            opt.step()

    def fit(net, crit, opt, train_data, device, epochs):
        for _ in range(epochs):
            fit_epoch(net, crit, opt, train_data, device)
""")
_EXPERIMENT = d("""
    import torch
    from utils import load
    from loops import *

    def run(args, net):
        device = torch.device("cuda")
        train_data = load.dataloader(args.dataset, args.batch_size, True)
        fit(net.to(device), torch.nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), train_data, device, 5)
""")
PROJECTS += [
    ProjectShape("TW204", "loops of a star-imported module, loaders pinned by a conditional settings dict of a data module",
                 {"utils/load.py": _LOAD, "loops.py": _LOOPS, "experiments/single.py": _EXPERIMENT},
                 (("loops.py", 6), ("loops.py", 6))),
    ProjectShape("TW204", "look-alike: the same project whose data module pins nothing",
                 {"utils/load.py": _LOAD.replace(', "pin_memory": True', ""), "loops.py": _LOOPS,
                  "experiments/single.py": _EXPERIMENT}),
]

# ------------------------------------------------------------- TW204 pin_memory handed to a loader builder in **kwargs
# A segmentation trainer: `kwargs = {'num_workers': n, 'pin_memory': True}` handed to the data
# package's `make_loaders(args, **kwargs)`, which splats them into every DataLoader it builds.
_MAKE = d("""
    from torch.utils.data import DataLoader
    from data.sets import Scenes

    def make_loaders(args, **kwargs):
        train = DataLoader(Scenes(args, "train"), batch_size=args.batch_size, shuffle=True, **kwargs)
        val = DataLoader(Scenes(args, "val"), batch_size=1, **kwargs)
        return train, val, Scenes.NUM_CLASSES
""")
_SEG = d("""
    import torch
    from data import make_loaders

    class Trainer:
        def __init__(self, args, net):
            kwargs = {"num_workers": args.workers, "pin_memory": True}
            self.train_loader, self.val_loader, self.nclass = make_loaders(args, **kwargs)
            self.net = net.cuda()
            self.opt = torch.optim.SGD(net.parameters(), lr=0.01)

        def epoch(self):
            for sample in self.train_loader:
                image, label = sample["image"].cuda(), sample["label"].cuda()
                loss = torch.nn.functional.cross_entropy(self.net(image), label)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
""")
PROJECTS += [
    ProjectShape("TW204", "a trainer's loaders from a data package handed **kwargs with pin_memory True",
                 {"data/__init__.py": _MAKE, "data/sets.py": "class Scenes:\n    NUM_CLASSES = 21\n", "trainer.py": _SEG},
                 (("trainer.py", 13), ("trainer.py", 13))),
    ProjectShape("TW204", "look-alike: the handed settings do not pin",
                 {"data/__init__.py": _MAKE, "data/sets.py": "class Scenes:\n    NUM_CLASSES = 21\n",
                  "trainer.py": _SEG.replace(', "pin_memory": True', "")}),
]

# ------------------------------------------------------------- TW204 the batch moved by a model method or a helper of another module
# An image-text retrieval model moves its inputs in its own method (`forward_emb`), which the
# training script reaches through `model.train_step(images, captions)` in its loop over a pinned
# loader; a recommender moves a dict batch in `utils.to_gpu(batch, device)`.
_RETRIEVAL_MODEL = d("""
    import torch

    class Retrieval:
        def __init__(self, img_enc, txt_enc):
            self.img_enc, self.txt_enc = img_enc, txt_enc

        def embed(self, images, captions, lengths):
            if torch.cuda.is_available():
                images = images.cuda()
                captions = captions.cuda()
            lengths = torch.tensor(lengths).cuda()
            return self.img_enc(images), self.txt_enc(captions, lengths)

        def train_step(self, images, captions, lengths):
            img, txt = self.embed(images, captions, lengths)
            (img * txt).sum().backward()
""")
_RETRIEVAL_TRAIN = d("""
    from torch.utils.data import DataLoader
    from model import Retrieval

    def train(ds, encoders):
        loader = DataLoader(ds, batch_size=128, shuffle=True, num_workers=4, pin_memory=True)
        model = Retrieval(*encoders)
        for images, captions, lengths in loader:
            model.train_step(images, captions, lengths)
""")
_TO_GPU = d("""
    import torch

    def to_gpu(batch, device):
        for key in batch:
            if isinstance(batch[key], torch.Tensor):
                batch[key] = batch[key].to(device)
        return batch
""")
_RUNNER = d("""
    import torch
    from torch.utils.data import DataLoader
    from utils import helpers

    def fit(model, ds, opt):
        loader = DataLoader(ds, batch_size=256, shuffle=True, num_workers=4, collate_fn=ds.collate, pin_memory=True)
        for batch in loader:
            batch = helpers.to_gpu(batch, model.device)
            opt.zero_grad()
            model.loss(model(batch)).backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW204", "inputs moved in a model method that the training script calls inside its pinned loop",
                 {"model.py": _RETRIEVAL_MODEL, "train.py": _RETRIEVAL_TRAIN}, (("model.py", 9), ("model.py", 10))),
    ProjectShape("TW204", "look-alike: the same model fed by an unpinned loader",
                 {"model.py": _RETRIEVAL_MODEL, "train.py": _RETRIEVAL_TRAIN.replace(", pin_memory=True", "")}),
    ProjectShape("TW204", "a dict batch moved by a helper of another module, called in a loop over a pinned loader",
                 {"utils/helpers.py": _TO_GPU, "runner.py": _RUNNER}, (("utils/helpers.py", 6),)),
    ProjectShape("TW204", "look-alike: the helper called with a batch of an unpinned loader",
                 {"utils/helpers.py": _TO_GPU, "runner.py": _RUNNER.replace(", pin_memory=True", "")}),
    ProjectShape("TW204", "look-alike: the helper moves a model's buffers, not a batch",
                 {"utils/helpers.py": _TO_GPU, "runner.py": d("""
                     import torch
                     from torch.utils.data import DataLoader
                     from utils import helpers

                     def fit(model, ds, opt):
                         state = helpers.to_gpu(dict(model.named_buffers()), model.device)
                         for batch in DataLoader(ds, batch_size=256, num_workers=4, pin_memory=True):
                             model(batch, state).sum().backward()
                 """)}),
]

# ------------------------------------------------------------- TW203 pin_memory from an option that is off by default
# A recommender toolkit: the base runner reads `--pin_memory` (type=int, default 0) into
# `self.pin_memory`; its loaders, and those of runner subclasses in other modules, pass it on.
FIND += [
    Shape("TW203", "pin_memory=args.pin_mem with a store_true option", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument("--pin_mem", action="store_true")
        args = parser.parse_args()

        def train(ds, net, opt):
            loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=args.pin_mem)
            for x, y in loader:
                loss = torch.nn.functional.mse_loss(net(x.cuda()), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 9),
]
QUIET += [
    Shape("TW203", "look-alike: the option is on by default", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument("--pin_mem", type=int, default=1)
        args = parser.parse_args()

        def train(ds, net):
            for x, y in DataLoader(ds, batch_size=64, num_workers=4, pin_memory=args.pin_mem):
                net(x.cuda()).sum().backward()
    """)),
    Shape("TW203", "look-alike: pin_memory follows the --cuda switch (pinned whenever the GPU is used)", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", action="store_true")
        args = parser.parse_args()

        def train(ds, net):
            for x, y in DataLoader(ds, batch_size=64, num_workers=4, pin_memory=args.cuda):
                net(x.cuda()).sum().backward()
    """)),
]
_BASE_RUNNER = d("""
    import torch
    from torch.utils.data import DataLoader

    class BaseRunner:
        @staticmethod
        def parse_runner_args(parser):
            parser.add_argument("--pin_memory", type=int, default=0, help="pin_memory in DataLoader")
            return parser

        def __init__(self, args):
            self.batch_size = args.batch_size
            self.pin_memory = args.pin_memory

        def fit(self, dataset, model):
            dl = DataLoader(dataset, batch_size=self.batch_size, shuffle=True, pin_memory=self.pin_memory)
            for batch in dl:
                model(batch.cuda()).sum().backward()
""")
_SUB_RUNNER = d("""
    import torch
    from torch.utils.data import DataLoader
    from helpers.BaseRunner import BaseRunner

    class RankRunner(BaseRunner):
        def predict(self, dataset, model):
            dl = DataLoader(dataset, batch_size=self.batch_size, pin_memory=self.pin_memory)
            out = []
            for batch in dl:
                out.append(model(batch.cuda()).cpu())
            return out
""")
_RUN_MAIN = d("""
    import argparse
    from helpers.BaseRunner import BaseRunner
    from helpers.RankRunner import RankRunner

    def main(dataset, model):
        parser = BaseRunner.parse_runner_args(argparse.ArgumentParser())
        runner = RankRunner(parser.parse_args())
        runner.fit(dataset, model)
        return runner.predict(dataset, model)
""")
PROJECTS += [
    ProjectShape("TW203", "self.pin_memory stored from an option off by default, in the base runner and its subclass in another module",
                 {"helpers/BaseRunner.py": _BASE_RUNNER, "helpers/RankRunner.py": _SUB_RUNNER, "main.py": _RUN_MAIN},
                 (("helpers/BaseRunner.py", 15), ("helpers/RankRunner.py", 7))),
    ProjectShape("TW203", "look-alike: the base runner's option defaults to 1",
                 {"helpers/BaseRunner.py": _BASE_RUNNER.replace("default=0", "default=1"), "helpers/RankRunner.py": _SUB_RUNNER,
                  "main.py": _RUN_MAIN}),
]
