"""The recall corpus, round 10 part A: classes the tenth set (a tuning set since round 10) showed
in TW403, TW402, TW208, TW205 and TW209 - each written in our own words and reduced to its shape,
with look-alikes that must stay quiet (or stay reported). ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# --------------------------------------------------------------------- TW208 the gradient of a perturbed input
# An attack (or a saliency map) turns on the gradient of one input, backpropagates a loss and
# reads `x.grad` to step the input, zeroing it between steps: not the parameters' gradients.
_ATTACK = """
    import torch
    import torch.nn.functional as F
    class Strategy:
        def __init__(self, net, eps=0.05):
            self.net = net
            self.eps = eps
        def distance(self, image):
            {mark}
            delta = torch.zeros(x.shape)
            out = self.net(x + delta)
            label = out.argmax(1)
            for _ in range(10):
                loss = F.cross_entropy(out, label)
                loss.backward()
                delta += self.eps * torch.sign(x.grad.data)
                {zero}
                out = self.net(x + delta)
            return (delta * delta).sum()
"""
QUIET += [
    Shape("TW208", "BIM attack: x.requires_grad_(), then x.grad.data.zero_() between the input's steps",
          d(_ATTACK.format(mark="x = image.unsqueeze(0)\n            x.requires_grad_()", zero="x.grad.data.zero_()"))),
    Shape("TW208", "DeepFool-like: x.requires_grad = True on a clone, then x.grad.zero_()",
          d(_ATTACK.format(mark="x = image.clone().unsqueeze(0)\n            x.requires_grad = True", zero="x.grad.zero_()"))),
]
FIND += [
    Shape("TW208", "look-alike: the parameters' gradients zeroed by hand in the same attack loop",
          d(_ATTACK.format(mark="x = image.unsqueeze(0)\n            x.requires_grad_()",
                           zero="for p in self.net.parameters():\n                    p.grad.zero_()")), 18),
    Shape("TW208", "look-alike: another tensor's requires_grad_() does not cover the zeroed one",
          d(_ATTACK.format(mark="x = image.unsqueeze(0)\n            image.requires_grad_()", zero="x.grad.zero_()")), 17),
]

# --------------------------------------------------------------------- TW403 `assert cuda` is no CPU path
# A project whose training scripts assert a GPU and initialise NCCL is GPU-only by design, also in
# an evaluation module that hard-codes "cuda": `assert torch.cuda.is_available()` demands the GPU,
# it does not check for one.
_GPU_TRAIN = d("""
    import os
    import torch
    import torch.distributed as dist
    assert torch.cuda.is_available()
    dist.init_process_group(backend="nccl")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    model = build().cuda()
    for step in range(100):
        loss = model(next_batch()).mean()
        loss.backward()
""")
_EVAL = d("""
    import torch
    import torch.distributed as dist
    def score(model, items):
        correct = 0
        for seq in items:
            logits = model(seq.inputs.to(device="cuda"))
            correct += int(logits.argmax(-1).eq(seq.target.to(device="cuda")).all())
        total = torch.tensor([correct], device="cuda")
        dist.all_reduce(total)
        return total.item()
""")
PROJECTS += [
    ProjectShape("TW403", "speedrun records assert a GPU and use NCCL; the eval module hard-codes cuda", {
        "records/a/train.py": _GPU_TRAIN, "records/b/train.py": _GPU_TRAIN, "evals/score.py": _EVAL}),
    ProjectShape("TW403", "look-alike: a real GPU check elsewhere in the project keeps the eval module's findings" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "records/a/train.py": _GPU_TRAIN.replace("assert torch.cuda.is_available()",
                                                 'device = "cuda" if torch.cuda.is_available() else "cpu"'),
        "evals/score.py": _EVAL, "evals/run.py": "from score import score\nprint(score(model, items))\n"},  # (called: R5)
        ()),
]

# --------------------------------------------------------------------- TW403 files written for a GPU only
# A script that sets an imported library's CUDA switch to a constant (the library moves the batches
# itself), or that times its training with CUDA events / torch.cuda.synchronize() under no `if`.
_LIB_CONFIGURED = """
    import argparse
    import torch
    from kglib.config import Config
    from kglib.batching import Batcher
    def main(args):
        {switch}
        model = Scorer(args.dim)
        model.cuda()
        batcher = Batcher(args.data, Config.batch_size)
        for e1, rel, e2 in batcher:
            loss = model.loss(e1, rel, e2)
            loss.backward()
