"""The recall corpus, round 14 part B (issue 22): the data rules (TW202, TW203, TW204, TW406) and the
API rules (TW220, TW501, TW111, TW116) on the classes sets 17 and 18 showed - each written in our
own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW220 apex amp's other entry points
# Clipping the fp32 master copies apex keeps, and apex's loss-scaler state in the checkpoint.
FIND += [
    Shape("TW220", "a TTS trainer clips apex's master parameters after scale_loss", d("""
        from apex import amp
        import commons
        def train_step(model, optimizer, loss):
            with amp.scale_loss(loss, optimizer) as scaled:
                scaled.backward()
            norm = commons.clip_grad_value_(amp.master_params(optimizer), 5)
            optimizer.step()
            return norm
    """), 6),
    Shape("TW220", "self-supervised pre-training saves apex's state beside the model", d("""
        import apex
        import torch
        def save(model, optimizer, epoch, use_fp16):
            state = {"epoch": epoch, "model": model.state_dict()}
            if use_fp16:
                state["amp"] = apex.amp.state_dict()
            torch.save(state, "ckpt.pth")
    """), 6),
    Shape("TW220", "resuming restores apex's loss scale", d("""
        from apex import amp
        def resume(ckpt, model, optimizer):
            model.load_state_dict(ckpt["model"])
            amp.load_state_dict(ckpt["amp"])
    """), 4),
]
QUIET += [
    Shape("TW220", "look-alike: a project module named amp with its own state_dict", d("""
        import amp
        def save(state):
            state["amp"] = amp.state_dict()
            return state
    """)),
    Shape("TW220", "look-alike: the native scaler's state in the checkpoint", d("""
        import torch
        scaler = torch.amp.GradScaler("cuda")
        def save(model):
            return {"model": model.state_dict(), "scaler": scaler.state_dict()}
    """)),
]

# ------------------------------------------------------------- TW501 zero_gradients and torch._six
FIND += [
    Shape("TW501", "a distillation loss imports the removed gradcheck helper", d("""
        import torch
        from torch.autograd.gradcheck import zero_gradients
        def attack(model, img, steps):
            for _ in range(steps):
                zero_gradients(img)
                model(img).sum().backward()
    """), 2),
    Shape("TW501", "a vendored collate imports the Python 2 names of torch._six", d("""
        import collections
        import torch
        from torch._six import string_classes, int_classes
        def collate(batch):
            if isinstance(batch[0], string_classes):
                return batch
            return torch.stack(batch)
    """), 3),
]
QUIET += [
    Shape("TW501", "look-alike: torch._six tried first, the current name as the fallback", d("""
        try:
            from torch._six import inf
        except ImportError:
            from torch import inf
        def clip(grads, max_norm, norm_type=2):
            return max_norm if norm_type == inf else norm_type
    """)),
    Shape("TW501", "look-alike: a bare except around the old import", d("""
        try:
            from torch._six import container_abcs
        except:
            import collections.abc as container_abcs
    """)),
]

# ------------------------------------------------------------- TW111 a bias the module makes with two dimensions
QUIET += [
    Shape("TW111", "look-alike: a tabular tokenizer's per-feature bias matrix, initialised like its weight", d("""
        import math
        import torch.nn as nn
        import torch.nn.init as nn_init
        from torch import Tensor
        class Tokenizer(nn.Module):
            def __init__(self, d_numerical, d_token, bias):
                super().__init__()
                self.weight = nn.Parameter(Tensor(d_numerical + 1, d_token))
                self.bias = nn.Parameter(Tensor(d_numerical, d_token)) if bias else None
                nn_init.kaiming_uniform_(self.weight, a=math.sqrt(5))
                if self.bias is not None:
                    nn_init.kaiming_uniform_(self.bias, a=math.sqrt(5))
    """)),
    Shape("TW111", "look-alike: a positional bias made with torch.zeros of a shape tuple", d("""
        import torch
        import torch.nn as nn
        class RelBias(nn.Module):
            def __init__(self, heads, length):
                super().__init__()
                self.bias = nn.Parameter(torch.zeros((heads, length)))
                nn.init.xavier_uniform_(self.bias)
    """)),
]

# ------------------------------------------------------------- TW116 the keys of a live wrapper's own state dict
QUIET += [
    Shape("TW116", "look-alike: SWA weights copied out of an AveragedModel (annotated parameter)", d("""
        from copy import deepcopy
        import torch.nn as nn
        from torch import optim
        def load_swa_weights(model: nn.Module, swa_model: optim.swa_utils.AveragedModel):
            state = deepcopy(swa_model.state_dict())
            del state["n_averaged"]
            model.load_state_dict({k[len("module."):]: v for k, v in state.items()})
    """)),
    Shape("TW116", "look-alike: the state of a DataParallel built unconditionally in the function", d("""
        import torch
        import torch.nn as nn
        def export(net, path):
            wrapped = nn.DataParallel(net)
            torch.save({k[7:]: v for k, v in wrapped.state_dict().items()}, path)
    """)),
]

# ------------------------------------------------------------- TW204 a loader parameter not named for a loader
# A detector's epoch function in a utils module takes the loaders as `gen` and `gen_val`; the
# script builds both with pin_memory=True and hands them in by position.
_FIT = d("""
    import torch
    def fit_one_epoch(model, optimizer, epoch, gen, gen_val, cuda):
        for it, batch in enumerate(gen):
            images, targets = batch[0], batch[1]
            with torch.no_grad():
                if cuda:
                    images = images.cuda()
                    targets = [t.cuda() for t in targets]
            optimizer.zero_grad()
            model(images, targets).backward()
            optimizer.step()
