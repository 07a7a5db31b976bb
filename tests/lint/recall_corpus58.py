"""The recall corpus, round 20 part D: classes sets 29 and 30 showed for TW501, TW502, TW505, TW509,
TW105, TW101, TW215, TW218, TW506 and TW214 - each written in our own words and reduced to its
shape, with look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW501 torch._six reached as an attribute
# A dataset base class copied from an old torchvision checks its root with torch._six's string types;
# the module went in PyTorch 2.0, so the attribute lookup fails although `import torch` works.
FIND += [
    Shape("TW501", "torch._six.string_classes in an isinstance test of a dataset base", d("""
        import os
        import torch
        class FolderBase(torch.utils.data.Dataset):
            def __init__(self, root):
                if isinstance(root, torch._six.string_classes):
                    root = os.path.expanduser(root)
                self.root = root
    """), 5),
    Shape("TW501", "torch._six.inf as a default norm type", d("""
        import torch
        def clip(params, max_norm, norm_type=2):
            if norm_type == torch._six.inf:
                return max(p.grad.abs().max() for p in params)
    """), 3),
]
QUIET += [
    Shape("TW501", "look-alike: the lookup inside try, falling back to str on AttributeError", d("""
        import torch
        try:
            STR_TYPES = torch._six.string_classes
        except AttributeError:
            STR_TYPES = str
    """)),
    Shape("TW501", "look-alike: math.inf and the built-in str", d("""
        import math
        import torch
        def ok(x):
            return isinstance(x, str) or x == math.inf
    """)),
]

# ------------------------------------------------------------- TW509 a thin wrapper handing **kwargs on
# An FID module wraps torchvision's Inception builder to switch its weight init off, handing every
# other argument on; the callers pass the old boolean flag through it.
FIND += [
    Shape("TW509", "pretrained=True through a module function that hands **kwargs to inception_v3", d("""
        import torchvision
        def _make_inception(*args, **kwargs):
            kwargs["init_weights"] = False
            return torchvision.models.inception_v3(*args, **kwargs)
        net = _make_inception(pretrained=True)
    """), 5),
    Shape("TW509", "pretrained=False among other keywords through a resnet wrapper", d("""
        from torchvision import models
        def backbone(**kw):
            return models.resnet50(**kw)
        feat = backbone(num_classes=10, pretrained=False)
    """), 4),
]
QUIET += [
    Shape("TW509", "look-alike: a wrapper that translates pretrained itself (weights= to torchvision)", d("""
        import torchvision
        def _make_inception(*args, **kwargs):
            if kwargs.pop("pretrained", False):
                kwargs["weights"] = "DEFAULT"
            return torchvision.models.inception_v3(*args, **kwargs)
        net = _make_inception(pretrained=True)
    """)),
    Shape("TW509", "look-alike: a wrapper around the project's own model class", d("""
        import torchvision
        from nets import TinyNet
        def build(**kw):
            return TinyNet(**kw)
        net = build(pretrained=True)
    """)),
]

# ------------------------------------------------------------- TW505 re-exported objects of private modules
FIND += [
    Shape("TW505", "from torch._ops import ops (public: torch.ops)", d("""
        import torch
        from torch._ops import ops
        def fused(x):
            return ops.mylib.fused_op(x)
    """), 2),
    Shape("TW505", "torch._ops.ops as the head of a custom-op chain", d("""
        import torch
        import torch._ops
        def fused(x):
            return torch._ops.ops.mylib.fused_op(x)
    """), 4),
]
QUIET += [
    Shape("TW505", "look-alike: the public torch.ops", d("""
        import torch
        from torch.ops import aten
        def fused(x):
            return torch.ops.mylib.fused_op(x)
    """)),
]

# ------------------------------------------------------------- TW105 log of a project module's sigmoid output
# A polyphonic-music script writes binary cross-entropy by hand from the output of a network whose
# forward ends in nn.Sigmoid; the network is defined in another module of the project.
_SIG_MODEL = d("""
    from torch import nn
    class NoteNet(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)
            self.act = nn.Sigmoid()
        def forward(self, x):
            h = self.fc(x)
            return self.act(h)