"""
_TIMED = """
    import torch
    hyp = {{"device": "cuda", "lr": 0.2}}
    def train_epoch(net, data):
        order = torch.randperm(len(data), device=hyp["device"])
        for idx in order.split(512):
            net(data[idx]).sum().backward()
    def main(net, data):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        {sync}
        start.record()
        shuffled = torch.randperm(len(data), device='cuda')
        train_epoch(net, data[shuffled])
        end.record()
        return start.elapsed_time(end)
"""
QUIET += [
    Shape("TW403", "knowledge-graph script: Config.cuda = True on the imported library's config, model.cuda()",
          d(_LIB_CONFIGURED.format(switch="Config.cuda = True"))),
    Shape("TW403", "speed-run script timed with CUDA events and an unguarded torch.cuda.synchronize()",
          d(_TIMED.format(sync="torch.cuda.synchronize()"))),
]
FIND += [
    Shape("TW403", "look-alike: a local class's cuda switch is no library configured for CUDA",
          d(_LIB_CONFIGURED.format(switch="Config.cuda = True")).replace("from kglib.config import Config",
                                                                          "class Config:\n    cuda = False\n    batch_size = 128"), 10),
    Shape("TW403", "look-alike: the timing synchronises only when a GPU is there",
          d(_TIMED.format(sync="if hyp['device'] == 'cuda':\n            torch.cuda.synchronize()"))
          .replace("start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)", "start = end = None"), 12),
]

# --------------------------------------------------------------------- TW402 an opt-in -gpu switch is a CPU default
# Training and test scripts take `-gpu` (store_true, off by default); a helper moves the net under
# `if args.gpu:`. The project looks GPU-only to the first pass (its trainers move batches with
# .cuda() and name no "cpu"), yet the default run is on the CPU, and it restores weights written by
# `-gpu` training without map_location.
_NETS = d("""
    import sys
    def get_network(args):
        if args.net == "vgg16":
            from models.vgg import vgg16
            net = vgg16()
        else:
            sys.exit()
        if args.gpu:
            net = net.cuda()
        return net
""")
_SCRIPT = d("""
    import argparse
    import torch
    from utils import get_network
    def train(net, loader, optimizer, args):
        for images, labels in loader:
            if args.gpu:
                images, labels = images.cuda(), labels.cuda()
            optimizer.zero_grad()
            net(images).sum().backward()
            optimizer.step()
    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("-net", type=str, required=True)
        parser.add_argument("-gpu", action="{action}", default=False, help="use gpu or not")
        parser.add_argument("-weights", type=str)
        args = parser.parse_args()
        net = get_network(args)
        net.load_state_dict(torch.load(args.weights))
        torch.save(net.state_dict(), "last.pth")
""")
_OTHER = d("""
    import torch
    def finetune(model, loader, opt):
        model = model.cuda()
        for x, y in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
