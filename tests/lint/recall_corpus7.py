"""The recall corpus, round 7a: two classes the fifth set (a tuning set since round 6) still
missed - each written in our own words and reduced to its shape, with look-alikes that must stay
quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW205 NumPy-built grids
# Detection anchors / position tables computed in NumPy from sizes and settings (a pure-NumPy
# helper joined in a loop with np.append / np.concatenate), converted and moved every forward.
_GRID_HELPERS = """
    import numpy as np
    import torch
    import torch.nn as nn
    def cell_offsets(size, step):
        centres = (np.arange(0, size) + 0.5) * step
        cx, cy = np.meshgrid(centres, centres)
        return np.vstack((cx.ravel(), cy.ravel(), cx.ravel(), cy.ravel())).transpose()
    def base_boxes(side, ratios):
        boxes = np.zeros((len(ratios), 4))
        boxes[:, 2] = side * np.sqrt(ratios)
        boxes[:, 3] = side / np.sqrt(ratios)
        return boxes
"""
_PRIORS = d(_GRID_HELPERS + """
    class PriorBoxes(nn.Module):
        def __init__(self, levels=(3, 4, 5)):
            super().__init__()
            self.levels = list(levels)
            self.ratios = np.array([0.5, 1.0, 2.0])
        def forward(self, images):
            side = images.shape[-1]
            grid = np.zeros((0, 4)).astype(np.float32)
            for level in self.levels:
                step = 2 ** level
                shifted = cell_offsets(side // step, step)[:, None, :] + base_boxes(4 * step, self.ratios)[None]
                grid = np.append(grid, shifted.reshape(-1, 4), axis=0)
            grid = np.expand_dims(grid, axis=0)
            if torch.cuda.is_available():
                return torch.from_numpy(grid.astype(np.float32)).cuda()
            return torch.from_numpy(grid.astype(np.float32))
""")
FIND += [
    Shape("TW205", "detector anchors: a NumPy grid joined with np.append in a loop, torch.from_numpy(...).cuda() every forward",
          _PRIORS, 28),
    Shape("TW205", "a sinusoid position table from a pure-NumPy helper, torch.tensor(table).to(x.device) every forward", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        def sinusoid_table(length, dim):
            pos = np.arange(length)[:, None]
            freq = np.exp(-np.arange(0, dim, 2) * (np.log(10000.0) / dim))
            return np.concatenate([np.sin(pos * freq), np.cos(pos * freq)], axis=1)
        class Encoder(nn.Module):
            def __init__(self, vocab, dim):
                super().__init__()
                self.dim = dim
                self.embed = nn.Embedding(vocab, dim)
            def forward(self, tokens):
                length = tokens.size(1)
                table = sinusoid_table(length, self.dim)
                pe = torch.tensor(table, dtype=torch.float32).to(tokens.device)
                return self.embed(tokens) + pe
    """), 16),
    Shape("TW205", "a grid of two scales concatenated every training step and moved with .to(device)", d(_GRID_HELPERS + """
        def train(model, loader, opt, device):
            for images, targets in loader:
                images = images.to(device)
                side = images.shape[-1]
                grid = np.concatenate([cell_offsets(side // 8, 8), cell_offsets(side // 16, 16)], axis=0)
                anchors = torch.from_numpy(grid).float().to(device)
                loss = model(images, anchors, targets.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
    """), 19),
]
QUIET += [
    Shape("TW205", "anchors built in NumPy once in __init__ and moved there", d(_GRID_HELPERS + """
        class PriorBoxes(nn.Module):
            def __init__(self, side):
                super().__init__()
                grid = np.concatenate([cell_offsets(side // 8, 8), cell_offsets(side // 16, 16)], axis=0)
                self.anchors = torch.from_numpy(grid).float().cuda()
            def forward(self, features):
                return features + self.anchors
    """)),
    Shape("TW205", "rows joined from the function's input data (the annotations it is given), then moved", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        class Targets(nn.Module):
            def forward(self, images, annotations):
                rows = np.zeros((0, 5))
                for ann in annotations:
                    rows = np.append(rows, np.asarray(ann), axis=0)
                return torch.from_numpy(rows).float().cuda()
    """)),
    Shape("TW205", "a helper of pure NumPy given the input's values (not its shape): the data has to cross", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        def jitter(values):
            noise = np.zeros(values.shape)
            return values + noise
        class Augment(nn.Module):
            def forward(self, batch_np):
                grid = np.zeros((0, 4))
                grid = np.append(grid, jitter(batch_np), axis=0)
                return torch.from_numpy(grid).cuda()
    """)),
    Shape("TW205", "a table read from a file by the helper (np.load), joined and moved", d("""
        import numpy as np
        import torch
        import torch.nn as nn
        def stored_table(name):
            extra = np.zeros((1, 4))
            return np.concatenate([np.load(name), extra], axis=0)
        class Lookup(nn.Module):
            def forward(self, x):
                table = np.concatenate([stored_table("a.npy"), stored_table("b.npy")], axis=0)
                return x + torch.from_numpy(table).to(x.device)
    """)),
    Shape("TW205", "a replay buffer's method that stacks its own stored arrays (reads self), moved once per call", d("""
        import numpy as np
        import torch
        class Buffer:
            def __init__(self, n):
                self.states = np.zeros((n, 4))
            def _rows(self, idx):
                return np.concatenate([self.states[idx], np.zeros((len(idx), 1))], axis=1)
            def latest(self, idx):
                grid = np.concatenate([self._rows(idx), self._rows(idx)], axis=0)
                return torch.from_numpy(grid).cuda()
    """)),
]

