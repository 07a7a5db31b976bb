"""TW507: ``torch.exp(x) - 1`` instead of ``torch.expm1(x)``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


_ROUNDING = frozenset({"round", "floor", "ceil", "trunc", "long", "int"})


def _rounded(ctx: Context, node: ast.AST) -> bool:
    """``torch.round(torch.exp(x) - 1)``, ``(torch.exp(x) - 1).long()``: the result is rounded to
    a whole number (durations in frames), so the digits expm1 would keep are thrown away."""
    parent = ctx.parent(node)
    if parent.__class__ is ast.Call and node in parent.args:
        func = parent.func
        name = func.attr if func.__class__ is ast.Attribute else getattr(func, "id", "")
        return name in _ROUNDING  # torch.round, np.round, round, int
    return parent.__class__ is ast.Attribute and parent.attr in _ROUNDING and ctx.parent(parent).__class__ is ast.Call


class Expm1(Rule):
    code = "TW507"
    per_call = True  # a loss of precision matters only where the code runs (R5)
    name = "exp-minus-one"
    triggers = ("exp",)
    doc = """\
What it flags
  `torch.exp(x) - 1` with a literal 1, also the tensor-method form `(beta * t).exp() - 1` in a
  file that imports torch (NumPy arrays have no `exp` method), and the negated form
  `1 - torch.exp(-x)` (`1. - t.exp()`), which `-torch.expm1(-x)` computes exactly, and
  `torch.exp(d) - d - 1` (the k3 KL estimator: the exp's own argument subtracted, `torch.expm1(d) - d`). Not flagged: a result rounded to a whole number right
  away (`torch.round(torch.exp(log_d) - 1)`, `(...).long()`), whose lost digits do not matter.

Why it matters
  For small `x`, `exp(x)` is close to 1 and the subtraction cancels almost all significant
  digits, so the result is noisy or 0. `torch.expm1` computes `exp(x) - 1` accurately.

Example
  y = torch.exp(x) - 1                                 # TW507

Fix
  `torch.expm1(x)` (also `torch.special.expm1`); `1 - torch.exp(x)` is `-torch.expm1(x)`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.BinOp, ()):
            if node.op.__class__ is not ast.Sub:
                continue
            if node.left.__class__ is ast.Call and _one(node.right):
                exp, message, better = node.left, "torch.exp(x) - 1 loses precision for small x; use torch.expm1(x)", "torch.expm1(x)"
            elif (exp := _exp_minus_own_argument(node)) is not None:
                message = "torch.exp(x) - x - 1 loses precision for small x; use torch.expm1(x) - x"
                better = "torch.expm1(x) - x"
            elif node.right.__class__ is ast.Call and _one(node.left):
                exp, message, better = node.right, "1 - torch.exp(x) loses precision for small x; use -torch.expm1(x)", "-torch.expm1(x)"
            else:
                continue
            func = exp.func
            q = ctx.qualname(func)
            method = q is None and func.__class__ is ast.Attribute and func.attr == "exp" and not exp.args \
                and not exp.keywords and any(v.split(".", 1)[0] == "torch" for v in ctx.imports.values())
            # (...).exp() - 1: the tensor method (NumPy arrays have none)
            if (q == "torch.exp" or method) and not _rounded(ctx, node):
                yield ctx.finding(self.code, node, message, suggestion=better)


def _exp_minus_own_argument(node: ast.BinOp) -> ast.Call | None:
    """``torch.exp(d) - d - 1`` (the k3 KL estimator, a Taylor remainder): the exp call, when the
    middle term is the exp's own argument written again."""
    left = node.left
    if not _one(node.right) or left.__class__ is not ast.BinOp or left.op.__class__ is not ast.Sub \
            or left.left.__class__ is not ast.Call:
        return None
    exp = left.left
    arg = exp.args[0] if len(exp.args) == 1 and not exp.keywords else \
        exp.func.value if not exp.args and exp.func.__class__ is ast.Attribute else None
    return exp if arg is not None and ast.dump(arg) == ast.dump(left.right) else None


def _one(node: ast.AST) -> bool:
    """A literal 1 (``1``, ``1.``, ``1.0``)."""
    return node.__class__ is ast.Constant and type(node.value) in (int, float) and node.value == 1


RULE = Expm1()
