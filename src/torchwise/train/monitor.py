"""The monitored metric: which value ReduceLROnPlateau, early stopping and the best checkpoint follow.

``monitor`` names a logged value (default ``"val/loss"``; without validation data it falls back
to ``"train/loss"``, and the run says so). Another validation metric (``"val/accuracy"``) with no
validation data is refused at the start of ``fit``: nothing would produce it. ``mode`` "min" or "max"; None decides from the name: names holding loss,
error, perplexity, divergence, distance, or the word err, mae, mse, rmse, ppl, nll, kl, wer, cer,
fid, bpd, bpc are better when lower, everything else (accuracy, f1, auc...) when higher.
"""

from __future__ import annotations

import math
import re
from typing import Mapping

from torchwise.core.errors import UsageError

# words found anywhere in the name ("celoss", "val_error") and short tags matched as whole words
# ("top1_err", "nll", "wer"), so "power" or "lower_bound" are not taken for an error rate
LOWER_IS_BETTER_WORDS = ("loss", "error", "perplexity", "divergence", "distance")
LOWER_IS_BETTER = ("err", "mae", "mse", "rmse", "ppl", "nll", "kl", "wer", "cer", "fid", "bpd", "bpc")


def lower_is_better(name: str) -> bool:
    """Whether the metric ``name`` improves when it goes down (by its last path part)."""
    last = name.split("/")[-1].lower()
    if any(word in last for word in LOWER_IS_BETTER_WORDS):
        return True
    return any(token in LOWER_IS_BETTER for token in re.split(r"[^a-z0-9]+|(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])", last))


class Monitor:
    """A metric name with its direction, read from the values logged at an epoch's end."""

    def __init__(self, name: str = "val/loss", mode: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise UsageError(f"monitor must be a metric name such as 'val/loss' or 'val/accuracy', got {name!r}")
        if mode not in (None, "min", "max"):
            raise UsageError(f"monitor_mode must be 'min', 'max' or None (from the metric's name), got {mode!r}")
        self.name = name
        self._mode = mode

    def key(self, values: Mapping[str, float]) -> str:
        """The name actually followed: ``name``, or ``train/loss`` when ``val/loss`` is absent (no validation data)."""
        if self.name not in values and self.name == "val/loss" and "train/loss" in values:
            return "train/loss"
        return self.name

    @property
    def from_name(self) -> bool:
        """True when the direction comes from the name (no ``mode`` given)."""
        return self._mode is None

    @property
    def mode(self) -> str:
        return self._mode or ("min" if lower_is_better(self.name) else "max")

    def value(self, values: Mapping[str, float]) -> float | None:
        """The monitored value among ``values``, or None when it was not logged (or is not finite)."""
        value = values.get(self.key(values))
        return float(value) if value is not None and math.isfinite(value) else None

    def improved(self, new: float, best: float | None, min_delta: float = 0.0) -> bool:
        """Whether ``new`` beats ``best`` by more than ``min_delta`` in this monitor's direction."""
        if best is None:
            return True
        return new < best - min_delta if self.mode == "min" else new > best + min_delta


def describe_followed(monitor: Monitor, has_val: bool, phases: list[str]) -> str:
    """The line that says what is really followed (without validation data, ``val/loss`` is train/loss)."""
    direction = f"{'lower' if monitor.mode == 'min' else 'higher'} is better" + (" (from its name; monitor_mode= sets it)" if monitor.from_name else "")
    if monitor.name != "val/loss" or has_val:
        return f"monitoring {monitor.name}: {direction}"
    named = [n for n in phases if n]
    total = f"the sum of the {', '.join(named[:-1])} and {named[-1]} losses; " if len(named) > 1 else ""
    return f"monitoring train/loss ({total}no validation data, so it stands in for val/loss): {direction}"


def refuse_unproducible(monitor: Monitor, has_val: bool) -> None:
    """One line when a validation metric other than val/loss is monitored and no validation data produces it."""
    if has_val or not monitor.name.startswith("val/") or monitor.name == "val/loss":
        return
    raise UsageError(
        f"monitor {monitor.name!r} is a validation metric, but this fit has no validation data to produce it (it drives "
        "early stopping, best.pt or ReduceLROnPlateau): pass a val_loader (a Task's val_data), or monitor a training value such as 'train/loss'"
    )
