"""The recall corpus, round 28 part C: classes the tuning sets 45 and 46 showed for TW104, TW201,
TW301 and TW402 - each written in our own words and reduced to its shape, with look-alikes.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW104 a method of the class, named like a model
# An inference wrapper whose forward helper is a method named `model_forward`/`net_step`, decorated
# with inference_mode: calling it is no forward with autograd on. The same helper undecorated is
# reported at its own forward pass (once, not again at the caller).
_WRAPPER = """
import torch

class Segmenter:
    def __init__(self, path):
        self.model = torch.load(path)
        self.model.eval()

    {decorator}
    def model_forward(self, img):
        return self.model(img)

    def predict(self, img):
        out = self.model_forward(img)
        return out.argmax(1)

if __name__ == "__main__":
    print(Segmenter("m.pt").predict(torch.zeros(1, 3, 8, 8)))
"""
QUIET += [
    Shape("TW104", "look-alike: predict() calls self.model_forward, decorated with @torch.inference_mode()",
          d(_WRAPPER.replace("{decorator}", "@torch.inference_mode()"))),
    Shape("TW104", "look-alike: predict() calls self.model_forward, decorated with @torch.no_grad()",
          d(_WRAPPER.replace("{decorator}", "@torch.no_grad()"))),
]
FIND += [
    Shape("TW104", "the same helper without a decorator: reported at its own forward pass",
          d(_WRAPPER.replace("    {decorator}\n", "")), 9),
]

# ------------------------------------------------------------- TW104 a star-imported class built, not run
_NETS = d("""
    import torch.nn as nn

    class model_fish(nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.fc = nn.Linear(8, num_classes)

        def forward(self, x):
            return self.fc(x)
""")
_TEST = d("""
    import torch
    from nets import *

    def test(loader, path):
        model = model_fish(num_classes=10).cuda()
        model.load_state_dict(torch.load(path, map_location="cuda"))
        with torch.no_grad():
            model.eval()
            for x in loader:
                print(model(x.cuda()).argmax(1))
""")
PROJECTS += [
    ProjectShape("TW104", "look-alike: `model_fish(...).cuda()` of `from nets import *` builds the model; the pass is under no_grad",
                 {"nets.py": _NETS, "test.py": _TEST}),
    ProjectShape("TW104", "the same script running the pass outside no_grad is reported at the pass",
                 {"nets.py": _NETS, "test.py": _TEST.replace("    with torch.no_grad():\n        model.eval()\n"
                                                             "        for x in loader:\n            print",
                                                             "    model.eval()\n    for x in loader:\n        print")},
                 (("test.py", 9),)),
]

# ------------------------------------------------------------- TW104 a frozen network whose output is detached
# A video predictor trains a generator; a pretrained flow network, put in eval mode with
# `.cuda().eval()`, makes targets every step and its result is `.detach()`ed - no no_grad.
_FLOW = """
import torch
from nets import Generator, FlowNet

gen = Generator().cuda()
opt = torch.optim.Adam(gen.parameters(), lr=1e-4)
flow = FlowNet()
flow.load_state_dict(torch.load("flow.pth", map_location="cpu"))
flow.cuda().eval()

for frames, target in torch.utils.data.DataLoader(range(10), batch_size=2):
    frames, target = frames.cuda(), target.cuda()
    pred = gen(frames)
    flow_gt = (flow(torch.cat([frames, target], 1) * 255.) / 255.).detach()
    flow_pred = flow.estimate(torch.cat([frames, pred], 1)).detach()
    loss = (pred - target).abs().mean() + (flow_pred - flow_gt).abs().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
FIND += [
    Shape("TW104", "frozen flow network (`.cuda().eval()`) run every step, its output `.detach()`ed", d(_FLOW), 14),
    Shape("TW104", "a method of the frozen network whose result is detached at once", d(_FLOW).replace(
        "    flow_gt = (flow(torch.cat([frames, target], 1) * 255.) / 255.).detach()\n", "    flow_gt = target\n"), 14),
]
QUIET += [
    Shape("TW104", "look-alike: the frozen network's output feeds the loss undetached (gradients flow to the generator)",
          d(_FLOW).replace("    flow_gt = (flow(torch.cat([frames, target], 1) * 255.) / 255.).detach()\n", "    flow_gt = target\n")
          .replace("flow.estimate(torch.cat([frames, pred], 1)).detach()", "flow(torch.cat([frames, pred], 1))")),
    Shape("TW104", "look-alike: the frozen network runs under no_grad", d(_FLOW).replace(
        "    flow_gt = (flow(", "    with torch.no_grad():\n        flow_gt = (flow(").replace(
        "    flow_pred = flow.estimate(", "        flow_pred = flow.estimate(")),
]

# ------------------------------------------------------------- TW201 the functional data_parallel from its module
FIND += [
    Shape("TW201", "`from torch.nn.parallel.data_parallel import data_parallel` in the training step", d("""
        import torch
        from torch.nn.parallel.data_parallel import data_parallel

        def train(model, loader, opt):
            model.train()
            for x, y in loader:
                out = data_parallel(model, x.cuda())
                loss = torch.nn.functional.cross_entropy(out, y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 7),
]
QUIET += [
    Shape("TW201", "look-alike: the functional form imported from its module, under no_grad in a sampler", d("""
        import torch
        from torch.nn.parallel.data_parallel import data_parallel

        @torch.no_grad()
        def sample(model, z):
            return data_parallel(model, z)

        def train(model, loader, opt):
            for x in loader:
                opt.zero_grad()
                model(x).mean().backward()
                opt.step()
    """)),
]

# ------------------------------------------------------------- TW201 a builder whose model a trainer object trains
_BUILD = d("""
    import torch.nn as nn

    def build_model(args):
        model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
        if args.parallel:
            model = nn.DataParallel(model)
        return model
""")
_TRAINER = d("""
    class Trainer:
        def train(self, model, loader, opt, epochs):
            for _ in range(epochs):
                for x, y in loader:
                    loss = (model(x) - y).pow(2).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
""")
_MAIN = d("""
    import argparse
    import torch
    from utils.builders import build_model
    from engine.trainer import Trainer

    args = argparse.ArgumentParser().parse_args()
    model = build_model(args)
    optimizer = torch.optim.Adam(model.parameters())
    Trainer().train(model, [], optimizer, 10)
""")
PROJECTS += [
    ProjectShape("TW201", "a builder wraps the model under --parallel; the script hands it to trainer.train(model, ...)",
                 {"utils/builders.py": _BUILD, "engine/trainer.py": _TRAINER, "run.py": _MAIN}, (("utils/builders.py", 6),)),
    ProjectShape("TW201", "look-alike: the builder's model only goes to a predictor (model.train(False), no trainer)",
                 {"utils/builders.py": _BUILD, "run.py": _MAIN.replace("from engine.trainer import Trainer\n", "").replace(
                     "optimizer = torch.optim.Adam(model.parameters())\nTrainer().train(model, [], optimizer, 10)\n",
                     "model.train(False)\nprint(model(torch.zeros(1, 8)))\n")}),
]

# ------------------------------------------------------------- TW301 a seed call without a seed
_SAMPLER = """
import numpy as np

def endless(n):
    order = np.random.permutation(n)
    i = 0
    while True:
        yield order[i]
        i += 1
        if i >= n:
            np.random.seed({arg})
            order = np.random.permutation(n)
            i = 0
"""
_DROP_TRAIN = d("""
    import argparse
    import torch
    import sampler

    args = argparse.ArgumentParser().parse_args()

    net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    it = sampler.endless(10)
    for step in range(100):
        x = torch.randn(2, 4)
        loss = net(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
PROJECTS += [
    ProjectShape("TW301", "look-alike: `np.random.seed()` (no argument) reseeds a sampler from OS entropy, no seed",
                 {"sampler.py": d(_SAMPLER.replace("{arg}", "")), "train.py": _DROP_TRAIN}),
    ProjectShape("TW301", "look-alike: `np.random.seed(None)`",
                 {"sampler.py": d(_SAMPLER.replace("{arg}", "None")), "train.py": _DROP_TRAIN}),
    ProjectShape("TW301", "the same sampler seeding NumPy with a number, while torch is seeded nowhere",
                 {"sampler.py": d(_SAMPLER.replace("{arg}", "0")), "train.py": _DROP_TRAIN}, (("sampler.py", 10),)),
]

# ------------------------------------------------------------- TW301 a shuffled split written once to a file
_SPLIT = """
import csv
import glob
import os
import random

class Pictures:
    def __init__(self, root):
        index = os.path.join(root, "index.csv")
        {guard}
            files = glob.glob(os.path.join(root, "*.png"))
            random.shuffle(files)
            with open(index, "w", newline="") as f:
                csv.writer(f).writerows([[p] for p in files])
        with open(index) as f:
            self.files = [row[0] for row in csv.reader(f)]
"""
_SEEDED_TRAIN = d("""
    import torch
    from pictures import Pictures

    torch.manual_seed(0)
    data = Pictures("data")
    net = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(10):
        loss = net(torch.randn(2, 4)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")
PROJECTS += [
    ProjectShape("TW301", "look-alike: `random.shuffle` only under `if not os.path.exists(index)`, writing the split file",
                 {"pictures.py": d(_SPLIT.replace("{guard}", "if not os.path.exists(index):")), "train.py": _SEEDED_TRAIN}),
    ProjectShape("TW301", "the same shuffle on every run (no file guard) is reported",
                 {"pictures.py": d(_SPLIT.replace("{guard}", "if True:")), "train.py": _SEEDED_TRAIN}, (("pictures.py", 11),)),
]

# ------------------------------------------------------------- TW402 an uncalled save forwarder beside host saves
# The training script moves each state dict entry to the host before torch.save; a utility module
# copied whole from another project also holds `def save_on_master(*args, **kwargs): torch.save(*args,
# **kwargs)` that nothing calls. That save writes nothing: the project's files hold host tensors.
_STY_TRAIN = """
import torch
from nets import Decoder

decoder = Decoder().cuda()
opt = torch.optim.Adam(decoder.parameters())
for step in range(1000):
    loss = decoder(torch.randn(2, 8).cuda()).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 100 == 0:
        state = decoder.state_dict()
        for key in state.keys():
            {move}
        torch.save(state, "experiments/decoder_iter_{:d}.pth".format(step))
"""
_STY_TEST = d("""
    import argparse
    import torch
    from nets import Decoder

    p = argparse.ArgumentParser()
    p.add_argument("--decoder", default="experiments/decoder_iter_1000.pth")
    args = p.parse_args()
    decoder = Decoder().cuda()
    decoder.load_state_dict(torch.load(args.decoder))
    decoder.eval()
""")
_STY_NETS = "import torch.nn as nn\n\nclass Decoder(nn.Module):\n    pass\n"
_MISC = d("""
    import torch
    import torch.distributed as dist

    def is_main_process():
        return not dist.is_initialized() or dist.get_rank() == 0

    def save_on_master(*args, **kwargs):
        if is_main_process():
            torch.save(*args, **kwargs)
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: every entry moved with .to(torch.device('cpu')) before torch.save; test.py loads it",
                 {"train.py": d(_STY_TRAIN.replace("{move}", "state[key] = state[key].to(torch.device('cpu'))")),
                  "test.py": _STY_TEST, "nets.py": _STY_NETS, "util/misc.py": _MISC}),
    ProjectShape("TW402", "look-alike: `for k, v in state.items(): state[k] = v.cpu()` before torch.save",
                 {"train.py": d(_STY_TRAIN.replace("for key in state.keys():", "for key, v in state.items():")
                                .replace("{move}", "state[key] = v.cpu()")),
                  "test.py": _STY_TEST, "nets.py": _STY_NETS, "util/misc.py": _MISC}),
    ProjectShape("TW402", "the entries left on the GPU (the loop only renames): the evaluation script's load is reported",
                 {"train.py": d(_STY_TRAIN.replace("{move}", "state[key] = state[key]")),
                  "test.py": _STY_TEST, "nets.py": _STY_NETS, "util/misc.py": _MISC}, (("test.py", 9),)),
]
