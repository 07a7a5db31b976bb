"""The recall corpus, round 23 part C: classes sets 35 and 36 showed for TW209, TW402 and TW403 -
each written in our own words and reduced to its shape, with look-alikes that must stay quiet.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW209 the project's own conv subclass in another module
# A pruning library subclasses nn.Conv2d / nn.BatchNorm2d in one module (masks as buffers, bias
# handed to the base in its own position, forward through _conv_forward) and every network of the
# project is built from them in other modules.
_MASKED = d("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    class Conv2d(nn.Conv2d):
        def __init__(self, cin, cout, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
            super(Conv2d, self).__init__(cin, cout, kernel_size, stride, padding, dilation, groups, bias)
            self.register_buffer("weight_mask", torch.ones(self.weight.shape))
        def forward(self, x):
            return self._conv_forward(x, self.weight * self.weight_mask, self.bias)
    class Linear(nn.Linear):
        def __init__(self, fin, fout, bias=True):
            super().__init__(fin, fout, bias)
            self.register_buffer("weight_mask", torch.ones(self.weight.shape))
        def forward(self, x):
            return F.linear(x, self.weight * self.weight_mask, self.bias)
    class BatchNorm2d(nn.BatchNorm2d):
        def forward(self, x):
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, self.training)
    class Gate(nn.Conv2d):
        def __init__(self, cin, cout, bias=True):
            super().__init__(cin, cout, 1, bias=bias)
        def forward(self, x):
            return torch.sigmoid(x.mean(1, keepdim=True))
""")
PROJECTS += [
    ProjectShape("TW209", "a module's conv attribute is the project's masked Conv2d (bias default True), then its BatchNorm2d", {
        "prune/layers.py": _MASKED,
        "nets/vgg.py": d("""
            import torch.nn as nn
            from prune import layers
            class Block(nn.Module):
                def __init__(self, cin, cout):
                    super().__init__()
                    self.conv = layers.Conv2d(cin, cout, 3, padding=1)
                    self.bn = layers.BatchNorm2d(cout)
                def forward(self, x):
                    return self.bn(self.conv(x)).relu()
        """)}, (("nets/vgg.py", 6),)),
    ProjectShape("TW209", "a layer list built from the project's Conv2d imported by name, then torch's BatchNorm2d under a flag", {
        "prune/layers.py": _MASKED,
        "nets/plain.py": d("""
            import torch.nn as nn
            from prune.layers import Conv2d
            def make(cfg, batch_norm=False):
                layers, c = [], 3
                for v in cfg:
                    layers += [Conv2d(c, v, 3, padding=1)]
                    if batch_norm:
                        layers += [nn.BatchNorm2d(v)]
                    layers += [nn.ReLU()]
                    c = v
                return nn.Sequential(*layers)
            net = make([64, 128], batch_norm=True)
        """)}, (("nets/plain.py", 6),)),
    ProjectShape("TW209", "a relative import of the layers module in a package; the project's Linear before BatchNorm1d", {
        "pkg/__init__.py": "",
        "pkg/layers.py": _MASKED,
        "pkg/mlp.py": d("""
            import torch.nn as nn
            from . import layers
            def head(n):
                return nn.Sequential(layers.Linear(n, 256), nn.BatchNorm1d(256), nn.ReLU(), layers.Linear(256, 10))
        """)}, (("pkg/mlp.py", 4),)),
    ProjectShape("TW209", "look-alike: the project's Conv2d is called with bias=False", {
        "prune/layers.py": _MASKED,
        "nets/vgg.py": d("""
            import torch.nn as nn
            from prune import layers
            def block(cin, cout):
                return nn.Sequential(layers.Conv2d(cin, cout, 3, padding=1, bias=False), layers.BatchNorm2d(cout))
        """)}),
    ProjectShape("TW209", "look-alike: the project's conv subclass computes a gate, not a convolution", {
        "prune/layers.py": _MASKED,
        "nets/vgg.py": d("""
            import torch.nn as nn
            from prune import layers
            def block(cin, cout):
                return nn.Sequential(layers.Gate(cin, cout), nn.BatchNorm2d(cout))
        """)}),
    ProjectShape("TW209", "look-alike: a class of the same name in another module of the project (not the imported one) is a conv", {
        "prune/layers.py": _MASKED,
        "other/blocks.py": d("""
            import torch.nn as nn
            class Conv2d(nn.Module):
                def __init__(self, cin, cout, k):
                    super().__init__()
                    self.conv = nn.Conv2d(cin, cout, k, bias=False)
                def forward(self, x):
                    return self.conv(x)
        """),
        "nets/vgg.py": d("""
            import torch.nn as nn
            from other import blocks
            def block(cin, cout):
                return nn.Sequential(blocks.Conv2d(cin, cout, 3), nn.BatchNorm2d(cout))
        """)}),
]

