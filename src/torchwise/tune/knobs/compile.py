"""``torch.compile``: capture the model into graphs and generate fused kernels.

What: TorchDynamo traces the forward (and AOTAutograd the backward), Inductor fuses pointwise ops
into generated Triton (GPU) or C++ (CPU) kernels. It succeeds the old ``torch.jit.script`` fusion.
Why: eager PyTorch launches one kernel per op and writes every intermediate to memory; fusing
them cuts launches and memory traffic. Compilation costs seconds to minutes up front (excluded
from the timed steps, counted against the tuning budget) and some models do not compile.
Example: a small CNN's BatchNorm+ReLU chains fuse into single kernels.
Fix: ``Trainer(..., compile=True)`` (tune.json ``"compile"``); the Trainer falls back to eager
with a warning if compilation fails.
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW214",)
NAME = "compile"
MODE = "step"
NUMERICS = True


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    if ctx.compile_problem:
        return Plan(skipped=[("compile", ctx.compile_problem)])
    if config.get("compile"):
        return Plan()
    return Plan(candidates=[{"compile": True}])


PLANS = (plan,)