""")
PROJECTS += [
    ProjectShape("TW402", "a -gpu store_true switch: the default run is on the CPU, the weights come from -gpu training", {
        "utils.py": _NETS, "train.py": _SCRIPT.format(action="store_true"), "finetune.py": _OTHER},
        (("train.py", 18),)),
    ProjectShape("TW402", "look-alike: a -gpu option that is on by default (store_false) leaves the project GPU-only", {
        "utils.py": _NETS, "train.py": _SCRIPT.format(action="store_false"), "finetune.py": _OTHER}),
]
QUIET += [
    Shape("TW402", "a restore in a file that configures its imported library for CUDA (Config.cuda = True)",
          d(_LIB_CONFIGURED.format(switch="Config.cuda = True")) + "        model.load_state_dict(torch.load(args.path))\n"),
]

# --------------------------------------------------------------------- TW205 .to(t.device) with t on the CPU
# Stochastic depth draws its survival coin on the CPU and compares it with a constant moved to the
# coin's device: nothing is copied to a GPU, there is no move to save.
_COIN = """
    import torch
    import torch.nn as nn
    class DropBlock(nn.Module):
        def __init__(self, body, p=0.5):
            super().__init__()
            self.body = body
            self.p = p
        def survive(self, x):
            {draw}
            return torch.equal(coin, torch.tensor(1).float().to(coin.device))
        def forward(self, x):
            if self.training and not self.survive(x):
                return x
            return x + self.body(x)
"""
QUIET += [
    Shape("TW205", "stochastic depth: coin = torch.bernoulli(torch.tensor(self.p).float()); torch.tensor(1).to(coin.device)",
          d(_COIN.format(draw="coin = torch.bernoulli(torch.tensor(self.p).float())"))),
    Shape("TW205", "the coin drawn with torch.rand(1) < self.p, compared on its own (CPU) device",
          d(_COIN.format(draw="coin = (torch.rand(1) < self.p).float()"))),
]
FIND += [
    Shape("TW205", "look-alike: the coin drawn on the input's device: the constant is copied there every step",
          d(_COIN.format(draw="coin = torch.bernoulli(torch.full((1,), self.p, device=x.device))")), 10),
]

# --------------------------------------------------------------------- TW209 layers built in a list
# A layer list grows statement by statement: the convolution, then the BatchNorm under the
# helper's `batch_norm` flag that the `*_bn` constructors turn on; or appended one at a time.
_LIST_BUILT = """
    import torch.nn as nn
    def make_layers(cfg, batch_norm=False):
        layers = []
        channels = 3
        for width in cfg:
            if width == "M":
                layers += [nn.MaxPool2d(2)]
                continue
            {conv}
            if batch_norm:
                {bn}
            layers += [nn.ReLU(inplace=True)]
            channels = width
        return nn.Sequential(*layers)
    def vgg11_bn():
        return make_layers([64, "M", 128], {flag})
"""
FIND += [
    Shape("TW209", "vgg: layers += [nn.Conv2d(...)] then `if batch_norm: layers += [nn.BatchNorm2d(w)]`",
          d(_LIST_BUILT.format(conv="layers += [nn.Conv2d(channels, width, 3, padding=1)]",
                               bn="layers += [nn.BatchNorm2d(width)]", flag="batch_norm=True")), 9),
    Shape("TW209", "the same with layers.append(...) one layer at a time",
          d(_LIST_BUILT.format(conv="layers.append(nn.Conv2d(channels, width, 3, padding=1))",
                               bn="layers.append(nn.BatchNorm2d(width))", flag="True")), 9),
]
QUIET += [
    Shape("TW209", "look-alike: no caller turns batch_norm on", d(_LIST_BUILT.format(
        conv="layers += [nn.Conv2d(channels, width, 3, padding=1)]", bn="layers += [nn.BatchNorm2d(width)]", flag="False"))),
    Shape("TW209", "look-alike: the convolution has no bias", d(_LIST_BUILT.format(
        conv="layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False)]", bn="layers += [nn.BatchNorm2d(width)]",
        flag="batch_norm=True"))),
    Shape("TW209", "look-alike: the BatchNorm goes to another list", d(_LIST_BUILT.format(
        conv="layers += [nn.Conv2d(channels, width, 3, padding=1)]", bn="norms += [nn.BatchNorm2d(width)]",
        flag="batch_norm=True"))),
]

# --------------------------------------------------------------------- TW205 creation, reshape-as, then the move
# The gradient penalty's mixing weights: drawn on the CPU, expanded to the batch's shape with
# expand_as, moved under the trainer's use_cuda flag - every discriminator step.
_PENALTY = """
    import torch
    class Trainer:
        def penalty(self, critic, real, fake):
            alpha = torch.rand(real.size(0), 1, 1, 1)
            alpha = alpha.{shape}(real)
            if self.use_cuda:
                alpha = alpha.cuda()
            mixed = alpha * real + (1 - alpha) * fake
            return critic(mixed).mean()
        def step(self, loader):
            for real, fake in loader:
                self.penalty(self.critic, real, fake).backward()
