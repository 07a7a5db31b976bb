"""A 4-D convolutional model that does not use the channels_last memory format (CUDA).

What: the recorded forward pass ran 2-D convolutions on 4-D inputs stored in the default
(NCHW, "channels first") layout. Reported as a hint when training targets a CUDA GPU (the steps'
device, or ``for_device="cuda"``); elsewhere the check is skipped.
Why: cuDNN's fastest convolution kernels (tensor cores, especially with fp16/bf16) work on NHWC;
given NCHW they transpose around every convolution. channels_last typically gives 10-30% for
CNNs under mixed precision; ``torchwise tune`` measures it on the real model.
Example: ``model = ResNet().cuda()`` trained on ``images.cuda()`` as they come from the loader.
Fix: ``model = model.to(memory_format=torch.channels_last)`` and
``x = x.to(device, memory_format=torch.channels_last)`` (or ``TunedConfig(channels_last=True)``).
"""

from __future__ import annotations

from torch import nn

from torchwise.doctor.checks import listing
from torchwise.doctor.checks import for_device_hint
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW212",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding] | Skipped:
    if ctx.target_device_type != "cuda":
        hint = for_device_hint(ctx, "one")
        return Skipped(CODES, "channels_last pays off on CUDA GPUs " + hint)
    convs = [c for c in ctx.module_calls if isinstance(c.module, nn.Conv2d) and c.in_channels_last is not None]
    if not convs:
        return []
    first = [c for c in convs if not c.in_channels_last]
    if not first:
        return []
    names = list(dict.fromkeys(c.name for c in first))
    return [Finding(
        "TW212", "hint",
        f"{len(names)} Conv2d layer(s) ran on channels-first (NCHW) input, e.g. {first[0].name} on {list(first[0].in_shapes[0])}",
        listing(names),
        {"conv2d_layers": len(names), "nchw_inputs": len(first), "example_input_shape": list(first[0].in_shapes[0]), "precision": ctx.precision},
        "model.to(memory_format=torch.channels_last) and inputs .to(memory_format=torch.channels_last); measure with `torchwise tune`",
    )]
