"""TW508: ``torch.log(torch.sum(torch.exp(x), dim))`` instead of ``torch.logsumexp``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule


_MAXIMA = frozenset({"max", "amax"})


def _shifted_by_max(ctx: Context, exp: ast.Call) -> bool:
    """``torch.exp(x - m)`` where ``m`` is the maximum of ``x`` (``torch.max(x, dim)``,
    ``x.max(dim, keepdim=True)[0]``, ``x.amax(...)``, ``.values``, directly or through a name
    bound from it, ``m, _ = torch.max(x, dim=1)``): the written-out stable log-sum-exp."""
    arg = exp.args[0] if exp.args else None
    if arg is not None and arg.__class__ is ast.Name:  # value0 = value - m; torch.exp(value0)
        b = ctx.binding_at(arg.id, arg)
        arg = b.value if b is not None and b.kind == "assign" else None
    if arg is None or arg.__class__ is not ast.BinOp or arg.op.__class__ is not ast.Sub:
        return False
    shift, base = arg.right, _detached(arg.left)
    for _ in range(3):
        if shift.__class__ is ast.Name:
            b = ctx.binding_at(shift.id, shift)
            if b is None or b.kind not in ("assign", "unpack") or b.value is None or b.index > 0:
                return False
            shift = b.value
        elif shift.__class__ is ast.Subscript or shift.__class__ is ast.Attribute and shift.attr in ("values", "detach", "data"):
            shift = shift.value
        elif shift.__class__ is ast.Call and shift.func.__class__ is ast.Attribute and shift.func.attr == "detach":
            shift = shift.func.value
        else:
            break
    if shift.__class__ is not ast.Call or shift.func.__class__ is not ast.Attribute or shift.func.attr not in _MAXIMA:
        return False
    q = ctx.qualname(shift.func)
    of = shift.args[0] if q is not None and shift.args else (shift.func.value if q is None else None)
    return of is not None and _detached(of) == base


def _detached(node: ast.AST) -> str:
    """The text of ``node`` without a trailing ``.data`` or ``.detach()`` (``x.data.max()`` is the
    maximum of ``x``)."""
    while True:
        if node.__class__ is ast.Attribute and node.attr == "data":
            node = node.value
        elif node.__class__ is ast.Call and not node.args and node.func.__class__ is ast.Attribute \
                and node.func.attr == "detach":
            node = node.func.value
        else:
            return ast.unparse(node)


class LogSumExp(Rule):
    code = "TW508"
    per_call = True  # a loss of precision matters only where the code runs (R5)
    name = "log-sum-exp"
    triggers = ("exp",)
    doc = """\
What it flags
  `torch.log(torch.sum(torch.exp(x), dim))` written out, with a `dim` (logsumexp needs one).
  Not flagged: the stable form written out, where the exponent already subtracts the maximum
  of the same tensor (`m + torch.log(torch.sum(torch.exp(x - m), dim))` with `m` from
  `torch.max(x, dim, keepdim=True)`, `x.max(dim)[0]`, `x.amax(...)`, also the maximum of
  `x.data` or `x.detach()`, or of the whole tensor, `x_max = x.data.max()`), also through a
  name bound to the shifted tensor (`x0 = x - m; torch.log(torch.sum(torch.exp(x0), dim))`):
  nothing overflows there.

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
            if _shifted_by_max(ctx, inner.args[0]):
                continue  # exp(x - max(x)): the stable form written out, nothing overflows
            dim = argument(inner, "dim", 1)
            if dim is None or (dim.__class__ is ast.Constant and dim.value is None):
                continue
            yield ctx.finding(self.code, call, "log(sum(exp(x))) overflows for large x; use torch.logsumexp(x, dim)",
                              suggestion="torch.logsumexp(x, dim)")


RULE = LogSumExp()