# ------------------------------------------------------------- TW402 a model class that moves itself to the GPU
# A retrieval model wraps two encoders and moves them to CUDA in its constructor when a GPU is there;
# the training script's resume and the evaluation helper build one and restore a checkpoint into it,
# naming no device themselves.
_SELF_MOVING = d("""
    import torch
    import torch.nn as nn
    class PairModel:
        def __init__(self, opt):
            self.img = nn.Linear(8, 4)
            self.txt = nn.Linear(8, 4)
            if torch.cuda.is_available():
                self.img.cuda()
                self.txt.cuda()
        def state_dict(self):
            return [self.img.state_dict(), self.txt.state_dict()]
        def load_state_dict(self, sd):
            self.img.load_state_dict(sd[0])
            self.txt.load_state_dict(sd[1])
""")
_PLAIN_MODEL = _SELF_MOVING.replace("        if torch.cuda.is_available():\n            self.img.cuda()\n            self.txt.cuda()\n", "")
_RESUME = d("""
    import argparse
    import torch
    from lib.model import PairModel
    def main():
        opt = argparse.ArgumentParser().parse_args()
        model = PairModel(opt)
        if opt.resume:
            ckpt = torch.load(opt.resume)
            model.load_state_dict(ckpt["model"])
        for epoch in range(10):
            save_checkpoint({"model": model.state_dict(), "epoch": epoch}, "last.pth")
    def save_checkpoint(state, filename):
        torch.save(state, filename)
    if __name__ == "__main__":
        main()
""")
_EVAL = "import sys\nfrom lib.evaluation import evalrank\nif __name__ == '__main__':\n    evalrank(sys.argv[1])\n"
_EVALRANK = d("""
    import torch
    from lib.model import PairModel
    def evalrank(model_path):
        checkpoint = torch.load(model_path)
        opt = checkpoint["opt"]
        model = PairModel(opt)
        model.load_state_dict(checkpoint["model"])
        return model
""")
PROJECTS += [
    ProjectShape("TW402", "a training script resumes into a project model whose constructor moves it to CUDA when available", {
        "lib/__init__.py": "", "lib/model.py": _SELF_MOVING, "train.py": _RESUME}, (("train.py", 8),)),
    ProjectShape("TW402", "an evaluation helper restores a checkpoint into the self-moving model it builds after the load", {
        "lib/__init__.py": "", "lib/model.py": _SELF_MOVING, "lib/evaluation.py": _EVALRANK, "eval.py": _EVAL,
                                  "train.py": _RESUME}, (("lib/evaluation.py", 4), ("train.py", 8))),
    ProjectShape("TW402", "look-alike: the project's model never moves itself (only a benchmark of the project uses CUDA)", {
        "lib/__init__.py": "", "lib/model.py": _PLAIN_MODEL, "bench.py": "import torch\nx = torch.zeros(1).cuda()\n", "lib/evaluation.py": _EVALRANK, "eval.py": _EVAL,
                                  "train.py": _RESUME}),
]

