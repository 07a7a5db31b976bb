"""ReLU / sigmoid / tanh outputs seen by the watch: dead and saturated units (TW131, TW132)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from torchwise.doctor.frames import user_frame

__all__ = ["ActivationStats", "record_activation", "summarise"]


@dataclass
class ActivationStats:
    """One ReLU/sigmoid/tanh call site: module path, function, how often it ran, what it saw."""

    key: str
    func: str
    module: str
    line: str
    calls: int = 0
    units: int = 0
    alive: torch.Tensor | None = None  # relu: unit was > 0 at least once (device bool)
    saturated_sum: torch.Tensor | None = None  # sigmoid/tanh: sum of saturated shares (device)
    is_output: bool = False  # the model returns it (a classifier's final sigmoid): not a hidden unit
    is_module: bool = True  # called by an activation module (nn.ReLU ...), not functionally in a forward
    dead_units: int | None = None  # filled at read time
    saturated_share: float | None = None


def record_activation(watch: Any, func: str, out: torch.Tensor) -> None:
    """Note one activation output inside the module running now (``watch._stack[-1]``)."""
    if not out.is_floating_point() or out.dim() < 2 or not watch._stack:
        return
    owner = watch._stack[-1]
    k = watch._occurrence.get((id(owner), func), 0) + 1
    watch._occurrence[(id(owner), func)] = k
    module = watch._name(owner)
    key = f"{module}|{func}|{k}"
    st = watch._acts.get(key)
    if st is None:
        st = ActivationStats(key, func, module, user_frame(watch.inside_own), is_module=isinstance(owner, (nn.ReLU, nn.Sigmoid, nn.Tanh)))
        watch._acts[key] = st
    y = out.detach()
    st.calls += 1
    if func == "relu":
        unit_dim = y.dim() - 1 if y.dim() == 3 else 1
        alive = (y > 0).transpose(0, unit_dim).reshape(y.shape[unit_dim], -1).any(dim=1)
        if st.alive is None or st.alive.shape != alive.shape:
            st.alive = alive
        else:
            st.alive |= alive
        st.units = int(alive.shape[0])
    else:
        sat = (y.abs() > 0.99) if func == "tanh" else ((y < 0.01) | (y > 0.99))
        share = sat.float().mean()
        st.saturated_sum = share if st.saturated_sum is None else st.saturated_sum + share
        st.units = int(y.shape[-1])
    watch._pass_outputs[id(out)] = (out, st)


def summarise(acts: list[ActivationStats]) -> list[ActivationStats]:
    """Read the device summaries to the host (dead units, saturated share) and drop them."""
    for st in acts:
        if st.alive is not None:
            st.dead_units = int((~st.alive).sum())
        if st.saturated_sum is not None and st.calls:
            st.saturated_share = float(st.saturated_sum) / st.calls
        st.alive = None
        st.saturated_sum = None
    return acts
