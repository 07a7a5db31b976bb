"""Watching training inside a framework's own loop: thin adapters over :mod:`torchwise.watch`.

- ``with torchwise.watching(model, optimizer): ...`` — any hand-written or Accelerate loop
  (:mod:`torchwise.watch.context`);
- ``lightning.Trainer(callbacks=[TorchwiseWatch()])`` — :mod:`torchwise.integrations.lightning`;
- ``transformers.Trainer(callbacks=[TorchwiseCallback()])`` — :mod:`torchwise.integrations.hf`;
- ``torchwise.Trainer(..., watch=True)`` — :mod:`torchwise.watch.callback` (a Trainer callback).

Each runs the same :class:`~torchwise.watch.session.Session` as ``torchwise watch``: the doctor's
checks on sampled steps, one line per new finding on stderr, an optional JSON-lines log, and a
report at the end. The frameworks are imported only by the module that adapts to them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["watching", "Watching"]


def __getattr__(name: str) -> Any:
    if name in ("watching", "Watching", "WatchStopped"):
        from torchwise.watch import context

        return getattr(context, name)
    raise AttributeError(f"module 'torchwise.integrations' has no attribute {name!r}")
