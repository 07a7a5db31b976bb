"""A window's samples: read from the device at once, written to the log, summed up for the long-run checks."""

from __future__ import annotations

from typing import Any

from torchwise.watch.measure import per_layer, ratios_per_layer
from torchwise.watch.series import median


def write_samples(self: Any, w: Any) -> dict[str, Any]:
    """The window's samples read from the device at once, logged, and their aggregates."""
    import torch

    res = w.watch.result
    names = list(res.param_names)
    norms = iter(res.grad_norms)
    ratios = iter(self._update.read())
    losses: dict[int, dict[str, float]] = {}
    if self._losses:
        try:
            values = torch.stack([v for _, _, v in self._losses]).cpu().tolist()
        except RuntimeError:
            values = [float(v) for _, _, v in self._losses]
        for (sample, site, _), v in zip(self._losses, values):
            losses.setdefault(sample, {}).setdefault(site, v)  # the first backward of a site in the step
    per_site: dict[str, list[float]] = {}
    for row in self._rows:
        grads = per_layer(names, next(norms, [])) if row.pop("norms") else {}
        pairs = next(ratios, None) if row.pop("ratios") else None
        update = ratios_per_layer(names, pairs) if pairs else {}
        loss = losses.get(row["sample"], {})
        for site, v in loss.items():
            per_site.setdefault(site, []).append(v)
        self.log.sample(**{k: v for k, v in row.items() if k != "sample"}, loss=loss, grad_norm=grads, update_ratio=update)
        for extra in self.extras:
            extra.sample(row, loss, grads, update)
    agg = {
        "loss": {site: median(vals) for site, vals in per_site.items()},
        "wait": median(r["loader_wait"] for r in self._rows) if self._rows else None,
        "step_ms": median(r["step_ms"] for r in self._rows) if self._rows else None,
        "memory_mb": self._rows[-1]["memory_mb"] if self._rows else None,
        "lrs": self._rows[-1]["lr"] if self._rows else None,
    }
    self._rows, self._losses = [], []
    return agg


__all__ = ["write_samples"]
