"""The recall corpus, round 21 part D: classes sets 31 and 32 showed for TW104, TW202, TW203, TW215,
TW110 and TW103 (rulings R15, R16) - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 self.<net>.eval() then self.<net>(...)
# An evaluator object (no nn.Module) holding the generator puts it in eval mode and samples many
# batches for a score, with autograd on.
FIND += [
    Shape("TW104", "evaluator method: self.generator.eval() then a sampling loop over self.generator", d("""
        class Scorer(object):
            def __init__(self, generator, prior, n):
                self.generator = generator
                self.prior = prior
                self.n = n
            def fid(self):
                self.generator.eval()
                out = []
                while len(out) < self.n:
                    z = self.prior.sample((64,))
                    fake = self.generator(z)
                    out.extend(fake.cpu().numpy())
                return out
    """), 11),
]
QUIET += [
    Shape("TW104", "look-alike: self.generator.eval() then sampling under no_grad", d("""
        import torch
        class Scorer(object):
            def __init__(self, generator):
                self.generator = generator
            def samples(self, z):
                self.generator.eval()
                with torch.no_grad():
                    return self.generator(z)
    """)),
    Shape("TW104", "look-alike: self.env.eval() of a plain object, then self.policy run (no call of self.env)", d("""
        class Rollout:
            def __init__(self, env, policy):
                self.env = env
                self.policy = policy
            def go(self, obs):
                self.env.eval()
                return self.policy.act(obs)
    """)),
]

# ------------------------------------------------------------- TW104 a method reached only under no_grad
# A sliding-window evaluator: a chip helper named for evaluation runs the net, called only by the
# class's own methods, the outermost of which is decorated with @torch.no_grad().
_CROP = d("""
    import torch
    class SlidingEval(object):
        def __init__(self, size):
            self.size = size
        def eval_tile(self, net, tile):
            return net(tile).softmax(dim=1)
        def tiled_eval(self, net, im):
            out = torch.zeros_like(im)
            for i in range(0, im.shape[-1], self.size):
                out[..., i:i + self.size] += self.eval_tile(net, im[..., i:i + self.size])
            return out
        @torch.no_grad()
        def __call__(self, net, loader):
            for im in loader:
                yield self.tiled_eval(net, im)
""")
QUIET += [
    Shape("TW104", "look-alike: eval_tile reached only through methods of its class under a no_grad __call__", _CROP),
]
PROJECTS += [
    ProjectShape("TW104", "look-alike: the no_grad evaluator, used by another module through __call__",
                 {"ev.py": _CROP, "run.py": "from ev import SlidingEval\ndef main(net, dl):\n    return list(SlidingEval(64)(net, dl))\n"}),
    ProjectShape("TW104", "another module calls eval_tile itself, with autograd on",
                 {"ev.py": _CROP, "run.py": "from ev import SlidingEval\ndef main(net, x):\n    return SlidingEval(64).eval_tile(net, x)\n"},
                 (("ev.py", 6),)),
]

# ------------------------------------------------------------- TW104 sub-commands of fire.Fire()
# A script whose functions are command-line sub-commands through a bare fire.Fire(): nothing in the
# project calls gen_poem(), yet it runs; its generation after model.eval() keeps a graph.
_FIRE = d("""
    import torch
    from model import PoemNet
    def gen_poem(start='a', path='w.pth'):
        model = PoemNet(100)
        model.load_state_dict(torch.load(path, map_location='cpu'))
        model.eval()
        res = [1]
        for _ in range(50):
            logits = model(torch.tensor(res)[:, None])
            res.append(logits[-1, 0].argmax().item())
        return res
    if __name__ == '__main__':
        import fire
        fire.Fire()
""")
_POEM = "import torch.nn as nn\nclass PoemNet(nn.Module):\n    def forward(self, x):\n        return x\n"
PROJECTS += [
    ProjectShape("TW104", "a fire.Fire() sub-command generating after model.eval()", {"main.py": _FIRE, "model.py": _POEM},
                 (("main.py", 9),)),
    ProjectShape("TW104", "look-alike: Fire(component) exposes only that component; gen_poem is dead",
                 {"main.py": _FIRE.replace("fire.Fire()", "fire.Fire(dict(other=print))"), "model.py": _POEM}),
]

# ------------------------------------------------------------- TW202 num_workers handed down from an option
# A data module's helper builds the loaders with num_workers=num_workers; the only caller, the
# training script, passes args.workers whose option defaults to 0.
_SPLIT = d("""
    from torch.utils.data import DataLoader
    def make_loaders(dataset, batch_size=64, num_workers=2):
        train = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers)
        val = DataLoader(dataset, batch_size=batch_size, num_workers=num_workers)
        return train, val
