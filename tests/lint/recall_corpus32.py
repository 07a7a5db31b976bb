"""The recall corpus, round 14 part D: classes the sets 17 and 18 (tuning sets of round 14) showed
for TW403, TW402, TW201, TW104, TW305 and TW302 - reported where the advice does not apply, or
missed - each written in our own words and reduced to its shape, with look-alikes.
``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------- TW403 a project GPU-only through CUDA extensions
# A point-cloud project: its models import compiled kernels (a KNN package, the furthest-point
# sampling ops, a Chamfer-distance extension the project builds with CUDAExtension in its own
# setup.py). The entry script sets `args.use_gpu = torch.cuda.is_available()`, which looks like a
# CPU path, but no model of it can run without the kernels: the runners' `.cuda()` breaks nothing.
_PC_MAIN = d("""
    import torch
    from tools import runner
    def main():
        args = parse_args()
        args.use_gpu = torch.cuda.is_available()
        if args.use_gpu:
            torch.backends.cudnn.benchmark = True
        runner.run(args)
    if __name__ == "__main__":
        main()
""")
_PC_RUNNER = d("""
    import torch
    from models import builder
    from utils import misc
    def run(args):
        model = builder.build(args)
        if args.use_gpu:
            model.to(args.local_rank)
        for points, label in loader:
            points = points.cuda()
            loss = model(misc.jitter(points), label.cuda())
            loss.backward()
            optimizer.step()
""")
_PC_MISC = d("""
    import torch
    from pointnet2_ops import pointnet2_utils
    def jitter(pc):
        return pc + torch.randn(pc.shape).cuda() * 0.01
    def fps(pc, n):
        idx = pointnet2_utils.furthest_point_sample(pc, n)
        return pointnet2_utils.gather_operation(pc.transpose(1, 2).contiguous(), idx)
""")
_PC_MODEL = d("""
    import torch.nn as nn
    from knn_cuda import KNN
    from extensions.chamfer_dist import ChamferDistanceL2
    class PointMAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.knn = KNN(k=32, transpose_mode=True)
            self.loss = ChamferDistanceL2().cuda()
""")
_PC_BUILDER = d("""
    from models.point_mae import PointMAE
    def build(args):
        return PointMAE()
""")
_PC_EXT_SETUP = d("""
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
    setup(name="chamfer", ext_modules=[CUDAExtension("chamfer", ["chamfer_cuda.cpp", "chamfer.cu"])],
          cmdclass={"build_ext": BuildExtension})
""")
_PC_EXT_INIT = d("""
    import torch
    import chamfer
    class ChamferDistanceL2(torch.nn.Module):
        def forward(self, a, b):
            return chamfer.forward(a, b)
""")
_PC_FILES = {
    "main.py": _PC_MAIN, "tools/runner.py": _PC_RUNNER, "utils/misc.py": _PC_MISC, "models/point_mae.py": _PC_MODEL,
    "models/builder.py": _PC_BUILDER, "extensions/chamfer_dist/setup.py": _PC_EXT_SETUP,
    "extensions/chamfer_dist/__init__.py": _PC_EXT_INIT,
}
PROJECTS += [
    ProjectShape("TW403", "look-alike: models import knn_cuda, pointnet2_ops and the project's own CUDAExtension", _PC_FILES),
    # the same project whose kernels have a CPU build (CppExtension beside CUDAExtension) and whose
    # "_cuda" module is a helper of the project: it runs on a CPU, the hard-coded moves break that
    ProjectShape("TW403", "a project whose kernels also build for the CPU: the runner's .cuda() breaks the CPU path", {
        **_PC_FILES,
        "utils/misc.py": _PC_MISC.replace("from pointnet2_ops import pointnet2_utils", "from sampling import pointnet2_utils"),
        "models/point_mae.py": _PC_MODEL.replace("from knn_cuda import KNN", "from models.to_cuda import KNN"),
        "models/to_cuda.py": "class KNN:\n    def __init__(self, k, transpose_mode=False):\n        self.k = k\n",
        "extensions/chamfer_dist/setup.py": _PC_EXT_SETUP.replace(
            "CUDAExtension(\"chamfer\"", "CppExtension(\"chamfer_cpu\", [\"chamfer.cpp\"]), CUDAExtension(\"chamfer\""),
    }, (("tools/runner.py", 9), ("tools/runner.py", 10), ("utils/misc.py", 4), ("models/point_mae.py", 8))),
]

# One model module of a smaller project imports a kernel package and builds its neighbour index
# with `torch.arange(b).cuda()`; the training script offers `"cuda" if torch.cuda.is_available()
# else "cpu"` and builds that model through the models package: nothing of it runs without the
# kernel. The same `.cuda()` in a plain model that no import ties to the kernel keeps its finding.
_KNN_MODEL = d("""
    import torch
    import torch.nn as nn
    from knn_cuda import KNN
    class DGCNNKernel(nn.Module):
        def __init__(self):
            super().__init__()
            self.knn = KNN(k=20, transpose_mode=True)
        def forward(self, x):
            idx_base = torch.arange(0, x.size(0)).cuda().view(-1, 1, 1) * x.size(2)
            return self.knn(x, x)[1] + idx_base
