"""The recall corpus, round 8 part A: classes the seventh and eighth sets (tuning sets since round 8)
missed or reported falsely - each written in our own words and reduced to its shape, with
look-alikes that must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW205 batches from lists
# A hand-written batch iterator turns lists of token ids into typed legacy tensors and moves them,
# every batch (TW513 also applies to the constructor). Round 13 (sets 15 and 16, both of which
# count host data that has to cross anyway as no TW205 pitfall): the token ids are the batch's
# data - `torch.tensor(ids, device=...)` would copy them from the host just the same - so these
# two are look-alikes now (recall_corpus26 has the class).
_ITERATOR = d("""
    import torch
    class Batches:
        def __init__(self, rows, size, device):
            self.rows, self.size, self.device, self.at = rows, size, device, 0
        def _tensors(self, rows):
            tokens = torch.LongTensor([r[0] for r in rows]).to(self.device)
            labels = torch.LongTensor([r[1] for r in rows]).to(self.device)
            return tokens, labels
        def __next__(self):
            rows = self.rows[self.at:self.at + self.size]
            self.at += self.size
            return self._tensors(rows)
""")
QUIET += [
    Shape("TW205", "look-alike (round 13): a text iterator's token ids, torch.LongTensor([r[0] for r in rows]).to(device)",
          _ITERATOR),
    Shape("TW205", "look-alike: a loader's label batch (data that has to cross anyway) retyped and moved", d("""
        import torch
        def train(model, loader, opt, device):
            for data, data_label in loader:
                label = torch.LongTensor(data_label).to(device)
                loss = model(data.to(device), label)
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)),
]

# ----------------------------------------------------------------------------------- TW205 moves through helpers
# The CPU tensor is made by one function and moved by another: a helper that returns a random
# draw, moved by the training loop; a helper that moves whatever it is given, fed fresh noise.
_SCHEDULE = """
    import torch
    class Noiser:
        def __init__(self, steps, device):
            self.steps = steps
            self.betas = self.schedule().to(device)
        def schedule(self):
            return torch.linspace(1e-4, 0.02, self.steps)
        def draw_steps(self, n):
            return torch.randint(low=1, high=self.steps, size=(n,))
    def train(model, loader, opt, device):
        noiser = Noiser(1000, device)
        for images, _ in loader:
            images = images.to(device)
            {line}
            loss = model(images, t)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""
FIND += [
    Shape("TW205", "diffusion: t = noiser.draw_steps(n).to(device) where the helper returns torch.randint on the CPU",
          d(_SCHEDULE.format(line="t = noiser.draw_steps(images.shape[0]).to(device)")), 14),
]
QUIET += [
    Shape("TW205", "look-alike: the schedule helper moved once in the __init__ of an object built before the loop",
          d(_SCHEDULE.format(line="t = torch.randint(1, 1000, (images.shape[0],), device=device)"))),
]
_WRAPPER = """
    import torch
    from torch.autograd import Variable
    class Trainer:
        def as_var(self, arg):
            if self.use_cuda:
                return {moved}
            return Variable(arg)
        def train(self, loader):
            for images in loader:
                z = torch.randn((self.batch_size, 100, 1, 1))
                images, z = self.as_var(images), self.as_var(z)
                loss = self.D(images).mean() - self.D(self.G(z)).mean()
                loss.backward()
                z = self.as_var(torch.randn(self.batch_size, 100, 1, 1))
                self.G(z).mean().backward()
"""
FIND += [
    Shape("TW205", "GAN trainer: noise passed to a helper that does Variable(arg).cuda(i)",
          d(_WRAPPER.format(moved="Variable(arg).cuda(self.gpu)")), 14),
    Shape("TW205", "the same helper fed noise stored in the statement before",
          d(_WRAPPER.format(moved="Variable(arg).cuda(self.gpu)")), 11),
]
QUIET += [
    Shape("TW205", "look-alike: the helper only wraps, on both branches (nothing is moved)",
          d(_WRAPPER.format(moved="Variable(arg, requires_grad=False)"))),
]

# ----------------------------------------------------------------------------------- TW205 moved a few lines later
_LATER = """
    import torch
    from torch.autograd import Variable
    class GAN:
        def train(self, loader):
            for i, (images, _) in enumerate(loader):
                z = torch.randn((self.batch_size, 100, 1, 1))
                ones = torch.ones(self.batch_size)
                {between}
                if self.cuda:
                    images, z = Variable(images).cuda(self.gpu), Variable(z).cuda(self.gpu)
                    ones = Variable(ones).cuda(self.gpu)
                loss = self.loss(self.D(self.G(z)), ones)
                loss.backward()
        def penalty(self, real, fake):
            eta = torch.FloatTensor(self.batch_size, 1, 1, 1).uniform_(0, 1)
            eta = eta.expand(self.batch_size, real.size(1), real.size(2), real.size(3))
            if self.cuda:
                eta = eta.cuda(self.gpu)
            return eta * real + (1 - eta) * fake
        def critic_step(self, loader):
            for real, fake in loader:
                self.penalty(real, fake).mean().backward()
