"""The recall corpus, round 12 part B: the data-loading classes (TW202, TW203, TW204) that the
tuning sets 12-14 missed or reported falsely - each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204 a loader kept from the constructor
# A runner or trainer class stores the loader it is given (self.loader = loader) and loops over
# self.loader in its epoch methods; the pinned loaders are built in the main script.
_PINNED_MAIN = d("""
    from torch.utils.data import DataLoader
    from runner import EpochRunner
    def main(model, train_set, val_set, device):
        train_loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
        val_loader = DataLoader(val_set, batch_size=32, num_workers=4, pin_memory=True)
        trainer = EpochRunner(model, train_loader, device)
        evaluator = EpochRunner(model, val_loader, device)
        for epoch in range(10):
            trainer.run_epoch()
            evaluator.run_epoch()
""")
_RUNNER = d("""
    import torch
    class EpochRunner:
        def __init__(self, model, dataloader, device):
            self.model = model
            self.dataloader = dataloader
            self.device = device
        def run_epoch(self):
            total = 0.0
            for features, labels, lengths in self.dataloader:
                labels = labels.to(self.device)
                out = self.model(features.to(self.device), lengths)
                total += float(out.sum())
            return total
""")
_BASE_TRAINER = d("""
    from tqdm import tqdm
    class BaseTrainer:
        def __init__(self, model, train_loader, device):
            self.model = model
            self.train_loader = train_loader
            self.device = device
    class SeqTrainer(BaseTrainer):
        def train_epoch(self):
            progress = tqdm(self.train_loader)
            for step, batch in enumerate(progress):
                batch = [part.to(self.device) for part in batch]
                self.model.step(batch)
