"""The recall corpus, round 13 part B: the data rules (TW203, TW204, TW206) on the classes that
sets 15 and 16 (the tuning sets of round 13) still missed or reported falsely after round 12 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW203 loaders a data module returns, bound in two branches
# Distillation code: one data module offers two loader builders; the training script picks one
# by an option and binds the loaders to the same names in both branches, then trains on them.
_TWO_BUILDERS = d("""
    from torch.utils.data import DataLoader

    def plain_loaders(batch_size=64, workers=4):
        train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=workers)
        test_loader = DataLoader(test_set, batch_size=batch_size, num_workers=workers)
        return train_loader, test_loader

    def contrastive_loaders(batch_size=64, workers=4, negatives=4096):
        train_loader = DataLoader(PairedSet(negatives), batch_size=batch_size, shuffle=True, num_workers=workers)
        test_loader = DataLoader(test_set, batch_size=batch_size, num_workers=workers)
        return train_loader, test_loader, len(test_set)
""")
PROJECTS += [
    ProjectShape("TW203", "distillation: loaders of either builder bound to the same names in an if/else, then trained on", {
        "data.py": _TWO_BUILDERS,
        "distill.py": d("""
            import torch
            from data import plain_loaders, contrastive_loaders

            def main(opt):
                if opt.method == "crd":
                    train_loader, val_loader, n = contrastive_loaders(opt.batch_size)
                else:
                    train_loader, val_loader = plain_loaders(opt.batch_size)
                student = build(opt).cuda()
                for epoch in range(opt.epochs):
                    for images, labels in train_loader:
                        loss = student(images.cuda()).sum()
                        loss.backward()
                    validate(val_loader, student)

            def validate(loader, model):
                for images, labels in loader:
                    model(images.cuda())
        """),
    }, (("data.py", 4), ("data.py", 5), ("data.py", 9), ("data.py", 10))),
    ProjectShape("TW203", "look-alike: in both branches the loader only goes to a method that never reads it", {
        "data.py": _TWO_BUILDERS,
        "sample.py": d("""
            import torch
            from data import plain_loaders, contrastive_loaders

            def main(opt):
                if opt.method == "crd":
                    train_loader, test_loader, n = contrastive_loaders(opt.batch_size)
                else:
                    train_loader, test_loader = plain_loaders(opt.batch_size)
                model = Generator().cuda()
                model.draw(train_loader, opt.out)
                model.draw(test_loader, opt.out)

            class Generator(torch.nn.Module):
                def draw(self, loader, out):
                    noise = torch.randn(16, 128, device="cuda")
                    save(self(noise), out)
        """),
    }),
]

# ------------------------------------------------------------- TW203 a splat of a project function's settings
# Volumetric segmentation: the loader keywords come from a helper of the config module that
# returns platform-dependent settings written out without pin_memory; the data module builds
# the train/val loaders in a returned dict and the test loaders one by one with yield.
_PLATFORM_KWARGS = d("""
    import platform

    def platform_loader_kwargs():
        extra = {}
        if platform.system() == "Darwin":
            extra = {"multiprocessing_context": "forkserver", "persistent_workers": True}
        return extra
""")
_VOLUME_LOADERS = d("""
    import torch
    from torch.utils.data import ConcatDataset, DataLoader
    from seg.config import platform_loader_kwargs

    def get_train_loaders(config):
        workers = config["loaders"].get("num_workers", 1)
        if config["device"] == "cuda" and torch.cuda.device_count() > 1:
            workers *= torch.cuda.device_count()
        kwargs = platform_loader_kwargs()
        return {
            "train": DataLoader(ConcatDataset(train_sets(config)), batch_size=2, shuffle=True, num_workers=workers, **kwargs),
            "val": DataLoader(ConcatDataset(val_sets(config)), batch_size=2, num_workers=workers, **kwargs),
        }

    def get_test_loaders(config):
        for volume in test_sets(config):
            kwargs = platform_loader_kwargs()
            yield DataLoader(volume, batch_size=1, num_workers=1, **kwargs)
