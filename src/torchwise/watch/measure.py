"""What a sampled step measures besides the doctor's recorder: update/weight ratios per layer,
learning rates, memory, and the per-layer view of the gradient norms.

Device values stay on the device until the window is read (one transfer per window). The update
of a step is measured on a slice of each parameter (its first ``SLICE`` elements, copied before
the optimizer step and compared after), so the cost and the memory stay small for any model;
over thousands of elements the slice's ratio ``||w_after - w_before|| / ||w_before||`` is the
layer's to within a few percent (healthy training sits near 1e-3 per step).
"""

from __future__ import annotations

import math
import os
from typing import Any

SLICE = 4096  # elements of each parameter compared before/after a sampled optimizer step


def layer_of(param_name: str) -> str:
    """``encoder.0.weight`` -> ``encoder.0`` (the module that owns the parameter)."""
    return param_name.rsplit(".", 1)[0] if "." in param_name else param_name


class UpdateRatio:
    """Before/after slices of the watched parameters around one optimizer step."""

    def __init__(self) -> None:
        self._before: list[Any] | None = None
        self._params: list[Any] = []
        self.pending: list[Any] = []  # per sample: stacked (delta^2, weight^2) per parameter, on the device

    def before(self, params: list[Any]) -> None:
        import torch

        if not params:
            return
        device = params[0].device
        if any(p.device != device for p in params):  # model parallel: not measured (names would not line up)
            return
        self._params = list(params)
        with torch.no_grad():
            self._before = [p.detach().reshape(-1)[:SLICE].clone() for p in self._params]

    def after(self) -> None:
        import torch

        if self._before is None:
            return
        with torch.no_grad():
            now = [p.detach().reshape(-1)[:SLICE] for p in self._params]
            try:
                delta = torch._foreach_norm(torch._foreach_sub([n.float() for n in now], [b.float() for b in self._before]))
                weight = torch._foreach_norm([b.float() for b in self._before])
                self.pending.append(torch.stack([torch.stack(delta), torch.stack(weight)]).pow(2))
            except RuntimeError:  # a parameter replaced in place with another shape: skip this sample
                pass
        self._before = None

    def read(self) -> list[list[tuple[float, float]]]:
        """Per sample, per parameter (delta^2, weight^2), on the host."""
        import torch

        if not self.pending:
            return []
        try:
            rows = torch.stack(self.pending).cpu().tolist()
        except RuntimeError:  # different parameter counts between samples
            rows = [t.cpu().tolist() for t in self.pending]
        self.pending = []
        return [list(zip(r[0], r[1])) for r in rows]


def per_layer(names: list[str], values: list[float], how: str = "norm") -> dict[str, float]:
    """Per-parameter values grouped by owning module: ``norm`` combines norms (sqrt of the sum of squares)."""
    acc: dict[str, float] = {}
    for name, v in zip(names, values):
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            acc[layer_of(name)] = math.nan
            continue
        key = layer_of(name)
        acc[key] = acc.get(key, 0.0) + (v * v if how == "norm" else v)
    return {k: (math.sqrt(v) if how == "norm" and math.isfinite(v) else v) for k, v in acc.items()}


def ratios_per_layer(names: list[str], pairs: list[tuple[float, float]]) -> dict[str, float]:
    """Update/weight ratio per layer from per-parameter (delta^2, weight^2) of one step."""
    delta: dict[str, float] = {}
    weight: dict[str, float] = {}
    for name, (d, w) in zip(names, pairs):
        key = layer_of(name)
        delta[key] = delta.get(key, 0.0) + d
        weight[key] = weight.get(key, 0.0) + w
    return {k: math.sqrt(delta[k] / weight[k]) if weight[k] > 0 else math.nan for k in delta}


def learning_rates(optimizers: list[Any]) -> list[float]:
    return [float(g.get("lr", math.nan)) for opt in optimizers for g in getattr(opt, "param_groups", [])][:16]


def memory_mb(device: Any = None) -> float:
    """Memory held for training: CUDA memory allocated on the device, else the process's RSS."""
    try:
        import torch

        if device is not None and getattr(device, "type", "") == "cuda":
            return torch.cuda.memory_allocated(device) / 2**20
    except Exception:
        pass
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return math.nan


__all__ = ["UpdateRatio", "per_layer", "ratios_per_layer", "learning_rates", "memory_mb", "layer_of", "SLICE"]