# ----------------------------------------------------------------------------------- TW207 logger in another module
# A per-step progress logger defined in another module of the project and reached through the
# project's imports: its method reads every tensor it is handed on the host.
_TRACKER = d("""
    import sys
    class Tracker:
        def __init__(self, steps):
            self.steps = steps
            self.totals = {}
        def log(self, losses=None, images=None):
            for name in losses:
                if name not in self.totals:
                    self.totals[name] = losses[name].data[0]
                else:
                    self.totals[name] += losses[name].data[0]
            for name, image in (images or {}).items():
                self.show(name, image)
            sys.stdout.write(str(self.totals))
        def show(self, name, image):
            pass
""")
_STEP = """
    import torch
    from tracking import Tracker
    tracker = Tracker(100)
    model = model.cuda()
    for epoch in range(10):
        for real, target in loader:
            real, target = real.cuda(), target.cuda()
            opt.zero_grad()
            fake = model(real)
            loss_g = ((fake - target) ** 2).mean()
            loss_g.backward()
            opt.step()
{call}
"""
_PLOTTER = d("""
    class Plotter:
        def log(self, message):
            print(message)
""")
PROJECTS += [
    ProjectShape("TW207", "a GAN's progress logger in utils: logger.log({'loss_G': loss_G}) reads loss.data[0] every step", {
        "tracking.py": _TRACKER,
        "train.py": d(_STEP.format(call="            tracker.log({'loss_g': loss_g}, images={'fake': fake})")),
    }, (('tracking.py', 9), ('tracking.py', 11), ('train.py', 13),)),
    ProjectShape("TW207", "the logger's .cpu() of the images it is given, resolved through the import while another module's log() only prints", {
        "tracking.py": _TRACKER.replace("losses[name].data[0]", "losses[name].detach()").replace(
            "self.show(name, image)", "self.show(name, image[0].cpu().float().numpy())"),
        "plotting.py": _PLOTTER,
        "train.py": d(_STEP.format(call="            tracker.log({'loss_g': loss_g.detach()}, images={'fake': fake})")),
    }, (('tracking.py', 13), ('train.py', 13),)),
    ProjectShape("TW207", "the logger's .item() read when another module of the project defines a log() that only prints", {
        "tracking.py": _TRACKER.replace("losses[name].data[0]", "losses[name].item()"),
        "plotting.py": _PLOTTER,
        "train.py": d(_STEP.format(call="            tracker.log({'loss_g': loss_g})")),
    }, (('tracking.py', 9), ('tracking.py', 11), ('train.py', 13),)),
    ProjectShape("TW207", "look-alike: the logger only called every 100 steps", {
        "tracking.py": _TRACKER,
        "train.py": d(_STEP.format(call="            if epoch % 100 == 0:\n                tracker.log({'loss_g': loss_g})")),
    }),
    ProjectShape("TW207", "look-alike: torch.log / np.log of the loss in a project whose logger has a reading log()", {
        "tracking.py": _TRACKER.replace("losses[name].data[0]", "losses[name].item()"),
        "train.py": d(_STEP.format(call="            import numpy as np\n            score = torch.log(loss_g.detach())\n            other = np.log(loss_g.detach())")),
    }),
    ProjectShape("TW207", "look-alike: the logger keeps the tensors on the device (no read of what it is given)", {
        "tracking.py": _TRACKER.replace("losses[name].data[0]", "losses[name].detach()"),
        "train.py": d(_STEP.format(call="            tracker.log({'loss_g': loss_g})")),
    }),
    ProjectShape("TW207", "look-alike: the logger reads only its own state (self.scale.data[0]), not the tensors it is given", {
        "tracking.py": _TRACKER.replace("losses[name].data[0]", "losses[name].detach() * self.scale.data[0]"),
        "train.py": d(_STEP.format(call="            tracker.log({'loss_g': loss_g})")),
    }),
]

