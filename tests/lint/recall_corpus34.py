"""The recall corpus, round 15 part B (issue 22): the data rules (TW202, TW203, TW204, TW206) and the
API/correctness rules (TW502, TW501, TW509, TW103, TW102, TW109, TW508) on the classes sets 19 and
20 showed - missed, or reported where the advice does not apply - each written in our own words
and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204 a name bound to a zip of pinned loaders
# Semi-supervised segmentation: the labelled and unlabelled loaders (both pinned) are zipped into
# one stream every epoch, and the loop copies each part of the step's batch with .cuda().
FIND += [
    Shape("TW204", "semi-supervised training: loader = zip(labelled, unlabelled, unlabelled), then enumerate(loader)", d("""
        import torch
        from torch.utils.data import DataLoader
        def main(cfg, labelled, unlabelled, model, opt):
            loader_l = DataLoader(labelled, batch_size=cfg.bs, num_workers=2, pin_memory=True, drop_last=True)
            loader_u = DataLoader(unlabelled, batch_size=cfg.bs, num_workers=2, pin_memory=True, drop_last=True)
            for epoch in range(cfg.epochs):
                loader = zip(loader_l, loader_u, loader_u)
                for i, ((img, mask), (weak, strong, _), (weak_mix, strong_mix, _)) in enumerate(loader):
                    img, mask = img.cuda(), mask.cuda()
                    weak = weak.cuda()
                    loss = model(img, mask, weak)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
    """), 10),
    Shape("TW204", "domain adaptation: source and target loaders zipped once, iterated directly", d("""
        import torch
        from torch.utils.data import DataLoader
        def adapt(src_set, tgt_set, net, device):
            src = DataLoader(src_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
            tgt = DataLoader(tgt_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
            pairs = zip(src, tgt)
            for (xs, ys), (xt, _) in pairs:
                xt = xt.to(device)
                net.adapt_step(xs, ys, xt)
    """), 8),
]
QUIET += [
    Shape("TW204", "look-alike: one of the zipped loaders is not pinned", d("""
        import torch
        from torch.utils.data import DataLoader
        def main(labelled, unlabelled, model):
            loader_l = DataLoader(labelled, batch_size=8, num_workers=2, pin_memory=True)
            loader_u = DataLoader(unlabelled, batch_size=8, num_workers=2)
            loader = zip(loader_l, loader_u)
            for (img, mask), (weak, _) in loader:
                weak = weak.cuda()
                model(img, mask, weak)
    """)),
    Shape("TW204", "look-alike: a zip of plain lists of tensors", d("""
        import torch
        def replay(states, actions, model):
            batches = zip(states, actions)
            for s, a in batches:
                s = s.cuda()
                model(s, a)
    """)),
]

# ------------------------------------------------------------- TW206 a per-item copy that converts nothing
# A PDE dataset reads each sample from HDF5 into an array of float32 and copies it again with
# torch.tensor(..., dtype=torch.float): the dtype asked for is the one the array already has.
FIND += [
    Shape("TW206", "HDF5 sample read as float32, then torch.tensor(..., dtype=torch.float) in __getitem__", d("""
        import h5py
        import numpy as np
        import torch
        from torch.utils.data import Dataset
        class Trajectories(Dataset):
            def __init__(self, path, keys):
                self.path, self.keys = path, keys
            def __len__(self):
                return len(self.keys)
            def __getitem__(self, i):
                with h5py.File(self.path, "r") as f:
                    sample = np.array(f[self.keys[i]]["data"], dtype="f")
                    sample = torch.tensor(sample, dtype=torch.float)
                return sample[:10], sample
    """), 13),
    Shape("TW206", "a collate function that casts with astype, then asks torch.tensor for the same dtype", d("""
        import numpy as np
        import torch
        def collate_fn(batch):
            feats = np.stack([b[0] for b in batch]).astype(np.float32)
            labels = torch.tensor([b[1] for b in batch])
            return torch.tensor(feats, dtype=torch.float32), labels
    """), 6),
]
QUIET += [
    Shape("TW206", "look-alike: the dtype changes (uint8 mask to long labels)", d("""
        import numpy as np
        import torch
        from torch.utils.data import Dataset
        class Masks(Dataset):
            def __init__(self, masks):
                self.masks = masks
            def __len__(self):
                return len(self.masks)
            def __getitem__(self, i):
                m = np.asarray(self.masks[i], dtype=np.uint8)
                return torch.tensor(m, dtype=torch.long)
    """)),
    Shape("TW206", "look-alike: the same copy once, at set-up", d("""
        import numpy as np
        import torch
        def load_grid(path):
            grid = np.array(np.load(path), dtype="f")
            return torch.tensor(grid, dtype=torch.float)
    """)),
]

# ------------------------------------------------------------- TW502 a warm-up scheduler hands its epoch on
# The gradual warm-up scheduler many projects copy: an _LRScheduler subclass that, once warm,
# steps the scheduler it wraps with an epoch of its own (the argument lr_scheduler.step deprecates).
_WARMUP = d("""
    from torch.optim.lr_scheduler import _LRScheduler, ReduceLROnPlateau
    class WarmupScheduler(_LRScheduler):
        def __init__(self, optimizer, multiplier, total_epoch, after_scheduler=None):
            self.multiplier, self.total_epoch = multiplier, total_epoch
            self.after_scheduler = after_scheduler
            self.finished = False
            super().__init__(optimizer)
        def get_lr(self):
            return [b * self.multiplier for b in self.base_lrs]
        def step_plateau(self, metrics, epoch=None):
            if epoch is None:
                self.after_scheduler.step(metrics, None)
            else:
                self.after_scheduler.step(metrics, epoch - self.total_epoch)
        def step(self, epoch=None, metrics=None):
            if type(self.after_scheduler) != ReduceLROnPlateau:
                if self.finished and self.after_scheduler:
                    if epoch is None:
                        self.after_scheduler.step(None)
                    else:
                        self.after_scheduler.step(epoch - self.total_epoch)
                else:
                    return super().step(epoch)
            else:
                self.step_plateau(metrics, epoch)
""")
FIND += [
    Shape("TW502", "warm-up scheduler: a plateau scheduler stepped with (metrics, epoch)", _WARMUP, 14),
    Shape("TW502", "warm-up scheduler: the wrapped scheduler stepped with epoch - total_epoch", _WARMUP, 21),
]
QUIET += [
    Shape("TW502", "look-alike: the wrapped scheduler may be a plateau one (its one argument is the metric)", d("""
        import torch
        class Warmup(torch.optim.lr_scheduler._LRScheduler):
            def __init__(self, optimizer, total_epoch, after_scheduler=None):
                self.total_epoch, self.after_scheduler = total_epoch, after_scheduler
                super().__init__(optimizer)
            def step(self, epoch=None):
                if self.after_scheduler and self.last_epoch > self.total_epoch:
                    self.after_scheduler.step(epoch - self.total_epoch)
                else:
                    super().step(epoch)
    """)),
    Shape("TW502", "look-alike: the method's own epoch=None handed on unchecked", d("""
        from torch.optim.lr_scheduler import _LRScheduler
        class Warmup(_LRScheduler):
            def __init__(self, optimizer, total_epoch, after_scheduler=None):
                self.total_epoch, self.after_scheduler = total_epoch, after_scheduler
                super().__init__(optimizer)
            def step(self, epoch=None, metric=None):
                if self.last_epoch >= self.total_epoch - 1 and metric is not None:
                    return self.after_scheduler.step(metric, epoch)
                return super().step(epoch)
    """)),
    Shape("TW502", "look-alike: a wrapper class of its own, not a torch scheduler", d("""
        import torch
        class Schedule:
            def __init__(self, after_scheduler, total_epoch):
                self.after_scheduler, self.total_epoch = after_scheduler, total_epoch
            def step(self, epoch):
                self.after_scheduler.step(epoch - self.total_epoch)
    """)),
]

# ------------------------------------------------------------- TW502 the weight-norm function under a module path
# `import torch.nn.utils.weight_norm as weightNorm` binds the (deprecated) function - the package's
# attribute shadows its module - and the classifier head calls it.
FIND += [
    Shape("TW502", "domain adaptation head: import torch.nn.utils.weight_norm as weightNorm, then weightNorm(layer)", d("""
        import torch.nn as nn
        import torch.nn.utils.weight_norm as weightNorm
        class Classifier(nn.Module):
            def __init__(self, dim, n):
                super().__init__()
                self.fc = weightNorm(nn.Linear(dim, n), name="weight")
            def forward(self, x):
                return self.fc(x)
    """), 6),
]
QUIET += [
    Shape("TW502", "look-alike: the parametrization that replaces it, under an alias", d("""
        import torch.nn as nn
        import torch.nn.utils.parametrizations as P
        from torch.nn.utils.parametrizations import weight_norm as wn
        class Classifier(nn.Module):
            def __init__(self, dim, n):
                super().__init__()
                self.fc = wn(nn.Linear(dim, n))
                self.fc2 = P.weight_norm(nn.Linear(n, n))
    """)),
]

# ------------------------------------------------------------- TW501 the Lua Torch loader
FIND += [
    Shape("TW501", "a perceptual loss converts VGG weights from a .t7 file with load_lua", d("""
        import torch
        from torch.utils.serialization import load_lua
        def vgg_weights(path):
            return load_lua(path)
    """), 2),
]
QUIET += [
    Shape("TW501", "look-alike: load_lua imported for old versions only, beside torchfile", d("""
        try:
            from torch.utils.serialization import load_lua
        except ImportError:
            from torchfile import load as load_lua
    """)),
]

# ------------------------------------------------------------- TW509 a builder whose import was lost
FIND += [
    Shape("TW509", "an inception scorer calls inception_v3(pretrained=False) the file never imports", d("""
        import torch
        import torch.nn as nn
        from torchvision import transforms
        def load_inception(path):
            state = torch.load(path, weights_only=True)
            model = inception_v3(pretrained=False, transform_input=True)
            model.load_state_dict(state)
            return model
    """), 6),
]
QUIET += [
    Shape("TW509", "look-alike: the project's own builder of the same name, defined in the file", d("""
        import torchvision
        def resnet50(pretrained=False, **kwargs):
            return build_resnet([3, 4, 6, 3], pretrained, **kwargs)
        net = resnet50(pretrained=True)
    """)),
    Shape("TW509", "look-alike: a star import could bind the name", d("""
        import torchvision
        from nets.backbones import *
        net = resnet50(pretrained=True)
    """)),
]

# ------------------------------------------------------------- TW103 forward of a loss module
# A training utility module takes the loss as a parameter; the script hands it an nn.CrossEntropyLoss
# or a label-smoothing loss of the project (a torch _Loss subclass), and the step calls loss.forward.
_RUN = d("""
    import torch
    def train_epoch(model, loader, loss, opt, device):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = loss.forward(model(x), y)
            opt.zero_grad()
            out.backward()
            opt.step()
""")
_LOSS = d("""
    import torch
    from torch.nn.modules.loss import _Loss
    class SmoothCE(_Loss):
        def __init__(self, eps):
            super().__init__()
            self.eps = eps
        def forward(self, logits, target):
            return torch.nn.functional.cross_entropy(logits, target, label_smoothing=self.eps)
""")
_SCRIPT = d("""
    import torch.nn as nn
    from utils.run import train_epoch
    from model.loss import SmoothCE
    def main(args, model, loader, opt, device):
        plain = nn.CrossEntropyLoss()
        if args.smoothing is None:
            train_loss = plain
        else:
            train_loss = SmoothCE(args.smoothing)
        for epoch in range(args.epochs):
            train_epoch(model, loader, train_loss, opt, device)
""")
PROJECTS += [
    ProjectShape("TW103", "a run-model utility calls loss.forward on the loss modules the script hands it", {
        "utils/run.py": _RUN, "model/loss.py": _LOSS, "train.py": _SCRIPT,
    }, (("utils/run.py", 5),)),
    ProjectShape("TW103", "look-alike: the script hands in a plain scoring object", {
        "utils/run.py": _RUN, "model/loss.py": "class Score:\n    def forward(self, a, b):\n        return (a - b).abs().mean()\n",
        "train.py": "from utils.run import train_epoch\nfrom model.loss import Score\n"
                    "def main(model, loader, opt, device):\n    train_epoch(model, loader, Score(), opt, device)\n",
    }),
]
FIND += [
    Shape("TW103", "a criterion built from a torch loss class, called through forward", d("""
        import torch.nn as nn
        criterion = nn.MSELoss()
        def step(model, x, y):
            return criterion.forward(model(x), y)
    """), 4),
]

# ------------------------------------------------------------- TW203 loaders a second helper returns again
# An image-translation utilities module: one helper builds a loader from a folder, another calls it
# for every split and returns them all to the training script, which moves the images to the GPU.
_UTILS = d("""
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    def loader_from_folder(folder, batch_size, train, num_workers=4):
        tf = transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor()])
        return DataLoader(datasets.ImageFolder(folder, tf), batch_size=batch_size, shuffle=train,
                          num_workers=num_workers)
    def get_all_data_loaders(conf):
        train_a = loader_from_folder(conf["train_a"], conf["batch_size"], True)
        train_b = loader_from_folder(conf["train_b"], conf["batch_size"], True)
        return train_a, train_b
