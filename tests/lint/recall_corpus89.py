"""The recall corpus, round 27 part B: classes sets 43-44 missed for the parallelism wrapper and the
loaders (TW201, TW203, TW204) - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204 loaders a base trainer of another module keeps
# The script builds pinned loaders and hands them to a trainer class; the base class (another
# module) stores them with one tuple assignment; the subclass copies each batch in its epoch method.
_BASE = d("""
    import torch
    class Base:
        def __init__(self, train_loader, val_loaders, net):
            self.train_loader, self.val_loaders = train_loader, val_loaders
            self.net = net
            self.device = torch.device("cuda")
""")
_SCRIPT = d("""
    import torch
    from torch.utils.data import DataLoader
    from engine.flow_trainer import FlowTrainer
    def main(ds, vsets, net):
        tl = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
        vl = [DataLoader(v, batch_size=2, pin_memory=True) for v in vsets]
        FlowTrainer(tl, vl, net).fit()
""")
PROJECTS += [
    ProjectShape("TW204", "batches of a loader a base trainer of another module stores (tuple assignment), copied in a subclass", {
        "engine/base.py": _BASE,
        "engine/flow_trainer.py": d("""
            import torch
            from engine.base import Base
            class FlowTrainer(Base):
                def fit(self):
                    for step, batch in enumerate(self.train_loader):
                        a = batch["a"].to(self.device)
                        loss = self.net(a).mean()
                        loss.backward()
                    for k, loader in enumerate(self.val_loaders):
                        for batch in loader:
                            b = batch["a"].to(self.device)
                            self.net(b)
        """),
        "run.py": _SCRIPT,
    }, (("engine/flow_trainer.py", 6), ("engine/flow_trainer.py", 11))),
    ProjectShape("TW204", "look-alike: the same hierarchy where the script's loaders are not pinned", {
        "engine/base.py": _BASE,
        "engine/flow_trainer.py": d("""
            import torch
            from engine.base import Base
            class FlowTrainer(Base):
                def fit(self):
                    for step, batch in enumerate(self.train_loader):
                        a = batch["a"].to(self.device)
                        self.net(a).mean().backward()
        """),
        "run.py": _SCRIPT.replace("pin_memory=True", "pin_memory=False"),
    }),
    ProjectShape("TW204", "look-alike: the base class stores something else than its loader parameter", {
        "engine/base.py": _BASE.replace("= train_loader, val_loaders", "= make_loader(), val_loaders").replace(
            "import torch\n", "import torch\nfrom torch.utils.data import DataLoader\ndef make_loader():\n    return DataLoader(range(4))\n"),
        "engine/flow_trainer.py": d("""
            import torch
            from engine.base import Base
            class FlowTrainer(Base):
                def fit(self):
                    for step, batch in enumerate(self.train_loader):
                        a = batch.to(self.device)
                        self.net(a).mean().backward()
        """),
        "run.py": _SCRIPT,
    }),
]

# ------------------------------------------------------------- TW201 a trainer's own set-up method wraps its model
FIND += [
    Shape("TW201", "a trainer's set-up method wraps the model it is handed and the class stores it", d("""
        import torch
        class BaseTrainer:
            def __init__(self, model, loader, ids):
                self.ids = ids
                self.model = self._prepare(model)
                self.opt = torch.optim.Adam(self.model.parameters())
            def _prepare(self, model):
                model = model.cuda()
                model = torch.nn.DataParallel(model, device_ids=self.ids)
                return model
    """), 9),
]
QUIET += [
    Shape("TW201", "look-alike: a module-level helper that offers DataParallel to its callers", d("""
        import torch
        def parallelize(module, ids):
            module = torch.nn.DataParallel(module, device_ids=ids)
            return module
    """)),
    Shape("TW201", "look-alike: a method called by outside code only, never stored by its class", d("""
        import torch
        class Helpers:
            def wrap(self, model):
                return torch.nn.DataParallel(model)
        def evaluate(model, x):
            with torch.no_grad():
                return Helpers().wrap(model)(x)
    """)),
]

# ------------------------------------------------------------- TW201 a model builder two modules from the training script
_BUILD = d("""
    import torch
    from nets import Net
    def make_model(name, n_gpus=0):
        model = Net()
        if n_gpus > 1:
            model = torch.nn.DataParallel(model).cuda()
        return model