""")
PROJECTS += [
    ProjectShape("TW204", "a runner class keeps the loader handed to its constructor; every loader of the project is pinned", {
        "main.py": _PINNED_MAIN, "runner.py": _RUNNER,
    }, (("runner.py", 10), ("runner.py", 11))),
    ProjectShape("TW204", "a base trainer stores the loader, a subclass loops over it through tqdm and copies every part", {
        "trainers.py": _BASE_TRAINER,
        "loaders.py": d("""
            import torch.utils.data as tud
            def make_loader(ds, bs):
                return tud.DataLoader(ds, batch_size=bs, shuffle=True, pin_memory=True)
        """),
        "main.py": d("""
            from loaders import make_loader
            from trainers import SeqTrainer
            SeqTrainer(net, make_loader(ds, 64), "cuda").train_epoch()
        """),
    }, (("trainers.py", 11),)),
    ProjectShape("TW204", "a trainer class chosen by the config, handed a loader pinned from a JSON setting by keyword", {
        "train.py": d("""
            import json
            from torch.utils.data import DataLoader
            from util import build
            def main(config):
                train_loader = DataLoader(build(config["train_set"]), batch_size=config["loader"]["batch_size"],
                                          pin_memory=config["loader"]["pin_memory"])
                val_loader = DataLoader(build(config["val_set"]), batch_size=1)
                trainer_class = build(config["trainer"])
                trainer_class(model=build(config["model"]), train_loader=train_loader, val_loader=val_loader).fit()
        """),
        "trainer/fit.py": d("""
            class Fitter:
                def __init__(self, model, train_loader, val_loader):
                    self.model = model
                    self.device = next(model.parameters()).device
                    self.train_loader = train_loader
                    self.val_loader = val_loader
                def fit(self):
                    for noisy, clean in self.train_loader:
                        noisy = noisy.to(self.device)
                        loss = self.model.loss(noisy, clean.to(self.device))
                    for noisy, clean in self.val_loader:
                        noisy = noisy.to(self.device)
        """),
    }, (("trainer/fit.py", 9), ("trainer/fit.py", 10))),
    ProjectShape("TW204", "look-alike: the project also builds an unpinned loader, and the runner is called positionally", {
        "main.py": _PINNED_MAIN.replace("val_loader = DataLoader(val_set, batch_size=32, num_workers=4, pin_memory=True)",
                                        "val_loader = DataLoader(val_set, batch_size=32, num_workers=4)"),
        "runner.py": _RUNNER,
    }),
    ProjectShape("TW204", "look-alike: the runner's file pins its own helper loader, but main hands in unpinned ones", {
        "main.py": _PINNED_MAIN.replace(", pin_memory=True)", ")"),
        "runner.py": _RUNNER + d("""
            def probe(dataset):
                loader = torch.utils.data.DataLoader(dataset, batch_size=2, pin_memory=True)
                return next(iter(loader))
        """),
    }),
    ProjectShape("TW204", "look-alike: the class builds its own loader object (a prefetcher), not one handed in", {
        "main.py": _PINNED_MAIN,
        "runner.py": _RUNNER.replace("self.dataloader = dataloader", "self.dataloader = Prefetcher(dataloader)"),
    }),
    ProjectShape("TW204", "the runner's copies beside a quiet look-alike: a helper of an imported module that nothing calls", {
        "main.py": _PINNED_MAIN.replace("from runner import EpochRunner", "from runner import EpochRunner\nimport helpers"),
        "runner.py": _RUNNER,
        "helpers.py": d("""
            import torch
            def average_loss(net, loader, criterion, device):
                total = 0.0
                with torch.no_grad():
                    for x, y in loader:
                        total += criterion(net(x.to(device)).cpu(), y)
                return total / len(loader)
        """),
    }, (("runner.py", 10), ("runner.py", 11))),
]

# ------------------------------------------------------------- TW204 loaders of nested set datasets do not count
# A few-shot project: the episode loaders are pinned through a settings dict, while the set
# dataset keeps one unpinned loader per class inside itself (its __getitem__ draws from them).
PROJECTS += [
    ProjectShape("TW204", "few-shot episodes: pinned through a settings dict, per-class loaders nested in the dataset", {
        "data/sets.py": d("""
            import torch
            class EpisodeSet:
                def __init__(self, groups, n_per_class):
                    params = dict(batch_size=n_per_class, shuffle=True, num_workers=0, pin_memory=False)
                    self.loaders = [torch.utils.data.DataLoader(g, **params) for g in groups]
                def __getitem__(self, i):
                    return next(iter(self.loaders[i]))
                def __len__(self):
                    return len(self.loaders)
        """),
        "data/manager.py": d("""
            import torch
            from data.sets import EpisodeSet
            class EpisodeManager:
                def loader(self, groups, sampler):
                    params = dict(batch_sampler=sampler, num_workers=8, pin_memory = True)
                    return torch.utils.data.DataLoader(EpisodeSet(groups, 5), **params)
        """),
        "methods/proto.py": d("""
            class Proto:
                def train_loop(self, epoch, train_loader, optimizer):
                    for i, (x, _) in enumerate(train_loader):
                        x = x.cuda()
                        loss = self.loss(x)
        """),
        "train.py": d("""
            from data.manager import EpisodeManager
            from methods.proto import Proto
            model = Proto()
            for epoch in range(100):
                model.train_loop(epoch, EpisodeManager().loader(groups, sampler), opt)
        """),
    }, (("methods/proto.py", 4),)),
]

# ------------------------------------------------------------- TW204 copies the device helpers do not name
FIND += [
    Shape("TW204", "continual learning: a pinned loader built in a method, the batch copied to self._device()", d("""
        import torch
        from torch.utils.data import DataLoader
        class Learner(torch.nn.Module):
            def _device(self):
                return next(self.parameters()).device
            def estimate_fisher(self, dataset):
                loader = DataLoader(dataset, batch_size=1, pin_memory=True)
                for x, y in loader:
                    x = x.to(self._device())
                    self(x).sum().backward()
    """), 9),
    Shape("TW204", "detection scripts: the pinned batch cast with a CUDA tensor type chosen by a GPU check", d("""
        import torch
        from torch.autograd import Variable
        from torch.utils.data import DataLoader
        def evaluate(model, dataset):
            loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
            Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
            for paths, imgs in loader:
                imgs = Variable(imgs.type(Tensor), requires_grad=False)
                model(imgs)
    """), 8),
]
QUIET += [
    Shape("TW204", "look-alike: a helper named for a dtype, not a device", d("""
        import torch
        from torch.utils.data import DataLoader
        def run(model, dataset):
            loader = DataLoader(dataset, batch_size=8, pin_memory=True)
            for x, y in loader:
                x = x.to(model.compute_dtype())
    """)),
    Shape("TW204", "look-alike: a cast to a host tensor type", d("""
        import torch
        from torch.utils.data import DataLoader
        def run(model, dataset):
            loader = DataLoader(dataset, batch_size=8, pin_memory=True)
            for x, y in loader:
                x = x.type(torch.FloatTensor)
    """)),
    Shape("TW204", "look-alike: self._device() copies from an unpinned loader", d("""
        import torch
        from torch.utils.data import DataLoader
        class Learner(torch.nn.Module):
            def _device(self):
                return next(self.parameters()).device
            def estimate(self, dataset):
                for x, y in DataLoader(dataset, batch_size=1):
                    x = x.to(self._device())
    """)),
]

# ------------------------------------------------------------- TW204 dict batches copied key by key
FIND += [
    Shape("TW204", "depth estimation: every entry of a dict batch copied in a loop over .items()", d("""
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset, batch_size=12, num_workers=8, pin_memory=True)
        for inputs in loader:
            for key, ipt in inputs.items():
                inputs[key] = ipt.cuda()
            outputs = model(inputs)
    """), 6),
    Shape("TW204", "a trainer method given the dict batch by the pinned loop (and by a validation step)", d("""
        from torch.utils.data import DataLoader
        class Trainer:
            def __init__(self, dataset, device):
                self.device = device
                self.loader = DataLoader(dataset, batch_size=12, num_workers=8, pin_memory=True)
                self.val_iter = iter(DataLoader(dataset, batch_size=12))
            def run_epoch(self):
                for batch_idx, inputs in enumerate(self.loader):
                    losses = self.process_batch(inputs)
            def val(self):
                inputs = next(self.val_iter)
                self.process_batch(inputs)
            def process_batch(self, inputs):
                for key, ipt in inputs.items():
                    inputs[key] = ipt.to(self.device)
                return self.model(inputs)
    """), 15),
    Shape("TW204", "a loss method that hands the batch on to forward(), which copies it", d("""
        import torch
        from torch.utils.data import DataLoader
        class Baseline(torch.nn.Module):
            def forward(self, x):
                x = x.cuda()
                return self.classifier(self.feature(x))
            def forward_loss(self, x, y):
                scores = self.forward(x)
                return self.loss_fn(scores, y.cuda(non_blocking=True))
            def train_loop(self, dataset, optimizer):
                for x, y in DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True):
                    loss = self.forward_loss(x, y)
    """), 5),
]
QUIET += [
    Shape("TW204", "look-alike: a loop over the items of the model's own buffers inside the pinned loop", d("""
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset, batch_size=12, num_workers=8, pin_memory=True)
        for inputs in loader:
            inputs = inputs.cuda(non_blocking=True)
            for name, buf in model.extra_buffers.items():
                model.extra_buffers[name] = buf.cuda()
    """)),
    Shape("TW204", "look-alike: a dict batch from an unpinned loader copied key by key", d("""
        from torch.utils.data import DataLoader
        loader = DataLoader(dataset, batch_size=12, num_workers=8)
        for inputs in loader:
            for key, ipt in inputs.items():
                inputs[key] = ipt.cuda()
    """)),
]

# ------------------------------------------------------------- TW204 one iterator per task, kept in a list
FIND += [
    Shape("TW204", "replay of earlier tasks: one iterator over a pinned loader per task, stepped with next()", d("""
        from torch.utils.data import DataLoader
        def train(model, previous, n_steps, device):
            iterators = [None] * len(previous)
            for step in range(n_steps):
                xs = []
                for task in range(len(previous)):
                    if step % 100 == 0:
                        iterators[task] = iter(DataLoader(previous[task], batch_size=32, pin_memory=True))
                    x_t, y_t = next(iterators[task])
                    xs.append(x_t.to(device))
                model.replay(xs)
    """), 10),
]
QUIET += [
    Shape("TW204", "look-alike: the per-task iterators run over unpinned loaders", d("""
        from torch.utils.data import DataLoader
        def train(model, previous, n_steps, device):
            iterators = [iter(DataLoader(p, batch_size=32)) for p in previous]
            for step in range(n_steps):
                for task in range(len(previous)):
                    iterators[task] = iter(DataLoader(previous[task], batch_size=32))
                    x_t, y_t = next(iterators[task])
                    model.replay(x_t.to(device))
    """)),
]

# ------------------------------------------------------------- TW203/TW202 a script's __main__ hands the loader to its training function
# GAN and feature-statistics scripts: the module defines the training (or extraction) function,
# and the __main__ block builds the loader and hands it over; the function moves the batches.
_GAN_SCRIPT = d("""
    import argparse
    import torch
    from torch.utils import data
    from torchvision import transforms
    from dataset import LMDBImages

    def endless(loader):
        while True:
            for batch in loader:
                yield batch

    def train(args, loader, generator, discriminator, device):
        loader = endless(loader)
        for step in range(args.iters):
            real = next(loader).to(device)
            discriminator(real).mean().backward()

    if __name__ == "__main__":
        device = "cuda"
        parser = argparse.ArgumentParser()
        args = parser.parse_args()
        tf = transforms.Compose([transforms.RandomHorizontalFlip(), transforms.ToTensor()])
        dataset = LMDBImages(args.path, tf, args.size)
        loader = data.DataLoader(dataset, batch_size=args.batch, shuffle=True, drop_last=True)
        train(args, loader, None, None, device)
