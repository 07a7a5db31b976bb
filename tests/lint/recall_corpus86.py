"""The recall corpus, round 26 part C: loaders, checkpoints and samplers that sets 41 and 42
showed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW204 a pinned loader iterated through `with tqdm(...) as bar`
# The progress bar is opened as a context manager and the loop runs over the bar: the batches are
# still the pinned loader's.
FIND += [
    Shape("TW204", "with tqdm(loader) as bar: for x, y in bar: x.to(device)", d("""
        import torch
        from torch.utils.data import DataLoader
        from tqdm import tqdm
        def fit(ds, net, opt, device, epochs):
            loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
            for e in range(epochs):
                with tqdm(loader, dynamic_ncols=True) as bar:
                    for x, y in bar:
                        x = x.to(device)
                        loss = net(x, y.to(device, non_blocking=True)).mean()
                        opt.zero_grad(); loss.backward(); opt.step()
    """), 9),
    Shape("TW204", "with tqdm(enumerate(loader)) as it: each image copied with .cuda()", d("""
        import torch
        import tqdm
        def run(train_set, model, optim):
            loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=True, num_workers=8, pin_memory=True)
            with tqdm.tqdm(enumerate(loader), total=len(loader)) as it:
                for step, (img, lbl) in it:
                    out = model(img.cuda())
                    loss = torch.nn.functional.cross_entropy(out, lbl.cuda(non_blocking=True))
                    optim.zero_grad(); loss.backward(); optim.step()
    """), 7),
]
QUIET += [
    Shape("TW204", "look-alike: with tqdm(loader) over a loader that is not pinned", d("""
        import torch
        from torch.utils.data import DataLoader
        from tqdm import tqdm
        def fit(ds, net, opt, device):
            loader = DataLoader(ds, batch_size=64, num_workers=4)
            with tqdm(loader) as bar:
                for x, y in bar:
                    loss = net(x.to(device), y.to(device)).mean()
                    opt.zero_grad(); loss.backward(); opt.step()
    """)),
    Shape("TW204", "look-alike: with open(...) as f bound beside a pinned loader, the loop over a list", d("""
        import torch
        from torch.utils.data import DataLoader
        def fit(ds, paths, net, device):
            loader = DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)
            with open(paths) as f:
                for line in f:
                    t = torch.tensor([float(line)]).to(device)
                    net(t)
            for x, y in loader:
                net(x.to(device, non_blocking=True))
    """)),
]

# ------------------------------------------------------------- TW406 the sampler built every run, set_epoch only under a flag
FIND += [
    Shape("TW406", "if True:  # args.distributed: builds the sampler; set_epoch only if args.distributed", d("""
        import torch
        def main(args, train_set, model, optimizer):
            if True:  # args.distributed:
                sampler = torch.utils.data.DistributedSampler(train_set, num_replicas=args.world_size, rank=args.rank, shuffle=True)
            else:
                sampler = torch.utils.data.RandomSampler(train_set)
            loader = torch.utils.data.DataLoader(train_set, sampler=sampler, batch_size=args.batch_size)
            for epoch in range(args.epochs):
                if args.distributed:
                    loader.sampler.set_epoch(epoch)
                for x, y in loader:
                    optimizer.zero_grad(); model(x, y).backward(); optimizer.step()
    """), 4),
    Shape("TW406", "sampler built unconditionally; set_epoch under if self.ddp", d("""
        from torch.utils.data import DataLoader, DistributedSampler
        class Runner:
            def train(self, ds, net, opt):
                sampler = DistributedSampler(ds)
                loader = DataLoader(ds, sampler=sampler, batch_size=16)
                for epoch in range(self.epochs):
                    if self.ddp:
                        sampler.set_epoch(epoch)
                    for batch in loader:
                        opt.zero_grad(); net(batch).backward(); opt.step()
    """), 4),
]
QUIET += [
    Shape("TW406", "look-alike: sampler and set_epoch under the same flag", d("""
        import torch
        def main(args, train_set, model, optimizer):
            if args.distributed:
                sampler = torch.utils.data.DistributedSampler(train_set)
            else:
                sampler = None
            loader = torch.utils.data.DataLoader(train_set, sampler=sampler, shuffle=sampler is None, batch_size=8)
            for epoch in range(args.epochs):
                if args.distributed:
                    sampler.set_epoch(epoch)
                for x, y in loader:
                    optimizer.zero_grad(); model(x, y).backward(); optimizer.step()
    """)),
    Shape("TW406", "look-alike: set_epoch guarded by a test of the sampler itself", d("""
        import torch
        def main(args, train_set, model, optimizer):
            sampler = torch.utils.data.DistributedSampler(train_set)
            loader = torch.utils.data.DataLoader(train_set, sampler=sampler, batch_size=8)
            for epoch in range(args.epochs):
                if sampler is not None:
                    sampler.set_epoch(epoch)
                for x, y in loader:
                    optimizer.zero_grad(); model(x, y).backward(); optimizer.step()
    """)),
    Shape("TW406", "look-alike: the function returns early unless distributed, before the sampler", d("""
        import torch
        def main(args, train_set, model, optimizer):
            if args.distributed:
                torch.distributed.init_process_group("nccl")
            sampler = torch.utils.data.DistributedSampler(train_set)
            loader = torch.utils.data.DataLoader(train_set, sampler=sampler, batch_size=8)
            for epoch in range(args.epochs):
                if args.distributed:
                    sampler.set_epoch(epoch)
                for x, y in loader:
                    optimizer.zero_grad(); model(x, y).backward(); optimizer.step()
    """)),
]

# ------------------------------------------------------------- TW402 a save that first moves the object to the host
# An agent class whose save() calls its own method with device='cpu' (which moves every network
# with .cpu()) before torch.save; its classmethod loads that file back without map_location.
_AGENT = d("""
    import torch
    class Agents:
        def __init__(self, nets):
            self.nets = nets
            self.dev = "cpu"
        def prepare(self, device="gpu"):
            fn = (lambda m: m.cuda()) if device == "gpu" else (lambda m: m.cpu())
            if self.dev != device:
                self.nets = [fn(n) for n in self.nets]
                self.dev = device
        def save(self, path):
            self.prepare(device="cpu")
            torch.save({"nets": [n.state_dict() for n in self.nets]}, path)
        @classmethod
        def restore(cls, path, nets):
            blob = torch.load(path)
            inst = cls(nets)
            for n, sd in zip(inst.nets, blob["nets"]):
                n.load_state_dict(sd)
            return inst
""")
_TRAIN = d("""
    import torch
    from agents import Agents
    def main(nets, steps):
        team = Agents(nets)
        team.prepare(device="gpu")
        for _ in range(steps):
            loss = sum(n(torch.randn(4, 8).cuda()).sum() for n in team.nets)
            loss.backward()
        team.save("run/model.pt")
    if __name__ == "__main__":
        main([torch.nn.Linear(8, 2)], 10)
""")
_EVAL = d("""
    from agents import Agents
    import torch
    if __name__ == "__main__":
        team = Agents.restore("run/model.pt", [torch.nn.Linear(8, 2)])
        print(team.nets[0](torch.randn(1, 8)))
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: agents' save() calls self.prepare(device='cpu') (moves nets with .cpu()) before torch.save; "
                 "the classmethod restore loads it without map_location", {"agents.py": _AGENT, "train.py": _TRAIN, "evaluate.py": _EVAL}),
    ProjectShape("TW402", "the same project where prepare('cpu') only sets a flag (no .cpu() in it): the file holds CUDA tensors",
                 {"agents.py": _AGENT.replace("(lambda m: m.cpu())", "(lambda m: m)"), "train.py": _TRAIN, "evaluate.py": _EVAL},
                 (("agents.py", 16),)),
]