"""
FIND += [
    Shape("TW205", "WGAN-GP: alpha = torch.rand(b, 1, 1, 1); alpha = alpha.expand_as(real); if use_cuda: alpha = alpha.cuda()",
          d(_PENALTY.format(shape="expand_as")), 7),
    Shape("TW205", "the same reshaped with view_as", d(_PENALTY.format(shape="view_as").replace("1, 1, 1)", "*real.shape[1:])")), 7),
]
QUIET += [
    Shape("TW205", "look-alike: alpha drawn like the batch (torch.rand_like(real)): nothing to move",
          d(_PENALTY.format(shape="expand_as").replace("torch.rand(real.size(0), 1, 1, 1)", "torch.rand_like(real[:, :1, :1, :1])"))),
]

# --------------------------------------------------------------------- TW205 made under nested ifs, moved after a None test
# A batch-to-inputs helper makes optional zeros under nested `if` blocks (they stay None when the
# option is off) and moves each one after `if x is not None:` - a test, not a use on the CPU.
_INPUTS = """
    import torch
    def inputs_from_batch(batch, use_cuda, cfg):
        n = len(batch.lengths)
        extra = None
        if cfg.pointer_gen:
            if batch.max_oovs > 0:
                extra = torch.zeros((n, batch.max_oovs))
        coverage = None
        if cfg.is_coverage:
            coverage = torch.zeros(batch.shape)
        if use_cuda:
            if extra is not None:
                {extra_move}
            if coverage is not None:
                coverage = coverage.cuda()
        return extra, coverage
    def train(loader, model, cfg):
        for batch in loader:
            model(*inputs_from_batch(batch, True, cfg)).backward()
"""
FIND += [
    Shape("TW205", "zeros made two `if`s deep, moved after `if extra is not None:`",
          d(_INPUTS.format(extra_move="extra = extra.cuda()")), 13),
    Shape("TW205", "zeros made under one `if`, moved after `if coverage is not None:`",
          d(_INPUTS.format(extra_move="extra = extra.cuda()")), 15),
]
QUIET += [
    # (round 12: a constant written in, m[:, 0] = 4, is part of making it - set 14's GraphMAE self-loop
    # features; data from the batch written in is a real use)
    Shape("TW205", "look-alike: the optional zeros are filled on the CPU before the move (a real use in between)",
          d(_INPUTS.format(extra_move="extra[:, 0] = batch.oov_mask\n                extra = extra.cuda()").replace(
              "            if coverage is not None:\n                coverage = coverage.cuda()\n", ""))),
]

# --------------------------------------------------------------------- TW205 a join stored, then moved
# Coordinate grids from torch.arange, expanded, joined with torch.cat under a name, and that
# name moved under the module's use_cuda flag - every forward.
_GRID = """
    import torch
    import torch.nn as nn
    class Attention(nn.Module):
        def __init__(self, use_cuda=True):
            super().__init__()
            self.use_cuda = use_cuda
        def forward(self, offsets):
            b, _, h, w = offsets.shape
            rows = torch.arange(h).view(1, 1, h, 1).expand(b, -1, -1, w)
            cols = torch.arange(w).view(1, 1, 1, w).expand(b, -1, h, -1)
            {join}
            if self.use_cuda:
                grid = grid.cuda()
            return offsets - grid