""")
FIND += [
    Shape("TW203", "GAN script: __main__ builds the loader and hands it to the file's train(), which copies to 'cuda'", _GAN_SCRIPT, 24),
    Shape("TW202", "GAN script: __main__ builds the loader over transformed images and hands it to train()", _GAN_SCRIPT, 24),
    Shape("TW203", "feature statistics: __main__ hands the loader to an extraction function that moves each batch", d("""
        import torch
        from torch.utils.data import DataLoader
        from dataset import Images

        @torch.no_grad()
        def extract(loader, net, device):
            feats = []
            for img in loader:
                feats.append(net(img.to(device)).cpu())
            return torch.cat(feats)

        if __name__ == "__main__":
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            net = torch.hub.load("repo", "inception").eval().to(device)
            loader = DataLoader(Images("data"), batch_size=64, num_workers=4)
            stats = extract(loader, net, device).numpy()
    """), 15),
]
QUIET += [
    Shape("TW203", "look-alike: a dataset module's __main__ only prints the shapes of a few batches", d("""
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Clips(Dataset):
            def __getitem__(self, i):
                return torch.load(self.files[i])
            def __len__(self):
                return len(self.files)

        def describe(loader):
            for clip in loader:
                print(clip.shape)

        if __name__ == "__main__":
            device = torch.device("cuda")
            loader = DataLoader(Clips(), batch_size=4)
            describe(loader)
    """)),
]

# ------------------------------------------------------------- TW203 map_location="cpu" is no CPU-only function
# A detection main(): the device comes from a --device option (cuda by default), checkpoints are
# read with map_location="cpu", and the loaders go to an engine function that moves the batches.
FIND += [
    Shape("TW203", "detection main(): a checkpoint read with map_location='cpu' beside loaders handed to the engine", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader
        from engine import train_one_epoch

        def get_parser():
            parser = argparse.ArgumentParser()
            parser.add_argument("--device", default="cuda")
            return parser

        def main(args):
            device = torch.device(args.device)
            model = build_model(args)
            model.to(device)
            if args.resume:
                checkpoint = torch.load(args.resume, map_location="cpu")
                model.load_state_dict(checkpoint["model"])
            loader = DataLoader(build_dataset(args), batch_size=2, collate_fn=collate, num_workers=2)
            for epoch in range(args.epochs):
                train_one_epoch(model, loader, device)
    """), 18),
]
QUIET += [
    Shape("TW203", "look-alike: the function itself runs on the CPU (device = 'cpu')", d("""
        import torch
        from torch.utils.data import DataLoader
        from engine import train_one_epoch

        def main(args):
            device = torch.device("cpu")
            model = build_model(args)
            model.to(device)
            loader = DataLoader(build_dataset(args), batch_size=2, num_workers=2)
            train_one_epoch(model, loader, device)

        def gpu_main(args):
            model = build_model(args).cuda()
    """)),
]

