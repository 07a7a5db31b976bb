"""A Task small enough for CLI tests (a few milliseconds per epoch)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import TensorDataset

from torchwise.core.task import Task, accuracy


def task(n: int = 64, epochs: int = 2, lr: float = 0.2) -> Task:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, 0] > 0).long()
    ds = TensorDataset(x, y)
    return Task(model=nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), train_data=ds, val_data=ds, loss_fn=nn.CrossEntropyLoss(),
                optimizer=lambda p: torch.optim.SGD(p, lr=lr), metrics={"accuracy": accuracy}, batch_size=16, epochs=epochs, name="tiny")
