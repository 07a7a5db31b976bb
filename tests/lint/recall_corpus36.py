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
    ProjectShape("TW403", "the same project whose helper chooses the device: the scripts' .cuda() breaks it" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "utils.py": _RENDER_CKPT + "def device():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n",
        "eval.py": _RENDER_EVAL, "extract_mesh.py": _RENDER_MESH},
        ()),
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
    ProjectShape("TW403", "the same check script when the extension also builds for the CPU" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": _DET_TRAIN, "external/deform/setup.py": _EXT_SETUP.replace(
            '    else:\n        raise NotImplementedError("Cuda is not available")\n', ""),
        "external/deform/deform.py": "import torch\nimport _deform as backend\nclass DeformConv(torch.nn.Module):\n    pass\n",
        "external/deform/check.py": _EXT_CHECK},
        ()),
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

# ------------------------------------------------------------- TW104 old-style inputs, feature extraction, aliases
# A keyword-spotting trainer's evaluate() wraps its inputs in `Variable(x, requires_grad=False)`
# (the 0.3-era idiom), which asks for no gradient - it is no gradient use that would make the
# function a training step. A skeleton-action demo's predict() runs `self.model.extract_feature(x)`.
# An image-translation test script binds the generator's encoder and decoder to names
# (`encode = trainer.gen_a.encode if a2b else trainer.gen_b.encode`) after `trainer.eval()` and runs
# them in one loop per model kind (`if kind == "A": loop` / `elif kind == "B": loop`).
FIND += [
    Shape("TW104", "evaluate() after model.eval() with inputs wrapped in Variable(x, requires_grad=False)", d("""
        import torch
        from torch.autograd import Variable
        def evaluate(config, model, loader):
            model.eval()
            total = 0
            for x, y in loader:
                x = Variable(x, requires_grad=False)
                scores = model(x)
                total += (scores.argmax(1) == y).sum().item()
            return total
    """), 8),
    Shape("TW104", "an inference demo's predict() running model.extract_feature(x)", d("""
        import torch
        class Demo(IO):
            def start(self):
                self.model.eval()
                data = torch.from_numpy(self.read_skeletons()).float().to(self.dev)
                return self.predict(data)
            def predict(self, data):
                output, feature = self.model.extract_feature(data)
                return output.sum(dim=3).argmax(dim=0).item(), feature.cpu().numpy()
    """), 8, "demo.py"),
]
_TRANSLATE = d("""
    import torch
    trainer = Trainer(config)
    trainer.load_state_dict(torch.load(opts.checkpoint, map_location="cpu"))
    trainer.eval()
    encode = trainer.gen_a.encode if opts.a2b else trainer.gen_b.encode
    decode = trainer.gen_b.decode if opts.a2b else trainer.gen_a.decode
    if opts.kind == "styled":
        for i, images in enumerate(loader):
            content, _ = encode(images)
            for s in styles:
                save(decode(content, s), i)
    elif opts.kind == "plain":
        for i, images in enumerate(loader):
            content, _ = encode(images)
            save(decode(content), i)
""")
FIND += [
    Shape("TW104", "an encoder bound to a name after trainer.eval(), run in the first branch's loop", _TRANSLATE, 9, "test_batch.py"),
    Shape("TW104", "the same script: the second branch's loop is an evaluation pass of its own", _TRANSLATE, 14, "test_batch.py"),
]
QUIET += [
    Shape("TW104", "look-alike: a tokenizer's encode bound to a name in an evaluation loop", d("""
        import torch
        model.eval()
        encode = tokenizer.encode
        with torch.no_grad():
            for text in texts:
                ids = torch.tensor(encode(text))
                print(model(ids[None]).argmax(-1))
    """), None, "score.py"),
]