# ----------------------------------------------------------------------------------- TW502 pre-0.4 files
# Training utilities written for PyTorch < 0.4 pass `async=True`; since Python 3.7 the file does not
# parse. The old argument is reported, and the rest of the file is still checked.
FIND += [
    Shape("TW502", "a pre-0.4 cuda() helper: x.cuda(async=True), a syntax error since Python 3.7", d("""
        import torch
        def cuda(x):
            return x.cuda(async=True) if torch.cuda.is_available() else x
    """), 3),
    Shape("TW207", "a per-step .item() in a pre-0.4 file that does not parse (x.cuda(async=True) elsewhere in it)", d("""
        import torch
        def cuda(x):
            return x.cuda(async=True) if torch.cuda.is_available() else x
        def train(model, loader, optimizer, criterion):
            losses = []
            for inputs, targets in loader:
                loss = criterion(model(cuda(inputs)), cuda(targets))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
    """), 11),
]

# ----------------------------------------------------------------------------------- TW220 the import line
# `from torch.cuda.amp import autocast, GradScaler`: the import itself is reported once (a
# measurement that marks the deprecated import, not each use, finds it); a version fallback is not.
FIND += [
    Shape("TW220", "from torch.cuda.amp import autocast, GradScaler at the top of a GAN/TTS training script", d("""
        import torch
        from torch.cuda.amp import autocast, GradScaler
        def train(model, loader, optimizer, fp16):
            scaler = GradScaler(enabled=fp16)
            for x in loader:
                with autocast(enabled=fp16):
                    loss = model(x.cuda())
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
    """), 2),
]
QUIET += [
    Shape("TW220", "look-alike: the old import only as the fallback of the new one (except ImportError)", d("""
        try:
            from torch.amp import autocast, GradScaler
        except ImportError:
            from torch.cuda.amp import autocast, GradScaler
    """)),
]