""")
PROJECTS += [
    ProjectShape("TW203", "3-D segmentation: loaders splat a config helper's platform settings (no pin_memory), on CUDA", {
        "seg/__init__.py": "",
        "seg/config.py": _PLATFORM_KWARGS,
        "seg/loaders.py": _VOLUME_LOADERS,
    }, (("seg/loaders.py", 11), ("seg/loaders.py", 12), ("seg/loaders.py", 18))),
    ProjectShape("TW203", "look-alike: the config helper returns settings read from the YAML file (may pin)", {
        "seg/__init__.py": "",
        "seg/config.py": d("""
            def platform_loader_kwargs(config):
                return config["loaders"]["extra"]
        """),
        "seg/loaders.py": _VOLUME_LOADERS.replace("platform_loader_kwargs()", "platform_loader_kwargs(config)"),
    }),
    ProjectShape("TW203", "look-alike: the helper's settings are completed in place (an update may pin)", {
        "seg/__init__.py": "",
        "seg/config.py": d("""
            def platform_loader_kwargs():
                extra = {"num_workers": 2}
                extra.update(EXTRA_SETTINGS)
                return extra
        """),
        "seg/loaders.py": _VOLUME_LOADERS,
    }),
]

# ------------------------------------------------------------- TW203 false: datasets of strings (nothing to pin)
# Teaching scripts: a dataset hands back names and labels read from a CSV file, or the lines of
# a text corpus; the loop turns the strings into tensors itself and moves those to the GPU.
_NAMES_SET = d("""
    import csv
    import gzip
    from torch.utils.data import Dataset

    class SurnameDataset(Dataset):
        def __init__(self, path):
            with gzip.open(path, "rt") as f:
                rows = list(csv.reader(f))
            self.surnames = [row[0] for row in rows]
            self.origins = [row[1] for row in rows]

        def __getitem__(self, i):
            return self.surnames[i], self.origins[i]

        def __len__(self):
            return len(self.surnames)
""")
_NAMES_SCRIPT = d("""
    import torch
    from torch.utils.data import DataLoader
    from surnames import SurnameDataset

    train_loader = DataLoader(SurnameDataset("train.csv.gz"), batch_size=128, shuffle=True)
    model = Classifier().cuda()
    for names, origins in train_loader:
        codes, lengths = encode(names)
        out = model(codes.cuda(), lengths)
""")
PROJECTS += [
    ProjectShape("TW203", "look-alike: a dataset of another module hands back strings from CSV rows", {
        "surnames.py": _NAMES_SET, "train.py": _NAMES_SCRIPT,
    }),
]
QUIET += [
    Shape("TW203", "look-alike: a local dataset of the stripped lines of a text corpus", d("""
        import gzip
        from torch.utils.data import DataLoader, Dataset

        class LineDataset(Dataset):
            def __init__(self, path):
                with gzip.open(path, "rt") as f:
                    self.targets = [line.strip() for line in f if line.strip()]
                self.sources = [t.lower().replace(" ", "") for t in self.targets]

            def __getitem__(self, index):
                return self.sources[index], self.targets[index]

            def __len__(self):
                return len(self.targets)

        loader = DataLoader(LineDataset("corpus.txt.gz"), batch_size=16, shuffle=True)
        model = Seq2Seq().cuda()
        for src, tgt in loader:
            model(to_ids(src).cuda(), to_ids(tgt).cuda())
    """)),
]

# ------------------------------------------------------------- TW204 a list of pinned loaders from a project helper
# GAN training: utils.get_data_loaders(...) builds the loader with a settings dict chosen in an
# if/else (both with 'pin_memory': pin_memory, a parameter that defaults to True) and returns a
# list; the script loops over loaders[0] through a progress bar chosen by the config and copies
# the batch in both branches of an if/else.
_GAN_UTILS = d("""
    from torch.utils.data import DataLoader

    def get_data_loaders(dataset, batch_size=64, num_workers=8, pin_memory=True, use_sampler=False, **kwargs):
        loaders = []
        if use_sampler:
            loader_kwargs = {"num_workers": num_workers, "pin_memory": pin_memory}
            loader = DataLoader(dataset, batch_size=batch_size, sampler=EpochSampler(dataset), **loader_kwargs)
        else:
            loader_kwargs = {"num_workers": num_workers, "pin_memory": pin_memory, "drop_last": True}
            loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, **loader_kwargs)
        loaders.append(loader)
        return loaders
""")
_GAN_TRAIN = d("""
    import torch
    from tqdm import tqdm
    import utils

    def run(config):
        device = "cuda"
        loaders = utils.get_data_loaders(**config)
        for epoch in range(config["epochs"]):
            if config["pbar"] == "mine":
                pbar = utils.progress(loaders[0])
            else:
                pbar = tqdm(loaders[0])
            for x, y in pbar:
                if config["fp16"]:
                    x, y = x.to(device).half(), y.to(device)
                else:
                    x, y = x.to(device), y.to(device)
                step(x, y)
