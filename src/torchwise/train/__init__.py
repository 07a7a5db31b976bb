"""The Trainer and ``torchwise train``: every training practice of the catalog on by default.

``from torchwise.train import Trainer`` (also ``torchwise.Trainer``). The pieces are small
modules of this package; ``trainer.py``'s docstring lists them, and docs/trainer-internals.md
describes how they fit together and how a callback plugs in (:class:`Callback`).

The names are imported on first use, so that ``torchwise train --help`` and
``torchwise checkpoint --help`` (whose modules live here) start without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["Trainer", "FitResult", "EarlyStopping", "Callback"]

_EXPORTS = {
    "Trainer": "torchwise.train.trainer",
    "FitResult": "torchwise.train.result",
    "EarlyStopping": "torchwise.train.early_stopping",
    "Callback": "torchwise.train.callbacks",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'torchwise.train' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchwise.train.callbacks import Callback
    from torchwise.train.early_stopping import EarlyStopping
    from torchwise.train.result import FitResult
    from torchwise.train.trainer import Trainer