# ------------------------------------------------------------- TW203 a data module that streams its loader with yield from
PROJECTS += [
    ProjectShape("TW203", "diffusion training: load_data() streams an unpinned loader with yield from; batches go to dev()", {
        "pkg/image_data.py": d("""
            from torch.utils.data import DataLoader
            def load_data(*, data_dir, batch_size, image_size):
                dataset = ImageFolderSet(data_dir, image_size)
                loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=1, drop_last=True)
                while True:
                    yield from loader
        """),
        "pkg/dist.py": d("""
            import torch
            def dev():
                if torch.cuda.is_available():
                    return torch.device("cuda")
                return torch.device("cpu")
        """),
        "pkg/train_loop.py": d("""
            from pkg import dist
            def run(model, data):
                while True:
                    batch, cond = next(data)
                    model.step(batch.to(dist.dev()))
        """),
    }, (("pkg/image_data.py", 4),)),
    ProjectShape("TW203", "look-alike: the same streaming data module in a project that never uses a GPU", {
        "pkg/image_data.py": d("""
            from torch.utils.data import DataLoader
            def load_data(*, data_dir, batch_size, image_size):
                dataset = ImageFolderSet(data_dir, image_size)
                loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=1, drop_last=True)
                while True:
                    yield from loader
        """),
        "pkg/train_loop.py": d("""
            def run(model, data):
                while True:
                    batch, cond = next(data)
                    model.step(batch)
        """),
    }),
]

