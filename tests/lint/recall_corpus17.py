"""The recall corpus, round 11 part A: classes the eleventh set (a tuning set since round 11)
showed in TW403 - each written in our own words and reduced to its shape, with look-alikes that
must stay quiet. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ------------------------------------------------------------ TW403 a GPU-only sub-project of a collection
# A repository that gathers several experiments side by side (a language model, an image
# classifier, a translation model), each in its own folder. The image classifier chooses its
# device; the language model is GPU-only throughout: its training script, its batch iterator and
# its softmax layer move everything with `.cuda()` and nothing in its folder can run without a
# GPU. The classifier's fallback is no CPU path of the language model.
_LM_TRAIN = d("""
    import torch
    from lm.batches import Batches
    from lm.model import WordModel
    model = WordModel(800000, 512)
    model.cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for words, targets in Batches("train.bin", 64):
        optimizer.zero_grad()
        model.log_prob(words, targets).neg().mean().backward()
        optimizer.step()
""")
_LM_BATCHES = d("""
    import torch
    class Batches:
        def __init__(self, path, size):
            self.data, self.size, self.at = torch.load(path), size, 0
        def __iter__(self):
            while self.at + self.size < len(self.data):
                chunk = self.data[self.at:self.at + self.size + 1]
                self.at += self.size
                yield chunk[:-1].cuda(), chunk[1:].cuda()
""")
_LM_MODEL = d("""
    import torch
    import torch.nn as nn
    class WordModel(nn.Module):
        def __init__(self, vocab, dim):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.rnn = nn.LSTM(dim, dim)
            self.out = nn.Linear(dim, vocab)
            self.norm = nn.LogSoftmax(dim=1).cuda()
        def log_prob(self, words, targets):
            h, _ = self.rnn(self.embed(words))
            return self.norm(self.out(h)).gather(1, targets.unsqueeze(1))
""")
_CLS_TRAIN = d("""
    import torch
    import torch.nn.functional as F
    use_cuda = torch.cuda.is_available()
    model = build_net()
    if use_cuda:
        model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, targets in loader:
        if use_cuda:
            inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        F.cross_entropy(model(inputs), targets).backward()
        optimizer.step()
""")
_COLLECTION = {"lm/train.py": _LM_TRAIN, "lm/batches.py": _LM_BATCHES, "lm/model.py": _LM_MODEL,
               "classify/train.py": _CLS_TRAIN}
PROJECTS += [
    ProjectShape("TW403", "a GPU-only language model beside an image classifier that chooses its device", _COLLECTION),
    ProjectShape("TW403", "the same collection under one more folder (experiments/lm, experiments/classify)",
                 {f"experiments/{p}": t for p, t in _COLLECTION.items()}),
    ProjectShape("TW403", "look-alike: the language model's own folder checks for a GPU - its scripts keep their findings" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        **_COLLECTION, "lm/devices.py": 'import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n'},
        ()),
    ProjectShape("TW403", "look-alike: a folder of tools that hard-code CUDA but train nothing is no sub-project" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "tools/export.py": "import torch\nnet = torch.load('net.pt').cuda()\n",
        "tools/bench.py": "import torch\nx = torch.ones(8, device='cuda')\n",
        "classify/train.py": _CLS_TRAIN}, ()),
]

# ------------------------------------------------------------ TW403 a script that picks its one GPU
# A training script whose required command-line argument is the GPU to use, pinned with
# CUDA_VISIBLE_DEVICES; then the model, the loss and every image go `.cuda()`. Choosing the GPU
# is the script's statement that it runs on one: there is no CPU path to break.
_PINNED = """
    import argparse
    import os
    import torch
    import torch.nn as nn
    parser = argparse.ArgumentParser()
    parser.add_argument("gpu", type=str)
    def main():
        args = parser.parse_args()
        {pin}
        model = CountNet().cuda()
        criterion = nn.MSELoss(reduction="sum").cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-7)
        for img, target in loader:
            img, target = img.cuda(), target.float().cuda()
            optimizer.zero_grad()
            criterion(model(img), target).backward()
            optimizer.step()
