"""The recall corpus, round 16 part C: classes the sets 21 and 22 (tuning sets of round 16) showed
for the data loaders (TW202, TW203, TW204, TW406) and the deprecated or removed APIs (TW501,
TW502) - reported where the advice does not apply, or missed - each written in our own words and
reduced to its shape, with look-alikes. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW502 scales first in a matrix product
# Re-identification code computes squared distances as |x|^2 + |y|^2 - 2 x y^T with the old
# overload of addmm_ that takes beta and alpha before the matrices; it warns on every call.
FIND += [
    Shape("TW502", "beta and alpha before the matrices of an in-place addmm_", d("""
        import torch
        def pairwise(a, b):
            n, m = a.size(0), b.size(0)
            out = a.pow(2).sum(1, keepdim=True).expand(n, m) + b.pow(2).sum(1, keepdim=True).expand(m, n).t()
            out.addmm_(1, -2, a, b.t())
            return out
    """), 5),
    Shape("TW502", "beta alone before the matrices", d("""
        import torch
        def scores(q, g, base):
            base.addmm_(0.5, q, g.t())
            return base
    """), 3),
    Shape("TW502", "the function form with beta, input and alpha first", d("""
        import torch
        def affine(bias, w, x):
            return torch.addmm(1, bias, 1, x, w.t())
    """), 3),
    Shape("TW502", "a batched product with the scales first", d("""
        import torch
        def attend(acc, q, k):
            return acc.baddbmm(0, 1.0, q, k.transpose(1, 2))
    """), 3),
    Shape("TW502", "the allocator's cached memory under its old name", d("""
        import torch
        def log_memory(logger):
            logger.info("cached %.1f MB", torch.cuda.memory_cached() / 2 ** 20)
    """), 3),
]
QUIET += [
    Shape("TW502", "look-alike: addmm_ with beta and alpha by keyword", d("""
        import torch
        def pairwise(a, b, out):
            out.addmm_(a, b.t(), beta=1, alpha=-2)
            return torch.addmm(out, a, b.t(), alpha=-2)
    """)),
    Shape("TW502", "look-alike: a project's accumulator with an addmm method of three arguments", d("""
        import torch
        class Sketch:
            def addmm(self, key, left, right):
                self.parts[key] = (left, right)
        def fill(s, names, xs, ys):
            for name, x, y in zip(names, xs, ys):
                s.addmm(name, x, y)
    """)),
    Shape("TW502", "look-alike: the current allocator statistics", d("""
        import torch
        def log_memory(logger):
            logger.info("reserved %.1f MB", torch.cuda.memory_reserved() / 2 ** 20)
    """)),
]

# ------------------------------------------------------------- TW501 torchvision's deleted transforms
# Certification code built its ImageNet pipeline with the transform names of torchvision 0.1.
FIND += [
    Shape("TW501", "RandomSizedCrop in a training pipeline", d("""
        from torchvision import transforms
        train_tf = transforms.Compose([transforms.RandomSizedCrop(224), transforms.ToTensor()])
    """), 2),
    Shape("TW501", "Scale through an aliased module in a test pipeline", d("""
        import torchvision.transforms as T
        def test_pipeline(size):
            return T.Compose([T.Scale(size), T.CenterCrop(224), T.ToTensor()])
    """), 3),
    Shape("TW501", "Scale imported by name", d("""
        from torchvision.transforms import Scale, ToTensor
        resize = Scale(128)
    """), 1),
]
QUIET += [
    Shape("TW501", "look-alike: the project's own Scale transform", d("""
        import torch
        from torchvision import transforms
        class Scale:
            def __init__(self, factor):
                self.factor = factor
            def __call__(self, x):
                return x * self.factor
        tf = transforms.Compose([transforms.ToTensor(), Scale(2.0)])
    """)),
    Shape("TW501", "look-alike: Scale of a project module named transforms", d("""
        import transforms
        tf = transforms.Compose([transforms.Scale(256), transforms.RandomSizedCrop(224)])
    """)),
    Shape("TW501", "look-alike: the current names", d("""
        from torchvision import transforms
        tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.Resize(256)])
    """)),
]

# ------------------------------------------------------------- TW203 a loader handed to a looping function of the file
# A chatbot's train() builds its loaders and hands them to train_epoch()/validate_epoch() of the
# same file, whose loops move every batch to args.device; main() chose cuda when it is there. A
# medical-imaging script's main() does the same with train(model, loader, ..., device).
FIND += [
    Shape("TW203", "loader built in train() and handed to an epoch function that moves each batch", d("""
        import torch
        from torch.utils.data import DataLoader
        def train_epoch(model, loader, optimizer, args):
            for ids, labels in loader:
                ids, labels = ids.to(args.device), labels.to(args.device)
                loss = model(ids, labels=labels).loss
                loss.backward()
                optimizer.step()
        def train(model, train_set, args):
            train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=4)
            optimizer = torch.optim.Adam(model.parameters())
            for epoch in range(args.epochs):
                train_epoch(model, train_loader, optimizer, args)
        def main(args, model, train_set):
            args.device = "cuda:0" if torch.cuda.is_available() else "cpu"
            train(model.to(args.device), train_set, args)
    """), 10),
    Shape("TW203", "loader handed by keyword to an evaluation loop under tqdm", d("""
        import torch
        from tqdm import tqdm
        from torch.utils.data import DataLoader
        def evaluate(model, device, loader=None):
            with torch.no_grad():
                for step, (x, y) in enumerate(tqdm(loader)):
                    out = model(x.to(device))
        def run(model, test_set, args):
            test_loader = DataLoader(test_set, batch_size=64, num_workers=2)
            evaluate(model, args.device, loader=test_loader)
        def main():
            args = parse()
            args.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            run(build().to(args.device), load(), args)
    """), 9),
]
QUIET += [
    Shape("TW203", "look-alike: the function it is handed to loops over it on the CPU, moving nothing", d("""
        import torch
        from torch.utils.data import DataLoader
        def channel_stats(loader):
            total = 0
            for images, _ in loader:
                total += images.mean()
            return total
        def prepare(train_set):
            stats_loader = DataLoader(train_set, batch_size=256, num_workers=4)
            return channel_stats(stats_loader)
        def main():
            model = torch.nn.Linear(3, 3).cuda()
    """)),
    Shape("TW203", "look-alike: the function it is handed to keeps it and moves only the model", d("""
        import torch
        from torch.utils.data import DataLoader
        class Runner:
            def __init__(self, model, loader, device):
                self.model = model.to(device)
                self.loader = loader
        def build(model, ds, device):
            loader = DataLoader(ds, batch_size=32, num_workers=2)
            return Runner(model, loader, device)
        def main():
            build(make(), data(), torch.device("cuda"))
    """)),
    Shape("TW203", "look-alike: a CPU-only script handing its loader to a looping function", d("""
        import torch
        from torch.utils.data import DataLoader
        def fit(model, loader, device):
            for x, y in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
        def main(model, ds):
            device = torch.device("cpu")
            loader = DataLoader(ds, batch_size=32, num_workers=2)
            fit(model, loader, device)
    """)),
]

# ------------------------------------------------------------- TW202 a worker-count option that is 0 by default
# A dialogue model's training script offers --num_workers but defaults it to 0; the loaders take
# the option, so a run with the defaults reads and pads every batch in the main process.
FIND += [
    Shape("TW202", "num_workers from an argparse option whose default is 0", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader
        from dataset import DialogueSet
        parser = argparse.ArgumentParser()
        parser.add_argument("--num_workers", type=int, default=0, help="loader processes")
        parser.add_argument("--batch_size", type=int, default=8)
        def train(args, records):
            loader = DataLoader(DialogueSet(records), batch_size=args.batch_size, shuffle=True,
                                num_workers=args.num_workers, collate_fn=pad_batch)
            for ids in loader:
                pass
    """), 9),
]
QUIET += [
    Shape("TW202", "look-alike: the option defaults to a positive count", d("""
        import argparse
        from torch.utils.data import DataLoader
        from dataset import DialogueSet
        parser = argparse.ArgumentParser()
        parser.add_argument("--workers", type=int, default=4)
        def train(args, records):
            return DataLoader(DialogueSet(records), batch_size=8, num_workers=args.workers)
    """)),
    Shape("TW202", "look-alike: an option defaulting to 0 over in-memory tensors", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        parser = argparse.ArgumentParser()
        parser.add_argument("--workers", type=int, default=0)
        def train(args, x, y):
            return DataLoader(TensorDataset(x, y), batch_size=64, num_workers=args.workers)
    """)),
    Shape("TW202", "look-alike: num_workers=0 written out", d("""
        from torch.utils.data import DataLoader
        from dataset import DialogueSet
        def train(records):
            return DataLoader(DialogueSet(records), batch_size=8, num_workers=0)
    """)),
]

# ------------------------------------------------------------- TW202/TW203 the project's own class DataLoader
# A captioning project defines `class DataLoader(TorchDataLoader)` in its data package (only to
# fix the collate function) and the scripts import that name: its loaders are torch's loaders,
# with the worker count from an option that is 0 by default and no pin_memory.
_CAPTION_DATA = d("""
    from torch.utils.data import DataLoader as TorchDataLoader
    class DataLoader(TorchDataLoader):
        def __init__(self, dataset, *args, **kwargs):
            super().__init__(dataset, *args, collate_fn=dataset.collate_fn(), **kwargs)
""")
_CAPTION_TRAIN = d("""
    import argparse
    import torch
    from data import DataLoader, Captions
    device = torch.device("cuda")
    def train(model, loader, optim):
        for feats, caps in loader:
            feats, caps = feats.to(device), caps.to(device)
            model(feats, caps).backward()
            optim.step()
    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--workers", type=int, default=0)
        args = parser.parse_args()
        loader = DataLoader(Captions("train"), batch_size=50, shuffle=True, num_workers=args.workers)
        train(build().to(device), loader, make_optim())
""")
PROJECTS += [
    ProjectShape("TW203", "the project's DataLoader subclass of torch's, imported under torch's name",
                 {"data/__init__.py": _CAPTION_DATA, "train.py": _CAPTION_TRAIN}, (("train.py", 14),)),
    ProjectShape("TW202", "the same loader with the option's default of 0 workers",
                 {"data/__init__.py": _CAPTION_DATA, "train.py": _CAPTION_TRAIN}, (("train.py", 14),)),
    ProjectShape("TW203", "look-alike: the project's DataLoader subclass pins itself", {
        "data/__init__.py": _CAPTION_DATA.replace("**kwargs)\n", "pin_memory=True, **kwargs)\n"), "train.py": _CAPTION_TRAIN}),
    ProjectShape("TW202", "look-alike: the project's class DataLoader derives from its own base, which sets workers", {
        "data/__init__.py": d("""
            from torch.utils.data import DataLoader as TorchDataLoader
            class BaseDataLoader(TorchDataLoader):
                def __init__(self, dataset, **kwargs):
                    super().__init__(dataset, num_workers=8, **kwargs)
            class DataLoader(BaseDataLoader):
                pass
        """), "train.py": _CAPTION_TRAIN.replace(", num_workers=args.workers", "")}),
]

# ------------------------------------------------------------- TW203 pinned for one dataset only
# A certification project pins memory only when the dataset option is ImageNet; CIFAR-10
# batches go to the same GPU unpinned.
FIND += [
    Shape("TW203", "pin_memory bound to a test of the dataset option", d("""
        import torch
        from torch.utils.data import DataLoader
        def main(args, train_set):
            pin = (args.dataset == "imagenet")
            loader = DataLoader(train_set, batch_size=256, num_workers=4, pin_memory=pin)
            model = build(args).cuda()
            for x, y in loader:
                model(x.cuda()).sum().backward()
    """), 5),
    Shape("TW203", "pin_memory written as membership of the dataset name", d("""
        import torch
        from torch.utils.data import DataLoader
        def main(cfg, train_set):
            loader = DataLoader(train_set, batch_size=64, num_workers=4,
                                pin_memory=cfg.data in ("imagenet", "places"))
            for x, y in loader:
                x = x.cuda()
    """), 4),
]
QUIET += [
    Shape("TW203", "look-alike: pin_memory tied to the device choice", d("""
        import torch
        from torch.utils.data import DataLoader
        def main(args, train_set):
            pin = args.device == "cuda"
            loader = DataLoader(train_set, batch_size=256, num_workers=4, pin_memory=pin)
            for x, y in loader:
                x = x.to(args.device)
    """)),
    Shape("TW203", "look-alike: pin_memory from an accelerator string", d("""
        import torch
        from torch.utils.data import DataLoader
        def main(cfg, train_set):
            loader = DataLoader(train_set, batch_size=256, num_workers=4, pin_memory=cfg.accelerator in ("gpu", "auto"))
            model = build().cuda()
            for x, y in loader:
                model(x.cuda())
    """)),
]

# ------------------------------------------------------------- TW406 a framework imported only to read a config file
# A lane-detection project builds its DistributedSampler in a data module; train.py loops over
# epochs and never calls set_epoch. Its vendored config reader imports mmcv lazily, only to
# parse a YAML file - no mmcv runner drives the loop.
_LANE_DATA = d("""
    import torch
    def get_train_loader(dataset, batch_size, distributed):
        if distributed:
            sampler = torch.utils.data.distributed.DistributedSampler(dataset)
        else:
            sampler = torch.utils.data.RandomSampler(dataset)
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=4)
""")
_LANE_TRAIN = d("""
    from data.dataloader import get_train_loader
    def main(cfg, dataset, net, optimizer):
        loader = get_train_loader(dataset, cfg.batch_size, cfg.distributed)
        for epoch in range(cfg.epochs):
            for images, labels in loader:
                net(images).sum().backward()
                optimizer.step()
""")
_LANE_CONFIG = d("""
    import json
    class Config:
        @staticmethod
        def read(filename):
            if filename.endswith((".yml", ".yaml")):
                import mmcv
                return mmcv.load(filename)
            with open(filename) as f:
                return json.load(f)
""")
PROJECTS += [
    ProjectShape("TW406", "sampler of a data module; the only framework import reads a YAML file",
                 {"data/dataloader.py": _LANE_DATA, "train.py": _LANE_TRAIN, "utils/config.py": _LANE_CONFIG},
                 (("data/dataloader.py", 4),)),
    ProjectShape("TW406", "look-alike: an mmcv runner drives the epochs", {
        "data/dataloader.py": _LANE_DATA, "utils/config.py": _LANE_CONFIG,
        "train.py": "from mmcv.runner import EpochBasedRunner\n" + _LANE_TRAIN}),
    ProjectShape("TW406", "look-alike: Accelerate imported inside the training function", {
        "data/dataloader.py": _LANE_DATA, "utils/config.py": _LANE_CONFIG,
        "train.py": _LANE_TRAIN.replace("def main(cfg, dataset, net, optimizer):\n",
                                        "def main(cfg, dataset, net, optimizer):\n    from accelerate import Accelerator\n")}),
]

# ------------------------------------------------------------- TW203 a TensorDataset of CUDA typed tensors
# A traffic-forecasting project turns its NumPy windows into torch.cuda.FloatTensor when CUDA is
# there and wraps them in a TensorDataset: the batches are slices of device tensors, nothing to pin.
QUIET += [
    Shape("TW203", "look-alike: TensorDataset of tensors made by a CUDA typed class chosen by availability", d("""
        import torch
        def data_loader(X, Y, batch_size, shuffle=True):
            cuda = True if torch.cuda.is_available() else False
            TensorFloat = torch.cuda.FloatTensor if cuda else torch.FloatTensor
            X, Y = TensorFloat(X), TensorFloat(Y)
            data = torch.utils.data.TensorDataset(X, Y)
            return torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=shuffle)
    """)),
    Shape("TW203", "look-alike: TensorDataset of torch.cuda.FloatTensor made in place", d("""
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        def fit(model, x, y):
            ds = TensorDataset(torch.cuda.FloatTensor(x), torch.cuda.LongTensor(y))
            for xb, yb in DataLoader(ds, batch_size=32, shuffle=True):
                model(xb).sum().backward()
    """)),
]

# ------------------------------------------------------------- TW202 a loader in a dataset's one-time process()
# A graph dataset converts torchvision's MNIST into superpixel graphs once, in the process() hook
# that writes its cached file; the loader there runs a single time, not per epoch.
QUIET += [
    Shape("TW202", "look-alike: a loader in process() of an in-memory graph dataset", d("""
        import torch
        from torchvision import datasets, transforms
        from torch_geometric.data import InMemoryDataset
        class PixelGraphs(InMemoryDataset):
            def download(self):
                self.train = datasets.MNIST(self.raw_dir, transform=transforms.ToTensor(), download=True)
            def process(self):
                loader = torch.utils.data.DataLoader(self.train)
                graphs = [to_graph(img) for img, _ in loader]
                torch.save(self.collate(graphs), self.processed_paths[0])
    """)),
]

# ------------------------------------------------------------- TW203 a dataset that streams its own batches
# An inpainting project's dataset has create_iterator(): an endless generator over a loader of
# itself, from which the model's sampling step takes batches with next() and moves them to CUDA.
_STREAM_DATA = d("""
    import torch
    from torch.utils.data import DataLoader
    class MaskedImages(torch.utils.data.Dataset):
        def __getitem__(self, index):
            return self.load(index)
        def create_iterator(self, batch_size):
            while True:
                sample_loader = DataLoader(dataset=self, batch_size=batch_size, drop_last=True)
                for item in sample_loader:
                    yield item
""")
PROJECTS += [
    ProjectShape("TW203", "a dataset method yielding its loader's batches, taken by next() and moved to CUDA", {
        "src/dataset.py": _STREAM_DATA,
        "src/model.py": d("""
            import torch
            class Inpainter:
                def __init__(self, val_set, n):
                    self.samples = val_set.create_iterator(n)
                def sample(self, net):
                    images, masks = (t.cuda() for t in next(self.samples))
                    return net(images, masks)
        """)}, (("src/dataset.py", 8),)),
    ProjectShape("TW203", "look-alike: the same dataset in a project that never names CUDA", {
        "src/dataset.py": _STREAM_DATA,
        "src/model.py": d("""
            class Inpainter:
                def __init__(self, val_set, n):
                    self.samples = val_set.create_iterator(n)
                def sample(self, net):
                    return net(*next(self.samples))
        """)}),
]
