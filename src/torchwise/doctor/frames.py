"""Small shared helpers of the doctor's recording: the user's file:line, host reads, medians."""

from __future__ import annotations

import math
import os
import re
import sys
from typing import Any

import torch

_SKIP_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch,) if m.__file__)
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_frame(inside_own: bool = False) -> str:
    """``file.py:LINE`` of the innermost caller outside torch and torchwise ("" if none).

    ``inside_own``: only a caller *inside* torchwise's own call (the model's forward run by the
    doctor's steps), never the code that called the doctor.
    """
    frame = sys._getframe(1)
    left_own = False
    while frame is not None:
        path = frame.f_code.co_filename
        own = path.startswith(_OWN_DIR)
        if own and left_own and inside_own:
            return ""
        left_own = left_own or not own
        if not own and not path.startswith(_SKIP_DIRS) and not path.startswith("<"):
            rel = os.path.relpath(path)
            return f"{path if rel.startswith('..') else rel}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def user_frame_of(tb: Any) -> str:
    """``file.py:LINE`` of the innermost traceback entry outside torch and torchwise ("" if none)."""
    found = ""
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if not path.startswith(_SKIP_DIRS + (_OWN_DIR,)) and not path.startswith("<") and "runpy" not in path:
            rel = os.path.relpath(path)
            found = f"{path if rel.startswith('..') else rel}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found



def host_floats(values: list[torch.Tensor]) -> list[float]:
    """0-d tensors to floats with one transfer per device (meta tensors give NaN)."""
    out = [math.nan] * len(values)
    by_device: dict[torch.device, list[int]] = {}
    for i, v in enumerate(values):
        if v.device.type != "meta":
            by_device.setdefault(v.device, []).append(i)
    for idx in by_device.values():
        for i, x in zip(idx, torch.stack([values[i] for i in idx]).cpu().tolist()):
            out[i] = float(x)
    return out


def median(values: list[float]) -> float:
    vals = sorted(v for v in values if math.isfinite(v))
    if not vals:
        return float("nan")
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])


def grad_norm_vector(params: list[torch.Tensor]) -> torch.Tensor | None:
    """The gradient norm of each of ``params`` stacked on their device (0 for a missing gradient);
    None when no parameter has a gradient or they sit on several devices."""
    grads = [p.grad for p in params]
    present = [g for g in grads if g is not None]
    if not present:
        return None
    device = present[0].device
    if any(g.device != device for g in present):
        return None
    norms = iter(torch._foreach_norm([(g.coalesce()._values() if g.is_sparse else g).float() for g in present]))
    zero = torch.zeros((), device=device)
    return torch.stack([next(norms) if g is not None else zero for g in grads])


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """``text`` without terminal colour codes (torch colours some of its messages)."""
    return ANSI.sub("", text)


__all__ = ["user_frame", "user_frame_of", "host_floats", "median", "grad_norm_vector", "plain"]
