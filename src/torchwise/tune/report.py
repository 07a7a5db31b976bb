"""The tuner's result: ranked table, JSON, tune.json and the speed-up bar chart."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError
from torchwise.core.tuned import TunedConfig
from torchwise.tune.search import BASELINE, FASTER, FITS, NOT_FASTER, REJECTED, SearchResult, Skip, Trial

_TUNED_FIELDS = (
    "precision",
    "channels_last",
    "cudnn_benchmark",
    "compile",
    "matmul_precision",
    "threads",
    "batch_size",
    "num_workers",
    "pin_memory",
    "persistent_workers",
)

_BASIS_TEXT = {"loader": "end to end through the DataLoader", "step": "the training step alone"}


def tuned_config(search: SearchResult, meta: dict[str, Any]) -> TunedConfig:
    """The TunedConfig of a search: measured fields get their best value, the rest stay None."""
    values = {k: search.config.get(k) for k in _TUNED_FIELDS if k in search.decided}
    return TunedConfig(**values, meta=meta)


@dataclass
class TuneResult:
    """What ``torchwise.tune`` measured and chose.

    ``config`` is the :class:`~torchwise.core.tuned.TunedConfig` to save or hand to the Trainer;
    ``speedup`` is tuned over default samples/s, measured the way ``basis`` says ("loader": end to
    end through the DataLoader; "step": the training step alone).
    """

    config: TunedConfig
    trials: list[Trial]
    skipped: list[Skip]
    speedup: float
    default_samples_per_s: float
    tuned_samples_per_s: float
    basis: str
    elapsed_s: float
    budget_s: float
    device: str
    task: str
    pairs: int = 1  # alternated default/tuned pairs behind ``speedup``
    out: Path | None = None
    plot_path: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- views
    def ranked(self) -> list[Trial]:
        """Measured trials, fastest (largest speed-up against the default) first."""
        measured = [t for t in self.trials if t.measurement is not None and t.speedup is not None]
        return sorted(measured, key=lambda t: (-t.speedup, t.label))

    @property
    def rejected(self) -> list[Trial]:
        return [t for t in self.trials if t.status == REJECTED]

    def changes(self) -> dict[str, Any]:
        """Decided settings that differ from the default configuration."""
        from torchwise.tune.search import LOADER_DEFAULTS, STEP_DEFAULTS

        defaults = {**STEP_DEFAULTS, **LOADER_DEFAULTS}
        out = {}
        for k in _TUNED_FIELDS:
            v = getattr(self.config, k)
            if v is None:
                continue
            if k in defaults and v == defaults[k]:
                continue
            if k == "threads" and v == self.extra.get("default_threads"):
                continue
            if k == "batch_size" and v == self.extra.get("default_batch_size"):
                continue
            out[k] = v
        return out

    def summary(self) -> str:
        changes = ", ".join(f"{k}={v}" for k, v in self.changes().items()) or "the defaults (nothing measured faster)"
        how = f", median of {self.pairs} alternated pairs" if self.pairs > 1 else ""
        return (
            f"tuned: {changes} -> {self.speedup:.2f}x samples/s ({self.tuned_samples_per_s:,.0f} against "
            f"{self.default_samples_per_s:,.0f}, {_BASIS_TEXT.get(self.basis, self.basis)}{how}) "
            f"in {self.elapsed_s:.1f} s of a {self.budget_s:g} s budget"
        )

    def to_dict(self) -> dict[str, Any]:
        def trial(t: Trial) -> dict[str, Any]:
            m = t.measurement
            return {
                "knob": t.knob,
                "setting": t.label,
                "mode": t.mode,
                "status": t.status,
                "chosen": t.chosen,
                "samples_per_s": t.samples_per_s,
                "repeats": list(t.repeats),
                "speedup": t.speedup,
                "step_ms": None if m is None else m.step_s * 1e3,
                "noise_iqr_over_median": None if m is None else m.noise,
                "steps": None if m is None else m.steps,
                "batch_size": None if m is None else m.batch_size,
                "loss": None if m is None else m.loss,
                "excluded_s": None if m is None else m.excluded_s,
                "peak_memory": None if m is None else m.peak_memory,
                "wall_s": t.wall_s,
                "detail": t.detail,
                "config": t.config,
            }

        return {
            "task": self.task,
            "device": self.device,
            "speedup": self.speedup,
            "pairs": self.pairs,
            "basis": self.basis,
            "default_samples_per_s": self.default_samples_per_s,
            "tuned_samples_per_s": self.tuned_samples_per_s,
            "elapsed_s": self.elapsed_s,
            "budget_s": self.budget_s,
            "config": self.config.to_dict(),
            "out": None if self.out is None else str(self.out),
            "plot": None if self.plot_path is None else str(self.plot_path),
            "trials": [trial(t) for t in self.trials],
            "skipped": [{"knob": s.knob, "setting": s.setting, "kind": s.kind, "reason": s.reason} for s in self.skipped],
        }

    # --------------------------------------------------------------- output
    def save(self, path: str | Path) -> Path:
        """Write ``tune.json`` (the TunedConfig, provenance in ``meta``)."""
        path = Path(path)
        if path.parent and not path.parent.exists():
            raise UsageError(f"cannot write {path}: directory {path.parent} does not exist")
        self.out = self.config.save(path)
        return self.out

    def rows(self) -> list[dict[str, str]]:
        """The table's rows as plain strings, the training step's trials first, then those timed
        through the DataLoader (their speed-ups have different references), each fastest first."""
        order = {"step": 0, "loader": 1}
        measured = sorted(self.ranked(), key=lambda t: order.get(t.mode, 2))
        out = []
        for i, tr in enumerate(measured, 1):
            m = tr.measurement
            out.append({"#": str(i), "setting": tr.label, "measured": tr.mode, "samples/s": f"{tr.samples_per_s:,.1f}",
                        "speed-up": f"{tr.speedup:.2f}x", "noise": f"±{100 * m.noise / 2:.0f}%",
                        "verdict": verdict(tr, self.in_final(tr))})
        for tr in self.trials:
            if tr.measurement is None:
                out.append({"#": "-", "setting": tr.label, "measured": tr.mode, "samples/s": "-", "speed-up": "-",
                            "noise": "-", "verdict": f"{tr.status}: {tr.detail}"})
        return out

    def in_final(self, t: Trial) -> bool:
        """Whether the settings ``t`` changed from the default are all in a chosen configuration
        (a step setting kept at its stage can still be left out of the final choice)."""
        base = next((r for r in self.trials if r.status == BASELINE and r.mode == "step"), None)
        changed = {k: v for k, v in t.config.items() if base is None or base.config.get(k) != v}
        return any(all(c.config.get(k) == v for k, v in changed.items()) for c in self.trials if c.chosen)

    def table(self) -> Any:
        """The trials as a ``rich`` Table (see :meth:`rows`)."""
        from rich.table import Table
        from rich.text import Text

        t = Table(title=f"torchwise tune {self.task} on {self.device}", title_justify="left")
        for name in _COLUMNS:
            t.add_column(name, justify="right" if name in _RIGHT else "left")
        for row in self.rows():
            style = "bold green" if row["verdict"] == CHOSEN else "red" if row["verdict"].startswith(("rejected", "failed", "out of")) else ""
            t.add_row(*(Text(row[c], style=style) if c == "verdict" else Text(row[c]) for c in _COLUMNS))
        return t

    def skipped_table(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        t = Table(title="not measured", title_justify="left")
        t.add_column("knob")
        t.add_column("setting")
        t.add_column("why")
        for s in self.skipped:
            t.add_row(Text(s.knob), Text(s.setting), Text(s.reason))
        return t

    def print(self, console: Any = None) -> None:
        """Print the trials, what was skipped and the summary line as rich tables."""
        from rich.console import Console

        console = console or Console()
        console.print(self.table())
        if self.skipped:
            console.print(self.skipped_table())
        console.print(_LEGEND, highlight=False, markup=False)
        console.print(self.summary(), highlight=False, markup=False)

    def text(self) -> str:
        """The same report as plain text (for a pipe, a log file or a terminal without rich)."""
        lines = [f"torchwise tune {self.task} on {self.device}", *_plain_table(self.rows(), _COLUMNS)]
        if self.skipped:
            skipped = [{"knob": s.knob, "setting": s.setting, "why": s.reason} for s in self.skipped]
            lines += ["", "not measured", *_plain_table(skipped, ("knob", "setting", "why"))]
        return "\n".join([*lines, "", _LEGEND, self.summary()])

    def __str__(self) -> str:
        return self.text()

    def plot(self, path: str | Path) -> Path:
        """Bar chart of the speed-ups (PNG), one panel per way of measuring; needs matplotlib
        (``pip install 'torchwise[viz]'``)."""
        from torchwise.tune.plot import draw

        self.plot_path = draw(self, Path(path))
        return self.plot_path


CHOSEN = "chosen"
_COLUMNS = ("#", "setting", "measured", "samples/s", "speed-up", "noise", "verdict")
_RIGHT = {"#", "samples/s", "speed-up", "noise"}
_LEGEND = ("measured: 'step' = the training step alone on batches in memory; 'loader' = end to end through the "
           "DataLoader. speed-up: against the default of the same row kind. A setting is kept only when it beats "
           "the best so far by more than the noise and the minimum gain, with the loss within tolerance of fp32.")


def verdict(t: Trial, in_final: bool = True) -> str:
    """What became of a measured trial, with the reason when it was not kept."""
    if t.chosen:
        return CHOSEN
    if t.status == FASTER and not in_final:
        return "faster at its stage, but not in the final settings (the summary says what was chosen)"
    if t.status == FASTER:
        return "faster: kept, later settings build on it"
    if t.status == NOT_FASTER:
        return f"not kept: {t.detail}" if t.detail else "not kept: not faster than the best so far"
    if t.status == REJECTED:
        return f"rejected: {t.detail}"
    if t.status == FITS:
        return "fits in memory (batch-size probe)"
    if t.status == BASELINE:
        return "reference (default)"
    return t.status


def _plain_table(rows: list[dict[str, str]], columns: tuple[str, ...]) -> list[str]:
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) if rows else len(c) for c in columns}
    def line(cells: dict[str, str]) -> str:
        return "  ".join(cells[c].rjust(widths[c]) if c in _RIGHT else cells[c].ljust(widths[c]) for c in columns).rstrip()
    return [line({c: c for c in columns}), *(line(r) for r in rows)]


def make_meta(search: SearchResult, *, device: str, task: str) -> dict[str, Any]:
    import torch

    from torchwise import __version__

    return {
        "task": task,
        "device": device,
        "torch": torch.__version__,
        "torchwise": __version__,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "speedup": round(search.speedup, 4),
        "speedup_pairs": search.pairs,
        "basis": search.basis,
        "default_samples_per_s": round(search.default_samples_per_s, 3),
        "tuned_samples_per_s": round(search.tuned_samples_per_s, 3),
        "budget_s": search.budget_s,
        "elapsed_s": round(search.elapsed_s, 3),
    }
