"""Mixed precision: fp32, ``bf16-mixed`` or ``16-mixed`` (autocast, GradScaler for fp16).

What: run the forward pass under ``torch.autocast`` so matrix multiplies and convolutions use a
16-bit type while the weights and the optimizer stay in fp32.
Why: tensor cores run 16-bit maths several times faster than fp32 and halve activation memory;
bf16 keeps fp32's range (no loss scaling), fp16 needs a GradScaler against gradient underflow.
On CPUs without bf16 instructions autocast can be slower, which is why it is measured.
Example: a ResNet on an A100 in fp32 against ``precision="bf16-mixed"``.
Fix: ``Trainer(..., precision="bf16-mixed")`` (tune.json ``"precision"``); the tuner keeps a
precision only if the loss after a few steps stays within tolerance of the fp32 run.
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW211",)
NAME = "precision"
MODE = "step"
NUMERICS = True


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    out = Plan()
    if ctx.device_type not in ("cpu", "cuda"):
        out.skipped.append(("precision", f"mixed precision is measured on cpu and cuda only, not {ctx.device_type}"))
        return out
    if ctx.bf16:
        out.candidates.append({"precision": "bf16-mixed"})
    else:
        why = "this CPU has no bf16 instructions (AVX512-BF16/AMX): autocast would only emulate it" if ctx.device_type == "cpu" else f"{ctx.device_name} does not support bf16"
        out.skipped.append(("precision=bf16-mixed", why))
    if ctx.device_type == "cuda":
        out.candidates.append({"precision": "16-mixed"})
    else:
        out.skipped.append(("precision=16-mixed", "fp16 with a GradScaler is a GPU setting; running on cpu"))
    out.candidates = [c for c in out.candidates if c["precision"] != config.get("precision")]
    return out


PLANS = (plan,)
