"""The recall corpus, round 18 part B: code that never runs, for every per-call rule (ruling R5 of
issue 22) - a helper nothing calls, a method only such helpers call, a branch on a local flag bound
once to a constant, a branch on a parameter no call passes - and batches handed on in parts to a
function that turns them into NumPy (TW203). Each written in our own words and reduced to its
shape, with look-alikes where the code does run. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW201 a local flag bound once to a constant
# A model file wraps a sub-network in DataParallel under a switch the author turned off by hand:
# `multi = False` a line above `if multi:`. The branch never runs.
_FLAG_OFF = d("""
    import torch
    import torch.nn as nn
    def train(net, loader, opt):
        multi = False
        if multi:
            net = nn.DataParallel(net)
        net = net.cuda()
        for x, y in loader:
            loss = nn.functional.mse_loss(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
QUIET += [
    Shape("TW201", "look-alike: DataParallel under a local switch bound once to False", _FLAG_OFF),
]
FIND += [
    Shape("TW201", "the same switch bound to True: the wrapper runs", _FLAG_OFF.replace("multi = False", "multi = True"), 6),
    Shape("TW201", "the switch bound twice (a command-line override): it may run", _FLAG_OFF.replace(
        "    if multi:", "    multi = multi or torch.cuda.device_count() > 1\n    if multi:"), 7),
]

# ------------------------------------------------------------- TW204 / TW116 helpers nothing calls
# A training script keeps an old evaluation function beside the one it calls; a utilities module
# keeps a multi-GPU loader nobody uses beside the loader the scripts call through the package.
_PINNED_TRAIN = d("""
    import torch
    from torch.utils.data import DataLoader
    def evaluate(model, loader):
        with torch.no_grad():
            for clip, label in loader:
                clip = clip.cuda(non_blocking=True)
                model(clip)
    def evaluate_old(model, loader):
        with torch.no_grad():
            for clip, label in loader:
                clip = clip.cuda()
                model(clip)
    if __name__ == "__main__":
        loader = DataLoader(make_set(), batch_size=8, pin_memory=True, num_workers=4)
        evaluate(build().cuda(), loader)
""")
_WEIGHTS = d("""
    import torch
    from collections import OrderedDict
    def load_weights(model, path):
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["state_dict"])
    def load_weights_multi(model, path):
        state = torch.load(path, map_location="cpu", weights_only=True)
        fixed = OrderedDict()
        for k, v in state["state_dict"].items():
            fixed[k[7:]] = v
        model.load_state_dict(fixed)
""")
PROJECTS += [
    ProjectShape("TW204", "look-alike: an old evaluation function nothing calls copies without non_blocking", {
        "train.py": _PINNED_TRAIN}),
    ProjectShape("TW204", "the old evaluation function is the one the script calls", {
        "train.py": _PINNED_TRAIN.replace("evaluate(build().cuda(), loader)", "evaluate_old(build().cuda(), loader)")},
        (("train.py", 11),)),
    ProjectShape("TW116", "look-alike: a multi-GPU loader nothing calls strips 'module.' blindly", {
        "utils/__init__.py": "from .weights import *\n", "utils/weights.py": _WEIGHTS,
        "test.py": "import utils\nmodel = build()\nutils.load_weights(model, 'best.pth')\n"}),
    ProjectShape("TW116", "the multi-GPU loader called through the package that re-exports it", {
        "utils/__init__.py": "from .weights import *\n", "utils/weights.py": _WEIGHTS,
        "test.py": "import utils\nmodel = build()\nutils.load_weights_multi(model, 'best.pth')\n"},
        (("utils/weights.py", 10),)),
]

# ------------------------------------------------------------- TW205 / TW104 methods only dead methods call
# A segmentation network class keeps a sliding-window prediction API (predict -> _tiled ->
# _mirror_pred) that the project never calls: its scripts only run the forward. The helpers are
# named, but only inside functions that never run.
_NET = d("""
    import torch
    import torch.nn as nn
    class SegNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Conv2d(1, 2, 3, padding=1)
        def forward(self, x):
            return self.body(x)
        def predict_volume(self, volume):
            return self._tiled(volume)
        def _tiled(self, volume):
            return [self._mirror_pred(s) for s in volume]
        def _mirror_pred(self, patch):
            weights = torch.ones(patch.shape).cuda()
            return self(patch) * weights
""")
_SEG_TRAIN = d("""
    import torch
    from segnet import SegNet
    net = SegNet().cuda()
    opt = torch.optim.Adam(net.parameters())
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(net(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: a tensor made per patch in a prediction helper only an uncalled method reaches", {
        "segnet.py": _NET, "train.py": _SEG_TRAIN}),
    ProjectShape("TW205", "the prediction API is called by an inference script", {
        "segnet.py": _NET, "train.py": _SEG_TRAIN,
        "infer.py": "import torch\nfrom segnet import SegNet\nnet = SegNet().cuda().eval()\nfor v in volumes:\n    net.predict_volume(v)\n"},
        (("segnet.py", 14),)),
]

# ------------------------------------------------------------- TW205 a branch on a parameter no call passes
# A graph encoder's loss method takes a `kind` with a default; one kind builds a one-hot on the CPU
# and moves it per call. Every call in the project leaves the default (also through super()), or
# passes more arguments than this signature takes (an override's call).
_ENCODER = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Encoder(nn.Module):
        def __init__(self, dim, classes):
            super().__init__()
            self.label_dim = classes
            self.net = nn.Linear(dim, classes)
        def forward(self, x):
            return self.net(x)
        def loss(self, pred, label, kind="ce"):
            if kind == "ce":
                return F.cross_entropy(pred, label)
            elif kind == "hinge":
                n = pred.size()[0]
                onehot = torch.zeros(n, self.label_dim).long().cuda()
                onehot.scatter_(1, label.view(-1, 1), 1)
                return nn.MultiLabelMarginLoss()(pred, onehot)
    class PoolEncoder(Encoder):
        def loss(self, pred, label, adj=None, nodes=None):
            return super().loss(pred, label)
""")
_GRAPH_TRAIN = d("""
    import torch
    from encoders import Encoder, PoolEncoder
    def train(model, loader, opt, pooled):
        for x, adj, label in loader:
            pred = model(x.cuda())
            if pooled:
                loss = model.loss(pred, label.cuda(), adj, None)
            else:
                loss = model.loss(pred, label.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        model = Encoder(8, 3).cuda()
        train(model, make_loader(), torch.optim.Adam(model.parameters()), False)
""")
PROJECTS += [
    ProjectShape("TW205", "look-alike: the one-hot of a loss kind that no call selects (an override's call does not fit)", {
        "encoders.py": _ENCODER, "train.py": _GRAPH_TRAIN}),
    ProjectShape("TW205", "a call selects the kind", {
        "encoders.py": _ENCODER, "train.py": _GRAPH_TRAIN.replace("model.loss(pred, label.cuda())", "model.loss(pred, label.cuda(), 'hinge')")},
        (("encoders.py", 16),)),
    ProjectShape("TW205", "the kind is handed on from the caller's own parameter (unknown)", {
        "encoders.py": _ENCODER, "train.py": _GRAPH_TRAIN.replace("model.loss(pred, label.cuda())", "model.loss(pred, label.cuda(), kind)").replace(
            "def train(model, loader, opt, pooled):", "def train(model, loader, opt, pooled, kind='ce'):")},
        (("encoders.py", 16),)),
]

# ------------------------------------------------------------- TW203 batch parts handed to a NumPy helper
# A semi-supervised segmentation script validates one volume at a time: the loop hands
# `batch["image"]` and `batch["label"]` to a helper whose first line turns both into NumPy, then
# copies each resized slice to the GPU on its own. The loader's batches never reach the device.
_VAL_HELPER = d("""
    import numpy as np
    import torch
    def score_volume(image, label, net):
        image, label = image.squeeze(0).cpu().numpy(), label.squeeze(0).cpu().numpy()
        out = np.zeros_like(label)
        for i in range(image.shape[0]):
            x = torch.from_numpy(image[i]).unsqueeze(0).unsqueeze(0).float().cuda()
            with torch.no_grad():
                out[i] = net(x).argmax(1).squeeze(0).cpu().numpy()
        return float((out == label).mean())
""")
_SEMI_TRAIN = d("""
    import torch
    from torch.utils.data import DataLoader
    from val_util import score_volume
    def main(net, train_set, val_set, opt):
        train_loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=4, pin_memory=True)
        val_loader = DataLoader(val_set, batch_size=1, shuffle=False, num_workers=1)
        for batch in train_loader:
            loss = net(batch["image"].cuda()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        for batch in val_loader:
            score = score_volume(batch["image"], batch["label"], net)
    if __name__ == "__main__":
        main(build().cuda(), make("train"), make("val"), make_opt())
""")
PROJECTS += [
    ProjectShape("TW203", "look-alike: validation batches handed in parts to a helper that turns them into NumPy", {
        "val_util.py": _VAL_HELPER, "train.py": _SEMI_TRAIN}),
    ProjectShape("TW203", "the helper moves the parts to the GPU as they are", {
        "val_util.py": _VAL_HELPER.replace("image, label = image.squeeze(0).cpu().numpy(), label.squeeze(0).cpu().numpy()",
                                           "image, label = image.cuda(), label.cuda()"), "train.py": _SEMI_TRAIN},
        (("train.py", 6),)),
]