"""
_PINNED_SCRIPT = d(_PINNED.format(pin='os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu'))
_DENSITY = d("""
    import random
    import numpy as np
    def load_pair(path):
        img = np.load(path)
        return img, np.load(path.replace(".npy", "_density.npy"))
""")
PROJECTS += [
    ProjectShape("TW403", "crowd-counting project: its one script pins the GPU from its gpu argument, then .cuda()", {
        "train.py": _PINNED_SCRIPT, "image.py": _DENSITY}),
    ProjectShape("TW403", "the same script without pinning a GPU, in a project with no CPU path anywhere: GPU-only by design", {
        "train.py": d(_PINNED.format(pin="print(args.gpu)")), "image.py": _DENSITY}),
    ProjectShape("TW403", "look-alike: a sibling script offers --cpu - the pinned script keeps its findings" + " [round 18: quiet where no CPU run reaches the file - a sibling's fallback is no CPU path of it]", {
        "train.py": _PINNED_SCRIPT, "train_cls.py": d("""
            import argparse
            import torch
            def main(argv=None):
                opts = argparse.ArgumentParser(description="point classifier")
                opts.add_argument("--cpu", action="store_true", help="train without a GPU")
                args = opts.parse_args(argv)
                model, optimizer = build(), None
                if not args.cpu:
                    model = model.cuda()
                optimizer = torch.optim.Adam(model.parameters())
                for points, label in loader:
                    if not args.cpu:
                        points, label = points.cuda(), label.cuda()
                    optimizer.zero_grad()
                    model.loss(points, label).backward()
                    optimizer.step()
        """)}, ()),  # (nn.MSELoss(...).cuda() on line 11 moves nothing: no GPU needed, round 16)
]

# ------------------------------------------------------------ TW403 the model moved unguarded beside guarded batches
# An image-classification script checks for a GPU (`use_cuda = torch.cuda.is_available()`) and
# moves every batch under that flag, yet wraps and moves the model with
# `torch.nn.DataParallel(model).cuda()` (and the loss with `.cuda()`) under no `if`: the CPU path
# the batches offer fails at the model. A file that also uses "cuda" unguarded elsewhere (autocast
# on "cuda", a tensor made on "cuda:0") is written for a GPU: the model move there is no slip.
_GUARDED_BATCHES = """
    import torch
    import torch.nn as nn
    import torch.optim as optim
    use_cuda = torch.cuda.is_available()
    model = build_resnet()
    {move}
    criterion = nn.CrossEntropyLoss(weight=class_weights){loss_move}
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    def train(loader, model, criterion, optimizer, use_cuda):
        for inputs, targets in loader:
            if use_cuda:
                inputs, targets = inputs.cuda(), targets.cuda(non_blocking=True)
            {extra}
            optimizer.zero_grad()
            criterion(model(inputs), targets).backward()
            optimizer.step()
"""
FIND += [
    Shape("TW403", "cifar script: model = torch.nn.DataParallel(model).cuda() while every batch move checks use_cuda",
          d(_GUARDED_BATCHES.format(move="model = torch.nn.DataParallel(model).cuda()", loss_move="", extra="pass")), 6),
    Shape("TW403", "imagenet script: the model moved in each branch of an architecture choice, and the loss, beside guarded batches",
          d(_GUARDED_BATCHES.format(move="if arch == 'vgg':\n        model.cuda()\n    else:\n        model = torch.nn.DataParallel(model).cuda()",
                                    loss_move=".cuda()", extra="pass")), 10),
]
QUIET += [
    Shape("TW403", "look-alike: the model moved under the flag too",
          d(_GUARDED_BATCHES.format(move="if use_cuda:\n        model = torch.nn.DataParallel(model).cuda()", loss_move="",
                                    extra="pass"))),
    Shape("TW403", "look-alike: the file also autocasts on \"cuda\" unguarded - written for a GPU",
          d(_GUARDED_BATCHES.format(move="model = model.cuda()", loss_move="",
                                    extra="ctx = torch.autocast(device_type='cuda')"))),
    Shape("TW403", "look-alike: the unguarded .cuda() moves a tensor inside an expression, not a named model",
          d(_GUARDED_BATCHES.format(move="weights = build_weights()", loss_move="",
                                    extra="loss_w = criterion.weight_for(targets.cuda())"))),
]

# ------------------------------------------------------------ TW301/TW303 the clock as the only seed
# A training script sets `args.seed = time.time()` and calls `torch.cuda.manual_seed(args.seed)`,
# or seeds with `random.seed(time.time())`: a different seed on every run, so no reproducibility is
# intended - "seed the other generators too" (TW301) or "seed every GPU" (TW303) gains nothing.
# A fixed seed (`args.seed = 1`, `random.seed(1234)`) keeps both findings.
_CLOCK_TRAIN = """
    import argparse
    import time
    import torch
    from dataset import Crowd
    def main():
        args = argparse.Namespace()
        args.seed = {seed}
        torch.cuda.manual_seed(args.seed)
        model = build()
        for img, target in Crowd(args.lines):
            loss = model(img).sub(target).pow(2).sum()
            loss.backward()
