"""The recall corpus, round 30 part E: loaders kept in a dict comprehension whose ``pin_memory``
depends on the split (``pin_memory=(True if x == 'train' else False)``, the crowd-counting
trainers' idiom), and ``pin_memory`` read from a config object whose every shipped YAML/JSON file
sets it false. Each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204/TW203 pin_memory chosen per split of a dict comprehension
# A trainer class keeps one loader per split in a dict comprehension; only the training split is
# pinned. The training loop reads self.loaders['train'] (pinned: its copies want non_blocking), the
# validation split's batches go to the GPU unpinned (TW203 at the comprehension's DataLoader).
_SPLIT_TRAINER = d("""
    import torch
    from torch.utils.data import DataLoader

    class Trainer:
        def setup(self, sets, args):
            self.device = torch.device("cuda")
            self.loaders = {s: DataLoader(sets[s], batch_size=(args.bs if s == "train" else 1),
                                          shuffle=(s == "train"), num_workers=4,
                                          pin_memory=(True if s == "train" else False))
                            for s in ["train", "val"]}
            self.net = torch.nn.Linear(8, 1).to(self.device)

        def train_epoch(self, opt):
            for images, counts in self.loaders["train"]:
                images = images.to(self.device)
                counts = counts.to(self.device)
                loss = (self.net(images) - counts).abs().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()

        def val_epoch(self):
            with torch.no_grad():
                for images, counts in self.loaders["val"]:
                    images = images.to(self.device)
                    print((self.net(images) - counts.to(self.device)).abs().mean())
""")
FIND += [
    Shape("TW204", "self.loaders['train'] of a per-split comprehension pinned only for 'train'", _SPLIT_TRAINER, 16),
    Shape("TW203", "per-split comprehension: the validation loader unpinned while its batches go to the GPU", _SPLIT_TRAINER, 7),
]
QUIET += [
    Shape("TW204", "look-alike: only the unpinned 'val' item is iterated", _SPLIT_TRAINER.replace(
        'self.loaders["train"]', 'self.loaders["val"]')),
    Shape("TW204", "look-alike: pinned for every split except 'train' (the 'train' item is unpinned)", d("""
        import torch
        from torch.utils.data import DataLoader

        def run(sets, model, opt):
            loaders = {k: DataLoader(sets[k], batch_size=32, pin_memory=(k != "train")) for k in ["train", "val"]}
            for x, y in loaders["train"]:
                x = x.cuda()
                loss = (model(x) - y.cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
    Shape("TW203", "look-alike: the comprehension walks only the 'train' split, which is pinned", d("""
        import torch
        from torch.utils.data import DataLoader

        def run(sets, model):
            loaders = {s: DataLoader(sets[s], batch_size=8, num_workers=2, pin_memory=(True if s == "train" else False))
                       for s in ["train"]}
            for x, y in loaders["train"]:
                x = x.cuda(non_blocking=True)
                print(model(x))
    """)),
    Shape("TW203", "look-alike: per-split comprehension pinned by a device test", d("""
        import torch
        from torch.utils.data import DataLoader

        def run(sets, model, args):
            loaders = {s: DataLoader(sets[s], batch_size=8, num_workers=2, pin_memory=(True if args.device == "cuda" else False))
                       for s in ["train", "val"]}
            for x, y in loaders["val"]:
                print(model(x.to(args.device, non_blocking=True)))
    """)),
]

# ------------------------------------------------------------- TW203/TW204 pin_memory from a shipped config file
# A script loads an experiment YAML (--cfg) into an attribute dict and builds its loaders with
# pin_memory=config.PIN_MEMORY; every YAML the project ships says PIN_MEMORY: False. The loaders
# are unpinned on every shipped run: TW203 at the DataLoader, and the blocking copies in the
# training function of another module are no TW204.
_CFG_TRAIN = d("""
    import argparse
    import yaml
    import torch
    from easydict import EasyDict as edict
    from torch.utils.data import DataLoader
    from core.steps import train_one_epoch

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--cfg", required=True)
        args = parser.parse_args()
        with open(args.cfg) as f:
            config = edict(yaml.safe_load(f))
        model = torch.nn.Linear(4, 2).cuda()
        loader = DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 2)),
                            batch_size=config.TRAIN.BATCH, num_workers=config.WORKERS,
                            pin_memory=config.PIN_MEMORY)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(config.TRAIN.EPOCHS):
            train_one_epoch(model, loader, opt)

    if __name__ == "__main__":
        main()
""")
_CFG_STEPS = d("""
    import torch

    def train_one_epoch(model, train_loader, opt):
        for x, y in train_loader:
            x = x.cuda()
            y = y.cuda()
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_YAML_OFF = "WORKERS: 4\nPIN_MEMORY: False\nTRAIN:\n  BATCH: 32\n  EPOCHS: 10\n"
PROJECTS += [
    ProjectShape("TW203", "pin_memory=config.PIN_MEMORY, False in both shipped YAML configs", {
        "train.py": _CFG_TRAIN, "core/__init__.py": "", "core/steps.py": _CFG_STEPS,
        "experiments/small.yaml": _YAML_OFF, "experiments/large.yaml": _YAML_OFF.replace("BATCH: 32", "BATCH: 256"),
    }, (("train.py", 15),)),
    ProjectShape("TW203", "look-alike: one shipped config pins", {
        "train.py": _CFG_TRAIN, "core/__init__.py": "", "core/steps.py": _CFG_STEPS,
        "experiments/small.yaml": _YAML_OFF, "experiments/large.yaml": _YAML_OFF.replace("PIN_MEMORY: False", "PIN_MEMORY: true"),
    }),
    ProjectShape("TW204", "look-alike: the loader's pin_memory is false in every shipped config", {
        "train.py": _CFG_TRAIN, "core/__init__.py": "", "core/steps.py": _CFG_STEPS,
        "experiments/small.yaml": _YAML_OFF,
    }),
    ProjectShape("TW203", "look-alike: the Python defaults pin, the YAML files override", {
        "train.py": _CFG_TRAIN, "core/__init__.py": "", "core/steps.py": _CFG_STEPS,
        "core/defaults.py": "from easydict import EasyDict\n_C = EasyDict()\n_C.PIN_MEMORY = True\n",
        "experiments/small.yaml": _YAML_OFF,
    }),
]
