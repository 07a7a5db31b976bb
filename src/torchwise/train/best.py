"""The best checkpoint: ``checkpoint_dir/best.pt``, kept apart from the rolling ``step-N.pt`` files.

At each epoch's end, when the monitored metric beats every earlier epoch, the full training
state is written to ``best.pt`` (atomically). Pruning of the ``step-N.pt`` files never touches it,
and ``FitResult.best_checkpoint`` names it. Load the weights with
``torchwise.load_checkpoint(path)["model"]`` (with EMA on, the evaluated weights are under
``["plugins"]["ema"]["weights"]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from torchwise.train.monitor import Monitor

NAME = "best.pt"


class BestCheckpoint:
    """Write ``best.pt`` whenever the monitored metric improves on all earlier epochs."""

    key = "best_checkpoint"

    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self.best: float | None = None
        self.epoch: int | None = None
        self.path: Path | None = None
        self.followed: str | None = None  # the metric actually compared (never val/loss against train/loss)

    def on_epoch_end(self, trainer: Any, values: Mapping[str, float]) -> None:
        value, key = self.monitor.value(values), self.monitor.key(values)
        if value is None or trainer.checkpoint_dir is None or (self.followed is not None and key != self.followed):
            return
        if not self.monitor.improved(value, self.best):
            return
        self.best, self.epoch, self.followed = value, trainer.epoch, key
        self.path = trainer.save_checkpoint(Path(trainer.checkpoint_dir) / NAME)

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "epoch": self.epoch, "followed": self.followed, "path": str(self.path) if self.path else None}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best, self.epoch, self.followed = state.get("best"), state.get("epoch"), state.get("followed")
        self.path = Path(state["path"]) if state.get("path") else None