""")
_TRAIN = d("""
    from utils import get_all_data_loaders
    def main(conf, trainer):
        trainer.cuda()
        loader_a, loader_b = get_all_data_loaders(conf)
        for a, b in zip(loader_a, loader_b):
            trainer.update(a.cuda(), b.cuda())
""")
PROJECTS += [
    ProjectShape("TW203", "translation GAN: a loader helper whose loaders another helper returns to the GPU script", {
        "utils.py": _UTILS, "train.py": _TRAIN,
    }, (("utils.py", 5),)),
    ProjectShape("TW203", "look-alike: the same helpers in a project that never names CUDA", {
        "utils.py": _UTILS, "train.py": _TRAIN.replace("trainer.cuda()", "trainer.cpu()").replace(".cuda()", ""),
    }),
]

# ------------------------------------------------------------- TW203 a settings dict with pinning off, splatted
# Out-of-distribution training: a settings module builds `kwargs = {'pin_memory': False, ...}` and
# the loaders splat it; the training script star-imports the module and moves every batch.
_COMMON = d("""
    import torch
    from torch.utils.data import DataLoader
    from datasets import get_dataset
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set, test_set = get_dataset()
    kwargs = {'pin_memory': False, 'num_workers': 4}
    train_loader = DataLoader(train_set, shuffle=True, batch_size=128, **kwargs)
    test_loader = DataLoader(test_set, shuffle=False, batch_size=256, **kwargs)
