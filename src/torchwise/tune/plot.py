"""The speed-up bar chart of ``torchwise tune --plot``: one panel per way of measuring.

Trials timed on the training step alone and trials timed end to end through the DataLoader have
different references (each panel's default is 1.00x), so they get separate axes. Each bar's
colour says what became of the setting, and the legend says what each colour means.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from torchwise.core.errors import UsageError
from torchwise.tune.search import BASELINE, FASTER, FITS, NOT_FASTER, REJECTED

if TYPE_CHECKING:
    from torchwise.tune.report import TuneResult
    from torchwise.tune.search import Trial

# what became of a trial -> (colour, legend text)
KINDS: dict[str, tuple[str, str]] = {
    "chosen": ("#2a9d55", "chosen (in tune.json)"),
    FASTER: ("#7fbf9a", "faster, kept; later settings build on it"),
    BASELINE: ("#555555", "default settings (the reference, 1.00x)"),
    NOT_FASTER: ("#c8c8c8", "not kept: not clearly faster than the best so far (reasons in the table)"),
    REJECTED: ("#c0392b", "rejected: the loss moved past the tolerance of fp32"),
    FITS: ("#9aa9c8", "batch-size probe (it fits in memory)"),
}
PANELS = (("step", "on the training step alone (batches already in memory)"),
          ("loader", "end to end through the DataLoader"))


def kind(t: Trial) -> str:
    return "chosen" if t.chosen else t.status if t.status in KINDS else NOT_FASTER


def draw(result: TuneResult, path: Path) -> Path:
    """Write the chart of ``result`` to ``path`` (PNG) and return the path."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        raise UsageError("the speed-up chart needs matplotlib: pip install 'torchwise[viz]'") from None
    panels = [(mode, text, [t for t in reversed(result.ranked()) if t.mode == mode]) for mode, text in PANELS]
    panels = [p for p in panels if p[2]]
    if not panels:
        raise UsageError("nothing was measured: no speed-ups to plot")
    sizes = [len(rows) for _, _, rows in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, max(3.0, 0.32 * sum(sizes) + 1.6 * len(panels) + 1.0)),
                             gridspec_kw={"height_ratios": [max(2, n) for n in sizes]}, squeeze=False)
    try:
        for ax, (mode, text, rows) in zip(axes[:, 0], panels):
            _panel(ax, rows, f"speed-up against the default, measured {text}")
        used = {kind(t) for _, _, rows in panels for t in rows}
        handles = [Patch(color=color, label=label) for k, (color, label) in KINDS.items() if k in used]
        fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=8, frameon=False)
        fig.suptitle(f"torchwise tune {result.task} on {result.device}: {result.speedup:.2f}x", fontsize=10)
        fig.tight_layout(rect=(0, 0.04 + 0.025 * math.ceil(len(handles) / 2), 1, 0.97))
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return path


def _panel(ax: object, rows: list[Trial], xlabel: str) -> None:
    values = [t.speedup for t in rows]
    ax.barh(range(len(rows)), values, color=[KINDS[kind(t)][0] for t in rows])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([t.label for t in rows], fontsize=8)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel(xlabel, fontsize=8)
    for y, v in enumerate(values):
        if v is not None and math.isfinite(v):
            ax.text(v, y, f" {v:.2f}x", va="center", fontsize=7)
    ax.set_xlim(0, max(v for v in values if v is not None and math.isfinite(v)) * 1.18)
