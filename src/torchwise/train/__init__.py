"""The Trainer and ``torchwise train``: every training practice of the catalog on by default.

``from torchwise.train import Trainer`` (also ``torchwise.Trainer``). The pieces (strategy,
precision, loaders, auto settings, checkpoints, report, OOM recovery, non-finite guard) are
small modules of this package.
"""

from __future__ import annotations

from torchwise.train.early_stopping import EarlyStopping
from torchwise.train.trainer import FitResult, Trainer

__all__ = ["Trainer", "FitResult", "EarlyStopping"]
