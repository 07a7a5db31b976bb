"""torchvision.transforms for tensors (the stand-in datasets already hold float images in [0, 1])."""

from __future__ import annotations

import random

import numpy as np
import torch
import torch.nn.functional as F


class Compose:
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    def __call__(self, x):
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x).float()
            return x.permute(2, 0, 1) / 255.0 if x.ndim == 3 else x.unsqueeze(0) / 255.0
        return x


class PILToTensor(ToTensor):
    pass


class ToPILImage:
    def __call__(self, x):
        return x


class Normalize:
    def __init__(self, mean, std, inplace=False):
        self.mean, self.std = torch.tensor(mean).view(-1, 1, 1), torch.tensor(std).view(-1, 1, 1)

    def __call__(self, x):
        return (x - self.mean) / self.std


def _size(size, h, w):
    if isinstance(size, int):
        return (size, max(1, round(w * size / h))) if h <= w else (max(1, round(h * size / w)), size)
    return tuple(size)


class Resize:
    def __init__(self, size, *args, **kwargs):
        self.size = size

    def __call__(self, x):
        size = _size(self.size, x.shape[-2], x.shape[-1])
        if size == tuple(x.shape[-2:]):
            return x
        return F.interpolate(x.unsqueeze(0), size=size, mode="bilinear", align_corners=False).squeeze(0)


Scale = Resize


class CenterCrop:
    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, x):
        h, w = x.shape[-2:]
        top, left = max(0, (h - self.size[0]) // 2), max(0, (w - self.size[1]) // 2)
        return x[..., top:top + self.size[0], left:left + self.size[1]]


class RandomCrop(CenterCrop):
    def __init__(self, size, padding=None, **kwargs):
        super().__init__(size)
        self.padding = padding or 0

    def __call__(self, x):
        if self.padding:
            x = F.pad(x, (self.padding,) * 4)
        h, w = x.shape[-2:]
        top, left = random.randint(0, h - self.size[0]), random.randint(0, w - self.size[1])
        return x[..., top:top + self.size[0], left:left + self.size[1]]


class Pad:
    def __init__(self, padding, fill=0, padding_mode="constant"):
        self.padding = (padding,) * 4 if isinstance(padding, int) else tuple(padding) * (4 // len(padding))

    def __call__(self, x):
        return F.pad(x, self.padding)


class RandomResizedCrop(Resize):
    def __init__(self, size, *args, **kwargs):
        super().__init__((size, size) if isinstance(size, int) else size)


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, x):
        return x.flip(-1) if random.random() < self.p else x


class RandomVerticalFlip(RandomHorizontalFlip):
    def __call__(self, x):
        return x.flip(-2) if random.random() < self.p else x


class Grayscale:
    def __init__(self, num_output_channels=1):
        self.n = num_output_channels

    def __call__(self, x):
        return x.mean(0, keepdim=True).expand(self.n, -1, -1).clone()


class Lambda:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


class _Identity:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, x):
        return x


ColorJitter = RandomRotation = RandomAffine = GaussianBlur = _Identity
