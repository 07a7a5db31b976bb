"""``torch.backends.cudnn.benchmark``: let cuDNN time its convolution algorithms.

What: with benchmark on, the first call for each input shape tries several cuDNN algorithms and
keeps the fastest for that shape.
Why: the default heuristic choice is often not the fastest kernel. The search costs time once per
shape, so it pays off when shapes stay fixed and hurts when they change every step.
Example: a CNN on fixed 224x224 crops gains a few to 20%; a model fed variable-length
sequences through conv layers re-benchmarks on every new shape.
Fix: ``Trainer(..., cudnn_benchmark=True)`` for fixed shapes (tune.json ``"cudnn_benchmark"``).
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW213",)
NAME = "cudnn_benchmark"
MODE = "step"
NUMERICS = True


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    if ctx.device_type != "cuda":
        return Plan(skipped=[("cudnn_benchmark", f"cuDNN runs on CUDA only; running on {ctx.device_type}")])
    if not ctx.has_conv:
        return Plan(skipped=[("cudnn_benchmark", "the model has no convolution: cuDNN has no algorithm to choose")])
    if ctx.shapes_vary:
        return Plan(skipped=[("cudnn_benchmark", "input shapes vary between batches: benchmarking would rerun on each new shape")])
    if config.get("cudnn_benchmark"):
        return Plan()
    return Plan(candidates=[{"cudnn_benchmark": True}])


PLANS = (plan,)