""")
_SPLIT_MAIN = d("""
    import argparse
    from crystal.data import make_loaders
    from crystal.dataset import CrystalSet
    p = argparse.ArgumentParser()
    p.add_argument('-j', '--workers', default=0, type=int)
    args = p.parse_args()
    train, val = make_loaders(CrystalSet('root'), num_workers=args.workers)
    for epoch in range(10):
        for x in train:
            pass
""")
_CRYSTAL = d("""
    import json
    import torch
    from torch.utils.data import Dataset
    class CrystalSet(Dataset):
        def __init__(self, root):
            self.files = sorted(root)
        def __len__(self):
            return len(self.files)
        def __getitem__(self, i):
            with open(self.files[i]) as f:
                return torch.tensor(json.load(f)['x'])
""")
PROJECTS += [
    ProjectShape("TW202", "helper's num_workers parameter filled only with an option defaulting to 0",
                 {"crystal/data.py": _SPLIT, "main.py": _SPLIT_MAIN, "crystal/dataset.py": _CRYSTAL},
                 (("crystal/data.py", 3),)),  # (val is never iterated: R16)
    ProjectShape("TW202", "look-alike: the option defaults to 4",
                 {"crystal/data.py": _SPLIT, "main.py": _SPLIT_MAIN.replace("default=0", "default=4"),
                  "crystal/dataset.py": _CRYSTAL}),
    ProjectShape("TW202", "look-alike: another caller leaves the parameter at its default of 2",
                 {"crystal/data.py": _SPLIT, "main.py": _SPLIT_MAIN, "crystal/dataset.py": _CRYSTAL,
                  "predict.py": "from crystal.data import make_loaders\ndef run(ds):\n    return make_loaders(ds)\n"}),
]

# ------------------------------------------------------------- TW202/TW203 loaders never iterated (R16)
# A visualisation script reuses a dataset helper that builds two loaders; it keeps only the
# test loader's .dataset and indexes it, or draws one batch with __iter__().__next__().
_VIZ = d("""
    import torch
    import torchvision.datasets as dset
    import torchvision.transforms as T
    def get_data(root, bs):
        tr = dset.CIFAR10(root, train=True, transform=T.ToTensor())
        te = dset.CIFAR10(root, train=False, transform=T.ToTensor())
        train_loader = torch.utils.data.DataLoader(dataset=tr, batch_size=bs, shuffle=True)
        test_loader = torch.utils.data.DataLoader(dataset=te, batch_size=bs)
        return train_loader, test_loader
    def build(root):
        train_loader, test_loader = get_data(root, 64)
        return test_loader.dataset
    if __name__ == '__main__':
        device = torch.device('cuda')
        data = build('data')
        xs = torch.stack([data[i][0] for i in range(16)]).to(device)
""")
_ONE_BATCH = d("""
    import torch
    import torchvision.datasets as dset
    import torchvision.transforms as T
    from flows import make_flow
    if __name__ == '__main__':
        device = torch.device('cuda')
        ds = dset.MNIST('data', transform=T.ToTensor())
        model = make_flow().to(device)
        loader = torch.utils.data.DataLoader(dataset=ds, batch_size=64, shuffle=True)
        x, _ = loader.__iter__().__next__()
        z = model(x.to(device))
""")
for _code in ("TW202", "TW203"):
    PROJECTS += [
        ProjectShape(_code, "look-alike: loaders of a helper whose only caller keeps test_loader.dataset (R16)",
                     {"viz.py": _VIZ, "flows.py": "def make_flow():\n    pass\n"}),
        ProjectShape(_code, "look-alike: one batch drawn with loader.__iter__().__next__() (R16)",
                     {"viz2.py": _ONE_BATCH, "flows.py": "def make_flow():\n    pass\n"}),
        ProjectShape(_code, "the helper's caller iterates the train loader",
                     {"viz.py": _VIZ.replace("return test_loader.dataset", "for x, _ in train_loader:\n        x = x.to('cuda')\n"
                                             "    return test_loader.dataset"),
                      "flows.py": "def make_flow():\n    pass\n"},
                     (("viz.py", 7),)),
    ]

# ------------------------------------------------------------- TW215 DDP built by a helper with a long signature
# The wrapping helper's signature spans several lines (one parameter per line, a return annotation
# on the closing line); the trainer accumulates gradients over micro-steps without no_sync.
_SETUP = d("""
    import torch
    def setup_distributed(
        model,
        device,
        local_rank: int = -1,
    ) -> torch.nn.Module:
        model.to(device)
        if local_rank != -1:
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
        return model
