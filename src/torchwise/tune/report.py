"""The tuner's result: ranked table, JSON, tune.json and the speed-up bar chart."""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError
from torchwise.core.tuned import TunedConfig
from torchwise.tune.search import BASELINE, FASTER, FITS, REJECTED, SearchResult, Skip, Trial

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

    def table(self) -> Any:
        """The ranked trials as a ``rich`` Table."""
        from rich.table import Table

        t = Table(title=f"torchwise tune {self.task} on {self.device}", title_justify="left")
        t.add_column("#", justify="right")
        t.add_column("setting")
        t.add_column("measured")
        t.add_column("samples/s", justify="right")
        t.add_column("speed-up", justify="right")
        t.add_column("noise", justify="right")
        t.add_column("verdict")
        for i, tr in enumerate(self.ranked(), 1):
            m = tr.measurement
            verdict = "[bold green]chosen[/]" if tr.chosen else _status_text(tr)
            t.add_row(
                str(i),
                tr.label,
                tr.mode,
                f"{tr.samples_per_s:,.1f}",
                f"{tr.speedup:.2f}x",
                f"±{100 * m.noise / 2:.0f}%",
                verdict,
            )
        for tr in self.trials:
            if tr.measurement is None:
                t.add_row("-", tr.label, tr.mode, "-", "-", "-", f"[red]{tr.status}[/]: {_escape(tr.detail)}")
        return t

    def skipped_table(self) -> Any:
        from rich.table import Table

        t = Table(title="not measured", title_justify="left")
        t.add_column("knob")
        t.add_column("setting")
        t.add_column("why")
        for s in self.skipped:
            t.add_row(s.knob, s.setting, _escape(s.reason))
        return t

    def print(self, console: Any = None) -> None:
        """Print the ranked table, what was skipped and the summary line."""
        from rich.console import Console

        console = console or Console()
        console.print(self.table())
        if self.skipped:
            console.print(self.skipped_table())
        console.print(_escape(self.summary()))

    def __str__(self) -> str:
        lines = [self.summary()]
        for i, tr in enumerate(self.ranked(), 1):
            mark = "chosen" if tr.chosen else tr.status
            lines.append(f"{i:>3}. {tr.label:<45} {tr.mode:<6} {tr.samples_per_s:>12,.1f}/s {tr.speedup:>6.2f}x  {mark}")
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:
        """Bar chart of the speed-ups (PNG); needs matplotlib (``pip install 'torchwise[plot]'``)."""
        try:
            import matplotlib

            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError:
            raise UsageError("the speed-up chart needs matplotlib: pip install 'torchwise[plot]'") from None
        rows = list(reversed(self.ranked()))
        if not rows:
            raise UsageError("nothing was measured: no speed-ups to plot")
        colors = {"chosen": "#2a9d55", FASTER: "#4a7fc1", BASELINE: "#888888", REJECTED: "#c0392b", FITS: "#9aa9c8"}
        labels = [f"{t.label} [{t.mode}]" for t in rows]
        values = [t.speedup for t in rows]
        color = [colors["chosen"] if t.chosen else colors.get(t.status, "#bbbbbb") for t in rows]
        height = max(2.5, 0.35 * len(rows) + 1.2)
        fig, ax = plt.subplots(figsize=(9, height))
        try:
            ax.barh(range(len(rows)), values, color=color)
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels(labels, fontsize=8)
            ax.axvline(1.0, color="black", linewidth=0.8)
            ax.set_xlabel("speed-up against the default configuration (samples/s)")
            ax.set_title(f"torchwise tune {self.task} on {self.device}: {self.speedup:.2f}x", fontsize=10)
            for y, v in enumerate(values):
                if v is not None and math.isfinite(v):
                    ax.text(v, y, f" {v:.2f}x", va="center", fontsize=7)
            fig.tight_layout()
            path = Path(path)
            fig.savefig(path, dpi=120)
        finally:
            plt.close(fig)
        self.plot_path = path
        return path


def _status_text(t: Trial) -> str:
    if t.status == REJECTED:
        return f"[red]{t.status}[/]: {_escape(t.detail)}"
    return t.status


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


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
