"""The tiny task with a gate, for tests that act on a running ``torchwise train`` from outside.

``task(gate="DIR/g")``: when the training loader fetches sample number ``pause_at`` (counting
from 1 in this process), the dataset creates ``DIR/g.ready`` and waits until ``DIR/g.go``
exists. The test sees the run paused mid-step, signals or starts a second run, then opens the
gate. Without ``gate`` it is the plain deterministic task (the reference run).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import Dataset

from torchwise.core.task import Task, accuracy


class GatedData(Dataset):
    def __init__(self, x: torch.Tensor, y: torch.Tensor, gate: str, pause_at: int) -> None:
        self.x, self.y, self.gate, self.pause_at, self.fetched = x, y, gate, pause_at, 0

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        self.fetched += 1
        if self.gate and self.fetched == self.pause_at:
            Path(self.gate + ".ready").touch()
            while not Path(self.gate + ".go").exists():
                time.sleep(0.02)
        return self.x[i] + 0.01 * torch.randn(4), self.y[i]  # global RNG: a resume must restore it


def task(gate: str = "", pause_at: int = 40, epochs: int = 3) -> Task:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 4, generator=g)
    y = (x[:, 0] > 0).long()
    train = GatedData(x, y, gate, pause_at)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 2))
    return Task(model=model, train_data=train, loss_fn=nn.CrossEntropyLoss(), optimizer=lambda p: torch.optim.Adam(p, lr=0.01),
                metrics={"accuracy": accuracy}, batch_size=16, epochs=epochs, name="gated")
