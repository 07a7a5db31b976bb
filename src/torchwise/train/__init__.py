"""The Trainer and ``torchwise train``: every training practice of the catalog on by default.

``from torchwise.train import Trainer`` (also ``torchwise.Trainer``). The pieces (strategy,
precision, loaders, auto settings, checkpoints, report, OOM recovery, non-finite guard) are
small modules of this package.

The names are imported on first use, so that ``torchwise train --help`` and
``torchwise checkpoint --help`` (whose modules live here) start without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["Trainer", "FitResult", "EarlyStopping"]

_EXPORTS = {
    "Trainer": "torchwise.train.trainer",
    "FitResult": "torchwise.train.trainer",
    "EarlyStopping": "torchwise.train.early_stopping",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'torchwise.train' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchwise.train.early_stopping import EarlyStopping
    from torchwise.train.trainer import FitResult, Trainer
