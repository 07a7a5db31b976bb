"""BatchNorm parameters and running statistics stored in half precision.

What: BatchNorm layers whose weight, bias or running mean/variance are float16 or bfloat16,
which is what ``model.half()`` (or ``.to(torch.bfloat16)``) does to a whole model.
Why: the running variance and the normalisation need more range and precision than fp16
offers (small variances underflow, large activations overflow, the running averages stop
moving at bf16 resolution); accuracy drops or the loss turns NaN. Autocast keeps BatchNorm in
fp32 automatically, which is why it is the recommended way to train in mixed precision.
Example: ``model = model.half(); loss = loss_fn(model(x.half()), y)``.
Fix: keep the parameters in fp32 and use ``torch.autocast(device, dtype=torch.bfloat16)`` (plus a
GradScaler for fp16), i.e. precision "bf16-mixed"/"16-mixed" in the Trainer.
"""

from __future__ import annotations

from torch import nn

from torchwise.doctor.checks import listing
from torchwise.doctor.probe import HALF_DTYPES
from torchwise.doctor.report import Finding

CODES = ("TW218",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding]:
    half = []
    for name, m in ctx.model.named_modules():
        if not isinstance(m, nn.modules.batchnorm._BatchNorm):
            continue
        tensors = [t for t in (m.weight, m.bias, m.running_mean, m.running_var) if t is not None]
        dtypes = sorted({str(t.dtype).replace("torch.", "") for t in tensors if t.dtype in HALF_DTYPES})
        if dtypes:
            half.append((name, dtypes))
    if not half:
        return []
    return [Finding(
        "TW218", "warning",
        f"{len(half)} BatchNorm layer(s) keep parameters/statistics in {'/'.join(sorted({d for _, ds in half for d in ds}))}",
        listing(n for n, _ in half),
        {"layers": [n for n, _ in half][:50], "dtypes": sorted({d for _, ds in half for d in ds}), "count": len(half)},
        "keep the model in fp32 and train with autocast (precision 'bf16-mixed' or '16-mixed') instead of model.half()",
    )]
