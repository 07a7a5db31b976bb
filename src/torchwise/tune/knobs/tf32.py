"""TF32 matrix multiplies on NVIDIA GPUs (``torch.set_float32_matmul_precision("high")``).

What: let fp32 matrix multiplies run on tensor cores in TF32 (10-bit mantissa inputs, fp32
accumulation) on Ampere and newer GPUs.
Why: PyTorch keeps fp32 matmuls in full precision by default ("highest"); TF32 is several times
faster for the fp32 parts of a model, with a precision loss most training does not notice.
It is a GPU tensor-core format: on a CPU, or a GPU older than compute capability 8.0, it does
nothing.
Example: a transformer trained in fp32 on an A100 against the same run with TF32 on.
Fix: ``torch.set_float32_matmul_precision("high")`` (tune.json ``"matmul_precision"``, applied by
``TunedConfig.apply_process_settings``); kept only if the loss stays within tolerance.
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW211",)
NAME = "tf32"
MODE = "step"
NUMERICS = True


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    if ctx.device_type != "cuda":
        return Plan(skipped=[("matmul_precision=high", f"TF32 is a tensor-core format of NVIDIA GPUs; running on {ctx.device_type}")])
    cap = ctx.cuda_capability
    if cap is None or tuple(cap) < (8, 0):
        have = "unknown" if cap is None else f"{cap[0]}.{cap[1]}"
        return Plan(skipped=[("matmul_precision=high", f"TF32 needs compute capability 8.0 or newer; this GPU has {have}")])
    if config.get("matmul_precision") == "high":
        return Plan()
    return Plan(candidates=[{"matmul_precision": "high"}])


PLANS = (plan,)
