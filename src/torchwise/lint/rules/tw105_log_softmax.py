"""TW105: the log of softmax/sigmoid probabilities, which turns into -inf and NaN."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.values import producing_call

_PROB_FUNCS = {
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax", "torch.special.softmax": "softmax",
    "torch.sigmoid": "sigmoid", "torch.nn.functional.sigmoid": "sigmoid", "torch.special.expit": "sigmoid",
}
_LOGS = {"torch.log", "torch.special.log", "torch.Tensor.log"}


def probability_of(ctx: Context, expr: ast.AST | None, use: ast.AST | None = None, depth: int = 4) -> str | None:
    """``"softmax"``/``"sigmoid"`` when ``expr`` evidently is such an output, else None."""
    expr = producing_call(ctx, expr, use, depth)
    if expr is None:
        return None
    func = expr.func
    q = ctx.qualname(func)
    if q is not None:
        return _PROB_FUNCS.get(q)
    if func.__class__ is ast.Attribute:
        if func.attr == "softmax" and (expr.args or any(k.arg == "dim" for k in expr.keywords)):
            return "softmax"
        if func.attr == "sigmoid" and not expr.args and not expr.keywords:
            return "sigmoid"
    built = ctx._call_target(func) if func.__class__ is ast.Call else ctx.constructed_from(func, expr)
    if built == "torch.nn.Softmax":
        return "softmax"
    if built == "torch.nn.Sigmoid":
        return "sigmoid"
    return None


class LogOfProbabilities(Rule):
    code = "TW105"
    name = "log-of-probabilities"
    triggers = ("log",)
    doc = """\
What it flags
  `torch.log(...)` or `.log()` applied directly to a softmax or sigmoid output
  (`torch.log(F.softmax(x, 1))`, `probs.log()` where `probs = x.softmax(1)`), with no epsilon or
  clamp in between.

Why it matters
  Softmax and sigmoid underflow to exactly 0 for strongly negative inputs. The log of 0 is
  -inf, the loss becomes inf or NaN, and one such value in a backward pass spreads NaN into
  every weight. The fused functions compute the same quantity without ever forming the tiny
  probability.

Example
  log_probs = torch.log(torch.softmax(logits, dim=-1))     # TW105

Fix
  `F.log_softmax(logits, dim=-1)`, or `F.logsigmoid(x)` for a sigmoid; for other probabilities
  clamp first: `torch.log(p.clamp_min(1e-12))`.

Lint and the doctor
  Lint finds `log(softmax(x))` and `log(sigmoid(x))` written out. The doctor, when a step's
  loss or gradients stop being finite, replays the step to name the first module whose output
  went bad and any `log` taken of zeros, whatever computed them.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named("log"):
            func = call.func
            q = ctx.qualname(func)
            if q is not None:
                if q not in _LOGS or not call.args:
                    continue
                arg = call.args[0]
            elif func.__class__ is ast.Attribute and not call.args and not call.keywords:
                arg = func.value
            else:
                continue
            kind = probability_of(ctx, arg, call)
            if kind is None:
                continue
            better = "F.log_softmax(x, dim=...)" if kind == "softmax" else "F.logsigmoid(x)"
            yield ctx.finding(
                self.code, call,
                f"log of {kind} probabilities gives -inf/NaN once the {kind} underflows to 0",
                suggestion=f"use {better}, or clamp the probabilities before the log",
            )


RULE = LogOfProbabilities()