"""
FIND += [
    Shape("TW205", "GAN loop: z = torch.randn(...) then Variable(z).cuda(i) under if self.cuda", d(_LATER.format(between="pass")), 10),
    Shape("TW205", "the labels of the same loop: Variable(ones).cuda(i) alone on its line", d(_LATER.format(between="pass")), 11),
    Shape("TW205", "gradient penalty: eta drawn with FloatTensor(b, 1, 1, 1).uniform_, expanded, then eta.cuda() every critic step",
          d(_LATER.format(between="pass")), 18),
    Shape("TW205", "a chain of in-place ops before the move: torch.rand(*shape).sub_(0.5).mul_(2.0).cuda() in a noise helper", d("""
        import torch
        import torch.nn as nn
        def get_noise(shape, kind):
            if kind == "gaussian":
                return torch.randn(*shape, device="cuda")
            return torch.rand(*shape).sub_(0.5).mul_(2.0).cuda()
        class Generator(nn.Module):
            def forward(self, h):
                return self.decode(h, get_noise((h.size(0), 8), self.kind))
    """), 6),
]
QUIET += [
    Shape("TW205", "look-alike: z is read on the CPU before it is wrapped and moved",
          d(_LATER.format(between="print(z.mean(), ones.sum())")).replace(
              "uniform_(0, 1)", "uniform_(0, 1)\n        print(eta.sum())")),
]

# ----------------------------------------------------------------------------------- TW205 host round trip
_FLIP = """
    import numpy as np
    import torch
    def validate(model, loader):
        with torch.no_grad():
            for x, y in loader:
                out = model({inp})
                flipped = np.flip(out.cpu().numpy(), 3).copy()
                back = torch.from_numpy(flipped).cuda()
                score = (out + back) / 2
"""
FIND += [
    Shape("TW205", "pose validation: a model output pulled to NumPy, flipped, and sent back with torch.from_numpy(...).cuda()",
          d(_FLIP.format(inp="x.cuda()")), 8),
]
FIND += [
    Shape("TW205", "the same validation: the batch is fed to the model and its NumPy flip is copied over again",
          d(_FLIP.format(inp="x")).replace("np.flip(out.cpu()", "np.flip(x.cpu()"), 8),
]
QUIET += [
    Shape("TW205", "look-alike: only the converted array crosses (the batch itself never goes to the model)", d("""
        import numpy as np
        import torch
        from scipy import ndimage
        def predict(model, image, scales):
            array = image.cpu().numpy()
            for scale in scales:
                scaled = ndimage.zoom(array, (1.0, 1.0, scale, scale), order=1)
                scaled = torch.from_numpy(scaled).cuda()
                yield model(scaled)
    """)),
]

# ----------------------------------------------------------------------------------- TW205 rare allocations
# Noise for a sample grid drawn under a periodic branch, or once in an evaluate(): one allocation
# per interval or per evaluation, not per step (TW205's one-time rule).
_PERIODIC = """
    import torch
    from torch.autograd import Variable
    class GAN:
        def train(self, loader):
            for i, (images, _) in enumerate(loader):
                self.step(images)
                if {test}:
                    z = Variable(torch.randn(64, 100, 1, 1)).cuda(self.gpu)
                    self.save_grid(self.G(z))
        def evaluate(self, path):
            self.load(path)
            self.G.eval()
            z = Variable(torch.randn(self.batch_size, 100, 1, 1)).cuda(self.gpu)
            self.save_grid(self.G(z))
