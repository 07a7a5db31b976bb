"""Small models and data shared by the integration tests: a learnable 4-class task."""

from __future__ import annotations

import torch
from torch import nn


def data(n: int = 1024, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, :4].sum(1) > 0).long() + 2 * (x[:, 4:8].sum(1) > 0).long()
    return x, y


def mlp(dead: bool = False) -> nn.Sequential:
    """An MLP; ``dead``: its first layer's bias so negative that every ReLU unit is off (TW131)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
    if dead:
        with torch.no_grad():
            model[0].bias.fill_(-50.0)
    return model