# ------------------------------------------------------------- TW203 graph loaders: PyTorch Geometric and DataLoader* subclasses
# Molecular property prediction: PyG's DataLoader (batches of graphs, which pin themselves),
# and a masking loader of the project named DataLoader<Something> that subclasses torch's.
FIND += [
    Shape("TW203", "molecule fine-tuning: PyTorch Geometric loaders whose graph batches go to the GPU", d("""
        import torch
        from torch_geometric.loader import DataLoader

        def main(args):
            device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
            train_loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4)
            for batch in train_loader:
                batch = batch.to(device)
                loss = model(batch.x, batch.edge_index, batch.batch)
    """), 6),
]
QUIET += [
    Shape("TW203", "look-alike: a PyTorch Geometric loader that already pins", d("""
        import torch
        from torch_geometric.loader import DataLoader

        def main(args):
            device = torch.device("cuda:0")
            train_loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
            for batch in train_loader:
                batch = batch.to(device, non_blocking=True)
    """)),
    Shape("TW203", "look-alike: a graph loader of a CPU-only analysis script", d("""
        from torch_geometric.loader import DataLoader

        def degree_histogram(dataset):
            counts = []
            for batch in DataLoader(dataset, batch_size=256):
                counts.append(batch.num_nodes)
            return counts
    """)),
]
_MASKING_LOADERS = d("""
    import torch
    from torch.utils.data.dataloader import default_collate

    class DataLoaderMasking(torch.utils.data.DataLoader):
        def __init__(self, dataset, batch_size=1, shuffle=True, mask_rate=0.15, **kwargs):
            self.mask_rate = mask_rate
            super().__init__(dataset, batch_size, shuffle, collate_fn=self.mask_and_collate, **kwargs)

        def mask_and_collate(self, items):
            return default_collate(items)
""")
PROJECTS += [
    ProjectShape("TW203", "graph pretraining: a DataLoaderMasking subclass of another module, batches moved to the GPU", {
        "loaders.py": _MASKING_LOADERS,
        "pretrain.py": d("""
            import torch
            from loaders import DataLoaderMasking

            def main(args):
                device = torch.device("cuda:" + str(args.device)) if torch.cuda.is_available() else torch.device("cpu")
                loader = DataLoaderMasking(dataset, batch_size=256, shuffle=True, num_workers=8, mask_rate=0.15)
                for step, batch in enumerate(loader):
                    batch = batch.to(device)
                    model(batch).backward()
        """),
    }, (("pretrain.py", 6),)),
    ProjectShape("TW203", "look-alike: the DataLoader* subclass pins by itself", {
        "loaders.py": _MASKING_LOADERS.replace("collate_fn=self.mask_and_collate, **kwargs)",
                                               "collate_fn=self.mask_and_collate, pin_memory=True, **kwargs)"),
        "pretrain.py": d("""
            import torch
            from loaders import DataLoaderMasking

            def main(args):
                device = torch.device("cuda:0")
                loader = DataLoaderMasking(dataset, batch_size=256, shuffle=True, num_workers=8, mask_rate=0.15)
                for step, batch in enumerate(loader):
                    batch = batch.to(device)
        """),
    }),
]

