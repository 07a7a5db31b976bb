"""The Trainer and ``torchwise train``: every training practice of the catalog on by default.

``from torchwise.train import Trainer`` (also ``torchwise.Trainer``). The pieces are small
modules of this package; ``trainer.py``'s docstring lists them, and docs/trainer-internals.md
describes how they fit together and how a callback plugs in (:class:`Callback`).
"""

from __future__ import annotations

from torchwise.train.callbacks import Callback
from torchwise.train.early_stopping import EarlyStopping
from torchwise.train.result import FitResult
from torchwise.train.trainer import Trainer

__all__ = ["Trainer", "FitResult", "EarlyStopping", "Callback"]
