"""TW213: ``cudnn.benchmark = True`` where input shapes evidently vary from batch to batch."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.backends import cudnn_flag_assignments

_VARYING = (
    "torch.nn.utils.rnn.pad_sequence",
    "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pack_sequence",
)



_FIXED_SIZE = ("Resize(", "CenterCrop(", "RandomResizedCrop(", "RandomCrop(", ".resize(", "interpolate(", "FiveCrop(", "TenCrop(")


def _images_of_own_size(ctx: Context) -> ast.Call | None:
    """The aspect-preserving resize (``img.thumbnail((imsize, imsize))``) in a dataset's
    ``__getitem__`` of a file whose loaders take one image per batch (``batch_size=1``) and that
    resizes or crops to no fixed size: every image reaches the network in a shape of its own."""
    src = ctx.source
    if ".thumbnail(" not in src or "batch_size=1" not in src.replace(" ", "") or any(t in src for t in _FIXED_SIZE):
        return None
    loaders = ctx.calls_to("torch.utils.data.DataLoader")
    if not loaders or not all(_one_per_batch(c) for c in loaders):
        return None
    return next((c for c in ctx.calls_named("thumbnail") if (getattr(ctx.function_of(c), "name", "") == "__getitem__")), None)


def _one_per_batch(call: ast.Call) -> bool:
    kw = keyword(call, "batch_size")
    return kw is not None and kw.value.__class__ is ast.Constant and kw.value.value == 1


class BenchmarkWithVaryingShapes(Rule):
    code = "TW213"
    per_call = True
    name = "cudnn-benchmark-varying-shapes"
    triggers = ("benchmark",)
    doc = """\
What it flags
  `torch.backends.cudnn.benchmark = True` in a file that batches variable-length sequences
  (it pads or packs them per batch with `pad_sequence`, `pack_padded_sequence` or
  `pack_sequence`), so input shapes change from batch to batch; or in a file whose dataset
  keeps each image's own size (`img.thumbnail((imsize, imsize))` in `__getitem__`, no fixed
  `Resize`/crop anywhere) and whose loaders take one image per batch (`batch_size=1`): an image
  retrieval evaluation where every image has a shape of its own.

Why it matters
  With benchmark mode, cuDNN times several algorithms the first time it sees a new input
  shape and caches the winner. That pays off when shapes are fixed. When every batch has a
  new shape, each one triggers a new round of timing runs (and their memory), which can make
  training slower than without it.

Example
  from torch.nn.utils.rnn import pad_sequence
  torch.backends.cudnn.benchmark = True               # TW213
  batch = pad_sequence(samples, batch_first=True)     # length differs per batch

Fix
  Leave `cudnn.benchmark` off for variable shapes, or bucket/pad sequences to a few fixed
  lengths so only a handful of shapes ever occur. `torchwise tune` measures whether it helps.

Lint and the doctor
  Lint sees `cudnn.benchmark = True` in a file that pads or packs variable-length batches. The
  doctor compares the shapes of the batches of real steps (and a few dataset samples) with
  benchmark mode on.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        sets = cudnn_flag_assignments(ctx, "benchmark")
        if not sets:
            return
        varying = ctx.calls_to(*_VARYING)
        if varying:
            first = varying[0]
            for node in sets:
                yield ctx.finding(
                    self.code, node,
                    f"cudnn.benchmark re-tunes for every new input shape, and this file pads batches to varying lengths (line {first.lineno})",
                    suggestion="leave cudnn.benchmark off or bucket the sequence lengths",
                )
            return
        own_size = _images_of_own_size(ctx)
        for node in sets if own_size is not None else ():
            yield ctx.finding(
                self.code, node,
                f"cudnn.benchmark re-tunes for every new input shape, and this file feeds images one at a time in their own "
                f"sizes (aspect-preserving thumbnail, line {own_size.lineno}, batch_size=1)",
                suggestion="leave cudnn.benchmark off for per-image shapes, or resize to a few fixed sizes",
            )


RULE = BenchmarkWithVaryingShapes()
