"""``channels_last`` memory format for 4-D convolutional models.

What: store images and conv weights as N,H,W,C instead of N,C,H,W
(``model.to(memory_format=torch.channels_last)`` and the same for each input batch).
Why: cuDNN's tensor-core kernels and oneDNN want channels innermost; with NCHW they insert
transposes around every convolution. The gain is largest together with mixed precision.
It means nothing for a model without 2-D convolutions (an MLP, a transformer).
Example: a ResNet-50 in bf16 typically gains 10-30% on recent GPUs.
Fix: ``Trainer(..., channels_last=True)`` (tune.json ``"channels_last"``).
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW212",)
NAME = "channels_last"
MODE = "step"
NUMERICS = True


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    if not ctx.conv_4d:
        why = "the model has no 2-D convolution" if not ctx.has_conv else "the inputs are not 4-D images"
        return Plan(skipped=[("channels_last", f"{why}; channels_last applies to 4-D conv models")])
    if config.get("channels_last"):
        return Plan()
    return Plan(candidates=[{"channels_last": True}])


PLANS = (plan,)
