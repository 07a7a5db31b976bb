"""The recall corpus, round 21 part C: classes sets 31 and 32 showed for TW204, TW205 and TW206 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204 a loader factory's branch, chosen by a flag
# A data module builds the training loader pinned under `if train:` and an unpinned one for the test
# split in the `else`; the training module is handed what `make_loader(cfg, train=True)` returns.
_FACTORY = d("""
    from torch.utils.data import DataLoader
    def make_loader(cfg, train):
        if train:
            return DataLoader(cfg.train_set, batch_size=cfg.bs, shuffle=True, num_workers=4, pin_memory=True)
        else:
            return DataLoader(cfg.test_set, batch_size=1, num_workers=0)
""")
_FIT = d("""
    def fit(model, opt, loader, evaluate_on):
        for spec, wave in loader:
            spec = spec.cuda()
            wave = wave.cuda()
            loss = model(spec, wave)
            opt.zero_grad()
            loss.backward()
            opt.step()
        for spec, wave in evaluate_on:
            model(spec.cuda(), wave.cuda())
""")
_MAIN = d("""
    from data.factory import make_loader
    from engine.fit import fit
    def main(cfg, model, opt):
        train_loader = make_loader(cfg, train=True)
        test_loader = make_loader(cfg, train=False)
        fit(model, opt, train_loader, test_loader)
""")
PROJECTS += [
    ProjectShape("TW204", "the training loader a factory pins under `if train:`, chosen by the caller's train=True",
                 {"data/factory.py": _FACTORY, "engine/fit.py": _FIT, "main.py": _MAIN},
                 (("engine/fit.py", 3), ("engine/fit.py", 4))),
    ProjectShape("TW204", "look-alike: the caller asks for the unpinned branch only (train=False)",
                 {"data/factory.py": _FACTORY, "engine/fit.py": _FIT,
                  "main.py": _MAIN.replace("train=True", "train=False")}),
]

# ------------------------------------------------------------- TW204 an evaluator object walking a pinned loader
FIND += [
    Shape("TW204", "an evaluator's __call__ copies the batches of the pinned loader its instance is called with", d("""
        import torch
        from torch.utils.data import DataLoader
        class SegEval:
            def __init__(self, n):
                self.n = n
            @torch.no_grad()
            def __call__(self, net, data):
                for img, lbl in data:
                    img = img.cuda()
                    net(img)
        def run(net, ds):
            val_loader = DataLoader(ds, batch_size=4, num_workers=4, pin_memory=True)
            ev = SegEval(19)
            return ev(net, val_loader)
        def preview(ds):
            return next(iter(DataLoader(ds, batch_size=16)))
    """), 9),
    Shape("TW204", "a loop over `tqdm(loader) if verbose else loader` of a pinned loader", d("""
        from torch.utils.data import DataLoader
        from tqdm import tqdm
        def train(model, opt, ds, dev, verbose):
            loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)
            for x in (tqdm(loader) if verbose else loader):
                x = x.to(dev)
                opt.zero_grad()
                model(x).mean().backward()
                opt.step()
    """), 6),
]
QUIET += [
    Shape("TW204", "look-alike: the evaluator's instance is called with an unpinned loader", d("""
        import torch
        from torch.utils.data import DataLoader
        class SegEval:
            def __call__(self, net, dl):
                for img, lbl in dl:
                    net(img.cuda())
        def run(net, ds, train_ds):
            fast = DataLoader(train_ds, batch_size=4, num_workers=4, pin_memory=True)
            dl = DataLoader(ds, batch_size=4, num_workers=4)
            ev = SegEval()
            return ev(net, dl), len(fast)
    """)),
    Shape("TW204", "look-alike: one arm of the conditional is an unpinned loader", d("""
        from torch.utils.data import DataLoader
        def train(model, opt, ds, dev, fast):
            pinned = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)
            plain = DataLoader(ds, batch_size=8)
            for x in (pinned if fast else plain):
                x = x.to(dev)
                opt.zero_grad()
                model(x).mean().backward()
                opt.step()
    """)),
]

# ------------------------------------------------------------- TW206 arrays handed in or returned
# A gradient-averaging helper writes a flat NumPy buffer back into the parameters slice by slice; every
# caller hands it an array (an all-reduced copy, a concatenation). A training script star-imports a
# target builder that returns a NumPy array and copies it with torch.tensor every batch.
_SYNC = d("""
    import numpy as np
    import torch
    def average_grads(net, comm):
        flat = _flatten(net)
        total = np.zeros_like(flat)
        comm.Allreduce(flat, total)
        _write_back(net, total / comm.size)
    def broadcast_params(net, comm):
        flat = _flatten(net)
        comm.Bcast(flat, root=0)
        _write_back(net, flat)
    def _flatten(net):
        return np.concatenate([p.grad.cpu().numpy().ravel() for p in net.parameters()])
    def _write_back(net, flat):
        at = 0
        for p in net.parameters():
            n = p.numel()
            p.grad.copy_(torch.tensor(flat[at:at + n]).view_as(p))
            at += n
""")
_TARGETS = d("""
    import numpy as np
    def heat_targets(size, boxes):
        out = np.zeros([len(boxes), size, size, 5])
        for i, b in enumerate(boxes):
            out[i, b[1], b[0], :4] = np.array(b[:4])
        return out