""")
_FIT_TRAIN = d("""
    from torch.utils.data import DataLoader
    from utils.fit import fit_one_epoch
    gen = DataLoader(train_set, batch_size=16, num_workers=4, pin_memory=True, shuffle=True)
    gen_val = DataLoader(val_set, batch_size=16, num_workers=4, pin_memory=True)
    for epoch in range(100):
        fit_one_epoch(model, optimizer, epoch, gen, gen_val, True)
""")
PROJECTS += [
    ProjectShape("TW204", "detector training: pinned loaders handed to fit_one_epoch(..., gen, gen_val, ...) of a utils module", {
        "utils/fit.py": _FIT, "train.py": _FIT_TRAIN,
    }, (("utils/fit.py", 7), ("utils/fit.py", 8))),
    ProjectShape("TW204", "look-alike: the same epoch function fed loaders built without pinning", {
        "utils/fit.py": _FIT, "train.py": _FIT_TRAIN.replace("pin_memory=True", "pin_memory=False"),
    }),
]

# ------------------------------------------------------------- TW203 pin_memory = False as a config tree's default
# yacs-style defaults module: config.train.dataloader.pin_memory = False, read by the loader
# factory as pin_memory=config.train.dataloader.pin_memory; batches go to the GPU.
_DEFAULTS = d("""
    from yacs.config import CfgNode as ConfigNode
    config = ConfigNode()
    config.device = "cuda"
    config.train = ConfigNode()
    config.train.batch_size = 128
    config.train.dataloader = ConfigNode()
    config.train.dataloader.num_workers = 2
    config.train.dataloader.pin_memory = False
    config.test = ConfigNode()
    config.test.dataloader = ConfigNode()
    config.test.dataloader.num_workers = 2
    config.test.dataloader.pin_memory = False
    def get_default_config():
        return config.clone()
""")
_FACTORY = d("""
    import torch
    from torch.utils.data import DataLoader
    def create_dataloader(config, dataset, is_train):
        if is_train:
            return DataLoader(dataset, batch_size=config.train.batch_size,
                              num_workers=config.train.dataloader.num_workers,
                              pin_memory=config.train.dataloader.pin_memory, shuffle=True)
        return DataLoader(dataset, batch_size=256, num_workers=config.test.dataloader.num_workers,
                          pin_memory=config.test.dataloader.pin_memory)
