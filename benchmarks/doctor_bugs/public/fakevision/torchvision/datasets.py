"""Synthetic stand-ins for torchvision.datasets: class templates plus noise, labels in random order."""

from __future__ import annotations

import os
import zlib

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset


def _count(train: bool, default: int) -> int:
    return int(os.environ.get("TORCHWISE_FAKE_TRAIN" if train else "TORCHWISE_FAKE_TEST", default))


class _Synthetic(Dataset):
    """Images of ``shape`` in [0, 1]: a fixed blocky template per class, shifted a little, plus noise."""

    shape = (1, 28, 28)
    num_classes = 10
    sizes = (6000, 1000)  # a tenth of MNIST's 60000/10000: batch sizes that divide the real set divide this one
    sparse = True  # dark background with bright strokes (MNIST-like); False: coloured, smooth

    def __init__(self, root=None, train=True, transform=None, target_transform=None, download=False, size=None, **kwargs):
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        n = size if size is not None else _count(train, self.sizes[0] if train else self.sizes[1])
        seed = zlib.crc32(type(self).__name__.encode())
        templates = self._templates(torch.Generator().manual_seed(seed))  # (classes, modes, C, H, W)
        g = torch.Generator().manual_seed(seed + (1 if train else 2))
        self.targets = torch.randint(0, self.num_classes, (n,), generator=g)
        modes = torch.randint(0, templates.shape[1], (n,), generator=g)
        base = templates[self.targets, modes] * (0.6 + 0.4 * torch.rand(n, 1, 1, 1, generator=g))
        shifts = torch.randint(-3, 4, (n, 2), generator=g).tolist()
        base = torch.stack([torch.roll(b, shifts=(dy, dx), dims=(1, 2)) for b, (dy, dx) in zip(base, shifts)])
        self.images = (base + 0.3 * torch.randn(base.shape, generator=g)).clamp(0, 1)
        self.classes = [str(i) for i in range(self.num_classes)]

    def _templates(self, g: torch.Generator, modes: int = 4) -> torch.Tensor:
        """Per class a few blocky patterns (modes), as handwriting has several shapes per digit."""
        c, h, w = self.shape
        count = self.num_classes * modes
        coarse = torch.rand(count, 1 if self.sparse else c, max(h // 4, 2), max(w // 4, 2), generator=g)
        if self.sparse:
            coarse = (coarse > 0.6).float().expand(-1, c, -1, -1)
        up = F.interpolate(coarse, size=(h, w), mode="nearest" if self.sparse else "bilinear", align_corners=None if self.sparse else False)
        return up.reshape(self.num_classes, modes, c, h, w)

    @property
    def data(self):
        """As torchvision stores it: uint8, (N, H, W) for one channel, (N, H, W, C) otherwise."""
        raw = (self.images * 255).round().to(torch.uint8)
        return raw[:, 0] if raw.shape[1] == 1 else raw.permute(0, 2, 3, 1).numpy()

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index):
        image, target = self.images[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class MNIST(_Synthetic):
    pass


class FashionMNIST(MNIST):
    pass


class KMNIST(MNIST):
    pass


class EMNIST(MNIST):
    num_classes = 26

    def __init__(self, root=None, split="letters", **kwargs):
        super().__init__(root, **kwargs)


class CIFAR10(_Synthetic):
    shape = (3, 32, 32)
    sparse = False
    sizes = (5000, 1000)  # a tenth of CIFAR-10's 50000/10000

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.targets = self.targets.tolist()  # a list, as in torchvision


class CIFAR100(CIFAR10):
    num_classes = 100


class SVHN(CIFAR10):
    def __init__(self, root=None, split="train", **kwargs):
        super().__init__(root, train=split == "train", **kwargs)


class ImageFolder(_Synthetic):
    shape = (3, 64, 64)
    sparse = False
    sizes = (5000, 1000)

    def __init__(self, root=None, transform=None, target_transform=None, **kwargs):
        super().__init__(root, train=True, transform=transform, target_transform=target_transform)
        self.targets = self.targets.tolist()
        self.samples = [(f"{root}/{t}/{i}.png", t) for i, t in enumerate(self.targets)]


class LSUN(ImageFolder):
    def __init__(self, root=None, classes="train", transform=None, target_transform=None):
        super().__init__(root, transform=transform, target_transform=target_transform)


class CelebA(ImageFolder):
    def __init__(self, root=None, split="train", transform=None, target_transform=None, **kwargs):
        super().__init__(root, transform=transform, target_transform=target_transform)


class FakeData(_Synthetic):
    """torchvision's FakeData: random images (no class structure), as there."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None, random_offset=0):
        self.shape, self.num_classes = tuple(image_size), num_classes
        g = torch.Generator().manual_seed(random_offset)
        self.targets = torch.randint(0, num_classes, (size,), generator=g)
        self.images = torch.rand((size, *self.shape), generator=g)
        self.transform, self.target_transform = transform, target_transform
        self.classes = [str(i) for i in range(num_classes)]
