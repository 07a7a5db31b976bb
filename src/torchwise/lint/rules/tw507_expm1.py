"""TW507: ``torch.exp(x) - 1`` instead of ``torch.expm1(x)``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


class Expm1(Rule):
    code = "TW507"
    name = "exp-minus-one"
    triggers = ("exp",)
    doc = """\
What it flags
  `torch.exp(x) - 1` with a literal 1.

Why it matters
  For small `x`, `exp(x)` is close to 1 and the subtraction cancels almost all significant
  digits, so the result is noisy or 0. `torch.expm1` computes `exp(x) - 1` accurately.

Example
  y = torch.exp(x) - 1                                 # TW507

Fix
  `torch.expm1(x)` (also `torch.special.expm1`).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.BinOp, ()):
            if node.op.__class__ is not ast.Sub or node.left.__class__ is not ast.Call:
                continue
            right = node.right
            if not (right.__class__ is ast.Constant and type(right.value) in (int, float) and right.value == 1):
                continue
            if ctx.qualname(node.left.func) == "torch.exp":
                yield ctx.finding(self.code, node, "torch.exp(x) - 1 loses precision for small x; use torch.expm1(x)",
                                  suggestion="torch.expm1(x)")


RULE = Expm1()
