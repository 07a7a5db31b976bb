"""The recall corpus: for every rule, the code shapes lint must find, as seen in real projects
(each written here in our own words, reduced to the shape), and the look-alikes that must stay
quiet. ``test_recall_corpus.py`` runs them all; ``benchmarks/lint_corpus.py --recall`` prints
recall per rule. Precision work that loses a shape fails the tests.

The corpus is the positive cases of ``lint_cases.POSITIVE`` (one or more per rule) plus the
shapes below, which are the classes found missing or falsely reported on fresh projects
(issue 22). A :class:`Shape` is one file; a :class:`ProjectShape` is several files linted as
one project (facts that live in another module: a pinned loader built in ``data.py``, the
seeding in ``train.py``, a GPU-only helper).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field


def d(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


@dataclass(frozen=True)
class Shape:
    """One file. ``line``: where the finding must start (None for a look-alike that must stay quiet)."""

    code: str
    seen: str  # the kind of code this shape comes from
    source: str
    line: int | None = None
    path: str = "train.py"


@dataclass(frozen=True)
class ProjectShape:
    """Several files linted as one project; ``expect``: ``(path, line)`` of every finding of ``code``
    (empty for a look-alike that must stay quiet)."""

    code: str
    seen: str
    files: dict[str, str]
    expect: tuple[tuple[str, int], ...] = field(default=())


FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

# ----------------------------------------------------------------------------------- TW513
FIND += [
    Shape("TW513", "noisy-net layers of RL agents: parameters made with a typed constructor", d("""
        import torch
        import torch.nn as nn
        class NoisyLinear(nn.Module):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.weight_mu = nn.Parameter(torch.FloatTensor(n_out, n_in))
    """), 6),
    Shape("TW513", "GAN scripts: a device-dependent alias of the typed constructors", d("""
        import torch
        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        for imgs, _ in loader:
            valid = Tensor(imgs.size(0), 1).fill_(1.0)
    """), 5),
    Shape("TW513", "RL rollouts: NumPy observations turned into tensors each step", d("""
        import torch
        for step in range(100):
            obs, reward, done, info = env.step(action)
            obs_t = torch.FloatTensor(obs).to(device)
    """), 4),
    Shape("TW513", "index tensors of a data pipeline", d("""
        import torch
        def encode(tokens):
            return torch.LongTensor(tokens)
    """), 3),
    Shape("TW513", "masks on the GPU built with a cuda typed constructor", d("""
        import torch
        mask = torch.cuda.ByteTensor(batch, length).zero_()
    """), 2),
]
QUIET += [
    Shape("TW513", "type checks and casts name the classes without calling them", d("""
        import torch
        if isinstance(x, torch.FloatTensor):
            y = x.type(torch.cuda.FloatTensor)
        dtype = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    """)),
    Shape("TW513", "a local class that happens to be called Tensor", d("""
        class Tensor:
            def __init__(self, *a):
                self.a = a
        t = Tensor(1, 2)
    """)),
]

# ----------------------------------------------------------------------------------- TW305
FIND += [
    Shape("TW305", "RL single-file scripts: the cuDNN flag follows a command-line option that defaults to True", d("""
        import torch
        from dataclasses import dataclass
        @dataclass
        class Args:
            torch_deterministic: bool = True
        args = Args()
        torch.manual_seed(1)
        torch.backends.cudnn.deterministic = args.torch_deterministic
    """), 8),
    Shape("TW305", "a config flag, through an alias of cudnn", d("""
        from torch.backends import cudnn
        def setup(cfg):
            cudnn.deterministic = cfg.DETERMINISTIC
            cudnn.benchmark = not cfg.DETERMINISTIC
    """), 3),
]
QUIET += [
    Shape("TW305", "the flag switched off, or the full switch used next to it", d("""
        import torch
        torch.backends.cudnn.deterministic = False
        def seed(args):
            torch.backends.cudnn.deterministic = args.deterministic
            torch.use_deterministic_algorithms(args.deterministic)
    """)),
]

# ----------------------------------------------------------------------------------- TW509
QUIET += [
    Shape("TW509", "model zoos supporting old torchvision: pretrained= only in the TypeError fallback", d("""
        import torchvision
        def backbone():
            try:
                return torchvision.models.resnet50(weights="IMAGENET1K_V1")
            except TypeError:
                return torchvision.models.resnet50(pretrained=True)
    """)),
    Shape("TW509", "a version test picks the argument", d("""
        import torchvision
        if torchvision.__version__ >= "0.13":
            net = torchvision.models.vgg16(weights="DEFAULT")
        else:
            net = torchvision.models.vgg16(pretrained=True)
    """)),
]
FIND += [
    Shape("TW509", "the same call without a fallback around it", d("""
        import torchvision
        def backbone():
            try:
                return torchvision.models.resnet50(pretrained=True)
            except RuntimeError:
                return None
    """), 4),
]

# ----------------------------------------------------------------------------------- TW406
FIND += [
    Shape("TW406", "DDP tutorials: sampler, loader and epoch loop all in main(), the loader wrapped in enumerate/tqdm", d("""
        import torch
        from torch.utils.data import DataLoader, DistributedSampler
        from tqdm import tqdm
        def main(rank, world_size):
            sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank)
            loader = DataLoader(train_set, batch_size=32, sampler=sampler)
            for epoch in range(10):
                for i, (x, y) in enumerate(tqdm(loader)):
                    loss = model(x).sum()
                    loss.backward()
    """), 5),
]
QUIET += [
    Shape("TW406", "the loader goes to a training function of another module", d("""
        from torch.utils.data import DataLoader, DistributedSampler
        from engine import train_one_epoch
        def main():
            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, sampler=sampler)
            for epoch in range(10):
                train_one_epoch(model, loader, epoch)
    """)),
]

# ----------------------------------------------------------------------------------- TW101
FIND += [
    Shape("TW101", "DDP training functions: a per-epoch running total next to a logged loss.item()", d("""
        import torch.nn as nn
        def train(rank, model, loader, optimizer, epochs):
            loss_fn = nn.CrossEntropyLoss()
            for epoch in range(epochs):
                running_loss = 0.0
                for i, (x, y) in enumerate(loader):
                    optimizer.zero_grad()
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    optimizer.step()
                    running_loss += loss
                    if rank == 0 and i % 50 == 0:
                        print(f"epoch {epoch} step {i} loss {loss.item():.3f}")
                print(running_loss / len(loader))
    """), 11),
]
QUIET += [
    Shape("TW101", "gradient accumulation: the total restarts at every optimizer step (same loop)", d("""
        def train(model, loader, optimizer, accum):
            for epoch in range(3):
                total = 0.0
                for i, (x, y) in enumerate(loader):
                    loss = criterion(model(x), y) / accum
                    loss.backward()
                    total += loss
                    if (i + 1) % accum == 0:
                        optimizer.step()
                        log(total)
                        total = 0.0
    """)),
]

# ----------------------------------------------------------------------------------- TW218
FIND += [
    Shape("TW218", "pure fp16 scripts: the model is halved in main() and trained in a function of the file", d("""
        import torch
        import torch.nn as nn
        def train(net, loader, optimizer):
            for x, y in loader:
                loss = nn.functional.cross_entropy(net(x.cuda().half()), y.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        def main():
            net = ResNet18().cuda().half()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
            train(net, loader, optimizer)
    """), 10),
]
QUIET += [
    Shape("TW218", "a halved model that only runs inference, next to a training function", d("""
        import torch
        def train(net, loader, optimizer):
            for x, y in loader:
                net(x).sum().backward()
                optimizer.step()
        def export():
            model = Net().cuda().half()
            torch.save(model.state_dict(), "fp16.pt")
    """)),
]

# ----------------------------------------------------------------------------------- TW201
QUIET += [
    Shape("TW201", "image-quality metrics: a frozen Inception/VGG feature extractor spread over the GPUs", d("""
        import torch.nn as nn
        class FID:
            def __init__(self, device):
                self.inception = nn.DataParallel(InceptionV3([3])).eval().to(device)
                for p in self.inception.parameters():
                    p.requires_grad = False
    """)),
    Shape("TW201", "a frozen teacher next to a trained student", d("""
        import torch
        import torch.nn as nn
        teacher = nn.DataParallel(load_teacher())
        teacher.requires_grad_(False)
        teacher.eval()
        student = Net().cuda()
        opt = torch.optim.SGD(student.parameters(), lr=0.1)
    """)),
]
FIND += [
    Shape("TW201", "the trained model, evaluated now and then", d("""
        import torch
        import torch.nn as nn
        model = nn.DataParallel(Net()).cuda()
        opt = torch.optim.Adam(model.parameters())
        for epoch in range(10):
            model.train()
            train(model)
            model.eval()
            validate(model)
    """), 3),
    Shape("TW201", "a model put in eval mode, then trained again", d("""
        import torch.nn as nn
        def setup(net):
            net = nn.DataParallel(net)
            net.eval()
            warmup(net)
            net.train()
            return fit(net)
    """), 3),
]