""")
_EVALUATE = d("""
    import torch
    from classify.defaults import get_default_config
    from classify.loaders import create_dataloader
    def evaluate(model, dataset):
        config = get_default_config()
        device = torch.device(config.device)
        loader = create_dataloader(config, dataset, is_train=False)
        with torch.no_grad():
            for data, targets in loader:
                data = data.to(device)
                targets = targets.to(device)
                model(data)
""")
PROJECTS += [
    ProjectShape("TW203", "image classification: a yacs defaults module leaves both loaders unpinned; batches go to cuda", {
        "classify/defaults.py": _DEFAULTS, "classify/loaders.py": _FACTORY, "evaluate.py": _EVALUATE,
    }, (("classify/defaults.py", 8), ("classify/defaults.py", 12))),
    ProjectShape("TW203", "look-alike: the defaults turn pinning off only when no GPU is there", {
        "classify/defaults.py": _DEFAULTS.replace("config.train.dataloader.pin_memory = False", "config.train.dataloader.pin_memory = True")
        .replace("config.test.dataloader.pin_memory = False", "if not torch.cuda.is_available():\n"
                 "    config.test.dataloader.pin_memory = False").replace("from yacs", "import torch\nfrom yacs"),
        "classify/loaders.py": _FACTORY, "evaluate.py": _EVALUATE,
    }),
    ProjectShape("TW203", "look-alike: a default of False that the loaders never read", {
        "classify/defaults.py": _DEFAULTS, "classify/loaders.py": _FACTORY.replace("config.train.dataloader.pin_memory", "True")
        .replace("config.test.dataloader.pin_memory", "True"), "evaluate.py": _EVALUATE,
    }),
    # the copies of a loader pinned only by a setting whose default is False: TW203 reports the default
    ProjectShape("TW204", "look-alike: the evaluation copies of a loader the config leaves unpinned by default", {
        "classify/defaults.py": _DEFAULTS, "classify/loaders.py": _FACTORY, "evaluate.py": _EVALUATE,
    }),
]

# ------------------------------------------------------------- TW202/TW203 a helper's **kwargs no caller fills
# A VAE project's get_dataloaders(name, ..., **kwargs) hands its kwargs to DataLoader; the
# training and evaluation scripts pass batch sizes only. Image datasets decode each item.
_VAE_DATA = d("""
    import torch
    from torch.utils.data import DataLoader
    from torchvision import transforms, datasets
    def get_dataloaders(name, root, shuffle=True, batch_size=128, **kwargs):
        dataset = datasets.ImageFolder(root, transform=transforms.ToTensor())
        return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, **kwargs)
""")
_VAE_MAIN = d("""
    import torch
    from utils.data import get_dataloaders
    def main(args):
        device = torch.device("cuda")
        train_loader = get_dataloaders(args.dataset, args.root, batch_size=args.batch_size)
        test_loader = get_dataloaders(args.dataset, args.root, shuffle=False, batch_size=1000)
        for epoch in range(args.epochs):
            for x, _ in train_loader:
                x = x.to(device)
                train_step(x)
