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
