"""What a run tells the user: a progress bar or plain lines, CSV always, TensorBoard if installed.

Only rank 0 reports. The Trainer calls :meth:`RunLog.log` once per log interval with host
floats (already synced), :meth:`RunLog.tick` cheaply per step to move the bar, and
:meth:`RunLog.summary` at the end. ``metrics.csv`` has the columns ``time, step, epoch, name,
value, run``: the last one is the run id (see :mod:`.runs`), on every row.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path
from typing import Any, Mapping, TextIO


def _fmt(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        return f"{value:.4g}"
    return f"{value:.3e}"


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}"


HEADER = ["time", "step", "epoch", "name", "value", "run"]


class RunLog:
    """Progress, CSV and TensorBoard output of one ``fit``."""

    def __init__(self, log_dir: str | Path | None, *, progress: bool = True, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stdout
        self.log_dir = Path(log_dir) if (log_dir and enabled) else None
        self.bar_wanted = progress and enabled and self.stream.isatty()
        self._bar: Any = None
        self._task: Any = None
        self._csv: Any = None
        self._csv_file: Any = None
        self._tb: Any = None
        self._last_tick = 0.0
        self.total_steps: int | None = None
        self._start_time = time.perf_counter()
        self._start_step = 0
        self.run_id = ""  # written on every CSV row (set once the run's id is known)
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._open_csv(self.log_dir / "metrics.csv")
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(self.log_dir / "tensorboard"))
            except Exception:  # tensorboard not installed (or broken): CSV only
                self._tb = None

    def _open_csv(self, path: Path) -> None:
        """Append to ``metrics.csv``; one written before run ids existed is kept aside, not mixed."""
        if path.exists() and path.stat().st_size > 0:
            with open(path, newline="") as fh:
                header = next(csv.reader(fh), [])
            if header != HEADER:
                path.rename(path.with_name("metrics.before-run-ids.csv"))
        new = not path.exists() or path.stat().st_size == 0
        self._csv_file = open(path, "a", newline="")
        self._csv = csv.writer(self._csv_file)
        if new:
            self._csv.writerow(HEADER)

    @property
    def csv_path(self) -> Path | None:
        return self.log_dir / "metrics.csv" if self.log_dir else None

    def start(self, total_steps: int | None, done: int = 0) -> None:
        self.total_steps, self._start_step = total_steps, done
        self._start_time = time.perf_counter()
        if self.bar_wanted:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]} steps/s"),
                TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                refresh_per_second=5, console=Console(file=self.stream, force_terminal=True),
            )
            self._bar.start()
            self._task = self._bar.add_task("train", total=total_steps, completed=done, rate="-", loss="-")

    def info(self, message: str) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(message, markup=False, highlight=False)
        else:
            print(message, file=self.stream, flush=True)

    def tick(self, step: int) -> None:
        """Move the bar (at most a few times per second; free when there is no bar)."""
        if self._bar is None:
            return
        now = time.perf_counter()
        if now - self._last_tick > 0.2:
            self._last_tick = now
            self._bar.update(self._task, completed=step)

    def log(self, step: int, epoch: int, values: Mapping[str, float], *, line: bool = True) -> None:
        """Record values (names like "train/loss", "val/accuracy") and show a line or the bar."""
        if not self.enabled:
            return
        now = time.time()
        if self._csv is not None:
            for name, value in values.items():
                self._csv.writerow([f"{now:.3f}", step, epoch, name, repr(float(value)), self.run_id])
            self._csv_file.flush()
        if self._tb is not None:
            for name, value in values.items():
                self._tb.add_scalar(name, float(value), step)
        if self._bar is not None:
            fields: dict[str, Any] = {"completed": step}
            if "train/steps_per_s" in values:
                fields["rate"] = _fmt(values["train/steps_per_s"])
            if "train/loss" in values:
                fields["loss"] = _fmt(values["train/loss"])
            self._bar.update(self._task, **fields)
            if any(k.startswith("val/") for k in values):
                self.info(self._line(step, epoch, values))
        elif line:
            self.info(self._line(step, epoch, values))

    def _line(self, step: int, epoch: int, values: Mapping[str, float]) -> str:
        total = f"/{self.total_steps}" if self.total_steps else ""
        parts = [f"epoch {epoch}", f"step {step}{total}"]
        short = {"train/loss": "loss", "train/lr": "lr", "train/grad_norm": "grad_norm", "train/steps_per_s": "steps/s",
                 "train/samples_per_s": "samples/s", "train/loader_wait": "loader_wait", "train/amp_skipped": "amp_skipped"}
        for name, value in values.items():
            label = short.get(name, name)
            if name == "train/loader_wait":
                parts.append(f"{label} {value:.0%}")
            else:
                parts.append(f"{label} {_fmt(value)}")
        rate = values.get("train/steps_per_s")
        if rate and self.total_steps and step < self.total_steps:
            parts.append(f"eta {_duration((self.total_steps - step) / rate)}")
        return "  ".join(parts)

    def summary(self, lines: list[tuple[str, str]]) -> None:
        """Print the final summary as aligned ``name: value`` lines."""
        self.close_bar()
        if not self.enabled:
            return
        width = max((len(k) for k, _ in lines), default=0)
        self.info("summary")
        for key, value in lines:
            self.info(f"  {key.ljust(width)}  {value}")

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def close(self) -> None:
        self.close_bar()
        if self._csv_file is not None:
            self._csv_file.close()
            self._csv_file = self._csv = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None
