"""The recall corpus, round 32 part C: removed APIs of sets 56-57 (rulings R32, R33) - a DataLoader
iterator's Python-2 ``.next()``, torchvision's deleted ``transforms.functional_tensor`` and the call
of ``load_lua`` - each written in our own words and reduced to its shape, with look-alikes that must
stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW501 .next() of a DataLoader iterator
# Domain-adaptation and GAN loops of 2018-2021 draw one batch per step from two loaders with
# ``it.next()``; the alias went in torch 1.13.
FIND += [
    Shape("TW501", "two loader iterators stepped with .next() in a training loop", d("""
        import torch
        def train(loaders, steps):
            src_it = iter(loaders["src"])
            tgt_it = iter(loaders["tgt"])
            for step in range(steps):
                try:
                    xs, ys = src_it.next()
                except StopIteration:
                    src_it = iter(loaders["src"])
                    xs, ys = src_it.next()
                xt, _ = tgt_it.next()
    """), 7),
    Shape("TW501", "evaluation helper: iterator of the loader argument, one .next() per batch", d("""
        import torch
        def accuracy(loader, net):
            it = iter(loader)
            hits = 0
            for _ in range(len(loader)):
                images, labels = it.next()
                hits += (net(images).argmax(1) == labels).sum().item()
            return hits
    """), 6),
    Shape("TW501", "iterator kept on self, refreshed when exhausted", d("""
        from torch.utils.data import DataLoader
        class Runner:
            def __init__(self, data):
                self.val_dl = DataLoader(data, batch_size=4)
                self.val_it = iter(self.val_dl)
            def validate(self):
                batch = self.val_it.next()
                return batch
    """), 7),
    Shape("TW501", "one batch for display: iter(DataLoader built above).next()", d("""
        import torch
        from torch.utils.data import DataLoader
        def show(ds):
            cifar = DataLoader(ds, batch_size=16, shuffle=True)
            x, y = iter(cifar).next()
            print(x.shape)
    """), 5),
    Shape("TW501", "__iter__().next() on a loader in a smoke test", d("""
        import torch
        if __name__ == "__main__":
            dl = torch.utils.data.DataLoader(list(range(10)), batch_size=2)
            print(dl.__iter__().next())
    """), 4),
]
QUIET += [
    Shape("TW501", "look-alike: next(it) on a loader iterator", d("""
        import torch
        def first(train_loader):
            it = iter(train_loader)
            return next(it)
    """)),
    Shape("TW501", "look-alike: a data provider of the project with its own next()", d("""
        import torch
        class Provider:
            def __init__(self, seqs):
                self.seqs, self.i = seqs, 0
            def next(self):
                self.i += 1
            def batch(self):
                return self.seqs[self.i]
        def run(train_loader):
            handle = iter(train_loader)
            handle.next()
    """)),
    Shape("TW501", "look-alike: a sampler's own next(), not an iterator of a loader", d("""
        import torch
        def draw(sampler):
            idx = sampler.next()
            return idx
    """)),
    Shape("TW501", "look-alike: iterator of a plain list named like data", d("""
        import torch
        def walk(paths):
            it = iter(paths)
            return it.next()
    """)),
    Shape("TW501", "look-alike: enumerate of a loader, stepped with next()", d("""
        import torch
        def step(train_loader):
            it = enumerate(train_loader)
            i, batch = next(it)
            return batch
    """)),
]

# ------------------------------------------------------------- TW501 torchvision's functional_tensor
FIND += [
    Shape("TW501", "import of torchvision.transforms.functional_tensor under an alias", d("""
        import torch
        import torchvision.transforms.functional_tensor as FT
        def blur(x):
            return FT.gaussian_blur(x, [3, 3], [1.0, 1.0])
    """), 2),
    Shape("TW501", "from-import of a kernel of functional_tensor", d("""
        from torchvision.transforms.functional_tensor import rgb_to_grayscale
        def gray(x):
            return rgb_to_grayscale(x)
    """), 1),
]
QUIET += [
    Shape("TW501", "look-alike: the public functional module and the private _functional_tensor", d("""
        import torchvision.transforms.functional as TF
        from torchvision.transforms import _functional_tensor as FT
        def gray(x):
            return TF.rgb_to_grayscale(x), FT.rgb_to_grayscale(x)
    """)),
    Shape("TW501", "look-alike: functional_tensor import with an ImportError fallback", d("""
        try:
            from torchvision.transforms.functional_tensor import rgb_to_grayscale
        except ImportError:
            from torchvision.transforms.functional import rgb_to_grayscale
    """)),
]

# ------------------------------------------------------------- TW501 load_lua called by its bare name
FIND += [
    Shape("TW501", "load_lua called after a from-import (the call site)", d("""
        import torch
        from torch.utils.serialization import load_lua
        def vgg_weights(path):
            lua = load_lua(path)
            return lua.parameters()[0]
    """), 4),
]
QUIET += [
    Shape("TW501", "look-alike: a project function of its own called load_lua", d("""
        import torchfile
        def load_lua(path):
            return torchfile.load(path)
        def weights(path):
            return load_lua(path)
    """)),
]