# ------------------------------------------------------------- TW402 a load inside the evaluation-only branch
# A GPU-only fine-tuning script whose `--test` branch loads the checkpoint to test, runs the test and exits:
# an evaluation (R2), although the script trains in its other branch.
_TEST_BRANCH = d("""
    import sys
    import argparse
    import torch
    import torch.nn as nn
    def test(loader, model):
        return [model(x.cuda()) for x in loader]
    def main():
        args = argparse.ArgumentParser().parse_args()
        model = nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if args.test:
            checkpoint = torch.load(args.test)
            model.load_state_dict(checkpoint["state_dict"])
            test([], model)
            sys.exit()
        for x in range(10):
            loss = model(torch.ones(4).cuda()).sum()
            loss.backward()
            opt.step()
            torch.save({"state_dict": model.state_dict()}, "ckpt.pth")
    if __name__ == "__main__":
        main()
""")
PROJECTS += [
    ProjectShape("TW402", "a GPU-only script's --test branch loads a checkpoint, tests and exits (R2)", {
        "train.py": _TEST_BRANCH, "nets.py": "import torch\nx = torch.zeros(1).cuda()\n"}, (("train.py", 12),)),
    ProjectShape("TW402", "look-alike: the branch resumes and goes on training (a GPU-only resume, R2)", {
        "train.py": _TEST_BRANCH.replace("        test([], model)\n        sys.exit()\n", ""),
        "nets.py": "import torch\nx = torch.zeros(1).cuda()\n"}),
]

# ------------------------------------------------------------- TW402 a demo that saves host data but loads released weights
_DEMO = d("""
    import torch
    import torch.nn as nn
    class Seg(nn.Module):
        def __init__(self, backbone_file, pretrained=True):
            super().__init__()
            self.body = nn.Linear(4, 4)
            if pretrained:
                ckpt = torch.load(backbone_file)
                self.body.load_state_dict(ckpt)
    if __name__ == "__main__":
        model = Seg(backbone_file="A0-train.pth")
        torch.save(model.state_dict(), "seg-deploy.pth")
        deploy = Seg(backbone_file=None, pretrained=False)
        deploy.load_state_dict(torch.load("seg-deploy.pth"))
""")
_GPU_TRAIN = "import torch\nimport torch.nn as nn\nnet = nn.Linear(4, 4).cuda()\ntorch.save(net.state_dict(), 'ckpt.pth')\n"
PROJECTS += [
    ProjectShape("TW402", "a CPU demo saving its converted model loads the released weights its constructor is given", {
        "demo.py": _DEMO, "train.py": _GPU_TRAIN}, (("demo.py", 8),)),
    ProjectShape("TW402", "look-alike: the constructor is only ever given the file the demo saved itself", {
        "demo.py": _DEMO.replace('backbone_file="A0-train.pth"', 'backbone_file="seg-deploy.pth"'), "train.py": _GPU_TRAIN}),
]

# ------------------------------------------------------------- TW402 the None branch of a GPU id in a script offering the CPU
_IMAGENET = d("""
    import argparse
    import torch
    import torch.nn as nn
    def main():
        args = argparse.ArgumentParser().parse_args()
        model = nn.Linear(4, 2)
        if not torch.cuda.is_available():
            print("using CPU, this will be slow")
        elif args.gpu is not None:
            model = model.cuda(args.gpu)
        else:
            model = nn.DataParallel(model).cuda()
        if args.resume:
            if args.gpu is None:
                checkpoint = torch.load(args.resume)
            else:
                checkpoint = torch.load(args.resume, map_location="cuda:{}".format(args.gpu))
            model.load_state_dict(checkpoint["state_dict"])
    if __name__ == "__main__":
        main()
""")
FIND += [
    Shape("TW402", "resume in the `args.gpu is None` branch of a script that offers a CPU run", _IMAGENET, 15),
]
QUIET += [
    Shape("TW402", "look-alike: the branch is the GPU check's own (its else maps to the CPU)", _IMAGENET.replace(
        "if args.gpu is None:", "if torch.cuda.is_available():").replace(
        'map_location="cuda:{}".format(args.gpu)', 'map_location="cpu"')),
]