# ------------------------------------------------------------- TW203 a loader handed to a trainer class chosen by the config
PROJECTS += [
    ProjectShape("TW203", "speech enhancement: the validation loader handed to trainer_class(...) built from the config", {
        "train.py": d("""
            from torch.utils.data import DataLoader
            from util import initialize_config

            def main(config):
                train_loader = DataLoader(initialize_config(config["train_set"]), batch_size=config["batch_size"],
                                          num_workers=4, pin_memory=config["pin_memory"])
                valid_loader = DataLoader(initialize_config(config["valid_set"]), num_workers=1, batch_size=1)
                trainer_class = initialize_config(config["trainer"], pass_args=False)
                trainer = trainer_class(config=config, train_dataloader=train_loader, validation_dataloader=valid_loader)
                trainer.train()
        """),
        "trainer/base.py": d("""
            import torch
            class BaseTrainer:
                def __init__(self, config):
                    self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        """),
    }, (("train.py", 7),)),
]

# ------------------------------------------------------------- TW203 false: collate functions handed the device
# Irregular time series: the datasets are moved to the GPU whole, and the loader's collate
# function is handed the device (or defaults to it) to build each batch there: nothing to pin.
QUIET += [
    Shape("TW203", "look-alike: a lambda collate that hands the device to a collate function of another module", d("""
        import torch
        from torch.utils.data import DataLoader
        from lib.records import collate_records

        def main(args):
            device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            records = torch.load(args.path, map_location=device)
            train, test = split(records)
            train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=False,
                                      collate_fn=lambda batch: collate_records(batch, args, device, data_type="train"))
            model = build(args).to(device)
            for batch in train_loader:
                model(batch["values"]).backward()
    """)),
    Shape("TW203", "look-alike: a local collate function whose device parameter defaults to the device", d("""
        import torch
        from torch.utils.data import DataLoader

        def main(args):
            device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            def collate(batch, time_steps, device=device):
                return {"data": torch.stack(batch), "time_steps": time_steps}
            data = sample(args)
            loader = DataLoader(data, batch_size=args.batch_size, collate_fn=lambda b: collate(b, steps))
            model = build(args).to(device)
            for batch in loader:
                model(batch["data"]).backward()
    """)),
]
FIND += [
    Shape("TW203", "a collate function with a device parameter left at None (the batch stays on the host)", d("""
        import torch
        from torch.utils.data import DataLoader

        def collate(batch, pad=0, device=None):
            return torch.nn.utils.rnn.pad_sequence(batch, padding_value=pad)

        def main(train_set):
            model = Net().cuda()
            loader = DataLoader(train_set, batch_size=32, num_workers=4, collate_fn=lambda b: collate(b))
            for x in loader:
                model(x.cuda())
    """), 9),
]