""")
PROJECTS += [
    ProjectShape("TW204", "GAN training: loaders[0] of a helper pinning through if/else settings dicts; copies in both branches", {
        "utils.py": _GAN_UTILS, "train.py": _GAN_TRAIN,
    }, (("train.py", 15), ("train.py", 15), ("train.py", 17), ("train.py", 17))),
    ProjectShape("TW204", "look-alike: one of the helper's settings dicts turns pinning off", {
        "utils.py": _GAN_UTILS.replace('"pin_memory": pin_memory, "drop_last"', '"pin_memory": False, "drop_last"'),
        "train.py": _GAN_TRAIN,
    }),
]
QUIET += [
    Shape("TW204", "look-alike: after the if/else the batch is already on the device", d("""
        import torch
        from torch.utils.data import DataLoader

        loader = DataLoader(train_set, batch_size=32, num_workers=4, pin_memory=True)
        for x, y in loader:
            if half:
                x = x.to(device, non_blocking=True).half()
            else:
                x = x.to(device, non_blocking=True)
            x = x.to(other_device)
    """)),
]

# ------------------------------------------------------------- TW206 an array method's result copied per batch
# Vocoder collate functions: the windows are stacked and cast with NumPy, then copied again
# by torch.tensor.
FIND += [
    Shape("TW206", "vocoder collate: np.stack(...).astype(...) then torch.tensor of it, per batch", d("""
        import numpy as np
        import torch

        def collate_windows(batch, window=24):
            starts = [np.random.randint(0, len(x) - window) for x, _ in batch]
            mels = np.stack([x[:, s:s + window] for s, (x, _) in zip(starts, batch)]).astype(np.float32)
            quant = np.stack([q[s:s + window] for s, (_, q) in zip(starts, batch)]).astype(np.int64)
            mels = torch.tensor(mels)
            quant = torch.tensor(quant).long()
            return mels, quant
    """), 8),
]
QUIET += [
    Shape("TW206", "look-alike: a table stacked and cast once at set-up", d("""
        import numpy as np
        import torch

        class Lookup:
            def __init__(self, rows):
                self.table = torch.tensor(np.stack(rows).astype(np.float32))
    """)),
]

# ------------------------------------------------------------- TW206 a NumPy array built only to be copied, per item
# Graph pretraining: a transform's __call__ (another module) turns the sampled subgraph back into
# a graph object with a helper that builds every index array with np.array(...) and hands it to
# torch.tensor(..., dtype=...): the data is built twice for every item.
_GRAPH_LOADER = d("""
    import numpy as np
    import torch

    def graph_to_data(g, labels=None):
        nodes = list(g.nodes())
        x = torch.tensor(np.ones(len(nodes)).reshape(-1, 1), dtype=torch.float)
        edges = [(nodes.index(a), nodes.index(b)) for a, b in g.edges()]
        edge_index = torch.tensor(np.array(edges).T, dtype=torch.long)
        data = Graph(x=x, edge_index=edge_index)
        if labels:
            data.y = torch.tensor(np.array([labels[n] for n in nodes]), dtype=torch.long)
        return data

    class MoleculeSet:
        def process(self):
            self.items = []
            for g in read_all_graphs(self.root):
                self.items.append(graph_to_data(g, self.labels))
""")
_GRAPH_TRANSFORM = d("""
    from loader import graph_to_data

    class ContextPair:
        def __init__(self, k):
            self.k = k

        def __call__(self, data):
            sub = ego_graph(data, self.k)
            data.context = graph_to_data(sub)
            return data
