"""Tiny models, data and runners shared by the Trainer tests (CPU, one thread, milliseconds)."""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchwise.train import Trainer


def mlp(seed: int = 0, inp: int = 6, hidden: int = 8, out: int = 3) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(inp, hidden), nn.Tanh(), nn.Linear(hidden, out))


def data(n: int = 64, inp: int = 6, classes: int = 3, seed: int = 1) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, inp, generator=g)
    y = torch.randint(0, classes, (n,), generator=g)
    return TensorDataset(x, y)


def loader(ds: TensorDataset | None = None, batch_size: int = 8, shuffle: bool = False, **kw) -> DataLoader:
    return DataLoader(ds if ds is not None else data(), batch_size=batch_size, shuffle=shuffle, **kw)


def quiet(**kw) -> dict:
    """Trainer keywords for a silent run that writes nothing."""
    base = dict(device="cpu", progress=False, log_dir=False, seed=0)
    base.update(kw)
    return base


def make_trainer(model: nn.Module | None = None, lr: float = 0.1, momentum: float = 0.0, **kw) -> Trainer:
    model = model if model is not None else mlp()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    return Trainer(model, opt, nn.CrossEntropyLoss(), **quiet(**kw))


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def clone(model: nn.Module) -> nn.Module:
    return copy.deepcopy(model)
