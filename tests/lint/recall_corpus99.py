"""The recall corpus, round 29 part C: classes that all sets 12-48 still missed for TW402 and TW403
- each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW402 a checkpoint helper judged by its callers
# A helper module with no device code (utils/ckpt_tools.py, a model's load_weights method) restores
# what the GPU training saves; the evaluation scripts that call it run on other machines (R2), and in
# a project with a CPU path every caller may run on the CPU. Seen in image restoration, pose,
# re-identification, NER and speech projects (sets 24, 26, 27, 32, 33, 35, 38).
_TRAIN = d("""
    import argparse
    import torch
    import utils
    from nets import Restorer
    args = argparse.ArgumentParser().parse_args()
    model = Restorer().cuda()
    opt = torch.optim.Adam(model.parameters())
    for x, y in loader:
        loss = (model(x.cuda()) - y.cuda()).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save({"epoch": 1, "state_dict": model.state_dict()}, "runs/model_latest.pth")
""")
_EVAL = d("""
    import argparse
    import torch
    import utils
    from nets import Restorer
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights")
    args = parser.parse_args()
    model = Restorer().cuda()
    utils.{call}
    model.eval()
    with torch.no_grad():
        for x in frames:
            out = model(x.cuda())
""")
_TOOLS = d("""
    import torch
    def restore(net, path):
        ckpt = torch.load(path)
        net.load_state_dict(ckpt["state_dict"])
    def restore_backbone(net):
        weights = torch.load("pretrained/backbone_imagenet.pth")
        net.backbone.load_state_dict(weights)
""")
PROJECTS += [
    ProjectShape("TW402", "helper re-exported by the package __init__, called by an evaluation script of a GPU-only project", {
        "utils/__init__.py": "from .ckpt_tools import *\n",
        "utils/ckpt_tools.py": _TOOLS,
        "nets.py": "import torch.nn as nn\nclass Restorer(nn.Module):\n    pass\n",
        "train.py": _TRAIN,
        "evaluate.py": _EVAL.format(call="restore(model, args.weights)"),
    }, (("utils/ckpt_tools.py", 3),)),
    ProjectShape("TW402", "look-alike: the same helper called only by the GPU-only training script (its own resume, R2)", {
        "utils/__init__.py": "from .ckpt_tools import *\n",
        "utils/ckpt_tools.py": _TOOLS,
        "nets.py": "import torch.nn as nn\nclass Restorer(nn.Module):\n    pass\n",
        "train.py": _TRAIN.replace("model = Restorer().cuda()\n", "model = Restorer().cuda()\nutils.restore(model, 'runs/model_latest.pth')\n"),
    }),
    ProjectShape("TW402", "look-alike: the evaluation script's helper reads shipped ImageNet weights no save of the project writes", {
        "utils/__init__.py": "from .ckpt_tools import *\n",
        "utils/ckpt_tools.py": _TOOLS,
        "nets.py": "import torch.nn as nn\nclass Restorer(nn.Module):\n    pass\n",
        "train.py": _TRAIN,
        "evaluate.py": _EVAL.format(call="restore_backbone(model)"),
    }),
]

_REID_MODEL = d("""
    import torch
    import torch.nn as nn
    class ReidNet(nn.Module):
        def load_params(self, trained_path):
            params = torch.load(trained_path)
            for k in params:
                self.state_dict()[k].copy_(params[k])
""")
_REID_TRAIN = d("""
    import torch
    from model import ReidNet
    net = ReidNet().cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    def main():
        for x, y in loader:
            opt.zero_grad()
            net(x.cuda()).sum().backward()
            opt.step()
        torch.save(net.state_dict(), "reid_final.pth")
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW402", "a model's load method (no device code) called by the test script that moves the model to the GPU", {
        "model.py": _REID_MODEL,
        "train.py": _REID_TRAIN,
        "test.py": d("""
            import argparse
            import torch
            from model import ReidNet
            args = argparse.ArgumentParser().parse_args()
            net = ReidNet()
            net.load_params(args.weights)
            net = net.cuda().eval()
            with torch.no_grad():
                feats = [net(x.cuda()) for x in gallery]
        """),
    }, (("model.py", 5),)),
    ProjectShape("TW402", "look-alike: the model's load method that nothing calls", {
        "model.py": _REID_MODEL,
        "train.py": _REID_TRAIN,
    }),
]

