"""A small ResNet (residual blocks with BatchNorm) on scikit-learn's digits, with a one-cycle schedule.

What it shows: ``OneCycleLR`` needs the number of optimizer steps of the whole run up front; the
scheduler factory asks for the run's ``plan`` and passes ``plan.total_steps``, so changing
``--epochs``, ``--batch-size`` or ``--accumulate`` keeps the cycle whole (one step too many would
make OneCycleLR raise). OneCycleLR is a per-step schedule: the Trainer steps it after every
optimizer step. The data ships with scikit-learn (nothing is downloaded); the images are
upsampled from 8x8 to 16x16 so that the network has room for two stages.

    torchwise train examples/resnet.py:task
    torchwise train examples/resnet.py:task --epochs 3 --batch-size 128
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import TensorDataset

from torchwise.core.task import Task, accuracy

if TYPE_CHECKING:
    from torchwise import RunPlan


class BasicBlock(nn.Module):
    """Two 3x3 convolutions (bias-free, each followed by BatchNorm) and a shortcut."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class SmallResNet(nn.Module):
    """A stem, two stages of basic blocks (the second one halves the resolution), global pooling."""

    def __init__(self, classes: int = 10, width: int = 16, blocks: int = 1) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        stage1 = [BasicBlock(width, width) for _ in range(blocks)]
        stage2 = [BasicBlock(width, 2 * width, stride=2)] + [BasicBlock(2 * width, 2 * width) for _ in range(blocks - 1)]
        self.stages = nn.Sequential(*stage1, *stage2)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)))


def digits(size: int = 16, val_fraction: float = 0.2, limit: int | None = None) -> tuple[TensorDataset, TensorDataset]:
    """The 1,797 digits as (N, 1, size, size) images normalised to zero mean, unit variance."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.from_numpy(data.images).float().unsqueeze(1)
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = (x - x.mean()) / x.std()
    y = torch.from_numpy(data.target).long()
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))[:limit]
    n_val = int(len(perm) * val_fraction)
    val, train = perm[:n_val], perm[n_val:]
    return TensorDataset(x[train], y[train]), TensorDataset(x[val], y[val])


def task(width: int = 16, blocks: int = 1, size: int = 16, limit: int | None = None, max_lr: float = 0.2,
         batch_size: int = 64, epochs: int = 5) -> Task:
    """The ResNet Task: SGD with Nesterov momentum under OneCycleLR over the whole run."""
    train, val = digits(size, limit=limit)

    def scheduler(optimizer: torch.optim.Optimizer, plan: RunPlan) -> torch.optim.lr_scheduler.OneCycleLR:
        return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=max_lr, total_steps=plan.total_steps)

    return Task(
        model=SmallResNet(width=width, blocks=blocks),
        train_data=train,
        val_data=val,
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=lambda params: torch.optim.SGD(params, lr=max_lr, momentum=0.9, nesterov=True, weight_decay=5e-4),
        scheduler=scheduler,
        metrics={"accuracy": accuracy},
        batch_size=batch_size,
        epochs=epochs,
        name="resnet",
    )