""")
_PLAIN_MODEL = d("""
    import torch
    import torch.nn as nn
    class Plain(nn.Module):
        def forward(self, x):
            idx_base = torch.arange(0, x.size(0)).cuda().view(-1, 1, 1) * x.size(2)
            return x + idx_base
""")
_KNN_TRAIN = d("""
    import torch
    from models import build_model
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build_model(args).to(device)
    for x, y in loader:
        loss = criterion(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: a model module that imports a kernel package (one file of the project)", {
        "models/__init__.py": "from .dgcnn_kernel import DGCNNKernel\ndef build_model(args):\n    return DGCNNKernel()\n",
        "models/dgcnn_kernel.py": _KNN_MODEL, "train.py": _KNN_TRAIN}),
    ProjectShape("TW403", "the same move in a plain model that no import ties to a kernel", {
        "models/__init__.py": "from .plain import Plain\ndef build_model(args):\n    return Plain()\n",
        "models/plain.py": _PLAIN_MODEL, "train.py": _KNN_TRAIN}, (("models/plain.py", 5),)),
]

# ------------------------------------------------------------- TW403 a script that tests its own device for the CPU
# A tabular boosting script gets its device from a helper of its project (`lib.get_device()`,
# "cuda:0" or "cpu"), moves the data and the ensemble only `if device.type != 'cpu':` - and still
# hard-codes `.cuda()` on the targets in its training loops and `device="cuda"` in its ensemble.
_GROW = d("""
    import torch
    import lib
    class Ensemble:
        def __init__(self, c0, lr):
            self.models = []
            self.boost_rate = torch.nn.Parameter(torch.tensor(lr, requires_grad=True, device="cuda"))
        def to_cuda(self):
            for m in self.models:
                m.cuda()
    device = lib.get_device()
    ensemble = Ensemble(0.0, 1.0)
    if device.type != 'cpu':
        ensemble.to_cuda()
    for stage in range(10):
        for x, y in loader:
            out = torch.as_tensor(ensemble.forward(x), dtype=torch.float32).cuda().view(-1, 1)
            loss = criterion(model(x.to(device)), y.to(device) - out)
            loss.backward()
            optimizer.step()
""")
FIND += [
    Shape("TW403", "a script that moves only if device.type != 'cpu' hard-codes .cuda() in its loop", _GROW, 16, "grownet.py"),
    Shape("TW403", "the same script's class hard-codes device='cuda' for a parameter", _GROW, 6, "grownet.py"),
    Shape("TW403", "a script that turns AMP on only when device.type == 'cuda' moves the loss with .cuda()", d("""
        import torch
        device = torch.device(args.device if torch.cuda.is_available() else "cpu")
        use_amp = device.type == "cuda"
        model = build().to(device)
        criterion = torch.nn.CrossEntropyLoss(weight=class_weights).cuda()
        for x, y in loader:
            with torch.autocast(device.type, enabled=use_amp):
                loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
    """), 5),
]
QUIET += [
    Shape("TW403", "look-alike: every move of the script is under `if device.type != 'cpu':`", d("""
        import torch
        import lib
        device = lib.get_device()
        model = build()
        if device.type != 'cpu':
            model = model.cuda()
            weights = torch.ones(10).cuda()
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
    """)),
    Shape("TW403", "look-alike: the only device test is on a batch's own device (it follows the data)", d("""
        import torch
        print("GPUs:", torch.cuda.device_count() if torch.cuda.is_available() else 0)
        def evaluate(model, loader):
            for x in loader:
                x = x.cuda()
                if x.device.type == "cuda":
                    torch.cuda.synchronize()
                model(x)
    """)),
]

