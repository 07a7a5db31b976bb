"""The recall corpus, round 15 part D: classes the sets 19 and 20 (tuning sets of round 15) showed
for TW403, TW402, TW104, TW201, TW405 and TW301 - reported where the advice does not apply, or
missed - each written in our own words and reduced to its shape, with look-alikes.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 what is a project's CPU path
# A neural-rendering project: its checkpoint helper loads with map_location=torch.device("cpu")
# and its scripts move results back with .cpu(), but no file chooses a device - no GPU check, no
# flag, no "cpu" device to run on. The map_location is no CPU path: the scripts' .cuda() breaks
# nothing the project offers.
_RENDER_CKPT = d("""
    import torch
    def load_ckpt(model, path):
        ckpt = torch.load(path, map_location=torch.device("cpu"))
        model.load_state_dict(ckpt["state_dict"])
""")
_RENDER_EVAL = d("""
    import torch
    from utils import load_ckpt
    from models import Field
    def render(args):
        field = Field()
        load_ckpt(field, args.ckpt)
        field.cuda().eval()
        for rays in batches(args):
            out = field(rays.cuda())
            save(out.to("cpu").numpy())
    render(parse())
""")
_RENDER_MESH = d("""
    import torch
    from utils import load_ckpt
    from models import Field
    def extract(args):
        field = Field()
        load_ckpt(field, args.ckpt)
        field.cuda().eval()
        grid = torch.zeros(64, 64, 64, 3).cuda()
        return field(grid).cpu()
    extract(parse())
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: the only \"cpu\" of the project is a map_location=torch.device('cpu')", {
        "utils.py": _RENDER_CKPT, "eval.py": _RENDER_EVAL, "extract_mesh.py": _RENDER_MESH}),
    ProjectShape("TW403", "the same project whose helper chooses the device: the scripts' .cuda() breaks it", {
        "utils.py": _RENDER_CKPT + "def device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n",
        "eval.py": _RENDER_EVAL, "extract_mesh.py": _RENDER_MESH},
        (("eval.py", 7), ("eval.py", 9), ("extract_mesh.py", 7), ("extract_mesh.py", 8))),
]

# ------------------------------------------------------------- TW403 scripts vs libraries
# An instance-segmentation project offers `--cuda False` in its training and evaluation scripts.
# Beside them, analysis scripts under scripts/ (an anchor-recall study, a box optimiser) are
# entry points of their own: `if __name__ == "__main__":`, no device choice, no options with a
# device flag, no project module imported - written for the GPU they name. A model module the
# scripts import is a library: its hard-coded move breaks the CPU run they offer.
_SEG_TRAIN = d("""
    import argparse
    import torch
    from model import SegNet
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", type=bool, default=True)
    args = parser.parse_args()
    device = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"
    net = SegNet().to(device)
""")
_SEG_MODEL = d("""
    import torch
    import torch.nn as nn
    class SegNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.priors = torch.rand(100, 4).cuda()
""")
_ANCHOR_STUDY = d("""
    import torch
    def recall(boxes, anchors):
        boxes = torch.tensor(boxes).cuda()
        anchors = torch.tensor(anchors).cuda()
        return (boxes[:, None] - anchors).abs().min(1)[0]
    if __name__ == "__main__":
        print(recall(load_boxes(), make_anchors()))
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: an analysis script of its own (a __main__ block, no device choice, no project import)", {
        "train.py": _SEG_TRAIN, "model.py": _SEG_MODEL, "scripts/anchor_recall.py": _ANCHOR_STUDY},
        (("model.py", 6),)),
    ProjectShape("TW403", "the same script parsing the project's options, whose --no_cuda it ignores", {
        "train.py": _SEG_TRAIN, "model.py": _SEG_MODEL,
        "options.py": d("""
            import argparse
            def parse_opts():
                p = argparse.ArgumentParser()
                p.add_argument("--no_cuda", action="store_true")
                return p.parse_args()
        """),
        "anchor_recall.py": "from options import parse_opts\n" + _ANCHOR_STUDY},
        (("model.py", 6), ("anchor_recall.py", 4), ("anchor_recall.py", 5))),
    ProjectShape("TW403", "the same functions in a module the training script imports: a library", {
        "train.py": _SEG_TRAIN.replace("from model import SegNet", "from model import SegNet\nfrom anchors import recall")
        + "print(recall(boxes, net.priors))\n",
        "model.py": _SEG_MODEL, "anchors.py": _ANCHOR_STUDY},
        (("model.py", 6), ("anchors.py", 3), ("anchors.py", 4))),
]

# ------------------------------------------------------------- TW403 a vendored extension that refuses a CPU build
# A detector vendors a deformable-convolution extension: its setup.py picks CppExtension, then
# CUDAExtension when CUDA is there, and raises otherwise; its wrapper imports the built module;
# a check script beside it runs the layer on CUDA tensors at module level.
_EXT_SETUP = d("""
    import torch
    from setuptools import setup
    from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension
    def get_extensions():
        extension = CppExtension
        if torch.cuda.is_available() and CUDA_HOME is not None:
            extension = CUDAExtension
        else:
            raise NotImplementedError("Cuda is not available")
        return [extension("_deform", ["src/deform.cpp", "src/deform_cuda.cu"])]
    setup(name="deform", ext_modules=get_extensions())
""")
_EXT_CHECK = d("""
    import torch
    from deform import DeformConv
    conv = DeformConv(8, 8, 3).cuda()
    x = torch.load("sample_input.pt").cuda()
    print(conv(x).shape)
""")
_DET_TRAIN = d("""
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build().to(device)
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: the check script of a vendored extension whose setup.py raises without CUDA", {
        "train.py": _DET_TRAIN, "external/deform/setup.py": _EXT_SETUP,
        "external/deform/deform.py": "import torch\nimport _deform as backend\nclass DeformConv(torch.nn.Module):\n    pass\n",
        "external/deform/check.py": _EXT_CHECK}),
    ProjectShape("TW403", "the same check script when the extension also builds for the CPU", {
        "train.py": _DET_TRAIN, "external/deform/setup.py": _EXT_SETUP.replace(
            '    else:\n        raise NotImplementedError("Cuda is not available")\n', ""),
        "external/deform/deform.py": "import torch\nimport _deform as backend\nclass DeformConv(torch.nn.Module):\n    pass\n",
        "external/deform/check.py": _EXT_CHECK},
        (("external/deform/check.py", 3), ("external/deform/check.py", 4))),
]

