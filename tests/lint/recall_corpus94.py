"""The recall corpus, round 28 part B: loader classes (TW202, TW203) that sets 45 and 46 showed on
their first look - each written in our own words and reduced to its shape, with look-alikes that
must stay reported. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW202 a one-time conversion pass
# A continual-learning data module turns a torchvision dataset into stacked tensors once, walking a
# loader of single items; training then slices the tensors and never iterates a loader.
QUIET += [
    Shape("TW202", "single-item loader walked once to gather samples, stacked and cached", d("""
        import os
        import torch
        from torchvision import datasets, transforms
        def build(root):
            splits = {}
            for part in ("train", "test"):
                ds = datasets.SVHN(root, split=part, download=True, transform=transforms.ToTensor())
                walker = torch.utils.data.DataLoader(ds, batch_size=1, shuffle=False)
                xs, ys = [], []
                for img, lab in walker:
                    xs.append(img.squeeze(0))
                    ys.append(int(lab.item()))
                splits[part] = (torch.stack(xs), torch.tensor(ys))
                torch.save(splits[part], os.path.join(root, part + ".pt"))
            return splits
    """)),
    Shape("TW202", "loader with the default batch size, items permuted with NumPy, then concatenated", d("""
        import numpy as np
        import torch
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        def permuted(root, seed):
            rng = np.random.RandomState(seed)
            perm = rng.permutation(784)
            ds = datasets.KMNIST(root, train=True, download=True, transform=transforms.ToTensor())
            out = {"x": [], "y": []}
            for pic, cls in DataLoader(ds):
                flat = pic.view(-1).numpy()[perm]
                out["x"].append(torch.from_numpy(flat).view(1, 28, 28))
                out["y"].append(cls.numpy()[0])
            return torch.cat(out["x"]), np.array(out["y"])
    """)),
]
FIND += [
    Shape("TW202", "look-alike: single-item loader whose loop runs the model before gathering", d("""
        import torch
        from torchvision import datasets, transforms
        def predict(net, root):
            ds = datasets.SVHN(root, split="test", transform=transforms.ToTensor())
            loader = torch.utils.data.DataLoader(ds, batch_size=1)
            outs = []
            for img, _ in loader:
                outs.append(net(img))
            return torch.cat(outs)
    """), 5),
    Shape("TW202", "look-alike: gathering loop that copies each item to the GPU", d("""
        import torch
        from torchvision import datasets, transforms
        def to_gpu_bank(root):
            ds = datasets.SVHN(root, split="train", transform=transforms.ToTensor())
            loader = torch.utils.data.DataLoader(ds, batch_size=1)
            bank = []
            for img, _ in loader:
                bank.append(img.cuda())
            return torch.stack(bank)
    """), 5),
    Shape("TW202", "look-alike: batches of 64 gathered (a real pass over batches, not single items)", d("""
        import torch
        from torchvision import datasets, transforms
        def gather(root):
            ds = datasets.SVHN(root, split="train", transform=transforms.ToTensor())
            loader = torch.utils.data.DataLoader(ds, batch_size=64)
            xs = []
            for img, _ in loader:
                xs.append(img)
            return torch.cat(xs)
    """), 5),
    Shape("TW202", "look-alike: single-item loader gathered but also handed to a trainer", d("""
        import torch
        from torchvision import datasets, transforms
        def run(root, fit):
            ds = datasets.SVHN(root, split="train", transform=transforms.ToTensor())
            loader = torch.utils.data.DataLoader(ds, batch_size=1)
            xs = []
            for img, _ in loader:
                xs.append(img)
            fit(loader)
            return torch.cat(xs)
    """), 5),
]

# ------------------------------------------------------------- TW202/TW203 loaders that are never iterated (R16)
# A tutorial builds a training loader, then cuts the dataset with random_split and builds the loader
# again under the same name before any loop; another draws one batch per epoch with the Python 2
# spelling iter(loader).next() for a picture.
_REBOUND = d("""
    import torch
    from torchvision import datasets, transforms
    device = torch.device("cuda")
    full = datasets.FashionMNIST("data", train=True, download=True, transform=transforms.ToTensor())
    loader_tr = torch.utils.data.DataLoader(full, batch_size=128, shuffle=True)
    part_a, part_b = torch.utils.data.random_split(full, [55000, 5000])
    loader_tr = torch.utils.data.DataLoader(part_a, batch_size=128, shuffle=True)
    def train(net, opt):
        for x, y in loader_tr:
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_PICTURE = d("""
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    def main(net, opt, show):
        device = torch.device("cuda")
        tr = DataLoader(datasets.FashionMNIST("d", True, transform=transforms.ToTensor()), batch_size=32, num_workers=2, pin_memory=True)
        te = DataLoader(datasets.FashionMNIST("d", False, transform=transforms.ToTensor()), batch_size=32)
        for epoch in range(100):
            for x, _ in tr:
                x = x.to(device, non_blocking=True)
                loss = net(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            x, _ = iter(te).next()
            with torch.no_grad():
                show(net(x.to(device)))
""")
QUIET += [
    Shape("TW202", "loader rebound over a random_split part before any loop uses it", _REBOUND.replace(
        "loader_tr = torch.utils.data.DataLoader(part_a, batch_size=128, shuffle=True)",
        "loader_tr = torch.utils.data.DataLoader(part_a, batch_size=128, shuffle=True, num_workers=4, pin_memory=True)")),
    Shape("TW203", "loader rebound over a random_split part before any loop uses it", _REBOUND.replace(
        "loader_tr = torch.utils.data.DataLoader(part_a, batch_size=128, shuffle=True)",
        "loader_tr = torch.utils.data.DataLoader(part_a, batch_size=128, shuffle=True, num_workers=4, pin_memory=True)")),
    Shape("TW202", "one batch per epoch drawn with iter(loader).next() for a picture", _PICTURE),
    Shape("TW203", "one batch per epoch drawn with iter(loader).next() for a picture", _PICTURE),
]
FIND += [
    Shape("TW202", "look-alike: the first loader is iterated before it is rebound", _REBOUND.replace(
        "part_a, part_b =", "for _x, _y in loader_tr:\n    print(_x.shape)\npart_a, part_b ="), 5),
    Shape("TW202", "look-alike: the rebound loader itself, iterated by the training loop", _REBOUND, 7),
    Shape("TW203", "look-alike: the rebound loader itself, iterated by the training loop", _REBOUND, 7),
]