# ------------------------------------------------------------- TW104 who reaches an evaluation-named function
# A NeRF renderer defines `def inference(model, xyz, ...)` inside `render_rays()`, which the
# training step calls: the nested helper runs as its enclosing function does. An OOD-detection
# library's `compute_ood_score()` puts the model in eval mode and runs it; it is reached only
# through a closure its `eval_ood_detection()` builds, which the project's eval.py calls inside
# `with torch.no_grad():`.
PROJECTS += [
    ProjectShape("TW104", "look-alike: a nested inference() helper of a renderer the training step calls", {
        "models/rendering.py": d("""
            import torch
            def render_rays(model, rays, chunk=1024):
                def inference(model, xyz):
                    out = [model(xyz[i:i + chunk]) for i in range(0, len(xyz), chunk)]
                    return torch.cat(out, 0)
                return inference(model, sample(rays))
        """),
        "train.py": d("""
            import torch
            from models.rendering import render_rays
            opt = torch.optim.Adam(model.parameters())
            for rays, rgb in loader:
                loss = ((render_rays(model, rays) - rgb) ** 2).mean()
                loss.backward()
                opt.step()
        """)}),
    ProjectShape("TW104", "the same nested helper inside an evaluation function", {
        "models/rendering.py": d("""
            import torch
            def evaluate(model, rays, chunk=1024):
                def inference(model, xyz):
                    out = [model(xyz[i:i + chunk]) for i in range(0, len(xyz), chunk)]
                    return torch.cat(out, 0)
                model.eval()
                return inference(model, sample(rays))
        """),
        "eval.py": "from models.rendering import evaluate\nprint(evaluate(model, rays))\n"},
        (("models/rendering.py", 4),)),
]
_OOD_EVALS = d("""
    import torch
    def eval_ood_detection(model, id_loader, ood_loaders):
        score_func = get_score_func(model)
        return {k: get_scores(v, score_func) for k, v in ood_loaders.items()}
    def get_score_func(model):
        def score_func(x):
            return compute_ood_score(model, x)
        return score_func
    def get_scores(loader, score_func):
        return [score_func(x) for x, _ in loader]
    def compute_ood_score(model, x):
        model.eval()
        return model(x).max(1)[0].cpu()
""")
PROJECTS += [
    ProjectShape("TW104", "look-alike: an evaluation helper reached only through a caller under no_grad in eval.py", {
        "evals/evals.py": _OOD_EVALS,
        "eval.py": d("""
            import torch
            from evals.evals import eval_ood_detection
            with torch.no_grad():
                print(eval_ood_detection(model, test_loader, ood_loaders))
        """)}),
    ProjectShape("TW104", "the same helper when eval.py calls it with autograd on", {
        "evals/evals.py": _OOD_EVALS,
        "eval.py": "import torch\nfrom evals.evals import eval_ood_detection\nprint(eval_ood_detection(model, test_loader, ood_loaders))\n"},
        (("evals/evals.py", 13),)),
]

# ------------------------------------------------------------- TW201 a builder beside a predictor; a base class
# A translation toolkit's prediction module builds the model in `prepare()` for training and for
# testing (`model = Wrapper(DP(model))` when several GPUs are there); its own `predict()` puts a
# local `model` in eval mode - another function's variable, not the wrapped one. A skeleton-action
# toolkit's `IO` base class wraps `self.model` in DataParallel; the recognition processor that
# trains derives from it through `Processor(IO)`.
PROJECTS += [
    ProjectShape("TW201", "a model builder wrapping in DataParallel, beside another function's eval() of a local model", {
        "nmt/prediction.py": d("""
            import torch
            from torch.nn import DataParallel as DP
            def prepare(args):
                model = build_model(args)
                if args.n_gpu > 1:
                    model = Wrapper(DP(model))
                return model
            def predict(model, data):
                model.eval()
                with torch.no_grad():
                    return [model(x) for x in data]
        """),
        "nmt/training.py": d("""
            from nmt.prediction import prepare
            def train(args):
                model = prepare(args)
                for x, y in loader:
                    model(x, y).backward()
                    optimizer.step()
        """)}, (("nmt/prediction.py", 6),)),
    ProjectShape("TW201", "a base class's DataParallel around the model its training subclass trains", {
        "processor/io.py": d("""
            import torch.nn as nn
            class IO:
                def load_model(self):
                    self.model = build(self.arg.model)
                    if self.arg.use_gpu and len(self.gpus) > 1:
                        self.model = nn.DataParallel(self.model, device_ids=self.gpus)
        """),
        "processor/processor.py": "from .io import IO\nclass Processor(IO):\n    def start(self):\n        self.load_model()\n        self.train()\n",
        "main.py": "from processor.recognition import REC_Processor\nREC_Processor().start()\n",
        "processor/recognition.py": d("""
            from .processor import Processor
            class REC_Processor(Processor):
                def train(self):
                    for data, label in self.loader:
                        loss = self.loss(self.model(data), label)
                        self.optimizer.zero_grad()
                        loss.backward()
                        self.optimizer.step()
        """)}, (("processor/io.py", 6),)),
    ProjectShape("TW201", "look-alike: the same base class when no class of the project trains", {
        "processor/io.py": d("""
            import torch.nn as nn
            class IO:
                def load_model(self):
                    self.model = build(self.arg.model)
                    if self.arg.use_gpu and len(self.gpus) > 1:
                        self.model = nn.DataParallel(self.model, device_ids=self.gpus)
        """),
        "processor/demo.py": d("""
            import torch
            from .io import IO
            class Demo(IO):
                def start(self):
                    self.model.eval()
                    with torch.no_grad():
                        print(self.model(self.read()))
        """)}),
]