# ------------------------------------------------------------- TW403 a device flag, and moves that ignore it
# An evaluation script offers `--cuda` and moves its batches under `if args.cuda:`, yet moves the
# image of its single-image mode with a bare .cuda() and synchronises CUDA in its benchmark
# helper. Its `json.dumps` names no MPS backend, and the synchronize does not make it a GPU-only
# benchmark: the flag is its CPU path, and those lines break it.
FIND += [
    Shape("TW403", "a script with a --cuda flag moves one image with a bare .cuda()", d("""
        import argparse
        import json
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", type=bool, default=True)
        args = parser.parse_args()
        def benchmark(net, batch):
            net(batch)
            torch.cuda.synchronize()
        def eval_image(net, img):
            x = torch.from_numpy(img).cuda().float()
            return json.dumps(net(x).tolist())
        def main(net, loader):
            if args.cuda:
                net = net.cuda()
            for batch in loader:
                if args.cuda:
                    batch = batch.cuda()
                benchmark(net, batch)
    """), 11, "eval.py"),
    Shape("TW403", "the same script: its benchmark helper synchronises CUDA unguarded", d("""
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", type=bool, default=True)
        args = parser.parse_args()
        def benchmark(net, batch):
            net(batch)
            torch.cuda.synchronize()
        def main(net, loader):
            if args.cuda:
                net = net.cuda()
            for batch in loader:
                benchmark(net, batch)
    """), 8, "eval.py"),
]
QUIET += [
    Shape("TW403", "look-alike: a speed-run script with no device flag, timed with torch.cuda.synchronize()", d("""
        import time
        import torch
        def bench(net, x):
            x = x.cuda()
            torch.cuda.synchronize()
            t = time.time()
            net(x)
            torch.cuda.synchronize()
            return time.time() - t
    """), None, "bench.py"),
]

# ------------------------------------------------------------- TW403 calls that need a GPU
# A two-stream skeleton model builds its padding with the legacy CUDA constructor in forward; a
# detector module calls torch.cuda.current_device() at import time (a driver work-around) beside
# functions that take a device.
FIND += [
    Shape("TW403", "torch.cuda.FloatTensor(...) built in a model's forward", d("""
        import torch
        import torch.nn as nn
        class TwoStream(nn.Module):
            def forward(self, x):
                n, c, t, v = x.size()
                pad = torch.cuda.FloatTensor(n, c, 1, v).zero_()
                motion = torch.cat((pad, x[:, :, 1:] - x[:, :, :-1]), 2)
                return self.a(x) + self.b(motion)
    """), 6, "net/two_stream.py"),
    Shape("TW403", "torch.cuda.current_device() at the top of a module whose functions take a device", d("""
        import torch
        import torch.nn as nn
        torch.cuda.current_device()
        def make_priors(sizes, device):
            return torch.cat([torch.zeros(s, 4) for s in sizes]).to(device)
    """), 3, "detector.py"),
]
QUIET += [
    Shape("TW403", "look-alike: the CUDA tensor type in an isinstance test and a chosen alias", d("""
        import torch
        def is_gpu(x):
            return isinstance(x, torch.cuda.FloatTensor)
        Tensor = torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor
    """), None, "utils.py"),
    Shape("TW403", "look-alike: current_device() under a GPU check", d("""
        import torch
        if torch.cuda.is_available():
            torch.cuda.current_device()
        def make_priors(sizes, device):
            return torch.rand(sum(sizes), 4, device=device)
    """), None, "detector.py"),
]

