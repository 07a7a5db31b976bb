"""TW508: ``torch.log(torch.sum(torch.exp(x), dim))`` instead of ``torch.logsumexp``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


class LogSumExp(Rule):
    code = "TW508"
    name = "log-sum-exp"
    triggers = ("exp",)
    doc = """\
What it flags
  `torch.log(torch.sum(torch.exp(x), dim))` written out, with a `dim` (logsumexp needs one).

Why it matters
  `exp` overflows to inf for inputs above about 88 in float32 (about 11 in float16) and
  underflows to 0 for very negative ones, so the written-out form returns inf or -inf where
  the true value is finite. `torch.logsumexp` subtracts the maximum first and stays exact.

Example
  lse = torch.log(torch.sum(torch.exp(logits), dim=1))     # TW508

Fix
  `torch.logsumexp(logits, dim=1)`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_to("torch.log"):
            if len(call.args) != 1 or call.args[0].__class__ is not ast.Call:
                continue
            inner = call.args[0]
            if ctx.qualname(inner.func) != "torch.sum" or not inner.args or inner.args[0].__class__ is not ast.Call:
                continue
            if ctx.qualname(inner.args[0].func) != "torch.exp":
                continue
            dim = argument(inner, "dim", 1)
            if dim is None or (dim.__class__ is ast.Constant and dim.value is None):
                continue
            yield ctx.finding(self.code, call, "log(sum(exp(x))) overflows for large x; use torch.logsumexp(x, dim)",
                              suggestion="torch.logsumexp(x, dim)")


RULE = LogSumExp()
