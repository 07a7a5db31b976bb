"""The settings of one watch: how often steps are sampled, what ends the run, where events go."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError

STOP_ON = ("never", "error", "warning")
DENSE_STEPS = 20  # the first steps are all sampled (window 0, like `doctor --steps 20`): early faults found at once
WINDOW_SAMPLES = 20  # samples judged together by the doctor's checks (its dynamics need >= 20)
MIN_EVERY, MAX_EVERY = 10, 2000  # the bounds of the automatic sampling interval
BUDGET = 0.01  # the share of training time the sampled steps may add (automatic interval)
DIST_EVERY = 100  # under torchrun: a fixed interval, the same steps sampled on every rank
RANK_EVERY = 50  # steps between two cross-rank comparisons (plus the dense first steps)


@dataclass
class WatchOptions:
    """How a run is watched.

    ``every``: sample one step in N (``None``: chosen so that sampling adds about ``budget`` of
    the step time, between 10 and 2000; under torchrun 100, the same steps on every rank). ``stop_on``: "error" ends the run on the first error
    finding ("warning": on any warning or error). ``log``: the JSON-lines event log (None: none).
    ``resume``: append to an existing log (the findings it holds are not alerted again).
    ``alerts``: print one line per new finding on stderr. ``rank_every``: steps between two
    cross-rank comparisons under torchrun. ``stall``: seconds without an optimizer step after
    which a stalled process is reported (0: never). ``tensorboard``: a folder for scalars.
    """

    every: int | None = None
    stop_on: str = "never"
    log: str | Path | None = None
    resume: bool = False
    alerts: bool = True
    rank_every: int = RANK_EVERY
    stall: float = 600.0
    tensorboard: str | Path | None = None
    budget: float = BUDGET
    window: int = WINDOW_SAMPLES
    dense: int = DENSE_STEPS

    def __post_init__(self) -> None:
        if self.every is not None and (not isinstance(self.every, int) or isinstance(self.every, bool) or self.every < 1):
            raise UsageError(f"every must be a whole number of steps >= 1 (or None for automatic), got {self.every!r}")
        if self.stop_on not in STOP_ON:
            raise UsageError(f"stop_on must be one of {', '.join(STOP_ON)}, got {self.stop_on!r}")
        if not isinstance(self.rank_every, int) or self.rank_every < 1:
            raise UsageError(f"rank_every must be a whole number of steps >= 1, got {self.rank_every!r}")
        if not isinstance(self.stall, (int, float)) or self.stall < 0:
            raise UsageError(f"stall must be a number of seconds >= 0 (0: never), got {self.stall!r}")
        if not (isinstance(self.budget, (int, float)) and 0 < self.budget < 1):
            raise UsageError(f"budget must be a share of the step time between 0 and 1, got {self.budget!r}")
        if not isinstance(self.window, int) or self.window < 2 or not isinstance(self.dense, int) or self.dense < 1:
            raise UsageError("window must be >= 2 samples and dense >= 1 step")

    @classmethod
    def coerce(cls, value: Any) -> "WatchOptions":
        """``True``/``None`` -> defaults, a WatchOptions as is, a dict -> WatchOptions(**dict)."""
        if value is None or value is True:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(cls.__dataclass_fields__))
            if unknown:
                raise UsageError(f"unknown watch option(s) {unknown}: expected some of {', '.join(cls.__dataclass_fields__)}")
            return cls(**value)
        raise UsageError(f"watch must be True, a dict of options or a WatchOptions, got {type(value).__name__}")

    def stops_on(self, severity: str) -> bool:
        """Whether a finding of this severity ends the run."""
        if self.stop_on == "error":
            return severity == "error"
        if self.stop_on == "warning":
            return severity in ("error", "warning")
        return False


def rank_log_path(log: str | Path, rank: int, world_size: int) -> Path:
    """The event log of one rank: ``events.jsonl`` alone, ``events.rank3.jsonl`` under torchrun."""
    path = Path(log)
    if world_size <= 1:
        return path
    suffix = "".join(path.suffixes) or ".jsonl"
    stem = path.name[: -len(suffix)] if path.name.endswith(suffix) else path.name
    return path.with_name(f"{stem}.rank{rank}{suffix}")


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) from the launcher's environment (torchrun, SLURM via torchrun)."""
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1


__all__ = ["WatchOptions", "rank_log_path", "rank_and_world", "STOP_ON"]
