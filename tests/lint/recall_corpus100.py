"""The recall corpus, round 29 part D: loaders that nothing ever reads (ruling R16) - a name bound
to a loader and never read after, a list that loaders are only appended to, a ``self`` attribute
unpacked from a method's return that no module reads - each written in our own words and reduced
to its shape, with look-alikes whose loaders are read and must still be reported.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW202/TW203 a loader nothing reads (R16)
_SMOKE = d("""
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    if __name__ == "__main__":
        tf = transforms.Compose([transforms.Resize(64), transforms.ToTensor()])
        faces = datasets.ImageFolder("faces/", transform=tf)
        loader = DataLoader(faces, batch_size=32, num_workers=2)
        for img, label in loader:
            print(img.shape, label)
        loader = DataLoader(faces, batch_size=8)
""")
_LISTS = d("""
    import torch
    from torch.utils.data import DataLoader
    from speech import Utterances, Trainer
    def main(args):
        device = torch.device("cuda")
        train = DataLoader(Utterances(args.train), batch_size=16, num_workers=4, pin_memory=True)
        dev_loaders, eval_loaders = [], []
        for path in args.dev:
            dev_loaders.append(DataLoader(Utterances(path), batch_size=16, num_workers=4, pin_memory=True))
        for path in args.eval:
            held_out = DataLoader(Utterances(path), batch_size=16, num_workers=4)
            eval_loaders.append(held_out)
        Trainer(device).fit(train, dev_loaders)
""")
_TRAIN_FN = d("""
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    def run(root, device):
        tf = transforms.ToTensor()
        train = DataLoader(datasets.MNIST(root, transform=tf), batch_size=64, num_workers=2, pin_memory=True)
        spare = DataLoader(datasets.MNIST(root, train=False, transform=tf), batch_size=64)
        for x, y in train:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
""")
QUIET += [
    Shape("TW202", "a smoke test's second loader, built as the file's last statement and never iterated", _SMOKE),
    Shape("TW203", "test loaders appended to a list that is never read (only the dev list reaches the trainer)", _LISTS),
    Shape("TW202", "a spare loader bound in a training function and never read after", _TRAIN_FN),
]
FIND += [
    Shape("TW202", "look-alike: the module-level loader a function defined above it iterates", d("""
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        def epoch(model):
            for x, y in loader:
                model(x)
        loader = DataLoader(datasets.MNIST("data", transform=transforms.ToTensor()), batch_size=64)
        epoch(None)
    """), 6),
    Shape("TW203", "look-alike: the list of test loaders is iterated after training", _LISTS + (
        "    for loader in eval_loaders:\n        Trainer(device).evaluate(loader)\n"), 11),
    Shape("TW202", "look-alike: a loader rebuilt inside a loop and read earlier in the loop body", d("""
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms
        def curriculum(root, sizes, model):
            loader = None
            for size in sizes:
                if loader is not None:
                    for x, y in loader:
                        model(x)
                loader = DataLoader(datasets.ImageFolder(root, transform=transforms.Resize(size)), batch_size=32)
    """), 9),
]

_CLIENT = d("""
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
    class Client:
        def __init__(self, args, data, idxs):
            self.args = args
            self.train_loader, self.val_loader, self.test_loader = self.split(data, idxs)
            self.device = "cuda" if args.gpu else "cpu"
        def split(self, data, idxs):
            n = len(idxs)
            train = DataLoader(torch.utils.data.Subset(data, idxs[: n * 8 // 10]), batch_size=10, shuffle=True)
            val = DataLoader(torch.utils.data.Subset(data, idxs[n * 8 // 10: n * 9 // 10]), batch_size=10)
            test = DataLoader(torch.utils.data.Subset(data, idxs[n * 9 // 10:]), batch_size=10)
            return train, val, test
        def update(self, model):
            for x, y in self.train_loader:
                model(x.to(self.device)).sum().backward()
        def score(self, model):
            for x, y in self.test_loader:
                model(x.to(self.device))
""")
_FED_MAIN = d("""
    from torchvision import datasets, transforms
    from client import Client
    data = datasets.MNIST("data", transform=transforms.ToTensor())
    def round_(args, model, users):
        for idxs in users:
            c = Client(args, data, idxs)
            c.update(model)
            c.score(model)
""")
PROJECTS += [
    ProjectShape("TW203", "a method's validation loader stored in self.val_loader, which no module reads", {
        "client.py": _CLIENT, "main.py": _FED_MAIN}, (("client.py", 11), ("client.py", 13))),
    ProjectShape("TW203", "look-alike: another module reads client.val_loader", {
        "client.py": _CLIENT, "main.py": _FED_MAIN + "        for x, y in c.val_loader:\n            model(x.cuda())\n"},
        (("client.py", 11), ("client.py", 12), ("client.py", 13))),
]