""")
PROJECTS += [
    ProjectShape("TW206", "graph pretraining: a transform's __call__ rebuilds each item with np.array(...) -> torch.tensor(dtype=)", {
        "loader.py": _GRAPH_LOADER,
        "transforms.py": _GRAPH_TRANSFORM,
        "pretrain.py": d("""
            from transforms import ContextPair
            dataset = MoleculeSet("data", transform=ContextPair(3))
        """),
    }, (("loader.py", 6), ("loader.py", 8))),
    ProjectShape("TW206", "look-alike: the transform is only built in its own module's self-test", {
        "loader.py": _GRAPH_LOADER,
        "transforms.py": _GRAPH_TRANSFORM + d("""

            if __name__ == "__main__":
                print(ContextPair(2)(toy_graph()))
        """),
        "pretrain.py": d("""
            from loader import MoleculeSet
            dataset = MoleculeSet("data")
        """),
    }),
]
FIND += [
    Shape("TW206", "a dataset's __getitem__ wrapping a row in np.array only for torch.tensor(dtype=)", d("""
        import numpy as np
        import torch
        from torch.utils.data import Dataset

        class Tokens(Dataset):
            def __getitem__(self, i):
                return torch.tensor(np.array(self.rows[i]), dtype=torch.long)
    """), 7),
    Shape("TW206", "a training loop stacking labels with NumPy for torch.tensor(dtype=) every step", d("""
        import numpy as np
        import torch

        for batch in loader:
            targets = torch.tensor(np.stack([b["label"] for b in batch]), dtype=torch.long).cuda()
            loss = criterion(model(batch), targets)
            loss.backward()
            optimizer.step()
    """), 5),
]
FIND += [
    Shape("TW206", "edge masking: a constant one-hot written as np.array([...]) for torch.tensor(dtype=torch.float), per edge", d("""
        import numpy as np
        import torch

        class MaskEdges:
            def __call__(self, data):
                for idx in self.pick(data):
                    data.edge_attr[idx] = torch.tensor(np.array([0, 0, 0, 1]), dtype=torch.float)
                return data
    """), 7),
]
QUIET += [
    Shape("TW206", "look-alike: np.array of float rows cast to torch.float (one conversion either way)", d("""
        import numpy as np
        import torch
        from torch.utils.data import Dataset

        class Rows(Dataset):
            def __getitem__(self, i):
                return torch.tensor(np.array(self.features[i]), dtype=torch.float)
    """)),
    Shape("TW206", "look-alike: an array held in a name, converted with a dtype (a conversion copies anyway)", d("""
        import numpy as np
        import torch

        class Frames:
            def __getitem__(self, i):
                frame = np.load(self.paths[i])
                return torch.tensor(frame, dtype=torch.float32)
    """)),
    Shape("TW206", "look-alike: np.array(...) copied straight to the device (one host copy either way)", d("""
        import numpy as np
        import torch

        class Tokens:
            def __getitem__(self, i):
                return torch.tensor(np.array(self.rows[i]), dtype=torch.long, device="cuda")
    """)),
    Shape("TW206", "look-alike: a dataset built once, np.array(...) per molecule in a preprocessing loop", d("""
        import numpy as np
        import torch

        def preprocess(smiles_list):
            graphs = []
            for s in smiles_list:
                atoms = atom_features(s)
                graphs.append(torch.tensor(np.array(atoms), dtype=torch.long))
            return graphs
    """)),
]

# ------------------------------------------------------------- TW206 torch.tensor under a module-level alias
# RL utilities: a module aliases torch's constructors (tensor = torch.tensor) and the rest of the
# project star-imports it.
PROJECTS += [
    ProjectShape("TW206", "RL utilities: tensor = torch.tensor star-imported through a package, NumPy frames copied each step", {
        "common/__init__.py": "from common.torch_utils import *\n",
        "common/torch_utils.py": d("""
            import torch
            tensor = torch.tensor
            zeros = torch.zeros
        """),
        "rollout.py": d("""
            import numpy as np
            from common import *

            def rollout(env, policy, steps):
                frames = [env.reset()]
                for t in range(steps):
                    stack = tensor(np.stack(frames[-4:]))
                    frames.append(env.step(policy(stack))[0])
        """),
    }, (("rollout.py", 7),)),
    ProjectShape("TW206", "look-alike: the star-imported alias is torch.as_tensor", {
        "common/__init__.py": "from common.torch_utils import *\n",
        "common/torch_utils.py": d("""
            import torch
            tensor = torch.as_tensor
        """),
        "rollout.py": d("""
            import numpy as np
            from common import *

            def rollout(env, policy, steps):
                frames = [env.reset()]
                for t in range(steps):
                    stack = tensor(np.stack(frames[-4:]))
                    frames.append(env.step(policy(stack))[0])
        """),
    }),
]
FIND += [
    Shape("TW206", "a module-level alias of torch.tensor in the same file", d("""
        import numpy as np
        import torch
        tensor = torch.tensor

        def features(paths):
            return [tensor(np.load(p)) for p in paths]
    """), 6),
]
QUIET += [
    Shape("TW206", "look-alike: a function of the file named tensor", d("""
        import numpy as np
        import torch

        def tensor(a):
            return torch.from_numpy(a).float()

        def features(paths):
            return [tensor(np.load(p)) for p in paths]
    """)),
]