""")
_SIG_TRAIN = d("""
    import torch
    from music.model import NoteNet
    model = NoteNet(88)
    def train(batches, opt):
        for x, y in batches:
            out = model(x.unsqueeze(0)).squeeze(0)
            loss = -(y * torch.log(out) + (1 - y) * torch.log(1 - out)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    train([], None)
    model = torch.load("best.pt")
""")
PROJECTS += [
    ProjectShape("TW105", "log(p) and log(1 - p) of a project module's sigmoid output (class in another file)",
                 {"music/model.py": _SIG_MODEL, "music/train.py": _SIG_TRAIN}, (("music/train.py", 7), ("music/train.py", 7))),
    ProjectShape("TW105", "look-alike: the same BCE with an epsilon in both logs",
                 {"music/model.py": _SIG_MODEL,
                  "music/train.py": _SIG_TRAIN.replace("torch.log(out)", "torch.log(out + 1e-7)").replace(
                      "torch.log(1 - out)", "torch.log(1 - out + 1e-7)")}),
    ProjectShape("TW105", "look-alike: the module's forward returns logits",
                 {"music/model.py": _SIG_MODEL.replace("return self.act(h)", "return h"), "music/train.py": _SIG_TRAIN}),
]

# ------------------------------------------------------------- TW101 a total reset only where it is logged
FIND += [
    Shape("TW101", "train_loss += loss after backward, reset only in the log-interval branch", d("""
        import torch.nn.functional as F
        def train(model, loader, optimizer, log_interval):
            train_loss = 0
            for i, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.nll_loss(model(x), y)
                loss.backward()
                optimizer.step()
                train_loss += loss
                if i > 0 and i % log_interval == 0:
                    print(train_loss.item() / log_interval)
                    train_loss = 0
    """), 9),
]
QUIET += [
    Shape("TW101", "look-alike: a loss known only by name in a Caffe2/NumPy script (no torch import)", d("""
        import numpy as np
        from caffe2.python import workspace
        def evaluate(net, batches):
            total = 0.0
            for b in batches:
                workspace.RunNet(net.name)
                loss = net.get_loss()
                total += loss * len(b)
            print("test loss", total)
    """)),
]

# ------------------------------------------------------------- TW502 a scheduler handed into a helper
# A language-model project builds its only scheduler (a LambdaLR warm-up) in one helper and restores
# its step count in a checkpoint helper that takes the scheduler as a parameter.
_SCHED_UTILS = d("""
    import torch
    def make_scheduler(optimizer, warmup):
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda it: min(1, it / warmup))
    def restore(path, model, optimizer, scheduler):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        if "sched_iter" in state:
            scheduler.step(state["sched_iter"])
        return state["iter"]
""")
PROJECTS += [
    ProjectShape("TW502", "scheduler.step(n) in a helper taking the scheduler, the project building only LambdaLR",
                 {"utils.py": _SCHED_UTILS}, (("utils.py", 8),)),
    ProjectShape("TW502", "look-alike: the project also builds ReduceLROnPlateau (step(metric) is its API)",
                 {"utils.py": _SCHED_UTILS,
                  "train.py": "import torch\ndef plateau(opt):\n    return torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\n"}),
    ProjectShape("TW502", "look-alike: a scheduler class of the project's own",
                 {"utils.py": _SCHED_UTILS,
                  "sched.py": "class WarmupScheduler:\n    def step(self, it):\n        self.it = it\n"}),
]

# ------------------------------------------------------------- TW215 a backward helper called per part of the batch
_SPLIT_TRAINER = d("""
    import torch
    def _step(model, x, y, div):
        loss = torch.nn.functional.nll_loss(model(x), y)
        (loss / div).backward()
        return loss.item()
    def _batch(model, optimizer, x, y, split):
        optimizer.zero_grad()
        size = x.size(0) // split
        for k in range(split):
            part = slice(k * size, (k + 1) * size)
            _step(model, x[part], y[part], split)
        optimizer.step()
    def train_iteration(model, optimizer, batches, split):
        for x, y in batches:
            _batch(model, optimizer, x, y, split)
