"""Small models and data for the doctor tests (tiny, CPU, a few milliseconds a step)."""

from __future__ import annotations

import torch
from torch import nn


def mlp(inp: int = 16, hidden: int = 32, out: int = 4) -> nn.Module:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, out))


def class_batch(n: int = 16, inp: int = 16, classes: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, inp, generator=g), torch.randint(0, classes, (n,), generator=g)



def doctored(loop, steps: int = 6, full: bool = False):
    """Run ``loop()`` in this process with the hooks of ``doctor -- python train.py`` attached
    (no child process); the report of the script-mode checks, and the hooks' state."""
    import argparse

    from torchwise.doctor.script import StopScript, _Attached, _check

    attached = _Attached(steps, None, full)
    attached.attach()
    try:
        loop()
    except StopScript:
        pass
    finally:
        attached.close()
    return _check("inline", attached, None, argparse.Namespace(steps=steps, full=full)), attached


def codes(report) -> set[str]:
    return {f.code for f in report.findings}
