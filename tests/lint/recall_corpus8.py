"""The recall corpus, round 7 part A: classes the sixth set (a tuning set since round 7) showed
lint reporting falsely - each written in our own words and reduced to its shape, with look-alikes
that must keep their findings. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW403/TW402 GPU-only trainers
# Re-identification baselines: every training script checks for a GPU (`use_gpu =
# torch.cuda.is_available()`) and guards the batches with it, but moves the model it trains to CUDA
# unconditionally - the training entry points cannot run without a GPU, so the project is GPU-only
# by design: its helpers, its `*_gpu.py` evaluation and its test scripts' loads are no CPU path lost.
_TRAIN_MODULE_LEVEL = d("""
    import torch
    import torch.optim as optim
    from model import Net
    from attack import perturb
    use_gpu = torch.cuda.is_available()
    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    model = model.cuda()
    for inputs, labels in loader:
        if use_gpu:
            inputs, labels = inputs.cuda(), labels.cuda()
        inputs = perturb(model, inputs)
        loss = criterion(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")
_TRAIN_IN_MAIN = d("""
    import torch
    from model import Embedder
    def main(args):
        device_ok = torch.cuda.is_available()
        net = Embedder(args.dim).cuda()  # the whole model on the GPU
        opt = torch.optim.Adam(net.parameters(), lr=args.lr)
        for images, ids in loader:
            if device_ok:
                images = images.cuda(non_blocking=True)
            loss = net(images, ids.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
""")
_ATTACK = d("""
    import torch
    def perturb(model, images, steps=3):
        mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).cuda()
        delta = torch.zeros_like(images).cuda().requires_grad_()
        for _ in range(steps):
            model((images + delta) / mean).sum().backward()
        return images + delta.detach()
""")
_EVAL_GPU = d("""
    import torch
    import scipy.io
    result = scipy.io.loadmat("features.mat")
    query = torch.FloatTensor(result["query_f"]).cuda()
    gallery = torch.FloatTensor(result["gallery_f"]).cuda()
    scores = torch.mm(gallery, query.t())
""")
_TEST = d("""
    import torch
    from model import Net
    use_gpu = torch.cuda.is_available()
    def extract(model, loader):
        feats = []
        for images in loader:
            out = torch.zeros(images.size(0), 512).cuda()
            out += model(images.cuda())
            feats.append(out.cpu())
        return torch.cat(feats)
    model = Net()
    model.load_state_dict(torch.load("net_last.pth"))
    if use_gpu:
        model = model.cuda()
    features = extract(model.eval(), loader)
""")
PROJECTS += [
    ProjectShape("TW403", "reID: the training script checks for a GPU but moves its model with model = model.cuda() "
                 "at module level; the adversarial helper it calls and the GPU evaluation script hard-code CUDA", {
                     "train.py": _TRAIN_MODULE_LEVEL, "attack.py": _ATTACK, "evaluate_gpu.py": _EVAL_GPU,
                     "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
                 }),
    ProjectShape("TW403", "metric learning: the model built and moved in main()'s body (net = Embedder(...).cuda()), "
                 "the batches under a GPU check; a demo script hard-codes CUDA", {
                     "train.py": _TRAIN_IN_MAIN, "demo.py": _EVAL_GPU,
                     "model.py": "import torch.nn as nn\nclass Embedder(nn.Module):\n    pass\n",
                 }),
    ProjectShape("TW402", "reID: a test script loads the trained weights without map_location in a project whose "
                 "training scripts always move the model to CUDA", {
                     "train.py": _TRAIN_MODULE_LEVEL, "attack.py": _ATTACK, "test.py": _TEST,
                     "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
                 }),
    # look-alikes: a real CPU path in the training script keeps the findings
    ProjectShape("TW403", "look-alike: the training script guards the model's move too (if use_gpu: model = model.cuda())", {
        "train.py": _TRAIN_MODULE_LEVEL.replace("model = model.cuda()", "if use_gpu:\n    model = model.cuda()"),
        "attack.py": _ATTACK, "evaluate_gpu.py": _EVAL_GPU,
        "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    }, (("attack.py", 3), ("attack.py", 4), ("evaluate_gpu.py", 4), ("evaluate_gpu.py", 5))),
    ProjectShape("TW403", "look-alike: the unconditional move in the training script is a class-weight tensor, "
                 "not the model it trains", {
                     "train.py": _TRAIN_MODULE_LEVEL.replace(
                         "model = model.cuda()", "weights = torch.ones(10).cuda()\nif use_gpu:\n    model = model.cuda()"),
                     "evaluate_gpu.py": _EVAL_GPU,
                     "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
                 }, (("evaluate_gpu.py", 4), ("evaluate_gpu.py", 5))),
    ProjectShape("TW403", "look-alike: the model moved inside an `if` of main() (a device branch), not in its body", {
        "train.py": _TRAIN_IN_MAIN.replace("    net = Embedder(args.dim).cuda()  # the whole model on the GPU",
                                           "    net = Embedder(args.dim)\n    if device_ok:\n        net = net.cuda()"),
        "demo.py": _EVAL_GPU,
        "model.py": "import torch.nn as nn\nclass Embedder(nn.Module):\n    pass\n",
    }, (("demo.py", 4), ("demo.py", 5))),
    ProjectShape("TW402", "look-alike: the same test script when training falls back to the CPU", {
        "train.py": _TRAIN_MODULE_LEVEL.replace("model = model.cuda()", "if use_gpu:\n    model = model.cuda()"),
        "attack.py": _ATTACK, "test.py": _TEST,
        "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    }, (("test.py", 12),)),
]