# ------------------------------------------------------------- TW403 paths no CPU run takes
# A recommender's metric sorts the scores on the GPU "to speed it up" inside a try whose except
# sorts them on the CPU; a speech model's distributed helper makes its reduction tensor on "cuda"
# only after `if world_size == 1: return`, in a module whose init pins each rank to its GPU.
_RECO_TRAIN = d("""
    import torch
    from metrics import calc_metrics
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build().to(device)
    print(calc_metrics(model(users.to(device)).cpu(), k=20))
""")
_DISTRIB = d("""
    import torch
    rank = 0
    world_size = 1
    def init(args):
        global rank, world_size
        rank, world_size = args.rank, args.world_size
        if world_size == 1:
            return
        torch.cuda.set_device(rank)
        torch.distributed.init_process_group(backend=args.backend, world_size=world_size, rank=rank)
    def average(metrics, count=1.0):
        if world_size == 1:
            return metrics
        tensor = torch.tensor(list(metrics) + [1], device="cuda", dtype=torch.float32)
        torch.distributed.all_reduce(tensor)
        return (tensor[:-1] / tensor[-1]).tolist()
    def barrier():
        if world_size > 1:
            flag = torch.zeros(1).cuda()
            torch.distributed.all_reduce(flag)
""")
_SOLVER = d("""
    import torch
    import distrib
    device = "cuda" if torch.cuda.is_available() else "cpu"
    distrib.init(args)
    for x in loader:
        loss = model(x.to(device))
        loss.backward()
        distrib.barrier()
    print(distrib.average([loss.item()]))
""")
PROJECTS += [
    ProjectShape("TW403", "look-alike: .cuda() in a try whose except runs the CPU version", {
        "train.py": _RECO_TRAIN, "metrics.py": d("""
            import torch
            def calc_metrics(scores, k):
                try:
                    _, idx = torch.sort(scores.cuda(), descending=True)
                except:
                    _, idx = torch.sort(scores, descending=True)
                return idx.cpu()[:, :k]
        """)}),
    ProjectShape("TW403", "the same move in a try whose handler re-raises: a CPU run fails", {
        "train.py": _RECO_TRAIN, "metrics.py": d("""
            import torch
            def calc_metrics(scores, k):
                try:
                    _, idx = torch.sort(scores.cuda(), descending=True)
                except RuntimeError as err:
                    print("sorting failed")
                    raise
                return idx.cpu()[:, :k]
        """)}, (("metrics.py", 4),)),
    ProjectShape("TW403", "look-alike: device='cuda' and .cuda() only on the distributed path of a module that pins GPUs", {
        "distrib.py": _DISTRIB, "solver.py": _SOLVER}),
    ProjectShape("TW403", "the same helpers in a module that pins no GPU (the distributed path may run on gloo)", {
        "distrib.py": _DISTRIB.replace("    torch.cuda.set_device(rank)\n", ""), "solver.py": _SOLVER},
        (("distrib.py", 13), ("distrib.py", 18))),
]

# ------------------------------------------------------------- TW402 loads every rank makes, and loads each rank reads back
# The point-cloud project's fine-tuning runner (DDP) calls the model's `load_model_from_ckpt`, a
# method that `torch.load`s the pre-training checkpoint: every process restores onto the GPU that
# saved it. A segmentation sub-program (its own folder with its own main script) has a method of
# the same name, called by its single-process trainer only. A self-supervised trainer reloads a
# queue file named by its rank: each process reads back what it wrote itself.
_FT_RUNNER = d("""
    import torch
    import torch.nn as nn
    from models.builder import build
    def run_finetune(args):
        base_model = build(args)
        if args.ckpts is not None:
            base_model.load_model_from_ckpt(args.ckpts)
        base_model = nn.parallel.DistributedDataParallel(base_model.cuda(), device_ids=[args.local_rank])
        for points, label in loader:
            loss = base_model(points.cuda(), label.cuda())
            loss.backward()
            optimizer.step()
        torch.save({"base_model": base_model.module.state_dict()}, "ckpt-last.pth")
""")
_FT_MODEL = d("""
    import torch
    import torch.nn as nn
    import apex
    class PointTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.loss_func = nn.SmoothL1Loss().cuda()
        def load_model_from_ckpt(self, path):
            ckpt = torch.load(path)
            self.load_state_dict({k.replace("module.", ""): v for k, v in ckpt["base_model"].items()}, strict=False)
""")
_SEG_MAIN = d("""
    import torch
    import importlib
    def main(args):
        MODEL = importlib.import_module(args.model)
        classifier = MODEL.get_model(50).cuda()
        classifier.load_model_from_ckpt(args.ckpts)
        for points, target in loader:
            loss = classifier(points.cuda(), target.cuda())
            loss.backward()
            optimizer.step()
    if __name__ == "__main__":
        main(parse_args())
""")
_GPU_ONLY_LIBS = {"utils/a.py": "import apex\n", "utils/b.py": "import apex\n", "utils/c.py": "import apex\n"}
PROJECTS += [
    ProjectShape("TW402", "a model's checkpoint-loading method that a DDP fine-tuning runner calls (every rank loads)", {
        "tools/runner_finetune.py": _FT_RUNNER, "models/point_transformer.py": _FT_MODEL,
        "models/builder.py": "from models.point_transformer import PointTransformer\ndef build(args):\n    return PointTransformer()\n",
        "segmentation/main.py": _SEG_MAIN, "segmentation/models/pt.py": _FT_MODEL, **_GPU_ONLY_LIBS},
        (("models/point_transformer.py", 9),)),
    ProjectShape("TW402", "look-alike: per-rank queue files reloaded by the rank that wrote them (GPU-only DDP)", {
        "main_swav.py": d("""
            import os
            import torch
            import apex
            def main(args):
                torch.distributed.init_process_group(backend="nccl")
                model = torch.nn.parallel.DistributedDataParallel(build().cuda(), device_ids=[args.gpu_to_work_on])
                queue_path = os.path.join(args.dump_path, "queue" + str(args.rank) + ".pth")
                if os.path.isfile(queue_path):
                    queue = torch.load(queue_path)["queue"]
                for x in loader:
                    loss = model(x.cuda())
                    loss.backward()
                    optimizer.step()
                torch.save({"queue": queue}, queue_path)
        """), **_GPU_ONLY_LIBS}),
]

