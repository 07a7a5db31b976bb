"""The recall corpus, round 23 part E: classes sets 33-36 still missed or reported falsely for TW104,
TW103, TW302 and TW513 - each written in our own words and reduced to its shape, with look-alikes
that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 a __main__ check of a project-built model
# A script's equivalence check: the model comes from a builder of another module, is put in eval
# mode and run twice (before and after a re-parameterisation) with autograd on.
_BUILDERS = d("""
    import torch.nn as nn
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)
        def forward(self, x):
            return self.fc(x)
    def build_tiny(fused=False):
        return Tiny()
""")
PROJECTS += [
    ProjectShape("TW104", "__main__ check: builder of another module, eval(), two runs around a conversion", {
        "nets.py": _BUILDERS,
        "check.py": d("""
            import torch
            from nets import build_tiny
            if __name__ == "__main__":
                net = build_tiny(fused=False)
                net.eval()
                x = torch.randn(2, 8)
                before = net(x)
                for m in net.modules():
                    if hasattr(m, "fuse"):
                        m.fuse()
                after = net(x)
                print((before - after).abs().max())
        """),
    }, (("check.py", 7), ("check.py", 11))),
    ProjectShape("TW104", "look-alike: the same check under no_grad", {
        "nets.py": _BUILDERS,
        "check.py": d("""
            import torch
            from nets import build_tiny
            if __name__ == "__main__":
                net = build_tiny()
                net.eval()
                with torch.no_grad():
                    y = net(torch.randn(2, 8))
                print(y)
        """),
    }),
    ProjectShape("TW104", "look-alike: a builder from a library (not the project), run outside __main__", {
        "nets.py": _BUILDERS,
        "probe.py": d("""
            import torch
            import torchvision
            net = torchvision.models.resnet18()
            net.eval()
            print(net(torch.randn(1, 3, 64, 64)).shape)
        """),
    }),
]

# ------------------------------------------------------------- TW104 an eval-named helper the training backpropagates
_GAN = d("""
    import torch
    import torch.nn as nn
    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(1, 1, 3, padding=1)
        def forward(self, x):
            return self.conv(x)
    class Enhancer(nn.Module):
        def __init__(self):
            super().__init__()
            self.G = Generator()
        def infer_G(self, x):
            return self.G(x)
        def fit(self, loader, opt):
            for noisy, clean in loader:
                out = self.infer_G(noisy)
                loss = ((out - clean) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        def generate(self, wav):
            self.G.eval()
            chunks = []
            for piece in wav.split(1024, dim=-1):
                chunks.append(self.infer_G(piece).cpu().numpy())
            return chunks
    if __name__ == "__main__":
        print(Enhancer().generate(torch.randn(1, 1, 4096)))
""")
FIND += [
    Shape("TW104", "generate(): G.eval(), then an infer_*() helper the training step also backpropagates", _GAN, 26),
]
QUIET += [
    Shape("TW104", "look-alike: generate() calls the helper under no_grad", _GAN.replace(
        "        for piece in wav.split(1024, dim=-1):\n            chunks.append(",
        "        for piece in wav.split(1024, dim=-1):\n            with torch.no_grad():\n                chunks.append(")),
    Shape("TW104", "look-alike: the helper switches grad mode itself", _GAN.replace(
        "        return self.G(x)", "        with torch.set_grad_enabled(self.training):\n            return self.G(x)")),
]

# ------------------------------------------------------------- TW104 called under no_grad in one place, bare in another
_FLOW = """
    import torch
    def validate(loader, model):
        model.eval()
        total = 0.0
        for x, y in loader:
            total += (model(x) - y).abs().mean().item()
        return total
    def main(args, model, train_loader, val_loader, opt):
        if args.evaluate:
            {bare}
            return
        for epoch in range(args.epochs):
            for x, y in train_loader:
                loss = (model(x) - y).abs().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                validate(val_loader, model)
"""
FIND += [
    Shape("TW104", "validate() wrapped in no_grad in the epoch loop, called bare on the --evaluate path",
          d(_FLOW.format(bare="validate(val_loader, model)")), 6),
]
QUIET += [
    Shape("TW104", "look-alike: the --evaluate path wraps it too",
          d(_FLOW.format(bare="with torch.no_grad():\n                validate(val_loader, model)"))),
    Shape("TW104", "look-alike: the bare call only in a comment", d(_FLOW.format(bare="pass  # validate(val_loader, model)"))),
]

# ------------------------------------------------------------- TW104 a pass over the validation loader, no eval, no no_grad
_SEG = """
    import torch
    from torch.utils.data import DataLoader
    from nets import SegNet
    model = SegNet().cuda()
    opt = torch.optim.Adam(model.parameters())
    trainloader = DataLoader(train_set, batch_size=4, shuffle=True)
    valloader = DataLoader(val_set, batch_size=1)
    for epoch in range(100):
        for x, y in trainloader:
            loss = torch.nn.functional.binary_cross_entropy(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch % 10 == 0:
            for i, (x, y, *rest) in enumerate(valloader):
                {body}
                pred = out.detach().cpu().numpy() > 0.5
"""
FIND += [
    Shape("TW104", "segmentation script: every 10 epochs a pass over valloader runs the model bare",
          d(_SEG.format(body="out = model(x.cuda())")), 16),
    Shape("TW104", "a trainer method: pass over self.val_loader with the model bare, no eval()", d("""
        import torch
        class Trainer:
            def __init__(self, model, train_loader, val_loader, opt):
                self.model, self.train_loader, self.val_loader, self.opt = model, train_loader, val_loader, opt
            def run_epoch(self):
                for x, y in self.train_loader:
                    loss = torch.nn.functional.mse_loss(self.model(x), y)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
                scores = []
                for x, y in self.val_loader:
                    scores.append(torch.nn.functional.mse_loss(self.model(x), y).item())
                return sum(scores)
        if __name__ == "__main__":
            from setup import model, loaders, opt
            trainer = Trainer(model, *loaders, opt)
            for _ in range(10):
                trainer.run_epoch()
    """), 13),
]
QUIET += [
    Shape("TW104", "look-alike: the validation pass is under no_grad", d(_SEG.format(
        body="with torch.no_grad():\n                    out = model(x.cuda())"))),
    Shape("TW104", "look-alike: test-time adaptation backpropagates inside the pass over the loader", d(_SEG.format(
        body="out = model(x.cuda())\n                out.mean().backward()"))),
    Shape("TW104", "look-alike: a pass over the training loader (no evaluation)", d(_SEG.format(
        body="out = model(x.cuda())").replace("enumerate(valloader)", "enumerate(trainloader)"))),
]

# ------------------------------------------------------------- TW104 methods of a module class of another file
PROJECTS += [
    ProjectShape("TW104", "look-alike: a *_prediction helper of a model class whose nn.Module base is in another file", {
        "base.py": d("""
            import torch.nn as nn
            class BaseModel(nn.Module):
                pass
            class SeqModel(BaseModel):
                pass
        """),
        "s3.py": d("""
            import torch.nn as nn
            from base import SeqModel
            class Pretrain(SeqModel):
                def __init__(self):
                    super().__init__()
                    self.norm = nn.Linear(4, 4)
                def _item_prediction(self, h, e):
                    return (self.norm(h) * e).sum(-1).sigmoid()
                def forward(self, batch):
                    return self._item_prediction(batch["h"], batch["e"])
        """),
    }),
]

# ------------------------------------------------------------- TW513 a constructor kept on self by a base class
_BASE = d("""
    import torch
    class BaseModel:
        def initialize(self, opt):
            self.gpu_ids = opt.gpu_ids
            self.Tensor = torch.cuda.FloatTensor if self.gpu_ids else torch.Tensor
""")
PROJECTS += [
    ProjectShape("TW513", "pix2pix-style subclass in another module calls self.Tensor(n, c, h, w) and self.Tensor()", {
        "models/base_model.py": _BASE,
        "models/gan_model.py": d("""
            from .base_model import BaseModel
            class GanModel(BaseModel):
                def initialize(self, opt):
                    BaseModel.initialize(self, opt)
                    self.input_A = self.Tensor(opt.batch, 3, opt.size, opt.size)
                    self.buffer = self.Tensor()
        """),
    }, (("models/gan_model.py", 5), ("models/gan_model.py", 6))),
    ProjectShape("TW513", "look-alike: self.Tensor is whatever the caller hands (a parameter)", {
        "models/loss.py": d("""
            import torch
            class GANLoss:
                def __init__(self, tensor=torch.FloatTensor):
                    self.Tensor = tensor
                    self.scale = 2
        """),
        "models/use.py": d("""
            from .loss import GANLoss
            class Wrapped(GANLoss):
                def target(self, x):
                    return self.Tensor(x.size()).fill_(1.0)
        """),
    }),
]
FIND += [
    Shape("TW513", "self.Tensor(ndarray) in a closure of a method of the class that keeps it", d("""
        import torch
        class Solver:
            def __init__(self, use_gpu):
                self.Tensor = torch.cuda.FloatTensor if use_gpu else torch.FloatTensor
            def ensemble(self, x):
                def flip(v):
                    arr = v.cpu().numpy()[..., ::-1].copy()
                    return self.Tensor(arr)
                return [flip(x), x]
    """), 8),
]

# ------------------------------------------------------------- TW302 deterministic in main(), benchmark in the worker it calls
_MAIN = """
    import torch.backends.cudnn as cudnn
    import torch.multiprocessing as mp
    def main(args):
        if args.seed is not None:
            cudnn.deterministic = True
        if args.multiprocessing_distributed:
            mp.spawn(main_worker, nprocs=2, args=(args,))
        else:
            {call}
    def main_worker(gpu, args):
        cudnn.benchmark = True
"""
FIND += [
    Shape("TW302", "ImageNet-example layout: main() seeds deterministic, calls main_worker() which turns benchmark on",
          d(_MAIN.format(call="main_worker(args.gpu, args)")), 11),
]
QUIET += [
    Shape("TW302", "look-alike: main_worker only started by mp.spawn (a fresh process)", d(_MAIN.format(call="pass"))),
    Shape("TW302", "look-alike: the call is in the branch where the flag is not set", d("""
        import torch.backends.cudnn as cudnn
        def main(args):
            if args.seed is not None:
                cudnn.deterministic = True
            else:
                worker(args)
        def worker(args):
            cudnn.benchmark = True
    """)),
]

# ------------------------------------------------------------- TW103 forward bound to a name
_SOLVER = """
    import torch
    class Solver:
        def __init__(self, model):
            self.model = model
        def _chop(self, x):
            return x
        def test(self, lr):
            self.model.eval()
            with torch.no_grad():
                {line}
                return run(lr)
"""
FIND += [
    Shape("TW103", "SR solver: run = self._chop if chop else self.model.forward, then run(lr)",
          d(_SOLVER.format(line="run = self._chop if self.chop else self.model.forward")), 10),
]
QUIET += [
    Shape("TW103", "look-alike: the module itself is bound", d(_SOLVER.format(line="run = self._chop if self.chop else self.model"))),
    Shape("TW103", "look-alike: a wrapper patching forward keeps the original on purpose", d("""
        import torch
        def patch(model):
            orig = model.forward
            def wrapped(x):
                return orig(x) * 2
            model.forward = wrapped
            return model
    """)),
]
