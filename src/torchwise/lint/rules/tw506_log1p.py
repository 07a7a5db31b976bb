"""TW506: ``torch.log(1 + x)`` instead of ``torch.log1p(x)``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


def _is_one(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and type(node.value) in (int, float) and node.value == 1


class Log1p(Rule):
    code = "TW506"
    name = "log-one-plus"
    triggers = ("log",)
    doc = """\
What it flags
  `torch.log(1 + x)` or `torch.log(x + 1)` with a literal 1.

Why it matters
  For small `x`, `1 + x` rounds away most of `x` before the logarithm is taken (in float32,
  `1 + 1e-8` is exactly 1), so the result loses its precision or becomes 0. `torch.log1p`
  computes the same value accurately.

Example
  y = torch.log(1 + x)                                 # TW506

Fix
  `torch.log1p(x)`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to("torch.log"):
            if len(call.args) != 1 or call.keywords:
                continue
            arg = call.args[0]
            if arg.__class__ is ast.BinOp and arg.op.__class__ is ast.Add and (_is_one(arg.left) or _is_one(arg.right)):
                yield ctx.finding(self.code, call, "torch.log(1 + x) loses precision for small x; use torch.log1p(x)",
                                  suggestion="torch.log1p(x)")


RULE = Log1p()