# ------------------------------------------------------------- TW402 the run reloads what its own save helper wrote
# Tabular training scripts (device from a helper, "cpu" possible) save the best checkpoint through
# a function of the script and reload it after the loop for the final evaluation; a boosting
# script's ensemble writes itself with `to_file(path)` and is read back by `from_file(path)` right
# after, every time.
QUIET += [
    Shape("TW402", "look-alike: the best checkpoint written by the script's save_checkpoint(), reloaded after the loop", d("""
        import torch
        import lib
        device = lib.get_device()
        model = build().to(device)
        if torch.cuda.device_count() > 1:
            model = torch.nn.DataParallel(model)
        checkpoint_path = output / "checkpoint.pt"
        def save_checkpoint(final):
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, checkpoint_path)
        for epoch in range(100):
            train_epoch(model)
            if improved():
                save_checkpoint(False)
        model.load_state_dict(torch.load(checkpoint_path)["model"])
        evaluate(model)
        save_checkpoint(True)
    """)),
    Shape("TW402", "look-alike: from_file(path) is only ever called right after to_file(path)", d("""
        import torch
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        class Ensemble:
            def __init__(self):
                self.models = []
            @classmethod
            def from_file(cls, path, builder):
                d = torch.load(path)
                net = Ensemble()
                for state in d["models"]:
                    m = builder()
                    m.load_state_dict(state)
                    net.models.append(m)
                return net
            def to_file(self, path):
                torch.save({"models": [m.state_dict() for m in self.models]}, path)
        net = Ensemble()
        for stage in range(10):
            net.models.append(build().to(device))
            net.to_file(output / "ensemble.pt")
            net = Ensemble.from_file(output / "ensemble.pt", build)
    """)),
]
FIND += [
    Shape("TW402", "a load helper also called with a path no save of the script wrote (another run's file)", d("""
        import torch
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        class Ensemble:
            def __init__(self):
                self.models = []
            @classmethod
            def from_file(cls, path, builder):
                d = torch.load(path)
                net = Ensemble()
                for state in d["models"]:
                    m = builder()
                    m.load_state_dict(state)
                    net.models.append(m)
                return net
            def to_file(self, path):
                torch.save({"models": [m.state_dict() for m in self.models]}, path)
        net = Ensemble.from_file(args.pretrained, build)
        for stage in range(10):
            net.models.append(build().to(device))
            net.to_file(output / "ensemble.pt")
            net = Ensemble.from_file(output / "ensemble.pt", build)
    """), 8),
]

