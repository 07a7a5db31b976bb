"""A convolution with a bias whose output goes straight into BatchNorm.

What: in the recorded forward pass, a BatchNorm layer received exactly the tensor a
convolution with ``bias=True`` had just returned (matched by tensor identity in the executed
order, not by layer names).
Why: in training BatchNorm subtracts the per-channel batch mean, which removes any constant per
channel, so the bias is cancelled: its gradient is zero, it costs memory, an extra add in every
forward and backward, and optimizer work for nothing.
Example: ``nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.ReLU())``.
Fix: ``nn.Conv2d(3, 64, 3, bias=False)`` before BatchNorm (BatchNorm's own shift plays the role).
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW209",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding] | Skipped:
    if not ctx.module_calls:
        return Skipped(CODES, "no layer of an nn.Module ran at the first step" if getattr(ctx, "script", False)
                       else "the recording step did not run")
    pairs = list(dict.fromkeys(ctx.conv_bn_pairs))
    if not pairs:
        return []
    modules = dict(ctx.model.named_modules())
    wasted = sum(modules[c].bias.numel() for c, _ in pairs if c in modules and modules[c].bias is not None)
    return [Finding(
        "TW209", "hint",
        f"{len(pairs)} convolution(s) with a bias feed BatchNorm directly; the bias ({wasted} values) is cancelled",
        listing(f"{c} -> {b}" for c, b in pairs),
        {"pairs": [list(p) for p in pairs], "wasted_bias_values": wasted},
        "create those convolutions with bias=False",
    )]