# ------------------------------------------------------------- TW301 a seed only an evaluation script sets
# An instance-segmentation project seeds Python's `random` only in eval.py (`random.seed(args.seed)`
# for the order of its images); train.py seeds nothing and has no seed option. The loss's
# `torch.randperm` and the augmentations' NumPy draws belong to training: an evaluation script's
# seed asks nothing of them.
_SEG_LOSS = "import torch\ndef pick(coef, k):\n    perm = torch.randperm(coef.size(0))\n    return coef[perm[:k]]\n"
_SEG_AUG = "import numpy as np\nclass Contrast:\n    def __call__(self, img):\n        return img * np.random.uniform(0.5, 1.5)\n"
PROJECTS += [
    ProjectShape("TW301", "look-alike: draws of training modules when only an evaluation script seeds", {
        "layers/loss.py": _SEG_LOSS, "utils/augment.py": _SEG_AUG,
        "eval.py": d("""
            import random
            from layers.loss import pick
            from utils.augment import Contrast
            def main(args):
                if args.seed is not None:
                    random.seed(args.seed)
                net.eval()
                evaluate(net, shuffle(images))
            if __name__ == "__main__":
                main(parse())
        """),
        "train.py": d("""
            from layers.loss import pick
            from utils.augment import Contrast
            for x, y in loader:
                loss = net(Contrast()(x), pick(y, 8))
                loss.backward()
                optimizer.step()
        """)}),
    ProjectShape("TW301", "the same draws when the training script seeds random", {
        "layers/loss.py": _SEG_LOSS, "utils/augment.py": _SEG_AUG,
        "train.py": d("""
            import random
            from layers.loss import pick
            from utils.augment import Contrast
            random.seed(0)
            for x, y in loader:
                loss = net(Contrast()(x), pick(y, 8))
                loss.backward()
                optimizer.step()
        """)}, (("layers/loss.py", 3), ("utils/augment.py", 4))),
]

# ------------------------------------------------------------- TW405 literal rendezvous handed to a set-up helper
# A translation toolkit's __main__.py starts `train` with `mp.spawn(train, ...)`; train() calls
# `ddp_setup(rank, world_size, master_addr="localhost", master_port=12355)`, a helper that copies
# them into MASTER_ADDR/MASTER_PORT.
_DDP_HELPER = d("""
    import os
    import torch.distributed as dist
    def ddp_setup(rank, world_size, master_addr="localhost", master_port=12355):
        os.environ.setdefault("MASTER_ADDR", master_addr)
        os.environ.setdefault("MASTER_PORT", str(master_port))
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
""")
_NMT_TRAIN = d("""
    from nmt.helpers import ddp_setup
    def train(rank, world_size, cfg):
        if cfg.use_ddp:
            ddp_setup(rank, world_size, master_addr="localhost", master_port=12355)
        run(cfg)
""")
PROJECTS += [
    ProjectShape("TW405", "literal master_addr/master_port handed to a set-up helper in a function mp.spawn starts", {
        "nmt/helpers.py": _DDP_HELPER, "nmt/training.py": _NMT_TRAIN,
        "nmt/__main__.py": d("""
            import torch.multiprocessing as mp
            from nmt.training import train
            mp.spawn(train, args=(n_gpu, cfg), nprocs=n_gpu)
        """)}, (("nmt/training.py", 4),)),
    ProjectShape("TW405", "look-alike: the same call in a function that torchrun runs (nothing spawns it)", {
        "nmt/helpers.py": _DDP_HELPER, "nmt/training.py": _NMT_TRAIN,
        "nmt/__main__.py": "import os\nfrom nmt.training import train\ntrain(int(os.environ['RANK']), int(os.environ['WORLD_SIZE']), cfg)\n"}),
]