# ------------------------------------------------------------- TW402 a projector restores the generator of a GPU-only project
# A StyleGAN project trains with NCCL only; its projector restores `g_ema` from a training
# checkpoint and optimises a latent (`optim.Adam([latent_in] + noises)`) against it in eval mode:
# an inference script run on other machines than training.
_SG_TRAIN = d("""
    import torch
    import torch.distributed as dist
    def main(args):
        dist.init_process_group(backend="nccl", init_method="env://")
        generator = Generator().to("cuda")
        for real in loader:
            loss = generator(real.to("cuda")).mean()
            loss.backward()
            g_optim.step()
        torch.save({"g": generator.state_dict(), "g_ema": g_ema.state_dict()}, f"checkpoint/{i:06d}.pt")
""")
_SG_PROJECT = d("""
    import argparse
    import torch
    from torch import optim
    from model import Generator
    if __name__ == "__main__":
        device = "cuda"
        args = argparse.ArgumentParser().parse_args()
        g_ema = Generator(args.size, 512, 8)
        g_ema.load_state_dict(torch.load(args.ckpt)["g_ema"], strict=False)
        g_ema.eval()
        g_ema = g_ema.to(device)
        latent_in = torch.zeros(1, 512, device=device)
        latent_in.requires_grad = True
        optimizer = optim.Adam([latent_in], lr=args.lr)
        for i in range(args.step):
            loss = (g_ema([latent_in]) - target).abs().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")
PROJECTS += [
    ProjectShape("TW402", "a GAN projector (optimises a latent only) restores a training checkpoint in a GPU-only project", {
        "train.py": _SG_TRAIN, "projector.py": _SG_PROJECT, "model.py": "import torch.nn as nn\nclass Generator(nn.Module):\n    pass\n"},
        (("projector.py", 9),)),
    ProjectShape("TW402", "look-alike: a fine-tuning script whose optimizer holds the generator's parameters (it trains)", {
        "train.py": _SG_TRAIN, "model.py": "import torch.nn as nn\nclass Generator(nn.Module):\n    pass\n",
        "projector.py": _SG_PROJECT.replace("optim.Adam([latent_in], lr=args.lr)", "optim.Adam(g_ema.parameters(), lr=args.lr)")}),
]

# A point-cloud classifier (its model imports a kernel package: GPU-only) trains and, when run
# with `--eval`, restores its checkpoint in `test(args, io)`: the evaluation path runs on other
# machines than training did. A detector's evaluator restores a TensorRT engine the same way: an
# engine runs only on the GPU it was built for.
_PCT_MAIN = d("""
    import torch
    import torch.nn as nn
    from model import Pct
    def train(args, io):
        model = nn.DataParallel(Pct(args).cuda())
        for data, label in loader:
            loss = criterion(model(data.cuda()), label.cuda())
            loss.backward()
            opt.step()
        torch.save(model.state_dict(), "checkpoints/%s/models/model.t7" % args.exp_name)
    def test(args, io):
        model = nn.DataParallel(Pct(args).cuda())
        model.load_state_dict(torch.load(args.model_path))
        model = model.eval()
        for data, label in test_loader:
            print(model(data.cuda()).argmax(1))
    if __name__ == "__main__":
        args = parse_args()
        if not args.eval:
            train(args, None)
        else:
            test(args, None)
""")
_PCT_MODEL = "import torch.nn as nn\nfrom pointnet2_ops import pointnet2_utils\nclass Pct(nn.Module):\n    pass\n"
PROJECTS += [
    ProjectShape("TW402", "the evaluation function of a training script in a GPU-only project restores the checkpoint", {
        "main.py": _PCT_MAIN, "model.py": _PCT_MODEL, "util.py": "from pointnet2_ops import pointnet2_utils\n",
        "data.py": "from pointnet2_ops import pointnet2_utils\n"}, (("main.py", 13),)),
    ProjectShape("TW402", "look-alike: the evaluation function restores a TensorRT engine (torch2trt)", {
        "main.py": _PCT_MAIN.replace("    model.load_state_dict(torch.load(args.model_path))\n",
                                     "    from torch2trt import TRTModule\n    model = TRTModule()\n"
                                     "    model.load_state_dict(torch.load(args.trt_file))\n"),
        "model.py": _PCT_MODEL, "util.py": "from pointnet2_ops import pointnet2_utils\n",
        "data.py": "from pointnet2_ops import pointnet2_utils\n"}),
]

# ------------------------------------------------------------- TW201 the CPU branch; a trainer handed the optimizer
# A distillation zoo's model builder wraps the network in DataParallel in both branches of
# `if cuda:`; only the GPU branch drives GPUs. A tabular script wraps the model when several GPUs
# are visible and trains it through `lib.train_with_auto_virtual_batch(optimizer, ...)`.
_KD_NETWORK = d("""
    import torch
    def define_tsnet(name, num_class, cuda=True):
        net = build(name, num_class)
        if cuda:
            net = torch.nn.DataParallel(net).cuda()
        else:
            net = torch.nn.DataParallel(net)
        return net
""")
_KD_TRAIN = d("""
    import torch
    from network import define_tsnet
    snet = define_tsnet(args.s_name, 100, args.cuda)
    optimizer = torch.optim.SGD(snet.parameters(), lr=0.1)
    for img, target in loader:
        loss = criterion(snet(img), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")
_TAB_SCRIPT = d("""
    import torch
    import torch.nn as nn
    import lib
    device = lib.get_device()
    model = FTTransformer(**args["model"]).to(device)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    groups = [v for k, v in model.named_parameters() if needs_wd(k)]
    optimizer = lib.make_optimizer(args["optimizer"], [{"params": groups}], args["lr"])
    for epoch in range(100):
        for batch_idx in epoch_batches():
            loss = lib.train_with_auto_virtual_batch(optimizer, loss_fn, lambda x: (model(X[x]), Y[x]), batch_idx)
""")
PROJECTS += [
    ProjectShape("TW201", "DataParallel in both branches of `if cuda:`: only the GPU branch is reported", {
        "network.py": _KD_NETWORK, "train_kd.py": _KD_TRAIN}, (("network.py", 5),)),
    ProjectShape("TW201", "a script whose optimizer (built from the wrapper's parameters) goes to a training helper", {
        "bin/ft_transformer.py": _TAB_SCRIPT, "lib/deep.py": "def make_optimizer(name, groups, lr):\n    return None\n"},
        (("bin/ft_transformer.py", 7),)),
    ProjectShape("TW201", "look-alike: the optimizer is built but only its state is loaded and re-saved", {
        "bin/convert.py": _TAB_SCRIPT.replace(
            "        loss = lib.train_with_auto_virtual_batch(optimizer, loss_fn, lambda x: (model(X[x]), Y[x]), batch_idx)\n",
            "        optimizer.load_state_dict(torch.load(path, map_location='cpu'))\n"),
        "lib/deep.py": "def make_optimizer(name, groups, lr):\n    return None\n"}),
]

# ------------------------------------------------------------- TW104 evaluation that needs gradients; passes run under no_grad
# A distillation test() sets `img.requires_grad = True` for the losses that compare input
# gradients; a speech solver runs its shared epoch loop for validation under no_grad; an agent's
# act() is only ever called under no_grad by the training script.
QUIET += [
    Shape("TW104", "look-alike: the test pass takes gradients with respect to its input (img.requires_grad = True)", d("""
        import torch
        def evaluate(test_loader, model, teacher, criterion, criterion_kd):
            model.eval()
            for img, target in test_loader:
                img.requires_grad = True
                out_s = model(img)
                out_t = teacher(img)
                kd_loss = criterion_kd(out_s, out_t, img, target)  # compares gradients with respect to img
                print(criterion(out_s, target).item(), kd_loss.item())
    """)),
    Shape("TW104", "look-alike: the shared epoch loop run for validation under no_grad", d("""
        import torch
        class Solver:
            def train(self):
                for epoch in range(10):
                    self.model.train()
                    self._run_one_epoch(epoch)
                    self.model.eval()
                    with torch.no_grad():
                        valid = self._run_one_epoch(epoch, cross_valid=True)
            def _run_one_epoch(self, epoch, cross_valid=False):
                total = 0
                for noisy, clean in self.loader:
                    if not cross_valid:
                        noisy = self.augment(noisy)
                    estimate = self.model(noisy)
                    loss = (estimate - clean).abs().mean()
                    if not cross_valid:
                        loss.backward()
                        self.optimizer.step()
                    total += loss.item()
                return total
    """)),
]
_AGENT = d("""
    import torch
    import torch.nn as nn
    class Encoder(nn.Module):
        def forward(self, obs):
            return obs
    class Agent:
        def __init__(self):
            self.encoder = Encoder()
            self.actor = nn.Linear(4, 2)
        def act(self, obs, step, eval_mode):
            obs = torch.as_tensor(obs)
            obs = self.encoder(obs.unsqueeze(0))
            dist = self.actor(obs)
            return dist.cpu().numpy()[0]
        def update(self, batch):
            loss = self.actor(batch).sum()
            loss.backward()
""")
PROJECTS += [
    ProjectShape("TW104", "look-alike: every call of the agent's act() is under no_grad in the training script", {
        "agent.py": _AGENT, "train.py": d("""
            import torch
            from agent import Agent
            agent = Agent()
            for step in range(1000):
                with torch.no_grad():
                    action = agent.act(time_step.observation, step, eval_mode=False)
                time_step = env.step(action)
                agent.update(buffer.sample())
        """)}),
    ProjectShape("TW104", "the same agent whose act() the training script calls with autograd on", {
        "agent.py": _AGENT, "train.py": d("""
            import torch
            from agent import Agent
            agent = Agent()
            for step in range(1000):
                action = agent.act(time_step.observation, step, eval_mode=False)
                time_step = env.step(action)
                agent.update(buffer.sample())
        """)}, (("agent.py", 12),)),
]

# ------------------------------------------------------------- TW104 a bare pass beside the class's no_grad passes
# A VAE visualiser wraps its encoder and reconstruction passes in no_grad, but its latent decoder
# helper returns `self.model.decoder(z).cpu()` with autograd on (every traversal and sample grid).
_VIZ = d("""
    import torch
    class Visualizer:
        def __init__(self, model, device="cpu"):
            self.model, self.device = model, device
        def reconstruct(self, data):
            self.model.eval()
            with torch.no_grad():
                recs, _, _ = self.model(data)
            return recs.cpu()
        def _decode_latents(self, latent_samples):
            latent_samples = latent_samples.to(self.device)
            return self.model.decoder(latent_samples).cpu()
        def generate_samples(self, n):
            return self._decode_latents(torch.randn(n, self.model.latent_dim))
""")
FIND += [Shape("TW104", "a visualiser's decoder helper runs bare beside its no_grad reconstruction", _VIZ, 12, "visualize.py")]
QUIET += [
    Shape("TW104", "look-alike: the helper's output stays on the device for the caller", _VIZ.replace(
        "return self.model.decoder(latent_samples).cpu()", "return self.model.decoder(latent_samples)"), None, "visualize.py"),
    Shape("TW104", "look-alike: an agent whose class learns (its passes may feed the update)", d("""
        import torch
        class Agent:
            def act(self, state):
                with torch.no_grad():
                    return self.q_network(state).argmax().item()
            def q_values(self, states):
                return self.q_network(states).cpu()
            def learn(self, batch):
                self.optimizer.step()
    """), None, "agent.py"),
]

# A speech model's module ends with a benchmark entry, `def test():`, that parses its own
# arguments, runs the offline model once bare and the streaming wrapper under no_grad, and prints
# the difference.
_BENCH = d("""
    import argparse
    import torch
    import torch.nn as nn
    class Denoiser(nn.Module):
        def forward(self, x):
            return x
    def test():
        args = argparse.ArgumentParser().parse_args()
        model = Denoiser().to(args.device)
        x = torch.randn(1, 64000).to(args.device)
        out = model(x[None])[0]
        streamer = Streamer(model)
        with torch.no_grad():
            out_rt = streamer.feed(x)
        print(f"delta: {torch.norm(out - out_rt) / torch.norm(out):.2%}")
    if __name__ == "__main__":
        test()
""")
FIND += [Shape("TW104", "a benchmark entry runs the offline model bare and the streaming one under no_grad", _BENCH, 11, "denoiser.py")]
QUIET += [Shape("TW104", "look-alike: the bare result is returned to the caller", _BENCH.replace(
    '    print(f"delta: {torch.norm(out - out_rt) / torch.norm(out):.2%}")\n', "    return out, out_rt\n"), None, "denoiser.py")]

# ------------------------------------------------------------- TW104 online exploration in an offline-to-online loop
# Offline-to-online RL: one loop samples batches for `trainer.train(batch)` and, in the online
# phase, picks each exploration action with `actor(state)` outside no_grad - the action only
# becomes NumPy for `env.step` (with noise added in place for a deterministic actor).
_O2O = d("""
    import torch
    import torch.nn as nn
    class Actor(nn.Module):
        def __init__(self, state_dim, action_dim):
            super().__init__()
            self.net = nn.Linear(state_dim, action_dim)
        def forward(self, state):
            return torch.tanh(self.net(state)), None
    class Trainer:
        def __init__(self, actor, actor_optimizer):
            self.actor, self.actor_optimizer = actor, actor_optimizer
        def train(self, batch):
            states, actions = batch
            loss = ((self.actor(states)[0] - actions) ** 2).mean()
            self.actor_optimizer.zero_grad()
            loss.backward()
            self.actor_optimizer.step()
            return {"actor_loss": loss.item()}
    def train(config, env, replay_buffer):
        actor = Actor(17, 6).to(config.device)
        trainer = Trainer(actor, torch.optim.Adam(actor.parameters(), lr=3e-4))
        state, done = env.reset(), False
        for t in range(config.offline_iterations + config.online_iterations):
            if t >= config.offline_iterations:
                action, _ = actor(torch.tensor(state.reshape(1, -1), device=config.device, dtype=torch.float32))
                action = action.cpu().data.numpy().flatten()
                next_state, reward, done, info = env.step(action)
                replay_buffer.add_transition(state, action, reward, next_state, done)
                state = next_state
            batch = [b.to(config.device) for b in replay_buffer.sample(config.batch_size)]
            log_dict = trainer.train(batch)
""")
FIND += [
    Shape("TW104", "an online exploration action in a loop that hands batches to trainer.train()", _O2O, 25),
    Shape("TW104", "the same exploration by a deterministic actor, with noise added to the action in place", _O2O.replace(
        "            action = action.cpu().data.numpy().flatten()\n",
        "            action += (torch.randn_like(action) * config.expl_noise).clamp(-0.5, 0.5)\n"
        "            action = action.cpu().data.numpy().flatten()\n").replace(
        "action, _ = actor(torch.tensor(", "action = actor.act(torch.tensor(").replace(
        "        return torch.tanh(self.net(state)), None\n",
        "        return torch.tanh(self.net(state)), None\n    def act(self, state):\n        return torch.tanh(self.net(state))\n"),
        27),
]
QUIET += [
    Shape("TW104", "look-alike: the policy's log-probabilities are kept for the update", d("""
        import torch
        def run(policy, agent, env):
            state = env.reset()
            log_probs = []
            for t in range(1000):
                probs = policy(torch.tensor(state))
                dist = torch.distributions.Categorical(probs)
                action = dist.sample()
                log_probs.append(dist.log_prob(action))
                state, reward, done, info = env.step(action.item())
                agent.update(log_probs)
    """)),
]

# ------------------------------------------------------------- TW104 a sample generated for the logs after the step
# A text-to-speech trainer, at every logging interval after the optimizer step, runs the network
# in generation mode on the first utterance to draw its spectrogram for TensorBoard.
_TTS = d("""
    import torch
    def train(rank, epoch, generator, optimizer_g, train_loader, writer):
        generator.train()
        for batch_idx, (x, x_lengths, y, y_lengths) in enumerate(train_loader):
            optimizer_g.zero_grad()
            (z, z_m, logdet), attn = generator(x, x_lengths, y, y_lengths, gen=False)
            loss_g = mle_loss(z, z_m, logdet)
            loss_g.backward()
            optimizer_g.step()
            if rank == 0 and batch_idx % 100 == 0:
                (y_gen, *_), *_ = generator.module(x[:1], x_lengths[:1], gen=True)
                writer.add_image("y_gen", plot(y_gen[0].data.cpu().numpy()), epoch)
""")
FIND += [Shape("TW104", "generation mode run for a TensorBoard picture after the optimizer step", _TTS, 11)]
QUIET += [
    Shape("TW104", "look-alike: the same picture generated under no_grad", _TTS.replace(
        "            (y_gen, *_), *_ = generator.module(x[:1], x_lengths[:1], gen=True)\n",
        "            with torch.no_grad():\n                (y_gen, *_), *_ = generator.module(x[:1], x_lengths[:1], gen=True)\n")),
    Shape("TW104", "look-alike: a model trained in generation mode (its output feeds the loss before the step)", d("""
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                y_hat = model(x, gen=True)
                loss = (y_hat - y).abs().mean()
                loss.backward()
                optimizer.step()
    """)),
]

# ------------------------------------------------------------- TW305 a stale copy of a module; TW302 through a seeding helper
# A point-cloud project keeps `segmentation/misc.py`, a copy of the `utils/misc.py` every script
# imports (`from utils import misc`): its seeding helper never runs. A detector's training script
# calls `seed_everything(seed)` from its utils (which sets `cudnn.deterministic = True`) and later
# sets `cudnn.benchmark = True`.
_MISC = d("""
    import random
    import torch
    def set_random_seed(seed, deterministic=False):
        random.seed(seed)
        torch.manual_seed(seed)
        torch.backends.cudnn.deterministic = True
""")
_MAIN = "from utils import misc\nmisc.set_random_seed(args.seed)\ntrain()\n"
PROJECTS += [
    ProjectShape("TW305", "look-alike: a stale copy of the seeding module that no import reaches (only the used one reported)", {
        "utils/misc.py": _MISC, "segmentation/misc.py": _MISC, "main.py": _MAIN, "segmentation/main.py": "import torch\ntrain()\n"},
        (("utils/misc.py", 6),)),
    ProjectShape("TW305", "the copy imported by its own folder's script is reported too", {
        "utils/misc.py": _MISC, "segmentation/misc.py": _MISC, "main.py": _MAIN,
        "segmentation/main.py": "import misc\nmisc.set_random_seed(0)\n"},
        (("utils/misc.py", 6), ("segmentation/misc.py", 6))),
]
_SEED_UTILS = d("""
    import random
    import numpy as np
    import torch
    def seed_everything(seed=11):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
""")
_DET_TRAIN = d("""
    import torch
    import torch.backends.cudnn as cudnn
    from utils.utils import seed_everything
    if __name__ == "__main__":
        seed_everything(11)
        model = build()
        if distributed:
            model = torch.nn.parallel.DistributedDataParallel(model.cuda())
        else:
            model = torch.nn.DataParallel(model)
            cudnn.benchmark = True
            model = model.cuda()
""")
PROJECTS += [
    ProjectShape("TW302", "cudnn.benchmark = True after the project's seed_everything() set deterministic", {
        "utils/utils.py": _SEED_UTILS, "train.py": _DET_TRAIN}, (("train.py", 11),)),
    ProjectShape("TW302", "look-alike: the helper sets deterministic only when asked (`if deterministic:`)", {
        "utils/utils.py": _SEED_UTILS.replace("def seed_everything(seed=11):", "def seed_everything(seed=11, deterministic=False):").replace(
            "    torch.backends.cudnn.deterministic = True\n", "    if deterministic:\n        torch.backends.cudnn.deterministic = True\n"),
        "train.py": _DET_TRAIN}),
]
