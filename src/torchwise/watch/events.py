"""The JSON-lines event log of a watched run: one record per line, flushed as it is written.

Every line is a JSON object with an ``event`` field:

- ``start``: a process began watching (``subject``, ``argv``, ``rank``, ``world_size``, ``pid``,
  ``segment``: 0, then 1, 2... for each restart appended with ``--resume``; ``step_base``: the
  step the run resumed from);
- ``sample``: the measurements of one sampled step (``step``, ``loss`` per objective, gradient
  norm and update/weight ratio per layer, learning rates, loader wait share, step time, memory);
- ``finding``: a new finding (the doctor's fields, plus ``step`` and ``rank``), written once;
- ``window``: a group of samples was judged (``step``, ``every``, ``overhead``);
- ``stall``: no optimizer step for a while (``seconds``, ``where`` the main thread waits);
- ``end``: the process ended (``status``, ``steps``, ``report``: the doctor report);
- ``exit``: written by ``torchwise watch`` itself once the script's process is gone (``code``,
  ``signal``), so a log whose script was killed with SIGKILL still says how it ended.

Lines are written whole and flushed at once, so a log survives SIGKILL of the script up to its
last event; a reader skips a torn last line. Long runs stay small: sample records thin out as
the run goes (every sample for the first 1000, then one in 2, one in 3...), so a million steps
log a few thousand samples.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, Iterator

SAMPLES_IN_FULL = 1000  # sample records kept one for one before they thin out


def clean(value: Any) -> Any:
    """JSON-safe: non-finite floats as "nan"/"inf"/"-inf", tuples as lists, other objects as str."""
    if isinstance(value, float):
        return value if math.isfinite(value) else ("nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def number(value: Any) -> float:
    """A logged number back as a float ("nan"/"inf" strings included)."""
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class EventLog:
    """Appends events to a JSON-lines file (or nowhere, with ``path=None``)."""

    def __init__(self, path: str | Path | None, *, append: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        self._file = None
        self._samples = 0
        self.enabled = True
        if self.path is not None:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a" if append else "w", encoding="utf-8")

    def write(self, event: str, **fields: Any) -> None:
        if self._file is None or not self.enabled:
            return
        record = {"event": event, "time": round(time.time(), 3), **clean(fields)}
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()

    def sample(self, **fields: Any) -> None:
        """A sample record, thinned as the run grows (one in ``n // 1000 + 1`` after the first 1000)."""
        self._samples += 1
        n = self._samples
        stride = n // SAMPLES_IN_FULL + 1
        if n <= SAMPLES_IN_FULL or n % stride == 0:
            self.write("sample", **fields)

    def sync(self) -> None:
        """Flush to the disk itself (at the end of a run: a machine crash loses nothing)."""
        if self._file is not None:
            self._file.flush()
            try:
                os.fsync(self._file.fileno())
            except OSError:
                pass

    def detach(self) -> None:
        """In a forked child (a DataLoader worker): never write here, never flush the parent's file."""
        self.enabled = False

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """Every whole record of a log (a torn last line, from a kill mid-write, is skipped)."""
    return list(iter_events(path))


def iter_events(path: str | Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "event" in record:
                yield record


class Tail:
    """Reads the records appended to a log since the last call (the file may not exist yet)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = ""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                f.seek(self._offset)
                chunk = f.read()
                self._offset = f.tell()
        except FileNotFoundError:
            return []
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()
        out = []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "event" in record:
                out.append(record)
        return out


__all__ = ["EventLog", "read_events", "iter_events", "Tail", "clean", "number"]