"""
QUIET += [
    Shape("TW205", "GAN: a sample grid drawn every 1000 iterations and once in evaluate()",
          d(_PERIODIC.format(test="(i + 1) % 1000 == 0"))),
    Shape("TW205", "the same every args.sample_every iterations", d(_PERIODIC.format(test="i % self.sample_every == 0"))),
]
FIND += [
    Shape("TW205", "look-alike of the periodic branch: every other step (i % 2 == 0) is still per step",
          d(_PERIODIC.format(test="i % 2 == 0")), 8),
]

# ----------------------------------------------------------------------------------- TW205 constant attributes
# A constant table made in __init__ as a plain attribute (not a buffer) and moved in every forward.
_TABLE = """
    import numpy as np
    import torch
    import torch.nn as nn
    class Positional(nn.Module):
        def __init__(self, dim, length, device):
            super().__init__()
            self.device = device
            {init}
            self.pe[:, 0::2] = np.sin(self.pe[:, 0::2])
        def forward(self, x):
            {use}
            return x + pe
"""
_TABLE_INIT = "self.pe = torch.tensor([[p / 10000.0 ** (i / dim) for i in range(dim)] for p in range(length)])"
FIND += [
    Shape("TW205", "text transformer: a position table kept as a plain attribute, nn.Parameter(self.pe).to(device) every forward",
          d(_TABLE.format(init=_TABLE_INIT, use="pe = nn.Parameter(self.pe, requires_grad=False).to(self.device)")), 11),
    Shape("TW205", "the same table moved bare: self.pe.to(x.device)",
          d(_TABLE.format(init=_TABLE_INIT, use="pe = self.pe.to(x.device)")), 11),
]
QUIET += [
    Shape("TW205", "look-alike: the table is moved once in __init__",
          d(_TABLE.format(init=_TABLE_INIT.replace("range(length)])", "range(length)]).to(device)"),
                          use="pe = self.pe.to(x.device)"))),
    Shape("TW205", "look-alike: the table comes from a file (data), not a factory",
          d(_TABLE.format(init="self.pe = torch.load('table.pt')", use="pe = self.pe.to(x.device)"))),
]

# ----------------------------------------------------------------------------------- TW502 several names
# One import line bringing several deprecated nn.init functions: each name is reported (at its
# own place on the line), not only the first.
_INIT_IMPORT = d("""
    import torch.nn as nn
    from torch.nn.init import (
        {first},
        constant,
    )
    def init_head(fc, std):
        normal(fc.weight, 0, std)
        constant(fc.bias, 0)
""")
FIND += [
    Shape("TW502", "video models: from torch.nn.init import normal, constant - the second name as well",
          _INIT_IMPORT.format(first="normal"), 4),
]
QUIET += [
    Shape("TW502", "look-alike: the current names (normal_, constant_) imported together",
          _INIT_IMPORT.format(first="normal_").replace("constant", "constant_").replace("normal(", "normal_(")),
]

# ----------------------------------------------------------------------------------- TW305 options
# cudnn.deterministic set from an option: reported only when the option is on by default (a default
# lint reads in the file's argparse or in the project's config module); quiet when it is off.
_POSE_CONFIG = d("""
    from easydict import EasyDict as edict
    config = edict()
    config.CUDNN = edict()
    config.CUDNN.BENCHMARK = True
    config.CUDNN.DETERMINISTIC = {default}
""")
_POSE_TRAIN = d("""
    import torch
    from torch.backends import cudnn
    from core.config import config
    def main():
        cudnn.benchmark = config.CUDNN.BENCHMARK
        torch.backends.cudnn.deterministic = config.CUDNN.DETERMINISTIC
""")
PROJECTS += [
    ProjectShape("TW305", "pose estimation: cudnn.deterministic from a config flag that the config module turns on",
                 {"lib/core/config.py": _POSE_CONFIG.format(default="True"), "train.py": _POSE_TRAIN}, (("train.py", 6),)),
    ProjectShape("TW305", "look-alike: the same config flag is False by default (nothing asks for determinism)",
                 {"lib/core/config.py": _POSE_CONFIG.format(default="False"), "train.py": _POSE_TRAIN}),
]
_ARGPARSE = d("""
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-deterministic", {how})
    args = parser.parse_args()
    torch.backends.cudnn.deterministic = args.torch_deterministic