"""
FIND += [
    Shape("TW205", "arange grids joined with torch.cat into a name, then `if self.use_cuda: grid = grid.cuda()`",
          d(_GRID.format(join="grid = torch.cat([rows, cols], dim=1)")), 13),
    Shape("TW205", "the same joined with torch.stack", d(_GRID.format(join="grid = torch.stack([rows, cols], dim=1)")), 13),
]
QUIET += [
    Shape("TW205", "look-alike: the joined grid is used on the CPU before the move",
          d(_GRID.format(join="grid = torch.cat([rows, cols], dim=1)\n            grid = grid * 2 if grid.sum() > 0 else grid"))),
]

# --------------------------------------------------------------------- TW403 a bare .cuda() beside the function's own device choice
# A test script's main() picks `device` from a config key (cuda:N or cpu), loads the weights onto
# it, then moves the inputs with a bare .cuda(): the CPU branch it offers fails there.
_CHOOSER = """
    import torch
    def main(config, path, image):
        if config["cuda"]:
            device = torch.device("cuda:{{}}".format(config["gpu_ids"][0]))
        else:
            device = {cpu}
        net = build(config).to(device)
        net.load_state_dict(torch.load(path, map_location=device))
        x = torch.as_tensor(image).permute(2, 0, 1).unsqueeze(0){move}
        with torch.no_grad():
            return net(x)
"""
FIND += [
    Shape("TW403", "device chosen from config['cuda'] (cpu in the else), the input moved with a bare .cuda()",
          d(_CHOOSER.format(cpu='torch.device("cpu")', move=".cuda()")), 9),
]
QUIET += [
    Shape("TW403", "look-alike: the input follows the chosen device", d(_CHOOSER.format(cpu='torch.device("cpu")', move=".to(device)"))),
    Shape("TW403", "look-alike: the bare .cuda() is under the same config test", d(_CHOOSER.format(
        cpu='torch.device("cpu")', move="\n        if config['cuda']:\n            x = x.cuda()"))),
]

# --------------------------------------------------------------------- TW403 attack strategies train nothing
# Active-learning query strategies backpropagate to their INPUT (an adversarial distance) and
# move the classifier back with a bare .cuda(); the entry point falls back to the CPU. A file
# with `.backward(` but no optimizer `.step(` is no training file: it does not make the project
# GPU-only by design.
_DEMO = d("""
    import torch
    from nets import Net
    from strategies import AttackQuery
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    net = Net(device)
    strategy = AttackQuery(net)
    picked = strategy.query(10)
""")
_NET = d("""
    import torch
    class Net:
        def __init__(self, device):
            self.device = device
            self.clf = build().to(device)
        def train(self, loader, opt):
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                opt.zero_grad()
                self.clf(x).sum().backward()
                opt.step()
""")
_QUERY = d("""
    import torch
    import torch.nn.functional as F
    class AttackQuery:
        def __init__(self, net):
            self.net = net
        def distance(self, x):
            x = x.unsqueeze(0)
            x.requires_grad_()
            out = self.net.clf(x)
            F.cross_entropy(out, out.argmax(1)).backward()
            return x.grad.abs().sum()
        def query(self, n, pool):
            self.net.clf.cpu()
            scores = [self.distance(x) for x in pool]
            self.net.clf.cuda()
            return scores[:n]
""")
PROJECTS += [
    ProjectShape("TW403", "attack query strategies (backward to the input, no optimizer) move the classifier back with .cuda()" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "demo.py": _DEMO, "nets.py": _NET, "strategies.py": _QUERY,
        "strategies2.py": _QUERY.replace("class AttackQuery", "class AdversarialQuery")},
        (('strategies.py', 15),)),
    ProjectShape("TW403", "look-alike: the same files as training scripts (an optimizer step) hard-coding CUDA: GPU-only by design", {
        "demo.py": _DEMO, "nets.py": _NET,
        "strategies.py": _QUERY.replace("return x.grad.abs().sum()", "self.opt.step()\n        return x.grad.abs().sum()"),
        "strategies2.py": _QUERY.replace("return x.grad.abs().sum()", "self.opt.step()\n        return x.grad.abs().sum()")}),
]
