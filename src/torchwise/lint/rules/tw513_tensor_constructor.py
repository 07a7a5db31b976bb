"""TW513: the legacy ``torch.Tensor(...)`` constructor."""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


class TensorConstructor(Rule):
    code = "TW513"
    name = "legacy-tensor-constructor"
    triggers = ("Tensor(",)
    doc = """\
What it flags
  A call of `torch.Tensor(...)` with arguments (the class itself, in annotations, `isinstance`
  or as a base class, is fine).

Why it matters
  `torch.Tensor` guesses what its arguments mean: `torch.Tensor(3, 4)` is an uninitialised
  3x4 tensor full of leftover memory, `torch.Tensor([3, 4])` a two-element vector, and either
  way the dtype is the global default float type rather than that of the data. Uninitialised
  values that slip into a computation give irreproducible results.

Example
  w = torch.Tensor(out_features, in_features)          # TW513

Fix
  `torch.empty(out, in)` (then initialise it), `torch.zeros(...)`, or `torch.tensor(data)` for
  values (which infers the dtype from the data; pass `dtype=torch.float32` to keep floats).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to("torch.Tensor"):
            if not call.args and not call.keywords:
                continue
            yield ctx.finding(self.code, call, "torch.Tensor(...) is the legacy constructor: sizes give uninitialised memory, data the default dtype",
                              suggestion="use torch.empty/zeros(sizes) or torch.tensor(data, dtype=...)", end_node=call.func)


RULE = TensorConstructor()