# ----------------------------------------------------------------------------------- TW404 across modules
# Time-series experiment frameworks: the entry script asks torch.cuda.is_available() to set
# args.use_gpu, then builds the experiment, whose base class sets CUDA_VISIBLE_DEVICES in the
# _acquire_device() its constructor calls - too late, in another module.
_EXP_BASIC = d("""
    import os
    import torch
    class ExpBasic:
        def __init__(self, args):
            self.args = args
            self.device = self._acquire_device()
            self.model = self._build_model().to(self.device)
        def _build_model(self):
            raise NotImplementedError
        def _acquire_device(self):
            if self.args.use_gpu:
                os.environ["CUDA_VISIBLE_DEVICES"] = str(self.args.gpu)
                return torch.device(f"cuda:{self.args.gpu}")
            return torch.device("cpu")
""")
_EXP_MAIN = d("""
    from exp.exp_basic import ExpBasic
    from models import Forecaster
    class ExpMain(ExpBasic):
        def _build_model(self):
            return Forecaster(self.args)
        def train(self, setting):
            pass
""")
_RUN = d("""
    import argparse
    import torch
    from exp.exp_main import ExpMain
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_gpu", type=bool, default=True)
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()
    args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False
    Exp = ExpMain
    for ii in range(3):
        exp = Exp(args)
        exp.train(f"run{ii}")
""")
PROJECTS += [
    ProjectShape("TW404", "an experiment base class sets CUDA_VISIBLE_DEVICES in _acquire_device(); run.py asked is_available() before building a subclass through an alias", {
        "exp/exp_basic.py": _EXP_BASIC, "exp/exp_main.py": _EXP_MAIN, "run.py": _RUN,
    }, (("exp/exp_basic.py", 12),)),
    ProjectShape("TW404", "a trainer sets CUDA_VISIBLE_DEVICES in __init__; main() counted the GPUs before building it", {
        "trainer.py": d("""
            import os
            class Trainer:
                def __init__(self, cfg):
                    os.environ["CUDA_VISIBLE_DEVICES"] = cfg.gpus
                    self.cfg = cfg
        """),
        "main.py": d("""
            import torch
            from trainer import Trainer
            def main(cfg):
                print(torch.cuda.device_count(), "GPUs")
                Trainer(cfg).fit()
        """),
    }, (("trainer.py", 4),)),
    ProjectShape("TW404", "look-alike: the experiment is built before anything touches CUDA (the setting is in time)", {
        "exp/exp_basic.py": _EXP_BASIC, "exp/exp_main.py": _EXP_MAIN,
        "run.py": _RUN.replace("args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False\n", "")
                      .replace('        exp.train(f"run{ii}")\n', '        exp.train(f"run{ii}")\n        torch.cuda.empty_cache()\n'),
    }),
    ProjectShape("TW404", "look-alike: the setting is in a method the constructor does not call", {
        "exp/exp_basic.py": _EXP_BASIC.replace("self.device = self._acquire_device()", "self.device = None"),
        "exp/exp_main.py": _EXP_MAIN, "run.py": _RUN,
    }),
]

# ----------------------------------------------------------------------------------- TW513 through map
# A collate function or a batch builder of the NLP tutorials applies a typed constructor to every
# column: map(torch.LongTensor, zip(*batch)).
FIND += [
    Shape("TW513", "map(torch.LongTensor, zip(*batch)) in a BERT pre-training batch builder", d("""
        import torch
        from torch.utils.data import DataLoader, TensorDataset
        def make_loader(batch):
            input_ids, segment_ids, masked_tokens = map(torch.LongTensor, zip(*batch))
            return DataLoader(TensorDataset(input_ids, segment_ids, masked_tokens), batch_size=8)
    """), 4),
]
QUIET += [
    Shape("TW513", "look-alike: map of the modern factory, and the class named in isinstance", d("""
        import torch
        def collate(batch):
            columns = list(map(torch.tensor, zip(*batch)))
            assert all(isinstance(c, torch.LongTensor) for c in columns)
            return columns
    """)),
]

# ----------------------------------------------------------------------------------- TW502 clip_grad_norm
# 0.3-era training loops clip with the old name (a FutureWarning every step since it was renamed).
FIND += [
    Shape("TW502", "torch.nn.utils.clip_grad_norm(model.parameters(), clip) every step of a video-recognition loop", d("""
        import torch
        def train(model, loader, criterion, optimizer, clip):
            for x, y in loader:
                loss = criterion(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                total_norm = torch.nn.utils.clip_grad_norm(model.parameters(), clip)
                optimizer.step()
    """), 7),
]
QUIET += [
    Shape("TW502", "look-alike: the in-place clip_grad_norm_", d("""
        import torch
        def step(model, loss, optimizer):
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
    """)),
]
