"""A small CNN on scikit-learn's handwritten digits (8x8 images, 10 classes; ships with
scikit-learn, nothing is downloaded).

It ships inside the package, so it runs from an installed wheel (``torchwise demo`` uses it);
``examples/digits.py`` of the repository is the same task under the path the README uses:

    torchwise summary torchwise.examples.digits:task
    torchwise train torchwise.examples.digits:task      # or examples/digits.py:task in a clone
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.data import TensorDataset

from torchwise.core.task import Task, accuracy


class DigitsCNN(nn.Module):
    """Two conv blocks (bias-free convs feeding BatchNorm) and a linear classifier."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(64 * 4 * 4, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def digits_arrays() -> tuple[Any, Any]:
    """scikit-learn's digits as NumPy arrays: images (1797, 8, 8) with values 0-16, targets (1797,).

    Read straight from the file scikit-learn ships (``sklearn/datasets/data/digits.csv.gz``),
    which is the same data as ``sklearn.datasets.load_digits()`` without importing scikit-learn
    (about a second of every start-up); ``load_digits`` where the file is not found."""
    import importlib.util
    import os

    import numpy as np

    spec = importlib.util.find_spec("sklearn")
    folder = next(iter(spec.submodule_search_locations or []), None) if spec is not None else None
    path = os.path.join(folder, "datasets", "data", "digits.csv.gz") if folder else None
    if path is None or not os.path.isfile(path):
        from sklearn.datasets import load_digits  # (not installed: the CLI names the `examples` extra)

        data = load_digits()
        return data.images, data.target
    table = np.loadtxt(path, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(int)


def load_digits_tensors(seed: int = 0, val_fraction: float = 0.2) -> tuple[TensorDataset, TensorDataset]:
    """The digits as (N, 1, 8, 8) float tensors in [0, 1], split with a fixed permutation."""
    images, target = digits_arrays()
    x = torch.from_numpy(images).float().div_(16.0).unsqueeze(1)
    y = torch.from_numpy(target).long()
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_val = int(len(y) * val_fraction)
    val, train = perm[:n_val], perm[n_val:]
    return TensorDataset(x[train], y[train]), TensorDataset(x[val], y[val])


def task(batch_size: int = 64, epochs: int = 12, lr: float = 3e-3) -> Task:
    """The digits Task: about 1,440 training and 360 validation images."""
    train, val = load_digits_tensors()
    return Task(
        model=DigitsCNN(),
        train_data=train,
        val_data=val,
        loss_fn=nn.CrossEntropyLoss(),
        optimizer=lambda params: torch.optim.AdamW(params, lr=lr, weight_decay=1e-4),
        metrics={"accuracy": accuracy},
        batch_size=batch_size,
        epochs=epochs,
        name="digits",
    )
