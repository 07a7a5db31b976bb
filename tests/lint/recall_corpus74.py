"""The recall corpus, round 24 part A (TW202-TW204): loaders whose pinning is handed down from an
option that is off by default (and loaders rebuilt from another loader's attributes), batches read
with ``next()`` and handed to helpers of other modules, solver classes that renew their loaders with
the same builder, loaders returned by helpers to GPU scripts of other modules, and datasets cut by
``random_split``. Each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW203/TW204 pin_memory handed down from an option
# A continual-learning framework: the entry script parses `--pin-memory` (off by default) and hands
# it to a data module's get_loaders(); learners rebuild loaders with `pin_memory=loader.pin_memory`.
# On the default path nothing is pinned: TW203 belongs at the builder, and TW204's "pinned batch" is wrong.
_BUILDER = d("""
    from torch.utils.data import DataLoader
    def get_loaders(train_sets, test_sets, batch_size, workers, pin_memory):
        train_out, test_out = [], []
        for tr, te in zip(train_sets, test_sets):
            train_out.append(DataLoader(tr, batch_size=batch_size, shuffle=True, num_workers=workers,
                                        pin_memory=pin_memory))
            test_out.append(DataLoader(te, batch_size=batch_size, num_workers=workers, pin_memory=pin_memory))
        return train_out, test_out
""")
_MAIN = d("""
    import argparse
    import torch
    from data import get_loaders
    from learner import Learner
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument('--workers', type=int, default=4)
        parser.add_argument('--pin-memory', default={default}, type=bool)
        args = parser.parse_args()
        device = torch.device('cuda')
        trains, tests = get_loaders(sets_a(), sets_b(), 64, args.workers, pin_memory=args.pin_memory)
        learner = Learner(build_model().to(device), device)
        for task in range(len(trains)):
            learner.train_loop(trains[task], tests[task])