""")
_TRAIN = d("""
    import torch as t
    from helpers import *
    def main(model, loader, opt, device):
        for img, boxes in loader:
            target = heat_targets(64, boxes)
            target = t.tensor(target).float().to(device)
            loss = model(img.to(device), target)
            loss.backward()
            opt.step()
""")
PROJECTS += [
    ProjectShape("TW206", "a slice of a NumPy buffer every caller hands in, copied per parameter",
                 {"mpiutil/sync.py": _SYNC}, (("mpiutil/sync.py", 18),)),
    ProjectShape("TW206", "look-alike: one caller hands in a Python list",
                 {"mpiutil/sync.py": _SYNC.replace("    _write_back(net, flat)\n", "    _write_back(net, flat.tolist())\n")}),
    ProjectShape("TW206", "a star-imported helper's NumPy targets copied with torch.tensor every batch",
                 {"helpers.py": _TARGETS, "train.py": _TRAIN}, (("train.py", 6),)),
    ProjectShape("TW206", "look-alike: the helper returns a tensor on one path",
                 {"helpers.py": _TARGETS.replace("    return out", "    if size > 32:\n        return out\n"
                                                 "    return torch.from_numpy(out)").replace("import numpy as np",
                                                                                           "import numpy as np\nimport torch"),
                  "train.py": _TRAIN}),
    ProjectShape("TW206", "look-alike: the helper's array copied once, before training",
                 {"helpers.py": _TARGETS, "train.py": d("""
                     import torch as t
                     from helpers import *
                     def main(model, loader, opt, device, boxes):
                         prior = t.tensor(heat_targets(64, boxes)).to(device)
                         for img, _ in loader:
                             loss = model(img.to(device), prior)
                             loss.backward()
                             opt.step()
                 """)}),
]

# ------------------------------------------------------------- TW205 once per pass, once per evaluation
# An evaluator object allocates its confusion matrix before walking the loader: its __call__ runs
# once per evaluation. A batch generator draws its permutation before its loop: it runs once per
# pass over the data, the generator being the iterable of the training loop (or of a validation pass
# under a modulo test).
QUIET += [
    Shape("TW205", "look-alike: an evaluator's __call__ allocates before its own loop, called once", d("""
        import torch
        class ConfusionEval:
            def __init__(self, n):
                self.n = n
            @torch.no_grad()
            def __call__(self, net, dl):
                hist = torch.zeros(self.n, self.n).cuda()
                for img, lbl in dl:
                    pred = net(img.cuda()).argmax(1)
                    hist += torch.bincount(lbl.cuda() * self.n + pred, minlength=self.n ** 2).view(self.n, self.n)
                return hist
        def evaluate(net, dl):
            ev = ConfusionEval(19)
            return ev(net, dl)
    """)),
    Shape("TW205", "look-alike: a batch generator's permutation, once per pass of the training loop", d("""
        import torch
        def batches(X, bs, shuffle=False):
            if shuffle:
                idx = torch.randperm(X.shape[0])
            else:
                idx = torch.arange(X.shape[0])
            if X.is_cuda:
                idx = idx.cuda()
            for part in idx.split(bs):
                yield X[part]
        def train(model, opt, X, X_val, max_steps):
            step = 0
            while True:
                for x in batches(X, 128, shuffle=True):
                    loss = -model(x).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    step += 1
                    if step % 500 == 0:
                        with torch.no_grad():
                            val = sum(-model(xv).mean() for xv in batches(X_val, 512))
                if step >= max_steps:
                    break
    """)),
]
FIND += [
    Shape("TW205", "a per-item transform object whose __call__ loops, called for every batch", d("""
        import torch
        class Jitter:
            def __call__(self, x):
                noise = torch.randn(x.shape).cuda()
                for k in range(3):
                    x = x + noise * k
                return x
        def train(model, opt, loader):
            aug = Jitter()
            for x in loader:
                x = aug(x.cuda())
                opt.zero_grad()
                model(x).mean().backward()
                opt.step()
    """), 4),
    Shape("TW205", "a chunking generator called for every batch of the loader", d("""
        import torch
        def chunks(x, k):
            order = torch.randperm(x.shape[0]).cuda()
            for part in order.split(k):
                yield x[part]
        def train(model, opt, loader):
            for xb in loader:
                for x in chunks(xb.cuda(), 16):
                    opt.zero_grad()
                    model(x).mean().backward()
                    opt.step()
    """), 3),
]

# ------------------------------------------------------------- TW206 a dataset built once
_FP = d("""
    import numpy as np
    def fingerprint(mol, size):
        arr = np.zeros((size,))
        arr[hash(mol) % size] = 1
        return arr
""")
PROJECTS += [
    ProjectShape("TW206", "look-alike: a helper's arrays copied in the loop of a Dataset's _process(), which builds it once",
                 {"feats.py": _FP, "data.py": d("""
                     import pickle
                     import torch
                     from torch.utils.data import Dataset
                     from feats import fingerprint
                     class Prints(Dataset):
                         def __init__(self, mols, path):
                             self.mols, self.path = mols, path
                             self._process()
                         def _process(self):
                             rows = []
                             for m in self.mols:
                                 rows.append(torch.tensor(fingerprint(m, 512)))
                             with open(self.path, "wb") as f:
                                 pickle.dump(rows, f)
                             self.rows = rows
                         def __getitem__(self, i):
                             return self.rows[i]
                 """)}),
]