# ------------------------------------------------------------- TW203 false: collate functions that return NumPy arrays (ruling R7)
# Speech synthesis: the dataset's collate_fn pads NumPy arrays (helpers of a utility module that
# pad with np.pad) and returns them; the training loop converts with torch.from_numpy later.
_TTS_DATASET = d("""
    import numpy as np
    from torch.utils.data import Dataset
    from utils.pad import pad_1d, pad_2d

    class SpeechSet(Dataset):
        def __getitem__(self, i):
            return {"phones": np.load(self.phones[i]), "mel": np.load(self.mels[i])}

        def __len__(self):
            return len(self.phones)

        def prepare(self, items, idxs):
            phones = pad_1d([items[i]["phones"] for i in idxs])
            mels = pad_2d([items[i]["mel"] for i in idxs])
            lens = np.array([items[i]["mel"].shape[0] for i in idxs])
            return phones, mels, lens

        def collate_fn(self, items):
            order = np.argsort([-len(x["phones"]) for x in items])
            if len(order) == 0:
                raise ValueError("empty batch")
            return [self.prepare(items, order)]
""")
_PAD_UTILS = d("""
    import numpy as np
    import torch

    def pad_1d(seqs, value=0):
        longest = max(len(s) for s in seqs)
        return np.stack([np.pad(s, (0, longest - len(s)), constant_values=value) for s in seqs])

    def pad_2d(frames):
        longest = max(f.shape[0] for f in frames)
        return np.stack([np.pad(f, ((0, longest - f.shape[0]), (0, 0))) for f in frames])

    def to_device(batch, device):
        return [torch.from_numpy(part).to(device) for part in batch]
""")
_TTS_TRAIN = d("""
    import torch
    from torch.utils.data import DataLoader
    from dataset import SpeechSet
    from utils.pad import to_device

    def main(device):
        dataset = SpeechSet()
        loader = DataLoader(dataset, batch_size=64, shuffle=True, collate_fn=dataset.collate_fn)
        for groups in loader:
            for batch in groups:
                model(*to_device(batch, device)).backward()

    if __name__ == "__main__":
        main(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
""")
PROJECTS += [
    ProjectShape("TW203", "look-alike: the dataset's collate_fn returns NumPy arrays padded by a helper module", {
        "dataset.py": _TTS_DATASET, "utils/pad.py": _PAD_UTILS, "train.py": _TTS_TRAIN,
    }),
    ProjectShape("TW203", "the same speech loader whose collate ends in torch.from_numpy (tensors: pinning applies)", {
        "dataset.py": _TTS_DATASET.replace("import numpy as np\n", "import numpy as np\nimport torch\n").replace(
            "return phones, mels, lens", "return torch.from_numpy(phones), torch.from_numpy(mels), torch.from_numpy(lens)"),
        "utils/pad.py": _PAD_UTILS, "train.py": _TTS_TRAIN,
    }, (("train.py", 8),)),
    ProjectShape("TW203", "the same speech loader whose padding helper makes tensors", {
        "dataset.py": _TTS_DATASET,
        "utils/pad.py": _PAD_UTILS.replace("return np.stack([np.pad(f, ((0, longest - f.shape[0]), (0, 0))) for f in frames])",
                                           "return torch.nn.utils.rnn.pad_sequence([torch.as_tensor(f) for f in frames])"),
        "train.py": _TTS_TRAIN,
    }, (("train.py", 8),)),
]
QUIET += [
    Shape("TW203", "look-alike: a collate function of the file that stacks NumPy arrays, in a module that makes no tensors", d("""
        import numpy as np
        from torch.utils.data import DataLoader

        def numpy_collate(batch):
            images = np.stack([b[0] for b in batch])
            labels = np.array([b[1] for b in batch])
            return images, labels

        def make_loader(ds, device):
            assert device == "cuda"
            return DataLoader(ds, batch_size=128, num_workers=4, collate_fn=numpy_collate)
    """)),
]