""")
_TRAINER = d("""
    from utils.dist import setup_distributed
    class Trainer:
        def __init__(self, cfg, model, opt):
            self.model = setup_distributed(model, cfg.device, cfg.local_rank)
            self.opt = opt
            self.cfg = cfg
        def epoch(self, batches):
            for i, b in enumerate(batches):
                loss = self.model(b).mean()
                loss.backward()
                if (i + 1) % self.cfg.accum == 0:
                    self.opt.step()
                    self.model.zero_grad()
""")
PROJECTS += [
    ProjectShape("TW215", "accumulation in a trainer whose DDP wrapper is a helper with a multi-line signature",
                 {"utils/dist.py": _SETUP, "train.py": _TRAINER}, (("train.py", 10),)),
    ProjectShape("TW215", "look-alike: the helper wraps in DataParallel only",
                 {"utils/dist.py": _SETUP.replace("torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])",
                                                  "torch.nn.DataParallel(model)"), "train.py": _TRAINER}),
]

# ------------------------------------------------------------- TW110 hand-written update, no clearing
FIND += [
    Shape("TW110", "backward then an all-reduced manual update over named_parameters, nothing clears .grad", d("""
        import torch
        def fit(model, loader, comm, lr, size):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                for name, p in model.named_parameters():
                    g = comm.allreduce(p.grad.cpu()) / size
                    p.data -= lr * g.to(p.device)
    """), 5),
    Shape("TW110", "plain SGD by hand with p.data.add_(p.grad, alpha=-lr)", d("""
        import torch
        def fit(net, batches, lr):
            for x, y in batches:
                ((net(x) - y) ** 2).mean().backward()
                with torch.no_grad():
                    for p in net.parameters():
                        p.data.add_(p.grad, alpha=-lr)
    """), 4),
]
QUIET += [
    Shape("TW110", "look-alike: the manual update sets p.grad = None", d("""
        import torch
        def fit(net, batches, lr):
            for x, y in batches:
                ((net(x) - y) ** 2).mean().backward()
                with torch.no_grad():
                    for p in net.parameters():
                        p -= lr * p.grad
                        p.grad = None
    """)),
    Shape("TW110", "look-alike: model.zero_grad() before backward", d("""
        def fit(net, batches, lr):
            for x, y in batches:
                net.zero_grad()
                ((net(x) - y) ** 2).mean().backward()
                for p in net.parameters():
                    p.data.sub_(lr * p.grad.data)
    """)),
    Shape("TW110", "look-alike: a parameter loop reading no gradient (an EMA copy)", d("""
        def fit(net, ema, batches):
            for x, y in batches:
                ((net(x) - y) ** 2).mean().backward()
                for p, q in zip(ema.parameters(), net.parameters()):
                    p.data -= 0.01 * (p.data - q.data)
    """)),
]

# ------------------------------------------------------------- TW103 forward() in a __main__ smoke test (R15)
FIND += [
    Shape("TW103", "net.forward(x, y) in the __main__ demo of a model file", d("""
        import torch
        import torch.nn as nn
        class Bilinear(nn.Module):
            def forward(self, x, y):
                return x * y
        if __name__ == '__main__':
            net = Bilinear()
            x = torch.randn(2, 4)
            print(net.forward(x, x).shape)
    """), 9),
    Shape("TW103", "video model zoos: the __main__ smoke test calls net.forward once to print a shape (was a "
          "look-alike in recall_corpus3 before R15)", d("""
        import torch
        import torch.nn as nn
        class C3D(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            inputs = torch.rand(1, 3, 16, 112, 112)
            net = C3D(num_classes=101)
            outputs = net.forward(inputs)
            print(outputs.size())
    """), 9, path="network/C3D_model.py"),
]