""")
_MAIN = d("""
    from common.train import *
    for epoch in range(100):
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            model(x).backward()
""")
PROJECTS += [
    ProjectShape("TW203", "a settings module splats pin_memory=False into loaders a star-importing script trains on", {
        "common/train.py": _COMMON, "train.py": _MAIN, "datasets.py": "def get_dataset():\n    return [], []\n",
    }, (("common/train.py", 6),)),
    ProjectShape("TW203", "look-alike: the settings give their reason for pin_memory=False", {
        "common/train.py": _COMMON.replace("kwargs = {", "# pin_memory off: the datasets already live on the GPU\nkwargs = {"),
        "train.py": _MAIN, "datasets.py": "def get_dataset():\n    return [], []\n",
    }),
]
FIND += [
    Shape("TW203", "a training function splats local loader settings with pinning off", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set, val_set, epochs):
            model.cuda()
            loader_kw = dict(batch_size=64, num_workers=4, pin_memory=False)
            train_loader = DataLoader(train_set, shuffle=True, **loader_kw)
            val_loader = DataLoader(val_set, **loader_kw)
            for epoch in range(epochs):
                for x, y in train_loader:
                    model(x.cuda()).backward()
                for x, y in val_loader:
                    model(x.cuda())
    """), 5),
]
QUIET += [
    Shape("TW203", "look-alike: settings chosen by a condition, the GPU side pinned", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, train_set, use_cuda):
            kwargs = {'num_workers': 1, 'pin_memory': False}
            if use_cuda:
                kwargs = {'num_workers': 1, 'pin_memory': True}
            loader = DataLoader(train_set, batch_size=64, **kwargs)
            for x, y in loader:
                model(x.cuda())
    """)),
]

# ------------------------------------------------------------- TW203 a loader handed to another module's training function
_RUN_MODEL = d("""
    from utilities.device import get_device
    def train_epoch(epoch, model, loader, loss_fn, opt):
        model.train()
        for batch in loader:
            x = batch[0].to(get_device())
            y = batch[1].to(get_device())
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_DEVICE = d("""
    import torch
    def get_device():
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
""")
_MUSIC = d("""
    from torch.utils.data import DataLoader
    from utilities.run_model import train_epoch
    def main(args, train_set, model, loss_fn, opt):
        train_loader = DataLoader(train_set, batch_size=args.batch_size, num_workers=args.workers, shuffle=True)
        for epoch in range(args.epochs):
            train_epoch(epoch, model, train_loader, loss_fn, opt)
""")
PROJECTS += [
    ProjectShape("TW203", "music transformer: the loader goes to train_epoch of a utilities module that moves its batches", {
        "utilities/run_model.py": _RUN_MODEL, "utilities/device.py": _DEVICE, "train.py": _MUSIC,
    }, (("train.py", 4),)),
    ProjectShape("TW203", "look-alike: the other module's function keeps the batches on the host", {
        "utilities/run_model.py": _RUN_MODEL.replace(".to(get_device())", ".float()"),
        "utilities/device.py": _DEVICE, "train.py": _MUSIC,
    }),
]

# ------------------------------------------------------------- TW203 loaders a base class keeps for its subclass
# A processor framework: the base class builds the loaders into self.data_loader; the recognition
# processor (another module) derives from it and runs the loop that moves batches to self.dev.
_PROCESSOR = d("""
    import torch
    class Processor:
        def __init__(self, arg):
            self.arg = arg
            self.load_data()
        def load_data(self):
            self.data_loader = dict()
            self.data_loader['train'] = torch.utils.data.DataLoader(
                dataset=self.arg.feeder, batch_size=self.arg.batch_size, shuffle=True, num_workers=4)
""")
_RECOGNITION = d("""
    from .processor import Processor
    class RecognitionProcessor(Processor):
        def train(self):
            for data, label in self.data_loader['train']:
                data = data.float().to(self.dev)
                label = label.long().to(self.dev)
                self.model(data).backward()
""")
_IO = d("""
    class IO:
        def init_environment(self):
            self.dev = "cuda:0"
""")
PROJECTS += [
    ProjectShape("TW203", "skeleton action recognition: a base processor's loaders, trained on by a subclass", {
        "processor/processor.py": _PROCESSOR, "processor/recognition.py": _RECOGNITION, "processor/io.py": _IO,
    }, (("processor/processor.py", 8),)),
    ProjectShape("TW203", "look-alike: the subclass only counts the samples", {
        "processor/processor.py": _PROCESSOR,
        "processor/recognition.py": _RECOGNITION.replace("data = data.float().to(self.dev)", "data = data.float()")
                                                .replace("label = label.long().to(self.dev)", "label = label.long()"),
        "processor/io.py": _IO,
    }),
]

# ------------------------------------------------------------- TW202 a dataset class's splits method, and one-batch loaders
# Keyword spotting: `train_set, dev_set, test_set = model.SpeechDataset.splits(config)` (a
# classmethod of a dataset that loads and augments audio per item); the test loader takes the whole
# split as one batch, which a single worker would load alone.
_SPEECH = d("""
    import librosa
    import torch.utils.data as data
    class SpeechDataset(data.Dataset):
        def __init__(self, files, config):
            self.files, self.config = files, config
        @classmethod
        def splits(cls, config):
            return cls(config["train"], config), cls(config["dev"], config), cls(config["test"], config)
        def __len__(self):
            return len(self.files)
        def __getitem__(self, i):
            audio, _ = librosa.load(self.files[i], sr=16000)
            return audio, 0
""")
_KWS = d("""
    import torch.utils.data as data
    from . import model as mod
    def train(config, net):
        train_set, dev_set, test_set = mod.SpeechDataset.splits(config)
        train_loader = data.DataLoader(train_set, batch_size=64, shuffle=True)
        test_loader = data.DataLoader(test_set, batch_size=len(test_set))
        for x, y in train_loader:
            net(x).sum().backward()
        for x, y in test_loader:
            net(x)
""")
PROJECTS += [
    ProjectShape("TW202", "keyword spotting: datasets made by a classmethod of a decoding dataset class", {
        "kws/model.py": _SPEECH, "kws/train.py": _KWS,
    }, (("kws/train.py", 5),)),
]
QUIET += [
    Shape("TW202", "look-alike: the whole test split as one batch", d("""
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        test_set = datasets.MNIST("data", train=False, transform=transforms.ToTensor())
        test_loader = DataLoader(test_set, batch_size=len(test_set))
        for x, y in test_loader:
            print(x.shape)
    """)),
]

# ------------------------------------------------------------- false classes: TW102, TW109, TW508
QUIET += [
    Shape("TW102", "look-alike: negated nll_loss of probabilities picks each target's probability", d("""
        import torch
        import torch.nn.functional as F
        def target_margin(logits, targets):
            conf = torch.softmax(logits, dim=1)
            conf_t = -F.nll_loss(conf, targets, reduction='none')
            return (conf - conf_t.view(-1, 1)).max(1)[0]
    """)),
    Shape("TW109", "look-alike: freeze_bn(enable=False) switches requires_grad with the same flag", d("""
        import torch.nn as nn
        class Detector(nn.Module):
            def train(self, mode=True):
                super().train(mode)
                self.freeze_bn()
            def freeze_bn(self, enable=False):
                for module in self.modules():
                    if isinstance(module, nn.BatchNorm2d):
                        module.train() if enable else module.eval()
                        module.weight.requires_grad = enable
                        module.bias.requires_grad = enable
    """)),
    Shape("TW508", "look-alike: the detectors' log_sum_exp shifts by the maximum of x.data", d("""
        import torch
        def log_sum_exp(x):
            x_max = x.data.max()
            return torch.log(torch.sum(torch.exp(x - x_max), 1, keepdim=True)) + x_max
    """)),
]
