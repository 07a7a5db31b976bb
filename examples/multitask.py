"""A two-input, two-task model: a 1-D signal and a vector of tabular features in, a class and a
number out, trained with a custom step that returns the loss and each task's term.

What it shows: dict samples (any key names) batched by the default collate into a dict batch; a
``step_fn(model, batch)`` that calls ``model(signal, meta)`` and returns ``{"loss": ...,
"cls_loss": ..., "reg_loss": ...}``. The Trainer backpropagates ``loss`` and logs the two terms
as ``train/cls_loss`` and ``train/reg_loss`` (and as ``val/...`` at each epoch's end). The step
also hands back the class logits and labels as ``"output"`` and ``"target"``: the validation
metrics (here accuracy) are computed on them. The data is generated: the signal is a noisy sine,
square or sawtooth wave (the class), and the number to predict is the wave's frequency times a
scale given in the tabular features, so the regression needs both inputs.

    torchwise train examples/multitask.py:task
    torchwise train examples/multitask.py:task --task-arg reg_weight=2.0
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset

from torchwise.core.task import Task, accuracy

WAVES = ("sine", "square", "sawtooth")


class Waves(Dataset):
    """Samples ``{"signal": (1, length), "meta": (n_meta,), "label": class, "value": float}``."""

    def __init__(self, n: int, length: int = 64, n_meta: int = 4, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        label = torch.randint(0, len(WAVES), (n,), generator=g)
        freq = 1.0 + 3.0 * torch.rand(n, 1, generator=g)
        phase = 2 * math.pi * torch.rand(n, 1, generator=g)
        t = torch.linspace(0, 1, length).unsqueeze(0)
        angle = 2 * math.pi * freq * t + phase
        sine = torch.sin(angle)
        square = torch.sign(sine)
        saw = 2 * torch.remainder(angle / (2 * math.pi), 1.0) - 1
        signal = torch.where(label[:, None] == 0, sine, torch.where(label[:, None] == 1, square, saw))
        signal = signal + 0.2 * torch.randn(n, length, generator=g)
        self.signal = signal.unsqueeze(1)
        self.meta = torch.randn(n, n_meta, generator=g)
        scale = 1.0 + 0.5 * torch.tanh(self.meta[:, 0])  # in (0.5, 1.5)
        self.value = freq.squeeze(1) * scale
        self.label = label

    def __len__(self) -> int:
        return len(self.label)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"signal": self.signal[i], "meta": self.meta[i], "label": self.label[i], "value": self.value[i]}


class TwoTower(nn.Module):
    """A 1-D CNN for the signal and an MLP for the features, joined; one head per task."""

    def __init__(self, n_meta: int = 4, channels: int = 16, hidden: int = 32, classes: int = len(WAVES)) -> None:
        super().__init__()
        self.signal_net = nn.Sequential(
            nn.Conv1d(1, channels, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(channels, channels, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8), nn.Flatten(),
        )
        self.meta_net = nn.Sequential(nn.Linear(n_meta, hidden), nn.ReLU())
        self.trunk = nn.Sequential(nn.Linear(8 * channels + hidden, hidden), nn.ReLU())
        self.cls_head = nn.Linear(hidden, classes)
        self.reg_head = nn.Linear(hidden, 1)

    def forward(self, signal: torch.Tensor, meta: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.trunk(torch.cat([self.signal_net(signal), self.meta_net(meta)], dim=1))
        return {"logits": self.cls_head(h), "value": self.reg_head(h).squeeze(1)}


def task(n_train: int = 2400, n_val: int = 600, length: int = 64, channels: int = 16, hidden: int = 32,
         reg_weight: float = 1.0, lr: float = 3e-3, batch_size: int = 64, epochs: int = 6) -> Task:
    """The multi-task Task: classification + regression, the loss a weighted sum of the two terms."""

    def step(model: nn.Module, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = model(batch["signal"], batch["meta"])
        cls = F.cross_entropy(out["logits"], batch["label"])
        reg = F.mse_loss(out["value"], batch["value"])
        # "output"/"target": what the metrics (accuracy) are computed on during validation
        return {"loss": cls + reg_weight * reg, "cls_loss": cls, "reg_loss": reg, "output": out["logits"], "target": batch["label"]}

    return Task(
        model=TwoTower(channels=channels, hidden=hidden),
        train_data=Waves(n_train, length, seed=0),
        val_data=Waves(n_val, length, seed=1),
        step_fn=step,
        metrics={"accuracy": accuracy},
        optimizer=lambda params: torch.optim.AdamW(params, lr=lr),
        batch_size=batch_size,
        epochs=epochs,
        name="multitask",
    )
