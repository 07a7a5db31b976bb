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
    ProjectShape("TW403", "the model moved with .to('cuda') in main()'s body", {
        "train.py": _TRAIN_IN_MAIN.replace("net = Embedder(args.dim).cuda()", "net = Embedder(args.dim).to('cuda')"),
        "demo.py": _EVAL_GPU,
        "model.py": "import torch.nn as nn\nclass Embedder(nn.Module):\n    pass\n",
    }),
    # look-alikes: a real CPU path in the training script keeps the findings
    ProjectShape("TW403", "look-alike: the model's move guarded on the same line (if use_gpu: model = model.cuda())" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": _TRAIN_MODULE_LEVEL.replace("model = model.cuda()", "if use_gpu: model = model.cuda()"),
        "evaluate_gpu.py": _EVAL_GPU,
        "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    }, ()),
    ProjectShape("TW403", "look-alike: the training script guards the model's move too (if use_gpu: model = model.cuda())" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": _TRAIN_MODULE_LEVEL.replace("model = model.cuda()", "if use_gpu:\n    model = model.cuda()"),
        "attack.py": _ATTACK, "evaluate_gpu.py": _EVAL_GPU,
        "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    }, (('attack.py', 3), ('attack.py', 4))),
    ProjectShape("TW403", "look-alike: the unconditional move in the training script is a class-weight tensor, "
                 "not the model it trains" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
                     "train.py": _TRAIN_MODULE_LEVEL.replace(
                         "model = model.cuda()", "weights = torch.ones(10).cuda()\nif use_gpu:\n    model = model.cuda()"),
                     "evaluate_gpu.py": _EVAL_GPU,
                     "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
                 }, ()),
    ProjectShape("TW403", "look-alike: the model moved inside an `if` of main() (a device branch), not in its body" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": _TRAIN_IN_MAIN.replace("    net = Embedder(args.dim).cuda()  # the whole model on the GPU",
                                           "    net = Embedder(args.dim)\n    if device_ok:\n        net = net.cuda()"),
        "demo.py": _EVAL_GPU,
        "model.py": "import torch.nn as nn\nclass Embedder(nn.Module):\n    pass\n",
    }, ()),
    ProjectShape("TW402", "look-alike: the same test script when training falls back to the CPU", {
        "train.py": _TRAIN_MODULE_LEVEL.replace("model = model.cuda()", "if use_gpu:\n    model = model.cuda()"),
        "attack.py": _ATTACK, "test.py": _TEST,
        "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    }, (("test.py", 12),)),
]

# ----------------------------------------------------------------------------------- TW207 reads that rarely or never run
# (a) the pre-0.4 arm of a torch version test: dead on any PyTorch since 0.4, so it is no second
# read of the step (the live arm's .item() is the pitfall); (b) a log written when some seconds
# have passed; (c) the branch for the one batch that holds a chosen item (an attention plot).
# one training step per batch, in a function (model, loader, optimizer, criterion)
_STEPS = """
        for inputs, labels in loader:
            inputs, labels = inputs.cuda(), labels.cuda()
            loss = criterion(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
_VERSION_ARMS = d("""
    import torch
    version = torch.__version__
    def train(model, loader, optimizer, criterion):
        running = 0.0""" + _STEPS + """            if int(version[0]) > 0 or int(version[2]) > 3:  # 0.4 and later
                running += loss.item() * inputs.size(0)
            else:  # 0.3
                running += loss.data[0] * inputs.size(0)
                shown = f"{loss.data[0]:.4f}"
        return running
""")
_TIME_GATED = d("""
    import json
    import time
    import torch
    def train(args, model, loader, optimizer, gpu):
        last_logging = time.time()
        for step, (x, y) in enumerate(loader):
            x, y = x.cuda(gpu, non_blocking=True), y.cuda(gpu, non_blocking=True)
            loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            current_time = time.time()
            if args.rank == 0 and current_time - last_logging > args.log_freq_time:
                print(json.dumps(dict(step=step, loss=loss.item())))
                last_logging = current_time
""")
_ONE_ITEM = d("""
    import numpy as np
    import torch
    def to_numpy(t):
        return t.detach().cpu().numpy()
    def train_loop(model, optimizer, loader, plot_id):
        for i, (text, mels, ids) in enumerate(loader, 1):
            text, mels = text.cuda(), mels.cuda()
            out, attention = model(text, mels)
            loss = torch.nn.functional.l1_loss(out, mels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if plot_id in ids:
                idx = ids.index(plot_id)
                np.save("attention.npy", to_numpy(attention[idx]))
""")
_DECODER = d("""
    import torch
    import torch.nn as nn
    class Decoder(nn.Module):
        def __init__(self, n_mels=80):
            super().__init__()
            self.cell = nn.GRUCell(n_mels, n_mels)
            self.stop_threshold = -3.4
        def forward(self, frames):
            h = torch.zeros_like(frames[:, 0])
            outs = []
            for t in range(frames.size(1)):
                h = self.cell(frames[:, t], h)
                outs.append(h)
            return torch.stack(outs, 1)
        def generate(self, first, steps=1000):
            self.eval()
            h, frame, outs = torch.zeros_like(first), first, []
            for t in range(steps):
                h = self.cell(frame, h)
                frame = h
                outs.append(frame)
                if (frame < self.stop_threshold).all() and t > 10:
                    break
            return torch.stack(outs, 1)
""")
_DECODER_TRAIN = d("""
    import torch
    from decoder import Decoder
    model = Decoder().cuda()
    optimizer = torch.optim.Adam(model.parameters())
    for mels in loader:
        mels = mels.cuda()
        loss = (model(mels) - mels).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")
_DECODER_SYNTH = d("""
    import torch
    from decoder import Decoder
    model = Decoder().cuda()
    frames = model.generate(torch.zeros(1, 80).cuda())
""")
PROJECTS += [
    ProjectShape("TW207", "reID: running loss read with .item() under a torch version test; the pre-0.4 arm's .data[0] "
                 "never runs and is no second read", {"train.py": _VERSION_ARMS}, (("train.py", 12),)),
    ProjectShape("TW207", "the version test written with LooseVersion and as a conditional expression", {
        "train.py": _VERSION_ARMS.replace("int(version[0]) > 0 or int(version[2]) > 3",
                                          "LooseVersion(torch.__version__) >= LooseVersion('0.4.0')").replace(
            "import torch\n", "import torch\nfrom distutils.version import LooseVersion\n", 1).replace(
            '            shown = f"{loss.data[0]:.4f}"\n',
            '        value = loss.item() if torch.__version__ >= "0.4" else loss.data[0]\n'),
    }, (("train.py", 13), ("train.py", 16))),
    ProjectShape("TW207", "look-alike: .data[0] in a loop with no version test is reported",
                 {"train.py": _VERSION_ARMS.replace("int(version[0]) > 0 or int(version[2]) > 3", "inputs.size(0) > 0")},
                 (("train.py", 12), ("train.py", 14), ("train.py", 15))),
    ProjectShape("TW207", "self-supervised pretraining: loss.item() logged on rank 0 when log_freq_time seconds have passed",
                 {"train.py": _TIME_GATED}),
    ProjectShape("TW207", "the time gate written with perf_counter and an elapsed name", {
        "train.py": _TIME_GATED.replace("time.time()", "time.perf_counter()").replace(
            "            if args.rank == 0 and current_time - last_logging > args.log_freq_time:\n",
            "            elapsed = current_time - last_logging\n            if elapsed >= 30:\n"),
    }),
    ProjectShape("TW207", "look-alike: a rank test alone (every step on rank 0) is reported", {
        "train.py": _TIME_GATED.replace("args.rank == 0 and current_time - last_logging > args.log_freq_time", "args.rank == 0"),
    }, (("train.py", 14),)),
    ProjectShape("TW207", "TTS: the attention of one chosen utterance saved when its id is in the batch (about once per epoch)",
                 {"train.py": _ONE_ITEM}),
    ProjectShape("TW207", "look-alike: a key looked up in the outputs (true every step) is reported", {
        "train.py": _ONE_ITEM.replace("if plot_id in ids:", "if 'attn' in ids:"),
    }, (("train.py", 15),)),
    ProjectShape("TW207", "look-alike: the tested item is the loop's own value (every step)", {
        "train.py": _ONE_ITEM.replace("if plot_id in ids:", "plot_id = ids[0]\n        if plot_id in ids:"),
    }, (("train.py", 16),)),
    ProjectShape("TW207", "Tacotron: the stop test of generate(), which only the synthesis script calls", {
        "decoder.py": _DECODER, "train.py": _DECODER_TRAIN, "synthesize.py": _DECODER_SYNTH,
    }),
    ProjectShape("TW207", "look-alike: generate() called by the training loop every step is reported (a test that only resets "
                 "the frame: a stop test that breaks is the algorithm's own since recall_corpus19, ruling R9)", {
        "decoder.py": _DECODER.replace("                break\n", "                frame = torch.zeros_like(frame)\n"),
        "train.py": _DECODER_TRAIN.replace("    optimizer.step()\n", "    optimizer.step()\n    sample = model.generate(mels[:, 0])\n"),
    }, (("decoder.py", 22),)),
]

# ----------------------------------------------------------------------------------- TW205 dead helpers
# A helper left in a training script that nothing calls (its test script keeps its own copy that
# it does call): what it allocates is never allocated.
_FLIP_SCRIPT = d("""
    import argparse
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    opt = parser.parse_args()
    def fliplr(img):
        inv_idx = torch.arange(img.size(3) - 1, -1, -1).long().cuda()
        return img.index_select(3, inv_idx)
    def train_model(model, loader, optimizer, criterion):""" + _STEPS + """    train_model(model, loader, optimizer, criterion)
""")
_FLIP_TEST = d("""
    import torch
    def fliplr(img):
        inv_idx = torch.arange(img.size(3) - 1, -1, -1).long().cuda()
        return img.index_select(3, inv_idx)
    def extract(model, loader):
        for img in loader:
            for flip in range(2):
                if flip == 1:
                    img = fliplr(img)
                out = model(img.cuda())
    if __name__ == "__main__":
        extract(model, loader)
""")
PROJECTS += [
    ProjectShape("TW205", "reID: fliplr() defined in the training script and never called; the test script calls its own "
                 "copy (reported there)", {"train.py": _FLIP_SCRIPT, "test.py": _FLIP_TEST}, (("test.py", 3),)),
    ProjectShape("TW205", "look-alike: the same helper called by the training loop is reported", {
        "train.py": _FLIP_SCRIPT.replace("inputs, labels = inputs.cuda(), labels.cuda()",
                                         "inputs, labels = fliplr(inputs.cuda()), labels.cuda()"),
    }, (("train.py", 7),)),
    ProjectShape("TW205", "look-alike: the script's helper imported by another module of the project is reported", {
        "train.py": _FLIP_SCRIPT,
        "augment.py": "from train import fliplr\n\ndef both(img):\n    return [img, fliplr(img)]\n",
    }, (("train.py", 7),)),
    ProjectShape("TW205", "look-alike: a helper of a library module (no __main__, no parse_args) is reported even when "
                 "no file calls it", {
                     "utils.py": _FLIP_TEST.split("def extract")[0],
                 }, (("utils.py", 3),)),
]

# ----------------------------------------------------------------------------------- TW203 CPU statistics
# A script that computes the mean and std of the training images: it checks for a GPU (copied
# from the training script) but nothing in it goes to a device.
_STATS = d("""
    import torch
    from torchvision import datasets, transforms
    image_datasets = {x: datasets.ImageFolder(x, transforms.ToTensor()) for x in ["train", "val"]}
    dataloaders = {x: torch.utils.data.DataLoader(image_datasets[x], batch_size=32, shuffle=True, num_workers=8)
                   for x in ["train", "val"]}
    use_gpu = torch.cuda.is_available()
    def statistics():
        mean, std = torch.zeros(3), torch.zeros(3)
        for inputs, _ in dataloaders["train"]:
            n, c, h, w = inputs.shape
            mean += inputs.mean(dim=(2, 3)).sum(0)
            std += inputs.view(n, c, h * w).std(dim=2).sum(0)
        return mean, std
    print(statistics())
""")
QUIET += [
    Shape("TW203", "reID prepare_static: a loader that feeds only CPU statistics in a file that checks for a GPU", _STATS),
]
FIND += [
    Shape("TW203", "look-alike: the same statistics computed on the GPU (the batches are moved)",
          _STATS.replace("n, c, h, w = inputs.shape", "inputs = inputs.cuda()\n        n, c, h, w = inputs.shape"), 4),
    Shape("TW203", "look-alike: the loader handed to a training function of another module (which may move the batches)",
          _STATS.replace("print(statistics())", "from engine import fit\nfit(Net(), dataloaders['train'], use_gpu)"), 4),
    Shape("TW203", "look-alike: a file that checks for a GPU and trains what the loader yields",
          _STATS.replace("print(statistics())", "model = Net()\nfor x, y in dataloaders['train']:\n    loss = model(x).sum()\n"
                         "    loss.backward()\n"), 4),
]

# ----------------------------------------------------------------------------------- TW301 split seeds
# A literal seed that fixes the train/test split of the data (shuffle, then cut): the project
# makes no attempt at a reproducible run that an unseeded torch generator would break.
_SPLIT = d("""
    import random
    from torch.utils.data import DataLoader
    def get_datasets(path, dataset, batch_size, n_test):
        ids = [x[0] for x in dataset]
        random.seed(1234)
        random.shuffle(ids)
        test_ids = ids[-n_test:]
        train_ids = ids[:-n_test]
        train_set = DataLoader(ItemDataset(path, train_ids), batch_size=batch_size, shuffle=True)
        return train_set, ItemDataset(path, test_ids)
""")
QUIET += [
    Shape("TW301", "TTS datasets: random.seed(1234) before the shuffle that splits the ids into train and test", _SPLIT),
    Shape("TW301", "the split drawn as a NumPy permutation", d("""
        import numpy as np
        import torch
        def split(n, k):
            np.random.seed(0)
            perm = np.random.permutation(n)
            train_idx, val_idx = perm[:k], perm[k:]
            noise = torch.randn(n)
            return train_idx, val_idx, noise
    """)),
]
FIND += [
    Shape("TW301", "look-alike: the seed handed in (a per-epoch order, the run's seeding) is reported",
          _SPLIT.replace("def get_datasets(path, dataset, batch_size, n_test):", "def get_datasets(path, dataset, batch_size, n_test, seed):")
          .replace("random.seed(1234)", "random.seed(seed)"), 9),
    Shape("TW301", "look-alike: a literal seed before a shuffle that is not cut into parts is reported",
          _SPLIT.replace("test_ids = ids[-n_test:]", "test_ids = ids").replace("train_ids = ids[:-n_test]", "train_ids = ids"), 9),
]
PROJECTS += [
    ProjectShape("TW301", "a project whose only seed is the split seed of its data module: the training script's "
                 "torch draws are not reported", {
                     "data.py": _SPLIT,
                     "train.py": "import torch\nfrom data import get_datasets\nnoise = torch.randn(4)\n",
                 }),
    ProjectShape("TW301", "look-alike: the training script seeds numpy too, so the data module's torch draw is reported", {
        "data.py": _SPLIT,
        "train.py": "import numpy as np\nimport torch\nfrom data import get_datasets\nnp.random.seed(0)\nnoise = torch.randn(4)\n",
    }, (("train.py", 5),)),
]

# ----------------------------------------------------------------------------------- TW508 stable log-sum-exp
QUIET += [
    Shape("TW508", "vocoder mixture loss: the stable log-sum-exp written out (the maximum subtracted first)", d("""
        import torch
        def log_sum_exp(x):
            axis = len(x.size()) - 1
            m, _ = torch.max(x, dim=axis)
            m2, _ = torch.max(x, dim=axis, keepdim=True)
            return m + torch.log(torch.sum(torch.exp(x - m2), dim=axis))
    """)),
    Shape("TW508", "the maximum as a method, indexed, inline", d("""
        import torch
        def lse(logits):
            return logits.max(1)[0] + torch.log(torch.sum(torch.exp(logits - logits.max(1, keepdim=True)[0]), dim=1))
    """)),
]
FIND += [
    Shape("TW508", "look-alike: a shift by the maximum of another tensor is reported", d("""
        import torch
        def lse(x, y):
            m, _ = torch.max(y, dim=1, keepdim=True)
            return torch.log(torch.sum(torch.exp(x - m), dim=1))
    """), 4),
    Shape("TW508", "look-alike: a shift by the mean is reported", d("""
        import torch
        def lse(x):
            return torch.log(torch.sum(torch.exp(x - x.mean(1, keepdim=True)), dim=1))
    """), 3),
]
