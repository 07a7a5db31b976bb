"""Early stopping: end the run when the monitored metric has stopped improving.

``Trainer(early_stopping=EarlyStopping(patience=3))`` checks the monitored metric (the
Trainer's ``monitor``, default ``val/loss``, unless given here) at each epoch's end; after
``patience`` epochs without an improvement larger than ``min_delta`` it sets
``trainer.should_stop``, the run ends cleanly and ``FitResult.stopped_early`` is True. Its
counters are checkpointed, so a resumed run stops where an uninterrupted one would have.
"""

from __future__ import annotations

from typing import Any, Mapping

from torchwise.core.errors import UsageError
from torchwise.train.monitor import Monitor


class EarlyStopping:
    """Stop after ``patience`` epochs without improvement of ``monitor`` (by more than ``min_delta``)."""

    key = "early_stopping"

    def __init__(self, patience: int = 3, min_delta: float = 0.0, monitor: str | None = None, mode: str | None = None) -> None:
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise UsageError(f"EarlyStopping patience must be an integer >= 1 (epochs without improvement), got {patience!r}")
        if not isinstance(min_delta, (int, float)) or min_delta < 0:
            raise UsageError(f"EarlyStopping min_delta must be a number >= 0, got {min_delta!r}")
        self.patience = patience
        self.min_delta = float(min_delta)
        self.monitor_name, self.mode = monitor, mode
        self.monitor: Monitor | None = Monitor(monitor, mode) if monitor else None
        self.best: float | None = None
        self.bad_epochs = 0
        self.followed: str | None = None  # the metric actually followed (never val/loss against train/loss)

    def bind(self, monitor: Monitor) -> None:
        """Use the Trainer's monitor unless this one names its own."""
        if self.monitor is None:
            self.monitor = Monitor(monitor.name, self.mode or monitor._mode)

    def on_epoch_end(self, trainer: Any, values: Mapping[str, float]) -> None:
        assert self.monitor is not None
        value, key = self.monitor.value(values), self.monitor.key(values)
        if value is None or (self.followed is not None and key != self.followed):
            return
        self.followed = key
        if self.monitor.improved(value, self.best, self.min_delta):
            self.best, self.bad_epochs = value, 0
            return
        self.bad_epochs += 1
        if self.bad_epochs >= self.patience:
            trainer.should_stop = True
            trainer._event(
                f"early stopping: {self.monitor.key(values)} has not improved on {self.best:.6g} for {self.bad_epochs} epoch(s) (patience {self.patience})"
            )

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "bad_epochs": self.bad_epochs, "followed": self.followed}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best, self.followed = state.get("best"), state.get("followed")
        self.bad_epochs = int(state.get("bad_epochs", 0))