""")
_LEARNER = d("""
    import torch
    from torch.utils.data import DataLoader
    class Learner:
        def __init__(self, model, device):
            self.model, self.device = model, device
            self.opt = torch.optim.SGD(model.parameters(), lr=0.1)
        def train_loop(self, train_loader, test_loader):
            train_loader = DataLoader(train_loader.dataset + self.memory(), batch_size=train_loader.batch_size,
                                      shuffle=True, num_workers=train_loader.num_workers,
                                      pin_memory=train_loader.pin_memory)
            for x, y in train_loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = torch.nn.functional.cross_entropy(self.model(x), y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
""")
PROJECTS += [
    ProjectShape("TW203", "get_loaders(..., pin_memory=args.pin_memory) of another module, --pin-memory off by default: "
                 "reported at the builder's loaders", {
                     "data.py": _BUILDER, "main.py": _MAIN.format(default="False"), "learner.py": _LEARNER,
                 }, (("data.py", 5), ("data.py", 7))),
    ProjectShape("TW204", "look-alike: learners copy batches of loaders rebuilt with pin_memory=loader.pin_memory from "
                 "an option off by default (nothing pinned on the default path)", {
                     "data.py": _BUILDER, "main.py": _MAIN.format(default="False"), "learner.py": _LEARNER,
                 }),
    ProjectShape("TW203", "look-alike: the same option on by default", {
        "data.py": _BUILDER, "main.py": _MAIN.format(default="True"), "learner.py": _LEARNER,
    }),
    ProjectShape("TW204", "look-alike: the same option on by default, but the source loader reaches the learner through "
                 "a method of an instance built elsewhere: lint cannot tell it is pinned, and does not claim it", {
        "data.py": _BUILDER, "main.py": _MAIN.format(default="True"), "learner.py": _LEARNER,
    }),
]
QUIET += [
    Shape("TW204", "look-alike: a loader rebuilt from one built with pin_memory=args.pin_mem, off by default", d("""
        import argparse
        import torch
        from torch.utils.data import DataLoader
        parser = argparse.ArgumentParser()
        parser.add_argument('--pin_mem', action='store_true')
        args = parser.parse_args()
        base = DataLoader(make_set(), batch_size=32, num_workers=4, pin_memory=args.pin_mem)
        loader = DataLoader(base.dataset, batch_size=base.batch_size, pin_memory=base.pin_memory)
        for x, y in loader:
            x = x.to('cuda')
    """)),
]
# ------------------------------------------------------------- TW204 next() batches handed to a helper of another module
_UTILS = d("""
    import torch.nn.functional as F
    def seg_loss(pred, label, device):
        label = label.long().to(device)
        return F.cross_entropy(pred, label)
""")
_LOOP = d("""
    import torch
    from torch.utils.data import DataLoader
    from utils import seg_loss
    def train(model, dataset, steps, device):
        loader = DataLoader(dataset, batch_size=4, num_workers=4, pin_memory={pin})
        it = enumerate(loader)
        for step in range(steps):
            _, batch = it.__next__()
            images, labels = batch
            pred = model(images.to(device, non_blocking=True))
            loss = seg_loss(pred, labels, device)
            loss.backward()
""")
PROJECTS += [
    ProjectShape("TW204", "labels from enumerate(loader).__next__() handed to a loss helper of another module that copies them", {
        "utils.py": _UTILS, "train.py": _LOOP.format(pin="True"),
    }, (("utils.py", 3),)),
    ProjectShape("TW204", "look-alike: the same helper fed from an unpinned loader", {
        "utils.py": _UTILS, "train.py": _LOOP.format(pin="False"),
    }),
]
FIND += [
    Shape("TW204", "an iterator's old .next() method in a step loop over a pinned loader", d("""
        import torch
        from torch.utils.data import DataLoader
        def train(model, ds, steps):
            loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
            batches = iter(loader)
            for step in range(steps):
                x, y = batches.next()
                x, y = x.cuda(), y.cuda()
                model(x, y).backward()
    """), 8),
]

# ------------------------------------------------------------- TW204 a solver that renews its loaders with the same builder
_DATA = d("""
    from torch.utils.data import DataLoader
    def load_dataset(workers, use_gpu, pin_memory, ascending, corpus):
        tr, dv = make_sets(corpus, ascending)
        tr = DataLoader(tr, batch_size=16, shuffle=not ascending, num_workers=workers, pin_memory=use_gpu)
        dv = DataLoader(dv, batch_size=16, num_workers=workers, pin_memory=pin_memory)
        return tr, dv, 80
""")
_SOLVER = d("""
    import torch
    from data import load_dataset
    class Solver:
        def __init__(self, paras, device):
            self.paras, self.device = paras, device
        def fetch_data(self, data):
            _, feat, txt = data
            feat = feat.to(self.device)
            txt = txt.to(self.device)
            return feat, txt
        def load_data(self):
            self.tr_set, self.dv_set, self.dim = load_dataset(4, self.paras.gpu, self.paras.pin, True, 'libri')
        def exec(self):
            for epoch in range(10):
                if epoch == 2:
                    self.tr_set, _, _ = load_dataset(4, self.paras.gpu, self.paras.pin, False, 'libri')
                for data in self.tr_set:
                    feat, txt = self.fetch_data(data)
                    self.step(feat, txt)
        def evaluate(self):
            for name, ds in zip(['dev', 'test'], [self.dv_set, self.tr_set]):
                for data in ds:
                    self.fetch_data(data)
""")
PROJECTS += [
    ProjectShape("TW204", "self.tr_set unpacked from the same builder in two methods (renewed for curriculum), batch "
                 "unpacked in fetch_data before the copy", {
                     "data.py": _DATA, "solver.py": _SOLVER,
                 }, (("solver.py", 8), ("solver.py", 9))),
    ProjectShape("TW204", "look-alike: the solver renews self.tr_set from a different, unpinned builder", {
        "data.py": _DATA + d("""
            def load_plain(corpus):
                return DataLoader(make_sets(corpus, False)[0], batch_size=16), None, 80
        """), "solver.py": _SOLVER.replace("load_dataset(4, self.paras.gpu, self.paras.pin, False, 'libri')", "load_plain('libri')").replace(
            "from data import load_dataset", "from data import load_dataset, load_plain").replace(
            "[self.dv_set, self.tr_set]", "[self.tr_set]"),
    }),
]

# ------------------------------------------------------------- TW203/TW202 loaders returned by a helper to GPU scripts
_HELPER = d("""
    import torch
    from torch.utils import data
    from torch.utils.data import DataLoader
    class CharSet(data.Dataset):
        def __init__(self, path):
            self.rows = read_rows(path)
        def __len__(self):
            return len(self.rows)
        def __getitem__(self, i):
            text, label = self.rows[i]
            x = torch.zeros(70, 1014)
            for j, ch in enumerate(text[:1014]):
                x[ord(ch) % 70, j] = 1.0
            return x, label
    def get_iterators(cfg, train_file, test_file):
        train_set = CharSet(train_file)
        test_set = CharSet(test_file)
        n = int(0.9 * len(train_set))
        train_set, val_set = data.random_split(train_set, [n, len(train_set) - n])
        return (DataLoader(train_set, batch_size=cfg.bs, shuffle=True, num_workers=4),
                DataLoader(val_set, batch_size=cfg.bs, num_workers=4))
""")
_SCRIPT = d("""
    import torch
    from utils import *
    if __name__ == '__main__':
        train_it, val_it = get_iterators(Config(), 'a.csv', 'b.csv')
        model = Net()
        if torch.cuda.is_available():
            model.cuda()
        for x, y in train_it:
            if torch.cuda.is_available():
                x, y = x.cuda(), y.cuda()
            model(x, y).backward()
""")
PROJECTS += [
    ProjectShape("TW203", "loaders returned by get_iterators() of a utils module that a GPU script takes with import *", {
        "utils.py": _HELPER, "train.py": _SCRIPT,
    }, (("utils.py", 20), ("utils.py", 21))),
    ProjectShape("TW203", "look-alike: the script that takes the loaders runs on the CPU only", {
        "utils.py": _HELPER, "train.py": d("""
            from utils import *
            if __name__ == '__main__':
                train_it, val_it = get_iterators(Config(), 'a.csv', 'b.csv')
                model = Net()
                for x, y in train_it:
                    model(x, y).backward()
        """),
    }),
]
FIND += [
    Shape("TW202", "the parts random_split cuts from a dataset class that builds each item in Python", d("""
        import torch
        from torch.utils import data
        from torch.utils.data import DataLoader
        class OneHot(data.Dataset):
            def __init__(self, rows):
                self.rows = rows
            def __len__(self):
                return len(self.rows)
            def __getitem__(self, i):
                x = torch.zeros(70, 256)
                for j, ch in enumerate(self.rows[i][:256]):
                    x[ord(ch) % 70, j] = 1.0
                return x
        full = OneHot(read_rows())
        train_set, val_set = data.random_split(full, [900, 100])
        train_it = DataLoader(train_set, batch_size=32, shuffle=True)
    """), 16),
]
QUIET += [
    Shape("TW202", "look-alike: random_split of an in-memory TensorDataset", d("""
        import torch
        from torch.utils import data
        from torch.utils.data import DataLoader, TensorDataset
        full = TensorDataset(torch.randn(1000, 8), torch.randint(0, 2, (1000,)))
        train_set, val_set = data.random_split(full, [900, 100])
        train_it = DataLoader(train_set, batch_size=32, shuffle=True)
    """)),
]