# ------------------------------------------------------------- TW203 loaders of DGL graph batches
# A graph-learning script collates its samples with dgl.batch; DataLoader's pin_memory pins tensors,
# not graphs, so the missing flag changes nothing.
_GRAPHS = d("""
    import dgl
    import torch
    from torch.utils.data import DataLoader
    def collate(samples):
        graphs, labels = map(list, zip(*samples))
        merged = dgl.batch(graphs)
        return merged, torch.tensor(labels)
    def train(model, dataset, opt, device):
        loader = DataLoader(dataset, batch_size=32, shuffle=True, collate_fn=collate, num_workers=4)
        for g, y in loader:
            g, y = g.to("cuda:0"), y.cuda()
            loss = torch.nn.functional.cross_entropy(model(g, g.ndata["feat"]), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_FACTORY = d("""
    import dgl
    import torch
    def pair_batcher():
        def merge(batch):
            left, right = zip(*batch)
            left, right = dgl.batch(left), dgl.batch(right)
            return left, right
        return merge
    def tagged_batcher():
        def merge(batch):
            graphs, tags = zip(*batch)
            return dgl.batch(graphs), torch.LongTensor(tags)
        return merge
    def pretrain(model, ds, args):
        loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=4,
                                             collate_fn=tagged_batcher() if args.tuned else pair_batcher())
        for a, b in loader:
            out = model(a.to(torch.device("cuda")))
""")
QUIET += [
    Shape("TW203", "collate function of the file returns dgl.batch(graphs) first", _GRAPHS),
    Shape("TW203", "collate factories (inner def) in both arms of a conditional return DGL batches", _FACTORY),
]
FIND += [
    Shape("TW203", "look-alike: the collate returns the label tensor first and the graph second", _GRAPHS.replace(
        "return merged, torch.tensor(labels)", "return torch.tensor(labels), merged").replace(
        "for g, y in loader:", "for y, g in loader:"), 9),
    Shape("TW203", "look-alike: the collate of a DGL script stacks node features into tensors", _GRAPHS.replace(
        "merged = dgl.batch(graphs)", "merged = torch.stack([x.ndata['feat'].sum(0) for x in graphs])"), 9),
    Shape("TW203", "look-alike: only one arm of the conditional batches graphs", _FACTORY.replace(
        "if args.tuned else pair_batcher()", "if args.tuned else None"), 15),
]
