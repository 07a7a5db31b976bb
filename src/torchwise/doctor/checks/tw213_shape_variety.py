"""Input shapes that vary from step to step while ``cudnn.benchmark`` is on (CUDA).

What: with ``torch.backends.cudnn.benchmark = True`` (or ``cudnn_benchmark=True`` given to the
doctor) and convolutions or recurrent layers in the model, the shapes of the batches seen in the
steps are compared, and a few dataset samples are read: sizes that vary beyond the batch
dimension (or three or more distinct batch shapes) are reported. A smaller last batch alone is
not a problem and is not reported.
Why: benchmark mode times every candidate kernel for each new input shape and caches the
winner; with a new shape every step it benchmarks every step, which is slower than not
benchmarking at all.
Example: variable-length sentences padded per batch, or random-resolution image crops, with
``cudnn.benchmark = True`` set at the top of the script.
Fix: turn ``cudnn.benchmark`` off for such data, or bucket/pad inputs to a few fixed sizes.
"""

from __future__ import annotations

from torch import nn

from torchwise.doctor.checks.tw117_variable_length import varying_fields
from torchwise.doctor.checks import for_device_hint
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW213",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)
TUNED = (nn.modules.conv._ConvNd, nn.RNNBase)


def check(ctx) -> list[Finding] | Skipped:
    if ctx.target_device_type != "cuda":
        hint = for_device_hint(ctx, "a GPU run")
        return Skipped(CODES, "cudnn.benchmark acts on CUDA only " + hint)
    if not ctx.cudnn_benchmark:
        return []
    if not any(isinstance(c.module, TUNED) for c in ctx.module_calls):
        return []
    shapes = [s.input_shapes for s in ctx.steps]
    distinct = list(dict.fromkeys(shapes))
    beyond_batch = len({tuple(sh[1:] for sh in s) for s in distinct}) > 1
    varying = {p: v for p, v in varying_fields(ctx).items()} if not ctx.batch_given and ctx.loader is not None else {}
    if not (beyond_batch or len(distinct) >= 3 or varying):
        return []
    return [Finding(
        "TW213", "warning",
        f"cudnn.benchmark is on but input shapes vary: {len(distinct)} distinct batch shape(s) in {len(shapes)} step(s)"
        + (f"; sample sizes vary in {', '.join(varying)}" if varying else ""),
        "torch.backends.cudnn.benchmark",
        {"distinct_batch_shapes": [[list(t) for t in s] for s in distinct[:6]], "steps": len(shapes), "varying_sample_fields": list(varying)},
        "set torch.backends.cudnn.benchmark = False for this data, or pad/bucket inputs to a few fixed shapes",
    )]
