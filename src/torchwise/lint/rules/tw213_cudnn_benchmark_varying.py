"""TW213: ``cudnn.benchmark = True`` where input shapes evidently vary from batch to batch."""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.backends import cudnn_flag_assignments

_VARYING = (
    "torch.nn.utils.rnn.pad_sequence",
    "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pack_sequence",
)



class BenchmarkWithVaryingShapes(Rule):
    code = "TW213"
    name = "cudnn-benchmark-varying-shapes"
    triggers = ("benchmark",)
    doc = """\
What it flags
  `torch.backends.cudnn.benchmark = True` in a file that batches variable-length sequences
  (it pads or packs them per batch with `pad_sequence`, `pack_padded_sequence` or
  `pack_sequence`), so input shapes change from batch to batch.

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
        if not varying:
            return
        first = varying[0]
        for node in sets:
            yield ctx.finding(
                self.code, node,
                f"cudnn.benchmark re-tunes for every new input shape, and this file pads batches to varying lengths (line {first.lineno})",
                suggestion="leave cudnn.benchmark off or bucket the sequence lengths",
            )


RULE = BenchmarkWithVaryingShapes()