""")
_CONFIG = d("""
    from models.build import make_model
    def model_from_config(cfg, n_gpus):
        return make_model(cfg["name"], n_gpus=n_gpus)
""")
PROJECTS += [
    ProjectShape("TW201", "builder wrapped by a config helper, called by a script that builds an optimizer and runs training", {
        "models/build.py": _BUILD,
        "nets.py": "import torch\nclass Net(torch.nn.Module):\n    pass\n",
        "tools/config_utils.py": _CONFIG,
        "tools/train.py": d("""
            import torch
            from tools.config_utils import model_from_config
            from loop import run_training
            def main(cfg):
                model = model_from_config(cfg, 2)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                run_training(model=model, optimizer=opt)
        """),
    }, (("models/build.py", 6),)),
    ProjectShape("TW201", "look-alike: the same builder called only by a prediction script", {
        "models/build.py": _BUILD,
        "nets.py": "import torch\nclass Net(torch.nn.Module):\n    pass\n",
        "tools/config_utils.py": _CONFIG,
        "tools/predict.py": d("""
            import torch
            from tools.config_utils import model_from_config
            def main(cfg, x):
                model = model_from_config(cfg, 2)
                model.eval()
                with torch.no_grad():
                    return model(x)
        """),
    }),
]

# ------------------------------------------------------------- TW203 pin_memory read from a settings dict with a False fallback
_UTILS = d("""
    import torch
    from torch.utils.data import DataLoader
    def add_machine_args(parser):
        parser.add_argument("--pin_memory", action="store_true")
    def machine_settings(ns):
        return {"workers": 4, "pin_memory": ns.pin_memory}
    def lookup(key, settings, fallback=None):
        return settings.get(key, fallback)
    def make_loaders(ds, workers=1, pin_memory=False):
        return DataLoader(ds, batch_size=4, num_workers=workers, pin_memory=pin_memory)
    def loaders_from_settings(ds, settings):
        return make_loaders(ds, workers=lookup("workers", settings, 1), pin_memory=lookup("pin_memory", settings, False))
""")
_TRAIN = d("""
    import argparse
    import torch
    from utils import add_machine_args, machine_settings, loaders_from_settings
    def main(ds, net):
        p = argparse.ArgumentParser()
        add_machine_args(p)
        ns = p.parse_args()
        loader = loaders_from_settings(ds, machine_settings(ns))
        net = net.cuda()
        for x in loader:
            x = x.cuda()
            net(x).sum().backward()
""")
PROJECTS += [
    ProjectShape("TW203", "loader pinned from a settings lookup whose dict holds a --pin_memory flag off by default", {
        "utils.py": _UTILS, "train.py": _TRAIN,
    }, (("utils.py", 10),)),
    ProjectShape("TW204", "look-alike: copies from that loader (pinned only when the flag is set)", {
        "utils.py": _UTILS, "train.py": _TRAIN,
    }),
    ProjectShape("TW203", "look-alike: the settings dict fills the key with True", {
        "utils.py": _UTILS.replace('"pin_memory": ns.pin_memory', '"pin_memory": True'), "train.py": _TRAIN,
    }),
]

# ------------------------------------------------------------- TW203 MONAI's DataLoader
FIND += [
    Shape("TW203", "MONAI DataLoader feeding a CUDA training loop without pin_memory", d("""
        import torch
        from monai.data import DataLoader, CacheDataset
        def train(files, tfm, model, opt):
            ds = CacheDataset(data=files, transform=tfm)
            loader = DataLoader(ds, batch_size=2, num_workers=4)
            device = torch.device("cuda:0")
            for batch in loader:
                x = batch["image"].to(device)
                loss = model(x).mean()
                loss.backward()
                opt.step()
    """), 5),
]
QUIET += [
    Shape("TW203", "look-alike: MONAI transforms put the data on the GPU before batching", d("""
        import torch
        from monai.data import DataLoader, CacheDataset
        from monai.transforms import Compose, EnsureTyped
        def train(files, model, opt):
            device = torch.device("cuda:0")
            tfm = Compose([EnsureTyped(keys=["image"], device=device)])
            loader = DataLoader(CacheDataset(data=files, transform=tfm), batch_size=2)
            for batch in loader:
                loss = model(batch["image"]).mean()
                loss.backward()
                opt.step()
    """)),
]
