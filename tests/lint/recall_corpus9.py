"""The recall corpus, round 7 part B: classes the sixth set (a tuning set since round 7) missed -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW204 loaders kept elsewhere
# Pinned loaders built where the copying loop cannot name them: by a function of another module
# (the training script never says "loader" or "pin_memory"), in a dict comprehension iterated by
# key, or stored as a dict item and drawn with next()/__next__().
_BUILDERS = d("""
    from torch.utils.data import DataLoader
    def get_sets(path, batch_size):
        train = DataLoader(Clips(path, "train"), batch_size=batch_size, shuffle=True, num_workers=2, pin_memory={pin})
        test = DataLoader(Clips(path, "test"), batch_size=1, num_workers=1, pin_memory={pin})
        return train, test
""")
_SCRIPT = d("""
    import torch
    from data.sets import get_sets
    def run_epochs(model, opt, train_set, epochs):
        device = next(model.parameters()).device
        for epoch in range(epochs):
            for i, (x, y) in enumerate(train_set, 1):
                x, y = x.to(device), y.to(device)
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    def main(model, opt, path):
        train_set, test_set = get_sets(path, 32)
        run_epochs(model, opt, train_set, 10)
""")
PROJECTS += [
    ProjectShape("TW204", "a vocoder's loaders returned by a data module's function; the script names neither loader nor pin_memory", {
        "data/sets.py": _BUILDERS.format(pin="True"),
        "train.py": _SCRIPT,
    }, (("train.py", 7), ("train.py", 7))),
    ProjectShape("TW204", "look-alike: the data module's loaders are not pinned", {
        "data/sets.py": _BUILDERS.format(pin="False"),
        "train.py": _SCRIPT,
    }),
]
_SPLITS = """
    import torch
    from torch.utils.data import DataLoader
    loaders = {{split: DataLoader(folders[split], batch_size=32, shuffle=True, num_workers=2{pin})
               for split in ["train", "val"]}}
    def train(model, opt, epochs):
        for epoch in range(epochs):
            for phase in ["train", "val"]:
                for step, batch in enumerate(loaders[phase]):
                    images, labels = batch
                    images = images.cuda()
                    loss = torch.nn.functional.cross_entropy(model(images), labels.cuda())
"""
_EXTRA = """
    extra = {{}}
    extra["aux"] = DataLoader(aux_folder, batch_size=16, shuffle=True, drop_last=True{pin})
    aux_iter = enumerate(extra["aux"])
    def step(model):
        for epoch in range(10):
            try:
                _, batch = aux_iter.__next__()
            except StopIteration:
                aux_iter = enumerate(extra["aux"])
                _, batch = aux_iter.__next__()
            first, second = batch
            first = first.cuda().detach()
            model(first, second)
"""
FIND += [
    Shape("TW204", "re-identification: loaders built in a dict comprehension, the loop iterates loaders[phase]",
          d(_SPLITS.format(pin=", pin_memory=True")), 10),
    Shape("TW204", "an extra loader stored as a dict item, drawn with it.__next__() from enumerate(...) inside the loop",
          "import torch\nfrom torch.utils.data import DataLoader\n" + d(_EXTRA.format(pin=", pin_memory=True")), 14),
    Shape("TW204", "a dict literal of pinned loaders, a batch drawn with next(iter(loaders['train'])) every step", d("""
        import torch
        from torch.utils.data import DataLoader
        loaders = {"train": DataLoader(train_set, batch_size=8, pin_memory=True),
                   "val": DataLoader(val_set, batch_size=8, pin_memory=True)}
        for it in range(1000):
            x, y = next(iter(loaders["train"]))
            x = x.to("cuda")
    """), 7),
]
QUIET += [
    Shape("TW204", "the dict comprehension's loaders are not pinned (another loader of the file is)",
          d(_SPLITS.format(pin="") + "    side = DataLoader(other, batch_size=4, pin_memory=True)\n")),
    Shape("TW204", "the drawn dict item is unpinned while another item of the dict is pinned", (
        "import torch\nfrom torch.utils.data import DataLoader\n" + d(_EXTRA.format(pin=""))
        + 'extra["main"] = DataLoader(main_folder, batch_size=16, pin_memory=True)\n')),
    Shape("TW204", "copies with non_blocking=True from the pinned dict comprehension",
          d(_SPLITS.format(pin=", pin_memory=True").replace("images.cuda()", "images.cuda(non_blocking=True)").replace(
              "labels.cuda()", "labels.cuda(non_blocking=True)"))),
]
