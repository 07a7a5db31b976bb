"""Small models and data for the doctor tests (tiny, CPU, a few milliseconds a step)."""

from __future__ import annotations

import torch
from torch import nn


def mlp(inp: int = 16, hidden: int = 32, out: int = 4) -> nn.Module:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, out))


def class_batch(n: int = 16, inp: int = 16, classes: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, inp, generator=g), torch.randint(0, classes, (n,), generator=g)




def codes(report) -> set[str]:
    return {f.code for f in report.findings}