""")
_SPLIT_MAIN = d("""
    import torch
    from trainer import train_iteration
    def main(model, optimizer, batches, args):
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.rank])
        train_iteration(model, optimizer, batches, args.batch_split)
""")
PROJECTS += [
    ProjectShape("TW215", "a helper's backward once per part of the batch, one step after the loop, DDP in the caller's file",
                 {"trainer.py": _SPLIT_TRAINER, "main.py": _SPLIT_MAIN}, (("trainer.py", 4),)),
    ProjectShape("TW215", "look-alike: the caller's file syncs through no_sync",
                 {"trainer.py": _SPLIT_TRAINER.replace("_step(model, x[part], y[part], split)",
                                                       "with model.no_sync():\n                _step(model, x[part], y[part], split)"),
                  "main.py": _SPLIT_MAIN}),
    ProjectShape("TW215", "look-alike: no file wraps the model in DistributedDataParallel",
                 {"trainer.py": _SPLIT_TRAINER, "main.py": _SPLIT_MAIN.replace("torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel")}),
]

# ------------------------------------------------------------- TW218 a whole model halved for fp16 evaluation
QUIET += [
    Shape("TW218", "look-alike (lead, after round 20): an evaluation script halving its model behind --float16 - pure fp16 inference is a legitimate choice; TW218 is about training", d("""
        import torch
        from nets import Detector
        def evaluate(weights, use_float16):
            model = Detector()
            model.load_state_dict(torch.load(weights))
            model.eval()
            model.cuda()
            if use_float16:
                model.half()
            return model
    """)),
    Shape("TW218", "look-alike: the fp16 setting is a module constant that is off", d("""
        import torch
        from nets import Detector
        use_float16 = False
        model = Detector().eval()
        if use_float16:
            model = model.half()
    """)),
    Shape("TW218", "look-alike: an export script halving the model for ONNX", d("""
        import torch
        from nets import Detector
        def export(args):
            model = Detector().eval()
            if args.half:
                model.half()
            torch.onnx.export(model, torch.zeros(1, 3, 64, 64).half(), "m.onnx")
    """)),
    Shape("TW218", "look-alike: matching the input's dtype", d("""
        from nets import Detector
        def run(x):
            model = Detector().eval()
            if x.dtype == torch.float16:
                model.half()
            return model(x)
    """)),
]

# ------------------------------------------------------------- TW506 integer-typed features cast to float
QUIET += [
    Shape("TW506", "look-alike: log(x + 1) of integer count features made float (Criteo-style collate)", d("""
        import torch
        def collate(items):
            cols = list(zip(*items))
            X_int = torch.log(torch.tensor(cols[0], dtype=torch.float) + 1)
            return X_int
        def prep(x_int_batch):
            return torch.log(x_int_batch.clone().detach().type(torch.float) + 1)
        collate([]); prep(None)
    """)),
]
FIND += [
    Shape("TW506", "look-alike kept found: a float feature named plainly, made a tensor: log(x + 1) loses small values", d("""
        import torch
        def prep(rates):
            return torch.log(torch.tensor(rates, dtype=torch.float) + 1)
        prep([0.1])
    """), 3),
]

# ------------------------------------------------------------- TW214 a scripted helper only an unselected branch reaches
_NMS = d("""
    import torch
    @torch.jit.script
    def overlap(a, b):
        return torch.min(a, b)
    def fast_nms(boxes):
        return overlap(boxes, boxes)
    def suppress(boxes, method="standard"):
        if method == "standard":
            return boxes
        elif method == "fast":
            return fast_nms(boxes)
""")
PROJECTS += [
    ProjectShape("TW214", "look-alike: @torch.jit.script on a helper only the method='fast' branch reaches, which no call selects",
                 {"utils.py": _NMS, "track.py": "from utils import suppress\nprint(suppress([]))\n"}),
    ProjectShape("TW214", "the same helper where a caller selects method='fast'",
                 {"utils.py": _NMS, "track.py": "from utils import suppress\nprint(suppress([], method='fast'))\n"},
                 (("utils.py", 2),)),
]