# ------------------------------------------------------------- TW402 a load in a function a later definition replaces (R5)
_SHADOWED = d("""
    import torch
    def load_checkpoint(model, path):
        ckpt = torch.load(path)
        model.load_state_dict(ckpt["model"])
    def load_checkpoint(config, model):
        ckpt = torch.load(config.path, map_location="cpu")
        model.load_state_dict(ckpt["model"])
""")
_CALLER = d("""
    import argparse
    import torch
    import torch.nn as nn
    from utils import load_checkpoint
    if __name__ == "__main__":
        cfg = argparse.ArgumentParser().parse_args()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        net = nn.Linear(2, 2).to(device)
        load_checkpoint(cfg, net)
        torch.save({"model": net.state_dict()}, "net.pth")
""")
PROJECTS += [
    ProjectShape("TW402", "look-alike: the first of two module-level definitions of the same name (nothing can call it)", {
        "utils.py": _SHADOWED.replace("import torch\n", "import torch\nDEVICE = torch.device('cuda')\n"), "main.py": _CALLER}),
    ProjectShape("TW402", "a module-level call between the two definitions runs the first one", {
        "utils.py": _SHADOWED.replace("import torch\n", "import torch\nDEVICE = torch.device('cuda')\n").replace(
            "def load_checkpoint(config, model):", "load_checkpoint(torch.nn.Linear(2, 2), 'init.pth')\ndef load_checkpoint(config, model):"),
        "main.py": _CALLER}, (("utils.py", 4),)),
]

# ------------------------------------------------------------- TW402 set-up helpers of a GPU-only training script (R2)
_GPU_ONLY_TRAIN = d("""
    import argparse
    import torch
    import torch.nn as nn
    from nets import Net
    def build(args):
        model = Net()
        if args.init:
            model.load_state_dict(torch.load("pretrained/coco_init.pth"))
        return nn.DataParallel(model).cuda()
    def main():
        args = argparse.ArgumentParser().parse_args()
        model = build(args)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in range(10):
            loss = model(torch.ones(2, 4).cuda()).sum()
            loss.backward()
            opt.step()
    if __name__ == "__main__":
        main()
""")
_NET = "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n"
PROJECTS += [
    ProjectShape("TW402", "look-alike: a GPU-only single-process training script's set-up helper loads the pretrained init (R2)", {
        "main.py": _GPU_ONLY_TRAIN, "nets.py": _NET}),
    ProjectShape("TW402", "the same helper in a project whose script offers a CPU run", {
        "main.py": _GPU_ONLY_TRAIN.replace("return nn.DataParallel(model).cuda()",
                                           "return model.to('cuda' if torch.cuda.is_available() else 'cpu')"),
        "nets.py": _NET}, (("main.py", 8),)),
]

# ------------------------------------------------------------- TW402 a vendored CUDA kernel package nothing imports
# A point-cloud project vendors the sources of optional CUDA losses (three wrapper modules importing
# the compiled `*_cuda` extensions) that none of its own modules imports; its training script falls
# back to the CPU and resumes a GPU-saved checkpoint. The kernels do not make the project GPU-only.
_KERNEL = "import torch\nimport emd_cuda\nclass EMD(torch.nn.Module):\n    pass\n"
_PC_TRAIN = d("""
    import argparse
    import torch
    from model import Net
    def main():
        args = argparse.ArgumentParser().parse_args()
        if not torch.cuda.is_available():
            args.device = "cpu"
        model = Net().to(args.device)
        if args.resume:
            checkpoint = torch.load(args.resume)
            model.load_state_dict(checkpoint["model"])
        torch.save({"model": model.state_dict()}, "snap.t7")
    if __name__ == "__main__":
        main()
""")
_PC_MODEL = "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(3, 3)\n"
_VENDORED = {"losses/cuda/emd/layer.py": _KERNEL, "losses/cuda/emd/pkg/layer.py": _KERNEL,
             "losses/cuda/chamfer/__init__.py": _KERNEL.replace("emd_cuda", "chamfer_cuda")}
PROJECTS += [
    ProjectShape("TW402", "resume in a CPU-fallback script of a project that vendors CUDA kernels nothing of it imports", {
        **_VENDORED, "model.py": _PC_MODEL, "train.py": _PC_TRAIN}, (("train.py", 10),)),
    ProjectShape("TW402", "look-alike: the model module imports the vendored kernel at module level (GPU-only by design)", {
        **_VENDORED, "model.py": "from losses.cuda.emd.layer import EMD\n" + _PC_MODEL, "train.py": _PC_TRAIN}),
]