# ------------------------------------------------------------- TW403 kernels required through a try, models loaded by name
# A 3-D detection project vendors PointNet++ ops built with CUDAExtension; its wrapper imports the
# built module in a `try:` whose `except ImportError:` raises again (a setup hint): the import is
# required. Every model reaches the ops, so the scripts' `cuda if is_available() else cpu` is no
# CPU path, and the loss helper's CUDA constructors break nothing.
_PN_FILES = {
    "pointnet2/setup.py": d("""
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension
        setup(name="pointnet2", ext_modules=[CUDAExtension(name="pointnet2._ext", sources=["src/ops.cpp", "src/ops.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """),
    "pointnet2/pointnet2_utils.py": d("""
        import torch
        try:
            import pointnet2._ext as _ext
        except ImportError:
            raise ImportError("build the ops first: see the README")
        def furthest_point_sample(xyz, n):
            return _ext.furthest_point_sampling(xyz, n)
    """),
    "pointnet2/pointnet2_modules.py": "import torch.nn as nn\nimport pointnet2_utils\nclass SAModule(nn.Module):\n    pass\n",
    "models/backbone.py": "import torch.nn as nn\nfrom pointnet2_modules import SAModule\nclass Backbone(nn.Module):\n    pass\n",
    "models/detector.py": "import torch.nn as nn\nfrom backbone import Backbone\nclass Detector(nn.Module):\n    pass\n",
    "models/loss_helper.py": d("""
        import torch
        def box_loss(end_points, n_cls):
            b, k = end_points["labels"].shape
            one_hot = torch.cuda.FloatTensor(b, k, n_cls).zero_()
            weights = torch.ones(b, k).cuda()
            return (one_hot.sum(-1) * weights).mean()
    """),
    "train.py": d("""
        import torch
        from models.detector import Detector
        from models.loss_helper import box_loss
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        net = Detector().to(device)
        for points, labels in loader:
            box_loss(net(points.to(device)), 10).backward()
    """),
}
PROJECTS += [
    ProjectShape("TW403", "look-alike: a loss helper of a project whose models all reach ops imported in a try that re-raises",
                 _PN_FILES),
    ProjectShape("TW403", "the same helper when the ops' import falls back quietly (the project may run without them)", {
        **_PN_FILES, "pointnet2/pointnet2_utils.py": _PN_FILES["pointnet2/pointnet2_utils.py"].replace(
            '    raise ImportError("build the ops first: see the README")', "    _ext = None")},
        (("models/loss_helper.py", 4), ("models/loss_helper.py", 5))),
]
# A project that loads its model modules by name (`importlib.import_module(args.model)`): a model
# module's `__main__` self-test makes it no stand-alone script, and its forward's hard-coded CUDA
# breaks the CPU path the training script offers.
PROJECTS += [
    ProjectShape("TW403", "a model module loaded by name, with a __main__ self-test, hard-codes CUDA in its forward" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": d("""
            import importlib
            import torch
            device = "cuda" if torch.cuda.is_available() else "cpu"
            MODEL = importlib.import_module(args.model)
            net = MODEL.BoxNet().to(device)
        """),
        "models/boxnet.py": d("""
            import torch
            import torch.nn as nn
            class BoxNet(nn.Module):
                def forward(self, x):
                    return x + torch.zeros(x.shape[-1]).cuda()
            if __name__ == "__main__":
                print(BoxNet()(torch.rand(2, 3)))
        """)}, ()),
]
QUIET += [
    Shape("TW403", "look-alike: a benchmark that offers a CPU device and synchronises CUDA in its timing branch", d("""
        import time
        import torch
        device = "cuda"
        device_type = "cuda" if "cuda" in device else "cpu"
        model = build().to(device)
        if profile:
            run_profiler(model)
        else:
            torch.cuda.synchronize()
            t0 = time.time()
            model(batch(device))
            torch.cuda.synchronize()
            print(time.time() - t0)
    """), None, "bench.py"),
]
