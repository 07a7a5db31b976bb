"""Layer widths, channels and batch size that are not multiples of 8 in fp16/bf16 on a GPU.

What: when training runs in half precision (``bf16-mixed``/``16-mixed`` or half parameters) on a
CUDA GPU, the executed Linear, convolution and Embedding layers and the batch size are checked:
feature/channel counts and batch sizes that are not multiples of 8 are listed (a convolution's
input channels of 4 or fewer, i.e. the raw image, are left out). The logic runs on any machine
with ``for_device="cuda"``.
Why: tensor cores work on tiles of 8 half-precision values (64 is better still on newer GPUs);
an odd size is padded inside the kernel or falls back to slower kernels, so a layer of width 1000
can be slower than one of 1024.
Example: ``nn.Linear(768, 1001)`` or ``batch_size=100`` under ``torch.autocast("cuda", torch.float16)``.
Fix: round the listed widths and the batch size up to a multiple of 8 (pad the vocabulary or
class count; ``torchwise tune`` picks a batch size that is a multiple of 8).
"""

from __future__ import annotations

from torch import nn

from torchwise.doctor.checks import listing
from torchwise.doctor.checks import for_device_hint
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW210",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def odd_sizes(ctx) -> list[tuple[str, str, int]]:
    """(module name, which size, value) for executed layers whose size is not a multiple of 8."""
    out: list[tuple[str, str, int]] = []
    seen = set()
    for call in ctx.module_calls:
        m, name = call.module, call.name
        if name in seen:
            continue
        seen.add(name)
        sizes: list[tuple[str, int]] = []
        if isinstance(m, nn.Linear):
            sizes = [("in_features", m.in_features), ("out_features", m.out_features)]
        elif isinstance(m, nn.modules.conv._ConvNd):
            sizes = [("out_channels", m.out_channels)] + ([("in_channels", m.in_channels)] if m.in_channels > 4 else [])
        elif isinstance(m, nn.Embedding):
            sizes = [("num_embeddings", m.num_embeddings), ("embedding_dim", m.embedding_dim)]
        out += [(name, what, v) for what, v in sizes if v % 8]
    return out


def check(ctx) -> list[Finding] | Skipped:
    if ctx.target_device_type != "cuda":
        hint = for_device_hint(ctx, "one")
        return Skipped(CODES, "tensor-core shapes matter on CUDA GPUs " + hint)
    if not ctx.half_precision:
        return Skipped(CODES, f"training runs in fp32 (precision {ctx.precision}); tensor cores need fp16/bf16")
    odd = odd_sizes(ctx)
    batch = ctx.steps[0].batch_size if ctx.steps else 0
    if batch and batch % 8:
        odd.append(("batch", "batch_size", batch))
    if not odd:
        return []
    return [Finding(
        "TW210", "hint",
        f"{len(odd)} size(s) are not multiples of 8 in {ctx.precision} training: " + listing(f"{n}.{w}={v}" for n, w, v in odd),
        listing(sorted({n for n, _, _ in odd})),
        {"sizes": [{"module": n, "size": w, "value": v} for n, w, v in odd], "precision": ctx.precision},
        "round these widths and the batch size up to multiples of 8 (64 on recent GPUs)",
    )]