_STOPPER = d("""
    import torch
    class Stopper:
        def __init__(self, fname):
            self.fname = fname
        def save_best(self, model):
            torch.save(model.state_dict(), self.fname)
        def warm_weights(self):
            return torch.load(self.fname)
""")
PROJECTS += [
    ProjectShape("TW402", "a warm-start helper returning the loaded state, in a project whose script falls back to the CPU", {
        "stopper.py": _STOPPER,
        "run.py": d("""
            import argparse
            import torch
            from stopper import Stopper
            parser = argparse.ArgumentParser()
            parser.add_argument("--no_cuda", action="store_true")
            parser.add_argument("--warm_start", default="")
            args = parser.parse_args()
            device = torch.device("cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu")
            model = Net().to(device)
            stopper = Stopper("best.pt")
            if args.warm_start:
                model.load_state_dict(Stopper(args.warm_start).warm_weights())
            opt = torch.optim.Adam(model.parameters())
            for x, y in loader:
                opt.zero_grad()
                model(x.to(device)).sum().backward()
                opt.step()
                stopper.save_best(model)
        """),
    }, (("stopper.py", 8),)),
    ProjectShape("TW402", "look-alike: the helper's GPU branch, whose other side maps the file to the CPU", {
        "stopper.py": _STOPPER.replace("        return torch.load(self.fname)\n",
                                       "        if torch.cuda.is_available():\n            return torch.load(self.fname)\n"
                                       "        else:\n            return torch.load(self.fname, map_location='cpu')\n"),
        "run.py": d("""
            import torch
            from stopper import Stopper
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = Net().to(device)
            model.load_state_dict(Stopper("best.pt").warm_weights())
            opt = torch.optim.Adam(model.parameters())
            for x, y in loader:
                opt.zero_grad()
                model(x.to(device)).sum().backward()
                opt.step()
        """),
    }),
]

# ------------------------------------------------------------- TW403 a host array moved with a bare .cuda() beside a device choice
# `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")` (the GPU check called
# in the choice), then `torch.from_numpy(seq).cuda().long()`: the CPU run the file offers fails
# there (sets 43 and 34: text-to-speech and graph evaluation scripts).
FIND += [
    Shape("TW403", "synthesis input from NumPy moved with a bare .cuda() beside a cuda-if-available choice", d("""
        import numpy as np
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def synthesize(model, ids):
            seq = torch.from_numpy(np.array(ids)[None]).cuda().long()
            with torch.no_grad():
                return model(seq.to(device))
    """), 5),
    Shape("TW403", "as_tensor of a positions array with a bare .cuda(), the device chosen with the GPU check called", d("""
        import torch
        dev = torch.device('cpu' if not torch.cuda.is_available() else 'cuda')
        DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        def positions(n):
            return torch.as_tensor(list(range(1, n + 1))).cuda()
    """), 5),
]
QUIET += [
    Shape("TW403", "look-alike: the NumPy input moved under the GPU check", d("""
        import numpy as np
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def synthesize(model, ids):
            seq = torch.from_numpy(np.array(ids)[None]).long()
            if torch.cuda.is_available():
                seq = seq.cuda()
            return model(seq)
    """)),
    Shape("TW403", "look-alike: the NumPy input moved with .to(device)", d("""
        import numpy as np
        import torch
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        def synthesize(model, ids):
            return model(torch.from_numpy(np.array(ids)).to(device))
    """)),
]