""")
PROJECTS += [
    ProjectShape("TW202", "VAE training: a loader helper's **kwargs that no script fills with num_workers", {
        "utils/data.py": _VAE_DATA, "main.py": _VAE_MAIN,
    }, (("utils/data.py", 6),)),
    ProjectShape("TW203", "VAE training: a loader helper's **kwargs that no script fills with pin_memory", {
        "utils/data.py": _VAE_DATA, "main.py": _VAE_MAIN,
    }, (("utils/data.py", 6),)),
    ProjectShape("TW202", "look-alike: one caller passes num_workers through the helper", {
        "utils/data.py": _VAE_DATA, "main.py": _VAE_MAIN.replace("batch_size=1000)", "batch_size=1000, num_workers=4)"),
    }),
    ProjectShape("TW203", "look-alike: a caller splats settings the helper cannot see into", {
        "utils/data.py": _VAE_DATA, "main.py": _VAE_MAIN.replace("batch_size=args.batch_size)", "**args.loader)"),
    }),
    ProjectShape("TW203", "look-alike: the helper changes its kwargs before handing them on", {
        "utils/data.py": _VAE_DATA.replace("    return DataLoader", "    kwargs.setdefault('pin_memory', True)\n    return DataLoader"),
        "main.py": _VAE_MAIN,
    }),
]
QUIET += [
    Shape("TW203", "look-alike: a loader helper of a library module whose callers are not in view", d("""
        import torch
        from torch.utils.data import DataLoader
        device = torch.device("cuda")
        def make_loader(dataset, batch_size, **kwargs):
            return DataLoader(dataset, batch_size=batch_size, **kwargs)
    """)),
]

# ------------------------------------------------------------- TW203/TW406 the loader class as a helper's parameter
# Audio enhancement: distrib.loader(dataset, *args, shuffle=False, klass=DataLoader, **kwargs)
# builds the loader with klass(...) - with a DistributedSampler when training on several
# processes - and the solver only sets data_loader.epoch, an attribute the loader ignores.
_DISTRIB = d("""
    import torch
    from torch.utils.data import DataLoader, Subset
    from torch.utils.data.distributed import DistributedSampler
    rank, world_size = 0, 1
    def loader(dataset, *args, shuffle=False, klass=DataLoader, **kwargs):
        if world_size == 1:
            return klass(dataset, *args, shuffle=shuffle, **kwargs)
        if shuffle:
            sampler = DistributedSampler(dataset)
            return klass(dataset, *args, **kwargs, sampler=sampler)
        dataset = Subset(dataset, list(range(rank, len(dataset), world_size)))
        return klass(dataset, *args, shuffle=shuffle)