""")
FIND += [
    Shape("TW305", "an argparse option that defaults to True", _ARGPARSE.format(how="type=bool, default=True"), 6),
]
QUIET += [
    Shape("TW305", "look-alike: a store_true option (off unless asked for)", _ARGPARSE.format(how='action="store_true"')),
]

# ----------------------------------------------------------------------------------- TW201 evaluation scripts
# A valid.py beside the training script: loads weights, wraps in DataParallel and validates.
_VALID = d("""
    import torch
    from core.function import validate{extra_import}
    def main(config, loader, criterion):
        model = build_model(config)
        model.load_state_dict(torch.load(config.MODEL_FILE))
        model = torch.nn.DataParallel(model, device_ids=[0, 1]).cuda()
        {extra}
        validate(config, loader, model, criterion)
    if __name__ == "__main__":
        main(*setup())
""")
QUIET += [
    Shape("TW201", "pose estimation: an evaluation-only script hands the DataParallel model to validate()",
          _VALID.format(extra_import="", extra="pass")),
]
FIND += [
    Shape("TW201", "look-alike: the same script also trains through an imported train() with an optimizer",
          _VALID.format(extra_import=", train", extra="train(config, loader, model, criterion, torch.optim.Adam(model.parameters()))"), 6),
    Shape("TW201", "look-alike: a training script that validates as well (an optimizer step in the file)",
          _VALID.format(extra_import="", extra="for x, y in loader:\n        criterion(model(x), y).backward()\n        opt.step()"), 6),
]

# ----------------------------------------------------------------------------------- TW209 add_module pairs
# A CNN built by a nested helper that adds a conv and, when a flag is set, a BatchNorm to one
# Sequential with add_module (an OCR recogniser).
_ADDED = d("""
    import torch.nn as nn
    class Recogniser(nn.Module):
        def __init__(self, nc, leaky=False):
            super().__init__()
            widths = [64, 128, 256]
            cnn = nn.Sequential()
            def conv_relu(i, batch_norm=False):
                n_in = nc if i == 0 else widths[i - 1]
                cnn.add_module("conv{0}".format(i), nn.Conv2d(n_in, widths[i], 3, 1, 1))
                if batch_norm:
                    cnn.add_module("batchnorm{0}".format(i), nn.BatchNorm2d(widths[i]))
                cnn.add_module("relu{0}".format(i), nn.ReLU(True))
            conv_relu(0)
            conv_relu(1FLAG)
            conv_relu(2)
            self.cnn = cnn
""")
FIND += [
    Shape("TW209", "OCR CNN: conv added with add_module, BatchNorm added next when the helper's flag is set",
          _ADDED.replace("FLAG", ", True"), 9),
    Shape("TW209", "conv and BatchNorm added to one container one after the other", d("""
        import torch.nn as nn
        def make_stem(c):
            stem = nn.Sequential()
            stem.add_module("conv", nn.Conv2d(3, c, 7, 2, 3))
            stem.add_module("bn", nn.BatchNorm2d(c))
            stem.add_module("relu", nn.ReLU(inplace=True))
            return stem
    """), 4),
]
QUIET += [
    Shape("TW209", "look-alike: no call turns the BatchNorm flag on", _ADDED.replace("FLAG", "")),
    Shape("TW209", "look-alike: the conv added with bias=False", _ADDED.replace("FLAG", ", True").replace(
        "3, 1, 1))", "3, 1, 1, bias=False))")),
]
FIND += [
    Shape("TW205", "look-alike of evaluate(): an evaluation helper called for every batch of a loop", d("""
        import torch
        def evaluate_batch(model, x):
            mask = torch.ones(x.size(0), x.size(1)).cuda()
            return model(x, mask)
        def test(model, loader):
            for x in loader:
                evaluate_batch(model, x.cuda())
    """), 3),
]
FIND += [
    Shape("TW205", "look-alike of the periodic branch: the optimizer step of gradient accumulation", d("""
        import torch
        def train(model, loader, opt, accum):
            for i, (x, y) in enumerate(loader):
                model(x.cuda(), y.cuda()).backward()
                if (i + 1) % accum == 0:
                    scale = torch.ones(1).cuda()
                    opt.step()
                    opt.zero_grad()
    """), 6),
]