"""
_SHUFFLING_DATASET = d("""
    import random
    from torch.utils.data import Dataset
    class Crowd(Dataset):
        def __init__(self, root, shuffle=True):
            if shuffle:
                random.shuffle(root)
            self.lines = root
""")
PROJECTS += [
    ProjectShape("TW301", "args.seed = time.time() seeds CUDA; the dataset shuffles with Python's random", {
        "train.py": d(_CLOCK_TRAIN.format(seed="time.time()")), "dataset.py": _SHUFFLING_DATASET}),
    ProjectShape("TW301", "look-alike: a fixed args.seed keeps the unseeded Python random reported", {
        "train.py": d(_CLOCK_TRAIN.format(seed="1")), "dataset.py": _SHUFFLING_DATASET},
        (("dataset.py", 6),)),
]
QUIET += [
    Shape("TW303", "torch.cuda.manual_seed(args.seed) where args.seed = time.time()", d(_CLOCK_TRAIN.format(seed="time.time()"))),
    Shape("TW303", "torch.cuda.manual_seed(int(time.time() * 1000))",
          d(_CLOCK_TRAIN.format(seed="0")).replace("manual_seed(args.seed)", "manual_seed(int(time.time() * 1000))")),
]
FIND += [
    Shape("TW303", "look-alike: a fixed args.seed keeps the single-GPU seed reported", d(_CLOCK_TRAIN.format(seed="1")), 8),
]

# ------------------------------------------------------------ TW207 replay priorities read by name
# A prioritized-replay DQN's training step reads the new priorities off the GPU into a name
# (`loss_PER = loss.detach().abs().cpu().numpy()`, or a TD error through `abs(...)`) and hands them
# to the replay memory's host sum tree a few lines later: the algorithm needs them on the host
# every step. The same read only printed, or collected into a list, is still a wasted sync.
_PER_STEP = """
    import torch
    def optimize_model(policy, target, memory, optimizer, device, history):
        batch, idx, weights = memory.sample(32)
        q = policy(batch.state.to(device)).gather(1, batch.action.to(device)).squeeze(1)
        expected = target(batch.next_state.to(device)).max(1)[0].detach()
        loss = (q - expected).pow(2)
        {read}
        loss = (loss * weights.to(device)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {use}
"""
QUIET += [
    Shape("TW207", "prioritized replay: loss_PER = loss.detach().abs().cpu().numpy(), then memory.update_priority_on_tree(idx, loss_PER)",
          d(_PER_STEP.format(read="loss_PER = loss.detach().abs().cpu().numpy()",
                             use="memory.update_priority_on_tree(idx, loss_PER)"))),
    Shape("TW207", "prioritized replay: the squared TD error read, then abs() of it handed to the memory",
          d(_PER_STEP.format(read="td = loss.detach().cpu().numpy().squeeze()\n        abs_td = abs(td)",
                             use="memory.update_priorities(idx, abs_td)"))),
]
FIND += [
    Shape("TW207", "look-alike: the same read only printed", d(_PER_STEP.format(
        read="loss_PER = loss.detach().abs().cpu().numpy()", use="print(loss_PER)")), 7),
    Shape("TW207", "look-alike: the same read collected into a history list", d(_PER_STEP.format(
        read="loss_PER = loss.detach().abs().cpu().numpy()", use="history.append(loss_PER)")), 7),
    Shape("TW207", "look-alike: a segmentation loss read by name, shown on a visualiser and summed for a running mean",
          d(_PER_STEP.format(read="np_loss = loss.detach().cpu().numpy()",
                             use="history.total += np_loss\n    vis.vis_scalar('Loss', 1, np_loss)")), 7),
]

# ------------------------------------------------------------ TW402 shipped weights the training saves from the host
# A style-transfer project: train.py writes checkpoints from the GPU inside its loop, then moves
# the network to the host in place (`net.cpu()`) and saves the final weights; stylize.py, which
# trains nothing, loads shipped weights (`transforms/mosaic.pth`, a name no save writes) with
# `net.load_state_dict(torch.load(path))` on a device it chooses. What the project ships comes
# from that final save: host tensors. Final weights saved from the GPU keep the finding.
_STYLE_TRAIN = """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = TransformerNet().to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    for step, (images, _) in enumerate(loader):
        optimizer.zero_grad()
        style_loss(net(images.to(device))).backward()
        optimizer.step()
        if step % 500 == 0:
            torch.save(net.state_dict(), "checkpoints/ckpt_" + str(step) + ".pth")
    net.eval()
    {final}
    torch.save(net.state_dict(), "models/final_weights.pth")
"""
_STYLIZE = d("""
    import torch
    def stylize(path="transforms/mosaic.pth"):
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = TransformerNet()
        net.load_state_dict(torch.load(path))
        net = net.to(device)
        with torch.no_grad():
            return net(load_image("in.jpg").to(device))
    print(stylize())
""")
PROJECTS += [
    ProjectShape("TW402", "style transfer: train.py saves the final weights after net.cpu(); stylize.py loads shipped weights", {
        "train.py": d(_STYLE_TRAIN.format(final="net.cpu()")), "stylize.py": _STYLIZE}),
    ProjectShape("TW402", "the same with net = net.to('cpu') before the final save", {
        "train.py": d(_STYLE_TRAIN.format(final="net = net.to('cpu')")), "stylize.py": _STYLIZE}),
    ProjectShape("TW402", "look-alike: the final weights saved from the GPU keep the finding", {
        "train.py": d(_STYLE_TRAIN.format(final="pass")), "stylize.py": _STYLIZE}, (("stylize.py", 5),)),
    ProjectShape("TW402", "look-alike: moved back to the GPU after .cpu() before the save", {
        "train.py": d(_STYLE_TRAIN.format(final="net.cpu()\n    net.to(device)")), "stylize.py": _STYLIZE}, (("stylize.py", 5),)),
]

# ------------------------------------------------------------ TW301 a draw in dead code
# An augmentation helper keeps a disabled flip under `if False:` (`if random.randint(0, 9) <= -1:`
# inside it): the draw never runs, so Python's random is not used although the project seeds
# torch only. The same draw under a real switch (`if flip:`) is a use.
_AUGMENT = """
    import random
    def augment(img, target, flip=True):
        if {switch}:
            if random.randint(0, 9) <= 4:
                img = img[:, ::-1]
        return img, target
"""
_SEEDED_TRAIN = d("""
    import torch
    from augment import augment
    torch.manual_seed(1)
    for img, target in data:
        img, target = augment(img, target)
        loss = model(img).sub(target).abs().mean()
        loss.backward()
""")
PROJECTS += [
    ProjectShape("TW301", "crowd counting: the flip draw sits under `if False:` in the augmentation helper", {
        "train.py": _SEEDED_TRAIN, "augment.py": d(_AUGMENT.format(switch="False"))}),
    ProjectShape("TW301", "look-alike: the same draw under a real switch (if flip:) is reported", {
        "train.py": _SEEDED_TRAIN, "augment.py": d(_AUGMENT.format(switch="flip"))}, (("augment.py", 4),)),
]