# ------------------------------------------------------------- TW203 pin_memory=False in a config module's loader settings
# Kaggle-style experiments: each config module holds the loader settings of every split, and a
# factory splats them into the DataLoader (DataLoader(dataset, **cfg.loader)); the batches go
# to the GPU in the training loop.
_EXPERIMENT_CONF = d("""
    batch_size = 32
    data = dict(
        train=dict(
            images="./input/train",
            loader=dict(
                shuffle=True,
                batch_size=batch_size,
                num_workers=8,
                pin_memory=False,
            ),
        ),
        valid=dict(
            images="./input/train",
            loader={"shuffle": False, "batch_size": batch_size, "num_workers": 8, "pin_memory": False},
        ),
    )
""")
_FACTORY = d("""
    from torch.utils.data import DataLoader
    from .dataset import ScanDataset

    def get_dataloader(cfg):
        dataset = ScanDataset(cfg)
        return DataLoader(dataset, **cfg.loader)
""")
_RUN = d("""
    import torch
    from . import factory

    def run(cfg, model, optim):
        loader = factory.get_dataloader(cfg.data.train)
        for inputs, targets in loader:
            loss = model(inputs.cuda()).sub(targets.cuda()).abs().mean()
            loss.backward()
""")
PROJECTS += [
    ProjectShape("TW203", "experiment configs: loader settings with pin_memory=False, splatted by a factory, batches on the GPU", {
        "conf/exp1.py": _EXPERIMENT_CONF, "src/factory.py": _FACTORY, "src/main.py": _RUN,
    }, (("conf/exp1.py", 9), ("conf/exp1.py", 14))),
    ProjectShape("TW203", "look-alike: the same configs in a project that never uses a GPU", {
        "conf/exp1.py": _EXPERIMENT_CONF, "src/factory.py": _FACTORY, "src/main.py": _RUN.replace(".cuda()", ""),
    }),
    ProjectShape("TW203", "look-alike: a comment next to pin_memory=False gives the reason", {
        "conf/exp1.py": _EXPERIMENT_CONF.replace("pin_memory=False,", "pin_memory=False,  # pinning starves the shared host").replace(
            '"pin_memory": False}', '"pin_memory": False}  # no pinning: shared host'),
        "src/factory.py": _FACTORY, "src/main.py": _RUN,
    }),
    ProjectShape("TW203", "look-alike: settings named for the sampler, splatted into a sampler, not a DataLoader", {
        "conf/exp1.py": _EXPERIMENT_CONF.replace("loader=", "sampler="),
        "src/factory.py": _FACTORY.replace("return DataLoader(dataset, **cfg.loader)",
                                           "return DataLoader(dataset, sampler=Balanced(**cfg.sampler), pin_memory=True)"),
        "src/main.py": _RUN,
    }),
]

# ------------------------------------------------------------- TW204 a project function pins through a settings dict
PROJECTS += [
    ProjectShape("TW204", "a data manager builds its loader from a settings dict with pin_memory=True; the script copies batches", {
        "data/manager.py": d("""
            import torch
            class SimpleManager:
                def get_loader(self, dataset, batch_size):
                    params = dict(batch_size=batch_size, shuffle=True, num_workers=12, pin_memory=True)
                    loader = torch.utils.data.DataLoader(dataset, **params)
                    return loader
        """),
        "tools/stats.py": d("""
            from torch.utils.data import DataLoader
            def count(dataset):
                return sum(len(x) for x in DataLoader(dataset, batch_size=512))
        """),
        "save_features.py": d("""
            from data.manager import SimpleManager
            def main(model, dataset):
                loader = SimpleManager().get_loader(dataset, 64)
                for x, y in loader:
                    x = x.cuda()
                    model(x)
        """),
    }, (("save_features.py", 5),)),
    ProjectShape("TW204", "look-alike: the settings dict turns pinning off", {
        "data/manager.py": d("""
            import torch
            class SimpleManager:
                def get_loader(self, dataset, batch_size):
                    params = dict(batch_size=batch_size, shuffle=True, num_workers=12, pin_memory=False)
                    loader = torch.utils.data.DataLoader(dataset, **params)
                    return loader
        """),
        "save_features.py": d("""
            from data.manager import SimpleManager
            def main(model, dataset):
                loader = SimpleManager().get_loader(dataset, 64)
                for x, y in loader:
                    x = x.cuda()
        """),
    }),
]

# ------------------------------------------------------------- TW203 false: a loader over a tensor already on the GPU
QUIET += [
    Shape("TW203", "look-alike: a loader over slices of a series already moved to the GPU", d("""
        import torch
        from torch.utils.data import DataLoader

        def main(args):
            device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            series = simulate(args.n).to(device)
            train_y = series[: int(0.8 * len(series))]
            loader = DataLoader(train_y, batch_size=args.batch_size, shuffle=False)
            model = build(args).to(device)
            for batch in loader:
                model(batch).backward()
    """)),
]