""")
_SOLVER = d("""
    import torch
    import distrib
    def train(args, model, optimizer, tr_dataset):
        tr_loader = distrib.loader(tr_dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
        for epoch in range(args.epochs):
            tr_loader.epoch = epoch
            for noisy, clean in tr_loader:
                noisy, clean = noisy.to(args.device), clean.to(args.device)
                loss = model(noisy, clean)
                loss.backward()
                optimizer.step()
    if __name__ == "__main__":
        args = parse()
        args.device = "cuda"
        train(args, build(args), make_optimizer(args), make_dataset(args))
""")
PROJECTS += [
    ProjectShape("TW203", "speech enhancement: klass(...) of def loader(..., klass=DataLoader, **kwargs), no caller pins", {
        "distrib.py": _DISTRIB, "solver.py": _SOLVER,
    }, (("distrib.py", 7), ("distrib.py", 10), ("distrib.py", 12))),
    ProjectShape("TW406", "speech enhancement: the helper's DistributedSampler; the solver sets loader.epoch, never set_epoch", {
        "distrib.py": _DISTRIB, "solver.py": _SOLVER,
    }, (("distrib.py", 9),)),
    ProjectShape("TW203", "look-alike: a caller hands in its own loader class", {
        "distrib.py": _DISTRIB, "solver.py": _SOLVER.replace("shuffle=True, num_workers", "shuffle=True, klass=PrefetchLoader, num_workers"),
    }),
    ProjectShape("TW406", "look-alike: the solver sets the sampler's epoch", {
        "distrib.py": _DISTRIB, "solver.py": _SOLVER.replace("tr_loader.epoch = epoch", "tr_loader.sampler.set_epoch(epoch)"),
    }),
]

# ------------------------------------------------------------- TW406 a data module's sampler, no set_epoch anywhere
_LOADERS = d("""
    import torch
    import torch.distributed as dist
    def create_dataloader(config, train_dataset, test_dataset, is_train):
        if is_train:
            if dist.is_initialized():
                sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
            else:
                sampler = torch.utils.data.RandomSampler(train_dataset)
            batch_sampler = torch.utils.data.BatchSampler(sampler, batch_size=config.batch_size, drop_last=True)
            return torch.utils.data.DataLoader(train_dataset, batch_sampler=batch_sampler, num_workers=4, pin_memory=True)
        else:
            sampler = torch.utils.data.distributed.DistributedSampler(test_dataset)
            return torch.utils.data.DataLoader(test_dataset, sampler=sampler, num_workers=4, pin_memory=True)
""")
_TRAIN = d("""
    from data.loaders import create_dataloader
    def main(config):
        train_loader = create_dataloader(config, train_set, test_set, is_train=True)
        for epoch, seed in enumerate(config.epoch_seeds):
            train(epoch, model, train_loader)
""")
PROJECTS += [
    ProjectShape("TW406", "image classification: the loader factory's sampler; the training script never sets its epoch", {
        "data/loaders.py": _LOADERS, "train.py": _TRAIN,
    }, (("data/loaders.py", 6),)),
    ProjectShape("TW406", "look-alike: the script trains under Lightning, which sets the epoch itself", {
        "data/loaders.py": _LOADERS, "train.py": "import pytorch_lightning as pl\n" + _TRAIN,
    }),
    ProjectShape("TW406", "look-alike: the script sets the epoch through the loader's batch sampler", {
        "data/loaders.py": _LOADERS,
        "train.py": _TRAIN.replace("        train(", "        train_loader.batch_sampler.sampler.set_epoch(epoch)\n        train("),
    }),
    ProjectShape("TW406", "look-alike: the sampler goes to the project's own batch iterator, which reshuffles by its seed", {
        "data/loaders.py": d("""
            import torch
            from torch.utils.data import BatchSampler, DistributedSampler
            import iterators
            def build(data, batch_size):
                sampler = DistributedSampler(data)
                sampler = BatchSampler(sampler, batch_size, True)
                return iterators.EpochBatchIterator(data, collate, sampler)
        """),
        "train.py": _TRAIN,
    }),
]

# ------------------------------------------------------------- TW203 batches turned into NumPy by the function they go to
# Volume segmentation evaluation: each volume goes to test_single_volume (imported from the
# project's utils), which turns it into NumPy first and copies each resized slice on its own.
_VOLUME_UTILS = d("""
    import numpy as np
    import torch
    from scipy.ndimage import zoom
    def test_single_volume(image, label, net, classes, patch_size=(224, 224), case=None):
        image, label = image.squeeze(0).cpu().detach().numpy(), label.squeeze(0).cpu().detach().numpy()
        prediction = np.zeros_like(label)
        for ind in range(image.shape[0]):
            sl = zoom(image[ind], (patch_size[0] / image.shape[1], patch_size[1] / image.shape[2]), order=3)
            x = torch.from_numpy(sl).unsqueeze(0).unsqueeze(0).float().cuda()
            with torch.no_grad():
                prediction[ind] = torch.argmax(net(x), dim=1).squeeze(0).cpu().numpy()
        return [(prediction == i).sum() for i in range(1, classes)]
""")
_VOLUME_TEST = d("""
    import logging
    import numpy as np
    import torch
    from torch.utils.data import DataLoader
    from utils import test_single_volume
    def inference(args, model):
        db_test = args.Dataset(base_dir=args.volume_path, split="test_vol")
        testloader = DataLoader(db_test, batch_size=1, shuffle=False, num_workers=1)
        model.eval()
        metric_list = 0.0
        for i_batch, sampled_batch in enumerate(testloader):
            h, w = sampled_batch["image"].size()[2:]
            image, label, case_name = sampled_batch["image"], sampled_batch["label"], sampled_batch["case_name"][0]
            metric_i = test_single_volume(image, label, model, classes=args.num_classes, case=case_name)
            metric_list += np.array(metric_i)
            logging.info("case %s dice %f", case_name, np.mean(metric_i))
        return metric_list
    if __name__ == "__main__":
        net = build().cuda()
        inference(parse(), net)
""")
PROJECTS += [
    ProjectShape("TW203", "look-alike: each test volume goes to a utils function that turns it into NumPy first", {
        "utils.py": _VOLUME_UTILS, "test.py": _VOLUME_TEST,
    }),
    ProjectShape("TW203", "the same loop when the function moves the volume to the GPU as it is", {
        "utils.py": _VOLUME_UTILS.replace("image, label = image.squeeze(0).cpu().detach().numpy(), label",
                                          "image = image.cuda()\n    label"),
        "test.py": _VOLUME_TEST,
    }, (("test.py", 8),)),
]