# ------------------------------------------------------------- TW402 the device from a project helper
# A music model's scripts move the model with `.to(get_device())`, a helper of the project that
# returns CUDA when there is one (and the CPU with `--force_cpu`); the evaluation script restores
# the weights the training script saved, with no map_location.
_DEVICE_HELPER = d("""
    import torch
    USE_CUDA = True
    def use_cuda(flag):
        global USE_CUDA
        USE_CUDA = flag
    def get_device():
        if USE_CUDA and torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
""")
_MUSIC_TRAIN = d("""
    import torch
    from utilities.device import get_device, use_cuda
    def main(args):
        if args.force_cpu:
            use_cuda(False)
        model = Transformer().to(get_device())
        opt = torch.optim.Adam(model.parameters())
        for x, y in loader:
            loss = model(x.to(get_device()), y)
            loss.backward()
            opt.step()
        torch.save(model.state_dict(), args.out)
""")
PROJECTS += [
    ProjectShape("TW402", "an evaluation script moving its model with .to(get_device()) of a project helper", {
        "utilities/device.py": _DEVICE_HELPER, "train.py": _MUSIC_TRAIN,
        "evaluate.py": d("""
            import torch
            from utilities.device import get_device
            def main(args):
                model = Transformer().to(get_device())
                model.load_state_dict(torch.load(args.weights))
                model.eval()
            if __name__ == "__main__":
                main(parse())
        """)}, (("evaluate.py", 5),)),
    ProjectShape("TW402", "look-alike: the same script mapping the weights to the helper's device", {
        "utilities/device.py": _DEVICE_HELPER, "train.py": _MUSIC_TRAIN,
        "evaluate.py": d("""
            import torch
            from utilities.device import get_device
            def main(args):
                model = Transformer().to(get_device())
                model.load_state_dict(torch.load(args.weights, map_location=get_device()))
            if __name__ == "__main__":
                main(parse())
        """)}),
]

# ------------------------------------------------------------- TW402 GPU-only projects: resume vs evaluation
# An image-translation project (GPU-only: no file can run without one) has an inference script
# that tries the checkpoint as it is and, failing that, converts an old format with a helper of
# the project before restoring it. Both loads are an inference script's (R2). A VQA trainer in a
# project with no CPU path anywhere resumes its own checkpoint inside its training method: the
# same process, on the same GPU (R2: not counted); its evaluation method's load counts.
_TRANS_TRAINER = d("""
    import torch
    class Trainer:
        def __init__(self, cfg):
            self.gen = Gen(cfg).cuda()
        def save(self, path):
            torch.save({"a": self.gen.state_dict()}, path)
""")
PROJECTS += [
    ProjectShape("TW402", "an inference script's fallback load passed through a conversion helper of the project", {
        "trainer.py": _TRANS_TRAINER,
        "utils.py": "def upgrade_keys(state):\n    return {k.replace('norm', 'bn'): v for k, v in state.items()}\n",
        "infer.py": d("""
            import torch
            from trainer import Trainer
            from utils import upgrade_keys
            trainer = Trainer(load_config())
            try:
                state = torch.load(opts.checkpoint)
                trainer.gen.load_state_dict(state["a"])
            except KeyError:
                state = upgrade_keys(torch.load(opts.checkpoint))
                trainer.gen.load_state_dict(state["a"])
            trainer.cuda()
            if __name__ == "__main__":
                run(trainer)
        """)}, (("infer.py", 6), ("infer.py", 9))),
]
_VQA_EXEC = d("""
    import torch
    class Execution:
        def train(self, data):
            net = Net(self.cfg)
            net.cuda()
            optim = torch.optim.Adam(net.parameters())
            if self.cfg.resume:
                ckpt = torch.load(self.cfg.ckpt_path)
                net.load_state_dict(ckpt["state_dict"])
            for x, y in data:
                loss = net(x.cuda(), y.cuda())
                loss.backward()
                optim.step()
            torch.save({"state_dict": net.state_dict()}, self.cfg.out)
        def eval(self, data):
            net = Net(self.cfg)
            net.load_state_dict(torch.load(self.cfg.ckpt_path)["state_dict"])
            net.cuda()
            net.eval()
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: a training method's resume in a project with no CPU path (its eval load counts)", {
        "core/exec.py": _VQA_EXEC, "run.py": "from core.exec import Execution\nExecution().train(load())\n"},
        (("core/exec.py", 17),)),
    ProjectShape("TW402", "the same resume when another training script of the project chooses the CPU", {
        "core/exec.py": _VQA_EXEC, "run.py": "from core.exec import Execution\nExecution().train(load())\n",
        "probe.py": d("""
            import torch
            device = "cuda" if torch.cuda.is_available() else "cpu"
            probe = Probe().to(device)
            opt = torch.optim.SGD(probe.parameters(), lr=0.1)
            for x, y in loader:
                probe(x.to(device), y.to(device)).backward()
                opt.step()
        """)},
        (("core/exec.py", 8), ("core/exec.py", 17))),
]
