"""The recall corpus, round 33 part C: TW201 DataParallel used only as a container for a
checkpoint's ``module.`` keys; TW403 a ``--device`` option that holds GPU ids (no CPU run) and a
helper that returns what it is handed moved onto a device chosen with a CPU alternative - each
written in our own words and reduced to its shape, with look-alikes that must stay quiet.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW201 a wrapper only to load `module.` keys
QUIET += [
    Shape("TW201", "wrapper loads a DataParallel checkpoint, then the encoder is taken out of it", d("""
        import torch
        from nets import Backbone, Segmenter
        def main(args):
            net = Segmenter()
            if args.pretrained:
                holder = torch.nn.DataParallel(Backbone(1000))
                holder.load_state_dict(torch.load(args.pretrained)["state_dict"])
                holder = next(holder.children()).features
                net.encoder = holder
            net = net.cuda()
            opt = torch.optim.Adam(net.parameters())
            for x, y in args.loader:
                loss = net(x.cuda()).sub(y.cuda()).abs().mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
    Shape("TW201", "a model's __init__ loads pretrained 'module.' keys through a wrapper and keeps .module's part", d("""
        import torch
        import torch.nn as nn
        class Tagger(nn.Module):
            def __init__(self, ckpt, n):
                super().__init__()
                inner = Encoder()
                inner = nn.DataParallel(inner)
                inner.load_state_dict(torch.load(ckpt, map_location="cpu"), strict=False)
                self.body = inner.module.body
                self.head = nn.Linear(768, n)
            def forward(self, x):
                return self.head(self.body(x))
        def train(model, loader, opt):
            for x, y in loader:
                loss = (model(x) - y).pow(2).mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """)),
]
FIND += [
    Shape("TW201", "look-alike: loaded through the wrapper, then the wrapper itself is trained", d("""
        import torch
        from nets import Segmenter
        def main(args):
            net = torch.nn.DataParallel(Segmenter())
            net.load_state_dict(torch.load(args.resume))
            print(net.module.encoder)
            opt = torch.optim.Adam(net.parameters())
            for x, y in args.loader:
                loss = net(x.cuda()).sub(y.cuda()).abs().mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """), 4),
    Shape("TW201", "look-alike: unwrapped for a summary but the wrapper is handed to the trainer", d("""
        import torch
        from nets import Segmenter
        def main(args, fit):
            net = torch.nn.DataParallel(Segmenter()).cuda()
            net.load_state_dict(torch.load(args.resume))
            size = sum(p.numel() for p in net.module.parameters())
            fit(net, args.loader, size)
        def fit(net, loader, size):
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for x, y in loader:
                loss = net(x).sub(y).abs().mean()
                opt.zero_grad(); loss.backward(); opt.step()
    """), 4),
]

# ------------------------------------------------------------- TW403 `--device` holding GPU ids is no CPU run
_CROWD_TRAIN = d("""
    import os
    import argparse
    import torch
    from trainer import fit
    if __name__ == "__main__":
        p = argparse.ArgumentParser()
        p.add_argument("--device", default="0", help="gpu to use")
        args = p.parse_args()
        os.environ["CUDA_VISIBLE_DEVICES"] = args.device.strip()
        fit(args)
""")
_CROWD_TRAINER = d("""
    import torch
    from nets import Counter
    def fit(args):
        net = Counter().cuda()
        opt = torch.optim.Adam(net.parameters())
        for x, y in args.loader:
            loss = (net(x.cuda()) - y.cuda()).abs().mean()
            opt.zero_grad(); loss.backward(); opt.step()
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: `--device` defaults to a GPU id written to CUDA_VISIBLE_DEVICES", {
        "train.py": _CROWD_TRAIN, "trainer.py": _CROWD_TRAINER, "nets.py": "import torch\nclass Counter(torch.nn.Module):\n    pass\n",
    }),
    ProjectShape("TW403", "look-alike: `--device` is a list of GPU ids", {
        "train.py": _CROWD_TRAIN.replace('default="0", help="gpu to use"', "default=[0, 1], type=list").replace(
            'os.environ["CUDA_VISIBLE_DEVICES"] = args.device.strip()', "torch.cuda.set_device(args.device[0])"),
        "trainer.py": _CROWD_TRAINER, "nets.py": "import torch\nclass Counter(torch.nn.Module):\n    pass\n",
    }),
    ProjectShape("TW403", "`--device` naming a device type (default 'cuda') still promises a CPU run", {
        "train.py": _CROWD_TRAIN.replace('default="0", help="gpu to use"', 'default="cuda"').replace(
            'os.environ["CUDA_VISIBLE_DEVICES"] = args.device.strip()', "print(args.device)"),
        "trainer.py": _CROWD_TRAINER, "nets.py": "import torch\nclass Counter(torch.nn.Module):\n    pass\n",
    }, (("trainer.py", 4), ("trainer.py", 7), ("trainer.py", 7))),
]

# ------------------------------------------------------------- TW403 a helper choosing the device with a CPU alternative
_CC_UTILS = d("""
    import torch
    def on_device(module):
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return module.to(dev)
""")
_CONVERT = d("""
    import torch
    import numpy as np
    from helpers import *
    from nets import Converter
    class Runner:
        def __init__(self, path):
            self.net = on_device(Converter())
        def run(self, mel):
            x = torch.from_numpy(np.asarray(mel)).cuda()
            return self.net(x)
    if __name__ == "__main__":
        Runner("a.ckpt").run([[0.0]])
""")
PROJECTS += [
    ProjectShape("TW403", "inference moves its input with .cuda() although its model goes through the CPU-fallback helper", {
        "helpers.py": _CC_UTILS, "convert.py": _CONVERT, "nets.py": "import torch\nclass Converter(torch.nn.Module):\n    pass\n",
    }, (("convert.py", 9),)),
    ProjectShape("TW403", "the helper is called as a module attribute", {
        "helpers.py": _CC_UTILS.replace('dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n    return module.to(dev)',
                                        'return module.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))'),
        "convert.py": _CONVERT.replace("from helpers import *", "import helpers").replace("on_device(", "helpers.on_device("),
        "nets.py": "import torch\nclass Converter(torch.nn.Module):\n    pass\n",
    }, (("convert.py", 9),)),
    ProjectShape("TW403", "look-alike: the helper picks the device but returns a fresh tensor, not what it is handed", {
        "helpers.py": d("""
            import torch
            def on_device(shape):
                dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
                return torch.zeros(shape).to(dev)
        """), "convert.py": _CONVERT, "nets.py": "import torch\nclass Converter(torch.nn.Module):\n    pass\n",
    }),
    ProjectShape("TW403", "look-alike: the helper's choice has no CPU side (a GPU index)", {
        "helpers.py": _CC_UTILS.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cuda:1" if torch.cuda.device_count() > 1 else "cuda:0"'),
        "convert.py": _CONVERT, "nets.py": "import torch\nclass Converter(torch.nn.Module):\n    pass\n",
    }),
]
