"""The scale of each layer at the first training step (the evidence of TW142, bad initialisation).

On the first forward pass with autograd on, for every Linear and convolution layer: its fan-in,
the standard deviation of its weight, the RMS of its bias, its input and its output (device
values, read once). A layer whose weights are several times wider than the usual inits for its fan-in
(kaiming: ``sqrt(2 / fan_in)``; PyTorch's default: ``1 / sqrt(3 fan_in)``) multiplies the scale of
everything after it; the model's output then starts far too large and the first loss far above
chance.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

__all__ = ["InitScale", "LAYERS"]

LAYERS = (nn.Linear, nn.modules.conv._ConvNd)


class InitScale:
    def __init__(self, limit: int = 200) -> None:
        self.limit = limit
        self._pending: list[tuple[str, str, int, torch.Tensor]] = []
        self._seen: set[int] = set()
        self.layers: list[dict[str, Any]] = []  # in forward order

    def layer(self, name: str, module: nn.Module, args: tuple, output: Any) -> None:
        if id(module) in self._seen or len(self._pending) >= self.limit or not isinstance(output, torch.Tensor):
            return
        w = getattr(module, "weight", None)
        x = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if not isinstance(w, torch.Tensor) or w.dim() < 2 or x is None or not x.is_floating_point() or w.device.type == "meta":
            return
        self._seen.add(id(module))
        fan_in = int(w.shape[1] * math.prod(w.shape[2:]))
        b = getattr(module, "bias", None)
        with torch.no_grad():
            bias = _rms(b) if isinstance(b, torch.Tensor) and b.numel() else torch.zeros((), device=w.device)
            values = torch.stack([w.detach().float().std(), _rms(x), _rms(output), bias.to(w.device)])
        self._pending.append((name, type(module).__name__, fan_in, values))

    def read(self) -> None:
        if not self._pending:
            return
        try:
            rows = torch.stack([v.to(self._pending[0][3].device) for *_, v in self._pending]).cpu().tolist()
        except RuntimeError:
            rows = [v.cpu().tolist() for *_, v in self._pending]
        for (name, kind, fan_in, _), (std, rms_in, rms_out, bias) in zip(self._pending, rows):
            kaiming = math.sqrt(2.0 / max(1, fan_in))
            self.layers.append({"layer": name, "kind": kind, "fan_in": fan_in, "weight_std": std,
                                "std_over_kaiming": std / kaiming, "input_rms": rms_in, "output_rms": rms_out, "bias_rms": bias})
        self._pending = []


def _rms(t: torch.Tensor) -> torch.Tensor:
    return t.detach().float().pow(2).mean().sqrt()
